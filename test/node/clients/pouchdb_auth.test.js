// pouchdb_auth.test.js — PouchDB (the real npm client, memory adapter)
// against a members-only database of a real `divan serve`, logged in as a
// _users account, as CouchDB 3.x serves it.
//
// The server admin creates the accounts (PUT /_users/org.couchdb.user:NAME
// {name, password, roles:[], type:"user"}) and a database whose _security
// names alice as its only member. Then, with alice's credentials, PouchDB
// pulls one-shot, pushes one-shot, and syncs live both ways for a few
// seconds while both sides write, update and delete; after each step the
// documents (ids, winning revs, bodies, deletions) are the same on both
// sides, read on divan as the admin. With a wrong password every call fails
// cleanly: a 401 error object ("unauthorized", "Name or password is
// incorrect."), no exception escapes, nothing is written on either side.
// bob, a valid account the database's _security does not name, gets 403
// ("forbidden", "You are not allowed to access this db."); no credentials
// at all get 401 ("You are not authorized to access this db.").
//
//   DIVAN_BIN=./divan TEST_TMPDIR=/tmp node test/node/clients/pouchdb_auth.test.js
'use strict';
const fs = require('fs');
const path = require('path');
const PouchDB = require('pouchdb').plugin(require('pouchdb-adapter-memory'));
const { test, run, req, eq, ok, assert } = require('../lib/t');
const { startDivan } = require('../lib/divan');

const WAIT_MS = 15000; // how long a live change may take to arrive
const DB = 'notes';
const ALICE = { username: 'alice', password: 'alice-s3cret' };
const BOB = { username: 'bob', password: 'bob-s3cret' };

// Never leave the server behind: a crash or a hang ends the file.
function bail(why) {
  console.log('FAIL ' + path.basename(__filename) + ': ' + why);
  if (srv) srv.proc.kill('SIGKILL');
  process.exit(1);
}
const watchdog = setTimeout(() => bail('still running after 80 s'), 80000);
watchdog.unref();
process.on('uncaughtException', (e) => bail('uncaught: ' + String(e && e.stack || e)));
process.on('unhandledRejection', (e) => bail('unhandled rejection: ' + String(e && e.stack || e)));

let srv = null;
let base = ''; // the server's URL without credentials
const locals = []; // PouchDB memory databases to destroy at the end
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

const basic = (name, pw) => 'Basic ' + Buffer.from(name + ':' + pw).toString('base64');
const ADMIN_AUTH = () => basic(srv.admin.name, srv.admin.password);
const asAdmin = (method, p, body, headers = {}) => req(method, base + p, body, Object.assign({ Authorization: ADMIN_AUTH() }, headers));

function local(name) {
  const db = new PouchDB(name + '-' + Date.now() + '-' + locals.length, { adapter: 'memory' });
  locals.push(db);
  return db;
}
// The remote database as PouchDB sees it, with these credentials (none: anonymous).
function remote(auth) {
  const opts = { skip_setup: true };
  if (auth) opts.auth = auth;
  return new PouchDB(base + '/' + DB, opts);
}

// Poll until fn() resolves truthy, or fail with what was waited for.
async function until(what, fn, ms = WAIT_MS) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    await sleep(50);
  }
  throw new Error('timed out waiting for ' + what + ' (last: ' + (last && last.stack || JSON.stringify(last)) + ')');
}

// Every document of the divan db (read as the admin) and of a PouchDB db, as
// [id, rev, deleted, body] sorted by id: winners, tombstones included.
function shape(id, rev, deleted, doc) {
  const body = {};
  if (doc) for (const k of Object.keys(doc).sort()) if (!k.startsWith('_')) body[k] = doc[k];
  return [id, rev, !!deleted, deleted ? {} : body];
}
async function divanDocs() {
  const ch = await asAdmin('GET', `/${DB}/_changes?include_docs=true`);
  eq(ch.status, 200, ch.text);
  return ch.json.results.filter((r) => !r.id.startsWith('_design/'))
    .map((r) => shape(r.id, r.changes[0].rev, r.deleted, r.doc)).sort((a, b) => (a[0] < b[0] ? -1 : 1));
}
async function pouchDocs(pdb) {
  const ch = await pdb.changes({ include_docs: true });
  return ch.results.map((r) => shape(r.id, r.changes[0].rev, r.deleted, r.doc)).sort((a, b) => (a[0] < b[0] ? -1 : 1));
}
// The winning rev of each id on divan must be PouchDB's winner too.
async function sameDocs(pdb, what) {
  const [d, p] = [await divanDocs(), await pouchDocs(pdb)];
  eq(p, d, what + ': the same documents on both sides');
  return d.length;
}

// What a failed PouchDB call rejected with, whatever wraps it.
async function failure(promise) {
  try {
    const res = await promise;
    return { resolved: res };
  } catch (e) {
    return e;
  }
}
function isAuthError(e, status, name, reason) {
  ok(e && !e.resolved, 'the call must fail, it resolved with ' + JSON.stringify(e && e.resolved));
  ok(e instanceof Error || typeof e === 'object', 'an error object');
  const st = e.status ?? (e.result && e.result.status);
  eq(st, status, `status ${st}, expected ${status}: ${JSON.stringify(e)} ${e.message}`);
  eq(e.name, name, 'name: ' + JSON.stringify(e));
  if (reason !== undefined) eq(e.reason ?? e.message, reason, 'reason: ' + JSON.stringify(e));
}

test('setup: _users, alice and bob created by the admin, a db whose _security names alice only', async () => {
  const u = await asAdmin('PUT', '/_users');
  ok(u.status === 201 || u.status === 412, 'PUT /_users: ' + u.text);
  for (const c of [ALICE, BOB]) {
    const r = await asAdmin('PUT', '/_users/' + encodeURIComponent('org.couchdb.user:' + c.username),
      { name: c.username, password: c.password, roles: [], type: 'user' });
    eq(r.status, 201, `create ${c.username}: ${r.text}`);
  }
  eq((await asAdmin('PUT', '/' + DB)).status, 201);
  const sec = { admins: { names: [], roles: [] }, members: { names: ['alice'], roles: [] } };
  const s = await asAdmin('PUT', `/${DB}/_security`, sec);
  eq(s.status, 200, s.text);
  eq((await asAdmin('GET', `/${DB}/_security`)).json, sec);
  // 40 documents already there, written by the admin.
  const docs = [];
  for (let i = 0; i < 40; i++) docs.push({ _id: 'seed-' + String(i).padStart(3, '0'), i, text: 'seed ' + i, tags: ['a', i % 3] });
  const b = await asAdmin('POST', `/${DB}/_bulk_docs`, { docs });
  eq(b.status, 201, b.text);
  eq(b.json.filter((x) => x.error), []);
  // The db really is members-only.
  eq((await req('GET', base + '/' + DB)).status, 401);
  eq((await req('GET', base + '/' + DB, undefined, { Authorization: basic(BOB.username, BOB.password) })).status, 403);
  eq((await req('GET', base + '/' + DB, undefined, { Authorization: basic(ALICE.username, ALICE.password) })).status, 200);
});

let mine = null; // alice's PouchDB, kept across the steps

test('alice: remote info() works with her credentials', async () => {
  const info = await remote(ALICE).info();
  eq(info.db_name, DB);
  eq(info.doc_count, 40);
});

test('alice: one-shot pull copies every document', async () => {
  mine = local('alice');
  const res = await PouchDB.replicate(remote(ALICE), mine);
  ok(res.ok, JSON.stringify(res));
  eq(res.docs_written, 40, JSON.stringify(res));
  eq(res.doc_write_failures, 0);
  eq(await sameDocs(mine, 'after the pull'), 40);
});

test('alice: one-shot push writes her local docs (new, updated, deleted) to divan', async () => {
  const put = [];
  for (let i = 0; i < 15; i++) put.push({ _id: 'pouch-' + String(i).padStart(3, '0'), i, from: 'pouch' });
  const r = await mine.bulkDocs(put);
  eq(r.filter((x) => x.error), []);
  const s1 = await mine.get('seed-001');
  await mine.put(Object.assign(s1, { text: 'edited in pouch' }));
  await mine.remove(await mine.get('seed-002'));
  const res = await mine.replicate.to(remote(ALICE));
  ok(res.ok, JSON.stringify(res));
  eq(res.doc_write_failures, 0, JSON.stringify(res.errors));
  eq(res.docs_written, 17, JSON.stringify(res));
  eq(await sameDocs(mine, 'after the push'), 55);
  eq((await asAdmin('GET', `/${DB}/seed-001`)).json.text, 'edited in pouch');
  eq((await asAdmin('GET', `/${DB}/seed-002`)).status, 404);
  // The checkpoint is a _local doc on divan, written with alice's rights.
  const cp = await asAdmin('GET', `/${DB}/_local_docs`);
  eq(cp.status, 200, cp.text);
  ok(cp.json.rows.length >= 1, 'a replication checkpoint: ' + cp.text);
});

test('alice: live sync both ways for a few seconds; both sides end with the same docs', async () => {
  const errors = [];
  const denied = [];
  const sync = mine.sync(remote(ALICE), { live: true, retry: false, heartbeat: 5000 });
  sync.on('error', (e) => errors.push(e));
  sync.on('denied', (e) => denied.push(e));
  const stopped = new Promise((res) => sync.on('complete', res));
  const AUTH = { Authorization: basic(ALICE.username, ALICE.password) };
  try {
    // divan → PouchDB: alice writes over HTTP.
    const a = await req('PUT', `${base}/${DB}/live-divan`, { from: 'divan' }, AUTH);
    eq(a.status, 201, a.text);
    await until('live-divan in PouchDB', async () => (await mine.get('live-divan')).from === 'divan');
    // PouchDB → divan.
    const b = await mine.put({ _id: 'live-pouch', from: 'pouch' });
    await until('live-pouch on divan', async () => (await asAdmin('GET', `/${DB}/live-pouch`)).json._rev === b.rev);
    // An update on divan, a deletion in PouchDB.
    const a2 = await req('PUT', `${base}/${DB}/live-divan`, { _rev: a.json.rev, from: 'divan', v: 2 }, AUTH);
    eq(a2.status, 201, a2.text);
    await until('live-divan v2 in PouchDB', async () => (await mine.get('live-divan'))._rev === a2.json.rev);
    await mine.remove(await mine.get('seed-003'));
    await until('seed-003 deleted on divan', async () => (await asAdmin('GET', `/${DB}/seed-003`)).status === 404);
    // A burst on each side.
    const burst = [];
    for (let i = 0; i < 50; i++) burst.push({ _id: 'burst-divan-' + i, i });
    eq((await req('POST', `${base}/${DB}/_bulk_docs`, { docs: burst }, AUTH)).status, 201);
    const pburst = [];
    for (let i = 0; i < 50; i++) pburst.push({ _id: 'burst-pouch-' + i, i });
    await mine.bulkDocs(pburst);
    await until('both bursts on both sides', async () => {
      const [d, p] = [await asAdmin('GET', '/' + DB), await mine.info()];
      // 54 live after the push (seed-002 deleted), +2 live-*, -1 seed-003, +100 bursts.
      return d.json.doc_count === p.doc_count && d.json.doc_count === 54 + 2 - 1 + 100;
    });
    await until('both sides settled', async () => {
      const d1 = (await asAdmin('GET', '/' + DB)).json.update_seq;
      await sleep(300);
      return (await asAdmin('GET', '/' + DB)).json.update_seq === d1;
    });
    // Idle for 2 s (the feeds wait on the server), then one more write each
    // way: the re-issued long-polls still carry alice's credentials.
    await sleep(2000);
    const late = await req('PUT', `${base}/${DB}/late-divan`, { late: true }, AUTH);
    eq(late.status, 201, late.text);
    const lateP = await mine.put({ _id: 'late-pouch', late: true });
    await until('late-divan in PouchDB', async () => (await mine.get('late-divan'))._rev === late.json.rev);
    await until('late-pouch on divan', async () => (await asAdmin('GET', `/${DB}/late-pouch`)).json._rev === lateP.rev);
    eq(errors.map((e) => String(e && (e.status + ' ' + e.message))), [], 'no sync errors');
    eq(denied, [], 'nothing denied');
  } finally {
    sync.cancel();
    await Promise.race([stopped, sleep(5000)]);
  }
  eq(await sameDocs(mine, 'after the live sync'), 55 + 2 + 100 + 2);
});

// (PouchDB 9's info() resolves with whatever body the server sends, so the
// refusals are checked with get() and allDocs(), which reject on an error.)
test('wrong password: get() and allDocs() reject with a 401 error object "Name or password is incorrect."', async () => {
  const bad = remote({ username: 'alice', password: 'wrong' });
  isAuthError(await failure(bad.get('seed-000')), 401, 'unauthorized', 'Name or password is incorrect.');
  isAuthError(await failure(bad.allDocs()), 401, 'unauthorized', 'Name or password is incorrect.');
  const info = await bad.info();
  eq([info.error, info.reason], ['unauthorized', 'Name or password is incorrect.'], 'info() carries the refusal: ' + JSON.stringify(info));
});

test('wrong password: a pull fails with 401 and writes nothing locally', async () => {
  const fresh = local('wrongpw-pull');
  const e = await failure(PouchDB.replicate(remote({ username: 'alice', password: 'wrong' }), fresh));
  isAuthError(e, 401, 'unauthorized');
  eq((await fresh.info()).doc_count, 0);
  eq((await fresh.allDocs()).rows, []);
});

test('wrong password: a push fails with 401 and writes nothing on divan', async () => {
  const before = await asAdmin('GET', '/' + DB);
  const src = local('wrongpw-push');
  await src.bulkDocs([{ _id: 'intruder-1', v: 1 }, { _id: 'intruder-2', v: 2 }]);
  const e = await failure(src.replicate.to(remote({ username: 'alice', password: 'wrong' })));
  isAuthError(e, 401, 'unauthorized');
  eq((await asAdmin('GET', `/${DB}/intruder-1`)).status, 404);
  const after = await asAdmin('GET', '/' + DB);
  eq(after.json.update_seq, before.json.update_seq, 'nothing was written');
  eq(after.json.doc_count, before.json.doc_count);
});

test('wrong password: a live sync emits a 401 error and completes; nothing moves either way', async () => {
  const before = await asAdmin('GET', '/' + DB);
  const mirror = local('wrongpw-live');
  await mirror.put({ _id: 'intruder-live', v: 1 });
  const sync = mirror.sync(remote({ username: 'alice', password: 'wrong' }), { live: true, retry: false });
  const err = await Promise.race([
    new Promise((res) => sync.on('error', res)),
    sleep(WAIT_MS).then(() => null),
  ]);
  sync.cancel();
  ok(err, 'an error event');
  eq(err.status ?? (err.result && err.result.status), 401, JSON.stringify(err));
  eq((await mirror.info()).doc_count, 1, 'nothing pulled');
  eq((await asAdmin('GET', `/${DB}/intruder-live`)).status, 404, 'nothing pushed');
  eq((await asAdmin('GET', '/' + DB)).json.update_seq, before.json.update_seq);
});

test('bob (a valid account, not a member): get(), pull and push fail with 403 forbidden; nothing written', async () => {
  const before = await asAdmin('GET', '/' + DB);
  isAuthError(await failure(remote(BOB).get('seed-000')), 403, 'forbidden', 'You are not allowed to access this db.');
  const fresh = local('bob-pull');
  isAuthError(await failure(PouchDB.replicate(remote(BOB), fresh)), 403, 'forbidden');
  eq((await fresh.info()).doc_count, 0);
  const src = local('bob-push');
  await src.put({ _id: 'bob-was-here', v: 1 });
  isAuthError(await failure(src.replicate.to(remote(BOB))), 403, 'forbidden');
  eq((await asAdmin('GET', `/${DB}/bob-was-here`)).status, 404);
  eq((await asAdmin('GET', '/' + DB)).json.update_seq, before.json.update_seq);
});

test('no credentials: get() and a pull fail with 401 "You are not authorized to access this db."', async () => {
  isAuthError(await failure(remote(null).get('seed-000')), 401, 'unauthorized', 'You are not authorized to access this db.');
  const fresh = local('anon-pull');
  isAuthError(await failure(PouchDB.replicate(remote(null), fresh)), 401, 'unauthorized');
  eq((await fresh.info()).doc_count, 0);
});

test('alice still syncs after all that; the server is healthy', async () => {
  const res = await PouchDB.replicate(remote(ALICE), mine);
  ok(res.ok, JSON.stringify(res));
  eq(res.doc_write_failures, 0);
  await sameDocs(mine, 'at the end');
  eq((await req('GET', base + '/_up')).status, 200);
  ok(srv.proc.exitCode === null, 'server alive');
});

(async () => {
  const t0 = Date.now();
  srv = await startDivan();
  base = srv.base.replace(/\/$/, '');
  try {
    await run();
  } finally {
    for (const db of locals) await db.destroy().catch(() => {});
    await srv.stop().catch((e) => { console.log('FAIL ' + path.basename(__filename) + ': ' + e.message); process.exitCode = 1; });
    fs.rmSync(srv.dataDir, { recursive: true, force: true });
  }
  if (process.env.T_VERBOSE) console.log(`pouchdb_auth.test.js: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(process.exitCode || 0);
})();
