// dumpbench.js — dump and load in bounded memory (issue 23): `divan dump`,
// `divan load` and `divan move` of one database of DUMP_N (1,000,000) small
// docs, each command a process of its own, against pouchdb-server 4.2.0's
// replication of the same database as the peer (`make bench` runs it after
// replbench.js).
//
// Starts `divan serve` and pouchdb-server (LevelDB), each on a free loopback
// port with its own temp data directory, and fills database src on both with
// the same DUMP_N docs (~100 bytes of JSON each, replbench.js's) through POST
// _bulk_docs of 1,000 (4 in flight). Both servers are then stopped: divan's
// data directory must be offline for the commands (its lock), and
// pouchdb-server starts again for its run, so that its VmHWM is that run's.
// Then, one at a time (nothing else of the bench running):
//
//   dump   divan dump --data DIVAN -o FILE src                 (→ the file)
//   load   divan load --data LOADED -i FILE loaded             (a fresh data dir)
//   move   divan move data:DIVAN src data:MOVED moved          (a fresh data dir;
//                                                                the source kept)
//   peer   POST /_replicate {source: "src", target: "dst", create_target: true}
//          on pouchdb-server (local to local: LevelDB to LevelDB, one process)
//
// docs/s is DUMP_N over the command's wall time (process start to exit: the
// store's open and close included), or over the one-shot POST (request to
// answer). A divan command's peak RSS is its own: the summary line it ends
// with on stderr carries "peak RSS N MiB", its getrusage(RUSAGE_SELF)
// ru_maxrss (src/cli/dump.c), which this script parses; a failed command
// (exit status not 0, or no such line) fails the bench. pouchdb-server's
// peak RSS is its VmHWM (/proc/PID/status) read at the end of the
// replication, of a process started just before it.
//
// Checks: after the commands a server starts on each of DIVAN, LOADED and
// MOVED: doc_count must be DUMP_N on all three, the source's docs must be
// the ones written, and some docs (first, middle, last and a few more)
// must be byte-identical (_rev included) in the loaded and the moved copy;
// pouchdb-server's answer must say ok with docs_written = DUMP_N and no
// write failures, and dst's doc_count must be DUMP_N.
//
// The peer's bound: its replication runs while DUMP_BENCH_MAX_S allows
// (less a minute for the checks after it; DUMP_POUCH_MAX_S caps it further).
// Its progress (dst's doc_count) is read every 5 s; should the bound come
// first, pouchdb-server is stopped and its docs/s is measured on the first M
// docs it copied (the last progress read), which the output says. That is
// not a failure; everything else past DUMP_BENCH_MAX_S is.
//
// Prints a markdown table (operation, docs, seconds, docs/s, peak RSS, docs/s
// against the peer's) and whether the commands stayed in bounded memory:
// dump's and load's peak RSS ≤ DUMP_RSS_BOUND_MIB (128: the memory one store
// plans with, [divan] memory_limit's default, kv.h KV_ROCKS_MEMORY_MB),
// move's (two stores open) ≤ twice that. What a command holds of the stream
// is fixed (one file block, transactions of 4 MB, move's 8 MB pipe). The
// engine's index and filter blocks were kept in its table readers, outside
// the block cache, ~13 MB a million of these docs (10 keys each), growing
// with the database: peak RSS (MiB; docs 20k / 200k / 500k / 1M / 2M) dump
// 35 / 55 / 59 / 68–72 / 79, load 70 / 87 / 99 / 107 / 122, move 81 / 116 /
// 131 / 141–149 / 171. They are now in the block cache, partitioned
// (src/kv/rocks.c): at 1M, dump 57 -> 43, load 117 -> 102, move 154 -> 132.
// The records streamed are ~512 bytes a doc (512 MB at 1M), the store
// on disk 150 MB, the dump file 100 MB. The bench does not fail on speed or
// on that bound (it says MISSED); exit status 1 on a wrong doc_count or
// document, a failed command or request, or after DUMP_BENCH_MAX_S (3,600
// s) in all.
//
//   node bench/http/dumpbench.js
//   DIVAN_BIN=build/cc/divan DUMP_N=20000 node bench/http/dumpbench.js
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { isDeepStrictEqual } = require('util');
const L = require('./lib');

const { log, fmt } = L;
const N = Number(process.env.DUMP_N || 1000000);
const MAX_S = Number(process.env.DUMP_BENCH_MAX_S || 3600);
const POUCH_MAX_S = Number(process.env.DUMP_POUCH_MAX_S || Infinity);
const RSS_BOUND_MIB = Number(process.env.DUMP_RSS_BOUND_MIB || 128);
const TMP = L.makeTmp('divan-dumpbench-');
const web = L.client({ sockets: 4, timeoutMs: 600000, keep: 1 << 20 });

const since = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;
const load1 = () => os.loadavg()[0].toFixed(2);

// Fill src on s with the N docs; resolves docs/s of the fill (for orientation).
async function fill(s) {
  await web.must(s, 'PUT', '/src', undefined, [201, 202]);
  const secs = await L.bulkLoad(web.must, s, 'src', N, L.smallDoc);
  await expectCount(s, 'src', N);
  return N / secs;
}

async function expectCount(s, db, n) {
  const info = JSON.parse((await web.must(s, 'GET', '/' + db, undefined, [200])).text);
  if (info.doc_count !== n) throw new Error(`${s.name}: ${db} holds ${info.doc_count} docs, not ${n}`);
  return info;
}

// One divan command (args), a process of its own, listed in servers while it
// runs (so that a cleanup stops it). Resolves { secs (wall), rssMiB, line }
// from its summary line; throws on an exit status not 0.
async function divanCmd(servers, label, args) {
  const t0 = process.hrtime.bigint();
  const proc = spawn(L.divanBin(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const me = { name: label, proc, pid: proc.pid };
  servers.push(me);
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const code = await new Promise((res) => proc.on('close', (c, sig) => res(c ?? sig)));
  const secs = since(t0);
  servers.splice(servers.indexOf(me), 1);
  const m = /in [\d.]+ s\b.*; peak RSS ([\d.]+) MiB$/m.exec(err);
  if (code !== 0 || !m) throw new Error(`${label}: divan ${args.join(' ')}: exit status ${code}: ${err.slice(-2000)}`);
  return { secs, rate: N / secs, rssMiB: Number(m[1]), line: err.trim().split('\n').pop() };
}

// The ids compared between the copies: first, second, middle, last and a
// few spread between.
function sampleIds() {
  const ix = new Set([0, 1, Math.floor(N / 2), N - 1]);
  for (let k = 1; k <= 6; k++) ix.add(Math.floor((k * 7919 * 104729) % N));
  return [...ix].sort((a, b) => a - b);
}

// The three divan copies, each on a server of its own: doc counts, the
// source's docs as written, the copies' docs byte-identical to the source's.
async function checkCopies(servers) {
  const src = await L.startDivan(TMP, { name: 'divan' });
  servers.push(src);
  const loaded = await L.startDivan(TMP, { name: 'loaded' });
  servers.push(loaded);
  const moved = await L.startDivan(TMP, { name: 'moved' });
  servers.push(moved);
  const si = await expectCount(src, 'src', N);
  const li = await expectCount(loaded, 'loaded', N);
  const mi = await expectCount(moved, 'moved', N);
  const ids = sampleIds();
  for (const i of ids) {
    const id = L.smallDoc(i)._id;
    const a = (await web.must(src, 'GET', '/src/' + id, undefined, [200])).text;
    const doc = JSON.parse(a);
    const want = JSON.stringify(Object.assign({ _id: id, _rev: doc._rev }, L.smallDoc(i)));
    if (!isDeepStrictEqual(doc, JSON.parse(want))) throw new Error(`the source's ${id} is ${a.slice(0, 300)}, not ${want}`);
    for (const [s, db] of [[loaded, 'loaded'], [moved, 'moved']]) {
      const b = (await web.must(s, 'GET', `/${db}/${id}`, undefined, [200])).text;
      if (b !== a) throw new Error(`${db}'s ${id} is ${b.slice(0, 300)}, the source's ${a.slice(0, 300)}`);
    }
  }
  for (const s of [src, loaded, moved]) await L.stopProc(s.proc);
  return { ids: ids.length, sameSeq: li.update_seq === si.update_seq && mi.update_seq === si.update_seq };
}

// pouchdb-server replicating src to dst inside itself, while budgetS
// allows. Resolves { secs, docs, rate, rssMiB, partial }.
async function pouchReplicate(P, budgetS) {
  const t0 = process.hrtime.bigint();
  let done = false;
  const req = L.request(P.url + '/_replicate', { method: 'POST', body: { source: 'src', target: 'dst', create_target: true }, keep: 1 << 20 })
    .finally(() => { done = true; });
  req.catch(() => { /* read below */ });
  let last = { secs: 0, docs: 0 }, logged = 0;
  while (!done && since(t0) < budgetS) {
    await Promise.race([req.catch(() => {}), L.sleep(Math.min(5000, 1000 * (budgetS - since(t0))))]);
    if (done) break;
    const r = await L.request(P.url + '/dst', { timeoutMs: 30000 }).catch(() => null);
    if (r && r.status === 200) last = { secs: since(t0), docs: JSON.parse(r.text).doc_count };
    if (last.secs - logged >= 300) {
      logged = last.secs;
      log(`    … ${fmt(last.docs)} docs after ${fmt(last.secs)} s (load average ${load1()})`);
    }
  }
  if (!done) {
    const rssMiB = L.hwmKiB(P.pid) / 1024;
    await L.stopProc(P.proc);
    await req.catch(() => {});
    if (!last.docs) throw new Error(`pouchdb-server replicated no doc in ${fmt(budgetS)} s`);
    return { secs: last.secs, docs: last.docs, rate: last.docs / last.secs, rssMiB, partial: true };
  }
  const r = await req;
  const secs = since(t0);
  const rssMiB = L.hwmKiB(P.pid) / 1024;
  let j = null;
  try { j = JSON.parse(r.text); } catch (e) { /* below */ }
  if (r.status !== 200 || !j || !j.ok) throw new Error(`pouchdb-server: POST /_replicate answered ${r.status} ${String(r.text).slice(0, 500)}`);
  const h = (j.history && j.history[0]) || j;
  if (h.docs_written !== N || h.doc_write_failures !== 0) throw new Error(`pouchdb-server: docs_written ${h.docs_written}, doc_write_failures ${h.doc_write_failures} (want ${N}, 0)`);
  await expectCount(P, 'dst', N);
  return { secs, docs: N, rate: N / secs, rssMiB, partial: false };
}

L.runBench('dump bench', { which: ['divan', 'pouchdb'], tmp: TMP, web, maxS: MAX_S }, async (servers, tStart) => {
  const [D, P0] = servers;
  log(`dump bench: ${L.describe(servers)}; ${fmt(N)} docs; ${os.cpus().length} cpus, load average ${load1()}`);

  const fillD = await fill(D);
  log(`  filled divan src with ${fmt(N)} docs           ${fmt(fillD).padStart(8)} docs/s (_bulk_docs × 1,000, 4 in flight)`);
  process.kill(D.pid, 'SIGSTOP');
  let fillP;
  try { fillP = await fill(P0); } finally { process.kill(D.pid, 'SIGCONT'); }
  log(`  filled pouchdb-server src with ${fmt(N)} docs  ${fmt(fillP).padStart(8)} docs/s (_bulk_docs × 1,000, 4 in flight)`);
  await L.stopProc(D.proc);
  await L.stopProc(P0.proc);

  const dir = (name) => path.join(TMP, name);
  const file = path.join(TMP, 'src.dump');
  const runs = [];
  const run = async (label, args) => {
    const m = await divanCmd(servers, label, args);
    runs.push([label, m]);
    log(`  ${label.padEnd(44)} ${fmt(m.rate).padStart(8)} docs/s  ${fmt(m.secs, 2)} s  peak RSS ${fmt(m.rssMiB, 1)} MiB  (load average ${load1()})`);
    log(`    ${m.line}`);
  };
  await run('divan dump (data dir → file)', ['dump', '--data', dir('divan'), '-o', file, 'src']);
  const fileBytes = fs.statSync(file).size;
  await run('divan load (file → a fresh data dir)', ['load', '--data', dir('loaded'), '-i', file, 'loaded']);
  await run('divan move (data dir → a fresh data dir)', ['move', `data:${dir('divan')}`, 'src', `data:${dir('moved')}`, 'moved']);
  const chk = await checkCopies(servers);
  log(`  checked: doc_count ${fmt(N)} in the source, the loaded and the moved copy; ${chk.ids} docs identical in all three; ` +
      `update_seq ${chk.sameSeq ? 'the same in all three' : 'NOT the same in all three'}`);

  const P = await L.startPouch(TMP);
  servers.push(P);
  const budget = Math.min(POUCH_MAX_S, MAX_S - 60 - (Date.now() - tStart) / 1000);
  if (budget <= 0) throw new Error(`no time left for pouchdb-server's replication within DUMP_BENCH_MAX_S (${MAX_S} s)`);
  log(`  pouchdb-server replication src → dst (${P.url}, pid ${P.pid}; at most ${fmt(budget)} s) …`);
  const pr = await pouchReplicate(P, budget);
  log(`  pouchdb-server replication                   ${fmt(pr.rate).padStart(8)} docs/s  ${fmt(pr.secs, 2)} s  peak RSS ${fmt(pr.rssMiB, 1)} MiB  (load average ${load1()})` +
      (pr.partial ? `  — stopped at its bound after ${fmt(pr.docs)} of ${fmt(N)} docs` : ''));

  log('');
  const peer = pr.partial ? `pouchdb-server replication (local src → dst), the first ${fmt(pr.docs)} docs only` : 'pouchdb-server replication (local src → dst)';
  L.table(['operation', 'docs', 'seconds', 'docs/s', 'peak RSS', 'docs/s vs pouchdb-server replication'], 'lrrrrr', [
    ...runs.map(([label, m]) => [label, fmt(N), fmt(m.secs, 2), fmt(m.rate), `${fmt(m.rssMiB, 1)} MiB`, `${fmt(m.rate / pr.rate, 1)}×`]),
    [peer, fmt(pr.docs), fmt(pr.secs, 2), fmt(pr.rate), `${fmt(pr.rssMiB, 1)} MiB`, '1.0×'],
  ]);
  log('');
  const [dump, load, move] = runs.map(([, m]) => m.rssMiB);
  const met = Math.max(dump, load) <= RSS_BOUND_MIB && move <= 2 * RSS_BOUND_MIB;
  log(`bounded memory: ${met ? 'MET' : 'MISSED'} — peak RSS of ${fmt(N)} docs: dump ${fmt(dump, 1)} MiB and load ${fmt(load, 1)} MiB ` +
      `(bound ${fmt(RSS_BOUND_MIB)} MiB, DUMP_RSS_BOUND_MIB: one store's memory_limit), move ${fmt(move, 1)} MiB ` +
      `(two stores: bound ${fmt(2 * RSS_BOUND_MIB)} MiB), for ${fmt(fileBytes / 1048576, 1)} MiB of dump file; ` +
      'what a command holds is fixed, and the engine\'s index and filter blocks are in its block cache.');
  log(`dump file ${fmt(fileBytes / 1048576, 1)} MiB (${fmt(fileBytes / N, 1)} bytes a doc). Each doc ~100 bytes of JSON; divan's peak RSS ` +
      'is the command\'s own ru_maxrss, pouchdb-server\'s its VmHWM (a process started for the replication); ' +
      'docs/s over the command\'s or the request\'s wall time; the copies checked after the runs.' +
      (pr.partial ? ` pouchdb-server's replication did not finish within its bound (${fmt(budget)} s): measured on the first ${fmt(pr.docs)} docs.` : ''));
  log(`total dump bench time ${fmt((Date.now() - tStart) / 1000)} s; ${os.cpus().length} cpus, load average ${load1()}`);
});
