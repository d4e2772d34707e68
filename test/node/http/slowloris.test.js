// slowloris.test.js — issue 24, point 1: with 4,150 slow clients holding
// connections (the count, past the old hard-coded cap of 4,096),
// each sending its head one byte every 0.5 s from 127.0.0.2–6, a normal
// GET from 127.0.0.1 still answers within a second, every time; then
// request_head_timeout closes every slow client with 408.
'use strict';
const net = require('net');
const { test, run, eq, ok } = require('../lib/t');
const { startDivan } = require('../lib/divan');

const N = 4150, SOURCES = 5, HEAD_TIMEOUT = 10;
let srv;
const socks = [];
let closed = 0, got408 = 0, opened = 0;

function get(port) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = net.connect({ port, host: '127.0.0.1' });
    let text = '';
    const done = (why) => { s.destroy(); resolve({ ms: Date.now() - t0, text, why }); };
    s.setTimeout(5000, () => done('timeout'));
    s.on('data', (d) => { text += d; if (/\r\n\r\n[\s\S]*\}/.test(text)) done('answer'); });
    s.on('error', () => done('error'));
    s.on('close', () => done('close'));
    s.write('GET /_up HTTP/1.1\r\nHost: x\r\n\r\n');
  });
}

test('start', async () => {
  srv = await startDivan({ config: `[chttpd]\nrequest_head_timeout = ${HEAD_TIMEOUT}\nidle_timeout = 300\n` });
});

test(`${N} slow clients open; a normal GET answers within a second, five times`, async () => {
  const t0 = Date.now();
  for (let i = 0; i < N; i++) {
    await new Promise((res) => {
      const s = net.connect({ port: srv.port, host: '127.0.0.1', localAddress: '127.0.0.' + (2 + (i % SOURCES)) }, () => {
        opened++;
        s.write('GET /_up HTTP/1.1\r\nHost: x\r\n');
        res();
      });
      s.on('error', () => res());
      s.on('data', (d) => { if (/^HTTP\/1\.1 408/.test(String(d))) got408++; });
      s.on('close', () => { closed++; });
      socks.push(s);
    });
  }
  const openMs = Date.now() - t0;
  const drip = setInterval(() => { for (const s of socks) if (!s.destroyed) s.write('X'); }, 500);
  try {
    eq(opened, N);
    const lat = [];
    for (let k = 0; k < 5; k++) {
      await new Promise((r) => setTimeout(r, 300));
      const held = N - closed;
      const r = await get(srv.port);
      ok(/^HTTP\/1\.1 200/.test(r.text), `GET with ${held} slow clients held: ${r.why} after ${r.ms} ms`);
      ok(r.ms < 1000, `GET took ${r.ms} ms with ${held} held`);
      lat.push(`${r.ms} ms (${held} held)`);
    }
    eq(closed, 0, 'slow clients closed before their head deadline');
    console.log(`    ${N} slow clients opened in ${openMs} ms; GET latencies: ${lat.join(', ')}`);
  } finally { clearInterval(drip); }
});

test(`request_head_timeout (${HEAD_TIMEOUT} s) closes every slow client with 408`, async () => {
  const drip = setInterval(() => { for (const s of socks) if (!s.destroyed) s.write('X'); }, 500);
  const until = Date.now() + (HEAD_TIMEOUT + 8) * 1000;
  while (closed < N && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
  clearInterval(drip);
  eq(closed, N);
  ok(got408 > N * 0.9, `${got408} of ${N} got a 408`);
  socks.forEach((s) => s.destroy());
});

test('stop', async () => { await srv.stop(); });

run();
