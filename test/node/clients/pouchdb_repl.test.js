// pouchdb_repl.test.js — PouchDB (npm) as the other side of a replication
// with divan, both directions, through divan's replicator and through
// PouchDB's.
//
// Servers: the file's divan (D) and pouchdb-server 4.2.0 (express-pouchdb on
// an in-memory PouchDB; test/node/node_modules; run as bench/http/lib.js
// runs it). Each source is built with lib/trees.js buildSource: conflicts
// written with new_edits=false, deleted leaves, disjoint roots, deletions,
// inline attachments (one of 150 KB), a design doc and a _local doc. After
// every replication the two databases are compared tree by tree
// (open_revs=all&revs=true for every id of _changes?style=all_docs, on both
// servers over HTTP, or PouchDB's get(id, {open_revs:'all', revs:true})),
// and the attachments byte by byte. Attachment digests and revpos are not
// compared across implementations: divan keeps text/plain gzip'd and its
// digest is then the MD5 of the encoded bytes (CouchDB's rule) where PouchDB
// hashes the identity bytes, and PouchDB resets revpos.
//   - divan's replicator pulls from pouchdb-server (one-shot; again: no_changes;
//     its checkpoint doc on pouchdb-server), pushes to it (create_target), and
//     pulls continuously while pouchdb-server is written to (then cancel);
//   - PouchDB's replicator (pouchdb-adapter-memory): divan → memory → a new
//     divan db; and server to server: pouchdb-server → divan, divan →
//     pouchdb-server, with a second run writing nothing.
//
//   DIVAN_BIN=build/cc/divan node test/node/clients/pouchdb_repl.test.js
'use strict';
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const PouchDB = require('pouchdb').plugin(require('pouchdb-adapter-memory'));
const { test, eq, ok, pouchLeaves } = require('../lib/t');
const { runFile, ROOT } = require('../lib/divan');
const T = require('../lib/trees');

const { jr, replicate, stats, waitFor, changesOf, compareDbs, compareAttachments, buildSource, leafOf } = T;

const POUCH_BIN = path.join(ROOT, 'test', 'node', 'node_modules', 'pouchdb-server', 'bin', 'pouchdb-server');
const XOPTS = { digest: false, revpos: false }; // across implementations (see above)

let d = '';          // divan's URL with credentials
let ps = '';         // pouchdb-server's URL (no auth: admin party)
let psProc = null, psDir = null;
let psBuilt = null, dBuilt = null;
const locals = [];

function freePort() {
  return new Promise((res, rej) => {
    const srv = net.createServer();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => { const port = srv.address().port; srv.close(() => res(port)); });
  });
}

async function startPouchServer() {
  psDir = fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || os.tmpdir(), 'pouchdb-server-'));
  const port = await freePort();
  let err = '';
  psProc = spawn(process.execPath, ['--unhandled-rejections=warn', POUCH_BIN, '--host', '127.0.0.1', '--port', String(port),
    '--dir', psDir, '--config', path.join(psDir, 'config.json'), '-m', '-n'], { cwd: psDir, stdio: ['ignore', 'ignore', 'pipe'] });
  psProc.stderr.on('data', (c) => { err = (err + c).slice(-4000); });
  ps = 'http://127.0.0.1:' + port;
  await waitFor('pouchdb-server to answer', async () => {
    if (psProc.exitCode !== null) throw new Error('pouchdb-server exited: ' + err);
    return (await jr('GET', ps + '/', null, {}, { timeoutMs: 3000 })).status === 200;
  }, 20000, 100);
}

function stopPouchServer() {
  if (!psProc || psProc.exitCode !== null || psProc.signalCode !== null) return Promise.resolve();
  return new Promise((res) => {
    const t = setTimeout(() => { try { process.kill(psProc.pid, 'SIGKILL'); } catch (e) { /* gone */ } }, 5000);
    psProc.on('exit', () => { clearTimeout(t); res(); });
    try { process.kill(psProc.pid, 'SIGTERM'); } catch (e) { clearTimeout(t); res(); }
  });
}

// One PouchDB replication that must succeed without write failures.
async function pouchReplicate(from, to) {
  const res = await PouchDB.replicate(from, to);
  ok(res.ok, JSON.stringify(res).slice(0, 500));
  eq([res.doc_write_failures, res.errors], [0, []], 'PouchDB replication errors: ' + JSON.stringify(res.errors).slice(0, 500));
  return res;
}

// start: pouchdb-server; build a source on each side
test('start', async () => {
  await startPouchServer();
  const w = await jr('GET', ps + '/');
  ok(w.json && w.json['express-pouchdb'], 'pouchdb-server answers: ' + w.text);
  psBuilt = await buildSource(ps, 'psrc', { n: 400 });
  dBuilt = await buildSource(d, 'dsrc', { n: 400 });
  eq(psBuilt.ids, dBuilt.ids, 'the two sources have the same shape');
});

test('divan\'s replicator pulls from pouchdb-server: identical trees and bytes; again: no_changes', async () => {
  const r = await replicate(d, { source: ps + '/psrc', target: 'fromps', create_target: true });
  eq(r.status, 200, `pull from pouchdb-server: ${r.status} ${r.text.slice(0, 500)}`);
  ok(r.json.ok, r.text);
  const st = stats(r.json);
  eq([st.docs_written, st.doc_write_failures], [psBuilt.leaves, 0], JSON.stringify(st));
  await compareDbs(ps, 'psrc', d, 'fromps', XOPTS);
  await compareAttachments(ps, 'psrc', d, 'fromps', psBuilt.attIds, psBuilt.atts);
  // its checkpoint on both sides (found on divan's side, read back on pouchdb-server)
  const l = await jr('GET', d + '/fromps/_local_docs?include_docs=true');
  const cp = l.json.rows.find((x) => x.doc && x.doc.session_id === r.json.session_id);
  ok(cp, 'the checkpoint on divan: ' + l.text.slice(0, 500));
  const pcp = await jr('GET', `${ps}/psrc/${cp.id}`);
  eq(pcp.status, 200, `the checkpoint on pouchdb-server (GET ${cp.id}): ${pcp.status} ${pcp.text}`);
  eq(pcp.json.session_id, r.json.session_id);
  const again = await replicate(d, { source: ps + '/psrc', target: 'fromps' });
  eq([again.status, again.json.no_changes], [200, true], again.text.slice(0, 300));
});

test('divan\'s replicator pushes to pouchdb-server (create_target): identical trees and bytes', async () => {
  const r = await replicate(d, { source: 'dsrc', target: ps + '/fromd', create_target: true });
  eq(r.status, 200, `push to pouchdb-server: ${r.status} ${r.text.slice(0, 500)}`);
  const st = stats(r.json);
  eq([st.docs_written, st.doc_write_failures], [dBuilt.leaves, 0], JSON.stringify(st));
  // the bytes first: their message says what went wrong with an attachment
  await compareAttachments(d, 'dsrc', ps, 'fromd', dBuilt.attIds, dBuilt.atts);
  await compareDbs(d, 'dsrc', ps, 'fromd', XOPTS);
});

test('divan\'s replicator pulls continuously from pouchdb-server; cancel', async () => {
  const body = { source: ps + '/psrc', target: 'liveps', continuous: true, create_target: true };
  const r = await replicate(d, body, 30000);
  eq(r.status, 202, `${r.status} ${r.text}`);
  await waitFor('liveps to equal psrc', async () => { await compareDbs(ps, 'psrc', d, 'liveps', XOPTS); return true; }, 30000, 500);
  await T.plainDocs(ps, 'psrc', 30, { prefix: 'live-' });
  await T.mutate(ps, 'psrc', { tag: 'pl' });
  await waitFor('live edits on pouchdb-server to arrive', async () => { await compareDbs(ps, 'psrc', d, 'liveps', XOPTS); return true; }, 30000, 500);
  const c = await replicate(d, Object.assign({ cancel: true }, body), 30000);
  eq([c.status, c.json._local_id], [200, r.json._local_id], c.text);
});

test('PouchDB\'s replicator: divan → memory → a new divan db, every tree and byte', async () => {
  const mem = new PouchDB('mem-' + Date.now(), { adapter: 'memory' });
  locals.push(mem);
  const res = await pouchReplicate(d + '/dsrc', mem);
  ok(res.docs_written >= dBuilt.leaves - 1, `docs_written ${res.docs_written}, leaves ${dBuilt.leaves}`);
  const ids = (await changesOf(d, 'dsrc')).ids;
  eq((await mem.changes({ style: 'all_docs' })).results.map((c) => c.id).sort(), ids, 'the same ids in PouchDB');
  await T.pool(ids, 8, async (id) => {
    const [dt, pt] = await Promise.all([T.tree(d, 'dsrc', id, XOPTS), pouchLeaves(mem, id)]);
    eq(pt.map((x) => leafOf(x, XOPTS)), dt, `${id}: the tree in PouchDB`);
  });
  for (const id of dBuilt.attIds) {
    for (const [name, bytes] of Object.entries(dBuilt.atts[id])) ok((await mem.getAttachment(id, name)).equals(bytes), `${id}/${name} in PouchDB`);
  }
  await pouchReplicate(mem, d + '/back');
  await compareDbs(d, 'dsrc', d, 'back', { revpos: false });
  await compareAttachments(d, 'dsrc', d, 'back', dBuilt.attIds, dBuilt.atts);
});

test('PouchDB\'s replicator server to server: pouchdb-server → divan, divan → pouchdb-server', async () => {
  const r1 = await pouchReplicate(ps + '/psrc', d + '/viapouch');
  ok(r1.docs_written > 0);
  await compareDbs(ps, 'psrc', d, 'viapouch', XOPTS);
  await compareAttachments(ps, 'psrc', d, 'viapouch', psBuilt.attIds, psBuilt.atts);
  await pouchReplicate(d + '/dsrc', ps + '/viapouch2');
  await compareDbs(d, 'dsrc', ps, 'viapouch2', XOPTS);
  await compareAttachments(d, 'dsrc', ps, 'viapouch2', dBuilt.attIds, dBuilt.atts);
  const again = await pouchReplicate(ps + '/psrc', d + '/viapouch');
  eq(again.docs_written, 0, 'a second run writes nothing');
});

test('divan and pouchdb-server healthy', async () => {
  eq((await jr('GET', d + '/')).status, 200);
  eq((await jr('GET', ps + '/')).status, 200);
  ok(psProc.exitCode === null, 'pouchdb-server alive');
});

// a file that bails (budget, crash) must not leave pouchdb-server behind
process.on('exit', () => { if (psProc && psProc.exitCode === null) try { process.kill(psProc.pid, 'SIGKILL'); } catch (e) { /* gone */ } });

runFile(__filename, {
  seconds: 150,
  started: ({ base }) => { d = base; },
  finished: async () => {
    T.resetAgent();
    for (const l of locals) await l.destroy().catch(() => {});
    await stopPouchServer();
    if (psDir) fs.rmSync(psDir, { recursive: true, force: true });
  },
});
