// move.test.js — a database moved between running servers through the
// online dump and load (POST /_node/_local/_dump/{db}, PUT /{db}?load=true;
// README "Dump and load"): server A (embedded) -> server B (the fdb backend
// over the libfdb_c double, $DV_FDBSIM) -> server C (embedded, fresh,
// listening where A did once A has stopped, so clients keep their URL).
//
// While it moves: a follower of A's _changes?feed=continuous from before the
// move, and a replicator (server R) that pulled from A with a checkpoint.
// A write made on A during its dump (the response paused after its first
// bytes) arrives at C. After the move the follower resumes on C with its
// last seq and sees exactly the writes made after the move; R's next
// replication resumes from its checkpoint (the _local document came along)
// and writes only what it had not; B and C check clean; documents with
// their revision trees, conflicts, deleted leaves, attachments, local
// documents, _security and the changes feed with its seqs are A's.
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');
const os = require('os');
const crypto = require('crypto');
const { test, run, req, eq, ok, isErr, basicAuth } = require('../lib/t');
const { startDivan } = require('../lib/divan');

const LIB = process.env.DV_FDBSIM;
let A, B, C, R, portA;
const J = { 'Content-Type': 'application/json' };
const BIG = 12; // 1 MiB random attachments: a dump far larger than every buffer between it and a paused reader

function fdbArgs() {
  const dir = fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || os.tmpdir(), 'divan-b-'));
  const cluster = path.join(dir, 'fdb.cluster');
  fs.writeFileSync(cluster, `divan:test@${path.join(dir, 'fdb')}\n`);
  return { dataDir: dir, args: ['--fdb', cluster, '--fdb-library', path.resolve(LIB)] };
}

// A streamed request: the body's Buffer pieces, paused on demand.
function get(url, method = 'GET', onFirst = null) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const h = {};
    if (u.username) h.Authorization = basicAuth(u);
    const r = http.request({ method, hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers: h, agent: false }, (res) => {
      const chunks = [];
      let first = true;
      res.on('data', (c) => {
        chunks.push(c);
        if (first && onFirst) { first = false; res.pause(); onFirst().then(() => res.resume(), reject); }
      });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end();
  });
}

function put(url, body) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    // Expect: 100-continue, as a careful client sends a big body: a refusal
    // decided before the body (412, 401) comes instead of the 100
    const h = { 'Content-Type': 'application/octet-stream', 'Transfer-Encoding': 'chunked', Expect: '100-continue' };
    if (u.username) h.Authorization = basicAuth(u);
    const r = http.request({ method: 'PUT', hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers: h, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => { let json; try { json = JSON.parse(text); } catch (e) { json = undefined; } resolve({ status: res.statusCode, headers: res.headers, text, json }); });
    });
    r.on('error', reject);
    r.on('continue', () => {
      for (let i = 0; i < body.length; i += 300000) r.write(body.subarray(i, i + 300000)); // several pieces
      r.end();
    });
  });
}

// The follower: _changes?feed=continuous, its rows and last seq.
function follow(base, since) {
  const u = new URL(`${base}/src/_changes?feed=continuous&heartbeat=500&since=${encodeURIComponent(since)}`);
  const f = { rows: [], last: since, buf: '' };
  f.req = http.request({ hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers: { Authorization: basicAuth(u) }, agent: false }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (c) => {
      f.buf += c;
      let i;
      while ((i = f.buf.indexOf('\n')) >= 0) {
        const line = f.buf.slice(0, i).trim();
        f.buf = f.buf.slice(i + 1);
        if (!line) continue;
        const row = JSON.parse(line);
        if (row.seq) { f.rows.push(row); f.last = row.seq; }
      }
    });
    res.on('error', () => {});
  });
  f.req.on('error', () => {});
  f.req.end();
  return f;
}

async function until(pred, ms = 10000) {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Everything a client can see of the database, for comparing servers.
async function snapshot(base) {
  const s = {};
  const ch = await req('GET', `${base}/src/_changes?style=all_docs`);
  eq(ch.status, 200, ch.text);
  s.changes = ch.json.results;
  s.docs = {};
  for (const row of s.changes) {
    const id = encodeURIComponent(row.id);
    const leaves = await req('GET', `${base}/src/${id}?open_revs=all&revs=true&attachments=true`, undefined, { Accept: 'application/json' });
    eq(leaves.status, 200, leaves.text);
    const w = await req('GET', `${base}/src/${id}?revs_info=true&conflicts=true&deleted_conflicts=true&attachments=true`);
    s.docs[row.id] = { leaves: leaves.json.sort((a, b) => JSON.stringify(a) < JSON.stringify(b) ? -1 : 1), winner: w.status === 200 ? w.json : w.status };
  }
  s.local = {};
  for (const id of ['_local/x', '_local/y']) s.local[id] = (await req('GET', `${base}/src/${id}`)).json;
  const ld = await req('GET', `${base}/src/_local_docs?include_docs=true`);
  s.local_docs = ld.json.rows;
  s.security = (await req('GET', `${base}/src/_security`)).json;
  s.revs_limit = (await req('GET', `${base}/src/_revs_limit`)).text;
  const info = (await req('GET', `${base}/src`)).json;
  s.update_seq = info.update_seq;
  s.doc_count = info.doc_count;
  s.doc_del_count = info.doc_del_count;
  return s;
}

async function checkClean(base) {
  const r = await req('GET', `${base}/_node/_local/_check?db=src`);
  eq(r.status, 200, r.text);
  ok(r.json.ok, r.text);
  eq(r.json.problems, []);
}

let follower, checkpoint, before, dumpAB;

test('start A, B, R', async () => {
  ok(LIB, 'DV_FDBSIM names the libfdb_c double');
  [A, B, R] = await Promise.all([startDivan(), startDivan(fdbArgs()), startDivan()]);
  portA = new URL(A.url).port;
});

test('A: a database with conflicts, deletions, attachments, local docs and _security', async () => {
  eq((await req('PUT', A.url + '/src')).status, 201);
  const docs = [];
  for (let i = 0; i < 40; i++) docs.push({ _id: `d${String(i).padStart(2, '0')}`, v: i });
  eq((await req('POST', A.url + '/src/_bulk_docs', { docs })).status, 201);
  const r = await req('POST', A.url + '/src/_bulk_docs', { new_edits: false, docs: [
    { _id: 'c', _rev: '1-aaaa', v: 1 }, { _id: 'c', _rev: '1-bbbb', v: 2 },
    { _id: 'c', _rev: '2-cccc', _revisions: { start: 2, ids: ['cccc', 'aaaa'] }, _deleted: true }] });
  eq(r.status, 201, r.text);
  const d = await req('GET', A.url + '/src/d01');
  eq((await req('DELETE', `${A.url}/src/d01?rev=${d.json._rev}`)).status, 200);
  eq((await req('PUT', A.url + '/src/t', { _attachments: { 'a.txt': { content_type: 'text/plain', data: Buffer.from('hello').toString('base64') } } })).status, 201);
  for (let i = 0; i < BIG; i++) {
    const r2 = await req('PUT', `${A.url}/src/big${i}/blob`, crypto.randomBytes(1 << 20), { 'Content-Type': 'application/octet-stream' });
    eq(r2.status, 201, r2.text);
  }
  eq((await req('PUT', A.url + '/src/_local/x', { k: 1 })).status, 201);
  eq((await req('PUT', A.url + '/src/_security', { admins: { names: [], roles: [] }, members: { names: ['bob'], roles: [] } })).status, 200);
  eq((await req('PUT', A.url + '/src/_revs_limit', '77', J)).status, 200);
});

test('R replicates from A with a checkpoint; a follower follows A', async () => {
  const r = await req('POST', R.url + '/_replicate', { source: `${A.url}/src`, target: 'tgt', create_target: true });
  eq(r.status, 200, r.text);
  ok(r.json.ok);
  checkpoint = r.json.history[0].recorded_seq;
  ok(checkpoint);
  follower = follow(A.url, '0');
  const info = (await req('GET', A.url + '/src')).json;
  await until(() => follower.last === info.update_seq);
});

test('the online dump needs a server admin and an existing database', async () => {
  isErr(await req('POST', `${A.base}/_node/_local/_dump/src`), 401, 'unauthorized');
  isErr(await req('PUT', `${A.base}/other?load=true`, 'x', { 'Content-Type': 'application/octet-stream' }), 401, 'unauthorized');
  isErr(await req('POST', `${A.url}/_node/_local/_dump/nosuch`), 404, 'not_found');
  isErr(await req('POST', `${A.url}/_node/elsewhere/_dump/src`), 404, 'not_found');
  isErr(await req('GET', `${A.url}/_node/_local/_dump/src`), 405, 'method_not_allowed');
});

test('dump A (a write during it) and load into B', async () => {
  let during;
  const r = await get(`${A.url}/_node/_local/_dump/src`, 'POST', async () => {
    // the dump is paused in its full pass (the attachments come first)
    const w1 = await req('PUT', A.url + '/src/during', { v: 'written during the dump' });
    eq(w1.status, 201, w1.text);
    const d = await req('GET', A.url + '/src/d02');
    const w2 = await req('PUT', A.url + '/src/d02', { _rev: d.json._rev, v: 'changed during the dump' });
    eq(w2.status, 201, w2.text);
    eq((await req('PUT', A.url + '/src/_local/y', { k: 2 })).status, 201);
    during = w2.json.rev;
  });
  eq(r.status, 200);
  eq(r.headers['content-type'], 'application/octet-stream');
  eq(r.headers['transfer-encoding'], 'chunked');
  eq(r.body.subarray(0, 8).toString(), 'DIVANDMP');
  ok(r.body.length > BIG << 20);
  dumpAB = r.body;
  const l = await put(`${B.url}/src?load=true`, r.body);
  eq(l.status, 201, l.text);
  eq(l.json, { ok: true });
  ok(l.headers.location.endsWith('/src'));
  const d2 = await req('GET', B.url + '/src/d02');
  eq(d2.json._rev, during);
  eq((await req('GET', B.url + '/src/during')).status, 200);
  eq((await req('GET', B.url + '/src/_local/y')).json.k, 2);
  const info = (await req('GET', A.url + '/src')).json;
  await until(() => follower.last === info.update_seq);
  before = await snapshot(A.url);
  eq(await snapshot(B.url), before);
  await checkClean(B.url);
});

test('a load is refused: the database exists, a damaged or truncated file', async () => {
  isErr(await put(`${B.url}/src?load=true`, dumpAB), 412, 'file_exists');
  const bad = Buffer.from(dumpAB);
  bad[5000] ^= 0x10;
  const r = await put(`${B.url}/other?load=true`, bad);
  isErr(r, 400, 'bad_request');
  ok(/dump/.test(r.json.reason), r.text);
  const t = await put(`${B.url}/other?load=true`, dumpAB.subarray(0, dumpAB.length - 100));
  isErr(t, 400, 'bad_request', 'the dump file is truncated');
  const n = await put(`${B.url}/other?load=true`, Buffer.from('{"not":"a dump"}'));
  isErr(n, 400, 'bad_request');
  eq((await req('GET', B.url + '/other')).status, 404);
  isErr(await put(`${B.url}/_bad?load=true`, dumpAB), 400, 'illegal_database_name');
  await checkClean(B.url);
});

test('a client that leaves midway: the dump stops, the load leaves nothing', async () => {
  await new Promise((resolve, reject) => {
    const u = new URL(`${A.url}/_node/_local/_dump/src`);
    const r = http.request({ method: 'POST', hostname: u.hostname, port: u.port, path: u.pathname, headers: { Authorization: basicAuth(u) }, agent: false }, (res) => {
      res.once('data', () => { r.destroy(); resolve(); });
    });
    r.on('error', () => {});
    r.end();
    setTimeout(() => reject(new Error('no dump bytes')), 10000);
  });
  await new Promise((resolve) => {
    const u = new URL(`${B.url}/half?load=true`);
    const r = http.request({ method: 'PUT', hostname: u.hostname, port: u.port, path: u.pathname + u.search, agent: false,
      headers: { Authorization: basicAuth(u), 'Content-Type': 'application/octet-stream', 'Transfer-Encoding': 'chunked' } });
    r.on('error', () => resolve());
    r.write(dumpAB.subarray(0, dumpAB.length >> 1), () => setTimeout(() => { r.destroy(); resolve(); }, 300));
  });
  await until(async () => (await req('GET', `${B.url}/_node/_local/_check`)).json.notes.length === 0);
  eq((await req('GET', B.url + '/half')).status, 404);
  await checkClean(B.url);
  const again = await get(`${A.url}/_node/_local/_dump/src`, 'POST'); // A dumps as before
  eq(again.status, 200);
  ok(again.body.length > BIG << 20);
});

test('stop A; C starts where A listened and loads B\'s dump past its body and document limits', async () => {
  follower.req.destroy();
  await A.stop(); // a dump thread left behind would show here (a leak, a crash at exit)
  C = await startDivan({ args: ['--port', portA], config: '[chttpd]\nmax_http_request_size = 1048576\n[couchdb]\nmax_document_size = 4096\n' });
  eq(new URL(C.url).port, portA);
  const r = await get(`${B.url}/_node/_local/_dump/src`, 'POST');
  eq(r.status, 200);
  const l = await put(`${C.url}/src?load=true`, r.body);
  eq(l.status, 201, l.text);
  eq(await snapshot(C.url), before);
  await checkClean(C.url);
  await checkClean(B.url);
});

test('the follower resumes on C and sees exactly the writes after the move', async () => {
  const seen = new Set(follower.rows.map((r) => r.id));
  ok(seen.has('during') && seen.has('d02'));
  for (const id of ['after1', 'after2']) eq((await req('PUT', `${C.url}/src/${id}`, { v: id })).status, 201);
  const d = await req('GET', C.url + '/src/d03');
  eq((await req('PUT', C.url + '/src/d03', { _rev: d.json._rev, v: 'after' })).status, 201);
  const r = await req('GET', `${C.url}/src/_changes?since=${encodeURIComponent(follower.last)}`);
  eq(r.status, 200, r.text);
  eq(r.json.results.map((x) => x.id), ['after1', 'after2', 'd03']);
  const f = follow(C.url, follower.last);
  await until(() => f.rows.length >= 3);
  await new Promise((res) => setTimeout(res, 300));
  f.req.destroy();
  eq(f.rows.map((x) => x.id), ['after1', 'after2', 'd03']);
});

test('R resumes from its checkpoint and sends only what it had not', async () => {
  const tgt0 = (await req('GET', R.url + '/tgt')).json;
  const r = await req('POST', R.url + '/_replicate', { source: `${C.url}/src`, target: 'tgt' });
  eq(r.status, 200, r.text);
  const h = r.json.history[0];
  eq(h.start_last_seq, checkpoint, r.text);
  eq(h.docs_written, 5, r.text); // during, d02 (during the dump), after1, after2, d03
  eq(h.docs_read, 5, r.text);
  const tgt1 = (await req('GET', R.url + '/tgt')).json;
  eq(tgt1.doc_count, tgt0.doc_count + 3);
});

test('stop', async () => {
  await Promise.all([B.stop(), C.stop(), R.stop()]);
});

run();
