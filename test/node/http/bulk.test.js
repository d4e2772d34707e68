// bulk.test.js — black-box checks of the bulk endpoints against a real
// `divan serve`, as CouchDB 3.x answers them: POST /{db}/_bulk_docs
// (interactive and new_edits=false, _local/ documents, per-document
// conflicts, whole-request refusals of bad documents), /_bulk_get,
// /_revs_diff, /_missing_revs, and the _all_docs family (_all_docs,
// _design_docs, _local_docs, GET and POST, keys mode, /queries) with every
// parameter and error. Bad requests get CouchDB's status and body and
// change nothing.
'use strict';
const { test, run, req, eq, ok, isErr } = require('../lib/t');
const { startDivan } = require('../lib/divan');

let srv, U;
const J = { 'Content-Type': 'application/json' };
const REV1 = /^1-[0-9a-f]{32}$/;
const h32 = (c) => c.repeat(32);
const enc = (v) => encodeURIComponent(JSON.stringify(v));

const post = (path, body, headers = J) => req('POST', U + path, body, headers);
const bulk = (db, docs, extra = {}) => post(`/${db}/_bulk_docs`, Object.assign({ docs }, extra));
const get = (path) => req('GET', U + path);
const info = async (db) => (await get('/' + db)).json;
const ids = (r) => r.json.rows.map((x) => x.id);
const revOf = async (db, id) => {
  const r = await post(`/${db}/_all_docs`, { keys: [id] });
  return r.json.rows[0].value && r.json.rows[0].value.rev;
};
// A database's state, to prove that a refused request changed nothing.
const snapshot = async (db) => {
  const i = await info(db);
  const a = await get(`/${db}/_all_docs?include_docs=true`);
  const l = await get(`/${db}/_local_docs?include_docs=true`);
  return { seq: i.update_seq, count: i.doc_count, del: i.doc_del_count, all: a.json.rows, local: l.json.rows };
};

test('start', async () => {
  srv = await startDivan();
  U = srv.url;
  for (const db of ['bd', 'bg', 'rd', 'ad', 'dd', 'ld', 'bad']) eq((await req('PUT', `${U}/${db}`)).status, 201);
});

// ---- _bulk_docs ---------------------------------------------------------------

test('_bulk_docs creates documents: 201, one entry per doc, in order', async () => {
  const r = await bulk('bd', [{ _id: 'b', v: 1 }, { _id: 'a', v: 2 }, { _id: 'c' }]);
  eq(r.status, 201, r.text);
  eq(r.json.map((x) => [x.ok, x.id]), [[true, 'b'], [true, 'a'], [true, 'c']]);
  for (const x of r.json) { ok(REV1.test(x.rev), x.rev); eq(Object.keys(x), ['ok', 'id', 'rev']); }
  eq((await info('bd')).doc_count, 3);
});

test('_bulk_docs: a document without _id gets a uuid', async () => {
  const r = await bulk('bd', [{ n: 1 }, { n: 2 }]);
  eq(r.status, 201);
  ok(/^[0-9a-f]{32}$/.test(r.json[0].id), r.json[0].id);
  ok(r.json[0].id !== r.json[1].id);
  const g = await post('/bd/_all_docs?include_docs=true', { keys: [r.json[0].id] });
  eq(g.json.rows[0].doc.n, 1);
  // one request's ids are one run of the sequence: one prefix, ascending
  // (the store settles that none exists with one range read)
  const docs = [];
  for (let i = 0; i < 500; i++) docs.push(i % 7 ? { n: i } : { _id: `given${i}`, n: i });
  const m = await bulk('bd', docs);
  eq(m.status, 201);
  const ids = m.json.filter((x, i) => i % 7).map((x) => x.id);
  eq(ids.length, 428);
  ok(m.json.every((x) => x.ok), JSON.stringify(m.json.find((x) => !x.ok)));
  for (let i = 1; i < ids.length; i++) {
    eq(ids[i].slice(0, 26), ids[0].slice(0, 26));
    ok(ids[i] > ids[i - 1], `${ids[i]} after ${ids[i - 1]}`);
  }
  eq(m.json[7].id, 'given7');
  const all = await post('/bd/_all_docs', { keys: [ids[0], ids[427], 'given490'] });
  ok(all.json.rows.every((row) => row.value && row.value.rev), JSON.stringify(all.json.rows));
});

test('_bulk_docs: the same content gives the same rev on two databases', async () => {
  const a = await bulk('bd', [{ _id: 'same', x: [1, 2] }]);
  const b = await bulk('bad', [{ _id: 'same', x: [1, 2] }]);
  eq(a.json[0].rev, b.json[0].rev);
});

test('_bulk_docs updates with _rev and reports conflicts per document', async () => {
  const rev = await revOf('bd', 'a');
  const r = await bulk('bd', [{ _id: 'a', _rev: rev, v: 3 }, { _id: 'b', _rev: '1-' + h32('0'), v: 9 }, { _id: 'c', v: 1 }]);
  eq(r.status, 201);
  eq(r.json[0].ok, true);
  ok(/^2-[0-9a-f]{32}$/.test(r.json[0].rev));
  eq(r.json[1], { id: 'b', error: 'conflict', reason: 'Document update conflict.' });
  eq(r.json[2], { id: 'c', error: 'conflict', reason: 'Document update conflict.' });
});

test('_bulk_docs: the same id twice in one request, the second is a conflict', async () => {
  const r = await bulk('bd', [{ _id: 'twice', n: 1 }, { _id: 'twice', n: 2 }]);
  eq(r.json[0].ok, true);
  eq(r.json[1], { id: 'twice', error: 'conflict', reason: 'Document update conflict.' });
});

test('_bulk_docs deletes with _deleted and recreates on top of the tombstone', async () => {
  const before = await info('bd');
  const rev = await revOf('bd', 'c');
  const d = await bulk('bd', [{ _id: 'c', _rev: rev, _deleted: true }]);
  eq(d.json[0].ok, true);
  ok(/^2-/.test(d.json[0].rev));
  const after = await info('bd');
  eq(after.doc_count, before.doc_count - 1);
  eq(after.doc_del_count, before.doc_del_count + 1);
  ok(!ids(await get('/bd/_all_docs')).includes('c'));
  const again = await bulk('bd', [{ _id: 'c', back: true }]);
  ok(/^3-/.test(again.json[0].rev), again.text);
});

test('_bulk_docs stores design documents', async () => {
  const r = await bulk('bd', [{ _id: '_design/x', views: {} }]);
  eq(r.json[0].ok, true);
  eq(r.json[0].id, '_design/x');
});

test('_bulk_docs with an empty docs array answers []', async () => {
  const r = await bulk('bd', []);
  eq(r.status, 201);
  eq(r.json, []);
});

test('_bulk_docs writes _local/ documents: rev 0-N (the rev given + 1, never checked), delete', async () => {
  let r = await bulk('bd', [{ _id: '_local/cp', seq: 1 }]);
  eq(r.json, [{ ok: true, id: '_local/cp', rev: '0-1' }]);
  r = await bulk('bd', [{ _id: '_local/cp', _rev: '0-1', seq: 2 }]);
  eq(r.json, [{ ok: true, id: '_local/cp', rev: '0-2' }]);
  r = await bulk('bd', [{ _id: '_local/cp', seq: 3 }]);
  eq(r.json, [{ ok: true, id: '_local/cp', rev: '0-1' }]);
  r = await bulk('bd', [{ _id: '_local/cp', _rev: '0-1', seq: 2 }]);
  eq(r.json, [{ ok: true, id: '_local/cp', rev: '0-2' }]);
  const l = await get('/bd/_local_docs?include_docs=true');
  eq(l.json.rows.map((x) => [x.id, x.value.rev, x.doc.seq]), [['_local/cp', '0-2', 2]]);
  ok(!ids(await get('/bd/_all_docs')).includes('_local/cp'));
  r = await bulk('bd', [{ _id: '_local/cp', _rev: '0-2', _deleted: true }]);
  eq(r.json, [{ ok: true, id: '_local/cp', rev: '0-0' }]);
  eq((await get('/bd/_local_docs')).json.rows, []);
});

test('_bulk_docs new_edits=false answers [] and stores the revs as sent', async () => {
  const rev = '1-' + h32('a');
  const r = await bulk('bd', [{ _id: 'rep', _rev: rev, x: 1 }], { new_edits: false });
  eq(r.status, 201);
  eq(r.json, []);
  eq(await revOf('bd', 'rep'), rev);
});

test('_bulk_docs new_edits=false with _revisions adds a branch (a conflict)', async () => {
  const r = await bulk('bd', [{ _id: 'rep', _rev: '2-' + h32('c'), _revisions: { start: 2, ids: [h32('c'), h32('b')] }, y: 1 },
    { _id: 'rep', _revisions: { start: 3, ids: [h32('d'), h32('e'), h32('a')] }, z: 1 }], { new_edits: false });
  eq(r.json, []);
  eq(await revOf('bd', 'rep'), '3-' + h32('d'));
  const a = await post('/bd/_all_docs?include_docs=true&conflicts=true', { keys: ['rep'] });
  eq(a.json.rows[0].doc._conflicts, ['2-' + h32('c')]);
});

test('_bulk_docs new_edits=false: a rev already stored writes nothing', async () => {
  const seq = (await info('bd')).update_seq;
  const r = await bulk('bd', [{ _id: 'rep', _rev: '1-' + h32('a'), x: 1 }], { new_edits: false });
  eq(r.json, []);
  eq((await info('bd')).update_seq, seq);
});

test('_bulk_docs new_edits=false writes _local/ documents whatever their rev', async () => {
  const r = await bulk('bd', [{ _id: '_local/rp', _rev: '0-7', a: 1 }], { new_edits: false });
  eq(r.json, []);
  const r2 = await bulk('bd', [{ _id: '_local/rp', _rev: '0-1', a: 2 }], { new_edits: false });
  eq(r2.json, []);
  const l = await post('/bd/_local_docs?include_docs=true', { keys: ['_local/rp'] });
  eq(l.json.rows[0].doc.a, 2);
});

test('_bulk_docs refuses the whole request for a bad document (CouchDB messages)', async () => {
  const snap = await snapshot('bd');
  const good = { _id: 'never', v: 1 };
  const cases = [
    [[good, 'str'], 400, 'bad_request', 'Document must be a JSON object'],
    [[good, [1]], 400, 'bad_request', 'Document must be a JSON object'],
    [[good, { _id: 5 }], 400, 'illegal_docid', 'Document id must be a string'],
    [[good, { _id: '' }], 400, 'illegal_docid', 'Document id must not be empty'],
    [[good, { _id: '_foo' }], 400, 'illegal_docid', 'Only reserved document ids may start with underscore.'],
    [[good, { _id: '_design/' }], 400, 'illegal_docid', 'Illegal document id `_design/`'],
    [[good, { _id: '_local/' }], 400, 'illegal_docid', 'Illegal document id `_local/`'],
    [[good, { _id: 'x'.repeat(5000) }], 400, 'illegal_docid', 'Document id is too long'],
    [[good, { _id: 'r', _rev: 'abc' }], 400, 'bad_request', 'Invalid rev format'],
    [[good, { _id: 'r', _rev: 7 }], 400, 'bad_request', 'Invalid rev format'],
    [[good, { _id: 'r', _rev: 'x-1' }], 400, 'bad_request', 'Invalid rev format'],
    [[good, { _id: 'r', _foo: 1 }], 400, 'doc_validation', 'Bad special document member: _foo'],
    [[good, { _id: 'r', _deleted: 'yes' }], 400, 'doc_validation', 'Bad special document member: _deleted'],
    [[good, { _id: 'r', _revisions: 5 }], 400, 'doc_validation', 'Bad special document member: _revisions'],
    [[good, { _id: 'r', _revisions: { start: 'x', ids: [] } }], 400, 'doc_validation', "_revisions.start isn't an integer."],
    [[good, { _id: 'r', _revisions: { start: 1, ids: 'a' } }], 400, 'doc_validation', "_revisions.ids isn't a array."],
    [[good, { _id: 'r', _revisions: { start: 1, ids: [1] } }], 400, 'doc_validation', "RevId isn't a string"],
    [[good, { _id: '_local/x', _rev: '0-x' }], 400, 'bad_request', 'Invalid rev format'],
  ];
  for (const [docs, st, err, reason] of cases) isErr(await bulk('bd', docs), st, err, reason);
  eq(await snapshot('bd'), snap);
});

test('_bulk_docs: a document past max_document_size fails alone', async () => {
  const big = 'x'.repeat(1100000);
  const r = await bulk('bd', [{ _id: 'big', s: big }, { _id: 'small' }]);
  eq(r.status, 201);
  eq(r.json[0].id, 'big');
  eq(r.json[0].error, 'document_too_large');
  eq(r.json[1].ok, true);
  const rep = await bulk('bd', [{ _id: 'big', _rev: '1-' + h32('b'), s: big }], { new_edits: false });
  eq(rep.json.length, 1);
  eq([rep.json[0].id, rep.json[0].rev, rep.json[0].error], ['big', '1-' + h32('b'), 'document_too_large']);
  eq((await post('/bd/_all_docs', { keys: ['big'] })).json.rows[0], { key: 'big', error: 'not_found' });
});

test('_bulk_docs new_edits=false: several leaves of one id in one request all land', async () => {
  const docs = ['1', '2', '3'].map((c) => ({ _id: 'many', _rev: '1-' + h32(c), c }));
  eq((await bulk('bd', docs, { new_edits: false })).json, []);
  const g = await post('/bd/_bulk_get', { docs: [{ id: 'many' }] });
  eq(g.json.results[0].docs.map((x) => x.ok._rev).sort(), docs.map((x) => x._rev));
  const d = await post('/bd/_revs_diff', { many: docs.map((x) => x._rev) });
  eq(d.json, {});
});

test('_bulk_docs new_edits=false needs _rev or _revisions', async () => {
  isErr(await bulk('bd', [{ _id: 'norev' }], { new_edits: false }), 400, 'bad_request',
    'When `new_edits: false`, the document needs `_rev` or `_revisions` specified');
});

test('_bulk_docs: body errors', async () => {
  const snap = await snapshot('bd');
  isErr(await post('/bd/_bulk_docs', {}), 400, 'bad_request', 'POST body must include `docs` parameter.');
  isErr(await post('/bd/_bulk_docs', { docs: {} }), 400, 'bad_request', '`docs` parameter must be an array.');
  isErr(await post('/bd/_bulk_docs', { docs: 'x' }), 400, 'bad_request', '`docs` parameter must be an array.');
  isErr(await bulk('bd', [{ _id: 'ne' }], { new_edits: 'false' }), 400, 'bad_request', '`new_edits` parameter must be a boolean.');
  isErr(await post('/bd/_bulk_docs', '{"docs":[', J), 400, 'bad_request', 'invalid UTF-8 JSON');
  isErr(await post('/bd/_bulk_docs', '', J), 400, 'bad_request', 'invalid UTF-8 JSON');
  isErr(await post('/bd/_bulk_docs', [{ _id: 'x' }]), 400, 'bad_request', 'Request body must be a JSON object');
  eq(await snapshot('bd'), snap);
});

test('_bulk_docs: 415 without a JSON content type', async () => {
  isErr(await post('/bd/_bulk_docs', JSON.stringify({ docs: [{ _id: 'ct' }] }), { 'Content-Type': 'text/plain' }),
    415, 'bad_content_type');
  isErr(await post('/bd/_bulk_docs', JSON.stringify({ docs: [] }), {}), 415, 'bad_content_type');
  const ok2 = await post('/bd/_bulk_docs', JSON.stringify({ docs: [] }), { 'Content-Type': 'application/json; charset=utf-8' });
  eq(ok2.status, 201);
});

test('_bulk_docs: 405 for other methods, 404 for a missing db', async () => {
  const r = await get('/bd/_bulk_docs');
  isErr(r, 405, 'method_not_allowed');
  eq(r.headers.allow, 'POST');
  isErr(await req('PUT', U + '/bd/_bulk_docs', { docs: [] }), 405, 'method_not_allowed');
  isErr(await bulk('nodb', [{ _id: 'x' }]), 404, 'not_found', 'Database does not exist.');
});

test('_bulk_docs: more than 10000 docs is 413 max_bulk_docs_count_exceeded', async () => {
  const docs = Array.from({ length: 10001 }, () => ({}));
  isErr(await bulk('bad', docs), 413, 'max_bulk_docs_count_exceeded', '10000');
});

test('_bulk_docs of 1000 documents', async () => {
  const docs = Array.from({ length: 1000 }, (_, i) => ({ _id: 'k' + String(i).padStart(4, '0'), i }));
  const r = await bulk('bad', docs);
  eq(r.status, 201);
  eq(r.json.length, 1000);
  ok(r.json.every((x, i) => x.ok && x.id === docs[i]._id));
  eq((await get('/bad/_all_docs?limit=0')).json.total_rows, 1001);
});

// ---- _bulk_get ------------------------------------------------------------------

let g1, g2; // revs of doc "g" (two generations)
test('_bulk_get setup: a doc with two revisions, a conflict, a deletion', async () => {
  g1 = (await bulk('bg', [{ _id: 'g', v: 1 }])).json[0].rev;
  g2 = (await bulk('bg', [{ _id: 'g', _rev: g1, v: 2 }])).json[0].rev;
  eq((await bulk('bg', [{ _id: 'cf', _rev: '1-' + h32('1'), a: 1 }, { _id: 'cf', _rev: '1-' + h32('2'), b: 1 }],
    { new_edits: false })).json, []);
  const d1 = (await bulk('bg', [{ _id: 'del', v: 1 }])).json[0].rev;
  eq((await bulk('bg', [{ _id: 'del', _rev: d1, _deleted: true }])).json[0].ok, true);
  eq((await bulk('bg', [{ _id: '_local/lg', q: 1 }])).json[0].rev, '0-1');
});

test('_bulk_get by id gives the winner', async () => {
  const r = await post('/bg/_bulk_get', { docs: [{ id: 'g' }] });
  eq(r.status, 200);
  eq(r.json, { results: [{ id: 'g', docs: [{ ok: { _id: 'g', _rev: g2, v: 2 } }] }] });
});

test('_bulk_get by id and rev; a non-leaf rev is missing', async () => {
  const r = await post('/bg/_bulk_get', { docs: [{ id: 'g', rev: g2 }, { id: 'g', rev: g1 }] });
  eq(r.json.results[0].docs, [{ ok: { _id: 'g', _rev: g2, v: 2 } }]);
  eq(r.json.results[1].docs, [{ error: { id: 'g', rev: g1, error: 'not_found', reason: 'missing' } }]);
});

test('_bulk_get latest=true turns an old rev into its leaf', async () => {
  const r = await post('/bg/_bulk_get?latest=true', { docs: [{ id: 'g', rev: g1 }] });
  eq(r.json.results[0].docs, [{ ok: { _id: 'g', _rev: g2, v: 2 } }]);
});

test('_bulk_get revs=true adds _revisions', async () => {
  const r = await post('/bg/_bulk_get?revs=true', { docs: [{ id: 'g' }] });
  const d = r.json.results[0].docs[0].ok;
  eq(d._revisions, { start: 2, ids: [g2.slice(2), g1.slice(2)] });
});

test('_bulk_get of a conflicted doc without rev gives every leaf', async () => {
  const r = await post('/bg/_bulk_get', { docs: [{ id: 'cf' }] });
  const revs = r.json.results[0].docs.map((x) => x.ok._rev).sort();
  eq(revs, ['1-' + h32('1'), '1-' + h32('2')]);
});

test('_bulk_get of a deleted doc gives the tombstone', async () => {
  const r = await post('/bg/_bulk_get', { docs: [{ id: 'del' }] });
  const d = r.json.results[0].docs[0].ok;
  eq(d._deleted, true);
  ok(/^2-/.test(d._rev));
});

test('_bulk_get: missing documents and revisions', async () => {
  const r = await post('/bg/_bulk_get', { docs: [{ id: 'nope' }, { id: 'nope', rev: '1-' + h32('9') }, { id: 'g', rev: '5-' + h32('9') }] });
  eq(r.json.results, [
    { id: 'nope', docs: [{ error: { id: 'nope', rev: 'undefined', error: 'not_found', reason: 'missing' } }] },
    { id: 'nope', docs: [{ error: { id: 'nope', rev: '1-' + h32('9'), error: 'not_found', reason: 'missing' } }] },
    { id: 'g', docs: [{ error: { id: 'g', rev: '5-' + h32('9'), error: 'not_found', reason: 'missing' } }] },
  ]);
});

test('_bulk_get: per-document input errors, in request order', async () => {
  const r = await post('/bg/_bulk_get', { docs: ['x', {}, { rev: g1 }, { id: 'g', rev: 'bad' }, { id: '_bad' },
    { id: 'g', rev: 12 }, { id: 'g', atts_since: 'x' }, { id: 'g' }] });
  eq(r.status, 200);
  const res = r.json.results;
  eq(res[0], { id: null, docs: [{ error: { id: null, rev: null, error: 'bad_request', reason: 'document must be a JSON object' } }] });
  eq(res[1], { id: null, docs: [{ error: { id: null, rev: null, error: 'bad_request', reason: 'document must be a JSON object' } }] });
  eq(res[2], { id: null, docs: [{ error: { id: null, rev: null, error: 'bad_request', reason: 'document id missed' } }] });
  eq(res[3], { id: 'g', docs: [{ error: { id: 'g', rev: 'bad', error: 'bad_request', reason: 'Invalid rev format' } }] });
  eq(res[4], { id: '_bad', docs: [{ error: { id: '_bad', rev: null, error: 'illegal_docid', reason: 'Only reserved document ids may start with underscore.' } }] });
  eq(res[5].docs[0].error.rev, 12);
  eq(res[5].docs[0].error.reason, 'Invalid rev format');
  eq(res[6].docs[0].error, { id: 'g', rev: 'x', error: 'bad_request', reason: 'att_since value must be array of revs.' });
  eq(res[7].docs[0].ok._rev, g2);
});

test('_bulk_get of a _local/ document', async () => {
  const r = await post('/bg/_bulk_get', { docs: [{ id: '_local/lg' }, { id: '_local/none' }] });
  eq(r.json.results[0].docs, [{ ok: { _id: '_local/lg', _rev: '0-1', q: 1 } }]);
  eq(r.json.results[1].docs[0].error.error, 'not_found');
});

test('_bulk_get: request errors', async () => {
  isErr(await post('/bg/_bulk_get', {}), 400, 'bad_request', "Missing JSON list of 'docs'.");
  isErr(await post('/bg/_bulk_get', [1]), 400, 'bad_request', 'Request body must be a JSON object');
  isErr(await post('/bg/_bulk_get', '{', J), 400, 'bad_request', 'invalid UTF-8 JSON');
  for (const p of ['rev', 'open_revs', 'new_edits', 'w', 'atts_since'])
    isErr(await post(`/bg/_bulk_get?${p}=x`, { docs: [] }), 400, 'bad_request', `"${p}" query parameter is not acceptable`);
  isErr(await post('/bg/_bulk_get', JSON.stringify({ docs: [] }), { 'Content-Type': 'text/plain' }), 415, 'bad_content_type');
  const m = await get('/bg/_bulk_get');
  isErr(m, 405, 'method_not_allowed');
  eq(m.headers.allow, 'POST');
  isErr(await post('/nodb/_bulk_get', { docs: [] }), 404, 'not_found', 'Database does not exist.');
  eq((await post('/bg/_bulk_get', { docs: [] })).json, { results: [] });
});

// ---- _revs_diff and _missing_revs ------------------------------------------------------

let r1, r2;
test('_revs_diff setup', async () => {
  r1 = (await bulk('rd', [{ _id: 'd', n: 1 }])).json[0].rev;
  r2 = (await bulk('rd', [{ _id: 'd', _rev: r1, n: 2 }])).json[0].rev;
});

test('_revs_diff: unknown doc, all revs missing, no possible_ancestors', async () => {
  const r = await post('/rd/_revs_diff', { nodoc: ['1-' + h32('a'), '2-' + h32('b')] });
  eq(r.status, 200);
  eq(r.json, { nodoc: { missing: ['1-' + h32('a'), '2-' + h32('b')] } });
});

test('_revs_diff: known revs (leaf or ancestor) are left out, and so are ids with nothing missing', async () => {
  const r = await post('/rd/_revs_diff', { d: [r1, r2] });
  eq(r.json, {});
});

test('_revs_diff: possible_ancestors are the leaves older than a missing rev', async () => {
  const m = '3-' + h32('f');
  const r = await post('/rd/_revs_diff', { d: [r2, m, '1-' + h32('e')] });
  eq(r.json, { d: { missing: [m, '1-' + h32('e')], possible_ancestors: [r2] } });
  const old = await post('/rd/_revs_diff', { d: ['1-' + h32('e')] });
  eq(old.json, { d: { missing: ['1-' + h32('e')] } });
});

test('_revs_diff: several ids, in request order', async () => {
  const r = await post('/rd/_revs_diff', { z: ['1-' + h32('1')], d: [r2], a: ['1-' + h32('2')] });
  eq(Object.keys(r.json), ['z', 'a']);
  eq((await post('/rd/_revs_diff', {})).json, {});
});

test('_revs_diff: errors', async () => {
  isErr(await post('/rd/_revs_diff', { d: 'x' }), 400, 'bad_request', 'Invalid list of revisions');
  isErr(await post('/rd/_revs_diff', { d: ['nodash'] }), 400, 'bad_request', 'Invalid rev format');
  isErr(await post('/rd/_revs_diff', { d: [5] }), 400, 'bad_request', 'Invalid rev format');
  isErr(await post('/rd/_revs_diff', [1]), 400, 'bad_request', 'Request body must be a JSON object');
  isErr(await post('/rd/_revs_diff', 'nope', J), 400, 'bad_request', 'invalid UTF-8 JSON');
  isErr(await post('/rd/_revs_diff', JSON.stringify({}), { 'Content-Type': 'text/plain' }), 415, 'bad_content_type');
  const m = await get('/rd/_revs_diff');
  isErr(m, 405, 'method_not_allowed');
  eq(m.headers.allow, 'POST');
  isErr(await post('/nodb/_revs_diff', {}), 404, 'not_found', 'Database does not exist.');
});

test('_missing_revs: only the missing revs, by id', async () => {
  const r = await post('/rd/_missing_revs', { d: [r1, r2, '9-' + h32('9')], x: ['1-' + h32('1')], none: [] });
  eq(r.status, 200);
  eq(r.json, { missing_revs: { d: ['9-' + h32('9')], x: ['1-' + h32('1')] } });
  eq((await post('/rd/_missing_revs', { d: [r2] })).json, { missing_revs: {} });
});

test('_missing_revs: errors', async () => {
  isErr(await post('/rd/_missing_revs', { d: {} }), 400, 'bad_request', 'Invalid list of revisions');
  isErr(await post('/rd/_missing_revs', { d: ['x'] }), 400, 'bad_request', 'Invalid rev format');
  isErr(await post('/rd/_missing_revs', '[', J), 400, 'bad_request', 'invalid UTF-8 JSON');
  isErr(await req('PUT', U + '/rd/_missing_revs', {}), 405, 'method_not_allowed');
  isErr(await post('/nodb/_missing_revs', {}), 404, 'not_found');
});

// ---- _all_docs --------------------------------------------------------------------

const AD = ['A', '_design/one', '_design/two', 'a', 'b', 'c', 'd', 'e'];
let adRevs = {};
test('_all_docs setup', async () => {
  const r = await bulk('ad', AD.map((id) => ({ _id: id, n: id })).reverse());
  for (const x of r.json) adRevs[x.id] = x.rev;
  // a deleted doc and a conflicted one
  const z = (await bulk('ad', [{ _id: 'zdel' }])).json[0].rev;
  await bulk('ad', [{ _id: 'zdel', _rev: z, _deleted: true }]);
  await bulk('ad', [{ _id: 'e', _rev: '1-' + h32('0'), other: 1 }], { new_edits: false });
  await bulk('ad', [{ _id: '_local/one', l: 1 }]);
});

test('_all_docs: every live doc in id order, total_rows = doc_count, offset 0', async () => {
  const r = await get('/ad/_all_docs');
  eq(r.status, 200);
  eq(Object.keys(r.json), ['total_rows', 'offset', 'rows']);
  eq(r.json.total_rows, 8);
  eq(r.json.offset, 0);
  eq(ids(r), AD);
  eq(r.json.rows[3], { id: 'a', key: 'a', value: { rev: adRevs.a } });
  eq(r.json.total_rows, (await info('ad')).doc_count);
});

test('_all_docs include_docs=true and conflicts=true', async () => {
  const r = await get('/ad/_all_docs?include_docs=true');
  eq(r.json.rows[3].doc, { _id: 'a', _rev: adRevs.a, n: 'a' });
  ok(!('_conflicts' in r.json.rows[7].doc));
  const c = await get('/ad/_all_docs?include_docs=true&conflicts=true&key=' + enc('e'));
  eq(c.json.rows[0].doc._conflicts, ['1-' + h32('0')]);
  const nodoc = await get('/ad/_all_docs?conflicts=true&limit=1');
  ok(!('doc' in nodoc.json.rows[0]));
});

test('_all_docs descending=true', async () => {
  const r = await get('/ad/_all_docs?descending=true');
  eq(ids(r), AD.slice().reverse());
  eq(r.json.offset, 0);
});

test('_all_docs startkey/endkey and their aliases, inclusive_end', async () => {
  eq(ids(await get(`/ad/_all_docs?startkey=${enc('b')}&endkey=${enc('d')}`)), ['b', 'c', 'd']);
  eq(ids(await get(`/ad/_all_docs?start_key=${enc('b')}&end_key=${enc('d')}`)), ['b', 'c', 'd']);
  eq(ids(await get(`/ad/_all_docs?startkey=${enc('b')}&endkey=${enc('d')}&inclusive_end=false`)), ['b', 'c']);
  eq(ids(await get(`/ad/_all_docs?startkey=${enc('d')}&endkey=${enc('b')}&descending=true`)), ['d', 'c', 'b']);
  eq(ids(await get(`/ad/_all_docs?startkey=${enc('d')}&endkey=${enc('b')}&descending=true&inclusive_end=false`)), ['d', 'c']);
  eq(ids(await get(`/ad/_all_docs?startkey=${enc('bb')}`)), ['c', 'd', 'e']);
  eq(ids(await get(`/ad/_all_docs?startkey=${enc('d')}&endkey=${enc('b')}`)), []);
});

test('_all_docs offset counts the live docs before the first row', async () => {
  eq((await get(`/ad/_all_docs?startkey=${enc('b')}`)).json.offset, 4);
  eq((await get(`/ad/_all_docs?startkey=${enc('b')}&skip=1`)).json.offset, 5);
  eq((await get(`/ad/_all_docs?startkey=${enc('b')}&descending=true`)).json.offset, 3);
  eq((await get(`/ad/_all_docs?startkey=${enc('zzz')}`)).json.offset, 8);
  eq((await get('/ad/_all_docs?skip=100')).json.offset, 8);
});

test('_all_docs limit and skip', async () => {
  const r = await get('/ad/_all_docs?limit=2&skip=3');
  eq(ids(r), ['a', 'b']);
  eq(r.json.offset, 3);
  const z = await get('/ad/_all_docs?limit=0');
  eq(z.json, { total_rows: 8, offset: 0, rows: [] });
  eq(ids(await get('/ad/_all_docs?skip=7')), ['e']);
  eq(ids(await get('/ad/_all_docs?descending=true&limit=1&skip=1')), ['d']);
});

test('_all_docs key=', async () => {
  eq(ids(await get(`/ad/_all_docs?key=${enc('c')}`)), ['c']);
  eq(ids(await get(`/ad/_all_docs?key=${enc('zdel')}`)), []);
});

test('_all_docs startkey_docid / endkey_docid apply when no string key is given', async () => {
  eq(ids(await get('/ad/_all_docs?startkey_docid=c&endkey_docid=d')), ['c', 'd']);
  eq(ids(await get('/ad/_all_docs?start_key_doc_id=c&end_key_doc_id=d')), ['c', 'd']);
  eq(ids(await get(`/ad/_all_docs?startkey=${enc('b')}&startkey_docid=d&endkey=${enc('c')}`)), ['b', 'c']);
  // a key that is not a string is ignored on _all_docs, as in CouchDB
  eq(ids(await get('/ad/_all_docs?startkey=1&endkey=2')), AD);
});

test('_all_docs keys=: one row per key, in order, with missing and deleted rows', async () => {
  const r = await get('/ad/_all_docs?keys=' + enc(['c', 'nope', 'zdel', 'a', 7]));
  eq(r.json.total_rows, 8);
  eq(r.json.offset, null);
  eq(r.json.rows[0], { id: 'c', key: 'c', value: { rev: adRevs.c } });
  eq(r.json.rows[1], { key: 'nope', error: 'not_found' });
  eq(r.json.rows[2].id, 'zdel');
  eq(r.json.rows[2].value.deleted, true);
  ok(/^2-/.test(r.json.rows[2].value.rev));
  ok(!('doc' in r.json.rows[2]));
  eq(r.json.rows[3].id, 'a');
  eq(r.json.rows[4], { key: 7, error: 'not_found' });
  const d = await get('/ad/_all_docs?include_docs=true&keys=' + enc(['zdel', 'b']));
  eq(d.json.rows[0].doc, null);
  eq(d.json.rows[1].doc.n, 'b');
});

test('_all_docs keys may name a _local/ document (fabric open_doc reads it)', async () => {
  const r = await post('/ad/_all_docs?include_docs=true', { keys: ['a', '_local/one', '_local/none', 'b'] });
  eq(r.json.rows.map((x) => x.key), ['a', '_local/one', '_local/none', 'b']);
  eq(r.json.rows[1], { id: '_local/one', key: '_local/one', value: { rev: '0-1' }, doc: { _id: '_local/one', _rev: '0-1', l: 1 } });
  eq(r.json.rows[2], { key: '_local/none', error: 'not_found' });
  eq(r.json.rows[3].doc.n, 'b');
  // ...but a range never shows them
  ok(!ids(await get('/ad/_all_docs')).includes('_local/one'));
});

test('_all_docs POST keys, with descending, skip and limit over the keys', async () => {
  const r = await post('/ad/_all_docs', { keys: ['b', 'a', 'c', 'd'] });
  eq(r.status, 200);
  eq(ids(r), ['b', 'a', 'c', 'd']);
  eq(ids(await post('/ad/_all_docs', { keys: ['b', 'a', 'c', 'd'], descending: true })), ['d', 'c', 'a', 'b']);
  eq(ids(await post('/ad/_all_docs', { keys: ['b', 'a', 'c', 'd'], skip: 1, limit: 2 })), ['a', 'c']);
  eq(ids(await post('/ad/_all_docs?limit=1', { keys: ['b', 'a'] })), ['b']);
  eq((await post('/ad/_all_docs', { keys: [] })).json.rows, []);
});

test('_all_docs POST without keys is a range query; body and query string parameters combine', async () => {
  eq(ids(await post('/ad/_all_docs', {})), AD);
  const r = await post('/ad/_all_docs?include_docs=true', { startkey: 'c', limit: 2 });
  eq(ids(r), ['c', 'd']);
  eq(r.json.rows[0].doc.n, 'c');
  eq(ids(await post('/ad/_all_docs?limit=1', { limit: 3 })), ['A']);
  eq(ids(await post('/ad/_all_docs', { startkey_docid: 'd', descending: 'true' })), ['d', 'c', 'b', 'a', '_design/two', '_design/one', 'A']);
});

test('_all_docs update_seq=true', async () => {
  const seq = (await info('ad')).update_seq;
  const r = await get('/ad/_all_docs?update_seq=true&limit=1');
  eq(Object.keys(r.json), ['total_rows', 'offset', 'update_seq', 'rows']);
  eq(r.json.update_seq, seq);
  eq((await post('/ad/_all_docs?update_seq=true', { keys: ['a'] })).json.update_seq, null);
});

test('_all_docs ignores unknown parameters and accepts stale/stable/update/sorted', async () => {
  eq(ids(await get('/ad/_all_docs?foo=bar&stale=ok&stable=true&update=lazy&sorted=false&attachments=false')), AD);
});

test('_all_docs HEAD answers 200', async () => {
  const r = await req('HEAD', U + '/ad/_all_docs');
  eq(r.status, 200);
  eq(r.text, '');
});

test('_all_docs: query_parse_error for bad parameters', async () => {
  const bad = [
    ['limit=abc', 'Invalid value for integer: "abc"'],
    ['limit=-1', 'Invalid value for positive integer: "-1"'],
    ['limit=1.5', 'Invalid value for integer: "1.5"'],
    ['skip=x', 'Invalid value for integer: "x"'],
    ['skip=-3', 'Invalid value for positive integer: "-3"'],
    ['descending=yes', 'Invalid boolean parameter: "yes"'],
    ['include_docs=1', 'Invalid boolean parameter: "1"'],
    ['inclusive_end=', 'Invalid boolean parameter: ""'],
    ['conflicts=nah', 'Invalid boolean parameter: "nah"'],
    ['update_seq=2', 'Invalid boolean parameter: "2"'],
    [`key=${enc('a')}&keys=${enc(['a'])}`, '`keys` is incompatible with `key`, `start_key` and `end_key`'],
    [`startkey=${enc('a')}&keys=${enc(['a'])}`, '`keys` is incompatible with `key`, `start_key` and `end_key`'],
    ['keys=null', '`keys` must be an array of strings.'],
    ['reduce=true', 'Reduce is invalid for map-only views.'],
    ['group=true', 'Invalid use of grouping on a map view.'],
    ['group_level=2', 'Invalid use of grouping on a map view.'],
    ['group=false&group_level=2', "Can't specify group=false and group_level>0 at the same time"],
    ['stale=bad', 'Invalid value for `stale`.'],
    ['stable=maybe', 'Invalid value for `stable`.'],
    ['update=never', 'Invalid value for `update`.'],
    ['partition=p', '`partition` parameter is not supported on this db'],
  ];
  for (const [qs, reason] of bad) isErr(await get('/ad/_all_docs?' + qs), 400, 'query_parse_error', reason);
  // booleans are case-insensitive, as CouchDB's parse_boolean
  eq(ids(await get('/ad/_all_docs?descending=TRUE&limit=1')), ['e']);
});

test('_all_docs: bad JSON keys and keys that are not arrays', async () => {
  isErr(await get('/ad/_all_docs?startkey=abc'), 400, 'bad_request', 'invalid UTF-8 JSON');
  isErr(await get('/ad/_all_docs?key=abc'), 400, 'bad_request', 'invalid UTF-8 JSON');
  isErr(await get('/ad/_all_docs?keys=abc'), 400, 'bad_request', 'invalid UTF-8 JSON');
  isErr(await get('/ad/_all_docs?keys=' + enc({ a: 1 })), 400, 'bad_request', '`keys` parameter must be an array.');
  isErr(await post('/ad/_all_docs', { keys: 'a' }), 400, 'bad_request', '`keys` body member must be an array.');
  isErr(await post('/ad/_all_docs', { limit: 'x' }), 400, 'query_parse_error', 'Invalid value for integer: <<"x">>');
  isErr(await post('/ad/_all_docs', { descending: 3 }), 400, 'query_parse_error', 'Invalid boolean parameter: 3');
  isErr(await post('/ad/_all_docs', { startkey_docid: 1 }), 400, 'query_parse_error', '`start_key_docid` must be a string.');
});

test('_all_docs: method, content type, body and database errors', async () => {
  const m = await req('PUT', U + '/ad/_all_docs', {});
  isErr(m, 405, 'method_not_allowed');
  eq(m.headers.allow, 'GET,HEAD,POST');
  isErr(await req('DELETE', U + '/ad/_all_docs'), 405, 'method_not_allowed');
  isErr(await post('/ad/_all_docs', JSON.stringify({ keys: [] }), { 'Content-Type': 'text/plain' }), 415, 'bad_content_type');
  isErr(await post('/ad/_all_docs', '["a"]', J), 400, 'bad_request', 'Request body must be a JSON object');
  isErr(await post('/ad/_all_docs', '{"keys":', J), 400, 'bad_request', 'invalid UTF-8 JSON');
  isErr(await get('/nodb/_all_docs'), 404, 'not_found', 'Database does not exist.');
  isErr(await get('/Bad!/_all_docs'), 400, 'illegal_database_name');
});

test('refused requests changed nothing', async () => {
  const i = await info('ad');
  eq(i.doc_count, 8);
  eq(i.doc_del_count, 1);
  eq(ids(await get('/ad/_all_docs')), AD);
});

// ---- _design_docs ----------------------------------------------------------------

test('_design_docs lists design documents only; total_rows counts them', async () => {
  await bulk('dd', [{ _id: '0' }, { _id: 'B' }, { _id: '_design/a' }, { _id: '_design/b' }, { _id: '_design/c' }, { _id: 'x' }, { _id: 'y' }]);
  const r = await get('/dd/_design_docs');
  eq(r.status, 200);
  eq(ids(r), ['_design/a', '_design/b', '_design/c']);
  eq(r.json.total_rows, 3);
  // offset: the live docs (of any kind) before "_design/", as CouchDB's btree offset
  eq(r.json.offset, 2);
  eq(ids(await get('/dd/_design_docs?descending=true')), ['_design/c', '_design/b', '_design/a']);
  eq((await get('/dd/_design_docs?descending=true')).json.offset, 2);
});

test('_design_docs with keys, ranges, limit and include_docs', async () => {
  const k = await post('/dd/_design_docs', { keys: ['_design/b', 'x', '_design/none'] });
  eq(k.json.rows[0].id, '_design/b');
  eq(k.json.rows[1], { key: 'x', error: 'not_found' });
  eq(k.json.rows[2], { key: '_design/none', error: 'not_found' });
  eq(k.json.total_rows, 3);
  eq(ids(await get(`/dd/_design_docs?startkey=${enc('_design/b')}`)), ['_design/b', '_design/c']);
  eq((await get(`/dd/_design_docs?startkey=${enc('_design/b')}`)).json.offset, 3);
  // the range is clamped to ["_design/", "_design0"), as couch_db:fold_design_docs does
  eq(ids(await get(`/dd/_design_docs?startkey=${enc('0')}&endkey=${enc('z')}`)), ['_design/a', '_design/b', '_design/c']);
  eq(ids(await get(`/dd/_design_docs?startkey=${enc('a')}&endkey=${enc('z')}`)), []);
  eq(ids(await get('/dd/_design_docs?limit=1&skip=1')), ['_design/b']);
  eq((await get('/dd/_design_docs?include_docs=true&limit=1')).json.rows[0].doc._id, '_design/a');
  isErr(await get('/dd/_design_docs?limit=z'), 400, 'query_parse_error');
  isErr(await req('PUT', U + '/dd/_design_docs'), 405, 'method_not_allowed');
});

// ---- _local_docs ---------------------------------------------------------------------

test('_local_docs lists local documents with rev 0-N; total_rows and offset are null', async () => {
  await bulk('ld', [{ _id: '_local/b', v: 'b' }, { _id: '_local/a', v: 'a' }, { _id: '_local/c', v: 'c' }, { _id: 'plain' }]);
  await bulk('ld', [{ _id: '_local/b', _rev: '0-1', v: 'b2' }]);
  const r = await get('/ld/_local_docs');
  eq(r.status, 200);
  eq(r.json.total_rows, null);
  eq(r.json.offset, null);
  eq(r.json.rows, [
    { id: '_local/a', key: '_local/a', value: { rev: '0-1' } },
    { id: '_local/b', key: '_local/b', value: { rev: '0-2' } },
    { id: '_local/c', key: '_local/c', value: { rev: '0-1' } },
  ]);
});

test('_local_docs include_docs, descending, ranges, limit, keys', async () => {
  eq((await get('/ld/_local_docs?include_docs=true')).json.rows[1].doc, { _id: '_local/b', _rev: '0-2', v: 'b2' });
  eq(ids(await get('/ld/_local_docs?descending=true')), ['_local/c', '_local/b', '_local/a']);
  eq(ids(await get(`/ld/_local_docs?startkey=${enc('_local/b')}`)), ['_local/b', '_local/c']);
  eq(ids(await get(`/ld/_local_docs?endkey=${enc('_local/b')}&inclusive_end=false`)), ['_local/a']);
  eq(ids(await get('/ld/_local_docs?limit=1&skip=1')), ['_local/b']);
  const k = await post('/ld/_local_docs?include_docs=true', { keys: ['_local/c', 'plain', '_local/zz'] });
  eq(k.json.rows[0], { id: '_local/c', key: '_local/c', value: { rev: '0-1' }, doc: { _id: '_local/c', _rev: '0-1', v: 'c' } });
  eq(k.json.rows[1], { key: 'plain', error: 'not_found' });
  eq(k.json.rows[2], { key: '_local/zz', error: 'not_found' });
  eq(k.json.total_rows, null);
  isErr(await get('/ld/_local_docs?descending=maybe'), 400, 'query_parse_error');
});

// ---- /queries ----------------------------------------------------------------------

test('_all_docs/queries runs each query; query-string parameters are the base', async () => {
  const r = await post('/ad/_all_docs/queries?limit=2', { queries: [{}, { keys: ['d', 'nope'] }, { startkey: 'c', limit: 1, include_docs: true }, { descending: true, skip: 1 }] });
  eq(r.status, 200);
  const res = r.json.results;
  eq(res.length, 4);
  eq(ids({ json: res[0] }), ['A', '_design/one']);
  eq(res[0].total_rows, 8);
  eq(res[1].rows.map((x) => x.key), ['d', 'nope']);
  eq(res[1].offset, null);
  eq(res[2].rows.map((x) => [x.id, x.doc.n]), [['c', 'c']]);
  eq(res[2].offset, 5);
  eq(ids({ json: res[3] }), ['d', 'c']);
  eq((await post('/ad/_all_docs/queries', { queries: [] })).json, { results: [] });
});

test('_design_docs/queries and _local_docs/queries', async () => {
  const d = await post('/dd/_design_docs/queries', { queries: [{ limit: 1 }, { keys: ['_design/c', 'x'] }] });
  eq(ids({ json: d.json.results[0] }), ['_design/a']);
  eq(d.json.results[1].rows[1], { key: 'x', error: 'not_found' });
  const l = await post('/ld/_local_docs/queries', { queries: [{ descending: true, limit: 1 }] });
  eq(ids({ json: l.json.results[0] }), ['_local/c']);
  eq(l.json.results[0].total_rows, null);
});

test('/queries: errors', async () => {
  const m = await get('/ad/_all_docs/queries');
  isErr(m, 405, 'method_not_allowed');
  eq(m.headers.allow, 'POST');
  isErr(await post('/ad/_all_docs/queries', {}), 400, 'bad_request', 'POST body must include `queries` parameter.');
  isErr(await post('/ad/_all_docs/queries', { queries: {} }), 400, 'bad_request', '`queries` member must be an array.');
  isErr(await post('/ad/_all_docs/queries', { queries: [1] }), 400, 'bad_request');
  isErr(await post('/ad/_all_docs/queries', { queries: [{}, { limit: -1 }] }), 400, 'query_parse_error');
  isErr(await post('/ad/_all_docs/queries', { queries: [{ keys: 'a' }] }), 400, 'query_parse_error', '`keys` must be an array of strings.');
  isErr(await post('/ad/_all_docs/queries', { queries: [{ key: 'a', keys: ['a'] }] }), 400, 'query_parse_error',
    '`keys` is incompatible with `key`, `start_key` and `end_key`');
  isErr(await post('/ad/_all_docs/queries?descending=x', { queries: [{}] }), 400, 'query_parse_error', 'Invalid boolean parameter: "x"');
  isErr(await post('/ad/_all_docs/queries', '[]', J), 400, 'bad_request', 'Request body must be a JSON object');
  isErr(await post('/nodb/_all_docs/queries', { queries: [] }), 404, 'not_found');
});

test('stop', async () => { await srv.stop(); });

run();
