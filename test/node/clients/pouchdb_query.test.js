// pouchdb_query.test.js — PouchDB 9's map/reduce client (the real npm
// client, http adapter) queries views on a real `divan serve`: db.query()
// with persisted design documents, map and reduce views (_count, _sum,
// _stats, JavaScript), key ranges, keys (short lists go in the query
// string, long ones in a POST body), descending, limit/skip, group and
// group_level, include_docs, stale 'ok' and 'update_after', a design
// document that changes, the errors PouchDB turns into rejections, temporary
// views (410 from CouchDB 3), and db.viewCleanup().
//
// The documents and the design document are written to a local PouchDB
// (memory adapter) and replicated to divan, so both sides hold the same
// revisions; every answer of divan is compared with PouchDB's own map/reduce
// over the local copy (its collation agrees with CouchDB's for the
// lowercase-ASCII strings, numbers and arrays used here).
//
//   DIVAN_BIN=build/cc/divan node test/node/clients/pouchdb_query.test.js
//   DIVAN_URL=http://admin:testpass@127.0.0.1:5984 node ...   (a running server)
'use strict';
const PouchDB = require('pouchdb').plugin(require('pouchdb-adapter-memory'));
const { test, req, eq, ok, assert } = require('../lib/t');
const { runFile } = require('../lib/divan');

const N = 60;
let base = '';
let local = null;  // PouchDB, memory adapter: the model
let remote = null; // PouchDB, http adapter: the divan database
const fn = (f) => f.toString();
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

const NAMES = ['ann', 'bob', 'cy', 'dee', 'eve', 'fay'];
const CITIES = ['oslo', 'rome', 'lima'];
function person(i) {
  return {
    _id: 'p' + String(i).padStart(3, '0'),
    type: 'person',
    name: NAMES[i % NAMES.length] + i,
    age: 18 + ((i * 7) % 40),
    city: CITIES[i % 3],
    friend: 'p' + String((i + 1) % N).padStart(3, '0'),
  };
}
const DDOC = {
  _id: '_design/q',
  views: {
    by_age: { map: fn(function (doc) { if (doc.type === 'person') emit(doc.age, doc.name); }) },
    by_name: { map: fn(function (doc) { if (doc.type === 'person') emit(doc.name, null); }) },
    friend: { map: fn(function (doc) { if (doc.type === 'person') emit(doc._id, { _id: doc.friend }); }) },
    city_age: { map: fn(function (doc) { if (doc.type === 'person') emit([doc.city, doc.age], 1); }), reduce: '_count' },
    age_sum: { map: fn(function (doc) { if (doc.type === 'person') emit(doc.city, doc.age); }), reduce: '_sum' },
    age_stats: { map: fn(function (doc) { if (doc.type === 'person') emit(doc.city, doc.age); }), reduce: '_stats' },
    js_max: {
      map: fn(function (doc) { if (doc.type === 'person') emit(doc.city, doc.age); }),
      reduce: fn(function (keys, values, rereduce) { return Math.max.apply(null, values); }),
    },
  },
};

// The rejection of a promise (fails if it resolves).
async function rejection(p) {
  try { await p; } catch (e) { return e; }
  throw new Error('expected a rejection');
}
// Poll until fn() is truthy.
async function until(what, f, ms = 20000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try { last = await f(); if (last) return last; } catch (e) { last = e; }
    await sleep(50);
  }
  throw new Error('timed out waiting for ' + what + ' (last: ' + (last && last.stack || JSON.stringify(last)) + ')');
}

test('setup: a local PouchDB with ' + N + ' people and _design/q replicates to divan', async () => {
  local = new PouchDB('pq-local', { adapter: 'memory' });
  const docs = [];
  for (let i = 0; i < N; i++) docs.push(person(i));
  docs.push(DDOC);
  await local.bulkDocs(docs);
  remote = new PouchDB(base + '/pq');
  // a rejection that says what the server answered
  const q = remote.query.bind(remote);
  remote.query = (...args) => q(...args).catch((e) => {
    throw Object.assign(new Error(`query: ${e.status} ${e.error}: ${e.reason || e.message}`), { status: e.status, error: e.error, reason: e.reason });
  });
  const r = await local.replicate.to(remote);
  eq(r.docs_written, N + 1);
  eq((await remote.get('_design/q')).views.by_age.map, DDOC.views.by_age.map);
});

// [view, options]: divan's answer must equal PouchDB's local map/reduce
const CASES = [
  ['by_age', {}],
  ['by_age', { startkey: 30, endkey: 40 }],
  ['by_age', { start_key: 30, end_key: 40 }],
  ['by_age', { startkey: 30, endkey: 40, inclusive_end: false }],
  ['by_age', { descending: true, startkey: 40, endkey: 30 }],
  ['by_age', { descending: true, startkey: 40, endkey: 30, inclusive_end: false }],
  ['by_age', { limit: 5, skip: 3 }],
  ['by_age', { descending: true, limit: 4, skip: 1 }],
  ['by_age', { key: 32 }],
  ['by_age', { keys: [32, 20, 99, 57] }],
  ['by_age', { keys: [] }],
  ['by_age', { include_docs: true, limit: 3 }],
  ['by_age', { skip: 100 }],
  ['by_name', { startkey: 'b', endkey: 'd' }],
  ['by_name', { startkey: 'eve', endkey: 'eve\ufff0' }],
  ['friend', { include_docs: true, limit: 3 }],
  ['friend', { include_docs: true, keys: ['p059', 'p010'] }],
  ['city_age', {}],
  ['city_age', { group: true }],
  ['city_age', { group_level: 1 }],
  ['city_age', { group_level: 2, limit: 3, skip: 2 }],
  ['city_age', { group_level: 1, descending: true }],
  ['city_age', { startkey: ['lima'], endkey: ['lima', {}], group_level: 1 }],
  ['city_age', { startkey: ['oslo', 30], endkey: ['oslo', 50] }],
  ['city_age', { reduce: false, limit: 5 }],
  ['city_age', { reduce: false, include_docs: true, startkey: ['rome'], limit: 2 }],
  ['city_age', { keys: [['oslo', 39], ['rome', 99], ['lima', 32]], group: true }],
  ['age_sum', {}],
  ['age_sum', { group: true }],
  ['age_sum', { key: 'rome' }],
  ['age_stats', { group: true }],
  ['js_max', { group: true }],
];

for (const [v, opts] of CASES) {
  test(`query q/${v} ${JSON.stringify(opts)} answers as PouchDB's own map/reduce`, async () => {
    // each its own copy: PouchDB may rewrite the options it is given
    const got = await remote.query('q/' + v, JSON.parse(JSON.stringify(opts)));
    const want = await local.query('q/' + v, JSON.parse(JSON.stringify(opts)));
    if (!(opts.keys && !opts.keys.length) && opts.skip !== 100) ok(want.rows.length > 0, 'the model answers rows');
    eq(got.rows, want.rows);
    if (want.total_rows !== undefined) eq(got.total_rows, want.total_rows);
    if (v === 'by_age' && !opts.keys && opts.skip !== undefined && !opts.descending) eq(got.offset, Math.min(opts.skip, N));
  });
}

test('keys longer than a URL (POST {"keys": …}) answer in the order given', async () => {
  const keys = [];
  for (let i = 0; i < 150; i++) keys.push('nobody' + String(i).padStart(12, '0'));
  keys.splice(40, 0, 'eve4', 'ann0', 'fay59');
  ok(encodeURIComponent(JSON.stringify(keys)).length > 2000);
  const got = await remote.query('q/by_name', { keys });
  eq(got.rows.map((r) => r.id), ['p004', 'p000', 'p059']);
  eq(got.rows, (await local.query('q/by_name', { keys })).rows);
  const red = await remote.query('q/age_sum', { keys: keys.concat(['oslo', 'lima']), group: true });
  eq(red.rows.map((r) => r.key), ['oslo', 'lima']);
});

test('stale: "ok" answers from the index as it is; "update_after" brings it up after', async () => {
  await remote.query('q/by_age', { limit: 1 });
  await until('the index idle', async () => (await req('GET', base + '/pq/_design/q/_info')).json.view_index.updater_running === false);
  await remote.put({ _id: 'late1', type: 'person', name: 'zed1', age: 99, city: 'oslo' });
  const stale = await remote.query('q/by_age', { stale: 'ok' });
  eq(stale.total_rows, N);
  eq(stale.rows.some((r) => r.id === 'late1'), false);
  const after = await remote.query('q/by_age', { stale: 'update_after' });
  ok(after.total_rows === N || after.total_rows === N + 1, String(after.total_rows));
  await until('update_after to index late1', async () => (await remote.query('q/by_age', { stale: 'ok', key: 99 })).rows.length === 1);
  const fresh = await remote.query('q/by_age', { key: 99 });
  eq(fresh.rows, [{ id: 'late1', key: 99, value: 'zed1' }]);
  // the default brings the index up to date
  await remote.put({ _id: 'late2', type: 'person', name: 'zed2', age: 98, city: 'rome' });
  eq((await remote.query('q/by_age', { key: 98 })).rows.map((r) => r.id), ['late2']);
  // a deleted document leaves the view
  await remote.remove(await remote.get('late2'));
  eq((await remote.query('q/by_age', { key: 98 })).rows, []);
  eq((await remote.query('q/city_age', { reduce: true })).rows[0].value, N + 1);
});

test('a persisted design document changed through PouchDB answers with its new map', async () => {
  const d = await remote.get('_design/q');
  d.views.by_age = { map: fn(function (doc) { if (doc.type === 'person') emit(-doc.age, doc.name); }) };
  await remote.put(d);
  const r = await remote.query('q/by_age', { limit: 1 });
  eq(r.rows[0], { id: 'late1', key: -99, value: 'zed1' });
  // and a second design document, written through PouchDB, queried by its short name
  await remote.put({ _id: '_design/solo', views: { solo: { map: 'function (doc) { if (doc.city === "lima") emit(doc._id); }' } } });
  const s = await remote.query('solo', { limit: 2 });
  eq(s.rows, [{ id: 'p002', key: 'p002', value: null }, { id: 'p005', key: 'p005', value: null }]);
  eq(s.total_rows, N / 3);
});

test('errors become rejections with CouchDB\'s status, error and reason', async () => {
  let e = await rejection(remote.query('q/nope'));
  eq([e.status, e.error, e.reason], [404, 'not_found', 'missing_named_view']);
  e = await rejection(remote.query('nope/x'));
  eq([e.status, e.error, e.reason], [404, 'not_found', 'missing']);
  e = await rejection(remote.query('q/by_name', { reduce: true }));
  eq([e.status, e.error, e.reason], [400, 'query_parse_error', 'Reduce is invalid for map-only views.']);
  e = await rejection(remote.query('q/by_name', { group: true }));
  eq([e.status, e.reason], [400, 'Invalid use of grouping on a map view.']);
  e = await rejection(remote.query('q/by_name', { startkey: 'z', endkey: 'a' }));
  eq([e.status, e.reason], [400, 'No rows can match your key range, reverse your start_key and end_key or set descending=true']);
  e = await rejection(remote.query('q/age_sum', { include_docs: true }));
  eq([e.status, e.reason], [400, '`include_docs` is invalid for reduce']);
  e = await rejection(remote.query('q/age_sum', { keys: ['oslo', 'rome'] }));
  eq(e.status, 400);
  ok(/^Multi-key fetch/.test(e.reason), e.reason);
  e = await rejection(remote.query('q/by_name', { limit: -1 }));
  eq([e.status, e.reason], [400, 'Invalid value for positive integer: "-1"']);
  e = await rejection(remote.query('q/by_name', { stale: 'never' }));
  eq([e.status, e.reason], [400, 'Invalid value for `stale`.']);
});

test('a _sum over strings is a builtin_reduce_error row, which PouchDB rejects', async () => {
  await remote.put({ _id: '_design/bad', views: { names: { map: 'function (doc) { if (doc.type === "person") emit(null, doc.name); }', reduce: '_sum' } } });
  const raw = await req('GET', base + '/pq/_design/bad/_view/names');
  eq(raw.status, 200, raw.text);
  eq(raw.json.rows[0].value.error, 'builtin_reduce_error');
  await rejection(remote.query('bad/names'));
  eq((await remote.query('bad/names', { reduce: false, limit: 1 })).rows.length, 1);
});

test('a temporary view (a function) is 410 gone from a CouchDB 3 server', async () => {
  const e = await rejection(remote.query(function (doc) { emit(doc._id); }));
  eq([e.status, e.error], [410, 'gone']);
});

test('viewCleanup() answers {ok: true}; the views in use still answer without a build', async () => {
  eq(await remote.viewCleanup(), { ok: true });
  const r = await remote.query('q/city_age', { stale: 'ok' });
  eq(r.rows[0].value, N + 1);
});

test('divan is healthy', async () => {
  const r = await req('GET', base + '/');
  eq(r.status, 200, r.text);
});

runFile(__filename, {
  seconds: 100,
  started: (s) => { base = s.base; },
  finished: async () => { if (local) await local.destroy().catch(() => {}); },
});

void assert;
