// purge.test.js — black-box checks of POST /{db}/_purge and
// /{db}/_purged_infos_limit against a real `divan serve`, as CouchDB 3.x
// answers them: a purged document leaves no trace in the document API,
// _all_docs, _changes or the counters; purging the winner of a conflicted
// document makes the next leaf win and shows the document again in
// _changes; non-leaf and unknown revs purge nothing; a purged document can
// be created again; bad requests get CouchDB's errors and change nothing.
'use strict';
const { test, run, req, eq, ok, isErr } = require('../lib/t');
const { startDivan } = require('../lib/divan');

let srv, U, D;
const J = { 'Content-Type': 'application/json' };
const h32 = (c) => c.repeat(32);

const purge = (body, db = 'pdb') => req('POST', `${U}/${db}/_purge`, body);
const info = async () => (await req('GET', D)).json;
const changes = async () => (await req('GET', D + '/_changes?style=all_docs')).json.results;
const allDocIds = async () => (await req('GET', D + '/_all_docs')).json.rows.map((r) => r.id);

async function put(id, body) {
  const r = await req('PUT', `${D}/${encodeURIComponent(id)}`, body);
  eq(r.status, 201, r.text);
  return r.json.rev;
}

// Replicated branches ("letters" newest first: "cba" = 3-c…, 2-b…, 1-a…).
async function branch(id, letters, extra = {}) {
  const doc = Object.assign({ _id: id, _revisions: { start: letters.length, ids: [...letters].map(h32) } }, extra);
  const r = await req('POST', D + '/_bulk_docs', { docs: [doc], new_edits: false });
  eq(r.status, 201, r.text);
  return `${letters.length}-${h32(letters[0])}`;
}

test('start', async () => {
  srv = await startDivan();
  U = srv.url;
  D = U + '/pdb';
  eq((await req('PUT', D)).status, 201);
});

test('purging the only leaf removes the document everywhere', async () => {
  const r1 = await put('gone', { a: 1 });
  const r2 = await put('gone', { _rev: r1, a: 2 });
  await put('stay', { b: 1 });
  const before = await info();
  eq(before.doc_count, 2);
  const r = await purge({ gone: [r2] });
  eq(r.status, 201, r.text);
  eq(r.json, { purge_seq: null, purged: { gone: [r2] } });
  eq(r.headers['content-type'], 'application/json');
  isErr(await req('GET', D + '/gone'), 404, 'not_found', 'missing');
  isErr(await req('GET', D + '/gone?rev=' + r2), 404, 'not_found');
  eq(await allDocIds(), ['stay']);
  eq((await changes()).map((c) => c.id), ['stay']);
  const after = await info();
  eq(after.doc_count, 1);
  eq(after.doc_del_count, 0);
  ok(after.sizes.external < before.sizes.external);
  ok(after.update_seq !== before.update_seq, 'update_seq moves on a purge');
  eq(typeof after.purge_seq, 'string');
  eq(Number(after.purge_seq), Number(before.purge_seq) + 1, 'one purge, one purge_seq');
});

test('non-leaf, unknown and repeated revs purge nothing', async () => {
  const r1 = await put('nl', { v: 1 });
  const r2 = await put('nl', { _rev: r1, v: 2 });
  let r = await purge({ nl: [r1, '9-' + h32('f')], nope: ['1-' + h32('a')] });
  eq(r.status, 201, r.text);
  eq(r.json, { purge_seq: null, purged: { nl: [], nope: [] } });
  eq((await req('GET', D + '/nl')).json._rev, r2);
  r = await purge({ nl: [r2, r2] });
  eq(r.json.purged, { nl: [r2] });
  r = await purge({ nl: [r2] });
  eq(r.json.purged, { nl: [] });
  r = await purge({});
  eq(r.status, 201);
  eq(r.json, { purge_seq: null, purged: {} });
});

test('purging the winner of a conflicted document: the next leaf wins', async () => {
  await branch('cf', 'ba', { who: 'b' });
  const win = await branch('cf', 'ca', { who: 'c' });
  await branch('cf', 'da', { _deleted: true });
  await put('later', {});
  let d = (await req('GET', D + '/cf?conflicts=true&deleted_conflicts=true')).json;
  eq(d._rev, win);
  eq(d._conflicts, ['2-' + h32('b')]);
  const seqBefore = (await changes()).find((c) => c.id === 'cf').seq;
  const before = await info();
  const r = await purge({ cf: [win] });
  eq(r.status, 201, r.text);
  eq(r.json.purged, { cf: [win] });
  d = (await req('GET', D + '/cf?conflicts=true&deleted_conflicts=true')).json;
  eq(d, { _id: 'cf', _rev: '2-' + h32('b'), who: 'b', _deleted_conflicts: ['2-' + h32('d')] });
  const rows = await changes();
  const last = rows[rows.length - 1];
  eq(last.id, 'cf', 'the purged document moves to the end of the feed');
  ok(last.seq !== seqBefore);
  eq(last.changes.map((c) => c.rev).sort(), ['2-' + h32('b'), '2-' + h32('d')]);
  eq(rows.filter((c) => c.id === 'cf').length, 1);
  const after = await info();
  eq(after.doc_count, before.doc_count);
  eq(after.doc_del_count, before.doc_del_count);
  // the ancestor 1-a is still there for the remaining branch
  const revs = (await req('GET', D + '/cf?revs=true')).json._revisions;
  eq(revs, { start: 2, ids: [h32('b'), h32('a')] });
  // purge the last live leaf: the tombstone wins, the doc is deleted
  const r2 = await purge({ cf: ['2-' + h32('b')] });
  eq(r2.json.purged, { cf: ['2-' + h32('b')] });
  isErr(await req('GET', D + '/cf'), 404, 'not_found', 'deleted');
  const fin = await info();
  eq(fin.doc_count, before.doc_count - 1);
  eq(fin.doc_del_count, before.doc_del_count + 1);
  const row = (await changes()).find((c) => c.id === 'cf');
  eq(row.deleted, true);
});

test('purging a deleted document removes the tombstone', async () => {
  const r1 = await put('tomb', { x: 1 });
  const del = await req('DELETE', `${D}/tomb?rev=${r1}`);
  eq(del.status, 200, del.text);
  const r2 = del.json.rev;
  const before = await info();
  const r = await purge({ tomb: [r2] });
  eq(r.json.purged, { tomb: [r2] });
  isErr(await req('GET', D + '/tomb'), 404, 'not_found', 'missing');
  ok(!(await changes()).some((c) => c.id === 'tomb'));
  const after = await info();
  eq(after.doc_del_count, before.doc_del_count - 1);
  eq(after.doc_count, before.doc_count);
});

test('a purged document can be created again, from generation 1', async () => {
  const r1 = await put('again', { gen: 1 });
  eq((await purge({ again: [r1] })).json.purged, { again: [r1] });
  const r = await req('PUT', D + '/again', { gen: 2 });
  eq(r.status, 201, r.text);
  ok(r.json.rev.startsWith('1-'));
  eq((await req('GET', D + '/again')).json.gen, 2);
  ok((await allDocIds()).includes('again'));
  ok((await changes()).some((c) => c.id === 'again'));
});

test('several documents in one request', async () => {
  const a = await put('m1', {});
  const b = await put('m2', {});
  const r = await purge({ m1: [a], m2: [b], m3: [] });
  eq(r.status, 201);
  eq(r.json, { purge_seq: null, purged: { m1: [a], m2: [b], m3: [] } });
});

test('bad requests get CouchDB errors and change nothing', async () => {
  const rev = await put('keep', { k: 1 });
  const before = await info();
  isErr(await req('POST', D + '/_purge', JSON.stringify({ keep: [rev] })), 415, 'bad_content_type');
  isErr(await req('POST', D + '/_purge', JSON.stringify({ keep: [rev] }), { 'Content-Type': 'text/plain' }), 415, 'bad_content_type');
  isErr(await req('POST', D + '/_purge', '{"keep":', J), 400, 'bad_request');
  isErr(await req('POST', D + '/_purge', '', J), 400, 'bad_request');
  isErr(await purge([rev]), 400, 'bad_request', 'Request body must be a JSON object');
  isErr(await purge({ keep: rev }), 400, 'bad_request', 'Invalid list of revisions');
  isErr(await purge({ keep: [1] }), 400, 'bad_request', 'Invalid rev format');
  isErr(await purge({ keep: ['nodash'] }), 400, 'bad_request', 'Invalid rev format');
  isErr(await purge({ keep: ['x-abc'] }), 400, 'bad_request', 'Invalid rev format');
  // a bad member anywhere refuses the whole request
  isErr(await purge({ keep: [rev], other: [null] }), 400, 'bad_request', 'Invalid rev format');
  const many = {};
  for (let i = 0; i < 101; i++) many['d' + i] = [];
  isErr(await purge(many), 400, 'bad_request', 'Exceeded maximum number of documents.');
  const revs = [];
  for (let i = 0; i < 1001; i++) revs.push(`${i + 1}-${h32('a')}`);
  isErr(await purge({ keep: revs }), 400, 'bad_request', 'Exceeded maximum number of revisions.');
  // exactly at the limits is fine
  const hundred = {};
  for (let i = 0; i < 100; i++) hundred['e' + i] = i === 0 ? revs.slice(0, 1000) : [];
  eq((await purge(hundred)).status, 201);
  eq((await req('GET', D + '/keep')).json._rev, rev);
  const after = await info();
  eq(after.doc_count, before.doc_count);
  isErr(await purge({ keep: [rev] }, 'no_such_db'), 404, 'not_found', 'Database does not exist.');
  const g = await req('GET', D + '/_purge');
  isErr(g, 405, 'method_not_allowed');
  eq(g.headers.allow, 'POST');
  isErr(await req('PUT', D + '/_purge', {}), 405, 'method_not_allowed');
});

test('_purged_infos_limit: GET, PUT, bad values', async () => {
  let r = await req('GET', D + '/_purged_infos_limit');
  eq(r.status, 200);
  eq(r.json, 1000);
  r = await req('PUT', D + '/_purged_infos_limit', '5', J);
  eq(r.status, 200, r.text);
  eq(r.json, { ok: true });
  eq((await req('GET', D + '/_purged_infos_limit')).json, 5);
  for (const bad of ['0', '-1', '"10"', '1.5', '[1]', '{}', 'null']) {
    isErr(await req('PUT', D + '/_purged_infos_limit', bad, J), 400, 'bad_request',
      '`purge_infos_limit` must be positive integer');
  }
  isErr(await req('PUT', D + '/_purged_infos_limit', 'nope', J), 400, 'bad_request');
  eq((await req('GET', D + '/_purged_infos_limit')).json, 5);
  // purges go on working past the limit
  for (let i = 0; i < 7; i++) eq((await purge({ ['lim' + i]: [] })).status, 201);
  isErr(await req('GET', U + '/no_such_db/_purged_infos_limit'), 404, 'not_found');
  const del = await req('DELETE', D + '/_purged_infos_limit');
  isErr(del, 405, 'method_not_allowed');
});

test('purges survive a restart', async () => {
  const rev = await put('durable', {});
  eq((await purge({ durable: [rev] })).json.purged, { durable: [rev] });
  await srv.kill9();
  srv = await startDivan({ dataDir: srv.dataDir });
  U = srv.url;
  D = U + '/pdb';
  isErr(await req('GET', D + '/durable'), 404, 'not_found', 'missing');
  eq((await req('GET', D + '/_purged_infos_limit')).json, 5);
});

test('stop', async () => { await srv.stop(); });

run();
