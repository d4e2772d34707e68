// limits.test.js — the server's limits and robustness, black-box:
// request body size (Content-Length and chunked) at and past the limit,
// header and URL size, Expect, broken JSON never changing the store, slow
// and stalled clients not tying up the pool, idle connections timing out,
// and kill -9 never losing an answered write.
'use strict';
const net = require('net');
const { test, run, req, eq, ok, isErr, rawSocket, statusOf } = require('../lib/t');
const { startDivan } = require('../lib/divan');

const MAX = 100000; // --max-request-size for this suite
let srv, U;
const J = { 'Content-Type': 'application/json' };


test('start', async () => {
  srv = await startDivan({ args: ['--max-request-size', String(MAX), '--idle-timeout', '2', '--threads', '4'] });
  U = srv.url;
  eq((await req('PUT', U + '/db')).status, 201);
});

test('a body exactly at the limit is read', async () => {
  const pad = 'x'.repeat(MAX - '{"_id":"atlimit","p":""}'.length);
  const body = '{"_id":"atlimit","p":"' + pad + '"}';
  eq(Buffer.byteLength(body), MAX);
  const r = await req('POST', U + '/db', body, J);
  eq(r.status, 201, r.text);
});

test('one byte past the limit: 413 too_large (Content-Length)', async () => {
  const body = '{"_id":"past","p":"' + 'x'.repeat(MAX - '{"_id":"past","p":""}'.length + 1) + '"}';
  eq(Buffer.byteLength(body), MAX + 1);
  isErr(await req('POST', U + '/db', body, J), 413, 'too_large');
  isErr(await req('GET', U + '/db/past'), 404, 'not_found');
});

test('past the limit with chunked encoding: 413', async () => {
  const body = '{"_id":"chunked","p":"' + 'x'.repeat(MAX + 10) + '"}';
  const r = await req('POST', U + '/db', body, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
  isErr(r, 413, 'too_large');
  isErr(await req('GET', U + '/db/chunked'), 404, 'not_found');
});

test('a huge declared Content-Length is refused before reading', async () => {
  const got = await rawSocket(srv.port, 'PUT /db/huge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{');
  eq(statusOf(got), 413);
  ok(got.includes('too_large'));
});

test('a head past 8 KB: 431; a URL past it: 414', async () => {
  const big = 'a'.repeat(100 * 1024);
  eq(statusOf(await rawSocket(srv.port, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${big}\r\n\r\n`)), 431);
  eq(statusOf(await rawSocket(srv.port, `GET /${big} HTTP/1.1\r\nHost: x\r\n\r\n`)), 414);
  const fine = 'a'.repeat(7 * 1024);
  eq((await req('GET', U + '/', undefined, { 'X-Fine': fine })).status, 200);
});

test('Expect other than 100-continue: 417', async () => {
  isErr(await req('POST', U + '/db', '{}', { 'Content-Type': 'application/json', Expect: 'magic' }), 417, 'expectation_failed');
});

test('Expect: 100-continue works', async () => {
  const auth = 'Basic ' + Buffer.from('admin:testpass').toString('base64');
  const got = await rawSocket(srv.port, `PUT /db/cont HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 7\r\n\r\n{"a":1}`, 1500);
  ok(/HTTP\/1\.1 201/.test(got), got);
});

test('broken JSON never changes the store', async () => {
  const before = (await req('GET', U + '/db')).json;
  const bad = ['{', '{"a":}', '[1,2', '{"a":"\u0000"', 'nul', '{"a":1}}', '\xff\xfe',
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]), // a UTF-8-encoded surrogate
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x22, 0x7d])];          // a truncated sequence
  for (const b of bad) {
    const r1 = await req('POST', U + '/db', b, J);
    eq(r1.status, 400, b + ' ' + r1.text);
    const r2 = await req('PUT', U + '/db/brk', b, J);
    eq(r2.status, 400, b + ' ' + r2.text);
    const r3 = await req('POST', U + '/db/_bulk_docs', Buffer.concat([Buffer.from('{"docs":[{"_id":"x"},'), Buffer.from(b), Buffer.from(']}')]), J);
    eq(r3.status, 400, b + ' ' + r3.text);
  }
  const after = (await req('GET', U + '/db')).json;
  eq(after.update_seq, before.update_seq);
  eq(after.doc_count, before.doc_count);
});

test('stalled clients do not tie up the pool (4 threads, 64 stalled)', async () => {
  const socks = [];
  for (let i = 0; i < 64; i++) {
    const s = net.connect(srv.port, '127.0.0.1');
    s.on('error', () => {});
    s.write(i % 2 ? 'GET / HTTP/1.1\r\nHost: x\r\n' : 'PUT /db/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"a":');
    socks.push(s);
  }
  await new Promise((r) => setTimeout(r, 200));
  const t0 = Date.now();
  for (let i = 0; i < 20; i++) eq((await req('GET', U + '/db')).status, 200);
  ok(Date.now() - t0 < 5000, 'answers came while 64 clients stalled');
  socks.forEach((s) => s.destroy());
});

test('an idle connection is closed after --idle-timeout', async () => {
  const t0 = Date.now();
  const got = await rawSocket(srv.port, 'GET / HTTP/1.1\r\nHost: x\r\n', 10000);
  const dt = Date.now() - t0;
  eq(got, '');
  ok(dt >= 1500 && dt < 8000, 'closed after ' + dt + ' ms');
});

test('kill -9 never loses an answered write', async () => {
  eq((await req('PUT', U + '/dur')).status, 201);
  const answered = new Map();
  // Concurrent writers; kill while they run.
  let stop = false;
  const writer = async (w) => {
    for (let i = 0; !stop; i++) {
      const id = `w${w}-${i}`;
      try {
        const r = await req('PUT', U + '/dur/' + id, { w, i });
        if (r.status === 201) answered.set(id, r.json.rev);
      } catch (e) { return; }
    }
  };
  const ws = [0, 1, 2, 3, 4, 5, 6, 7].map(writer);
  await new Promise((r) => setTimeout(r, 1500));
  await srv.kill9();
  stop = true;
  await Promise.all(ws);
  ok(answered.size > 50, 'writes answered before the kill: ' + answered.size);
  srv = await startDivan({ dataDir: srv.dataDir, args: ['--max-request-size', String(MAX)] });
  U = srv.url;
  const all = (await req('GET', U + '/dur/_all_docs')).json;
  const have = new Map(all.rows.map((r) => [r.id, r.value.rev]));
  for (const [id, rev] of answered) eq(have.get(id), rev, 'lost ' + id);
});

test('stop', async () => { await srv.stop(); });

run();
