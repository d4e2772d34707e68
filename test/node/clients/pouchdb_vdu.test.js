// pouchdb_vdu.test.js — PouchDB (npm) syncing into a divan database whose
// validate_doc_update refuses some documents: the refusals come back per
// document (PouchDB's bulkDocs answers, its replicator's doc_write_failures
// and errors), everything else is replicated, and a second sync neither
// retries nor loses anything.
//
//   DIVAN_BIN=build/cc/divan node test/node/clients/pouchdb_vdu.test.js
'use strict';
const PouchDB = require('pouchdb').plugin(require('pouchdb-adapter-memory'));
const { test, eq, ok, req } = require('../lib/t');
const { runFile } = require('../lib/divan');

let d = '';
const locals = [];

const VDU = `function(newDoc, oldDoc, userCtx) {
  if (newDoc._deleted) return;
  if (newDoc.kind === 'secret') throw({forbidden: 'no secrets: ' + newDoc._id});
  if (oldDoc && oldDoc.kind !== newDoc.kind) throw({forbidden: 'kind is fixed'});
}`;

const ids = (rows) => rows.map((r) => r.id).filter((id) => id[0] !== '_').sort();

test('set up: a divan database with a validator', async () => {
  eq((await req('PUT', d + '/pv')).status, 201);
  eq((await req('PUT', d + '/pv/_design/rules', { validate_doc_update: VDU })).status, 201);
});

test('PouchDB bulkDocs over HTTP: refusals per document', async () => {
  const remote = new PouchDB(d + '/pv');
  const res = await remote.bulkDocs([{ _id: 'h1', kind: 'note' }, { _id: 'h2', kind: 'secret' }, { _id: 'h3', kind: 'note' }]);
  ok(res[0].ok && res[2].ok, JSON.stringify(res));
  eq([res[1].id, res[1].error, res[1].name, res[1].message], ['h2', 'forbidden', 'forbidden', 'no secrets: h2'], JSON.stringify(res));
  const put = await remote.put({ _id: 'h4', kind: 'secret' }).then(() => null, (e) => e);
  ok(put && put.status === 403 && put.name === 'forbidden', String(put));
});

test('PouchDB replicates into it: refused documents reported, the rest written', async () => {
  const mem = new PouchDB('vdu-' + Date.now(), { adapter: 'memory' });
  locals.push(mem);
  const docs = [];
  for (let i = 0; i < 40; i++) docs.push({ _id: 'p' + String(i).padStart(3, '0'), kind: i % 5 === 0 ? 'secret' : 'note', n: i });
  await mem.bulkDocs(docs);
  const res = await PouchDB.replicate(mem, d + '/pv');
  eq(res.ok, true);
  eq(res.docs_read, 40);
  eq(res.docs_written, 32, JSON.stringify(res));
  eq(res.doc_write_failures, 8, JSON.stringify(res));
  const got = (await req('GET', d + '/pv/_all_docs')).json.rows;
  const want = [...docs.filter((x) => x.kind !== 'secret').map((x) => x._id), 'h1', 'h3'].sort();
  eq(ids(got), want);
  // edits: one that changes kind is refused, the others arrive
  const a = await mem.get('p001');
  const b = await mem.get('p002');
  await mem.bulkDocs([Object.assign(a, { kind: 'other' }), Object.assign(b, { n: 99 })]);
  const res2 = await PouchDB.replicate(mem, d + '/pv');
  eq([res2.docs_written, res2.doc_write_failures], [1, 1], JSON.stringify(res2));
  eq((await req('GET', d + '/pv/p002')).json.n, 99);
  eq((await req('GET', d + '/pv/p001')).json.kind, 'note');
});

test('two-way sync: what divan holds comes back, the refused stay local only', async () => {
  const mem = new PouchDB('vdusync-' + Date.now(), { adapter: 'memory' });
  locals.push(mem);
  await mem.bulkDocs([{ _id: 's1', kind: 'note' }, { _id: 's2', kind: 'secret' }]);
  const res = await mem.sync(d + '/pv');
  eq(res.push.doc_write_failures, 1, JSON.stringify(res.push));
  eq(res.push.docs_written, 1);
  ok(res.pull.docs_written >= 34, JSON.stringify(res.pull));
  eq((await req('GET', d + '/pv/s2')).status, 404);
  eq((await mem.get('s2')).kind, 'secret');
  eq((await mem.get('h1')).kind, 'note');
});

runFile(__filename, {
  seconds: 100,
  started: ({ base }) => { d = base; },
  finished: async () => { for (const l of locals) await l.destroy().catch(() => {}); },
});
