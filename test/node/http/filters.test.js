// filters.test.js — `_changes?filter=ddoc/name`: a design document's
// JavaScript filter against a real `divan serve`, answered as CouchDB 3.4
// answers (docs.couchdb.org "Filter Functions" and /db/_changes; couch_changes
// configure_filter and couch_query_servers:filter_docs):
//
//   A. CouchDB's documented examples: req.query parameters, userCtx, the
//      request object's fields, a POST body (req.body, method POST)
//   B. what the function sees: deleted documents, _revisions, every leaf
//      with style=all_docs (a row lists only the revs that passed)
//   C. limit counts rows sent, not rows examined; since / last_seq resume;
//      include_docs; more rows than one batch of the query server
//   D. every feed type: normal, longpoll, continuous, eventsource
//   E. errors: missing design document, filters, function, malformed
//      names, a function that throws (its error, before any row), one that
//      does not compile; filter=_view with a view's map function
//   F. the replicator with a design-document filter and query_params, from
//      divan as the source: between two databases of one server and between
//      two servers
//
//   DIVAN_BIN=build/cc/divan node test/node/http/filters.test.js
'use strict';
const http = require('http');
const { test, req, eq, ok, isErr } = require('../lib/t');
const { runFile, startDivan } = require('../lib/divan');

let U = '';
let SRV = null;
const DB = 'filt';

const P = (db, p = '') => `${U}/${db}${p}`;
const put = async (db, id, body) => {
  const r = await req('PUT', P(db, '/' + encodeURIComponent(id)), body);
  eq(r.status, 201, r.text);
  return r.json.rev;
};
const changes = (q, db = DB) => req('GET', P(db, '/_changes?' + q));
const ids = (r) => r.json.results.map((x) => x.id);

const DDOC = {
  _id: '_design/app',
  filters: {
    // the documentation's example: req.query
    by_type: 'function(doc, req) { return doc.type === req.query.type; }',
    important: 'function(doc, req) { if (doc.priority === "high") { return true; } else { return false; } }',
    mine: 'function(doc, req) { return doc.owner === req.userCtx.name; }',
    admins: 'function(doc, req) { return req.userCtx.roles.indexOf("_admin") !== -1 && !!doc.type; }',
    body: 'function(doc, req) { var b = JSON.parse(req.body); return req.method === "POST" && b.want.indexOf(doc._id) !== -1; }',
    deleted: 'function(doc) { return !!doc._deleted; }',
    revs: 'function(doc) { return !!(doc._revisions && doc._revisions.start >= 1 && doc._revisions.ids.length >= 1); }',
    odd_rev: 'function(doc) { return doc.branch === "b"; }',
    truthy: 'function(doc) { return doc.n; }',
    everything: 'function() { return true; }',
    throws: 'function(doc) { if (doc.type === "b") throw new TypeError("no b"); return true; }',
    throws_obj: 'function(doc) { throw({error: "my_error", reason: "my reason"}); }',
    throws_nf: 'function(doc) { throw(["error", "not_found", "gone"]); }',
    broken: 'function(doc) { return (',
    req_keys: 'function(doc, req) { return doc._id === "a1" && req.id === null && req.query.startkey[0] === 1 && typeof req.uuid === "string" && req.info.db_name === "filt" && req.path[1] === "_changes" && req.peer === "127.0.0.1" && req.cookie.c === "v" && req.secObj && req.body === "undefined" && req.method === "GET"; }',
  },
  views: {
    v: { map: 'function(doc) { emit(doc._id); }' },
    b_only: { map: 'function(doc) { if (doc.type === "b") emit(doc.n, null); }' },
  },
};

test('setup', async () => {
  eq((await req('PUT', P(DB))).status, 201);
  await put(DB, '_design/app', DDOC);
  for (let i = 0; i < 6; i++) await put(DB, `a${i}`, { type: i % 2 ? 'b' : 'a', n: i, priority: i < 2 ? 'high' : 'low', owner: i === 3 ? 'admin' : 'bob' });
});

// ---- A. the documented examples and the request object ----

test('A: req.query parameters choose what passes', async () => {
  const r = await changes('filter=app/by_type&type=a');
  eq(r.status, 200, r.text);
  eq(ids(r), ['a0', 'a2', 'a4']);
  eq(ids(await changes('filter=app/by_type&type=b')), ['a1', 'a3', 'a5']);
  eq(ids(await changes('filter=app/by_type&type=zzz')), []);
  eq(ids(await changes('filter=app/important')), ['a0', 'a1']);
});

test('A: a truthy value passes (&& true || false)', async () => {
  eq(ids(await changes('filter=app/truthy')), ['a1', 'a2', 'a3', 'a4', 'a5']);
});

test('A: userCtx is the requester', async () => {
  eq(ids(await changes('filter=app/mine')), ['a3']);
  eq(ids(await changes('filter=app/admins')), ['a0', 'a1', 'a2', 'a3', 'a4', 'a5']);
});

test('A: the request object has CouchDB\'s fields', async () => {
  const r = await req('GET', P(DB, '/_changes?filter=app/req_keys&startkey=[1,2]'), null, { Cookie: 'c=v' });
  eq(r.status, 200, r.text);
  eq(ids(r), ['a1']);
});

test('A: POST _changes: the body is req.body, the method POST', async () => {
  const r = await req('POST', P(DB, '/_changes?filter=app/body'), { want: ['a2', 'a5'] });
  eq(r.status, 200, r.text);
  eq(ids(r), ['a2', 'a5']);
  // POST ?filter=… with the query parameters as with GET
  const q = await req('POST', P(DB, '/_changes?filter=app/by_type&type=b&limit=1'), {});
  eq(ids(q), ['a1']);
});

// ---- B. what the function sees ----

test('B: deleted documents are passed to the function', async () => {
  const rev = await put(DB, 'gone', { type: 'a' });
  const d = await req('DELETE', P(DB, '/gone?rev=' + rev));
  eq(d.status, 200, d.text);
  const r = await changes('filter=app/deleted');
  eq(ids(r), ['gone']);
  eq(r.json.results[0].deleted, true);
  ok(ids(await changes('filter=app/everything')).includes('gone'));
});

test('B: documents carry _revisions', async () => {
  const r = await changes('filter=app/revs');
  ok(r.json.results.length >= 7, r.text);
});

test('B: style=all_docs hands every leaf; the row lists those that passed', async () => {
  const db = 'filt_conf';
  eq((await req('PUT', P(db))).status, 201);
  await put(db, '_design/app', DDOC);
  const b = await req('POST', P(db, '/_bulk_docs'), {
    new_edits: false,
    docs: [
      { _id: 'c', _rev: '1-aaaa', branch: 'a' },
      { _id: 'c', _rev: '1-bbbb', branch: 'b' },
      { _id: 'd', _rev: '1-cccc', branch: 'a' },
    ],
  });
  eq(b.status, 201, b.text);
  // main_only: the winner (1-bbbb) only
  let r = await changes('filter=app/odd_rev', db);
  eq(r.json.results.map((x) => [x.id, x.changes.map((c) => c.rev)]), [['c', ['1-bbbb']]]);
  r = await changes('filter=app/odd_rev&style=all_docs', db);
  eq(r.json.results.map((x) => [x.id, x.changes.map((c) => c.rev)]), [['c', ['1-bbbb']]]);
  r = await changes('filter=app/everything&style=all_docs', db);
  const c = r.json.results.find((x) => x.id === 'c');
  eq(c.changes.map((x) => x.rev).sort(), ['1-aaaa', '1-bbbb']);
  // a filter that passes only the losing branch lists it alone
  await put(db, '_design/lose', { filters: { f: 'function(doc) { return doc._rev === "1-aaaa"; }' } });
  r = await changes('filter=lose/f&style=all_docs', db);
  eq(r.json.results.map((x) => [x.id, x.changes.map((y) => y.rev)]), [['c', ['1-aaaa']]]);
  eq(ids(await changes('filter=lose/f', db)), []);
  // include_docs: the winner without _revisions; _conflicts only when asked
  r = await changes('filter=app/odd_rev&include_docs=true', db);
  eq(r.json.results[0].doc, { _id: 'c', _rev: '1-bbbb', branch: 'b' });
  r = await changes('filter=app/odd_rev&include_docs=true&conflicts=true', db);
  eq(r.json.results[0].doc, { _id: 'c', _rev: '1-bbbb', branch: 'b', _conflicts: ['1-aaaa'] });
});

// ---- C. limit, since, include_docs, many batches ----

test('C: limit counts rows sent, last_seq is the last row sent', async () => {
  const all = await changes('filter=app/by_type&type=b');
  const r = await changes('filter=app/by_type&type=b&limit=2');
  eq(ids(r), ['a1', 'a3']);
  eq(r.json.last_seq, all.json.results[1].seq);
  const more = await changes('filter=app/by_type&type=b&since=' + encodeURIComponent(r.json.last_seq));
  eq(ids(more), ['a5']);
  const one = await changes('filter=app/by_type&type=b&limit=1&descending=true');
  eq(ids(one), ['a5']);
});

test('C: include_docs gives the documents', async () => {
  const r = await changes('filter=app/by_type&type=a&include_docs=true');
  eq(r.json.results.map((x) => x.doc.n), [0, 2, 4]);
  eq(Object.keys(r.json.results[0].doc).sort(), ['_id', '_rev', 'n', 'owner', 'priority', 'type']);
});

test('C: more rows than one query-server batch (and one read batch)', async () => {
  const db = 'filt_many';
  eq((await req('PUT', P(db))).status, 201);
  await put(db, '_design/app', DDOC);
  const docs = [];
  for (let i = 0; i < 1234; i++) docs.push({ _id: 'm' + String(i).padStart(5, '0'), type: i % 3 === 0 ? 'a' : 'b', n: i });
  const b = await req('POST', P(db, '/_bulk_docs'), { docs });
  eq(b.status, 201);
  const r = await changes('filter=app/by_type&type=a', db);
  eq(r.json.results.length, 412);
  eq(r.json.results[411].id, 'm01233');
  const lim = await changes('filter=app/by_type&type=a&limit=300', db);
  eq(lim.json.results.length, 300);
  eq(lim.json.results[299].id, 'm00897');
  eq(lim.json.last_seq, lim.json.results[299].seq);
  const rest = await changes('filter=app/by_type&type=a&since=' + encodeURIComponent(lim.json.last_seq), db);
  eq(rest.json.results.length, 112);
});

// ---- D. feed types ----

test('D: longpoll waits for a change that passes', async () => {
  const now = (await changes('since=now')).json.last_seq;
  const p = changes('feed=longpoll&filter=app/by_type&type=a&timeout=10000&since=' + encodeURIComponent(now));
  await new Promise((r) => setTimeout(r, 200));
  await put(DB, 'lp_b', { type: 'b' }); // does not pass: the feed keeps waiting
  await new Promise((r) => setTimeout(r, 200));
  await put(DB, 'lp_a', { type: 'a' });
  const r = await p;
  eq(r.status, 200, r.text);
  eq(ids(r), ['lp_a']);
});

test('D: longpoll with a row already there answers at once', async () => {
  const r = await changes('feed=longpoll&filter=app/by_type&type=a&timeout=5000');
  ok(ids(r).includes('a0'));
});

test('D: continuous streams only rows that pass', async () => {
  const now = (await changes('since=now')).json.last_seq;
  const p = req('GET', P(DB, '/_changes?feed=continuous&filter=app/by_type&type=a&timeout=1500&since=' + encodeURIComponent(now)));
  await new Promise((r) => setTimeout(r, 200));
  await put(DB, 'c_b', { type: 'b' });
  await put(DB, 'c_a', { type: 'a' });
  const r = await p;
  eq(r.status, 200);
  const lines = r.text.trim().split('\n').map((l) => JSON.parse(l));
  eq(lines.filter((l) => l.id).map((l) => l.id), ['c_a']);
  ok(lines[lines.length - 1].last_seq);
});

test('D: continuous from 0 with a limit', async () => {
  const r = await changes('feed=continuous&filter=app/by_type&type=b&limit=2');
  const lines = r.text.trim().split('\n').map((l) => JSON.parse(l));
  eq(lines.slice(0, 2).map((l) => l.id), ['a1', 'a3']);
  eq(lines[2].last_seq, lines[1].seq);
});

test('D: eventsource', async () => {
  const r = await changes('feed=eventsource&filter=app/by_type&type=b&timeout=300');
  eq(r.status, 200);
  ok(/text\/event-stream/.test(r.headers['content-type']));
  const data = r.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
  eq(data.map((d) => d.id).slice(0, 3), ['a1', 'a3', 'a5']);
});

test('D: POST continuous with a body filter', async () => {
  const r = await req('POST', P(DB, '/_changes?feed=continuous&filter=app/body&timeout=200'), { want: ['a4'] });
  const lines = r.text.trim().split('\n').map((l) => JSON.parse(l));
  eq(lines.filter((l) => l.id).map((l) => l.id), ['a4']);
});

// ---- E. errors ----

test('E: missing design document, filters, function', async () => {
  isErr(await changes('filter=nope/x'), 404, 'not_found', 'missing');
  await put(DB, '_design/empty', { language: 'javascript' });
  isErr(await changes('filter=empty/x'), 404, 'not_found', 'missing json key: filters');
  isErr(await changes('filter=app/nope'), 404, 'not_found', 'missing json key: nope');
  const rev = (await req('GET', P(DB, '/_design/empty'))).json._rev;
  await req('DELETE', P(DB, '/_design/empty?rev=' + rev));
  isErr(await changes('filter=empty/x'), 404, 'not_found', 'deleted');
});

test('E: malformed filter names', async () => {
  isErr(await changes('filter=app'), 400, 'bad_request', '`filter` must be of the form `designname/filtername`');
  isErr(await changes('filter=a/b/c'), 400, 'bad_request', '`filter` must be of the form `designname/filtername`');
  isErr(await changes('filter=_nope'), 400, 'bad_request', 'unknown builtin filter name');
});

test('E: a function that throws is the answer\'s error', async () => {
  const r = await changes('filter=app/throws');
  eq(r.status, 500, r.text);
  eq(r.json.error, 'TypeError');
  ok(/no b/.test(r.json.reason), r.text);
  isErr(await changes('filter=app/throws_obj'), 500, 'my_error', 'my reason');
  isErr(await changes('filter=app/throws_nf'), 404, 'not_found', 'gone');
  const c = await changes('filter=app/broken');
  eq(c.status, 500, c.text);
  eq(c.json.error, 'compilation_error');
  // the server is fine afterwards
  eq(ids(await changes('filter=app/important')), ['a0', 'a1']);
});

test('E: filter=_view passes the documents its map function emits for', async () => {
  const bs = ids(await changes('filter=_view&view=app/b_only'));
  ok(bs.includes('a1') && bs.includes('a3') && bs.includes('a5'), JSON.stringify(bs));
  eq(bs, ids(await changes('filter=app/by_type&type=b'))); /* the same documents as the filter function */
  const all = ids(await changes('filter=_view&view=app/v'));
  ok(all.includes('a0') && all.includes('a5') && all.includes('_design/app'), JSON.stringify(all));
  isErr(await changes('filter=_view'), 400, 'bad_request', '`view` filter parameter is not provided.');
  isErr(await changes('filter=_view&view=app'), 400, 'bad_request', '`view` must be of the form `designname/viewname`');
  isErr(await changes('filter=_view&view=app/nope'), 404, 'not_found', 'missing json key: nope');
  isErr(await changes('filter=_view&view=nope/v'), 404, 'not_found');
});

test('E: a non-JSON startkey in the query is 400', async () => {
  isErr(await changes('filter=app/everything&startkey=nope'), 400, 'bad_request');
});

// ---- F. the replicator ----

async function waitFor(fn, ms = 15000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('F: POST /_replicate with filter and query_params, one server', async () => {
  const r = await req('POST', `${U}/_replicate`, {
    source: `${U}/${DB}`, target: `${U}/filt_target`, create_target: true,
    filter: 'app/by_type', query_params: { type: 'b' },
  });
  eq(r.status, 200, r.text);
  ok(r.json.ok, r.text);
  const all = await req('GET', P('filt_target', '/_all_docs'));
  const got = all.json.rows.map((x) => x.id).filter((id) => !id.startsWith('_design'));
  eq(got.sort(), ['a1', 'a3', 'a5', 'c_b', 'lp_b']);
});

test('F: POST /_replicate with a filter between two servers', async () => {
  const other = await startDivan();
  try {
    const r = await req('POST', `${other.url}/_replicate`, {
      source: `${U}/${DB}`, target: `${other.url}/filt_remote`, create_target: true,
      filter: 'app/by_type', query_params: { type: 'a' },
    });
    eq(r.status, 200, r.text);
    const all = await req('GET', `${other.url}/filt_remote/_all_docs`);
    eq(all.json.rows.map((x) => x.id).sort(), ['a0', 'a2', 'a4', 'c_a', 'lp_a']);
    // continuous: a new matching document follows
    const c = await req('POST', `${other.url}/_replicate`, {
      source: `${U}/${DB}`, target: `${other.url}/filt_remote`, continuous: true,
      filter: 'app/by_type', query_params: { type: 'a' },
    });
    eq(c.status, 202, c.text);
    await put(DB, 'later_a', { type: 'a' });
    await put(DB, 'later_b', { type: 'b' });
    await waitFor(async () => (await req('GET', `${other.url}/filt_remote/later_a`)).status === 200);
    eq((await req('GET', `${other.url}/filt_remote/later_b`)).status, 404);
    const cancel = await req('POST', `${other.url}/_replicate`, {
      source: `${U}/${DB}`, target: `${other.url}/filt_remote`, continuous: true, cancel: true,
      filter: 'app/by_type', query_params: { type: 'a' },
    });
    ok(cancel.status === 200 || cancel.status === 404, cancel.text);
  } finally {
    await other.stop();
  }
});

test('divan is healthy', async () => {
  eq((await req('GET', U + '/')).status, 200);
});

runFile(__filename, {
  seconds: 150,
  started: (s) => { U = s.base; SRV = s.srv; },
});

void http;
void SRV;
