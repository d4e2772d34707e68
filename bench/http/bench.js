// bench.js — the HTTP benchmark: divan against pouchdb-server, side by side,
// the same workloads in one run (`make bench` runs it after the C benches).
//
// Starts `divan serve` (DIVAN_BIN or ./divan) and pouchdb-server 4.2.0
// (test/node/node_modules, LevelDB in a temp dir), each on a free loopback
// port with its own temp data directory, preloads 100,000 docs into each,
// then runs, for BENCH_SECONDS (10) each:
//
//   get      GET a random preloaded doc           wrk, 32 connections
//   put      PUT a new doc (unique ids)           wrk, 64 connections
//   bulk1    POST _bulk_docs of 1,000 new docs    wrk, 1 connection
//   bulk     POST _bulk_docs of 1,000 new docs    wrk, 4 connections
//   alldocs  _all_docs?include_docs=true, 1,000-row pages from random keys
//                                                 wrk, 4 connections
//   changes  a full _changes read of the 100,000 docs, repeated
//                                                 node, 1 connection
//
// and prints, per workload and server: requests or rows per second, p99
// latency, peak server RSS (VmRSS from /proc/PID/status, sampled every
// 100 ms), server and generator CPU, and the ratio divan / pouchdb; a
// markdown table at the end. Before each workload the server finishes what
// the last one left (quiet(): under 3 % of a core over 2 s), so no run pays
// for an earlier one's compactions. Before that, wrk runs against a trivial
// endpoint (GET / on divan) to show the generator's own ceiling. The server
// not being measured is paused (SIGSTOP) so its background work cannot
// steal a core. Both servers are stopped by PID and their directories
// removed.
//
// Then the bars of issue 22, each printed MET or MISSED:
//   - peak RSS: each server's VmHWM over the whole run (preload and every
//     workload), read before it stops; divan's bar is 128 MiB
//     ([divan] memory_limit's default);
//   - the engine's own limit: after the workloads divan is stopped and
//     build/<cc>/bench/bench_engine reads the KVs its bulk1 workload wrote
//     (database bulk1) and writes them again through kv.h directly, in
//     transactions of 1,000 documents' KVs, in the documents' order, on
//     one thread, with the memory divan's store had (bench_engine.c);
//     bar: bulk1 ≥ 80 % of it, both as sustained rates — documents over
//     the time until RocksDB owes nothing for them (no flush or compaction
//     running or pending: divan's _stats after bulk1, kv_db_info in
//     bench_engine), so each counts the compaction its writes caused. The
//     rates until the last write are printed beside. The pair is measured
//     BENCH_ENGINE_ROUNDS (3) times, divan restarted on its data for each
//     further bulk1 into a database of its own, and the bar takes the
//     median of the rounds' ratios (pouchdb-server paused throughout).
//     It also runs the same KVs in key order (--sorted), printed beside
//     it: the write path without compaction's share, which RocksDB skips
//     for keys that come in order;
//   - bulk (4 connections) ≥ 5× pouchdb-server, put (64 clients) ≥ 15×;
//     beside the first, for context, the engine's limit on 4 writers
//     (bench_engine --threads 4, the same KVs): what share of it divan's
//     4 connections reach, and what share of it 5× pouchdb-server would be.
//
// Then the cost of divan's metrics (BENCH_ONLY=stats alone): one more
// divan, preloaded alike, the get and put workloads in BENCH_CMP_ROUNDS (9)
// rounds of BENCH_CMP_SECONDS (3) each, every round one run as shipped
// (counting, and a log line per request at [log] level info) and one with
// both switched off at run time ([stats] enabled = false, [log] level =
// warning, through /_config; the order flipped every round), after the
// preload's compactions finished and a warm-up run. What decides is the
// server's CPU time per request, which other load on the machine moves far
// less than the rate, as the median of the rounds' on/off ratios; the
// budget is 3 %. BENCH_CMP_OFF ("stats/enabled=false log/level=warning")
// lists the settings the "off" runs make (section/key=value,
// space-separated; deleted again for the "on" runs):
// BENCH_CMP_OFF=stats/enabled=false weighs the metrics alone.
//
//   node bench/http/bench.js
//   DIVAN_BIN=build/clients/divan BENCH_SECONDS=5 node bench/http/bench.js
//   BENCH_ONLY=get,put   run only those workloads (the preload always runs)
//   BENCH_ONLY=stats     only the cost of the metrics (BENCH_SERVERS=divan: no pouchdb-server)
//   BENCH_SERVERS=pouchdb  only one of the two servers (divan,pouchdb)
//   BENCH_SETTLE=30      seconds of quiet between the preload and the workloads
'use strict';
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { sleep, log, fmt, makeTmp, basicAuth, describe, runBench, died, client, hold, rssKiB, hwmKiB, sampler, table, pct, bulkLoad, startDivan, cpuSec, stopProc } = require('./lib');

const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const NDOCS = Number(process.env.BENCH_DOCS || 100000);
const PAGE = 1000;
const ONLY = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',') : null;
const WHICH = (process.env.BENCH_SERVERS || 'divan,pouchdb').split(',');
const SETTLE = Number(process.env.BENCH_SETTLE || 0); // seconds of quiet after the preload
const ENGINE_ROUNDS = Number(process.env.BENCH_ENGINE_ROUNDS || 3); // bulk1 / engine pairs for the 80 % bar
const CMP_ROUNDS = Number(process.env.BENCH_CMP_ROUNDS || 9);
const CMP_SECONDS = Number(process.env.BENCH_CMP_SECONDS || 3);
const CMP_OFF = (process.env.BENCH_CMP_OFF || 'stats/enabled=false log/level=warning').split(/\s+/).filter(Boolean).map((x) => {
  const m = /^([^/]+)\/([^=]+)=(.*)$/.exec(x);
  if (!m) throw new Error('BENCH_CMP_OFF: section/key=value, not ' + x);
  return { section: m[1], key: m[2], value: m[3] };
});
const CMP_BUDGET = 0.03;
const WRK_LUA = path.join(__dirname, 'wrk.lua');
const TMP = makeTmp('divan-httpbench-');

// Keep-alive sockets, 16 per server, renewed for every measured phase;
// bodies are kept as text (unparsed: big bodies).
const web = client({ sockets: 16, timeoutMs: 300000 });
const { must } = web;

// ------------------------------------------------------- measurement aids

// Run wrk with wrk.lua; bash's `times` reports wrk's own CPU time.
function wrk(url, mode, conns, seconds, env) {
  const threads = Math.min(2, conns);
  const u = new URL(url);
  env = Object.assign({}, env, { WRK_AUTH: u.username ? basicAuth(u) : '' });
  const args = ['-t', String(threads), '-c', String(conns), '-d', seconds + 's', '--timeout', '60s', '--latency', '-s', WRK_LUA, u.origin + '/'];
  return new Promise((resolve, reject) => {
    const p = spawn('bash', ['-c', 'wrk "$@"; rc=$?; times; exit $rc', 'wrk', ...args], {
      env: Object.assign({}, process.env, { WRK_MODE: mode }, env), stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('exit', (code) => {
      const m = /WRKJSON (\{.*\})/.exec(out);
      if (code !== 0 || !m) return reject(new Error(`wrk ${mode} failed (${code}): ${out}${err}`));
      const j = JSON.parse(m[1]);
      // `times` prints shell then children "XmY.YYYs XmY.YYYs"; the last line is wrk's.
      const lines = out.trim().split('\n');
      const t = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s/.exec(lines[lines.length - 1]);
      const gcpu = t ? Number(t[1]) * 60 + Number(t[2]) + Number(t[3]) * 60 + Number(t[4]) : NaN;
      const secs = j.duration_us / 1e6;
      resolve({
        reqs: j.requests, secs, rate: j.requests / secs, reqRate: j.requests / secs, p99ms: j.p99_us / 1000, p50ms: j.p50_us / 1000,
        errors: j.connect + j.read + j.write + j.status + j.timeout, errDetail: j, genCpuPct: (100 * gcpu) / secs,
      });
    });
    p.on('error', reject);
  });
}

// ------------------------------------------------------------- workloads

function docBody(i) {
  return { _id: 'd' + String(i).padStart(7, '0'), type: 'bench', i, name: 'document number ' + i,
    tags: ['alpha', 'beta', 'gamma'].slice(0, 1 + (i % 3)), score: (i * 7919) % 1000 / 10,
    nested: { a: i % 17, b: 'x'.repeat(20), c: [1, 2, 3] }, active: i % 2 === 0 };
}

// 100,000 docs into db `big`: 1,000-doc _bulk_docs, 4 in flight.
async function preload(s) {
  await must(s, 'PUT', '/big', undefined, [201, 202]);
  const secs = await bulkLoad(must, s, 'big', NDOCS, docBody);
  const info = JSON.parse((await must(s, 'GET', '/big', undefined, [200])).text);
  if (info.doc_count !== NDOCS) throw new Error(`${s.name}: big has ${info.doc_count} docs, not ${NDOCS}`);
  return secs;
}

// The _bulk_docs body: 1,000 docs without ids (the server names them).
function bulkBodyFile() {
  const f = path.join(TMP, 'bulk.json');
  const docs = [];
  for (let i = 0; i < 1000; i++) { const d = docBody(i); delete d._id; docs.push(d); }
  fs.writeFileSync(f, JSON.stringify({ docs }));
  return f;
}

// Full _changes reads, one after another, until SECONDS have passed (at
// least one read); the first one is parsed and must hold every doc, the
// others must be as long.
async function changesReads(s) {
  const lat = [];
  let rows = 0, firstBytes = 0;
  const t0 = Date.now(), cpu0 = process.cpuUsage();
  do {
    const a = Date.now();
    // a big body: the first one kept as text (to check it), later ones only
    // counted, so the node side stays far below the server's rate
    const r = await web.request(s.url, 'GET', '/big/_changes', undefined, { keep: lat.length === 0 ? Infinity : 0 });
    lat.push(Date.now() - a);
    if (r.status !== 200) throw new Error(`${s.name}: _changes answered ${r.status}`);
    if (lat.length === 1) {
      const n = JSON.parse(r.text).results.length;
      if (n !== NDOCS) throw new Error(`${s.name}: _changes gave ${n} rows, not ${NDOCS}`);
      firstBytes = r.bytes;
    } else if (Math.abs(r.bytes - firstBytes) > firstBytes / 100) {
      throw new Error(`${s.name}: _changes gave ${r.bytes} bytes, the first read ${firstBytes}`);
    }
    rows += NDOCS;
  } while (Date.now() - t0 < SECONDS * 1000);
  const secs = (Date.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  lat.sort((x, y) => x - y);
  return { reqs: lat.length, rate: rows / secs, p99ms: pct(lat, 99), p50ms: pct(lat, 50), errors: 0,
    genCpuPct: (cpu.user + cpu.system) / 1e4 / secs };
}

// _bulk_docs of 1,000 new docs on one connection into database db: the
// bulk1 workload, and each further round of the engine's-limit bar.
const bulk1Workload = (db) => ({ key: 'bulk1', label: '_bulk_docs 1,000 docs (1 conn)', unit: 'docs/s', rows: 1000,
  prep: async (s) => { await must(s, 'PUT', '/' + db, undefined, [201, 202]); },
  run: (s) => wrk(s.url, 'bulk', 1, SECONDS, { WRK_DB: db, WRK_BODY_FILE: bulkFile }) });

const WORKLOADS = [
  { key: 'get', label: 'GET random doc (32 conns)', unit: 'req/s',
    prep: async (s) => { await must(s, 'GET', '/big/d0000042', undefined, [200]); },
    run: (s) => wrk(s.url, 'get', 32, SECONDS, { WRK_DB: 'big', WRK_N: String(NDOCS) }) },
  { key: 'put', label: 'PUT new doc (64 conns)', unit: 'docs/s',
    prep: async (s) => { await must(s, 'PUT', '/put', undefined, [201, 202]); },
    run: (s) => wrk(s.url, 'put', 64, SECONDS, { WRK_DB: 'put' }) },
  bulk1Workload('bulk1'),
  { key: 'bulk', label: '_bulk_docs 1,000 docs (4 conns)', unit: 'docs/s', rows: 1000,
    prep: async (s) => { await must(s, 'PUT', '/bulk', undefined, [201, 202]); },
    run: (s) => wrk(s.url, 'bulk', 4, SECONDS, { WRK_DB: 'bulk', WRK_BODY_FILE: bulkFile }) },
  { key: 'alldocs', label: '_all_docs include_docs, 1,000/page (4 conns)', unit: 'rows/s', rows: PAGE,
    prep: async (s) => {
      const from = 'd' + String(Math.floor(Math.max(0, NDOCS - PAGE) / 2)).padStart(7, '0');
      const r = JSON.parse((await must(s, 'GET', `/big/_all_docs?include_docs=true&limit=${PAGE}&startkey=%22${from}%22`, undefined, [200])).text);
      if (r.rows.length !== Math.min(PAGE, NDOCS) || r.rows[0].id !== from || !r.rows[0].doc) throw new Error(s.name + ': _all_docs page is wrong');
    },
    run: (s) => wrk(s.url, 'alldocs', 4, SECONDS, { WRK_DB: 'big', WRK_N: String(NDOCS), WRK_PAGE: String(PAGE) }) },
  { key: 'changes', label: `full _changes of ${NDOCS.toLocaleString('en')} docs (1 conn)`, unit: 'rows/s',
    prep: async () => {}, run: (s) => changesReads(s) },
];
let bulkFile = null;

// wrk --version prints its banner and exits 1; a missing wrk is ENOENT.
function wrkVersion() {
  try {
    return execFileSync('wrk', ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  } catch (e) {
    if (e.code === 'ENOENT') throw new Error('wrk not found: run scripts/deps.sh');
    return String(e.stdout || '');
  }
}
const WRK_VERSION = (/wrk (\S+)/.exec(wrkVersion()) || [, "?"])[1];

// ---------------------------------------------------- the cost of metrics

const median = (xs) => { const s = xs.slice().sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

// One fresh divan, preloaded as the main run's; get and put in rounds that
// switch counting and the request log off and on again (/_config: CMP_OFF,
// deleted again for the "on" runs), the order flipped
// every round (on off, off on, …). One process and one data directory for
// both, so nothing differs but the switch: two processes differ by a few
// per cent on their own (placement, caches) on this kind of machine. Two
// measures per run: the rate wrk saw, and the server's CPU time per
// request (utime + stime from /proc/PID/stat over the run, divided by the
// requests served). The rate moves with whatever else the machine runs;
// the CPU a request costs the server much less, so it decides. The summary
// compares medians of the per-round on/off ratios.
async function metricsCost(servers) {
  const s = await startDivan(TMP, { name: 'divan-cost' }); // in TMP: removed with the others' data
  servers.push(s);
  const offText = CMP_OFF.map((x) => `[${x.section}] ${x.key} = ${x.value}`).join(', ');
  const set = async (off) => {
    for (const x of CMP_OFF) {
      const p = `/_node/_local/_config/${x.section}/${x.key}`;
      if (off) await web.must(s, 'PUT', p, JSON.stringify(x.value), [200]);
      else await web.must(s, 'DELETE', p, undefined, [200, 404]);
    }
  };
  log(`metrics cost: one divan (pid ${s.pid}), as shipped vs ${offText}, ${CMP_ROUNDS} rounds × ${CMP_SECONDS} s per workload`);
  {
    const release = hold(servers, s, web);
    const secs = await preload(s).finally(release);
    log(`preload: ${NDOCS} docs in ${fmt(secs, 1)} s`);
  }
  const q = await quiet(servers, s);
  log(`settled in ${fmt(q.secs)} s (cpu ${fmt(100 * q.busy, 1)}%)`);
  const rows = [];
  for (const key of ['get', 'put']) {
    const w = WORKLOADS.find((x) => x.key === key);
    const run1 = () => wrk(s.url, key, key === 'get' ? 32 : 64, CMP_SECONDS, key === 'get' ? { WRK_DB: 'big', WRK_N: String(NDOCS) } : { WRK_DB: 'put' });
    const m = { on: { rate: [], cpu: [], p99: [] }, off: { rate: [], cpu: [], p99: [] } };
    const release = hold(servers, s, web);
    try {
      await w.prep(s);
      await wrk(s.url, key, key === 'get' ? 32 : 64, 1, key === 'get' ? { WRK_DB: 'big', WRK_N: String(NDOCS) } : { WRK_DB: 'put' }); // warm up
      for (let round = 0; round < CMP_ROUNDS; round++) {
        for (const k of round % 2 ? ['off', 'on'] : ['on', 'off']) {
          await set(k === 'off');
          web.renew();
          const c0 = cpuSec(s.pid);
          const r = await run1();
          const c1 = cpuSec(s.pid);
          if (r.errors) throw new Error(`${key} (${k}): errors ${JSON.stringify(r.errDetail)}`);
          if (died(s)) throw new Error(`divan died: ${s.stderr().slice(-2000)}`);
          m[k].rate.push(r.rate);
          m[k].cpu.push((1e6 * (c1 - c0)) / r.reqs);
          m[k].p99.push(r.p99ms);
        }
        log(`  ${key} round ${round + 1}: on ${fmt(m.on.rate[round])}  off ${fmt(m.off.rate[round])} ${w.unit} ` +
            `(on/off ${fmt(m.on.rate[round] / m.off.rate[round], 3)}); server cpu on ${fmt(m.on.cpu[round], 1)}  ` +
            `off ${fmt(m.off.cpu[round], 1)} µs/request (on/off ${fmt(m.on.cpu[round] / m.off.cpu[round], 3)})`);
      }
      await set(false);
    } finally {
      release();
    }
    const ratios = (q) => m.on[q].map((x, i) => x / m.off[q][i]);
    rows.push({ w, rateOn: median(m.on.rate), rateOff: median(m.off.rate), rateRatio: median(ratios('rate')),
      cpuOn: median(m.on.cpu), cpuOff: median(m.off.cpu), cpuRatio: median(ratios('cpu')),
      p99on: median(m.on.p99), p99off: median(m.off.p99),
      spread: Math.max(...ratios('rate')) - Math.min(...ratios('rate')), cpuSpread: Math.max(...ratios('cpu')) - Math.min(...ratios('cpu')) });
  }
  log('');
  table(['workload', 'rate, as shipped', 'rate, off', 'rate on/off', 'server CPU/request, as shipped', 'server CPU/request, off', 'CPU on/off',
    'p99 on', 'p99 off'], 'lrrrrrrrr',
  rows.map((x) => [x.w.label, `${fmt(x.rateOn)} ${x.w.unit}`, `${fmt(x.rateOff)} ${x.w.unit}`, fmt(x.rateRatio, 3),
    `${fmt(x.cpuOn, 1)} µs`, `${fmt(x.cpuOff, 1)} µs`, fmt(x.cpuRatio, 3), `${fmt(x.p99on, 2)} ms`, `${fmt(x.p99off, 2)} ms`]));
  log('(medians over the rounds; the on/off columns are medians of each round\'s ratio)');
  for (const x of rows) {
    const cost = x.cpuRatio - 1;
    log(`cost of ${offText.replace(/ = \S+/g, '')} on ${x.w.key}: ${fmt(100 * cost, 1)}% more server CPU per request (budget ${100 * CMP_BUDGET}%: ` +
        `${cost <= CMP_BUDGET ? 'within' : 'OVER'}); throughput ${fmt(100 * (1 - x.rateRatio), 1)}% lower; ` +
        `per-round ratios spread over ${fmt(100 * x.cpuSpread, 1)} points (CPU), ${fmt(100 * x.spread, 1)} (rate)`);
  }
  return rows;
}

// Let s finish what came before it (RocksDB's or LevelDB's flushes and
// compactions), the others paused: until it uses less than 3 % of a core
// over 2 s (at most 120 s), so no run pays for an earlier one's backlog.
async function quiet(servers, s) {
  const release = hold(servers, s, web);
  try {
    const t0 = Date.now();
    for (;;) {
      const c0 = cpuSec(s.pid);
      await sleep(2000);
      const busy = (cpuSec(s.pid) - c0) / 2;
      if (busy < 0.03 || Date.now() - t0 > 120000) return { secs: (Date.now() - t0) / 1000, busy };
    }
  } finally {
    release();
  }
}

// Seconds until divan's RocksDB owes nothing for what was written: no flush
// or compaction running and none pending (its _stats), seen twice 50 ms
// apart, at most 300 s: bench_engine's test (settle()), so bulk1's
// sustained rate and the engine's each count the compaction their writes
// caused.
async function rocksOwed(s) {
  const t0 = Date.now();
  for (let quietFor = 0; quietFor < 2 && Date.now() - t0 < 300000;) {
    const j = JSON.parse((await must(s, 'GET', '/_node/_local/_stats/divan/rocksdb', undefined, [200])).text);
    const v = (k) => (j[k] ? j[k].value : NaN);
    quietFor = v('running_compactions') === 0 && v('running_flushes') === 0 && v('pending_compaction_bytes') === 0 ? quietFor + 1 : 0;
    if (quietFor < 2) await sleep(50);
  }
  return (Date.now() - t0) / 1000;
}

// One workload on server s, from a quiet server, the others (all) paused:
// its result, the rate in rows, with the RSS and CPU sampled meanwhile and,
// for bulk1 on divan, the time until RocksDB owed nothing and the
// sustained rate; logged as a line.
async function measure(all, s, w) {
  const q = await quiet(all, s);
  const release = hold(all, s, web);
  let r, m;
  try {
    await w.prep(s);
    const stop = sampler(s.pid);
    r = await w.run(s);
    m = stop();
    if (w.key === 'bulk1' && s.name === 'divan') r.owedS = await rocksOwed(s);
  } finally {
    release();
  }
  r.settledS = q.secs;
  r.rate *= w.rows || 1;
  if (r.owedS !== undefined) r.sustained = (r.reqs * w.rows) / (r.secs + r.owedS);
  Object.assign(r, m);
  log(`  ${w.key.padEnd(8)} ${s.name.padEnd(8)} ${fmt(r.rate).padStart(10)} ${w.unit}  p50 ${fmt(r.p50ms, 2)} ms  ` +
      `p99 ${fmt(r.p99ms, 2)} ms  rss ${fmt(r.rssMiB, 1)} MiB  server cpu ${fmt(r.cpuPct)}%  ` +
      `gen cpu ${fmt(r.genCpuPct)}%  requests ${r.reqs}  (settled ${fmt(r.settledS)} s before)` +
      (r.owedS !== undefined ? `  compactions done ${fmt(r.owedS, 2)} s after: ${fmt(r.sustained)} ${w.unit} sustained` : '') +
      (r.errors ? '  ERRORS ' + JSON.stringify(r.errDetail) : ''));
  return r;
}

// ------------------------------------------------------------------ main

runBench('http bench', { which: WHICH, tmp: TMP, web }, async (servers, tStart) => {
  log(`http bench: ${describe(servers)}; ` +
      `${SECONDS} s per workload, ${os.cpus().length} cpus, wrk ${WRK_VERSION}`);
  bulkFile = bulkBodyFile();

  // The generator's ceiling on a trivial endpoint.
  const ceil = await wrk(servers[0].url, 'trivial', 32, Math.min(5, SECONDS), {});
  const ceilText = `wrk GET / on ${servers[0].name}, 32 conns: ${fmt(ceil.rate)} req/s, p99 ${fmt(ceil.p99ms, 2)} ms, ` +
      `wrk cpu ${fmt(ceil.genCpuPct)}%`;
  log('generator ceiling: ' + ceilText);

  const main = !ONLY || ONLY.some((k) => k !== 'stats'); // BENCH_ONLY=stats: only the metrics' cost
  for (const s of main ? servers : []) {
    const release = hold(servers, s, web);
    const secs = await preload(s).finally(release);
    log(`preload ${s.name}: ${NDOCS} docs in ${fmt(secs, 1)} s (${fmt(NDOCS / secs)} docs/s), rss ${fmt(rssKiB(s.pid) / 1024, 1)} MiB`);
  }

  if (SETTLE) { log(`settling ${SETTLE} s after the preload`); await sleep(SETTLE * 1000); }
  const results = [];
  for (const w of WORKLOADS) {
    if (ONLY && !ONLY.includes(w.key)) continue;
    const row = { w, by: {} };
    for (const s of servers) {
      row.by[s.name] = await measure(servers, s, w);
      if (died(s)) throw new Error(`${s.name} died: ${s.stderr().slice(-2000)}`);
    }
    results.push(row);
  }

  // peak RSS over the whole run, then the engine's limit on bulk1's KVs
  const hwm = {};
  for (const s of servers) hwm[s.name] = hwmKiB(s.pid) / 1024;
  const bars = [];
  const by = (key) => (results.find((x) => x.w.key === key) || { by: {} }).by;
  if (hwm.divan) bars.push({ what: 'divan peak RSS (VmHWM) over the run', value: `${fmt(hwm.divan, 1)} MiB`, ok: hwm.divan <= 128, bar: '≤ 128 MiB' });
  const d1 = by('bulk1').divan;
  let e4 = null; // the engine's limit on 4 writers, beside the 4-connection bar
  if (d1) {
    const s = servers.find((x) => x.name === 'divan');
    const mem = s.storeMiB() ? ['--memory-mb', String(s.storeMiB())] : [];
    await stopProc(s.proc);
    servers.splice(servers.indexOf(s), 1); // gone: nothing to pause or resume any more
    const bin = process.env.BENCH_ENGINE_BIN || path.join(path.dirname(path.resolve(process.env.DIVAN_BIN || 'divan')), 'bench', 'bench_engine');
    // pouchdb-server paused while the engine runs: nothing else on the cores
    const engine = (db, extra) => {
      const release = hold(servers, null, web);
      try {
        const out = execFileSync(bin, [path.join(TMP, 'divan'), db, '1000', ...mem, ...extra]).toString();
        log(out.split('\n').filter((l) => !l.startsWith('ENGINEJSON')).join('\n').trim());
        return JSON.parse(/ENGINEJSON (\{.*\})/.exec(out)[1]);
      } finally {
        release();
      }
    };
    const e = engine('bulk1', []);
    const sorted = engine('bulk1', ['--sorted']);
    if (by('bulk').divan) e4 = engine('bulk1', ['--threads', '4']);
    log(`(until the last write alone: bulk1 ${fmt(d1.rate)} docs/s, the engine ${fmt(e.docs_per_s)}: ${fmt(100 * d1.rate / e.docs_per_s, 1)} %; ` +
        `the same KVs in key order: ${fmt(sorted.docs_per_s)} docs/s, ${fmt(sorted.sustained_docs_per_s)} sustained)`);
    // More rounds of the pair, each bulk1 right before its engine run: the
    // machine's speed drifts by more than the bar's margin over a minute
    // (one day's runs: 67 % to 105 % for one binary), so the bar takes the
    // median of the rounds' ratios. Each round restarts divan on its data
    // and writes a database of its own.
    const rounds = [{ d: d1, e }];
    for (let k = 2; k <= ENGINE_ROUNDS; k++) {
      const db = 'bulk1_' + k;
      log(`round ${k} of the pair: bulk1 into ${db}, then the engine on its KVs`);
      const sk = await startDivan(TMP);
      let r;
      try {
        r = await measure([...servers, sk], sk, bulk1Workload(db));
      } finally {
        await stopProc(sk.proc);
      }
      if (r.errors) throw new Error('bulk1 round ' + k + ' had errors: ' + JSON.stringify(r.errDetail));
      rounds.push({ d: r, e: engine(db, []) });
    }
    const shares = rounds.map((x) => x.d.sustained / x.e.sustained_docs_per_s);
    const median = [...shares].sort((a, b) => a - b)[Math.floor(shares.length / 2)];
    bars.push({ what: `_bulk_docs on 1 connection vs the engine's limit on its KVs, both sustained, median of ${rounds.length} rounds ` +
        `(${rounds.map((x) => `${fmt(x.d.sustained)} / ${fmt(x.e.sustained_docs_per_s)}`).join(', ')} docs/s)`,
      value: `${fmt(100 * median, 1)} %`, ok: median >= 0.8, bar: '≥ 80 %' });
    log(`(the rounds' ratios: ${shares.map((x) => fmt(100 * x, 1) + ' %').join(', ')}; until the last write: ` +
        `${rounds.map((x) => fmt(100 * x.d.rate / x.e.docs_per_s, 1) + ' %').join(', ')})`);
  }
  const ratio = (key) => { const x = by(key); return x.divan && x.pouchdb ? x.divan.rate / x.pouchdb.rate : NaN; };
  if (Number.isFinite(ratio('bulk'))) bars.push({ what: '_bulk_docs on 4 connections, divan / pouchdb-server', value: `${fmt(ratio('bulk'), 1)}×`, ok: ratio('bulk') >= 5, bar: '≥ 5×' });
  if (e4) {
    // Not a bar of its own: whether the one above is within the engine's
    // reach here. Both rates until the last write, as the ratio above.
    const b4 = by('bulk'), need = b4.pouchdb ? 5 * b4.pouchdb.rate : NaN;
    bars.push({ what: `_bulk_docs on 4 connections (${fmt(b4.divan.rate)} docs/s) vs the engine's limit on 4 writers (${fmt(e4.docs_per_s)} docs/s; ${fmt(e4.sustained_docs_per_s)} sustained)`,
      value: `${fmt(100 * b4.divan.rate / e4.docs_per_s, 1)} %`, ok: null, bar: '(context)' });
    if (Number.isFinite(need)) {
      log(`(5× pouchdb-server's _bulk_docs on 4 connections is ${fmt(need)} docs/s: ${fmt(100 * need / e4.docs_per_s, 1)} % of what the engine ` +
          `alone writes of the same documents on 4 threads until its last write, ${fmt(100 * need / e4.sustained_docs_per_s, 1)} % of its sustained rate)`);
    }
  }
  if (Number.isFinite(ratio('put'))) bars.push({ what: 'durable PUT, 64 clients, divan / pouchdb-server', value: `${fmt(ratio('put'), 1)}×`, ok: ratio('put') >= 15, bar: '≥ 15×' });

  log('');
  const none = { rate: NaN, p99ms: NaN, rssMiB: NaN, errors: 0 };
  const err = (x) => (x.errors ? ` (${x.errors} errors)` : '');
  table(['workload', 'divan', 'pouchdb-server', 'divan / pouchdb', 'p99 divan', 'p99 pouchdb', 'RSS divan', 'RSS pouchdb'], 'lrrrrrrr',
    results.map(({ w, by }) => {
      const d = by.divan || none, p = by.pouchdb || none;
      return [w.label, `${fmt(d.rate)} ${w.unit}${err(d)}`, `${fmt(p.rate)} ${w.unit}${err(p)}`, `${fmt(d.rate / p.rate, 1)}×`,
        `${fmt(d.p99ms, 2)} ms`, `${fmt(p.p99ms, 2)} ms`, `${fmt(d.rssMiB, 1)} MiB`, `${fmt(p.rssMiB, 1)} MiB`];
    }));
  log('');
  log(`peak RSS (VmHWM) over the whole run: ${Object.entries(hwm).map(([n, v]) => `${n} ${fmt(v, 1)} MiB`).join(', ')}`);
  if (bars.length) {
    table(['bar (issue 22)', 'measured', 'bar', ''], 'lrrl', bars.map((b) => [b.what, b.value, b.bar, b.ok === null ? '' : b.ok ? 'MET' : 'MISSED']));
  }
  log('');
  log('pouchdb-server writes through leveldown without fsync; divan answers a write once it is durable.');
  // The generator is not the bottleneck if its busiest run stayed well
  // below what it reaches on a trivial endpoint.
  let top = null;
  for (const { w, by } of results) {
    for (const [name, r] of Object.entries(by)) {
      if (Number.isFinite(r.reqRate) && w.key !== 'changes' && (!top || r.reqRate > top.r.reqRate)) top = { w, name, r };
    }
  }
  if (top) {
    log(`load generator: the busiest wrk run (${top.w.key} on ${top.name}) made ${fmt(top.r.reqRate)} req/s, ` +
        `${fmt((100 * top.r.reqRate) / ceil.rate)}% of wrk's ${fmt(ceil.rate)} req/s on a trivial endpoint; ` +
        `node's _changes reader used at most ${fmt(Math.max(...results.filter((x) => x.w.key === 'changes').flatMap((x) => Object.values(x.by).map((r) => r.genCpuPct)), 0))}% of a core`);
  }
  if (WHICH.includes('divan') && (!ONLY || ONLY.includes('stats'))) {
    log('');
    await metricsCost(servers);
  }
  log(`generator ceiling (${ceilText}); total bench time ${fmt((Date.now() - tStart) / 1000)} s`);
  const bad = results.filter(({ by }) => Object.values(by).some((r) => r.errors));
  if (bad.length) { log('some workloads had errors: ' + bad.map((r) => r.w.key).join(', ')); process.exitCode = 1; }
});
