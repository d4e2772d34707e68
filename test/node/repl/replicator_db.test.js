// replicator_db.test.js — the _replicator database and the scheduler, as
// CouchDB 3.x has them (docs.couchdb.org replication/replicator.rst,
// api/server/common.rst "_scheduler/jobs", "_scheduler/docs",
// "_active_tasks"; couch_replicator_httpd.erl).
//
// P (the file's divan) is the peer holding the source and target
// databases; R (a divan started here) runs the replications from its
// _replicator database; a recording proxy (lib/proxy.js) sits in front of P
// for the continuous job's source. Checked:
//   - _replicator exists on a fresh server;
//   - /_scheduler/jobs, /_scheduler/docs and /_active_tasks: 401 without
//     credentials and for a non-admin user;
//   - a one-shot doc: /_scheduler/docs/_replicator/<id> goes to completed
//     (database, doc_id, state, source/target with the password as *****,
//     start_time, last_updated, info with the counters, error_count 0), the
//     doc gets _replication_state "completed", _replication_state_time and
//     _replication_stats; the trees are identical;
//   - a continuous doc: running; /_scheduler/jobs ({total_rows, offset,
//     jobs:[{id "<repid>+continuous", database, doc_id, source, target,
//     user, start_time, history[{timestamp,type}], info, node, pid}]}),
//     /_scheduler/jobs/<id>, /_active_tasks (type replication, counters);
//     live writes arrive;
//   - kill -9 R while the job runs, write to the source while R is down,
//     restart R on its data dir: the job comes back by itself, resumes from
//     its checkpoint (its first _changes after the restart has since ≠ 0),
//     and everything arrives; the completed one-shot doc stays completed;
//   - deleting the doc stops the job: gone from /_scheduler/jobs and
//     /_active_tasks, nothing arrives afterwards, /_scheduler/docs 404;
//   - a doc that is no replication (no target) is refused or fails.
//
//   DIVAN_BIN=build/cc/divan node test/node/repl/replicator_db.test.js
'use strict';
const fs = require('fs');
const { test, eq, ok, isErr } = require('../lib/t');
const { runFile, startDivan } = require('../lib/divan');
const { startProxy } = require('../lib/proxy');
const T = require('../lib/trees');

const { jr, waitFor, sleep, changesOf, compareDbs, buildSource } = T;

let p = '';             // the peer P (the file's server): its URL with credentials
let R = null, r = '';   // the replicator host and its URL with credentials
let dataR = null;       // R's data dir, kept across the restart
let pP = null;          // proxy in front of P
let built = null;
let jobId = null;       // the continuous job's id

const ISO = (s) => typeof s === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(s) && !Number.isNaN(Date.parse(s));
const sched = (docid) => jr('GET', `${r}/_scheduler/docs/_replicator/${encodeURIComponent(docid)}`);
async function waitState(docid, states, ms = 60000) {
  return waitFor(`_scheduler/docs/_replicator/${docid} in state ${states.join('|')}`, async () => {
    const s = await sched(docid);
    return s.status === 200 && states.includes(s.json.state) ? s.json : false;
  }, ms, 200).catch(async (e) => {
    const s = await sched(docid);
    e.message += `\n     last /_scheduler/docs answer: ${s.status} ${s.text.slice(0, 800)}`;
    throw e;
  });
}
const masked = (s, db) => typeof s === 'string' && s.includes('/' + db) && !s.includes('testpass');

// start: the replicator host R and a proxy in front of the peer P
test('start', async () => {
  R = await startDivan();
  r = R.url;
  dataR = R.dataDir;
  pP = await startProxy(new URL(p).port);
  built = await buildSource(p, 'src', { n: 300 });
});

test('_replicator exists on a fresh server', async () => {
  for (const u of [r, p]) {
    const g = await jr('GET', u + '/_replicator');
    eq(g.status, 200, `GET /_replicator: ${g.status} ${g.text}`);
    eq(g.json.db_name, '_replicator');
  }
});

test('_scheduler/jobs, _scheduler/docs, _active_tasks: server admins only (401)', async () => {
  const u = await jr('PUT', r + '/_users/org.couchdb.user:joe', { name: 'joe', password: 'joepass', roles: [], type: 'user' });
  eq(u.status, 201, u.text);
  const anon = R.base, joe = R.base.replace('http://', 'http://joe:joepass@');
  for (const path of ['/_scheduler/jobs', '/_scheduler/docs', '/_scheduler/docs/_replicator', '/_active_tasks']) {
    isErr(await jr('GET', anon + path), 401, 'unauthorized');
    isErr(await jr('GET', joe + path), 401, 'unauthorized');
    eq((await jr('GET', r + path)).status, 200, `${path} as admin`);
  }
  const j = (await jr('GET', r + '/_scheduler/jobs')).json;
  eq([j.total_rows, j.offset, j.jobs], [0, 0, []], 'no jobs yet: ' + JSON.stringify(j));
});

test('a one-shot doc: completed in /_scheduler/docs, state written to the doc, identical trees', async () => {
  const put = await jr('PUT', r + '/_replicator/once', { source: p + '/src', target: p + '/once-tgt', create_target: true });
  eq(put.status, 201, `PUT /_replicator/once: ${put.status} ${put.text}`);
  const s = await waitState('once', ['completed'], 60000);
  eq([s.database, s.doc_id, s.state, s.error_count], ['_replicator', 'once', 'completed', 0], JSON.stringify(s));
  ok(masked(s.source, 'src') && s.source.includes('*****'), 'source with the password masked: ' + s.source);
  ok(masked(s.target, 'once-tgt') && s.target.includes('*****'), 'target with the password masked: ' + s.target);
  ok(ISO(s.start_time) && ISO(s.last_updated), 'start_time, last_updated: ' + JSON.stringify(s));
  ok(s.info && typeof s.info === 'object', 'info: ' + JSON.stringify(s));
  eq([s.info.docs_written, s.info.doc_write_failures], [built.leaves, 0], 'info counters: ' + JSON.stringify(s.info));
  ok(!JSON.stringify(s).includes('testpass'), 'no password anywhere: ' + JSON.stringify(s));
  await compareDbs(p, 'src', p, 'once-tgt');
  await T.compareAttachments(p, 'src', p, 'once-tgt', built.attIds, built.atts);
  const d = await waitFor('the doc to say completed', async () => {
    const g = (await jr('GET', r + '/_replicator/once')).json;
    return g._replication_state === 'completed' ? g : false;
  }, 10000);
  ok(ISO(d._replication_state_time), '_replication_state_time: ' + JSON.stringify(d));
  ok(d._replication_stats && d._replication_stats.docs_written === built.leaves, '_replication_stats: ' + JSON.stringify(d._replication_stats));
  eq(d.source, p + '/src', 'the doc keeps what was written');
  // the listing
  for (const path of ['/_scheduler/docs', '/_scheduler/docs/_replicator']) {
    const l = await jr('GET', r + path);
    eq(l.status, 200, l.text);
    ok(Array.isArray(l.json.docs), `${path}: docs array: ${l.text.slice(0, 300)}`);
    const row = l.json.docs.find((x) => x.doc_id === 'once');
    ok(row && row.state === 'completed' && row.database === '_replicator', `${path}: the once doc: ${l.text.slice(0, 600)}`);
    ok(Number.isInteger(l.json.total_rows) && l.json.total_rows >= 1 && l.json.offset === 0, `${path}: total_rows/offset: ${l.text.slice(0, 300)}`);
  }
  isErr(await sched('no-such-doc'), 404, 'not_found');
});

test('a continuous doc: running; /_scheduler/jobs, /_active_tasks; live writes arrive', async () => {
  const doc = { source: pP.url('admin', 'testpass') + '/src', target: p + '/cont-tgt', continuous: true, create_target: true, checkpoint_interval: 1000 };
  const put = await jr('PUT', r + '/_replicator/cont', doc);
  eq(put.status, 201, put.text);
  const s = await waitState('cont', ['running'], 30000);
  ok(typeof s.id === 'string' && /^[0-9a-f]{32}\+continuous/.test(s.id), 'a running doc has its replication id: ' + JSON.stringify(s));
  jobId = s.id;
  await waitFor('cont-tgt to equal src', async () => { await compareDbs(p, 'src', p, 'cont-tgt'); return true; }, 30000, 500);
  // /_scheduler/jobs
  const j = await jr('GET', r + '/_scheduler/jobs');
  eq(j.status, 200, j.text);
  ok(Number.isInteger(j.json.total_rows) && j.json.offset === 0 && Array.isArray(j.json.jobs), 'shape: ' + j.text.slice(0, 300));
  const job = j.json.jobs.find((x) => x.doc_id === 'cont');
  ok(job, 'the continuous job is listed: ' + j.text.slice(0, 800));
  eq(j.json.total_rows, j.json.jobs.length);
  eq([job.id, job.database], [jobId, '_replicator'], JSON.stringify(job));
  // CouchDB 3 shows the doc's user_ctx name: null for a doc written by an admin without one
  ok(job.user === null || job.user === 'admin', 'job.user: ' + JSON.stringify(job.user));
  ok(masked(job.source, 'src') && masked(job.target, 'cont-tgt'), 'source/target masked: ' + JSON.stringify(job));
  ok(ISO(job.start_time), 'start_time: ' + job.start_time);
  ok(Array.isArray(job.history) && job.history.length >= 1 && job.history.every((h) => ISO(h.timestamp) && typeof h.type === 'string'),
    'history [{timestamp, type}]: ' + JSON.stringify(job.history));
  ok(job.history.some((h) => h.type === 'started'), 'a started event: ' + JSON.stringify(job.history));
  ok(job.info && typeof job.info === 'object' && 'node' in job && 'pid' in job, 'info, node, pid: ' + JSON.stringify(job));
  const one = await jr('GET', r + '/_scheduler/jobs/' + encodeURIComponent(jobId));
  eq(one.status, 200, `GET /_scheduler/jobs/<id>: ${one.status} ${one.text}`);
  eq(one.json.id, jobId);
  isErr(await jr('GET', r + '/_scheduler/jobs/nope'), 404, 'not_found');
  // /_active_tasks
  const tasks = await jr('GET', r + '/_active_tasks');
  const t = tasks.json.find((x) => x.type === 'replication' && x.replication_id === jobId);
  ok(t, 'an active task for the job: ' + tasks.text.slice(0, 800));
  eq([t.continuous, t.doc_id, t.database], [true, 'cont', '_replicator'], 'task: ' + JSON.stringify(t));
  for (const f of ['docs_read', 'docs_written', 'doc_write_failures', 'missing_revisions_found', 'revisions_checked', 'started_on', 'updated_on']) ok(Number.isInteger(t[f]), `task.${f}: ${JSON.stringify(t)}`);
  eq(t.docs_written, built.leaves, 'task.docs_written: ' + JSON.stringify(t));
  ok('changes_pending' in t && 'checkpointed_source_seq' in t && 'source_seq' in t, 'task seqs: ' + JSON.stringify(t));
  ok(masked(t.source, 'src'), 'task.source masked: ' + t.source);
  // live
  await T.plainDocs(p, 'src', 20, { prefix: 'live-', from: 0 });
  await waitFor('live docs at the target', async () => (await jr('GET', p + '/cont-tgt/live-000019')).status === 200, 20000);
});

test('kill -9 R, write while it is down, restart: the job resumes from its checkpoint', async () => {
  // wait for the checkpoint to cover everything so far (checkpoint_interval 1 s)
  const last = (await changesOf(p, 'src')).lastSeq;
  const repid = jobId.split('+')[0];
  await waitFor('the source checkpoint to reach the last seq', async () => {
    const c = await jr('GET', `${p}/src/_local/${repid}`);
    return c.status === 200 && JSON.stringify(c.json.source_last_seq) === JSON.stringify(last);
  }, 20000, 250);
  await R.kill9();
  R = null; // not to be stopped (it is gone) unless it comes back
  await T.plainDocs(p, 'src', 30, { prefix: 'down-' });
  const del = (await jr('GET', p + '/src/d000002')).json;
  eq((await jr('DELETE', `${p}/src/d000002?rev=${del._rev}`)).status, 200);
  pP.reset();
  R = await startDivan({ dataDir: dataR });
  r = R.url;
  await waitFor('the docs written while R was down', async () => (await jr('GET', p + '/cont-tgt/down-000029')).status === 200, 45000, 250);
  await waitFor('cont-tgt to equal src', async () => { await compareDbs(p, 'src', p, 'cont-tgt'); return true; }, 20000, 500);
  const feeds = pP.log.filter((e) => e.kind === 'changes');
  ok(feeds.length >= 1, 'the job read the source\'s changes after the restart: ' + pP.requests().join('\n'));
  const since = new URL('http://x' + feeds[0].path).searchParams.get('since');
  ok(since !== null && since !== '0', `the first _changes after the restart resumes from the checkpoint, since=${since} (${feeds[0].path})`);
  eq(JSON.stringify(since), JSON.stringify(typeof last === 'string' ? last : String(last)), 'since = the checkpointed seq');
  const s = await waitState('cont', ['running'], 10000);
  eq(s.id, jobId, 'the same replication id after the restart');
  const once = await sched('once');
  eq([once.status, once.json && once.json.state], [200, 'completed'], 'the one-shot doc stays completed: ' + once.text);
  // live after the restart too
  eq((await jr('PUT', p + '/src/after-restart', { v: 1 })).status, 201);
  await waitFor('a doc written after the restart', async () => (await jr('GET', p + '/cont-tgt/after-restart')).status === 200, 20000);
});

test('deleting the doc stops its job', async () => {
  const cur = (await jr('GET', r + '/_replicator/cont')).json;
  const d = await jr('DELETE', `${r}/_replicator/cont?rev=${cur._rev}`);
  eq(d.status, 200, d.text);
  await waitFor('the job to leave /_scheduler/jobs', async () => !(await jr('GET', r + '/_scheduler/jobs')).json.jobs.some((x) => x.doc_id === 'cont'), 15000);
  await waitFor('the task to leave /_active_tasks', async () => !(await jr('GET', r + '/_active_tasks')).json.some((x) => x.replication_id === jobId), 15000);
  eq((await jr('PUT', p + '/src/after-delete', { v: 1 })).status, 201);
  await sleep(2500);
  eq((await jr('GET', p + '/cont-tgt/after-delete')).status, 404, 'nothing arrives once the doc is deleted');
  isErr(await sched('cont'), 404, 'not_found');
});

test('a doc that is no replication (no target) is refused (403) or fails', async () => {
  const put = await jr('PUT', r + '/_replicator/bad', { source: p + '/src' });
  if (put.status === 403) { eq(put.json.error, 'forbidden', put.text); return; }
  eq(put.status, 201, put.text);
  const s = await waitState('bad', ['failed'], 20000);
  ok(s.info && typeof s.info.error === 'string', 'failed with an error: ' + JSON.stringify(s));
});

test('R is healthy and has no jobs left', async () => {
  eq((await jr('GET', r + '/')).status, 200);
  const j = (await jr('GET', r + '/_scheduler/jobs')).json;
  eq(j.jobs.filter((x) => x.doc_id === 'cont'), []);
});

// a file that bails (budget, crash) must not leave its second server behind
process.on('exit', () => { if (R && R.proc.exitCode === null) R.proc.kill('SIGKILL'); });

runFile(__filename, {
  seconds: 150,
  started: ({ base }) => { p = base; },
  finished: async () => {
    T.resetAgent();
    if (pP) await pP.close();
    if (R) {
      await R.stop().catch((e) => { console.log('FAIL replicator host R: ' + e.message); process.exitCode = 1; });
    }
    if (dataR) fs.rmSync(dataR, { recursive: true, force: true });
  },
});
