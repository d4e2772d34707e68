// hostile.test.js — issue 24 over raw sockets: request framing (every
// smuggling shape answers 4xx/501 JSON at once and the connection closes,
// nothing is stored, nothing glued after it runs), the long chunk
// extension, a 100,000-key document answered quickly, the per-client
// connection limit, and max_connections evicting the longest idle or slow
// connection so a new client still gets in. Each shape's full table is
// test/http/test_hwire.c; here the server's answers.
'use strict';
const net = require('net');
const { test, run, req, eq, ok } = require('../lib/t');
const { startDivan } = require('../lib/divan');

let srv, U;
const AUTH = 'Basic ' + Buffer.from('admin:testpass').toString('base64');
const J = { 'Content-Type': 'application/json' };

// Send bytes from localAddress, resolve { text, ms, closed } once the server
// closes or after `ms` (closed false then).
function raw(port, bytes, { ms = 3000, from = '127.0.0.1' } = {}) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = net.connect({ port, host: '127.0.0.1', localAddress: from });
    const chunks = [];
    const done = (closed) => { clearTimeout(t); s.destroy(); resolve({ text: Buffer.concat(chunks).toString('latin1'), ms: Date.now() - t0, closed }); };
    const t = setTimeout(() => done(false), ms);
    s.on('data', (d) => chunks.push(d));
    s.on('error', () => {});
    s.on('close', () => done(true));
    s.write(bytes);
  });
}
const statusOf = (text) => Number((/^HTTP\/1\.[01] (\d{3})/.exec(text) || [])[1]);
const bodyOf = (text) => { try { return JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)); } catch (e) { return undefined; } };

const H = (id) => `PUT /db/${id} HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\nContent-Type: application/json\r\n`;
const GLUED = `GET /_all_dbs HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\n\r\n`;
const shapes = [
  // [name, id, bytes, status]
  ['xchunked with Content-Length', 'te1', H('te1') + 'Transfer-Encoding: xchunked\r\nContent-Length: 7\r\n\r\n{"a":1}', 400],
  ['xchunked alone', 'te2', H('te2') + 'Transfer-Encoding: xchunked\r\n\r\n{"a":1}', 501],
  ['chunked, identity', 'te3', H('te3') + 'Transfer-Encoding: chunked, identity\r\n\r\n7\r\n{"a":1}\r\n0\r\n\r\n', 501],
  ['"  chunked " with odd spaces', 'te4', H('te4') + 'Transfer-Encoding:   chunked \r\n\r\n7\r\n{"a":1}\r\n0\r\n\r\n', 400],
  ['two different Content-Lengths', 'cl1', H('cl1') + 'Content-Length: 7\r\nContent-Length: 2\r\n\r\n{"a":1}', 400],
  ['Content-Length and Transfer-Encoding, a request glued after', 'cl2',
    H('cl2') + 'Content-Length: 30\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{"a":1}\r\n0\r\n\r\n' + GLUED, 400],
  ['Transfer-Encoding folded onto a continuation line', 'fo1', H('fo1') + 'Content-Length: 7\r\nX-Foo: bar\r\n Transfer-Encoding: chunked\r\n\r\n{"a":1}', 400],
  ['an empty Transfer-Encoding continued on the next line', 'fo2', H('fo2') + 'Content-Length: 7\r\nTransfer-Encoding:\r\n chunked\r\n\r\n{"a":1}', 400],
  ['a chunk line of 7; and 100,000 e', 'ce1', H('ce1') + 'Transfer-Encoding: chunked\r\n\r\n7;' + 'e'.repeat(100000) + '\r\n{"a":1}\r\n0\r\n\r\n', 400],
  ['a smuggled second request with a bad header', 'sm1', H('sm1') + 'Content-Length: 7\r\n\r\n{"a":1}GET / HTTP/1.1\r\nHost : x\r\n\r\n', 400],
];

test('start', async () => {
  srv = await startDivan({ args: ['--idle-timeout', '30'] });
  U = srv.url;
  eq((await req('PUT', U + '/db')).status, 201);
});

for (const [name, id, bytes, status] of shapes) {
  test(`framing: ${name} → ${status} JSON at once, connection closed, nothing stored`, async () => {
    const r = await raw(srv.port, bytes);
    eq(statusOf(r.text), status, r.text.slice(0, 300));
    ok(r.closed, 'the connection stays open');
    ok(r.ms < 1500, `answered after ${r.ms} ms`);
    const b = bodyOf(r.text);
    ok(b && b.error === (status === 501 ? 'not_implemented' : 'bad_request') && typeof b.reason === 'string', r.text);
    ok(!/_replicator|_users/.test(r.text), 'the glued request ran: ' + r.text);
    eq((await req('GET', U + '/db/' + id)).status, 404);
  });
}

test('framing: sound shapes still work (same Content-Length twice, chunked, pipelined)', async () => {
  let r = await raw(srv.port, H('ok1') + 'Content-Length: 7\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{"a":1}');
  eq(statusOf(r.text), 201, r.text);
  r = await raw(srv.port, H('ok2') + 'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n3;x=y\r\n{"a\r\n4\r\n":1}\r\n0\r\nX-Trailer: 1\r\n\r\n');
  eq(statusOf(r.text), 201, r.text);
  r = await raw(srv.port, `GET /db/ok1 HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\n\r\n` +
    `GET /db/ok2 HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH}\r\nConnection: close\r\n\r\n`);
  eq((r.text.match(/HTTP\/1\.1 200/g) || []).length, 2, r.text);
});

test('a 100,000-key document: 413 in well under a second; 50,000 keys stored and read back', async () => {
  const big = {};
  for (let i = 0; i < 100000; i++) big['k' + i] = 1; // 1,088,891 bytes > max_document_size
  let t0 = Date.now();
  let r = await req('PUT', U + '/db/big', JSON.stringify(big), J);
  const ms413 = Date.now() - t0;
  eq(r.status, 413, r.text);
  // a bound against the quadratic set (9 s unloaded before issue 24), with room for a loaded or
  // sanitized run: the speed itself is printed, not asserted
  ok(ms413 < 5000, `413 after ${ms413} ms (9 s before issue 24)`);
  const half = {};
  for (let i = 0; i < 50000; i++) half['k' + i] = i;
  t0 = Date.now();
  r = await req('PUT', U + '/db/half', JSON.stringify(half), J);
  const msPut = Date.now() - t0;
  eq(r.status, 201, r.text);
  t0 = Date.now();
  r = await req('GET', U + '/db/half');
  const msGet = Date.now() - t0;
  eq(r.status, 200);
  eq(Object.keys(r.json).length, 50002);
  eq(r.json.k49999, 49999);
  ok(msPut < 8000 && msGet < 8000, `PUT ${msPut} ms, GET ${msGet} ms (2.3 s before)`);
  console.log(`    100,000 keys: 413 in ${ms413} ms; 50,000 keys: PUT ${msPut} ms, GET ${msGet} ms`);
});

test('memory: _all_docs?include_docs=true of 100,000 documents streams (peak RSS grows < 12 MB)', async () => {
  const fs = require('fs');
  eq((await req('PUT', U + '/mem')).status, 201);
  const N = 100000, B = 2000;
  const batches = [];
  for (let b = 0; b < N; b += B) batches.push(b);
  const worker = async () => {
    for (let b; (b = batches.shift()) !== undefined;) {
      const docs = [];
      for (let i = b; i < b + B; i++) docs.push({ _id: 'doc' + String(i).padStart(7, '0'), n: i, name: 'item ' + i, tags: ['a', 'b'] });
      eq((await req('POST', U + '/mem/_bulk_docs', { docs }, J)).status, 201);
    }
  };
  await Promise.all([worker(), worker(), worker()]);
  const hwm = () => Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${srv.pid}/status`, 'utf8'))[1]);
  fs.writeFileSync(`/proc/${srv.pid}/clear_refs`, '5'); // the peak starts again from here
  const before = hwm();
  const r = await req('GET', U + '/mem/_all_docs?include_docs=true');
  eq(r.status, 200);
  const grew = hwm() - before;
  eq(r.json.rows.length, N);
  eq(r.json.rows[N - 1].doc.n, N - 1);
  console.log(`    _all_docs of ${N} docs (${(r.body.length / 1e6).toFixed(1)} MB): peak RSS +${(grew / 1024).toFixed(1)} MB`);
  // (AddressSanitizer keeps freed memory in quarantine: no bound on RSS there)
  if (!/address/.test(process.env.DV_BUILD || '')) ok(grew < 12 * 1024, `peak RSS grew ${grew} kB while answering`);
  const p = await req('GET', U + '/mem/_all_docs?include_docs=true&skip=3&limit=1201&descending=true');
  eq(p.json.rows.length, 1201);
  eq(p.json.rows[0].id, 'doc0099996');
  eq(p.json.rows[1200].id, 'doc0098796');
  eq(p.json.offset, 3);
});

test('stop', async () => { await srv.stop(); });

// Open n sockets from `from`, each sending an incomplete head; resolves to
// the sockets and a count of those the server closed.
async function slowSockets(port, n, from) {
  const socks = [];
  const st = { closed: 0, text: '' };
  for (let i = 0; i < n; i++) {
    await new Promise((res) => {
      const s = net.connect({ port, host: '127.0.0.1', localAddress: from }, () => { s.write('GET /_up HTTP/1.1\r\nHost: x\r\n'); res(); });
      s.on('error', () => res());
      s.on('data', (d) => { st.text += d; });
      s.on('close', () => { st.closed++; });
      socks.push(s);
    });
  }
  await new Promise((r) => setTimeout(r, 200));
  return { socks, st };
}

test('max_connections_per_client: the extra connections from one address are closed, other addresses served', async () => {
  const s2 = await startDivan({ config: '[chttpd]\nmax_connections_per_client = 20\n', args: ['--threads', '4'] });
  try {
    const { socks, st } = await slowSockets(s2.port, 30, '127.0.0.2');
    eq(st.closed, 10, 'closed at once');
    const r = await raw(s2.port, 'GET /_up HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { from: '127.0.0.3' });
    eq(statusOf(r.text), 200, r.text);
    socks.forEach((s) => s.destroy());
  } finally { await s2.stop(); }
});

test('max_connections: a new client gets in; the longest idle or slow connections are evicted with 408', async () => {
  const s3 = await startDivan({ config: '[chttpd]\nmax_connections = 60\nrequest_head_timeout = 60\n', args: ['--threads', '4'] });
  try {
    const { socks, st } = await slowSockets(s3.port, 80, '127.0.0.2'); // the replicator's feed holds one more
    ok(st.closed >= 20 && st.closed <= 22, `${st.closed} evicted`);
    ok(socks.slice(0, 19).every((s) => s.destroyed), 'not the oldest evicted');
    ok(!socks[79].destroyed, 'the newest evicted');
    const t0 = Date.now();
    const r = await raw(s3.port, 'GET /_up HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { from: '127.0.0.3' });
    eq(statusOf(r.text), 200, r.text);
    ok(Date.now() - t0 < 1000, `${Date.now() - t0} ms`);
    ok(/408 Request Timeout/.test(st.text), st.text.slice(0, 200));
    socks.forEach((s) => s.destroy());
  } finally { await s3.stop(); }
});

run();
