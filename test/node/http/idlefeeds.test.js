// idlefeeds.test.js — issue 17's acceptance load test, grown to issue 22's
// 10,000 connections, on loopback, bounded in count and time: 9,936 idle
// continuous `_changes` feeds held open while 64 clients write (10,000
// connections, max_connections' default); every feed receives every
// change; the server's thread count stays at the pool size plus a fixed
// few; memory per idle feed stays under 16 KB; then, with 10,000 feeds
// open, one more connection is answered 503 with Retry-After. Thread
// counts, bytes per feed and the RSS are printed.
//
// Each feed is its own socket (http.request with agent: false, no
// keep-alive) on GET /db/_changes?feed=continuous&since=now&heartbeat=…;
// its rows are counted as distinct document ids (a bitmap per feed, lines
// parsed across chunk boundaries). The server's RSS and thread count come
// from /proc/PID/status, once after a warm-up and once with every feed
// open and idle.
//
// What an idle feed costs (measured on 2,000 feeds while the HTTP engine
// was made lean, issue 17): libmicrohttpd's per-connection pool
// (MHD_OPTION_CONNECTION_MEMORY_LIMIT, http.h HTTP_CONN_POOL) is the
// largest part, about 0.6 of its size, since libmicrohttpd zeroes the unused
// half of its first read buffer (80 KB pool: 69 KB per feed, 20 KB: 24.7
// KB, 10 KB: 15.8 KB); then the feed's piece size (HTTP_FEED_BLOCK_LIVE,
// 16 KB → 512 B saved ~3.5 KB), the request arena's first chunk and the
// feed's arenas (8 KB → 1–2 KB, and freed while idle). The pool is the
// request head limit (8 KB, as CouchDB's max_uri_length) plus 2 KB.
'use strict';
const fs = require('fs');
const http = require('http');
const net = require('net');
const { test, eq, ok, req } = require('../lib/t');
const { runFile } = require('../lib/divan');

const FEEDS = Number(process.env.IDLEFEEDS_FEEDS || 9936); // + 64 writers: 10,000 connections, max_connections' default
const WRITERS = 64;
const SLACK = 100;
const PER_WRITER = Number(process.env.IDLEFEEDS_PER_WRITER || 16); // 64 × 16 = 1,024 documents, ~10 million rows to the feeds
const DOCS = WRITERS * PER_WRITER;
// The server's own default pool: cores × HTTP_THREADS_PER_CORE (http.h).
const POOL = require('os').cpus().length * 4;
const FIXED = 16;          // everything else: RocksDB's, the committer, store/, libmicrohttpd's
const PER_FEED_MAX = 16 * 1024;
const HEARTBEAT = 30000;   // ms: idle feeds stay idle while measured

let srv, base, port;
const auth = 'Basic ' + Buffer.from('admin:testpass').toString('base64');

function status(pid) {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s)[1]);
  return { rssKb: kb('VmRSS'), threads: kb('Threads') };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One feed: a socket of its own; counts distinct ids "w<client>-<k>".
function openFeed(i) {
  const f = { i, seen: new Uint8Array(Math.ceil(DOCS / 8)), count: 0, tail: '', headers: false, ended: false, req: null };
  return new Promise((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port, agent: false, method: 'GET',
      path: `/db/_changes?feed=continuous&since=now&heartbeat=${HEARTBEAT}`, headers: { Authorization: auth } }, (res) => {
      if (res.statusCode !== 200) { reject(new Error(`feed ${i}: status ${res.statusCode}`)); return; }
      f.headers = true;
      res.setEncoding('latin1');
      res.on('data', (d) => {
        const text = f.tail + d;
        const end = text.lastIndexOf('\n');
        if (end < 0) { f.tail = text; return; }
        f.tail = text.slice(end + 1);
        const re = /"id":"w(\d+)-(\d+)"/g;
        const lines = text.slice(0, end);
        let m;
        while ((m = re.exec(lines))) {
          const n = Number(m[1]) * PER_WRITER + Number(m[2]);
          if (!(f.seen[n >> 3] & (1 << (n & 7)))) { f.seen[n >> 3] |= 1 << (n & 7); f.count++; }
        }
      });
      res.on('end', () => { f.ended = true; });
      res.on('error', () => { f.ended = true; });
      resolve(f);
    });
    r.on('error', (e) => { f.ended = true; if (!f.headers) reject(e); });
    f.req = r;
    r.end();
  });
}

const feeds = [];
let before, open;

runFile(__filename, {
  seconds: 240,
  divan: {
    // 100 over the 10,000: room for the warm-up's connections, which the
    // server may not have seen closed yet when the writers come
    config: `[chttpd]\nmax_connections = ${FEEDS + WRITERS + SLACK}\n` +
      'max_connections_per_client = 0\nidle_timeout = 600\n',
  },
  started: ({ srv: s, base: b }) => { srv = s; base = b; port = s.port; },
  finished: async () => { for (const f of feeds) f.req.destroy(); },
});

test('warm-up: a database, a write, a few feeds opened and closed', async () => {
  eq((await req('PUT', base + '/db')).status, 201);
  eq((await req('PUT', base + '/db/warm', { a: 1 })).status, 201);
  const warm = [];
  for (let i = 0; i < 50; i++) warm.push(await openFeed(-1));
  await sleep(300);
  warm.forEach((f) => f.req.destroy());
  await sleep(1000);
  before = status(srv.pid);
  console.log(`    before: ${before.threads} threads, RSS ${(before.rssKb / 1024).toFixed(1)} MB (pool ${POOL})`);
});

test(`${FEEDS} idle continuous feeds: threads <= pool + ${FIXED}, < 16 KB each`, async () => {
  const t0 = Date.now();
  for (let i = 0; i < FEEDS; i += 250) { // 250 at a time: the listen backlog is 1,024
    const batch = [];
    for (let k = i; k < Math.min(FEEDS, i + 250); k++) batch.push(openFeed(k));
    feeds.push(...await Promise.all(batch));
  }
  const openMs = Date.now() - t0;
  await sleep(2000); // idle
  open = status(srv.pid);
  const perFeed = ((open.rssKb - before.rssKb) * 1024) / FEEDS;
  console.log(`    ${FEEDS} feeds open in ${openMs} ms; then ${open.threads} threads (pool ${POOL} + ${open.threads - POOL}), ` +
    `RSS ${(open.rssKb / 1024).toFixed(1)} MB: ${Math.round(perFeed)} bytes per idle feed`);
  eq(feeds.filter((f) => f.headers && !f.ended).length, FEEDS, 'feeds open');
  ok(open.threads <= POOL + FIXED, `${open.threads} threads > pool ${POOL} + ${FIXED}`);
  ok(perFeed < PER_FEED_MAX, `${Math.round(perFeed)} bytes per idle feed (limit ${PER_FEED_MAX})`);
});

test(`${WRITERS} clients write ${DOCS} documents; every feed receives every change`, async () => {
  const t0 = Date.now();
  let maxThreads = 0;
  const sampler = setInterval(() => { maxThreads = Math.max(maxThreads, status(srv.pid).threads); }, 100);
  try {
    await Promise.all(Array.from({ length: WRITERS }, async (_, c) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      for (let k = 0; k < PER_WRITER; k++) {
        const body = JSON.stringify({ client: c, k });
        const status = await new Promise((resolve, reject) => {
          const r = http.request({ host: '127.0.0.1', port, agent, method: 'PUT', path: `/db/w${c}-${k}`,
            headers: { Authorization: auth, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode));
          });
          r.on('error', reject);
          r.end(body);
        });
        if (status !== 201) throw new Error(`PUT w${c}-${k}: ${status}`);
      }
      agent.destroy();
    }));
    const writeMs = Date.now() - t0;
    const until = Date.now() + 90000;
    let behind = feeds.length;
    while (Date.now() < until) {
      behind = feeds.filter((f) => f.count < DOCS).length;
      if (!behind) break;
      await sleep(200);
    }
    const allMs = Date.now() - t0;
    const after = status(srv.pid);
    const total = feeds.reduce((s, f) => s + f.count, 0);
    console.log(`    ${DOCS} writes in ${writeMs} ms; all ${FEEDS} feeds had all ${DOCS} changes after ${allMs} ms ` +
      `(${total} rows delivered); threads at most ${maxThreads} while writing, ${after.threads} after; ` +
      `RSS ${(after.rssKb / 1024).toFixed(1)} MB`);
    eq(behind, 0, 'feeds missing changes');
    eq(feeds.filter((f) => f.ended).length, 0, 'feeds ended');
    ok(maxThreads <= POOL + FIXED, `${maxThreads} threads while writing > pool ${POOL} + ${FIXED}`);
  } finally { clearInterval(sampler); }
});

// One more continuous feed on a raw socket: resolves to its status line
// (the socket stays open while it is a feed).
function rawFeed() {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(`GET /db/_changes?feed=continuous&since=now&heartbeat=${HEARTBEAT} HTTP/1.1\r\n` +
      `Host: x\r\nAuthorization: ${auth}\r\n\r\n`));
    let text = '';
    const done = () => resolve({ s, text });
    s.on('data', (d) => { text += d; if (text.includes('\r\n\r\n')) done(); });
    s.on('close', done);
    s.on('error', done);
    s.setTimeout(10000, () => { s.destroy(); done(); });
  });
}

test('max_connections reached with every connection busy: the next one gets 503 + Retry-After, the feeds go on', async () => {
  // open feeds until one is refused: the writers' connections may still be closing
  const extra = [];
  let refused = null;
  for (let k = 0; k < WRITERS + SLACK + 200 && !refused; k++) {
    const f = await rawFeed();
    if (/^HTTP\/1.1 200 /.test(f.text)) extra.push(f.s);
    else refused = f;
  }
  const rss = status(srv.pid).rssKb / 1024;
  console.log(`    ${feeds.length + extra.length} feeds open (max_connections ${FEEDS + WRITERS + SLACK}): RSS ${rss.toFixed(1)} MB; ` +
    `the next: ${refused ? refused.text.split('\r\n')[0] : 'none refused'}`);
  ok(refused, 'no connection was refused');
  ok(/^HTTP\/1.1 503 /.test(refused.text), refused.text);
  ok(/\r\nRetry-After: 1\r\n/.test(refused.text), refused.text);
  ok(/"error":"service_unavailable"/.test(refused.text), refused.text);
  ok(feeds.length + extra.length >= FEEDS + WRITERS, `only ${feeds.length + extra.length} feeds open`);
  eq(feeds.filter((f) => f.ended).length, 0, 'feeds ended');
  for (const s2 of extra) s2.destroy();
});

test('close every feed', async () => {
  for (const f of feeds) f.req.destroy();
  const t0 = Date.now();
  let r;
  while (Date.now() - t0 < 10000) { // the server notices them gone and is still fine
    r = await req('GET', base + '/db');
    if (r.status === 200) break;
  }
  eq(r.status, 200);
});
