// pouchdb_find.test.js — PouchDB 9 with the pouchdb-find plugin (the real
// npm client, http adapter) runs Mango against a real `divan serve`:
// createIndex, getIndexes, find with selectors, sort, limit, skip, fields,
// use_index, paging with bookmarks, explain, deleteIndex, and the errors
// PouchDB turns into rejections. The documents are written by replicating
// a local PouchDB (memory adapter), so both sides hold the same revisions;
// every answer is compared with a brute-force filter over those documents.
// (pouchdb-find rejects with the server's body copied onto the error:
// e.status, e.error, e.reason.)
//
//   DIVAN_BIN=build/cc/divan node test/node/clients/pouchdb_find.test.js
//   DIVAN_URL=http://admin:testpass@127.0.0.1:5984 node ...   (a running server)
'use strict';
const PouchDB = require('pouchdb').plugin(require('pouchdb-adapter-memory')).plugin(require('pouchdb-find'));
const { test, req, eq, ok, assert } = require('../lib/t');
const { runFile } = require('../lib/divan');

const N = 60;
const NO_INDEX = 'No matching index found, create an index to optimize query time.';
let base = '';
let local = null;  // PouchDB, memory adapter: the source of the documents
let remote = null; // PouchDB, http adapter: the divan database
const docs = [];   // what was written, with the revisions from the replication

const NAMES = ['ann', 'bob', 'cy', 'dee', 'eve', 'fay'];
function person(i) {
  return {
    _id: 'p' + String(i).padStart(3, '0'),
    name: NAMES[i % NAMES.length] + i,
    age: 18 + ((i * 7) % 40),
    city: ['oslo', 'rome', 'lima'][i % 3],
    tags: i % 2 ? ['a', 'b'] : ['c'],
    address: { zip: 1000 + (i % 9) },
  };
}
const byKey = (...fields) => (a, b) => {
  for (const f of fields) {
    const x = f.split('.').reduce((o, k) => o[k], a), y = f.split('.').reduce((o, k) => o[k], b);
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return a._id < b._id ? -1 : a._id > b._id ? 1 : 0;
};
const want = (pred, ...sortFields) => docs.filter(pred).sort(byKey(...sortFields));

// The rejection of a promise (fails if it resolves).
async function rejection(p) {
  try { await p; } catch (e) { return e; }
  throw new Error('expected a rejection');
}

test('setup: a local PouchDB replicates ' + N + ' documents to divan', async () => {
  local = new PouchDB('pf-local', { adapter: 'memory' });
  const batch = [];
  for (let i = 0; i < N; i++) batch.push(person(i));
  await local.bulkDocs(batch);
  remote = new PouchDB(base + '/people');
  // a rejection that says what the server answered (a PouchError's stack does not)
  for (const m of ['createIndex', 'getIndexes', 'find', 'explain', 'deleteIndex']) {
    const f = remote[m].bind(remote);
    remote[m] = (...args) => f(...args).catch((e) => {
      throw Object.assign(new Error(`${m}: ${e.status} ${e.error}: ${e.reason}`), { status: e.status, error: e.error, reason: e.reason });
    });
  }
  const r = await local.replicate.to(remote);
  eq(r.docs_written, N);
  const all = await local.allDocs({ include_docs: true });
  for (const row of all.rows) docs.push(row.doc);
  eq((await remote.info()).doc_count, N);
});

test('createIndex: created, then exists; a named index in a named ddoc', async () => {
  const r1 = await remote.createIndex({ index: { fields: ['age'] } });
  eq(r1.result, 'created', JSON.stringify(r1));
  ok(/^_design\/[0-9a-f]{40}$/.test(r1.id), JSON.stringify(r1));
  eq(r1.id, '_design/' + r1.name);
  const r2 = await remote.createIndex({ index: { fields: ['age'] } });
  eq(r2, { result: 'exists', id: r1.id, name: r1.name });
  const r3 = await remote.createIndex({ index: { fields: ['city', 'age'] }, ddoc: 'people', name: 'city-age' });
  eq(r3, { result: 'created', id: '_design/people', name: 'city-age' });
  const r4 = await remote.createIndex({ index: { fields: ['name'] }, ddoc: 'people', name: 'name' });
  eq(r4, { result: 'created', id: '_design/people', name: 'name' });
  const r5 = await remote.createIndex({ index: { fields: ['address.zip'] }, ddoc: 'zip', name: 'zip' });
  eq(r5.result, 'created');
});

test('getIndexes: _all_docs first, then the json indexes', async () => {
  const r = await remote.getIndexes();
  eq(r.total_rows, 5, JSON.stringify(r));
  eq(r.indexes[0], { ddoc: null, name: '_all_docs', type: 'special', def: { fields: [{ _id: 'asc' }] } });
  const people = r.indexes.filter((x) => x.ddoc === '_design/people');
  eq(people.map((x) => x.name), ['city-age', 'name']);
  eq(people[0], { ddoc: '_design/people', name: 'city-age', type: 'json', partitioned: false, def: { fields: [{ city: 'asc' }, { age: 'asc' }] } });
});

test('find: selectors, sort, limit, skip', async () => {
  let r = await remote.find({ selector: { age: { $gt: 40 } }, sort: ['age'], limit: 1000 });
  eq(r.docs, want((d) => d.age > 40, 'age'));
  eq(r.warning, undefined);
  r = await remote.find({ selector: { age: { $gte: 20, $lt: 30 } }, sort: [{ age: 'desc' }], limit: 1000 });
  eq(r.docs, want((d) => d.age >= 20 && d.age < 30, 'age').reverse());
  r = await remote.find({ selector: { age: { $gt: 0 } }, sort: ['age'], skip: 5, limit: 10 });
  eq(r.docs, want((d) => d.age > 0, 'age').slice(5, 15));
  r = await remote.find({ selector: { city: 'rome', age: { $gt: 30 } }, sort: ['city', 'age'], limit: 1000 });
  eq(r.docs, want((d) => d.city === 'rome' && d.age > 30, 'age'));
  r = await remote.find({ selector: { city: 'lima' }, sort: ['age'], limit: 1000 });
  eq(r.docs, want((d) => d.city === 'lima', 'age'), 'a constant leading column is skipped for the sort');
  r = await remote.find({ selector: { $or: [{ age: 18 }, { age: 25 }, { age: 57 }] }, sort: ['age'], limit: 1000 });
  eq(r.docs, want((d) => [18, 25, 57].includes(d.age), 'age'));
  r = await remote.find({ selector: { age: { $in: [19, 33] }, tags: { $elemMatch: { $eq: 'b' } } }, sort: ['age'], limit: 1000 });
  eq(r.docs, want((d) => [19, 33].includes(d.age) && d.tags.includes('b'), 'age'));
  r = await remote.find({ selector: { name: { $regex: '^eve' } }, sort: ['name'], limit: 1000 });
  eq(r.docs, want((d) => d.name.startsWith('eve'), 'name'));
  r = await remote.find({ selector: { 'address.zip': 1003 }, limit: 1000 });
  eq(r.docs, want((d) => d.address.zip === 1003));
  // default limit 25
  r = await remote.find({ selector: { age: { $gt: 0 } } });
  eq(r.docs.length, 25);
});

test('find: fields, use_index, the no-index warning', async () => {
  let r = await remote.find({ selector: { age: { $gt: 50 } }, fields: ['_id', 'age', 'address.zip'], sort: ['age'], limit: 1000 });
  eq(r.docs, want((d) => d.age > 50, 'age').map((d) => ({ _id: d._id, age: d.age, address: { zip: d.address.zip } })));
  r = await remote.find({ selector: { city: 'oslo', age: { $gt: 0 } }, use_index: ['people', 'city-age'], limit: 1000 });
  eq(r.docs, want((d) => d.city === 'oslo', 'age'));
  eq(r.warning, undefined);
  r = await remote.find({ selector: { city: 'oslo' }, limit: 1000 });
  eq(r.docs.map((d) => d._id).sort(), want((d) => d.city === 'oslo').map((d) => d._id));
  r = await remote.find({ selector: { tags: { $size: 1 } }, limit: 1000 });
  eq(r.docs, want((d) => d.tags.length === 1));
  eq(r.warning, NO_INDEX);
});

test('find: bookmarks page through everything, as one big query', async () => {
  for (const [q, size] of [
    [{ selector: { age: { $gt: 0 } }, sort: ['age'] }, 7],
    [{ selector: { age: { $gt: 0 } }, sort: [{ age: 'desc' }] }, 11],
    [{ selector: { tags: { $size: 2 } } }, 4],
  ]) {
    const big = (await remote.find(Object.assign({}, q, { limit: 1000 }))).docs;
    const got = [];
    let bookmark;
    for (let i = 0; i < 100; i++) {
      const page = await remote.find(Object.assign({}, q, { limit: size }, bookmark ? { bookmark } : {}));
      ok(typeof page.bookmark === 'string', 'a bookmark: ' + JSON.stringify(page));
      if (!page.docs.length) break;
      got.push(...page.docs);
      bookmark = page.bookmark;
    }
    eq(got, big, JSON.stringify(q));
    ok(big.length > size, 'more than one page');
  }
});

test('explain: the chosen index and the plan', async () => {
  const x = await remote.explain({ selector: { city: 'rome', age: { $gt: 30 } }, fields: ['_id', 'city', 'age'] });
  eq(x.index.ddoc, '_design/people');
  eq(x.index.name, 'city-age');
  ok(Array.isArray(x.selector.$and) && x.selector.$and.length === 2, 'normalised selector: ' + JSON.stringify(x.selector));
  eq(x.mrargs.start_key, ['rome', 30]);
  eq(x.mrargs.end_key, ['rome', '<MAX>']);
  eq(x.covering, true);
  eq(x.fields, ['_id', 'city', 'age']);
  ok(Array.isArray(x.index_candidates) && x.index_candidates.some((c) => c.index.name === '_all_docs'), JSON.stringify(x.index_candidates));
  const a = await remote.explain({ selector: { tags: { $size: 1 } } });
  eq(a.index.name, '_all_docs');
});

test('errors become rejections with CouchDB\'s status, error and reason', async () => {
  let e = await rejection(remote.find({ selector: { city: 'rome' }, sort: ['tags'] }));
  eq([e.status, e.error, e.reason], [400, 'no_usable_index', 'No index exists for this sort, try indexing by the sort fields.']);
  e = await rejection(remote.find({ selector: { age: { $gt: 0 } }, limit: -1 }));
  eq([e.status, e.error], [400, 'invalid_non_neg_integer']);
  e = await rejection(remote.createIndex({ index: { fields: [{ a: 'asc' }, { b: 'desc' }] } }));
  eq([e.status, e.error, e.reason], [400, 'unsupported_mixed_sort', 'Sorts currently only support a single direction for all fields.']);
  e = await rejection(remote.find({ selector: { city: 'rome' }, use_index: 'nope', allow_fallback: false }));
  eq([e.status, e.error], [400, 'invalid_index']);
});

test('the index follows writes made through PouchDB', async () => {
  const put = await remote.put({ _id: 'zz-new', name: 'new', age: 99, city: 'rome', tags: [], address: { zip: 1 } });
  ok(put.ok);
  let r = await remote.find({ selector: { age: { $gt: 90 } }, sort: ['age'] });
  eq(r.docs.map((d) => d._id), ['zz-new']);
  await remote.remove('zz-new', put.rev);
  r = await remote.find({ selector: { age: { $gt: 90 } }, sort: ['age'] });
  eq(r.docs, []);
  const doc = await remote.get('p001');
  await remote.put(Object.assign({}, doc, { age: 77 }));
  r = await remote.find({ selector: { age: 77 } });
  eq(r.docs.map((d) => d._id), ['p001']);
});

test('deleteIndex: removes it (and its ddoc when it was the last one); a second delete is a 404', async () => {
  const idx = (await remote.getIndexes()).indexes;
  const zip = idx.find((x) => x.name === 'zip');
  eq(await remote.deleteIndex(zip), { ok: true });
  const e404 = await rejection(remote.get('_design/zip'));
  eq(e404.status, 404);
  const name = idx.find((x) => x.ddoc === '_design/people' && x.name === 'name');
  eq(await remote.deleteIndex({ ddoc: 'people', name: 'name' }), { ok: true });
  ok((await remote.get('_design/people')).views['city-age'], 'the ddoc keeps its other index');
  const left = (await remote.getIndexes()).indexes.map((x) => x.name);
  ok(!left.includes('zip') && !left.includes('name') && left.includes('city-age'), JSON.stringify(left));
  const e = await rejection(remote.deleteIndex(name));
  eq([e.status, e.error], [404, 'not_found']);
  // sorting by name needs an index again
  const s = await rejection(remote.find({ selector: { name: { $gt: null } }, sort: ['name'] }));
  eq(s.status, 400);
});

test('divan is healthy', async () => {
  const r = await req('GET', base + '/');
  eq(r.status, 200, r.text);
});

runFile(__filename, {
  seconds: 90,
  started: (s) => { base = s.base; },
  finished: async () => { if (local) await local.destroy().catch(() => {}); },
});

void assert;
