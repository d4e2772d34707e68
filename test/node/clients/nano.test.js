// nano.test.js — nano 11, the official CouchDB client for Node, against a
// real `divan serve`: database and document CRUD, _bulk_docs, a normal
// _changes read, and three ways of following the feed: changesReader.start
// (a longpoll loop), changesReader.spool (one long read) and a continuous
// feed through changesAsStream, each receiving writes made after it began.
//
//   DIVAN_BIN=build/clients/divan node test/node/clients/nano.test.js
//   DIVAN_URL=http://127.0.0.1:5984 node ...   (an already running server)
'use strict';
const Nano = require('nano');
const { test, eq, ok, assert } = require('../lib/t');
const { runFile } = require('../lib/divan');

let nano = null; // the nano client
const DB = 'nano-crud';
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

// Await a rejected nano call and check CouchDB's error in it.
async function rejects(p, status, error, reason) {
  let e = null;
  try { await p; } catch (x) { e = x; }
  ok(e, `expected ${status} ${error}, got success`);
  assert.strictEqual(e.statusCode, status, `status: ${e.statusCode} ${e.message}`);
  assert.strictEqual(e.error, error, 'error: ' + JSON.stringify(e.error) + ' ' + e.message);
  if (reason !== undefined) assert.strictEqual(e.reason, reason, 'reason');
  return e;
}

// Wait until cond() holds, up to ms.
async function until(what, cond, ms = 10000, feed = null) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (feed && feed.error) throw feed.error;
    if (cond()) return;
    await sleep(20);
  }
  throw new Error('timed out waiting for ' + what);
}

test('nano.info() sees a CouchDB', async () => {
  const info = await nano.info();
  eq(info.couchdb, 'Welcome');
  ok(info.uuid && info.version, JSON.stringify(info));
});

test('nano.db.create / get / list; create twice is 412 file_exists', async () => {
  await nano.db.destroy(DB).catch(() => {});
  eq(await nano.db.create(DB), { ok: true });
  await rejects(nano.db.create(DB), 412, 'file_exists');
  await rejects(nano.db.create('Bad Name'), 400, 'illegal_database_name');
  const info = await nano.db.get(DB);
  eq(info.db_name, DB);
  eq(info.doc_count, 0);
  eq(info.doc_del_count, 0);
  ok(typeof info.update_seq === 'string', 'update_seq is a string in CouchDB 3');
  ok((await nano.db.list()).includes(DB), 'listed');
  await rejects(nano.db.get('nano-none'), 404, 'not_found', 'Database does not exist.');
});

test('document CRUD: insert, get, head, update, conflict, destroy', async () => {
  const db = nano.use(DB);
  const a = await db.insert({ v: 1, s: 'ünïcode', n: [1, 2.5, null] }, 'd1');
  eq(a.ok, true);
  eq(a.id, 'd1');
  ok(/^1-[0-9a-f]{32}$/.test(a.rev), a.rev);
  const d = await db.get('d1');
  eq(d, { _id: 'd1', _rev: a.rev, v: 1, s: 'ünïcode', n: [1, 2.5, null] });
  const h = await db.head('d1');
  eq(h.etag, '"' + a.rev + '"');
  const b = await db.insert({ _id: 'd1', _rev: a.rev, v: 2 });
  ok(b.rev.startsWith('2-'), b.rev);
  await rejects(db.insert({ _id: 'd1', _rev: a.rev, v: 3 }), 409, 'conflict', 'Document update conflict.');
  await rejects(db.insert({ v: 0 }, 'd1'), 409, 'conflict');
  eq((await db.get('d1', { rev: b.rev })).v, 2);
  eq((await db.get('d1', { revs_info: true }))._revs_info.map((x) => x.rev), [b.rev, a.rev]);
  // A POST without an id gets one from the server.
  const p = await db.insert({ posted: true });
  ok(p.ok && p.id.length >= 16, JSON.stringify(p));
  eq((await db.get(p.id)).posted, true);
  // Destroy, then the doc is deleted (404 "deleted"), unknown ids "missing".
  const x = await db.destroy('d1', b.rev);
  ok(x.ok && x.rev.startsWith('3-'), JSON.stringify(x));
  await rejects(db.get('d1'), 404, 'not_found', 'deleted');
  await rejects(db.get('nope'), 404, 'not_found', 'missing');
  // CouchDB opens the doc before a DELETE: a deleted one is 404 whatever the rev.
  await rejects(db.destroy('d1', b.rev), 404, 'not_found', 'deleted');
  // Recreate over the tombstone.
  const r = await db.insert({ again: true }, 'd1');
  ok(r.rev.startsWith('4-'), r.rev);
  await rejects(db.destroy('d1', b.rev), 409, 'conflict', 'Document update conflict.');
  const info = await nano.db.get(DB);
  eq([info.doc_count, info.doc_del_count], [2, 0]);
});

test('bulk: 500 docs in, list / fetch them, bulk updates with per-doc conflicts', async () => {
  const db = nano.use(DB);
  const docs = [];
  for (let i = 0; i < 500; i++) docs.push({ _id: 'k' + String(i).padStart(4, '0'), i });
  const res = await db.bulk({ docs });
  eq(res.length, 500);
  ok(res.every((x) => x.ok && x.rev.startsWith('1-')), 'all ok');
  const page = await db.list({ startkey: 'k0100', limit: 10, include_docs: true });
  eq(page.rows.map((r) => r.id), docs.slice(100, 110).map((d) => d._id));
  eq(page.rows[0].doc.i, 100);
  eq(page.total_rows, 502);
  eq(page.offset, 102); // d1 and the POSTed (hex) id sort first
  const f = await db.fetch({ keys: ['k0007', 'k0499', 'absent'] });
  eq(f.rows[0].doc.i, 7);
  eq(f.rows[1].doc.i, 499);
  eq(f.rows[2], { key: 'absent', error: 'not_found' });
  // Update half with their revs and half with a stale one: per-doc answers.
  const upd = res.slice(0, 20).map((r, i) => ({ _id: r.id, _rev: i % 2 ? '1-00000000000000000000000000000000' : r.rev, i, up: true }));
  const u = await db.bulk({ docs: upd });
  eq(u.length, 20);
  u.forEach((x, i) => {
    if (i % 2) eq([x.id, x.error, x.reason], [upd[i]._id, 'conflict', 'Document update conflict.']);
    else ok(x.ok && x.rev.startsWith('2-'), JSON.stringify(x));
  });
  // Deletes in bulk.
  const dels = u.filter((x) => x.ok).map((x) => ({ _id: x.id, _rev: x.rev, _deleted: true }));
  const dr = await db.bulk({ docs: dels });
  ok(dr.every((x) => x.ok), JSON.stringify(dr));
  // new_edits=false through nano too.
  const ne = await db.bulk({ docs: [{ _id: 'k0001', _rev: '9-abc', _revisions: { start: 9, ids: ['abc', 'def'] }, forced: true }], new_edits: false });
  eq(ne.filter((x) => x.error), []);
  const c = await db.get('k0001', { conflicts: true });
  eq(c._rev, '9-abc');
  ok(Array.isArray(c._conflicts) && c._conflicts.length === 1, JSON.stringify(c));
  const info = await nano.db.get(DB);
  eq([info.doc_count, info.doc_del_count], [502 - 10, 10]);
});

test('changes (normal): every doc once, since, limit, include_docs, _doc_ids', async () => {
  const db = nano.use(DB);
  const all = await db.changes({ since: 0 });
  eq(all.results.length, 502);
  eq(new Set(all.results.map((c) => c.id)).size, 502);
  ok(all.last_seq && typeof all.last_seq === 'string', 'last_seq');
  eq(all.pending, 0);
  const none = await db.changes({ since: all.last_seq });
  eq(none.results, []);
  const lim = await db.changes({ since: 0, limit: 5, include_docs: true });
  eq(lim.results.length, 5);
  ok(lim.results.every((c) => c.doc && c.doc._id === c.id), 'docs included');
  eq(lim.pending, 497);
  const next = await db.changes({ since: lim.last_seq, limit: 5 });
  eq(next.results.map((c) => c.id), all.results.slice(5, 10).map((c) => c.id));
  const deleted = all.results.filter((c) => c.deleted).map((c) => c.id);
  eq(deleted.length, 10);
  const ids = await db.changes({ filter: '_doc_ids', doc_ids: JSON.stringify(['k0003', 'k0004', 'nope']) });
  eq(ids.results.map((c) => c.id).sort(), ['k0003', 'k0004']);
  const sd = await db.changes({ since: 0, style: 'all_docs' });
  eq(sd.results.find((c) => c.id === 'k0001').changes.length, 2, 'a conflicted doc lists both leaves');
});

test('changesReader.start follows the feed: writes made after it began arrive', async () => {
  const db = nano.use(DB);
  const seen = new Map();
  const errors = [];
  let seqs = 0;
  const cr = db.changesReader.start({ since: 'now', timeout: 2000, batchSize: 50 });
  cr.on('change', (c) => seen.set(c.id, c));
  cr.on('seq', () => seqs++);
  cr.on('error', (e) => errors.push(e));
  const ended = new Promise((res) => cr.on('end', res));
  try {
    await sleep(300); // let the first longpoll request reach the server
    eq(seen.size, 0, 'since=now: nothing old');
    for (let i = 0; i < 30; i++) await db.insert({ i }, 'cr-one-' + i);
    const docs = [];
    for (let i = 0; i < 120; i++) docs.push({ _id: 'cr-bulk-' + i, i });
    await db.bulk({ docs });
    await until('150 changes through changesReader', () => seen.size >= 150);
    eq(seen.size, 150);
    ok(seqs >= 2, 'seq events: ' + seqs);
    // An update and a delete show up too.
    const cur = await db.get('cr-one-0');
    await db.destroy('cr-one-0', cur._rev);
    await until('the delete', () => seen.get('cr-one-0').deleted === true);
    eq(errors, []);
  } finally {
    db.changesReader.stop();
  }
  await Promise.race([ended, sleep(5000)]);
});

test('changesReader.spool reads the whole feed in one request', async () => {
  const db = nano.use(DB);
  const ids = new Set();
  let batches = 0;
  const ee = db.changesReader.spool({ since: 0, batchSize: 100 });
  ee.on('batch', (b) => { batches++; for (const c of b) ids.add(c.id); });
  const last = await new Promise((res, rej) => { ee.on('end', res); ee.on('error', rej); });
  eq(ids.size, 502 + 150);
  ok(batches >= 6, 'batches ' + batches);
  ok(last, 'a last_seq at the end');
});

// Read a continuous feed through nano's stream: newline-separated JSON, the
// heartbeat newlines skipped, until the server ends it with last_seq.
function follow(db, qs) {
  const s = db.changesAsStream(qs);
  const out = { changes: [], lastSeq: null, heartbeats: 0, ended: null, error: null, stream: s };
  let buf = '';
  out.ended = new Promise((res, rej) => {
    s.on('data', (chunk) => {
      buf += chunk.toString('utf8');
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.trim()) { out.heartbeats++; continue; }
        const j = JSON.parse(line);
        if ('last_seq' in j && !('id' in j)) out.lastSeq = j.last_seq;
        else out.changes.push(j);
      }
    });
    s.on('end', () => res(out));
    s.on('error', (e) => { out.error = e; rej(e); });
  });
  out.ended.catch(() => {}); // seen through out.error while waiting
  return out;
}

test('a continuous feed (changesAsStream) receives writes made after it started', async () => {
  const db = nano.use(DB);
  const f = follow(db, { feed: 'continuous', since: 'now', timeout: 1500, include_docs: true });
  await sleep(300);
  for (let i = 0; i < 20; i++) await db.insert({ i, live: true }, 'cont-' + i);
  await db.bulk({ docs: [{ _id: 'cont-bulk-a' }, { _id: 'cont-bulk-b' }] });
  await until('22 continuous changes', () => f.changes.length >= 22, 10000, f);
  // With no heartbeat the feed ends `timeout` ms after the last change.
  const done = await Promise.race([f.ended, sleep(8000).then(() => null)]);
  ok(done, 'the continuous feed ended after its timeout');
  eq(done.changes.map((c) => c.id), [...Array.from({ length: 20 }, (_, i) => 'cont-' + i), 'cont-bulk-a', 'cont-bulk-b']);
  ok(done.changes.every((c) => c.doc && c.doc._id === c.id && c.seq), 'docs and seqs');
  eq(done.lastSeq, done.changes[done.changes.length - 1].seq);
});

test('a continuous feed from 0 with heartbeats replays history, then follows', async () => {
  const db = nano.use(DB);
  const f = follow(db, { feed: 'continuous', since: 0, heartbeat: 200 });
  try {
    await until('the history', () => f.changes.length >= 502 + 150 + 22, 10000, f);
    await db.insert({ late: true }, 'cont-late');
    await until('the late write', () => f.changes.some((c) => c.id === 'cont-late'), 10000, f);
    const n = f.heartbeats;
    await until('heartbeats while idle', () => f.heartbeats >= n + 2, 3000, f);
    eq(f.lastSeq, null, 'still open');
  } finally {
    f.stream.destroy();
  }
});

test('nano.db.destroy drops the database', async () => {
  eq(await nano.db.destroy(DB), { ok: true });
  await rejects(nano.db.get(DB), 404, 'not_found', 'Database does not exist.');
  await rejects(nano.db.destroy(DB), 404, 'not_found');
  ok(!(await nano.db.list()).includes(DB), 'gone from _all_dbs');
});

// A crash or a hang ends the server and the file (the whole file must end
// well inside the runner's budget).
runFile(__filename, { seconds: 60, started: (s) => { nano = Nano(s.base); } });
