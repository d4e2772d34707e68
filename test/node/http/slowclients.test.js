// slowclients.test.js — issue 22, slow clients past the head (the head is
// slowloris.test.js's): a body trickled a byte a second and a reader that
// never reads its feed, with the limits set low and a pool of 2 threads:
//   [chttpd] request_body_timeout = 2, request_body_min_rate = 1000:
//            a body gets 2 s from the end of its head and one more second
//            per 1000 bytes received; past that 408 request_timeout and
//            the connection closes. Within it (a body finished inside the
//            grace, or sent at twice the rate for longer) it is stored;
//            trickled (a byte a second, or a quarter of the rate, a JSON
//            document or an attachment upload) it is cut at its deadline.
//            Six trickling clients on two pool threads hold none of them:
//            a GET answers at once meanwhile.
//   [chttpd] send_timeout = 3: a continuous feed whose client stops
//            reading (its socket full) is closed once no byte could be
//            sent for 3 s — its feed freed (clients_requesting_changes
//            drops) — while a feed that reads goes on; one that pauses
//            less than that is not cut.
'use strict';
const net = require('net');
const { test, run, req, eq, ok } = require('../lib/t');
const { startDivan } = require('../lib/divan');

const BODY_TIMEOUT = 2, MIN_RATE = 1000, SEND_TIMEOUT = 3, THREADS = 2;
const AUTH = 'Basic ' + Buffer.from('admin:testpass').toString('base64');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let srv, U;
process.on('exit', () => { if (srv) { try { process.kill(srv.pid, 'SIGKILL'); } catch (e) { /* gone */ } } });

// A request whose head goes at once and whose body goes in `pieces`, one
// every `everyMs`. Resolves to { status, text, ms (to the answer or close), closed }.
function trickle(method, path, ctype, pieces, everyMs) {
  return new Promise((resolve) => {
    const len = pieces.reduce((n, p) => n + Buffer.byteLength(p), 0);
    const s = net.connect({ port: srv.port, host: '127.0.0.1' });
    const t0 = Date.now();
    let text = '', i = 0, timer = null, done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ status: Number((/^HTTP\/1\.1 (\d{3})/.exec(text) || [])[1] || 0), text, ms: Date.now() - t0, closed });
    };
    const next = () => {
      if (i >= pieces.length || done) return;
      s.write(pieces[i++], () => {});
      timer = setTimeout(next, everyMs);
    };
    s.on('connect', () => {
      s.write(`${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\nContent-Type: ${ctype}\r\nContent-Length: ${len}\r\n\r\n`);
      timer = setTimeout(next, everyMs);
    });
    s.on('data', (d) => {
      text += d;
      if (/\r\n\r\n[\s\S]*\}\n/.test(text)) finish(false); // a whole JSON answer
    });
    s.on('error', () => {});
    s.on('close', () => finish(true));
  });
}
const bytes = (s) => s.split(''); // one piece per byte
const chunks = (s, n) => { const out = []; for (let i = 0; i < s.length; i += n) out.push(s.slice(i, i + n)); return out; };
const changesClients = async () => (await req('GET', U + '/_node/_local/_stats/couchdb/httpd/clients_requesting_changes')).json.value;

test('start: 2 pool threads, low body and send limits', async () => {
  srv = await startDivan({
    config: `[chttpd]\nserver_threads = ${THREADS}\nrequest_body_timeout = ${BODY_TIMEOUT}\n` +
            `request_body_min_rate = ${MIN_RATE}\nsend_timeout = ${SEND_TIMEOUT}\n`,
  });
  U = srv.url;
  eq((await req('PUT', U + '/db')).status, 201);
});

test(`a body within request_body_timeout (${BODY_TIMEOUT} s) is stored, a byte at a time`, async () => {
  const r = await trickle('PUT', '/db/within', 'application/json', bytes('{"a":1}'), 150); // ~1 s
  eq(r.status, 201, r.text);
});

test(`a body at twice request_body_min_rate for ${BODY_TIMEOUT * 2} s (past the grace) is stored`, async () => {
  const body = JSON.stringify({ p: 'x'.repeat(2 * MIN_RATE * BODY_TIMEOUT * 2 - 10) });
  const r = await trickle('PUT', '/db/steady', 'application/json', chunks(body, (2 * MIN_RATE) / 10), 100);
  eq(r.status, 201, r.text);
  ok(r.ms > BODY_TIMEOUT * 1000, `${r.ms} ms: not past the grace`);
});

test('trickled bodies are cut at their deadline with 408; six of them hold none of the 2 threads', async () => {
  const doc = JSON.stringify({ a: 'a body trickled one byte a second' });
  const slow = [
    trickle('PUT', '/db/t1', 'application/json', bytes(doc), 1000),
    trickle('PUT', '/db/t2', 'application/json', bytes(doc), 1000),
    trickle('POST', '/db/_bulk_docs', 'application/json', bytes(JSON.stringify({ docs: [{ _id: 't3' }] })), 1000),
    trickle('PUT', '/db/t4/file.txt', 'text/plain', bytes('an attachment trickled one byte a second'), 1000),
    trickle('PUT', '/db/t5', 'application/json', chunks(JSON.stringify({ p: 'y'.repeat(8000) }), 100), 400), // 250 B/s
    trickle('PUT', '/db/t6', 'application/json', bytes(doc), 1000),
  ];
  await sleep(1200); // every one is in its body now
  for (let i = 0; i < 3; i++) {
    const t0 = Date.now();
    eq((await req('GET', U + '/db/within')).status, 200);
    ok(Date.now() - t0 < 500, `a GET took ${Date.now() - t0} ms beside the trickling bodies`);
    await sleep(100);
  }
  const rs = await Promise.all(slow);
  for (const r of rs) {
    eq(r.status, 408, r.text);
    ok(/"error":"request_timeout"/.test(r.text), r.text);
    ok(r.ms >= BODY_TIMEOUT * 1000 - 100 && r.ms < BODY_TIMEOUT * 1000 + 4000, `cut after ${r.ms} ms`);
  }
  // the quarter-rate body: its deadline grew with what came (2 s + 0.25 s per s)
  ok(rs[4].ms >= BODY_TIMEOUT * 1000 + 400, `the rate body was cut after ${rs[4].ms} ms, before its deadline grew`);
  console.log(`    cut after ${rs.map((r) => r.ms).join(', ')} ms`);
  for (const id of ['t1', 't2', 't3', 't4', 't5', 't6']) eq((await req('GET', `${U}/db/${id}`)).status, 404, id);
});

// A continuous feed from since=0 with every document, read or not.
function feed(query, { pauseMs = Infinity } = {}) {
  const s = net.connect({ port: srv.port, host: '127.0.0.1' });
  const f = { s, text: '', rows: 0, closed: false, bytes: 0 };
  s.on('connect', () => {
    s.write(`GET /db/_changes?${query} HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\n\r\n`);
    if (pauseMs > 0) {
      s.pause();
      if (pauseMs !== Infinity) setTimeout(() => s.resume(), pauseMs);
    }
  });
  s.on('data', (d) => {
    f.bytes += d.length;
    const t = (f.tail || '') + d.toString('latin1');
    const lines = t.split('\n');
    f.tail = lines.pop();
    for (const l of lines) if (l.startsWith('{"seq"')) { f.rows++; if (/"id":"after-cut"/.test(l)) f.sawAfter = true; }
  });
  s.on('error', () => {});
  s.on('close', () => { f.closed = true; });
  return f;
}

test(`a feed whose reader stops reading is closed after send_timeout (${SEND_TIMEOUT} s); one that reads, and one that pauses less, go on`, async () => {
  const N = 1200, pad = 'z'.repeat(12000); // ~15 MB of feed: more than the socket buffers hold
  for (let i = 0; i < N; i += 200) {
    const docs = [];
    for (let j = i; j < i + 200; j++) docs.push({ _id: `big${String(j).padStart(5, '0')}`, pad });
    eq((await req('POST', U + '/db/_bulk_docs', { docs })).status, 201);
  }
  const base = await changesClients();
  const stuck = feed('feed=continuous&include_docs=true&since=0&heartbeat=500');
  const pauser = feed('feed=continuous&include_docs=true&since=0&heartbeat=500', { pauseMs: (SEND_TIMEOUT - 1.5) * 1000 });
  const reader = feed('feed=continuous&since=now&heartbeat=500', { pauseMs: 0 });
  for (let i = 0; i < 100 && (await changesClients()) < base + 3; i++) await sleep(50);
  eq(await changesClients(), base + 3);
  const t0 = Date.now();
  let n;
  for (;;) { // the stuck feed goes: its feed freed
    n = await changesClients();
    if (n === base + 2 || Date.now() - t0 > (SEND_TIMEOUT + 6) * 1000) break;
    await sleep(100);
  }
  const secs = (Date.now() - t0 + 500) / 1000;
  eq(n, base + 2, `the stuck feed is still counted after ${secs} s`);
  ok(secs >= SEND_TIMEOUT - 0.5, `cut after ${secs} s, before send_timeout`);
  console.log(`    the stuck feed was cut ${secs.toFixed(1)} s after it began; it had taken ${stuck.bytes} bytes`);
  eq(pauser.closed, false, 'the feed that paused less than send_timeout was cut');
  ok(pauser.rows > 0, 'the pausing feed got nothing after its pause');
  eq(reader.closed, false);
  eq((await req('PUT', U + '/db/after-cut', { a: 1 })).status, 201);
  for (let i = 0; i < 100 && !(reader.sawAfter && pauser.sawAfter); i++) await sleep(50);
  ok(reader.sawAfter, 'the reading feed did not get the next change');
  ok(pauser.sawAfter, `the paused-then-read feed did not get the next change (${pauser.rows} rows)`);
  eq(pauser.rows, N + 3); // within, steady, the N, after-cut
  stuck.s.resume(); // what the kernel still held, then the close
  for (let i = 0; i < 100 && !stuck.closed; i++) await sleep(50);
  ok(stuck.closed, 'the stuck feed\'s socket was not closed');
  ok(stuck.rows < N, `the stuck feed got all ${stuck.rows} rows`);
  stuck.s.destroy(); pauser.s.destroy(); reader.s.destroy();
});

test('stop', async () => { await srv.stop(); require('fs').rmSync(srv.dataDir, { recursive: true, force: true }); srv = null; });

run().then(() => process.exit()); // a failed check may leave sockets open
