// mangobench.js — Mango (_index, _find) throughput: divan against
// pouchdb-server 4.2.0 (express-pouchdb's _find/_index), side by side in one
// run (`make bench` runs it after bench.js).
//
// Starts `divan serve` (DIVAN_BIN or ./divan) and pouchdb-server
// (test/node/node_modules, LevelDB), each on a free loopback port with its
// own temp data directory. On each server in turn (the other one paused with
// SIGSTOP, as bench.js does):
//
//   load       MANGO_DOCS (100,000) docs into db `m` with 1,000-doc
//              _bulk_docs, 4 in flight; doc i has k = i % (MANGO_DOCS / 25),
//              so an equality on k matches 25 docs
//   build      POST _index {fields: ["k"]} on the loaded docs, then a _find
//              with update=true (the default) on it, repeated until it
//              answers 200: docs/s = MANGO_DOCS / (time from the POST to
//              that answer)
//   eq         _find {k: R} limit 25                          req/s, p99
//   range      _find {k: {$gte: R, $lt: R+8}} sort [k] limit 100
//   or         _find {$or: [{k: R1}, {k: R2}, {k: R3}]} limit 25
//   covering   _find {k: R} fields [_id, k] limit 25 (answered from the
//              index rows alone by divan)
//   put0/1/5   PUT MANGO_PUTS (2,000) new docs into a fresh database with 0,
//              1 and 5 json indexes (fields f0…f4), 8 in flight: docs/s of
//              the PUTs alone, and of the PUTs plus the first _find per
//              index afterwards (update=true: pouchdb-server updates its
//              indexes only when queried; divan's are written with the doc)
//
// Each query workload runs MANGO_REQS (2,000) requests, or as many as fit in
// MANGO_SECONDS (20; pouchdb-server answers a query its index cannot serve
// by reading every document), 8 in flight, after up to 50 unmeasured ones; every answer must be 200 with the expected number of
// docs. A markdown table of divan, pouchdb-server and divan / pouchdb at the
// end. Exit status 1 on any failed request.
//
//   node bench/http/mangobench.js
//   DIVAN_BIN=build/cc/divan MANGO_DOCS=20000 MANGO_REQS=500 node bench/http/mangobench.js
//   MANGO_SERVERS=divan     only one of the two servers (divan,pouchdb)
//   MANGO_CONC=16           requests in flight per workload (default 8)
'use strict';
const os = require('os');
const { log, fmt, makeTmp, describe, runBench, died, client, hold, sampler, table, pct, bulkLoad } = require('./lib');

const NDOCS = Number(process.env.MANGO_DOCS || 100000);
const NREQS = Number(process.env.MANGO_REQS || 2000);
const NPUTS = Number(process.env.MANGO_PUTS || 2000);
const CONC = +(process.env.MANGO_CONC || 8); // requests in flight per workload
const SECONDS = Number(process.env.MANGO_SECONDS || 20); // at most this long per query workload
const NKEYS = Math.max(1, Math.floor(NDOCS / 25)); // 25 docs per k
const WHICH = (process.env.MANGO_SERVERS || 'divan,pouchdb').split(',');
const TMP = makeTmp('divan-mangobench-');

const web = client({ sockets: 16, timeoutMs: 600000 });
const { must } = web;
const rnd = (n) => Math.floor(Math.random() * n);

function docBody(i) {
  return { _id: 'd' + String(i).padStart(7, '0'), k: i % NKEYS, name: 'name-' + i, v: (i * 7919) % 1000,
    nested: { a: i % 17, b: 'x'.repeat(20) } };
}

async function load(s) {
  await must(s, 'PUT', '/m', undefined, [201, 202]);
  return NDOCS / await bulkLoad(must, s, 'm', NDOCS, docBody);
}

// POST _index on the loaded docs, then _find until the index answers.
async function build(s) {
  const t0 = Date.now();
  await must(s, 'POST', '/m/_index', { index: { fields: ['k'] }, ddoc: 'bench', name: 'k' }, [200]);
  for (;;) {
    const r = await web.request(s.url, 'POST', '/m/_find', { selector: { k: 0 }, limit: 1 });
    if (r.status === 200) break;
    if (Date.now() - t0 > 1800000) throw new Error(`${s.name}: the index did not answer in 30 min: ${r.status} ${r.text}`);
    await new Promise((res) => setTimeout(res, 100));
  }
  return { rate: NDOCS / ((Date.now() - t0) / 1000), p99ms: NaN };
}

// n requests of body(), CONC in flight, or as many as fit in secs; each
// answer must hold want(body) docs.
async function queries(s, body, want) {
  const run = async (n, secs, lat) => {
    let left = n;
    const end = Date.now() + secs * 1000;
    let done = 0;
    async function worker() {
      while (left-- > 0 && Date.now() < end) {
        const b = body();
        const a = process.hrtime.bigint();
        const r = await must(s, 'POST', '/m/_find', b, [200]);
        if (lat) lat.push(Number(process.hrtime.bigint() - a) / 1e6);
        const got = JSON.parse(r.text).docs.length;
        if (got !== want(b)) throw new Error(`${s.name}: ${JSON.stringify(b)} gave ${got} docs, not ${want(b)}`);
        done++;
      }
    }
    await Promise.all(Array.from({ length: CONC }, worker));
    return done;
  };
  await run(50, 3, null);
  const lat = [];
  const t0 = Date.now();
  const n = await run(NREQS, SECONDS, lat);
  const secs = (Date.now() - t0) / 1000;
  lat.sort((x, y) => x - y);
  return { rate: n / secs, p99ms: pct(lat, 99), p50ms: pct(lat, 50), reqs: n };
}

// How many docs have k in [lo, hi) (k = i % NKEYS).
const countK = (lo, hi) => {
  let n = 0;
  for (let k = Math.max(0, lo); k < Math.min(hi, NKEYS); k++) n += Math.floor(NDOCS / NKEYS) + (k < NDOCS % NKEYS ? 1 : 0);
  return n;
};

// NPUTS PUTs into a fresh db with nidx indexes; then one _find per index.
async function puts(s, nidx) {
  const db = '/p' + nidx;
  await must(s, 'PUT', db, undefined, [201, 202]);
  for (let j = 0; j < nidx; j++) await must(s, 'POST', db + '/_index', { index: { fields: ['f' + j] }, ddoc: 'f' + j, name: 'f' + j }, [200]);
  let next = 0;
  const lat = [];
  const t0 = Date.now();
  async function worker() {
    while (next < NPUTS) {
      const i = next++;
      const doc = { f0: rnd(1000), f1: 'x' + rnd(1000), f2: rnd(100), f3: i, f4: [i % 3] };
      const a = process.hrtime.bigint();
      await must(s, 'PUT', `${db}/doc${i}`, doc, [201, 202]);
      lat.push(Number(process.hrtime.bigint() - a) / 1e6);
    }
  }
  await Promise.all(Array.from({ length: CONC }, worker));
  const tPut = (Date.now() - t0) / 1000;
  for (let j = 0; j < nidx; j++) {
    const r = await must(s, 'POST', db + '/_find', { selector: { ['f' + j]: { $gt: null } }, limit: 1 }, [200]);
    if (JSON.parse(r.text).docs.length !== 1) throw new Error(`${s.name}: index f${j} holds no doc`);
  }
  const tAll = (Date.now() - t0) / 1000;
  lat.sort((x, y) => x - y);
  await must(s, 'DELETE', db, undefined, [200, 202]);
  return { rate: NPUTS / tPut, p99ms: pct(lat, 99), rateAll: NPUTS / tAll };
}

const WORKLOADS = [
  { key: 'eq', label: '_find k = R, limit 25', unit: 'req/s',
    run: (s) => queries(s, () => ({ selector: { k: rnd(NKEYS) }, limit: 25 }), () => Math.min(25, countK(0, 1))) },
  { key: 'range', label: '_find 8 values of k, sort k, limit 100', unit: 'req/s',
    run: (s) => queries(s, () => { const r = rnd(NKEYS); return { selector: { k: { $gte: r, $lt: r + 8 } }, sort: ['k'], limit: 100 }; },
      (b) => Math.min(100, countK(b.selector.k.$gte, b.selector.k.$lt))) },
  { key: 'or', label: '_find $or of 3 values of k, limit 25', unit: 'req/s',
    run: (s) => queries(s, () => { const a = rnd(NKEYS - 2); return { selector: { $or: [{ k: a }, { k: a + 1 }, { k: a + 2 }] }, limit: 25 }; },
      (b) => Math.min(25, countK(b.selector.$or[0].k, b.selector.$or[0].k + 3))) },
  { key: 'covering', label: '_find k = R, fields [_id, k] (covering)', unit: 'req/s',
    run: (s) => queries(s, () => ({ selector: { k: rnd(NKEYS) }, fields: ['_id', 'k'], limit: 25 }), () => Math.min(25, countK(0, 1))) },
  { key: 'put0', label: `PUT ${NPUTS} docs, no index`, unit: 'docs/s', run: (s) => puts(s, 0) },
  { key: 'put1', label: `PUT ${NPUTS} docs, 1 json index`, unit: 'docs/s', run: (s) => puts(s, 1) },
  { key: 'put5', label: `PUT ${NPUTS} docs, 5 json indexes`, unit: 'docs/s', run: (s) => puts(s, 5) },
];

runBench('mango bench', { which: WHICH, tmp: TMP, web }, async (servers) => {
  log(`mango bench: ${describe(servers)}; ${NDOCS} docs (${NKEYS} values of k), ${NREQS} requests per query workload, ` +
      `${CONC} in flight, ${os.cpus().length} cpus`);
  const rows = [];
  const row = (key, label, unit) => { const r = { w: { key, label, unit }, by: {} }; rows.push(r); return r; };
  const loadRow = row('load', `load ${NDOCS} docs (_bulk_docs)`, 'docs/s');
  const buildRow = row('build', `build a json index over ${NDOCS} docs`, 'docs/s');
  for (const s of servers) {
    const release = hold(servers, s, web);
    try {
      loadRow.by[s.name] = { rate: await load(s), p99ms: NaN };
      const stop = sampler(s.pid);
      buildRow.by[s.name] = Object.assign(await build(s), stop());
    } finally { release(); }
    log(`  load     ${s.name.padEnd(8)} ${fmt(loadRow.by[s.name].rate).padStart(10)} docs/s`);
    log(`  build    ${s.name.padEnd(8)} ${fmt(buildRow.by[s.name].rate).padStart(10)} docs/s  rss ${fmt(buildRow.by[s.name].rssMiB, 1)} MiB`);
  }
  for (const w of WORKLOADS) {
    const r0 = row(w.key, w.label, w.unit);
    const rAll = w.key.startsWith('put') && w.key !== 'put0' ? row(w.key + '+q', w.label + ', then a _find per index', 'docs/s') : null;
    for (const s of servers) {
      const release = hold(servers, s, web);
      let r, m;
      try {
        const stop = sampler(s.pid);
        r = await w.run(s);
        m = stop();
      } finally { release(); }
      Object.assign(r, m);
      r0.by[s.name] = r;
      if (rAll) rAll.by[s.name] = { rate: r.rateAll, p99ms: NaN, rssMiB: r.rssMiB };
      log(`  ${w.key.padEnd(8)} ${s.name.padEnd(8)} ${fmt(r.rate).padStart(10)} ${w.unit}  p99 ${fmt(r.p99ms, 2)} ms  ` +
          `rss ${fmt(r.rssMiB, 1)} MiB  server cpu ${fmt(r.cpuPct)}%` + (r.reqs ? `  requests ${r.reqs}` : '') + (rAll ? `  with the queries ${fmt(r.rateAll)} docs/s` : ''));
      if (died(s)) throw new Error(`${s.name} died: ${s.stderr().slice(-2000)}`);
    }
  }
  log('');
  const none = { rate: NaN, p99ms: NaN, rssMiB: NaN };
  table(['workload', 'divan', 'pouchdb-server', 'divan / pouchdb', 'p99 divan', 'p99 pouchdb'], 'lrrrrr',
    rows.map(({ w, by }) => {
      const d = by.divan || none, p = by.pouchdb || none;
      return [w.label, `${fmt(d.rate)} ${w.unit}`, `${fmt(p.rate)} ${w.unit}`, `${fmt(d.rate / p.rate, 1)}×`,
        Number.isFinite(d.p99ms) ? `${fmt(d.p99ms, 2)} ms` : '—', Number.isFinite(p.p99ms) ? `${fmt(p.p99ms, 2)} ms` : '—'];
    }));
  log('');
  log('pouchdb-server updates a json index when it is queried; divan writes index rows with the document.');
});
