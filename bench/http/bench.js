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
//   bulk     POST _bulk_docs of 1,000 new docs    wrk, 4 connections
//   alldocs  _all_docs?include_docs=true, 1,000-row pages from random keys
//                                                 wrk, 4 connections
//   changes  a full _changes read of the 100,000 docs, repeated
//                                                 node, 1 connection
//
// and prints, per workload and server: requests or rows per second, p99
// latency, peak server RSS (VmRSS from /proc/PID/status, sampled every
// 100 ms), server and generator CPU, and the ratio divan / pouchdb; a
// markdown table at the end. Before that, wrk runs against a trivial
// endpoint (GET / on divan) to show the generator's own ceiling. The server
// not being measured is paused (SIGSTOP) so its background work cannot
// steal a core. Both servers are stopped by PID and their directories
// removed.
//
//   node bench/http/bench.js
//   DIVAN_BIN=build/clients/divan BENCH_SECONDS=5 node bench/http/bench.js
//   BENCH_ONLY=get,put   run only those workloads (the preload always runs)
//   BENCH_SERVERS=pouchdb  only one of the two servers (divan,pouchdb)
//   BENCH_SETTLE=30      seconds of quiet between the preload and the workloads
'use strict';
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const http = require('http');
const net = require('net');
const os = require('os');
const path = require('path');

const ROOT = path.resolve(__dirname, '..', '..');
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const NDOCS = Number(process.env.BENCH_DOCS || 100000);
const PAGE = 1000;
const ONLY = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',') : null;
const WHICH = (process.env.BENCH_SERVERS || 'divan,pouchdb').split(',');
const SETTLE = Number(process.env.BENCH_SETTLE || 0); // seconds of quiet after the preload
const WRK_LUA = path.join(__dirname, 'wrk.lua');
const POUCH_BIN = path.join(ROOT, 'test', 'node', 'node_modules', 'pouchdb-server', 'bin', 'pouchdb-server');
const TMP = fs.mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), 'divan-httpbench-'));

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
const log = (s) => process.stdout.write(s + '\n');

// ---------------------------------------------------------------- servers

// A free loopback port (bound, then released for the server to take).
function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
  });
}

// Stop a child by PID: SIGTERM, SIGKILL after 5 s.
function stopProc(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((res) => {
    const t = setTimeout(() => { try { process.kill(proc.pid, 'SIGKILL'); } catch (e) { /* gone */ } }, 5000);
    proc.on('exit', () => { clearTimeout(t); res(); });
    try { process.kill(proc.pid, 'SIGCONT'); process.kill(proc.pid, 'SIGTERM'); } catch (e) { clearTimeout(t); res(); }
  });
}

async function startDivan() {
  const bin = process.env.DIVAN_BIN ? path.resolve(process.env.DIVAN_BIN) : path.join(ROOT, 'divan');
  if (!fs.existsSync(bin)) throw new Error(bin + ' not found (make, or set DIVAN_BIN)');
  const dir = path.join(TMP, 'divan');
  fs.mkdirSync(dir);
  // a server admin, as every divan has; its credentials ride in the URL
  const env = Object.assign({}, process.env, { DIVAN_ADMIN: 'bench:benchpass' });
  const proc = spawn(bin, ['serve', '--data', dir, '--bind', '127.0.0.1', '--port', '0', ...(process.env.DIVAN_ARGS ? process.env.DIVAN_ARGS.split(' ') : [])], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '', err = '';
  proc.stderr.on('data', (d) => { err += d; if (err.length > 65536) err = err.slice(-32768); });
  const url = await new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error('divan did not start: ' + out + err)), 15000);
    proc.on('exit', (c, s) => { clearTimeout(t); rej(new Error(`divan exited (${c ?? s}): ${out}${err}`)); });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/[^\s/]+:\d+)\//.exec(out);
      if (m) { clearTimeout(t); proc.removeAllListeners('exit'); res(m[1].replace('http://', 'http://bench:benchpass@')); }
    });
  });
  proc.stdout.resume();
  return { name: 'divan', url, proc, pid: proc.pid, stderr: () => err };
}

// pouchdb-server on Node 20 needs --unhandled-rejections=warn or it dies
// mid-run; its cwd is the temp dir (it writes config.json and log.txt there).
async function startPouch() {
  if (!fs.existsSync(POUCH_BIN)) throw new Error(POUCH_BIN + ' not found (run scripts/deps.sh: npm ci in test/node)');
  const dir = path.join(TMP, 'pouchdb');
  fs.mkdirSync(path.join(dir, 'db'), { recursive: true });
  const port = await freePort();
  const proc = spawn(process.execPath, ['--unhandled-rejections=warn', POUCH_BIN, '--host', '127.0.0.1', '--port', String(port),
    '--dir', path.join(dir, 'db'), '--config', path.join(dir, 'config.json'), '-n'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; if (err.length > 65536) err = err.slice(-32768); });
  const url = 'http://127.0.0.1:' + port;
  const end = Date.now() + 20000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error('pouchdb-server exited: ' + err);
    try { if ((await hreq(url, 'GET', '/')).status === 200) break; } catch (e) { /* not yet */ }
    if (Date.now() > end) { await stopProc(proc); throw new Error('pouchdb-server did not start: ' + err); }
    await sleep(100);
  }
  return { name: 'pouchdb', url, proc, pid: proc.pid, stderr: () => err };
}

// ------------------------------------------------------------ http client

// Keep-alive sockets, renewed for every measured phase: a socket left idle
// while its server was paused may be closed by it the moment it resumes.
let agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
function renewAgent() {
  agent.destroy();
  agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
}

// One request; resolves { status, text } (text unparsed: big bodies).
function hreq(base, method, p, body) {
  return new Promise((resolve, reject) => {
    const u = new URL(base + p);
    const data = body === undefined ? null : (typeof body === 'string' ? body : JSON.stringify(body));
    const headers = data === null ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) };
    if (u.username) headers.Authorization = basicAuth(u);
    const r = http.request({ method, hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    r.setTimeout(300000, () => r.destroy(new Error('request timed out')));
    r.on('error', reject);
    if (data !== null) r.write(data);
    r.end();
  });
}

async function must(base, method, p, body, want) {
  const r = await hreq(base, method, p, body);
  if (!want.includes(r.status)) throw new Error(`${method} ${base}${p}: ${r.status} ${r.text.slice(0, 300)}`);
  return r;
}

// ------------------------------------------------------- measurement aids

// VmRSS of a process in KiB, 0 once it is gone.
function rssKiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch (e) { return 0; }
}

// CPU seconds (user + system) a process has used so far.
const TICK = Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;
function cpuSec(pid) {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / TICK;
  } catch (e) { return 0; }
}

// Samples a server's RSS every 100 ms while a workload runs: peak and CPU.
function sampler(pid) {
  let peak = rssKiB(pid);
  const cpu0 = cpuSec(pid), t0 = Date.now();
  const iv = setInterval(() => { peak = Math.max(peak, rssKiB(pid)); }, 100);
  return () => {
    clearInterval(iv);
    peak = Math.max(peak, rssKiB(pid));
    return { rssMiB: peak / 1024, cpuPct: (100 * (cpuSec(pid) - cpu0)) / ((Date.now() - t0) / 1000) };
  };
}

// While one server is measured the other is stopped (SIGSTOP): on a small
// machine the idle one's background work (LevelDB or RocksDB compaction
// after a load) would otherwise take a core from the measured one. Its
// deferred work resumes with SIGCONT and counts against its own next run.
function hold(servers, s) {
  const others = servers.filter((o) => o !== s);
  for (const o of others) process.kill(o.pid, 'SIGSTOP');
  renewAgent();
  return () => { for (const o of others) process.kill(o.pid, 'SIGCONT'); };
}

// Run wrk with wrk.lua; bash's `times` reports wrk's own CPU time.
// "Basic …" for the credentials in a URL.
function basicAuth(u) {
  return 'Basic ' + Buffer.from(decodeURIComponent(u.username) + ':' + decodeURIComponent(u.password)).toString('base64');
}

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
        reqs: j.requests, rate: j.requests / secs, reqRate: j.requests / secs, p99ms: j.p99_us / 1000, p50ms: j.p50_us / 1000,
        errors: j.connect + j.read + j.write + j.status + j.timeout, errDetail: j, genCpuPct: (100 * gcpu) / secs,
      });
    });
    p.on('error', reject);
  });
}

function pct(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

// ------------------------------------------------------------- workloads

function docBody(i) {
  return { _id: 'd' + String(i).padStart(7, '0'), type: 'bench', i, name: 'document number ' + i,
    tags: ['alpha', 'beta', 'gamma'].slice(0, 1 + (i % 3)), score: (i * 7919) % 1000 / 10,
    nested: { a: i % 17, b: 'x'.repeat(20), c: [1, 2, 3] }, active: i % 2 === 0 };
}

// 100,000 docs into db `big`: 1,000-doc _bulk_docs, 4 in flight.
async function preload(s) {
  await must(s.url, 'PUT', '/big', undefined, [201, 202]);
  const t0 = Date.now();
  let next = 0;
  async function worker() {
    while (next < NDOCS) {
      const from = next;
      next += 1000;
      const docs = [];
      for (let i = from; i < Math.min(from + 1000, NDOCS); i++) docs.push(docBody(i));
      await must(s.url, 'POST', '/big/_bulk_docs', { docs }, [201]);
    }
  }
  await Promise.all([worker(), worker(), worker(), worker()]);
  const secs = (Date.now() - t0) / 1000;
  const info = JSON.parse((await must(s.url, 'GET', '/big', undefined, [200])).text);
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

// GET a big body: the first one kept as text (to check it), later ones only
// counted, so the node side stays far below the server's rate.
function bigGet(base, p, keep) {
  return new Promise((resolve, reject) => {
    const u = new URL(base + p);
    const headers = u.username ? { Authorization: basicAuth(u) } : {};
    const r = http.get({ hostname: u.hostname, port: u.port, path: u.pathname + u.search, agent, headers }, (res) => {
      const chunks = [];
      let bytes = 0;
      res.on('data', (c) => { bytes += c.length; if (keep) chunks.push(c); });
      res.on('end', () => resolve({ status: res.statusCode, bytes, text: keep ? Buffer.concat(chunks).toString('utf8') : null }));
      res.on('error', reject);
    });
    r.setTimeout(300000, () => r.destroy(new Error('request timed out')));
    r.on('error', reject);
  });
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
    const r = await bigGet(s.url, '/big/_changes', lat.length === 0);
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

const WORKLOADS = [
  { key: 'get', label: 'GET random doc (32 conns)', unit: 'req/s',
    prep: async (s) => { await must(s.url, 'GET', '/big/d0000042', undefined, [200]); },
    run: (s) => wrk(s.url, 'get', 32, SECONDS, { WRK_DB: 'big', WRK_N: String(NDOCS) }) },
  { key: 'put', label: 'PUT new doc (64 conns)', unit: 'docs/s',
    prep: async (s) => { await must(s.url, 'PUT', '/put', undefined, [201, 202]); },
    run: (s) => wrk(s.url, 'put', 64, SECONDS, { WRK_DB: 'put' }) },
  { key: 'bulk', label: '_bulk_docs 1,000 docs (4 conns)', unit: 'docs/s', rows: 1000,
    prep: async (s) => { await must(s.url, 'PUT', '/bulk', undefined, [201, 202]); },
    run: (s) => wrk(s.url, 'bulk', 4, SECONDS, { WRK_DB: 'bulk', WRK_BODY_FILE: bulkFile }) },
  { key: 'alldocs', label: '_all_docs include_docs, 1,000/page (4 conns)', unit: 'rows/s', rows: PAGE,
    prep: async (s) => {
      const from = 'd' + String(Math.floor(Math.max(0, NDOCS - PAGE) / 2)).padStart(7, '0');
      const r = JSON.parse((await must(s.url, 'GET', `/big/_all_docs?include_docs=true&limit=${PAGE}&startkey=%22${from}%22`, undefined, [200])).text);
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

// ------------------------------------------------------------------ main

const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d }) : '—');

async function main() {
  const tStart = Date.now();
  const servers = [];
  const cleanup = async () => {
    for (const s of servers) await stopProc(s.proc);
    agent.destroy();
    fs.rmSync(TMP, { recursive: true, force: true });
  };
  process.on('SIGINT', () => { cleanup().finally(() => process.exit(130)); });
  try {
    if (WHICH.includes('divan')) servers.push(await startDivan());
    if (WHICH.includes('pouchdb')) servers.push(await startPouch());
    log(`http bench: ${servers.map((s) => `${s.name} ${s.url} (pid ${s.pid})`).join(', ')}; ` +
        `${SECONDS} s per workload, ${os.cpus().length} cpus, wrk ${WRK_VERSION}`);
    bulkFile = bulkBodyFile();

    // The generator's ceiling on a trivial endpoint.
    const ceil = await wrk(servers[0].url, 'trivial', 32, Math.min(5, SECONDS), {});
    const ceilText = `wrk GET / on ${servers[0].name}, 32 conns: ${fmt(ceil.rate)} req/s, p99 ${fmt(ceil.p99ms, 2)} ms, ` +
        `wrk cpu ${fmt(ceil.genCpuPct)}%`;
    log('generator ceiling: ' + ceilText);

    for (const s of servers) {
      const release = hold(servers, s);
      const secs = await preload(s).finally(release);
      log(`preload ${s.name}: ${NDOCS} docs in ${fmt(secs, 1)} s (${fmt(NDOCS / secs)} docs/s), rss ${fmt(rssKiB(s.pid) / 1024, 1)} MiB`);
    }

    if (SETTLE) { log(`settling ${SETTLE} s after the preload`); await sleep(SETTLE * 1000); }
    const results = [];
    for (const w of WORKLOADS) {
      if (ONLY && !ONLY.includes(w.key)) continue;
      const row = { w, by: {} };
      for (const s of servers) {
        const release = hold(servers, s);
        let r, m;
        try {
          await w.prep(s);
          const stop = sampler(s.pid);
          r = await w.run(s);
          m = stop();
        } finally {
          release();
        }
        r.rate *= w.rows || 1;
        Object.assign(r, m);
        row.by[s.name] = r;
        log(`  ${w.key.padEnd(8)} ${s.name.padEnd(8)} ${fmt(r.rate).padStart(10)} ${w.unit}  p50 ${fmt(r.p50ms, 2)} ms  ` +
            `p99 ${fmt(r.p99ms, 2)} ms  rss ${fmt(r.rssMiB, 1)} MiB  server cpu ${fmt(r.cpuPct)}%  ` +
            `gen cpu ${fmt(r.genCpuPct)}%  requests ${r.reqs}${r.errors ? '  ERRORS ' + JSON.stringify(r.errDetail) : ''}`);
        if (s.proc.exitCode !== null || s.proc.signalCode !== null) throw new Error(`${s.name} died: ${s.stderr().slice(-2000)}`);
      }
      results.push(row);
    }

    log('');
    log(`| workload | divan | pouchdb-server | divan / pouchdb | p99 divan | p99 pouchdb | RSS divan | RSS pouchdb |`);
    log(`|---|---:|---:|---:|---:|---:|---:|---:|`);
    for (const { w, by } of results) {
      const none = { rate: NaN, p99ms: NaN, rssMiB: NaN, errors: 0 };
      const d = by.divan || none, p = by.pouchdb || none;
      const err = (x) => (x.errors ? ` (${x.errors} errors)` : '');
      log(`| ${w.label} | ${fmt(d.rate)} ${w.unit}${err(d)} | ${fmt(p.rate)} ${w.unit}${err(p)} | ${fmt(d.rate / p.rate, 1)}× | ` +
          `${fmt(d.p99ms, 2)} ms | ${fmt(p.p99ms, 2)} ms | ${fmt(d.rssMiB, 1)} MiB | ${fmt(p.rssMiB, 1)} MiB |`);
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
    log(`generator ceiling (${ceilText}); total bench time ${fmt((Date.now() - tStart) / 1000)} s`);
    const bad = results.filter(({ by }) => Object.values(by).some((r) => r.errors));
    if (bad.length) { log('some workloads had errors: ' + bad.map((r) => r.w.key).join(', ')); process.exitCode = 1; }
  } finally {
    await cleanup();
  }
}

main().catch((e) => { console.error('http bench: ' + (e && e.stack || e)); process.exit(1); });
