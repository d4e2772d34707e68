// soak.js — a kill -9 soak with a client-side ledger: a mixed HTTP load on a
// real `divan serve` while a killer sends it SIGKILL at random moments and
// restarts it at once on the same data directory; then, with the server up
// and quiet, every acknowledged write is looked for, every feed's ledger is
// checked, the server is stopped and `divan check --data DIR` is run.
//
//   SOAK_SECONDS=600 SOAK_KILLS=50 node test/node/soak/soak.js   (make soak)
//   SOAK_SECONDS=120 SOAK_KILLS=10 ...                            (soak_short in make test)
//   SOAK_SEED=N          the run's seed (printed; the same seed draws the same
//                        kill moments, operations and sizes — the timing of a
//                        kill against the load is not reproducible, the plan is)
//   SOAK_BIG=N           10 MB attachments written (default 2, 6 for ≥ 600 s)
//   SOAK_KEEP=1          keep the data directory (default: removed at the end)
//   SOAK_SABOTAGE=1      proves the checks can fail: before them, one
//                        acknowledged document is purged and one the client
//                        never wrote is added behind the ledger's back; the
//                        run must then fail, naming both
//
// The load (all on plain http, one connection per request):
//   doc workers   PUT of new documents and updates (with _rev, carrying their
//                 attachments as stubs), DELETE, _bulk_docs batches of creates,
//                 updates and deletes, small inline attachments;
//   att worker    inline (base64) and standalone PUT attachments, 1 KB to
//                 1 MB, and SOAK_BIG of 10 MB; each digest recorded;
//   conflict worker  new_edits=false writes (PUT and _bulk_docs) of revisions
//                 it names itself, branching each document's tree;
//   churn worker  database create/delete cycles over a small pool of names,
//                 a document written into some;
//   followers     continuous _changes (style=all_docs) per database, and
//                 continuous _db_updates, resuming with since= their last seq.
// Each worker owns its documents, so a write's only rivals are the killer's.
//
// The ledger: an answered 2xx write is acknowledged; a connection that dies
// because of a kill leaves an unknown outcome, which the worker settles after
// the restart by reading the document (the write landed — its revision is
// learnt — or it did not); any other failure is a failure. At the end:
// every acknowledged (or landed) revision is in its document's tree; every
// leaf's body and attachments are ones the client wrote for that revision
// (no partly written document), the attachments' bytes hash to the recorded
// digests; deleted documents are deleted; the conflict documents' leaves,
// winner and _conflicts are what the written trees give; _all_docs holds no
// document the client never wrote; every database is there or not as its
// last settled create/delete says; every _changes follower saw each
// acknowledged write's change (its revision or a later one of the same
// document) and every follower's seqs rose strictly across reconnects;
// every _db_updates follower saw each acknowledged create/delete, and its
// last row per database agrees with the database's final state.
// Prints the counts; exits 1 with a readable list on any failure.
'use strict';
const http = require('http');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');
const util = require('util');
const { spawnSync } = require('child_process');
const { startDivan, ROOT } = require('../lib/divan');

const SECONDS = Number(process.env.SOAK_SECONDS || 600);
const KILLS = Number(process.env.SOAK_KILLS || 50);
const SEED = process.env.SOAK_SEED ? Number(process.env.SOAK_SEED) >>> 0 : crypto.randomBytes(4).readUInt32LE(0);
const BIG = Number(process.env.SOAK_BIG || (SECONDS >= 600 ? 6 : 2));
const SANITIZED = /address|undefined/.test(process.env.DV_BUILD || '') || /sanit|address/.test(process.env.DIVAN_BIN || '');
const MB = 1024 * 1024;
const BIG_SIZE = 10 * MB;
const MIN_UP_MS = 500;        // a kill waits until its server has taken load this long
const REQ_TIMEOUT_MS = 120000; // an answer slower than this, with the server up, is a failure
const SETTLE_MS = 90000;      // the feeds' catch-up after the load
const STABLE = ['soak-a', 'soak-b'];
const CHURN = Array.from({ length: 8 }, (_, i) => `soak-churn-${i}`);
// past this the run fails and its server is killed by PID (below soak_short's 900 s timeout under ASan)
const DEADLINE_S = SECONDS + 30 * KILLS * (SANITIZED ? 1 : 0.5) + 300;

// ---- seeded randomness ---------------------------------------------------------------------

function mulberry32(a) {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function rngFor(name) {
  const h = crypto.createHash('md5').update(`${SEED}:${name}`).digest();
  const r = mulberry32(h.readUInt32LE(0));
  r.int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1)); // [lo, hi]
  r.pick = (a) => a[Math.floor(r() * a.length)];
  r.chance = (p) => r() < p;
  return r;
}
// n pseudo-random bytes from a seed (xorshift32; fast enough for 10 MB)
function bytes(n, seed) {
  const b = Buffer.allocUnsafe(n);
  let x = (seed | 0) || 1;
  let i = 0;
  for (; i + 4 <= n; i += 4) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; b.writeInt32LE(x, i); }
  for (; i < n; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; b[i] = x & 255; }
  return b;
}
const md5b64 = (buf) => 'md5-' + crypto.createHash('md5').update(buf).digest('base64');
const md5hex = (s) => crypto.createHash('md5').update(s).digest('hex');
// A body's fingerprint: md5 of its JSON with keys sorted. The ledger keeps
// this, never the body, so its size does not grow with the bodies written.
function canon(v) {
  if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
  if (v && typeof v === 'object') return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + canon(v[k])).join(',') + '}';
  return JSON.stringify(v);
}
const fingerprint = (body) => md5hex(canon(body));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const gen = (rev) => Number(String(rev).split('-')[0]);
// seqs are opaque strings; divan's are hex of one width, CouchDB-style "N-…"
// would compare by their number: length first, then bytes, orders both
const cmpSeq = (a, b) => (a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0);

// ---- failures and counts -------------------------------------------------------------------

const failures = [];
function fail(msg) {
  msg = msg.trim();
  failures.push(msg);
  if (failures.length <= 20) console.log('FAIL ' + msg);
}
const C = {
  kills: 0, restarts: 0, acked: 0, unknown: 0, landed: 0, lost: 0, verified: 0,
  docs: 0, deleted: 0, conflictDocs: 0, conflictRevs: 0, nefWrites: 0,
  atts: 0, attBytes: 0, bigAtts: 0, attsVerified: 0, attBytesVerified: 0,
  changesRows: 0, dbuRows: 0, reconnects: 0, dbCreated: 0, dbDeleted: 0, dbUnknown: 0,
  requests: 0, bulk: 0, retries503: 0,
};

// ---- the server and the killer -------------------------------------------------------------

const ADMIN = { name: 'admin', password: 'soak-' + crypto.randomBytes(6).toString('hex') };
const S = {
  srv: null, port: 0, dataDir: null, killing: false, kills: 0, upSince: 0,
  up: null, setUp: null, stopping: false, logs: [],
};
function markDown() { S.up = new Promise((r) => { S.setUp = r; }); }
markDown();

// A free port below Linux's ephemeral range (32768-60999), so no client's
// outgoing connection takes it while the server is down between two lives.
async function freePort() {
  for (let i = 0; i < 200; i++) {
    const port = 20000 + crypto.randomInt(12000);
    const ok = await new Promise((resolve) => {
      const s = net.createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (ok) return port;
  }
  throw new Error('no free port in 20000-32000');
}

async function startServer() {
  for (let attempt = 1; ; attempt++) {
    try {
      // one port for every life of the server: a client never writes to a
      // port another process took meanwhile (its admin password would not be ours anyway)
      S.srv = await startDivan({ dataDir: S.dataDir, admin: ADMIN, args: ['--port', String(S.port)] });
      break;
    } catch (e) {
      if (attempt >= 5) throw new Error(`divan did not restart after ${attempt} tries: ${e.message.slice(-2000)}`);
      await sleep(200 * attempt);
    }
  }
  const srv = S.srv;
  srv.proc.on('exit', (code, sig) => {
    S.logs.push(srv.log().slice(-3000));
    if (S.logs.length > 3) S.logs.shift();
    if (srv.intended || S.srv !== srv) return;
    fail(`the server (pid ${srv.pid}) exited by itself (${code ?? sig}); its log ends:\n${srv.log().slice(-2000)}`);
    if (!S.stopping && !S.killing) { // keep the load going on a new life
      S.killing = true; S.kills++; markDown();
      startServer().then(() => { S.killing = false; }, (e) => bail(e.message));
    }
  });
  S.upSince = Date.now();
  S.setUp();
}

async function kill9() {
  S.killing = true;
  S.kills++;
  markDown();
  const srv = S.srv;
  srv.intended = true;
  await srv.kill9();
  C.kills++;
  await startServer();
  C.restarts++;
  S.killing = false;
}

async function killer(rng, t0, stopAt) {
  // the moments are drawn uniform over the run, then sorted
  const at = Array.from({ length: KILLS }, () => t0 + (0.02 + 0.96 * rng()) * (stopAt - t0)).sort((a, b) => a - b);
  for (const t of at) {
    const now = Date.now();
    if (t > now) await sleep(t - now);
    await S.up;
    const upFor = Date.now() - S.upSince;
    if (upFor < MIN_UP_MS) await sleep(MIN_UP_MS - upFor);
    await kill9();
  }
}

// ---- requests ------------------------------------------------------------------------------

class Unknown extends Error {}
const AUTH = 'Basic ' + Buffer.from(`${ADMIN.name}:${ADMIN.password}`).toString('base64');

function rawRequest(method, p, data, headers, timeoutMs) {
  return new Promise((resolve, reject) => {
    const r = http.request({ method, host: '127.0.0.1', port: S.port, path: p, headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        if (!res.complete) return reject(new Error('answer cut short'));
        const body = Buffer.concat(chunks);
        let json;
        try { json = body.length ? JSON.parse(body.toString('utf8')) : undefined; } catch (e) { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, body, text: body.toString('utf8'), json });
      });
      res.on('error', reject);
      res.on('aborted', () => reject(new Error('answer aborted')));
    });
    r.setTimeout(timeoutMs, () => r.destroy(new Error(`no answer in ${timeoutMs / 1000} s`)));
    r.on('error', reject);
    if (data !== null && data !== undefined) r.write(data);
    r.end();
  });
}

// One request against the server's current life. Resolves to the answer
// (any status); throws Unknown when the connection died because of a kill
// (the request may or may not have taken effect), after the server is up
// again. A connection error with no kill is a failure (and also Unknown).
// 503 is retried (a bounded server shedding load).
async function call(method, p, body, headers = {}) {
  let data = null;
  const h = Object.assign({ Authorization: AUTH }, headers);
  if (body !== undefined && body !== null) {
    if (Buffer.isBuffer(body) || typeof body === 'string') data = body;
    else { data = JSON.stringify(body); h['Content-Type'] = h['Content-Type'] || 'application/json'; }
  }
  for (;;) {
    await S.up;
    const k0 = S.kills;
    C.requests++;
    let r;
    try {
      r = await rawRequest(method, p, data, h, REQ_TIMEOUT_MS);
    } catch (e) {
      if (S.kills === k0 && !S.killing) fail(`${method} ${p.slice(0, 80)}: ${e.message} with the server up (no kill)`);
      await S.up;
      throw new Unknown(`${method} ${p}: ${e.message}`);
    }
    if (r.status === 503) { C.retries503++; await sleep(200); continue; }
    return r;
  }
}
// The same for reads: retried through kills until answered.
async function read(method, p, headers = {}, body = null) {
  for (;;) {
    try { return await call(method, p, body, headers); } catch (e) { if (!(e instanceof Unknown)) throw e; }
  }
}
const JSONH = { Accept: 'application/json' };
const enc = encodeURIComponent;

// ---- the ledger ----------------------------------------------------------------------------

// doc:   { db, id, kind: 'linear'|'nef', writes: [W], rev, gen, deleted, atts, cur, pending: [W] }
// W:     { idx, token, hash (the body's fingerprint), deleted, atts: {name: {md5, len, revpos}}, gen, rev, status }
//        status: 'sent' → 'ack' | 'unknown' → 'landed' | 'lost'; 'rejected'
const docs = new Map(); // `${db}/${id}` → doc
let tokenN = 0;

function newDoc(db, id, kind) {
  const d = { db, id, kind, writes: [], rev: null, gen: 0, deleted: false, atts: {}, cur: null, pending: [], revIdx: new Map() };
  docs.set(`${db}/${id}`, d);
  return d;
}

function bodyFor(rng, worker) {
  const token = `${worker}-${++tokenN}`;
  const pad = rng.int(0, 12) === 0 ? rng.int(2000, 60000) : rng.int(0, 400);
  return {
    w: token,
    n: rng.int(0, 1e9),
    s: 'é' + crypto.createHash('sha1').update(token).digest('hex').repeat(Math.ceil(pad / 40)).slice(0, pad),
    o: { a: [1, 2.5, true, null, 'ü'], k: rng.int(0, 99) },
  };
}

function newWrite(doc, body, deleted, atts) {
  const W = { doc, idx: doc.writes.length, token: body ? body.w : null, hash: body ? fingerprint(body) : null, deleted, atts, gen: doc.gen + 1, rev: null, status: 'sent' };
  doc.writes.push(W);
  return W;
}

function settle(W, rev, status) {
  const doc = W.doc;
  if (gen(rev) !== W.gen) fail(`${doc.db}/${doc.id}: write ${W.token || 'delete'} got rev ${rev}, expected generation ${W.gen}`);
  W.rev = rev;
  W.status = status;
  doc.revIdx.set(rev, W.idx);
  doc.rev = rev;
  doc.gen = gen(rev);
  doc.deleted = W.deleted;
  doc.cur = W;
  doc.atts = {};
  for (const [n, a] of Object.entries(W.atts)) doc.atts[n] = Object.assign({}, a, { revpos: a.revpos || W.gen });
  if (status === 'ack') C.acked++; else C.landed++;
}

function unknown(W) {
  W.status = 'unknown';
  C.unknown++;
  W.doc.pending.push(W);
}

// The document part of a body as the server returns it.
function plain(doc) {
  const o = {};
  for (const [k, v] of Object.entries(doc)) if (!k.startsWith('_')) o[k] = v;
  return o;
}

function attsMatch(leaf, atts) {
  const got = leaf._attachments || {};
  const want = Object.keys(atts);
  if (Object.keys(got).length !== want.length) return false;
  for (const n of want) if (!got[n] || got[n].digest !== atts[n].md5 || got[n].length !== atts[n].len) return false;
  return true;
}

async function leavesOf(db, id) {
  const r = await read('GET', `/${db}/${enc(id)}?open_revs=all&revs=true`, JSONH);
  if (r.status === 404) return [];
  if (r.status !== 200 || !Array.isArray(r.json)) { fail(`GET ${db}/${id}?open_revs=all: ${r.status} ${r.text.slice(0, 200)}`); return null; }
  return r.json.filter((x) => x.ok).map((x) => x.ok);
}

// Settle a linear document's writes of unknown outcome, oldest first, by
// reading its one leaf after the restart.
async function resolve(doc) {
  while (doc.pending.length) {
    const W = doc.pending.shift();
    const ls = await leavesOf(doc.db, doc.id);
    if (ls === null) { W.status = 'lost'; C.lost++; continue; }
    if (ls.length > 1) fail(`${doc.db}/${doc.id}: ${ls.length} leaves on a document only ever edited in line: ${ls.map((l) => l._rev)}`);
    const L = ls[0];
    if (!L || L._rev === doc.rev) {
      if (!L && doc.rev !== null) fail(`${doc.db}/${doc.id}: gone — its acknowledged ${doc.rev} is not there`);
      W.status = 'lost'; C.lost++;
      continue;
    }
    // a leaf the ledger does not know: it must be W, whole
    const bodyOk = W.deleted ? L._deleted === true : !L._deleted && fingerprint(plain(L)) === W.hash;
    if (gen(L._rev) !== W.gen || !bodyOk || (!W.deleted && !attsMatch(L, W.atts)))
      fail(`${doc.db}/${doc.id}: after an unknown write its leaf ${L._rev} is neither the last settled ${doc.rev} nor the write ${W.token || 'delete'} (gen ${W.gen}) whole: ${JSON.stringify(L).slice(0, 300)}`);
    settle(W, L._rev, 'landed');
  }
}

// ---- attachments ---------------------------------------------------------------------------

let attSeed = 1;
function newAtt(rng, size) {
  const data = bytes(size, (SEED ^ (attSeed++ * 2654435761)) >>> 0);
  C.atts++; C.attBytes += size;
  if (size >= BIG_SIZE) C.bigAtts++;
  return { data, meta: { md5: md5b64(data), len: size } };
}
function attSize(rng) {
  if (rng.chance(0.1)) return rng.int(256 * 1024, MB);
  return Math.round(1024 * Math.pow(256, rng())); // 1 KB .. 256 KB, log-uniform
}
function stubsOf(doc, drop) {
  const o = {};
  for (const [n, a] of Object.entries(doc.atts)) if (n !== drop) o[n] = { stub: true, revpos: a.revpos };
  return o;
}

// ---- workers -------------------------------------------------------------------------------

let loadOver = false;

// A worker owning linear documents (prefix) in db: creates, updates,
// deletes, _bulk_docs, inline attachments; with att=true mostly attachments,
// inline and standalone, and the 10 MB ones at drawn moments.
async function docWorker(name, db, opts) {
  const rng = rngFor(name);
  const mine = [];
  let n = 0;
  const bigAt = opts.bigAt || [];
  const live = () => mine.filter((d) => !d.deleted && d.rev !== null && !d.pending.length);
  const guarded = async (fn) => {
    try { await fn(); } catch (e) { if (!(e instanceof Unknown)) throw e; }
    for (const d of mine) if (d.pending.length) await resolve(d);
  };
  while (!loadOver) {
    const L = live();
    let big = 0;
    if (bigAt.length && Date.now() >= bigAt[0]) { bigAt.shift(); big = BIG_SIZE; }
    const roll = rng();
    const mix = opts.mix;
    if (big || roll < mix.att) { // an attachment: standalone PUT or inline in a create/update
      const size = big || attSize(rng);
      const standalone = L.length && (big ? rng.chance(0.5) : rng.chance(0.6));
      const A = newAtt(rng, size);
      const aname = 'a' + rng.int(0, 3);
      if (standalone) {
        const doc = rng.pick(L);
        const atts = Object.assign({}, doc.atts, { [aname]: A.meta });
        const W = newWrite(doc, null, false, atts);
        W.token = doc.cur.token;
        W.hash = doc.cur.hash;
        W.atts[aname] = Object.assign({}, A.meta, { revpos: 0 });
        await guarded(async () => {
          try {
            const r = await call('PUT', `/${db}/${enc(doc.id)}/${aname}?rev=${doc.rev}`, A.data, { 'Content-Type': 'application/octet-stream' });
            if (r.status === 201 && r.json && r.json.ok) settle(W, r.json.rev, 'ack');
            else { W.status = 'rejected'; fail(`PUT ${db}/${doc.id}/${aname} (${size} B): ${r.status} ${r.text.slice(0, 200)}`); }
          } catch (e) { if (e instanceof Unknown) unknown(W); throw e; }
        });
      } else {
        const doc = L.length && rng.chance(0.5) ? rng.pick(L) : newDoc(db, `${opts.prefix}${++n}`, 'linear');
        if (doc.rev === null) mine.push(doc);
        const body = bodyFor(rng, name);
        const atts = Object.assign({}, doc.atts, { [aname]: Object.assign({}, A.meta, { revpos: 0 }) });
        const W = newWrite(doc, body, false, atts);
        const att = Object.assign(stubsOf(doc, aname), { [aname]: { content_type: 'application/octet-stream', data: A.data.toString('base64') } });
        const json = Object.assign({}, body, doc.rev ? { _rev: doc.rev } : {}, { _attachments: att });
        await guarded(() => putDoc(W, json));
      }
    } else if (roll < mix.att + mix.create && !(L.length >= opts.maxDocs)) {
      const doc = newDoc(db, `${opts.prefix}${++n}`, 'linear');
      mine.push(doc);
      const body = bodyFor(rng, name);
      const W = newWrite(doc, body, false, {});
      await guarded(() => putDoc(W, body));
    } else if (roll < mix.att + mix.create + mix.update && L.length) {
      const doc = rng.pick(L);
      const body = bodyFor(rng, name);
      const names = Object.keys(doc.atts);
      const drop = names.length && rng.chance(0.15) ? rng.pick(names) : null;
      const atts = Object.assign({}, doc.atts);
      if (drop) delete atts[drop];
      const W = newWrite(doc, body, false, atts);
      const json = Object.assign({}, body, { _rev: doc.rev });
      if (Object.keys(atts).length) json._attachments = stubsOf(doc, drop);
      await guarded(() => putDoc(W, json));
    } else if (roll < mix.att + mix.create + mix.update + mix.del && L.length > 5) {
      const doc = rng.pick(L);
      const W = newWrite(doc, null, true, {});
      await guarded(async () => {
        try {
          const r = await call('DELETE', `/${db}/${enc(doc.id)}?rev=${doc.rev}`);
          if (r.status === 200 && r.json && r.json.ok) settle(W, r.json.rev, 'ack');
          else { W.status = 'rejected'; fail(`DELETE ${db}/${doc.id}?rev=${doc.rev}: ${r.status} ${r.text.slice(0, 200)}`); }
        } catch (e) { if (e instanceof Unknown) unknown(W); throw e; }
      });
    } else { // _bulk_docs: new documents, updates and deletes of our own
      const k = rng.int(4, 25);
      const batch = [];
      const used = new Set();
      for (let i = 0; i < k; i++) {
        const r = rng();
        if ((r < 0.5 || L.length < 10) && L.length < opts.maxDocs) {
          const doc = newDoc(db, `${opts.prefix}${++n}`, 'linear');
          mine.push(doc);
          const body = bodyFor(rng, name);
          batch.push([newWrite(doc, body, false, {}), Object.assign({ _id: doc.id }, body)]);
        } else if (L.length) {
          const doc = rng.pick(L);
          if (used.has(doc)) continue;
          used.add(doc);
          if (r < 0.9) {
            const body = bodyFor(rng, name);
            const W = newWrite(doc, body, false, Object.assign({}, doc.atts));
            const json = Object.assign({ _id: doc.id, _rev: doc.rev }, body);
            if (Object.keys(doc.atts).length) json._attachments = stubsOf(doc, null);
            batch.push([W, json]);
          } else batch.push([newWrite(doc, null, true, {}), { _id: doc.id, _rev: doc.rev, _deleted: true }]);
        }
      }
      if (!batch.length) continue;
      C.bulk++;
      await guarded(async () => {
        try {
          const r = await call('POST', `/${db}/_bulk_docs`, { docs: batch.map((b) => b[1]) });
          if (r.status !== 201 || !Array.isArray(r.json) || r.json.length !== batch.length) {
            for (const [W] of batch) W.status = 'rejected';
            fail(`POST ${db}/_bulk_docs (${batch.length} docs): ${r.status} ${r.text.slice(0, 200)}`);
            return;
          }
          r.json.forEach((x, i) => {
            const [W] = batch[i];
            if (x.ok && x.id === W.doc.id) settle(W, x.rev, 'ack');
            else { W.status = 'rejected'; fail(`_bulk_docs ${db}/${W.doc.id}: ${JSON.stringify(x)}`); }
          });
        } catch (e) { if (e instanceof Unknown) for (const [W] of batch) unknown(W); throw e; }
      });
    }
    await sleep(rng.int(opts.pace[0], opts.pace[1]));
  }
}

async function putDoc(W, json) {
  const doc = W.doc;
  try {
    const r = await call('PUT', `/${doc.db}/${enc(doc.id)}`, json);
    if (r.status === 201 && r.json && r.json.ok) settle(W, r.json.rev, 'ack');
    else { W.status = 'rejected'; fail(`PUT ${doc.db}/${doc.id}: ${r.status} ${r.text.slice(0, 200)}`); }
  } catch (e) { if (e instanceof Unknown) unknown(W); throw e; }
}

// new_edits=false writes: the client names every revision (N-md5(token)),
// so a write of unknown outcome needs no settling — its revision is looked
// for at the end. Each document's tree branches at random.
async function conflictWorker(name, db, opts) {
  const rng = rngFor(name);
  const mine = [];
  let n = 0;
  const write = (doc, parent, deleted) => {
    const body = bodyFor(rng, name);
    const h = md5hex(body.w);
    const path = parent ? [h, ...doc.paths.get(parent)] : [h];
    const rev = `${path.length}-${h}`;
    const W = { doc, idx: doc.writes.length, token: body.w, hash: fingerprint(body), deleted, atts: {}, gen: path.length, rev, status: 'sent' };
    doc.writes.push(W);
    doc.paths.set(rev, path);
    doc.revIdx.set(rev, W.idx);
    const json = Object.assign({ _id: doc.id, _rev: rev, _revisions: { start: path.length, ids: path } }, body, deleted ? { _deleted: true } : {});
    return [W, json];
  };
  const ackNef = (W) => { W.status = 'ack'; C.acked++; C.nefWrites++; };
  while (!loadOver) {
    const roll = rng();
    const grow = mine.filter((d) => d.writes.length < 40);
    if (roll < 0.15 || grow.length < 3) {
      if (mine.length >= opts.maxDocs) { await sleep(50); continue; }
      const doc = newDoc(db, `${opts.prefix}${++n}`, 'nef');
      doc.paths = new Map();
      mine.push(doc);
      const [W, json] = write(doc, null, false);
      await nefPut(W, json, ackNef);
    } else if (roll < 0.75) {
      const doc = rng.pick(grow);
      const parent = rng.pick(doc.writes).rev;
      const [W, json] = write(doc, parent, rng.chance(0.1));
      await nefPut(W, json, ackNef);
    } else {
      const k = rng.int(2, 8);
      const batch = [];
      const used = new Set();
      for (let i = 0; i < k; i++) {
        const doc = rng.pick(grow);
        if (used.has(doc)) continue;
        used.add(doc);
        batch.push(write(doc, rng.pick(doc.writes).rev, rng.chance(0.1)));
      }
      C.bulk++;
      try {
        const r = await call('POST', `/${db}/_bulk_docs`, { new_edits: false, docs: batch.map((b) => b[1]) });
        if (r.status === 201 && Array.isArray(r.json) && r.json.length === 0) batch.forEach(([W]) => ackNef(W));
        else { batch.forEach(([W]) => { W.status = 'rejected'; }); fail(`POST ${db}/_bulk_docs new_edits=false: ${r.status} ${r.text.slice(0, 300)}`); }
      } catch (e) {
        if (!(e instanceof Unknown)) throw e;
        batch.forEach(([W]) => { W.status = 'unknown'; C.unknown++; });
      }
    }
    await sleep(rng.int(opts.pace[0], opts.pace[1]));
  }
}
async function nefPut(W, json, ackNef) {
  try {
    const r = await call('PUT', `/${W.doc.db}/${enc(W.doc.id)}?new_edits=false`, json);
    // CouchDB answers a PUT that writes a deleted revision 200, any other 201
    if (r.status === (W.deleted ? 200 : 201) && r.json && r.json.rev === W.rev) ackNef(W);
    else { W.status = 'rejected'; fail(`PUT ${W.doc.db}/${W.doc.id}?new_edits=false ${W.rev}: ${r.status} ${r.text.slice(0, 200)}`); }
  } catch (e) {
    if (!(e instanceof Unknown)) throw e;
    W.status = 'unknown'; C.unknown++;
  }
}

// Database create/delete cycles over a few names (a name is created again
// after its deletion). state: 'exists' | 'absent' | 'unknown'; an unknown
// outcome is settled by GET /{db} after the restart.
const churn = new Map(); // name → { state, ops: [{type, status, snap: [rows seen per dbu follower]}] }
async function churnWorker(name, opts) {
  const rng = rngFor(name);
  for (const n of CHURN) churn.set(n, { state: 'absent', ops: [] });
  while (!loadOver) {
    const dbn = rng.pick(CHURN);
    const c = churn.get(dbn);
    if (c.state === 'unknown') {
      const r = await read('GET', `/${dbn}`);
      if (r.status === 200) c.state = 'exists';
      else if (r.status === 404) c.state = 'absent';
      else { fail(`GET /${dbn}: ${r.status} ${r.text.slice(0, 200)}`); continue; }
      const op = c.ops[c.ops.length - 1];
      op.status = (op.type === 'created') === (c.state === 'exists') ? 'landed' : 'lost';
    }
    const type = c.state === 'exists' ? 'deleted' : 'created';
    const op = { type, status: 'sent', snap: dbuFollowers.map((f) => (f.rows.get(dbn) || []).length) };
    c.ops.push(op);
    try {
      const r = await call(type === 'created' ? 'PUT' : 'DELETE', `/${dbn}`);
      const want = type === 'created' ? 201 : 200;
      if (r.status === want) {
        op.status = 'ack';
        c.state = type === 'created' ? 'exists' : 'absent';
        if (type === 'created') C.dbCreated++; else C.dbDeleted++;
      } else {
        op.status = 'rejected';
        fail(`${type === 'created' ? 'PUT' : 'DELETE'} /${dbn} (the ledger says ${c.state}): ${r.status} ${r.text.slice(0, 200)}`);
        c.state = 'unknown';
      }
    } catch (e) {
      if (!(e instanceof Unknown)) throw e;
      op.status = 'unknown'; C.dbUnknown++;
      c.state = 'unknown';
    }
    if (c.state === 'exists' && rng.chance(0.5)) {
      // an "updated" event for the followers; the document itself is not in the ledger
      try { await call('PUT', `/${dbn}/d${rng.int(0, 9)}x${Date.now()}`, { x: 1 }); } catch (e) { if (!(e instanceof Unknown)) throw e; }
    }
    await sleep(rng.int(opts.pace[0], opts.pace[1]));
  }
  for (const [dbn, c] of churn) if (c.state === 'unknown') {
    const r = await read('GET', `/${dbn}`);
    c.state = r.status === 200 ? 'exists' : 'absent';
    const op = c.ops[c.ops.length - 1];
    op.status = (op.type === 'created') === (c.state === 'exists') ? 'landed' : 'lost';
  }
}

// ---- followers -----------------------------------------------------------------------------

// A continuous feed that reconnects after every kill with since=<its last
// seq>: each row's seq must be above the one before it, across reconnects.
function follower(kind, p, onRow) {
  const f = { kind, p, last: null, rows: new Map(), seen: new Map(), n: 0, reconnects: 0, stop: false, req: null, done: null };
  f.done = (async () => {
    while (!f.stop) {
      await S.up;
      if (f.stop) break;
      const k0 = S.kills;
      const since = f.last === null ? '0' : f.last;
      const ended = await new Promise((resolveEnd) => {
        const r = http.request({
          method: 'GET', host: '127.0.0.1', port: S.port, agent: false,
          path: `${p}${p.includes('?') ? '&' : '?'}feed=continuous&heartbeat=3000&since=${enc(since)}`,
          headers: { Authorization: AUTH },
        }, (res) => {
          if (res.statusCode !== 200) {
            let t = '';
            res.on('data', (d) => { t += d; });
            res.on('end', () => resolveEnd(`status ${res.statusCode}: ${t.slice(0, 200)}`));
            res.on('error', () => resolveEnd('error'));
            return;
          }
          let buf = '';
          res.setEncoding('utf8');
          res.on('data', (d) => {
            buf += d;
            let i;
            while ((i = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, i).trim();
              buf = buf.slice(i + 1);
              if (!line) continue;
              let row;
              try { row = JSON.parse(line); } catch (e) { fail(`${kind} ${p}: a line that is not JSON: ${line.slice(0, 200)}`); continue; }
              if (row.seq === undefined) continue; // {"last_seq"} at a timeout
              if (f.last !== null && cmpSeq(row.seq, f.last) <= 0) fail(`${kind} ${p}: seq ${row.seq} after ${f.last} (a rewind${f.reconnects ? `, reconnect ${f.reconnects}` : ''})`);
              f.last = row.seq;
              f.n++;
              onRow(f, row);
            }
          });
          res.on('end', () => resolveEnd('end'));
          res.on('aborted', () => resolveEnd('aborted'));
          res.on('error', () => resolveEnd('error'));
        });
        f.req = r;
        r.on('error', () => resolveEnd('error'));
        r.end();
      });
      if (f.stop) break;
      if (S.kills === k0 && !S.killing) {
        if (ended !== 'end') fail(`${kind} ${p}: the feed ${ended} with the server up (no kill)`);
        await sleep(100);
      }
      f.reconnects++;
      C.reconnects++;
    }
  })();
  f.close = () => { f.stop = true; if (f.req) f.req.destroy(); return f.done; };
  return f;
}

const changesFollowers = []; // per stable db
const dbuFollowers = [];
function changesRow(f, row) {
  C.changesRows++;
  let s = f.seen.get(row.id);
  if (!s) f.seen.set(row.id, (s = new Set()));
  for (const c of row.changes || []) s.add(c.rev);
}
function dbuRow(f, row) {
  C.dbuRows++;
  let a = f.rows.get(row.db_name);
  if (!a) f.rows.set(row.db_name, (a = []));
  a.push(row.type);
}

// ---- the checks at the end -----------------------------------------------------------------

async function pool(items, k, fn) {
  let i = 0;
  await Promise.all(Array.from({ length: k }, async () => { while (i < items.length) await fn(items[i++]); }));
}

async function md5Of(db, id, name, rev) {
  const r = await read('GET', `/${db}/${enc(id)}/${enc(name)}?rev=${rev}`);
  if (r.status !== 200) { fail(`GET ${db}/${id}/${name}?rev=${rev}: ${r.status} ${r.text.slice(0, 200)}`); return null; }
  C.attBytesVerified += r.body.length;
  return md5b64(r.body);
}

async function checkLinear(doc) {
  const where = `${doc.db}/${doc.id}`;
  const ls = await leavesOf(doc.db, doc.id);
  if (ls === null) return;
  const acked = doc.writes.filter((W) => W.status === 'ack' || W.status === 'landed');
  if (doc.rev === null) {
    if (ls.length) fail(`${where}: no write of it settled as landed, yet it has leaves ${ls.map((l) => l._rev)}`);
    return;
  }
  if (!ls.length) { fail(`${where}: gone — no revision left; the ledger's last settled write is ${doc.rev} (${doc.cur.status}), ${acked.length} acknowledged`); return; }
  if (ls.length !== 1) { fail(`${where}: ${ls.length} leaves (${ls.map((l) => l._rev)}) on a document edited only in line`); return; }
  const L = ls[0];
  if (L._rev !== doc.rev) { fail(`${where}: leaf ${L._rev}, the ledger's last settled write is ${doc.rev} (${doc.cur.status})`); return; }
  const path = new Set((L._revisions.ids || []).map((h, i) => `${L._revisions.start - i}-${h}`));
  for (const W of acked) {
    if (path.has(W.rev)) { if (W.status === 'ack') C.verified++; }
    else fail(`${where}: acknowledged ${W.rev} is not in its revision tree (leaf ${L._rev}, ${path.size} revs)`);
  }
  const W = doc.cur;
  if (W.deleted) {
    if (!L._deleted) fail(`${where}: deleted at ${W.rev} but its leaf is not deleted`);
    const g = await read('GET', `/${doc.db}/${enc(doc.id)}`);
    if (g.status !== 404) fail(`${where}: deleted, yet GET answers ${g.status}`);
    C.deleted++;
    return;
  }
  C.docs++;
  if (L._deleted) { fail(`${where}: its leaf ${L._rev} is deleted; the client wrote ${W.token} there`); return; }
  if (fingerprint(plain(L)) !== W.hash) { fail(`${where}@${L._rev}: body ${JSON.stringify(plain(L)).slice(0, 200)} is not the one written (${W.token})`); return; }
  if (!attsMatch(L, W.atts)) { fail(`${where}@${L._rev}: attachments ${JSON.stringify(L._attachments || {}).slice(0, 300)} are not the ones written ${JSON.stringify(W.atts)}`); return; }
  for (const [n, a] of Object.entries(W.atts)) {
    const got = await md5Of(doc.db, doc.id, n, L._rev);
    if (got === null) continue;
    if (got !== a.md5) fail(`${where}/${n}@${L._rev}: its bytes hash to ${got}, ${a.md5} was written (${a.len} B)`);
    else C.attsVerified++;
  }
}

async function checkNef(doc) {
  const where = `${doc.db}/${doc.id}`;
  const ls = await leavesOf(doc.db, doc.id);
  if (ls === null) return;
  const byRev = new Map(doc.writes.map((W) => [W.rev, W]));
  const tree = new Set();
  for (const L of ls) {
    (L._revisions.ids || []).forEach((h, i) => tree.add(`${L._revisions.start - i}-${h}`));
    const W = byRev.get(L._rev);
    if (!W) { fail(`${where}: a leaf ${L._rev} the client never wrote`); continue; }
    if (!!L._deleted !== W.deleted) fail(`${where}@${L._rev}: _deleted ${!!L._deleted}, written ${W.deleted}`);
    else if (fingerprint(plain(L)) !== W.hash) fail(`${where}@${L._rev}: body ${JSON.stringify(plain(L)).slice(0, 200)} is not the one written (${W.token})`);
  }
  for (const W of doc.writes) {
    if (W.status === 'ack') { if (tree.has(W.rev)) C.verified++; else fail(`${where}: acknowledged new_edits=false ${W.rev} is not in its tree`); }
    else if (W.status === 'unknown') {
      W.status = tree.has(W.rev) ? 'landed' : 'lost';
      if (tree.has(W.rev)) C.landed++; else C.lost++;
    }
  }
  // the winner: the live leaf of highest (generation, rev); its _conflicts the other live leaves
  const liveLeaves = ls.filter((L) => !L._deleted).map((L) => L._rev);
  const order = (a, b) => gen(b) - gen(a) || (a < b ? 1 : a > b ? -1 : 0);
  liveLeaves.sort(order);
  const g = await read('GET', `/${doc.db}/${enc(doc.id)}?conflicts=true`, JSONH);
  if (!liveLeaves.length) {
    if (ls.length && g.status !== 404) fail(`${where}: every leaf is deleted, yet GET answers ${g.status}`);
    return;
  }
  if (g.status !== 200) { fail(`GET ${where}?conflicts=true: ${g.status}`); return; }
  if (g.json._rev !== liveLeaves[0]) fail(`${where}: winner ${g.json._rev}, the tree's live leaves give ${liveLeaves[0]} (${liveLeaves})`);
  const conf = (g.json._conflicts || []).slice().sort(order);
  if (!util.isDeepStrictEqual(conf, liveLeaves.slice(1))) fail(`${where}: _conflicts ${JSON.stringify(conf)}, the tree gives ${JSON.stringify(liveLeaves.slice(1))}`);
  if (liveLeaves.length > 1) { C.conflictDocs++; C.conflictRevs += liveLeaves.length - 1; }
}

// Every acknowledged (or landed) write's change reached every follower of
// its database: a row for the document listing its revision or a later
// write's.
function checkChanges(f, db) {
  let missing = 0;
  for (const doc of docs.values()) {
    if (doc.db !== db) continue;
    const seen = f.seen.get(doc.id);
    let maxIdx = -1;
    if (seen) for (const r of seen) { const i = doc.revIdx.get(r); if (i !== undefined && i > maxIdx) maxIdx = i; }
    for (const W of doc.writes) {
      if (W.status !== 'ack' && W.status !== 'landed') continue;
      if (W.idx > maxIdx) {
        if (++missing <= 5) fail(`_changes follower of ${db}: never saw ${doc.id}@${W.rev} (${W.status}) nor a later revision of it (saw ${seen ? [...seen].slice(-3) : 'no row'})`);
      }
    }
    if (seen) for (const r of seen) if (!doc.revIdx.has(r)) fail(`_changes follower of ${db}: a row for ${doc.id} with ${r}, a revision the client never wrote`);
  }
  for (const id of f.seen.keys()) if (!docs.has(`${db}/${id}`)) fail(`_changes follower of ${db}: a row for ${id}, a document the client never wrote`);
  if (missing > 5) fail(`_changes follower of ${db}: ${missing} acknowledged writes missing in all`);
}

const existsType = (t) => t === 'created' || t === 'updated';
function dbuSettled(f) {
  for (const [dbn, c] of churn) {
    const a = f.rows.get(dbn) || [];
    if (c.ops.some((o) => o.status === 'ack' || o.status === 'landed')) {
      if (!a.length) return false;
      if (existsType(a[a.length - 1]) !== (c.state === 'exists')) return false;
    }
  }
  return STABLE.every((d) => (f.rows.get(d) || []).length > 0);
}
function checkDbUpdates(f, fi) {
  for (const [dbn, c] of churn) {
    const a = f.rows.get(dbn) || [];
    c.ops.forEach((o, i) => {
      if (o.status !== 'ack') return;
      // a row for it after the op was sent, of its type or a later op's
      const later = new Set(c.ops.slice(i).filter((x) => x.status === 'ack' || x.status === 'landed' || x.status === 'unknown').map((x) => x.type));
      const ok = a.slice(o.snap[fi]).some((t) => (existsType(t) ? later.has('created') : later.has('deleted')));
      if (!ok) fail(`_db_updates follower ${fi}: no row for ${o.type} ${dbn} (op ${i}) after it was sent (rows: ${a.slice(-4)})`);
    });
    if (c.ops.some((o) => o.status === 'ack' || o.status === 'landed')) {
      const last = a[a.length - 1];
      if (last === undefined || existsType(last) !== (c.state === 'exists')) fail(`_db_updates follower ${fi}: last row for ${dbn} is ${last}, the database ${c.state === 'exists' ? 'exists' : 'is gone'}`);
    }
  }
  for (const d of STABLE) if (!(f.rows.get(d) || []).length) fail(`_db_updates follower ${fi}: no row for ${d}`);
}

// SOAK_SABOTAGE: lose an acknowledged write and add a stranger, through
// the API, so that a run shows its checks catch both.
async function sabotage() {
  const d = [...docs.values()].find((x) => x.kind === 'linear' && x.rev !== null && !x.deleted && x.writes.every((W) => W.status === 'ack'));
  const r = await read('POST', `/${d.db}/_purge`, JSONH, { [d.id]: [d.rev] });
  const w = await call('PUT', `/${STABLE[0]}/stranger`, { x: 1 });
  console.log(`soak: SOAK_SABOTAGE: purged ${d.db}/${d.id}@${d.rev} (${r.status}), wrote ${STABLE[0]}/stranger (${w.status}); this run must fail`);
}

// ---- the run -------------------------------------------------------------------------------

let bailing = false;
function bail(why) {
  if (bailing) return;
  bailing = true;
  console.log(`FAIL soak (seed ${SEED}): ${why}`);
  if (S.srv) { try { process.kill(S.srv.pid, 'SIGKILL'); } catch (e) { /* gone */ } }
  if (S.dataDir && !process.env.SOAK_KEEP) fs.rmSync(S.dataDir, { recursive: true, force: true });
  process.exit(1);
}

async function main() {
  const t00 = Date.now();
  console.log(`soak: seed ${SEED} (SOAK_SEED=${SEED} reproduces the plan), ${SECONDS} s of load, ${KILLS} kills, ${BIG} × 10 MB attachments${SANITIZED ? ', sanitized build' : ''}`);
  S.dataDir = fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || os.tmpdir(), 'soak-'));
  S.port = await freePort();
  await startServer();
  for (const d of STABLE) {
    const r = await call('PUT', `/${d}`);
    if (r.status !== 201) throw new Error(`PUT /${d}: ${r.status} ${r.text}`);
  }
  for (let i = 0; i < 2; i++) dbuFollowers.push(follower('_db_updates', '/_db_updates', dbuRow));
  for (const d of STABLE) for (let i = 0; i < 2; i++) changesFollowers.push(Object.assign(follower('_changes', `/${d}/_changes?style=all_docs`, changesRow), { db: d }));

  const t0 = Date.now();
  const stopAt = t0 + SECONDS * 1000;
  const krng = rngFor('killer');
  const bigAt = Array.from({ length: BIG }, () => t0 + (0.05 + 0.85 * krng()) * (stopAt - t0)).sort((a, b) => a - b);
  const scale = SANITIZED ? 2 : 1;
  const workers = [
    docWorker('w0', 'soak-a', { prefix: 'w0-', mix: { att: 0.04, create: 0.3, update: 0.4, del: 0.08 }, pace: [10 * scale, 40 * scale], maxDocs: 600 }),
    docWorker('w1', 'soak-a', { prefix: 'w1-', mix: { att: 0.04, create: 0.3, update: 0.4, del: 0.08 }, pace: [10 * scale, 40 * scale], maxDocs: 600 }),
    docWorker('w2', 'soak-b', { prefix: 'w2-', mix: { att: 0.04, create: 0.3, update: 0.4, del: 0.08 }, pace: [10 * scale, 40 * scale], maxDocs: 600 }),
    docWorker('att', 'soak-b', { prefix: 'att-', mix: { att: 0.7, create: 0.1, update: 0.15, del: 0.03 }, pace: [40 * scale, 160 * scale], maxDocs: 60, bigAt }),
    conflictWorker('nef', 'soak-a', { prefix: 'c-', pace: [10 * scale, 40 * scale], maxDocs: 300 }),
    churnWorker('churn', { pace: [30 * scale, 120 * scale] }),
  ];
  const progress = setInterval(() => console.log(`soak: ${Math.round((Date.now() - t0) / 1000)} s: ${C.kills} kills, ${C.acked} acknowledged, ${C.unknown} unknown, ${C.changesRows} change rows, ${C.dbuRows} db_updates rows`), 30000);
  const killing = killer(krng, t0, stopAt);
  await sleep(Math.max(0, stopAt - Date.now()));
  await killing;
  loadOver = true;
  await Promise.all(workers);
  clearInterval(progress);
  const tLoad = Date.now();
  console.log(`soak: load over after ${((tLoad - t0) / 1000).toFixed(0)} s; ${C.kills} kills; checking`);

  // the feeds catch up with the quiet server
  for (const f of changesFollowers) {
    const t1 = Date.now();
    for (;;) {
      const r = await read('GET', `/${f.db}`);
      if (f.last !== null && cmpSeq(f.last, r.json.update_seq) >= 0) break;
      if (Date.now() - t1 > SETTLE_MS) { fail(`_changes follower of ${f.db}: at ${f.last}, the database at ${r.json.update_seq} after ${SETTLE_MS / 1000} s`); break; }
      await sleep(100);
    }
  }
  for (const f of dbuFollowers) {
    const t1 = Date.now();
    while (!dbuSettled(f) && Date.now() - t1 < SETTLE_MS) await sleep(100);
  }
  await Promise.all([...changesFollowers, ...dbuFollowers].map((f) => f.close()));

  if (process.env.SOAK_SABOTAGE) await sabotage();
  // documents
  const all = [...docs.values()];
  await pool(all.filter((d) => d.kind === 'linear'), 6, checkLinear);
  await pool(all.filter((d) => d.kind === 'nef'), 6, checkNef);
  for (const db of STABLE) {
    const r = await read('GET', `/${db}/_all_docs`);
    if (r.status !== 200) { fail(`GET /${db}/_all_docs: ${r.status}`); continue; }
    for (const row of r.json.rows) {
      const d = docs.get(`${db}/${row.id}`);
      if (!d) fail(`${db}/_all_docs: ${row.id}, a document the client never wrote`);
    }
    const want = all.filter((d) => d.db === db && d.kind === 'linear' && d.rev !== null && !d.deleted).length;
    const got = r.json.rows.filter((row) => docs.get(`${db}/${row.id}`) && docs.get(`${db}/${row.id}`).kind === 'linear').length;
    if (want !== got) fail(`${db}/_all_docs: ${got} linear documents, the ledger has ${want} live`);
  }
  // databases
  const dbs = (await read('GET', '/_all_dbs')).json || [];
  for (const [dbn, c] of churn) {
    const r = await read('GET', `/${dbn}`);
    const exists = r.status === 200;
    if (exists !== (c.state === 'exists')) fail(`/${dbn}: ${exists ? 'exists' : 'is gone'}, its last settled op says ${c.state}`);
    if (dbs.includes(dbn) !== exists) fail(`/_all_dbs ${dbs.includes(dbn) ? 'lists' : 'misses'} ${dbn}, GET /${dbn} answers ${r.status}`);
  }
  for (const d of dbs) if (!STABLE.includes(d) && !CHURN.includes(d) && !d.startsWith('_')) fail(`/_all_dbs lists ${d}, a database the client never created`);
  // feeds
  changesFollowers.forEach((f) => checkChanges(f, f.db));
  dbuFollowers.forEach((f, i) => checkDbUpdates(f, i));

  // stop it, then the offline checker over its data
  S.stopping = true;
  S.srv.intended = true;
  await S.srv.stop().catch((e) => fail(`the server did not stop cleanly: ${e.message.slice(0, 2000)}`));
  const bin = process.env.DIVAN_BIN ? path.resolve(process.env.DIVAN_BIN) : path.join(ROOT, 'divan');
  const ck = spawnSync(bin, ['check', '--data', S.dataDir], { encoding: 'utf8', timeout: 600000 });
  const ckOut = `${ck.stdout || ''}${ck.stderr || ''}`.trim();
  let checkResult;
  if (/unknown command/.test(ckOut)) {
    checkResult = 'missing: this divan has no `check` command';
    fail(`divan check --data DIR: this divan has no "check" command yet (${ckOut.split('\n')[0]}) — the layout was not verified`);
  } else if (ck.status !== 0) {
    checkResult = `failed (exit ${ck.status ?? ck.signal})`;
    fail(`divan check --data DIR exited ${ck.status ?? ck.signal}:\n${ckOut.slice(-4000)}`);
  } else checkResult = 'ok' + (ckOut ? ` (${ckOut.split('\n').slice(-1)[0].slice(0, 200)})` : '');

  const unsettled = C.unknown - C.landed - C.lost;
  const lines = [
    `seed ${SEED}; ${SECONDS} s of load, checks ${((Date.now() - tLoad) / 1000).toFixed(0)} s, all ${((Date.now() - t00) / 1000).toFixed(0)} s`,
    `kills survived: ${C.kills} (restarts ${C.restarts}); requests ${C.requests}, 503s retried ${C.retries503}`,
    `writes: acknowledged ${C.acked} (new_edits=false ${C.nefWrites}, _bulk_docs batches ${C.bulk}), unknown ${C.unknown} (landed ${C.landed}, lost ${C.lost}${unsettled ? `, unsettled ${unsettled}` : ''}), verified ${C.verified}`,
    `docs: ${C.docs} live, ${C.deleted} deleted; conflicts: ${C.conflictDocs} docs with ${C.conflictRevs} conflicting revs`,
    `attachments: ${C.atts} written, ${(C.attBytes / MB).toFixed(1)} MB (${C.bigAtts} of 10 MB); ${C.attsVerified} read back whole, ${(C.attBytesVerified / MB).toFixed(1)} MB`,
    `feeds: ${C.changesRows} _changes rows (${changesFollowers.length} followers), ${C.dbuRows} _db_updates rows (${dbuFollowers.length}), ${C.reconnects} reconnects`,
    `databases: ${C.dbCreated} created, ${C.dbDeleted} deleted, ${C.dbUnknown} unknown outcomes`,
    `divan check: ${checkResult}`,
  ];
  console.log('soak: ' + lines.join('\nsoak: '));
  if (!process.env.SOAK_KEEP) fs.rmSync(S.dataDir, { recursive: true, force: true });
  else console.log(`soak: data kept in ${S.dataDir}`);
  if (failures.length) {
    console.log(`FAIL soak (seed ${SEED}): ${failures.length} failures:`);
    for (const f of failures.slice(0, 60)) console.log('  - ' + f.split('\n').join('\n    '));
    if (failures.length > 60) console.log(`  … and ${failures.length - 60} more`);
    if (S.logs.length && failures.some((f) => !f.startsWith('divan check'))) console.log(`the last killed server's log ended:\n${S.logs[S.logs.length - 1].slice(-1500)}`);
    process.exit(1);
  }
  console.log('soak: ok');
  process.exit(0);
}

setTimeout(() => bail(`still running after ${DEADLINE_S} s`), DEADLINE_S * 1000).unref();
process.on('uncaughtException', (e) => bail(String(e && e.stack || e)));
process.on('unhandledRejection', (e) => bail(String(e && e.stack || e)));
main();
