// fsyncfail.test.js — issue 22, "a failed fsync": the server runs with an
// LD_PRELOAD shim (test/fault/fsyncfail.c, build/<tag>/libfsyncfail.so) that
// makes every fsync/fdatasync fail with EIO once a trigger file exists.
// With writers running (document PUTs and _bulk_docs) the trigger is armed:
//   - no write sent after the trigger is acknowledged: each gets 500
//     {"error":"read_only"} (CouchDB answers a write its couch_file could not
//     sync with a 500 too);
//   - the store stays read-only even once fsync works again (fsyncgate: a
//     later sync that succeeds proves nothing), new databases included;
//   - reads keep answering; /_up is 404 {"status":"read_only","reason"};
//     the stats' divan.rocksdb.read_only is 1, write_failures counts;
//   - after a restart without the shim every write answered 201 is there
//     with the revision it was given, the store takes writes again, and
//     `divan check` accepts the data directory.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { test, run, req, eq, ok, isErr } = require('../lib/t');
const { startDivan } = require('../lib/divan');

const WRITERS = 6, BEFORE_MS = 1500, AFTER_MS = 1000;
const bin = path.resolve(process.env.DIVAN_BIN || 'divan');
const shim = path.join(path.dirname(bin), 'libfsyncfail.so');
const tmp = fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || os.tmpdir(), 'divan-fsync-'));
const trigger = path.join(tmp, 'trigger'), shimLog = path.join(tmp, 'shim.log');
const dataDir = path.join(tmp, 'data');
let srv, U, armedAt = 0;
const acked = new Map(); // id → rev of every write answered 201 (or ok in a bulk answer)
const after = [];        // answers to writes sent after the trigger: { what, status, error }
const before = { ok: 0, refused: 0 }; // writes answered before the trigger
const across = { ok: 0, refused: 0, other: 0 }; // sent before it, answered after: either

process.on('exit', () => {
  if (srv) { try { process.kill(srv.pid, 'SIGKILL'); } catch (e) { /* gone */ } }
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function writer(k, stopAt) {
  for (let i = 0; Date.now() < stopAt; i++) {
    const sentArmed = armedAt > 0;
    let r, ids;
    if (i % 4 === 3) { // a bulk of three
      ids = [0, 1, 2].map((j) => `w${k}-${i}-${j}`);
      r = await req('POST', `${U}/db/_bulk_docs`, { docs: ids.map((id) => ({ _id: id, k, i })) });
      if (r.status === 201) for (const row of r.json) if (row.ok) acked.set(row.id, row.rev);
    } else {
      ids = [`w${k}-${i}`];
      r = await req('PUT', `${U}/db/${ids[0]}`, { k, i, pad: 'x'.repeat(200) });
      if (r.status === 201) acked.set(r.json.id, r.json.rev);
    }
    const okRows = r.status === 201 && (Array.isArray(r.json) ? r.json.filter((row) => row.ok).length : 1);
    if (sentArmed) after.push({ what: ids.join(','), status: r.status, error: r.json && r.json.error, okRows });
    else if (!armedAt) before[okRows ? 'ok' : 'refused']++;
    else across[okRows ? 'ok' : r.status === 500 && r.json.error === 'read_only' ? 'refused' : 'other']++;
  }
}

test('the shim is built beside the binary', async () => {
  ok(fs.existsSync(shim), `${shim} missing (make ${path.relative(process.cwd(), shim)})`);
});

test('writers run; the trigger is armed; nothing sent after it is acknowledged', async () => {
  fs.mkdirSync(dataDir);
  // the shim is not sanitized: it loads before a sanitizer build's runtime
  const asan = ((process.env.ASAN_OPTIONS || '') + ':verify_asan_link_order=0').replace(/^:/, '');
  srv = await startDivan({
    dataDir,
    env: { LD_PRELOAD: shim, DV_FSYNCFAIL_TRIGGER: trigger, DV_FSYNCFAIL_LOG: shimLog, ASAN_OPTIONS: asan },
  });
  U = srv.url;
  eq((await req('PUT', U + '/db')).status, 201);
  eq((await req('PUT', U + '/db/before', { a: 1 })).status, 201);
  const stopAt = Date.now() + BEFORE_MS + AFTER_MS;
  const ws = [];
  for (let k = 0; k < WRITERS; k++) ws.push(writer(k, stopAt));
  await new Promise((r) => setTimeout(r, BEFORE_MS));
  fs.writeFileSync(trigger, '');
  armedAt = Date.now();
  await Promise.all(ws);
  console.log(`    before the trigger: ${before.ok} acknowledged; across it: ${across.ok} acknowledged, ${across.refused} refused; after it: ${after.length} writes`);
  ok(before.ok >= WRITERS, `only ${before.ok} writes before the trigger`);
  eq(before.refused, 0);
  eq(across.other, 0);
  ok(after.length >= WRITERS, `only ${after.length} writes after the trigger`);
  const wrong = after.filter((a) => a.status !== 500 || a.error !== 'read_only' || a.okRows);
  eq(wrong.slice(0, 5), [], `writes sent after the trigger answered otherwise than 500 read_only`);
  ok(fs.existsSync(shimLog) && /EIO/.test(fs.readFileSync(shimLog, 'utf8')), 'the shim never failed a sync');
  const said = /rocksdb write failed: .*sync.*read-only until the server restarts/;
  ok(await srv.logSays(said), 'the log says why');
});

test('reads answer while read-only; /_up and the stats say so', async () => {
  eq((await req('GET', U + '/db/before')).json.a, 1);
  const some = [...acked.keys()].slice(0, 20);
  for (const id of some) eq((await req('GET', `${U}/db/${id}`)).json._rev, acked.get(id));
  eq((await req('GET', U + '/db')).status, 200);
  eq((await req('GET', U + '/db/_all_docs?limit=5')).json.rows.length, 5);
  const up = await req('GET', U + '/_up');
  eq(up.status, 404, up.text);
  eq(up.json.status, 'read_only');
  ok(/restart/.test(up.json.reason), up.text);
  const st = (await req('GET', U + '/_node/_local/_stats/divan/rocksdb')).json;
  eq(st.read_only.value, 1);
  ok(st.write_failures.value >= 1, JSON.stringify(st.write_failures));
});

test('syncs work again: the store stays read-only until a restart', async () => {
  fs.unlinkSync(trigger);
  await new Promise((r) => setTimeout(r, 1500)); // past the engine's resume interval (500 ms)
  isErr(await req('PUT', U + '/db/later', { a: 2 }), 500, 'read_only');
  isErr(await req('PUT', U + '/otherdb'), 500, 'read_only');
  isErr(await req('DELETE', U + '/db'), 500, 'read_only');
  eq((await req('GET', U + '/_up')).status, 404);
});

test('after a restart every acknowledged write is there; writes work again', async () => {
  await srv.stop();
  srv = await startDivan({ dataDir });
  U = srv.url;
  const up = await req('GET', U + '/_up');
  eq(up.status, 200, up.text);
  eq((await req('GET', U + '/db/before')).status, 200);
  const rows = (await req('GET', U + '/db/_all_docs')).json.rows;
  const have = new Map(rows.map((r) => [r.id, r.value.rev]));
  let missing = 0;
  for (const [id, rev] of acked) if (have.get(id) !== rev) missing++;
  console.log(`    ${acked.size} acknowledged writes, ${missing} missing; ${rows.length} documents after the restart`);
  eq(missing, 0);
  eq((await req('PUT', U + '/db/later', { a: 2 })).status, 201);
  eq((await req('PUT', U + '/otherdb')).status, 201);
  const st = (await req('GET', U + '/_node/_local/_stats/divan/rocksdb')).json;
  eq(st.read_only.value, 0);
  await srv.stop();
  srv = null;
  // every invariant of the key layout holds on what the restart recovered
  const ck = spawnSync(bin, ['check', '--data', dataDir], { encoding: 'utf8' });
  eq(ck.status, 0, `divan check: ${ck.stdout}${ck.stderr}`);
});

run().then(() => process.exit());
