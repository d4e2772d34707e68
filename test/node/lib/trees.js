// trees.js — what the replication suites share: build a source database
// with every kind of revision tree (conflicts, deleted leaves, disjoint
// roots, deletions, attachments inline and > 100 KB, a design doc, a
// _local doc that must not travel), and compare two databases, on any two
// CouchDB-compatible servers, revision tree by revision tree.
//
//   const T = require('../lib/trees');
//   const built = await T.buildSource(base, 'src', { n: 1000 });
//   const res = await T.replicate(base, { source: 'src', target: 'tgt', create_target: true });
//   await T.compareDbs(base, 'src', base, 'tgt');      // ids, every tree, doc counts
//   await T.compareAttachments(base, 'src', base, 'tgt', built.attIds);
//
// A tree is every leaf of a document (GET /db/id?open_revs=all&revs=true,
// Accept: application/json), each as { rev, deleted, revisions, body } —
// body is every field but _id/_rev/_revisions/_deleted/_conflicts, with the
// attachment stubs reduced to content_type, length, digest and revpos
// (opts.digest/revpos false leave those out: PouchDB recomputes digests of
// attachments divan keeps gzip-encoded and resets revpos) — sorted by rev.
// The ids compared are every id of the source's _changes?style=all_docs,
// live and deleted, so a missing tombstone or an extra revision fails.
'use strict';
const crypto = require('crypto');
const http = require('http');
const { send, basicAuth, eq, ok, assert } = require('./t');

// Keep-alive sockets for the comparisons (tens of thousands of GETs).
let agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
function resetAgent() { agent.destroy(); agent = new http.Agent({ keepAlive: true, maxSockets: 16 }); }

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
const rev = (gen) => gen + '-' + crypto.randomBytes(16).toString('hex');
const hex = () => crypto.randomBytes(16).toString('hex');
const pad = (i, n = 6) => String(i).padStart(n, '0');
const md5 = (b) => crypto.createHash('md5').update(b).digest('hex');

// One request (body: object → JSON, string/Buffer as is) to url, the
// credentials in it as Basic auth unless headers has an Authorization;
// { status, headers, text, json, body }. keepAlive: on the shared agent.
function jr(method, url, body, headers = {}, { timeoutMs = 120000, keepAlive = false } = {}) {
  const u = new URL(url);
  const h = Object.assign({}, headers);
  if (u.username && !Object.keys(h).some((k) => k.toLowerCase() === 'authorization')) h.Authorization = basicAuth(u);
  let data = null;
  if (body !== undefined && body !== null) {
    if (Buffer.isBuffer(body) || typeof body === 'string') data = body;
    else { data = JSON.stringify(body); h['Content-Type'] = h['Content-Type'] || 'application/json'; }
    h['Content-Length'] = Buffer.byteLength(data);
  }
  const opts = { method, hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers: h };
  if (keepAlive) opts.agent = agent;
  return send(opts, data, timeoutMs);
}

// POST /_replicate on the server at base: { status, json, text, ms }.
async function replicate(base, body, timeoutMs = 120000) {
  const t0 = Date.now();
  const r = await jr('POST', base + '/_replicate', body, {}, { timeoutMs });
  r.ms = Date.now() - t0;
  return r;
}

// The statistics of a one-shot replication's answer: history[0] (CouchDB),
// or the answer itself for replications that keep no checkpoint history
// (CouchDB answers doc_ids replications with the counters at top level).
function stats(res) {
  if (res && Array.isArray(res.history) && res.history.length) return res.history[0];
  return res || {};
}

// Run fn over items with at most width calls in flight; results in order.
async function pool(items, width, fn) {
  const out = new Array(items.length);
  let next = 0;
  async function worker() {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return out;
}

// Poll fn until it resolves truthy (its value is returned), or fail after
// ms with what was waited for and the last value or error seen.
async function waitFor(what, fn, ms = 30000, every = 100) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    if (Date.now() > end) break;
    await sleep(every);
  }
  const shown = last instanceof Error ? last.stack || String(last) : JSON.stringify(last);
  throw new Error(`timed out after ${ms / 1000} s waiting for ${what} (last: ${String(shown).slice(0, 1500)})`);
}

// GET /db (200), the info object.
async function dbInfo(base, db) {
  const r = await jr('GET', `${base}/${encodeURIComponent(db)}`);
  eq(r.status, 200, `GET /${db}: ${r.status} ${r.text}`);
  return r.json;
}

// Every id db has ever held (live and deleted, design docs too) from
// _changes?style=all_docs, sorted, with the number of leaves and last_seq.
async function changesOf(base, db) {
  const r = await jr('GET', `${base}/${encodeURIComponent(db)}/_changes?style=all_docs`, null, {}, { timeoutMs: 120000 });
  eq(r.status, 200, `GET /${db}/_changes: ${r.status} ${r.text.slice(0, 300)}`);
  const ids = r.json.results.map((c) => c.id).sort();
  const leaves = r.json.results.reduce((n, c) => n + c.changes.length, 0);
  return { ids, leaves, lastSeq: r.json.last_seq, results: r.json.results };
}

// One leaf in a comparable form.
function leafOf(doc, opts = {}) {
  const body = {};
  for (const k of Object.keys(doc).sort()) {
    if (['_id', '_rev', '_revisions', '_deleted', '_conflicts', '_deleted_conflicts', '_revs_info', '_local_seq'].includes(k)) continue;
    if (k === '_attachments') {
      const atts = {};
      for (const name of Object.keys(doc[k]).sort()) {
        const a = doc[k][name];
        const s = { content_type: a.content_type, length: a.length };
        if (opts.digest !== false) s.digest = a.digest;
        if (opts.revpos !== false) s.revpos = a.revpos;
        atts[name] = s;
      }
      body[k] = atts;
    } else body[k] = doc[k];
  }
  const out = { rev: doc._rev, deleted: !!doc._deleted, revisions: doc._revisions };
  // PouchDB keeps no body for deleted leaves: opts.deletedBody false drops it.
  if (!(doc._deleted && opts.deletedBody === false)) out.body = body;
  return out;
}

// Every leaf of id in db on the server at base, comparable and sorted.
async function tree(base, db, id, opts = {}) {
  const p = `${base}/${encodeURIComponent(db)}/${encodeURIComponent(id)}?open_revs=all&revs=true`;
  const r = await jr('GET', p, null, { Accept: 'application/json' }, { keepAlive: true, timeoutMs: 60000 });
  eq(r.status, 200, `GET ${db}/${id}?open_revs=all&revs=true: ${r.status} ${r.text.slice(0, 300)}`);
  ok(Array.isArray(r.json), `${db}/${id}: open_revs=all answers an array: ${r.text.slice(0, 300)}`);
  return r.json.map((x) => {
    ok(x.ok, `${db}/${id}: a leaf without ok: ${JSON.stringify(x).slice(0, 300)}`);
    return leafOf(x.ok, opts);
  }).sort((a, b) => (a.rev < b.rev ? -1 : a.rev > b.rev ? 1 : 0));
}

// The first few differences between two sorted id lists, for messages.
function idDiff(a, b) {
  const sa = new Set(a), sb = new Set(b);
  const onlyA = a.filter((x) => !sb.has(x)), onlyB = b.filter((x) => !sa.has(x));
  return `${onlyA.length} only in the first (${onlyA.slice(0, 5).join(', ')}), ${onlyB.length} only in the second (${onlyB.slice(0, 5).join(', ')})`;
}

// db on a against db on b: the same ids (live and deleted), the same tree
// for each, the same doc_count and doc_del_count. opts: as tree(), plus
// ids (compare only these), counts false (skip the info check).
// Resolves { ids, leaves } of a.
async function compareDbs(a, adb, b, bdb, opts = {}) {
  const ca = await changesOf(a, adb);
  const cb = await changesOf(b, bdb);
  let ids = ca.ids;
  if (opts.ids) ids = opts.ids.slice().sort();
  else assert.deepStrictEqual(cb.ids.length === ca.ids.length && cb.ids.every((x, i) => x === ca.ids[i]), true,
    `${adb} vs ${bdb}: different ids: ${idDiff(ca.ids, cb.ids)}`);
  const bad = [];
  await pool(ids, 16, async (id) => {
    const [ta, tb] = await Promise.all([tree(a, adb, id, opts), tree(b, bdb, id, opts)]);
    try { eq(tb, ta); } catch (e) { bad.push(`${id}:\n  ${adb}: ${JSON.stringify(ta).slice(0, 600)}\n  ${bdb}: ${JSON.stringify(tb).slice(0, 600)}`); }
  });
  ok(bad.length === 0, `${adb} vs ${bdb}: ${bad.length} of ${ids.length} trees differ, e.g.\n${bad.slice(0, 3).join('\n')}`);
  if (opts.counts !== false && !opts.ids) {
    const [ia, ib] = await Promise.all([dbInfo(a, adb), dbInfo(b, bdb)]);
    eq(ib.doc_count, ia.doc_count, `${adb} vs ${bdb}: doc_count`);
    // pouchdb-server has no doc_del_count
    if (ia.doc_del_count !== undefined && ib.doc_del_count !== undefined) eq(ib.doc_del_count, ia.doc_del_count, `${adb} vs ${bdb}: doc_del_count`);
  }
  return { ids: ids.length, leaves: ca.leaves };
}

// The winner's attachment bytes of each id agree on a and b (and with
// want: id → { name: Buffer } when given).
async function compareAttachments(a, adb, b, bdb, ids, want) {
  for (const id of ids) {
    const da = (await jr('GET', `${a}/${encodeURIComponent(adb)}/${encodeURIComponent(id)}`)).json;
    ok(da && da._attachments, `${adb}/${id} has attachments: ${JSON.stringify(da).slice(0, 300)}`);
    for (const name of Object.keys(da._attachments)) {
      const p = `/${encodeURIComponent(id)}/${name.split('/').map(encodeURIComponent).join('/')}`;
      const [ra, rb] = await Promise.all([jr('GET', `${a}/${encodeURIComponent(adb)}${p}`), jr('GET', `${b}/${encodeURIComponent(bdb)}${p}`)]);
      eq([ra.status, rb.status], [200, 200], `GET ${p} on both sides: ${ra.status} ${rb.status} ${rb.text.slice(0, 200)}`);
      const gz = (x) => x.length > 2 && x[0] === 0x1f && x[1] === 0x8b;
      const hint = gz(rb.body) && !gz(ra.body) ? ` — ${bdb} holds gzip-encoded bytes: the attachment was sent encoded and stored without decoding` : '';
      ok(ra.body.equals(rb.body), `${id}/${name}: ${ra.body.length} bytes (md5 ${md5(ra.body)}) on ${adb}, ${rb.body.length} (md5 ${md5(rb.body)}) on ${bdb}${hint}`);
      if (want && want[id] && want[id][name]) ok(rb.body.equals(want[id][name]), `${id}/${name}: the bytes written`);
    }
  }
}

// ------------------------------------------------------------ building

async function bulk(base, db, docs, newEdits = true) {
  const body = { docs };
  if (!newEdits) body.new_edits = false;
  const r = await jr('POST', `${base}/${encodeURIComponent(db)}/_bulk_docs`, body, {}, { timeoutMs: 120000 });
  eq(r.status, 201, `_bulk_docs on ${db}: ${r.status} ${r.text.slice(0, 300)}`);
  const errs = r.json.filter((x) => x.error);
  eq(errs, [], `_bulk_docs on ${db}: per-doc errors`);
  return r.json;
}

// n plain docs d000000… in _bulk_docs batches of 1000 (bodyBytes of
// padding each); resolves id → rev.
async function plainDocs(base, db, n, { prefix = 'd', bodyBytes = 0, from = 0 } = {}) {
  const revs = new Map();
  const padding = bodyBytes ? 'x'.repeat(bodyBytes) : undefined;
  for (let k = from; k < from + n; k += 1000) {
    const docs = [];
    for (let i = k; i < Math.min(from + n, k + 1000); i++) {
      const d = { _id: prefix + pad(i), i, s: 'doc ' + i, type: i % 3 === 0 ? 'fizz' : 'plain' };
      if (padding) d.pad = padding;
      docs.push(d);
    }
    for (const row of await bulk(base, db, docs)) revs.set(row.id, row.rev);
  }
  return revs;
}

// Text that compresses (divan stores text/plain gzip'd, as CouchDB does).
const text = (n, tag) => {
  let s = '';
  for (let i = 0; s.length < n; i++) s += `${tag} line ${i}: the quick brown fox — ünïcödé ✓\n`;
  return Buffer.from(s.slice(0, n));
};

// A source database of n plain docs plus every kind of tree: created
// (PUT, 201), then
//   - every 10th plain doc updated once (generation 2), every 37th deleted
//     (some deleted with a body), every 50th given two conflicting
//     branches written with new_edits=false (every other one of those a
//     deleted branch), 20 docs with a disjoint second root;
//   - attachments: text/plain and image/png inline (base64), one of 150 KB,
//     an attachment added in a second revision (the first keeps revpos 1),
//     a doc with an attachment id and name in unicode;
//   - a design doc and a _local doc (never replicated);
//   - an id with a slash, unicode and '+'.
// Resolves { leaves, ids, attIds, atts: id → { name: Buffer }, revs }.
async function buildSource(base, db, { n = 1000, prefix = 'd', bodyBytes = 0, attachments = true, create = true } = {}) {
  if (create) {
    const c = await jr('PUT', `${base}/${encodeURIComponent(db)}`);
    eq(c.status, 201, `PUT /${db}: ${c.status} ${c.text}`);
  }
  const revs = await plainDocs(base, db, n, { prefix, bodyBytes });
  // updates, then deletions
  const upd = [];
  for (let i = 0; i < n; i += 10) upd.push({ _id: prefix + pad(i), _rev: revs.get(prefix + pad(i)), i, s: 'updated', v: 2 });
  for (const row of await bulk(base, db, upd)) revs.set(row.id, row.rev);
  const del = [];
  for (let i = 5; i < n; i += 37) del.push(Object.assign({ _id: prefix + pad(i), _rev: revs.get(prefix + pad(i)), _deleted: true }, i % 2 ? { reason: 'gone' } : {}));
  for (const row of await bulk(base, db, del)) revs.set(row.id, row.rev);
  // conflicts: two branches off the first revision of every 50th doc (i ≡ 7)
  const branches = [];
  for (let i = 7; i < n; i += 50) {
    const id = prefix + pad(i);
    const first = revs.get(id);
    if (!first.startsWith('1-')) continue;
    const root = first.split('-')[1];
    const a = hex(), b = hex(), c = hex();
    branches.push({ _id: id, _rev: '2-' + a, _revisions: { start: 2, ids: [a, root] }, i, branch: 'a' });
    const bDoc = { _id: id, _rev: '3-' + c, _revisions: { start: 3, ids: [c, b, root] }, i, branch: 'b' };
    if (i % 100 === 57) { delete bDoc.i; delete bDoc.branch; bDoc._deleted = true; }
    branches.push(bDoc);
  }
  // disjoint roots: 20 docs written with two unrelated histories
  for (let j = 0; j < 20; j++) {
    const id = `island-${pad(j, 3)}`;
    const x = [hex(), hex()], y = [hex(), hex(), hex()];
    branches.push({ _id: id, _rev: '2-' + x[0], _revisions: { start: 2, ids: x }, j, root: 'x' });
    branches.push({ _id: id, _rev: '3-' + y[0], _revisions: { start: 3, ids: y }, j, root: 'y', nested: { a: [1, 2, { b: null }], t: true } });
  }
  await bulk(base, db, branches, false);
  const atts = {};
  if (attachments) {
    const big = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), crypto.randomBytes(150 * 1024 - 8)]);
    const small = crypto.randomBytes(3000);
    const note = text(5000, 'note');
    atts['att-big'] = { 'big.png': big };
    atts['att-text'] = { 'note.txt': note };
    atts['att-multi'] = { 'a.bin': small, 'b.txt': text(700, 'b'), 'ünï cödé.json': Buffer.from(JSON.stringify({ k: [1, 2, 3] })) };
    const b64 = (buf) => buf.toString('base64');
    const docs = [
      { _id: 'att-big', kind: 'big', _attachments: { 'big.png': { content_type: 'image/png', data: b64(big) } } },
      { _id: 'att-text', kind: 'text', _attachments: { 'note.txt': { content_type: 'text/plain', data: b64(note) } } },
      { _id: 'att-multi', kind: 'multi', _attachments: {
        'a.bin': { content_type: 'application/octet-stream', data: b64(small) },
        'b.txt': { content_type: 'text/plain', data: b64(atts['att-multi']['b.txt']) },
        'ünï cödé.json': { content_type: 'application/json', data: b64(atts['att-multi']['ünï cödé.json']) },
      } },
    ];
    const rows = await bulk(base, db, docs);
    // a second revision of att-text adds one attachment, keeps note.txt as a stub (revpos 1)
    const cur = (await jr('GET', `${base}/${encodeURIComponent(db)}/att-text`)).json;
    const added = crypto.randomBytes(2000);
    cur._attachments['added.bin'] = { content_type: 'application/octet-stream', data: b64(added) };
    cur.kind = 'text v2';
    const u = await jr('PUT', `${base}/${encodeURIComponent(db)}/att-text`, cur);
    eq(u.status, 201, `PUT att-text v2: ${u.status} ${u.text}`);
    atts['att-text']['added.bin'] = added;
    for (const r of rows) revs.set(r.id, r.rev);
    revs.set('att-text', u.json.rev);
  }
  const extra = [
    { _id: '_design/app', language: 'javascript', note: 'a design doc travels with an admin replication' },
    { _id: 'ünï/code +%', s: 'odd id' },
  ];
  for (const row of await bulk(base, db, extra)) revs.set(row.id, row.rev);
  const l = await jr('PUT', `${base}/${encodeURIComponent(db)}/_local/not-replicated`, { secret: 'stays here' });
  eq(l.status, 201, `PUT _local doc: ${l.status} ${l.text}`);
  const ch = await changesOf(base, db);
  return { leaves: ch.leaves, ids: ch.ids.length, attIds: Object.keys(atts), atts, revs };
}

// Some edits on top of a built source: k docs updated, 3 deleted, one new
// conflict (new_edits=false), 5 new docs. Resolves the number of leaves
// these edits created or changed (what a replication must move).
async function mutate(base, db, { prefix = 'd', n = 1000, tag = 'm' } = {}) {
  const pick = [1, 2, 3, 4, 11, 12].map((i) => prefix + pad(i)).filter((id) => id !== undefined);
  const docs = [];
  for (const id of pick) {
    const cur = await jr('GET', `${base}/${encodeURIComponent(db)}/${encodeURIComponent(id)}`);
    if (cur.status !== 200) continue;
    docs.push(cur.json);
  }
  const upd = docs.slice(0, 3).map((d) => Object.assign({}, d, { edited: tag }));
  const dels = docs.slice(3, 6).map((d) => ({ _id: d._id, _rev: d._rev, _deleted: true }));
  await bulk(base, db, upd.concat(dels));
  const c = docs[0];
  const gen = Number(c._rev.split('-')[0]);
  const x = hex();
  await bulk(base, db, [{ _id: c._id, _rev: `${gen + 1}-${x}`, _revisions: { start: gen + 1, ids: [x, c._rev.split('-')[1]] }, conflict: tag }], false);
  const fresh = [];
  for (let j = 0; j < 5; j++) fresh.push({ _id: `${tag}-new-${j}`, j });
  await bulk(base, db, fresh);
  return upd.length + dels.length + 1 + fresh.length;
}

module.exports = {
  jr, replicate, stats, pool, waitFor, sleep, dbInfo, changesOf, leafOf, tree, compareDbs, compareAttachments,
  bulk, plainDocs, buildSource, mutate, text, rev, hex, pad, md5, resetAgent,
};
