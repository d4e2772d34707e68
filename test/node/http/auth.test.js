// auth.test.js — authentication and authorization, black-box, as CouchDB 3.x
// answers them: server admins (DIVAN_ADMIN, [admins] in local.ini, created
// on a first start without one, added through /_node/_local/_config), Basic
// auth, cookie auth through /_session, _users accounts and the _users
// validation rules, per-database _security (members, db admins,
// admin-only by default), the server-level endpoints only server admins
// may use, proxy-auth headers ignored while proxy auth is off, CORS.
//
// Then the attack catalog: every entry is one hostile request, the status
// (and error/reason) CouchDB answers it with, and where it tried to change
// something a re-read as admin showing nothing changed; a snapshot of the
// whole watched state taken before the catalog is compared after it. The
// suite ends with "attack catalog: N requests, all refused".
//
// Where the expected values come from (apache/couchdb, 3.x line):
//   couch_httpd_auth.erl     Basic parsing, cookie format/checks, /_session
//   chttpd_auth_request.erl  which paths need a server admin / db admin
//   chttpd.erl               error bodies, verify_is_server_admin
//   chttpd_misc.erl          _active_tasks admin-only
//   couch_db.erl             member/admin checks and their reasons
//   couch_users_db.erl       _users reads/writes (404 for other users' docs)
//   couch_js_functions.hrl   the _users validate_doc_update messages
//   chttpd_node.erl          /_node/{node}/_config
//   chttpd_cors.erl          preflight and CORS headers
//   test/elixir/test/{users_db_security,cookie_auth,config}_test.exs
//
//   DIVAN_BIN=./divan TEST_TMPDIR=/tmp node test/node/http/auth.test.js
//   T_VERBOSE=1 lists every check; T_ONLY=substring runs a subset.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { test, run, send, eq, ok, assert } = require('../lib/t');
const { startDivan } = require('../lib/divan');

// ---- the server, the people, the databases ---------------------------------

let srv = null; // the main server (restarted once near the end)
const extra = []; // other servers this file starts (stopped at the end)
const dirs = new Set(); // every data directory used (removed at the end)

// Start another server / stop it (the main one is srv).
async function launch(opts) {
  if (opts && opts.dataDir) dirs.add(opts.dataDir);
  const s = await startDivan(opts);
  dirs.add(s.dataDir);
  extra.push(s);
  return s;
}
async function halt(s) {
  const i = extra.indexOf(s);
  if (i >= 0) extra.splice(i, 1);
  await s.stop();
}
const ADMIN = { name: 'admin', password: 'testpass' }; // startDivan's DIVAN_ADMIN
const ALICE = { name: 'alice', password: 'alice-pw-1' }; // member of secret, teamdb
const BOB = { name: 'bob', password: 'bob-pw-1' }; // a valid user, member of nothing
const CAROL = { name: 'carol', password: 'carol-pw-1', roles: ['staff'] }; // member of staffdb by role
const DAVE = { name: 'dave', password: 'dave-pw-1' }; // db admin of teamdb
const COLIN = { name: 'colin', password: 'p:a:ss' }; // a password with colons
const ZOE = { name: 'zoë', password: 'pässwörd' }; // UTF-8 name and password
const FRANK = { name: 'frank', password: 'frank-pw-1' }; // changes his password
const ZED = { name: 'zed', password: 'zed-pw-1' }; // deleted after logging in

// The reasons CouchDB gives (chttpd.erl, couch_db.erl, chttpd_auth_request.erl,
// couch_httpd_auth.erl).
const R = {
  badCreds: 'Name or password is incorrect.',
  notAuthorizedDb: 'You are not authorized to access this db.', // anonymous, not a member
  notAllowedDb: 'You are not allowed to access this db.', // named user, not a member
  notServerAdmin: 'You are not a server admin.',
  notDbAdmin: 'You are not a db or server admin.', // couch_db:check_is_admin
  notServerOrDbAdmin: 'You are not a server or db admin.', // chttpd_auth_request:require_db_admin
  badCookie: 'Malformed AuthSession cookie. Please clear your cookies.',
  noUsername: 'request body must contain a username',
  twoUsernames: 'request body contains different usernames',
  pleaseLogin: 'Please login.',
};

const enc = encodeURIComponent;
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
const b64 = (s) => Buffer.from(s, 'utf8').toString('base64');
const basic = (c) => 'Basic ' + b64(c.name + ':' + c.password);
const userId = (name) => 'org.couchdb.user:' + name;
const userPath = (name) => '/_users/' + enc(userId(name));

// Never leave a server behind: a hang or a crash ends the file.
function bail(why) {
  console.log('FAIL ' + path.basename(__filename) + ': ' + why);
  for (const s of [srv, ...extra]) if (s) s.proc.kill('SIGKILL');
  process.exit(1);
}
const watchdog = setTimeout(() => bail('still running after 110 s'), 110000);
watchdog.unref();
process.on('unhandledRejection', (e) => bail(String(e && e.stack || e)));

// One HTTP request to server s (default: the main one) with the path sent
// exactly as given (no URL normalisation: //, .., %2F reach the server as
// written). body: object → JSON, string/Buffer as is. headers: an object, or
// a flat [name, value, ...] array to send a header twice. Resolves to
// { status, headers, text, json }.
function call(method, rawPath, body, headers = {}, s = srv) {
  const u = new URL(s.base);
  let data = null;
  let h = headers;
  const isArr = Array.isArray(h);
  const has = (name) => (isArr ? h.filter((x, i) => i % 2 === 0) : Object.keys(h)).some((k) => k.toLowerCase() === name);
  if (!isArr) {
    h = Object.assign({}, h);
    for (const k of Object.keys(h)) if (h[k] === null || h[k] === undefined) delete h[k];
  }
  if (body !== undefined && body !== null) {
    if (Buffer.isBuffer(body) || typeof body === 'string') data = body;
    else {
      data = JSON.stringify(body);
      if (!has('content-type')) {
        if (isArr) h = h.concat(['Content-Type', 'application/json']);
        else h['Content-Type'] = 'application/json';
      }
    }
  }
  return send({ method, hostname: u.hostname, port: u.port, path: rawPath, headers: h }, data, 15000);
}

// "as X" helpers: Basic credentials, a cookie, or nothing at all.
const as = (cred, s) => (method, p, body, headers = {}) => call(method, p, body, Object.assign({ Authorization: basic(cred) }, headers), s);
const admin = (method, p, body, headers) => as(ADMIN)(method, p, body, headers);
const alice = (method, p, body, headers) => as(ALICE)(method, p, body, headers);
const bob = (method, p, body, headers) => as(BOB)(method, p, body, headers);
const anon = (method, p, body, headers = {}) => call(method, p, body, headers);
const withCookie = (cookie) => (method, p, body, headers = {}) => call(method, p, body, Object.assign({ Cookie: 'AuthSession=' + cookie }, headers));

// Assert a CouchDB error answer: status (one or a list), error, reason.
function isErr(r, status, error, reason) {
  const want = [].concat(status);
  assert.ok(want.includes(r.status), `status ${r.status}, expected ${want.join(' or ')}: ${r.text.slice(0, 400)}`);
  if (error === undefined && reason === undefined) return;
  assert.ok(r.json && typeof r.json === 'object', 'error body is JSON: ' + r.text.slice(0, 400));
  if (error !== undefined) assert.strictEqual(r.json.error, error, 'error: ' + r.text.slice(0, 400));
  assert.strictEqual(typeof r.json.reason, 'string', 'reason is a string: ' + r.text.slice(0, 400));
  if (reason !== undefined) assert.strictEqual(r.json.reason, reason, 'reason: ' + r.text.slice(0, 400));
}
function isOk(r, status, what) {
  const want = [].concat(status);
  assert.ok(want.includes(r.status), `${what || ''} status ${r.status}, expected ${want.join(' or ')}: ${r.text.slice(0, 400)}`);
}

// The AuthSession cookie a response sets ('' when it clears it, undefined
// when there is none), and the whole Set-Cookie line.
function setCookie(r) {
  const lines = [].concat(r.headers['set-cookie'] || []);
  const line = lines.find((l) => /^AuthSession=/.test(l));
  if (!line) return { value: undefined, line: undefined };
  return { value: /^AuthSession=([^;]*)/.exec(line)[1], line };
}
// A cookie's parts: CouchDB's AuthSession is base64url("USER:HEXTIME:HMAC").
function cookieParts(v) {
  assert.ok(typeof v === 'string' && v.length, 'a session cookie (the login it comes from failed earlier)');
  const s = Buffer.from(v, 'base64url').toString('latin1');
  const a = s.indexOf(':');
  const b = s.indexOf(':', a + 1);
  return { user: s.slice(0, a), time: s.slice(a + 1, b), mac: s.slice(b + 1) };
}
const makeCookie = (user, time, mac) => Buffer.from(`${user}:${time}:${mac}`, 'latin1').toString('base64url');
const hexNow = (delta = 0) => Math.floor(Date.now() / 1000 + delta).toString(16).toUpperCase();

async function login(cred, s = srv) {
  const r = await call('POST', '/_session', { name: cred.name, password: cred.password }, {}, s);
  eq(r.status, 200, `login ${cred.name}: ${r.text}`);
  const c = setCookie(r).value;
  ok(c, 'an AuthSession cookie: ' + JSON.stringify(r.headers['set-cookie']));
  return c;
}
// CouchDB's credentials cache follows _users changes asynchronously: a
// change to a user doc may take a moment to show. Retry fn (which asserts)
// for up to 3 s.
async function eventually(fn, ms = 3000) {
  const end = Date.now() + ms;
  for (;;) {
    try { return await fn(); } catch (e) { if (Date.now() > end) throw e; }
    await sleep(100);
  }
}
async function sessionName(send) {
  const r = await send('GET', '/_session');
  eq(r.status, 200, r.text);
  return r.json.userCtx.name;
}

// PBKDF2 hashes in CouchDB's [admins] formats.
function adminHash(password, prf = 'sha256', iterations = 1000) {
  const salt = crypto.randomBytes(16).toString('hex');
  const len = prf === 'sha256' ? 32 : 20;
  const key = crypto.pbkdf2Sync(password, salt, iterations, len, prf).toString('hex');
  return (prf === 'sha256' ? '-pbkdf2:sha256-' : '-pbkdf2-') + key + ',' + salt + ',' + iterations;
}
const HASHED_ADMIN = /^-pbkdf2:sha256-[0-9a-f]{64},[0-9a-f]+,[1-9][0-9]*$/;

async function makeUser(cred, roles = []) {
  const r = await admin('PUT', userPath(cred.name), { _id: userId(cred.name), name: cred.name, password: cred.password, roles, type: 'user' });
  eq(r.status, 201, `create user ${cred.name}: ${r.text}`);
  return r.json.rev;
}
async function setSecurity(db, sec) {
  const r = await admin('PUT', `/${db}/_security`, sec);
  eq(r.status, 200, `PUT ${db}/_security: ${r.text}`);
  eq(r.json, { ok: true });
}
const SEC = (members = [], memberRoles = [], admins = [], adminRoles = []) => ({
  admins: { names: admins, roles: adminRoles },
  members: { names: members, roles: memberRoles },
});

// ---- setup ------------------------------------------------------------------

const DBS = ['secret', 'staffdb', 'teamdb', 'publicdb', 'fresh'];
let aliceCookie = null; // alice's session, for the cookie attacks
let zedCookie = null; // a session of a user deleted since
let ddocRev = null; // secret/_design/app, written by the admin
let doc1Rev = null; // secret/doc1

// CouchDB 3.x creates every database admin-only ([couchdb] default_security
// = admin_only), _users included: signups and users reading their own doc
// need the admin to open _users first (members empty, the 2.x default),
// which takes [couchdb] users_db_security_editable = true. The per-user
// rules of _users (couch_users_db.erl, the _auth validate function) then
// decide. [chttpd_auth] iterations keeps PBKDF2 cheap for the many Basic
// requests here (CouchDB's own suites set it too); it also applies to the
// hashes written while it is set.
const ITERATIONS = 1000;
const MAIN_INI = `[couchdb]\nusers_db_security_editable = true\n\n[chttpd_auth]\niterations = ${ITERATIONS}\n`;

test('start', async () => {
  srv = await startDivan({ config: MAIN_INI });
  dirs.add(srv.dataDir);
  eq(srv.admin, ADMIN);
  // setup: _users opened for signups, users (alice, bob, carol with role
  // staff, dave, colin, zoë, frank, zed), databases and their _security.
  isOk(await admin('PUT', '/_users'), [201, 412], 'PUT /_users');
  await setSecurity('_users', SEC());
  for (const c of [ALICE, BOB, DAVE, COLIN, ZOE, FRANK, ZED]) await makeUser(c);
  await makeUser(CAROL, CAROL.roles);
  for (const db of DBS) eq((await admin('PUT', '/' + db)).status, 201, 'PUT /' + db);
  await setSecurity('secret', SEC(['alice']));
  await setSecurity('staffdb', SEC([], ['staff']));
  await setSecurity('teamdb', SEC(['alice'], [], ['dave']));
  await setSecurity('publicdb', SEC());
  const d = await admin('PUT', '/secret/doc1', { v: 1, secret: 'the plans' });
  eq(d.status, 201, d.text);
  doc1Rev = d.json.rev;
  const dd = await admin('PUT', '/secret/_design/app', { language: 'javascript', views: {} });
  eq(dd.status, 201, dd.text);
  ddocRev = dd.json.rev;
  eq((await admin('PUT', '/fresh/x', { v: 1 })).status, 201);
  eq((await admin('PUT', '/publicdb/p1', { v: 1 })).status, 201);
  eq((await admin('PUT', '/teamdb/t1', { v: 1 })).status, 201);
});

// ---- no authentication needed ---------------------------------------------

test('GET /, /_up, /_uuids and /_session need no credentials', async () => {
  const w = await anon('GET', '/');
  eq(w.status, 200, w.text);
  eq(w.json.couchdb, 'Welcome');
  eq((await anon('GET', '/_up')).status, 200);
  eq((await anon('GET', '/_uuids')).status, 200);
  eq((await anon('GET', '/_session')).status, 200);
});

test('GET /_session anonymous: userCtx {name:null, roles:[]}, handlers cookie and default, no "authenticated"', async () => {
  const r = await anon('GET', '/_session');
  eq(r.status, 200, r.text);
  eq(r.json.ok, true);
  eq(r.json.userCtx, { name: null, roles: [] });
  ok(Array.isArray(r.json.info.authentication_handlers), r.text);
  ok(r.json.info.authentication_handlers.includes('cookie'), r.text);
  ok(r.json.info.authentication_handlers.includes('default'), r.text);
  ok(!('authenticated' in r.json.info), 'anonymous is not "authenticated": ' + r.text);
});

test('GET /_session?basic=true anonymous: 401 unauthorized "Please login."', async () => {
  isErr(await anon('GET', '/_session?basic=true'), 401, 'unauthorized', R.pleaseLogin);
});

// ---- Basic auth -------------------------------------------------------------

test('Basic: the server admin is {name:"admin", roles:[..."_admin"]}, authenticated "default"', async () => {
  const r = await admin('GET', '/_session');
  eq(r.status, 200, r.text);
  eq(r.json.userCtx.name, 'admin');
  ok(r.json.userCtx.roles.includes('_admin'), r.text);
  eq(r.json.info.authenticated, 'default');
  eq((await admin('GET', '/_all_dbs')).status, 200);
});

test('Basic: a _users account is {name, roles from its doc}', async () => {
  const a = await alice('GET', '/_session');
  eq(a.status, 200, a.text);
  eq(a.json.userCtx, { name: 'alice', roles: [] });
  eq(a.json.info.authenticated, 'default');
  const c = await as(CAROL)('GET', '/_session');
  eq(c.status, 200, c.text);
  eq(c.json.userCtx, { name: 'carol', roles: ['staff'] });
});

test('Basic: a password with colons splits at the first colon; UTF-8 names and passwords work', async () => {
  eq(await sessionName(as(COLIN)), 'colin');
  eq(await sessionName(as(ZOE)), 'zoë');
});

test('Basic: a wrong password is 401 unauthorized "Name or password is incorrect." even on GET /', async () => {
  const r = await as({ name: 'admin', password: 'nope' })('GET', '/');
  isErr(r, 401, 'unauthorized', R.badCreds);
  eq(r.headers['www-authenticate'], undefined, 'no WWW-Authenticate unless [chttpd] WWW-Authenticate is set');
  isErr(await as({ name: 'alice', password: 'nope' })('GET', '/_session'), 401, 'unauthorized', R.badCreds);
});

test('Basic: an unknown user gets the very same answer as a wrong password (no user enumeration)', async () => {
  const wrong = await as({ name: 'alice', password: 'nope' })('GET', '/secret');
  const nobody = await as({ name: 'nobody-here', password: 'nope' })('GET', '/secret');
  isErr(nobody, 401, 'unauthorized', R.badCreds);
  eq(nobody.status, wrong.status);
  eq(nobody.json, wrong.json);
});

test('Basic: a value that is not base64 is no credential (anonymous), as CouchDB 3.4', async () => {
  const r = await anon('GET', '/_session', undefined, { Authorization: 'Basic %%%%' });
  eq(r.status, 200, r.text);
  eq(r.json.userCtx.name, null);
});

test('Basic: another scheme (Bearer, with JWT auth off) is anonymous', async () => {
  const r = await anon('GET', '/_session', undefined, { Authorization: 'Bearer x' });
  eq(r.status, 200, r.text);
  eq(r.json.userCtx.name, null);
});

// ---- cookie auth: /_session ---------------------------------------------------

test('POST /_session (JSON): 200 {ok, name, roles} and an AuthSession cookie base64url("alice:HEXTIME:hmac"), Path=/, HttpOnly', async () => {
  const r = await anon('POST', '/_session', { name: 'alice', password: ALICE.password });
  eq(r.status, 200, r.text);
  eq(r.json, { ok: true, name: 'alice', roles: [] });
  const { value, line } = setCookie(r);
  ok(value, 'Set-Cookie AuthSession: ' + JSON.stringify(r.headers['set-cookie']));
  ok(/;\s*Path=\/(;|$)/i.test(line), line);
  ok(/;\s*HttpOnly/i.test(line), line);
  ok(/^[A-Za-z0-9_-]+$/.test(value), 'base64url without padding: ' + value);
  const p = cookieParts(value);
  eq(p.user, 'alice');
  ok(/^[0-9A-F]+$/.test(p.time), 'upper-case hex time: ' + p.time);
  ok(Math.abs(parseInt(p.time, 16) - Date.now() / 1000) < 300, 'the time is now: ' + p.time);
  ok(p.mac.length >= 20, 'an HMAC follows');
  aliceCookie = value;
});

test('the cookie authenticates: GET /_session says alice, authenticated "cookie"; the members-only db opens', async () => {
  const r = await withCookie(aliceCookie)('GET', '/_session');
  eq(r.status, 200, r.text);
  eq(r.json.userCtx, { name: 'alice', roles: [] });
  eq(r.json.info.authenticated, 'cookie');
  eq((await withCookie(aliceCookie)('GET', '/secret/doc1')).status, 200);
});

test('POST /_session as a form (name=..&password=..)', async () => {
  const f = await anon('POST', '/_session', 'name=alice&password=' + enc(ALICE.password), { 'Content-Type': 'application/x-www-form-urlencoded' });
  eq(f.status, 200, f.text);
  eq(f.json.name, 'alice');
  ok(setCookie(f).value);
});

test('POST /_session with "username" instead of "name" (couch_httpd_auth:extract_username)', async () => {
  const u = await anon('POST', '/_session', { username: 'alice', password: ALICE.password });
  eq(u.status, 200, u.text);
  eq(u.json.name, 'alice');
});

test('POST /_session for the server admin: roles include _admin; the cookie opens /_all_dbs', async () => {
  const r = await anon('POST', '/_session', { name: 'admin', password: ADMIN.password });
  eq(r.status, 200, r.text);
  ok(r.json.roles.includes('_admin'), r.text);
  eq((await withCookie(setCookie(r).value)('GET', '/_all_dbs')).status, 200);
});

test('POST /_session wrong password or unknown user: the same 401 "Name or password is incorrect.", no usable cookie', async () => {
  const w = await anon('POST', '/_session', { name: 'alice', password: 'nope' });
  isErr(w, 401, 'unauthorized', R.badCreds);
  ok(!setCookie(w).value, 'no session cookie: ' + JSON.stringify(w.headers['set-cookie']));
  const u = await anon('POST', '/_session', { name: 'nobody-here', password: 'nope' });
  isErr(u, 401, 'unauthorized', R.badCreds);
  eq(u.json, w.json);
});

test('POST /_session without a name: 400 "request body must contain a username"; two different names: 400', async () => {
  isErr(await anon('POST', '/_session', { password: 'x' }), 400, 'bad_request', R.noUsername);
  isErr(await anon('POST', '/_session', { name: 'alice', username: 'bob', password: 'x' }), 400, 'bad_request', R.twoUsernames);
});

test('POST /_session?next=/_up: 302 to /_up', async () => {
  const r = await anon('POST', '/_session?next=/_up', { name: 'alice', password: ALICE.password });
  eq(r.status, 302, r.text);
  ok(/\/_up$/.test(r.headers.location), r.headers.location);
});

test('DELETE /_session: 200 {ok:true} and clears the cookie', async () => {
  const r = await withCookie(aliceCookie)('DELETE', '/_session');
  eq(r.status, 200, r.text);
  eq(r.json, { ok: true });
  eq(setCookie(r).value, '', 'AuthSession= cleared: ' + JSON.stringify(r.headers['set-cookie']));
});

test('PUT /_session: 405 method_not_allowed', async () => {
  isErr(await anon('PUT', '/_session', {}), 405, 'method_not_allowed');
});

test('a password change (own doc) invalidates the old password and the old session; the new one works', async () => {
  const cookie = await login(FRANK);
  eq(await sessionName(withCookie(cookie)), 'frank');
  const me = await as(FRANK)('GET', userPath('frank'));
  eq(me.status, 200, me.text);
  const doc = Object.assign({}, me.json, { password: 'frank-pw-2' });
  const w = await as(FRANK)('PUT', userPath('frank'), doc);
  eq(w.status, 201, w.text);
  await eventually(async () => isErr(await as(FRANK)('GET', '/_session'), 401, 'unauthorized', R.badCreds));
  await eventually(async () => eq(await sessionName(withCookie(cookie)), null, 'the old cookie is anonymous now'));
  eq(await sessionName(as({ name: 'frank', password: 'frank-pw-2' })), 'frank');
  FRANK.password = 'frank-pw-2';
});

test('a deleted user: Basic gets 401, the old session is anonymous', async () => {
  zedCookie = await login(ZED);
  const cur = await admin('GET', userPath('zed'));
  eq((await admin('DELETE', userPath('zed') + '?rev=' + cur.json._rev)).status, 200);
  await eventually(async () => isErr(await as(ZED)('GET', '/_session'), 401, 'unauthorized', R.badCreds));
  await eventually(async () => eq(await sessionName(withCookie(zedCookie)), null));
});

// ---- _security ----------------------------------------------------------------

test('a new database is admin-only: _security members and admins hold the _admin role', async () => {
  const r = await admin('GET', '/fresh/_security');
  eq(r.status, 200, r.text);
  ok(r.json.members && r.json.members.roles && r.json.members.roles.includes('_admin'), r.text);
  ok(r.json.admins && r.json.admins.roles && r.json.admins.roles.includes('_admin'), r.text);
  isErr(await anon('GET', '/fresh'), 401, 'unauthorized', R.notAuthorizedDb);
  isErr(await alice('GET', '/fresh'), 403, 'forbidden', R.notAllowedDb);
  eq((await admin('GET', '/fresh/x')).status, 200);
});

test('PUT /db/_security by the admin: 200 {ok:true}, GET reads it back', async () => {
  const r = await admin('GET', '/secret/_security');
  eq(r.status, 200, r.text);
  eq(r.json, SEC(['alice']));
});

test('a member by name reads and writes normal docs, _all_docs, _changes, _bulk_docs, _local docs, reads _security', async () => {
  eq((await alice('GET', '/secret')).status, 200);
  eq((await alice('GET', '/secret/doc1')).json.secret, 'the plans');
  const p = await alice('PUT', '/secret/by-alice', { from: 'alice' });
  eq(p.status, 201, p.text);
  eq((await alice('GET', '/secret/_all_docs')).status, 200);
  const ch = await alice('GET', '/secret/_changes');
  eq(ch.status, 200, ch.text);
  ok(ch.json.results.some((x) => x.id === 'by-alice'));
  const b = await alice('POST', '/secret/_bulk_docs', { docs: [{ _id: 'bulk-a' }, { _id: 'bulk-b' }] });
  eq(b.status, 201, b.text);
  eq(b.json.filter((x) => x.error), []);
  eq((await alice('PUT', '/secret/_local/alice-cp', { seq: 1 })).status, 201);
  eq((await alice('DELETE', '/secret/by-alice?rev=' + p.json.rev)).status, 200);
  eq((await alice('GET', '/secret/_security')).json, SEC(['alice']));
  eq((await alice('GET', '/secret/_design/app')).status, 200, 'members read design docs');
});

test('a member by role (carol, role staff) opens staffdb; alice (no such role) gets 403', async () => {
  eq((await as(CAROL)('GET', '/staffdb')).status, 200);
  eq((await as(CAROL)('PUT', '/staffdb/c1', { v: 1 })).status, 201);
  isErr(await alice('GET', '/staffdb'), 403, 'forbidden', R.notAllowedDb);
});

test('a db admin (dave on teamdb) writes design docs and _security, compacts; a server admin does all of it anywhere', async () => {
  const d = as(DAVE);
  eq((await d('GET', '/teamdb')).status, 200, 'db admins are members');
  eq((await d('PUT', '/teamdb/_design/team', { views: {} })).status, 201);
  eq((await d('PUT', '/teamdb/_security', SEC(['alice', 'carol'], [], ['dave']))).status, 200);
  eq((await d('POST', '/teamdb/_compact', {})).status, 202);
  eq((await alice('GET', '/teamdb/t1')).status, 200);
  eq((await as(CAROL)('GET', '/teamdb/t1')).status, 200, 'carol was added by the db admin');
  eq((await d('PUT', '/teamdb/_security', SEC(['alice'], [], ['dave']))).status, 200);
  isErr(await as(CAROL)('GET', '/teamdb/t1'), 403, 'forbidden', R.notAllowedDb);
  eq((await admin('PUT', '/secret/_design/adm', { views: {} })).status, 201);
  eq((await admin('POST', '/secret/_compact', {})).status, 202);
});

test('a public db (empty members): anonymous and any user read and write normal docs', async () => {
  eq((await anon('GET', '/publicdb/p1')).status, 200);
  eq((await anon('PUT', '/publicdb/anon1', { v: 1 })).status, 201);
  eq((await bob('PUT', '/publicdb/bob1', { v: 1 })).status, 201);
  eq((await anon('GET', '/publicdb/_security')).status, 200);
});

// ---- server-level admin-only endpoints (the refusals are in the catalog) ---

test('the server admin reaches /_all_dbs, /_dbs_info, /_active_tasks, /_db_updates, /_node/_local/_config', async () => {
  const all = await admin('GET', '/_all_dbs');
  eq(all.status, 200);
  ok(all.json.includes('secret'));
  eq((await admin('GET', '/_dbs_info')).status, 200);
  eq((await admin('POST', '/_dbs_info', { keys: ['secret'] })).status, 200);
  eq((await admin('GET', '/_active_tasks')).status, 200);
  eq((await admin('GET', '/_db_updates')).status, 200);
  const c = await admin('GET', '/_node/_local/_config');
  eq(c.status, 200, c.text);
  ok(c.json && typeof c.json === 'object');
});

// ---- _users --------------------------------------------------------------------

test('_users signup: anonymous PUT of {name, password, roles:[], type:"user"} is 201; POST /_users works too', async () => {
  const r = await anon('PUT', userPath('gina'), { _id: userId('gina'), name: 'gina', password: 'gina-pw', roles: [], type: 'user' });
  eq(r.status, 201, r.text);
  eq(r.json.id, userId('gina'));
  const p = await anon('POST', '/_users', { _id: userId('hank'), name: 'hank', password: 'hank-pw', roles: [], type: 'user' });
  eq(p.status, 201, p.text);
});

test('_users: the plaintext password is replaced by pbkdf2 fields (derived_key, salt, iterations, password_scheme, pbkdf2_prf)', async () => {
  const r = await admin('GET', userPath('gina'));
  eq(r.status, 200, r.text);
  const d = r.json;
  ok(!('password' in d), 'no plaintext password stored: ' + r.text);
  eq(d.password_scheme, 'pbkdf2');
  eq(d.pbkdf2_prf, 'sha256');
  ok(typeof d.derived_key === 'string' && /^[0-9a-f]+$/.test(d.derived_key), r.text);
  ok(typeof d.salt === 'string' && d.salt.length > 0, r.text);
  eq(d.iterations, ITERATIONS, '[chttpd_auth] iterations applies');
  eq(d.roles, []);
  eq(d.type, 'user');
  ok(!r.text.includes('gina-pw'), 'the password appears nowhere');
});

test('_users: a new account logs in with Basic and with /_session', async () => {
  eq(await sessionName(as({ name: 'gina', password: 'gina-pw' })), 'gina');
  const c = await login({ name: 'hank', password: 'hank-pw' });
  eq(await sessionName(withCookie(c)), 'hank');
});

test('_users: a user reads and updates their own doc (roles unchanged)', async () => {
  const g = as({ name: 'gina', password: 'gina-pw' });
  const me = await g('GET', userPath('gina'));
  eq(me.status, 200, me.text);
  eq(me.json._id, userId('gina'));
  eq(me.json.name, 'gina');
  ok(!('password' in me.json));
  const w = await g('PUT', userPath('gina'), Object.assign({}, me.json, { email: 'gina@example.org' }));
  eq(w.status, 201, w.text);
  eq((await admin('GET', userPath('gina'))).json.email, 'gina@example.org');
});

test('_users: the server admin reads any user doc and lists _all_docs', async () => {
  eq((await admin('GET', userPath('alice'))).status, 200);
  const all = await admin('GET', '/_users/_all_docs');
  eq(all.status, 200, all.text);
  ok(all.json.rows.some((x) => x.id === userId('alice')));
});

test('_users: a role given by the admin becomes the user\'s role', async () => {
  const cur = await admin('GET', userPath('hank'));
  const w = await admin('PUT', userPath('hank'), Object.assign({}, cur.json, { roles: ['staff'] }));
  eq(w.status, 201, w.text);
  await eventually(async () => {
    const s = await as({ name: 'hank', password: 'hank-pw' })('GET', '/_session');
    eq(s.status, 200, s.text);
    eq(s.json.userCtx.roles, ['staff']);
  });
  eq((await as({ name: 'hank', password: 'hank-pw' })('GET', '/staffdb')).status, 200);
});

// ---- CORS is off by default ---------------------------------------------------

test('CORS off (the default): a preflight or a request with an Origin gets no CORS headers', async () => {
  const pre = await anon('OPTIONS', '/', undefined, { Origin: 'http://app.example', 'Access-Control-Request-Method': 'GET' });
  ok(!pre.headers['access-control-allow-origin'], 'no Allow-Origin: ' + JSON.stringify(pre.headers));
  ok(!pre.headers['access-control-allow-credentials']);
  const g = await anon('GET', '/', undefined, { Origin: 'http://app.example' });
  eq(g.status, 200);
  ok(!g.headers['access-control-allow-origin']);
});

// ---- proxy auth is off by default --------------------------------------------

test('X-Auth-CouchDB-UserName/Roles/Token headers give nothing while proxy auth is off', async () => {
  const r = await anon('GET', '/_session', undefined, { 'X-Auth-CouchDB-UserName': 'admin', 'X-Auth-CouchDB-Roles': '_admin', 'X-Auth-CouchDB-Token': 'deadbeef' });
  eq(r.status, 200, r.text);
  eq(r.json.userCtx, { name: null, roles: [] });
  ok(!r.json.info.authentication_handlers.includes('proxy'), r.text);
});

// ---- /_node/_local/_config -----------------------------------------------------

test('config: PUT admins/bob2 "pw" answers "" (no old value), stores a -pbkdf2:sha256- hash, bob2 is a server admin', async () => {
  const r = await admin('PUT', '/_node/_local/_config/admins/bob2', JSON.stringify('bob2-pw'));
  eq(r.status, 200, r.text);
  eq(r.json, '');
  const g = await admin('GET', '/_node/_local/_config/admins/bob2');
  eq(g.status, 200, g.text);
  ok(HASHED_ADMIN.test(g.json), 'hashed: ' + g.text);
  ok(g.json.endsWith(',' + ITERATIONS), '[chttpd_auth] iterations applies: ' + g.json);
  const s = await as({ name: 'bob2', password: 'bob2-pw' })('GET', '/_session');
  eq(s.status, 200, s.text);
  ok(s.json.userCtx.roles.includes('_admin'), s.text);
  eq((await as({ name: 'bob2', password: 'bob2-pw' })('GET', '/_all_dbs')).status, 200);
});

test('config: PUT again answers the old (hashed) value; DELETE answers the current one; then 404 unknown_config_value', async () => {
  const before = (await admin('GET', '/_node/_local/_config/admins/bob2')).json;
  const p = await admin('PUT', '/_node/_local/_config/admins/bob2', JSON.stringify('bob2-pw2'));
  eq(p.status, 200, p.text);
  eq(p.json, before);
  isErr(await as({ name: 'bob2', password: 'bob2-pw' })('GET', '/_session'), 401, 'unauthorized', R.badCreds);
  eq((await as({ name: 'bob2', password: 'bob2-pw2' })('GET', '/_all_dbs')).status, 200);
  const now = (await admin('GET', '/_node/_local/_config/admins/bob2')).json;
  const d = await admin('DELETE', '/_node/_local/_config/admins/bob2');
  eq(d.status, 200, d.text);
  eq(d.json, now);
  isErr(await as({ name: 'bob2', password: 'bob2-pw2' })('GET', '/_all_dbs'), 401, 'unauthorized', R.badCreds);
  isErr(await admin('GET', '/_node/_local/_config/admins/bob2'), 404, 'not_found', 'unknown_config_value');
  isErr(await admin('DELETE', '/_node/_local/_config/admins/bob2'), 404, 'not_found', 'unknown_config_value');
});

test('config: only JSON strings are accepted as values (400)', async () => {
  for (const v of ['true', '11', '{}']) isErr(await admin('PUT', '/_node/_local/_config/divan_test/k', v, { 'Content-Type': 'application/json' }), 400);
  isErr(await admin('GET', '/_node/_local/_config/divan_test/k'), 404, 'not_found');
});

test('config: the admins section shows hashes only, never a plaintext password', async () => {
  const r = await admin('GET', '/_node/_local/_config/admins');
  eq(r.status, 200, r.text);
  ok(Object.keys(r.json).includes('admin'), r.text);
  for (const [k, v] of Object.entries(r.json)) ok(/^-pbkdf2/.test(v), `${k} is hashed: ${v}`);
  ok(!r.text.includes(ADMIN.password), r.text);
  const all = await admin('GET', '/_node/_local/_config');
  ok(!all.text.includes(ADMIN.password), 'the whole config hides it too');
});

// ---- the attack catalog ---------------------------------------------------------
//
// attack(name, send, expect): send() makes the hostile request (and may read
// what it needs first); expect is { status, error, reason, check } — status
// one or a list, check(r) re-reads the target as admin.

const catalog = [];
let refused = 0;
let before = null; // the watched state before the catalog
const WATCHED = [...DBS, '_users'];
// User docs an attack may legitimately create (a signup whose roles escalation
// was dropped) are left out of the before/after comparison.
const IGNORED_IDS = /^org\.couchdb\.user:dupkey/;

async function snapshot() {
  const all = await admin('GET', '/_all_dbs');
  eq(all.status, 200, 'the admin lists the databases: ' + all.text);
  const s = { dbs: all.json };
  const rows = (r) => (r.status === 200 && r.json && Array.isArray(r.json.rows) ? r.json.rows : r.status);
  for (const db of WATCHED) {
    const docs = rows(await admin('GET', `/${enc(db)}/_all_docs`));
    const local = rows(await admin('GET', `/${enc(db)}/_local_docs`));
    s[db] = {
      docs: Array.isArray(docs) ? docs.filter((x) => !IGNORED_IDS.test(x.id)).map((x) => [x.id, x.value.rev]) : docs,
      local: Array.isArray(local) ? local.map((x) => [x.id, x.value && x.value.rev]) : local,
      security: (await admin('GET', `/${enc(db)}/_security`)).json,
    };
  }
  s.revsLimit = (await admin('GET', '/secret/_revs_limit')).json;
  s.admins = (await admin('GET', '/_node/_local/_config/admins')).json;
  return s;
}

function attack(name, send, expect) {
  const n = catalog.push(name);
  test(`attack ${String(n).padStart(3, '0')}: ${name}`, async () => {
    const r = await send();
    isErr(r, expect.status, expect.error, expect.reason);
    if (expect.check) await expect.check(r);
    refused++;
  });
}
const absent = (p) => async () => eq((await admin('GET', p)).status, 404, p + ' must not exist');
const present = (p) => async () => eq((await admin('GET', p)).status, 200, p + ' must still exist');
const unchangedDoc = (p, rev) => async () => {
  const r = await admin('GET', p);
  eq(r.status, 200, r.text);
  eq(r.json._rev, rev(), p + ' unchanged');
};
const secretUnchanged = async () => eq((await admin('GET', '/secret/_security')).json, SEC(['alice']));
const adminStillWorks = async () => eq((await admin('GET', '/_all_dbs')).status, 200);
const noConfigKey = (sec, key) => async () => isErr(await admin('GET', `/_node/_local/_config/${sec}/${key}`), 404, 'not_found');
const DOC = '/secret/doc1'; // a members-only document
const HDR = (v) => ({ Authorization: v });

test('catalog: log in alice, snapshot the watched state', async () => {
  aliceCookie = await login(ALICE);
  before = await snapshot();
  ok(before.dbs.includes('secret'));
});

// Authorization headers.
attack('no credentials on a members-only doc', () => anon('GET', DOC), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('"Authorization: Basic" with nothing after it', () => anon('GET', DOC, undefined, HDR('Basic')), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('an empty Authorization header', () => anon('GET', DOC, undefined, HDR('')), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('"Basic:" with a colon and base64 of garbage', () => anon('GET', DOC, undefined, HDR('Basic: ' + b64('nocolonhere'))), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('"Basic:" with a colon and alice with a wrong password', () => anon('GET', DOC, undefined, HDR('Basic: ' + b64('alice:wrong'))), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('"Basic:" with a colon and alice\'s right password is no credential either', () => anon('GET', DOC, undefined, HDR('Basic: ' + b64(ALICE.name + ':' + ALICE.password))), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('Basic with a value that is not base64', () => anon('GET', DOC, undefined, HDR('Basic %%%%')), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('Basic with base64 of a string without a colon', () => anon('GET', DOC, undefined, HDR('Basic ' + b64('alicealice'))), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('Basic with a 6 KB value', () => anon('GET', DOC, undefined, HDR('Basic ' + 'A'.repeat(6144))), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('Basic alice with a 4.5 KB password', () => anon('GET', DOC, undefined, HDR('Basic ' + b64('alice:' + 'x'.repeat(4500)))), { status: 401, error: 'unauthorized', reason: R.badCreds });
// past the 8 KB request head (http.h HTTP_HEADER_LIMIT): refused before anyone reads it
attack('Basic with a 16 KB value', () => anon('GET', DOC, undefined, HDR('Basic ' + 'A'.repeat(16384))), { status: 431, error: 'request_header_fields_too_large' });
attack('"Bearer x" (JWT auth is off)', () => anon('GET', DOC, undefined, HDR('Bearer x')), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('an unknown scheme (Digest)', () => anon('GET', DOC, undefined, HDR('Digest username="alice", response="0"')), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('an unknown scheme (NTLM)', () => anon('GET', DOC, undefined, HDR('NTLM TlRMTVNTUAABAAAAB4IIAAAAAAAAAAAAAAAAAAAAAAA=')), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('lower-case "basic" with a wrong password', () => anon('GET', DOC, undefined, HDR('basic ' + b64('alice:wrong'))), { status: 401, error: 'unauthorized' });
attack('the admin with a wrong password on /_all_dbs', () => as({ name: 'admin', password: 'testpas' })('GET', '/_all_dbs'), { status: 401, error: 'unauthorized', reason: R.badCreds });
attack('alice with a wrong password', () => as({ name: 'alice', password: 'alice-pw-2' })('GET', DOC), { status: 401, error: 'unauthorized', reason: R.badCreds });
attack('a user that does not exist: the same body as a wrong password', () => as({ name: 'mallory', password: 'x' })('GET', DOC), {
  status: 401, error: 'unauthorized', reason: R.badCreds,
  check: async (r) => eq(r.json, (await as({ name: 'alice', password: 'x' })('GET', DOC)).json),
});
attack('an empty name and password (base64 of ":")', () => anon('GET', DOC, undefined, HDR('Basic ' + b64(':'))), { status: 401, error: 'unauthorized', reason: R.badCreds });
attack('the name in another case ("Alice")', () => as({ name: 'Alice', password: ALICE.password })('GET', DOC), { status: 401, error: 'unauthorized', reason: R.badCreds });
attack('alice\'s password with a trailing space', () => as({ name: 'alice', password: ALICE.password + ' ' })('GET', DOC), { status: 401, error: 'unauthorized', reason: R.badCreds });
attack('the admin password with a NUL byte appended', () => as({ name: 'admin', password: ADMIN.password + '\u0000' })('GET', '/_all_dbs'), { status: 401, error: 'unauthorized', reason: R.badCreds });
attack('the admin with an empty password', () => as({ name: 'admin', password: '' })('GET', '/_all_dbs'), { status: 401, error: 'unauthorized', reason: R.badCreds });
attack('two Authorization headers (alice wrong, then the admin right) on /_all_dbs', () => call('GET', '/_all_dbs', undefined, ['Authorization', 'Basic ' + b64('alice:wrong'), 'Authorization', basic(ADMIN)]), { status: [400, 401] });

// Cookies.
attack('an AuthSession cookie of base64 without colons: 400 malformed', () => withCookie(Buffer.from('garbage-without-colons').toString('base64url'))('GET', DOC), { status: 400, error: 'bad_request', reason: R.badCookie });
attack('an AuthSession cookie that is not base64: 400 malformed', () => withCookie('!!!!')('GET', DOC), { status: 400, error: 'bad_request', reason: R.badCookie });
attack('a cookie of the right shape with a made-up HMAC', () => withCookie(makeCookie('alice', hexNow(), 'x'.repeat(32)))('GET', DOC), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('alice\'s cookie with its time moved an hour ahead', () => {
  const p = cookieParts(aliceCookie);
  return withCookie(makeCookie(p.user, (parseInt(p.time, 16) + 3600).toString(16).toUpperCase(), p.mac))('GET', DOC);
}, { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('alice\'s cookie with an expired time (0)', () => {
  const p = cookieParts(aliceCookie);
  return withCookie(makeCookie(p.user, '0', p.mac))('GET', DOC);
}, { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('alice\'s HMAC under the admin\'s name, on /_all_dbs', () => {
  const p = cookieParts(aliceCookie);
  return withCookie(makeCookie('admin', p.time, p.mac))('GET', '/_all_dbs');
}, { status: 401, error: 'unauthorized', reason: R.notServerAdmin });
attack('alice\'s HMAC under bob\'s name', () => {
  const p = cookieParts(aliceCookie);
  return withCookie(makeCookie('bob', p.time, p.mac))('GET', DOC);
}, { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('alice\'s cookie with the HMAC cut short', () => {
  const p = cookieParts(aliceCookie);
  return withCookie(makeCookie(p.user, p.time, p.mac.slice(0, 5)))('GET', DOC);
}, { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('a cookie for a user that never existed', () => withCookie(makeCookie('mallory', hexNow(), 'y'.repeat(32)))('GET', DOC), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('a cookie of a deleted user', () => { ok(zedCookie, 'zed\'s session (its login failed earlier)'); return withCookie(zedCookie)('GET', DOC); }, { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('an empty AuthSession cookie on a members-only doc', () => withCookie('')('GET', DOC), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('alice\'s valid session on /_all_dbs', () => withCookie(aliceCookie)('GET', '/_all_dbs'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin });
attack('alice\'s valid session creating a database', () => withCookie(aliceCookie)('PUT', '/cookiedb'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: absent('/cookiedb') });

// Proxy-auth headers while proxy auth is off.
const PROXY_ADMIN = { 'X-Auth-CouchDB-UserName': 'admin', 'X-Auth-CouchDB-Roles': '_admin' };
attack('proxy headers claiming admin/_admin on /_all_dbs', () => anon('GET', '/_all_dbs', undefined, PROXY_ADMIN), { status: 401, error: 'unauthorized', reason: R.notServerAdmin });
attack('proxy headers with a token creating a database', () => anon('PUT', '/proxydb', undefined, Object.assign({ 'X-Auth-CouchDB-Token': 'a'.repeat(64) }, PROXY_ADMIN)), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: absent('/proxydb') });
attack('proxy header naming alice on her members-only db', () => anon('GET', DOC, undefined, { 'X-Auth-CouchDB-UserName': 'alice' }), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('proxy role _admin adding a server admin through the config', () => anon('PUT', '/_node/_local/_config/admins/proxyadmin', JSON.stringify('pw'), { 'X-Auth-CouchDB-Roles': '_admin' }), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: noConfigKey('admins', 'proxyadmin') });

// Paths.
attack('/%5Fusers/_all_docs (an encoded underscore) as alice', () => alice('GET', '/%5Fusers/_all_docs'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin });
attack('bob\'s user doc as alice via org.couchdb.user%3Abob', () => alice('GET', '/_users/org.couchdb.user%3Abob'), { status: 404, error: 'not_found' });
attack('//secret/doc1 (a doubled slash) anonymous', () => anon('GET', '//secret/doc1'), { status: 401, error: 'unauthorized' });
attack('/secret/../_users/_all_docs anonymous', () => anon('GET', '/secret/../_users/_all_docs'), { status: 401, error: 'unauthorized' });
attack('/%73ecret/doc1 (an encoded letter) anonymous', () => anon('GET', '/%73ecret/doc1'), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('/_users%2Forg.couchdb.user:bob (an encoded slash after _users) as alice', () => alice('GET', '/_users%2Forg.couchdb.user:bob'), { status: 401, error: 'unauthorized' });
attack('/_node/nonode@nohost/_config anonymous', () => anon('GET', '/_node/nonode@nohost/_config'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin });
attack('/_config (the 1.x path) anonymous', () => anon('GET', '/_config'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin });
attack('/%5Fnode/_local/_config anonymous', () => anon('GET', '/%5Fnode/_local/_config'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin });
attack('/_node/_local/_config/../../_all_dbs as alice', () => alice('GET', '/_node/_local/_config/../../_all_dbs'), { status: 401, error: 'unauthorized' });
attack('reading the admin\'s hash at /_node/_local/_config/admins/admin as alice', () => alice('GET', '/_node/_local/_config/admins/admin'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin });
attack('a design doc through an encoded slash (_design%2Fevil) as a member', () => alice('PUT', '/secret/_design%2Fevil', { views: {} }), { status: 403, error: 'forbidden', reason: R.notDbAdmin, check: absent('/secret/_design/evil') });
attack('a design doc through an encoded underscore (%5Fdesign/evil2) as a member', () => alice('PUT', '/secret/%5Fdesign/evil2', { views: {} }), { status: 403, error: 'forbidden', reason: R.notDbAdmin, check: absent('/secret/_design/evil2') });
attack('HEAD of a members-only doc anonymous', () => anon('HEAD', DOC), { status: 401 });
attack('OPTIONS of a members-only doc with an Origin (CORS off) anonymous', () => anon('OPTIONS', DOC, undefined, { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'GET' }), {
  status: 401, error: 'unauthorized', reason: R.notAuthorizedDb,
  check: async (r) => ok(!r.headers['access-control-allow-origin'], 'no CORS headers'),
});

// Server-level endpoints as alice (authenticated, not a server admin).
for (const [m, p, body] of [
  ['GET', '/_all_dbs'], ['GET', '/_dbs_info'], ['POST', '/_dbs_info', { keys: ['secret'] }], ['GET', '/_db_updates'],
  ['GET', '/_active_tasks'], ['GET', '/_node/_local/_config'], ['GET', '/_membership'], ['GET', '/_scheduler/jobs'],
  ['GET', '/_replicator/_all_docs'], ['GET', '/_users/_all_docs'], ['GET', '/_users/_changes'],
]) attack(`${m} ${p} as alice`, () => alice(m, p, body), { status: 401, error: 'unauthorized', reason: R.notServerAdmin });
attack('alice makes herself a server admin through the config', () => alice('PUT', '/_node/_local/_config/admins/alice', JSON.stringify('x')), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: noConfigKey('admins', 'alice') });
attack('alice deletes the server admin from the config', () => alice('DELETE', '/_node/_local/_config/admins/admin'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: adminStillWorks });
attack('alice turns on proxy auth through the config', () => alice('PUT', '/_node/_local/_config/chttpd/authentication_handlers', JSON.stringify('{chttpd_auth, proxy_authentication_handler}')), { status: 401, error: 'unauthorized', reason: R.notServerAdmin });
attack('alice creates a database', () => alice('PUT', '/alicedb'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: absent('/alicedb') });
attack('alice deletes the db she is a member of', () => alice('DELETE', '/secret'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: present('/secret') });
attack('alice deletes _users', () => alice('DELETE', '/_users'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: present('/_users') });

// Server-level endpoints anonymous.
for (const [m, p, body] of [
  ['GET', '/_all_dbs'], ['GET', '/_dbs_info'], ['POST', '/_dbs_info', { keys: ['secret'] }], ['GET', '/_db_updates'],
  ['GET', '/_active_tasks'], ['GET', '/_node/_local/_config'], ['GET', '/_users/_all_docs'], ['GET', '/_users/_changes'],
  ['GET', '/_replicator/_changes'], ['GET', '/_some_unknown_endpoint'],
]) attack(`${m} ${p} anonymous`, () => anon(m, p, body), { status: 401, error: 'unauthorized', reason: R.notServerAdmin });
attack('anonymous creates a database', () => anon('PUT', '/anondb'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: absent('/anondb') });
attack('anonymous deletes a public database', () => anon('DELETE', '/publicdb'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: present('/publicdb') });
attack('anonymous re-creates _users', () => anon('PUT', '/_users'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: present('/_users') });
attack('anonymous deletes _users', () => anon('DELETE', '/_users'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: present('/_users') });

// A db bob is not a member of.
attack('bob GET /secret', () => bob('GET', '/secret'), { status: 403, error: 'forbidden', reason: R.notAllowedDb });
attack('bob GET /secret/doc1', () => bob('GET', DOC), { status: 403, error: 'forbidden', reason: R.notAllowedDb });
attack('bob GET /secret/_all_docs?include_docs=true', () => bob('GET', '/secret/_all_docs?include_docs=true'), { status: 403, error: 'forbidden', reason: R.notAllowedDb });
attack('bob GET /secret/_changes', () => bob('GET', '/secret/_changes?include_docs=true'), { status: 403, error: 'forbidden', reason: R.notAllowedDb });
attack('bob GET /secret/_changes?feed=longpoll', () => bob('GET', '/secret/_changes?feed=longpoll&since=0&timeout=1000'), { status: 403, error: 'forbidden', reason: R.notAllowedDb });
attack('bob POST /secret/_bulk_docs', () => bob('POST', '/secret/_bulk_docs', { docs: [{ _id: 'by-bob' }] }), { status: 403, error: 'forbidden', reason: R.notAllowedDb, check: absent('/secret/by-bob') });
attack('bob PUT /secret/by-bob2', () => bob('PUT', '/secret/by-bob2', { v: 1 }), { status: 403, error: 'forbidden', reason: R.notAllowedDb, check: absent('/secret/by-bob2') });
attack('bob POST /secret', () => bob('POST', '/secret', { _id: 'by-bob3' }), { status: 403, error: 'forbidden', reason: R.notAllowedDb, check: absent('/secret/by-bob3') });
attack('bob DELETE /secret/doc1', () => bob('DELETE', DOC + '?rev=' + doc1Rev), { status: 403, error: 'forbidden', reason: R.notAllowedDb, check: unchangedDoc(DOC, () => doc1Rev) });
attack('bob POST /secret/_bulk_get', () => bob('POST', '/secret/_bulk_get', { docs: [{ id: 'doc1' }] }), { status: 403, error: 'forbidden', reason: R.notAllowedDb });
attack('bob POST /secret/_revs_diff', () => bob('POST', '/secret/_revs_diff', { doc1: [doc1Rev] }), { status: 403, error: 'forbidden', reason: R.notAllowedDb });
attack('bob GET /secret/_security', () => bob('GET', '/secret/_security'), { status: 403, error: 'forbidden', reason: R.notAllowedDb });
attack('bob PUT /secret/_local/bob', () => bob('PUT', '/secret/_local/bob', { v: 1 }), { status: 403, error: 'forbidden', reason: R.notAllowedDb, check: absent('/secret/_local/bob') });
attack('bob GET /secret/_local_docs', () => bob('GET', '/secret/_local_docs'), { status: 403, error: 'forbidden', reason: R.notAllowedDb });
attack('bob POST /secret/_purge', () => bob('POST', '/secret/_purge', { doc1: [doc1Rev] }), { status: 403, error: 'forbidden', reason: R.notAllowedDb, check: unchangedDoc(DOC, () => doc1Rev) });
attack('bob PUT /secret/_security naming himself', () => bob('PUT', '/secret/_security', SEC(['alice', 'bob'])), { status: 403, error: 'forbidden', check: secretUnchanged });

// The same db anonymous.
attack('anonymous GET /secret', () => anon('GET', '/secret'), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('anonymous GET /secret/_all_docs', () => anon('GET', '/secret/_all_docs'), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('anonymous GET /secret/_changes', () => anon('GET', '/secret/_changes'), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb });
attack('anonymous POST /secret/_bulk_docs', () => anon('POST', '/secret/_bulk_docs', { docs: [{ _id: 'by-anon' }] }), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb, check: absent('/secret/by-anon') });
attack('anonymous PUT /secret/_security opening the db', () => anon('PUT', '/secret/_security', SEC()), { status: 401, error: 'unauthorized', check: secretUnchanged });

// A new (admin-only) db.
attack('alice GET /fresh (admin-only by default)', () => alice('GET', '/fresh/x'), { status: 403, error: 'forbidden', reason: R.notAllowedDb });
attack('anonymous PUT /fresh/y (admin-only by default)', () => anon('PUT', '/fresh/y', { v: 1 }), { status: 401, error: 'unauthorized', reason: R.notAuthorizedDb, check: absent('/fresh/y') });

// A member doing a db admin's work.
attack('member writes a design doc', () => alice('PUT', '/secret/_design/evil3', { views: {} }), { status: 403, error: 'forbidden', reason: R.notDbAdmin, check: absent('/secret/_design/evil3') });
attack('member writes a design doc through _bulk_docs', () => alice('POST', '/secret/_bulk_docs', { docs: [{ _id: '_design/evil4', views: {} }] }), {
  status: 201,
  check: async (r) => {
    eq(r.json.length, 1, r.text);
    eq(r.json[0].id, '_design/evil4');
    eq(r.json[0].error, 'forbidden', r.text);
    eq(r.json[0].reason, R.notDbAdmin);
    await absent('/secret/_design/evil4')();
  },
});
attack('member writes a design doc through _bulk_docs new_edits=false', () => alice('POST', '/secret/_bulk_docs', { new_edits: false, docs: [{ _id: '_design/evil5', _rev: '1-' + 'a'.repeat(32), views: {} }] }), {
  status: 201,
  check: async (r) => {
    ok(r.json.some((x) => x.error === 'forbidden'), r.text);
    await absent('/secret/_design/evil5')();
  },
});
attack('member COPYs a doc onto a design doc id', () => alice('COPY', DOC, undefined, { Destination: '_design/evil6' }), { status: 403, error: 'forbidden', reason: R.notDbAdmin, check: absent('/secret/_design/evil6') });
attack('member updates the admin\'s design doc', () => alice('PUT', '/secret/_design/app?rev=' + ddocRev, { views: { x: { map: 'function(d){emit(d._id)}' } } }), { status: 403, error: 'forbidden', reason: R.notDbAdmin, check: unchangedDoc('/secret/_design/app', () => ddocRev) });
attack('member deletes the admin\'s design doc', () => alice('DELETE', '/secret/_design/app?rev=' + ddocRev), { status: 403, error: 'forbidden', reason: R.notDbAdmin, check: unchangedDoc('/secret/_design/app', () => ddocRev) });
attack('member writes _security adding bob', () => alice('PUT', '/secret/_security', SEC(['alice', 'bob'])), { status: 403, error: 'forbidden', reason: R.notDbAdmin, check: secretUnchanged });
attack('member makes herself db admin through _security', () => alice('PUT', '/secret/_security', SEC(['alice'], [], ['alice'])), { status: 403, error: 'forbidden', reason: R.notDbAdmin, check: secretUnchanged });
attack('member compacts', () => alice('POST', '/secret/_compact', {}), { status: 401, error: 'unauthorized', reason: R.notServerOrDbAdmin });
attack('member runs _view_cleanup', () => alice('POST', '/teamdb/_view_cleanup', {}), { status: 401, error: 'unauthorized', reason: R.notServerOrDbAdmin });
attack('member sets _revs_limit', () => alice('PUT', '/secret/_revs_limit', '5', { 'Content-Type': 'application/json' }), {
  status: 403, error: 'forbidden', reason: R.notDbAdmin,
  check: async () => eq((await admin('GET', '/secret/_revs_limit')).json, before.revsLimit),
});
attack('db admin deletes the database', () => as(DAVE)('DELETE', '/teamdb'), { status: 401, error: 'unauthorized', reason: R.notServerAdmin, check: present('/teamdb') });
attack('anonymous writes a design doc in a public db', () => anon('PUT', '/publicdb/_design/evil', { views: {} }), { status: 401, error: 'unauthorized', reason: R.notDbAdmin, check: absent('/publicdb/_design/evil') });
attack('anonymous writes _security of a public db', () => anon('PUT', '/publicdb/_security', SEC(['mallory'])), { status: 401, error: 'unauthorized', reason: R.notDbAdmin });
attack('bob writes _security of a public db', () => bob('PUT', '/publicdb/_security', SEC(['bob'], [], ['bob'])), { status: 403, error: 'forbidden', reason: R.notDbAdmin });

// _users.
const ownDoc = async (cred) => {
  const r = await as(cred)('GET', userPath(cred.name));
  eq(r.status, 200, r.text);
  return r.json;
};
const aliceRoles = async () => eq((await admin('GET', userPath('alice'))).json.roles, []);
const signup = (name, extra = {}) => Object.assign({ _id: userId(name), name, password: 'pw-' + name, roles: [], type: 'user' }, extra);
attack('alice reads bob\'s user doc', () => alice('GET', userPath('bob')), { status: 404, error: 'not_found' });
attack('anonymous reads alice\'s user doc', () => anon('GET', userPath('alice')), { status: 404, error: 'not_found' });
attack('alice grants herself _admin in her user doc', async () => alice('PUT', userPath('alice'), Object.assign(await ownDoc(ALICE), { roles: ['_admin'] })), { status: 403, error: 'forbidden', reason: 'Only _admin may edit roles', check: aliceRoles });
attack('alice grants herself the staff role', async () => alice('PUT', userPath('alice'), Object.assign(await ownDoc(ALICE), { roles: ['staff'] })), { status: 403, error: 'forbidden', reason: 'Only _admin may edit roles', check: aliceRoles });
attack('alice writes her user doc without roles', async () => {
  const d = await ownDoc(ALICE);
  delete d.roles;
  return alice('PUT', userPath('alice'), d);
}, { status: 403, error: 'forbidden', reason: 'doc.roles must exist', check: aliceRoles });
attack('alice renames herself to bob in her own doc', async () => alice('PUT', userPath('alice'), Object.assign(await ownDoc(ALICE), { name: 'bob' })), { status: 403, error: 'forbidden', reason: 'Doc ID must be of the form org.couchdb.user:name', check: aliceRoles });
attack('alice grants herself _admin through _bulk_docs', async () => alice('POST', '/_users/_bulk_docs', { docs: [Object.assign(await ownDoc(ALICE), { roles: ['_admin'] })] }), {
  status: 201,
  check: async (r) => {
    eq(r.json[0].error, 'forbidden', r.text);
    eq(r.json[0].reason, 'Only _admin may edit roles');
    await aliceRoles();
  },
});
attack('anonymous signup with roles ["_admin"]', () => anon('PUT', userPath('eve'), signup('eve', { roles: ['_admin'] })), { status: 403, error: 'forbidden', reason: 'Only _admin may set roles', check: absent(userPath('eve')) });
attack('anonymous signup with roles ["staff"]', () => anon('PUT', userPath('eve2'), signup('eve2', { roles: ['staff'] })), { status: 403, error: 'forbidden', reason: 'Only _admin may set roles', check: absent(userPath('eve2')) });
attack('alice creates a user doc for someone else', () => alice('PUT', userPath('mallory'), signup('mallory')), { status: 404, error: 'not_found', check: absent(userPath('mallory')) });
attack('alice creates a user doc for someone else through _bulk_docs', () => alice('POST', '/_users/_bulk_docs', { docs: [signup('mallory2')] }), { status: [201, 404], check: absent(userPath('mallory2')) });
attack('alice overwrites bob\'s user doc with his current rev', async () => {
  const cur = (await admin('GET', userPath('bob'))).json;
  return alice('PUT', userPath('bob'), Object.assign({}, cur, { password: 'owned' }));
}, { status: 404, error: 'not_found', check: async () => eq(await sessionName(as(BOB)), 'bob') });
attack('alice deletes bob\'s user doc', async () => {
  const cur = (await admin('GET', userPath('bob'))).json;
  return alice('DELETE', userPath('bob') + '?rev=' + cur._rev);
}, { status: 404, error: 'not_found', check: present(userPath('bob')) });
attack('anonymous overwrites alice\'s user doc with her current rev', async () => {
  const cur = (await admin('GET', userPath('alice'))).json;
  return anon('PUT', userPath('alice'), Object.assign({}, cur, { password: 'owned' }));
}, { status: 403, error: 'forbidden', reason: 'You may only update your own user document.', check: async () => eq(await sessionName(as(ALICE)), 'alice') });
attack('anonymous deletes alice\'s user doc with her current rev', async () => {
  const cur = (await admin('GET', userPath('alice'))).json;
  return anon('DELETE', userPath('alice') + '?rev=' + cur._rev);
}, { status: 403, error: 'forbidden', reason: 'Only admins may delete other user docs.', check: present(userPath('alice')) });
attack('anonymous signup over an existing account (no rev)', () => anon('PUT', userPath('alice'), signup('alice')), { status: 409, error: 'conflict', reason: 'Document update conflict.', check: async () => eq(await sessionName(as(ALICE)), 'alice') });
attack('signup of a name starting with an underscore', () => anon('PUT', userPath('_evil'), signup('_evil')), { status: 403, error: 'forbidden', reason: 'Username may not start with underscore.', check: absent(userPath('_evil')) });
attack('signup whose _id names someone else', () => anon('PUT', userPath('mallory3'), signup('alice', { _id: userId('mallory3') })), { status: 403, error: 'forbidden', reason: 'Doc ID must be of the form org.couchdb.user:name', check: absent(userPath('mallory3')) });
attack('signup with type "admin"', () => anon('PUT', userPath('eve3'), signup('eve3', { type: 'admin' })), { status: 403, error: 'forbidden', reason: 'doc.type must be user', check: absent(userPath('eve3')) });
attack('signup of a name with a colon', () => anon('PUT', userPath('ev:e'), signup('ev:e')), { status: 403, error: 'forbidden', reason: 'Character `:` is not allowed in usernames.', check: absent(userPath('ev:e')) });
attack('even the admin cannot put a system role in a user doc', () => admin('PUT', userPath('eve4'), signup('eve4', { roles: ['_admin'] })), { status: 403, error: 'forbidden', reason: 'No system roles (starting with underscore) in users db.', check: absent(userPath('eve4')) });
attack('alice writes a design doc into _users', () => alice('PUT', '/_users/_design/evil', { validate_doc_update: 'function(){}' }), { status: [403, 404], check: absent('/_users/_design/evil') });
attack('anonymous writes _users/_security', () => anon('PUT', '/_users/_security', SEC(['mallory'])), { status: 401, error: 'unauthorized' });
attack('alice writes _users/_security', () => alice('PUT', '/_users/_security', SEC(['alice'], [], ['alice'])), { status: 403, error: 'forbidden' });
// CVE-2017-12635: duplicate "roles" keys must not let one parser see [] and another ["_admin"].
const noAdminRole = (name) => async (r) => {
  if (r.status !== 201) return absent(userPath(name))();
  const d = await admin('GET', userPath(name));
  eq(d.status, 200, d.text);
  ok(!d.json.roles.includes('_admin'), 'stored roles: ' + JSON.stringify(d.json.roles));
  const s = await as({ name, password: 'pw' })('GET', '/_session');
  eq(s.status, 200, s.text);
  ok(!s.json.userCtx.roles.includes('_admin'), 'session roles: ' + s.text);
  eq((await as({ name, password: 'pw' })('GET', '/_all_dbs')).status, 401);
};
attack('signup with duplicate "roles" keys, ["_admin"] first (CVE-2017-12635)', () => anon('PUT', userPath('dupkey1'),
  '{"_id":"org.couchdb.user:dupkey1","type":"user","name":"dupkey1","roles":["_admin"],"roles":[],"password":"pw"}',
  { 'Content-Type': 'application/json' }), { status: [201, 400], check: noAdminRole('dupkey1') });
attack('signup with duplicate "roles" keys, ["_admin"] last', () => anon('PUT', userPath('dupkey2'),
  '{"_id":"org.couchdb.user:dupkey2","type":"user","name":"dupkey2","roles":[],"roles":["_admin"],"password":"pw"}',
  { 'Content-Type': 'application/json' }), { status: [201, 400, 403], check: noAdminRole('dupkey2') });

test('attack catalog: every request refused and nothing it aimed at changed', async () => {
  ok(before, 'the snapshot before the catalog was taken');
  const after = await snapshot();
  const same = JSON.stringify(after) === JSON.stringify(before);
  const off = catalog.length - refused;
  console.log(`attack catalog: ${catalog.length} requests, ` +
    (off === 0 ? 'all refused' : `${off} not answered as CouchDB answers them`) +
    (same ? '; the watched state is unchanged' : '; THE WATCHED STATE CHANGED'));
  eq(after, before, 'the watched state after the catalog');
  eq(off, 0, 'every attack answered as CouchDB answers it');
  ok(catalog.length >= 60, 'at least 60 attack requests: ' + catalog.length);
});

// ---- persistence across a restart ------------------------------------------

test('config: an admin added through the API is in DATA/local.ini (hashed) and survives a restart; so do users and _security', async () => {
  const p = await admin('PUT', '/_node/_local/_config/admins/keeper', JSON.stringify('keeper-pw'));
  eq(p.status, 200, p.text);
  const ini = fs.readFileSync(path.join(srv.dataDir, 'local.ini'), 'utf8');
  ok(/^\[admins\]\s*$/m.test(ini), ini);
  ok(/^keeper\s*=\s*-pbkdf2:sha256-/m.test(ini), 'keeper is hashed in local.ini:\n' + ini);
  ok(!ini.includes('keeper-pw'), 'no plaintext in local.ini');
  ok(!ini.includes(ADMIN.password), 'the DIVAN_ADMIN password is not written to local.ini');
  const dataDir = srv.dataDir;
  await srv.stop();
  srv = null;
  srv = await startDivan({ dataDir });
  ok(/^users_db_security_editable\s*=\s*true/m.test(fs.readFileSync(path.join(dataDir, 'local.ini'), 'utf8')), 'the file keeps what it had');
  eq((await as({ name: 'keeper', password: 'keeper-pw' })('GET', '/_all_dbs')).status, 200);
  eq(await sessionName(as(ALICE)), 'alice');
  eq((await alice('GET', DOC)).status, 200);
  isErr(await bob('GET', DOC), 403, 'forbidden', R.notAllowedDb);
  isErr(await anon('GET', DOC), 401, 'unauthorized', R.notAuthorizedDb);
  eq((await admin('GET', '/secret/_security')).json, SEC(['alice']));
});

test('stop', async () => { await srv.stop(); srv = null; });

// ---- [admins] in local.ini -----------------------------------------------------

test('[admins] in local.ini: a plaintext password is hashed on start and written back; -pbkdf2:sha256- and legacy -pbkdf2- (sha1) hashes work', async () => {
  const dir = fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || require('os').tmpdir(), 'divan-'));
  dirs.add(dir);
  fs.writeFileSync(path.join(dir, 'local.ini'), [
    '[admins]',
    'root = root-plain-pw',
    'hashed = ' + adminHash('hashed-pw', 'sha256', 1000),
    'legacy = ' + adminHash('legacy-pw', 'sha1', 1000),
    '',
  ].join('\n'));
  const s = await launch({ admin: null, dataDir: dir });
  for (const [name, password] of [['root', 'root-plain-pw'], ['hashed', 'hashed-pw'], ['legacy', 'legacy-pw']]) {
    const r = await as({ name, password }, s)('GET', '/_session');
    eq(r.status, 200, `${name}: ${r.text}`);
    eq(r.json.userCtx.name, name);
    ok(r.json.userCtx.roles.includes('_admin'), r.text);
    eq((await as({ name, password }, s)('GET', '/_all_dbs')).status, 200, name);
  }
  isErr(await call('GET', '/_all_dbs', undefined, {}, s), 401, 'unauthorized', R.notServerAdmin);
  ok(!/created server admin/.test(s.stdout()), 'no admin is created when [admins] has one: ' + s.stdout());
  const ini = fs.readFileSync(path.join(dir, 'local.ini'), 'utf8');
  ok(!ini.includes('root-plain-pw'), 'the plaintext password was replaced:\n' + ini);
  ok(/^root\s*=\s*-pbkdf2:sha256-/m.test(ini), 'root is hashed in local.ini:\n' + ini);
  await halt(s);
});

// ---- first start without any admin ----------------------------------------------

test('first start without an admin: one is created, printed once, stored hashed; anonymous is refused; it survives a restart', async () => {
  const s = await launch({ admin: null });
  let m = null;
  for (let i = 0; i < 40 && !m; i++) {
    m = /created server admin "([^"]+)" with password "([^"]+)"/.exec(s.stdout());
    if (!m) await sleep(50);
  }
  ok(m, 'the creation line on stdout: ' + JSON.stringify(s.stdout()));
  const cred = { name: m[1], password: m[2] };
  ok(cred.password.length >= 12, 'a long random password: ' + cred.password);
  isErr(await call('GET', '/_all_dbs', undefined, {}, s), 401, 'unauthorized', R.notServerAdmin);
  isErr(await call('PUT', '/partydb', undefined, {}, s), 401, 'unauthorized', R.notServerAdmin);
  const r = await as(cred, s)('GET', '/_session');
  eq(r.status, 200, r.text);
  eq(r.json.userCtx.name, cred.name);
  ok(r.json.userCtx.roles.includes('_admin'));
  eq((await as(cred, s)('PUT', '/partydb')).status, 201);
  const ini = fs.readFileSync(path.join(s.dataDir, 'local.ini'), 'utf8');
  ok(new RegExp('^' + cred.name + '\\s*=\\s*-pbkdf2:sha256-', 'm').test(ini), 'stored hashed:\n' + ini);
  ok(!ini.includes(cred.password), 'the password is not in local.ini');
  ok(!s.log().includes(cred.password), 'nor on stderr');
  const dataDir = s.dataDir;
  await halt(s);
  const again = await launch({ admin: null, dataDir });
  await sleep(200);
  ok(!/created server admin/.test(again.stdout()), 'not created twice: ' + again.stdout());
  eq((await as(cred, again)('GET', '/_all_dbs')).status, 200);
  isErr(await call('GET', '/_all_dbs', undefined, {}, again), 401, 'unauthorized', R.notServerAdmin);
  await halt(again);
});

// ---- CORS and [chttpd_auth] timeout from local.ini -----------------------------

let corsSrv = null;

test('CORS on ([chttpd] enable_cors, [cors] origins, credentials): preflight 204 with Allow-Origin/Methods/Headers/Credentials, no credentials needed', async () => {
  const s = await launch({ config: '[chttpd]\nenable_cors = true\nWWW-Authenticate = Basic realm="administrator"\n\n[cors]\norigins = http://app.example\ncredentials = true\n\n[chttpd_auth]\ntimeout = 2\n' });
  try {
    eq((await as(ADMIN, s)('PUT', '/corsdb')).status, 201);
    const pre = await call('OPTIONS', '/corsdb/doc', undefined, {
      Origin: 'http://app.example', 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'authorization, content-type',
    }, s);
    eq(pre.status, 204, pre.text);
    eq(pre.headers['access-control-allow-origin'], 'http://app.example');
    eq(pre.headers['access-control-allow-credentials'], 'true');
    ok(/\bPUT\b/.test(pre.headers['access-control-allow-methods'] || ''), 'methods: ' + pre.headers['access-control-allow-methods']);
    ok(/\bGET\b/.test(pre.headers['access-control-allow-methods'] || ''));
    const ah = (pre.headers['access-control-allow-headers'] || '').toLowerCase();
    ok(ah.includes('authorization') && ah.includes('content-type'), 'headers: ' + ah);
    // An actual request from the allowed origin carries the CORS headers, even a refusal.
    const g = await call('GET', '/', undefined, { Origin: 'http://app.example' }, s);
    eq(g.status, 200);
    eq(g.headers['access-control-allow-origin'], 'http://app.example');
    eq(g.headers['access-control-allow-credentials'], 'true');
    const refusedReq = await call('GET', '/corsdb', undefined, { Origin: 'http://app.example' }, s);
    eq(refusedReq.status, 401);
    eq(refusedReq.headers['access-control-allow-origin'], 'http://app.example');
    // [chttpd] WWW-Authenticate set: 401s carry it (chttpd:error_headers); off by default (checked below)
    eq(refusedReq.headers['www-authenticate'], 'Basic realm="administrator"');
    // A disallowed origin gets no CORS headers, preflight or not.
    const evil = await call('OPTIONS', '/corsdb/doc', undefined, { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'PUT' }, s);
    ok(!evil.headers['access-control-allow-origin'], 'no Allow-Origin for a foreign origin');
    ok(!evil.headers['access-control-allow-credentials'], 'no Allow-Credentials for a foreign origin');
    const evilGet = await call('GET', '/', undefined, { Origin: 'http://evil.example' }, s);
    ok(!evilGet.headers['access-control-allow-origin']);
    ok(!evilGet.headers['access-control-allow-credentials']);
  } finally {
    corsSrv = s;
  }
});

test('[chttpd_auth] timeout = 2: a session cookie is honoured at once and ignored once it expired', async () => {
  const s = corsSrv;
  ok(s, 'the server of the previous check');
  try {
    isOk(await as(ADMIN, s)('PUT', '/_users'), [201, 412], 'PUT /_users');
    const u = await as(ADMIN, s)('PUT', '/_users/' + enc(userId('tim')), { _id: userId('tim'), name: 'tim', password: 'tim-pw', roles: [], type: 'user' });
    eq(u.status, 201, u.text);
    const c = await login({ name: 'tim', password: 'tim-pw' }, s);
    const who = async () => (await call('GET', '/_session', undefined, { Cookie: 'AuthSession=' + c }, s)).json.userCtx.name;
    eq(await who(), 'tim');
    await sleep(3500);
    eq(await who(), null, 'expired after 2 s');
  } finally {
    if (s) await halt(s);
  }
});

// JWT (jwtf.erl): HS256 and RS256 tokens, keys in [jwt_keys], the claims
// [jwt_auth] required_claims lists, sub as the name, _couchdb.roles as roles.
test('JWT on: HS256/RS256 tokens authenticate; bad signatures, expired, unknown kid, no sub, alg none are refused as jwtf refuses them', async () => {
  const secret = crypto.randomBytes(32);
  const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).trim().replace(/\n/g, '\\n');
  const s = await launch({
    config: '[chttpd]\nauthentication_handlers = {chttpd_auth, jwt_authentication_handler}, {chttpd_auth, cookie_authentication_handler}, {chttpd_auth, default_authentication_handler}\n\n' +
      `[jwt_keys]\nhmac:_default = ${secret.toString('base64')}\nrsa:k1 = ${pem}\n\n[jwt_auth]\nrequired_claims = exp, iat\n`,
  });
  try {
    const b64 = (o) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const hs = (claims, header = {}) => {
      const m = b64(Object.assign({ alg: 'HS256', typ: 'JWT' }, header)) + '.' + b64(claims);
      return m + '.' + crypto.createHmac('sha256', secret).update(m).digest('base64url');
    };
    const rs = (claims) => {
      const m = b64({ alg: 'RS256', kid: 'k1' }) + '.' + b64(claims);
      return m + '.' + crypto.sign('sha256', Buffer.from(m), privateKey).toString('base64url');
    };
    const bearer = (t) => ({ Authorization: 'Bearer ' + t });
    const get = (p, t) => call('GET', p, undefined, bearer(t), s);
    const good = { sub: 'jan', exp: now + 600, iat: now, '_couchdb.roles': ['_admin'] };
    let r = await get('/_session', hs(good));
    eq(r.status, 200, r.text);
    eq(r.json.userCtx, { name: 'jan', roles: ['_admin'] });
    eq(r.json.info.authenticated, 'jwt');
    ok(r.json.info.authentication_handlers.includes('jwt'));
    eq((await get('/_all_dbs', hs(good))).status, 200, 'the _admin role from the token');
    isErr(await get('/_all_dbs', hs({ sub: 'kim', exp: now + 600, iat: now })), 401, 'unauthorized', 'You are not a server admin.');
    r = await get('/_session', rs({ sub: 'ria', exp: now + 600, iat: now }));
    eq(r.status, 200, r.text);
    eq(r.json.userCtx.name, 'ria');
    // refusals
    const t = hs(good);
    const forged = t.split('.');
    forged[1] = b64(Object.assign({}, good, { sub: 'mallory' }));
    isErr(await get('/_session', forged.join('.')), 400, 'bad_request', 'Bad HMAC');
    const rf = rs({ sub: 'ria', exp: now + 600, iat: now }).split('.');
    rf[1] = b64({ sub: 'admin', exp: now + 600, iat: now, '_couchdb.roles': ['_admin'] });
    isErr(await get('/_all_dbs', rf.join('.')), 400, 'bad_request', 'Bad signature');
    isErr(await get('/_session', hs({ sub: 'jan', exp: now - 10, iat: now - 100 })), 401, 'unauthorized', 'exp not in future');
    isErr(await get('/_session', hs({ sub: 'jan', iat: now })), 400, 'bad_request', 'Missing exp claim');
    isErr(await get('/_session', hs({ sub: 'jan', exp: now + 600 })), 400, 'bad_request', 'Missing iat claim');
    isErr(await get('/_session', hs({ exp: now + 600, iat: now })), 401, 'unauthorized', 'Token missing sub claim.');
    isErr(await get('/_session', hs(good, { kid: 'nope' })), 400, 'bad_request', 'Unknown kid');
    const none = b64({ alg: 'none' }) + '.' + b64(good) + '.';
    isErr(await get('/_all_dbs', none), 400, 'bad_request', 'Invalid alg header parameter');
    isErr(await get('/_session', 'a.b'), 400, 'bad_request', 'Malformed token');
    isErr(await get('/_session', 'x.' + b64(good) + '.y'), 400, 'bad_request', 'Malformed token');
    // an HS256 token signed with the RSA public key as the secret (the classic alg confusion) fails
    const conf = b64({ alg: 'HS256', kid: 'k1' }) + '.' + b64(good);
    isErr(await get('/_all_dbs', conf + '.' + crypto.createHmac('sha256', pem).update(conf).digest('base64url')), 400, 'bad_request', 'Unknown kid');
    // Basic still works beside it
    eq((await as(ADMIN, s)('GET', '/_all_dbs')).status, 200);
  } finally {
    await halt(s);
  }
});

(async () => {
  const t0 = Date.now();
  try {
    await run();
  } finally {
    for (const s of [srv, ...extra]) {
      if (!s) continue;
      await s.stop().catch((e) => { console.log('FAIL ' + path.basename(__filename) + ': ' + e.message); process.exitCode = 1; });
    }
  }
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  if (process.env.T_VERBOSE) console.log(`auth.test.js: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(process.exitCode || 0);
})();
