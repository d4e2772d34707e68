// memory.test.js — issue 22: [divan] memory_limit bounds the server.
//
//   1. The setting: bytes or K/M/G; a value that is not one, or one below
//      what the process takes at start plus the engine's least, stops the
//      start with one line and exit 1.
//   2. A server started with memory_limit = 64M stays under 64 MiB (VmHWM,
//      its peak resident set, read at the end) through a load: 6 clients
//      posting 1,000-document _bulk_docs, 16 reading random documents, 2
//      paging _all_docs with include_docs, 2 continuous _changes feeds, for
//      LOAD_SECONDS. Past the requests' share of the limit new work gets
//      503 service_unavailable with Retry-After, which the writers honour;
//      every acknowledged write is there afterwards, and the feeds saw
//      every document.
//   3. max_connections reached with every connection busy (continuous
//      feeds): a new connection gets 503 with Retry-After, never a hang;
//      once feeds close, new requests are served again.
'use strict';
const fs = require('fs');
const http = require('http');
const net = require('net');
const { spawnSync } = require('child_process');
const { test, run, req, eq, ok, isErr } = require('../lib/t');
const { startDivan } = require('../lib/divan');

const LIMIT_MIB = 64;
const LOAD_SECONDS = Number(process.env.MEMORY_LOAD_SECONDS || 15);
const J = { 'Content-Type': 'application/json' };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const status = (pid) => fs.readFileSync(`/proc/${pid}/status`, 'utf8');
const kib = (pid, k) => Number(new RegExp(k + ':\\s+(\\d+)').exec(status(pid))[1]);
const sanitized = /address/.test(process.env.DV_BUILD || '');

test('memory_limit: bad values stop the start with one line', async () => {
  const bin = process.env.DIVAN_BIN;
  for (const [v, want] of [['lots', /memory_limit = lots/], ['-5M', /memory_limit = -5M/], ['1G2', /memory_limit = 1G2/],
    ['16M', /memory_limit = 16M leaves/], ['20000000', /memory_limit = 19M leaves/]]) {
    const dir = fs.mkdtempSync((process.env.TEST_TMPDIR || '/tmp') + '/divan-mem-');
    fs.writeFileSync(dir + '/local.ini', `[divan]\nmemory_limit = ${v}\n`);
    const r = spawnSync(bin, ['serve', '--data', dir, '--port', '0'], { timeout: 30000, encoding: 'utf8' });
    eq(r.status, 1, `${v}: exit ${r.status}: ${r.stderr}`);
    ok(want.test(r.stderr), `${v}: ${r.stderr}`);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function doc(i) {
  return { type: 'load', i, name: 'document number ' + i, tags: ['alpha', 'beta', 'gamma'].slice(0, 1 + (i % 3)),
    nested: { a: i % 17, b: 'x'.repeat(20), c: [1, 2, 3] }, active: i % 2 === 0 };
}

// A continuous feed that records the ids it saw (and seen.status, its
// answer's status: a feed opened while the server still counts a closed
// connection can be the one refused).
function feed(srv, db, seen) {
  const u = new URL(srv.url);
  const r = http.request({ host: u.hostname, port: u.port, method: 'GET', agent: false,
    path: `/${db}/_changes?feed=continuous&since=0&heartbeat=1000`,
    headers: { Authorization: 'Basic ' + Buffer.from('admin:testpass').toString('base64') } }, (res) => {
    seen.status = res.statusCode;
    let buf = '';
    res.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) { const j = JSON.parse(line); if (j.id) seen.add(j.id); }
      }
    });
    res.on('error', () => {});
  });
  r.on('error', () => {});
  r.end();
  return r;
}

test(`memory_limit = ${LIMIT_MIB}M: peak RSS stays under it through a mixed load; 503 + Retry-After past the requests' share`, async () => {
  const srv = await startDivan({ config: `[divan]\nmemory_limit = ${LIMIT_MIB}M\n` });
  try {
    ok(await srv.logSays(/memory_limit 64M/), srv.log());
    eq((await req('PUT', srv.url + '/mem')).status, 201);
    // some documents to read
    const seed = [];
    for (let i = 0; i < 2000; i++) seed.push(Object.assign({ _id: 'seed' + String(i).padStart(5, '0') }, doc(i)));
    eq((await req('POST', srv.url + '/mem/_bulk_docs', { docs: seed })).status, 201);
    const seen = [new Set(), new Set()];
    const feeds = seen.map((s) => feed(srv, 'mem', s));
    const end = Date.now() + LOAD_SECONDS * 1000;
    const acked = new Set();
    let n503 = 0, bad503 = 0, reads = 0, pages = 0, next = 0, peakRss = 0;
    const sampler = setInterval(() => { try { peakRss = Math.max(peakRss, kib(srv.pid, 'VmRSS')); } catch (e) { /* gone */ } }, 50);
    const writer = async (w) => {
      while (Date.now() < end) {
        const docs = [];
        for (let i = 0; i < 1000; i++, next++) docs.push(Object.assign({ _id: `w${w}-${next}` }, doc(next)));
        for (;;) {
          const r = await req('POST', srv.url + '/mem/_bulk_docs', JSON.stringify({ docs }), J);
          if (r.status === 503) {
            n503++;
            if (r.headers['retry-after'] !== '1' || !r.json || r.json.error !== 'service_unavailable') bad503++;
            await sleep(Number(r.headers['retry-after'] || 1) * 100); // a tenth of it: keep the pressure on
            continue;
          }
          eq(r.status, 201, r.text);
          for (const x of r.json) { ok(x.ok, JSON.stringify(x)); acked.add(x.id); }
          break;
        }
      }
    };
    const reader = async () => {
      const a = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const u = new URL(srv.url);
      while (Date.now() < end) {
        const id = 'seed' + String(Math.floor(Math.random() * 2000)).padStart(5, '0');
        await new Promise((res, rej) => {
          http.get({ host: u.hostname, port: u.port, path: '/mem/' + id, agent: a, auth: 'admin:testpass' }, (r) => {
            r.resume();
            r.on('end', () => { if (r.statusCode !== 200 && r.statusCode !== 503) rej(new Error('GET ' + r.statusCode)); else res(); });
          }).on('error', rej);
        });
        reads++;
      }
      a.destroy();
    };
    const pager = async () => {
      while (Date.now() < end) {
        const r = await req('GET', srv.url + '/mem/_all_docs?include_docs=true&limit=1000');
        ok(r.status === 200 || r.status === 503, r.text.slice(0, 200));
        pages++;
      }
    };
    await Promise.all([...[0, 1, 2, 3, 4, 5].map(writer), ...Array.from({ length: 16 }, reader), pager(), pager()]);
    clearInterval(sampler);
    // every acknowledged write is there; the feeds saw every document
    const info = (await req('GET', srv.url + '/mem')).json;
    eq(info.doc_count, 2000 + acked.size);
    for (let i = 0; i < 100 && seen.some((s) => s.size < 2000 + acked.size); i++) await sleep(100);
    for (const s of seen) eq(s.size, 2000 + acked.size, 'a feed missed changes');
    for (const f of feeds) f.destroy();
    const hwm = kib(srv.pid, 'VmHWM') / 1024;
    console.log(`memory_limit ${LIMIT_MIB}M: ${acked.size} documents written, ${reads} reads, ${pages} pages, ${n503} answers 503; ` +
      `peak RSS (VmHWM) ${hwm.toFixed(1)} MiB, sampled peak ${(peakRss / 1024).toFixed(1)} MiB`);
    eq(bad503, 0, 'a 503 without Retry-After or service_unavailable');
    ok(acked.size >= 6000, `only ${acked.size} documents written`);
    // AddressSanitizer's shadow memory and quarantine are not the server's
    if (!sanitized) ok(hwm <= LIMIT_MIB, `peak RSS ${hwm.toFixed(1)} MiB over memory_limit ${LIMIT_MIB} MiB`);
  } finally {
    await srv.stop();
  }
});

test('max_connections reached, every connection busy: a new one gets 503 with Retry-After, then service resumes', async () => {
  const MAX = 20;
  const srv = await startDivan({ config: `[chttpd]\nmax_connections = ${MAX}\n` });
  try {
    eq((await req('PUT', srv.url + '/f')).status, 201);
    const seen = Array.from({ length: MAX }, () => new Set());
    const feeds = seen.map((s) => feed(srv, 'f', s));
    await sleep(500);
    const r = await new Promise((res) => {
      const s = net.connect(srv.port, '127.0.0.1', () => s.write('GET /_up HTTP/1.1\r\nHost: x\r\n\r\n'));
      let text = '';
      s.on('data', (d) => { text += d; });
      s.on('close', () => res(text));
      s.on('error', () => res(text));
      s.setTimeout(10000, () => { s.destroy(); res('timeout: ' + text); });
    });
    ok(/^HTTP\/1.1 503 /.test(r), r);
    ok(/\r\nRetry-After: 1\r\n/.test(r), r);
    ok(/"error":"service_unavailable"/.test(r), r);
    for (const f of feeds.splice(0, 5)) f.destroy();
    // the server sees them gone within its reaper's look at idle feeds (~1 s)
    let up;
    for (let i = 0; i < 50; i++) {
      up = await req('GET', srv.base + '/_up');
      if (up.status !== 503) break;
      eq(up.headers['retry-after'], '1');
      await sleep(100);
    }
    eq(up.status, 200, up.text);
    // the feeds still open were not disturbed
    const open = seen.slice(5).filter((s) => s.status === 200);
    ok(open.length >= MAX - 5 - 2, `only ${open.length} feeds open`);
    eq((await req('PUT', srv.url + '/f/after', { a: 1 })).status, 201);
    for (let i = 0; i < 50 && open.some((s) => !s.has('after')); i++) await sleep(100);
    for (const s of open) ok(s.has('after'), `an open feed missed a change (it saw ${s.size} ids: ${[...s].join(',')})`);
    for (const f of feeds) f.destroy();
  } finally {
    await srv.stop();
  }
});

run();
