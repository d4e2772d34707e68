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
// to { status, headers, text, json }. timeoutMs (0: none) fails a request
// that gets no answer.
function send(opts, data, timeoutMs = 0) {
  return new Promise((resolve, reject) => {
    const r = http.request(Object.assign({ agent: false }, opts), (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try { json = text.length ? JSON.parse(text) : undefined; } catch (e) { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
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

module.exports = { test, run, req, send, basicAuth, eq, ok, isErr, assert };
