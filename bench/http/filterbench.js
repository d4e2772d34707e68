// filterbench.js — a design document's JavaScript filter over `_changes`:
// divan (SpiderMonkey in process, 100 documents per query-server call)
// against pouchdb-server 4.2.0 (express-pouchdb, filters evaluated in Node),
// side by side in one run (`make bench` runs it after mangobench.js). The
// issue's bar: divan ≥ 5× pouchdb-server's rows/s.
//
// Starts `divan serve` (DIVAN_BIN or ./divan) and pouchdb-server
// (test/node/node_modules, LevelDB), each on a free loopback port with its
// own temp data directory. On each server in turn (the other one paused with
// SIGSTOP, as bench.js does):
//
//   load      FILTER_DOCS (100,000) docs into db `f` with 1,000-doc
//             _bulk_docs, 4 in flight; doc i has type "t" + (i % 4), and a
//             design document _design/app with filter by_type:
//             function(doc, req) { return doc.type === req.query.type; }
//   filtered  GET /f/_changes?filter=app/by_type&type=t1: one pass over
//             every document, a quarter pass — examined rows/s (the whole
//             database over the time to the last byte) and rows sent
//   +docs     the same with include_docs=true
//   all       GET /f/_changes?filter=app/by_type&type=t1 on POST (the
//             body in req.body is unused) — kept to show POST costs the same
//
// Each measured feed runs FILTER_RUNS (3) times after one unmeasured pass;
// the best run counts. Every answer must be 200 with exactly the expected
// rows. A markdown table of divan, pouchdb-server and divan / pouchdb at the
// end. Exit status 1 on any failure, or (FILTER_BAR=1) when divan is below
// 5× on the plain filtered feed.
//
//   DIVAN_BIN=build/cc/divan node bench/http/filterbench.js
//   FILTER_DOCS=20000 FILTER_SERVERS=divan node bench/http/filterbench.js
'use strict';
const os = require('os');
const { log, fmt, makeTmp, describe, runBench, died, client, hold, sampler, table, bulkLoad } = require('./lib');

const NDOCS = Number(process.env.FILTER_DOCS || 100000);
const RUNS = Number(process.env.FILTER_RUNS || 3);
const WHICH = (process.env.FILTER_SERVERS || 'divan,pouchdb').split(',');
const TMP = makeTmp('divan-filterbench-');

const web = client({ sockets: 8, timeoutMs: 1800000, keep: 1 << 30 });
const { must } = web;

const DDOC = { _id: '_design/app', filters: { by_type: 'function(doc, req) { return doc.type === req.query.type; }' } };
const docBody = (i) => ({ _id: 'd' + String(i).padStart(7, '0'), type: 't' + (i % 4), n: i, name: 'name-' + i,
  nested: { a: i % 17, b: 'x'.repeat(20) } });
const expected = Math.floor(NDOCS / 4) + (NDOCS % 4 > 1 ? 1 : 0); // i % 4 === 1

async function load(s) {
  await must(s, 'PUT', '/f', undefined, [201, 202]);
  await must(s, 'PUT', '/f/_design/app', DDOC, [201, 202]);
  return NDOCS / await bulkLoad(must, s, 'f', NDOCS, docBody);
}

// One filtered feed: examined rows/s (best of RUNS) and rows sent.
async function feed(s, q, method = 'GET') {
  const once = async () => {
    const t0 = process.hrtime.bigint();
    const r = await must(s, method, '/f/_changes?' + q, method === 'POST' ? {} : undefined, [200]);
    const secs = Number(process.hrtime.bigint() - t0) / 1e9;
    const rows = JSON.parse(r.text).results;
    if (rows.length !== expected) throw new Error(`${s.name}: ${q} gave ${rows.length} rows, not ${expected}`);
    return { secs, rows: rows.length };
  };
  await once();
  let best = Infinity, rows = 0;
  for (let i = 0; i < RUNS; i++) {
    const r = await once();
    if (r.secs < best) best = r.secs;
    rows = r.rows;
  }
  return { rate: (NDOCS + 1) / best, sentRate: rows / best, p99ms: NaN, secs: best };
}

const WORKLOADS = [
  { key: 'filtered', label: `_changes?filter over ${NDOCS} docs (rows examined/s)`, run: (s) => feed(s, 'filter=app/by_type&type=t1') },
  { key: '+docs', label: '… with include_docs=true', run: (s) => feed(s, 'filter=app/by_type&type=t1&include_docs=true') },
  { key: 'post', label: '… as POST _changes', run: (s) => feed(s, 'filter=app/by_type&type=t1', 'POST') },
];

runBench('filter bench', { which: WHICH, tmp: TMP, web }, async (servers) => {
  log(`filter bench: ${describe(servers)}; ${NDOCS} docs, filter passes ${expected}, best of ${RUNS}, ${os.cpus().length} cpus`);
  const rows = [];
  const loadRow = { w: { label: `load ${NDOCS} docs (_bulk_docs)`, unit: 'docs/s' }, by: {} };
  rows.push(loadRow);
  for (const s of servers) {
    const release = hold(servers, s, web);
    try { loadRow.by[s.name] = { rate: await load(s) }; } finally { release(); }
    log(`  load     ${s.name.padEnd(8)} ${fmt(loadRow.by[s.name].rate).padStart(10)} docs/s`);
  }
  for (const w of WORKLOADS) {
    const r0 = { w: { label: w.label, unit: 'rows/s' }, by: {} };
    rows.push(r0);
    for (const s of servers) {
      const release = hold(servers, s, web);
      let r, m;
      try {
        const stop = sampler(s.pid);
        r = await w.run(s);
        m = stop();
      } finally { release(); }
      r0.by[s.name] = Object.assign(r, m);
      log(`  ${w.key.padEnd(8)} ${s.name.padEnd(8)} ${fmt(r.rate).padStart(10)} rows/s examined  ${fmt(r.sentRate)} rows/s sent  ` +
          `${fmt(r.secs, 2)} s  rss ${fmt(m.rssMiB, 1)} MiB  server cpu ${fmt(m.cpuPct)}%`);
      if (died(s)) throw new Error(`${s.name} died: ${s.stderr().slice(-2000)}`);
    }
  }
  log('');
  const none = { rate: NaN };
  table(['workload', 'divan', 'pouchdb-server', 'divan / pouchdb'], 'lrrr',
    rows.map(({ w, by }) => {
      const d = by.divan || none, p = by.pouchdb || none;
      return [w.label, `${fmt(d.rate)} ${w.unit}`, `${fmt(p.rate)} ${w.unit}`, `${fmt(d.rate / p.rate, 1)}×`];
    }));
  const d = rows[1].by.divan, p = rows[1].by.pouchdb;
  if (d && p) {
    const x = d.rate / p.rate;
    log('');
    log(`bar: divan ≥ 5× pouchdb-server on the filtered feed: ${fmt(x, 1)}× ${x >= 5 ? 'met' : 'NOT MET'}`);
    if (x < 5 && process.env.FILTER_BAR === '1') process.exitCode = 1;
  }
});
