// attbench.js — attachment throughput: divan against pouchdb-server 4.2.0,
// side by side in one run (`make bench` runs it after bench.js).
//
// Starts `divan serve` (DIVAN_BIN or ./divan, with a server admin, Basic
// auth) and pouchdb-server (test/node/node_modules, LevelDB), each on a
// free loopback port with its own temp data directory. For each size, on
// each server in turn (the other one paused with SIGSTOP, as bench.js does):
//
//   upload    standalone PUT /db/docN/att, application/octet-stream random
//             bytes, one request at a time on one keep-alive connection
//   download  GET /db/docN/att of every attachment just written; each body
//             is hashed as it arrives and its MD5 compared with the upload's
//
//   1 MB   × ATT_REPS_1M (50)
//   100 MB × ATT_REPS_100M (3)
//
// MB is 10^6 bytes; MB/s is the attachment bytes moved over the wall time of
// the whole series (request start to response end). Peak server RSS is
// VmRSS from /proc/PID/status sampled every 100 ms during the series. Each
// size gets a fresh database, deleted afterwards. A markdown table at the
// end; exit status 1 on any failed request or digest mismatch.
//
//   node bench/http/attbench.js
//   DIVAN_BIN=build/cc/divan ATT_REPS_1M=20 ATT_REPS_100M=1 node bench/http/attbench.js
//   ATT_SERVERS=divan      only one of the two servers (divan,pouchdb)
//   ATT_SIZES=1            only the 1 MB series (1,100)
'use strict';
const crypto = require('crypto');
const os = require('os');
const { log, fmt, makeTmp, describe, runBench, died, client, hold, sampler, table } = require('./lib');

const WHICH = (process.env.ATT_SERVERS || 'divan,pouchdb').split(',');
const SIZES = [
  { mb: 1, reps: Number(process.env.ATT_REPS_1M || 50) },
  { mb: 100, reps: Number(process.env.ATT_REPS_100M || 3) },
].filter((s) => !process.env.ATT_SIZES || process.env.ATT_SIZES.split(',').includes(String(s.mb)));
const TMP = makeTmp('divan-attbench-');

const md5 = (b) => crypto.createHash('md5').update(b).digest('hex');

// One keep-alive connection, renewed for every measured series. Every
// answer is hashed as it arrives (md5) and kept as text only when it is
// small (JSON answers).
const web = client({ sockets: 1, timeoutMs: 600000, md5: true, keep: 65536 });
const OCTETS = { contentType: 'application/octet-stream' };
const { must } = web;

// ------------------------------------------------------------- the series

// One size on one server: upload every blob, then download each and compare.
async function series(s, size, blobs, digests) {
  const db = `att${size.mb}m`;
  await must(s, 'PUT', '/' + db, undefined, [201, 202]);
  // one small untimed round trip, so the measured series starts on an open connection
  await must(s, 'PUT', `/${db}/warm/w`, Buffer.from('warm'), [201], OCTETS);
  await must(s, 'GET', `/${db}/warm/w`, undefined, [200]);
  const bytes = blobs.length * blobs[0].length;
  const out = {};

  let stop = sampler(s.pid);
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < blobs.length; i++) {
    const r = await must(s, 'PUT', `/${db}/doc${i}/blob.bin`, blobs[i], [201], OCTETS);
    const j = JSON.parse(r.text);
    if (!j.ok || !j.rev) throw new Error(`${s.name}: PUT ${db}/doc${i}/blob.bin answered ${r.text}`);
  }
  let secs = Number(process.hrtime.bigint() - t0) / 1e9;
  out.up = { mbps: bytes / 1e6 / secs, secs, rssMiB: stop().rssMiB };
  if (died(s)) throw new Error(`${s.name} died: ${s.stderr().slice(-2000)}`);

  stop = sampler(s.pid);
  t0 = process.hrtime.bigint();
  const bad = [];
  for (let i = 0; i < blobs.length; i++) {
    const r = await must(s, 'GET', `/${db}/doc${i}/blob.bin`, undefined, [200]);
    if (r.bytes !== blobs[i].length || r.md5 !== digests[i]) bad.push(`doc${i}: ${r.bytes} bytes md5 ${r.md5}, sent ${blobs[i].length} md5 ${digests[i]}`);
  }
  secs = Number(process.hrtime.bigint() - t0) / 1e9;
  out.down = { mbps: bytes / 1e6 / secs, secs, rssMiB: stop().rssMiB };
  if (bad.length) throw new Error(`${s.name}: ${bad.length} downloads differ from their uploads: ${bad.slice(0, 3).join('; ')}`);

  // The stub tells the same length and (binary: stored as is) the same MD5.
  const d = JSON.parse((await must(s, 'GET', `/${db}/doc0`, undefined, [200])).text);
  const stub = d._attachments && d._attachments['blob.bin'];
  if (!stub || stub.length !== blobs[0].length || stub.digest !== 'md5-' + Buffer.from(digests[0], 'hex').toString('base64')) {
    throw new Error(`${s.name}: ${db}/doc0 stub ${JSON.stringify(stub)} (want length ${blobs[0].length}, digest md5 ${digests[0]})`);
  }
  await must(s, 'DELETE', '/' + db, undefined, [200, 202]);
  return out;
}

runBench('attachment bench', { which: WHICH, tmp: TMP, web }, async (servers, tStart) => {
  log(`attachment bench: ${describe(servers)}; ` +
      `${SIZES.map((z) => `${z.mb} MB × ${z.reps}`).join(', ')}; ${os.cpus().length} cpus`);
  const results = [];
  for (const size of SIZES) {
    // The same random blobs for both servers, distinct per repetition.
    const blobs = [];
    for (let i = 0; i < size.reps; i++) blobs.push(crypto.randomBytes(size.mb * 1e6));
    const digests = blobs.map(md5);
    const row = { size, by: {} };
    for (const s of servers) {
      const release = hold(servers, s, web);
      try {
        row.by[s.name] = await series(s, size, blobs, digests);
      } finally {
        release();
      }
      const r = row.by[s.name];
      for (const dir of ['up', 'down']) {
        log(`  ${String(size.mb).padStart(3)} MB × ${size.reps} ${dir.padEnd(4)} ${s.name.padEnd(8)} ${fmt(r[dir].mbps, 1).padStart(8)} MB/s` +
            `  ${fmt(r[dir].secs, 2)} s  peak rss ${fmt(r[dir].rssMiB, 1)} MiB`);
      }
    }
    results.push(row);
  }

  log('');
  const none = { mbps: NaN, rssMiB: NaN };
  table(['attachment', 'direction', 'divan MB/s', 'pouchdb-server MB/s', 'divan / pouchdb', 'peak RSS divan', 'peak RSS pouchdb'], 'llrrrrr',
    results.flatMap(({ size, by }) => [['up', 'upload (PUT)'], ['down', 'download (GET)']].map(([dir, label]) => {
      const d = by.divan ? by.divan[dir] : none, p = by.pouchdb ? by.pouchdb[dir] : none;
      return [`${size.mb} MB × ${size.reps}`, label, fmt(d.mbps, 1), fmt(p.mbps, 1), `${fmt(d.mbps / p.mbps, 2)}×`,
        `${fmt(d.rssMiB, 1)} MiB`, `${fmt(p.rssMiB, 1)} MiB`];
    })));
  log('');
  log('MB = 10^6 bytes; one request at a time on one keep-alive connection; every download MD5-checked against its upload. ' +
      'pouchdb-server writes through leveldown without fsync; divan answers a write once it is durable.');
  log(`total attachment bench time ${fmt((Date.now() - tStart) / 1000)} s`);
});
