// bigatt.test.js — large attachments through divan's replicator, in bounded
// memory.
//
// A document with attachments travels as CouchDB's multipart: the
// replicator fetches open_revs as multipart/mixed into a temporary file,
// copies each multipart/related part to another, and PUTs it from there
// (src/repl/job.c). Checked, with A (the file's server) replicating its
// local database to a second divan B:
//   - a 150 MB binary attachment and a 20 MB compressible text one (stored
//     gzip-encoded, sent as a gzip part) arrive byte for byte (MD5 of what
//     B serves), with the source's digests;
//   - A's peak RSS (VmHWM) grows by less than 64 MB during the replication
//     (holding the answer in memory, as before, took two copies: > 300 MB);
//   - a second run copies nothing (no_changes).
//
//   DIVAN_BIN=build/cc/divan node test/node/repl/bigatt.test.js
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const { test, eq, ok } = require('../lib/t');
const { runFile, startDivan } = require('../lib/divan');
const T = require('../lib/trees');

const { jr, replicate } = T;
const MB = 1 << 20;
let A, a, B, b;

function hwmKb(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

const md5 = (buf) => crypto.createHash('md5').update(buf).digest('hex');

test('start B', async () => {
  B = await startDivan();
  b = B.url;
});

const bin = crypto.randomBytes(150 * MB);
const text = Buffer.from('All work and no play makes divan a dull database. '.repeat((20 * MB) / 50));
let rev;

test('a source with a 150 MB binary and a 20 MB text attachment', async () => {
  eq((await jr('PUT', a + '/big')).status, 201);
  let r = await jr('PUT', a + '/big/doc/blob.bin', bin, { 'Content-Type': 'application/octet-stream' }, { timeoutMs: 120000 });
  eq(r.status, 201, r.text);
  r = await jr('PUT', `${a}/big/doc/notes.txt?rev=${r.json.rev}`, text, { 'Content-Type': 'text/plain' }, { timeoutMs: 120000 });
  eq(r.status, 201, r.text);
  rev = r.json.rev;
});

test('replicated to B byte for byte, A\'s peak RSS grows < 64 MB', async () => {
  const before = hwmKb(A.pid);
  const r = await replicate(a, { source: 'big', target: b + '/big', create_target: true }, 180000);
  eq(r.status, 200, r.text);
  const after = hwmKb(A.pid);
  if (process.env.T_VERBOSE) console.log(`  A VmHWM ${before} kB before, ${after} kB after (${r.ms} ms)`);
  ok(after - before < 64 * 1024, `A's peak RSS grew by ${after - before} kB during the replication`);
  const h = r.json.history[0];
  eq([h.docs_read, h.docs_written, h.doc_write_failures], [1, 1, 0], JSON.stringify(h));
  const src = (await jr('GET', a + '/big/doc')).json;
  const dst = (await jr('GET', b + '/big/doc')).json;
  eq(dst._rev, rev);
  for (const n of ['blob.bin', 'notes.txt']) {
    eq(dst._attachments[n].digest, src._attachments[n].digest, n + ' digest');
    eq(dst._attachments[n].length, src._attachments[n].length, n + ' length');
  }
  const gb = await jr('GET', b + '/big/doc/blob.bin', null, {}, { timeoutMs: 120000 });
  eq([gb.status, md5(gb.body)], [200, md5(bin)], 'blob.bin bytes');
  const gt = await jr('GET', b + '/big/doc/notes.txt');
  eq([gt.status, gt.text.length, gt.text === text.toString()], [200, text.length, true], 'notes.txt bytes');
});

test('a second run copies nothing', async () => {
  const r = await replicate(a, { source: 'big', target: b + '/big' });
  eq([r.status, r.json.no_changes], [200, true], r.text);
});

process.on('exit', () => { if (B && B.proc.exitCode === null) B.proc.kill('SIGKILL'); });

runFile(__filename, {
  seconds: 150,
  started: ({ srv }) => { A = srv; a = srv.url; },
  finished: async () => {
    T.resetAgent();
    if (B) {
      await B.stop().catch((e) => { console.log('FAIL second divan (B): ' + e.message); process.exitCode = 1; });
      fs.rmSync(B.dataDir, { recursive: true, force: true });
    }
  },
});
