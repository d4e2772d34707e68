// attbench.js — attachment throughput: divan against pouchdb-server 4.2.0,
// side by side in one run (`make bench` runs it after bench.js).
//
// Starts `divan serve` (DIVAN_BIN or ./divan, with a server admin, Basic
// auth) and pouchdb-server (test/node/node_modules, LevelDB), each on a
// free loopback port with its own temp data directory. For each size, on
// each server in turn (the other one paused with SIGSTOP, as bench.js does):
//
//   upload    standalone PUT /db/docN/att, application/octet-stream random
//             bytes, one request at a time on one keep-alive connection
//   download  GET /db/docN/att of every attachment just written; each body
//             is hashed as it arrives and its MD5 compared with the upload's
//
//   1 MB   × ATT_REPS_1M (50)
//   100 MB × ATT_REPS_100M (3)
//
// MB is 10^6 bytes; MB/s is the attachment bytes moved over the wall time of
// the whole series (request start to response end). Peak server RSS is
// VmRSS from /proc/PID/status sampled every 100 ms during the series. Each
// size gets a fresh database, deleted afterwards. A markdown table at the
// end; exit status 1 on any failed request or digest mismatch.
//
//   node bench/http/attbench.js
//   DIVAN_BIN=build/cc/divan ATT_REPS_1M=20 ATT_REPS_100M=1 node bench/http/attbench.js
//   ATT_SERVERS=divan      only one of the two servers (divan,pouchdb)
//   ATT_SIZES=1            only the 1 MB series (1,100)
'use strict';
const { spawn } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const net = require('net');
const os = require('os');
const path = require('path');

const ROOT = path.resolve(__dirname, '..', '..');
const WHICH = (process.env.ATT_SERVERS || 'divan,pouchdb').split(',');
const SIZES = [
  { mb: 1, reps: Number(process.env.ATT_REPS_1M || 50) },
  { mb: 100, reps: Number(process.env.ATT_REPS_100M || 3) },
].filter((s) => !process.env.ATT_SIZES || process.env.ATT_SIZES.split(',').includes(String(s.mb)));
const POUCH_BIN = path.join(ROOT, 'test', 'node', 'node_modules', 'pouchdb-server', 'bin', 'pouchdb-server');
const TMP = fs.mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), 'divan-attbench-'));

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
const log = (s) => process.stdout.write(s + '\n');
const md5 = (b) => crypto.createHash('md5').update(b).digest('hex');

// ---------------------------------------------------------------- servers

function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
  });
}

// Stop a child by PID: SIGCONT + SIGTERM, SIGKILL after 5 s.
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
    try { if ((await request(url, 'GET', '/')).status === 200) break; } catch (e) { /* not yet */ }
    if (Date.now() > end) { await stopProc(proc); throw new Error('pouchdb-server did not start: ' + err); }
    await sleep(100);
  }
  return { name: 'pouchdb', url, proc, pid: proc.pid, stderr: () => err };
}

// ------------------------------------------------------------ http client

// One keep-alive connection, renewed for every measured series (a socket
// left idle while its server was paused may be closed when it resumes).
let agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function renewAgent() {
  agent.destroy();
  agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
}

function basicAuth(u) {
  return 'Basic ' + Buffer.from(decodeURIComponent(u.username) + ':' + decodeURIComponent(u.password)).toString('base64');
}

// One request. body: a Buffer/string (sent with contentType) or undefined.
// Resolves { status, headers, bytes, md5, text } — the body is hashed as it
// arrives and kept as text only when it is small (JSON answers).
function request(base, method, p, body, contentType) {
  return new Promise((resolve, reject) => {
    const u = new URL(base + p);
    const headers = {};
    if (u.username) headers.Authorization = basicAuth(u);
    if (body !== undefined) {
      headers['Content-Type'] = contentType || 'application/json';
      headers['Content-Length'] = Buffer.byteLength(body);
    }
    const r = http.request({ method, hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers, agent }, (res) => {
      const h = crypto.createHash('md5');
      const small = [];
      let bytes = 0;
      res.on('data', (c) => { bytes += c.length; h.update(c); if (bytes <= 65536) small.push(c); });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, bytes, md5: h.digest('hex'),
        text: bytes <= 65536 ? Buffer.concat(small).toString('utf8') : null }));
      res.on('error', reject);
    });
    r.setTimeout(600000, () => r.destroy(new Error(`${method} ${p}: no answer in 600 s`)));
    r.on('error', reject);
    if (body !== undefined) r.write(body);
    r.end();
  });
}

async function must(s, method, p, body, want, contentType) {
  const r = await request(s.url, method, p, body, contentType);
  if (!want.includes(r.status)) throw new Error(`${s.name}: ${method} ${p}: ${r.status} ${r.text === null ? `(${r.bytes} bytes)` : r.text.slice(0, 400)}`);
  return r;
}

// ------------------------------------------------------- measurement aids

function rssKiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch (e) { return 0; }
}

// Peak RSS of pid, sampled every 100 ms until the returned function is called.
function sampler(pid) {
  let peak = rssKiB(pid);
  const iv = setInterval(() => { peak = Math.max(peak, rssKiB(pid)); }, 100);
  return () => { clearInterval(iv); return Math.max(peak, rssKiB(pid)) / 1024; };
}

// Pause every other server while s is measured; resume them after.
function hold(servers, s) {
  const others = servers.filter((o) => o !== s);
  for (const o of others) process.kill(o.pid, 'SIGSTOP');
  renewAgent();
  return () => { for (const o of others) process.kill(o.pid, 'SIGCONT'); };
}

const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d }) : '—');

// ------------------------------------------------------------- the series

// One size on one server: upload every blob, then download each and compare.
async function series(s, size, blobs, digests) {
  const db = `att${size.mb}m`;
  await must(s, 'PUT', '/' + db, undefined, [201, 202]);
  // one small untimed round trip, so the measured series starts on an open connection
  await must(s, 'PUT', `/${db}/warm/w`, Buffer.from('warm'), [201], 'application/octet-stream');
  await must(s, 'GET', `/${db}/warm/w`, undefined, [200]);
  const bytes = blobs.length * blobs[0].length;
  const out = {};

  let stop = sampler(s.pid);
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < blobs.length; i++) {
    const r = await must(s, 'PUT', `/${db}/doc${i}/blob.bin`, blobs[i], [201], 'application/octet-stream');
    const j = JSON.parse(r.text);
    if (!j.ok || !j.rev) throw new Error(`${s.name}: PUT ${db}/doc${i}/blob.bin answered ${r.text}`);
  }
  let secs = Number(process.hrtime.bigint() - t0) / 1e9;
  out.up = { mbps: bytes / 1e6 / secs, secs, rssMiB: stop() };
  if (s.proc.exitCode !== null || s.proc.signalCode !== null) throw new Error(`${s.name} died: ${s.stderr().slice(-2000)}`);

  stop = sampler(s.pid);
  t0 = process.hrtime.bigint();
  const bad = [];
  for (let i = 0; i < blobs.length; i++) {
    const r = await must(s, 'GET', `/${db}/doc${i}/blob.bin`, undefined, [200]);
    if (r.bytes !== blobs[i].length || r.md5 !== digests[i]) bad.push(`doc${i}: ${r.bytes} bytes md5 ${r.md5}, sent ${blobs[i].length} md5 ${digests[i]}`);
  }
  secs = Number(process.hrtime.bigint() - t0) / 1e9;
  out.down = { mbps: bytes / 1e6 / secs, secs, rssMiB: stop() };
  if (bad.length) throw new Error(`${s.name}: ${bad.length} downloads differ from their uploads: ${bad.slice(0, 3).join('; ')}`);

  // The stub tells the same length and (binary: stored as is) the same MD5.
  const d = JSON.parse((await must(s, 'GET', `/${db}/doc0`, undefined, [200])).text);
  const stub = d._attachments && d._attachments['blob.bin'];
  if (!stub || stub.length !== blobs[0].length || stub.digest !== 'md5-' + Buffer.from(digests[0], 'hex').toString('base64')) {
    throw new Error(`${s.name}: ${db}/doc0 stub ${JSON.stringify(stub)} (want length ${blobs[0].length}, digest md5 ${digests[0]})`);
  }
  await must(s, 'DELETE', '/' + db, undefined, [200, 202]);
  return out;
}

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
    log(`attachment bench: ${servers.map((s) => `${s.name} ${s.url} (pid ${s.pid})`).join(', ')}; ` +
        `${SIZES.map((z) => `${z.mb} MB × ${z.reps}`).join(', ')}; ${os.cpus().length} cpus`);
    const results = [];
    for (const size of SIZES) {
      // The same random blobs for both servers, distinct per repetition.
      const blobs = [];
      for (let i = 0; i < size.reps; i++) blobs.push(crypto.randomBytes(size.mb * 1e6));
      const digests = blobs.map(md5);
      const row = { size, by: {} };
      for (const s of servers) {
        const release = hold(servers, s);
        try {
          row.by[s.name] = await series(s, size, blobs, digests);
        } finally {
          release();
        }
        const r = row.by[s.name];
        for (const dir of ['up', 'down']) {
          log(`  ${String(size.mb).padStart(3)} MB × ${size.reps} ${dir.padEnd(4)} ${s.name.padEnd(8)} ${fmt(r[dir].mbps, 1).padStart(8)} MB/s` +
              `  ${fmt(r[dir].secs, 2)} s  peak rss ${fmt(r[dir].rssMiB, 1)} MiB`);
        }
      }
      results.push(row);
    }

    log('');
    log('| attachment | direction | divan MB/s | pouchdb-server MB/s | divan / pouchdb | peak RSS divan | peak RSS pouchdb |');
    log('|---|---|---:|---:|---:|---:|---:|');
    const none = { mbps: NaN, rssMiB: NaN };
    for (const { size, by } of results) {
      for (const [dir, label] of [['up', 'upload (PUT)'], ['down', 'download (GET)']]) {
        const d = by.divan ? by.divan[dir] : none, p = by.pouchdb ? by.pouchdb[dir] : none;
        log(`| ${size.mb} MB × ${size.reps} | ${label} | ${fmt(d.mbps, 1)} | ${fmt(p.mbps, 1)} | ${fmt(d.mbps / p.mbps, 2)}× | ` +
            `${fmt(d.rssMiB, 1)} MiB | ${fmt(p.rssMiB, 1)} MiB |`);
      }
    }
    log('');
    log('MB = 10^6 bytes; one request at a time on one keep-alive connection; every download MD5-checked against its upload. ' +
        'pouchdb-server writes through leveldown without fsync; divan answers a write once it is durable.');
    log(`total attachment bench time ${fmt((Date.now() - tStart) / 1000)} s`);
  } finally {
    await cleanup();
  }
}

main().catch((e) => { console.error('attachment bench: ' + (e && e.stack || e)); process.exit(1); });
