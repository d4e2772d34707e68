// changes.test.js — black-box checks of the two streamed feeds against a
// real `divan serve`, as CouchDB 3.x answers them: /{db}/_changes (normal,
// longpoll, continuous, eventsource; since, limit, descending, style,
// include_docs, conflicts, seq_interval, heartbeat, timeout, the built-in
// filters, Last-Event-ID, every parameter error) and /_db_updates. Live
// feeds are woken by writes made on other connections, send heartbeats,
// end on their timeout, survive clients that leave, and hold no pool
// thread while they wait.
'use strict';
const http = require('http');
const t = require('../lib/t');
const { run, req, eq, ok, isErr } = t;
const { startDivan } = require('../lib/divan');

// A feed that never ends must fail its check, not hang the suite: every
// check has 8 s, the whole file 100 s.
const test = (name, fn, ms = 8000) => t.test(name, () => new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`check timed out after ${ms} ms`)), ms);
  fn().then(resolve, reject).finally(() => clearTimeout(timer));
}));
setTimeout(() => {
  console.log('FAIL the whole file took over 100 s');
  if (srv) srv.kill9();
  process.exit(1);
}, 100000).unref();

let srv, U;
const J = { 'Content-Type': 'application/json' };
const get = (path, headers) => req('GET', U + path, undefined, headers);
const post = (path, body, headers = J) => req('POST', U + path, body, headers);
const put = (path, body) => req('PUT', U + path, body, J);
const bulk = (db, docs, extra = {}) => post(`/${db}/_bulk_docs`, Object.assign({ docs }, extra));
const enc = (v) => encodeURIComponent(JSON.stringify(v));
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
const ids = (r) => r.json.results.map((x) => x.id);
const SEQ = /^[0-9a-f]+$/;

// A streamed response: collects the body as it arrives; waitFor resolves
// once the text so far satisfies a predicate, end once the server closed.
function stream(path, headers = {}, method = 'GET', body = null) {
  const u = new URL(U + path);
  const s = { text: '', status: 0, headers: null, ended: false, error: null };
  let waiters = [];
  const poke = () => { waiters = waiters.filter((w) => !w()); };
  s.done = new Promise((resolve) => {
    const h = Object.assign({}, headers);
    if (u.username) h.Authorization = t.basicAuth(u);
    if (body !== null) h['Content-Type'] = 'application/json';
    const r = http.request({ method, hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers: h, agent: false }, (res) => {
      s.status = res.statusCode;
      s.headers = res.headers;
      res.setEncoding('utf8');
      res.on('data', (c) => { s.text += c; poke(); });
      res.on('end', () => { s.ended = true; poke(); resolve(s); });
      res.on('error', (e) => { s.error = e; s.ended = true; poke(); resolve(s); });
      res.on('aborted', () => { s.ended = true; poke(); resolve(s); });
    });
    r.on('error', (e) => { s.error = e; s.ended = true; poke(); resolve(s); });
    if (body !== null) r.write(JSON.stringify(body));
    r.end();
    s.req = r;
  });
  s.waitFor = (pred, ms = 5000) => new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timed out waiting; got: ' + JSON.stringify(s.text.slice(-400)))), ms);
    const w = () => { if (pred(s.text) || s.ended) { clearTimeout(t); if (pred(s.text)) resolve(s); else reject(new Error('stream ended: ' + JSON.stringify(s.text.slice(-400)))); return true; } return false; };
    if (!w()) waiters.push(w);
  });
  s.close = () => { s.req.destroy(); };
  return s;
}
// The JSON lines of a continuous body (heartbeat blank lines dropped).
const lines = (text) => text.split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
// The events of an eventsource body.
const events = (text) => text.split('\n\n').filter((e) => e.length).map((e) => {
  const o = {};
  for (const l of e.split('\n')) { const i = l.indexOf(': '); o[l.slice(0, i)] = l.slice(i + 2); }
  return o;
});

let seqA; // ch: the seq of the first change
test('start, databases and documents', async () => {
  srv = await startDivan();
  U = srv.url;
  for (const db of ['ch', 'cf', 'lp', 'ct', 'es', 'big', 'gone', 'cfl']) eq((await req('PUT', `${U}/${db}`)).status, 201);
  eq((await bulk('ch', [{ _id: 'a', v: 1 }, { _id: 'b', v: 2 }, { _id: 'c', v: 3 }])).status, 201);
});

// ---- normal feed ---------------------------------------------------------------

test('normal: CouchDB shape {results,last_seq,pending}, rows {seq,id,changes}', async () => {
  const r = await get('/ch/_changes');
  eq(r.status, 200);
  ok(/^application\/json/.test(r.headers['content-type']), r.headers['content-type']);
  eq(Object.keys(r.json), ['results', 'last_seq', 'pending']);
  eq(ids(r), ['a', 'b', 'c']);
  for (const x of r.json.results) {
    eq(Object.keys(x), ['seq', 'id', 'changes']);
    ok(SEQ.test(x.seq), x.seq);
    ok(/^1-[0-9a-f]{32}$/.test(x.changes[0].rev));
    eq(x.changes.length, 1);
  }
  eq(r.json.last_seq, r.json.results[2].seq);
  eq(r.json.pending, 0);
  seqA = r.json.results[0].seq;
});

test('normal: bytes framed as chttpd writes them', async () => {
  const r = await get('/ch/_changes');
  ok(r.text.startsWith('{"results":[\n{"seq":'), r.text.slice(0, 30));
  ok(r.text.includes('},\r\n{"seq":'), 'rows separated by ",\\r\\n"');
  ok(/\n\],\n"last_seq":"[0-9a-f]+","pending":0\}\n$/.test(r.text), JSON.stringify(r.text.slice(-80)));
  const e = await get('/cfl/_changes');
  eq(e.text, '{"results":[\n\n],\n"last_seq":"0","pending":0}\n');
});

test('normal: sequences increase; last_seq equals the database update_seq', async () => {
  const r = await get('/ch/_changes');
  const s = r.json.results.map((x) => x.seq);
  eq([...s].sort(), s);
  eq(new Set(s).size, 3);
  eq((await get('/ch')).json.update_seq, r.json.last_seq);
});

test('an updated document moves to the end and appears once', async () => {
  const a = (await get('/ch/a')).json;
  eq((await put('/ch/a', { _rev: a._rev, v: 10 })).status, 201);
  const r = await get('/ch/_changes');
  eq(ids(r), ['b', 'c', 'a']);
  ok(r.json.results[2].changes[0].rev.startsWith('2-'));
});

test('a deleted document has "deleted":true', async () => {
  const c = (await get('/ch/c')).json;
  eq((await req('DELETE', `${U}/ch/c?rev=${c._rev}`)).status, 200);
  const r = await get('/ch/_changes');
  const row = r.json.results.find((x) => x.id === 'c');
  eq(row.deleted, true);
  eq(Object.keys(row), ['seq', 'id', 'changes', 'deleted']);
  ok(row.changes[0].rev.startsWith('2-'));
});

test('include_docs=true: the winning doc; a tombstone as {_id,_rev,_deleted}', async () => {
  const r = await get('/ch/_changes?include_docs=true');
  const a = r.json.results.find((x) => x.id === 'a');
  eq(a.doc.v, 10);
  eq(a.doc._id, 'a');
  eq(a.doc._rev, a.changes[0].rev);
  const c = r.json.results.find((x) => x.id === 'c');
  eq(c.doc, { _id: 'c', _rev: c.changes[0].rev, _deleted: true });
  eq(Object.keys(a), ['seq', 'id', 'changes', 'doc']);
  const n = await get('/ch/_changes?include_docs=yes');
  ok(!('doc' in n.json.results[0]), 'only "true" turns it on');
});

test('since=<seq>: only later rows; since=0: all; since=now: none', async () => {
  const all = await get('/ch/_changes');
  const first = all.json.results[0].seq;
  const r = await get('/ch/_changes?since=' + first);
  eq(ids(r), ids(all).slice(1));
  eq((await get('/ch/_changes?since=0')).json.results.length, 3);
  const now = await get('/ch/_changes?since=now');
  eq(now.json.results, []);
  eq(now.json.last_seq, all.json.last_seq);
  eq(now.json.pending, 0);
  const last = await get('/ch/_changes?since=' + all.json.last_seq);
  eq(last.json.results, []);
  eq(last.json.last_seq, all.json.last_seq);
});

test('since in JSON quotes (an eventsource id) is accepted', async () => {
  const all = await get('/ch/_changes');
  const r = await get('/ch/_changes?since=' + enc(all.json.results[0].seq));
  eq(ids(r), ids(all).slice(1));
});

test('limit: at most N rows, pending counts the rest, last_seq is the last row', async () => {
  const r = await get('/ch/_changes?limit=1');
  eq(r.json.results.length, 1);
  eq(r.json.pending, 2);
  eq(r.json.last_seq, r.json.results[0].seq);
  const z = await get('/ch/_changes?limit=0');
  eq(z.json.results, []);
  eq(z.json.pending, 3);
  const two = await get(`/ch/_changes?limit=2&since=${r.json.last_seq}`);
  eq(two.json.results.length, 2);
  eq(two.json.pending, 0);
});

test('descending=true: newest first; with limit=1 the newest change', async () => {
  const asc = await get('/ch/_changes');
  const d = await get('/ch/_changes?descending=true');
  eq(ids(d), ids(asc).reverse());
  const one = await get('/ch/_changes?descending=true&limit=1');
  eq(ids(one), [ids(asc)[2]]);
  eq(one.json.last_seq, asc.json.last_seq);
});

// Conflicts: two branches of one doc made with new_edits=false.
test('style=all_docs lists every leaf, winner first; main_only the winner', async () => {
  const h = (c) => c.repeat(32);
  const r = await bulk('cf', [
    { _id: 'x', _rev: '1-' + h('a'), v: 1 },
    { _id: 'x', _rev: '1-' + h('b'), v: 2 },
    { _id: 'y', _rev: '1-' + h('c'), v: 3 },
  ], { new_edits: false });
  eq(r.status, 201, r.text);
  const m = await get('/cf/_changes');
  const x = m.json.results.find((z) => z.id === 'x');
  eq(x.changes, [{ rev: '1-' + h('b') }]);
  const a = await get('/cf/_changes?style=all_docs');
  const xa = a.json.results.find((z) => z.id === 'x');
  eq(xa.changes.map((c) => c.rev).sort(), ['1-' + h('a'), '1-' + h('b')]);
  eq(xa.changes[0].rev, '1-' + h('b'));
  eq(a.json.results.find((z) => z.id === 'y').changes.length, 1);
});

test('conflicts=true with include_docs adds _conflicts', async () => {
  const r = await get('/cf/_changes?include_docs=true&conflicts=true');
  const x = r.json.results.find((z) => z.id === 'x');
  eq(x.doc._conflicts, ['1-' + 'a'.repeat(32)]);
  const n = await get('/cf/_changes?include_docs=true');
  ok(!('_conflicts' in n.json.results.find((z) => z.id === 'x').doc));
});

test('seq_interval=N: seq only on every Nth row (null otherwise), last_seq always', async () => {
  const r = await get('/ch/_changes?seq_interval=2');
  const seqs = r.json.results.map((x) => x.seq);
  eq(seqs.length, 3);
  ok(seqs.some((s) => s === null), JSON.stringify(seqs));
  ok(seqs.some((s) => typeof s === 'string'), JSON.stringify(seqs));
  ok(SEQ.test(r.json.last_seq));
  // CouchDB counts down from the limit: with limit=N, seq_interval=N the first row has it
  const l = await get('/ch/_changes?seq_interval=3&limit=3');
  eq(l.json.results.map((x) => x.seq === null), [false, true, true]);
});

test('unknown parameters are ignored; POST with no body behaves like GET', async () => {
  const g = await get('/ch/_changes?frobnicate=1&attachments=true');
  eq(g.status, 200);
  const p = await post('/ch/_changes', '', J);
  eq(p.status, 200, p.text);
  eq(ids(p), ids(g));
});

// ---- filters ---------------------------------------------------------------------

test('filter=_doc_ids (GET doc_ids=[...]): only those ids', async () => {
  const r = await get('/ch/_changes?filter=_doc_ids&doc_ids=' + enc(['b', 'a', 'zz']));
  eq(ids(r), ['b', 'a']);
  ok(SEQ.test(r.json.last_seq));
});

test('filter=_doc_ids (POST {"doc_ids":[...]})', async () => {
  const r = await post('/ch/_changes?filter=_doc_ids', { doc_ids: ['c'] });
  eq(r.status, 200, r.text);
  eq(ids(r), ['c']);
  eq(r.json.results[0].deleted, true);
});

test('filter=_doc_ids: last_seq still advances past rows filtered out', async () => {
  const all = await get('/ch/_changes');
  const r = await get('/ch/_changes?filter=_doc_ids&doc_ids=' + enc(['b']));
  eq(r.json.last_seq, all.json.last_seq);
});

test('filter=_doc_ids errors: no list, not a list of strings, broken JSON', async () => {
  const msg = '`doc_ids` filter parameter is not a list of doc ids.';
  isErr(await get('/ch/_changes?filter=_doc_ids'), 400, 'bad_request', msg);
  isErr(await get('/ch/_changes?filter=_doc_ids&doc_ids=' + enc(['a', 1])), 400, 'bad_request', msg);
  isErr(await post('/ch/_changes?filter=_doc_ids', { doc_ids: 'a' }), 400, 'bad_request', msg);
  isErr(await get('/ch/_changes?filter=_doc_ids&doc_ids=[a'), 400, 'bad_request');
});

test('filter=_design: only design documents', async () => {
  eq((await put('/cf/_design/app', { views: {} })).status, 201);
  const r = await get('/cf/_changes?filter=_design');
  eq(ids(r), ['_design/app']);
});

test('filter=_selector (POST): rows whose winning doc matches', async () => {
  eq((await bulk('ch', [{ _id: 's1', kind: 'fruit', n: 1 }, { _id: 's2', kind: 'veg', n: 2 }, { _id: 's3', kind: 'fruit', n: 3 }])).status, 201);
  const r = await post('/ch/_changes?filter=_selector', { selector: { kind: 'fruit' } });
  eq(r.status, 200, r.text);
  eq(ids(r), ['s1', 's3']);
  const g = await post('/ch/_changes?filter=_selector&include_docs=true', { selector: { n: { $gt: 1 } } });
  eq(ids(g), ['s2', 's3']);
  eq(g.json.results[0].doc.kind, 'veg');
});

test('filter=_selector: "fields" trims included docs', async () => {
  const r = await post('/ch/_changes?filter=_selector&include_docs=true', { selector: { kind: 'veg' }, fields: ['kind'] });
  eq(r.json.results.map((x) => x.doc), [{ kind: 'veg' }]);
});

test('filter=_selector errors: GET, no selector, not an object', async () => {
  isErr(await get('/ch/_changes?filter=_selector'), 400, 'bad_request', 'Selector must be specified in POST payload');
  isErr(await post('/ch/_changes?filter=_selector', {}), 400, 'bad_request', 'Selector error: expected a JSON object');
  isErr(await post('/ch/_changes?filter=_selector', { selector: [1] }), 400, 'bad_request', 'Selector error: expected a JSON object');
  isErr(await post('/ch/_changes?filter=_selector', { selector: {}, fields: 'x' }), 400, 'bad_request', 'Selector error: fields must be JSON array');
});

test('filter names: unknown builtin 400, malformed 400', async () => {
  isErr(await get('/ch/_changes?filter=_nope'), 400, 'bad_request', 'unknown builtin filter name');
  isErr(await get('/ch/_changes?filter=justname'), 400, 'bad_request', '`filter` must be of the form `designname/filtername`');
  isErr(await get('/ch/_changes?filter=a/b/c'), 400, 'bad_request', '`filter` must be of the form `designname/filtername`');
});

test('filter=ddoc/name: 404 for a missing ddoc or filter, the JS filter runs (filters.test.js)', async () => {
  isErr(await get('/cf/_changes?filter=nodoc/f'), 404, 'not_found', 'missing');
  isErr(await get('/cf/_changes?filter=app/f'), 404, 'not_found', 'missing json key: filters');
  eq((await put('/cf/_design/flt', { filters: { g: 'function(doc, req) { return true; }' } })).status, 201);
  isErr(await get('/cf/_changes?filter=flt/nope'), 404, 'not_found', 'missing json key: nope');
  const g = await get('/cf/_changes?filter=flt/g');
  eq(g.status, 200, g.text);
  ok(g.json.results.some((x) => x.id === '_design/flt'), g.text);
  isErr(await get('/cf/_changes?filter=_view'), 400, 'bad_request', '`view` filter parameter is not provided.');
});

// ---- parameter errors -------------------------------------------------------------

test('bad since → 400 bad_request (CouchDB reason)', async () => {
  isErr(await get('/ch/_changes?since=xyz'), 400, 'bad_request', "Malformed sequence supplied in 'since' parameter.");
  isErr(await get('/ch/_changes?since=12345'), 400, 'bad_request', "Malformed sequence supplied in 'since' parameter.");
  isErr(await get('/ch/_changes?feed=longpoll&since=zz'), 400, 'bad_request');
});

test('bad feed → 400 with the supported feed types', async () => {
  isErr(await get('/ch/_changes?feed=bogus'), 400, 'bad_request', 'Supported `feed` types: normal, continuous, live, longpoll, eventsource');
});

test('bad integers: limit, timeout → 400 query_parse_error', async () => {
  isErr(await get('/ch/_changes?limit=abc'), 400, 'query_parse_error');
  isErr(await get('/ch/_changes?limit=-1'), 400, 'query_parse_error');
  isErr(await get('/ch/_changes?timeout=soon'), 400, 'query_parse_error');
});

test('bad heartbeat, seq_interval, style → 400 with CouchDB reasons', async () => {
  isErr(await get('/ch/_changes?feed=continuous&heartbeat=abc'), 400, 'bad_request', 'Invalid heartbeat value. Expecting a positive integer value (in milliseconds).');
  isErr(await get('/ch/_changes?feed=continuous&heartbeat=0'), 400, 'bad_request', 'The heartbeat value should be a positive integer (in milliseconds).');
  isErr(await get('/ch/_changes?seq_interval=0'), 400, 'bad_request', 'invalid_seq_interval');
  isErr(await get('/ch/_changes?seq_interval=x'), 400, 'bad_request', 'invalid_seq_interval');
  isErr(await get('/ch/_changes?style=weird'), 400, 'query_parse_error');
});

test('missing database 404; POST needs JSON (415) and an object body (400); PUT 405', async () => {
  isErr(await get('/nosuchdb/_changes'), 404, 'not_found', 'Database does not exist.');
  isErr(await post('/ch/_changes', '{}', { 'Content-Type': 'text/plain' }), 415, 'bad_content_type');
  isErr(await post('/ch/_changes', '[1]'), 400, 'bad_request');
  isErr(await post('/ch/_changes', '{"a":'), 400, 'bad_request');
  const p = await req('PUT', U + '/ch/_changes', {}, J);
  eq(p.status, 405);
});

// ---- longpoll -----------------------------------------------------------------------

test('longpoll with changes waiting returns at once', async () => {
  const t0 = Date.now();
  const r = await get('/ch/_changes?feed=longpoll&timeout=5000');
  ok(Date.now() - t0 < 2000);
  ok(r.json.results.length >= 3);
  eq(Object.keys(r.json), ['results', 'last_seq', 'pending']);
});

test('longpoll since=now is woken by a write on another connection', async () => {
  const s = stream('/lp/_changes?feed=longpoll&since=now&timeout=10000');
  await sleep(200);
  ok(!s.ended, 'still waiting');
  const t0 = Date.now();
  eq((await put('/lp/woke', { x: 1 })).status, 201);
  await s.done;
  ok(Date.now() - t0 < 2000, 'woken promptly');
  const j = JSON.parse(s.text);
  eq(j.results.map((x) => x.id), ['woke']);
  eq(j.last_seq, j.results[0].seq);
});

test('longpoll: the timeout ends it with empty results and last_seq = since', async () => {
  const now = (await get('/lp')).json.update_seq;
  const t0 = Date.now();
  const r = await get('/lp/_changes?feed=longpoll&since=now&timeout=300');
  const dt = Date.now() - t0;
  ok(dt >= 250 && dt < 3000, 'took ' + dt);
  eq(r.json.results, []);
  eq(r.json.last_seq, now);
});

test('longpoll with a filter keeps waiting past writes that do not pass it', async () => {
  const s = stream('/lp/_changes?feed=longpoll&since=now&timeout=10000&filter=_doc_ids&doc_ids=' + enc(['want']));
  await sleep(100);
  eq((await put('/lp/other', {})).status, 201);
  await sleep(300);
  ok(!s.ended, 'a write of another doc does not end it');
  eq((await put('/lp/want', {})).status, 201);
  await s.done;
  eq(JSON.parse(s.text).results.map((x) => x.id), ['want']);
});

test('longpoll heartbeat: newlines while waiting, then the result', async () => {
  const s = stream('/lp/_changes?feed=longpoll&since=now&heartbeat=100');
  await s.waitFor((t) => (t.match(/\n/g) || []).length >= 3, 3000);
  eq((await put('/lp/hb', {})).status, 201);
  await s.done;
  eq(JSON.parse(s.text).results.map((x) => x.id), ['hb']);
});

test('longpoll waiters hold no pool thread: 40 waiting, the server still answers, one write wakes all', async () => {
  const many = [];
  for (let i = 0; i < 40; i++) many.push(stream('/lp/_changes?feed=longpoll&since=now&timeout=15000'));
  await sleep(400);
  const t0 = Date.now();
  const r = await get('/');
  eq(r.status, 200);
  ok(Date.now() - t0 < 1000, 'GET / answered while 40 feeds wait');
  ok(many.every((s) => !s.ended));
  eq((await put('/lp/all', {})).status, 201);
  const done = await Promise.all(many.map((s) => s.done));
  for (const s of done) eq(JSON.parse(s.text).results.map((x) => x.id), ['all']);
}, 15000);

// ---- continuous ---------------------------------------------------------------------

test('continuous: one row per line, then a write from another connection, then last_seq on timeout', async () => {
  eq((await bulk('ct', [{ _id: 'one' }, { _id: 'two' }])).status, 201);
  const s = stream('/ct/_changes?feed=continuous&timeout=700');
  await s.waitFor((t) => t.split('\n').length >= 3);
  eq(lines(s.text).map((x) => x.id), ['one', 'two']);
  eq((await put('/ct/three', { n: 3 })).status, 201);
  await s.waitFor((t) => t.includes('"three"'));
  await s.done;
  const ls = lines(s.text);
  eq(ls.map((x) => x.id || null), ['one', 'two', 'three', null]);
  eq(Object.keys(ls[3]), ['last_seq', 'pending']);
  eq(ls[3].last_seq, ls[2].seq);
  ok(s.text.endsWith('}\n'));
});

test('continuous with limit ends after N rows', async () => {
  const r = await get('/ct/_changes?feed=continuous&limit=2&timeout=5000');
  const ls = lines(r.text);
  eq(ls.length, 3);
  eq(ls[2].last_seq, ls[1].seq);
  eq(ls[2].pending, 1);
});

test('feed=live is continuous', async () => {
  const r = await get('/ct/_changes?feed=live&timeout=100');
  eq(lines(r.text).map((x) => x.id || 'end'), ['one', 'two', 'three', 'end']);
});

test('continuous heartbeats are newlines; a client leaving mid-feed leaves the server healthy', async () => {
  const s = stream('/ct/_changes?feed=continuous&since=now&heartbeat=100');
  await s.waitFor((t) => (t.match(/\n/g) || []).length >= 3, 3000);
  ok(/^\n+$/.test(s.text), JSON.stringify(s.text));
  s.close();
  await sleep(700);
  eq((await get('/')).status, 200);
  eq((await put('/ct/after-leave', {})).status, 201);
  eq((await get('/ct/_changes?since=now&feed=longpoll&timeout=50')).status, 200);
});

test('many clients leaving continuous feeds: no leak of the server', async () => {
  const ss = [];
  for (let i = 0; i < 20; i++) ss.push(stream('/ct/_changes?feed=continuous&heartbeat=50'));
  await Promise.all(ss.map((s) => s.waitFor((t) => t.includes('after-leave'))));
  for (const s of ss) s.close();
  await sleep(500);
  const r = await get('/ct/_changes');
  eq(r.status, 200);
  ok(r.json.results.length >= 4);
});

test('continuous + descending starts at now, forward (as CouchDB)', async () => {
  const s = stream('/ct/_changes?feed=continuous&descending=true&timeout=800');
  await sleep(150);
  eq((await put('/ct/desc-new', {})).status, 201);
  await s.done;
  eq(lines(s.text).map((x) => x.id || 'end'), ['desc-new', 'end']);
});

test('a database deleted under a continuous feed ends it cleanly', async () => {
  eq((await put('/gone/d1', {})).status, 201);
  const s = stream('/gone/_changes?feed=continuous&timeout=10000');
  await s.waitFor((t) => t.includes('"d1"'));
  eq((await req('DELETE', U + '/gone')).status, 200);
  await s.done;
  ok(!s.error, String(s.error));
  const ls = lines(s.text);
  eq(ls[0].id, 'd1');
  ok('last_seq' in ls[ls.length - 1], s.text);
  eq((await get('/')).status, 200);
});

test('continuous with include_docs and a _selector filter (POST)', async () => {
  const s = stream('/ct/_changes?feed=continuous&since=now&include_docs=true&filter=_selector&timeout=800', {}, 'POST', { selector: { keep: true } });
  await sleep(150);
  eq((await bulk('ct', [{ _id: 'k1', keep: true }, { _id: 'k2', keep: false }])).status, 201);
  await s.done;
  const ls = lines(s.text);
  eq(ls.map((x) => x.id || 'end'), ['k1', 'end']);
  eq(ls[0].doc.keep, true);
});

// ---- eventsource ---------------------------------------------------------------------

test('eventsource: text/event-stream, "data: {row}\\nid: <seq json>\\n\\n"', async () => {
  eq((await bulk('es', [{ _id: 'e1' }, { _id: 'e2' }])).status, 201);
  const s = stream('/es/_changes?feed=eventsource&timeout=300');
  await s.done;
  ok(/^text\/event-stream/.test(s.headers['content-type']), s.headers['content-type']);
  ok(/no-cache/.test(s.headers['cache-control']), s.headers['cache-control']);
  ok(s.text.startsWith('data: {"seq":'), s.text.slice(0, 40));
  const ev = events(s.text);
  eq(ev.length, 2);
  const row = JSON.parse(ev[0].data);
  eq(row.id, 'e1');
  eq(ev[0].id, JSON.stringify(row.seq));
  ok(!s.text.includes('last_seq'), 'eventsource sends no last_seq line');
});

test('eventsource heartbeat: "event: heartbeat\\ndata: \\n\\n"', async () => {
  const s = stream('/es/_changes?feed=eventsource&since=now&heartbeat=100');
  await s.waitFor((t) => t.includes('event: heartbeat\ndata: \n\n'), 3000);
  s.close();
});

test('eventsource Last-Event-ID header resumes after that seq (quoted, as sent)', async () => {
  const all = await get('/es/_changes');
  const first = all.json.results[0].seq;
  const s = stream('/es/_changes?feed=eventsource&timeout=200', { 'Last-Event-ID': JSON.stringify(first) });
  await s.done;
  eq(events(s.text).map((e) => JSON.parse(e.data).id), ['e2']);
  const q = stream('/es/_changes?feed=eventsource&timeout=200&since=0', { 'Last-Event-ID': first });
  await q.done;
  eq(events(q.text).map((e) => JSON.parse(e.data).id), ['e2']);
});

test('eventsource woken by a write', async () => {
  const s = stream('/es/_changes?feed=eventsource&since=now&timeout=5000');
  await sleep(150);
  eq((await put('/es/e3', {})).status, 201);
  await s.waitFor((t) => t.includes('"e3"'));
  s.close();
});

// ---- many rows ------------------------------------------------------------------------

test('3,000 documents: every one once, in order, across many batches (normal and continuous)', async () => {
  const docs = [];
  for (let i = 0; i < 3000; i++) docs.push({ _id: 'd' + String(i).padStart(5, '0'), i });
  for (let k = 0; k < docs.length; k += 1000) eq((await bulk('big', docs.slice(k, k + 1000))).status, 201);
  const r = await get('/big/_changes');
  eq(r.json.results.length, 3000);
  eq(new Set(ids(r)).size, 3000);
  const s = r.json.results.map((x) => x.seq);
  eq([...s].sort(), s);
  eq(r.json.pending, 0);
  const c = await get('/big/_changes?feed=continuous&timeout=50&include_docs=true');
  const ls = lines(c.text);
  eq(ls.length, 3001);
  eq(ls[2999].doc.i, docs.find((d) => d._id === ls[2999].id).i);
  const lim = await get('/big/_changes?limit=1200&since=' + r.json.results[99].seq);
  eq(lim.json.results.length, 1200);
  eq(lim.json.pending, 3000 - 100 - 1200);
  const d = await get('/big/_changes?descending=true&limit=5');
  eq(ids(d), ids(r).slice(-5).reverse());
}, 20000);

// ---- _db_updates ------------------------------------------------------------------------

// The index is filled by a background consumer (every ~100 ms): poll.
async function dbUpdatesUntil(path, pred, ms = 5000) {
  const t0 = Date.now();
  for (;;) {
    const r = await get(path);
    if (pred(r) || Date.now() - t0 > ms) return r;
    await sleep(50);
  }
}

test('_db_updates normal: {results:[{db_name,type,seq}],last_seq}', async () => {
  eq((await req('PUT', `${U}/dbu-a`)).status, 201);
  const r = await dbUpdatesUntil('/_db_updates', (x) => x.json && x.json.results.some((y) => y.db_name === 'dbu-a'));
  eq(r.status, 200);
  eq(Object.keys(r.json), ['results', 'last_seq']);
  const row = r.json.results.find((y) => y.db_name === 'dbu-a');
  eq(Object.keys(row), ['db_name', 'type', 'seq']);
  eq(row.type, 'created');
  ok(SEQ.test(row.seq));
  eq(r.json.last_seq, r.json.results[r.json.results.length - 1].seq);
  ok(r.text.startsWith('{"results":[\n') && r.text.endsWith('}\n'));
});

test('_db_updates: updated and deleted events; since resumes; limit', async () => {
  const base = (await get('/_db_updates')).json.last_seq;
  eq((await put('/dbu-a/doc', {})).status, 201);
  let r = await dbUpdatesUntil('/_db_updates?since=' + base, (x) => x.json.results.some((y) => y.db_name === 'dbu-a'));
  eq(r.json.results.map((y) => [y.db_name, y.type]), [['dbu-a', 'updated']]);
  eq((await req('DELETE', `${U}/dbu-a`)).status, 200);
  r = await dbUpdatesUntil('/_db_updates?since=' + base, (x) => x.json.results.some((y) => y.type === 'deleted'));
  eq(r.json.results.find((y) => y.db_name === 'dbu-a').type, 'deleted');
  const l = await get('/_db_updates?limit=1');
  eq(l.json.results.length, 1);
  eq(l.json.last_seq, l.json.results[0].seq);
  const all = await get('/_db_updates');
  const d = await get('/_db_updates?descending=true');
  eq(d.json.results.map((y) => y.seq), all.json.results.map((y) => y.seq).reverse());
  const now = await get('/_db_updates?since=now');
  eq(now.json.results, []);
  eq(now.json.last_seq, all.json.last_seq);
});

test('_db_updates longpoll is woken by a database creation', async () => {
  const s = stream('/_db_updates?feed=longpoll&since=now&timeout=10000');
  await sleep(200);
  ok(!s.ended);
  eq((await req('PUT', `${U}/dbu-lp`)).status, 201);
  await s.done;
  const j = JSON.parse(s.text);
  eq(j.results.map((y) => [y.db_name, y.type]), [['dbu-lp', 'created']]);
  eq(Object.keys(j), ['results', 'last_seq']);
});

test('_db_updates continuous: rows as they come, {"last_seq"} on timeout', async () => {
  const s = stream('/_db_updates?feed=continuous&since=now&timeout=1200');
  await sleep(100);
  eq((await req('PUT', `${U}/dbu-ct`)).status, 201);
  await s.waitFor((t) => t.includes('dbu-ct'));
  await s.done;
  const ls = lines(s.text);
  eq(ls[0].db_name, 'dbu-ct');
  eq(Object.keys(ls[ls.length - 1]), ['last_seq']);
});

test('_db_updates eventsource and heartbeat', async () => {
  const s = stream('/_db_updates?feed=eventsource&timeout=300');
  await s.done;
  ok(/^text\/event-stream/.test(s.headers['content-type']));
  const ev = events(s.text);
  ok(ev.length >= 3);
  eq(ev[0].id, JSON.stringify(JSON.parse(ev[0].data).seq));
  const h = stream('/_db_updates?feed=continuous&since=now&heartbeat=100');
  await h.waitFor((t) => (t.match(/\n/g) || []).length >= 2, 3000);
  h.close();
});

test('_db_updates errors: bad feed, bad integers, bad since, POST', async () => {
  isErr(await get('/_db_updates?feed=nope'), 400, 'bad_request', 'Supported `feed` types: normal, continuous, longpoll, eventsource');
  isErr(await get('/_db_updates?limit=x'), 400, 'bad_request', 'invalid_integer');
  isErr(await get('/_db_updates?timeout=-5'), 400, 'bad_request', 'invalid_integer');
  isErr(await get('/_db_updates?heartbeat=soon'), 400, 'bad_request', 'invalid_integer');
  isErr(await get('/_db_updates?since=nope'), 400, 'bad_request');
  eq((await req('POST', `${U}/_db_updates`, {}, J)).status, 405);
  eq((await get('/_db_updates?heartbeat=false&limit=1')).status, 200);
});

test('the server is healthy at the end and stops cleanly', async () => {
  eq((await get('/')).status, 200);
  await srv.stop();
});

run();
