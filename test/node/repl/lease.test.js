// lease.test.js — one process runs each _replicator document's job.
//
// Several divan processes may serve one FoundationDB cluster, and every
// one sees every _replicator document; the job runs only where its lease
// _replicator/_local/repl-lease:DOCID is held (src/repl/mgr.c). One server
// plays both sides here: "another process" is a lease written by hand.
// With [replicator] lease_ms = 3000:
//   - a document whose lease another live process holds stays "pending"
//     (info.error says so) and copies nothing; once that lease expires,
//     the job runs and completes, and its lease is given back (expires 0);
//   - a running continuous job whose lease is taken over ends its run
//     within a renewal: new source documents stop arriving; when the lease
//     is free again, the job takes it back and catches up.
//
//   DIVAN_BIN=build/cc/divan node test/node/repl/lease.test.js
'use strict';
const { test, eq, ok } = require('../lib/t');
const { runFile } = require('../lib/divan');
const T = require('../lib/trees');

const { jr, waitFor, sleep } = T;
let u;

const sched = (id) => jr('GET', `${u}/_scheduler/docs/_replicator/${id}`);
const lease = (id) => `${u}/_replicator/_local/repl-lease:${id}`;

test('a source of 5 docs', async () => {
  eq((await jr('PUT', u + '/src')).status, 201);
  for (let i = 0; i < 5; i++) eq((await jr('PUT', `${u}/src/d${i}`, { i })).status, 201);
});

test('held elsewhere: pending, nothing copied; after it expires: runs, completes, gives it back', async () => {
  const until = Date.now() + 6000;
  eq((await jr('PUT', lease('r1'), { owner: 'another-process', expires: until })).status, 201);
  eq((await jr('PUT', u + '/_replicator/r1', { source: 'src', target: 't1', create_target: true })).status, 201);
  const s = await waitFor('r1 pending', async () => {
    const r = await sched('r1');
    return r.status === 200 && r.json.state === 'pending' ? r.json : null;
  }, 5000, 100);
  ok(s.info && /another divan process/.test(s.info.error), 'info.error: ' + JSON.stringify(s));
  await sleep(Math.max(0, until - Date.now() - 1500));
  eq((await jr('GET', u + '/t1')).status, 404, 'nothing ran while the lease was held elsewhere');
  await waitFor('r1 completed', async () => (await sched('r1')).json.state === 'completed', 15000, 200);
  ok(Date.now() >= until, 'not before the other lease expired');
  eq((await jr('GET', u + '/t1')).json.doc_count, 5);
  const l = (await jr('GET', lease('r1'))).json;
  ok(l.owner !== 'another-process' && l.expires === 0, 'the lease was taken and given back: ' + JSON.stringify(l));
});

test('taken over while running: the run ends; free again: it catches up', async () => {
  eq((await jr('PUT', u + '/_replicator/r2', { source: 'src', target: 't2', create_target: true, continuous: true })).status, 201);
  await waitFor('t2 has the 5 docs', async () => ((await jr('GET', u + '/t2')).json || {}).doc_count === 5, 15000, 200);
  const mine = (await jr('GET', lease('r2'))).json;
  ok(mine.owner && mine.owner !== 'another-process' && mine.expires > Date.now(), 'held by this process: ' + JSON.stringify(mine));
  const r = await jr('PUT', lease('r2'), { _rev: mine._rev, owner: 'another-process', expires: Date.now() + 60000 });
  eq(r.status, 201, r.text);
  await waitFor('r2 pending', async () => (await sched('r2')).json.state === 'pending', 8000, 100);
  eq((await jr('PUT', u + '/src/late', { v: 1 })).status, 201);
  await sleep(2500);
  eq((await jr('GET', u + '/t2/late')).status, 404, 'no run while another process holds the lease');
  const theirs = (await jr('GET', lease('r2'))).json;
  eq((await jr('DELETE', `${lease('r2')}?rev=${theirs._rev}`)).status, 200);
  await waitFor('the late doc at t2', async () => (await jr('GET', u + '/t2/late')).status === 200, 10000, 100);
  eq((await sched('r2')).json.state, 'running');
  const cur = (await jr('GET', u + '/_replicator/r2')).json;
  eq((await jr('DELETE', `${u}/_replicator/r2?rev=${cur._rev}`)).status, 200);
});

runFile(__filename, {
  seconds: 90,
  divan: { config: '[replicator]\nlease_ms = 3000\n' },
  started: ({ srv }) => { u = srv.url; },
  finished: async () => { T.resetAgent(); },
});
