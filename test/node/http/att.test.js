// att.test.js — black-box checks of the standalone attachment endpoints
// against a real `divan serve`: PUT/GET/HEAD/DELETE on
// /{db}/{docid}/{attname} and the multipart/form-data upload POST
// /{db}/{docid}, as CouchDB 3.x answers them (chttpd_db.erl
// db_attachment_req and db_doc_req's POST clause; test/elixir/test/
// attachments_test.exs and attachment_ranges_test.exs): headers, ranges,
// gzip both ways, Content-MD5, max_attachment_size at and one past the
// limit, conflicts, names with slashes and unicode, a 20 MB round trip
// with the server's memory watched, and every error case.
//
//   DIVAN_BIN=./divan node test/node/http/att.test.js
//   T_VERBOSE=1 lists every check; T_ONLY=substring runs a subset.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const zlib = require('zlib');
const { startDivan } = require('../lib/divan');
const { test, run, req, eq, ok, isErr, basicAuth, rawSocket, statusOf } = require('../lib/t');

let srv, U, DB;
const REV = /^\d+-[0-9a-f]{32}$/;
const enc = encodeURIComponent;
const md5 = (b) => crypto.createHash('md5').update(b).digest('base64');
const gen = (rev) => Number(rev.split('-')[0]);
const TEXT = 'This is a base64 encoded text'; // 29 bytes, CouchDB's range fixture

// One request with a Buffer body back: { status, headers, body, text, json }.
// body: string/Buffer (Content-Length set unless chunked: true, then sent
// in pieces with Transfer-Encoding: chunked).
function raw(method, url, body, headers = {}, opts = {}) {
  const u = new URL(url);
  const h = Object.assign({}, headers);
  if (u.username && !Object.keys(h).some((k) => k.toLowerCase() === 'authorization')) h.Authorization = basicAuth(u);
  for (const k of Object.keys(h)) if (h[k] === null) delete h[k];
  const data = body === undefined || body === null ? null : Buffer.isBuffer(body) ? body : Buffer.from(body);
  if (data && !opts.chunked) h['Content-Length'] = data.length;
  return new Promise((resolve, reject) => {
    const r = http.request({ method, hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers: h, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const b = Buffer.concat(chunks);
        const text = b.toString('utf8');
        let json;
        try { json = text.length ? JSON.parse(text) : undefined; } catch (e) { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, body: b, text, json, complete: res.complete });
      });
      res.on('error', reject);
      res.on('aborted', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), aborted: true }));
    });
    r.on('error', reject);
    if (data && opts.chunked) {
      for (let i = 0; i < data.length; i += 7000) r.write(data.subarray(i, i + 7000));
    } else if (data) {
      r.write(data);
    }
    r.end();
  });
}
const get = (p, h) => raw('GET', DB + p, null, h);
const head = (p, h) => raw('HEAD', DB + p, null, h);
const put = (p, body, h = {}, opts) => raw('PUT', DB + p, body, h, opts);
const del = (p, h) => raw('DELETE', DB + p, null, h);
const cfg = (section, key, value) => value === null
  ? req('DELETE', U + `/_node/_local/_config/${section}/${key}`)
  : req('PUT', U + `/_node/_local/_config/${section}/${key}`, JSON.stringify(value));


// A document holding one attachment; returns its rev.
async function mkAtt(id, name, data, type = 'application/octet-stream', h = {}) {
  const r = await put('/' + id + '/' + name, data, Object.assign({ 'Content-Type': type }, h));
  eq(r.status, 201, r.text);
  return r.json.rev;
}
async function doc(id, q = '') { return (await req('GET', DB + '/' + id + q)).json; }

test('start', async () => {
  srv = await startDivan();
  U = srv.url;
  DB = U + '/att';
  eq((await req('PUT', DB)).status, 201);
});

// ---- PUT ------------------------------------------------------------------------

test('PUT to a new doc: 201 ok/id/rev, Location of the attachment, ETag of the rev', async () => {
  const r = await put('/p1/foo.txt', TEXT, { 'Content-Type': 'application/octet-stream' });
  eq(r.status, 201, r.text);
  eq(Object.keys(r.json), ['ok', 'id', 'rev']);
  eq(r.json.ok, true);
  eq(r.json.id, 'p1');
  ok(REV.test(r.json.rev) && gen(r.json.rev) === 1, r.json.rev);
  eq(r.headers.location, srv.base + '/att/p1/foo.txt');
  eq(r.headers.etag, '"' + r.json.rev + '"');
  const d = await doc('p1');
  eq(d, {
    _id: 'p1', _rev: r.json.rev,
    _attachments: { 'foo.txt': { content_type: 'application/octet-stream', revpos: 1, digest: 'md5-' + md5(TEXT), length: 29, stub: true } },
  });
});

test('GET: the bytes, Content-Type, ETag of the digest, Accept-Ranges, Content-Length, Content-MD5, must-revalidate, CSP', async () => {
  const r = await get('/p1/foo.txt');
  eq(r.status, 200);
  eq(r.text, TEXT);
  eq(r.headers['content-type'], 'application/octet-stream');
  eq(r.headers.etag, '"' + md5(TEXT) + '"');
  eq(r.headers.etag, '"aEI7pOYCRBLTRQvvqYrrJQ=="'); // CouchDB's own test value
  eq(r.headers['accept-ranges'], 'bytes');
  eq(r.headers['content-length'], '29');
  eq(r.headers['content-md5'], md5(TEXT));
  eq(r.headers['cache-control'], 'must-revalidate');
  eq(r.headers['content-security-policy'], 'sandbox');
  eq(r.headers['content-encoding'], undefined);
});

test('HEAD: the same headers, no body', async () => {
  const r = await head('/p1/foo.txt');
  eq(r.status, 200);
  eq(r.body.length, 0);
  eq(r.headers['content-length'], '29');
  eq(r.headers.etag, '"' + md5(TEXT) + '"');
  eq(r.headers['content-type'], 'application/octet-stream');
  isErr(await get('/p1/none.txt'), 404, 'not_found', 'Document is missing attachment');
  eq((await head('/p1/none.txt')).status, 404);
});

test('If-None-Match with the ETag: 304 and no body; another ETag: 200', async () => {
  const etag = (await get('/p1/foo.txt')).headers.etag;
  const r = await get('/p1/foo.txt', { 'If-None-Match': etag });
  eq(r.status, 304);
  eq(r.body.length, 0);
  eq(r.headers.etag, etag);
  eq((await get('/p1/foo.txt', { 'If-None-Match': '"other", ' + etag })).status, 304);
  eq((await get('/p1/foo.txt', { 'If-None-Match': '"other"' })).status, 200);
});

test('Content-Type: absent is application/octet-stream; parameters are kept', async () => {
  const r = await put('/p2/a.bin', 'x', { 'Content-Type': null });
  eq(r.status, 201, r.text);
  eq((await get('/p2/a.bin')).headers['content-type'], 'application/octet-stream');
  const r2 = await put('/p2/b.txt?rev=' + r.json.rev, 'hé', { 'Content-Type': 'text/plain;charset=utf-8' });
  eq(r2.status, 201, r2.text);
  const g = await get('/p2/b.txt');
  eq(g.headers['content-type'], 'text/plain;charset=utf-8');
  eq(g.text, 'hé');
});

test('PUT with ?rev=: other attachments and the body are kept; revpos of each', async () => {
  const c = await req('PUT', DB + '/p3', { title: 'kept', n: [1, 2] });
  eq(c.status, 201);
  const r1 = await put('/p3/one.bin?rev=' + c.json.rev, 'one');
  eq(r1.status, 201, r1.text);
  eq(gen(r1.json.rev), 2);
  const r2 = await put('/p3/two.bin', 'two', { 'If-Match': r1.json.rev });
  eq(r2.status, 201, r2.text);
  const d = await doc('p3');
  eq(d.title, 'kept');
  eq(d.n, [1, 2]);
  eq(Object.keys(d._attachments).sort(), ['one.bin', 'two.bin']);
  eq(d._attachments['one.bin'].revpos, 2);
  eq(d._attachments['two.bin'].revpos, 3);
  eq((await get('/p3/one.bin')).text, 'one');
  eq((await get('/p3/two.bin')).text, 'two');
});

test('PUT replaces an attachment of the same name; the replaced rev is gone (divan keeps leaves only)', async () => {
  const r1 = await mkAtt('p4', 'f.bin', 'first');
  const r2 = await put('/p4/f.bin?rev=' + r1, 'second, longer');
  eq(r2.status, 201, r2.text);
  eq((await get('/p4/f.bin')).text, 'second, longer');
  eq((await get('/p4/f.bin?rev=' + r2.json.rev)).text, 'second, longer');
  isErr(await get('/p4/f.bin?rev=' + r1), 404, 'not_found', 'missing'); // as CouchDB after compaction
  const d = await doc('p4');
  eq(d._attachments['f.bin'].revpos, 2);
  eq(d._attachments['f.bin'].length, 14);
});

test('empty attachments: 201, GET 200 with no body, a range is 416', async () => {
  const rev = await mkAtt('p5', 'empty.txt', '', 'text/plain;charset=utf-8');
  const g = await get('/p5/empty.txt');
  eq(g.status, 200);
  eq(g.body.length, 0);
  eq(g.headers['content-length'], '0');
  eq((await get('/p5/empty.txt', { Range: 'bytes=0-0' })).status, 200); // text/plain is stored gzip: no ranges
  await mkAtt('p5b', 'empty.bin', '');
  eq((await get('/p5b/empty.bin')).body.length, 0);
  eq((await get('/p5b/empty.bin', { Range: 'bytes=0-0' })).status, 416);
  const r = await put('/p5/empty.txt?rev=' + rev, 'This is a string', { 'Content-Type': 'text/plain;charset=utf-8' });
  eq(r.status, 201);
  eq((await get('/p5/empty.txt')).text, 'This is a string');
});

// ---- conflicts and revisions ---------------------------------------------------------

test('conflicts: no rev on an existing doc 409; a rev that is no leaf 409 not_found/missing_rev', async () => {
  const rev = await mkAtt('c1', 'a.txt', 'data');
  isErr(await put('/c1/a.txt', 'again'), 409, 'conflict', 'Document update conflict.');
  isErr(await put('/c1/b.txt?rev=1-adae8575ecea588919bd08eb020c708e', 'x'), 409, 'not_found', 'missing_rev');
  isErr(await put('/nodoc/b.txt?rev=1-000', 'x'), 409, 'not_found', 'missing_rev');
  const r2 = await put('/c1/a.txt?rev=' + rev, 'v2');
  eq(r2.status, 201);
  isErr(await put('/c1/a.txt?rev=' + rev, 'v3'), 409, 'conflict', 'Document update conflict.'); // replaced since
  isErr(await del('/c1/a.txt?rev=' + rev), 409, 'conflict', 'Document update conflict.');
  eq((await get('/c1/a.txt')).text, 'v2');
});

test('bad revs: malformed 400 Invalid rev format; ?rev= and If-Match that differ 400', async () => {
  const rev = (await doc('c1'))._rev;
  isErr(await put('/c1/a.txt?rev=abc', 'x'), 400, 'bad_request', 'Invalid rev format');
  isErr(await put('/c1/a.txt', 'x', { 'If-Match': 'nope' }), 400, 'bad_request', 'Invalid rev format');
  isErr(await put('/c1/a.txt?rev=' + rev, 'x', { 'If-Match': '"1-' + 'a'.repeat(32) + '"' }), 400, 'bad_request',
    'Document rev and etag have different values');
  const ok2 = await put('/c1/a.txt?rev=' + rev, 'v3', { 'If-Match': '"' + rev + '"' });
  eq(ok2.status, 201, ok2.text);
  isErr(await get('/c1/a.txt?rev=abc'), 400, 'bad_request', 'Invalid rev format');
  isErr(await del('/c1/a.txt?rev=abc'), 400, 'bad_request', 'Invalid rev format');
});

test('a deleted document: GET 404 deleted; PUT without rev makes it live again', async () => {
  const c = await req('PUT', DB + '/c2', { a: 1 });
  const d = await req('DELETE', DB + '/c2?rev=' + c.json.rev);
  eq(d.status, 200);
  isErr(await get('/c2/a.txt'), 404, 'not_found', 'deleted');
  const r = await put('/c2/a.txt', 'back');
  eq(r.status, 201, r.text);
  eq(gen(r.json.rev), 3);
  eq((await get('/c2/a.txt')).text, 'back');
});

test('GET ?rev=: a rev that is no leaf is 404 missing; the doc missing 404 missing; the db missing 404', async () => {
  isErr(await get('/c1/a.txt?rev=1-' + 'f'.repeat(32)), 404, 'not_found', 'missing');
  isErr(await get('/nodoc/a.txt'), 404, 'not_found', 'missing');
  isErr(await raw('GET', U + '/nodb/doc/a.txt'), 404, 'not_found', 'Database does not exist.');
  isErr(await raw('PUT', U + '/nodb/doc/a.txt', 'x'), 404, 'not_found', 'Database does not exist.');
});

// ---- DELETE ---------------------------------------------------------------------------

test('DELETE: no rev 409, a garbage rev 409 missing_rev, a missing attachment 404, then 200 without Location', async () => {
  const rev = await mkAtt('d1', 'foo.txt', TEXT);
  isErr(await del('/d1/foo.txt'), 409, 'conflict');
  isErr(await del('/d1/foo.txt?rev=4-garbage'), 409, 'not_found', 'missing_rev');
  isErr(await del('/d1/notexisting.txt?rev=' + rev), 404, 'not_found', 'Document is missing attachment');
  isErr(await del('/d1/notexisting.txt'), 404, 'not_found', 'Document is missing attachment');
  isErr(await del('/nodoc/x.txt'), 404, 'not_found', 'missing');
  const r = await del('/d1/foo.txt?rev=' + rev);
  eq(r.status, 200, r.text);
  eq(Object.keys(r.json), ['ok', 'id', 'rev']);
  eq(r.json.id, 'd1');
  eq(gen(r.json.rev), 2);
  eq(r.headers.location, undefined);
  isErr(await get('/d1/foo.txt'), 404, 'not_found', 'Document is missing attachment');
  eq((await get('/d1/foo.txt?rev=' + r.json.rev)).status, 404);
  eq((await doc('d1'))._attachments, undefined);
});

test('DELETE keeps the other attachments and the body; If-Match names the rev', async () => {
  const c = await req('PUT', DB + '/d2', { keep: true });
  const r1 = (await put('/d2/a.txt?rev=' + c.json.rev, 'A')).json.rev;
  const r2 = (await put('/d2/b.txt?rev=' + r1, 'B')).json.rev;
  const r = await del('/d2/a.txt', { 'If-Match': r2 });
  eq(r.status, 200, r.text);
  const d = await doc('d2');
  eq(d.keep, true);
  eq(Object.keys(d._attachments), ['b.txt']);
  eq((await get('/d2/b.txt')).text, 'B');
});

test('other methods: 405 with Allow DELETE,GET,HEAD,PUT', async () => {
  await mkAtt('m1', 'a.txt', 'x');
  for (const m of ['POST', 'PATCH', 'COPY']) {
    const r = await raw(m, DB + '/m1/a.txt', null);
    isErr(r, 405, 'method_not_allowed');
    eq(r.headers.allow, 'DELETE,GET,HEAD,PUT');
  }
});

// ---- names ----------------------------------------------------------------------------

test('names with slashes: every segment after the id, joined; Location encodes the slash', async () => {
  const r = await put('/n1/dir/sub/file.txt', 'deep', { 'Content-Type': 'application/octet-stream' });
  eq(r.status, 201, r.text);
  eq(r.headers.location, srv.base + '/att/n1/dir%2Fsub%2Ffile.txt');
  eq(Object.keys((await doc('n1'))._attachments), ['dir/sub/file.txt']);
  eq((await get('/n1/dir/sub/file.txt')).text, 'deep');
  eq((await get('/n1/dir%2Fsub%2Ffile.txt')).text, 'deep'); // an escaped slash is the same name
  isErr(await get('/n1/dir/sub'), 404, 'not_found', 'Document is missing attachment');
  const d = await del('/n1/dir/sub/file.txt?rev=' + r.json.rev);
  eq(d.status, 200);
});

test('unicode names round-trip', async () => {
  const name = 'ünï/☃ snow 雪.txt';
  const path = name.split('/').map(enc).join('/');
  const r = await put('/n2/' + path, 'cold', { 'Content-Type': 'application/octet-stream' });
  eq(r.status, 201, r.text);
  eq(Object.keys((await doc('n2'))._attachments), [name]);
  eq((await get('/n2/' + path)).text, 'cold');
  eq((await head('/n2/' + path)).headers['content-length'], '4');
});

test('bad names: a leading underscore, invalid UTF-8', async () => {
  isErr(await put('/n3/_hidden.txt', 'x'), 400, 'bad_request', "Attachment name '_hidden.txt' starts with prohibited character '_'");
  isErr(await put('/n3/%FF%FE.txt', 'x'), 400, 'bad_request', 'Attachment name is not UTF-8 encoded');
  isErr(await get('/n3'), 404, 'not_found', 'missing');
});

test('doc ids: design docs take attachments; _local docs refuse them', async () => {
  const r = await put('/_design/dd/lib/app.js', 'function(){}', { 'Content-Type': 'application/javascript' });
  eq(r.status, 201, r.text);
  eq(r.json.id, '_design/dd');
  eq(r.headers.location, srv.base + '/att/_design%2Fdd/lib%2Fapp.js');
  eq((await get('/_design/dd/lib/app.js')).text, 'function(){}');
  isErr(await put('/_local/l1/a.txt', 'x', { 'Content-Type': 'text/plain' }), 400, 'bad_request', '_local documents do not accept attachments.');
  isErr(await get('/_local/l1/a.txt'), 400, 'bad_request', '_local documents do not accept attachments.');
});

test('auth: an anonymous PUT is refused before the body (401); so is an anonymous GET', async () => {
  const anon = srv.base + '/att';
  isErr(await raw('PUT', anon + '/au/a.txt', 'x', { 'Content-Type': 'text/plain' }), 401, 'unauthorized');
  isErr(await raw('GET', anon + '/p1/foo.txt'), 401, 'unauthorized');
  isErr(await raw('PUT', U.replace('testpass', 'wrong') + '/att/au/a.txt', 'x'), 401, 'unauthorized');
  isErr(await get('/au/a.txt'), 404, 'not_found', 'missing');
});

test('auth: a member writes attachments of documents, not of design documents (db admins only)', async () => {
  const bob = { name: 'attbob', password: 'attbob-pw' };
  eq((await req('PUT', U + '/_users/org.couchdb.user:attbob', { _id: 'org.couchdb.user:attbob', name: bob.name, password: bob.password, roles: [], type: 'user' })).status, 201);
  eq((await req('PUT', U + '/attsec')).status, 201);
  eq((await req('PUT', U + '/attsec/_security', { members: { names: ['attbob'] }, admins: {} })).status, 200);
  const B = srv.base.replace('http://', `http://${bob.name}:${bob.password}@`) + '/attsec';
  const w = await raw('PUT', B + '/doc/a.txt', 'by bob', { 'Content-Type': 'text/plain' });
  eq(w.status, 201, w.text);
  eq((await raw('GET', B + '/doc/a.txt')).text, 'by bob');
  isErr(await raw('PUT', B + '/_design/x/a.js', 'x', { 'Content-Type': 'application/javascript' }), 403, 'forbidden', 'You are not a db or server admin.');
  const own = (U + '/_users/org.couchdb.user:attbob/a.txt').replace('admin:testpass', 'attbob:attbob-pw');
  isErr(await raw('PUT', own, 'x'), 403, 'forbidden', 'You are not allowed to access this db.'); // _users is admin-only by default
  eq((await req('PUT', U + '/_users/_security', { members: { names: [], roles: [] }, admins: {} })).status, 200);
  isErr(await raw('PUT', own, 'x'), 403, 'forbidden', 'Only admins may do this in the users database.'); // opened: the _users rules
  eq((await req('PUT', U + '/_users/_security', {})).status, 200);
  const d = await raw('DELETE', B + '/doc/a.txt?rev=' + w.json.rev);
  eq(d.status, 200, d.text);
});

// ---- gzip -----------------------------------------------------------------------------

test('a compressible type is stored gzip: served gzip to a client that takes it, decoded to others', async () => {
  const text = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(200);
  await mkAtt('g1', 'lorem.txt', text, 'text/plain');
  const d = await doc('g1');
  eq(d._attachments['lorem.txt'].length, text.length);
  const gz = await get('/g1/lorem.txt', { 'Accept-Encoding': 'gzip' });
  eq(gz.status, 200);
  eq(gz.headers['content-encoding'], 'gzip');
  eq(gz.headers['accept-ranges'], 'none');
  ok(gz.body.length < text.length / 5, 'compressed: ' + gz.body.length);
  eq(Number(gz.headers['content-length']), gz.body.length);
  eq(zlib.gunzipSync(gz.body).toString(), text);
  eq(gz.headers['content-md5'], md5(gz.body)); // the digest is of the stored (gzip) bytes, as CouchDB's
  eq(gz.headers.etag, '"' + md5(gz.body) + '"');
  eq(d._attachments['lorem.txt'].digest, 'md5-' + md5(gz.body));
  const plain = await get('/g1/lorem.txt');
  eq(plain.status, 200);
  eq(plain.headers['content-encoding'], undefined);
  eq(plain.headers['content-length'], String(text.length));
  eq(plain.headers['content-md5'], undefined);
  eq(plain.text, text);
  eq((await get('/g1/lorem.txt', { 'Accept-Encoding': 'gzip;q=0, identity' })).headers['content-encoding'], undefined);
  eq((await get('/g1/lorem.txt', { 'Accept-Encoding': 'identity' })).text, text);
  eq((await get('/g1/lorem.txt', { 'Accept-Encoding': '*' })).headers['content-encoding'], 'gzip');
  eq((await get('/g1/lorem.txt', { 'Accept-Encoding': 'deflate, gzip;q=0.5' })).headers['content-encoding'], 'gzip');
  const h = await head('/g1/lorem.txt');
  eq(h.headers['content-length'], String(text.length));
  // Range is ignored for gzip-stored attachments, as CouchDB does
  const rg = await get('/g1/lorem.txt', { Range: 'bytes=0-9' });
  eq(rg.status, 200);
  eq(rg.text, text);
  eq(await doc('g1', '?att_encoding_info=true').then((x) => x._attachments['lorem.txt'].encoding), 'gzip');
});

test('compressible_types and compression_level from the config; 0 never compresses', async () => {
  const text = 'abcdefgh'.repeat(1000);
  await mkAtt('g2', 'a.json', text, 'Application/JSON; charset=utf-8'); // case and parameters ignored
  eq((await get('/g2/a.json', { 'Accept-Encoding': 'gzip' })).headers['content-encoding'], 'gzip');
  await mkAtt('g3', 'a.bin', text, 'image/png');
  eq((await get('/g3/a.bin', { 'Accept-Encoding': 'gzip' })).headers['content-encoding'], undefined);
  eq((await cfg('attachments', 'compressible_types', 'image/*')).status, 200);
  await mkAtt('g4', 'a.png', text, 'image/png');
  eq((await get('/g4/a.png', { 'Accept-Encoding': 'gzip' })).headers['content-encoding'], 'gzip');
  await mkAtt('g5', 'a.txt', text, 'text/plain');
  eq((await get('/g5/a.txt', { 'Accept-Encoding': 'gzip' })).headers['content-encoding'], undefined);
  eq((await cfg('attachments', 'compressible_types', null)).status, 200);
  eq((await cfg('attachments', 'compression_level', '0')).status, 200);
  await mkAtt('g6', 'a.txt', text, 'text/plain');
  const g = await get('/g6/a.txt', { 'Accept-Encoding': 'gzip' });
  eq(g.headers['content-encoding'], undefined);
  eq(g.headers['accept-ranges'], 'bytes');
  eq((await cfg('attachments', 'compression_level', null)).status, 200);
});

test('Content-Encoding: gzip on the request: stored as sent, length is the decoded size', async () => {
  const plain = Buffer.from('gzip on the wire '.repeat(500));
  const gz = zlib.gzipSync(plain);
  const r = await put('/g7/z.bin', gz, { 'Content-Type': 'application/octet-stream', 'Content-Encoding': 'gzip' });
  eq(r.status, 201, r.text);
  const d = await doc('g7', '?att_encoding_info=true');
  eq(d._attachments['z.bin'].length, plain.length);
  eq(d._attachments['z.bin'].encoded_length, gz.length);
  eq(d._attachments['z.bin'].encoding, 'gzip');
  const a = await get('/g7/z.bin', { 'Accept-Encoding': 'gzip' });
  eq(a.headers['content-encoding'], 'gzip');
  ok(a.body.equals(gz), 'the bytes as sent');
  const b = await get('/g7/z.bin');
  ok(b.body.equals(plain), 'decoded for a client without gzip');
  // Content-MD5 is the digest of the body as sent
  eq((await put('/g7/z2.bin?rev=' + r.json.rev, gz, { 'Content-Encoding': 'gzip', 'Content-MD5': md5(gz) })).status, 201);
});

test('Content-Encoding: not gzip data 400; an unknown coding 415', async () => {
  isErr(await put('/g8/z.bin', 'not gzip at all', { 'Content-Encoding': 'gzip' }), 400, 'bad_request');
  isErr(await put('/g8/z.bin', Buffer.concat([zlib.gzipSync('a'), Buffer.from('trailing')]), { 'Content-Encoding': 'gzip' }), 400, 'bad_request');
  isErr(await put('/g8/z.bin', 'x', { 'Content-Encoding': 'br' }), 415, 'bad_content_type', 'Only gzip and identity content-encodings are supported');
  eq((await put('/g8/z.bin', 'x', { 'Content-Encoding': 'identity' })).status, 201);
});

// ---- ranges ---------------------------------------------------------------------------

test('ranges: single, open-ended, suffix, clamped; whole with bytes=0-', async () => {
  await mkAtt('r1', 'foo.txt', TEXT);
  const cases = [
    ['bytes=0-28', 206, TEXT, 'bytes 0-28/29'],
    ['bytes=2-', 206, TEXT.slice(2), 'bytes 2-28/29'],
    ['bytes=0-3', 206, 'This', 'bytes 0-3/29'],
    ['bytes=10-15', 206, 'base64', 'bytes 10-15/29'],
    ['bytes=-3', 206, 'ext', 'bytes 26-28/29'],
    ['bytes=-100', 206, TEXT, 'bytes 0-28/29'],
    ['bytes=20-1000', 206, TEXT.slice(20), 'bytes 20-28/29'],
    ['bytes=28-28', 206, 't', 'bytes 28-28/29'],
    ['bytes=0-', 200, TEXT, undefined],
    ['bytes=0-,0-,0-', 200, TEXT, undefined],
    ['bytes:0-', 200, TEXT, undefined],
    ['bytes=x-3', 200, TEXT, undefined],
    ['bytes=0-1,0-1,0-1,0-1,0-1,0-1,0-1,0-1,0-1,0-1', 200, TEXT, undefined],
  ];
  for (const [range, status, body, cr] of cases) {
    const r = await get('/r1/foo.txt', { Range: range });
    eq(r.status, status, range);
    eq(r.text, body, range);
    eq(r.headers['content-range'], cr, range);
    eq(r.headers['content-length'], String(Buffer.byteLength(body)), range);
  }
});

test('ranges: backwards or past the end is 416 with Content-Range bytes */LEN', async () => {
  for (const range of ['bytes=5-3', 'bytes=300-310', 'bytes=29-', 'bytes=-0', 'bytes=0-1,5-3']) {
    const r = await get('/r1/foo.txt', { Range: range });
    isErr(r, 416, 'requested_range_not_satisfiable', 'Requested range not satisfiable');
    eq(r.headers['content-range'], 'bytes */29', range);
  }
});

test('ranges: several ranges are one multipart/byteranges 206', async () => {
  const r = await get('/r1/foo.txt', { Range: 'bytes=0-3,10-15,-3' });
  eq(r.status, 206);
  const m = /^multipart\/byteranges; boundary="([0-9a-f]{32})"$/.exec(r.headers['content-type']);
  ok(m, r.headers['content-type']);
  const b = m[1];
  const want = `--${b}` +
    `\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 0-3/29\r\n\r\nThis\r\n--${b}` +
    `\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 10-15/29\r\n\r\nbase64\r\n--${b}` +
    `\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 26-28/29\r\n\r\next\r\n--${b}--`;
  eq(r.text, want);
  eq(r.headers['content-length'], String(Buffer.byteLength(want)));
});

// ---- Content-MD5 ----------------------------------------------------------------------

test('Content-MD5: a match is stored (and sent back); a mismatch or garbage is 400 and nothing changes', async () => {
  const digest = 'MntvB0NYESObxH4VRDUycw==';
  const r = await put('/h1/attachment.txt', 'foo bar', { 'Content-Type': 'application/octet-stream', 'Content-MD5': digest });
  eq(r.status, 201, r.text);
  eq((await get('/h1/attachment.txt')).headers['content-md5'], digest);
  isErr(await put('/h1/b.txt?rev=' + r.json.rev, 'foo baz', { 'Content-MD5': digest }), 400, 'content_md5_mismatch', 'Possible message corruption.');
  isErr(await put('/h1/b.txt?rev=' + r.json.rev, 'foo baz', { 'Content-MD5': 'not base64!' }), 400, 'content_md5_mismatch');
  eq((await doc('h1'))._rev, r.json.rev);
  // a compressible type: the digest is of the bytes sent, not of what is stored
  const text = 'compress me '.repeat(100);
  eq((await put('/h2/t.txt', text, { 'Content-Type': 'text/plain', 'Content-MD5': md5(text) })).status, 201);
});

// ---- max_attachment_size --------------------------------------------------------------

test('max_attachment_size: at the limit 201, one past it 413 attachment_too_large (Content-Length and chunked)', async () => {
  eq((await cfg('couchdb', 'max_attachment_size', '1000')).status, 200);
  try {
    const at = Buffer.alloc(1000, 'a'), past = Buffer.alloc(1001, 'a');
    eq((await put('/l1/at.bin', at)).status, 201);
    isErr(await put('/l2/past.bin', past), 413, 'attachment_too_large', 'past.bin');
    eq((await put('/l3/at.bin', at, {}, { chunked: true })).status, 201);
    isErr(await put('/l4/past.bin', past, {}, { chunked: true }), 413, 'attachment_too_large', 'past.bin');
    isErr(await get('/l2/past.bin'), 404, 'not_found', 'missing');
    isErr(await get('/l4/past.bin'), 404, 'not_found', 'missing');
    // the limit is on the body as sent: a gzip body of 1001 bytes is too large
    // whatever it decodes to; a text body of 1000 bytes fits though stored smaller
    eq((await put('/l5/t.txt', Buffer.alloc(1000, 'x'), { 'Content-Type': 'text/plain' })).status, 201);
    const big = crypto.randomBytes(2000);
    const gz = zlib.gzipSync(big);
    isErr(await put('/l6/z.bin', gz, { 'Content-Encoding': 'gzip' }), 413, 'attachment_too_large', 'z.bin');
  } finally {
    eq((await cfg('couchdb', 'max_attachment_size', null)).status, 200);
  }
});

test('a Content-Length past the limit is refused before the body is sent', async () => {
  eq((await cfg('couchdb', 'max_attachment_size', '1000')).status, 200);
  try {
    const auth = basicAuth(new URL(U));
    const ans = await rawSocket(srv.port, `PUT /att/l7/huge.bin HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Length: 1001\r\n\r\n`, 2000);
    eq(statusOf(ans), 413, ans);
    ok(ans.includes('"attachment_too_large"') && ans.includes('"huge.bin"'), ans);
    const hugeCl = await rawSocket(srv.port, `PUT /att/l7/huge.bin HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Length: 99999999999999\r\n\r\n`, 2000);
    eq(statusOf(hugeCl), 413, hugeCl);
  } finally {
    eq((await cfg('couchdb', 'max_attachment_size', null)).status, 200);
  }
  // the default (1 GiB) is not max_http_request_size: a body past 64 MiB is
  // not refused by its Content-Length
  const auth = basicAuth(new URL(U));
  const ans = await rawSocket(srv.port, `PUT /att/l8/big.bin HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Length: ${100 << 20}\r\nExpect: 100-continue\r\n\r\n`, 1000);
  eq(statusOf(ans), 100, ans);
});

test('Expect: 100-continue is honoured; another Expect is 417', async () => {
  const auth = basicAuth(new URL(U));
  const ans = await rawSocket(srv.port, `PUT /att/e1/a.txt HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\nhello`);
  ok(/^HTTP\/1\.1 100/.test(ans), ans);
  ok(/HTTP\/1\.1 201/.test(ans), ans);
  eq((await get('/e1/a.txt')).text, 'hello');
  const bad = await rawSocket(srv.port, `PUT /att/e2/a.txt HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Length: 5\r\nExpect: something\r\nConnection: close\r\n\r\n`);
  eq(statusOf(bad), 417, bad);
});

// ---- big bodies -----------------------------------------------------------------------

function rssKb(pid, field) {
  const m = new RegExp(field + ':\\s+(\\d+) kB').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

test('20 MB: upload (chunked), download, ranges across chunks, byte-compare by MD5; memory stays bounded', async () => {
  const data = crypto.randomBytes(20 << 20);
  const r = await put('/big/blob.bin', data, { 'Content-Type': 'application/octet-stream', 'Content-MD5': md5(data) }, { chunked: true });
  eq(r.status, 201, r.text);
  const d = await doc('big');
  eq(d._attachments['blob.bin'].length, data.length);
  eq(d._attachments['blob.bin'].digest, 'md5-' + md5(data));
  const g = await get('/big/blob.bin');
  eq(g.status, 200);
  eq(g.headers['content-length'], String(data.length));
  eq(md5(g.body), md5(data));
  for (const [a, b] of [[99990, 100010], [4194300, 4194400], [(1 << 20) - 1, (3 << 20) + 1], [data.length - 5, data.length - 1]]) {
    const p = await get('/big/blob.bin', { Range: `bytes=${a}-${b}` });
    eq(p.status, 206);
    ok(p.body.equals(data.subarray(a, b + 1)), `range ${a}-${b}`);
  }
  const m = await get('/big/blob.bin', { Range: 'bytes=0-9,10485760-10485769' });
  eq(m.status, 206);
  ok(m.body.includes(data.subarray(10485760, 10485770)), 'second part');
  // a compressible 12 MB text: gzip'd as it arrives, stored through an upload, decoded on the way out
  const text = Buffer.from(crypto.randomBytes(6 << 20).toString('hex'));
  const t = await put('/big/text.txt?rev=' + r.json.rev, text, { 'Content-Type': 'text/plain' });
  eq(t.status, 201, t.text);
  const back = await get('/big/text.txt');
  eq(md5(back.body), md5(text));
  const z = await get('/big/text.txt', { 'Accept-Encoding': 'gzip' });
  eq(z.headers['content-encoding'], 'gzip');
  eq(md5(zlib.gunzipSync(z.body)), md5(text));
  eq(md5((await get('/big/blob.bin')).body), md5(data)); // the other one kept its content
  const hwm = rssKb(srv.pid, 'VmHWM');
  const sanitized = /lib[at]san/.test(fs.readFileSync(`/proc/${srv.pid}/maps`, 'utf8')); // ASan's quarantine is not ours
  if (!sanitized) ok(hwm < 128 * 1024, `server peak RSS ${hwm} kB < 128 MB`);
});

test('a client that leaves mid-download does not disturb the server', async () => {
  await new Promise((resolve) => {
    const u = new URL(DB + '/big/blob.bin');
    const r = http.request({ method: 'GET', hostname: u.hostname, port: u.port, path: u.pathname, headers: { Authorization: basicAuth(u) }, agent: false }, (res) => {
      res.once('data', () => { r.destroy(); resolve(); });
    });
    r.on('error', () => resolve());
    r.end();
  });
  eq((await get('/p1/foo.txt')).text, TEXT);
});

test('content collected mid-download: the connection ends short, never hangs', async () => {
  const data = crypto.randomBytes(24 << 20);
  const rev = await mkAtt('gone', 'blob.bin', data);
  const u = new URL(DB + '/gone/blob.bin');
  let got = 0, len = 0;
  const done = new Promise((resolve) => {
    const r = http.request({ method: 'GET', hostname: u.hostname, port: u.port, path: u.pathname, headers: { Authorization: basicAuth(u) }, agent: false }, (res) => {
      len = Number(res.headers['content-length']);
      res.pause(); // let the server block on a full socket
      setTimeout(async () => {
        const p = await put('/gone/blob.bin?rev=' + rev, 'small now'); // drops the old content
        eq(p.status, 201, p.text);
        res.on('data', (c) => { got += c.length; });
        res.on('end', () => resolve('end'));
        res.on('aborted', () => resolve('aborted'));
        res.on('error', () => resolve('error'));
        res.resume();
      }, 300);
    });
    r.on('error', () => resolve('error'));
    r.end();
  });
  const how = await Promise.race([done, new Promise((res) => setTimeout(() => res('hung'), 20000))]);
  ok(how !== 'hung', 'no hang');
  eq(len, data.length);
  ok(got < len, `short body: ${got} of ${len} (${how})`);
  eq((await get('/gone/blob.bin')).text, 'small now');
});

// ---- POST multipart/form-data ---------------------------------------------------------

function form(parts, boundary = '----TF') {
  let s = '';
  for (const p of parts) {
    s += `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"` + (p.filename ? `; filename="${p.filename}"` : '') + '\r\n';
    if (p.type) s += `Content-Type: ${p.type}\r\n`;
    s += '\r\n' + p.value + '\r\n';
  }
  return s + `--${boundary}--`;
}
const formPost = (id, body, h = {}) => raw('POST', DB + '/' + id, body, Object.assign({
  'Content-Type': 'multipart/form-data; boundary=----TF', Referer: srv.base,
}, h));

test('form upload: _rev and a file → 201 with ETag, the file stored as an attachment', async () => {
  const c = await req('PUT', DB + '/f1', { _id: 'f1', kept: 1 });
  const body = form([{ name: '_rev', value: c.json.rev }, { name: '_attachments', filename: 'file.txt', type: 'text/plain', value: 'contents of file.txt\r\n' }]);
  const r = await formPost('f1', body, { Referer: `http://127.0.0.1:${srv.port}` });
  eq(r.status, 201, r.text);
  eq(r.json.ok, true);
  eq(r.json.id, 'f1');
  eq(r.headers.etag, '"' + r.json.rev + '"');
  const d = await doc('f1');
  eq(d.kept, 1);
  eq(d._attachments['file.txt'].length, 22);
  eq(d._attachments['file.txt'].content_type, 'text/plain');
  eq((await get('/f1/file.txt')).text, 'contents of file.txt\r\n');
});

test('form upload: a second file of the same name replaces it; others are kept; _doc sets the body', async () => {
  const rev = (await doc('f1'))._rev;
  const body = form([{ name: '_rev', value: rev }, { name: '_attachments', filename: 'b.bin', type: 'application/octet-stream', value: 'B' }]);
  const r = await formPost('f1', body, { Referer: `http://127.0.0.1:${srv.port}/_utils/` });
  eq(r.status, 201, r.text);
  const d = await doc('f1');
  eq(Object.keys(d._attachments).sort(), ['b.bin', 'file.txt']);
  const body2 = form([{ name: '_doc', value: JSON.stringify({ _rev: d._rev, fresh: true, _attachments: { 'b.bin': { stub: true } } }) },
    { name: '_attachments', filename: 'file.txt', type: 'text/plain', value: 'new' }]);
  const r2 = await formPost('f1', body2, { Referer: `http://127.0.0.1:${srv.port}` });
  eq(r2.status, 201, r2.text);
  const d2 = await doc('f1');
  eq(d2.fresh, true);
  eq(d2.kept, undefined);
  eq(Object.keys(d2._attachments).sort(), ['b.bin', 'file.txt']);
  eq((await get('/f1/file.txt')).text, 'new');
  eq((await get('/f1/b.bin')).text, 'B');
});

test('form upload: a 6 MB file goes through a store upload and reads back whole', async () => {
  const data = crypto.randomBytes(6 << 20);
  const b = '----TF';
  const body = Buffer.concat([
    Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="_attachments"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    data,
    Buffer.from(`\r\n--${b}\r\nContent-Disposition: form-data; name="_rev"\r\n\r\n${(await doc('f1'))._rev}\r\n--${b}--\r\n`),
  ]);
  const r = await formPost('f1', body);
  eq(r.status, 201, r.text);
  eq(md5((await get('/f1/big.bin')).body), md5(data));
  eq((await doc('f1'))._attachments['big.bin'].length, data.length);
});

test('form upload errors: Referer missing or foreign 400, wrong rev 409, wrong type 415, bad name 400', async () => {
  const rev = (await doc('f1'))._rev;
  const good = form([{ name: '_rev', value: rev }, { name: '_attachments', filename: 'x.txt', type: 'text/plain', value: 'x' }]);
  isErr(await formPost('f1', good, { Referer: null }), 400, 'bad_request', 'Referer header required.');
  isErr(await formPost('f1', good, { Referer: 'http://evil.example/' }), 400, 'bad_request', 'Referer header must match host.');
  const stale = form([{ name: '_rev', value: '1-' + 'a'.repeat(32) }, { name: '_attachments', filename: 'x.txt', value: 'x' }]);
  isErr(await formPost('f1', stale, { Referer: `http://127.0.0.1:${srv.port}` }), 409, 'not_found', 'missing_rev');
  isErr(await formPost('f1', good, { 'Content-Type': 'text/plain', Referer: `http://127.0.0.1:${srv.port}` }), 415, 'bad_content_type');
  const under = form([{ name: '_rev', value: rev }, { name: '_attachments', filename: '_x.txt', value: 'x' }]);
  isErr(await formPost('f1', under, { Referer: `http://127.0.0.1:${srv.port}` }), 400, 'bad_request', "Attachment name '_x.txt' starts with prohibited character '_'");
  isErr(await formPost('f1', 'garbage', { Referer: `http://127.0.0.1:${srv.port}` }), 400, 'bad_request');
  eq((await doc('f1'))._rev, rev);
});

test('the store is consistent after all of it', async () => {
  const info = (await req('GET', DB)).json;
  ok(info.doc_count > 20, JSON.stringify(info));
  const all = (await req('GET', DB + '/_all_docs')).json;
  ok(all.rows.some((x) => x.id === 'big'));
});

test('stop', async () => {
  await srv.stop();
});

run();
