// t.js — a tiny test harness for the black-box suites: named checks that
// run in order, a summary line, exit status 1 if any failed.
//
//   const { test, run, eq, ok, req } = require('../lib/t');
//   test('PUT /db creates', async () => { const r = await req('PUT', url + '/db'); eq(r.status, 201); });
//   run();   // at the end of the file
//
// req(method, url, body?, headers?) sends one request (body: object → JSON,
// string/Buffer as is) and resolves to { status, headers, text, json }.
// Credentials in the URL (http://name:pw@host/…) become a Basic
// Authorization header unless the caller gives one (an Authorization of
// null sends none).
//
// leaves(base, db, id, query?) and pouchLeaves(pdb, id): every leaf of a
// document (open_revs=all, revs=true) on the server at base and in a
// PouchDB, sorted by rev, for replication tests to compare.
'use strict';
const assert = require('assert');
const http = require('http');

const tests = [];
function test(name, fn) { tests.push({ name, fn }); }

async function run() {
  let passed = 0, failed = 0;
  const only = process.env.T_ONLY;
  for (const t of tests) {
    if (only && !t.name.includes(only) && t.name !== 'start' && t.name !== 'stop') continue;
    try {
      await t.fn();
      passed++;
      if (process.env.T_VERBOSE) console.log('ok   ' + t.name);
    } catch (e) {
      failed++;
      console.log('FAIL ' + t.name + '\n     ' + String(e && e.stack || e).split('\n').slice(0, 6).join('\n     '));
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}

// "Basic …" for the credentials of a URL object (http://name:pw@host).
function basicAuth(u) {
  return 'Basic ' + Buffer.from(decodeURIComponent(u.username) + ':' + decodeURIComponent(u.password)).toString('base64');
}

// Send one request (http.request options, body bytes or null) and resolve
// to { status, headers, text, json, body } (body: the bytes, a Buffer). timeoutMs (0: none) fails a request
// that gets no answer.
function send(opts, data, timeoutMs = 0) {
  return new Promise((resolve, reject) => {
    const r = http.request(Object.assign({ agent: false }, opts), (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const text = body.toString('utf8');
        let json;
        try { json = text.length ? JSON.parse(text) : undefined; } catch (e) { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, text, json, body });
      });
      res.on('error', reject);
    });
    if (timeoutMs) r.setTimeout(timeoutMs, () => r.destroy(new Error(`${opts.method} ${opts.path}: no answer in ${timeoutMs / 1000} s`)));
    r.on('error', reject);
    if (data !== null && data !== undefined) r.write(data);
    r.end();
  });
}

// Raw HTTP via node's http module (no fetch quirks: any method, raw headers,
// bodies on GET/DELETE, exact status codes).
function req(method, url, body, headers = {}) {
  const u = new URL(url);
  let data = null;
  const h = Object.assign({}, headers);
  const authKey = Object.keys(h).find((k) => k.toLowerCase() === 'authorization');
  if (authKey === undefined && u.username) h.Authorization = basicAuth(u);
  else if (authKey !== undefined && h[authKey] === null) delete h[authKey];
  if (body !== undefined && body !== null) {
    if (Buffer.isBuffer(body) || typeof body === 'string') data = body;
    else { data = JSON.stringify(body); if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['Content-Type'] = 'application/json'; }
  }
  return send({ method, hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers: h }, data);
}

const eq = (a, b, m) => assert.deepStrictEqual(a, b, m);
const ok = (v, m) => assert.ok(v, m);

// Assert a CouchDB error response: status, error, and (optionally) reason.
function isErr(r, status, error, reason) {
  assert.strictEqual(r.status, status, `status ${r.status} != ${status}: ${r.text}`);
  assert.ok(r.json && typeof r.json === 'object', 'error body is JSON: ' + r.text);
  assert.strictEqual(r.json.error, error, 'error: ' + r.text);
  assert.strictEqual(typeof r.json.reason, 'string', 'reason is a string: ' + r.text);
  if (reason !== undefined) assert.strictEqual(r.json.reason, reason, 'reason: ' + r.text);
}

// Every leaf of id in database db of the server at base (query: more
// parameters, "&name=value…"), sorted by rev.
async function leaves(base, db, id, query = '') {
  const r = await req('GET', `${base}/${db}/${encodeURIComponent(id)}?open_revs=all&revs=true${query}`, null, { Accept: 'application/json' });
  assert.strictEqual(r.status, 200, `GET ${db}/${id}?open_revs=all: ${r.status} ${r.text}`);
  ok(Array.isArray(r.json), 'open_revs=all answers an array: ' + r.text);
  return r.json.map((x) => { ok(x.ok, `${db}/${id}: leaf without ok: ${JSON.stringify(x)}`); return x.ok; }).sort(byRev);
}

// Every leaf of id in PouchDB database pdb, sorted by rev.
async function pouchLeaves(pdb, id) {
  const res = await pdb.get(id, { open_revs: 'all', revs: true });
  return res.map((x) => { ok(x.ok, `pouch ${id}: leaf without ok: ${JSON.stringify(x)}`); return x.ok; }).sort(byRev);
}
const byRev = (a, b) => (a._rev < b._rev ? -1 : a._rev > b._rev ? 1 : 0);

// Send raw bytes to 127.0.0.1:port; resolve with everything the server
// answered before closing (or after ms of silence). For requests Node's
// http module will not send (bad framing, huge headers).
function rawSocket(port, bytes, ms = 2000) {
  return new Promise((resolve) => {
    const s = require('net').connect(port, '127.0.0.1');
    let got = '';
    const t = setTimeout(() => { s.destroy(); resolve(got); }, ms);
    s.on('data', (d) => { got += d; });
    s.on('error', () => {});
    s.on('close', () => { clearTimeout(t); resolve(got); });
    s.write(bytes);
  });
}
// The status code of a raw HTTP/1.x answer.
const statusOf = (text) => Number((/^HTTP\/1\.[01] (\d{3})/.exec(text) || [])[1]);

module.exports = { test, run, req, send, basicAuth, eq, ok, isErr, assert, leaves, pouchLeaves, rawSocket, statusOf };
