// viewbench.js — map/reduce views: divan against pouchdb-server 4.2.0
// (express-pouchdb's _view, pouchdb-mapreduce) side by side in one run
// (`make bench` runs it), and the reduce over 1,000,000 rows on divan.
//
// Starts `divan serve` (DIVAN_BIN or ./divan) and pouchdb-server, each on a
// free loopback port with its own temp data directory; on each in turn (the
// other one paused with SIGSTOP, as bench.js does):
//
//   load     VIEW_DOCS (100,000) docs into db `v`, 1,000-doc _bulk_docs,
//            4 in flight; doc i: k = i % 1000, g = i % 10, v = i % 97
//   build    PUT _design/b with the one-line map emit(doc.k, doc.v)
//            (reduce _count; views with _stats and group keys share the
//            index on divan), then the first query (update=true) until it
//            answers: docs/s = VIEW_DOCS / (time from the PUT to the answer)
//   rows     ?reduce=false&startkey=R&limit=1000 — rows/s and p99
//   count    the whole-range _count — req/s and p99
//   stats    the whole-range _stats — req/s and p99
//   group1   _count with group_level=1 over [g, k] keys (10 groups)
//
// Then divan alone: 1,000 documents each emitting 1,000 rows into a view
// with _count and _stats (1,000,000 rows), and the whole-range and random
// sub-range reduce p99 (the bar: under 10 ms for the whole range).
//
// Each query workload: VIEW_REQS (1,000) requests or VIEW_SECONDS (20),
// 8 in flight, after 20 unmeasured. A markdown table at the end.
//
//   node bench/http/viewbench.js
//   DIVAN_BIN=build/cc/divan VIEW_DOCS=20000 node bench/http/viewbench.js
//   VIEW_SERVERS=divan   only one server
'use strict';
const os = require('os');
const { log, fmt, makeTmp, describe, runBench, client, hold, sampler, table, pct, bulkLoad } = require('./lib');

const NDOCS = Number(process.env.VIEW_DOCS || 100000);
const NREQS = Number(process.env.VIEW_REQS || 1000);
const SECONDS = Number(process.env.VIEW_SECONDS || 20);
const CONC = 8;
const BIG = Number(process.env.VIEW_BIG || 1000); // docs × 1,000 rows for the big reduce
const WHICH = (process.env.VIEW_SERVERS || 'divan,pouchdb').split(',');
const TMP = makeTmp('divan-viewbench-');

const web = client({ sockets: 16, timeoutMs: 3600000 });
const { must } = web;
const rnd = (n) => Math.floor(Math.random() * n);

const DDOC = {
  views: {
    by_k: { map: 'function(doc) { emit(doc.k, doc.v); }', reduce: '_count' },
    st: { map: 'function(doc) { emit(doc.k, doc.v); }', reduce: '_stats' },
    gk: { map: 'function(doc) { emit([doc.g, doc.k], 1); }', reduce: '_count' },
  },
};

async function load(s) {
  await must(s, 'PUT', '/v', undefined, [201, 202]);
  const docOf = (i) => ({ _id: 'd' + String(i).padStart(7, '0'), k: i % 1000, g: i % 10, v: i % 97 });
  return NDOCS / await bulkLoad(must, s, 'v', NDOCS, docOf);
}

async function build(s) {
  const t0 = Date.now();
  await must(s, 'PUT', '/v/_design/b', DDOC, [201]);
  const r = await must(s, 'GET', '/v/_design/b/_view/by_k', undefined, [200]);
  const n = JSON.parse(r.text).rows[0].value;
  if (n !== NDOCS) throw new Error(`${s.name}: _count ${n}, not ${NDOCS}`);
  // the other views of the design document (pouchdb builds each on its own)
  await must(s, 'GET', '/v/_design/b/_view/st', undefined, [200]);
  await must(s, 'GET', '/v/_design/b/_view/gk?limit=1', undefined, [200]);
  return { rate: NDOCS / ((Date.now() - t0) / 1000), p99ms: NaN };
}

async function queries(s, path, check, conc = CONC) {
  const run = async (n, secs, lat) => {
    let left = n;
    const end = Date.now() + secs * 1000;
    let done = 0, rows = 0;
    async function worker() {
      while (left-- > 0 && Date.now() < end) {
        const p = path();
        const a = process.hrtime.bigint();
        const r = await must(s, 'GET', p, undefined, [200]);
        if (lat) lat.push(Number(process.hrtime.bigint() - a) / 1e6);
        rows += check(JSON.parse(r.text), p);
        done++;
      }
    }
    await Promise.all(Array.from({ length: conc }, worker));
    return { done, rows };
  };
  await run(20, 3, null);
  const lat = [];
  const t0 = Date.now();
  const { done, rows } = await run(NREQS, SECONDS, lat);
  const secs = (Date.now() - t0) / 1000;
  lat.sort((x, y) => x - y);
  return { rate: done / secs, rowsPerS: rows / secs, p99ms: pct(lat, 99), p50ms: pct(lat, 50) };
}

const rowsOf = (n) => (j) => {
  if (j.rows.length !== n) throw new Error(`${j.rows.length} rows, not ${n}`);
  return n;
};

const WORKLOADS = [
  { key: 'rows', label: 'map query, 1,000 rows (reduce=false, startkey, limit)', unit: 'rows/s',
    run: (s) => queries(s, () => `/v/_design/b/_view/by_k?reduce=false&startkey=${rnd(Math.max(1, 1000 - Math.ceil(1e6 / NDOCS)))}&limit=1000`,
      rowsOf(Math.min(1000, NDOCS))),
    pick: (r) => r.rowsPerS },
  { key: 'count', label: '_count, whole range', unit: 'req/s',
    run: (s) => queries(s, () => '/v/_design/b/_view/by_k', (j) => { if (j.rows[0].value !== NDOCS) throw new Error('count'); return 1; }),
    pick: (r) => r.rate },
  { key: 'stats', label: '_stats, whole range', unit: 'req/s',
    run: (s) => queries(s, () => '/v/_design/b/_view/st', (j) => { if (j.rows[0].value.count !== NDOCS) throw new Error('stats'); return 1; }),
    pick: (r) => r.rate },
  { key: 'group1', label: '_count, group_level=1 (10 groups)', unit: 'req/s',
    run: (s) => queries(s, () => '/v/_design/b/_view/gk?group_level=1', rowsOf(Math.min(10, NDOCS))),
    pick: (r) => r.rate },
];

// divan alone: 1,000,000 rows, whole-range and sub-range reduce latency
async function big(s) {
  await must(s, 'PUT', '/big', undefined, [201, 202]);
  for (let from = 0; from < BIG; from += 100) {
    const docs = [];
    for (let i = from; i < Math.min(from + 100, BIG); i++) docs.push({ _id: 'b' + String(i).padStart(5, '0'), n: i });
    await must(s, 'POST', '/big/_bulk_docs', { docs }, [201]);
  }
  const t0 = Date.now();
  await must(s, 'PUT', '/big/_design/m', {
    views: {
      c: { map: 'function(doc) { for (var i = 0; i < 1000; i++) emit([doc.n % 10, i], i); }', reduce: '_count' },
      s: { map: 'function(doc) { for (var i = 0; i < 1000; i++) emit([doc.n % 10, i], i); }', reduce: '_stats' },
    },
  }, [201]);
  const r = await must(s, 'GET', '/big/_design/m/_view/c', undefined, [200]);
  const rows = JSON.parse(r.text).rows[0].value;
  const buildS = (Date.now() - t0) / 1000;
  const wholeCheck = (j) => { if (j.rows[0].value.count !== rows) throw new Error('big'); return 1; };
  const whole = await queries(s, () => '/big/_design/m/_view/s', wholeCheck);
  const one = await queries(s, () => '/big/_design/m/_view/s', wholeCheck, 1);
  const sub = await queries(s, () => { const a = rnd(10); return `/big/_design/m/_view/c?startkey=[${a},${rnd(500)}]&endkey=[${a},${500 + rnd(500)}]`; }, () => 1);
  const g1 = await queries(s, () => '/big/_design/m/_view/c?group_level=1', rowsOf(Math.min(10, BIG)));
  return { rows, buildS, whole, one, sub, g1 };
}

runBench('view bench', { which: WHICH, tmp: TMP, web }, async (servers) => {
  log(`view bench: ${describe(servers)}; ${NDOCS} docs, ${NREQS} requests per workload, ${CONC} in flight, ${os.cpus().length} cpus`);
  const rows = [];
  const row = (key, label, unit) => { const r = { label, unit, by: {} }; rows.push(r); return r; };
  const loadRow = row('load', `load ${NDOCS} docs (_bulk_docs)`, 'docs/s');
  const buildRow = row('build', `build 3 views (one index on divan) over ${NDOCS} docs`, 'docs/s');
  for (const s of servers) {
    const release = hold(servers, s, web);
    try {
      loadRow.by[s.name] = { v: await load(s) };
      const stop = sampler(s.pid);
      const b = await build(s);
      buildRow.by[s.name] = { v: b.rate, ...stop() };
    } finally { release(); }
    log(`  build ${s.name.padEnd(8)} ${fmt(buildRow.by[s.name].v).padStart(10)} docs/s`);
  }
  for (const w of WORKLOADS) {
    const r0 = row(w.key, w.label, w.unit);
    for (const s of servers) {
      const release = hold(servers, s, web);
      try {
        const r = await w.run(s);
        r0.by[s.name] = { v: w.pick(r), p99: r.p99ms };
      } finally { release(); }
      log(`  ${w.key.padEnd(6)} ${s.name.padEnd(8)} ${fmt(r0.by[s.name].v).padStart(10)} ${w.unit}  p99 ${fmt(r0.by[s.name].p99, 2)} ms`);
    }
  }
  const names = servers.map((s) => s.name);
  const cells = [];
  for (const r of rows) {
    const c = [r.label, r.unit];
    for (const n of names) c.push(r.by[n] ? fmt(r.by[n].v) + (r.by[n].p99 !== undefined ? ` (p99 ${fmt(r.by[n].p99, 1)} ms)` : '') : '-');
    if (names.length === 2 && r.by[names[0]] && r.by[names[1]]) c.push((r.by[names[0]].v / r.by[names[1]].v).toFixed(1) + '×');
    cells.push(c);
  }
  console.log(`\nviews, ${NDOCS} docs:\n`);
  table(['workload', 'unit', ...names, ...(names.length === 2 ? ['ratio'] : [])], ['l', 'l', ...names.map(() => 'r'), 'r'], cells);
  const d = servers.find((s) => s.name === 'divan');
  if (d) {
    const release = hold(servers, d, web);
    let b;
    try { b = await big(d); } finally { release(); }
    console.log(`\ndivan, ${fmt(b.rows)} rows (built in ${b.buildS.toFixed(1)} s):\n`);
    table(['reduce', 'req/s', 'p50 ms', 'p99 ms'], ['l', 'r', 'r', 'r'], [
      ['_stats, whole range, 1 in flight', fmt(b.one.rate), fmt(b.one.p50ms, 2), fmt(b.one.p99ms, 2)],
      [`_stats, whole range, ${CONC} in flight`, fmt(b.whole.rate), fmt(b.whole.p50ms, 2), fmt(b.whole.p99ms, 2)],
      ['_count, random sub-range', fmt(b.sub.rate), fmt(b.sub.p50ms, 2), fmt(b.sub.p99ms, 2)],
      ['_count, group_level=1', fmt(b.g1.rate), fmt(b.g1.p50ms, 2), fmt(b.g1.p99ms, 2)],
    ]);
    console.log(`\nwhole-range reduce over ${fmt(b.rows)} rows, one request at a time: p99 ${fmt(b.one.p99ms, 2)} ms (bar: under 10 ms)`);
  }
});
