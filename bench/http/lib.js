// lib.js — what the HTTP benches (bench.js, attbench.js, att1g.js,
// replbench.js, dumpbench.js, …) share: temp dirs, free loopback ports, the
// divan binary, starting `divan serve` (with the bench admin) and
// pouchdb-server, stopping them by PID, pausing the server not measured,
// sampling a server's RSS (VmRSS, VmHWM) and CPU, one HTTP request helper,
// and printing numbers and markdown tables.
//
//   const L = require('./lib');
//   const TMP = L.makeTmp('divan-xbench-');
//   const web = L.client({ sockets: 16, timeoutMs: 300000 });
//   L.runBench('x bench', { which: ['divan', 'pouchdb'], tmp: TMP, web }, async (servers, t0) => {
//     const release = L.hold(servers, servers[0], web); // pouchdb paused
//     const stop = L.sampler(servers[0].pid);
//     const r = await web.must(servers[0], 'GET', '/db', undefined, [200]);
//     const { rssMiB, cpuPct } = stop(); release();
//   });                                // the servers stopped by PID, TMP removed
'use strict';
const { spawn, execFileSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const net = require('net');
const os = require('os');
const path = require('path');

const ROOT = path.resolve(__dirname, '..', '..');
const POUCH_BIN = path.join(ROOT, 'test', 'node', 'node_modules', 'pouchdb-server', 'bin', 'pouchdb-server');
const ADMIN = { name: 'bench', password: 'benchpass' }; // divan's server admin in every bench

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
const log = (s) => process.stdout.write(s + '\n');
const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d }) : '—');

// A fresh temp dir below BENCH_TMPDIR (or the system's), named prefix…
function makeTmp(prefix) {
  return fs.mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), prefix));
}

// "Basic …" for the credentials in a URL object.
function basicAuth(u) {
  return 'Basic ' + Buffer.from(decodeURIComponent(u.username) + ':' + decodeURIComponent(u.password)).toString('base64');
}

// ---------------------------------------------------------------- servers

// A free loopback port (bound, then released for the server to take).
function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
  });
}

// Stop a child by PID: SIGCONT (it may be paused) + SIGTERM, SIGKILL after
// 5 s. Resolves its exit code (or signal), null when it could not be signalled.
function stopProc(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode ?? proc.signalCode);
  return new Promise((res) => {
    const t = setTimeout(() => { try { process.kill(proc.pid, 'SIGKILL'); } catch (e) { /* gone */ } }, 5000);
    proc.on('exit', (c, s) => { clearTimeout(t); res(c ?? s); });
    try { process.kill(proc.pid, 'SIGCONT'); process.kill(proc.pid, 'SIGTERM'); } catch (e) { clearTimeout(t); res(null); }
  });
}

// Keep the last 32-64 KiB of a stream (a dying server's last words).
function tail(stream) {
  let s = '';
  stream.on('data', (d) => { s += d; if (s.length > 65536) s = s.slice(-32768); });
  return () => s;
}

// The divan binary the benches run: DIVAN_BIN or ./divan, which must exist.
function divanBin() {
  const bin = process.env.DIVAN_BIN ? path.resolve(process.env.DIVAN_BIN) : path.join(ROOT, 'divan');
  if (!fs.existsSync(bin)) throw new Error(bin + ' not found (make, or set DIVAN_BIN)');
  return bin;
}

// `divan serve` (divanBin(), DIVAN_ARGS added) on a free loopback port, data
// in TMP/<name> (name: "divan" unless given; made when missing, so a server
// may start again on the data of one stopped before, or of a `divan load`),
// with the bench admin: url carries its credentials
// (http://bench:benchpass@127.0.0.1:PORT), base does not. env: more
// environment variables (DIVAN_STATS=off).
async function startDivan(tmp, { name = 'divan', env: more = {} } = {}) {
  const bin = divanBin();
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  const env = Object.assign({}, process.env, more, { DIVAN_ADMIN: `${ADMIN.name}:${ADMIN.password}` });
  const proc = spawn(bin, ['serve', '--data', dir, '--bind', '127.0.0.1', '--port', '0', ...(process.env.DIVAN_ARGS ? process.env.DIVAN_ARGS.split(' ') : [])], { stdio: ['ignore', 'pipe', 'pipe'], env });
  const stderr = tail(proc.stderr);
  // what [divan] memory_limit leaves the store, from its first log lines
  // (bench_engine's store plans with the same)
  let storeMiB = null, head = '';
  const said = (d) => {
    head += d;
    const m = /memory_limit \d+M: \d+M taken at start, (\d+)M for the store/.exec(head);
    if (m) storeMiB = Number(m[1]);
    if (m || head.length > 65536) proc.stderr.off('data', said), head = '';
  };
  proc.stderr.on('data', said);
  let out = '';
  const base = await new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error('divan did not start: ' + out + stderr())), 15000);
    proc.on('exit', (c, s) => { clearTimeout(t); rej(new Error(`divan exited (${c ?? s}): ${out}${stderr()}`)); });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/[^\s/]+:\d+)\//.exec(out);
      if (m) { clearTimeout(t); proc.removeAllListeners('exit'); res(m[1]); }
    });
  });
  proc.stdout.resume();
  const url = base.replace('http://', `http://${ADMIN.name}:${ADMIN.password}@`);
  return { name, url, base, proc, pid: proc.pid, stderr, storeMiB: () => storeMiB };
}

// pouchdb-server 4.2.0 (test/node/node_modules, LevelDB in TMP/pouchdb) on
// a free loopback port. On Node 20 it needs --unhandled-rejections=warn or
// it dies mid-run; its cwd is the temp dir (it writes config.json and
// log.txt there).
async function startPouch(tmp) {
  if (!fs.existsSync(POUCH_BIN)) throw new Error(POUCH_BIN + ' not found (run scripts/deps.sh: npm ci in test/node)');
  const dir = path.join(tmp, 'pouchdb');
  fs.mkdirSync(path.join(dir, 'db'), { recursive: true });
  const port = await freePort();
  const proc = spawn(process.execPath, ['--unhandled-rejections=warn', POUCH_BIN, '--host', '127.0.0.1', '--port', String(port),
    '--dir', path.join(dir, 'db'), '--config', path.join(dir, 'config.json'), '-n'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const stderr = tail(proc.stderr);
  const url = 'http://127.0.0.1:' + port;
  const end = Date.now() + 20000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error('pouchdb-server exited: ' + stderr());
    try { if ((await request(url + '/', { timeoutMs: 5000 })).status === 200) break; } catch (e) { /* not yet */ }
    if (Date.now() > end) { await stopProc(proc); throw new Error('pouchdb-server did not start: ' + stderr()); }
    await sleep(100);
  }
  return { name: 'pouchdb', url, base: url, proc, pid: proc.pid, stderr };
}

// Start the servers named in which (divan, pouchdb; in that order) into
// servers, as each comes up, so that a cleanup stops those already started.
async function startServers(which, tmp, servers) {
  if (which.includes('divan')) servers.push(await startDivan(tmp));
  if (which.includes('pouchdb')) servers.push(await startPouch(tmp));
  return servers;
}

// "divan http://… (pid N), pouchdb http://… (pid M)"
const describe = (servers) => servers.map((s) => `${s.name} ${s.url} (pid ${s.pid})`).join(', ');

// A bench's main: start the servers named in which (data in tmp), run
// body(servers, t0) (t0: when it all began), and whatever happens stop every
// server by PID, close web's sockets and remove tmp — on SIGINT too (exit
// status 130). An error is printed after "name: " and exits with status 1.
// maxS: a bound on the whole run in seconds; past it "name: still running
// after maxS s", the same cleanup and exit status 1. A body may push more
// processes to servers ({ proc }) for the cleanup to stop.
function runBench(name, { which, tmp, web, maxS = 0 }, body) {
  const t0 = Date.now();
  const servers = [];
  const cleanup = async () => {
    for (const s of servers) await stopProc(s.proc);
    if (web) web.destroy();
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  process.on('SIGINT', () => { cleanup().finally(() => process.exit(130)); });
  const watchdog = maxS && setTimeout(() => {
    console.error(`${name}: still running after ${maxS} s`);
    cleanup().finally(() => process.exit(1));
  }, maxS * 1000);
  (async () => {
    try {
      await startServers(which, tmp, servers);
      await body(servers, t0);
    } finally {
      clearTimeout(watchdog);
      await cleanup();
    }
  })().catch((e) => { console.error(name + ': ' + (e && e.stack || e)); process.exit(1); });
}

const died = (s) => s.proc && (s.proc.exitCode !== null || s.proc.signalCode !== null);

// ------------------------------------------------------------ http client

// One request to url (credentials in it become Basic auth unless headers
// has an Authorization). opts: method (GET), body (object → JSON; string or
// Buffer as is, sent with contentType, application/json by default),
// headers, agent (false: a connection of its own), timeoutMs (0: none),
// md5 (hash the answer as it arrives), keep (answers up to this many bytes
// are kept as text, longer ones not: text null). Resolves { status,
// headers, bytes, md5, text }.
function request(url, opts = {}) {
  const { method = 'GET', agent = false, timeoutMs = 0, keep = Infinity } = opts;
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const headers = Object.assign({}, opts.headers);
    if (u.username && !headers.Authorization) headers.Authorization = basicAuth(u);
    let data = opts.body;
    if (data !== undefined) {
      if (typeof data !== 'string' && !Buffer.isBuffer(data)) data = JSON.stringify(data);
      headers['Content-Type'] = opts.contentType || 'application/json';
      headers['Content-Length'] = Buffer.byteLength(data);
    }
    const p = u.pathname + u.search;
    const r = http.request({ method, hostname: u.hostname, port: u.port, path: p, headers, agent }, (res) => {
      const h = opts.md5 ? crypto.createHash('md5') : null;
      const kept = [];
      let bytes = 0;
      res.on('data', (c) => { bytes += c.length; if (h) h.update(c); if (bytes <= keep) kept.push(c); });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, bytes, md5: h ? h.digest('hex') : null,
        text: bytes <= keep ? Buffer.concat(kept).toString('utf8') : null }));
      res.on('error', reject);
    });
    if (timeoutMs) r.setTimeout(timeoutMs, () => r.destroy(new Error(`${method} ${p}: no answer in ${timeoutMs / 1000} s`)));
    r.on('error', reject);
    if (data !== undefined) r.write(data);
    r.end();
  });
}

// A bench's way of talking to its servers: keep-alive sockets (at most
// `sockets` per server; 0: a new connection per request), renewed for every
// measured phase (a socket left idle while its server was paused may be
// closed by it the moment it resumes), and request defaults (timeoutMs,
// keep, md5) that each call may override.
function client({ sockets = 0, ...defaults } = {}) {
  const fresh = () => (sockets ? new http.Agent({ keepAlive: true, maxSockets: sockets }) : false);
  let agent = fresh();
  const web = {
    renew() { if (agent) agent.destroy(); agent = fresh(); },
    destroy() { if (agent) agent.destroy(); },
    // One request to base + p.
    request: (base, method, p, body, opts) => request(base + p, Object.assign({ agent }, defaults, opts, { method, body })),
    // One request to server s that must answer one of the statuses in want.
    async must(s, method, p, body, want, opts) {
      const r = await web.request(s.url, method, p, body, opts);
      if (!want.includes(r.status)) throw new Error(`${s.name}: ${method} ${p}: ${r.status} ${r.text === null ? `(${r.bytes} bytes)` : r.text.slice(0, 400)}`);
      return r;
    },
  };
  return web;
}

// While one server is measured every other one is stopped (SIGSTOP): on a
// small machine the idle one's background work (LevelDB or RocksDB
// compaction after a load) would otherwise take a core from the measured
// one. web gets fresh sockets. The returned release resumes the others
// (SIGCONT); their deferred work counts against their own next run.
function hold(servers, s, web) {
  const others = servers.filter((o) => o !== s);
  for (const o of others) process.kill(o.pid, 'SIGSTOP');
  web.renew();
  return () => { for (const o of others) process.kill(o.pid, 'SIGCONT'); };
}

// ------------------------------------------------------- measurement aids

// VmRSS of a process in KiB, 0 once it is gone.
function rssKiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch (e) { return 0; }
}

// VmHWM of a process in KiB: its peak resident set since it started; NaN
// once it is gone.
function hwmKiB(pid) {
  try { return Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]); } catch (e) { return NaN; }
}

// CPU seconds (user + system) a process has used so far.
let TICK = 0;
function cpuSec(pid) {
  if (!TICK) TICK = Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / TICK;
  } catch (e) { return 0; }
}

// Samples a server's RSS every 100 ms until the returned stop() is called,
// which gives { rssMiB: the peak, cpuPct: its CPU over the time between }.
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

// The p-th percentile (nearest rank) of an ascending array; NaN when empty.
function pct(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

// The i-th of the small documents replbench.js and dumpbench.js write:
// ~100 bytes of JSON, id doc0000000 onwards (sorted as numbered).
function smallDoc(i) {
  return { _id: 'doc' + String(i).padStart(7, '0'), i, name: 'item ' + i, tags: ['a', 'b', String(i % 7)], price: (i % 1000) / 10, ok: i % 2 === 0 };
}

// n documents docOf(0..n-1) into /{db} (which exists) by _bulk_docs of
// 1,000, 4 in flight, through must (a client's); the seconds it took.
async function bulkLoad(must, s, db, n, docOf) {
  const t0 = Date.now();
  let next = 0;
  async function worker() {
    while (next < n) {
      const from = next;
      next += 1000;
      const docs = [];
      for (let i = from; i < Math.min(from + 1000, n); i++) docs.push(docOf(i));
      await must(s, 'POST', `/${db}/_bulk_docs`, { docs }, [201]);
    }
  }
  await Promise.all([worker(), worker(), worker(), worker()]);
  return (Date.now() - t0) / 1000;
}

// A markdown table: head (cells), align (one letter a column: l or r),
// rows (arrays of cells).
function table(head, align, rows) {
  log(`| ${head.join(' | ')} |`);
  log(`|${[...align].map((a) => (a === 'r' ? '---:' : '---')).join('|')}|`);
  for (const r of rows) log(`| ${r.join(' | ')} |`);
}

module.exports = {
  ROOT, POUCH_BIN, sleep, log, fmt, makeTmp, basicAuth,
  freePort, stopProc, divanBin, startDivan, startPouch, startServers, describe, runBench, died,
  request, client, hold, rssKiB, hwmKiB, cpuSec, sampler, table, pct, smallDoc, bulkLoad,
};
