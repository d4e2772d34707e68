// conformance.test.js — the differences from CouchDB 3.4.3 that real
// clients ran into (issue 16), one group of checks per point, each answered
// as CouchDB 3.4.3 answers it:
//
//   1. _bulk_docs stores the replicator's special members and _access, as
//      PUT and POST do (couch_doc:transfer_fields: one list for every path)
//   2. a bare "1-" revision with new_edits=false (couch_doc:parse_rev)
//   3. the order of _conflicts, _deleted_conflicts, _revs_info and
//      open_revs=all (couch_doc:to_doc_info sorts leaves descending)
//   4. _local documents are not revision-checked (increment_local_doc_revs)
//   5. a malformed Authorization header is no credential (basic_name_pw)
//   6. _users is admin-only while it has its default security
//   7. an unknown path starting with "_" is 404 not_found
//   8. open_revs answers multipart/mixed unless the client asks for JSON
//   9. purge_seq and instance_start_time in GET /db are real
//
//   DIVAN_BIN=./divan node test/node/http/conformance.test.js
'use strict';
const { startDivan } = require('../lib/divan');
const { test, run, req, eq, ok, isErr } = require('../lib/t');

let srv, U, DB;
const enc = encodeURIComponent;
const h32 = (c) => c.repeat(32);
const anon = (method, p, body, headers = {}) => req(method, srv.base + p, body, headers);
const basic = (name, pw) => 'Basic ' + Buffer.from(name + ':' + pw).toString('base64');

test('setup: start divan (cheap PBKDF2 for the _users checks), create the database', async () => {
  srv = await startDivan({ config: '[chttpd_auth]\niterations = 1000\n' });
  U = srv.url;
  DB = U + '/conf';
  eq((await req('PUT', DB)).status, 201);
});

// ---- 1. special members, one list for every write path -----------------------------

const SPECIAL = {
  _replication_id: 'r-id',
  _replication_state: 'triggered',
  _replication_state_time: '2024-01-01T00:00:00Z',
  _replication_state_reason: 'because',
  _replication_stats: { docs_read: 1 },
  _access: ['alice'],
};

test('1. _bulk_docs stores _replication_* and _access members (201), as PUT and POST do', async () => {
  const b = await req('POST', DB + '/_bulk_docs', { docs: [Object.assign({ _id: 'sp-bulk', v: 1 }, SPECIAL)] });
  eq(b.status, 201, b.text);
  ok(b.json[0].ok, b.text);
  const p = await req('PUT', DB + '/sp-put', Object.assign({ v: 1 }, SPECIAL));
  eq(p.status, 201, p.text);
  const q = await req('POST', DB, Object.assign({ _id: 'sp-post', v: 1 }, SPECIAL));
  eq(q.status, 201, q.text);
  for (const id of ['sp-bulk', 'sp-put', 'sp-post']) {
    const g = await req('GET', DB + '/' + id);
    eq(g.status, 200, g.text);
    for (const [k, v] of Object.entries(SPECIAL)) eq(g.json[k], v, id + ' keeps ' + k + ': ' + g.text);
    eq(g.json.v, 1);
  }
});

test('1. the same members with new_edits=false through _bulk_docs', async () => {
  const b = await req('POST', DB + '/_bulk_docs', { new_edits: false, docs: [Object.assign({ _id: 'sp-rep', _rev: '1-' + h32('a'), v: 2 }, SPECIAL)] });
  eq(b.status, 201, b.text);
  eq(b.json, []);
  const g = await req('GET', DB + '/sp-rep');
  eq(g.json._replication_state, 'triggered', g.text);
  eq(g.json._access, ['alice'], g.text);
});

test('1. an unknown special member is still refused on every path, with its name', async () => {
  const why = 'Bad special document member: _nope';
  isErr(await req('POST', DB + '/_bulk_docs', { docs: [{ _id: 'bad1', _nope: 1 }] }), 400, 'doc_validation', why);
  isErr(await req('PUT', DB + '/bad2', { _nope: 1 }), 400, 'doc_validation', why);
  isErr(await req('POST', DB, { _id: 'bad3', _nope: 1 }), 400, 'doc_validation', why);
  for (const id of ['bad1', 'bad2', 'bad3']) eq((await req('GET', DB + '/' + id)).status, 404);
});

// ---- 2. a bare "1-" revision --------------------------------------------------------

test('2. _bulk_docs new_edits=false takes "_rev": "1-"; GET ?revs=true shows it', async () => {
  const b = await req('POST', DB + '/_bulk_docs', { new_edits: false, docs: [{ _id: 'bare', _rev: '1-', v: 1 }] });
  eq(b.status, 201, b.text);
  eq(b.json, []);
  const g = await req('GET', DB + '/bare?revs=true');
  eq(g.status, 200, g.text);
  eq(g.json._rev, '1-');
  eq(g.json._revisions, { start: 1, ids: [''] });
  eq(g.json.v, 1);
  const again = await req('POST', DB + '/_bulk_docs', { new_edits: false, docs: [{ _id: 'bare', _rev: '1-', v: 1 }] });
  eq(again.status, 201);
  const ch = await req('GET', DB + '/_changes?style=all_docs');
  eq(ch.json.results.filter((r) => r.id === 'bare').map((r) => r.changes), [[{ rev: '1-' }]], 'one changes row, rev "1-"');
});

test('2. PUT ?new_edits=false with "_rev": "1-" (201), then an interactive edit on top of it', async () => {
  const p = await req('PUT', DB + '/bare2?new_edits=false', { _rev: '1-', v: 1 });
  eq(p.status, 201, p.text);
  eq(p.json.rev, '1-');
  const e = await req('PUT', DB + '/bare2', { _rev: '1-', v: 2 });
  eq(e.status, 201, e.text);
  ok(/^2-[0-9a-f]{32}$/.test(e.json.rev), e.text);
  const g = await req('GET', DB + '/bare2?revs=true&revs_info=true');
  eq(g.json._revisions, { start: 2, ids: [e.json.rev.slice(2), ''] });
  eq(g.json._revs_info.map((x) => x.rev), [e.json.rev, '1-']);
  const d = await req('POST', DB + '/_revs_diff', { bare2: ['1-', '2-' + h32('f')] });
  eq(d.json, { bare2: { missing: ['2-' + h32('f')] } }, d.text);
  const o = await req('GET', DB + '/bare?open_revs=' + enc('["1-"]'), undefined, { Accept: 'application/json' });
  eq(o.json.map((x) => x.ok && x.ok._rev), ['1-']);
});

// ---- 3. order of conflicts and leaves -------------------------------------------

// A document with live leaves 1-a…, 1-b…, 1-c… (three roots), 2-d… on 1-a…
// and a deleted leaf 2-e… on 1-b… … built by replication.
async function conflicted(id) {
  const put = async (body) => {
    const r = await req('PUT', DB + '/' + id + '?new_edits=false', body);
    eq(r.status, body._deleted ? 200 : 201, r.text);
  };
  await put({ _revisions: { start: 1, ids: [h32('c')] }, n: 'c' });
  await put({ _revisions: { start: 2, ids: [h32('d'), h32('a')] }, n: 'd' });
  await put({ _revisions: { start: 1, ids: [h32('b')] }, n: 'b' });
  await put({ _revisions: { start: 1, ids: [h32('f')] }, n: 'f' });
  await put({ _revisions: { start: 2, ids: [h32('e'), h32('f')] }, _deleted: true });
  await put({ _revisions: { start: 1, ids: [h32('9')] }, n: '9' });
  await put({ _revisions: { start: 2, ids: [h32('8'), h32('9')] }, _deleted: true });
}
const CONFLICTS = ['1-' + h32('c'), '1-' + h32('b')];
const DELETED = ['2-' + h32('e'), '2-' + h32('8')];

test('3. _conflicts and _deleted_conflicts are descending (GET, _all_docs, _changes)', async () => {
  await conflicted('cf');
  const g = await req('GET', DB + '/cf?conflicts=true&deleted_conflicts=true');
  eq(g.json._rev, '2-' + h32('d'));
  eq(g.json._conflicts, CONFLICTS);
  eq(g.json._deleted_conflicts, DELETED);
  const a = await req('GET', DB + '/_all_docs?include_docs=true&conflicts=true&key=' + enc('"cf"'));
  eq(a.json.rows[0].doc._conflicts, CONFLICTS, a.text);
  const c = await req('GET', DB + '/_changes?include_docs=true&conflicts=true');
  eq(c.json.results.find((r) => r.id === 'cf').doc._conflicts, CONFLICTS, c.text);
});

test('3. open_revs=all lists leaves ascending by position, then id', async () => {
  const o = await req('GET', DB + '/cf?open_revs=all', undefined, { Accept: 'application/json' });
  eq(o.status, 200, o.text);
  eq(o.json.map((x) => x.ok._rev), ['1-' + h32('b'), '1-' + h32('c'), '2-' + h32('8'), '2-' + h32('d'), '2-' + h32('e')]);
});

test('3. _revs_info lists the winner\'s path newest first', async () => {
  const g = await req('GET', DB + '/cf?revs_info=true');
  eq(g.json._revs_info, [{ rev: '2-' + h32('d'), status: 'available' }, { rev: '1-' + h32('a'), status: 'missing' }]);
});

// ---- 4. _local documents are not revision-checked -------------------------------------

test('4. PUT _local without a rev replaces it (0-1 again); with "0-7" answers 0-8', async () => {
  let r = await req('PUT', DB + '/_local/ck', { a: 1 });
  eq([r.status, r.json.rev], [201, '0-1'], r.text);
  r = await req('PUT', DB + '/_local/ck', { a: 2 });
  eq([r.status, r.json.rev], [201, '0-1'], r.text);
  eq((await req('GET', DB + '/_local/ck')).json, { _id: '_local/ck', _rev: '0-1', a: 2 });
  r = await req('PUT', DB + '/_local/ck', { _rev: '0-7', a: 3 });
  eq([r.status, r.json.rev], [201, '0-8'], r.text);
  r = await req('PUT', DB + '/_local/ck?rev=0-3', { a: 4 });
  eq([r.status, r.json.rev], [201, '0-4'], r.text);
  eq((await req('GET', DB + '/_local/ck')).json, { _id: '_local/ck', _rev: '0-4', a: 4 });
  r = await req('POST', DB, { _id: '_local/ck', _rev: '0-1', a: 5 });
  eq([r.status, r.json.rev], [201, '0-2'], r.text);
  isErr(await req('PUT', DB + '/_local/ck', { _rev: '1-abc', a: 6 }), 400, 'bad_request', 'Invalid rev format');
});

test('4. _bulk_docs and DELETE of _local documents take any rev too', async () => {
  let b = await req('POST', DB + '/_bulk_docs', { docs: [{ _id: '_local/b', v: 1 }] });
  eq(b.json, [{ ok: true, id: '_local/b', rev: '0-1' }], b.text);
  b = await req('POST', DB + '/_bulk_docs', { docs: [{ _id: '_local/b', v: 2 }] });
  eq(b.json, [{ ok: true, id: '_local/b', rev: '0-1' }], b.text);
  b = await req('POST', DB + '/_bulk_docs', { docs: [{ _id: '_local/b', _rev: '0-41', v: 3 }] });
  eq(b.json, [{ ok: true, id: '_local/b', rev: '0-42' }], b.text);
  const d = await req('DELETE', DB + '/_local/b');
  eq([d.status, d.json], [200, { ok: true, id: '_local/b', rev: '0-0' }], d.text);
  eq((await req('GET', DB + '/_local/b')).status, 404);
});

test('4. divan\'s own rev-checked write (X-Divan-Local-Rev: strict) still answers 409 to a stale rev', async () => {
  let r = await req('PUT', DB + '/_local/lease', { a: 1 });
  eq(r.json.rev, '0-1');
  const strict = { 'X-Divan-Local-Rev': 'strict' };
  isErr(await req('PUT', DB + '/_local/lease', { a: 2 }, strict), 409, 'conflict');
  isErr(await req('PUT', DB + '/_local/lease', { _rev: '0-5', a: 2 }, strict), 409, 'conflict');
  r = await req('PUT', DB + '/_local/lease', { _rev: '0-1', a: 2 }, strict);
  eq([r.status, r.json.rev], [201, '0-2'], r.text);
  isErr(await req('PUT', DB + '/_local/fresh', { _rev: '0-1', a: 2 }, strict), 409, 'conflict');
  eq((await req('PUT', DB + '/_local/fresh', { a: 2 }, strict)).status, 201);
});

// ---- 5. a malformed Authorization header is no credential ---------------------------

test('5. broken Basic headers are anonymous: GET / is 200, /_all_dbs 401', async () => {
  const good = basic(srv.admin.name, srv.admin.password).slice(6);
  for (const h of ['Basic: !!!', 'Basic !!!', 'Basic ', 'Basic =', 'Basic a', 'Basic: ' + good, 'basic:' + good]) {
    const r = await anon('GET', '/', undefined, { Authorization: h });
    eq(r.status, 200, h + ': ' + r.text);
    eq(r.json.couchdb, 'Welcome');
    isErr(await anon('GET', '/_all_dbs', undefined, { Authorization: h }), 401, 'unauthorized');
  }
  eq((await anon('GET', '/_all_dbs', undefined, { Authorization: 'Basic ' + good })).status, 200);
});

// ---- 6. _users with its default security ---------------------------------------------

test('6. _users is admin-only by default: a user gets 403 for any user doc, its own included', async () => {
  const mk = (name) => req('PUT', U + '/_users/' + enc('org.couchdb.user:' + name), { name, password: name + '-pw', roles: [], type: 'user' });
  eq((await mk('ann')).status, 201);
  eq((await mk('ben')).status, 201);
  const ann = { Authorization: basic('ann', 'ann-pw') };
  const own = srv.base + '/_users/' + enc('org.couchdb.user:ann');
  const other = srv.base + '/_users/' + enc('org.couchdb.user:ben');
  const forbidden = 'You are not allowed to access this db.';
  isErr(await req('GET', own, undefined, ann), 403, 'forbidden', forbidden);
  isErr(await req('GET', other, undefined, ann), 403, 'forbidden', forbidden);
  isErr(await req('PUT', own, { name: 'ann', password: 'new', roles: [], type: 'user' }, ann), 403, 'forbidden', forbidden);
  isErr(await req('PUT', srv.base + '/_users/' + enc('org.couchdb.user:cat'), { name: 'cat', password: 'x', roles: [], type: 'user' }), 401, 'unauthorized');
  eq((await req('GET', U + '/_users/' + enc('org.couchdb.user:cat'))).status, 404, 'no signup happened');
  eq((await anon('GET', '/_session', undefined, ann)).json.userCtx.name, 'ann', 'ann still logs in');
  // opened by an admin: the _users rules decide (own doc yes, another's 404)
  const sec = { admins: { names: [], roles: [] }, members: { names: [], roles: [] } };
  eq((await req('PUT', U + '/_users/_security', sec)).status, 200);
  eq((await req('GET', own, undefined, ann)).status, 200);
  isErr(await req('GET', other, undefined, ann), 404, 'not_found');
});

// ---- 7. unknown top-level paths ----------------------------------------------------

test('7. an unknown path starting with "_" is 404 not_found; /_utils is Fauxton (a redirect to /_utils/, open to anyone)', async () => {
  const dne = 'Database does not exist.';
  isErr(await req('GET', U + '/_nope_endpoint'), 404, 'not_found', dne);
  isErr(await req('GET', U + '/_nope_endpoint/doc'), 404, 'not_found', dne);
  isErr(await req('DELETE', U + '/_nope_endpoint'), 404, 'not_found', dne);
  const r = await req('GET', U + '/_utils');
  eq(r.status, 301, r.text);
  ok(/\/_utils\/$/.test(r.headers.location), String(r.headers.location));
  const u = await anon('GET', '/_utils/');
  eq(u.status, 200, u.text.slice(0, 200));
  ok(/^text\/html/.test(u.headers['content-type']), u.headers['content-type']);
  isErr(await anon('GET', '/_nope_endpoint'), 401, 'unauthorized');
  isErr(await req('PUT', U + '/_nope_endpoint'), 400, 'illegal_database_name');
});

// ---- 8. open_revs without Accept ---------------------------------------------------

test('8. open_revs without an Accept header (or with */*) answers multipart/mixed; JSON when asked', async () => {
  await req('PUT', DB + '/or', { v: 1 });
  for (const h of [{}, { Accept: '*/*' }, { Accept: 'multipart/mixed' }]) {
    const r = await req('GET', DB + '/or?open_revs=all', undefined, h);
    eq(r.status, 200, r.text);
    ok(/^multipart\/mixed; *boundary=/.test(r.headers['content-type']), JSON.stringify(h) + ': ' + r.headers['content-type']);
    ok(r.text.includes('"_id":"or"'), r.text);
  }
  const j = await req('GET', DB + '/or?open_revs=all', undefined, { Accept: 'application/json' });
  ok(/^application\/json/.test(j.headers['content-type']), j.headers['content-type']);
  eq(j.json[0].ok.v, 1);
});

// ---- 9. purge_seq and instance_start_time ---------------------------------------------

test('9. GET /db: purge_seq counts purges; instance_start_time is the creation time in microseconds', async () => {
  const t0 = Date.now() * 1000;
  eq((await req('PUT', U + '/pdb')).status, 201);
  const t1 = Date.now() * 1000;
  let i = await req('GET', U + '/pdb');
  eq(i.json.purge_seq, '0');
  ok(/^[0-9]+$/.test(i.json.instance_start_time), i.text);
  const ist = Number(i.json.instance_start_time);
  ok(ist >= t0 - 1000 && ist <= t1 + 1000, `${ist} not in [${t0}, ${t1}]`);
  const a = await req('PUT', U + '/pdb/x', { v: 1 });
  const b = await req('PUT', U + '/pdb/y', { v: 1 });
  eq((await req('POST', U + '/pdb/_purge', { x: [a.json.rev] })).status, 201);
  eq((await req('POST', U + '/pdb/_purge', { y: [b.json.rev] })).status, 201);
  i = await req('GET', U + '/pdb');
  eq(i.json.purge_seq, '2', i.text);
  eq(i.json.instance_start_time, String(ist), 'stable');
  const d = await req('POST', U + '/_dbs_info', { keys: ['pdb'] });
  eq(d.json[0].info.purge_seq, '2', d.text);
  eq(d.json[0].info.instance_start_time, String(ist), d.text);
});

test('stop', async () => { await srv.stop(); });

run();
