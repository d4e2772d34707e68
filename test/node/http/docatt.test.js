// docatt.test.js — attachments at the document level against a real
// `divan serve`: inline `data`, stubs and `follows` in written documents,
// multipart/related PUT bodies (normal, new_edits=false, gzip parts, and
// the malformed ones), attachments=true / atts_since / att_encoding_info on
// reads, multipart/related and multipart/mixed answers, _bulk_get,
// _bulk_docs, _all_docs and _changes with attachments, COPY, and
// max_attachment_size — with CouchDB 3.x's statuses, shapes and reasons.
//
//   DIVAN_BIN=build/cc/divan node test/node/http/docatt.test.js
'use strict';
const crypto = require('crypto');
const http = require('http');
const zlib = require('zlib');
const { startDivan } = require('../lib/divan');
const { test, run, req, eq, ok, isErr, basicAuth } = require('../lib/t');

let srv, U, DB;
const enc = encodeURIComponent;
const md5 = (b) => 'md5-' + crypto.createHash('md5').update(b).digest('base64');
const b64 = (b) => Buffer.from(b).toString('base64');
const J = { Accept: 'application/json' };
const get = (path, h = J) => req('GET', DB + path, undefined, h);
const put = (path, body, h) => req('PUT', DB + path, body, h);
const gen = (rev) => Number(rev.split('-')[0]);
const BIN = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919) & 255));
const TEXT = 'hello attachments! '.repeat(200);

// One request with a Buffer answer: { status, headers, body }.
function raw(method, url, body, headers = {}) {
  const u = new URL(url);
  const h = Object.assign({ Authorization: basicAuth(u) }, headers);
  return new Promise((resolve, reject) => {
    const r = http.request({ method, hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers: h, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    r.on('error', reject);
    if (body !== undefined) r.write(body);
    r.end();
  });
}

// The boundary of a multipart Content-Type.
function boundaryOf(ct) {
  const m = /boundary="?([^";]+)"?/.exec(ct || '');
  ok(m, 'no boundary in ' + ct);
  return m[1];
}

// Split a multipart body into [{ headers: {lower-case name: value}, body: Buffer }].
function parseMultipart(buf, boundary) {
  const delim = Buffer.from('--' + boundary);
  const parts = [];
  let at = buf.indexOf(delim);
  ok(at >= 0, 'no first delimiter');
  for (;;) {
    at += delim.length;
    if (buf.slice(at, at + 2).toString() === '--') break; // closing delimiter
    ok(buf.slice(at, at + 2).toString() === '\r\n', 'delimiter line end');
    at += 2;
    const next = buf.indexOf(Buffer.concat([Buffer.from('\r\n'), delim]), at);
    ok(next >= 0, 'unterminated part');
    const part = buf.slice(at, next);
    const he = part.indexOf('\r\n\r\n');
    const headers = {};
    const head = he >= 0 ? part.slice(0, he).toString() : '';
    for (const line of head.split('\r\n')) {
      const c = line.indexOf(':');
      if (c > 0) headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
    }
    parts.push({ headers, body: he >= 0 ? part.slice(he + 4) : part });
    at = next + 2;
  }
  return parts;
}

// A multipart/related request body: the JSON document, then the parts.
function mpBody(boundary, doc, parts, opts = {}) {
  const chunks = [Buffer.from(`--${boundary}\r\nContent-Type: ${opts.docType || 'application/json'}\r\n\r\n`), Buffer.from(JSON.stringify(doc))];
  for (const p of parts) {
    let h = '';
    for (const [k, v] of Object.entries(p.headers || {})) h += `\r\n${k}: ${v}`;
    chunks.push(Buffer.from(`\r\n--${boundary}${h}\r\n\r\n`), Buffer.from(p.data));
  }
  if (!opts.truncate) chunks.push(Buffer.from(`\r\n--${boundary}--`));
  return Buffer.concat(chunks);
}

const mpPut = (path, body, boundary, h = {}) =>
  req('PUT', DB + path, body, Object.assign({ 'Content-Type': `multipart/related; boundary="${boundary}"` }, h));

async function mk(id, body) {
  const r = await put('/' + enc(id), body);
  eq(r.status, 201, r.text);
  return r.json.rev;
}

test('setup: start divan, create the database', async () => {
  srv = await startDivan();
  U = srv.url;
  DB = U + '/docatt';
  eq((await req('PUT', DB)).status, 201);
});

// ---- inline data ------------------------------------------------------------------

test('inline data round trip: binary stays identity, stub shape, digest, attachments=true', async () => {
  const rev = await mk('a1', { v: 1, _attachments: { 'b.bin': { content_type: 'application/octet-stream', data: b64(BIN) } } });
  eq(gen(rev), 1);
  const g = await get('/a1');
  eq(g.status, 200);
  eq(g.json._attachments, { 'b.bin': { content_type: 'application/octet-stream', revpos: 1, digest: md5(BIN), length: BIN.length, stub: true } });
  const d = await get('/a1?attachments=true');
  eq(d.json._attachments['b.bin'].data, b64(BIN));
  eq(d.json._attachments['b.bin'].digest, md5(BIN));
  eq(d.json._attachments['b.bin'].length, undefined); // CouchDB's inline form has no length
  eq(d.json.v, 1);
  const i = await get('/a1?att_encoding_info=true');
  eq(i.json._attachments['b.bin'].encoding, undefined); // not compressible: stored as sent
});

test('text/plain is stored gzip: encoding info, digest of the gzip bytes, identity data', async () => {
  await mk('a2', { _attachments: { 't.txt': { content_type: 'text/plain', data: b64(TEXT) } } });
  const i = await get('/a2?att_encoding_info=true');
  const st = i.json._attachments['t.txt'];
  eq(st.encoding, 'gzip');
  eq(st.length, TEXT.length);
  ok(st.encoded_length > 0 && st.encoded_length < TEXT.length, JSON.stringify(st));
  eq((await get('/a2')).json._attachments['t.txt'].encoding, undefined);
  const d = await get('/a2?attachments=true&att_encoding_info=true');
  eq(Buffer.from(d.json._attachments['t.txt'].data, 'base64').toString(), TEXT);
  eq(d.json._attachments['t.txt'].encoding, 'gzip');
  // the stored bytes, as the multipart answer sends them
  const m = await raw('GET', DB + '/a2?attachments=true', undefined, { Accept: 'multipart/related' });
  eq(m.status, 200);
  const parts = parseMultipart(m.body, boundaryOf(m.headers['content-type']));
  eq(parts.length, 2);
  eq(parts[1].headers['content-encoding'], 'gzip');
  eq(parts[1].body.length, st.encoded_length);
  eq(md5(parts[1].body), st.digest);
  eq(zlib.gunzipSync(parts[1].body).toString(), TEXT);
});

test('a stub keeps the attachment; dropping _attachments drops it', async () => {
  const r1 = await mk('a3', { _attachments: { 'x.bin': { content_type: 'image/png', data: b64(BIN) } } });
  const r2 = await mk('a3', { _rev: r1, n: 2, _attachments: { 'x.bin': { stub: true } } });
  const g = await get('/a3?attachments=true');
  eq(g.json._rev, r2);
  eq(g.json.n, 2);
  eq(g.json._attachments['x.bin'].revpos, 1);
  eq(g.json._attachments['x.bin'].content_type, 'image/png');
  eq(g.json._attachments['x.bin'].data, b64(BIN));
  // a stub as a client echoes it (revpos, digest, length) keeps it too
  const st = (await get('/a3')).json._attachments['x.bin'];
  const r3 = await mk('a3', { _rev: r2, n: 3, _attachments: { 'x.bin': st } });
  eq((await get('/a3')).json._attachments['x.bin'].digest, md5(BIN));
  const r4 = await mk('a3', { _rev: r3, n: 4 });
  const g4 = await get('/a3');
  eq(g4.json._rev, r4);
  eq(g4.json._attachments, undefined);
});

test('a stub with nothing behind it: 412 missing_stub with CouchDB\'s reason', async () => {
  const r1 = await mk('a4', { _attachments: { 'one.bin': { content_type: 'application/octet-stream', data: b64('1') } } });
  isErr(await put('/a4', { _rev: r1, _attachments: { 'one.bin': { stub: true }, 'two.bin': { stub: true } } }), 412,
    'missing_stub', 'Invalid attachment stub in a4 for two.bin');
  isErr(await put('/a4new', { _attachments: { 'z.bin': { stub: true } } }), 412, 'missing_stub',
    'Invalid attachment stub in a4new for z.bin');
  eq((await get('/a4')).json._rev, r1);
  isErr(await get('/a4new'), 404, 'not_found');
});

test('bad inline attachments: 400 with the attachment named', async () => {
  isErr(await put('/a5', { _attachments: { 'x.bin': { data: '!!not base64!!' } } }), 400, 'bad_request',
    'Invalid attachment data for x.bin');
  isErr(await put('/a5', { _attachments: { _x: { data: 'aGk=' } } }), 400, 'bad_request',
    'Attachment name \'_x\' starts with prohibited character \'_\'');
  isErr(await put('/a5', { _attachments: { 'f.bin': { follows: true, length: 2 } } }), 400, 'bad_request');
  isErr(await put('/a5', { _attachments: [] }), 400, 'doc_validation', 'Bad special document member: _attachments');
  isErr(await get('/a5'), 404, 'not_found');
});

test('POST /db with inline data; empty attachments; many at once', async () => {
  const r = await req('POST', DB, { _id: 'a6', _attachments: {
    'e.txt': { content_type: 'text/plain', data: '' },
    'j.json': { content_type: 'application/json; charset=utf-8', data: b64('{"a":1}') },
    'p.bin': { data: b64(BIN) },
  } });
  eq(r.status, 201, r.text);
  const g = await get('/a6?attachments=true&att_encoding_info=true');
  const a = g.json._attachments;
  eq(Object.keys(a), ['e.txt', 'j.json', 'p.bin']);
  eq(a['e.txt'].data, '');
  eq(Buffer.from(a['j.json'].data, 'base64').toString(), '{"a":1}');
  eq(a['j.json'].encoding, 'gzip');
  eq(a['p.bin'].content_type, 'application/octet-stream');
  eq(a['p.bin'].data, b64(BIN));
});

// ---- atts_since ----------------------------------------------------------------------

test('atts_since: data only for attachments newer than the newest rev named', async () => {
  const r1 = await mk('s1', { _attachments: { 'a.bin': { content_type: 'application/octet-stream', data: b64('AAA') } } });
  const r2 = await mk('s1', { _rev: r1, _attachments: { 'a.bin': { stub: true }, 'b.bin': { content_type: 'application/octet-stream', data: b64('BBB') } } });
  const r3 = await mk('s1', { _rev: r2, x: 1, _attachments: { 'a.bin': { stub: true }, 'b.bin': { stub: true } } });
  const q = (revs) => get('/s1?atts_since=' + enc(JSON.stringify(revs)));
  let g = await q([r1]);
  eq(g.json._rev, r3);
  eq(g.json._attachments['a.bin'].stub, true);
  eq(g.json._attachments['b.bin'].data, b64('BBB'));
  g = await q([r2]);
  eq(g.json._attachments['a.bin'].stub, true);
  eq(g.json._attachments['b.bin'].stub, true);
  g = await q(['9-' + 'f'.repeat(32), r1]); // unknown revs are skipped
  eq(g.json._attachments['b.bin'].data, b64('BBB'));
  g = await q(['1-' + 'f'.repeat(32)]);
  eq(g.json._attachments['a.bin'].data, b64('AAA'));
  eq(g.json._attachments['b.bin'].data, b64('BBB'));
  g = await q([]); // atts_since=[] asks for attachments, as CouchDB
  eq(g.json._attachments['a.bin'].data, b64('AAA'));
  isErr(await get('/s1?atts_since=nope'), 400, 'bad_request');
});

// ---- multipart/related PUT --------------------------------------------------------------

test('multipart/related PUT: follows parts in order, then GET them back', async () => {
  const B = 'abc123boundary';
  const doc = { v: 'mp', _attachments: {
    'one.bin': { follows: true, content_type: 'application/octet-stream', length: BIN.length, digest: md5(BIN) },
    'two.txt': { follows: true, content_type: 'text/plain', length: TEXT.length },
  } };
  const r = await mpPut('/m1', mpBody(B, doc, [{ data: BIN, headers: { 'Content-Type': 'application/octet-stream' } }, { data: TEXT }]), B);
  eq(r.status, 201, r.text);
  eq(gen(r.json.rev), 1);
  const g = await get('/m1?attachments=true&att_encoding_info=true');
  eq(g.json.v, 'mp');
  eq(g.json._attachments['one.bin'].data, b64(BIN));
  eq(g.json._attachments['one.bin'].digest, md5(BIN));
  eq(Buffer.from(g.json._attachments['two.txt'].data, 'base64').toString(), TEXT);
  eq(g.json._attachments['two.txt'].encoding, 'gzip');
  // an update: one stub, one new part
  const doc2 = { _rev: r.json.rev, _attachments: { 'one.bin': { stub: true }, 'three.bin': { follows: true, length: 3 } } };
  const r2 = await mpPut('/m1', mpBody(B, doc2, [{ data: 'xyz' }]), B);
  eq(r2.status, 201, r2.text);
  const g2 = await get('/m1?attachments=true');
  eq(Object.keys(g2.json._attachments).sort(), ['one.bin', 'three.bin']);
  eq(g2.json._attachments['three.bin'].data, b64('xyz'));
  eq(g2.json._attachments['one.bin'].revpos, 1);
  eq(g2.json._attachments['three.bin'].revpos, 2);
});

test('multipart/related PUT with new_edits=false and a gzip part, as the replicator sends it', async () => {
  const B = 'repl-boundary-0001';
  const gz = zlib.gzipSync(Buffer.from(TEXT));
  const ids = ['c'.repeat(32), 'b'.repeat(32), 'a'.repeat(32)];
  const doc = { _id: 'm2', _rev: '3-' + ids[0], _revisions: { start: 3, ids }, f: 1, _attachments: {
    'g.txt': { content_type: 'text/plain', revpos: 2, digest: md5(gz), length: TEXT.length, follows: true, encoding: 'gzip', encoded_length: gz.length },
    'p.bin': { content_type: 'application/octet-stream', revpos: 3, digest: md5(BIN), length: BIN.length, follows: true },
  } };
  const parts = [
    { data: gz, headers: { 'Content-Disposition': 'attachment; filename="g.txt"', 'Content-Type': 'text/plain', 'Content-Length': gz.length, 'Content-Encoding': 'gzip' } },
    { data: BIN, headers: { 'Content-Disposition': 'attachment; filename="p.bin"', 'Content-Type': 'application/octet-stream', 'Content-Length': BIN.length } },
  ];
  const r = await mpPut('/m2?new_edits=false', mpBody(B, doc, parts), B);
  eq(r.status, 201, r.text);
  eq(r.json.rev, '3-' + ids[0]);
  const g = await get('/m2?att_encoding_info=true');
  eq(g.json._rev, '3-' + ids[0]);
  const a = g.json._attachments;
  eq(a['g.txt'], { content_type: 'text/plain', revpos: 2, digest: md5(gz), length: TEXT.length, stub: true, encoding: 'gzip', encoded_length: gz.length });
  eq(a['p.bin'].revpos, 3);
  eq(a['p.bin'].digest, md5(BIN));
  const d = await get('/m2?attachments=true');
  eq(Buffer.from(d.json._attachments['g.txt'].data, 'base64').toString(), TEXT);
  // the stored gzip bytes are the ones sent
  const m = await raw('GET', DB + '/m2?attachments=true', undefined, { Accept: 'multipart/related' });
  const ps = parseMultipart(m.body, boundaryOf(m.headers['content-type']));
  eq(Buffer.compare(ps[1].body, gz), 0);
});

test('multipart/related GET: the JSON part with follows stubs, then the parts; JSON without Accept', async () => {
  const m = await raw('GET', DB + '/m1?attachments=true', undefined, { Accept: 'multipart/related' });
  eq(m.status, 200);
  ok(/^multipart\/related; boundary="[^"]+"$/.test(m.headers['content-type']), m.headers['content-type']);
  ok(m.headers.etag, 'ETag');
  const parts = parseMultipart(m.body, boundaryOf(m.headers['content-type']));
  eq(parts.length, 3);
  eq(parts[0].headers['content-type'], 'application/json');
  const doc = JSON.parse(parts[0].body.toString());
  eq(doc._id, 'm1');
  eq(Object.keys(doc._attachments), ['one.bin', 'three.bin']);
  eq(doc._attachments['one.bin'].follows, true);
  eq(doc._attachments['one.bin'].length, BIN.length);
  eq(doc._attachments['one.bin'].stub, undefined);
  eq(parts[1].headers['content-disposition'], 'attachment; filename="one.bin"');
  eq(Number(parts[1].headers['content-length']), BIN.length);
  eq(Buffer.compare(parts[1].body, BIN), 0);
  eq(parts[2].body.toString(), 'xyz');
  // atts_since leaves the old ones out of the parts
  const rev1 = (await get('/m1?revs=true')).json._revisions;
  const m2 = await raw('GET', DB + '/m1?atts_since=' + enc(JSON.stringify([`${rev1.start - 1}-${rev1.ids[1]}`])), undefined, { Accept: 'multipart/related' });
  const p2 = parseMultipart(m2.body, boundaryOf(m2.headers['content-type']));
  eq(p2.length, 2);
  const d2 = JSON.parse(p2[0].body.toString());
  eq(d2._attachments['one.bin'].stub, true);
  eq(d2._attachments['three.bin'].follows, true);
  // no Accept, or application/json: JSON with inline data
  const j = await raw('GET', DB + '/m1?attachments=true');
  ok(j.headers['content-type'].startsWith('application/json'));
  // a document without attachments answers JSON even to multipart/related
  await mk('plain1', { p: 1 });
  const p = await raw('GET', DB + '/plain1?attachments=true', undefined, { Accept: 'multipart/related' });
  ok(p.headers['content-type'].startsWith('application/json'));
  eq(JSON.parse(p.body.toString()).p, 1);
});

test('open_revs with Accept: multipart/mixed: one part per revision, nested multipart/related', async () => {
  const ids = ['d'.repeat(32), 'a'.repeat(32)];
  let r = await put('/o1?new_edits=false', { _id: 'o1', _revisions: { start: 2, ids }, w: 1, _attachments: { 'o.bin': { content_type: 'application/octet-stream', revpos: 2, data: b64(BIN) } } });
  eq(r.status, 201, r.text);
  r = await put('/o1?new_edits=false', { _id: 'o1', _revisions: { start: 2, ids: ['e'.repeat(32), 'a'.repeat(32)] }, w: 2 });
  eq(r.status, 201, r.text);
  const missing = '2-' + 'f'.repeat(32);
  const m = await raw('GET', DB + '/o1?revs=true&latest=true&open_revs=' + enc(JSON.stringify(['2-' + ids[0], '2-' + 'e'.repeat(32), missing])), undefined, { Accept: 'multipart/mixed' });
  eq(m.status, 200);
  ok(m.headers['content-type'].startsWith('multipart/mixed; boundary="'), m.headers['content-type']);
  const outer = parseMultipart(m.body, boundaryOf(m.headers['content-type']));
  eq(outer.length, 3);
  // the revision with an attachment: multipart/related
  ok(outer[0].headers['content-type'].startsWith('multipart/related; boundary="'), outer[0].headers['content-type']);
  const inner = parseMultipart(outer[0].body, boundaryOf(outer[0].headers['content-type']));
  eq(inner.length, 2);
  const d = JSON.parse(inner[0].body.toString());
  eq(d._rev, '2-' + ids[0]);
  eq(d._revisions, { start: 2, ids });
  eq(d._attachments['o.bin'].follows, true);
  eq(Buffer.compare(inner[1].body, BIN), 0);
  // the one without: application/json
  eq(outer[1].headers['content-type'], 'application/json');
  eq(JSON.parse(outer[1].body.toString()).w, 2);
  // the missing one
  eq(outer[2].headers['content-type'], 'application/json; error="true"');
  eq(JSON.parse(outer[2].body.toString()), { missing });
  // open_revs as JSON with attachments=true: inline data
  const j = await get('/o1?attachments=true&open_revs=' + enc(JSON.stringify(['2-' + ids[0]])));
  eq(j.json[0].ok._attachments['o.bin'].data, b64(BIN));
  const s = await get('/o1?open_revs=all');
  eq(s.json.length, 2);
});

// ---- malformed multipart ----------------------------------------------------------------

test('malformed multipart/related bodies: 400, nothing stored', async () => {
  const rev = await mk('bad1', { keep: true });
  const B = 'bnd';
  const doc = (extra = {}) => Object.assign({ _rev: rev, changed: true, _attachments: { 'f.bin': Object.assign({ follows: true, length: 4 }, extra) } }, {});
  const cases = [
    ['no boundary', () => req('PUT', DB + '/bad1', mpBody(B, doc(), [{ data: 'abcd' }]), { 'Content-Type': 'multipart/related' })],
    ['truncated', () => mpPut('/bad1', mpBody(B, doc(), [{ data: 'abcd' }], { truncate: true }), B)],
    ['part shorter than length', () => mpPut('/bad1', mpBody(B, doc(), [{ data: 'abc' }]), B)],
    ['part longer than length', () => mpPut('/bad1', mpBody(B, doc(), [{ data: 'abcde' }]), B)],
    ['wrong digest', () => mpPut('/bad1', mpBody(B, doc({ digest: md5('nope') }), [{ data: 'abcd' }]), B)],
    ['more parts than follows', () => mpPut('/bad1', mpBody(B, doc(), [{ data: 'abcd' }, { data: 'more' }]), B)],
    ['fewer parts than follows', () => mpPut('/bad1', mpBody(B, doc(), []), B)],
    ['gzip part that is not gzip', () => mpPut('/bad1', mpBody(B, doc({ encoding: 'gzip', encoded_length: 4 }), [{ data: 'abcd' }]), B)],
    ['no parts at all', () => mpPut('/bad1', Buffer.from(`--${B}--`), B)],
    ['broken JSON part', () => mpPut('/bad1', Buffer.from(`--${B}\r\nContent-Type: application/json\r\n\r\n{nope\r\n--${B}--`), B)],
  ];
  for (const [name, fn] of cases) {
    const r = await fn();
    eq(r.status, 400, name + ': ' + r.text);
    eq(r.json.error === 'bad_request' || r.json.error === 'content_md5_mismatch', true, name + ': ' + r.text);
  }
  isErr(await mpPut('/bad1', mpBody(B, doc(), [{ data: 'abcd' }], { docType: 'text/plain' }), B), 415, 'bad_content_type');
  const g = await get('/bad1');
  eq(g.json._rev, rev);
  eq(g.json.changed, undefined);
  eq(g.json._attachments, undefined);
  // and the same body done right works
  const r = await mpPut('/bad1', mpBody(B, doc({ digest: md5('abcd') }), [{ data: 'abcd' }]), B);
  eq(r.status, 201, r.text);
});

// ---- _bulk_get, _bulk_docs, _all_docs, _changes, COPY --------------------------------------

test('_bulk_get: attachments=true inlines data; atts_since per document', async () => {
  const r1 = (await get('/s1?revs=true')).json;
  const first = `1-${r1._revisions.ids[2]}`;
  const r = await req('POST', DB + '/_bulk_get?attachments=true&revs=true', { docs: [{ id: 'a1' }, { id: 's1', atts_since: [first] }] }, J);
  eq(r.status, 200, r.text);
  const a1 = r.json.results[0].docs[0].ok;
  eq(a1._attachments['b.bin'].data, b64(BIN));
  const s1 = r.json.results[1].docs[0].ok;
  eq(s1._attachments['a.bin'].stub, true);
  eq(s1._attachments['b.bin'].data, b64('BBB'));
  // without attachments=true: stubs, unless the item has atts_since
  const r2 = await req('POST', DB + '/_bulk_get', { docs: [{ id: 'a1' }, { id: 's1', atts_since: [first] }] }, J);
  eq(r2.json.results[0].docs[0].ok._attachments['b.bin'].stub, true);
  eq(r2.json.results[1].docs[0].ok._attachments['b.bin'].data, b64('BBB'));
  const r3 = await req('POST', DB + '/_bulk_get?att_encoding_info=true', { docs: [{ id: 'a2' }] }, J);
  eq(r3.json.results[0].docs[0].ok._attachments['t.txt'].encoding, 'gzip');
});

test('_bulk_docs: inline data, stubs, and replicated docs with both; a missing stub is that document\'s row', async () => {
  let r = await req('POST', DB + '/_bulk_docs', { docs: [
    { _id: 'k1', _attachments: { 'k.txt': { content_type: 'text/plain', data: b64('k one') } } },
    { _id: 'k2', _attachments: { 'nope.bin': { stub: true } } },
  ] });
  eq(r.status, 201, r.text);
  eq(r.json[0].ok, true);
  eq(r.json[1], { id: 'k2', error: 'missing_stub', reason: 'Invalid attachment stub in k2 for nope.bin' });
  const k1 = await get('/k1?attachments=true');
  eq(Buffer.from(k1.json._attachments['k.txt'].data, 'base64').toString(), 'k one');
  // what PouchDB sends when it replicates: new_edits=false, data and stubs with digests
  const ids2 = ['2'.repeat(32), '1'.repeat(32)];
  r = await req('POST', DB + '/_bulk_docs', { new_edits: false, docs: [
    { _id: 'k3', _rev: '1-' + ids2[1], _revisions: { start: 1, ids: [ids2[1]] }, _attachments: { 'r.bin': { content_type: 'application/octet-stream', revpos: 1, digest: md5(BIN), data: b64(BIN) } } },
  ] });
  eq(r.status, 201, r.text);
  eq(r.json, []);
  r = await req('POST', DB + '/_bulk_docs', { new_edits: false, docs: [
    { _id: 'k3', _rev: '2-' + ids2[0], _revisions: { start: 2, ids: ids2 }, more: 1, _attachments: { 'r.bin': { content_type: 'application/octet-stream', revpos: 1, digest: md5(BIN), length: BIN.length, stub: true } } },
    { _id: 'k4', _rev: '1-' + ids2[0], _revisions: { start: 1, ids: [ids2[0]] }, _attachments: { 'gone.bin': { stub: true, digest: md5('x') } } },
  ] });
  eq(r.status, 201, r.text);
  eq(r.json.length, 1);
  eq(r.json[0].id, 'k4');
  eq(r.json[0].error, 'missing_stub');
  const k3 = await get('/k3?attachments=true');
  eq(k3.json._rev, '2-' + ids2[0]);
  eq(k3.json._attachments['r.bin'].data, b64(BIN));
  eq(k3.json._attachments['r.bin'].revpos, 1);
  // a bad attachment fails the whole request, as CouchDB's validation
  isErr(await req('POST', DB + '/_bulk_docs', { docs: [{ _id: 'k5' }, { _id: 'k6', _attachments: { 'x': { data: '***' } } }] }), 400,
    'bad_request', 'Invalid attachment data for x');
  isErr(await get('/k5'), 404, 'not_found');
});

test('_all_docs and _changes include_docs with attachments=true', async () => {
  const a = await get('/_all_docs?include_docs=true&attachments=true&keys=' + enc(JSON.stringify(['a1', 'k1'])));
  eq(a.status, 200, a.text);
  eq(a.json.rows[0].doc._attachments['b.bin'].data, b64(BIN));
  eq(Buffer.from(a.json.rows[1].doc._attachments['k.txt'].data, 'base64').toString(), 'k one');
  const s = await get('/_all_docs?include_docs=true&att_encoding_info=true&key=' + enc('"a2"'));
  eq(s.json.rows[0].doc._attachments['t.txt'].encoding, 'gzip');
  eq(s.json.rows[0].doc._attachments['t.txt'].stub, true);
  const c = await get('/_changes?include_docs=true&attachments=true');
  eq(c.status, 200, c.text);
  const row = c.json.results.find((x) => x.id === 'a1');
  eq(row.doc._attachments['b.bin'].data, b64(BIN));
  const c2 = await get('/_changes?include_docs=true');
  eq(c2.json.results.find((x) => x.id === 'a1').doc._attachments['b.bin'].stub, true);
});

test('COPY takes the attachments with it', async () => {
  const r = await req('COPY', DB + '/a2', undefined, { Destination: 'a2copy' });
  eq(r.status, 201, r.text);
  const g = await get('/a2copy?attachments=true&att_encoding_info=true');
  eq(Buffer.from(g.json._attachments['t.txt'].data, 'base64').toString(), TEXT);
  eq(g.json._attachments['t.txt'].encoding, 'gzip');
  eq(g.json._attachments['t.txt'].digest, (await get('/a2')).json._attachments['t.txt'].digest);
});

// ---- limits and config ------------------------------------------------------------------

test('max_attachment_size: at the limit accepted, one past it 413 attachment_too_large', async () => {
  const cfg = U + '/_node/_local/_config/couchdb/max_attachment_size';
  eq((await req('PUT', cfg, '"100"', { 'Content-Type': 'application/json' })).status, 200);
  try {
    const at = Buffer.alloc(100, 7), past = Buffer.alloc(101, 7);
    let r = await put('/lim1', { _attachments: { 'x.bin': { content_type: 'application/octet-stream', data: b64(at) } } });
    eq(r.status, 201, r.text);
    isErr(await put('/lim2', { _attachments: { 'x.bin': { content_type: 'application/octet-stream', data: b64(past) } } }), 413,
      'attachment_too_large', 'x.bin');
    isErr(await get('/lim2'), 404, 'not_found');
    const B = 'limb';
    r = await mpPut('/lim3', mpBody(B, { _attachments: { 'y.bin': { follows: true, length: 100 } } }, [{ data: at }]), B);
    eq(r.status, 201, r.text);
    isErr(await mpPut('/lim4', mpBody(B, { _attachments: { 'y.bin': { follows: true, length: 101 } } }, [{ data: past }]), B), 413,
      'attachment_too_large', 'y.bin');
    isErr(await req('POST', DB + '/_bulk_docs', { docs: [{ _id: 'lim5', _attachments: { 'z.bin': { data: b64(past) } } }] }), 413,
      'attachment_too_large', 'z.bin');
  } finally {
    await req('DELETE', cfg);
  }
});

test('[attachments] compression_level = 0 stores text as sent', async () => {
  const cfg = U + '/_node/_local/_config/attachments/compression_level';
  eq((await req('PUT', cfg, '"0"', { 'Content-Type': 'application/json' })).status, 200);
  try {
    await mk('z0', { _attachments: { 't.txt': { content_type: 'text/plain', data: b64(TEXT) } } });
    const g = await get('/z0?att_encoding_info=true');
    eq(g.json._attachments['t.txt'].encoding, undefined);
    eq(g.json._attachments['t.txt'].digest, md5(TEXT));
  } finally {
    await req('DELETE', cfg);
  }
});

test('a large attachment (past the in-memory budget) round-trips through multipart', async () => {
  const big = crypto.randomBytes(6 << 20);
  const B = 'bigbnd';
  const r = await mpPut('/big1', mpBody(B, { _attachments: { 'big.bin': { follows: true, content_type: 'application/octet-stream', length: big.length, digest: md5(big) } } }, [{ data: big }]), B);
  eq(r.status, 201, r.text);
  const g = await get('/big1');
  eq(g.json._attachments['big.bin'].length, big.length);
  eq(g.json._attachments['big.bin'].digest, md5(big));
  const m = await raw('GET', DB + '/big1?attachments=true', undefined, { Accept: 'multipart/related' });
  const parts = parseMultipart(m.body, boundaryOf(m.headers['content-type']));
  eq(parts[1].body.length, big.length);
  eq(Buffer.compare(parts[1].body, big), 0);
  // and inline data of the same size through _bulk_docs
  const r2 = await req('POST', DB + '/_bulk_docs', { docs: [{ _id: 'big2', _attachments: { 'b.bin': { data: big.toString('base64') } } }] });
  eq(r2.status, 201, r2.text);
  eq(r2.json[0].ok, true, r2.text);
  eq((await get('/big2')).json._attachments['b.bin'].digest, md5(big));
});

// ---- streamed multipart/related PUT (server.c's body sink, hatt_mp_feed) -------------

const fs = require('fs');

function rssKb(pid, field) {
  const m = new RegExp(field + ':\\s+(\\d+) kB').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

// Send a request body given as a list of Buffers, honouring backpressure
// (opts.chunked: Transfer-Encoding: chunked, in pieces of opts.piece bytes;
// else Content-Length). Resolves with { status, json, text }.
function send(method, url, pieces, headers = {}, opts = {}) {
  const u = new URL(url);
  const h = Object.assign({ Authorization: basicAuth(u) }, headers);
  if (!opts.chunked) h['Content-Length'] = pieces.reduce((n, p) => n + p.length, 0);
  return new Promise((resolve, reject) => {
    const r = http.request({ method, hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers: h, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json;
        try { json = JSON.parse(text); } catch (e) { json = undefined; }
        resolve({ status: res.statusCode, json, text });
      });
      res.on('error', reject);
    });
    r.on('error', reject);
    const step = opts.piece || (1 << 20);
    (async () => {
      for (const p of pieces) {
        for (let i = 0; i < p.length; i += step) {
          if (!r.write(p.subarray(i, i + step))) await new Promise((res) => r.once('drain', res));
        }
      }
      r.end();
    })().catch(reject);
  });
}

// The MD5 (base64) of an attachment read back with GET /{db}/{doc}/{att}, streamed.
function attMd5(path) {
  const u = new URL(DB + path);
  return new Promise((resolve, reject) => {
    const h = crypto.createHash('md5');
    let n = 0;
    const r = http.request({ method: 'GET', hostname: u.hostname, port: u.port, path: u.pathname, headers: { Authorization: basicAuth(u) }, agent: false }, (res) => {
      res.on('data', (c) => { h.update(c); n += c.length; });
      res.on('end', () => resolve({ status: res.statusCode, md5: 'md5-' + h.digest('base64'), length: n }));
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end();
  });
}

test('100 MB multipart/related PUT with new_edits=false streams: 201, byte-exact back, server RSS bounded', async () => {
  const big = crypto.randomBytes(100 << 20);
  const digest = md5(big);
  const B = 'big100-boundary';
  const rev = '1-' + 'b'.repeat(32);
  const doc = { _id: 'mp100', _rev: rev, _revisions: { start: 1, ids: ['b'.repeat(32)] }, n: 100, _attachments: {
    'big.bin': { content_type: 'application/octet-stream', revpos: 1, digest, length: big.length, follows: true },
  } };
  const head = Buffer.from(`--${B}\r\nContent-Type: application/json\r\n\r\n${JSON.stringify(doc)}\r\n--${B}\r\n` +
    `Content-Disposition: attachment; filename="big.bin"\r\nContent-Type: application/octet-stream\r\nContent-Length: ${big.length}\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${B}--`);
  const sanitized = /lib[at]san/.test(fs.readFileSync(`/proc/${srv.pid}/maps`, 'utf8')); // ASan's quarantine is not ours
  const before = rssKb(srv.pid, 'VmRSS');
  let peak = 0;
  const poll = setInterval(() => { peak = Math.max(peak, rssKb(srv.pid, 'VmRSS')); }, 20);
  let r;
  try {
    r = await send('PUT', DB + '/mp100?new_edits=false', [head, big, tail], { 'Content-Type': `multipart/related; boundary="${B}"` });
  } finally {
    clearInterval(poll);
  }
  peak = Math.max(peak, rssKb(srv.pid, 'VmRSS'));
  eq(r.status, 201, r.text);
  eq(r.json.rev, rev);
  const g = await get('/mp100');
  eq(g.json.n, 100);
  eq(g.json._attachments['big.bin'].length, big.length);
  eq(g.json._attachments['big.bin'].digest, digest);
  const back = await attMd5('/mp100/big.bin');
  eq(back.status, 200);
  eq(back.length, big.length);
  eq(back.md5, digest);
  if (process.env.T_VERBOSE) console.log(`  server VmRSS during the 100 MB upload: ${before} kB before, ${peak} kB at most`);
  if (!sanitized) ok(peak < 200 * 1024, `server RSS ${peak} kB < 200 MB during the upload`);
});

test('a chunked multipart/related PUT streams (small and past the in-memory budget, gzip on the fly)', async () => {
  const B = 'chunked-bnd';
  const big = crypto.randomBytes(5 << 20);
  const text = Buffer.from(crypto.randomBytes(3 << 20).toString('hex')); // 6 MB of compressible text
  const doc = { c: 1, _attachments: {
    'small.bin': { follows: true, content_type: 'application/octet-stream', length: BIN.length, digest: md5(BIN) },
    'big.bin': { follows: true, content_type: 'application/octet-stream', length: big.length },
    'text.txt': { follows: true, content_type: 'text/plain', length: text.length },
  } };
  const body = mpBody(B, doc, [{ data: BIN }, { data: big, headers: { 'Content-MD5': crypto.createHash('md5').update(big).digest('base64') } }, { data: text }]);
  const r = await send('PUT', DB + '/mpc1', [body], { 'Content-Type': `multipart/related; boundary="${B}"` }, { chunked: true, piece: 7000 });
  eq(r.status, 201, r.text);
  eq((await attMd5('/mpc1/small.bin')).md5, md5(BIN));
  eq((await attMd5('/mpc1/big.bin')).md5, md5(big));
  eq((await attMd5('/mpc1/text.txt')).md5, md5(text));
  const i = await get('/mpc1?att_encoding_info=true');
  eq(i.json._attachments['text.txt'].encoding, 'gzip');
  ok(i.json._attachments['text.txt'].encoded_length < text.length, 'stored smaller');
  eq(i.json._attachments['big.bin'].encoding, undefined);
  // a small one, chunked in tiny pieces (delimiters split across pieces)
  const s = await send('PUT', DB + '/mpc2', [mpBody(B, { _attachments: { 'a.txt': { follows: true, length: 5 } } }, [{ data: 'hello' }])],
    { 'Content-Type': `multipart/related; boundary="${B}"` }, { chunked: true, piece: 3 });
  eq(s.status, 201, s.text);
  eq((await get('/mpc2?attachments=true')).json._attachments['a.txt'].data, b64('hello'));
});

test('streamed multipart errors: chunked malformed bodies, a part\'s Content-MD5, conflicts, _design rights; nothing stored', async () => {
  const rev = await mk('sm1', { keep: 1 });
  const B = 'errb';
  const doc = (extra = {}) => ({ _rev: rev, changed: true, _attachments: { 'f.bin': Object.assign({ follows: true, length: 4 }, extra) } });
  const sendc = (id, body) => send('PUT', DB + '/' + id, [body], { 'Content-Type': `multipart/related; boundary="${B}"` }, { chunked: true, piece: 5 });
  const cases = [
    ['truncated', mpBody(B, doc(), [{ data: 'abcd' }], { truncate: true })],
    ['short part', mpBody(B, doc(), [{ data: 'abc' }])],
    ['long part', mpBody(B, doc(), [{ data: 'abcde' }])],
    ['extra part', mpBody(B, doc(), [{ data: 'abcd' }, { data: 'x' }])],
    ['missing part', mpBody(B, doc(), [])],
    ['wrong digest', mpBody(B, doc({ digest: md5('zzzz') }), [{ data: 'abcd' }])],
    ['wrong part Content-MD5', mpBody(B, doc(), [{ data: 'abcd', headers: { 'Content-MD5': crypto.createHash('md5').update('zzzz').digest('base64') } }])],
    ['bad part Content-MD5', mpBody(B, doc(), [{ data: 'abcd', headers: { 'Content-MD5': 'nope' } }])],
    ['gzip that is not', mpBody(B, doc({ encoding: 'gzip', encoded_length: 4 }), [{ data: 'abcd' }])],
    ['broken JSON', Buffer.from(`--${B}\r\nContent-Type: application/json\r\n\r\n{nope\r\n--${B}--`)],
  ];
  for (const [name, body] of cases) {
    const r = await sendc('sm1', body);
    eq(r.status, 400, name + ': ' + r.text);
    ok(r.json.error === 'bad_request' || r.json.error === 'content_md5_mismatch', name + ': ' + r.text);
  }
  isErr(await sendc('sm1', mpBody(B, doc(), [{ data: 'abcd' }], { docType: 'text/plain' })), 415, 'bad_content_type');
  isErr(await sendc('sm1', mpBody(B, { _rev: '1-' + 'f'.repeat(32), _attachments: { 'f.bin': { follows: true, length: 4 } } }, [{ data: 'abcd' }])),
    409, 'conflict');
  isErr(await sendc('sm1', mpBody(B, { _attachments: { 'f.bin': { follows: true, length: 4 } } }, [{ data: 'abcd' }])), 409, 'conflict');
  const g = await get('/sm1');
  eq(g.json._rev, rev);
  eq(g.json.changed, undefined);
  eq(g.json._attachments, undefined);
  // the right part Content-MD5 passes
  const good = await sendc('sm1', mpBody(B, doc(), [{ data: 'abcd', headers: { 'Content-MD5': crypto.createHash('md5').update('abcd').digest('base64') } }]));
  eq(good.status, 201, good.text);
  // anonymous: the database is admin-only by default, refused before the body
  const anon = await send('PUT', srv.base + '/docatt/sm2', [mpBody(B, doc(), [{ data: 'abcd' }])], { 'Content-Type': `multipart/related; boundary="${B}"`, Authorization: null });
  eq(anon.status, 401, anon.text);
  // a design document with a follows attachment
  const d = await send('PUT', DB + '/_design/mpd', [mpBody(B, { views: {}, _attachments: { 'i.html': { follows: true, content_type: 'text/html', length: 4 } } }, [{ data: '<p/>' }])],
    { 'Content-Type': `multipart/related; boundary="${B}"` }, { chunked: true });
  eq(d.status, 201, d.text);
  eq((await attMd5('/_design/mpd/i.html')).md5, md5('<p/>'));
  // _local documents are not streamed and still answered
  const l = await mpPut('/_local/mpl', mpBody(B, { x: 1 }, []), B);
  eq(l.status, 201, l.text);
});

test('streamed multipart: max_attachment_size at the limit 201, one byte past it 413 (chunked too)', async () => {
  const cfg = U + '/_node/_local/_config/couchdb/max_attachment_size';
  eq((await req('PUT', cfg, '"1000"', { 'Content-Type': 'application/json' })).status, 200);
  try {
    const B = 'limb2';
    const at = crypto.randomBytes(1000), past = crypto.randomBytes(1001);
    const body = (data) => mpBody(B, { _attachments: { 'y.bin': { follows: true, content_type: 'application/octet-stream', length: data.length } } }, [{ data }]);
    const h = { 'Content-Type': `multipart/related; boundary="${B}"` };
    let r = await send('PUT', DB + '/ml1', [body(at)], h);
    eq(r.status, 201, r.text);
    eq((await attMd5('/ml1/y.bin')).md5, md5(at));
    isErr(await send('PUT', DB + '/ml2', [body(past)], h), 413, 'attachment_too_large', 'y.bin');
    r = await send('PUT', DB + '/ml3', [body(at)], h, { chunked: true, piece: 100 });
    eq(r.status, 201, r.text);
    isErr(await send('PUT', DB + '/ml4', [body(past)], h, { chunked: true, piece: 100 }), 413, 'attachment_too_large', 'y.bin');
    // a part longer than the length it declared is a 400, even at the limit
    const lie = mpBody(B, { _attachments: { 'y.bin': { follows: true, length: 10 } } }, [{ data: past }]);
    eq((await send('PUT', DB + '/ml5', [lie], h, { chunked: true })).status, 400);
    for (const id of ['ml2', 'ml4', 'ml5']) isErr(await get('/' + id), 404, 'not_found');
  } finally {
    await req('DELETE', cfg);
  }
});

test('streamed multipart: the JSON part is bounded by max_http_request_size, the attachments are not', async () => {
  const small = await startDivan({ args: ['--max-request-size', '65536'] });
  try {
    const D = small.url + '/lim';
    eq((await req('PUT', D)).status, 201);
    const B = 'maxb';
    const h = { 'Content-Type': `multipart/related; boundary="${B}"` };
    const big = crypto.randomBytes(1 << 20); // 16x max_http_request_size, in one attachment
    let r = await send('PUT', D + '/ok', [mpBody(B, { _attachments: { 'a.bin': { follows: true, length: big.length } } }, [{ data: big }])], h);
    eq(r.status, 201, r.text);
    // a plain JSON body that size is still refused
    isErr(await req('PUT', D + '/plain', { pad: 'x'.repeat(70000) }), 413, 'too_large');
    // and so is a JSON part past it, streamed (chunked, no Content-Length)
    r = await send('PUT', D + '/fat', [mpBody(B, { pad: 'x'.repeat(70000), _attachments: { 'a.bin': { follows: true, length: 1 } } }, [{ data: 'a' }])], h, { chunked: true });
    eq(r.status, 413, r.text);
    eq(r.json.error, 'too_large');
    // junk past the closing delimiter beyond the allowance is refused too
    r = await send('PUT', D + '/junk', [mpBody(B, { _attachments: { 'a.bin': { follows: true, length: 1 } } }, [{ data: 'a' }]), Buffer.alloc(200000, 'j')], h, { chunked: true });
    eq(r.status, 413, r.text);
    isErr(await req('GET', D + '/fat'), 404, 'not_found');
    isErr(await req('GET', D + '/junk'), 404, 'not_found');
  } finally {
    await small.stop();
  }
});

test('stop', async () => {
  await srv.stop();
});

run();
