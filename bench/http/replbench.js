// replbench.js — replication throughput: divan's replicator pulling
// REPL_N (100,000) small docs from another divan and from pouchdb-server
// 4.2.0, in the same run (`make bench` runs it after attbench.js).
//
// Starts three servers, each on a free loopback port with its own temp data
// directory: divan A (the divan source), divan B (the target, whose
// replicator does the work) and pouchdb-server (LevelDB). A and
// pouchdb-server get the same REPL_N small docs (~100 bytes of JSON each)
// through POST _bulk_docs in batches of 1,000. Then, one at a time, with the
// source not being measured paused (SIGSTOP, as bench.js does):
//
//   divan → divan            POST B/_replicate {source: A/src, target: from_divan, create_target: true}
//   pouchdb-server → divan   POST B/_replicate {source: pouchdb/src, target: from_pouchdb, create_target: true}
//
// docs/s is REPL_N over the wall time of the one-shot POST (request to
// answer). After each, the answer must say ok with docs_written = REPL_N and
// no write failures, and the target's doc_count must be REPL_N. Peak RSS
// and CPU of B (the replicating divan) and the source's CPU are sampled
// during each run (CPU: % of one core). A
// markdown table at the end with the ratio; exit status 1 on any failure or
// after REPL_BENCH_MAX_S (1,800 s) in all.
//
//   node bench/http/replbench.js
//   DIVAN_BIN=build/cc/divan REPL_N=20000 node bench/http/replbench.js
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const L = require('./lib');

const { log, fmt } = L;
const N = Number(process.env.REPL_N || 100000);
const MAX_S = Number(process.env.REPL_BENCH_MAX_S || 1800);
const TMP = L.makeTmp('divan-replbench-');
const web = L.client({ sockets: 4, timeoutMs: 600000, keep: 1 << 20 });

// The same docs for every source: ~100 bytes of JSON each.
function batch(from, to) {
  const docs = [];
  for (let i = from; i < to; i++) docs.push(L.smallDoc(i));
  return docs;
}

// Fill db on s with N docs; resolves docs/s of the load (for orientation).
async function fill(s, db) {
  await web.must(s, 'PUT', '/' + db, undefined, [201, 202]);
  const t0 = Date.now();
  for (let k = 0; k < N; k += 1000) {
    const r = await web.must(s, 'POST', `/${db}/_bulk_docs`, { docs: batch(k, Math.min(N, k + 1000)) }, [201]);
    const rows = JSON.parse(r.text);
    const bad = rows.filter((x) => x.error);
    if (bad.length) throw new Error(`${s.name}: _bulk_docs errors: ${JSON.stringify(bad.slice(0, 3))}`);
  }
  const info = JSON.parse((await web.must(s, 'GET', '/' + db, undefined, [200])).text);
  if (info.doc_count !== N) throw new Error(`${s.name}: ${db} holds ${info.doc_count} docs after the load, not ${N}`);
  return N / ((Date.now() - t0) / 1000);
}

// One measured replication into target db tdb on B from sourceUrl.
async function measure(B, label, sourceUrl, tdb, srcPid) {
  const stop = L.sampler(B.pid);
  const stopSrc = L.sampler(srcPid);
  const t0 = process.hrtime.bigint();
  const r = await L.request(B.url + '/_replicate', { method: 'POST', body: { source: sourceUrl, target: tdb, create_target: true }, timeoutMs: MAX_S * 1000 });
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const { rssMiB, cpuPct } = stop();
  const srcCpuPct = stopSrc().cpuPct;
  let j = null;
  try { j = JSON.parse(r.text); } catch (e) { /* below */ }
  if (r.status !== 200 || !j || !j.ok) throw new Error(`${label}: POST /_replicate answered ${r.status} ${String(r.text).slice(0, 500)}`);
  const h = (j.history && j.history[0]) || j;
  if (h.docs_written !== N || h.doc_write_failures !== 0) throw new Error(`${label}: docs_written ${h.docs_written}, doc_write_failures ${h.doc_write_failures} (want ${N}, 0): ${String(r.text).slice(0, 500)}`);
  const info = JSON.parse((await web.must(B, 'GET', '/' + tdb, undefined, [200])).text);
  if (info.doc_count !== N) throw new Error(`${label}: the target holds ${info.doc_count} docs, not ${N}`);
  if (L.died(B)) throw new Error(`divan B died: ${B.stderr().slice(-2000)}`);
  return { secs, rate: N / secs, rssMiB, cpuPct, srcCpuPct };
}

L.runBench('replication bench', { which: ['divan', 'pouchdb'], tmp: TMP, web, maxS: MAX_S }, async (servers, tStart) => {
  const [A, P] = servers;
  A.name = 'divan A';
  const bdir = path.join(TMP, 'b');
  fs.mkdirSync(bdir);
  const B = await L.startDivan(bdir);
  B.name = 'divan B';
  servers.push(B);
  log(`replication bench: ${L.describe(servers)}; ${fmt(N)} docs; ${os.cpus().length} cpus`);

  const loadA = await fill(A, 'src');
  log(`  loaded ${fmt(N)} docs into divan A          ${fmt(loadA).padStart(8)} docs/s (_bulk_docs × 1,000)`);
  const loadP = await fill(P, 'src');
  log(`  loaded ${fmt(N)} docs into pouchdb-server   ${fmt(loadP).padStart(8)} docs/s (_bulk_docs × 1,000)`);

  const runs = [];
  // divan → divan: pouchdb-server paused
  process.kill(P.pid, 'SIGSTOP');
  try {
    runs.push(['divan → divan', await measure(B, 'divan → divan', A.url + '/src', 'from_divan', A.pid)]);
  } finally { process.kill(P.pid, 'SIGCONT'); }
  log(`  divan → divan           ${fmt(runs[0][1].rate).padStart(8)} docs/s  ${fmt(runs[0][1].secs, 2)} s`);
  // pouchdb-server → divan: divan A paused
  process.kill(A.pid, 'SIGSTOP');
  try {
    runs.push(['pouchdb-server → divan', await measure(B, 'pouchdb-server → divan', P.url + '/src', 'from_pouchdb', P.pid)]);
  } finally { process.kill(A.pid, 'SIGCONT'); }
  log(`  pouchdb-server → divan  ${fmt(runs[1][1].rate).padStart(8)} docs/s  ${fmt(runs[1][1].secs, 2)} s`);

  log('');
  L.table(['replication (one-shot, pulled by divan B)', 'docs', 'seconds', 'docs/s', 'peak RSS divan B', 'CPU divan B', 'CPU source'], 'lrrrrrr',
    runs.map(([label, m]) => [label, fmt(N), fmt(m.secs, 2), fmt(m.rate), `${fmt(m.rssMiB, 1)} MiB`, `${fmt(m.cpuPct)} %`, `${fmt(m.srcCpuPct)} %`]));
  log('');
  log(`divan → divan is ${fmt(runs[0][1].rate / runs[1][1].rate, 2)}× pouchdb-server → divan. ` +
      'Each doc ~100 bytes of JSON; the target created by the replication (create_target); doc counts verified after each run; ' +
      'the source not being measured paused (SIGSTOP).');
  log(`total replication bench time ${fmt((Date.now() - tStart) / 1000)} s`);
});
