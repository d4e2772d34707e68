// pouchdb.test.js — PouchDB (the real npm client, memory adapter) replicates
// with a real `divan serve`, and the revision trees come out identical.
//
// The source database holds 1,200 documents: 1,000 written with
// `_bulk_docs` new_edits=false as explicit revision branches (conflicts,
// deleted conflicts, deleted winners, disjoint roots), 200 written the
// ordinary way and then updated or deleted. PouchDB pulls it one-shot, pushes
// it into a new divan database, then syncs live with that database while
// both sides write. After each step every document's tree is compared:
// `GET /db/id?open_revs=all&revs=true` on divan against PouchDB's
// `db.get(id, {open_revs: 'all', revs: true})` — leaf revs, deleted flags,
// `_revisions` and bodies — and the source trees against the ones written.
//
//   DIVAN_BIN=build/clients/divan node test/node/clients/pouchdb.test.js
//   DIVAN_URL=http://127.0.0.1:5984 node ...   (an already running server)
'use strict';
const crypto = require('crypto');
const PouchDB = require('pouchdb').plugin(require('pouchdb-adapter-memory'));
const { test, req, eq, ok, leaves, pouchLeaves } = require('../lib/t');
const { runFile } = require('../lib/divan');
const { pool } = require('../lib/trees'); // at most `width` calls in flight, results in order

const N_BRANCHED = 1000; // documents written as explicit revision branches
const N_PLAIN = 200;     // documents written with server-made revisions
const WAIT_MS = 20000;   // how long a live change may take to arrive

let srv = null;  // the divan under test (null with DIVAN_URL)
let base = '';   // its URL, no trailing slash
let local = null; // the PouchDB memory database
const expected = new Map(); // id → the sorted leaves written to the source

const rev = (gen) => gen + '-' + crypto.randomBytes(16).toString('hex');
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));


// Poll until fn() resolves truthy, or fail with what was waited for.
async function until(what, fn) {
  const end = Date.now() + WAIT_MS;
  let last;
  while (Date.now() < end) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    await sleep(50);
  }
  throw new Error('timed out waiting for ' + what + ' (last: ' + (last && last.stack || JSON.stringify(last)) + ')');
}

const jreq = (method, p, body, headers) => req(method, base + p, body, headers);

// One leaf in a comparable form: its rev, deleted flag, history and body.
function leaf(doc) {
  const body = {};
  for (const k of Object.keys(doc).sort()) {
    if (!['_id', '_rev', '_revisions', '_deleted', '_conflicts'].includes(k)) body[k] = doc[k];
  }
  return { rev: doc._rev, deleted: !!doc._deleted, revisions: doc._revisions, body };
}

// Every leaf of id in divan database db, and in PouchDB database pdb.
const divanTree = async (db, id) => (await leaves(base, db, id)).map(leaf);
const pouchTree = async (pdb, id) => (await pouchLeaves(pdb, id)).map(leaf);

// All ids a database has ever held (live and deleted), from its changes.
async function divanIds(db) {
  const r = await jreq('GET', '/' + db + '/_changes?style=all_docs');
  eq(r.status, 200, r.text);
  return r.json.results.map((c) => c.id).sort();
}
async function pouchIds(pdb) {
  const r = await pdb.changes({ style: 'all_docs' });
  return r.results.map((c) => c.id).sort();
}

// Same ids, same trees, same winners and conflicts on a divan db and pdb.
async function compareAll(db, pdb) {
  const ids = await divanIds(db);
  eq(ids, await pouchIds(pdb), `${db}: the same ids on both sides`);
  ok(ids.length >= N_BRANCHED + N_PLAIN, `${db}: ${ids.length} ids`);
  await pool(ids, 8, async (id) => {
    const [d, p] = await Promise.all([divanTree(db, id), pouchTree(pdb, id)]);
    eq(d, p, `${db}/${id}: revision trees differ`);
    const x = expected.get(id);
    if (x) eq(d.map((l) => [l.rev, l.deleted, l.revisions]), x, `${db}/${id}: the tree written`);
  });
  // Winners, conflicts and the counts agree too.
  const dAll = await jreq('GET', '/' + db + '/_all_docs');
  eq(dAll.status, 200, dAll.text);
  const pAll = await pdb.allDocs();
  eq(dAll.json.rows.map((r) => [r.id, r.value.rev]), pAll.rows.map((r) => [r.id, r.value.rev]), `${db}: _all_docs`);
  eq(dAll.json.total_rows, pAll.total_rows, `${db}: total_rows`);
  const info = await jreq('GET', '/' + db);
  eq(info.json.doc_count, (await pdb.info()).doc_count, `${db}: doc_count`);
  eq(info.json.doc_count + info.json.doc_del_count, ids.length, `${db}: doc_count + doc_del_count`);
  const live = pAll.rows.map((r) => r.id);
  await pool(live, 8, async (id) => {
    const r = await jreq('GET', '/' + db + '/' + encodeURIComponent(id) + '?conflicts=true&deleted_conflicts=true');
    eq(r.status, 200, r.text);
    const p = await pdb.get(id, { conflicts: true, deleted_conflicts: true });
    eq(r.json._rev, p._rev, `${db}/${id}: winner`);
    eq((r.json._conflicts || []).slice().sort(), (p._conflicts || []).slice().sort(), `${db}/${id}: _conflicts`);
    // PouchDB has no deleted_conflicts: its deleted leaves stand in.
    const dl = (await pouchTree(pdb, id)).filter((l) => l.deleted).map((l) => l.rev).sort();
    eq((r.json._deleted_conflicts || []).slice().sort(), dl, `${db}/${id}: _deleted_conflicts`);
  });
  return ids.length;
}

// A chain of n revisions starting at generation g0: ids newest first.
function chain(g0, n, shared) {
  const ids = shared ? shared.slice() : [];
  const out = [];
  for (let g = g0; g < g0 + n; g++) out.push(rev(g).split('-')[1]);
  return out.reverse().concat(ids);
}

// The branched documents: each entry of `docs` is one leaf with its history.
function branchedDocs() {
  const docs = [];
  for (let i = 0; i < N_BRANCHED; i++) {
    const id = 'b' + String(i).padStart(5, '0') + (i % 97 === 0 ? '/ünï code+%' : '');
    const leaves = [];
    const root = chain(1, 1);
    const mainLen = i % 5 === 0 ? 2 + (i % 3) : 1 + (i % 4); // a leaf, not under the conflict
    const main = chain(2, mainLen - 1, root);
    leaves.push({ ids: main, deleted: i % 11 === 0, branch: 'main' });
    if (i % 5 === 0) { // a conflict sharing the root
      const c = chain(2, 1 + (i % 3), root);
      leaves.push({ ids: c, deleted: i % 7 === 0, branch: 'conflict' });
    }
    if (i % 9 === 0) { // a second conflict forking below the main leaf
      if (main.length >= 2) leaves.push({ ids: chain(main.length, 1, main.slice(1)), deleted: false, branch: 'fork' });
    }
    if (i % 13 === 0) { // a disjoint root, as after stemming
      leaves.push({ ids: chain(1, 2), deleted: i % 2 === 0, branch: 'island' });
    }
    const want = [];
    for (const l of leaves) {
      const start = l.ids.length; // every chain here reaches generation 1
      const doc = { _id: id, _rev: start + '-' + l.ids[0], _revisions: { start, ids: l.ids } };
      if (l.deleted) doc._deleted = true;
      else Object.assign(doc, { i, branch: l.branch, n: i * 1.5, tags: ['a', 'b', i % 3], nested: { s: 'x'.repeat(i % 50), t: null, f: false } });
      docs.push(doc);
      want.push([doc._rev, !!l.deleted, { start, ids: l.ids }]);
    }
    expected.set(id, want.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
  }
  return docs;
}

test('GET / says Welcome with a uuid', async () => {
  const r = await jreq('GET', '/');
  eq(r.status, 200);
  ok(r.json.uuid, 'uuid');
});

test('build the source: 1,000 branched docs (new_edits=false) and 200 plain ones', async () => {
  for (const db of ['src', 'back']) await jreq('DELETE', '/' + db);
  eq((await jreq('PUT', '/src')).status, 201);
  const docs = branchedDocs();
  // Shuffle so a doc's branches arrive in different requests and orders.
  for (let i = docs.length - 1; i > 0; i--) { const j = crypto.randomInt(i + 1); [docs[i], docs[j]] = [docs[j], docs[i]]; }
  for (let k = 0; k < docs.length; k += 400) {
    const r = await jreq('POST', '/src/_bulk_docs', { docs: docs.slice(k, k + 400), new_edits: false });
    eq(r.status, 201, r.text);
    eq(r.json.filter((x) => x.error), [], 'no per-doc errors');
  }
  const plain = [];
  for (let i = 0; i < N_PLAIN; i++) plain.push({ _id: 'p' + String(i).padStart(4, '0'), i, s: 'plain ' + i });
  const r = await jreq('POST', '/src/_bulk_docs', { docs: plain });
  eq(r.status, 201, r.text);
  eq(r.json.length, N_PLAIN);
  // Update every third, delete every fifth (some after an update).
  await pool(r.json, 8, async (row, i) => {
    let cur = row.rev;
    if (i % 3 === 0) {
      const u = await jreq('PUT', '/src/' + row.id, { _rev: cur, i, s: 'updated', v: 2 });
      eq(u.status, 201, u.text);
      cur = u.json.rev;
    }
    if (i % 5 === 0) {
      const d = await jreq('DELETE', '/src/' + row.id + '?rev=' + cur);
      eq(d.status, 200, d.text);
    }
  });
  const info = await jreq('GET', '/src');
  eq(info.json.doc_count + info.json.doc_del_count, N_BRANCHED + N_PLAIN, JSON.stringify(info.json));
  ok(info.json.doc_del_count > 50, 'some docs are deleted: ' + info.json.doc_del_count);
});

test('one-shot replication divan → PouchDB (memory) copies every tree', async () => {
  local = new PouchDB('local-' + Date.now(), { adapter: 'memory' });
  const res = await PouchDB.replicate(base + '/src', local);
  ok(res.ok, JSON.stringify(res));
  eq(res.doc_write_failures, 0);
  eq(res.errors, []);
  ok(res.docs_written >= N_BRANCHED + N_PLAIN, 'docs_written ' + res.docs_written);
  await compareAll('src', local);
});

test('a second one-shot pull starts from its checkpoint and writes nothing', async () => {
  const res = await PouchDB.replicate(base + '/src', local);
  ok(res.ok);
  eq(res.docs_written, 0, JSON.stringify(res));
  // The checkpoint lives in a _local doc on divan.
  const r = await jreq('GET', '/src/_local_docs');
  eq(r.status, 200, r.text);
  ok(r.json.rows.length >= 1, 'a replication checkpoint: ' + r.text);
});

test('one-shot replication PouchDB → a new divan db copies every tree back', async () => {
  eq((await jreq('GET', '/back')).status, 404);
  const res = await local.replicate.to(base + '/back');
  ok(res.ok, JSON.stringify(res));
  eq(res.doc_write_failures, 0, JSON.stringify(res.errors));
  ok(res.docs_written >= N_BRANCHED + N_PLAIN, 'docs_written ' + res.docs_written);
  const n = await compareAll('back', local);
  eq(n, N_BRANCHED + N_PLAIN);
  // And back equals the source, doc by doc.
  const ids = await divanIds('src');
  eq(await divanIds('back'), ids);
  await pool(ids, 8, async (id) => eq(await divanTree('back', id), await divanTree('src', id), id));
});

test('live sync: writes on either side arrive on the other', async () => {
  const remote = new PouchDB(base + '/back');
  const errors = [];
  const sync = local.sync(remote, { live: true, retry: false, heartbeat: 5000 });
  sync.on('error', (e) => errors.push(e));
  const stopped = new Promise((res) => sync.on('complete', res));
  try {
    // divan → PouchDB: a new doc.
    const a = await jreq('PUT', '/back/live-a', { from: 'divan' });
    eq(a.status, 201, a.text);
    await until('live-a in PouchDB', async () => (await local.get('live-a')).from === 'divan');
    // PouchDB → divan: a new doc.
    const b = await local.put({ _id: 'live-b', from: 'pouch' });
    await until('live-b in divan', async () => (await jreq('GET', '/back/live-b')).json._rev === b.rev);
    // divan updates, PouchDB sees the new rev.
    const a2 = await jreq('PUT', '/back/live-a', { _rev: a.json.rev, from: 'divan', v: 2 });
    eq(a2.status, 201, a2.text);
    await until('live-a v2 in PouchDB', async () => (await local.get('live-a'))._rev === a2.json.rev);
    // PouchDB deletes, divan sees the tombstone.
    const pb = await local.get('live-b');
    const del = await local.remove(pb);
    await until('live-b deleted in divan', async () => {
      const r = await jreq('GET', '/back/live-b');
      return r.status === 404 && r.json.reason === 'deleted';
    });
    const t = await divanTree('back', 'live-b');
    eq(t.map((l) => [l.rev, l.deleted]), [[del.rev, true]]);
    // A conflict made on divan with new_edits=false reaches PouchDB.
    const cur = await jreq('GET', '/back/live-a?revs=true');
    const crev = rev(2);
    const cbody = { _id: 'live-a', _rev: crev, _revisions: { start: 2, ids: [crev.split('-')[1], cur.json._revisions.ids[1]] }, conflicting: true };
    const c = await jreq('POST', '/back/_bulk_docs', { docs: [cbody], new_edits: false });
    eq(c.status, 201, c.text);
    await until('the live-a conflict in PouchDB', async () => (await pouchTree(local, 'live-a')).length === 2);
    // A conflict made in PouchDB (new_edits=false) reaches divan.
    const prev = rev(3);
    await local.bulkDocs([{ _id: 'b00003', _rev: prev, _revisions: { start: 3, ids: [prev.split('-')[1], 'f00d', 'beef'] }, made: 'pouch' }], { new_edits: false });
    await until('the b00003 conflict in divan', async () => (await divanTree('back', 'b00003')).some((l) => l.rev === prev));
    expected.delete('b00003');
    // A burst of 300 writes on divan, and 300 in PouchDB, all arrive.
    const burst = [];
    for (let i = 0; i < 300; i++) burst.push({ _id: 'burst-d-' + i, i });
    eq((await jreq('POST', '/back/_bulk_docs', { docs: burst })).status, 201);
    const pburst = [];
    for (let i = 0; i < 300; i++) pburst.push({ _id: 'burst-p-' + i, i });
    await local.bulkDocs(pburst);
    await until('both bursts on both sides', async () => {
      const [d, p] = [await jreq('GET', '/back'), await local.info()];
      return d.json.doc_count === p.doc_count && d.json.doc_count >= N_PLAIN + 600;
    });
    // Quiet for a moment: nothing left in flight.
    await until('both sides settled', async () => {
      const d1 = (await jreq('GET', '/back')).json.update_seq;
      await sleep(300);
      return (await jreq('GET', '/back')).json.update_seq === d1;
    });
    eq(errors, [], 'no sync errors');
  } finally {
    sync.cancel();
    await Promise.race([stopped, sleep(5000)]);
  }
  await compareAll('back', local);
});

test('divan is still healthy after the live feed was cancelled', async () => {
  const r = await jreq('GET', '/_up');
  eq(r.status, 200, r.text);
  if (srv) ok(srv.proc.exitCode === null, 'server alive');
});

// A crash or a hang ends the server and the file (the whole file must end
// well inside the runner's budget).
runFile(__filename, {
  seconds: 85,
  started: (s) => { srv = s.srv; base = s.base; },
  finished: async () => { if (local) await local.destroy().catch(() => {}); },
});
