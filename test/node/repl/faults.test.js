// faults.test.js — divan's replicator under faults: the peer dies and comes
// back, connections drop mid-response, requests answer 5xx, the target
// refuses the credentials or some writes. Each job either recovers or
// reports the error, and afterwards nothing is lost or duplicated: every
// revision tree is identical (lib/trees.js compareDbs: open_revs=all&revs=true
// for every id of _changes?style=all_docs, doc_count and doc_del_count).
//
// H (the file's divan) runs the replications; S (a divan started here on a
// fixed port) is the peer; a fault-injecting proxy (lib/proxy.js) sits in
// front of H for the proxied runs. Checked:
//   1. S, the source of a _replicator job moving 10,000 docs, is killed with
//      SIGKILL mid-replication and restarted on the same port and data dir:
//      the job retries and completes (state completed, no write failures),
//      trees identical;
//   2. one-shot POST /_replicate through the proxy (a) answering 5xx to the
//      first _bulk_get, _bulk_docs, _revs_diff and doc PUT requests, cutting
//      _revs_diff, _bulk_get and open_revs answers mid-body, dropping a
//      _bulk_docs connection before it reaches divan and cutting the answer
//      of a _bulk_docs that was written; (b) cutting the source's _changes
//      answer mid-body twice: 200 ok, no write failures, the faults were
//      really injected, trees identical, the checkpoint written;
//   3. a continuous _replicator job whose feeds are cut and whose
//      connections are all dropped keeps replicating;
//   4. the target refuses the credentials: one-shot 401 unauthorized; as a
//      _replicator doc the job goes crashing/error/failed with an error that
//      says so; once the doc has the right password it completes, trees
//      identical;
//   5. the replicating user is no member of the target db: one-shot 401/403,
//      nothing written; made a member (not a db admin) the replication
//      completes except for the design doc, which only db admins may write:
//      doc_write_failures 1, every other tree identical.
//
//   DIVAN_BIN=build/cc/divan node test/node/repl/faults.test.js
'use strict';
const fs = require('fs');
const net = require('net');
const { test, eq, ok, isErr } = require('../lib/t');
const { runFile, startDivan } = require('../lib/divan');
const { startProxy } = require('../lib/proxy');
const T = require('../lib/trees');

const { jr, replicate, waitFor, sleep, changesOf, compareDbs, buildSource, stats } = T;

let H = null, h = '';   // the replicating server (the file's), URL with credentials
let S = null, s = '';   // the peer, started here
let sPort = 0, sData = null;
let px = null;          // fault proxy in front of H
const N = 10000;

function freePort() {
  return new Promise((res, rej) => {
    const srv = net.createServer();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => { const port = srv.address().port; srv.close(() => res(port)); });
  });
}
const sched = (docid) => jr('GET', `${h}/_scheduler/docs/_replicator/${encodeURIComponent(docid)}`);
async function waitState(docid, states, ms = 60000) {
  let last = null;
  return waitFor(`_scheduler/docs/_replicator/${docid} in state ${states.join('|')}`, async () => {
    const r = await sched(docid);
    last = r;
    return r.status === 200 && states.includes(r.json.state) ? r.json : false;
  }, ms, 200).catch((e) => { e.message += `\n     last answer: ${last && last.status} ${last && last.text.slice(0, 800)}`; throw e; });
}
const withPw = (url, pw) => { const u = new URL(url); u.password = pw; return u.href.replace(/\/$/, ''); };

// start: the peer S on a fixed port, a fault proxy in front of H
test('start', async () => {
  sPort = await freePort();
  S = await startDivan({ args: ['--port', String(sPort)] });
  s = S.url;
  sData = S.dataDir;
  eq(S.port, sPort, 'S listens on the port asked for');
  px = await startProxy(new URL(h).port);
});

test(`1. the source peer is killed (SIGKILL) mid-replication of ${N.toLocaleString('en')} docs and restarted on the same port: the job completes`, async () => {
  const built = await buildSource(s, 'big', { n: N, bodyBytes: 300 });
  const put = await jr('PUT', h + '/_replicator/killed', {
    source: s + '/big', target: h + '/big', create_target: true, worker_processes: 1, worker_batch_size: 100,
  });
  eq(put.status, 201, put.text);
  // wait until the job is visibly under way, then kill the source
  const seen = await waitFor('the target to be partly filled', async () => {
    const i = await jr('GET', h + '/big');
    return i.status === 200 && i.json.doc_count >= 300 ? i.json.doc_count : false;
  }, 60000, 20);
  await S.kill9();
  S = null;
  const total = (await T.dbInfo(h, 'big')).doc_count;
  ok(total < N, `the kill came mid-replication (target had ${seen} docs when seen, ${total} after the kill; source ${N}+)`);
  await sleep(1500);
  const during = await sched('killed');
  S = await startDivan({ dataDir: sData, args: ['--port', String(sPort)] });
  eq(S.port, sPort, 'S came back on the same port');
  const st = await waitState('killed', ['completed'], 90000);
  eq(st.info && st.info.doc_write_failures, 0, 'no write failures: ' + JSON.stringify(st));
  const c = await compareDbs(s, 'big', h, 'big');
  eq(c.leaves, built.leaves);
  await T.compareAttachments(s, 'big', h, 'big', built.attIds, built.atts);
  const doc = (await jr('GET', h + '/_replicator/killed')).json;
  eq(doc._replication_state, 'completed', JSON.stringify(doc).slice(0, 400));
  if (process.env.T_VERBOSE) console.log(`     state while S was down: ${during.status} ${during.text.slice(0, 300)}`);
});

// One one-shot replication of fsrc through the proxy under rule into tdb:
// 200 ok without write failures, the faults injected, trees identical, and
// a second run finds the checkpoint (no_changes).
async function throughFaults(rule, tdb, want) {
  px.reset();
  px.rule(rule);
  const body = { source: px.url('admin', 'testpass') + '/fsrc', target: px.url('admin', 'testpass') + '/' + tdb, create_target: true };
  const r = await replicate(h, body, 110000);
  px.rule(null);
  if (r.status !== 200) console.log(`     the proxy saw (faults ${JSON.stringify(px.faults)}):\n     ${px.log.slice(0, 40).map((e) => `${e.method} ${e.path} ${e.status} ${e.action}`).join('\n     ')}`);
  eq(r.status, 200, `through the faults: ${r.status} ${r.text.slice(0, 500)}`);
  ok(r.json.ok, r.text);
  const st = stats(r.json);
  eq(st.doc_write_failures, 0, JSON.stringify(st));
  for (const [k, n] of Object.entries(want)) ok((px.faults[k] || 0) >= n, `at least ${n} ${k} faults were injected: ${JSON.stringify(px.faults)}`);
  await compareDbs(h, 'fsrc', h, tdb);
  await T.compareAttachments(h, 'fsrc', h, tdb, fsrcBuilt.attIds, fsrcBuilt.atts);
  const again = await replicate(h, body, 60000);
  eq([again.status, again.json.no_changes], [200, true], 'the checkpoint was written despite the faults: ' + again.text.slice(0, 300));
}
let fsrcBuilt = null;

test('2a. 5xx answers, dropped and cut connections on _revs_diff, _bulk_get, open_revs, _bulk_docs and doc PUTs: the one-shot completes, nothing lost or duplicated', async () => {
  fsrcBuilt = await buildSource(h, 'fsrc', { n: 500 });
  await throughFaults(({ method, kind, n }) => {
    if (kind === 'revs_diff' && n === 1) return { status: 500 };
    if (kind === 'revs_diff' && n === 2) return { cut: 10 };
    if (kind === 'bulk_get' && n <= 2) return { status: 500 };
    if (kind === 'bulk_get' && n === 3) return { cut: 2000 };
    if (kind === 'open_revs' && n === 1) return { cut: 1000 };
    if (kind === 'bulk_docs' && n <= 2) return { status: 503 };
    if (kind === 'bulk_docs' && n === 3) return { reset: true };
    if (kind === 'bulk_docs' && n === 4) return { cut: 5 }; // written, answer lost
    if (method === 'PUT' && kind === 'doc' && n === 1) return { status: 500 };
    return null;
  }, 'ftgt', { status: 5, cut: 3, reset: 1 });
});

test('2b. the source\'s _changes answer cut mid-body (twice): the one-shot resumes the feed and completes', async () => {
  if (!fsrcBuilt) fsrcBuilt = await buildSource(h, 'fsrc', { n: 500 });
  await throughFaults(({ kind, n }) => (kind === 'changes' && n <= 2 ? { cut: 300 * n } : null), 'ftgt2', { cut: 2 });
});

test('3. a continuous job whose feeds are cut and whose connections drop keeps replicating', async () => {
  eq((await jr('PUT', h + '/csrc')).status, 201);
  await T.plainDocs(h, 'csrc', 100);
  px.reset();
  px.rule(({ kind, n }) => (kind === 'changes' && n <= 3 ? { cut: 200 } : null));
  const put = await jr('PUT', h + '/_replicator/cut', { source: px.url('admin', 'testpass') + '/csrc', target: h + '/ctgt', continuous: true, create_target: true });
  eq(put.status, 201, put.text);
  await waitFor('the first 100 docs', async () => { const i = await jr('GET', h + '/ctgt'); return i.status === 200 && i.json.doc_count === 100; }, 45000, 200);
  ok(px.faults.cut >= 1, 'feeds were cut: ' + JSON.stringify(px.faults));
  await T.plainDocs(h, 'csrc', 50, { from: 100 });
  await waitFor('the next 50', async () => (await jr('GET', h + '/ctgt')).json.doc_count === 150, 45000, 200);
  px.dropAll();
  await T.mutate(h, 'csrc', { tag: 'drop' });
  await T.plainDocs(h, 'csrc', 50, { from: 200 });
  await waitFor('ctgt to equal csrc after every connection dropped', async () => { await compareDbs(h, 'csrc', h, 'ctgt'); return true; }, 45000, 500);
  px.rule(null);
  const cur = (await jr('GET', h + '/_replicator/cut')).json;
  eq((await jr('DELETE', `${h}/_replicator/cut?rev=${cur._rev}`)).status, 200);
});

test('4. the target refuses the credentials: one-shot 401; the doc job reports it; with the right password it completes', async () => {
  const bad = withPw(s, 'wrong');
  const r = await replicate(h, { source: 'fsrc', target: bad + '/fixme', create_target: true }, 60000);
  isErr(r, 401, 'unauthorized');
  ok(!r.text.includes('wrong'), 'the password is not echoed: ' + r.text);
  eq((await jr('GET', s + '/fixme')).status, 404, 'nothing created on the target');
  const put = await jr('PUT', h + '/_replicator/badauth', { source: h + '/fsrc', target: bad + '/fixme', create_target: true });
  eq(put.status, 201, put.text);
  const st = await waitState('badauth', ['crashing', 'error', 'failed'], 60000);
  const info = JSON.stringify(st.info || {});
  ok(/unauthori[sz]ed|forbidden|401|403/i.test(info), 'info.error says why: ' + JSON.stringify(st));
  ok(!JSON.stringify(st).includes('wrong'), 'no password in the state: ' + JSON.stringify(st));
  if (st.state === 'crashing') ok(st.error_count >= 1, 'error_count: ' + JSON.stringify(st));
  // fix the doc
  const cur = (await jr('GET', h + '/_replicator/badauth')).json;
  const fixed = Object.assign({}, cur, { target: s + '/fixme' });
  for (const k of Object.keys(fixed)) if (k.startsWith('_replication_')) delete fixed[k];
  const u = await jr('PUT', h + '/_replicator/badauth', fixed);
  eq(u.status, 201, `fixing the doc: ${u.status} ${u.text}`);
  await waitState('badauth', ['completed'], 60000);
  await compareDbs(h, 'fsrc', s, 'fixme');
});

test('5. a non-member is refused (401/403, nothing written); as a member all but the design doc arrive (doc_write_failures 1)', async () => {
  const u = await jr('PUT', s + '/_users/org.couchdb.user:rita', { name: 'rita', password: 'ritapass', roles: [], type: 'user' });
  eq(u.status, 201, u.text);
  eq((await jr('PUT', s + '/members')).status, 201);
  eq((await jr('PUT', s + '/members/_security', { admins: { names: [], roles: [] }, members: { names: ['someone-else'], roles: [] } })).status, 200);
  const rita = S.base.replace('http://', 'http://rita:ritapass@');
  const r = await replicate(h, { source: 'fsrc', target: rita + '/members' }, 60000);
  ok([401, 403].includes(r.status) && ['unauthorized', 'forbidden'].includes(r.json && r.json.error), `a non-member: ${r.status} ${r.text}`);
  eq((await T.dbInfo(s, 'members')).doc_count, 0, 'nothing written');
  eq((await jr('PUT', s + '/members/_security', { admins: { names: [], roles: [] }, members: { names: ['rita'], roles: [] } })).status, 200);
  const r2 = await replicate(h, { source: 'fsrc', target: rita + '/members' }, 60000);
  eq(r2.status, 200, `as a member: ${r2.status} ${r2.text.slice(0, 400)}`);
  const st = stats(r2.json);
  const ch = await changesOf(h, 'fsrc');
  eq([st.doc_write_failures, st.docs_written], [1, ch.leaves - 1], 'only the design doc refused: ' + JSON.stringify(st));
  eq((await jr('GET', s + '/members/_design/app')).status, 404, 'the design doc was not written');
  const ids = ch.ids.filter((id) => id !== '_design/app');
  await compareDbs(h, 'fsrc', s, 'members', { ids });
  const [si, ti] = await Promise.all([T.dbInfo(h, 'fsrc'), T.dbInfo(s, 'members')]);
  eq([ti.doc_count, ti.doc_del_count], [si.doc_count - 1, si.doc_del_count], 'counts: all but the design doc');
});

test('both servers healthy', async () => {
  eq((await jr('GET', h + '/')).status, 200);
  eq((await jr('GET', s + '/')).status, 200);
});

// a file that bails (budget, crash) must not leave its second server behind
process.on('exit', () => { if (S && S.proc.exitCode === null) S.proc.kill('SIGKILL'); });

runFile(__filename, {
  seconds: 170,
  started: ({ srv, base }) => { H = srv; h = base; },
  finished: async () => {
    T.resetAgent();
    if (px) await px.close();
    if (S) await S.stop().catch((e) => { console.log('FAIL peer S: ' + e.message); process.exitCode = 1; });
    if (sData) fs.rmSync(sData, { recursive: true, force: true });
  },
});
