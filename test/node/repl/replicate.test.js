// replicate.test.js — POST /_replicate, divan ↔ divan, as CouchDB 3.x
// answers it (docs.couchdb.org: api/server/common "/_replicate",
// replication/protocol; couch_replicator_httpd.erl, the Elixir suite's
// replication_test.exs).
//
// Two real `divan serve`s: A (the file's server) and B (a second one), with
// a recording proxy (lib/proxy.js) in front of each. Checked:
//   - bad requests (400 bad_request), missing databases (404 db_not_found,
//     "could not open <url>" with the password masked), refused credentials
//     (401), no credentials (401), GET (405);
//   - local → local one-shot of a source with every kind of tree
//     (lib/trees.js buildSource: conflicts written with new_edits=false,
//     deleted leaves, disjoint roots, deletions, inline attachments incl. one
//     of 150 KB, a design doc, a _local doc that must stay): the answer
//     ({ok, session_id, source_last_seq, replication_id_version 4,
//     history[{…counters}]}), identical revision trees (open_revs=all&revs=true
//     for every id of _changes?style=all_docs), attachment bytes, checkpoint
//     docs _local/<repid> on both sides; a second run says no_changes; edits
//     made afterwards travel alone and the history grows;
//   - A → B over HTTP with 10,000 docs (source given as {url, headers}),
//     pulled by B through the proxies: the requests of CouchDB's protocol
//     (db info, _local checkpoint read and write on both sides, _changes
//     style=all_docs, _revs_diff, _bulk_get, _bulk_docs), identical trees;
//   - push (local source → remote target, create_target);
//   - doc_ids, filter _doc_ids, selector, filter _selector, a design-doc
//     filter (must fail: divan has none), since_seq, winning_revs_only;
//   - continuous over HTTP: 202 {_local_id: "<repid>+continuous+create_target"}, live
//     writes/updates/deletions/conflicts arrive, /_active_tasks shows it,
//     the same POST again is the same job, cancel by body and by
//     replication_id (200), cancelling again 404, nothing arrives after.
//
//   DIVAN_BIN=build/cc/divan node test/node/repl/replicate.test.js
//   T_ONLY=continuous T_VERBOSE=1 DIVAN_BIN=... node ...   (one check)
'use strict';
const { test, eq, ok, isErr, basicAuth } = require('../lib/t');
const { runFile, startDivan } = require('../lib/divan');
const { startProxy } = require('../lib/proxy');
const T = require('../lib/trees');

const { jr, replicate, stats, waitFor, sleep, changesOf, compareDbs, compareAttachments, buildSource, tree } = T;

let A = null, B = null;   // the servers (A: the file's; B: started here)
let a = '', b = '';       // their URLs with admin credentials
let pA = null, pB = null; // recording proxies in front of A and B
let AUTH = '';            // Basic header of the admin
let built = null;         // what buildSource wrote into A/src
const N_BIG = 10000;

const HEX32 = /^[0-9a-f]{32}$/;
const viaA = () => pA.url();                 // A through its proxy, no credentials
const viaAauth = () => pA.url('admin', 'testpass');
const viaBauth = () => pB.url('admin', 'testpass');

// A CouchDB one-shot answer: ok, session_id, source_last_seq, version 4, history.
function checkAnswer(r, what) {
  eq(r.status, 200, `${what}: ${r.status} ${r.text.slice(0, 500)}`);
  ok(r.json && r.json.ok === true, `${what}: ok: ${r.text.slice(0, 500)}`);
  ok(HEX32.test(r.json.session_id), `${what}: session_id ${r.json.session_id}`);
  ok(r.json.source_last_seq !== undefined, `${what}: source_last_seq: ${r.text.slice(0, 300)}`);
  eq(r.json.replication_id_version, 4, `${what}: replication_id_version`);
  ok(Array.isArray(r.json.history) && r.json.history.length >= 1, `${what}: history: ${r.text.slice(0, 300)}`);
  const h = r.json.history[0];
  for (const k of ['session_id', 'start_time', 'end_time', 'start_last_seq', 'end_last_seq', 'recorded_seq', 'missing_checked',
    'missing_found', 'docs_read', 'docs_written', 'doc_write_failures']) ok(k in h, `${what}: history[0].${k} missing: ${JSON.stringify(h)}`);
  for (const k of ['missing_checked', 'missing_found', 'docs_read', 'docs_written', 'doc_write_failures']) ok(Number.isInteger(h[k]), `${what}: history[0].${k} = ${h[k]}`);
  eq(h.session_id, r.json.session_id, `${what}: history[0].session_id is this session`);
  ok(typeof h.start_time === 'string' && typeof h.end_time === 'string', `${what}: start_time/end_time strings: ${JSON.stringify(h)}`);
  ok(!Number.isNaN(Date.parse(h.start_time)), `${what}: start_time parses as a date: ${h.start_time}`);
  eq(JSON.stringify(h.recorded_seq), JSON.stringify(r.json.source_last_seq), `${what}: recorded_seq = source_last_seq`);
  return h;
}

// The checkpoint doc of a session in db (found among _local_docs by session_id).
async function checkpoint(base, db, sessionId) {
  const r = await jr('GET', `${base}/${db}/_local_docs?include_docs=true`);
  eq(r.status, 200, `GET /${db}/_local_docs: ${r.status} ${r.text}`);
  const row = r.json.rows.find((x) => x.doc && x.doc.session_id === sessionId);
  ok(row, `${db}: a _local checkpoint doc with session_id ${sessionId}: ${r.text.slice(0, 800)}`);
  return row.doc;
}

async function checkCheckpoints(srcBase, srcDb, tgtBase, tgtDb, ans) {
  const s = await checkpoint(srcBase, srcDb, ans.session_id);
  const t = await checkpoint(tgtBase, tgtDb, ans.session_id);
  ok(/^_local\/[0-9a-f]{32}$/.test(s._id), `checkpoint id _local/<32 hex>: ${s._id}`);
  eq(t._id, s._id, 'the same checkpoint id on source and target');
  for (const d of [s, t]) {
    eq(d.replication_id_version, 4, 'checkpoint replication_id_version: ' + JSON.stringify(d).slice(0, 300));
    eq(JSON.stringify(d.source_last_seq), JSON.stringify(ans.source_last_seq), 'checkpoint source_last_seq');
    ok(Array.isArray(d.history) && d.history[0].session_id === ans.session_id, 'checkpoint history[0] is this session: ' + JSON.stringify(d.history).slice(0, 300));
    eq(d.history.length, ans.history.length, 'checkpoint history length = the answer\'s');
  }
  return s._id;
}

// start: a second divan (B), recording proxies in front of A and B
test('start', async () => {
  B = await startDivan();
  b = B.url;
  pA = await startProxy(new URL(a).port);
  pB = await startProxy(B.port);
  AUTH = basicAuth(new URL(a));
  eq((await jr('GET', viaAauth() + '/')).json.couchdb, 'Welcome');
  eq((await jr('GET', viaBauth() + '/')).json.couchdb, 'Welcome');
});

test('bad requests: 400 bad_request; GET 405; no credentials 401', async () => {
  eq((await jr('PUT', a + '/exists')).status, 201);
  await T.bulk(a, 'exists', [{ _id: 'x' }]);
  const bad = [
    [{}, 'no source, no target'],
    [{ source: 'exists' }, 'no target'],
    [{ target: 'exists' }, 'no source'],
    [{ source: 42, target: 'y' }, 'source a number'],
    [{ source: 'exists', target: ['y'] }, 'target an array'],
    [{ source: { headers: {} }, target: 'y' }, 'source object without url'],
    [{ source: 'http://', target: 'y' }, 'source URL without host'],
    [{ source: 'ftp://127.0.0.1/exists', target: 'y' }, 'source URL of another scheme'],
    [{ source: 'exists', target: 'y', continuous: 'yes' }, 'continuous a string'],
    [{ source: 'exists', target: 'y', create_target: 1 }, 'create_target a number'],
    [{ source: 'exists', target: 'y', doc_ids: 'x' }, 'doc_ids a string'],
    [{ source: 'exists', target: 'y', doc_ids: [1, 2] }, 'doc_ids of numbers'],
    [{ source: 'exists', target: 'y', selector: [1] }, 'selector an array'],
    [{ source: 'exists', target: 'y', filter: 'nonsense' }, 'filter neither built-in nor ddoc/name'],
    [{ source: 'exists', target: 'y', filter: 42 }, 'filter a number'],
    [{ source: 'exists', target: 'y', query_params: 'a=1' }, 'query_params a string'],
    [{ source: 'exists', target: 'y', worker_processes: 0 }, 'worker_processes 0'],
    [{ source: 'exists', target: 'y', worker_batch_size: -1 }, 'worker_batch_size -1'],
  ];
  for (const [body, what] of bad) {
    const r = await replicate(a, body, 20000);
    try { isErr(r, 400, 'bad_request'); } catch (e) { e.message = `${what} (${JSON.stringify(body)}): ${e.message}`; throw e; }
  }
  const nj = await jr('POST', a + '/_replicate', 'not json', { 'Content-Type': 'application/json' });
  isErr(nj, 400, 'bad_request');
  eq((await jr('GET', a + '/y')).status, 404, 'no target db was created by a refused request');
  const g = await jr('GET', a + '/_replicate');
  eq(g.status, 405, `GET /_replicate: ${g.status} ${g.text}`);
  const anon = await jr('POST', A ? A.base + '/_replicate' : a.replace(/\/\/[^@]*@/, '//') + '/_replicate', { source: 'exists', target: 'y', create_target: true });
  isErr(anon, 401, 'unauthorized');
  eq((await jr('GET', a + '/y')).status, 404);
});

test('missing databases: 404 db_not_found "could not open …", password masked; refused credentials 401', async () => {
  const cases = [
    [{ source: a + '/nope', target: a + '/nope2' }, 'remote source'],
    [{ source: 'nope_local', target: 'nope_local2' }, 'local source'],
    [{ source: 'exists', target: b + '/nope3' }, 'remote target without create_target'],
    [{ source: 'exists', target: 'nope_local3' }, 'local target without create_target'],
  ];
  for (const [body, what] of cases) {
    const r = await replicate(a, body, 30000);
    try {
      isErr(r, 404, 'db_not_found');
      ok(/^could not open /.test(r.json.reason), 'reason: ' + r.json.reason);
      ok(!r.text.includes('testpass'), 'the password is not shown: ' + r.text);
    } catch (e) { e.message = `${what}: ${e.message}`; throw e; }
  }
  const masked = await replicate(a, { source: a + '/nope', target: 'x' });
  ok(/\*\*\*\*\*/.test(masked.json.reason) || !/admin:/.test(masked.json.reason), 'the URL in the reason has its password masked: ' + masked.json.reason);
  for (const n of ['nope2', 'nope3', 'nope_local2', 'nope_local3']) {
    eq((await jr('GET', a + '/' + n)).status, 404, `${n} not created on A`);
    eq((await jr('GET', b + '/' + n)).status, 404, `${n} not created on B`);
  }
  // the peer refuses the credentials
  const wrong = new URL(b); wrong.password = 'wrong';
  eq((await jr('PUT', b + '/authsrc')).status, 201);
  const r = await replicate(a, { source: wrong.href.replace(/\/$/, '') + '/authsrc', target: 'authtgt', create_target: true }, 30000);
  isErr(r, 401, 'unauthorized');
  ok(!r.text.includes('wrong'), 'the refused password is not echoed: ' + r.text);
  const h = await replicate(a, { source: { url: B.base + '/authsrc', headers: { Authorization: 'Basic ' + Buffer.from('admin:wrong').toString('base64') } }, target: 'authtgt', create_target: true }, 30000);
  isErr(h, 401, 'unauthorized');
});

test('local → local one-shot: every tree, attachment and counter; checkpoints on both sides', async () => {
  built = await buildSource(a, 'src', { n: 600 });
  const ch = await changesOf(a, 'src');
  const r = await replicate(a, { source: 'src', target: 'tgt', create_target: true });
  const h = checkAnswer(r, 'src → tgt');
  eq(JSON.stringify(r.json.source_last_seq), JSON.stringify(ch.lastSeq), 'source_last_seq = the source\'s last_seq');
  eq(h.start_last_seq, 0, 'a first replication starts at 0');
  eq(r.json.history.length, 1);
  eq([h.missing_checked, h.missing_found, h.docs_read, h.docs_written, h.doc_write_failures],
    [built.leaves, built.leaves, built.leaves, built.leaves, 0], 'counters = the leaves of the source: ' + JSON.stringify(h));
  const c = await compareDbs(a, 'src', a, 'tgt');
  eq(c.leaves, built.leaves);
  await compareAttachments(a, 'src', a, 'tgt', built.attIds, built.atts);
  eq((await jr('GET', a + '/tgt/_local/not-replicated')).status, 404, '_local docs are not replicated');
  const d = (await jr('GET', a + '/tgt/_design/app')).json;
  eq(d.note, 'a design doc travels with an admin replication');
  await checkCheckpoints(a, 'src', a, 'tgt', r.json);
});

let firstAnswer = null;
test('the same one-shot again starts from its checkpoint: no_changes', async () => {
  const r = await replicate(a, { source: 'src', target: 'tgt' });
  eq(r.status, 200, r.text);
  ok(r.json.ok === true && r.json.no_changes === true, 'no_changes: ' + r.text.slice(0, 400));
  firstAnswer = r.json;
});

test('edits after the checkpoint travel alone; history grows; trees identical', async () => {
  const before = (await replicate(a, { source: 'src', target: 'tgt' })).json; // no_changes, same checkpoint
  const k = await T.mutate(a, 'src', { tag: 'm1' });
  const r = await replicate(a, { source: 'src', target: 'tgt' });
  const h = checkAnswer(r, 'second run');
  eq(r.json.history.length, 2, 'two sessions in the history: ' + JSON.stringify(r.json.history).slice(0, 600));
  eq(JSON.stringify(h.start_last_seq), JSON.stringify(before.source_last_seq), 'started at the checkpointed seq');
  eq([h.missing_checked, h.missing_found, h.docs_read, h.docs_written, h.doc_write_failures], [k, k, k, k, 0], 'only the edits moved: ' + JSON.stringify(h));
  await compareDbs(a, 'src', a, 'tgt');
  await checkCheckpoints(a, 'src', a, 'tgt', r.json);
  ok(firstAnswer, 'previous check ran');
});

test(`A → B over HTTP, ${N_BIG.toLocaleString('en')} docs, pulled by B through the proxies: CouchDB's protocol, identical trees`, async () => {
  const bigBuilt = await buildSource(a, 'big', { n: N_BIG });
  pA.reset(); pB.reset();
  const t0 = Date.now();
  const r = await replicate(b, {
    source: { url: viaA() + '/big', headers: { Authorization: AUTH } },
    target: viaBauth() + '/big',
    create_target: true,
  }, 110000);
  const secs = (Date.now() - t0) / 1000;
  const h = checkAnswer(r, 'A/big → B/big');
  eq([h.docs_written, h.doc_write_failures], [bigBuilt.leaves, 0], 'every leaf written: ' + JSON.stringify(h));
  if (process.env.T_VERBOSE) console.log(`     ${bigBuilt.leaves} leaves in ${secs.toFixed(1)} s (${Math.round(bigBuilt.leaves / secs)}/s); source requests ${JSON.stringify(pA.counts)}, target requests ${JSON.stringify(pB.counts)}`);
  // the source side of the protocol
  const src = pA.log, tgt = pB.log;
  const has = (log, pred, what) => ok(log.some(pred), `${what}; requests seen:\n${log.slice(0, 40).map((e) => `${e.method} ${e.path} ${e.status}`).join('\n')}`);
  has(src, (e) => e.method === 'GET' && e.kind === 'db' && /^\/big\/?(\?|$)/.test(e.path), 'GET /big on the source');
  has(src, (e) => e.kind === 'local' && e.method === 'GET', 'the source checkpoint read (GET /big/_local/<repid>)');
  has(src, (e) => e.kind === 'changes' && /style=all_docs/.test(e.path), '_changes?style=all_docs on the source');
  has(src, (e) => e.kind === 'bulk_get' && e.method === 'POST', 'POST _bulk_get on the source (divan supports it)');
  ok(src.filter((e) => e.kind === 'open_revs').length < 50, 'no per-doc open_revs fallback beyond attachment docs: ' + src.filter((e) => e.kind === 'open_revs').length);
  has(src, (e) => e.kind === 'local' && e.method === 'PUT' && e.status === 201, 'the source checkpoint written (PUT /big/_local/<repid>)');
  ok(!src.some((e) => e.kind === 'bulk_docs' || (e.method === 'PUT' && e.kind === 'doc')), 'nothing written to the source but its checkpoint');
  // the target side
  has(tgt, (e) => e.method === 'PUT' && e.kind === 'db' && e.status === 201, 'PUT /big on the target (create_target)');
  has(tgt, (e) => e.kind === 'revs_diff' && e.method === 'POST', 'POST _revs_diff on the target');
  has(tgt, (e) => e.kind === 'bulk_docs' && e.method === 'POST' && e.status === 201, 'POST _bulk_docs on the target');
  has(tgt, (e) => e.kind === 'local' && e.method === 'PUT' && e.status === 201, 'the target checkpoint written');
  ok(!tgt.some((e) => e.status >= 500), 'no 5xx from the target: ' + tgt.filter((e) => e.status >= 500).map((e) => `${e.method} ${e.path} ${e.status}`).join(', '));
  ok(h.bulk_get_docs === undefined || h.bulk_get_docs > 0, 'bulk_get_docs counts the _bulk_get docs: ' + JSON.stringify(h));
  const c = await compareDbs(a, 'big', b, 'big');
  ok(c.ids >= N_BIG, `${c.ids} ids compared`);
  await compareAttachments(a, 'big', b, 'big', bigBuilt.attIds, bigBuilt.atts);
  const id = await checkCheckpoints(viaAauth(), 'big', b, 'big', r.json);
  ok(src.some((e) => e.path.startsWith('/big/' + id)), 'the checkpoint read on the source used that id: ' + id);
  // pulled again: the checkpoint on both sides says there is nothing to do
  const again = await replicate(b, { source: { url: viaA() + '/big', headers: { Authorization: AUTH } }, target: viaBauth() + '/big' }, 60000);
  eq(again.status, 200, again.text);
  eq(again.json.no_changes, true, 'no_changes: ' + again.text.slice(0, 300));
});

test('push: local source → remote target (create_target)', async () => {
  const r = await replicate(a, { source: 'src', target: b + '/pushed', create_target: true });
  checkAnswer(r, 'push');
  await compareDbs(a, 'src', b, 'pushed');
  await compareAttachments(a, 'src', b, 'pushed', built.attIds, built.atts);
});

test('doc_ids and filter _doc_ids: exactly those docs, with their whole trees', async () => {
  const want = ['d000001', 'd000007', 'att-big', 'ünï/code +%'];
  const leaves = (await Promise.all(want.map((id) => tree(a, 'src', id)))).reduce((n, t) => n + t.length, 0);
  for (const [db, extra] of [['ids1', { doc_ids: want.concat(['does-not-exist']) }], ['ids2', { filter: '_doc_ids', doc_ids: want.concat(['does-not-exist']) }]]) {
    const r = await replicate(a, Object.assign({ source: 'src', target: db, create_target: true }, extra));
    eq(r.status, 200, `${db}: ${r.text}`);
    ok(r.json.ok, r.text);
    const s = stats(r.json);
    eq([s.docs_written, s.doc_write_failures], [leaves, 0], `${db}: the leaves of the listed docs: ${r.text.slice(0, 500)}`);
    const got = await changesOf(a, db);
    eq(got.ids, want.slice().sort(), `${db}: only the listed docs`);
    await compareDbs(a, 'src', a, db, { ids: want });
  }
});

test('selector and filter _selector: the docs whose winner matches', async () => {
  const all = await jr('GET', a + '/src/_all_docs?include_docs=true');
  const want = all.json.rows.filter((r) => r.doc.type === 'fizz' && r.doc.i >= 300).map((r) => r.id).sort();
  ok(want.length > 50, 'some docs match: ' + want.length);
  const sel = { type: 'fizz', i: { $gte: 300 } };
  for (const [db, extra] of [['sel1', { selector: sel }], ['sel2', { filter: '_selector', selector: sel }]]) {
    const r = await replicate(a, Object.assign({ source: 'src', target: db, create_target: true }, extra));
    eq(r.status, 200, `${db}: ${r.text}`);
    ok(r.json.ok, r.text);
    const got = (await jr('GET', `${a}/${db}/_all_docs`)).json.rows.map((x) => x.id).sort();
    eq(got, want, `${db}: the matching docs, no others`);
    for (const id of want.slice(0, 20)) {
      const [s, t] = await Promise.all([jr('GET', `${a}/src/${id}`), jr('GET', `${a}/${db}/${id}`)]);
      eq(t.json, s.json, `${db}/${id}: the winner`);
    }
  }
});

test('a design-doc filter runs on the source; a missing one is an error, nothing copied', async () => {
  eq((await jr('PUT', a + '/ddf')).status, 201);
  eq((await jr('PUT', a + '/ddfsrc')).status, 201);
  await T.bulk(a, 'ddfsrc', [{ _id: '_design/app', filters: { byType: 'function (doc, req) { return doc.type === req.query.type; }' } }, { _id: 'x', type: 'fizz' }, { _id: 'y' }]);
  const bad = await replicate(a, { source: 'ddfsrc', target: 'ddf', filter: 'nosuchddoc/f', query_params: { type: 'fizz' } });
  ok(bad.status >= 400 && bad.json && typeof bad.json.error === 'string' && bad.json.error !== 'db_not_found',
    `a missing filter must fail (and not because a database is missing): ${bad.status} ${bad.text.slice(0, 300)}`);
  eq((await T.dbInfo(a, 'ddf')).doc_count, 0, 'nothing copied');
  const r = await replicate(a, { source: 'ddfsrc', target: 'ddf', filter: 'app/byType', query_params: { type: 'fizz' } });
  eq(r.status, 200, r.text);
  eq((await jr('GET', `${a}/ddf/_all_docs`)).json.rows.map((x) => x.id), ['x'], 'only what the filter passes');
});

test('since_seq: only the changes after it', async () => {
  const ch = await changesOf(a, 'src');
  const k = 100;
  const since = ch.results[k - 1].seq;
  const want = ch.results.slice(k).map((c) => c.id).sort();
  const r = await replicate(a, { source: 'src', target: 'since1', create_target: true, since_seq: since });
  eq(r.status, 200, r.text);
  const s = stats(r.json);
  const leaves = ch.results.slice(k).reduce((n, c) => n + c.changes.length, 0);
  eq([s.docs_written, s.doc_write_failures], [leaves, 0], 'the leaves after since_seq: ' + r.text.slice(0, 400));
  eq((await changesOf(a, 'since1')).ids, want, 'exactly the ids changed after since_seq');
  await compareDbs(a, 'src', a, 'since1', { ids: want });
});

// The winner of a tree (leaves as from tree()): live beats deleted, then generation, then rev.
function winner(leaves) {
  return leaves.slice().sort((x, y) => {
    if (x.deleted !== y.deleted) return x.deleted ? 1 : -1;
    const gx = Number(x.rev.split('-')[0]), gy = Number(y.rev.split('-')[0]);
    if (gx !== gy) return gy - gx;
    return x.rev < y.rev ? 1 : -1;
  })[0];
}

test('winning_revs_only: one leaf per doc, the source\'s winner', async () => {
  const r = await replicate(a, { source: 'src', target: 'winners', create_target: true, winning_revs_only: true });
  checkAnswer(r, 'winning_revs_only');
  const ch = await changesOf(a, 'src');
  eq((await changesOf(a, 'winners')).ids, ch.ids, 'every id');
  let conflicted = 0;
  await T.pool(ch.ids, 16, async (id) => {
    const [s, t] = await Promise.all([tree(a, 'src', id), tree(a, 'winners', id)]);
    if (s.length > 1) conflicted++;
    eq(t.length, 1, `${id}: one leaf on the target: ${JSON.stringify(t).slice(0, 300)}`);
    eq(t[0], winner(s), `${id}: the source's winner`);
  });
  ok(conflicted > 20, 'the source had conflicts: ' + conflicted);
  const [si, ti] = await Promise.all([T.dbInfo(a, 'src'), T.dbInfo(a, 'winners')]);
  eq(ti.doc_count, si.doc_count);
});

test('continuous over HTTP: 202 +continuous, live edits arrive, _active_tasks, idempotent, cancel', async () => {
  eq((await jr('PUT', a + '/livesrc')).status, 201);
  await T.plainDocs(a, 'livesrc', 200);
  const body = { source: viaAauth() + '/livesrc', target: 'live', continuous: true, create_target: true };
  const r = await replicate(b, body, 30000);
  eq(r.status, 202, `continuous: ${r.status} ${r.text}`);
  // CouchDB appends the options that change the id: "<repid>+continuous+create_target"
  ok(r.json.ok === true && /^[0-9a-f]{32}\+continuous(\+create_target)?$/.test(r.json._local_id), 'answer: ' + r.text);
  const localId = r.json._local_id;
  await waitFor('200 docs on B/live', async () => (await jr('GET', b + '/live')).json.doc_count === 200, 30000);
  // live: new docs, updates, deletions, a conflict
  await T.plainDocs(a, 'livesrc', 50, { from: 1000 });
  const k = await T.mutate(a, 'livesrc', { tag: 'live' });
  ok(k > 0);
  await waitFor('B/live to equal A/livesrc', async () => { await compareDbs(a, 'livesrc', b, 'live'); return true; }, 30000, 500);
  // _active_tasks on B
  const tasks = await jr('GET', b + '/_active_tasks');
  eq(tasks.status, 200, tasks.text);
  const mine = tasks.json.filter((t) => t.type === 'replication' && t.replication_id === localId);
  eq(mine.length, 1, 'one replication task with replication_id = _local_id: ' + tasks.text.slice(0, 800));
  const t = mine[0];
  eq(t.continuous, true, 'task.continuous');
  for (const f of ['docs_read', 'docs_written', 'doc_write_failures', 'missing_revisions_found', 'revisions_checked', 'changes_pending', 'started_on', 'updated_on']) {
    ok(typeof t[f] === 'number' || (f === 'changes_pending' && t[f] === null), `task.${f}: ${JSON.stringify(t)}`);
  }
  ok(t.docs_written >= 250, 'docs_written counts what was written: ' + JSON.stringify(t));
  ok(typeof t.source === 'string' && t.source.includes('/livesrc') && !t.source.includes('testpass'), 'task.source, password masked: ' + t.source);
  ok(t.checkpointed_source_seq !== undefined && t.source_seq !== undefined, 'task seqs: ' + JSON.stringify(t));
  // the same POST again is the same job
  const r2 = await replicate(b, body, 30000);
  eq([r2.status, r2.json._local_id], [202, localId], 'the same job: ' + r2.text);
  const tasks2 = (await jr('GET', b + '/_active_tasks')).json.filter((x) => x.replication_id === localId);
  eq(tasks2.length, 1, 'still one task');
  // cancel with the same body
  const c = await replicate(b, Object.assign({}, body, { cancel: true }), 30000);
  eq(c.status, 200, `cancel: ${c.status} ${c.text}`);
  eq([c.json.ok, c.json._local_id], [true, localId], 'cancel answer: ' + c.text);
  await waitFor('the task to leave _active_tasks', async () => !(await jr('GET', b + '/_active_tasks')).json.some((x) => x.replication_id === localId), 10000);
  const after = await jr('PUT', a + '/livesrc/after-cancel', { late: true });
  eq(after.status, 201);
  await sleep(2000);
  eq((await jr('GET', b + '/live/after-cancel')).status, 404, 'nothing arrives after cancel');
  const again = await replicate(b, Object.assign({}, body, { cancel: true }), 30000);
  eq(again.status, 404, `cancelling again: ${again.status} ${again.text}`);
  ok(again.json && /not.found/.test(again.json.error), 'error not_found: ' + again.text);
  // another continuous job, cancelled by replication_id
  const r3 = await replicate(b, { source: viaAauth() + '/livesrc', target: 'live2', continuous: true, create_target: true }, 30000);
  eq(r3.status, 202, r3.text);
  await waitFor('live2 filled', async () => (await jr('GET', b + '/live2')).json.doc_count >= 250, 30000);
  const c3 = await replicate(b, { replication_id: r3.json._local_id, cancel: true }, 30000);
  eq(c3.status, 200, `cancel by replication_id: ${c3.status} ${c3.text}`);
  eq(c3.json._local_id, r3.json._local_id);
  await waitFor('live2 task gone', async () => !(await jr('GET', b + '/_active_tasks')).json.some((x) => x.replication_id === r3.json._local_id), 10000);
  const c4 = await replicate(b, { replication_id: 'ffffffffffffffffffffffffffffffff+continuous', cancel: true }, 30000);
  eq(c4.status, 404, `cancelling an unknown id: ${c4.status} ${c4.text}`);
});

test('both servers healthy', async () => {
  for (const u of [a, b]) eq((await jr('GET', u + '/')).status, 200);
  ok(B.proc.exitCode === null, 'B alive');
});

// a file that bails (budget, crash) must not leave its second server behind
process.on('exit', () => { if (B && B.proc.exitCode === null) B.proc.kill('SIGKILL'); });

runFile(__filename, {
  seconds: 200,
  started: ({ srv, base }) => { A = srv; a = base; },
  finished: async () => {
    T.resetAgent();
    if (pA) await pA.close();
    if (pB) await pB.close();
    if (B) {
      await B.stop().catch((e) => { console.log('FAIL second divan (B): ' + e.message); process.exitCode = 1; });
      require('fs').rmSync(B.dataDir, { recursive: true, force: true });
    }
  },
});
