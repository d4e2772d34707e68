// validate.test.js — validate_doc_update and the design-document field
// checks against a real `divan serve`, as CouchDB 3.4 answers them: every
// write path runs every design document's validator (PUT, POST, DELETE,
// COPY, _bulk_docs with per-document refusals, new_edits=false, attachment
// PUT and DELETE, replication from another database); throw({forbidden})
// is 403, throw({unauthorized}) 401, anything else 500 with CouchDB's
// names; newDoc, oldDoc, userCtx and secObj are CouchDB's; a validator
// that does not compile is stored and every write then fails with
// compilation_error; deleting a design document drops its validator;
// server admins are validated too; design documents run no validator but
// get CouchDB's field checks (400 invalid_design_doc). On the FoundationDB
// double (DIVAN_FDB), writes under injected commit_unknown_result are never
// half-applied.
'use strict';
const { test, run, req, eq, ok, isErr } = require('../lib/t');
const { startDivan } = require('../lib/divan');

let srv, U, D, B;
const h32 = (c) => c.repeat(32);
const enc = encodeURIComponent;

const VDU = `function(newDoc, oldDoc, userCtx, secObj) {
  if (newDoc.forbid) throw({forbidden: 'no ' + newDoc._id});
  if (newDoc.unauth) throw({unauthorized: 'who are you'});
  if (newDoc.str) throw('just a string');
  if (newDoc.other) throw({nope: 'other key'});
  if (newDoc.typeerr) { var x = null; x.boom(); }
  if (newDoc.echo) throw({forbidden: JSON.stringify({newDoc: newDoc, oldDoc: oldDoc, userCtx: userCtx, secObj: secObj})});
  if (newDoc._deleted && oldDoc && oldDoc.keep) throw({forbidden: 'keep ' + newDoc._id});
  if (newDoc._attachments && newDoc._attachments['bad.txt']) throw({forbidden: 'no bad.txt'});
  if (oldDoc && oldDoc._attachments && oldDoc._attachments['keep.txt'] &&
      !(newDoc._attachments && newDoc._attachments['keep.txt'])) throw({forbidden: 'keep.txt stays'});
}`;

async function put(url, body, status = 201) {
  const r = await req('PUT', url, body);
  eq(r.status, status, r.text);
  return r.json;
}
const echo = async (url, body) => {
  const r = await req('PUT', url, Object.assign({}, body, { echo: true }));
  isErr(r, 403, 'forbidden');
  return JSON.parse(r.json.reason);
};

test('start', async () => {
  srv = await startDivan();
  U = srv.url;
  B = srv.base;
  D = U + '/vdb';
  await put(D);
  await put(D + '/_security', { admins: { names: [], roles: [] }, members: { names: [], roles: [] } }, 200);
  await put(D + '/_design/v', { validate_doc_update: VDU });
});

test('PUT: forbidden 403, unauthorized 401, a string or another key 500 unknown_error, an Error its name', async () => {
  isErr(await req('PUT', D + '/a', { forbid: 1 }), 403, 'forbidden', 'no a');
  isErr(await req('PUT', D + '/a', { unauth: 1 }), 401, 'unauthorized', 'who are you');
  isErr(await req('PUT', D + '/a', { str: 1 }), 500, 'unknown_error', 'just a string');
  isErr(await req('PUT', D + '/a', { other: 1 }), 500, 'unknown_error', 'other key');
  const t = await req('PUT', D + '/a', { typeerr: 1 });
  isErr(t, 500, 'TypeError');
  isErr(await req('GET', D + '/a'), 404, 'not_found');
  await put(D + '/a', { fine: 1 });
  eq((await req('GET', D)).json.doc_count, 2);
});

test('POST, DELETE and COPY are validated', async () => {
  isErr(await req('POST', D, { _id: 'p', forbid: 1 }), 403, 'forbidden', 'no p');
  const p = await req('POST', D, { forbid: 1 });
  isErr(p, 403, 'forbidden');
  ok(/^no [0-9a-f]{32}$/.test(p.json.reason), p.text);
  const k = await put(D + '/k', { keep: true });
  isErr(await req('DELETE', `${D}/k?rev=${k.rev}`), 403, 'forbidden', 'keep k');
  eq((await req('GET', D + '/k')).status, 200);
  const bad = await put(D + '/src', { x: 1 });
  await put(`${D}/src?rev=${bad.rev}`, { _rev: bad.rev, x: 2 });
  const c = await req('COPY', D + '/src', undefined, { Destination: 'dst' });
  eq(c.status, 201, c.text);
  // a document the validator refuses cannot be copied into being
  await req('PUT', D + '/_design/c', { validate_doc_update: "function(n){ if (n._id === 'nocopy') throw({forbidden: 'no copies'}); }" });
  isErr(await req('COPY', D + '/src', undefined, { Destination: 'nocopy' }), 403, 'forbidden', 'no copies');
  isErr(await req('GET', D + '/nocopy'), 404, 'not_found');
  const dd = (await req('GET', D + '/_design/c')).json;
  eq((await req('DELETE', `${D}/_design/c?rev=${dd._rev}`)).status, 200);
});

test('_bulk_docs: refusals per document, the rest written', async () => {
  const r = await req('POST', D + '/_bulk_docs', { docs: [{ _id: 'b1' }, { _id: 'b2', forbid: 1 }, { _id: 'b3', unauth: 1 }, { _id: 'b4', str: 1 }, { _id: 'b5' }] });
  eq(r.status, 201, r.text);
  eq(r.json.length, 5);
  ok(r.json[0].ok && r.json[4].ok, r.text);
  eq(r.json[1], { id: 'b2', error: 'forbidden', reason: 'no b2' });
  eq(r.json[2], { id: 'b3', error: 'unauthorized', reason: 'who are you' });
  eq(r.json[3], { id: 'b4', error: 'unknown_error', reason: 'just a string' });
  eq((await req('GET', D + '/b2')).status, 404);
  eq((await req('GET', D + '/b5')).status, 200);
});

test('new_edits=false: validated, errors only in the answer', async () => {
  const docs = [
    { _id: 'r1', _rev: '1-' + h32('a'), fine: 1 },
    { _id: 'r2', _rev: '1-' + h32('b'), forbid: 1 },
  ];
  const r = await req('POST', D + '/_bulk_docs', { docs, new_edits: false });
  eq(r.status, 201, r.text);
  eq(r.json, [{ id: 'r2', rev: '1-' + h32('b'), error: 'forbidden', reason: 'no r2' }]);
  eq((await req('GET', D + '/r1')).json._rev, '1-' + h32('a'));
  eq((await req('GET', D + '/r2')).status, 404);
  // a known leaf sent again is not validated (CouchDB skips revs already in the tree)
  const again = await req('POST', D + '/_bulk_docs', { docs: [{ _id: 'r1', _rev: '1-' + h32('a'), forbid: 1 }], new_edits: false });
  eq(again.json, [], again.text);
  // PUT ?new_edits=false
  isErr(await req('PUT', `${D}/r3?new_edits=false`, { _rev: '1-' + h32('c'), forbid: 1 }), 403, 'forbidden', 'no r3');
  // newDoc carries the incoming rev and its path, oldDoc the leaf it extends
  const e = await req('POST', D + '/_bulk_docs', { docs: [{ _id: 'r1', _revisions: { start: 2, ids: [h32('d'), h32('a')] }, echo: true }], new_edits: false });
  const seen = JSON.parse(e.json[0].reason);
  eq(seen.newDoc._rev, '2-' + h32('d'));
  eq(seen.newDoc._revisions, { start: 2, ids: [h32('d'), h32('a')] });
  eq(seen.oldDoc, { _id: 'r1', _rev: '1-' + h32('a'), fine: 1 });
});

test('attachment PUT and DELETE are validated, with the stubs in newDoc and oldDoc', async () => {
  const d = await put(D + '/att', { a: 1 });
  const bad = await req('PUT', `${D}/att/bad.txt?rev=${d.rev}`, 'x', { 'Content-Type': 'text/plain' });
  isErr(bad, 403, 'forbidden', 'no bad.txt');
  const g = await req('PUT', `${D}/att/keep.txt?rev=${d.rev}`, 'hello', { 'Content-Type': 'text/plain' });
  eq(g.status, 201, g.text);
  isErr(await req('DELETE', `${D}/att/keep.txt?rev=${g.json.rev}`), 403, 'forbidden', 'keep.txt stays');
  eq((await req('GET', D + '/att/keep.txt')).text, 'hello');
  // an edit that drops the stub is refused the same way
  isErr(await req('PUT', `${D}/att`, { _rev: g.json.rev, a: 2 }), 403, 'forbidden', 'keep.txt stays');
  const seen = await echo(`${D}/att`, { _rev: g.json.rev, _attachments: { 'keep.txt': { stub: true } } });
  eq(seen.newDoc._attachments['keep.txt'].stub, true);
  eq(seen.newDoc._attachments['keep.txt'].length, 5);
  eq(seen.newDoc._attachments['keep.txt'].content_type, 'text/plain');
  ok(/^md5-/.test(seen.newDoc._attachments['keep.txt'].digest), JSON.stringify(seen.newDoc));
  eq(seen.oldDoc._attachments['keep.txt'].length, 5);
});

test('newDoc, oldDoc, userCtx and secObj as CouchDB builds them', async () => {
  const sec = { admins: { names: [], roles: [] }, members: { names: [], roles: [] } };
  // a new document: no _rev, no _revisions, oldDoc null
  let s = await echo(D + '/e1', { x: 1 });
  eq(s.newDoc, { _id: 'e1', x: 1, echo: true });
  eq(s.oldDoc, null);
  eq(s.userCtx, { db: 'vdb', name: 'admin', roles: ['_admin'] });
  eq(s.secObj, sec);
  const e1 = await put(D + '/e1', { x: 1 });
  s = await echo(D + '/e1', { _rev: e1.rev, x: 2 });
  eq(Object.keys(s.newDoc), ['_id', '_rev', 'x', 'echo', '_revisions']);
  eq(s.newDoc._rev, e1.rev);
  eq(s.newDoc._revisions, { start: 1, ids: [e1.rev.slice(2)] });
  eq(s.oldDoc, { _id: 'e1', _rev: e1.rev, x: 1 });
  // a deletion: _deleted after the body
  s = await echo(`${D}/e1`, { _rev: e1.rev, _deleted: true });
  eq(Object.keys(s.newDoc), ['_id', '_rev', 'echo', '_deleted', '_revisions']);
  // recreating a deleted document: oldDoc null
  const del = await req('DELETE', `${D}/e1?rev=${e1.rev}`);
  eq(del.status, 200, del.text);
  s = await echo(D + '/e1', { y: 1 });
  eq(s.oldDoc, null);
  // a user with roles, anonymous
  await put(`${U}/_users/org.couchdb.user:bob`, { _id: 'org.couchdb.user:bob', name: 'bob', password: 'pw', roles: ['r1', 'r2'], type: 'user' });
  const bob = B.replace('http://', 'http://bob:pw@');
  const rb = await req('PUT', bob + '/vdb/e2', { echo: true });
  isErr(rb, 403, 'forbidden');
  eq(JSON.parse(rb.json.reason).userCtx, { db: 'vdb', name: 'bob', roles: ['r1', 'r2'] });
  const ra = await req('PUT', B + '/vdb/e2', { echo: true });
  isErr(ra, 403, 'forbidden');
  eq(JSON.parse(ra.json.reason).userCtx, { db: 'vdb', name: null, roles: [] });
  // a non-admin's refusal and acceptance
  isErr(await req('PUT', bob + '/vdb/e3', { forbid: 1 }), 403, 'forbidden', 'no e3');
  eq((await req('PUT', bob + '/vdb/e3', { fine: 1 })).status, 201);
});

test('several design documents: all run, in _id order, the first refusal answers', async () => {
  await put(D + '/_design/zz', { validate_doc_update: "function(n){ if (n.two) throw({forbidden: 'zz'}); if (n.both) throw({forbidden: 'zz both'}); }" });
  await put(D + '/_design/aa', { validate_doc_update: "function(n){ if (n.one) throw({forbidden: 'aa'}); if (n.both) throw({forbidden: 'aa both'}); }" });
  isErr(await req('PUT', D + '/m1', { one: 1 }), 403, 'forbidden', 'aa');
  isErr(await req('PUT', D + '/m1', { two: 1 }), 403, 'forbidden', 'zz');
  isErr(await req('PUT', D + '/m1', { forbid: 1 }), 403, 'forbidden', 'no m1');
  isErr(await req('PUT', D + '/m1', { both: 1 }), 403, 'forbidden', 'aa both');
  // deleting a design document removes its validator
  const aa = (await req('GET', D + '/_design/aa')).json;
  eq((await req('DELETE', `${D}/_design/aa?rev=${aa._rev}`)).status, 200);
  isErr(await req('PUT', D + '/m1', { both: 1 }), 403, 'forbidden', 'zz both');
  eq((await req('PUT', D + '/m1', { one: 1 })).status, 201);
  // a changed validator applies at once
  const zz = (await req('GET', D + '/_design/zz')).json;
  await put(D + '/_design/zz', { _rev: zz._rev, validate_doc_update: "function(n){ if (n.three) throw({forbidden: 'zz3'}); }" });
  isErr(await req('PUT', D + '/m2', { three: 1 }), 403, 'forbidden', 'zz3');
  eq((await req('PUT', D + '/m2', { two: 1 })).status, 201);
});

test('a validator that does not compile is stored; every write then fails with compilation_error', async () => {
  await put(U + '/cdb');
  const r = await req('PUT', U + '/cdb/_design/broken', { validate_doc_update: 'function(newDoc {' });
  eq(r.status, 201, r.text);
  isErr(await req('PUT', U + '/cdb/x', { a: 1 }), 500, 'compilation_error');
  const b = await req('POST', U + '/cdb/_bulk_docs', { docs: [{ _id: 'y' }] });
  eq(b.status, 201, b.text);
  eq(b.json[0].error, 'compilation_error', b.text);
  // design documents still write: fix it
  await put(U + '/cdb/_design/broken', { _rev: r.json.rev, validate_doc_update: 'function(newDoc) {}' });
  eq((await req('PUT', U + '/cdb/x', { a: 1 })).status, 201);
});

test('design documents run no validator and get CouchDB\'s field checks', async () => {
  await put(U + '/ddb');
  await put(U + '/ddb/_design/all', { validate_doc_update: "function(){ throw({forbidden: 'never'}); }" });
  isErr(await req('PUT', U + '/ddb/x', {}), 403, 'forbidden', 'never');
  await put(U + '/ddb/_design/other', { language: 'javascript' });
  const bad = [
    [{ validate_doc_update: 42 }, '`validate_doc_update` field must have string type'],
    [{ filters: { f: 1 } }, '`filters.f` field must have object or string type'],
    [{ filters: [] }, '`filters` field must have object type'],
    [{ shows: { s: null } }, '`shows.s` field must have object or string type'],
    [{ updates: 'x' }, '`updates` field must have object type'],
    [{ lists: { l: 3 } }, '`lists.l` field must have object or string type'],
    [{ language: 1 }, '`language` field must have string type'],
    [{ rewrites: {} }, '`rewrites` field must have string or array type'],
    [{ options: [] }, '`options` field must have object type'],
    [{ options: { local_seq: 'yes' } }, '`options.local_seq` field must have boolean type'],
    [{ options: { partitioned: true } }, 'partitioned option cannot be true in a non-partitioned database.'],
    [{ views: [] }, '`views` field must have object type'],
    [{ views: { lib: 'x' } }, '`views.lib` field must have object type'],
    [{ views: { v: 1 } }, '`views.v` field must have object type'],
    [{ views: { v: { map: 1 } } }, '`views.v.map` field must have string type'],
    [{ views: { v: { map: 'function(d){}', reduce: {} } } }, '`views.v.reduce` field must have string type'],
    [{ views: { v: {} } }, 'View `v` must contain map function'],
    [{ views: { v: { map: 'function(d){}', reduce: '_median' } } }, '`_median` is not a supported reduce function.'],
  ];
  for (const [body, reason] of bad) {
    isErr(await req('PUT', U + '/ddb/_design/bad', body), 400, 'invalid_design_doc', reason);
    const b = await req('POST', U + '/ddb/_bulk_docs', { docs: [Object.assign({ _id: '_design/bad' }, body)] });
    eq(b.json, [{ id: '_design/bad', error: 'invalid_design_doc', reason }], b.text);
    const n = await req('POST', U + '/ddb/_bulk_docs', { docs: [Object.assign({ _id: '_design/bad', _rev: '1-' + h32('e') }, body)], new_edits: false });
    eq(n.json, [{ id: '_design/bad', rev: '1-' + h32('e'), error: 'invalid_design_doc', reason }], n.text);
  }
  eq((await req('GET', U + '/ddb/_design/bad')).status, 404);
  // couch_mrview:validate compiles every map and JavaScript reduce: 400 compilation_error
  const uncompiled = [
    [{ views: { v: { map: 'function(doc) { emit(doc._id, 1) ' } } }, /^Compilation of the map function in the 'v' view failed: SyntaxError/],
    [{ views: { w: { map: 'function(d){}', reduce: 'function(k, v) { return ( }' } } }, /^Compilation of the reduce function in the 'w' view failed: SyntaxError/],
  ];
  for (const [body, reason] of uncompiled) {
    const r = await req('PUT', U + '/ddb/_design/bad', body);
    eq(r.status, 400, r.text);
    eq(r.json.error, 'compilation_error');
    ok(reason.test(r.json.reason), r.json.reason);
    const b = await req('POST', U + '/ddb/_bulk_docs', { docs: [Object.assign({ _id: '_design/bad' }, body)] });
    eq(b.json[0].error, 'compilation_error', b.text);
  }
  eq((await req('GET', U + '/ddb/_design/bad')).status, 404);
  // what CouchDB lets through
  await put(U + '/ddb/_design/good', {
    views: { lib: { m: 'exports.x = 1' }, v: { map: 'function(d){}', reduce: '_sum' }, w: { map: 'function(d){}', reduce: '_count_whatever' } },
    filters: { f: 'function(){}', o: {} }, rewrites: [], options: { local_seq: true }, language: 'javascript',
  });
  await put(U + '/ddb/_design/q', { language: 'query', views: { i: { map: { fields: { a: 'asc' } }, reduce: '_count' } } });
});

test('replication into a database with a validator: refused documents stay out, the rest arrive', async () => {
  await put(U + '/rsrc');
  const docs = [];
  for (let i = 0; i < 20; i++) docs.push({ _id: 'd' + String(i).padStart(2, '0'), forbid: i % 4 === 0 });
  eq((await req('POST', U + '/rsrc/_bulk_docs', { docs })).status, 201);
  await put(U + '/rdst');
  await put(U + '/rdst/_design/v', { validate_doc_update: VDU });
  const r = await req('POST', U + '/_replicate', { source: U + '/rsrc', target: U + '/rdst' });
  eq(r.status, 200, r.text);
  eq(r.json.history[0].docs_written, 15, r.text);
  eq(r.json.history[0].doc_write_failures, 5, r.text);
  const all = (await req('GET', U + '/rdst/_all_docs')).json.rows.map((x) => x.id);
  eq(all, ['_design/v', ...docs.filter((d) => !d.forbid).map((d) => d._id)]);
});

test('commit_unknown_result on the FoundationDB double: a refused write is never half-applied', async () => {
  if (!process.env.DIVAN_FDB) return; // the rocks backend has no such fault from outside
  const f = await startDivan({ env: { FDBSIM_FAULTS: 'commit_unknown_after=0.25,commit_unknown_before=0.25', FDBSIM_SEED: '7' } });
  try {
    const F = f.url + '/fdb';
    await put(F);
    await put(F + '/_design/v', { validate_doc_update: VDU });
    const docs = [];
    for (let i = 0; i < 60; i++) docs.push({ _id: 'c' + String(i).padStart(2, '0'), forbid: i % 3 === 0 });
    for (let i = 0; i < docs.length; i += 6) {
      const r = await req('POST', F + '/_bulk_docs', { docs: docs.slice(i, i + 6) });
      eq(r.status, 201, r.text);
      for (const x of r.json) {
        const want = docs.find((d) => d._id === x.id);
        if (want.forbid) eq(x, { id: x.id, error: 'forbidden', reason: 'no ' + x.id });
        else ok(x.ok && /^1-/.test(x.rev), JSON.stringify(x));
      }
    }
    for (const d of docs) {
      const r = await req('PUT', `${F}/p${d._id}`, { forbid: d.forbid });
      if (d.forbid) isErr(r, 403, 'forbidden');
      else eq(r.status, 201, r.text);
    }
    const rows = (await req('GET', F + '/_all_docs')).json.rows;
    eq(rows.length, 1 + 2 * 40);
    for (const row of rows) if (row.id[0] !== '_') ok(/^1-/.test(row.value.rev), JSON.stringify(row));
    const ch = (await req('GET', F + '/_changes')).json.results;
    eq(ch.length, rows.length);
    eq((await req('GET', F)).json.doc_count, rows.length);
  } finally {
    await f.stop();
  }
});

test('stop', async () => { await srv.stop(); });

run();
