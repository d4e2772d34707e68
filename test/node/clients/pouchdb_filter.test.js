// pouchdb_filter.test.js — PouchDB 9 (the real npm client, http adapter)
// uses a design document's filter against a real `divan serve`: changes()
// with filter and query_params (normal and live), replicate.from with a
// filter into a local PouchDB (memory adapter), and a live filtered
// replication that follows new documents. divan runs the filter (PouchDB
// sends filter=ddoc/name to the server's _changes when the source is
// remote).
//
//   DIVAN_BIN=build/cc/divan node test/node/clients/pouchdb_filter.test.js
//   DIVAN_URL=http://admin:testpass@127.0.0.1:5984 node ...   (a running server)
'use strict';
const PouchDB = require('pouchdb').plugin(require('pouchdb-adapter-memory'));
const { test, eq, ok } = require('../lib/t');
const { runFile } = require('../lib/divan');

let base = '';
let remote = null;

const DDOC = {
  _id: '_design/app',
  filters: {
    by_type: 'function(doc, req) { return doc.type === req.query.type; }',
    no_design: 'function(doc) { return doc._id.indexOf("_design/") !== 0; }',
  },
};

test('setup', async () => {
  remote = new PouchDB(base + '/pfilter', { skip_setup: false });
  await remote.put(DDOC);
  const docs = [];
  for (let i = 0; i < 30; i++) docs.push({ _id: 'd' + String(i).padStart(2, '0'), type: ['a', 'b', 'c'][i % 3], n: i });
  const res = await remote.bulkDocs(docs);
  ok(res.every((r) => r.ok), JSON.stringify(res));
});

test('changes() with filter and query_params', async () => {
  const r = await remote.changes({ filter: 'app/by_type', query_params: { type: 'b' }, include_docs: true });
  eq(r.results.map((x) => x.id), ['d01', 'd04', 'd07', 'd10', 'd13', 'd16', 'd19', 'd22', 'd25', 'd28']);
  ok(r.results.every((x) => x.doc.type === 'b'));
  const lim = await remote.changes({ filter: 'app/by_type', query_params: { type: 'c' }, limit: 3 });
  eq(lim.results.map((x) => x.id), ['d02', 'd05', 'd08']);
  const more = await remote.changes({ filter: 'app/by_type', query_params: { type: 'c' }, since: lim.last_seq });
  eq(more.results.length, 7);
});

test('live changes() with a filter sees only matching new documents', async () => {
  const info = await remote.info();
  const seen = [];
  const feed = remote.changes({ live: true, since: info.update_seq, filter: 'app/by_type', query_params: { type: 'a' } });
  const got = new Promise((resolve, reject) => {
    feed.on('change', (c) => { seen.push(c.id); if (c.id === 'live_a') resolve(); });
    feed.on('error', reject);
  });
  await new Promise((r) => setTimeout(r, 300));
  await remote.put({ _id: 'live_b', type: 'b' });
  await remote.put({ _id: 'live_a', type: 'a' });
  await Promise.race([got, new Promise((_, rej) => setTimeout(() => rej(new Error('no change in 10 s')), 10000))]);
  feed.cancel();
  eq(seen, ['live_a']);
});

test('replicate.from divan with a filter', async () => {
  const local = new PouchDB('pf_local', { adapter: 'memory' });
  const r = await local.replicate.from(remote, { filter: 'app/by_type', query_params: { type: 'a' } });
  ok(r.ok, JSON.stringify(r));
  const all = await local.allDocs();
  eq(all.rows.map((x) => x.id), ['d00', 'd03', 'd06', 'd09', 'd12', 'd15', 'd18', 'd21', 'd24', 'd27', 'live_a']);
  // a filter without parameters: everything but the design document
  const l2 = new PouchDB('pf_local2', { adapter: 'memory' });
  await l2.replicate.from(remote, { filter: 'app/no_design' });
  const all2 = await l2.allDocs();
  eq(all2.rows.length, 32);
  ok(!all2.rows.some((x) => x.id.startsWith('_design/')));
  await local.destroy();
  await l2.destroy();
});

test('live filtered replication follows new documents', async () => {
  const local = new PouchDB('pf_live', { adapter: 'memory' });
  const rep = local.replicate.from(remote, { live: true, retry: false, filter: 'app/by_type', query_params: { type: 'c' } });
  const until = async (fn, ms = 10000) => {
    const t0 = Date.now();
    while (!(await fn())) {
      if (Date.now() - t0 > ms) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await until(async () => (await local.allDocs()).rows.length === 10);
  await remote.put({ _id: 'late_c', type: 'c' });
  await remote.put({ _id: 'late_a', type: 'a' });
  await until(async () => (await local.allDocs({ keys: ['late_c'] })).rows[0].value !== undefined);
  rep.cancel();
  const ids = (await local.allDocs()).rows.map((x) => x.id);
  ok(!ids.includes('late_a'), ids.join(','));
  eq(ids.length, 11);
  await local.destroy();
});

test('teardown', async () => {
  await remote.destroy();
});

runFile(__filename, {
  seconds: 120,
  started: (s) => { base = s.base; },
});
