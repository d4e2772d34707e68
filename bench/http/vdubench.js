// vdubench.js — what a validate_doc_update costs a write: PUT docs/s into a
// database with no design document, and into one whose design document has
// one simple validator (the bar: the validator costs at most 25 %).
// `make bench` runs it.
//
// Starts `divan serve` (DIVAN_BIN or ./divan) on a free loopback port with
// its own temp data directory, then, alternating the two databases for
// VDU_ROUNDS (3) rounds so drift on the machine hits both alike:
//
//   none       PUT VDU_PUTS (4,000) new small docs into db `none`, 8 in
//              flight, then all of it again with 64 (VDU_CONC=N: only N)
//   vdu        the same into db `vdu`, whose _design/v has
//              function(newDoc, oldDoc, userCtx) { if (!newDoc.type)
//              throw({forbidden: 'type required'}); … }
//              (two parameters: it gets oldDoc — a new doc has none, so no
//              old body is read — userCtx and a field check, the shape of
//              most validators in the wild)
//   vdu-edit   VDU_PUTS updates of existing docs in `vdu` (oldDoc read and
//              passed), beside none-edit into `none`
//
// Reports the best round's docs/s per workload and vdu / none; exit status
// 1 on a failed request, or when VDU_BAR=1 and a validated workload is
// below 75 % of its unvalidated twin.
//
//   node bench/http/vdubench.js
//   DIVAN_BIN=build/cc/divan VDU_PUTS=1000 node bench/http/vdubench.js
'use strict';
const { log, fmt, makeTmp, runBench, client, table } = require('./lib');

const NPUTS = Number(process.env.VDU_PUTS || 4000);
// in flight: both a few clients (each write's latency counts) and many
// (group commit amortizes it); VDU_CONC=N runs one
const CONCS = process.env.VDU_CONC ? [Number(process.env.VDU_CONC)] : [8, 64];
let CONC = CONCS[0];
const ROUNDS = Number(process.env.VDU_ROUNDS || 3);
const TMP = makeTmp('divan-vdubench-');

const VDU = `function(newDoc, oldDoc, userCtx) {
  if (newDoc._deleted) return;
  if (!newDoc.type) throw({forbidden: 'type required'});
  if (oldDoc && oldDoc.type !== newDoc.type) throw({forbidden: 'type is fixed'});
  if (!userCtx.name) throw({unauthorized: 'log in'});
}`;

const us = (v) => (v === undefined ? '-' : v.toFixed(0));
const web = client({ sockets: Math.max(...CONCS), timeoutMs: 60000 });

// the server's CPU seconds so far (user + system, /proc/PID/stat)
const fs = require('fs');
const TICK = 100; // USER_HZ on Linux
function cpuOf(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const v = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(v[11]) + Number(v[12])) / TICK;
}
const cpu = {}; // workload -> server CPU µs per doc, of its best round

async function puts(s, db, round, revs) {
  let next = 0;
  const c0 = cpuOf(s.pid);
  const t0 = process.hrtime.bigint();
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= NPUTS) return;
      const id = `c${CONC}r${round}-${i}`;
      const body = revs ? { _rev: revs[id], type: 'item', n: i, v: 2 } : { type: 'item', n: i, name: 'doc ' + i };
      const r = await web.must(s, 'PUT', `/${db}/${id}`, body, [201]);
      if (!revs) (puts.revs[db] = puts.revs[db] || {})[id] = JSON.parse(r.text).rev;
    }
  };
  await Promise.all(Array.from({ length: CONC }, worker));
  const rate = NPUTS / (Number(process.hrtime.bigint() - t0) / 1e9);
  puts.cpu = ((cpuOf(s.pid) - c0) * 1e6) / NPUTS;
  return rate;
}
puts.revs = {};

runBench('vdubench', { which: ['divan'], tmp: TMP, web }, async (servers) => {
  const s = servers[0];
  await web.must(s, 'PUT', '/none', undefined, [201]);
  await web.must(s, 'PUT', '/vdu', undefined, [201]);
  await web.must(s, 'PUT', '/vdu/_design/v', { validate_doc_update: VDU }, [201]);
  // the validator works: a refusal, then warm both paths
  await web.must(s, 'PUT', '/vdu/x', { n: 1 }, [403]);
  for (const db of ['none', 'vdu']) for (let i = 0; i < 200; i++) await web.must(s, 'PUT', `/${db}/warm${i}`, { type: 't' }, [201]);
  const worsts = [];
  for (const conc of CONCS) {
    CONC = conc;
    const best = { none: 0, vdu: 0, 'none-edit': 0, 'vdu-edit': 0 };
    for (let round = 0; round < ROUNDS; round++) {
      for (const db of round % 2 ? ['vdu', 'none'] : ['none', 'vdu']) {
        const c = await puts(s, db, round, null);
        if (c > best[db]) cpu[db] = puts.cpu;
        best[db] = Math.max(best[db], c);
        log(`${CONC} in flight, round ${round} ${db}: ${fmt(c)} docs/s, server CPU ${puts.cpu.toFixed(0)} µs/doc`);
      }
      for (const db of round % 2 ? ['vdu', 'none'] : ['none', 'vdu']) {
        const u = await puts(s, db, round, puts.revs[db]);
        if (u > best[db + '-edit']) cpu[db + '-edit'] = puts.cpu;
        best[db + '-edit'] = Math.max(best[db + '-edit'], u);
        log(`${CONC} in flight, round ${round} ${db}-edit: ${fmt(u)} docs/s, server CPU ${puts.cpu.toFixed(0)} µs/doc`);
      }
    }
    const rows = [
      ['PUT new docs', fmt(best.none), fmt(best.vdu), (best.vdu / best.none).toFixed(2), us(cpu.none), us(cpu.vdu)],
      ['PUT updates', fmt(best['none-edit']), fmt(best['vdu-edit']), (best['vdu-edit'] / best['none-edit']).toFixed(2),
        us(cpu['none-edit']), us(cpu['vdu-edit'])],
    ];
    console.log(`\nvalidate_doc_update, ${NPUTS} PUTs per round, ${CONC} in flight, best of ${ROUNDS} rounds (docs/s):\n`);
    table(['workload', 'no validator', 'one validator', 'vdu / none', 'server CPU µs/doc, none', 'vdu'],
      ['l', 'r', 'r', 'r', 'r', 'r'], rows);
    const worst = Math.min(best.vdu / best.none, best['vdu-edit'] / best['none-edit']);
    console.log(`\nvalidator cost at ${CONC} in flight: ${((1 - worst) * 100).toFixed(1)} % (bar: at most 25 %)`);
    worsts.push(worst);
  }
  if (process.env.VDU_BAR === '1' && Math.min(...worsts) < 0.75) throw new Error('the validator costs more than 25 %');
});
