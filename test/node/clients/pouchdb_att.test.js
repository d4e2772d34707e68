// pouchdb_att.test.js — PouchDB (the real npm client) replicates documents
// with attachments to and from a real `divan serve`, and afterwards every
// attachment's bytes and digest agree on both sides.
//
// A local PouchDB (memory adapter) holds binary (random bytes, image/png),
// text (text/plain, which divan stores gzip-encoded as CouchDB does), empty,
// 2 MB and oddly named attachments. It pushes them to divan, then the two
// trade edits both ways: an update that keeps its attachment as a stub
// (made in PouchDB and on divan), an attachment added with a standalone
// PUT and one inline as base64, attachments deleted on either side, and
// a conflict whose two branches carry different attachment bytes. A second
// local PouchDB (leveldb adapter, in a temp dir) then pulls everything
// from divan. After each step every leaf of every document is compared:
// the attachment names, content types, lengths and revpos, the bytes
// (divan's GET /db/doc/att?rev= against PouchDB's getAttachment, and
// against what was written), and the digests — equal to PouchDB's MD5 of
// the bytes, except that for an attachment divan keeps gzip-encoded the
// digest is the MD5 of the encoded bytes (CouchDB's rule), which is checked
// with Accept-Encoding: gzip. Finally the replication protocol pieces
// directly: PouchDB 9 pulls with POST _bulk_get?revs=true&latest=true and
// then GET /db/doc/att?rev= per attachment (checked on the recorded
// requests), and _revs_diff, _bulk_get?revs=true&attachments=true (raw and
// through PouchDB's bulkGet) must give the same bytes.
//
//   DIVAN_BIN=build/cc/divan node test/node/clients/pouchdb_att.test.js
//   DIVAN_URL=http://127.0.0.1:5984 node ...   (an already running server)
//   ATT_LAX=1 DIVAN_URL=http://127.0.0.1:5985 node ...   against pouchdb-server
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const crypto = require('crypto');
const PouchDB = require('pouchdb').plugin(require('pouchdb-adapter-memory'));
const { test, req, send, basicAuth, eq, ok, assert, leaves, pouchLeaves } = require('../lib/t');
const { runFile } = require('../lib/divan');

let srv = null;   // the divan under test (null with DIVAN_URL)
let base = '';    // its URL with credentials, no trailing slash
let local = null; // PouchDB, memory adapter: the first replica
let second = null; // PouchDB, leveldb adapter: pulls from divan at the end
let levelDir = null;
const DB = 'atts';
// ATT_LAX=1: the server is pouchdb-server (to check this file itself), so
// skip what only CouchDB does: gzip-stored text/plain, bare {stub: true}.
const STRICT = process.env.ATT_LAX !== '1';
const requests = []; // "METHOD path" of every request PouchDB's remote db made

const md5 = (b) => crypto.createHash('md5').update(b).digest();
const digestOf = (b) => 'md5-' + md5(b).toString('base64');
const rand = (n) => crypto.randomBytes(n);
// A PNG signature in front of random bytes: a binary, incompressible image/png.
const png = (n) => Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), rand(n - 8)]);
// Compressible text (divan gzips text/plain as CouchDB does).
const text = (n, tag) => {
  let s = '';
  for (let i = 0; s.length < n; i++) s += `${tag} line ${i}: the quick brown fox jumps over the lazy dog — ünïcödé ✓\n`;
  return Buffer.from(s.slice(0, n));
};

// What the winning revision of each document should hold: id → { name: { type, data } }.
const model = new Map();

// The remote database as a PouchDB http db, every request recorded.
function remoteDb() {
  return new PouchDB(base + '/' + DB, {
    fetch: (url, opts) => {
      const u = new URL(url);
      requests.push(`${(opts && opts.method) || 'GET'} ${u.pathname}${u.search}`);
      return PouchDB.fetch(url, opts);
    },
  });
}

// A raw request (body: a Buffer, sent with its length) whose answer is kept
// as bytes too: { status, headers, body }.
function bin(method, p, headers = {}, body) {
  const u = new URL(base + p);
  const h = Object.assign(u.username ? { Authorization: basicAuth(u) } : {}, headers);
  if (body !== undefined) h['Content-Length'] = body.length;
  return send({ method, hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers: h }, body, 30000);
}
const jreq = (method, p, body, headers) => req(method, base + p, body, headers);
const attPath = (id, name) => '/' + DB + '/' + encodeURIComponent(id) + '/' + name.split('/').map(encodeURIComponent).join('/');

// Every leaf of id on divan, with attachment stubs and encoding info.
const divanLeaves = (id) => leaves(base, DB, id, '&att_encoding_info=true');

// The bytes of one attachment of one revision on divan, checked against its
// stub: identity bytes without Accept-Encoding; for a gzip-stored one also
// the encoded bytes, whose MD5 is the digest and whose length is encoded_length.
async function divanAtt(id, rev, name, stub) {
  const p = attPath(id, name) + '?rev=' + rev;
  const r = await bin('GET', p);
  eq(r.status, 200, `GET ${p}: ${r.status} ${r.body.toString().slice(0, 300)}`);
  ok(!r.headers['content-encoding'] || r.headers['content-encoding'] === 'identity', `GET ${p} without Accept-Encoding came encoded: ${r.headers['content-encoding']}`);
  eq(r.body.length, stub.length, `${p}: body length vs stub length`);
  eq(r.headers['content-type'] && r.headers['content-type'].split(';')[0], stub.content_type.split(';')[0], `${p}: Content-Type`);
  if (stub.encoding === 'gzip') {
    const g = await bin('GET', p, { 'Accept-Encoding': 'gzip' });
    eq(g.status, 200, `GET ${p} (gzip): ${g.status}`);
    eq(g.headers['content-encoding'], 'gzip', `${p}: a gzip-stored attachment is sent encoded when asked`);
    eq(g.body.length, stub.encoded_length, `${p}: encoded body length vs encoded_length`);
    eq(zlib.gunzipSync(g.body), r.body, `${p}: gunzip(encoded) = identity bytes`);
    eq(stub.digest, digestOf(g.body), `${p}: the digest of a gzip-stored attachment is the MD5 of its encoded bytes`);
  } else {
    eq(stub.digest, digestOf(r.body), `${p}: digest = MD5 of the bytes (stub ${JSON.stringify(stub)})`);
  }
  return r.body;
}

// One document on divan and in pdb: the same leaves, the same attachments
// (names, types, lengths, revpos, bytes, digests); the winner holds model's.
async function compareDoc(pdb, id) {
  const [d, p] = await Promise.all([divanLeaves(id), pouchLeaves(pdb, id)]);
  eq(d.map((l) => [l._rev, !!l._deleted]), p.map((l) => [l._rev, !!l._deleted]), `${id}: leaves`);
  for (let i = 0; i < d.length; i++) {
    const dl = d[i], pl = p[i];
    if (dl._deleted) continue;
    const da = dl._attachments || {}, pa = pl._attachments || {};
    eq(Object.keys(da).sort(), Object.keys(pa).sort(), `${id}@${dl._rev}: attachment names`);
    for (const name of Object.keys(da)) {
      const ds = da[name], ps = pa[name];
      ok(ds.stub && ps.stub, `${id}@${dl._rev}/${name}: stubs ${JSON.stringify(ds)} ${JSON.stringify(ps)}`);
      eq([ds.content_type, ds.length], [ps.content_type, ps.length], `${id}@${dl._rev}/${name}: content_type, length (divan ${JSON.stringify(ds)}, pouch ${JSON.stringify(ps)})`);
      // revpos is not compared across the sides: PouchDB's own adapters
      // set it to the writing revision for every attachment sent with data
      // (as a replication sends them), CouchDB keeps the revpos it is given.
      const gen = Number(dl._rev.split('-')[0]);
      ok(Number.isInteger(ds.revpos) && ds.revpos >= 1 && ds.revpos <= gen, `${id}@${dl._rev}/${name}: divan revpos ${ds.revpos}`);
      const dBytes = await divanAtt(id, dl._rev, name, ds);
      const pBytes = await pdb.getAttachment(id, name, { rev: pl._rev });
      ok(dBytes.equals(pBytes), `${id}@${dl._rev}/${name}: divan's ${dBytes.length} bytes differ from PouchDB's ${pBytes.length}`);
      // PouchDB's digest is the MD5 of the identity bytes; divan's is the
      // same unless it keeps the attachment gzip-encoded (checked above).
      eq(ps.digest, digestOf(pBytes), `${id}@${dl._rev}/${name}: PouchDB digest`);
      if (ds.encoding !== 'gzip') eq(ds.digest, ps.digest, `${id}@${dl._rev}/${name}: the same digest on both sides`);
    }
  }
  // The winner against what was written.
  const want = model.get(id);
  const dw = JSON.parse((await jreq('GET', `/${DB}/${encodeURIComponent(id)}`)).text);
  const pw = await pdb.get(id);
  eq(dw._rev, pw._rev, `${id}: winner`);
  if (want) {
    eq(Object.keys(dw._attachments || {}).sort(), Object.keys(want).sort(), `${id}: the winner's attachments are the ones written`);
    for (const [name, w] of Object.entries(want)) {
      eq(dw._attachments[name].content_type, w.type, `${id}/${name}: content_type`);
      const b = await pdb.getAttachment(id, name);
      ok(b.equals(w.data), `${id}/${name}: PouchDB's winner bytes are the ones written`);
      const r = await bin('GET', attPath(id, name));
      eq(r.status, 200, `GET ${attPath(id, name)}: ${r.status}`);
      ok(r.body.equals(w.data), `${id}/${name}: divan's winner bytes are the ones written (${r.body.length} vs ${w.data.length})`);
    }
  }
}

async function compareAll(pdb) {
  const ids = (await jreq('GET', `/${DB}/_all_docs`)).json.rows.map((r) => r.id);
  eq(ids, (await pdb.allDocs()).rows.map((r) => r.id), 'the same live ids on both sides');
  for (const id of ids) await compareDoc(pdb, id);
  return ids.length;
}

async function replicate(from, to) {
  const res = await PouchDB.replicate(from, to);
  ok(res.ok, JSON.stringify(res));
  eq(res.doc_write_failures, 0, 'write failures: ' + JSON.stringify(res.errors));
  eq(res.errors, []);
  return res;
}

// Write a doc with attachments into PouchDB and note it in the model.
async function putLocal(id, fields, atts) {
  const doc = Object.assign({ _id: id }, fields, { _attachments: {} });
  model.set(id, {});
  for (const [name, a] of Object.entries(atts)) {
    doc._attachments[name] = { content_type: a.type, data: a.data };
    model.get(id)[name] = a;
  }
  return local.put(doc);
}

test('PouchDB → divan: binary, text, empty, 2 MB and oddly named attachments', async () => {
  await jreq('DELETE', '/' + DB);
  local = new PouchDB('att-local-' + Date.now(), { adapter: 'memory' });
  await putLocal('png', { kind: 'binary' }, { 'a.png': { type: 'image/png', data: png(30000) } });
  await putLocal('txt', { kind: 'text' }, { 'note.txt': { type: 'text/plain', data: text(40000, 'note') } });
  await putLocal('multi', { kind: 'both' }, {
    'pic.png': { type: 'image/png', data: png(5000) },
    'readme.txt': { type: 'text/plain', data: text(3000, 'readme') },
    'data.json': { type: 'application/json', data: Buffer.from(JSON.stringify({ a: [1, 2, 3], s: 'x'.repeat(500) })) },
  });
  await putLocal('empty', {}, { 'empty.txt': { type: 'text/plain', data: Buffer.alloc(0) } });
  await putLocal('big', { kind: 'big' }, { 'big.bin': { type: 'application/octet-stream', data: rand(2 * 1024 * 1024) } });
  await putLocal('odd names', {}, {
    'ünï çödé.png': { type: 'image/png', data: png(1000) },
    'dir/sub file.txt': { type: 'text/plain', data: text(500, 'sub') },
  });
  await local.put({ _id: 'plain', kind: 'no attachments' });
  const res = await replicate(local, base + '/' + DB);
  eq(res.docs_written, 7);
  eq(await compareAll(local), 7);
  // text/plain is stored gzip-encoded (CouchDB's compressible_types), image/png is not.
  if (!STRICT) return;
  const t = (await jreq('GET', `/${DB}/txt?att_encoding_info=true`)).json._attachments['note.txt'];
  eq(t.encoding, 'gzip', 'note.txt stub: ' + JSON.stringify(t));
  ok(t.encoded_length < t.length, 'gzip made note.txt smaller: ' + JSON.stringify(t));
  const b = (await jreq('GET', `/${DB}/png?att_encoding_info=true`)).json._attachments['a.png'];
  eq(b.encoding, undefined, 'a.png stub: ' + JSON.stringify(b));
});

test('divan → PouchDB: edits made on divan (stub update, standalone PUT, inline base64) arrive', async () => {
  // an update keeping note.txt as a stub
  const txt = (await jreq('GET', `/${DB}/txt`)).json;
  const u = await jreq('PUT', `/${DB}/txt`, { _rev: txt._rev, kind: 'text', edited: 'on divan', _attachments: txt._attachments });
  eq(u.status, 201, u.text);
  const s = (await jreq('GET', `/${DB}/txt`)).json._attachments['note.txt'];
  eq([s.revpos, s.length], [1, model.get('txt')['note.txt'].data.length], 'the stub kept revpos 1: ' + JSON.stringify(s));
  if (STRICT) { // a bare {stub: true} (no digest) as CouchDB takes it
    const again = await jreq('PUT', `/${DB}/txt`, { _rev: u.json.rev, kind: 'text', edited: 'twice', _attachments: { 'note.txt': { stub: true } } });
    eq(again.status, 201, 'a bare stub: ' + again.text);
    const s2 = (await jreq('GET', `/${DB}/txt`)).json._attachments['note.txt'];
    eq([s2.revpos, s2.digest], [1, s.digest], 'the bare stub kept the attachment: ' + JSON.stringify(s2));
  }
  // a standalone PUT adds an attachment to multi
  const multi = (await jreq('GET', `/${DB}/multi`)).json;
  const added = png(20000);
  const p = await bin('PUT', attPath('multi', 'added.png') + '?rev=' + multi._rev, { 'Content-Type': 'image/png' }, added);
  eq(p.status, 201, `PUT multi/added.png: ${p.status} ${p.body}`);
  model.get('multi')['added.png'] = { type: 'image/png', data: added };
  // a standalone PUT makes a new doc with a text attachment
  const fresh = text(10000, 'fresh');
  const f = await bin('PUT', attPath('fresh', 'f.txt'), { 'Content-Type': 'text/plain' }, fresh);
  eq(f.status, 201, `PUT fresh/f.txt: ${f.status} ${f.body}`);
  model.set('fresh', { 'f.txt': { type: 'text/plain', data: fresh } });
  // an inline base64 attachment in a PUT of the doc
  const inl = rand(3000), inlt = text(2000, 'inline');
  const i = await jreq('PUT', `/${DB}/inline`, { _attachments: {
    'x.bin': { content_type: 'image/png', data: inl.toString('base64') },
    'y.txt': { content_type: 'text/plain', data: inlt.toString('base64') },
  } });
  eq(i.status, 201, i.text);
  model.set('inline', { 'x.bin': { type: 'image/png', data: inl }, 'y.txt': { type: 'text/plain', data: inlt } });
  const res = await replicate(remoteDb(), local);
  eq(res.docs_written, 4);
  eq(await compareAll(local), 9);
});

test('PouchDB update keeping the attachment as a stub replicates to divan', async () => {
  const doc = await local.get('png');
  ok(doc._attachments['a.png'].stub, 'PouchDB gives a stub');
  doc.edited = 'in pouch';
  const r = await local.put(doc);
  const big = await local.get('big');
  big.edited = 1;
  await local.put(big);
  await replicate(local, base + '/' + DB);
  const d = (await jreq('GET', `/${DB}/png`)).json;
  eq([d._rev, d.edited, d._attachments['a.png'].length], [r.rev, 'in pouch', 30000], JSON.stringify(d));
  eq(await compareAll(local), 9);
});

test('deleting attachments: removeAttachment in PouchDB, DELETE /db/doc/att on divan', async () => {
  const multi = await local.get('multi');
  await local.removeAttachment('multi', 'readme.txt', multi._rev);
  delete model.get('multi')['readme.txt'];
  await replicate(local, base + '/' + DB);
  const gone = await bin('GET', attPath('multi', 'readme.txt'));
  eq(gone.status, 404, 'readme.txt is gone from divan: ' + gone.status);
  ok(!(await jreq('GET', `/${DB}/multi`)).json._attachments['readme.txt'], 'no readme.txt stub');

  const png1 = (await jreq('GET', `/${DB}/png`)).json;
  const del = await jreq('DELETE', `${attPath('png', 'a.png')}?rev=${png1._rev}`);
  eq(del.status, 200, `DELETE png/a.png: ${del.status} ${del.text}`);
  delete model.get('png')['a.png'];
  // and the last attachment of a doc removed by an update without _attachments
  const inl = (await jreq('GET', `/${DB}/inline`)).json;
  eq((await jreq('PUT', `/${DB}/inline`, { _rev: inl._rev, stripped: true })).status, 201);
  model.set('inline', {});
  await replicate(remoteDb(), local);
  const p = await local.get('png');
  eq(Object.keys(p._attachments || {}), [], 'png has no attachments in PouchDB: ' + JSON.stringify(p));
  await assert.rejects(local.getAttachment('inline', 'y.txt'), (e) => e.status === 404);
  eq(await compareAll(local), 9);
});

test('a conflict whose branches carry different attachments, synced both ways', async () => {
  const one = png(4000);
  await putLocal('conf', { v: 1 }, { 'c.png': { type: 'image/png', data: one }, 'keep.txt': { type: 'text/plain', data: text(800, 'keep') } });
  await replicate(local, base + '/' + DB);
  const base1 = (await local.get('conf'))._rev;
  // PouchDB: new c.png bytes; divan: other c.png bytes and a new text attachment
  const mine = png(6000), theirs = png(7000), extra = text(5000, 'extra');
  const l = await local.putAttachment('conf', 'c.png', base1, mine, 'image/png');
  const t1 = await bin('PUT', attPath('conf', 'c.png') + '?rev=' + base1, { 'Content-Type': 'image/png' }, theirs);
  eq(t1.status, 201, `PUT conf/c.png on divan: ${t1.status} ${t1.body}`);
  const t2 = await bin('PUT', attPath('conf', 'extra.txt') + '?rev=' + JSON.parse(t1.body).rev, { 'Content-Type': 'text/plain' }, extra);
  eq(t2.status, 201, `PUT conf/extra.txt on divan: ${t2.status} ${t2.body}`);
  const theirRev = JSON.parse(t2.body).rev;
  await replicate(local, base + '/' + DB);
  await replicate(remoteDb(), local);
  const leaves = await divanLeaves('conf');
  eq(leaves.map((x) => x._rev).sort(), [l.rev, theirRev].sort(), 'both branches on divan');
  // The winner: the longer branch (divan's, generation 3).
  const keep = model.get('conf')['keep.txt'];
  model.set('conf', { 'c.png': { type: 'image/png', data: theirs }, 'keep.txt': keep, 'extra.txt': { type: 'text/plain', data: extra } });
  eq((await jreq('GET', `/${DB}/conf?conflicts=true`)).json._conflicts, [l.rev]);
  eq((await local.get('conf', { conflicts: true }))._conflicts, [l.rev]);
  // The losing branch's bytes on divan are PouchDB's.
  const lose = await bin('GET', attPath('conf', 'c.png') + '?rev=' + l.rev);
  eq(lose.status, 200);
  ok(lose.body.equals(mine), 'the losing branch keeps its own c.png');
  eq(await compareAll(local), 10);
  // Resolve: delete the losing leaf in PouchDB; divan agrees.
  await local.remove('conf', l.rev);
  await replicate(local, base + '/' + DB);
  eq((await jreq('GET', `/${DB}/conf?conflicts=true`)).json._conflicts, undefined);
  eq(await compareAll(local), 10);
});

test('a second PouchDB (leveldb) pulls everything from divan, bytes and digests equal', async () => {
  levelDir = fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || os.tmpdir(), 'pouch-level-'));
  second = new PouchDB(path.join(levelDir, 'second'));
  eq(second.adapter, 'leveldb');
  requests.length = 0;
  const res = await replicate(remoteDb(), second);
  ok(res.docs_written >= 10, JSON.stringify(res));
  eq(await compareAll(second), 10);
  eq(await compareAll(local), 10);
  // How PouchDB 9 pulled: _bulk_get (revs, latest; divan supports it, so no
  // per-doc open_revs fallback), then each attachment by GET ?rev=.
  const bulk = requests.filter((r) => r.startsWith('POST ') && r.includes('/_bulk_get'));
  ok(bulk.length >= 1, 'PouchDB used _bulk_get: ' + requests.join('\n'));
  ok(bulk.every((r) => /revs=true/.test(r)), 'with revs=true: ' + bulk.join(', '));
  ok(!requests.some((r) => /open_revs=/.test(r)), 'no open_revs fallback: ' + requests.filter((r) => /open_revs/.test(r)).join(', '));
  const attGets = requests.filter((r) => /^GET \/atts\/[^_][^?]*\/[^?]+\?rev=/.test(r));
  ok(attGets.length >= 12, `attachments fetched by GET ?rev= (${attGets.length}): ${requests.join('\n')}`);
});

test('_revs_diff and _bulk_get?revs=true&attachments=true give the same revisions and bytes', async () => {
  const ids = ['big', 'multi', 'txt', 'fresh', 'odd names', 'empty', 'conf'];
  const revs = {};
  for (const id of ids) revs[id] = (await local.get(id))._rev;
  const body = {};
  for (const id of ids) body[id] = [revs[id], '99-' + 'f'.repeat(32)];
  const rd = await jreq('POST', `/${DB}/_revs_diff`, body);
  eq(rd.status, 200, rd.text);
  for (const id of ids) eq(rd.json[id] && rd.json[id].missing, ['99-' + 'f'.repeat(32)], `_revs_diff ${id}: ${JSON.stringify(rd.json[id])}`);
  const allKnown = await jreq('POST', `/${DB}/_revs_diff`, { big: [revs.big] });
  eq(allKnown.json, {}, '_revs_diff of a known rev: ' + allKnown.text);

  const bg = await jreq('POST', `/${DB}/_bulk_get?revs=true&attachments=true`, { docs: ids.map((id) => ({ id, rev: revs[id] })) });
  eq(bg.status, 200, bg.text.slice(0, 500));
  eq(bg.json.results.map((r) => r.id), ids);
  for (const r of bg.json.results) {
    eq(r.docs.length, 1, JSON.stringify(r).slice(0, 300));
    const doc = r.docs[0].ok;
    ok(doc, `_bulk_get ${r.id}: ${JSON.stringify(r.docs[0]).slice(0, 300)}`);
    eq(doc._rev, revs[r.id]);
    ok(doc._revisions && doc._revisions.ids.length === Number(doc._rev.split('-')[0]), `${r.id}: _revisions ${JSON.stringify(doc._revisions)}`);
    const want = model.get(r.id);
    eq(Object.keys(doc._attachments || {}).sort(), Object.keys(want).sort(), `${r.id}: attachment names`);
    for (const [name, w] of Object.entries(want)) {
      const a = doc._attachments[name];
      ok(!a.stub && typeof a.data === 'string', `${r.id}/${name}: inline data, not a stub: ${JSON.stringify(a).slice(0, 200)}`);
      ok(Buffer.from(a.data, 'base64').equals(w.data), `${r.id}/${name}: _bulk_get data decodes to the bytes written`);
      eq(a.content_type, w.type);
      ok(a.encoding === undefined, `${r.id}/${name}: inline data is identity-encoded: ${a.encoding}`);
    }
  }
  // The same through PouchDB's own bulkGet (attachments, binary).
  const remote = remoteDb();
  const pb = await remote.bulkGet({ docs: ids.map((id) => ({ id, rev: revs[id] })), revs: true, attachments: true, binary: true });
  for (const r of pb.results) {
    const doc = r.docs[0].ok;
    for (const [name, w] of Object.entries(model.get(r.id))) ok(Buffer.from(doc._attachments[name].data).equals(w.data), `PouchDB bulkGet ${r.id}/${name}`);
  }
  // And get(attachments: true) on the remote db.
  const g = await remote.get('big', { attachments: true, binary: true });
  ok(g._attachments['big.bin'].data.equals(model.get('big')['big.bin'].data), 'remote get attachments=true: big.bin');
  // A bulk_get of a missing revision answers an error entry, not a failure.
  const miss = await jreq('POST', `/${DB}/_bulk_get?revs=true&attachments=true`, { docs: [{ id: 'big', rev: '99-' + 'f'.repeat(32) }] });
  eq(miss.status, 200, miss.text);
  const m0 = miss.json.results[0].docs[0];
  ok(m0.error || m0.missing, 'missing rev: ' + miss.text);
});

test('divan is healthy', async () => {
  const r = await jreq('GET', '/');
  eq(r.status, 200, r.text);
  if (srv) ok(srv.proc.exitCode === null, 'server alive');
});

// A crash or a hang ends the server and the file.
runFile(__filename, {
  seconds: 150,
  started: (s) => { srv = s.srv; base = s.base; },
  finished: async () => {
    if (local) await local.destroy().catch(() => {});
    if (second) await second.destroy().catch(() => {});
    if (levelDir) fs.rmSync(levelDir, { recursive: true, force: true });
  },
});
