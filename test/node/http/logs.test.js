// logs.test.js — the log of a real `divan serve` (src/util/log.h,
// src/api/reqlog.c): CouchDB's line format (couch_log_writer_file), one
// notice line per request as chttpd:maybe_log writes it under the
// X-Couch-Request-ID sent back, a server error logged at error under the
// same id, [log] level changed through /_config taking effect at once, the
// file reopened on SIGHUP after a rename (logrotate), the journald writer,
// an unknown writer refused at start — and no credential, cookie or
// password in any line, whatever the requests carried.
'use strict';
const fs = require('fs');
const path = require('path');
const { test, run, req, eq, ok, isErr, rawSocket, statusOf } = require('../lib/t');
const { startDivan } = require('../lib/divan');

// Every secret this file sends; none may appear in the log, on stderr or stdout.
const S = {
  admin: 'Adm1n-pw-7d1e9f',       // DIVAN_ADMIN's password, used as Basic
  wrong: 'Wr0ng-pw-4c2b8a',       // a failed Basic login
  bob: 'B0b-pw-88e1f0',           // an admin made through /_config/admins
  carol: 'Car0l-pw-2a9d77',       // a _users account
  carol2: 'Car0l-new-pw-51be04',  // … and her password changed
  userinfo: 'Us3rinfo-pw-f00d42', // user:pass@ of an absolute-form request target
  query: 'Qu3ry-pw-c0ffee',       // ?password=… in a query string
  token: 'T0ken-9a8b7c6d5e',      // ?access_token=…
  repl: 'R3pl-pw-bead11',         // the password in a replication's source URL
};

let srv, U, logFile;
const J = { 'Content-Type': 'application/json' };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const readLog = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '');
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const LINE = (level, id) => new RegExp(`^\\[${level}\\] \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}Z divan@127\\.0\\.0\\.1 <0\\.\\d+\\.0> ${id} (.*)$`, 'm');

// Lines reach the file from divan's writer thread within ~10 ms, a
// request's once its answer has gone out: wait for a line matching re.
async function waitFor(re, file = logFile, ms = 5000) {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(20)) {
    const m = re.exec(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');
    if (m) return m;
  }
  throw new Error(`no line ${re} in ${file}:\n${(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '').slice(-3000)}`);
}
const lineOf = (id, file = logFile) => waitFor(LINE('notice', id), file);
const idOf = (r) => { ok(/^[0-9a-f]{10}$/.test(r.headers['x-couch-request-id'] || ''), 'X-Couch-Request-ID: ' + JSON.stringify(r.headers)); return r.headers['x-couch-request-id']; };

test('start', async () => {
  srv = await startDivan({ admin: { name: 'admin', password: S.admin }, config: '[log]\nwriter = file\nlevel = debug\n' });
  U = srv.url;
  logFile = path.join(srv.dataDir, 'divan.log');
});

test('the default file is DATA/divan.log, in CouchDB\'s line format, from the start on', async () => {
  await waitFor(/ -------- divan \S+ has started on http:\/\/127\.0\.0\.1:\d+\/$/m);
  const text = readLog();
  ok(LINE('info', '--------').test(text), text);
  ok(text.split('\n').slice(0, -1).every((l) => /^\[(debug|info|notice|warning|error|critical|alert|emergency)\] /.test(l)), text);
});

test('a request is one notice line as chttpd logs it, under the X-Couch-Request-ID it answered with', async () => {
  const r = await req('GET', U + '/_all_dbs?limit=5&descending=true');
  eq(r.status, 200);
  const id = idOf(r);
  const m = await lineOf(id);
  const want = new RegExp(`^127\\.0\\.0\\.1:${srv.port} 127\\.0\\.0\\.1 admin GET /_all_dbs\\?limit=5&descending=true 200 ok (\\d+)$`);
  ok(want.test(m[1]), m[0]);
  const t = Date.parse(/\] (\S+) /.exec(m[0])[1]);
  ok(Math.abs(Date.now() - t) < 60000, 'UTC time, now: ' + m[0]);
  // anonymous: "undefined"; an error status; HEAD as sent; a Host of the client's choosing
  const a = await req('GET', srv.base + '/nosuchdb', null, { Host: 'example.org:99' });
  isErr(a, 404, 'not_found');
  ok(/^example\.org:99 127\.0\.0\.1 undefined GET \/nosuchdb 404 ok \d+$/.test((await lineOf(idOf(a)))[1]), (await lineOf(idOf(a)))[0]);
  const h = await req('HEAD', U + '/_up');
  ok(/^127\.0\.0\.1:\d+ 127\.0\.0\.1 admin HEAD \/_up 200 ok \d+$/.test((await lineOf(idOf(h)))[1]));
  // a query that re-encodes past the message cap ('+' is a space, %20): cut, the outcome kept
  const long = await req('GET', U + '/_up?q=' + '+'.repeat(7000));
  eq(long.status, 200);
  const ll = (await lineOf(idOf(long)))[1];
  ok(/^127\.0\.0\.1:\d+ 127\.0\.0\.1 admin GET \/_up\?q=(%20)+%?2?\.\.\. 200 ok \d+$/.test(ll) && ll.length < 16000, ll.slice(0, 100) + '…' + ll.slice(-100));
  // every request gets an id of its own
  const ids = new Set();
  for (let i = 0; i < 20; i++) ids.add(idOf(await req('GET', U + '/_up')));
  eq(ids.size, 20);
});

test('a user name is url-encoded as couch_util:url_encode', async () => {
  const name = 'jöe b/x';
  eq((await req('PUT', U + '/_users/' + encodeURIComponent('org.couchdb.user:' + name), { name, password: 'irrelevant-but-secret-1', roles: [], type: 'user' })).status, 201);
  const r = await req('GET', srv.base + '/_session', null, { Authorization: 'Basic ' + Buffer.from(name + ':irrelevant-but-secret-1').toString('base64') });
  eq(r.status, 200, r.text);
  ok(/ j%C3%B6e%20b%2Fx GET \/_session 200 ok \d+$/.test((await lineOf(idOf(r)))[1]), (await lineOf(idOf(r)))[0]);
});

test('a server error is logged at error under its request id, then its request line', async () => {
  eq((await req('PUT', U + '/errs')).status, 201);
  eq((await req('PUT', U + '/errs/_design/v', { validate_doc_update: 'function (n) { if (n.boom) null.boom(); }' })).status, 201);
  const r = await req('PUT', U + '/errs/d1', { boom: true });
  eq(r.status, 500, r.text);
  const id = idOf(r);
  const m = await lineOf(id);
  ok(/ admin PUT \/errs\/d1 500 ok \d+$/.test(m[1]), m[0]);
  const e = await waitFor(LINE('error', id));
  ok(e[1].startsWith(`req_err 500 ${r.json.error} : ${r.json.reason}`), e[0]);
  ok(readLog().indexOf(e[0]) < readLog().indexOf(m[0]), 'the error comes before the request line');
  // a 4xx is not an error of the server's
  const c = await req('PUT', U + '/errs/d1', { boom: false });
  eq(c.status, 201);
  const f = await req('PUT', U + '/errs/d1', { boom: false });
  eq(f.status, 409);
  await lineOf(idOf(f));
  ok(!LINE('error', idOf(f)).test(readLog()));
});

test('PUT /_node/_local/_config/log/level takes effect at once', async () => {
  eq((await req('PUT', U + '/_node/_local/_config/log/level', JSON.stringify('warning'), J)).status, 200);
  const quiet = [];
  for (let i = 0; i < 5; i++) quiet.push(idOf(await req('GET', U + '/_up')));
  eq((await req('PUT', U + '/_node/_local/_config/log/level', JSON.stringify('notice'), J)).json, 'warning');
  const loud = idOf(await req('GET', U + '/_up'));
  await lineOf(loud);
  const text = readLog();
  for (const id of quiet) ok(!text.includes(id), `${id} logged at warning`);
  // below notice: not even the request lines; "none": nothing at all
  eq((await req('PUT', U + '/_node/_local/_config/log/level', JSON.stringify('none'), J)).status, 200);
  await sleep(50); // what came before is written
  const size = fs.statSync(logFile).size;
  const e = await req('PUT', U + '/errs/d2', { boom: true });
  eq(e.status, 500);
  await sleep(200);
  eq(fs.statSync(logFile).size, size, 'nothing written at level none');
  // a name CouchDB does not know is info (couch_log_util:level_to_atom), said once
  eq((await req('PUT', U + '/_node/_local/_config/log/level', JSON.stringify('chatty'), J)).status, 200);
  await waitFor(/\[warning\] .* \[log\] level = chatty is not a level; info is used$/m);
  await lineOf(idOf(await req('GET', U + '/_up')));
  // and back to debug for the rest of this file
  eq((await req('PUT', U + '/_node/_local/_config/log/level', JSON.stringify('debug'), J)).status, 200);
  // a writer divan does not have: the log stays as it was, and says why
  eq((await req('PUT', U + '/_node/_local/_config/log/writer', JSON.stringify('syslog'), J)).status, 200);
  await waitFor(/\[error\] .* \[log\] writer = syslog: divan writes its log to stderr, file or journald \(not syslog\); the log is unchanged$/m);
  await lineOf(idOf(await req('GET', U + '/_up')));
  eq((await req('PUT', U + '/_node/_local/_config/log/writer', JSON.stringify('file'), J)).status, 200);
});

test('SIGHUP reopens the file: after a rename the new file gets the lines, the old one stops growing', async () => {
  const old = logFile + '.1';
  fs.renameSync(logFile, old);
  const before = idOf(await req('GET', U + '/_up'));
  await lineOf(before, old); // not reopened yet: the moved file still gets the lines
  ok(!fs.existsSync(logFile));
  process.kill(srv.pid, 'SIGHUP');
  await waitFor(/^\[info\] .* -------- SIGHUP: the log is open again$/m);
  const size = fs.statSync(old).size;
  const after = [];
  for (let i = 0; i < 5; i++) after.push(idOf(await req('GET', U + '/_up')));
  for (const id of after) await lineOf(id);
  eq(fs.statSync(old).size, size, 'the old file stopped growing');
  ok(!fs.readFileSync(old, 'utf8').includes(after[0]));
  ok(fs.readFileSync(old, 'utf8').includes(before));
  // the server still stops cleanly (SIGHUP did not end the wait for SIGTERM)
  eq((await req('GET', U + '/_up')).status, 200);
});

test('no credential, cookie or password reaches the log, stderr or stdout', async () => {
  const sent = Object.assign({}, S); // and what the server hands back that is secret too
  // Basic, right and wrong
  eq((await req('GET', U + '/_all_dbs')).status, 200);
  isErr(await req('GET', srv.base + '/_all_dbs', null, { Authorization: 'Basic ' + Buffer.from('admin:' + S.wrong).toString('base64') }), 401, 'unauthorized');
  // cookie login, JSON and form, then the cookie used
  const s1 = await req('POST', srv.base + '/_session', { name: 'admin', password: S.admin });
  eq(s1.status, 200, s1.text);
  const s2 = await req('POST', srv.base + '/_session', `name=admin&password=${encodeURIComponent(S.admin)}`, { 'Content-Type': 'application/x-www-form-urlencoded' });
  eq(s2.status, 200, s2.text);
  const cookie = /AuthSession=([^;]+)/.exec(s1.headers['set-cookie'][0])[1];
  sent.cookie = cookie;
  sent.cookie2 = /AuthSession=([^;]+)/.exec(s2.headers['set-cookie'][0])[1];
  const c = await req('GET', srv.base + '/_session', null, { Cookie: 'AuthSession=' + cookie });
  eq(c.json.userCtx.name, 'admin');
  sent.refreshed = (/AuthSession=([^;]+)/.exec((c.headers['set-cookie'] || [''])[0]) || [])[1];
  isErr(await req('POST', srv.base + '/_session', { name: 'admin', password: S.wrong }), 401, 'unauthorized');
  // an admin made through _config, and its hash read back
  eq((await req('PUT', U + '/_node/_local/_config/admins/bob', JSON.stringify(S.bob), J)).status, 200);
  sent.bobHash = (await req('GET', U + '/_node/_local/_config/admins/bob')).json;
  ok(/^-pbkdf2/.test(sent.bobHash), sent.bobHash);
  eq((await req('GET', srv.base + '/_all_dbs', null, { Authorization: 'Basic ' + Buffer.from('bob:' + S.bob).toString('base64') })).status, 200);
  // a _users account, its password changed, its stored keys read back
  const uid = '/_users/org.couchdb.user:carol';
  const u1 = await req('PUT', U + uid, { name: 'carol', password: S.carol, roles: [], type: 'user' });
  eq(u1.status, 201, u1.text);
  const cs = await req('POST', srv.base + '/_session', { name: 'carol', password: S.carol });
  eq(cs.status, 200, cs.text);
  sent.carolCookie = /AuthSession=([^;]+)/.exec(cs.headers['set-cookie'][0])[1];
  const u2 = await req('PUT', U + uid + '?rev=' + u1.json.rev, { name: 'carol', password: S.carol2, roles: [], type: 'user' });
  eq(u2.status, 201, u2.text);
  const doc = (await req('GET', U + uid)).json;
  sent.derivedKey = doc.derived_key;
  sent.salt = doc.salt;
  ok(sent.derivedKey && sent.salt, JSON.stringify(doc));
  eq((await req('GET', srv.base + '/_session', null, { Authorization: 'Basic ' + Buffer.from('carol:' + S.carol2).toString('base64') })).status, 200);
  // a target in absolute form with user:password@ (what a proxy-minded client sends)
  const raw = await rawSocket(srv.port, `GET http://admin:${S.userinfo}@127.0.0.1:${srv.port}/_all_dbs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  const rawId = /X-Couch-Request-ID: ([0-9a-f]{10})/i.exec(raw)[1];
  ok(statusOf(raw) >= 400, raw);
  const rl = await lineOf(rawId);
  ok(rl[1].includes(` GET http://127.0.0.1:${srv.port}/_all_dbs ${statusOf(raw)} ok `), rl[0]);
  // secrets in a query string
  const q = await req('GET', U + `/_up?password=${S.query}&access_token=${S.token}&keep=visible`);
  ok(/ GET \/_up\?password=REDACTED&access_token=REDACTED&keep=visible 200 ok \d+$/.test((await lineOf(idOf(q)))[1]), (await lineOf(idOf(q)))[0]);
  // a replication whose source carries a password (it fails: no such database)
  const rp = await req('POST', U + '/_replicate', { source: `http://admin:${S.repl}@127.0.0.1:${srv.port}/nosuchsource`, target: 'tgt', create_target: true });
  ok(rp.status >= 400, rp.text);
  await lineOf(idOf(rp));
  await sleep(300); // what the replicator logs on its way out
  // the whole log, stderr and stdout
  const rotated = fs.existsSync(logFile + '.1') ? fs.readFileSync(logFile + '.1', 'utf8') : '';
  const where = { log: rotated + readLog(), stderr: srv.log(), stdout: srv.stdout() };
  ok(where.log.includes(' POST /_session 200 ok ') && where.log.includes(' POST /_replicate '), 'the requests were logged');
  for (const [name, secret] of Object.entries(sent)) {
    if (!secret) continue;
    const forms = [secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64')];
    for (const [w, text] of Object.entries(where))
      for (const f of forms) ok(!text.includes(f), `${name} (${f}) appears in ${w}`);
  }
  for (const [w, text] of Object.entries(where)) ok(!/AuthSession=|Basic [A-Za-z0-9+/=]{8}/.test(text), `a header value in ${w}`);
});

test('writer = journald: stderr lines with sd-daemon priorities, no level or time', async () => {
  const j = await startDivan({ config: '[log]\nwriter = journald\n' });
  try {
    const r = await req('GET', j.url + '/_up');
    const id = idOf(r);
    const re = new RegExp(`^<5>divan@127\\.0\\.0\\.1 <0\\.\\d+\\.0> ${id} 127\\.0\\.0\\.1:${j.port} 127\\.0\\.0\\.1 admin GET /_up 200 ok \\d+$`, 'm');
    ok(await j.logSays(re, 5000), j.log());
    ok(/^<6>divan@127\.0\.0\.1 <0\.\d+\.0> -------- divan \S+ has started on /m.test(j.log()), j.log());
    ok(!/^\[/m.test(j.log()), 'no [level] line: ' + j.log());
  } finally {
    await j.stop();
    fs.rmSync(j.dataDir, { recursive: true, force: true });
  }
});

// startDivan's error for a server that exits before it listens.
async function failedStart(config) {
  const dataDir = fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || require('os').tmpdir(), 'divan-'));
  try {
    const x = await startDivan({ config, dataDir }).catch((e) => e);
    if (!(x instanceof Error)) { await x.kill9(); throw new Error('divan started with ' + config); }
    return x.message;
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

test('a writer divan does not have stops the start with one plain line; so does a file it cannot open', async () => {
  let err = await failedStart('[log]\nwriter = syslog\n');
  ok(/divan exited \(1\)/.test(err), err);
  ok(/\bdivan: \[log\] writer = syslog: divan writes its log to stderr, file or journald \(not syslog\)$/m.test(err), err);
  err = await failedStart('[log]\nwriter = file\nfile = /proc/nope/divan.log\n');
  ok(/divan exited \(1\)/.test(err), err);
  ok(/\bdivan: cannot open the log file \/proc\/nope\/divan\.log: /m.test(err), err);
});

test('stop', async () => {
  await srv.stop();
  ok(/ -------- stopping \(signal 15\)$/m.test(readLog()), readLog().slice(-500));
  fs.rmSync(srv.dataDir, { recursive: true, force: true });
});

run();
