// fdlimit.test.js — issue 22, "file-descriptor exhaustion": divan under a
// low RLIMIT_NOFILE (prlimit around the binary, soft = hard, so divan cannot
// raise it), flooded with more connections than it has descriptors for —
// each holding a long-poll _changes feed, so none is idle to evict. Twice:
//   1. started with 256 descriptors: max_connections is lowered to fit
//      (128, the log says so); past it the flood is refused, and a
//      connection once every other one is busy is answered 503 with
//      Retry-After;
//   2. the limit lowered under the running server (prlimit --pid) to a few
//      dozen descriptors above what it holds: accept() itself fails with
//      EMFILE, where libmicrohttpd used to retry at once (a thread at
//      100 % CPU, the log growing by hundreds of MB); each new connection
//      is answered 503 with Retry-After instead.
// Both times: the server spends little CPU during the flood (from
// /proc/PID/stat), the connections open before it — continuous feeds and a
// PUT whose body is still coming — finish their requests, and once the
// flood leaves a new client is served at once.
'use strict';
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { test, run, req, eq, ok } = require('../lib/t');
const { startDivan } = require('../lib/divan');

const FLOOD = 300, FEEDS = 3;
const AUTH = 'Basic ' + Buffer.from('admin:testpass').toString('base64');
const realBin = path.resolve(process.env.DIVAN_BIN || 'divan');
const tmp = fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || os.tmpdir(), 'divan-fd-'));
const sanitized = /address/.test(process.env.DV_BUILD || '');
let srv;
process.on('exit', () => {
  if (srv) { try { process.kill(srv.pid, 'SIGKILL'); } catch (e) { /* gone */ } fs.rmSync(srv.dataDir, { recursive: true, force: true }); }
  fs.rmSync(tmp, { recursive: true, force: true });
});

const TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;
function cpuSeconds(pid) { // utime + stime
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / TCK;
}
const fds = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// divan with RLIMIT_NOFILE = n (soft and hard), same PID (exec).
async function startLimited(n) {
  const wrap = path.join(tmp, `divan-nofile-${n}.sh`);
  fs.writeFileSync(wrap, `#!/bin/sh\nexec prlimit --nofile=${n}:${n} '${realBin}' "$@"\n`, { mode: 0o755 });
  process.env.DIVAN_BIN = wrap;
  try { return await startDivan({}); } finally { process.env.DIVAN_BIN = realBin; }
}

// A raw connection sending `head`; collects what comes back.
function conn(port, head) {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    const c = { s, text: '', closed: false, status: 0 };
    s.on('connect', () => { s.write(head); resolve(c); });
    s.on('data', (d) => { c.text += d; if (!c.status) c.status = Number((/^HTTP\/1\.1 (\d{3})/.exec(c.text) || [])[1] || 0); });
    s.on('error', (e) => { c.err = e.code; });
    s.on('close', () => { c.closed = true; resolve(c); });
  });
}
const feedHead = (db, q) => `GET /${db}/_changes?${q} HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\n\r\n`;

async function scenario(srvNow, lowerTo) {
  const U = srvNow.url, port = srvNow.port;
  eq((await req('PUT', U + '/db')).status, 201);
  // before the flood: continuous feeds, and a PUT whose body is half sent
  const feeds = [];
  for (let i = 0; i < FEEDS; i++) feeds.push(await conn(port, feedHead('db', 'feed=continuous&since=now&heartbeat=1000')));
  const body = JSON.stringify({ sent: 'before and after the flood' });
  const put = await conn(port, `PUT /db/late HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
  await sleep(300);
  if (lowerTo) execFileSync('prlimit', ['--pid', String(srvNow.pid), `--nofile=${lowerTo}:${lowerTo}`]);
  // the flood: long-polls that hold their connections
  const cpu0 = cpuSeconds(srvNow.pid), t0 = Date.now();
  const flood = [];
  for (let i = 0; i < FLOOD; i++) flood.push(conn(port, feedHead('db', 'feed=longpoll&since=now&timeout=60000')));
  const fl = await Promise.all(flood);
  await sleep(2000);
  const cpu = cpuSeconds(srvNow.pid) - cpu0, secs = (Date.now() - t0) / 1000;
  const by = {};
  for (const c of fl) by[c.status || (c.closed ? 'closed' : 'open')] = (by[c.status || (c.closed ? 'closed' : 'open')] || 0) + 1;
  console.log(`    flood of ${FLOOD}: ${JSON.stringify(by)}; server CPU ${cpu.toFixed(2)} s in ${secs.toFixed(1)} s; ${fds(srvNow.pid)} fds open`);
  // refused (closed: past max_connections a connection that has not sent its
  // head yet is the one evicted for the next; out of descriptors a request
  // arriving after the 503's close resets it) or answered — never left hanging
  eq(by.open || 0, 0, `flood connections left hanging: ${JSON.stringify(by)}`);
  if (lowerTo) ok((by[503] || 0) > 0, `out of descriptors, no flood connection was answered 503: ${JSON.stringify(by)}`);
  ok(cpu < (sanitized ? 3 : 1), `${cpu.toFixed(2)} s of CPU during the flood: spinning?`);
  // a new client once every connection is busy: 503 + Retry-After at once, not a hang
  const t1 = Date.now();
  const during = await conn(port, 'GET /_up HTTP/1.1\r\nHost: x\r\n\r\n');
  for (let i = 0; i < 50 && !during.closed; i++) await sleep(20);
  eq(during.status, 503, `during the flood: ${during.text.slice(0, 300)}`);
  ok(/\r\nRetry-After: \d+\r\n/.test(during.text), during.text.slice(0, 300));
  ok(/"error":"service_unavailable"/.test(during.text), during.text.slice(0, 300));
  ok(Date.now() - t1 < 1500, `${Date.now() - t1} ms`);
  during.s.destroy();
  // the connections from before finish their requests
  put.s.write(body.slice(5));
  for (let i = 0; i < 100 && !put.status; i++) await sleep(20);
  eq(put.status, 201, put.text);
  put.s.destroy();
  for (let i = 0; i < 100 && !feeds.every((f) => /"id":"late"/.test(f.text)); i++) await sleep(20);
  for (const f of feeds) {
    eq(f.status, 200);
    ok(/"id":"late"/.test(f.text), `a feed from before missed the change: ${f.text.slice(0, 300)}`);
    f.s.destroy();
  }
  // the flood leaves: served again at once
  for (const c of fl) c.s.destroy();
  await sleep(500);
  const t2 = Date.now();
  const r = await req('GET', U + '/db/late');
  eq(r.status, 200, r.text);
  ok(Date.now() - t2 < 1000, `${Date.now() - t2} ms after the flood`);
  eq((await req('PUT', U + '/db/after', { a: 1 })).status, 201);
}

test('started with 256 descriptors: max_connections lowered; past it 503 + Retry-After; old connections finish; recovers', async () => {
  srv = await startLimited(256);
  ok(await srv.logSays(/max_connections \d+ lowered to 128/), srv.log().slice(0, 800));
  await scenario(srv, 0);
  await srv.stop();
  fs.rmSync(srv.dataDir, { recursive: true, force: true });
  srv = null;
});

test('descriptors run out under a running server (EMFILE in accept): 503 + Retry-After, no spinning; recovers', async () => {
  srv = await startLimited(4096);
  await sleep(300);
  const lowerTo = fds(srv.pid) + 60; // room for the feeds from before and a few flood connections
  await scenario(srv, lowerTo);
  ok(await srv.logSays(/out of file descriptors: \d+ new connections answered 503/), 'the log does not say so');
  ok(srv.log().length < 1 << 20, `the log grew to ${srv.log().length} bytes`);
  await srv.stop();
  fs.rmSync(srv.dataDir, { recursive: true, force: true });
  srv = null;
});

run().then(() => process.exit()); // a failed check may leave the flood's sockets open
