// check.test.js — GET /_node/_local/_check, `divan check` online (src/api/
// check.c): server admins only; clean on a store with conflicts,
// deletions, attachments and local documents, and stays clean (notes
// allowed, never a problem) while writers run beside it; ?db= checks one
// database; a broken counter (written with the server stopped, through
// kv.h, by the C test check_break_counter) is reported after a restart.
// A view index (map, _sum, a JavaScript reduce) built while the writers
// run is compared with a rebuild by every check and never differs.
'use strict';
const { test, run, req, eq, ok, isErr } = require('../lib/t');
const path = require('path');
const { execFileSync } = require('child_process');
const { startDivan } = require('../lib/divan');

let srv, U;
const J = { 'Content-Type': 'application/json' };

test('start', async () => { srv = await startDivan(); U = srv.url; });

test('admins only: 401 anonymous and for a plain user', async () => {
  isErr(await req('GET', srv.base + '/_node/_local/_check'), 401, 'unauthorized');
  eq((await req('PUT', U + '/_users/org.couchdb.user:bob', { name: 'bob', password: 'pw', roles: [], type: 'user' })).status, 201);
  const bob = srv.base.replace('http://', 'http://bob:pw@');
  isErr(await req('GET', bob + '/_node/_local/_check'), 401, 'unauthorized');
  isErr(await req('GET', U + '/_node/nosuch/_check'), 404, 'not_found');
});

test('clean store', async () => {
  eq((await req('PUT', U + '/c1')).status, 201);
  eq((await req('PUT', U + '/c2')).status, 201);
  eq((await req('PUT', U + '/c3')).status, 201);
  eq((await req('DELETE', U + '/c3')).status, 200);
  const a = await req('PUT', U + '/c1/a', { v: 1, deep: { x: [1, {}] } });
  await req('DELETE', U + '/c1/a?rev=' + a.json.rev);
  await req('POST', U + '/c1/_bulk_docs', { new_edits: false, docs: [
    { _id: 'b', _rev: '1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', v: 1 },
    { _id: 'b', _rev: '1-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', v: 2 } ] });
  eq((await req('PUT', U + '/c1/d/f.txt', Buffer.from('hello'), { 'Content-Type': 'text/plain' })).status, 201);
  eq((await req('PUT', U + '/c1/_local/l', { k: 1 })).status, 201);
  eq((await req('POST', U + '/c1/_index', { index: { fields: ['v'] }, name: 'iv' })).status, 200);
  const r = await req('GET', U + '/_node/_local/_check');
  eq(r.status, 200);
  eq(r.json.ok, true, JSON.stringify(r.json));
  eq(r.json.problems, []);
  ok(r.json.checked.databases >= 2);
  ok(r.json.checked.documents >= 3);
  ok(r.json.checked.revisions >= 4);
  eq(r.json.checked.attachments, 1);
  eq(r.json.checked.local_docs, 1);
  const one = await req('GET', U + '/_node/_local/_check?db=c2');
  eq(one.json.ok, true);
  eq(one.json.checked.databases, 1);
  isErr(await req('GET', U + '/_node/_local/_check?db=nosuch'), 404, 'not_found');
  isErr(await req('GET', U + '/_node/_local/_check?db=Bad!'), 400, 'illegal_database_name');
});

test('clean while writers run', async () => {
  let stop = false, writes = 0;
  const writer = async (w) => {
    let i = 0;
    while (!stop) {
      const id = `w${w}-${i++ % 20}`;
      const cur = await req('GET', `${U}/c2/${id}`);
      const body = { n: i, _rev: cur.status === 200 ? cur.json._rev : undefined };
      if (cur.status === 200 && i % 5 === 0) await req('DELETE', `${U}/c2/${id}?rev=${cur.json._rev}`);
      else await req('PUT', `${U}/c2/${id}`, body);
      if (i % 7 === 0) await req('POST', `${U}/c2/_bulk_docs`, { docs: [{ n: i }, { n: i + 1 }] });
      writes++;
    }
  };
  eq((await req('PUT', U + '/c2/_design/v', { views: {
    n: { map: 'function(doc){ if (doc.n !== undefined) emit(doc.n, 1); }', reduce: '_sum' },
    js: { map: 'function(doc){ emit(doc._id, doc.n || 0); }', reduce: 'function(k, v, re){ return sum(v); }' } } })).status, 201);
  eq((await req('GET', U + '/c2/_design/v/_view/n')).status, 200);
  const ws = [writer(0), writer(1), writer(2)];
  let notes = 0;
  let checks = 0;
  for (const t0 = Date.now(); (checks < 3 || writes < 60) && Date.now() - t0 < 20000; checks++) {
    eq((await req('GET', U + '/c2/_design/v/_view/' + (checks % 2 ? 'n' : 'js'))).status, 200);
    const r = await req('GET', U + '/_node/_local/_check');
    eq(r.status, 200);
    eq(r.json.problems, [], JSON.stringify(r.json.problems));
    eq(r.json.ok, true);
    notes += r.json.notes.length;
  }
  stop = true;
  await Promise.all(ws);
  ok(writes >= 60 && checks >= 3, `writes ${writes}, checks ${checks}`);
  eq((await req('GET', U + '/c2/_design/v/_view/js')).status, 200);
  const r = await req('GET', U + '/_node/_local/_check?db=c2');
  eq(r.json.ok, true, JSON.stringify(r.json.problems));
  eq(r.json.notes, []); // quiet now: the counters are compared
  const all = await req('GET', U + '/c2/_all_docs');
  ok(r.json.checked.index_rows >= 2 * (all.json.total_rows - 1), `index_rows ${r.json.checked.index_rows}`);
});

test('a broken counter is reported', async () => {
  await srv.stop();
  const runner = path.resolve(process.env.DV_BUILD || 'build/cc', 'test_runner');
  execFileSync(runner, ['check_break_counter'], {
    env: { ...process.env, DV_CHECK_DIR: srv.dataDir, DV_CHECK_DB: 'c1' }, stdio: 'pipe' });
  srv = await startDivan({ dataDir: srv.dataDir });
  U = srv.url;
  const r = await req('GET', U + '/_node/_local/_check');
  eq(r.status, 200);
  eq(r.json.ok, false);
  eq(r.json.checked.problems, 1);
  eq(r.json.problems.length, 1);
  eq(r.json.problems[0].db, 'c1');
  ok(/^doc_count is \d+$/.test(r.json.problems[0].problem), r.json.problems[0].problem);
  ok(/what the revisions subspace counts/.test(r.json.problems[0].expected));
});

test('stop', async () => { await srv.stop(); });

run();
