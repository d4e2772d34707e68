// doc.test.js — black-box checks of the document endpoints against a real
// `divan serve`: GET/HEAD/PUT/DELETE/COPY/POST on /{db}/{docid},
// /{db}/_design/{name}, /{db}/_local/{name} and POST /{db}, with
// CouchDB 3.x's statuses, bodies and headers, including every error case.
//
//   DIVAN_BIN=build/x/divan node test/node/http/doc.test.js
'use strict';
const { startDivan } = require('../lib/divan');
const { test, run, req, eq, ok, isErr, assert } = require('../lib/t');

let srv, U, DB;
const REV = /^\d+-[0-9a-f]{32}$/;
const enc = encodeURIComponent;
const q = (o) => '?' + Object.entries(o).map(([k, v]) => k + '=' + enc(typeof v === 'string' ? v : JSON.stringify(v))).join('&');
const get = (path, h) => req('GET', DB + path, undefined, h);
const put = (path, body, h) => req('PUT', DB + path, body, h);
const del = (path, h) => req('DELETE', DB + path, undefined, h);
const copy = (path, dest, h = {}) => req('COPY', DB + path, undefined, dest === undefined ? h : Object.assign({ Destination: dest }, h));
const post = (body, path = '', h) => req('POST', DB + path, body, h);
const etagOf = (rev) => '"' + rev + '"';
const AJ = { Accept: 'application/json' }; // open_revs answers JSON only when asked (else multipart/mixed)
const gen = (rev) => Number(rev.split('-')[0]);

// Create a doc, return its rev.
async function mk(id, body = { v: 1 }) {
  const r = await put('/' + enc(id), body);
  eq(r.status, 201, r.text);
  return r.json.rev;
}

// A doc with two live branches (made with new_edits=false): returns
// { winner, loser } revs, and the common ancestor.
async function withConflict(id) {
  const a = 'a'.repeat(32), b = 'b'.repeat(32), c = 'c'.repeat(32);
  let r = await put('/' + id + '?new_edits=false', { _id: id, _revisions: { start: 2, ids: [b, a] }, n: 'b' });
  eq(r.status, 201, r.text);
  r = await put('/' + id + '?new_edits=false', { _id: id, _revisions: { start: 2, ids: [c, a] }, n: 'c' });
  eq(r.status, 201, r.text);
  return { winner: '2-' + c, loser: '2-' + b, root: '1-' + a };
}

test('setup: start divan, create the database', async () => {
  srv = await startDivan();
  U = srv.url;
  DB = U + '/docs';
  eq((await req('PUT', DB)).status, 201);
});

// ---- PUT --------------------------------------------------------------------

test('PUT a new doc: 201, ok/id/rev, ETag and Location', async () => {
  const r = await put('/p1', { a: 1, nested: { b: [1, 2, { c: null }] } });
  eq(r.status, 201);
  eq(Object.keys(r.json), ['ok', 'id', 'rev']);
  eq(r.json.ok, true);
  eq(r.json.id, 'p1');
  ok(REV.test(r.json.rev) && gen(r.json.rev) === 1, r.json.rev);
  eq(r.headers.etag, etagOf(r.json.rev));
  eq(r.headers.location, srv.base + '/docs/p1');
  const g = await get('/p1');
  eq(g.json, { _id: 'p1', _rev: r.json.rev, a: 1, nested: { b: [1, 2, { c: null }] } });
});

test('PUT an existing doc without a rev: 409 conflict', async () => {
  await mk('p2');
  isErr(await put('/p2', { v: 2 }), 409, 'conflict', 'Document update conflict.');
});

test('PUT with _rev in the body: the next revision', async () => {
  const rev = await mk('p3');
  const r = await put('/p3', { _rev: rev, v: 2 });
  eq(r.status, 201);
  eq(gen(r.json.rev), 2);
  eq((await get('/p3')).json.v, 2);
});

test('PUT with ?rev=', async () => {
  const rev = await mk('p4');
  const r = await put('/p4?rev=' + rev, { v: 2 });
  eq(r.status, 201);
  eq(gen(r.json.rev), 2);
});

test('PUT with If-Match (quoted, as an ETag)', async () => {
  const rev = await mk('p5');
  const r = await put('/p5', { v: 2 }, { 'If-Match': etagOf(rev) });
  eq(r.status, 201);
  eq(gen(r.json.rev), 2);
});

test('PUT with a stale rev: 409', async () => {
  const rev = await mk('p6');
  eq((await put('/p6', { _rev: rev, v: 2 })).status, 201);
  isErr(await put('/p6', { _rev: rev, v: 3 }), 409, 'conflict', 'Document update conflict.');
});

test('PUT with a rev for a doc that does not exist: 409', async () => {
  isErr(await put('/p6b', { _rev: '1-' + 'f'.repeat(32) }), 409, 'conflict');
});

test('PUT: body _rev and ?rev= differ: 400', async () => {
  const rev = await mk('p7');
  isErr(await put('/p7?rev=1-' + 'a'.repeat(32), { _rev: rev }), 400, 'bad_request',
    'Document rev from request body and query string have different values');
});

test('PUT: body _rev and If-Match differ: 400', async () => {
  const rev = await mk('p8');
  isErr(await put('/p8', { _rev: rev }, { 'If-Match': '"1-' + 'a'.repeat(32) + '"' }), 400, 'bad_request',
    'Document rev and etag have different values');
});

test('PUT: ?rev= and If-Match differ: 400', async () => {
  const rev = await mk('p9');
  isErr(await put('/p9?rev=' + rev, {}, { 'If-Match': '1-' + 'a'.repeat(32) }), 400, 'bad_request',
    'Document rev and etag have different values');
});

test('PUT: malformed revs are 400 Invalid rev format', async () => {
  await mk('p10');
  isErr(await put('/p10?rev=abc', {}), 400, 'bad_request', 'Invalid rev format');
  isErr(await put('/p10', { _rev: 'garbage' }), 400, 'bad_request', 'Invalid rev format');
  isErr(await put('/p10', { _rev: 5 }), 400, 'bad_request', 'Invalid rev format');
  isErr(await put('/p10', {}, { 'If-Match': 'nope' }), 400, 'bad_request', 'Invalid rev format');
});

test('PUT: broken JSON, empty body: 400 invalid UTF-8 JSON, store unchanged', async () => {
  const rev = await mk('p11');
  isErr(await put('/p11', '{"_rev":"' + rev + '","v":', { 'Content-Type': 'application/json' }), 400, 'bad_request',
    'invalid UTF-8 JSON');
  isErr(await put('/p11', '', { 'Content-Type': 'application/json' }), 400, 'bad_request', 'invalid UTF-8 JSON');
  isErr(await put('/p11', '{"a":1,}'), 400, 'bad_request', 'invalid UTF-8 JSON');
  eq((await get('/p11')).json._rev, rev);
  isErr(await put('/p11new', '{"a":'), 400, 'bad_request');
  isErr(await get('/p11new'), 404, 'not_found', 'missing');
});

test('PUT: a non-object body: 400 Document must be a JSON object', async () => {
  isErr(await put('/p12', [1, 2]), 400, 'bad_request', 'Document must be a JSON object');
  isErr(await put('/p12', '"str"'), 400, 'bad_request', 'Document must be a JSON object');
  isErr(await put('/p12', 'null'), 400, 'bad_request', 'Document must be a JSON object');
  isErr(await get('/p12'), 404, 'not_found', 'missing');
});

test('PUT: the URL id wins over _id in the body', async () => {
  const r = await put('/p13', { _id: 'other', v: 1 });
  eq(r.status, 201);
  eq(r.json.id, 'p13');
  eq((await get('/p13')).json._id, 'p13');
  isErr(await get('/other'), 404, 'not_found', 'missing');
});

test('PUT: unknown special members: 400 doc_validation', async () => {
  isErr(await put('/p14', { _foo: 1 }), 400, 'doc_validation', 'Bad special document member: _foo');
  isErr(await put('/p14', { a: 1, _deleted: 'yes' }), 400, 'doc_validation', 'Bad special document member: _deleted');
  isErr(await put('/p14', { _revisions: [] }), 400, 'doc_validation', 'Bad special document member: _revisions');
  isErr(await get('/p14'), 404, 'not_found', 'missing');
});

test('PUT: members CouchDB ignores on write (_conflicts, _revs_info, _local_seq)', async () => {
  const r = await put('/p15', { a: 1, _conflicts: ['x'], _revs_info: [], _local_seq: 3, _deleted_conflicts: [] });
  eq(r.status, 201);
  eq((await get('/p15')).json, { _id: 'p15', _rev: r.json.rev, a: 1 });
});

test('PUT: bad _revisions: 400 doc_validation', async () => {
  isErr(await put('/p16', { _revisions: { start: 'x', ids: [] } }), 400, 'doc_validation', "_revisions.start isn't an integer.");
  isErr(await put('/p16', { _revisions: { start: 1.5, ids: [] } }), 400, 'doc_validation', "_revisions.start isn't an integer.");
  isErr(await put('/p16', { _revisions: { start: 1, ids: 'a' } }), 400, 'doc_validation', "_revisions.ids isn't a array.");
  isErr(await put('/p16', { _revisions: { start: 1, ids: [7] } }), 400, 'doc_validation', "RevId isn't a string");
  isErr(await put('/p16', { _revisions: { start: 1, ids: ['z'.repeat(32)] } }), 400, 'doc_validation',
    "RevId isn't a valid hexadecimal");
});

test('PUT: bad ids: 400 illegal_docid', async () => {
  isErr(await put('/p17', { _id: 5 }), 400, 'illegal_docid', 'Document id must be a string');
  isErr(await put('/p17', { _id: '_bad' }), 400, 'illegal_docid', 'Only reserved document ids may start with underscore.');
  isErr(await put('/p17', { _id: '' }), 400, 'illegal_docid', 'Document id must not be empty');
  isErr(await put('/_bad', {}), 400, 'illegal_docid', 'Only reserved document ids may start with underscore.');
  isErr(await put('/%5Fbad', {}), 400, 'illegal_docid', 'Only reserved document ids may start with underscore.');
  isErr(await get('/p17'), 404, 'not_found', 'missing');
});

test('PUT {_deleted:true}: 200 and the doc reads as deleted', async () => {
  const rev = await mk('p18');
  const r = await put('/p18', { _rev: rev, _deleted: true });
  eq(r.status, 200);
  eq(r.json.ok, true);
  eq(gen(r.json.rev), 2);
  eq(r.headers.etag, etagOf(r.json.rev));
  isErr(await get('/p18'), 404, 'not_found', 'deleted');
});

test('PUT recreates a deleted doc on top of its tombstone', async () => {
  const rev = await mk('p19');
  const d = await del('/p19?rev=' + rev);
  eq(d.status, 200);
  const r = await put('/p19', { again: true });
  eq(r.status, 201);
  eq(gen(r.json.rev), 3);
  eq((await get('/p19')).json.again, true);
});

test('PUT new_edits=false stores the given revisions, making conflicts', async () => {
  const { winner, loser } = await withConflict('p20');
  const g = await get('/p20?conflicts=true');
  eq(g.status, 200);
  eq(g.json._rev, winner);
  eq(g.json._conflicts, [loser]);
  eq(g.json.n, 'c');
  eq((await get('/p20?rev=' + loser)).json.n, 'b');
});

test('PUT new_edits=false answers 201 with the rev sent, also when it is known', async () => {
  const rev = '1-' + 'd'.repeat(32);
  let r = await put('/p21?new_edits=false', { _rev: rev, x: 1 });
  eq(r.status, 201);
  eq(r.json, { ok: true, id: 'p21', rev });
  r = await put('/p21?new_edits=false', { _rev: rev, x: 1 });
  eq(r.status, 201);
  eq(r.json.rev, rev);
  r = await put('/p21?new_edits=false&rev=' + '2-' + 'e'.repeat(32), { y: 2 });
  eq(r.status, 201);
  eq(r.json.rev, '2-' + 'e'.repeat(32));
});

test('PUT: _revisions names the rev even when _rev says otherwise (as CouchDB)', async () => {
  const r1 = await mk('p21b');
  const h = r1.split('-')[1];
  const r = await put('/p21b', { _rev: '1-' + 'f'.repeat(32), _revisions: { start: 1, ids: [h] }, v: 2 });
  eq(r.status, 201, r.text);
  eq(gen(r.json.rev), 2);
  isErr(await put('/p21b?rev=' + r1, { _revisions: { start: 2, ids: [r.json.rev.split('-')[1]] } }), 400, 'bad_request',
    'Document rev from request body and query string have different values');
});

test('PUT new_edits=false without a rev: 400', async () => {
  isErr(await put('/p22?new_edits=false', { x: 1 }), 400, 'bad_request',
    'When `new_edits: false`, the document needs `_rev` or `_revisions` specified');
});

test('PUT batch=ok: 202 ok/id, the doc is written', async () => {
  const r = await put('/p23?batch=ok', { b: 1 });
  eq(r.status, 202);
  eq(r.json, { ok: true, id: 'p23' });
  eq((await get('/p23')).json.b, 1);
});

test('PUT a document over max_document_size: 413 document_too_large', async () => {
  const r = await put('/p24', { big: 'x'.repeat(1100000) });
  isErr(r, 413, 'document_too_large');
  isErr(await get('/p24'), 404, 'not_found', 'missing');
});

test('PUT with a bad _attachments member: 400, nothing stored', async () => {
  isErr(await put('/p25', { _attachments: { 'a.txt': { content_type: 'text/plain', data: '!!' } } }), 400, 'bad_request');
  isErr(await put('/p25', { _attachments: { _x: { data: 'aGk=' } } }), 400, 'bad_request');
  isErr(await put('/p25', { _attachments: [] }), 400, 'doc_validation'); // couch_doc:transfer_fields
  isErr(await get('/p25'), 404, 'not_found', 'missing');
  const r = await put('/p25', { _attachments: { 'a.txt': { content_type: 'text/plain', data: 'aGk=' } } });
  eq(r.status, 201, r.text);
  eq((await get('/p25')).json._attachments['a.txt'].length, 2);
});

test('PUT with a malformed boolean parameter: 400 query_parse_error', async () => {
  isErr(await put('/p26?new_edits=maybe', {}), 400, 'query_parse_error');
  isErr(await get('/p26'), 404, 'not_found', 'missing');
});

test('Location follows X-Forwarded-Host and X-Forwarded-Proto', async () => {
  const r = await put('/p26b', {}, { 'X-Forwarded-Host': 'couch.example:8443', 'X-Forwarded-Proto': 'https' });
  eq(r.headers.location, 'https://couch.example:8443/docs/p26b');
  const r2 = await post({ _id: 'p26c' }, '', { 'Content-Type': 'application/json', Host: 'h.example' });
  eq(r2.headers.location, 'http://h.example/docs/p26c');
  eq(r2.headers.etag, undefined);
});

test('PUT needs no JSON Content-Type (CouchDB parses the body anyway)', async () => {
  const r = await put('/p27', '{"t":1}', { 'Content-Type': 'text/plain' });
  eq(r.status, 201);
});

test('design docs: PUT, GET, Location encodes the slash', async () => {
  const r = await put('/_design/dd', { language: 'javascript', views: {} });
  eq(r.status, 201);
  eq(r.json.id, '_design/dd');
  eq(r.headers.location, srv.base + '/docs/_design%2Fdd');
  const g = await get('/_design/dd');
  eq(g.status, 200);
  eq(g.json._id, '_design/dd');
  eq(g.json.language, 'javascript');
  eq((await get('/_design%2Fdd')).json._id, '_design/dd');
  isErr(await put('/_design/dd', {}), 409, 'conflict');
});

test('ids with slashes, spaces and unicode round-trip', async () => {
  for (const id of ['a/b', 'with space', 'ünï€ode', 'q?x&y=1#h', 'plus+sign']) {
    const r = await put('/' + enc(id), { id });
    eq(r.status, 201, id + ': ' + r.text);
    eq(r.json.id, id);
    const g = await get('/' + enc(id));
    eq(g.status, 200, id);
    eq(g.json._id, id);
  }
  const r = await put('/' + enc('a/b/c'), {});
  eq(r.headers.location, srv.base + '/docs/a%2Fb%2Fc');
});

// ---- GET ----------------------------------------------------------------------

test('GET a missing doc: 404 missing; a deleted one: 404 deleted', async () => {
  isErr(await get('/nope'), 404, 'not_found', 'missing');
  const rev = await mk('g1');
  await del('/g1?rev=' + rev);
  isErr(await get('/g1'), 404, 'not_found', 'deleted');
});

test('GET ?rev= a leaf (also a deleted leaf); non-leaf or unknown: 404 missing', async () => {
  const r1 = await mk('g2', { v: 1 });
  const r2 = (await put('/g2', { _rev: r1, v: 2 })).json.rev;
  const g = await get('/g2?rev=' + r2);
  eq(g.json, { _id: 'g2', _rev: r2, v: 2 });
  eq(g.headers.etag, etagOf(r2));
  isErr(await get('/g2?rev=' + r1), 404, 'not_found', 'missing');
  isErr(await get('/g2?rev=9-' + 'a'.repeat(32)), 404, 'not_found', 'missing');
  isErr(await get('/nope?rev=' + r1), 404, 'not_found', 'missing');
  const r3 = (await del('/g2?rev=' + r2)).json.rev;
  eq((await get('/g2?rev=' + r3)).json, { _id: 'g2', _rev: r3, _deleted: true });
});

test('GET ?rev= malformed: 400 Invalid rev format', async () => {
  await mk('g3');
  isErr(await get('/g3?rev=abc'), 400, 'bad_request', 'Invalid rev format');
  isErr(await get('/g3?rev='), 400, 'bad_request', 'Invalid rev format');
});

test('GET ?revs=true: _revisions, newest first', async () => {
  const r1 = await mk('g4');
  const r2 = (await put('/g4', { _rev: r1 })).json.rev;
  const g = await get('/g4?revs=true');
  eq(g.json._revisions, { start: 2, ids: [r2.split('-')[1], r1.split('-')[1]] });
  eq(g.headers.etag, etagOf(r2));
});

test('GET ?revs_info=true: _revs_info, and no ETag (meta)', async () => {
  const r1 = await mk('g5');
  const r2 = (await put('/g5', { _rev: r1 })).json.rev;
  const g = await get('/g5?revs_info=true');
  eq(g.json._revs_info[0], { rev: r2, status: 'available' });
  eq(g.json._revs_info[1].rev, r1);
  eq(g.headers.etag, undefined);
});

test('GET ?conflicts=true: _conflicts only when there are some', async () => {
  await withConflict('g6');
  const g = await get('/g6?conflicts=true');
  eq(g.json._conflicts.length, 1);
  eq(g.headers.etag, undefined);
  await mk('g6b');
  const h = await get('/g6b?conflicts=true');
  eq(h.json._conflicts, undefined);
  ok(h.headers.etag);
});

test('GET ?deleted_conflicts=true and ?meta=true', async () => {
  const { winner, loser } = await withConflict('g7');
  const d = await del('/g7?rev=' + loser);
  eq(d.status, 200);
  const g = await get('/g7?deleted_conflicts=true');
  eq(g.json._rev, winner);
  eq(g.json._deleted_conflicts, [d.json.rev]);
  const m = await get('/g7?meta=true');
  ok(Array.isArray(m.json._revs_info));
  eq(m.json._deleted_conflicts, [d.json.rev]);
  eq(m.json._conflicts, undefined);
  eq(m.headers.etag, undefined);
});

test('GET ?local_seq=true: _local_seq', async () => {
  await mk('g8');
  const g = await get('/g8?local_seq=true');
  ok(g.json._local_seq !== undefined, g.text);
});

test('GET with malformed boolean parameters: 400 query_parse_error', async () => {
  await mk('g9');
  isErr(await get('/g9?revs=yes'), 400, 'query_parse_error');
  isErr(await get('/g9?conflicts=1'), 400, 'query_parse_error');
  isErr(await get('/g9?latest=x'), 400, 'query_parse_error');
});

test('GET ignores unknown parameters and accepts attachment parameters', async () => {
  await mk('g10');
  eq((await get('/g10?whatever=1&r=1')).status, 200);
  eq((await get('/g10?attachments=true&att_encoding_info=true&atts_since=%5B%5D')).status, 200);
});

test('GET ?open_revs=all: every leaf as {"ok":doc}', async () => {
  const { winner, loser } = await withConflict('g11');
  const g = await get('/g11?open_revs=all', AJ);
  eq(g.status, 200);
  ok(Array.isArray(g.json));
  eq(g.json.map((x) => x.ok._rev).sort(), [winner, loser].sort());
  eq(g.headers.etag, undefined);
});

test('GET ?open_revs=[…]: found and missing revs', async () => {
  const { winner } = await withConflict('g12');
  const miss = '3-' + 'f'.repeat(32);
  const g = await get('/g12' + q({ open_revs: [winner, miss] }), AJ);
  eq(g.status, 200);
  eq(g.json.length, 2);
  eq(g.json[0].ok._rev, winner);
  eq(g.json[1], { missing: miss });
});

test('GET ?open_revs=…&revs=true: _revisions in each doc', async () => {
  const { winner } = await withConflict('g13');
  const g = await get('/g13' + q({ open_revs: [winner], revs: 'true' }), AJ);
  eq(g.json[0].ok._revisions, { start: 2, ids: [winner.split('-')[1], 'a'.repeat(32)] });
});

test('GET ?open_revs=[non-leaf]&latest=true: its leaves', async () => {
  const { winner, loser, root } = await withConflict('g14');
  const g = await get('/g14' + q({ open_revs: [root], latest: 'true' }), AJ);
  eq(g.json.map((x) => x.ok._rev).sort(), [winner, loser].sort());
  const h = await get('/g14' + q({ open_revs: [root] }), AJ);
  eq(h.json, [{ missing: root }]);
});

test('GET open_revs on a missing doc: all is 404, a list answers missing', async () => {
  isErr(await get('/nope2?open_revs=all'), 404, 'not_found', 'missing');
  const rev = '1-' + 'a'.repeat(32);
  const g = await get('/nope2' + q({ open_revs: [rev] }), AJ);
  eq(g.status, 200);
  eq(g.json, [{ missing: rev }]);
});

test('GET open_revs malformed: 400', async () => {
  await mk('g15');
  isErr(await get('/g15?open_revs=' + enc('[nope')), 400, 'bad_request', 'invalid UTF-8 JSON');
  isErr(await get('/g15?open_revs=' + enc('{"a":1}')), 400, 'bad_request', 'Invalid list of revisions');
  isErr(await get('/g15?open_revs=' + enc('[1]')), 400, 'bad_request', 'Invalid rev format');
  isErr(await get('/g15?open_revs=' + enc('["bad"]')), 400, 'bad_request', 'Invalid rev format');
});

test('GET ?rev=old&latest=true opens the winner', async () => {
  const r1 = await mk('g16');
  const r2 = (await put('/g16', { _rev: r1, v: 2 })).json.rev;
  const g = await get('/g16?latest=true&rev=' + r1);
  eq(g.status, 200);
  eq(g.json._rev, r2);
});

test('GET ?deleted=true returns the tombstone', async () => {
  const rev = await mk('g17');
  const d = (await del('/g17?rev=' + rev)).json.rev;
  const g = await get('/g17?deleted=true');
  eq(g.status, 200);
  eq(g.json, { _id: 'g17', _rev: d, _deleted: true });
});

test('If-None-Match with the current ETag: 304, no body', async () => {
  const rev = await mk('g18');
  const r = await get('/g18', { 'If-None-Match': etagOf(rev) });
  eq(r.status, 304);
  eq(r.text, '');
  eq(r.headers.etag, etagOf(rev));
  const r2 = await get('/g18', { 'If-None-Match': '"1-' + 'a'.repeat(32) + '", ' + etagOf(rev) });
  eq(r2.status, 304);
});

test('If-None-Match with a stale ETag: 200', async () => {
  const r1 = await mk('g19');
  await put('/g19', { _rev: r1 });
  const r = await get('/g19', { 'If-None-Match': etagOf(r1) });
  eq(r.status, 200);
  ok(r.json && r.json._id === 'g19');
});

test('HEAD: status and ETag without a body', async () => {
  const rev = await mk('g20');
  const r = await req('HEAD', DB + '/g20');
  eq(r.status, 200);
  eq(r.text, '');
  eq(r.headers.etag, etagOf(rev));
  const m = await req('HEAD', DB + '/nope3');
  eq(m.status, 404);
  eq(m.text, '');
  const n = await req('HEAD', DB + '/g20', undefined, { 'If-None-Match': etagOf(rev) });
  eq(n.status, 304);
});

test('GET in a database that does not exist: 404', async () => {
  isErr(await req('GET', U + '/nodb/x'), 404, 'not_found', 'Database does not exist.');
  isErr(await req('PUT', U + '/nodb/x', {}), 404, 'not_found', 'Database does not exist.');
  isErr(await req('DELETE', U + '/nodb/x?rev=1-' + 'a'.repeat(32)), 404, 'not_found', 'Database does not exist.');
});

// ---- DELETE -------------------------------------------------------------------

test('DELETE without a rev: 409 conflict', async () => {
  await mk('d1');
  isErr(await del('/d1'), 409, 'conflict', 'Document update conflict.');
  eq((await get('/d1')).status, 200);
});

test('DELETE ?rev=: 200 ok/id/rev, ETag, no Location', async () => {
  const rev = await mk('d2');
  const r = await del('/d2?rev=' + rev);
  eq(r.status, 200);
  eq(Object.keys(r.json), ['ok', 'id', 'rev']);
  eq(r.json.id, 'd2');
  eq(gen(r.json.rev), 2);
  eq(r.headers.etag, etagOf(r.json.rev));
  eq(r.headers.location, undefined);
  isErr(await get('/d2'), 404, 'not_found', 'deleted');
});

test('DELETE with If-Match', async () => {
  const rev = await mk('d3');
  const r = await del('/d3', { 'If-Match': etagOf(rev) });
  eq(r.status, 200);
});

test('DELETE a missing doc: 404 missing; a deleted one: 404 deleted', async () => {
  isErr(await del('/nope4?rev=1-' + 'a'.repeat(32)), 404, 'not_found', 'missing');
  const rev = await mk('d4');
  await del('/d4?rev=' + rev);
  isErr(await del('/d4?rev=' + rev), 404, 'not_found', 'deleted');
});

test('DELETE with a stale rev: 409; a malformed one: 400', async () => {
  const r1 = await mk('d5');
  await put('/d5', { _rev: r1 });
  isErr(await del('/d5?rev=' + r1), 409, 'conflict', 'Document update conflict.');
  isErr(await del('/d5?rev=xyz'), 400, 'bad_request', 'Invalid rev format');
  const r2 = (await get('/d5')).json._rev;
  isErr(await del('/d5?rev=' + r2, { 'If-Match': etagOf(r1) }), 400, 'bad_request',
    'Document rev and etag have different values');
  eq((await get('/d5')).json._rev, r2);
});

test('DELETE a losing branch leaves the winner', async () => {
  const { winner, loser } = await withConflict('d6');
  const r = await del('/d6?rev=' + loser);
  eq(r.status, 200);
  const g = await get('/d6?conflicts=true');
  eq(g.json._rev, winner);
  eq(g.json._conflicts, undefined);
});

// ---- COPY -----------------------------------------------------------------------

test('COPY without Destination: 400', async () => {
  await mk('c1');
  isErr(await copy('/c1'), 400, 'bad_request', 'Destination header is mandatory for COPY.');
});

test('COPY to an absolute URL: 400', async () => {
  isErr(await copy('/c1', 'http://example.com/db/x'), 400, 'bad_request', 'Destination URL must be relative.');
});

test('COPY to a new id: 201, ok/id/rev, Location and ETag; same content', async () => {
  await put('/c2', { a: [1, { b: 2 }], s: 'x' });
  const r = await copy('/c2', 'c2copy');
  eq(r.status, 201);
  eq(r.json.ok, true);
  eq(r.json.id, 'c2copy');
  ok(REV.test(r.json.rev) && gen(r.json.rev) === 1);
  eq(r.headers.etag, etagOf(r.json.rev));
  eq(r.headers.location, srv.base + '/docs/c2copy');
  eq((await get('/c2copy')).json, { _id: 'c2copy', _rev: r.json.rev, a: [1, { b: 2 }], s: 'x' });
});

test('COPY onto an existing doc: 409 without its rev, 201 with ?rev= in Destination', async () => {
  await put('/c3', { from: 'c3' });
  const tr = await mk('c3t', { old: 1 });
  isErr(await copy('/c3', 'c3t'), 409, 'conflict', 'Document update conflict.');
  const r = await copy('/c3', 'c3t?rev=' + tr);
  eq(r.status, 201);
  eq(gen(r.json.rev), 2);
  eq((await get('/c3t')).json, { _id: 'c3t', _rev: r.json.rev, from: 'c3' });
  isErr(await copy('/c3', 'c3t?rev=' + tr), 409, 'conflict');
  isErr(await copy('/c3', 'c3t?rev=bad'), 400, 'bad_request', 'Invalid rev format');
});

test('COPY a given source rev (?rev= or If-Match): a losing leaf', async () => {
  const { loser } = await withConflict('c4');
  const r = await copy('/c4?rev=' + loser, 'c4old');
  eq(r.status, 201);
  eq((await get('/c4old')).json.n, 'b');
  const r2 = await copy('/c4', 'c4old2', { 'If-Match': etagOf(loser) });
  eq(r2.status, 201);
  eq((await get('/c4old2')).json.n, 'b');
  isErr(await copy('/c4?rev=9-' + 'a'.repeat(32), 'c4x'), 404, 'not_found', 'missing');
  isErr(await copy('/c4?rev=bad', 'c4x'), 400, 'bad_request', 'Invalid rev format');
});

test('COPY a missing or deleted source: 404', async () => {
  isErr(await copy('/nope5', 'x5'), 404, 'not_found', 'missing');
  const rev = await mk('c5');
  await del('/c5?rev=' + rev);
  isErr(await copy('/c5', 'x5'), 404, 'not_found', 'deleted');
});

test('COPY to an illegal id: 400 illegal_docid; encoded ids are decoded', async () => {
  await mk('c6', { k: 6 });
  isErr(await copy('/c6', '_bad'), 400, 'illegal_docid');
  const r = await copy('/c6', 'new%20id');
  eq(r.status, 201);
  eq(r.json.id, 'new id');
  eq((await get('/' + enc('new id'))).json.k, 6);
});

test('COPY to a design doc and to a _local doc', async () => {
  await mk('c7', { k: 7 });
  const d = await copy('/c7', '_design/c7');
  eq(d.status, 201);
  eq((await get('/_design/c7')).json.k, 7);
  const l = await copy('/c7', '_local/c7');
  eq(l.status, 201);
  eq(l.json, { ok: true, id: '_local/c7', rev: '0-1' });
  eq((await get('/_local/c7')).json.k, 7);
});

// ---- POST /{db} ----------------------------------------------------------------

test('POST /db without _id: 201, a fresh 32-hex id, Location', async () => {
  const r = await post({ p: 1 });
  eq(r.status, 201);
  eq(Object.keys(r.json), ['ok', 'id', 'rev']);
  ok(/^[0-9a-f]{32}$/.test(r.json.id), r.json.id);
  ok(REV.test(r.json.rev));
  eq(r.headers.location, srv.base + '/docs/' + r.json.id);
  eq((await get('/' + r.json.id)).json.p, 1);
  const r2 = await post({ p: 2 });
  ok(r2.json.id !== r.json.id);
});

test('POST /db with _id: 201; again: 409; with its _rev: 201', async () => {
  const r = await post({ _id: 'po1', v: 1 });
  eq(r.status, 201);
  eq(r.json.id, 'po1');
  isErr(await post({ _id: 'po1', v: 2 }), 409, 'conflict', 'Document update conflict.');
  const r2 = await post({ _id: 'po1', _rev: r.json.rev, v: 2 });
  eq(r2.status, 201);
  eq(gen(r2.json.rev), 2);
});

test('POST /db needs a JSON Content-Type: 415', async () => {
  isErr(await post('{"a":1}', '', { 'Content-Type': 'text/plain' }), 415, 'bad_content_type');
  isErr(await post('{"a":1}', '', {}), 415, 'bad_content_type');
  eq((await post('{"a":1}', '', { 'Content-Type': 'application/json; charset=utf-8' })).status, 201);
});

test('POST /db: broken JSON, non-object, bad members, bad ids: 400', async () => {
  const h = { 'Content-Type': 'application/json' };
  isErr(await post('{"a":', '', h), 400, 'bad_request', 'invalid UTF-8 JSON');
  isErr(await post('[1]', '', h), 400, 'bad_request', 'Document must be a JSON object');
  isErr(await post({ _bogus: 1 }), 400, 'doc_validation', 'Bad special document member: _bogus');
  isErr(await post({ _id: '' }), 400, 'illegal_docid', 'Document id must not be empty');
  isErr(await post({ _id: '_nope' }), 400, 'illegal_docid', 'Only reserved document ids may start with underscore.');
  isErr(await post({ _id: 'po2', _rev: 'x' }), 400, 'bad_request', 'Invalid rev format');
});

test('POST /db?batch=ok: 202 ok/id and the doc exists', async () => {
  const r = await post({ _id: 'po3', b: 1 }, '?batch=ok');
  eq(r.status, 202);
  eq(r.json, { ok: true, id: 'po3' });
  eq((await get('/po3')).json.b, 1);
  const r2 = await post({ b: 2 }, '?batch=ok');
  eq(r2.status, 202);
  ok(/^[0-9a-f]{32}$/.test(r2.json.id));
});

test('POST /db with a _local or _design id', async () => {
  const l = await post({ _id: '_local/po4', v: 1 });
  eq(l.status, 201);
  eq(l.json, { ok: true, id: '_local/po4', rev: '0-1' });
  const d = await post({ _id: '_design/po4', views: {} });
  eq(d.status, 201);
  eq(d.json.id, '_design/po4');
});

test('POST /db/{docid} is the multipart form upload: 415 for anything else', async () => {
  await mk('po5');
  isErr(await post({ a: 1 }, '/po5'), 415, 'bad_content_type', 'Content-Type must be multipart/form-data');
  isErr(await post({ a: 1 }, '/_po5'), 400, 'illegal_docid');
});

test('other methods on a doc: 405 with CouchDB\'s Allow list', async () => {
  const r = await req('PATCH', DB + '/po5', { a: 1 });
  isErr(r, 405, 'method_not_allowed');
  eq(r.headers.allow, 'DELETE,GET,HEAD,POST,PUT,COPY');
});

// ---- _local documents ------------------------------------------------------------

test('_local: PUT 201 with rev 0-1, GET with ETag, Location', async () => {
  const r = await put('/_local/l1', { cp: 1 });
  eq(r.status, 201);
  eq(r.json, { ok: true, id: '_local/l1', rev: '0-1' });
  eq(r.headers.etag, '"0-1"');
  eq(r.headers.location, srv.base + '/docs/_local%2Fl1');
  const g = await get('/_local/l1');
  eq(g.json, { _id: '_local/l1', _rev: '0-1', cp: 1 });
  eq(g.headers.etag, '"0-1"');
  eq((await get('/_local%2Fl1')).json._id, '_local/l1');
});

test('_local: updates are not rev-checked (CouchDB 3.4): the rev given + 1', async () => {
  await put('/_local/l2', { n: 1 });
  const r0 = await put('/_local/l2', { n: 2 });
  eq([r0.status, r0.json.rev], [201, '0-1']);
  const r = await put('/_local/l2', { _rev: '0-1', n: 2 });
  eq(r.status, 201);
  eq(r.json.rev, '0-2');
  const r2 = await put('/_local/l2?rev=0-2', { n: 3 });
  eq(r2.json.rev, '0-3');
  isErr(await put('/_local/l2', { _rev: '1-abc', n: 9 }), 400, 'bad_request', 'Invalid rev format');
  isErr(await put('/_local/l2', { _rev: 'x' }), 400, 'bad_request', 'Invalid rev format');
  eq((await get('/_local/l2')).json, { _id: '_local/l2', _rev: '0-3', n: 3 });
  const r3 = await put('/_local/l2', { _rev: '0-1', n: 9 });
  eq(r3.json.rev, '0-2');
  eq((await get('/_local/l2')).json, { _id: '_local/l2', _rev: '0-2', n: 9 });
});

test('_local: GET ?revs=true, GET ?rev=, If-None-Match', async () => {
  await put('/_local/l3', { v: 1 });
  eq((await get('/_local/l3?revs=true')).json._revisions, { start: 0, ids: ['1'] });
  eq((await get('/_local/l3?rev=0-1')).status, 200);
  isErr(await get('/_local/l3?rev=0-7'), 404, 'not_found', 'missing');
  eq((await get('/_local/l3', { 'If-None-Match': '"0-1"' })).status, 304);
});

test('_local: DELETE takes any rev (or none); then the doc is gone', async () => {
  await put('/_local/l4', { v: 1 });
  const r0 = await del('/_local/l4');
  eq([r0.status, r0.json], [200, { ok: true, id: '_local/l4', rev: '0-0' }]);
  await put('/_local/l4', { v: 1 });
  const r = await del('/_local/l4?rev=0-5');
  eq(r.status, 200);
  eq(r.json, { ok: true, id: '_local/l4', rev: '0-0' });
  isErr(await get('/_local/l4'), 404, 'not_found', 'missing');
  isErr(await del('/_local/l4?rev=0-1'), 404, 'not_found', 'missing');
  const again = await put('/_local/l4', { v: 2 });
  eq(again.json.rev, '0-1');
});

test('_local: missing doc, bad fields, attachments', async () => {
  isErr(await get('/_local/none'), 404, 'not_found', 'missing');
  isErr(await put('/_local/l5', { _weird: 1 }), 400, 'doc_validation', 'Bad special document member: _weird');
  isErr(await put('/_local/l5', [1]), 400, 'bad_request', 'Document must be a JSON object');
  isErr(await get('/_local/l5/att.txt'), 400, 'bad_request', '_local documents do not accept attachments.');
  isErr(await req('PUT', DB + '/_local/l5/att.txt', 'x', { 'Content-Type': 'text/plain' }), 400, 'bad_request',
    '_local documents do not accept attachments.');
});

test('_local docs are not in _changes and not in _all_docs', async () => {
  await put('/_local/l6', { v: 1 });
  const c = await get('/_changes');
  eq(c.status, 200);
  ok(!c.json.results.some((x) => x.id.startsWith('_local/')), 'no _local row in _changes');
  const a = await get('/_all_docs');
  eq(a.status, 200);
  ok(!a.json.rows.some((x) => x.id.startsWith('_local/')), 'no _local row in _all_docs');
});

test('_local: COPY from a _local doc', async () => {
  await put('/_local/l7', { from: 'l7' });
  const r = await copy('/_local/l7', 'l7copy');
  eq(r.status, 201);
  eq((await get('/l7copy')).json.from, 'l7');
});

// ---- attachment paths (the rest is att.test.js) ------------------------------------------

test('attachment paths: GET finds the doc, then no attachment', async () => {
  await mk('at1');
  isErr(await get('/at1/file.txt'), 404, 'not_found', 'Document is missing attachment');
  isErr(await get('/nope6/file.txt'), 404, 'not_found', 'missing');
});

// ---- store consistency ------------------------------------------------------------------

test('the database counts follow the edits', async () => {
  await req('PUT', U + '/cnt');
  const P = (p, b) => req('PUT', U + '/cnt' + p, b);
  const a = (await P('/a', {})).json.rev;
  await P('/b', {});
  await req('DELETE', U + '/cnt/a?rev=' + a);
  await P('/_local/x', {});
  const info = (await req('GET', U + '/cnt')).json;
  eq(info.doc_count, 1);
  eq(info.doc_del_count, 1);
});

test('teardown', async () => {
  await srv.stop();
});

run();
