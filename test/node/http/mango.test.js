// mango.test.js — black-box conformance of Mango against a real `divan
// serve`, answered as CouchDB 3.4 answers (the specification is
// /work/mango_spec.md, §1–8 and §10; docs.couchdb.org /db/_find, /db/_index,
// /db/_explain):
//
//   A. POST /{db}/_index: created/exists, generated names (`_design/` + 40
//      hex), ddoc with and without the prefix, fields as names and
//      {"f":"asc"|"desc"}, partial_filter_selector, text/nouveau → 503,
//      every bad body with CouchDB's error and reason
//   B. the stored design document (language "query"), in _design_docs
//   C. a query design document written directly (PUT, _bulk_docs) is a live
//      index; deleting it drops the index
//   D. GET /{db}/_index: _all_docs first, total_rows, limit/skip
//   E. DELETE /{db}/_index/{ddoc}/json/{name} and POST _index/_bulk_delete
//   F. POST /{db}/_find: options, errors, sort, fields, use_index, bookmarks,
//      warnings word for word, execution_stats, conflicts
//   G. POST /{db}/_explain: the plan's shape
//   H. the index is never stale: after every write path a _find through the
//      index answers exactly what a brute-force filter over
//      _all_docs?include_docs=true answers (same documents, same order)
//   I. a key too long for the index
//
// Reasons rendered with Erlang's ~w follow Erlang itself (and divan's
// mango.c): a string is a byte list, "x" → <<120>>, {"a":1} → {[{<<97>>,1}]}
// (the spec's `<<"x">>` examples are ~p, not ~w).
//
//   DIVAN_BIN=build/cc/divan node test/node/http/mango.test.js
//   DIVAN_URL=http://admin:testpass@127.0.0.1:5984 node ...  (a running server)
'use strict';
const { test, req, eq, ok, isErr, assert } = require('../lib/t');
const { runFile } = require('../lib/divan');

let U = '';          // server URL with credentials
const DB = 'mango';  // the main database (movies)
const NDOCS = 40;
const HEX40 = /^[0-9a-f]{40}$/;
const NO_INDEX = 'No matching index found, create an index to optimize query time.';
const NO_SORT = 'No index exists for this sort, try indexing by the sort fields.';
const SCAN = 'The number of documents examined is high in proportion to the number of results returned. Consider adding a more specific index to improve this.';

const enc = encodeURIComponent;
const h32 = (c) => c.repeat(32);
const P = (db, p = '') => `${U}/${db}${p}`;
const post = (db, p, body, h) => req('POST', P(db, p), body, h);
const find = (db, body) => post(db, '/_find', body);
const explain = (db, body) => post(db, '/_explain', body);
const mkIndex = (db, body) => post(db, '/_index', body);
const listIndexes = (db, q = '') => req('GET', P(db, '/_index' + q));
const raw = (method, db, p, text, ct = 'application/json') => req(method, P(db, p), text, ct ? { 'Content-Type': ct } : {});

// Erlang's ~w of a decoded JSON value (integers only; strings as byte lists).
function w(v) {
  if (v === null) return 'null';
  if (v === true || v === false) return String(v);
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return '<<' + [...Buffer.from(v, 'utf8')].join(',') + '>>';
  if (Array.isArray(v)) return '[' + v.map(w).join(',') + ']';
  return '{[' + Object.entries(v).map(([k, x]) => '{' + w(k) + ',' + w(x) + '}').join(',') + ']}';
}

async function ok200(r, what) { eq(r.status, 200, `${what}: ${r.status} ${r.text}`); return r.json; }
async function created(db, body) {
  const r = await mkIndex(db, body);
  eq(r.status, 200, 'POST _index ' + JSON.stringify(body) + ': ' + r.text);
  eq(r.json.result, 'created', r.text);
  return r.json;
}
async function findOk(db, body) { return ok200(await find(db, body), '_find ' + JSON.stringify(body)); }
async function put(db, id, body) {
  const r = await req('PUT', P(db, '/' + enc(id)), body);
  ok(r.status === 201 || r.status === 202, `PUT ${id}: ${r.text}`);
  return r.json.rev;
}

// ---- a JavaScript model of the selectors used here (CouchDB collation for
// the types the data holds: null < false < true < numbers < strings (ASCII
// only here, where ICU and byte order agree) < arrays < objects) ---------------

const rank = (v) => (v === null ? 0 : v === false ? 1 : v === true ? 2 : typeof v === 'number' ? 3 : typeof v === 'string' ? 4 : Array.isArray(v) ? 5 : 6);
function cmp(a, b) {
  const ra = rank(a), rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 3) return a - b;
  if (ra === 4) return a < b ? -1 : a > b ? 1 : 0;
  if (ra === 5) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) { const c = cmp(a[i], b[i]); if (c) return c; }
    return a.length - b.length;
  }
  if (ra === 6) return cmp(JSON.stringify(a), JSON.stringify(b)); // not used for ordering here
  return 0;
}
const MISSING = Symbol('missing');
function field(doc, path) {
  let v = doc;
  for (const seg of path.split('.')) {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || !(seg in v)) return MISSING;
    v = v[seg];
  }
  return v;
}
function cond(v, c) {
  if (c === null || typeof c !== 'object' || Array.isArray(c)) return v !== MISSING && cmp(v, c) === 0;
  return Object.entries(c).every(([op, a]) => {
    switch (op) {
      case '$eq': return v !== MISSING && cmp(v, a) === 0;
      // a missing field matches only {"$exists": false} (mango_selector:match)
      case '$ne': return v !== MISSING && cmp(v, a) !== 0;
      case '$gt': return v !== MISSING && cmp(v, a) > 0;
      case '$gte': return v !== MISSING && cmp(v, a) >= 0;
      case '$lt': return v !== MISSING && cmp(v, a) < 0;
      case '$lte': return v !== MISSING && cmp(v, a) <= 0;
      case '$in': return v !== MISSING && a.some((x) => cmp(v, x) === 0);
      case '$nin': return v !== MISSING && !a.some((x) => cmp(v, x) === 0);
      case '$exists': return (v !== MISSING) === a;
      default: throw new Error('model: operator ' + op);
    }
  });
}
function matches(sel, doc) {
  return Object.entries(sel).every(([k, c]) => {
    if (k === '$and') return c.every((s) => matches(s, doc));
    if (k === '$or') return c.some((s) => matches(s, doc));
    if (k === '$nor') return !c.some((s) => matches(s, doc));
    if (k === '$not') return !matches(c, doc);
    return cond(field(doc, k), c);
  });
}
// Every live non-design document, from _all_docs?include_docs=true (and
// conflicts=true when asked).
async function allDocs(db, conflicts = false) {
  const r = await req('GET', P(db, '/_all_docs?include_docs=true' + (conflicts ? '&conflicts=true' : '')));
  eq(r.status, 200, r.text);
  return r.json.rows.filter((x) => !x.id.startsWith('_design/')).map((x) => x.doc);
}
// What _find should answer, brute force: matching docs ordered by the sort
// fields (then _id, as an index orders its rows), reversed for desc.
async function brute(db, sel, sortFields = [], desc = false) {
  let docs = (await allDocs(db)).filter((d) => matches(sel, d));
  docs.sort((a, b) => {
    for (const f of sortFields) { const c = cmp(field(a, f), field(b, f)); if (c) return c; }
    return a._id < b._id ? -1 : a._id > b._id ? 1 : 0;
  });
  if (desc) docs = docs.reverse();
  return docs;
}

// ---- the data ----------------------------------------------------------------

const GENRES = ['drama', 'comedy', 'horror', 'action'];
function movie(i) {
  const d = {
    _id: 'm' + String(i).padStart(3, '0'),
    year: 1990 + (i % 20),
    title: 't' + String((i * 7) % NDOCS).padStart(3, '0'),
    genre: GENRES[i % 4],
    rating: (i * 13) % 10,
    director: { name: 'dir' + (i % 5), born: 1950 + (i % 7) },
    arr: [i, i + 1],
  };
  if (i % 10 === 3) delete d.rating; // a few documents lack the field
  return d;
}

test('setup: database with ' + NDOCS + ' movies', async () => {
  eq((await req('PUT', P(DB))).status, 201);
  const docs = [];
  for (let i = 0; i < NDOCS; i++) docs.push(movie(i));
  const r = await post(DB, '/_bulk_docs', { docs });
  eq(r.status, 201, r.text);
  eq(r.json.length, NDOCS);
});

// ---- A. POST _index ---------------------------------------------------------------

test('A. POST _index: created, then exists; name and ddoc generated (_design/ + 40 hex, same hash)', async () => {
  const body = { index: { fields: ['year'] } };
  const r1 = await mkIndex(DB, body);
  eq(r1.status, 200, r1.text);
  eq(Object.keys(r1.json), ['result', 'id', 'name'], r1.text);
  eq(r1.json.result, 'created');
  ok(HEX40.test(r1.json.name), r1.text);
  eq(r1.json.id, '_design/' + r1.json.name, r1.text);
  const r2 = await mkIndex(DB, body);
  eq(r2.status, 200, r2.text);
  eq(r2.json, { result: 'exists', id: r1.json.id, name: r1.json.name });
  // "type":"json" and "w":2 are the defaults: the same index
  eq((await mkIndex(DB, { index: { fields: ['year'] }, type: 'json', w: 2 })).json, r2.json);
  // a different definition: another generated ddoc
  const r3 = await created(DB, { index: { fields: ['year', 'title'] } });
  ok(HEX40.test(r3.name) && r3.id === '_design/' + r3.name && r3.id !== r1.json.id, JSON.stringify(r3));
  // a given name: the ddoc is still generated, and differs from the unnamed one
  const r4 = await created(DB, { index: { fields: ['year'] }, name: 'named' });
  eq(r4.name, 'named');
  ok(/^_design\/[0-9a-f]{40}$/.test(r4.id) && r4.id !== r1.json.id, JSON.stringify(r4));
});

test('A. POST _index: ddoc given with and without _design/, several indexes in one ddoc', async () => {
  eq(await created(DB, { index: { fields: ['genre'] }, ddoc: 'bygenre', name: 'g' }), { result: 'created', id: '_design/bygenre', name: 'g' });
  eq(await created(DB, { index: { fields: ['genre', 'year'] }, ddoc: '_design/bygenre', name: 'gy' }), { result: 'created', id: '_design/bygenre', name: 'gy' });
  const again = await mkIndex(DB, { index: { fields: ['genre'] }, ddoc: '_design/bygenre', name: 'g' });
  eq(again.json, { result: 'exists', id: '_design/bygenre', name: 'g' }, again.text);
  // a ddoc and no name: the name is generated
  const r = await created(DB, { index: { fields: ['director.name'] }, ddoc: 'bydir' });
  eq(r.id, '_design/bydir');
  ok(HEX40.test(r.name), JSON.stringify(r));
  const dd = await req('GET', P(DB, '/_design/bygenre'));
  eq(Object.keys(dd.json.views).sort(), ['g', 'gy'], dd.text);
});

test('A. POST _index: fields as {"f":"asc"} / {"f":"desc"}; mixed directions are rejected', async () => {
  await created(DB, { index: { fields: [{ year: 'desc' }, { title: 'desc' }] }, ddoc: 'desc2', name: 'yt' });
  await created(DB, { index: { fields: [{ rating: 'asc' }, 'year'] }, ddoc: 'ascmix', name: 'ry' });
  const dd = await req('GET', P(DB, '/_design/desc2'));
  eq(dd.json.views.yt.map.fields, { year: 'desc', title: 'desc' }, dd.text);
  isErr(await mkIndex(DB, { index: { fields: [{ year: 'asc' }, { title: 'desc' }] } }), 400, 'unsupported_mixed_sort',
    'Sorts currently only support a single direction for all fields.');
  isErr(await mkIndex(DB, { index: { fields: ['year', { title: 'desc' }] } }), 400, 'unsupported_mixed_sort',
    'Sorts currently only support a single direction for all fields.');
  // zero columns is a valid index (in a database of its own: it serves every query without a sort)
  const db = 'nocols';
  eq((await req('PUT', P(db))).status, 201);
  eq((await post(db, '/_bulk_docs', { docs: [{ _id: 'b', x: 2 }, { _id: 'a', x: 1 }, { _id: 'c' }] })).status, 201);
  await created(db, { index: { fields: [] }, ddoc: 'nocols', name: 'none' });
  const f = await findOk(db, { selector: { x: { $gt: 0 } } });
  eq(f.docs.map((d) => d._id), ['a', 'b']);
  eq(f.warning, undefined, String(f.warning));
  eq((await ok200(await explain(db, { selector: {} }), 'explain')).index.name, 'none');
  eq((await findOk(db, { selector: {} })).docs.map((d) => d._id), ['a', 'b', 'c']);
});

test('A. POST _index: partial_filter_selector is stored normalised', async () => {
  await created(DB, { index: { fields: ['year'], partial_filter_selector: { genre: 'drama' } }, ddoc: 'partial', name: 'dramas' });
  const dd = await req('GET', P(DB, '/_design/partial'));
  eq(dd.json.views.dramas.map.partial_filter_selector, { genre: { $eq: 'drama' } }, dd.text);
  eq(dd.json.views.dramas.options, { def: { fields: ['year'], partial_filter_selector: { genre: 'drama' } } }, dd.text);
  const l = await listIndexes(DB);
  const e = l.json.indexes.find((x) => x.ddoc === '_design/partial');
  eq(e, { ddoc: '_design/partial', name: 'dramas', type: 'json', partitioned: false,
    def: { fields: [{ year: 'asc' }], partial_filter_selector: { genre: { $eq: 'drama' } } } }, l.text);
});

test('A. POST _index: "type" text and nouveau → 503 required index service unavailable; other types 400', async () => {
  const t = await mkIndex(DB, { index: { fields: [{ name: 'title', type: 'string' }] }, type: 'text' });
  eq([t.status, t.json], [503, { error: 'required index service unavailable', reason: 'text' }], t.text);
  const n = await mkIndex(DB, { index: { fields: { title: 'string' } }, type: 'nouveau' });
  eq([n.status, n.json], [503, { error: 'required index service unavailable', reason: 'nouveau' }], n.text);
  isErr(await mkIndex(DB, { index: { fields: ['a'] }, type: 'geo' }), 400, 'invalid_index', 'Invalid type for index: geo');
});

test('A. POST _index: bad bodies, each with its error', async () => {
  const cases = [
    [{}, 400, 'missing_required_key', 'Missing required key: index'],
    [{ bogus: 1 }, 400, 'missing_required_key', 'Missing required key: index'],
    [{ index: { fields: ['a'] }, bogus: 1 }, 400, 'invalid_key', 'Invalid key bogus for this request.'],
    [{ index: { fields: ['a'] }, partial_filter_selector: {} }, 400, 'invalid_key', 'Invalid key partial_filter_selector for this request.'],
    [{ index: { fields: ['a'] }, name: 5 }, 400, 'invalid_string', 'Invalid string: 5'],
    [{ index: { fields: ['a'] }, ddoc: ['x'] }, 400, 'invalid_string', 'Invalid string: ' + w(['x'])],
    [{ index: { fields: ['a'] }, type: 5 }, 400, 'invalid_string', 'Invalid string: 5'],
    [{ index: { fields: ['a'] }, w: 0 }, 400, 'invalid_pos_integer', '0 is not an integer greater than zero'],
    [{ index: { fields: ['a'] }, w: 'x' }, 400, 'invalid_pos_integer', w('x') + ' is not an integer greater than zero'],
    [{ index: [] }, 400, 'invalid_index', 'JSON indexes must be an object, not: []'],
    [{ index: 'x' }, 400, 'invalid_index', 'JSON indexes must be an object, not: ' + w('x')],
    [{ index: {} }, 400, 'missing_required_key', 'Missing required key: fields'],
    [{ index: { fields: 'a' } }, 400, 'invalid_sort_json', 'Sort must be an array of sort specs, not: ' + w('a')],
    [{ index: { fields: [''] } }, 400, 'invalid_sort_field', 'Invalid sort field: <<>>'],
    [{ index: { fields: [5] } }, 400, 'invalid_sort_field', 'Invalid sort field: 5'],
    [{ index: { fields: [{ a: 'up' }] } }, 400, 'invalid_sort_field', 'Invalid sort field: ' + w({ a: 'up' })],
    [{ index: { fields: [{ a: 'asc', b: 'asc' }] } }, 400, 'invalid_sort_field', 'Invalid sort field: ' + w({ a: 'asc', b: 'asc' })],
    [{ index: { fields: ['a'], foo: 1 } }, 400, 'invalid_key', 'Invalid key foo for this request.'],
    [{ index: { fields: ['a'], partial_filter_selector: 5 } }, 400, 'invalid_selector_json', 'Selector must be a JSON object, not: 5'],
    [{ index: { fields: ['a'], partial_filter_selector: { a: { $bogus: 1 } } } }, 400, 'invalid_operator', 'Invalid operator: $bogus'],
    [{ index: { fields: ['a'] }, ddoc: '' }, 400, 'illegal_docid', 'Illegal document id `_design/`'],
    [{ index: { fields: ['a'] }, ddoc: '_design/' }, 400, 'illegal_docid', 'Illegal document id `_design/`'],
  ];
  for (const [body, st, err, why] of cases) isErr(await mkIndex(DB, body), st, err, why);
  // framing: content type, not an object, not JSON
  isErr(await raw('POST', DB, '/_index', '{"index":{"fields":["a"]}}', 'text/plain'), 415, 'bad_content_type', 'Content-Type must be application/json');
  isErr(await raw('POST', DB, '/_index', '[]'), 400, 'bad_request', 'Request body must be a JSON object');
  isErr(await raw('POST', DB, '/_index', '{"index":'), 400, 'bad_request');
  isErr(await req('PUT', P(DB, '/_index'), { index: { fields: ['a'] } }), 405, 'method_not_allowed', 'Only GET,POST allowed');
  isErr(await mkIndex('no_such_db', { index: { fields: ['a'] } }), 404, 'not_found', 'Database does not exist.');
  // nothing of that was stored
  const l = await listIndexes(DB);
  ok(!l.json.indexes.some((x) => x.def.fields.some((f) => 'a' in f)), l.text);
});

test('A. POST _index into a design document that is not a query one: invalid_ddoc_lang', async () => {
  eq((await req('PUT', P(DB, '/_design/js'), { language: 'javascript', views: { v: { map: 'function(d){emit(d._id)}' } } })).status, 201);
  isErr(await mkIndex(DB, { index: { fields: ['year'] }, ddoc: 'js' }), 400, 'invalid_ddoc_lang',
    'Existing design doc has an invalid language: {' + w('language') + ',' + w('javascript') + '}');
  eq((await req('PUT', P(DB, '/_design/nolang'), { views: {} })).status, 201);
  isErr(await mkIndex(DB, { index: { fields: ['year'] }, ddoc: 'nolang' }), 400, 'invalid_ddoc_lang',
    'Existing design doc has an invalid language: false');
  // a deleted ddoc is replaced by a fresh query ddoc
  const r = await req('PUT', P(DB, '/_design/gone'), { language: 'javascript' });
  eq((await req('DELETE', P(DB, '/_design/gone?rev=' + r.json.rev))).status, 200);
  await created(DB, { index: { fields: ['year'] }, ddoc: 'gone', name: 'y' });
  eq((await req('GET', P(DB, '/_design/gone'))).json.language, 'query');
});

// ---- B. the stored design document ---------------------------------------------------

test('B. the design document POST _index writes: language "query", views.NAME {map, reduce, options}', async () => {
  eq(await created(DB, { index: { fields: ['foo'] }, name: 'foo-index', ddoc: 'shape' }), { result: 'created', id: '_design/shape', name: 'foo-index' });
  const g = await req('GET', P(DB, '/_design/shape'));
  eq(g.status, 200, g.text);
  ok(/^1-[0-9a-f]{32}$/.test(g.json._rev), g.text);
  delete g.json._rev;
  eq(g.json, {
    _id: '_design/shape', language: 'query',
    views: { 'foo-index': { map: { fields: { foo: 'asc' }, partial_filter_selector: {} }, reduce: '_count', options: { def: { fields: ['foo'] } } } },
  });
  // a second index is added to views; the first stays as it was (divan
  // returns a document's members in key order, README "differs")
  await created(DB, { index: { fields: [{ bar: 'desc' }] }, name: 'bar-index', ddoc: 'shape' });
  const g2 = await req('GET', P(DB, '/_design/shape'));
  eq(Object.keys(g2.json.views).sort(), ['bar-index', 'foo-index'], g2.text);
  eq(g2.json.views['foo-index'], g.json.views['foo-index']);
  eq(g2.json.views['bar-index'], { map: { fields: { bar: 'desc' }, partial_filter_selector: {} }, reduce: '_count', options: { def: { fields: [{ bar: 'desc' }] } } });
  const dd = await req('GET', P(DB, '/_design_docs'));
  ok(dd.json.rows.some((x) => x.id === '_design/shape'), dd.text);
  // the design documents are not query results
  const all = await findOk(DB, { selector: {}, limit: 1000 });
  ok(!all.docs.some((d) => d._id.startsWith('_design/')), 'no design docs in _find');
});

// ---- C. query design documents written directly -------------------------------------

const manualView = (fields) => ({
  map: { fields: Object.fromEntries(fields.map((f) => [f, 'asc'])), partial_filter_selector: {} },
  reduce: '_count', options: { def: { fields } },
});

test('C. a query design doc PUT directly is a live index: listed, chosen, and right; deleting it drops it', async () => {
  const db = 'manual';
  eq((await req('PUT', P(db))).status, 201);
  const docs = [];
  for (let i = 0; i < 30; i++) docs.push({ _id: 'k' + String(i).padStart(2, '0'), score: (i * 11) % 17, even: i % 2 === 0 });
  eq((await post(db, '/_bulk_docs', { docs })).status, 201);
  isErr(await find(db, { selector: {}, sort: ['score'] }), 400, 'no_usable_index', NO_SORT);
  const rev = await put(db, '_design/manual', { language: 'query', views: { v: manualView(['score']) } });
  const l = await listIndexes(db);
  eq(l.json.total_rows, 2, l.text);
  eq(l.json.indexes[1], { ddoc: '_design/manual', name: 'v', type: 'json', partitioned: false, def: { fields: [{ score: 'asc' }] } });
  const f = await findOk(db, { selector: { score: { $gte: 3 } }, sort: ['score'], limit: 100 });
  eq(f.docs, await brute(db, { score: { $gte: 3 } }, ['score']));
  eq(f.warning, undefined, 'no warning: ' + JSON.stringify(f.warning));
  eq((await ok200(await explain(db, { selector: { score: { $gte: 3 } }, sort: ['score'] }), 'explain')).index.ddoc, '_design/manual');
  // deleting the design document drops the index
  eq((await req('DELETE', P(db, '/_design/manual?rev=' + rev))).status, 200);
  const l2 = await listIndexes(db);
  eq(l2.json.total_rows, 1, l2.text);
  isErr(await find(db, { selector: {}, sort: ['score'] }), 400, 'no_usable_index', NO_SORT);
});

test('C. a query design doc written through _bulk_docs is a live index; an updated one is re-read', async () => {
  const db = 'manual';
  const b = await post(db, '/_bulk_docs', { docs: [{ _id: '_design/bulkq', language: 'query', views: { s: manualView(['score']) } }] });
  eq(b.status, 201, b.text);
  const f = await findOk(db, { selector: { score: { $lt: 5 } }, sort: [{ score: 'desc' }], limit: 100 });
  eq(f.docs, await brute(db, { score: { $lt: 5 } }, ['score'], true));
  // change the design document: the index is now on "even" and "score"
  const g = await req('GET', P(db, '/_design/bulkq'));
  g.json.views = { e: manualView(['even', 'score']) };
  await put(db, '_design/bulkq', g.json);
  const l = await listIndexes(db);
  eq(l.json.indexes.slice(1).map((x) => [x.ddoc, x.name]), [['_design/bulkq', 'e']], l.text);
  const f2 = await findOk(db, { selector: { even: true }, sort: ['even', 'score'], limit: 100 });
  eq(f2.docs, await brute(db, { even: true }, ['even', 'score']));
  isErr(await find(db, { selector: {}, sort: ['score'] }), 400, 'no_usable_index', NO_SORT);
});

test('C. malformed views of a query design doc are skipped; the others still count', async () => {
  const db = 'manual';
  await put(db, '_design/broken', {
    language: 'query',
    views: { noopts: { map: { fields: { score: 'asc' } }, reduce: '_count' }, nomap: { reduce: '_count', options: {} }, good: manualView(['score']) },
  });
  const l = await listIndexes(db);
  eq(l.json.indexes.filter((x) => x.ddoc === '_design/broken').map((x) => x.name), ['good'], l.text);
  // a javascript design document is no Mango index
  await put(db, '_design/jsview', { language: 'javascript', views: { v: { map: 'function(d){emit(d.score)}' } } });
  ok(!(await listIndexes(db)).json.indexes.some((x) => x.ddoc === '_design/jsview'));
});

// ---- D. GET _index ------------------------------------------------------------------

test('D. GET _index: _all_docs first, then by ddoc and name; total_rows; limit and skip', async () => {
  const db = 'lst';
  eq((await req('PUT', P(db))).status, 201);
  const e = await listIndexes(db);
  eq(e.status, 200, e.text);
  eq(e.json, { total_rows: 1, indexes: [{ ddoc: null, name: '_all_docs', type: 'special', def: { fields: [{ _id: 'asc' }] } }] });
  await created(db, { index: { fields: ['b'] }, ddoc: 'zz', name: 'b' });
  await created(db, { index: { fields: ['a'] }, ddoc: 'aa', name: 'y' });
  await created(db, { index: { fields: [{ c: 'desc' }, { d: 'desc' }] }, ddoc: 'aa', name: 'x' });
  const l = await listIndexes(db);
  eq(Object.keys(l.json), ['total_rows', 'indexes'], l.text);
  eq(l.json.total_rows, 4);
  eq(l.json.indexes.map((x) => [x.ddoc, x.name]), [[null, '_all_docs'], ['_design/aa', 'x'], ['_design/aa', 'y'], ['_design/zz', 'b']]);
  eq(Object.keys(l.json.indexes[1]), ['ddoc', 'name', 'type', 'partitioned', 'def'], l.text);
  eq(l.json.indexes[1], { ddoc: '_design/aa', name: 'x', type: 'json', partitioned: false, def: { fields: [{ c: 'desc' }, { d: 'desc' }] } });
  const all = l.json.indexes;
  eq((await listIndexes(db, '?limit=2')).json, { total_rows: 4, indexes: all.slice(0, 2) });
  eq((await listIndexes(db, '?skip=1')).json, { total_rows: 4, indexes: all.slice(1) });
  eq((await listIndexes(db, '?limit=2&skip=1')).json, { total_rows: 4, indexes: all.slice(1, 3) });
  eq((await listIndexes(db, '?skip=9')).json, { total_rows: 4, indexes: [] });
  eq((await listIndexes(db, '?limit=1')).json, { total_rows: 4, indexes: all.slice(0, 1) });
  const bad = 'Index parameter ranges: limit > 1, skip > 0';
  for (const q of ['?limit=0', '?limit=-1', '?skip=-1', '?limit=x', '?skip=x']) isErr(await listIndexes(db, q), 500, 'invalid_list_index_params', bad);
  isErr(await req('DELETE', P(db, '/_index')), 405, 'method_not_allowed', 'Only GET,POST allowed');
  isErr(await listIndexes('no_such_db'), 404, 'not_found', 'Database does not exist.');
});

// ---- E. DELETE and _bulk_delete --------------------------------------------------------

test('E. DELETE /db/_index/{ddoc}/json/{name}: both path forms; the ddoc goes with its last index', async () => {
  const db = 'lst';
  // aa holds x and y: removing x keeps the ddoc without it
  const d1 = await req('DELETE', P(db, '/_index/_design/aa/json/x'));
  eq([d1.status, d1.json], [200, { ok: true }], d1.text);
  const g = await req('GET', P(db, '/_design/aa'));
  eq(g.status, 200, g.text);
  eq(Object.keys(g.json.views), ['y']);
  // the short form
  const d2 = await req('DELETE', P(db, '/_index/aa/json/y'));
  eq([d2.status, d2.json], [200, { ok: true }], d2.text);
  isErr(await req('GET', P(db, '/_design/aa')), 404, 'not_found', 'deleted');
  // %2F-encoded ddoc
  await created(db, { index: { fields: ['e'] }, ddoc: 'enc', name: 'e' });
  eq((await req('DELETE', P(db, '/_index/_design%2Fenc/json/e'))).json, { ok: true });
  eq((await listIndexes(db)).json.indexes.map((x) => x.name), ['_all_docs', 'b']);
  // not found: unknown ddoc, unknown name, wrong type
  for (const p of ['/_index/_design/nope/json/b', '/_index/zz/json/nope', '/_index/zz/text/b', '/_index/_design/zz/special/b']) {
    isErr(await req('DELETE', P(db, p)), 404, 'not_found', 'missing');
  }
  isErr(await req('GET', P(db, '/_index/zz/json/b')), 405, 'method_not_allowed', 'Only DELETE allowed');
  isErr(await req('GET', P(db, '/_index/zz')), 404, 'not_found', 'missing');
  isErr(await req('DELETE', P(db, '/_index/a/b/c/d/e')), 404, 'not_found', 'missing');
  // b is still there and usable
  eq((await listIndexes(db)).json.total_rows, 2);
});

test('E. POST _index/_bulk_delete: success and fail lists, _design/ prefixed ids', async () => {
  const db = 'bulkdel';
  eq((await req('PUT', P(db))).status, 201);
  await created(db, { index: { fields: ['a'] }, ddoc: 'bd1', name: 'a' });
  await created(db, { index: { fields: ['b'] }, ddoc: 'bd2', name: 'b' });
  await created(db, { index: { fields: ['c'] }, ddoc: 'keep', name: 'c' });
  const r = await post(db, '/_index/_bulk_delete', { docids: ['bd1', '_design/bd2', 'nope'] });
  eq(r.status, 200, r.text);
  eq(Object.keys(r.json).sort(), ['fail', 'success']);
  // CouchDB 3.4 lists each array in reverse request order (entries are
  // prepended); the docs show request order — compare as sets.
  const byId = (a, b) => (a.id < b.id ? -1 : 1);
  eq(r.json.success.slice().sort(byId), [{ id: '_design/bd1', ok: true }, { id: '_design/bd2', ok: true }]);
  eq(r.json.fail, [{ id: '_design/nope', error: 'not_found' }]);
  eq((await listIndexes(db)).json.indexes.map((x) => x.ddoc), [null, '_design/keep']);
  isErr(await req('GET', P(db, '/_design/bd1')), 404, 'not_found');
  // errors
  isErr(await post(db, '/_index/_bulk_delete', {}), 400, 'missing_required_key', 'Missing required key: docids');
  isErr(await post(db, '/_index/_bulk_delete', { docids: 'x' }), 400, 'invalid_bulk_docs', 'Bulk Delete requires an array of non-null docids. Docids: ' + w('x'));
  isErr(await post(db, '/_index/_bulk_delete', { docids: [5] }), 400, 'invalid_index_name', 'Invalid index name: 5');
  isErr(await post(db, '/_index/_bulk_delete', { docids: [], bogus: 1 }), 400, 'invalid_key', 'Invalid key bogus for this request.');
  isErr(await post(db, '/_index/_bulk_delete', { docids: [], w: 0 }), 400, 'invalid_pos_integer', '0 is not an integer greater than zero');
  isErr(await req('GET', P(db, '/_index/_bulk_delete')), 405, 'method_not_allowed', 'Only POST allowed');
  isErr(await raw('POST', db, '/_index/_bulk_delete', '{"docids":[]}', 'text/plain'), 415, 'bad_content_type', 'Content-Type must be application/json');
  const empty = await post(db, '/_index/_bulk_delete', { docids: [] });
  eq([empty.status, empty.json], [200, { success: [], fail: [] }], empty.text);
  eq((await listIndexes(db)).json.total_rows, 2);
});

// ---- F. _find ----------------------------------------------------------------------------

test('F. _find: request errors (selector, options, framing)', async () => {
  const bad = [
    [{}, 'missing_required_key', 'Missing required key: selector'],
    [{ selector: 5 }, 'invalid_selector_json', 'Selector must be a JSON object, not: 5'],
    [{ selector: [] }, 'invalid_selector_json', 'Selector must be a JSON object, not: []'],
    [{ selector: {}, bogus: 1 }, 'invalid_key', 'Invalid key bogus for this request.'],
    [{ selector: { year: { $bogus: 1 } } }, 'invalid_operator', 'Invalid operator: $bogus'],
    [{ selector: { $bogus: 1 } }, 'invalid_operator', 'Invalid operator: $bogus'],
    [{ selector: { year: { $in: 5 } } }, 'bad_arg', 'Bad argument for operator $in: 5'],
    [{ selector: { $or: 1 } }, 'bad_arg', 'Bad argument for operator $or: 1'],
    [{ selector: { $and: { a: 1 } } }, 'bad_arg', 'Bad argument for operator $and: ' + w({ a: 1 })],
    [{ selector: { a: { $exists: 1 } } }, 'bad_arg', 'Bad argument for operator $exists: 1'],
    [{ selector: { a: { $size: -1 } } }, 'bad_arg', 'Bad argument for operator $size: -1'],
    [{ selector: {}, limit: -1 }, 'invalid_non_neg_integer', '-1 is not an integer greater than or equal to zero'],
    [{ selector: {}, limit: 'x' }, 'invalid_non_neg_integer', w('x') + ' is not an integer greater than or equal to zero'],
    [{ selector: {}, skip: -1 }, 'invalid_non_neg_integer', '-1 is not an integer greater than or equal to zero'],
    [{ selector: {}, r: 0 }, 'invalid_pos_integer', '0 is not an integer greater than zero'],
    [{ selector: {}, conflicts: 'yes' }, 'invalid_boolean', 'Invalid boolean value: ' + w('yes')],
    [{ selector: {}, update: 1 }, 'invalid_boolean', 'Invalid boolean value: 1'],
    [{ selector: {}, stable: 'x' }, 'invalid_boolean', 'Invalid boolean value: ' + w('x')],
    [{ selector: {}, execution_stats: null }, 'invalid_boolean', 'Invalid boolean value: null'],
    [{ selector: {}, allow_fallback: 0 }, 'invalid_boolean', 'Invalid boolean value: 0'],
    [{ selector: {}, fields: 'a' }, 'invalid_fields', 'Fields must be an array of strings, not: ' + w('a')],
    [{ selector: {}, fields: [5] }, 'invalid_field', 'Invalid JSON for field spec: 5'],
    [{ selector: {}, sort: 'year' }, 'invalid_sort_json', 'Sort must be an array of sort specs, not: ' + w('year')],
    [{ selector: {}, sort: [{ year: 'up' }] }, 'invalid_sort_field', 'Invalid sort field: ' + w({ year: 'up' })],
    [{ selector: {}, sort: [{ year: 'asc' }, { title: 'desc' }] }, 'unsupported_mixed_sort', 'Sorts currently only support a single direction for all fields.'],
    [{ selector: {}, use_index: 5 }, 'invalid_index_name', 'Invalid index name: 5'],
    [{ selector: {}, use_index: 'a/b/c' }, 'invalid_index_name', 'Invalid index name: ' + w('a/b/c')],
    [{ selector: {}, use_index: ['a', 'b', 'c'] }, 'invalid_index_name', 'Invalid index name: ' + w(['a', 'b', 'c'])],
    [{ selector: {}, bookmark: 'abc' }, 'invalid_bookmark', 'Invalid bookmark value: "abc"'],
  ];
  for (const [body, err, why] of bad) isErr(await find(DB, body), 400, err, why);
  // validation order: the first failing key of the spec order wins
  isErr(await find(DB, { selector: {}, skip: -1, limit: -2 }), 400, 'invalid_non_neg_integer', '-2 is not an integer greater than or equal to zero');
  // integers only
  isErr(await raw('POST', DB, '/_find', '{"selector":{},"limit":5.0}'), 400, 'invalid_non_neg_integer', '5.0 is not an integer greater than or equal to zero');
  // stale other than "ok"/false: 400 (the error's name is not verified)
  const st = await find(DB, { selector: {}, stale: 'bad' });
  eq(st.status, 400, st.text);
  isErr(await raw('POST', DB, '/_find', '{"selector":{}}', 'text/plain'), 415, 'bad_content_type', 'Content-Type must be application/json');
  isErr(await raw('POST', DB, '/_find', '[]'), 400, 'bad_request', 'Request body must be a JSON object');
  isErr(await raw('POST', DB, '/_find', '{"selector":'), 400, 'bad_request');
  isErr(await req('GET', P(DB, '/_find')), 405, 'method_not_allowed', 'Only POST allowed');
  isErr(await find('no_such_db', { selector: {} }), 404, 'not_found', 'Database does not exist.');
});

test('F. _find without an index: _all_docs in _id order, limit 25 by default, skip, the no-index warning', async () => {
  const ids = (await allDocs(DB)).map((d) => d._id);
  const r = await find(DB, { selector: {} });
  eq(r.status, 200, r.text);
  ok(/^application\/json/.test(r.headers['content-type']), r.headers['content-type']);
  eq(Object.keys(r.json), ['docs', 'bookmark', 'warning'], r.text);
  eq(r.json.docs.map((d) => d._id), ids.slice(0, 25));
  eq(r.json.docs, (await allDocs(DB)).slice(0, 25));
  eq(typeof r.json.bookmark, 'string');
  eq(r.json.warning, NO_INDEX);
  eq((await findOk(DB, { selector: {}, skip: 30 })).docs.map((d) => d._id), ids.slice(30, 55));
  eq((await findOk(DB, { selector: {}, limit: 0 })).docs, []);
  eq((await findOk(DB, { selector: {}, limit: 1000 })).docs.map((d) => d._id), ids);
  // skip counts matching documents, not rows
  const sel = { genre: 'horror' };
  const want = await brute(DB, sel);
  const viaAll = await findOk(DB, { selector: { _id: { $gt: null }, genre: 'horror' }, skip: 2, limit: 3 });
  eq(viaAll.docs, want.slice(2, 5));
  // an _id range on _all_docs
  const rng = await findOk(DB, { selector: { _id: { $gt: 'm005', $lte: 'm012' } } });
  eq(rng.docs.map((d) => d._id), ids.filter((i) => i > 'm005' && i <= 'm012'));
  eq(rng.warning, NO_INDEX);
  // sort on _id needs an _id condition; then _all_docs serves it, both ways
  const desc = await findOk(DB, { selector: { _id: { $gt: null } }, sort: [{ _id: 'desc' }], limit: 5 });
  eq(desc.docs.map((d) => d._id), ids.slice().reverse().slice(0, 5));
  eq((await findOk(DB, { selector: { _id: { $gt: null } }, sort: ['_id'], limit: 5 })).docs.map((d) => d._id), ids.slice(0, 5));
});

test('F. _find through an index: selectors answered as the brute-force filter answers them', async () => {
  const sels = [
    { year: 1995 },
    { year: { $gt: 2000 } },
    { year: { $gte: 1992, $lt: 1997 } },
    { year: { $lte: 1993 }, genre: 'drama' },
    { year: { $in: [1991, 1999, 2005] } },
    { $or: [{ year: 1990 }, { year: 1994 }, { year: 2009 }] },
    { year: { $gt: 1990 }, rating: { $exists: false } },
    { year: { $gt: 1990 }, rating: { $ne: 3 } },
    { year: { $gte: 1990 }, 'director.name': 'dir2' },
    { year: { $gt: 2100 } },
    { year: { $gt: 2000, $lt: 1995 } },
  ];
  for (const sel of sels) {
    const r = await findOk(DB, { selector: sel, sort: ['year'], limit: 1000 });
    eq(r.docs, await brute(DB, sel, ['year']), JSON.stringify(sel));
  }
});

test('F. _find: sort asc and desc through an index equals the sorted brute force', async () => {
  const sel = { year: { $gte: 1995 } };
  const asc = await findOk(DB, { selector: sel, sort: ['year'], limit: 1000 });
  eq(asc.docs, await brute(DB, sel, ['year']));
  eq(asc.warning, undefined, String(asc.warning));
  const desc = await findOk(DB, { selector: sel, sort: [{ year: 'desc' }], limit: 1000 });
  eq(desc.docs, await brute(DB, sel, ['year'], true));
  // two columns, desc; a constant leading column may be skipped for the sort
  const sel2 = { year: { $gt: 1990 }, title: { $gt: null } };
  eq((await findOk(DB, { selector: sel2, sort: [{ year: 'desc' }, { title: 'desc' }], limit: 1000 })).docs,
    await brute(DB, sel2, ['year', 'title'], true));
  const sel3 = { genre: 'comedy' };
  eq((await findOk(DB, { selector: sel3, sort: ['year'], limit: 1000, use_index: ['bygenre', 'gy'] })).docs, await brute(DB, sel3, ['year']));
  // a sort with limit and skip
  eq((await findOk(DB, { selector: sel, sort: ['year'], skip: 3, limit: 4 })).docs, (await brute(DB, sel, ['year'])).slice(3, 7));
  // sort fields need not be in the selector (documents lacking them are not in the index)
  await created(DB, { index: { fields: ['rating'] }, ddoc: 'byrating', name: 'r' });
  const r = await findOk(DB, { selector: { genre: 'drama' }, sort: ['rating'], limit: 1000 });
  eq(r.docs, await brute(DB, { genre: 'drama', rating: { $exists: true } }, ['rating']));
});

test('F. _find: no index for the sort → 400 no_usable_index', async () => {
  isErr(await find(DB, { selector: {}, sort: ['title'] }), 400, 'no_usable_index', NO_SORT);
  isErr(await find(DB, { selector: { year: 1995 }, sort: ['director.born'] }), 400, 'no_usable_index', NO_SORT);
  // _id sort without an _id condition
  isErr(await find(DB, { selector: { genre: 'drama' }, sort: ['_id'] }), 400, 'no_usable_index', NO_SORT);
});

test('F. _find: fields projects (dotted paths, array positions, missing fields omitted, no automatic _id)', async () => {
  const r = await findOk(DB, { selector: { _id: 'm007' }, fields: ['_id', 'director.name', 'missing', 'year'] });
  eq(r.docs, [{ _id: 'm007', director: { name: 'dir2' }, year: 1997 }]);
  eq((await findOk(DB, { selector: { _id: 'm007' }, fields: ['title'] })).docs, [{ title: movie(7).title }]);
  eq((await findOk(DB, { selector: { _id: 'm007' }, fields: ['director.born', 'director.name'] })).docs, [{ director: { born: 1950, name: 'dir2' } }]);
  eq((await findOk(DB, { selector: { _id: 'm007' }, fields: ['arr.1'] })).docs, [{ arr: { 1: 8 } }]);
  eq((await findOk(DB, { selector: { _id: 'm007' }, fields: ['nothere'] })).docs, [{}]);
  // through an index, sorted
  const sel = { year: { $gt: 2005 } };
  const f = await findOk(DB, { selector: sel, sort: ['year'], fields: ['_id', 'year'], limit: 1000 });
  eq(f.docs, (await brute(DB, sel, ['year'])).map((d) => ({ _id: d._id, year: d.year })));
});

test('F. _find: use_index as a string and as [ddoc, name]; a use_index that cannot be used', async () => {
  const sel = { genre: 'action', year: { $gt: 1990 } };
  const want = await brute(DB, sel, ['year']);
  const forms = ['bygenre', '_design/bygenre', ['bygenre'], ['_design/bygenre'], ['bygenre', 'gy'], ['_design/bygenre', 'gy'], 'bygenre/gy', '_design/bygenre/gy'];
  for (const ui of forms) {
    const r = await findOk(DB, { selector: sel, use_index: ui, limit: 1000 });
    eq(r.warning, undefined, JSON.stringify(ui) + ': ' + r.warning);
    eq(r.docs.map((d) => d._id).sort(), want.map((d) => d._id).sort(), JSON.stringify(ui));
    const x = await ok200(await explain(DB, { selector: sel, use_index: ui }), 'explain');
    eq(x.index.ddoc, '_design/bygenre', JSON.stringify(ui));
  }
  eq((await ok200(await explain(DB, { selector: sel, use_index: ['bygenre', 'gy'] }), 'explain')).index.name, 'gy');
  // the partial index is used only when named
  const dsel = { year: { $gte: 2000 } };
  const p = await findOk(DB, { selector: dsel, use_index: 'partial', sort: ['year'], limit: 1000 });
  eq(p.docs, await brute(DB, { year: { $gte: 2000 }, genre: 'drama' }, ['year']), 'the partial index holds only dramas');
  eq(p.warning, undefined);
  ok((await ok200(await explain(DB, { selector: dsel }), 'explain')).index.ddoc !== '_design/partial');
  // a missing ddoc: fallback with a warning, or an error without fallback
  const f = await findOk(DB, { selector: sel, use_index: '_design/zzz', limit: 1000 });
  eq(f.warning, '_design/zzz was not used because it does not contain a valid index for this query.');
  eq(f.docs.map((d) => d._id).sort(), want.map((d) => d._id).sort());
  const f2 = await findOk(DB, { selector: sel, use_index: ['zzz', 'n'], limit: 1000 });
  eq(f2.warning, '_design/zzz, n was not used because it is not a valid index for this query.');
  const f3 = await findOk(DB, { selector: sel, use_index: ['bygenre', 'nope'], limit: 1000 });
  eq(f3.warning, '_design/bygenre, nope was not used because it is not a valid index for this query.');
  isErr(await find(DB, { selector: sel, use_index: 'zzz', allow_fallback: false }), 400, 'invalid_index',
    '_design/zzz specified by `use_index` could not be found or it is not suitable.');
  isErr(await find(DB, { selector: sel, use_index: ['zzz', 'n'], allow_fallback: false }), 400, 'invalid_index',
    '_design/zzz, n specified by `use_index` could not be found or it is not suitable.');
  isErr(await explain(DB, { selector: sel, use_index: 'zzz', allow_fallback: false }), 400, 'invalid_index',
    '_design/zzz specified by `use_index` could not be found or it is not suitable.');
  // an index that exists but is not usable for the selector (its column is not required by it)
  const u = await findOk(DB, { selector: { title: { $gt: null } }, use_index: 'bydir', limit: 1000 });
  eq(u.warning, '_design/bydir was not used because it does not contain a valid index for this query.\n' + NO_INDEX);
  eq(u.docs.length, NDOCS);
  // no use_index, no fallback, and only _all_docs would do
  isErr(await find(DB, { selector: { title: { $gt: null } }, allow_fallback: false }), 400, 'invalid_index',
    'You must specify an index with the `use_index` parameter.');
  // with a usable json index allow_fallback:false is fine
  eq((await findOk(DB, { selector: { year: 1995 }, allow_fallback: false })).docs, await brute(DB, { year: 1995 }));
});

test('F. _find: the index-scan warning when many more documents are read than returned', async () => {
  const r = await findOk(DB, { selector: { _id: { $gt: null }, title: 't001' } });
  eq(r.docs.length, 1, JSON.stringify(r));
  eq(r.warning, NO_INDEX + '\n' + SCAN);
});

test('F. _find: r, update, stable, stale are accepted and change nothing here', async () => {
  const sel = { year: { $gt: 2003 } };
  const want = await brute(DB, sel, ['year']);
  for (const extra of [{ r: 1 }, { r: 2 }, { r: 3 }, { update: false }, { update: true }, { stable: true }, { stale: 'ok' }, { stale: false }, { stale: 'false' }, { execution_stats: false }, { conflicts: false }, { partition: '' }]) {
    const r = await findOk(DB, Object.assign({ selector: sel, sort: ['year'], limit: 1000 }, extra));
    // update:false / stale:ok answer from what is built; the index is up to date here
    eq(r.docs, want, JSON.stringify(extra));
  }
  eq((await ok200(await explain(DB, { selector: sel, r: 2 }), 'explain')).mrargs.include_docs, false);
  eq((await ok200(await explain(DB, { selector: sel, stale: 'ok' }), 'explain')).mrargs.update, false);
});

test('F. _find: execution_stats', async () => {
  const r = await findOk(DB, { selector: { year: 1995 }, execution_stats: true });
  eq(Object.keys(r).slice(0, 3), ['docs', 'bookmark', 'execution_stats'], JSON.stringify(r));
  const s = r.execution_stats;
  eq(Object.keys(s), ['total_keys_examined', 'total_docs_examined', 'total_quorum_docs_examined', 'results_returned', 'execution_time_ms']);
  const n = (await brute(DB, { year: 1995 })).length;
  eq(r.docs.length, n);
  eq(s.results_returned, n);
  ok(Number.isInteger(s.total_keys_examined) && s.total_keys_examined >= n, JSON.stringify(s));
  eq(s.total_docs_examined, n, JSON.stringify(s));
  eq(s.total_quorum_docs_examined, 0);
  ok(typeof s.execution_time_ms === 'number' && s.execution_time_ms >= 0, JSON.stringify(s));
  // the _all_docs scan examines every document it reads
  const a = await findOk(DB, { selector: { 'director.born': { $gt: 0 } }, execution_stats: true, limit: 1000 });
  eq(a.docs.length, NDOCS);
  eq(a.execution_stats.results_returned, a.docs.length);
  ok(a.execution_stats.total_docs_examined >= NDOCS, JSON.stringify(a.execution_stats));
  eq(Object.keys(a).slice(-2), ['execution_stats', 'warning']);
  // r > 1: quorum reads instead of index docs
  const q = await findOk(DB, { selector: { year: 1995 }, execution_stats: true, r: 2 });
  eq(q.execution_stats.total_quorum_docs_examined, n, JSON.stringify(q.execution_stats));
  eq(q.execution_stats.total_docs_examined, 0, JSON.stringify(q.execution_stats));
  // a covering query reads no documents
  const c = await findOk(DB, { selector: { year: 1995 }, fields: ['_id', 'year'], execution_stats: true });
  eq(c.execution_stats.total_docs_examined, 0, JSON.stringify(c.execution_stats));
  eq(c.docs, (await brute(DB, { year: 1995 })).map((d) => ({ _id: d._id, year: d.year })));
});

test('F. _find: an unsatisfiable selector answers no documents and no bookmark', async () => {
  const r = await findOk(DB, { selector: { $or: [] } });
  eq(r, { docs: [] });
});

test('F. _find: conflicts:true adds _conflicts to conflicted documents only', async () => {
  const db = 'cfl';
  eq((await req('PUT', P(db))).status, 201);
  await created(db, { index: { fields: ['v'] }, ddoc: 'v', name: 'v' });
  const r = await post(db, '/_bulk_docs', { new_edits: false, docs: [
    { _id: 'c', _rev: '1-' + h32('a'), v: 1 },
    { _id: 'c', _rev: '1-' + h32('b'), v: 2 },
    { _id: 'plain', _rev: '1-' + h32('c'), v: 3 },
  ] });
  eq(r.status, 201, r.text);
  const f = await findOk(db, { selector: { v: { $gt: 0 } }, conflicts: true });
  eq(f.docs, [
    { _id: 'c', _rev: '1-' + h32('b'), v: 2, _conflicts: ['1-' + h32('a')] },
    { _id: 'plain', _rev: '1-' + h32('c'), v: 3 },
  ]);
  const g = await findOk(db, { selector: { v: { $gt: 0 } } });
  eq(g.docs.map((d) => '_conflicts' in d), [false, false]);
  // usable in the selector and kept by a projection only when listed
  const s = await findOk(db, { selector: { v: { $gt: 0 }, _conflicts: { $exists: true } }, conflicts: true, fields: ['_id', '_conflicts'] });
  eq(s.docs, [{ _id: 'c', _conflicts: ['1-' + h32('a')] }]);
  eq((await ok200(await explain(db, { selector: { v: 1 }, conflicts: true }), 'explain')).mrargs.conflicts, true);
});

// Page through everything with bookmarks; the pages together are the one big answer.
async function pageAll(db, body, size) {
  const big = (await findOk(db, Object.assign({}, body, { limit: 100000 }))).docs;
  const got = [];
  let bookmark;
  for (let i = 0; i < 200; i++) {
    const q = Object.assign({}, body, { limit: size });
    if (bookmark !== undefined) q.bookmark = bookmark;
    const r = await findOk(db, q);
    ok(typeof r.bookmark === 'string' && r.bookmark.length > 0, 'a bookmark on every page: ' + JSON.stringify(r));
    ok(r.docs.length <= size);
    if (!r.docs.length) {
      eq(r.bookmark, bookmark, 'an empty page gives back the bookmark it got');
      eq(got, big, JSON.stringify(body));
      return got;
    }
    got.push(...r.docs);
    bookmark = r.bookmark;
  }
  throw new Error('paging did not end: ' + JSON.stringify(body));
}

test('F. _find: bookmarks page through everything, equal to one big query', async () => {
  const a = await pageAll(DB, { selector: { year: { $gte: 1990 } }, sort: ['year'] }, 7);
  eq(a.length, NDOCS);
  eq((await pageAll(DB, { selector: { year: { $gte: 1990 } }, sort: [{ year: 'desc' }] }, 6)).length, NDOCS);
  eq((await pageAll(DB, { selector: {} }, 9)).length, NDOCS); // _all_docs
  await pageAll(DB, { selector: { genre: 'comedy', year: { $gt: 1990 } }, use_index: ['bygenre', 'gy'] }, 3);
  await pageAll(DB, { selector: { $or: [{ year: 1990 }, { year: 1991 }, { year: 1999 }] }, sort: ['year'] }, 2);
  await pageAll(DB, { selector: { year: { $gt: 1990 } }, fields: ['_id', 'year'], sort: ['year'] }, 5); // covering
  // skip applies to every page
  const first = await findOk(DB, { selector: { year: { $gte: 1990 } }, sort: ['year'], limit: 4, skip: 2 });
  const second = await findOk(DB, { selector: { year: { $gte: 1990 } }, sort: ['year'], limit: 4, skip: 2, bookmark: first.bookmark });
  const all = await brute(DB, { year: { $gte: 1990 } }, ['year']);
  eq(first.docs, all.slice(2, 6));
  eq(second.docs, all.slice(8, 12));
  // no match at all: the bookmark is "nil"
  eq((await findOk(DB, { selector: { year: 1700 } })).bookmark, 'nil');
  eq((await findOk(DB, { selector: { year: { $gte: 1990 } }, bookmark: null, limit: 1 })).docs.length, 1);
  eq((await findOk(DB, { selector: { year: { $gte: 1990 } }, bookmark: '', limit: 1 })).docs.length, 1);
});

// ---- G. _explain ----------------------------------------------------------------------------

test('G. _explain: the plan of a covering range query on a json index', async () => {
  const db = 'expl';
  eq((await req('PUT', P(db))).status, 201);
  eq((await post(db, '/_bulk_docs', { docs: [{ _id: 'a', year: 2001, title: 'x' }, { _id: 'b', year: 1999, title: 'y' }] })).status, 201);
  await created(db, { index: { fields: ['year'] }, ddoc: 'ey', name: 'year' });
  await created(db, { index: { fields: ['year'] }, ddoc: 'ey2', name: 'year2' });
  await created(db, { index: { fields: ['year', 'title'] }, ddoc: 'eyt', name: 'yt' });
  await created(db, { index: { fields: ['rating'] }, ddoc: 'er', name: 'rating' });
  await created(db, { index: { fields: ['year'], partial_filter_selector: { title: 'x' } }, ddoc: 'ep', name: 'p' });
  const r = await explain(db, { selector: { year: { $gt: 2000 } }, fields: ['_id', 'year'] });
  eq(r.status, 200, r.text);
  const x = r.json;
  for (const k of ['dbname', 'index', 'partitioned', 'selector', 'opts', 'limit', 'skip', 'fields', 'index_candidates', 'selector_hints', 'mrargs', 'covering']) ok(k in x, 'explain has ' + k + ': ' + r.text);
  eq(x.dbname, db);
  // ey and ey2 tie on prefix and width: the smaller ddoc id wins
  eq(x.index, { ddoc: '_design/ey', name: 'year', type: 'json', partitioned: false, def: { fields: [{ year: 'asc' }] } });
  eq(x.partitioned, false);
  eq(x.selector, { year: { $gt: 2000 } });
  eq(x.opts, { use_index: [], bookmark: 'nil', limit: 25, skip: 0, sort: {}, fields: ['_id', 'year'], partition: '', r: 1,
    conflicts: false, stale: false, update: true, stable: false, execution_stats: false, allow_fallback: true });
  eq(Object.keys(x.opts), ['use_index', 'bookmark', 'limit', 'skip', 'sort', 'fields', 'partition', 'r', 'conflicts', 'stale', 'update', 'stable', 'execution_stats', 'allow_fallback']);
  eq([x.limit, x.skip, x.fields], [25, 0, ['_id', 'year']]);
  eq(x.mrargs, { include_docs: false, view_type: 'map', reduce: false, partition: null, start_key: [2000], end_key: ['<MAX>'],
    direction: 'fwd', stable: false, update: true, conflicts: 'undefined' });
  eq(x.covering, true);
  eq(x.selector_hints, [{ type: 'json', indexable_fields: ['year'], unindexable_fields: [] }]);
  // every other index is a candidate, with the reason it lost (spec §7.3):
  // Sorted = [ey, ey2] → U = 2; _all_docs unfavored (U); not usable U+1; partial U+2
  for (const c of x.index_candidates) eq(Object.keys(c), ['index', 'analysis']);
  // descending (ddoc, name); _all_docs last
  eq(x.index_candidates.map((c) => c.index.ddoc), ['_design/eyt', '_design/ey2', '_design/er', '_design/ep', null]);
  const cand = Object.fromEntries(x.index_candidates.map((c) => [c.index.name, c]));
  eq(cand._all_docs.index, { ddoc: null, name: '_all_docs', type: 'special', def: { fields: [{ _id: 'asc' }] } });
  eq(cand._all_docs.analysis, { usable: true, reasons: [{ name: 'unfavored_type' }], ranking: 2, covering: null });
  eq(cand.year2.analysis, { usable: true, reasons: [{ name: 'alphabetically_comes_after' }], ranking: 1, covering: true });
  eq(cand.rating.analysis, { usable: false, reasons: [{ name: 'field_mismatch' }], ranking: 3, covering: false });
  eq(cand.p.analysis, { usable: false, reasons: [{ name: 'is_partial' }], ranking: 4, covering: true });
  // (yt, on [year, title], is left unchecked: §5.3 makes it field_mismatch — the
  // selector does not require title — while the spec's Appendix B calls such an index usable)
  eq(cand.yt.analysis.covering, true);
  // a wider usable index: too_many_fields
  const t = await ok200(await explain(db, { selector: { year: { $gt: 2000 }, title: { $gt: null } }, use_index: ['eyt'] }), 'explain');
  eq(t.index.name, 'yt');
  eq(t.index_candidates.find((c) => c.index.name === 'year').analysis.reasons, [{ name: 'excluded_by_user' }]);
  const t2 = await ok200(await explain(db, { selector: { year: { $gt: 2000 }, title: { $gt: null } }, sort: ['year'] }), 'explain');
  eq(t2.index.name, 'yt', 'yt covers both selector fields (prefix difference 0)');
  eq(t2.index_candidates.find((c) => c.index.name === 'year').analysis.reasons, [{ name: 'less_overlap' }]);
});

test('G. _explain: sort desc, equality keys, all fields, _all_docs, no index for the sort', async () => {
  const db = 'expl';
  const d = (await ok200(await explain(db, { selector: { year: { $gt: 2000 } }, sort: [{ year: 'desc' }], limit: 3, skip: 1 }), 'explain'));
  eq([d.mrargs.start_key, d.mrargs.end_key, d.mrargs.direction], [['<MAX>'], [2000], 'rev']);
  eq([d.limit, d.skip, d.opts.sort, d.covering, d.mrargs.include_docs], [3, 1, { year: 'desc' }, false, true]);
  eq(d.fields, []);
  const e = await ok200(await explain(db, { selector: { year: 2001, title: { $gt: 'a' } }, use_index: 'eyt' }), 'explain');
  eq(e.index.name, 'yt');
  eq([e.mrargs.start_key, e.mrargs.end_key], [[2001, 'a'], [2001, '<MAX>']]);
  eq(e.opts.use_index, ['eyt']);
  eq(e.selector_hints[0].indexable_fields, ['title', 'year']);
  const n = await ok200(await explain(db, { selector: { year: { $lt: 2010 }, title: 'x' }, use_index: ['eyt', 'yt'] }), 'explain');
  eq([n.mrargs.start_key, n.mrargs.end_key], [[], [2010, 'x', '<MAX>']]);
  eq(n.opts.use_index, ['eyt', 'yt']);
  // _all_docs
  const a = await ok200(await explain(db, { selector: { title: 'x' } }), 'explain');
  eq(a.index, { ddoc: null, name: '_all_docs', type: 'special', def: { fields: [{ _id: 'asc' }] } });
  eq([a.mrargs.start_key, a.mrargs.end_key, a.covering], [null, '<MAX>', false]);
  eq(a.selector_hints, [{ type: 'json', indexable_fields: ['title'], unindexable_fields: [] }]);
  const ai = await ok200(await explain(db, { selector: { _id: { $gt: 'a', $lte: 'm' } } }), 'explain');
  eq([ai.mrargs.start_key, ai.mrargs.end_key], ['a', 'm']);
  // a sort nothing serves: no error on _explain, index null, no mrargs
  const s = await ok200(await explain(db, { selector: {}, sort: ['nothing'] }), 'explain');
  eq(s.index, null);
  ok(!('mrargs' in s) && !('covering' in s), JSON.stringify(s));
  // the normalised selector, and unindexable fields
  const m = await ok200(await explain(db, { selector: { year: { $in: [1, 2] }, title: { $regex: 'x' } } }), 'explain');
  eq(m.selector_hints[0].indexable_fields, []);
  eq(m.selector_hints[0].unindexable_fields.slice().sort(), ['title', 'year']);
  const o = await ok200(await explain(db, { selector: { year: 2001 } }), 'explain');
  eq(o.selector, { year: { $eq: 2001 } });
  // the same request errors as _find
  isErr(await explain(db, {}), 400, 'missing_required_key', 'Missing required key: selector');
  isErr(await explain(db, { selector: {}, bogus: 1 }), 400, 'invalid_key', 'Invalid key bogus for this request.');
  isErr(await req('GET', P(db, '/_explain')), 405, 'method_not_allowed', 'Only POST allowed');
  isErr(await raw('POST', db, '/_explain', '{"selector":{}}', 'text/plain'), 415, 'bad_content_type', 'Content-Type must be application/json');
});

// ---- H. the index is never stale -------------------------------------------------------------

const ST = 'stale';
const ST_SEL = { v: { $gte: 0 } };
// _find through the index on v (named, no fallback) equals the brute force:
// sorted asc and desc, unsorted, and a range.
async function same(what) {
  const asc = await find(ST, { selector: ST_SEL, use_index: ['st', 'v'], allow_fallback: false, sort: ['v'], limit: 100000 });
  eq(asc.status, 200, what + ': ' + asc.text);
  eq(asc.json.docs, await brute(ST, ST_SEL, ['v']), what + ': sorted asc');
  eq(asc.json.warning, undefined, what);
  const desc = await findOk(ST, { selector: ST_SEL, use_index: ['st', 'v'], sort: [{ v: 'desc' }], limit: 100000 });
  eq(desc.docs, await brute(ST, ST_SEL, ['v'], true), what + ': sorted desc');
  const un = await findOk(ST, { selector: { v: { $gt: 2, $lte: 50 } }, use_index: ['st', 'v'], limit: 100000 });
  eq(un.docs, await brute(ST, { v: { $gt: 2, $lte: 50 } }, ['v']), what + ': range');
}

test('H. setup: documents first, the index built afterwards over them', async () => {
  eq((await req('PUT', P(ST))).status, 201);
  const docs = [];
  for (let i = 0; i < 50; i++) docs.push({ _id: 's' + String(i).padStart(2, '0'), v: (i * 37) % 60, w: i });
  eq((await post(ST, '/_bulk_docs', { docs })).status, 201);
  await created(ST, { index: { fields: ['v'] }, ddoc: 'st', name: 'v' });
  await same('built over existing documents');
});

test('H. PUT: create, change the indexed field, remove it, give it another type', async () => {
  await put(ST, 'p1', { v: 5 });
  await same('PUT new');
  let rev = (await req('GET', P(ST, '/s01'))).json._rev;
  rev = await put(ST, 's01', { _rev: rev, v: 59 });
  await same('PUT changes v');
  rev = await put(ST, 's01', { _rev: rev, w: 1 });
  await same('PUT removes v');
  rev = await put(ST, 's01', { _rev: rev, v: 'text' });
  await same('PUT string v');
  rev = await put(ST, 's01', { _rev: rev, v: 7 });
  await same('PUT v back');
  // batch=ok is a write too
  const b = await req('PUT', P(ST, '/batched?batch=ok'), { v: 8 });
  ok(b.status === 202 || b.status === 201, b.text);
  await same('PUT batch=ok');
});

test('H. POST /db, DELETE, COPY', async () => {
  const p = await post(ST, '', { _id: 'posted', v: 11 });
  eq(p.status, 201, p.text);
  const q = await post(ST, '', { v: 12 }); // a server-made id
  eq(q.status, 201, q.text);
  await same('POST /db');
  const rev = (await req('GET', P(ST, '/s02'))).json._rev;
  eq((await req('DELETE', P(ST, '/s02?rev=' + rev))).status, 200);
  await same('DELETE');
  const c = await req('COPY', P(ST, '/s03'), undefined, { Destination: 'copied' });
  eq(c.status, 201, c.text);
  await same('COPY to a new id');
  const over = (await req('GET', P(ST, '/copied'))).json._rev;
  const c2 = await req('COPY', P(ST, '/s04'), undefined, { Destination: 'copied?rev=' + over });
  eq(c2.status, 201, c2.text);
  await same('COPY over an existing doc');
  // a deleted document comes back
  await put(ST, 's02', { v: 13 });
  await same('PUT over a deleted document');
});

test('H. _bulk_docs: inserts, updates, deletes, a removed field in one request', async () => {
  const all = await allDocs(ST);
  const by = Object.fromEntries(all.map((d) => [d._id, d]));
  const r = await post(ST, '/_bulk_docs', { docs: [
    { _id: 'b1', v: 21 }, { _id: 'b2', v: 0 }, { _id: 'b3', nov: true },
    Object.assign({}, by.s05, { v: 44 }),
    { _id: 's06', _rev: by.s06._rev, _deleted: true },
    { _id: 's07', _rev: by.s07._rev, other: 1 },
    { _id: 's08', _rev: '1-' + h32('0'), v: 1 }, // a conflict error: nothing changes
  ] });
  eq(r.status, 201, r.text);
  eq(r.json[6].error, 'conflict', r.text);
  await same('_bulk_docs');
  const del = await post(ST, '/_bulk_docs', { docs: [{ _id: 'b1', _rev: r.json[0].rev, _deleted: true, v: 99 }] });
  eq(del.status, 201, del.text);
  await same('_bulk_docs delete with a body');
});

test('H. new_edits=false: conflicts; the loser wins when the winner is deleted', async () => {
  const x = h32('a'), y = h32('b');
  const r = await post(ST, '/_bulk_docs', { new_edits: false, docs: [
    { _id: 'cf', _rev: '1-' + x, v: 31 },
    { _id: 'cf', _rev: '1-' + y, v: 32 }, // the winner: the higher rev id
  ] });
  eq(r.status, 201, r.text);
  await same('two branches');
  eq((await findOk(ST, { selector: { _id: 'cf', v: { $gte: 0 } }, use_index: 'st' })).docs.map((d) => d._rev), ['1-' + y]);
  // the winning branch deleted: the other one wins, with its own v
  eq((await req('DELETE', P(ST, '/cf?rev=1-' + y))).status, 200);
  await same('winner deleted');
  eq((await req('GET', P(ST, '/cf'))).json.v, 31);
  // a replicated edit that extends the loser into the winner
  const r2 = await post(ST, '/_bulk_docs', { new_edits: false, docs: [{ _id: 'cf', _revisions: { start: 3, ids: [h32('d'), h32('c'), x] }, v: 33 }] });
  eq(r2.status, 201, r2.text);
  await same('replicated edit on the branch');
  // a replicated deletion of a document's only branch removes it
  const r3 = await post(ST, '/_bulk_docs', { new_edits: false, docs: [{ _id: 'cf2', _rev: '1-' + h32('e'), v: 34 }, { _id: 'cf2', _revisions: { start: 2, ids: [h32('f'), h32('e')] }, _deleted: true }] });
  eq(r3.status, 201, r3.text);
  await same('replicated delete');
  // PUT ?new_edits=false
  const r4 = await req('PUT', P(ST, '/cf3?new_edits=false'), { _rev: '1-' + h32('9'), v: 35 });
  eq(r4.status, 201, r4.text);
  await same('PUT new_edits=false');
});

test('H. attachments added to and removed from an indexed document', async () => {
  let rev = (await req('GET', P(ST, '/s09'))).json._rev;
  const a = await req('PUT', P(ST, '/s09/note.txt?rev=' + rev), 'hello', { 'Content-Type': 'text/plain' });
  eq(a.status, 201, a.text);
  rev = a.json.rev;
  await same('attachment PUT');
  const f = await findOk(ST, { selector: { _id: 's09', v: { $gte: 0 } }, use_index: 'st' });
  eq(f.docs[0]._rev, rev);
  ok(f.docs[0]._attachments && f.docs[0]._attachments['note.txt'] && f.docs[0]._attachments['note.txt'].stub, JSON.stringify(f.docs));
  // a new document made by an attachment PUT has no v: not in the index
  eq((await req('PUT', P(ST, '/attonly/x.txt'), 'x', { 'Content-Type': 'text/plain' })).status, 201);
  await same('attachment PUT creates a doc');
  const d = await req('DELETE', P(ST, '/s09/note.txt?rev=' + rev));
  eq(d.status, 200, d.text);
  await same('attachment DELETE');
});

test('H. _purge removes the document from the index', async () => {
  const doc = (await req('GET', P(ST, '/s10'))).json;
  const p = await post(ST, '/_purge', { s10: [doc._rev] });
  eq(p.status, 201, p.text);
  await same('purge');
  // purge the winner of a conflicted document: the other leaf shows
  const r = await post(ST, '/_bulk_docs', { new_edits: false, docs: [{ _id: 'pc', _rev: '1-' + h32('1'), v: 41 }, { _id: 'pc', _rev: '1-' + h32('2'), v: 42 }] });
  eq(r.status, 201, r.text);
  await same('conflict for purge');
  eq((await post(ST, '/_purge', { pc: ['1-' + h32('2')] })).status, 201);
  await same('purge the winner');
  eq((await req('GET', P(ST, '/pc'))).json.v, 41);
});

test('H. the index answers after the design document is rewritten and after more indexes join', async () => {
  await created(ST, { index: { fields: ['w'] }, ddoc: 'st', name: 'w' });
  await same('another index in the same ddoc');
  const sel = { w: { $gte: 10 } };
  eq((await findOk(ST, { selector: sel, sort: ['w'], limit: 1000 })).docs, await brute(ST, sel, ['w']));
  for (let i = 0; i < 5; i++) await put(ST, 'late' + i, { v: i * 3, w: 100 + i });
  await same('writes with two indexes');
  eq((await findOk(ST, { selector: sel, sort: ['w'], limit: 1000 })).docs, await brute(ST, sel, ['w']));
});

// ---- I. a key too long -------------------------------------------------------------------------

// A document whose indexed field is a ~12 KB string is still written (201):
// divan does not refuse writes because of an index. Such a key is longer
// than divan's index keys may be, so the document is simply not in that
// index and a _find answered through the index does not return it (the
// README says so); _all_docs and other indexes still find it.
test('I. an indexed value too long for a key: the write succeeds, the index skips the document', async () => {
  const db = 'longkey';
  eq((await req('PUT', P(db))).status, 201);
  await created(db, { index: { fields: ['s'] }, ddoc: 'ls', name: 's' });
  const long = 'x'.repeat(12 * 1024);
  const r = await req('PUT', P(db, '/big'), { s: long, n: 1 });
  eq(r.status, 201, r.text);
  await put(db, 'small', { s: 'abc', n: 2 });
  const b = await post(db, '/_bulk_docs', { docs: [{ _id: 'big2', s: long + 'y', n: 3 }] });
  eq(b.status, 201, b.text);
  ok(b.json[0].ok, b.text);
  const f = await findOk(db, { selector: { s: { $gt: null } }, use_index: 'ls', allow_fallback: false, limit: 100 });
  eq(f.docs.map((d) => d._id), ['small']);
  // the documents are there
  eq((await findOk(db, { selector: { _id: 'big' } })).docs.map((d) => d.n), [1]);
  eq((await findOk(db, { selector: { _id: { $gt: null }, n: { $gte: 1 } } })).docs.map((d) => d._id), ['big', 'big2', 'small']);
  // shortened, it joins the index
  const rev = (await req('GET', P(db, '/big'))).json._rev;
  await put(db, 'big', { _rev: rev, s: 'abd', n: 1 });
  eq((await findOk(db, { selector: { s: { $gt: null } }, use_index: 'ls', limit: 100 })).docs.map((d) => d._id), ['small', 'big']);
});

test('divan is healthy', async () => {
  const r = await req('GET', U + '/');
  eq(r.status, 200, r.text);
});

runFile(__filename, {
  seconds: 120,
  started: (s) => { U = s.base; },
});

void assert;
