// views.test.js — black-box conformance of map/reduce views against a real
// `divan serve`, answered as CouchDB 3.4 answers (the specification is
// /work/view_spec.md §1–7, 9 and 11; docs.couchdb.org "Views",
// /{db}/_design/{ddoc}/_view/{view}, "Views Collation"):
//
//   A. map queries, one case per line: key, keys, start/end keys and docids,
//      inclusive_end, descending, limit, skip; total_rows and offset
//   B. the response's shape and field order; update_seq
//   C. POST …/_view/{view} (body params, query string over them, keys) and
//      POST …/_view/{view}/queries
//   D. reduce: group, group_level (arrays, short arrays, non-arrays), keys
//      with group; built-ins _sum (numbers, arrays, objects, the
//      builtin_reduce_error row), _count, _stats, _approx_count_distinct;
//      JavaScript reduce with rereduce over 3,000 documents, a reduce that
//      throws, reduce_overflow_error
//   E. include_docs: own document, linked {"_id": …} (and _rev), null,
//      missing, conflicts, attachments
//   F. the "Views Collation" table of the docs (ICU), the docs' sorting
//      example, and "options": {"collation": "raw"} (Erlang term order)
//   G. errors: every query_parse_error text, invalid JSON, 404s, 405, 410,
//      415, bad bodies
//   H. index life: update=true/false/lazy, stale, deletions, map
//      functions that throw, design documents excluded (include_design),
//      signatures kept and changed and shared, _info, _compact/{ddoc},
//      _view_cleanup, save-time compilation errors
//   I. _changes?filter=_view
//   J. _list over a view (small)
//
// Queries are written as CouchDB query strings ('startkey=3&endkey=5'): q()
// percent-encodes each value and keeps the order (the last of a repeated
// parameter wins). Assertions are about behaviour; a wait for the background
// builder polls for the answer it must reach.
//
//   DIVAN_BIN=build/cc/divan node test/node/http/views.test.js
//   DIVAN_URL=http://admin:testpass@127.0.0.1:5984 node ...  (a running server)
//   T_ONLY='A:' …  (only the tests whose name holds that text)
'use strict';
const { test, req, eq, ok, isErr, assert } = require('../lib/t');
const { runFile } = require('../lib/divan');

let U = '';     // server URL with credentials
let ANON = '';  // the same without
const fn = (f) => f.toString();
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

// ---- helpers -------------------------------------------------------------------------

const P = (db, p = '') => `${U}/${db}${p}`;
// 'a=1&b=["x"]' → 'a=1&b=%5B%22x%22%5D' (each value percent-encoded, order kept)
function enc(qs) {
  if (!qs) return '';
  return '?' + qs.split('&').map((kv) => {
    const i = kv.indexOf('=');
    return i < 0 ? encodeURIComponent(kv) : encodeURIComponent(kv.slice(0, i)) + '=' + encodeURIComponent(kv.slice(i + 1));
  }).join('&');
}
// 'm/n' → '/_design/m/_view/n'
const vpath = (dv) => { const [d, v] = dv.split('/'); return `/_design/${d}/_view/${v}`; };
const q = (db, dv, qs = '') => req('GET', P(db, vpath(dv) + enc(qs)));
const qpost = (db, dv, body, qs = '', h) => req('POST', P(db, vpath(dv) + enc(qs)), body, h);
async function ok200(r, what) { assert.strictEqual(r.status, 200, `${what}: ${r.status} ${r.text}`); return r.json; }
const view = async (db, dv, qs = '') => ok200(await q(db, dv, qs), `GET ${db} ${dv}?${qs}`);

async function put(db, id, body) {
  const r = await req('PUT', P(db, '/' + id), body);
  ok(r.status === 201 || r.status === 202, `PUT ${db}/${id}: ${r.status} ${r.text}`);
  return r.json.rev;
}
async function del(db, id) {
  const cur = await req('GET', P(db, '/' + id));
  eq(cur.status, 200, cur.text);
  const r = await req('DELETE', P(db, '/' + id + '?rev=' + cur.json._rev));
  ok(r.status === 200 || r.status === 202, r.text);
}
async function update(db, id, fields) {
  const cur = (await req('GET', P(db, '/' + id))).json;
  return put(db, id, Object.assign(cur, fields));
}
async function bulk(db, docs, extra = {}) {
  const r = await req('POST', P(db, '/_bulk_docs'), Object.assign({ docs }, extra));
  eq(r.status, 201, r.text);
  for (const x of r.json) ok(!x.error, JSON.stringify(x));
  return r.json;
}
async function mkdb(db) { const r = await req('PUT', P(db)); eq(r.status, 201, r.text); }
// PUT _design/name with these views (source strings or {map, reduce, options}) and more members
async function ddoc(db, name, views, extra = {}) {
  const id = '_design/' + name;
  const cur = await req('GET', P(db, '/' + id));
  const body = Object.assign({ _id: id, views }, extra);
  if (cur.status === 200) body._rev = cur.json._rev;
  const r = await req('PUT', P(db, '/' + id), body);
  eq(r.status, 201, `PUT ${db}/${id}: ${r.text}`);
  return r.json.rev;
}
// A map function over the documents of one type, written as its source.
const mapOf = (cond, emit) => `function (doc) { if (${cond}) emit(${emit}); }`;

const idsOf = (j) => j.rows.map((x) => x.id).join(' ');
const kvOf = (j) => j.rows.map((x) => [x.key, x.value]);
const keysOf = (j) => j.rows.map((x) => x.key);

// Poll fn() until it is truthy (the background builder is not timed).
async function until(what, f, ms = 20000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try { last = await f(); if (last) return last; } catch (e) { last = e; }
    await sleep(50);
  }
  throw new Error('timed out waiting for ' + what + ' (last: ' + (last && last.stack || JSON.stringify(last)) + ')');
}
// The design document's index is not being built.
const idle = (db, name) => until(`${db}/_design/${name} idle`, async () => {
  const r = await req('GET', P(db, `/_design/${name}/_info`));
  return r.status === 200 && r.json.view_index.updater_running === false;
});
const sigOf = async (db, name) => {
  const r = await req('GET', P(db, `/_design/${name}/_info`));
  eq(r.status, 200, r.text);
  return r.json.view_index.signature;
};

// ---- texts ---------------------------------------------------------------------------

const NO_MATCH_ASC = 'No rows can match your key range, reverse your start_key and end_key or set descending=true';
const NO_MATCH_DESC = 'No rows can match your key range, reverse your start_key and end_key or set descending=false';
const INCOMPAT = '`keys` is incompatible with `key`, `start_key` and `end_key`';
const GROUP_MAP = 'Invalid use of grouping on a map view.';
const SUMERR = 'The _sum function requires that map values be numbers, arrays of numbers, or objects. ' +
  'Objects cannot be mixed with other data structures. Objects can be arbitrarily nested, provided that the values ' +
  'for all fields are themselves numbers, arrays of numbers, or objects.';
const MULTIKEY = 'Multi-key fetch'; // "fetchs" in older sources, "fetches" in 3.4's docs (spec §2.6): a prefix

// ---- fixtures ------------------------------------------------------------------------

const DB = 'vq'; // d01..d10 {type:'num', n}
const pad = (i, w = 2) => String(i).padStart(w, '0');
const NUM = mapOf("doc.type === 'num'", 'doc.n, doc.n');
const DUP = mapOf("doc.type === 'num'", 'doc.n % 3, doc.n');
// rows of m/dup in (key, id) order: key n%3
const DUP_ORDER = 'd03 d06 d09 d01 d04 d07 d10 d02 d05 d08';

const M_VIEWS = {
  lib: { util: 'exports.twice = function (x) { return 2 * x; };' },
  n: { map: NUM },
  n_sum: { map: NUM, reduce: '_sum' },
  n_count: { map: NUM, reduce: '_count' },
  n_stats: { map: NUM, reduce: '_stats' },
  dup: { map: DUP },
  dup_sum: { map: DUP, reduce: '_sum' },
  all: { map: 'function (doc) { emit(doc._id, null); }' },
  throws: { map: fn(function (doc) { if (doc.type === 'num') { if (doc.n % 2) throw new Error('odd ' + doc._id); emit(doc.n, null); } }) },
  undef: { map: fn(function (doc) { if (doc.n === 1) { emit(undefined, [doc._id, doc.nothing]); emit(doc.n); } }) },
  twice: { map: fn(function (doc) { if (doc.type === 'num') emit(require('views/lib/util').twice(doc.n), null); }) },
};
const LISTS = {
  rows: fn(function (head, req) {
    start({ headers: { 'Content-Type': 'application/json' } });
    var rows = [], row;
    while ((row = getRow())) rows.push(row);
    send(JSON.stringify({ head: head, rows: rows, query: req.query }));
  }),
  firsttwo: fn(function (head, req) {
    var row, n = 0;
    while ((row = getRow())) { send(row.key + ';'); if (++n === 2) return 'stop'; }
    return 'end';
  }),
};

test('setup: vq with d01..d10, _design/m, _design/inc (include_design), _design/lst, a _local doc', async () => {
  await mkdb(DB);
  const docs = [];
  for (let i = 1; i <= 10; i++) docs.push({ _id: 'd' + pad(i), type: 'num', n: i });
  await bulk(DB, docs);
  await ddoc(DB, 'm', M_VIEWS, { lists: LISTS });
  await ddoc(DB, 'inc', { all: { map: 'function (doc) { emit(doc._id, null); }' } }, { options: { include_design: true } });
  await ddoc(DB, 'lst', {}, { lists: LISTS });
  await put(DB, '_local/x', { type: 'num', n: 99 });
  await ddoc(DB, 'noviews', undefined, { shows: { s: 'function (doc, req) { return "s"; }' } });
});

// ---- A. map queries ------------------------------------------------------------------

// [view, query, ids (space-separated), offset (undefined: not checked)]
const MAP_CASES = [
  ['n', '', 'd01 d02 d03 d04 d05 d06 d07 d08 d09 d10', 0],
  ['n', 'key=3', 'd03', 2],
  ['n', 'key=3.0', 'd03', 2],                       // numbers compare numerically
  ['n', 'key=99', '', 10],
  ['n', 'startkey=3&endkey=5', 'd03 d04 d05', 2],
  ['n', 'start_key=3&end_key=5', 'd03 d04 d05', 2],
  ['n', 'startkey=3&end_key=5', 'd03 d04 d05', 2],
  ['n', 'startkey=1&endkey=1.0', 'd01', 0],         // equal under collation, not =:=: no range error
  ['n', 'startkey=8', 'd08 d09 d10', 7],
  ['n', 'startkey=11', '', 10],                     // past the end: offset == total_rows
  ['n', 'endkey=3', 'd01 d02 d03', 0],
  ['n', 'endkey=3&inclusive_end=false', 'd01 d02', 0],
  ['n', 'endkey=3&inclusive_end=true', 'd01 d02 d03', 0],
  ['n', 'startkey=3&endkey=5&inclusive_end=false', 'd03 d04', 2],
  ['n', 'endkey=0', '', 0],
  ['n', 'key=3&endkey=5', 'd03 d04 d05', 2],        // last wins per field
  ['n', 'endkey=5&key=3', 'd03', 2],
  ['n', 'startkey=2&key=4', 'd04', 3],
  ['n', 'limit=3', 'd01 d02 d03', 0],
  ['n', 'limit=3&skip=2', 'd03 d04 d05', 2],
  ['n', 'skip=8', 'd09 d10', 8],
  ['n', 'skip=10', '', 10],
  ['n', 'skip=20', '', 10],                         // skip past the end
  ['n', 'startkey=4&skip=2&limit=2', 'd06 d07', 5],
  ['n', 'limit=0', '', undefined],
  ['n', 'limit=268435456', 'd01 d02 d03 d04 d05 d06 d07 d08 d09 d10', 0],
  ['n', 'descending=true', 'd10 d09 d08 d07 d06 d05 d04 d03 d02 d01', 0],
  ['n', 'descending=TRUE', 'd10 d09 d08 d07 d06 d05 d04 d03 d02 d01', 0], // booleans: case-insensitive
  ['n', 'descending=false', 'd01 d02 d03 d04 d05 d06 d07 d08 d09 d10', 0],
  ['n', 'descending=true&startkey=5', 'd05 d04 d03 d02 d01', 5],
  ['n', 'descending=true&endkey=8', 'd10 d09 d08', 0],
  ['n', 'descending=true&startkey=5&endkey=3', 'd05 d04 d03', 5],
  ['n', 'descending=true&startkey=5&endkey=3&inclusive_end=false', 'd05 d04', 5],
  ['n', 'descending=true&limit=2&skip=1', 'd09 d08', 1],
  ['n', 'descending=true&skip=20', '', 10],
  ['n', 'descending=true&key=3', 'd03', 7],
  ['n', 'keys=[3,1,7]', 'd03 d01 d07', undefined],  // the given order
  ['n', 'keys=[3,99,1]', 'd03 d01', undefined],     // misses omitted
  ['n', 'keys=[3,1,3]', 'd03 d01 d03', undefined],  // a duplicate repeats (single-node semantics, spec §3.2)
  ['n', 'keys=[]', '', undefined],
  ['n', 'keys=[4]', 'd04', 3],                      // one key is key=4 (3.3.1+)
  ['n', 'keys=[4]&endkey=6', 'd04 d05 d06', 3],     // …and combines with ranges, last wins
  ['n', 'endkey=6&keys=[4]', 'd04', 3],
  ['n', 'keys=[1,2,3,4]&limit=2&skip=1', 'd02 d03', undefined],
  ['n', 'keys=[5,2]&descending=true', 'd05 d02', undefined],
  ['n', 'foo=bar&page_size=3', 'd01 d02 d03 d04 d05 d06 d07 d08 d09 d10', 0], // unknown params are ignored
  ['n', 'sorted=false', 'd01 d02 d03 d04 d05 d06 d07 d08 d09 d10', undefined],
  ['n', 'stable=true', 'd01 d02 d03 d04 d05 d06 d07 d08 d09 d10', 0],
  ['n', 'update=true', 'd01 d02 d03 d04 d05 d06 d07 d08 d09 d10', 0],
  // same key from several documents: ties broken by docid; docids narrow the range
  ['dup', '', DUP_ORDER, 0],
  ['dup', 'key=1', 'd01 d04 d07 d10', 3],
  ['dup', 'key=1&startkey_docid=d04', 'd04 d07 d10', 4],
  ['dup', 'key=1&endkey_docid=d07', 'd01 d04 d07', 3],
  ['dup', 'key=1&startkey_docid=d04&endkey_docid=d07', 'd04 d07', 4],
  ['dup', 'key=1&start_key_doc_id=d04&end_key_doc_id=d07', 'd04 d07', 4],
  ['dup', 'startkey=1&startkey_docid=d04&endkey=2&endkey_docid=d05', 'd04 d07 d10 d02 d05', 4],
  ['dup', 'startkey=1&startkey_docid=d05', 'd07 d10 d02 d05 d08', 5], // docid between two rows
  ['dup', 'startkey=0&endkey=1&endkey_docid=d07&inclusive_end=false', 'd03 d06 d09 d01 d04', 0],
  ['dup', 'startkey=0&endkey=1&endkey_docid=d07', 'd03 d06 d09 d01 d04 d07', 0],
  ['dup', 'endkey=1&inclusive_end=false', 'd03 d06 d09', 0], // every row of the end key excluded
  ['dup', 'endkey=1', 'd03 d06 d09 d01 d04 d07 d10', 0],
  ['dup', 'startkey_docid=d05', DUP_ORDER, 0],       // a docid without its key is ignored
  ['dup', 'endkey_docid=d05', DUP_ORDER, 0],
  ['dup', 'startkey=1&startkey_docid=d07&endkey=1&endkey_docid=d04', '', undefined], // start_key =:= end_key: no range error
  ['dup', 'descending=true', 'd08 d05 d02 d10 d07 d04 d01 d09 d06 d03', 0],
  ['dup', 'descending=true&startkey=1', 'd10 d07 d04 d01 d09 d06 d03', 3],
  ['dup', 'descending=true&key=1', 'd10 d07 d04 d01', 3],
  ['dup', 'descending=true&startkey=1&startkey_docid=d07&endkey=0&endkey_docid=d06', 'd07 d04 d01 d09 d06', 4],
  ['dup', 'descending=true&startkey=1&startkey_docid=d07&endkey=0&endkey_docid=d06&inclusive_end=false', 'd07 d04 d01 d09', 4],
  ['dup', 'descending=true&endkey=1', 'd08 d05 d02 d10 d07 d04 d01', 0],
  ['dup', 'descending=true&endkey=1&inclusive_end=false', 'd08 d05 d02', 0],
  ['dup', 'descending=true&endkey=1&endkey_docid=d07&inclusive_end=false', 'd08 d05 d02 d10', 0],
  ['dup', 'descending=true&endkey=1&endkey_docid=d07', 'd08 d05 d02 d10 d07', 0],
  // keys with docids: applied per key (CouchDB's view_multi_key_design test)
  ['dup', 'keys=[2,0]&startkey_docid=d05', 'd05 d08 d06 d09', undefined],
  ['dup', 'keys=[1,2]&startkey_docid=d02&endkey_docid=d07', 'd04 d07 d02 d05', undefined],
  ['dup', 'keys=[2,0]', 'd02 d05 d08 d03 d06 d09', undefined],
  // a reduce view with reduce=false is a map view
  ['n_sum', 'reduce=false', 'd01 d02 d03 d04 d05 d06 d07 d08 d09 d10', 0],
  ['n_sum', 'reduce=false&startkey=4&limit=2', 'd04 d05', 3],
  ['n_count', 'reduce=false&keys=[2,1]', 'd02 d01', undefined],
  // design documents and _local documents are not mapped…
  ['all', '', 'd01 d02 d03 d04 d05 d06 d07 d08 d09 d10', 0],
  // a document whose map throws is skipped; the others are indexed
  ['throws', '', 'd02 d04 d06 d08 d10', 0],
  ['twice', 'key=6', 'd03', 2],                      // require() of views.lib
];

for (const [v, qs, ids, offset] of MAP_CASES) {
  test(`A: m/${v}?${qs}`, async () => {
    const j = await view(DB, 'm/' + v, qs);
    eq(idsOf(j), ids, `${v}?${qs}`);
    eq(j.total_rows, v === 'throws' ? 5 : 10, 'total_rows');
    if (offset !== undefined) eq(j.offset, offset, 'offset');
    for (const r of j.rows) {
      const n = Number(r.id.slice(1));
      if (v === 'n' || v === 'n_sum' || v === 'n_count') eq([r.key, r.value], [n, n]);
      if (v === 'dup') eq([r.key, r.value], [n % 3, n]);
    }
  });
}

test('A: …unless the design document says include_design; never _local documents', async () => {
  const j = await view(DB, 'inc/all');
  eq(idsOf(j), '_design/inc _design/lst _design/m _design/noviews d01 d02 d03 d04 d05 d06 d07 d08 d09 d10');
  eq(j.total_rows, 14);
});

test('A: emit(undefined) is key null, emit(k) is value null, undefined in a value is null', async () => {
  const j = await view(DB, 'm/undef');
  eq(j.rows, [{ id: 'd01', key: null, value: ['d01', null] }, { id: 'd01', key: 1, value: null }]);
});

test('A: keys in the query string and in a POST body answer alike; keys=[] has total_rows', async () => {
  const g = await view(DB, 'm/n', 'keys=[9,2]');
  const p = await ok200(await qpost(DB, 'm/n', { keys: [9, 2] }), 'POST keys');
  eq(idsOf(g), 'd09 d02');
  eq(g.rows, p.rows);
  const e = await view(DB, 'm/n', 'keys=[]');
  eq(e.rows, []);
  eq(e.total_rows, 10);
});

// ---- B. shapes -----------------------------------------------------------------------

test('B: a map answer is {total_rows, offset, rows}, rows {id, key, value} in that order', async () => {
  const j = await view(DB, 'm/n', 'limit=2');
  eq(Object.keys(j), ['total_rows', 'offset', 'rows']);
  eq(j.rows, [{ id: 'd01', key: 1, value: 1 }, { id: 'd02', key: 2, value: 2 }]);
  for (const r of j.rows) eq(Object.keys(r), ['id', 'key', 'value']);
  const d = await view(DB, 'm/n', 'limit=1&include_docs=true');
  eq(Object.keys(d.rows[0]), ['id', 'key', 'value', 'doc']);
});

test('B: update_seq=true adds update_seq after offset (map) and before rows (reduce)', async () => {
  const m = await view(DB, 'm/n', 'update_seq=true&limit=1');
  eq(Object.keys(m), ['total_rows', 'offset', 'update_seq', 'rows']);
  ok(typeof m.update_seq === 'number' || typeof m.update_seq === 'string', m.update_seq);
  const r = await view(DB, 'm/n_sum', 'update_seq=true');
  eq(Object.keys(r), ['update_seq', 'rows']);
  ok(typeof r.update_seq === 'number' || typeof r.update_seq === 'string');
  eq(Object.keys(await view(DB, 'm/n_sum', 'update_seq=false')), ['rows']);
});

test('B: a reduce answer is {rows}, rows {key, value}; an empty range is {rows: []}', async () => {
  const j = await view(DB, 'm/n_sum');
  eq(j, { rows: [{ key: null, value: 55 }] });
  eq(Object.keys(j.rows[0]), ['key', 'value']);
  eq(await view(DB, 'm/n_sum', 'startkey=11'), { rows: [] });
  eq(await view(DB, 'm/n_count', 'keys=[99]'), { rows: [] });
});

test('B: HEAD answers 200 without a body', async () => {
  const r = await req('HEAD', P(DB, vpath('m/n')));
  eq(r.status, 200);
  eq(r.text, '');
});

test('B: a view with no rows is {total_rows: 0, offset: 0, rows: []}', async () => {
  await ddoc(DB, 'empty', { none: { map: 'function (doc) { if (doc.nope) emit(1, 1); }' } });
  eq(await view(DB, 'empty/none'), { total_rows: 0, offset: 0, rows: [] });
});

// ---- C. POST -------------------------------------------------------------------------

test('C: POST {} is the whole view; body params apply; the query string wins over the body', async () => {
  eq(idsOf(await ok200(await qpost(DB, 'm/n', {}), 'POST {}')), 'd01 d02 d03 d04 d05 d06 d07 d08 d09 d10');
  eq(idsOf(await ok200(await qpost(DB, 'm/n', { limit: 1, descending: true }), 'body')), 'd10');
  eq(idsOf(await ok200(await qpost(DB, 'm/n', { limit: 1, descending: true }, 'limit=3'), 'qs wins')), 'd10 d09 d08');
  eq(idsOf(await ok200(await qpost(DB, 'm/n', { startkey: 3, endkey: 5, inclusive_end: false }), 'range')), 'd03 d04');
  eq(idsOf(await ok200(await qpost(DB, 'm/n', { key: 3 }, 'key=4'), 'key qs')), 'd04');
  eq(idsOf(await ok200(await qpost(DB, 'm/dup', { startkey: 1, startkey_docid: 'd04', endkey: 1, endkey_docid: 'd07' }), 'docids')), 'd04 d07');
  eq(idsOf(await ok200(await qpost(DB, 'm/n', { keys: [5, 2, 5, 77] }, 'limit=2'), 'keys+limit')), 'd05 d02');
  eq((await ok200(await qpost(DB, 'm/n_sum', { group: true, keys: [2, 3] }), 'reduce keys')).rows, [{ key: 2, value: 2 }, { key: 3, value: 3 }]);
  eq((await ok200(await qpost(DB, 'm/n_sum', { reduce: false, limit: 1 }), 'reduce false')).rows, [{ id: 'd01', key: 1, value: 1 }]);
  const r = await req('POST', P(DB, vpath('m/n')), '{"limit":2}', { 'Content-Type': 'application/json; charset=utf-8' });
  eq(idsOf(await ok200(r, 'charset')), 'd01 d02');
});

test('C: POST …/queries answers {results: [one answer per query]}', async () => {
  const r = await req('POST', P(DB, vpath('m/n') + '/queries'), {
    queries: [{}, { keys: [3, 1] }, { startkey: 8, limit: 2 }, { descending: true, skip: 8 }],
  });
  const j = await ok200(r, '/queries');
  eq(Object.keys(j), ['results']);
  eq(j.results.length, 4);
  eq(idsOf(j.results[0]), 'd01 d02 d03 d04 d05 d06 d07 d08 d09 d10');
  eq(idsOf(j.results[1]), 'd03 d01');
  eq(idsOf(j.results[2]), 'd08 d09');
  eq([j.results[2].total_rows, j.results[2].offset], [10, 7]);
  eq(idsOf(j.results[3]), 'd02 d01');
  for (const x of j.results) eq(x.total_rows, 10);
});

test('C: /queries on a reduce view; the query string is the base, except keys, group and group_level', async () => {
  const j = await ok200(await req('POST', P(DB, vpath('m/n_sum') + '/queries' + enc('group=true&descending=true')), {
    queries: [{}, { group: true, limit: 2 }, { reduce: false, limit: 1 }, { keys: [4, 5], group: true, descending: false }],
  }), '/queries reduce');
  eq(j.results[0], { rows: [{ key: null, value: 55 }] });   // group is not inherited…
  eq(j.results[1], { rows: [{ key: 10, value: 10 }, { key: 9, value: 9 }] }); // …descending is
  eq(idsOf(j.results[2]), 'd10');
  eq(j.results[3].rows, [{ key: 4, value: 4 }, { key: 5, value: 5 }]);
  const m = await ok200(await req('POST', P(DB, vpath('m/n') + '/queries' + enc('limit=1')), { queries: [{}, { limit: 2 }] }), 'base limit');
  eq(m.results.map(idsOf), ['d01', 'd01 d02']);
});

test('C: /queries errors: no queries, queries not an array, one bad query fails all, GET is 405', async () => {
  const Q = P(DB, vpath('m/n') + '/queries');
  isErr(await req('POST', Q, {}), 400, 'bad_request', 'POST body must include `queries` parameter.');
  isErr(await req('POST', Q, { queries: 1 }), 400, 'bad_request', '`queries` member must be an array.');
  isErr(await req('POST', Q, { queries: [{}, { limit: -1 }] }), 400, 'query_parse_error', 'Invalid value for positive integer: -1');
  isErr(await req('POST', Q, { queries: [{ startkey: 2, endkey: 1 }] }), 400, 'query_parse_error', NO_MATCH_ASC);
  isErr(await req('GET', Q), 405, 'method_not_allowed');
  isErr(await req('POST', Q, '{}', { 'Content-Type': 'text/plain' }), 415, 'bad_content_type', 'Content-Type must be application/json');
});

// ---- D. reduce -----------------------------------------------------------------------

// vgrp: array keys of every length, and two non-array keys; values are
// powers of two, so a sum says which documents a group holds.
const GRP = [['g1', ['a', 'x', 1], 1], ['g2', ['a', 'x', 2], 2], ['g3', ['a', 'y', 1], 4], ['g4', ['a'], 8],
  ['g5', ['b', 'x'], 16], ['g6', [], 32], ['g7', 'str', 64], ['g8', 5, 128]];
const L1 = [[5, 128], ['str', 64], [[], 32], [['a'], 15], [['b'], 16]];
const L2 = [[5, 128], ['str', 64], [[], 32], [['a'], 8], [['a', 'x'], 3], [['a', 'y'], 4], [['b', 'x'], 16]];
const EXACT = [[5, 128], ['str', 64], [[], 32], [['a'], 8], [['a', 'x', 1], 1], [['a', 'x', 2], 2], [['a', 'y', 1], 4], [['b', 'x'], 16]];
// [view, query, [[key, value]…]]
const GROUP_CASES = [
  ['sum', '', [[null, 255]]],
  ['sum', 'group=false', [[null, 255]]],
  ['sum', 'group_level=0', [[null, 255]]],
  ['sum', 'group=false&group_level=0', [[null, 255]]],
  ['sum', 'group_level=1', L1],
  ['sum', 'group_level=2', L2],
  ['sum', 'group_level=3', EXACT],
  ['sum', 'group_level=99', EXACT],
  ['sum', 'group=true', EXACT],
  ['sum', 'group=true&group_level=1', L1],
  ['sum', 'group=true&group_level=0', [[null, 255]]],
  ['sum', 'group_level=1&descending=true', L1.slice().reverse()],
  ['sum', 'group=true&descending=true&limit=3', EXACT.slice().reverse().slice(0, 3)],
  ['sum', 'group_level=1&limit=2&skip=1', L1.slice(1, 3)],
  ['sum', 'group_level=1&skip=10', []],
  ['sum', 'group_level=1&startkey=["a"]&endkey=["a",{}]', [[['a'], 15]]],
  ['sum', 'group_level=2&startkey=["a","x"]&endkey=["a","x",{}]', [[['a', 'x'], 3]]],
  ['sum', 'group_level=2&startkey=["a","x",{}]&endkey=["a","x"]&descending=true', [[['a', 'x'], 3]]],
  ['sum', 'startkey=["a"]&endkey=["a",{}]', [[null, 15]]],
  ['sum', 'startkey=["a"]&endkey=["a",{}]&inclusive_end=false', [[null, 15]]],
  ['sum', 'startkey=["a"]&endkey=["a","y",1]&inclusive_end=false', [[null, 11]]],
  ['sum', 'keys=[["a"]]', [[null, 8]]],                          // one key: no group needed
  ['sum', 'group=true&keys=[["a"],"str",["zz"],5]', [[['a'], 8], ['str', 64], [5, 128]]],
  ['sum', 'group=true&keys=[["b","x"]]', [[['b', 'x'], 16]]],
  ['cnt', '', [[null, 8]]],
  ['cnt', 'group_level=1', L1.map(([k, v]) => [k, v === 15 ? 4 : 1])],
  ['cnt', 'group_level=2', L2.map(([k, v]) => [k, v === 3 ? 2 : 1])],
];

test('setup: vgrp', async () => {
  await mkdb('vgrp');
  await bulk('vgrp', GRP.map(([id, k, v]) => ({ _id: id, k, v })));
  const m = 'function (doc) { emit(doc.k, doc.v); }';
  await ddoc('vgrp', 'g', { sum: { map: m, reduce: '_sum' }, cnt: { map: m, reduce: '_count' } });
});

for (const [v, qs, want] of GROUP_CASES) {
  test(`D: vgrp g/${v}?${qs}`, async () => {
    const j = await view('vgrp', 'g/' + v, qs);
    eq(Object.keys(j), ['rows']);
    eq(kvOf(j), want);
  });
}

test('D: reduce=false on the grouped view gives the map rows in collation order', async () => {
  const j = await view('vgrp', 'g/sum', 'reduce=false');
  eq(idsOf(j), 'g8 g7 g6 g4 g1 g2 g3 g5');
  eq(j.total_rows, 8);
});

test('D: m/n_* built-ins over numbers, with ranges and groups', async () => {
  eq(kvOf(await view(DB, 'm/n_sum', 'startkey=3&endkey=5')), [[null, 12]]);
  eq(kvOf(await view(DB, 'm/n_sum', 'group=true&startkey=3&endkey=4')), [[3, 3], [4, 4]]);
  eq(kvOf(await view(DB, 'm/n_sum', 'keys=[3]')), [[null, 3]]);
  eq(kvOf(await view(DB, 'm/n_sum', 'keys=[3,99,1]&group=true')), [[3, 3], [1, 1]]);
  eq(kvOf(await view(DB, 'm/n_sum', 'group=true&limit=2&skip=1')), [[2, 2], [3, 3]]);
  eq(kvOf(await view(DB, 'm/n_sum', 'group=true&descending=true&limit=2')), [[10, 10], [9, 9]]);
  eq(kvOf(await view(DB, 'm/n_count')), [[null, 10]]);
  eq(kvOf(await view(DB, 'm/n_count', 'startkey=2&endkey=4&inclusive_end=false')), [[null, 2]]);
  eq(kvOf(await view(DB, 'm/dup_sum', 'group=true')), [[0, 18], [1, 22], [2, 15]]);
  eq(kvOf(await view(DB, 'm/dup_sum', 'keys=[2,0]&group=true')), [[2, 15], [0, 18]]);
  eq(kvOf(await view(DB, 'm/dup_sum', 'key=1&startkey_docid=d04')), [[null, 21]]);
  const s = await view(DB, 'm/n_stats');
  eq(s.rows, [{ key: null, value: { sum: 55, count: 10, min: 1, max: 10, sumsqr: 385 } }]);
  eq(Object.keys(s.rows[0].value), ['sum', 'count', 'min', 'max', 'sumsqr']);
});

// vred: one map per kind of value, emit(doc._id, doc.val)
const RED_DOCS = {
  int: [1, 2, 3],
  float: [1, 2, 3.5],
  arr: [[1, 2], [10], [1, 1, 1]],
  mix: [1, [1, 4, 6]],
  obj: [{ a: 1, b: [1, 2], c: { d: 3 }, g: 1 }, { a: 2, b: 3, c: { e: 5 }, f: 1, g: 1 }],
  str: [1, 'x'],
  stats: [2, 4, 6],
  statsarr: [[1, 2], [3, 4]],
  statspre: [{ sum: 10, count: 2, min: 3, max: 7, sumsqr: 58 }, { sum: 5, count: 1, min: 5, max: 5, sumsqr: 25 }],
  one: ['only'],
};
const kindMap = (kind) => `function (doc) { if (doc.kind === ${JSON.stringify(kind)}) emit(doc._id, doc.val); }`;
const STATS = (sum, count, min, max, sumsqr) => ({ sum, count, min, max, sumsqr });

test('setup: vred', async () => {
  await mkdb('vred');
  const docs = [];
  for (const [kind, vals] of Object.entries(RED_DOCS)) vals.forEach((val, i) => docs.push({ _id: kind + (i + 1), kind, val }));
  await bulk('vred', docs);
  await ddoc('vred', 'r', {
    sum_int: { map: kindMap('int'), reduce: '_sum' },
    sum_float: { map: kindMap('float'), reduce: '_sum' },
    sum_arr: { map: kindMap('arr'), reduce: '_sum' },
    sum_mix: { map: kindMap('mix'), reduce: '_sum' },
    sum_obj: { map: kindMap('obj'), reduce: '_sum' },
    sum_str: { map: kindMap('str'), reduce: '_sum' },
    count_str: { map: kindMap('str'), reduce: '_count' },
    stats: { map: kindMap('stats'), reduce: '_stats' },
    stats_arr: { map: kindMap('statsarr'), reduce: '_stats' },
    stats_pre: { map: kindMap('statspre'), reduce: '_stats' },
    // built-ins are recognised by prefix (CouchDB's "Builtin reduce functions with trailings")
    trail_sum: { map: kindMap('int'), reduce: '_sum\n' },
    trail_count: { map: kindMap('int'), reduce: '_count  ' },
    trail_stats: { map: kindMap('int'), reduce: '_stats are awesome' },
    summary: { map: kindMap('int'), reduce: '_summary' },
    js_count: { map: kindMap('int'), reduce: fn(function (keys, values, rereduce) { return rereduce ? sum(values) : values.length; }) },
    js_keys: { map: kindMap('int'), reduce: fn(function (keys, values, rereduce) { return rereduce ? values[0] : keys; }) },
    overflow: {
      map: kindMap('one'),
      reduce: fn(function (keys, values) { var chars = []; for (var i = 0; i < 1000; i++) chars.push('wazzap'); return chars; }),
    },
  });
});

// [view, query, rows as [[key, value]…]]
const BUILTIN_CASES = [
  ['sum_int', '', [[null, 6]]],
  ['sum_float', '', [[null, 6.5]]],
  ['sum_arr', '', [[null, [12, 3, 1]]]],                   // different lengths: the longer tail kept
  ['sum_mix', '', [[null, [2, 4, 6]]]],                    // a number is a one-element array
  ['sum_obj', '', [[null, { a: 3, b: [4, 2], c: { d: 3, e: 5 }, f: 1, g: 2 }]]],
  ['sum_obj', 'group=true', [['obj1', { a: 1, b: [1, 2], c: { d: 3 }, g: 1 }], ['obj2', { a: 2, b: 3, c: { e: 5 }, f: 1, g: 1 }]]],
  ['sum_str', '', [[null, { error: 'builtin_reduce_error', reason: SUMERR, caused_by: 'x' }]]],
  ['sum_str', 'group=true', [['str1', 1], ['str2', { error: 'builtin_reduce_error', reason: SUMERR, caused_by: 'x' }]]],
  ['sum_str', 'key="str1"', [[null, 1]]],
  ['count_str', '', [[null, 2]]],                          // _count takes any value
  ['stats', '', [[null, STATS(12, 3, 2, 6, 56)]]],
  ['stats', 'group=true&limit=1', [['stats1', STATS(2, 1, 2, 2, 4)]]],
  ['stats_arr', '', [[null, [STATS(4, 2, 1, 3, 10), STATS(6, 2, 2, 4, 20)]]]],
  ['stats_pre', '', [[null, STATS(15, 3, 3, 7, 83)]]],
  ['trail_sum', '', [[null, 6]]],
  ['trail_count', '', [[null, 3]]],
  ['trail_stats', '', [[null, STATS(6, 3, 1, 3, 14)]]],
  ['summary', '', [[null, 6]]],
  ['js_count', '', [[null, 3]]],
  ['js_count', 'group=true&startkey="int2"', [['int2', 1], ['int3', 1]]],
  ['js_keys', 'key="int2"', [[null, [['int2', 'int2']]]]],  // keys are [key, docid] pairs
];

for (const [v, qs, want] of BUILTIN_CASES) {
  test(`D: vred r/${v}?${qs}`, async () => {
    const j = await view('vred', 'r/' + v, qs);
    eq(kvOf(j), want);
    for (const r of j.rows) {
      if (r.value && typeof r.value === 'object' && 'sumsqr' in r.value) eq(Object.keys(r.value), ['sum', 'count', 'min', 'max', 'sumsqr']);
      if (r.value && r.value.error) eq(Object.keys(r.value), ['error', 'reason', 'caused_by']);
    }
  });
}

test('D: a JavaScript reduce that throws reduces to null', async () => {
  const M = kindMap('int');
  await ddoc('vred', 'rt', {
    js_throw: { map: M, reduce: fn(function (keys, values, rereduce) { throw new Error('boom'); }) },
    js_count: { map: M, reduce: fn(function (keys, values, rereduce) { return rereduce ? sum(values) : values.length; }) },
    sum: { map: M, reduce: '_sum' },
  });
  eq(kvOf(await view('vred', 'rt/js_throw')), [[null, null]]);
  eq(kvOf(await view('vred', 'rt/js_throw', 'group=true')), [['int1', null], ['int2', null], ['int3', null]]);
});

test('D: …and the other reduces of its map are unharmed', async () => {
  eq(kvOf(await view('vred', 'rt/sum')), [[null, 6]]);
  eq(kvOf(await view('vred', 'rt/js_count')), [[null, 3]]);
});

test('D: a JavaScript reduce whose output does not shrink is an error row reduce_overflow_error', async () => {
  const j = await view('vred', 'r/overflow');
  eq(j.rows.length, 1, JSON.stringify(j).slice(0, 300));
  eq(j.rows[0].key, null);
  eq(j.rows[0].error, 'reduce_overflow_error', JSON.stringify(j).slice(0, 300));
  ok(/^Reduce output must shrink more rapidly/.test(j.rows[0].reason), j.rows[0].reason);
});

test('D: unknown built-ins are refused when the design document is saved', async () => {
  for (const red of ['_foo', '_SUM', '_top_3']) {
    const r = await req('PUT', P('vred', '/_design/bad'), { views: { v: { map: kindMap('int'), reduce: red } } });
    isErr(r, 400, 'invalid_design_doc', '`' + red + '` is not a supported reduce function.');
  }
});

// vbig: 3,000 documents, enough that reductions are rereduced
const NBIG = 3000;
const JSRED = fn(function (keys, values, rereduce) {
  var r = { c: 0, s: 0, ok: true, re: rereduce };
  if (rereduce) {
    r.ok = keys === null;
    for (var i = 0; i < values.length; i++) { r.c += values[i].c; r.s += values[i].s; r.ok = r.ok && values[i].ok; }
    return r;
  }
  r.ok = keys.length === values.length;
  for (var j = 0; j < keys.length; j++) {
    var k = keys[j];
    r.ok = r.ok && k.length === 2 && k[0] === Number(k[1].slice(1)) % 10 && typeof values[j] === 'number';
    r.c += 1;
    r.s += values[j];
  }
  return r;
});

test('setup: vbig, ' + NBIG + ' documents through _bulk_docs', async () => {
  await mkdb('vbig');
  for (let b = 0; b < NBIG; b += 500) {
    const docs = [];
    for (let i = b; i < b + 500; i++) docs.push({ _id: 'b' + pad(i, 4), i, k: i % 1000, g: i % 10 });
    await bulk('vbig', docs);
  }
  await ddoc('vbig', 'big', {
    js: { map: 'function (doc) { emit(doc.g, doc.i); }', reduce: JSRED },
    approx: { map: 'function (doc) { emit(doc.k, null); }', reduce: '_approx_count_distinct' },
    stats: { map: 'function (doc) { emit(doc.i, doc.i); }', reduce: '_stats' },
    count: { map: 'function (doc) { emit(doc.i, doc.i); }', reduce: '_count' },
    sum: { map: 'function (doc) { emit(doc.i, doc.i); }', reduce: '_sum' },
  });
});

const gsum = (g) => 300 * g + 10 * (299 * 300 / 2); // Σ i over i ≡ g (mod 10), i < 3000

test('D: JavaScript reduce with rereduce: whole range, groups, a range', async () => {
  const all = await view('vbig', 'big/js');
  eq(all.rows, [{ key: null, value: { c: NBIG, s: NBIG * (NBIG - 1) / 2, ok: true, re: true } }]);
  const g = await view('vbig', 'big/js', 'group=true');
  eq(g.rows.map((r) => r.key), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  for (const r of g.rows) eq([r.value.c, r.value.s, r.value.ok], [300, gsum(r.key), true], 'group ' + r.key);
  const two = await view('vbig', 'big/js', 'startkey=3&endkey=4');
  eq([two.rows[0].value.c, two.rows[0].value.s, two.rows[0].value.ok], [600, gsum(3) + gsum(4), true]);
  const part = await view('vbig', 'big/js', 'startkey=3&startkey_docid=b1503&endkey=3&endkey_docid=b2503');
  eq([part.rows[0].value.c, part.rows[0].value.s], [101, (1503 + 2503) / 2 * 101]);
});

test('D: _stats, _count and _sum over 3,000 rows and over ranges', async () => {
  eq(kvOf(await view('vbig', 'big/stats')), [[null, STATS(4498500, 3000, 0, 2999, 8995500500)]]);
  eq(kvOf(await view('vbig', 'big/stats', 'startkey=10&endkey=19')), [[null, STATS(145, 10, 10, 19, 2185)]]);
  eq(kvOf(await view('vbig', 'big/count')), [[null, 3000]]);
  eq(kvOf(await view('vbig', 'big/count', 'startkey=100&endkey=199')), [[null, 100]]);
  eq(kvOf(await view('vbig', 'big/count', 'startkey=100&endkey=199&inclusive_end=false')), [[null, 99]]);
  eq(kvOf(await view('vbig', 'big/count', 'descending=true&startkey=199&endkey=100')), [[null, 100]]);
  eq(kvOf(await view('vbig', 'big/sum', 'startkey=1000')), [[null, 4498500 - 499500]]);
  eq(kvOf(await view('vbig', 'big/sum', 'group=true&skip=2990')).length, 10);
});

test('D: _approx_count_distinct is within CouchDB\'s bound of the distinct keys', async () => {
  const near = (got, want) => ok(Math.abs(got - want) < Math.max(1, want * 1.04 / Math.sqrt(1024)), `${got} vs ${want}`);
  const all = await view('vbig', 'big/approx');
  ok(Number.isInteger(all.rows[0].value), JSON.stringify(all));
  near(all.rows[0].value, 1000);
  near((await view('vbig', 'big/approx', 'startkey=0&endkey=99')).rows[0].value, 100);
  near((await view('vbig', 'big/approx', 'startkey=500')).rows[0].value, 500);
  eq(kvOf(await view('vbig', 'big/approx', 'group=true&limit=3')), [[0, 1], [1, 1], [2, 1]]);
});

test('D: a map query over 3,000 rows: total_rows, skip, descending offsets', async () => {
  const j = await view('vbig', 'big/count', 'reduce=false&skip=2990');
  eq([j.total_rows, j.offset, j.rows.length], [3000, 2990, 10]);
  eq(j.rows[0], { id: 'b2990', key: 2990, value: 2990 });
  const d = await view('vbig', 'big/count', 'reduce=false&descending=true&startkey=1000&limit=3');
  eq([d.offset, idsOf(d)], [1999, 'b1000 b0999 b0998']);
  const a = await view('vbig', 'big/count', 'reduce=false');
  eq(a.rows.length, 3000);
  eq(a.rows[2999].id, 'b2999');
});

// ---- E. include_docs -----------------------------------------------------------------

let oldBRev = '';
test('setup: vdocs (links, conflicts, an attachment)', async () => {
  await mkdb('vdocs');
  oldBRev = await put('vdocs', 'b', { t: 'plain', v: 1 });
  await update('vdocs', 'b', { v: 2 });
  await bulk('vdocs', [
    { _id: 'a', link: 'b' },
    { _id: 'c', link: null },
    { _id: 'd', link: 'nosuchdoc' },
    { _id: 'e', link: 'gone' },
    { _id: 'f', t: 'nolink' },
    { _id: 'gone', t: 'x' },
    { _id: 'old', link: 'b', linkrev: oldBRev },
    { _id: 'cur', link: 'k', linkrev: '1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' },
  ]);
  await del('vdocs', 'gone');
  // a conflict: two branches of k
  await bulk('vdocs', [{ _id: 'k', _rev: '1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', v: 'loser' },
    { _id: 'k', _rev: '1-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', v: 'winner' }], { new_edits: false });
  await put('vdocs', 'att', { _attachments: { 'h.txt': { content_type: 'text/plain', data: Buffer.from('hello').toString('base64') } } });
  await ddoc('vdocs', 'i', {
    self: { map: 'function (doc) { emit(doc._id, null); }' },
    links: {
      map: fn(function (doc) {
        if ('link' in doc) emit(doc._id, doc.linkrev ? { _id: doc.link, _rev: doc.linkrev } : { _id: doc.link });
        else if (doc.t === 'nolink') emit(doc._id, { other: 1 });
      }),
    },
    count: { map: 'function (doc) { emit(doc._id, 1); }', reduce: '_count' },
  });
});

test('E: include_docs=true adds each emitting document', async () => {
  const j = await view('vdocs', 'i/self', 'include_docs=true&key="b"');
  eq(j.rows.length, 1);
  eq(j.rows[0].doc._id, 'b');
  eq(j.rows[0].doc.v, 2);
  ok(/^2-/.test(j.rows[0].doc._rev));
  const all = await view('vdocs', 'i/self', 'include_docs=true');
  for (const r of all.rows) eq(r.doc._id, r.id);
  ok(!all.rows.some((r) => r.id === 'gone'), 'deleted documents have no rows');
  const no = await view('vdocs', 'i/self', 'include_docs=false&key="b"');
  eq(no.rows[0].doc, undefined);
});

test('E: a value {"_id": X} includes X; {"_id": null} and missing or deleted X are null', async () => {
  const j = await view('vdocs', 'i/links', 'include_docs=true');
  const by = Object.fromEntries(j.rows.map((r) => [r.id, r]));
  eq(Object.keys(by).sort(), ['a', 'c', 'cur', 'd', 'e', 'f', 'old']);
  eq([by.a.id, by.a.doc._id, by.a.doc.v], ['a', 'b', 2]);           // the row's id stays the emitter's
  eq(by.a.value, { _id: 'b' });
  eq(by.c.doc, null);
  eq(by.d.doc, null);
  eq(by.e.doc, null);
  eq([by.f.doc._id, by.f.value], ['f', { other: 1 }]);            // an object without _id: its own doc
});

// CouchDB includes revision R of X; divan keeps the bodies of leaf
// revisions only (seed 000: no body for a non-leaf revision), so a leaf R
// is included — a losing branch too — and an older R is null, as it is in
// CouchDB once the database is compacted.
test('E: a value {"_id": X, "_rev": R} includes that revision of X when it is a leaf', async () => {
  const c = await view('vdocs', 'i/links', 'include_docs=true&key="cur"');
  eq([c.rows[0].doc._id, c.rows[0].doc._rev, c.rows[0].doc.v], ['k', '1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'loser']);
  const j = await view('vdocs', 'i/links', 'include_docs=true&key="old"');
  eq(j.rows[0].doc, null);
});

test('E: conflicts=true with include_docs adds _conflicts; without it there are none', async () => {
  const w = await view('vdocs', 'i/self', 'include_docs=true&conflicts=true&key="k"');
  eq(w.rows[0].doc.v, 'winner');
  eq(w.rows[0].doc._conflicts, ['1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa']);
  const wo = await view('vdocs', 'i/self', 'include_docs=true&key="k"');
  eq(wo.rows[0].doc._conflicts, undefined);
  const nodocs = await view('vdocs', 'i/self', 'conflicts=true&key="k"');
  eq(nodocs.rows, [{ id: 'k', key: 'k', value: null }]);
  const b = await view('vdocs', 'i/self', 'include_docs=true&conflicts=true&key="b"');
  eq(b.rows[0].doc._conflicts, undefined);
});

test('E: included documents carry attachment stubs, or the data with attachments=true', async () => {
  const s = await view('vdocs', 'i/self', 'include_docs=true&key="att"');
  const a = s.rows[0].doc._attachments['h.txt'];
  eq([a.stub, a.content_type, a.length, a.data], [true, 'text/plain', 5, undefined]);
});

test('E: attachments=true with include_docs inlines the data', async () => {
  const d = await view('vdocs', 'i/self', 'include_docs=true&attachments=true&key="att"');
  eq(Buffer.from(d.rows[0].doc._attachments['h.txt'].data, 'base64').toString(), 'hello');
  eq(d.rows[0].doc._attachments['h.txt'].stub, undefined);
});

test('E: include_docs on a reduce view needs reduce=false', async () => {
  const j = await view('vdocs', 'i/count', 'reduce=false&include_docs=true&key="a"');
  eq(j.rows[0].doc._id, 'a');
  isErr(await q('vdocs', 'i/count', 'include_docs=true'), 400, 'query_parse_error', '`include_docs` is invalid for reduce');
});

// ---- F. collation --------------------------------------------------------------------

// The docs' "Views Collation" table (spec §9), in order.
const COLL = [null, false, true, 1, 2, 3.0, 4, 'a', 'A', 'aa', 'b', 'B', 'ba', 'bb', ['a'], ['b'], ['b', 'c'], ['b', 'c', 'a'],
  ['b', 'd'], ['b', 'd', 'e'], { a: 1 }, { a: 2 }, { b: 1 }, { b: 2 }, { b: 2, a: 1 }, { b: 2, c: 2 }];
// The same values in Erlang term order ("collation": "raw"): numbers < atoms
// (false < null < true) < objects (tuples) < arrays (lists) < strings (bytes)
const RAW = [1, 2, 3, 4, false, null, true, { a: 1 }, { a: 2 }, { b: 1 }, { b: 2 }, { b: 2, a: 1 }, { b: 2, c: 2 },
  ['a'], ['b'], ['b', 'c'], ['b', 'c', 'a'], ['b', 'd'], ['b', 'd', 'e'], 'A', 'B', 'a', 'aa', 'b', 'ba', 'bb'];
// The docs' sorting example (views.rst)
const DOCS_EX = [null, false, true, 0, 1, 10, 42, '10', 'hello', 'Hello', '\u043f\u0440\u0438\u0432\u0435\u0442', [], [1, 2, 3], [2, 3], [3], {}, { foo: 'bar' }];
// ICU root as CouchDB 3.4 links it (ICU 72): symbols, then digits, then
// letters case-insensitively first, lowercase first (test/index/test_collate.c)
const ICU = ['_', '-', ',', ';', ':', '!', '?', '.', "'", '"', '(', ')', '[', ']', '{', '}', '@', '*', '/', '\\', '&', '#', '%',
  '`', '^', '+', '<', '=', '>', '|', '~', '$', '0', '1', '9', 'a', 'A', 'b', 'B', 'z', 'Z'];
const WORDS = ['abc', 'Abc', 'ABC', 'abc1', 'AbcZZZZZ'];
const SETS = { couch: COLL, docs: DOCS_EX, icu: ICU, words: WORDS };
const cid = (set, i) => set + pad(i + 1, 3);
const js = (v) => JSON.stringify(v);

// Each document names its value by position; the map function holds the
// values as a literal, so objects keep their member order (divan's store
// gives a document's members back in key order, which would turn
// {"b":2,"a":1} into {"a":1,"b":2} before the map saw it).
test('setup: vcoll', async () => {
  await mkdb('vcoll');
  const docs = [];
  for (const [set, vals] of Object.entries(SETS)) {
    // written in a shuffled order: the order must come from the index
    vals.map((v, i) => ({ _id: cid(set, i), set, i })).sort(() => Math.random() - 0.5).forEach((d) => docs.push(d));
  }
  await bulk('vcoll', docs);
  const views = {};
  for (const [set, vals] of Object.entries(SETS)) {
    views[set] = { map: `function (doc) { var V = ${JSON.stringify(vals)}; if (doc.set === '${set}') emit(V[doc.i], null); }` };
  }
  views.raw = { map: views.couch.map, options: { collation: 'raw' } };
  await ddoc('vcoll', 'c', views);
});

for (const set of Object.keys(SETS)) {
  test(`F: collation "${set}": ascending is the list, descending its reverse`, async () => {
    const vals = SETS[set];
    const a = await view('vcoll', 'c/' + set);
    // as JSON text: member order counts ({"b":2,"a":1} is not {"a":1,"b":2})
    eq(keysOf(a).map(js), vals.map(js));
    eq(a.rows.map((r) => r.id), vals.map((v, i) => cid(set, i)));
    eq(keysOf(await view('vcoll', 'c/' + set, 'descending=true')).map(js), vals.slice().reverse().map(js));
  });
}

test('F: key= finds each value of the collation table exactly', async () => {
  for (let i = 0; i < COLL.length; i++) {
    const j = await view('vcoll', 'c/couch', 'key=' + JSON.stringify(COLL[i]));
    eq(idsOf(j), cid('couch', i), 'key=' + JSON.stringify(COLL[i]));
  }
  eq(idsOf(await view('vcoll', 'c/couch', 'key=3')), cid('couch', 5)); // 3 == 3.0
});

// "b" is couch011, "B" is couch012 (spec §2.8 / §9)
const ENDKEY_CASES = [
  ['endkey="b"', 'b'],
  ['endkey="b"&inclusive_end=true', 'b'],
  ['endkey="b"&inclusive_end=false', 'aa'],
  ['endkey="b"&inclusive_end=false&endkey_docid=couch011', 'aa'],
  ['endkey="b"&inclusive_end=false&endkey_docid=couch012', 'b'],
  ['endkey="b"&descending=true', 'b'],
  ['endkey="b"&descending=true&inclusive_end=true', 'b'],
  ['endkey="b"&descending=true&inclusive_end=false', 'B'],
  ['endkey="b"&descending=true&inclusive_end=false&endkey_docid=couch011', 'B'],
  ['endkey="b"&descending=true&inclusive_end=false&endkey_docid=couch010', 'b'],
];
for (const [qs, last] of ENDKEY_CASES) {
  test(`F: c/couch?${qs} ends with ${JSON.stringify(last)}`, async () => {
    const k = keysOf(await view('vcoll', 'c/couch', qs));
    eq(k[k.length - 1], last);
  });
}

test('F: mixed-type ranges follow the collation', async () => {
  eq(keysOf(await view('vcoll', 'c/couch', 'startkey="a"&endkey="z"')), ['a', 'A', 'aa', 'b', 'B', 'ba', 'bb']);
  eq(keysOf(await view('vcoll', 'c/couch', 'startkey=["b"]&endkey=["b",{}]')), [['b'], ['b', 'c'], ['b', 'c', 'a'], ['b', 'd'], ['b', 'd', 'e']]);
  eq(keysOf(await view('vcoll', 'c/couch', 'startkey={}')), COLL.slice(20));
  eq(keysOf(await view('vcoll', 'c/couch', 'endkey=false')), [null, false]);
  eq(keysOf(await view('vcoll', 'c/couch', 'startkey=true&endkey=""')), [true, 1, 2, 3, 4]);
});

test('F: "options": {"collation": "raw"} orders as Erlang terms', async () => {
  const a = await view('vcoll', 'c/raw');
  eq(keysOf(a).map(js), RAW.map(js));
  eq(keysOf(await view('vcoll', 'c/raw', 'descending=true')).map(js), RAW.slice().reverse().map(js));
  eq(keysOf(await view('vcoll', 'c/raw', 'startkey="B"&endkey="aa"')), ['B', 'a', 'aa']);
  eq(keysOf(await view('vcoll', 'c/raw', 'startkey=4&endkey=true')), [4, false, null, true]);
  // a range that is empty under ICU ("a" < "B") is fine under raw, and the reverse
  isErr(await q('vcoll', 'c/raw', 'startkey="a"&endkey="B"'), 400, 'query_parse_error', NO_MATCH_ASC);
  isErr(await q('vcoll', 'c/couch', 'startkey="B"&endkey="a"'), 400, 'query_parse_error', NO_MATCH_ASC);
});

// ---- G. errors -----------------------------------------------------------------------

const BOOL = (v) => `Invalid boolean parameter: "${v}"`;
const INT = (v) => `Invalid value for integer: "${v}"`;
const POS = (v) => `Invalid value for positive integer: "${v}"`;
// [view, query, status, error, reason (a function: checks a prefix)]
const ERR_CASES = [
  ['n', 'descending=yes', 400, 'query_parse_error', BOOL('yes')],
  ['n', 'inclusive_end=x', 400, 'query_parse_error', BOOL('x')],
  ['n', 'include_docs=1', 400, 'query_parse_error', BOOL('1')],
  ['n', 'update_seq=nope', 400, 'query_parse_error', BOOL('nope')],
  ['n', 'conflicts=maybe', 400, 'query_parse_error', BOOL('maybe')],
  ['n', 'sorted=x', 400, 'query_parse_error', BOOL('x')],
  ['n', 'attachments=x', 400, 'query_parse_error', BOOL('x')],
  ['n', 'att_encoding_info=x', 400, 'query_parse_error', BOOL('x')],
  ['n_sum', 'reduce=x', 400, 'query_parse_error', BOOL('x')],
  ['n_sum', 'group=x', 400, 'query_parse_error', BOOL('x')],
  ['n', 'limit=abc', 400, 'query_parse_error', INT('abc')],
  ['n', 'limit=1.5', 400, 'query_parse_error', INT('1.5')],
  ['n', 'limit=', 400, 'query_parse_error', INT('')],
  ['n', 'skip=x', 400, 'query_parse_error', INT('x')],
  ['n_sum', 'group_level=x', 400, 'query_parse_error', INT('x')],
  ['n', 'limit=-1', 400, 'query_parse_error', POS('-1')],
  ['n', 'skip=-1', 400, 'query_parse_error', POS('-1')],
  ['n_sum', 'group_level=-1', 400, 'query_parse_error', POS('-1')],
  ['n', 'limit=268435457', 400, 'query_parse_error', 'Limit is too large, must not exceed 268435456'],
  ['n', 'stale=foo', 400, 'query_parse_error', 'Invalid value for `stale`.'],
  ['n', 'stale=OK', 400, 'query_parse_error', 'Invalid value for `stale`.'],
  ['n', 'stable=foo', 400, 'query_parse_error', 'Invalid value for `stable`.'],
  ['n', 'stable=TRUE', 400, 'query_parse_error', 'Invalid value for `stable`.'],
  ['n', 'update=foo', 400, 'query_parse_error', 'Invalid value for `update`.'],
  ['n', 'reduce=true', 400, 'query_parse_error', 'Reduce is invalid for map-only views.'],
  ['n', 'group=true', 400, 'query_parse_error', GROUP_MAP],
  ['n', 'group_level=1', 400, 'query_parse_error', GROUP_MAP],
  ['n_sum', 'reduce=false&group=true', 400, 'query_parse_error', GROUP_MAP],
  ['n_sum', 'reduce=false&group_level=2', 400, 'query_parse_error', GROUP_MAP],
  ['n_sum', 'group=false&group_level=1', 400, 'query_parse_error', "Can't specify group=false and group_level>0 at the same time"],
  ['n_sum', 'group_level=1&group=false', 400, 'query_parse_error', "Can't specify group=false and group_level>0 at the same time"],
  ['n', 'keys="a"', 400, 'query_parse_error', '`keys` must be an array of strings.'],
  ['n', 'keys={"a":1}', 400, 'query_parse_error', '`keys` must be an array of strings.'],
  ['n', 'keys=[1,2]&key=1', 400, 'query_parse_error', INCOMPAT],
  ['n', 'key=1&keys=[1,2]', 400, 'query_parse_error', INCOMPAT],
  ['n', 'keys=[1,2]&startkey=1', 400, 'query_parse_error', INCOMPAT],
  ['n', 'keys=[1,2]&start_key=1', 400, 'query_parse_error', INCOMPAT],
  ['n', 'keys=[1,2]&endkey=1', 400, 'query_parse_error', INCOMPAT],
  ['n', 'keys=[1,2]&end_key=1', 400, 'query_parse_error', INCOMPAT],
  ['n_sum', 'keys=[1,2]', 400, 'query_parse_error', (r) => r.startsWith(MULTIKEY)],
  ['n_sum', 'keys=[]', 400, 'query_parse_error', (r) => r.startsWith(MULTIKEY)],
  ['n_sum', 'keys=[1,2]&group_level=1', 400, 'query_parse_error', (r) => r.startsWith(MULTIKEY)],
  ['n_sum', 'endkey=2&keys=[1,2]', 400, 'query_parse_error', (r) => r.startsWith(MULTIKEY)],  // multi-key is checked first
  ['n_sum', 'endkey=2&keys=[1,2]&group=true', 400, 'query_parse_error', INCOMPAT],
  ['n_sum', 'include_docs=true', 400, 'query_parse_error', '`include_docs` is invalid for reduce'],
  ['n_sum', 'conflicts=true', 400, 'query_parse_error', '`conflicts` is invalid for reduce views.'],
  ['n_sum', 'conflicts=false', 400, 'query_parse_error', '`conflicts` is invalid for reduce views.'],
  ['n', 'startkey=2&endkey=1', 400, 'query_parse_error', NO_MATCH_ASC],
  ['n', 'descending=true&startkey=1&endkey=2', 400, 'query_parse_error', NO_MATCH_DESC],
  ['n', 'descending=true&start_key=1&end_key=2', 400, 'query_parse_error', NO_MATCH_DESC],
  ['dup', 'startkey=1&startkey_docid=d07&endkey=1.0&endkey_docid=d04', 400, 'query_parse_error', NO_MATCH_ASC],
  ['n_sum', 'startkey=2&endkey=1', 400, 'query_parse_error', NO_MATCH_ASC],
  ['n', 'startkey=foo', 400, 'bad_request', undefined],       // not JSON
  ['n', 'endkey=[1,', 400, 'bad_request', undefined],
  ['n', 'key={', 400, 'bad_request', undefined],
  ['n', 'keys=[1,', 400, 'bad_request', undefined],
  ['n', 'start_key=\'a\'', 400, 'bad_request', undefined],
  ['nope', '', 404, 'not_found', 'missing_named_view'],
  ['lib', '', 404, 'not_found', 'missing_named_view'],
];

for (const [v, qs, status, error, reason] of ERR_CASES) {
  test(`G: m/${v}?${qs} → ${status} ${error}`, async () => {
    const r = await q(DB, 'm/' + v, qs);
    if (typeof reason === 'function') {
      isErr(r, status, error);
      ok(reason(r.json.reason), 'reason: ' + r.text);
    } else isErr(r, status, error, reason);
  });
}

// the same checks on POST bodies (decoded JSON values)
const POST_ERR_CASES = [
  ['n', { descending: 'yes' }, 'query_parse_error', BOOL('yes')],
  ['n', { limit: '10' }, 'query_parse_error', 'Invalid value for integer: <<"10">>'],
  ['n', { limit: -1 }, 'query_parse_error', 'Invalid value for positive integer: -1'],
  ['n', { reduce: true }, 'query_parse_error', 'Reduce is invalid for map-only views.'],
  ['n', { keys: [1, 2], startkey: 1 }, 'query_parse_error', INCOMPAT],
  ['n', { startkey: 2, endkey: 1 }, 'query_parse_error', NO_MATCH_ASC],
  ['n', { keys: 1 }, 'bad_request', '`keys` member must be an array.'],
  ['n', { keys: { a: 1 } }, 'bad_request', '`keys` member must be an array.'],
  ['n', { queries: [{}] }, 'bad_request', 'The `queries` parameter is no longer supported at this endpoint'],
  ['n_sum', { keys: [1, 2] }, 'query_parse_error', (r) => r.startsWith(MULTIKEY)],
  ['n', [], 'bad_request', 'Request body must be a JSON object'],
  ['n', '"x"', 'bad_request', 'Request body must be a JSON object'],
  ['n', '[1]', 'bad_request', 'Request body must be a JSON object'],
  ['n', '{"limit":', 'bad_request', undefined],
];
for (const [v, body, error, reason] of POST_ERR_CASES) {
  test(`G: POST m/${v} ${typeof body === 'string' ? body : JSON.stringify(body)} → 400 ${error}`, async () => {
    const r = typeof body === 'string' ? await qpost(DB, 'm/' + v, body, '', { 'Content-Type': 'application/json' }) : await qpost(DB, 'm/' + v, body);
    if (typeof reason === 'function') { isErr(r, 400, error); ok(reason(r.json.reason), r.text); } else isErr(r, 400, error, reason);
  });
}

test('G: POST without Content-Type application/json is 415', async () => {
  const why = 'Content-Type must be application/json';
  isErr(await qpost(DB, 'm/n', '{}', '', { 'Content-Type': 'text/plain' }), 415, 'bad_content_type', why);
  isErr(await qpost(DB, 'm/n', '{}'), 415, 'bad_content_type', why);
  isErr(await qpost(DB, 'm/n', '{}', '', { 'Content-Type': 'application/x-www-form-urlencoded' }), 415, 'bad_content_type', why);
});

test('G: methods other than GET, HEAD and POST are 405', async () => {
  for (const m of ['PUT', 'DELETE']) {
    const r = await req(m, P(DB, vpath('m/n')), m === 'PUT' ? {} : undefined);
    isErr(r, 405, 'method_not_allowed');
  }
});

test('G: missing design document, deleted design document, missing view, missing database; _temp_view', async () => {
  isErr(await q(DB, 'nosuch/n'), 404, 'not_found', 'missing');
  await ddoc(DB, 'gone', { v: { map: NUM } });
  await del(DB, '_design/gone');
  isErr(await q(DB, 'gone/v'), 404, 'not_found', 'deleted');
  isErr(await qpost(DB, 'gone/v', {}), 404, 'not_found', 'deleted');
  isErr(await q(DB, 'noviews/v'), 404, 'not_found', 'missing_named_view');
  isErr(await q(DB, 'm/nope', 'limit=abc'), 404, 'not_found', 'missing_named_view'); // the view before its parameters
  isErr(await q(DB, 'nosuch/n', 'limit=abc'), 404, 'not_found', 'missing');
  isErr(await q('no_such_db', 'm/n'), 404, 'not_found', 'Database does not exist.');
});

test('G: POST _temp_view is 410 gone', async () => {
  isErr(await req('POST', P(DB, '/_temp_view'), { map: NUM }), 410, 'gone', 'Temporary views are not supported in CouchDB');
});

test('G: a design document whose map does not compile is refused on save (400 compilation_error)', async () => {
  const cases = [
    [{ bad: { map: 'function (doc) { emit(' } }, "Compilation of the map function in the 'bad' view failed: "],
    [{ bad: { map: 'function (doc) { emit(doc._id, 1); }', reduce: 'function (k, v) { return ( }' } }, "Compilation of the reduce function in the 'bad' view failed: "],
    [{ bad: { map: '42' } }, "Compilation of the map function in the 'bad' view failed: "],
  ];
  const wrong = [];
  for (const [views, prefix] of cases) {
    const r = await req('PUT', P(DB, '/_design/broken'), { views });
    if (r.status === 201) await del(DB, '_design/broken');
    if (r.status !== 400 || !r.json || r.json.error !== 'compilation_error' || !r.json.reason.startsWith(prefix)) wrong.push(`${JSON.stringify(views)}: ${r.status} ${r.text}`);
  }
  eq(wrong, []);
});

test('G: a design document with a view that has no map, or a map that is not a string, is refused (400 invalid_design_doc)', async () => {
  isErr(await req('PUT', P(DB, '/_design/broken'), { views: { v: { reduce: '_sum' } } }), 400, 'invalid_design_doc', 'View `v` must contain map function');
  isErr(await req('PUT', P(DB, '/_design/broken'), { views: { v: { map: 1 } } }), 400, 'invalid_design_doc', '`views.v.map` field must have string type');
});

// ---- H. index life -------------------------------------------------------------------

const LIFE_MAP = mapOf("doc.type === 'x'", 'doc.n, null');
const lifeIds = async (qs) => idsOf(await view('vlife', 'l/v', qs));

test('H: a view sees documents written after its first query (update=true is the default)', async () => {
  await mkdb('vlife');
  await ddoc('vlife', 'l', { v: { map: LIFE_MAP }, c: { map: LIFE_MAP, reduce: '_count' } });
  await put('vlife', 'x1', { type: 'x', n: 1 });
  await put('vlife', 'x2', { type: 'x', n: 2 });
  eq(await lifeIds(''), 'x1 x2');
  await put('vlife', 'x3', { type: 'x', n: 3 });
  eq(await lifeIds(''), 'x1 x2 x3');
  eq(await lifeIds('update=true'), 'x1 x2 x3');
  eq(kvOf(await view('vlife', 'l/c')), [[null, 3]]);
});

test('H: update=false, stale=ok answer from the index as it is; update=lazy and stale=update_after bring it up later', async () => {
  await idle('vlife', 'l');
  await put('vlife', 'x4', { type: 'x', n: 4 });
  eq(await lifeIds('update=false'), 'x1 x2 x3');
  eq(await lifeIds('stale=ok'), 'x1 x2 x3');
  eq(await lifeIds('stable=true&update=false'), 'x1 x2 x3');
  eq(kvOf(await view('vlife', 'l/c', 'update=false')), [[null, 3]]);
  const lazy = await lifeIds('update=lazy');
  ok(lazy === 'x1 x2 x3' || lazy === 'x1 x2 x3 x4', lazy);
  await until('update=lazy to index x4', async () => (await lifeIds('update=false')) === 'x1 x2 x3 x4');
  await idle('vlife', 'l');
  await put('vlife', 'x5', { type: 'x', n: 5 });
  const after = await lifeIds('stale=update_after');
  ok(after === 'x1 x2 x3 x4' || after === 'x1 x2 x3 x4 x5', after);
  await until('stale=update_after to index x5', async () => (await lifeIds('stale=ok')) === 'x1 x2 x3 x4 x5');
});

test('H: a never-built index with update=false answers no rows', async () => {
  await mkdb('vfresh');
  await bulk('vfresh', [{ _id: 'a' }, { _id: 'b' }]);
  // one request writes the design document and nothing queries it before
  const r = await req('PUT', P('vfresh', '/_design/f'), { views: { v: { map: 'function (doc) { emit(doc._id, null); }' } } });
  eq(r.status, 201);
  const j = await view('vfresh', 'f/v', 'update=false');
  // a builder that starts on the design document's write may have got there first
  ok((j.total_rows === 0 && j.rows.length === 0) || (j.total_rows === 2 && j.rows.length === 2), JSON.stringify(j));
  eq(idsOf(await view('vfresh', 'f/v')), 'a b');
});

test('H: deleted documents and documents that stop emitting drop their rows; changed ones move', async () => {
  await del('vlife', 'x1');
  eq(await lifeIds(''), 'x2 x3 x4 x5');
  await update('vlife', 'x2', { type: 'y' });
  eq(await lifeIds(''), 'x3 x4 x5');
  await update('vlife', 'x3', { n: 10 });
  const j = await view('vlife', 'l/v');
  eq(idsOf(j), 'x4 x5 x3');
  eq(j.total_rows, 3);
  eq(kvOf(await view('vlife', 'l/c')), [[null, 3]]);
  // back again
  await update('vlife', 'x2', { type: 'x' });
  eq(await lifeIds(''), 'x2 x4 x5 x3');
});

test('H: GET _info: name and view_index with CouchDB\'s fields and types', async () => {
  const r = await req('GET', P('vlife', '/_design/l/_info'));
  eq(r.status, 200, r.text);
  eq(r.json.name, 'l');
  const v = r.json.view_index;
  ok(/^[0-9a-f]{32}$/.test(v.signature), v.signature);
  eq(v.language, 'javascript');
  for (const k of ['file', 'active', 'external']) ok(Number.isInteger(v.sizes[k]) && v.sizes[k] >= 0, `sizes.${k}: ${r.text}`);
  ok(typeof v.update_seq === 'number' || typeof v.update_seq === 'string', r.text);
  ok(Number.isInteger(v.purge_seq), r.text);
  for (const k of ['updater_running', 'compact_running', 'waiting_commit']) eq(typeof v[k], 'boolean', k);
  ok(Number.isInteger(v.waiting_clients), r.text);
  // a design document without views has info too; a missing one is 404; only GET
  eq((await req('GET', P(DB, '/_design/noviews/_info'))).status, 200);
  isErr(await req('GET', P('vlife', '/_design/nosuch/_info')), 404, 'not_found', 'missing');
  isErr(await req('POST', P('vlife', '/_design/l/_info'), {}), 405, 'method_not_allowed');
});

test('H: the signature stays when the views stay, changes with a map, and is shared by identical design documents', async () => {
  const s1 = await sigOf('vlife', 'l');
  const views = (await req('GET', P('vlife', '/_design/l'))).json.views;
  await ddoc('vlife', 'l', views, { shows: { s: 'function (doc, req) { return "s"; }' } });
  eq(await sigOf('vlife', 'l'), s1, 'a show added');
  // the index was kept: it answers at once, built
  eq(await lifeIds('update=false'), 'x2 x4 x5 x3');
  // a second design document with the same views shares the index
  await ddoc('vlife', 'l2', views);
  eq(await sigOf('vlife', 'l2'), s1, 'same views, other design document');
  eq(idsOf(await view('vlife', 'l2/v', 'update=false')), 'x2 x4 x5 x3');
  // a changed map is a new index
  await ddoc('vlife', 'l', { v: { map: mapOf("doc.type === 'x'", '-doc.n, null') }, c: views.c });
  const s2 = await sigOf('vlife', 'l');
  ok(s2 !== s1, 'the map changed');
  eq(await lifeIds(''), 'x3 x5 x4 x2');
  // options are part of it
  await ddoc('vlife', 'l3', views, { options: { include_design: true } });
  ok((await sigOf('vlife', 'l3')) !== s1, 'options changed');
});

test('H: POST _compact/{ddoc} is 202 {"ok":true}; its errors', async () => {
  const C = P('vlife', '/_compact/l');
  const r = await req('POST', C, undefined, { 'Content-Type': 'application/json' });
  eq([r.status, r.json], [202, { ok: true }], r.text);
  isErr(await req('POST', P('vlife', '/_compact/nosuch'), undefined, { 'Content-Type': 'application/json' }), 404, 'not_found');
  isErr(await req('POST', C), 415, 'bad_content_type', 'Content-Type must be application/json');
  isErr(await req('GET', C), 405, 'method_not_allowed');
  const anon = await req('POST', `${ANON}/vlife/_compact/l`, undefined, { 'Content-Type': 'application/json' });
  ok(anon.status === 401 || anon.status === 403, anon.text);
  eq(await lifeIds(''), 'x3 x5 x4 x2');
});

test('H: POST _view_cleanup is 202 {"ok":true} (as PouchDB sends it, or without a body); indexes in use stay', async () => {
  const C = P('vlife', '/_view_cleanup');
  let r = await req('POST', C, undefined, { 'Content-Type': 'application/json' });
  eq([r.status, r.json], [202, { ok: true }], r.text);
  r = await req('POST', C, '{}', { 'Content-Type': 'application/json' });
  eq([r.status, r.json], [202, { ok: true }], r.text);
  // l2 still uses the first signature: its rows are there without a build
  eq(idsOf(await view('vlife', 'l2/v', 'update=false')), 'x2 x4 x5 x3');
  eq(idsOf(await view('vlife', 'l/v', 'update=false')), 'x3 x5 x4 x2');
  isErr(await req('POST', P('no_such_db', '/_view_cleanup'), undefined, { 'Content-Type': 'application/json' }), 404, 'not_found');
  const anon = await req('POST', `${ANON}/vlife/_view_cleanup`, undefined, { 'Content-Type': 'application/json' });
  ok(anon.status === 401 || anon.status === 403, anon.text);
});

test('H: POST _view_cleanup needs no Content-Type (CouchDB does not check it)', async () => {
  const r = await req('POST', P('vlife', '/_view_cleanup'));
  eq([r.status, r.json], [202, { ok: true }], r.text);
});

test('H: a design document deleted and written again answers with its views', async () => {
  await del('vlife', '_design/l2');
  isErr(await q('vlife', 'l2/v'), 404, 'not_found', 'deleted');
  await req('POST', P('vlife', '/_view_cleanup'), undefined, { 'Content-Type': 'application/json' });
  const views = (await req('GET', P('vlife', '/_design/l3'))).json.views;
  await ddoc('vlife', 'l2', views);
  eq(idsOf(await view('vlife', 'l2/v')), 'x2 x4 x5 x3');
});

// ---- I. _changes?filter=_view --------------------------------------------------------

test('I: _changes?filter=_view passes the changes whose document the map emits for', async () => {
  await mkdb('vchg');
  await bulk('vchg', [{ _id: 'a1', type: 'x' }, { _id: 'b1', type: 'y' }, { _id: 'a2', type: 'x' }, { _id: 'a3', type: 'x' }]);
  await ddoc('vchg', 'c', { v: { map: mapOf("doc.type === 'x'", 'doc._id, null') } });
  await ddoc('vchg', 'nv', undefined, { shows: { s: 'function () { return "s"; }' } });
  await del('vchg', 'a3');
  const all = await req('GET', P('vchg', '/_changes'));
  const r = await req('GET', P('vchg', '/_changes' + enc('filter=_view&view=c/v')));
  eq(r.status, 200, r.text);
  eq(r.json.results.map((x) => x.id), ['a1', 'a2']);
  eq(r.json.last_seq, all.json.last_seq);
  for (const x of r.json.results) ok(Array.isArray(x.changes) && x.changes[0].rev, JSON.stringify(x));
  // POST _changes reads view from the query string too
  const p = await req('POST', P('vchg', '/_changes' + enc('filter=_view&view=c/v')), {});
  eq(p.json.results.map((x) => x.id), ['a1', 'a2']);
});

test('I: filter=_view errors', async () => {
  const ch = (qs) => req('GET', P('vchg', '/_changes' + enc(qs)));
  isErr(await ch('filter=_view'), 400, 'bad_request', '`view` filter parameter is not provided.');
  isErr(await ch('filter=_view&view='), 400, 'bad_request', '`view` filter parameter is not provided.');
  isErr(await ch('filter=_view&view=/'), 400, 'bad_request', '`view` must be of the form `designname/viewname`');
  isErr(await ch('filter=_view&view=nosuch/v'), 404, 'not_found', 'missing');
  isErr(await ch('filter=_view&view=c/nope'), 404, 'not_found', 'missing json key: nope');
  isErr(await ch('filter=_view&view=nv/v'), 404, 'not_found', 'missing json key: views');
});

// ---- J. _list over a view ------------------------------------------------------------

test('J: a list function over a map view gets head {total_rows, offset} and the rows of the query', async () => {
  const r = await req('GET', P(DB, '/_design/m/_list/rows/n' + enc('limit=3&skip=1')));
  eq(r.status, 200, r.text);
  eq(r.headers['content-type'], 'application/json');
  eq(r.json.head, { total_rows: 10, offset: 1 });
  eq(r.json.rows, [{ id: 'd02', key: 2, value: 2 }, { id: 'd03', key: 3, value: 3 }, { id: 'd04', key: 4, value: 4 }]);
  eq(r.json.query, { limit: '3', skip: '1' });
  const d = await req('GET', P(DB, '/_design/m/_list/rows/n' + enc('descending=true&limit=2')));
  eq(d.json.rows.map((x) => x.id), ['d10', 'd09']);
});

test('J: a list over a reduce view, over another design document\'s view, one that stops early; view errors apply', async () => {
  const r = await req('GET', P(DB, '/_design/m/_list/rows/n_sum' + enc('group=true&limit=2')));
  eq(r.status, 200, r.text);
  eq(r.json.rows, [{ key: 1, value: 1 }, { key: 2, value: 2 }]);
  ok(r.json.head.total_rows === undefined, JSON.stringify(r.json.head));
  const o = await req('GET', P(DB, '/_design/lst/_list/rows/m/n' + enc('key=3')));
  eq(o.status, 200, o.text);
  eq(o.json.rows, [{ id: 'd03', key: 3, value: 3 }]);
  const s = await req('GET', P(DB, '/_design/m/_list/firsttwo/n'));
  eq([s.status, s.text], [200, '1;2;stop']);
  const p = await req('POST', P(DB, '/_design/m/_list/rows/n'), { keys: [7, 5] });
  eq(p.json.rows.map((x) => x.id), ['d07', 'd05']);
  isErr(await req('GET', P(DB, '/_design/m/_list/rows/n' + enc('limit=abc'))), 400, 'query_parse_error', INT('abc'));
  isErr(await req('GET', P(DB, '/_design/m/_list/rows/nope')), 404, 'not_found', 'missing_named_view');
});

test('divan is healthy', async () => {
  const r = await req('GET', U + '/');
  eq(r.status, 200, r.text);
});

runFile(__filename, {
  seconds: 170,
  started: ({ base }) => {
    U = base;
    const u = new URL(base);
    u.username = '';
    u.password = '';
    ANON = u.toString().replace(/\/$/, '');
  },
});
