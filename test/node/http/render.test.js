// render.test.js — black-box checks of the design-document functions that
// answer requests, against a real `divan serve`, with the examples of
// CouchDB's documentation and its own test suite (update_documents,
// show_documents, rewrite): update handlers (_update: in-place edits, a
// new document, no save, response codes, json and base64 bodies), show
// functions (_show: strings, {json}, provides/registerType negotiated by
// Accept and ?format=, ETag and 304, send/start), rewrites (_rewrite: rule
// arrays with :vars, * and query substitution, a rewrite function), _list
// before views exist, and bad input (missing function, one that does not
// compile, one that throws).
'use strict';
const { test, run, req, eq, ok, isErr } = require('../lib/t');
const { startDivan } = require('../lib/divan');

let srv, U, D;
const fn = (f) => f.toString();

const ddoc = {
  _id: '_design/app',
  updates: {
    'bump-counter': fn(function (doc, req) {
      if (!doc.counter) doc.counter = 0;
      doc.counter += 1;
      return [doc, '<h1>bumped it!</h1>'];
    }),
    hello: fn(function (doc, req) {
      if (!doc) {
        if (req.id) return [{ _id: req.id }, 'New World'];
        return [null, 'Empty World'];
      }
      doc.world = 'hello';
      doc.edited_by = req.userCtx.name;
      return [doc, 'Edited World!'];
    }),
    'get-uuid': fn(function (doc, req) { return [null, req.uuid]; }),
    'code-n-json': fn(function (doc, req) { return [null, { code: 302, json: { ok: true }, headers: { Location: '/x' } }]; }),
    binary: fn(function (doc, req) { return [null, { base64: 'aGVsbG8gd29ybGQh' }]; }),
    'from-body': fn(function (doc, req) {
      var d = JSON.parse(req.body);
      d._id = req.id || req.uuid;
      return [d, { json: { saved: d._id } }];
    }),
    empty: fn(function (doc, req) { return [{}, 'oops']; }),
    'error': fn(function (doc, req) { superFail.badCrash(); }),
    'not-found': fn(function (doc, req) { throw ['error', 'not_found', 'no such thing']; }),
  },
  shows: {
    hello: fn(function (doc, req) {
      if (doc) return 'Hello World';
      if (req.id) return 'New World';
      return 'Empty World';
    }),
    'just-name': fn(function (doc, req) {
      if (doc) return { body: 'Just ' + doc.name };
      return { body: 'No such doc', code: 404 };
    }),
    json: fn(function (doc, req) { return { json: doc }; }),
    'req-info': fn(function (doc, req) { return { json: req }; }),
    provides: fn(function (doc, req) {
      registerType('foo', 'application/foo', 'application/x-foo');
      provides('html', function () { return 'Ha ha, you said "' + doc.word + '".'; });
      provides('foo', function () { return 'foofoo'; });
    }),
    'list-api': fn(function (doc, req) { start({ 'X-Couch-Test-Header': 'Yeah' }); send('Hey'); }),
    'list-api-mix': fn(function (doc, req) { send('Hey '); return 'Dude'; }),
    'no-set-etag': fn(function (doc, req) { return { headers: { ETag: 'skipped' }, body: 'something' }; }),
    'render-error': fn(function (doc, req) { return p.foo; }),
    'throws-not-found': fn(function (doc, req) { throw ['error', 'not_found', 'nothing here']; }),
    'throws-object': fn(function (doc, req) { throw { error: 'teapot', reason: 'short and stout' }; }),
    welcome: fn(function (doc, req) { return 'Welcome ' + req.query.name; }),
    welcome2: fn(function (doc, req) { return 'Welcome ' + doc.name; }),
    welcome3: fn(function (doc, req) { return 'Welcome ' + req.query.name; }),
    broken: 'function (doc, req) { return (; }',
    'not-a-function': '42',
    path: fn(function (doc, req) { return { json: { path: req.path, requested: req.requested_path, query: req.query, method: req.method, body: req.body } }; }),
  },
  lists: {
    simple: fn(function (head, req) { return 'x'; }),
    // the documentation's example: a header, getRow until null, a tail
    rows: fn(function (head, req) {
      start({ headers: { 'Content-Type': 'text/plain', 'X-Total': String(head.total_rows) } });
      send('total ' + head.total_rows + ' offset ' + head.offset + ' q=' + req.query.q + '\n');
      var row;
      while ((row = getRow())) send(row.key + '=' + row.value + '\n');
      return 'end';
    }),
    first: fn(function (head, req) { var r = getRow(); return 'first ' + (r ? r.id : 'none'); }),
    code: fn(function (head, req) { start({ code: 203 }); send('['); var r; while ((r = getRow())) send(r.value + ','); send(']'); }),
    throws: fn(function (head, req) { getRow(); throw (['error', 'list_broke', 'on purpose']); }),
  },
  views: {
    basicView: { map: fn(function (doc) { emit(doc._id, 1); }) },
  },
  rewrites: [
    { from: 'foo', to: 'foo.txt' },
    { from: 'hello/:id', to: '_update/hello/:id', method: 'PUT' },
    { from: '/welcome', to: '_show/welcome' },
    { from: '/welcome/:name', to: '_show/welcome', query: { name: ':name' } },
    { from: '/welcome2', to: '_show/welcome', query: { name: 'user' } },
    { from: '/welcome3/:name', to: '_update/hello/:name', method: 'PUT' },
    { from: '/welcome3/:name', to: '_show/welcome2/:name', method: 'GET' },
    { from: '/welcome4/*', to: '_show/welcome3', query: { name: '*' } },
    { from: '/welcome5/*', to: '_show/*', query: { name: '*' } },
    { from: '/path/:a/*', to: '_show/path/:a', query: { fixed: 'yes' } },
    { from: '/db/*', to: '../../*' },
    { from: '/loop', to: '_rewrite/loop' },
  ],
};

test('start', async () => {
  srv = await startDivan();
  U = srv.url;
  D = U + '/rdb';
  eq((await req('PUT', D)).status, 201);
  const r = await req('PUT', D + '/_design/app', ddoc);
  eq(r.status, 201, r.text);
});

// ---- update handlers ---------------------------------------------------------------

test('an update handler bumps a counter in place and saves it (201, new rev headers)', async () => {
  eq((await req('PUT', D + '/counter', { counter: 0 })).status, 201);
  let r = await req('PUT', D + '/_design/app/_update/bump-counter/counter', '');
  eq(r.status, 201, r.text);
  eq(r.text, '<h1>bumped it!</h1>');
  eq(r.headers['content-type'], 'text/html; charset=utf-8');
  eq(r.headers['x-couch-id'], 'counter');
  const rev = r.headers['x-couch-update-newrev'];
  ok(/^2-[0-9a-f]{32}$/.test(rev), rev);
  r = await req('POST', D + '/_design/app/_update/bump-counter/counter', '');
  eq(r.status, 201);
  const doc = (await req('GET', D + '/counter')).json;
  eq(doc.counter, 2);
  eq(doc._rev.slice(0, 2), '3-');
});

test('an update handler creates a document from the id in the path, or saves nothing', async () => {
  let r = await req('POST', D + '/_design/app/_update/hello/new%20one', '');
  eq(r.status, 201, r.text);
  eq(r.text, 'New World');
  eq(r.headers['x-couch-id'], 'new%20one');
  eq((await req('GET', D + '/new%20one')).json._id, 'new one');
  r = await req('POST', D + '/_design/app/_update/hello', '');
  eq(r.status, 200, r.text);
  eq(r.text, 'Empty World');
  eq(r.headers['x-couch-update-newrev'], undefined);
  r = await req('PUT', D + '/_design/app/_update/hello/new%20one', '');
  eq(r.status, 201, r.text);
  eq(r.text, 'Edited World!');
  const doc = (await req('GET', D + '/new%20one')).json;
  eq(doc.world, 'hello');
  eq(doc.edited_by, 'admin');
});

test('update responses: code, json, headers, base64; the body the client sent', async () => {
  let r = await req('POST', D + '/_design/app/_update/code-n-json', '');
  eq(r.status, 302);
  eq(r.headers.location, '/x');
  eq(r.headers['content-type'], 'application/json');
  eq(JSON.parse(r.text), { ok: true });
  r = await req('POST', D + '/_design/app/_update/binary', '');
  eq(r.status, 200);
  eq(r.text, 'hello world!');
  eq(r.headers['content-type'], 'application/binary');
  r = await req('POST', D + '/_design/app/_update/get-uuid', '');
  ok(/^[0-9a-f]{32}$/.test(r.text), r.text);
  r = await req('PUT', D + '/_design/app/_update/from-body/fb', JSON.stringify({ a: 1 }));
  eq(r.status, 201, r.text);
  eq(JSON.parse(r.text), { saved: 'fb' });
  eq((await req('GET', D + '/fb')).json.a, 1);
});

test('update handlers: GET refused, empty id, conflicts, errors', async () => {
  isErr(await req('GET', D + '/_design/app/_update/hello'), 500, 'method_not_allowed', 'Update functions do not allow GET');
  isErr(await req('POST', D + '/_design/app/_update/empty', ''), 400, 'illegal_docid', 'Document id must not be empty');
  isErr(await req('POST', D + '/_design/app/_update/nope', ''), 404, 'not_found', 'missing json key: nope');
  isErr(await req('POST', D + '/_design/app/_update/error', ''), 500, 'render_error');
  isErr(await req('POST', D + '/_design/app/_update/not-found', ''), 404, 'not_found', 'no such thing');
  isErr(await req('POST', D + '/_design/nodoc/_update/x', ''), 404, 'not_found', 'missing');
  isErr(await req('POST', D + '/_design/app/_update', ''), 404, 'update_error', 'Invalid path.');
  // the document changed under the handler: the store's conflict
  eq((await req('PUT', D + '/c1', { v: 1 })).status, 201);
  const r = await req('PUT', D + '/_design/app/_update/from-body/c1', JSON.stringify({ v: 2 }));
  isErr(r, 409, 'conflict');
});

test('an update handler save goes through validate_doc_update', async () => {
  const vd = {
    _id: '_design/guard',
    validate_doc_update: fn(function (n, o, u) { if (n.counter > 2) throw { forbidden: 'too many bumps' }; }),
  };
  eq((await req('PUT', D + '/_design/guard', vd)).status, 201);
  const r = await req('PUT', D + '/_design/app/_update/bump-counter/counter', '');
  const del = async () => {
    const g = await req('GET', D + '/_design/guard');
    await req('DELETE', D + '/_design/guard?rev=' + g.json._rev);
  };
  if (r.status === 201) { await del(); ok(false, 'validators are not wired yet: ' + r.text); }
  isErr(r, 403, 'forbidden', 'too many bumps');
  await del();
});

// ---- show functions --------------------------------------------------------------

test('show functions: with and without a document', async () => {
  eq((await req('PUT', D + '/plankton', { word: 'plankton', name: 'Rusty' })).status, 201);
  let r = await req('GET', D + '/_design/app/_show/hello');
  eq(r.status, 200);
  eq(r.text, 'Empty World');
  eq(r.headers['content-type'], 'text/html; charset=utf-8');
  eq(r.headers.vary, 'Accept');
  ok(r.headers.etag, 'ETag');
  eq(r.headers['content-security-policy'], 'sandbox');
  eq((await req('GET', D + '/_design/app/_show/hello/nonExistent')).text, 'New World');
  eq((await req('GET', D + '/_design/app/_show/hello/plankton')).text, 'Hello World');
  eq((await req('POST', D + '/_design/app/_show/hello/plankton', '')).text, 'Hello World');
  r = await req('GET', D + '/_design/app/_show/just-name/plankton');
  eq(r.text, 'Just Rusty');
  r = await req('GET', D + '/_design/app/_show/just-name/nope');
  eq(r.status, 404);
  eq(r.text, 'No such doc');
  r = await req('GET', D + '/_design/app/_show/json/plankton');
  eq(r.headers['content-type'], 'application/json');
  const doc = JSON.parse(r.text);
  eq(doc.word, 'plankton');
  eq(doc._revisions.start, 1);
});

test('show: the request object (path, id, query, method)', async () => {
  const r = await req('GET', D + '/_design/app/_show/req-info/a%2Fb?foo=bar&key=%5B1%5D');
  eq(r.status, 200, r.text);
  const q = JSON.parse(r.text);
  eq(q.id, 'a/b');
  eq(q.method, 'GET');
  eq(q.path, ['rdb', '_design', 'app', '_show', 'req-info', 'a/b']);
  eq(q.query, { foo: 'bar', key: [1] });
  eq(q.userCtx.name, 'admin');
});

test('show: provides and registerType, by Accept and by ?format=', async () => {
  let r = await req('GET', D + '/_design/app/_show/provides/plankton', null, { Accept: 'text/html' });
  eq(r.status, 200, r.text);
  eq(r.text, 'Ha ha, you said "plankton".');
  eq(r.headers['content-type'], 'text/html; charset=utf-8');
  r = await req('GET', D + '/_design/app/_show/provides/plankton', null, { Accept: 'application/x-foo' });
  eq(r.text, 'foofoo');
  eq(r.headers['content-type'], 'application/foo');
  r = await req('GET', D + '/_design/app/_show/provides/plankton?format=foo');
  eq(r.text, 'foofoo');
  eq(r.headers['content-type'], 'application/foo');
  r = await req('GET', D + '/_design/app/_show/provides/plankton', null, { Accept: 'application/xml' });
  isErr(r, 406, 'not_acceptable');
  ok(/not supported, try one of/.test(r.json.reason), r.json.reason);
});

test('show: ETag, If-None-Match 304, and the ETag is the server\'s', async () => {
  let r = await req('GET', D + '/_design/app/_show/hello/plankton');
  const etag = r.headers.etag;
  ok(/^"[0-9A-Z]+"$/.test(etag), etag);
  r = await req('GET', D + '/_design/app/_show/hello/plankton', null, { 'If-None-Match': etag });
  eq(r.status, 304);
  r = await req('GET', D + '/_design/app/_show/hello/plankton', null, { Accept: 'text/plain' });
  ok(r.headers.etag !== etag, 'Accept is part of the ETag');
  const p = (await req('GET', D + '/plankton')).json;
  eq((await req('PUT', D + '/plankton', Object.assign(p, { name: 'Sandy' }))).status, 201);
  r = await req('GET', D + '/_design/app/_show/hello/plankton', null, { 'If-None-Match': etag });
  eq(r.status, 200, 'a new doc rev is a new ETag');
  r = await req('GET', D + '/_design/app/_show/no-set-etag');
  ok(r.headers.etag !== 'skipped', 'the function cannot set the ETag');
  eq(r.text, 'something');
});

test('show: send() and start() as list functions use them', async () => {
  let r = await req('GET', D + '/_design/app/_show/list-api');
  eq(r.status, 200, r.text);
  eq(r.text, 'Hey');
  eq(r.headers['x-couch-test-header'], 'Yeah');
  r = await req('GET', D + '/_design/app/_show/list-api-mix');
  eq(r.text, 'Hey Dude');
});

test('show errors: thrown arrays and objects, render and compilation errors, missing functions', async () => {
  isErr(await req('GET', D + '/_design/app/_show/throws-not-found'), 404, 'not_found', 'nothing here');
  isErr(await req('GET', D + '/_design/app/_show/throws-object'), 500, 'teapot', 'short and stout');
  isErr(await req('GET', D + '/_design/app/_show/render-error'), 500, 'render_error');
  isErr(await req('GET', D + '/_design/app/_show/render-error/missingdoc'), 404, 'not_found', 'document not found');
  isErr(await req('GET', D + '/_design/app/_show/broken'), 500, 'compilation_error');
  isErr(await req('GET', D + '/_design/app/_show/not-a-function'), 500, 'compilation_error');
  isErr(await req('GET', D + '/_design/app/_show/nope'), 404, 'not_found', 'missing json key: nope');
  isErr(await req('GET', D + '/_design/app/_show'), 404, 'show_error', 'Invalid path.');
  isErr(await req('GET', D + '/_design/nodoc/_show/x'), 404, 'not_found', 'missing');
  eq((await req('PUT', D + '/_design/bare', { language: 'javascript' })).status, 201);
  isErr(await req('GET', D + '/_design/bare/_show/x'), 404, 'not_found', 'missing json key: shows');
  isErr(await req('POST', D + '/_design/bare/_update/x', ''), 404, 'not_found', 'missing json key: updates');
});

// ---- _list -------------------------------------------------------------

test('_list: CouchDB\'s answers before the view would be queried', async () => {
  isErr(await req('GET', D + '/_design/app/_list/simple/noSuchView'), 404, 'not_found', 'missing_named_view');
  isErr(await req('GET', D + '/_design/app/_list/nope/basicView'), 404, 'not_found', 'missing json key: nope');
  isErr(await req('GET', D + '/_design/app/_list/simple'), 404, 'list_error', 'Invalid path.');
  isErr(await req('GET', D + '/_design/app/_list/simple/other/noSuchView'), 404, 'not_found');
  const r = await req('PUT', D + '/_design/app/_list/simple/basicView', '');
  eq(r.status, 405);
});

test('_list over a view: head, rows through getRow, send, start\'s headers and code', async () => {
  let r = await req('GET', D + '/_design/app/_list/rows/basicView?q=1&limit=2');
  eq(r.status, 200, r.text);
  eq(r.headers['content-type'], 'text/plain');
  const lines = r.text.split('\n');
  ok(/^total \d+ offset 0 q=1$/.test(lines[0]), r.text);
  eq(r.headers['x-total'], lines[0].split(' ')[1]);
  eq(lines.length, 4, r.text); /* two rows, then the tail */
  eq(lines[3], 'end');
  ok(/=1$/.test(lines[1]), r.text);
  r = await req('GET', D + '/_design/app/_list/first/basicView?descending=true');
  eq(r.status, 200);
  ok(/^first \S+$/.test(r.text), r.text);
  r = await req('GET', D + '/_design/app/_list/code/basicView?limit=3');
  eq(r.status, 203, r.text);
  eq(r.text, '[1,1,1,]');
  r = await req('POST', D + '/_design/app/_list/code/basicView', { keys: ['nope'] });
  eq(r.status, 203, r.text);
  eq(r.text, '[]');
  isErr(await req('GET', D + '/_design/app/_list/throws/basicView'), 500, 'list_broke', 'on purpose');
  isErr(await req('GET', D + '/_design/app/_list/rows/basicView?limit=x'), 400, 'query_parse_error');
});

// ---- rewrites -------------------------------------------------------------------------

test('rewrite rules: :vars into the path and the query, * and its rest', async () => {
  const rw = D + '/_design/app/_rewrite';
  eq((await req('GET', rw + '/welcome?name=user')).text, 'Welcome user');
  eq((await req('GET', rw + '/welcome/user')).text, 'Welcome user');
  eq((await req('GET', rw + '/welcome2')).text, 'Welcome user');
  let r = await req('PUT', rw + '/welcome3/test', '');
  eq(r.status, 201, r.text);
  eq(r.text, 'New World');
  eq((await req('GET', D + '/test')).status, 200);
  eq((await req('GET', rw + '/welcome3/plankton')).text, 'Welcome Sandy');
  eq((await req('GET', rw + '/welcome4/user')).text, 'Welcome user');
  eq((await req('GET', rw + '/welcome5/welcome3')).text, 'Welcome welcome3');
  r = await req('GET', rw + '/path/one/two/three?x=1');
  eq(r.status, 200, r.text);
  const p = JSON.parse(r.text);
  eq(p.path, ['rdb', '_design', 'app', '_show', 'path', 'one']);
  eq(p.requested, ['rdb', '_design', 'app', '_rewrite', 'path', 'one', 'two', 'three']);
  eq(p.query, { fixed: 'yes', x: '1', a: 'one' });
  r = await req('GET', rw + '/db/plankton');
  eq(r.status, 200, r.text);
  eq(r.json._id, 'plankton');
  r = await req('GET', rw + '/db/_all_docs?limit=1');
  eq(r.json.rows.length, 1);
});

test('rewrite rules: no match, recursion limit, too many ..', async () => {
  const rw = D + '/_design/app/_rewrite';
  isErr(await req('GET', rw + '/no/rule/here'), 404, 'not_found', 'missing');
  isErr(await req('GET', rw + '/loop'), 400, 'bad_request', 'Exceeded rewrite recursion limit');
  isErr(await req('GET', D + '/_design/bare/_rewrite/x'), 404, 'rewrite_error', 'Invalid path.');
  const bad = { _id: '_design/bad', rewrites: [{ from: 'x', to: '../../../x' }] };
  eq((await req('PUT', D + '/_design/bad', bad)).status, 201);
  isErr(await req('GET', D + '/_design/bad/_rewrite/x'), 500, 'insecure_rewrite_rule', 'too many ../.. segments');
  const noto = { _id: '_design/noto', rewrites: [{ from: 'x' }] };
  eq((await req('PUT', D + '/_design/noto', noto)).status, 201);
  isErr(await req('GET', D + '/_design/noto/_rewrite/x'), 500, 'error', 'invalid_rewrite_target');
});

test('a rewrite function', async () => {
  const js = {
    _id: '_design/js',
    shows: { echo: fn(function (doc, req) { return { json: { q: req.query, m: req.method, b: req.body, h: req.headers['X-Extra'] || null } }; }) },
    rewrites: fn(function (req) {
      var p = req.path.slice(4);
      if (p[0] === 'uuids') return '../../../_uuids';
      if (p[0] === 'echo') return { path: '_show/echo', query: { a: 'b c' }, headers: { 'X-Extra': 'yes' } };
      if (p[0] === 'post') return { path: '_show/echo', method: 'POST', body: 'new body' };
      if (p[0] === 'teapot') return { code: 418, headers: { 'Content-Type': 'text/plain' }, body: 'short' };
      if (p[0] === 'forbidden') throw { forbidden: 'go away' };
      if (p[0] === 'badcode') return { code: 99, body: 'x' };
      if (p[0] === 'self') return '_rewrite/self';
      return false;
    }),
  };
  eq((await req('PUT', D + '/_design/js', js)).status, 201);
  const rw = D + '/_design/js/_rewrite';
  let r = await req('GET', rw + '/uuids');
  eq(r.status, 200, r.text);
  eq(r.json.uuids.length, 1);
  r = await req('GET', rw + '/echo?ignored=1');
  eq(r.status, 200, r.text);
  eq(JSON.parse(r.text), { q: { a: 'b c' }, m: 'GET', b: 'undefined', h: 'yes' });
  r = await req('GET', rw + '/post');
  eq(JSON.parse(r.text), { q: {}, m: 'POST', b: 'new body', h: null });
  r = await req('GET', rw + '/teapot');
  eq(r.status, 418);
  eq(r.text, 'short');
  eq(r.headers['content-type'], 'text/plain');
  isErr(await req('GET', rw + '/forbidden'), 403, 'forbidden', 'go away');
  isErr(await req('GET', rw + '/badcode'), 500, 'rewrite_error', 'bad code');
  isErr(await req('GET', rw + '/nothing'), 404, 'rewrite_error', 'Invalid path.');
  isErr(await req('GET', rw + '/self'), 400, 'bad_request', 'Exceeded rewrite recursion limit');
});

test('stop', async () => { await srv.stop(); });

run();
