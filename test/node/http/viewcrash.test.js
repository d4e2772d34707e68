// viewcrash.test.js — a view index survives `kill -9` during its build:
// against a real `divan serve` (and, as fdb_http_viewcrash, on the
// FoundationDB double). 6,000 documents and a design document whose map
// is slow on purpose; a query with update=true starts the build, the
// server is killed once _info shows the build has committed some steps
// (and before it is done), and restarted on the same data: the index
// resumes from the Sequence it recorded (_info's update_seq is where it
// was; while it built, /_active_tasks had its indexer row), and after more writes, deletions and a purge every query equals a
// brute-force evaluation in this test.
'use strict';
const { test, run, req, eq, ok } = require('../lib/t');
const { startDivan } = require('../lib/divan');

let srv, U, D;
const N = 6000;
const model = new Map(); // id -> {k, v}

const DDOC = {
  views: {
    // about 50 µs of work per document, so the build takes a while
    by_k: { map: 'function(doc) { for (var i = 0; i < 20000; i++) {} if (doc.k !== undefined) emit(doc.k, doc.v); }', reduce: '_sum' },
    cnt: { map: 'function(doc) { for (var i = 0; i < 20000; i++) {} if (doc.k !== undefined) emit(doc.k, doc.v); }', reduce: '_count' },
  },
};

const V = (v, q = '') => req('GET', `${D}/_design/c/_view/${v}${q}`);

async function checkAll() {
  const want = [...model.entries()].sort((a, b) => a[1].k - b[1].k || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const r = await V('by_k', '?reduce=false');
  eq(r.status, 200, r.text);
  eq(r.json.total_rows, want.length);
  eq(r.json.rows.map((x) => [x.id, x.key, x.value]), want.map(([id, d]) => [id, d.k, d.v]));
  const s = await V('by_k');
  eq(s.json.rows[0].value, want.reduce((t, [, d]) => t + d.v, 0));
  const g = await V('cnt', '?group=true');
  const counts = new Map();
  for (const [, d] of want) counts.set(d.k, (counts.get(d.k) || 0) + 1);
  eq(g.json.rows.map((x) => [x.key, x.value]), [...counts.entries()].sort((a, b) => a[0] - b[0]));
}

test('load, start the build, kill -9 in the middle of it', async () => {
  srv = await startDivan();
  U = srv.url;
  D = U + '/crash';
  eq((await req('PUT', D)).status, 201);
  for (let from = 0; from < N; from += 1000) {
    const docs = [];
    for (let i = from; i < from + 1000; i++) {
      const id = 'd' + String(i).padStart(5, '0');
      const d = { k: i % 50, v: i % 7 };
      model.set(id, d);
      docs.push({ _id: id, ...d });
    }
    eq((await req('POST', D + '/_bulk_docs', { docs })).status, 201);
  }
  eq((await req('PUT', D + '/_design/c', DDOC)).status, 201);
  const building = req('GET', `${D}/_design/c/_view/by_k`).catch(() => null); // dies with the server
  let seq = '0';
  const t0 = Date.now();
  while (seq === '0' && Date.now() - t0 < 60000) {
    await new Promise((r) => setTimeout(r, 20));
    seq = (await req('GET', D + '/_design/c/_info')).json.view_index.update_seq;
  }
  ok(seq !== '0', 'the build committed a step');
  // the query's build and the background builder's (the design document's
  // write kicked it) may both be at work; a task counts a step just after
  // its commit, which _info may show first
  let tasks, ts;
  for (const t1 = Date.now(); ; await new Promise((r) => setTimeout(r, 10))) {
    tasks = (await req('GET', U + '/_active_tasks')).json;
    ts = tasks.filter((x) => x.type === 'indexer' && x.design_document === '_design/c');
    if (ts.some((t) => t.changes_done > 0) || Date.now() - t1 > 5000) break;
  }
  ok(ts.length, 'an indexer task while it builds: ' + JSON.stringify(tasks));
  for (const t of ts) {
    eq(t.database, 'crash');
    ok(t.total_changes >= t.changes_done && t.progress >= 0 && t.progress <= 100, JSON.stringify(t));
  }
  ok(ts.some((t) => t.changes_done > 0), JSON.stringify(ts));
  await srv.kill9();
  await building;
  srv = await startDivan({ dataDir: srv.dataDir });
  U = srv.url;
  D = U + '/crash';
  const after = (await req('GET', D + '/_design/c/_info')).json.view_index.update_seq;
  ok(after >= seq, `the index kept its place: ${after} after, ${seq} before the kill`);
  // the build had not finished when the server died (else the test proves less)
  const r = await V('by_k', '?stale=ok&reduce=false&limit=0');
  ok(r.json.total_rows < N, `rows indexed before the restart: ${r.json.total_rows} of ${N}`);
});

test('after the restart: more writes, deletions, a purge; every query equals the model', async () => {
  for (let i = 0; i < 50; i++) {
    const id = 'n' + i;
    const d = { k: i % 5, v: 100 + i };
    eq((await req('PUT', `${D}/${id}`, d)).status, 201);
    model.set(id, d);
  }
  for (let i = 0; i < 30; i++) {
    const id = 'd' + String(i * 7).padStart(5, '0');
    const rev = (await req('GET', `${D}/${id}`)).json._rev;
    eq((await req('DELETE', `${D}/${id}?rev=${rev}`)).status, 200);
    model.delete(id);
  }
  const pid = 'd' + String(1).padStart(5, '0');
  const prev = (await req('GET', `${D}/${pid}`)).json._rev;
  eq((await req('POST', D + '/_purge', { [pid]: [prev] })).status, 201);
  model.delete(pid);
  await checkAll();
});

test('a design document written is built in the background, with no query asking', async () => {
  eq((await req('PUT', D + '/_design/bg', { views: { all: { map: 'function(doc) { emit(doc._id, null); }' } } })).status, 201);
  const t0 = Date.now();
  let n = 0;
  while (Date.now() - t0 < 60000) {
    n = (await req('GET', D + '/_design/bg/_view/all?stale=ok&limit=0')).json.total_rows;
    if (n === model.size + 1 /* the design document c is not mapped; bg neither */ - 1) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  eq(n, model.size);
});

test('and again after a clean restart', async () => {
  await srv.stop();
  srv = await startDivan({ dataDir: srv.dataDir });
  U = srv.url;
  D = U + '/crash';
  await checkAll();
  await srv.stop();
});

run();
