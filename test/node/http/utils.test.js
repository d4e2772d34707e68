// utils.test.js — the static file server behind /_utils (src/api/utils.c)
// and the server endpoints Fauxton needed fixed, without a browser:
// the redirect, the content-type table, ETag / Last-Modified / 304, gzip
// and its limit, HEAD, directories, path traversal refused, 404s, where the
// document root comes from ([chttpd] docroot, COUCHDB_FAUXTON_DOCROOT, the
// tree's share/fauxton install), CouchDB's Cache-Control and CSP headers;
// /_cluster_setup as a single node; [httpd] enable_cors (Fauxton's CORS
// page writes it). The browser drives Fauxton itself in fauxton.test.js.
'use strict';
const { test, run, req, send, eq, ok, isErr } = require('../lib/t');
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const { startDivan, ROOT } = require('../lib/divan');

const CSP = "child-src 'self' data: blob:; default-src 'self'; img-src 'self' data:; font-src 'self'; " +
  "script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline';";
const GZ_MAX = 8 << 20; // utils.c UT_GZ_MAX

let srv, U, B, dir, root;

// A document root of our own: every type of the table, a directory with
// and without index.html, a dot file, and a secret beside the root that no
// path may reach.
function makeRoot() {
  dir = fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || os.tmpdir(), 'utils-'));
  root = path.join(dir, 'www');
  fs.mkdirSync(path.join(root, 'sub'), { recursive: true });
  fs.mkdirSync(path.join(root, 'empty'));
  fs.writeFileSync(path.join(dir, 'secret.txt'), 'TOP SECRET');
  fs.writeFileSync(path.join(root, 'index.html'), '<!doctype html><title>root</title>' + 'x'.repeat(2000));
  fs.writeFileSync(path.join(root, 'sub', 'index.html'), '<p>sub</p>');
  fs.writeFileSync(path.join(root, '.hidden'), 'dot file');
  fs.writeFileSync(path.join(root, 'app.js'), 'function f() { return 42; }\n'.repeat(4000));
  fs.writeFileSync(path.join(root, 'at-limit.js'), Buffer.alloc(GZ_MAX, 'a'));
  fs.writeFileSync(path.join(root, 'past-limit.js'), Buffer.alloc(GZ_MAX + 1, 'a'));
  const png = Buffer.alloc(3000, 7);
  for (const f of ['a.htm', 'a.css', 'a.json', 'a.svg', 'a.txt', 'a.ttf', 'a.eot', 'a.ico', 'a.xml', 'a.map', 'UPPER.JS', 'a.unknownext', 'noext'])
    fs.writeFileSync(path.join(root, f), 'text '.repeat(400));
  for (const f of ['a.png', 'a.gif', 'a.jpg', 'a.woff', 'a.woff2']) fs.writeFileSync(path.join(root, f), png);
}

const get = (p, headers = {}) => req('GET', B + p, null, headers);
// A raw path, sent as written (new URL() would resolve "..").
const raw = (p, method = 'GET', headers = {}) => send({ method, hostname: '127.0.0.1', port: srv.port, path: p, headers }, null);

test('start', async () => {
  makeRoot();
  srv = await startDivan({ config: `[chttpd]\ndocroot = ${root}\n` });
  U = srv.url;
  B = srv.base; // anonymous: /_utils needs no login, as in CouchDB
});

test('GET /_utils redirects to /_utils/ (301, absolute Location, empty body)', async () => {
  for (const m of ['GET', 'HEAD']) {
    const r = await req(m, B + '/_utils');
    eq(r.status, 301);
    eq(r.headers.location, `http://127.0.0.1:${srv.port}/_utils/`);
    eq(r.text, '');
  }
  const q = await get('/_utils?x=1');
  eq(q.status, 301);
});

test('GET /_utils/ is index.html, with CouchDB headers and validators', async () => {
  const r = await get('/_utils/');
  eq(r.status, 200);
  eq(r.body, fs.readFileSync(path.join(root, 'index.html')));
  eq(r.headers['content-type'], 'text/html');
  eq(r.headers['cache-control'], 'private, must-revalidate'); // one header: the engine's default is replaced
  eq(r.headers['content-security-policy'], CSP);
  ok(/^"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"$/.test(r.headers.etag), r.headers.etag);
  eq(r.headers['last-modified'], fs.statSync(path.join(root, 'index.html')).mtime.toUTCString());
  eq(r.headers.vary, 'Accept-Encoding');
  eq(r.headers['content-encoding'], undefined);
  const again = await get('/_utils//'); // empty segments are dropped, as mochiweb does
  eq(again.body, r.body);
});

test('content types: the table, case-blind, octet-stream for the rest', async () => {
  const want = {
    'index.html': 'text/html', 'a.htm': 'text/html', 'a.css': 'text/css', 'app.js': 'application/javascript',
    'UPPER.JS': 'application/javascript', 'a.json': 'application/json', 'a.map': 'application/json',
    'a.svg': 'image/svg+xml', 'a.txt': 'text/plain', 'a.xml': 'application/xml', 'a.png': 'image/png',
    'a.gif': 'image/gif', 'a.jpg': 'image/jpeg', 'a.woff': 'font/woff', 'a.woff2': 'font/woff2',
    'a.ttf': 'font/ttf', 'a.eot': 'application/vnd.ms-fontobject', 'a.ico': 'image/x-icon',
    'a.unknownext': 'application/octet-stream', 'noext': 'application/octet-stream',
  };
  for (const [f, type] of Object.entries(want)) {
    const r = await get('/_utils/' + f);
    eq(r.status, 200, f);
    eq(r.headers['content-type'], type, f);
    eq(r.body, fs.readFileSync(path.join(root, f)), f);
  }
});

test('gzip: compressible types when the client takes it, identity otherwise', async () => {
  const file = fs.readFileSync(path.join(root, 'app.js'));
  const gz = await get('/_utils/app.js', { 'Accept-Encoding': 'gzip, deflate' });
  eq(gz.status, 200);
  eq(gz.headers['content-encoding'], 'gzip');
  eq(gz.headers.vary, 'Accept-Encoding');
  eq(Number(gz.headers['content-length']), gz.body.length);
  ok(gz.body.length < file.length / 10, `${gz.body.length} bytes`);
  eq(zlib.gunzipSync(gz.body), file);
  const again = await get('/_utils/app.js', { 'Accept-Encoding': 'gzip' }); // from the cache now
  eq(again.body, gz.body);
  for (const ae of [undefined, 'identity', 'gzip;q=0', 'deflate', '*;q=0']) {
    const r = await get('/_utils/app.js', ae === undefined ? {} : { 'Accept-Encoding': ae });
    eq(r.headers['content-encoding'], undefined, String(ae));
    eq(r.body, file, String(ae));
  }
  const star = await get('/_utils/app.js', { 'Accept-Encoding': '*' });
  eq(star.headers['content-encoding'], 'gzip');
  for (const f of ['a.png', 'a.woff2']) { // already compressed: sent as they are
    const r = await get('/_utils/' + f, { 'Accept-Encoding': 'gzip' });
    eq(r.headers['content-encoding'], undefined, f);
    eq(r.headers.vary, undefined, f);
    eq(r.body, fs.readFileSync(path.join(root, f)), f);
  }
});

test('gzip limit: a file of UT_GZ_MAX bytes is gzip\'d, one byte more goes as it is', async () => {
  const at = await get('/_utils/at-limit.js', { 'Accept-Encoding': 'gzip' });
  eq(at.headers['content-encoding'], 'gzip');
  eq(zlib.gunzipSync(at.body).length, GZ_MAX);
  const past = await get('/_utils/past-limit.js', { 'Accept-Encoding': 'gzip' });
  eq(past.headers['content-encoding'], undefined);
  eq(past.body.length, GZ_MAX + 1);
  eq(Number(past.headers['content-length']), GZ_MAX + 1);
});

test('past the gzip cache\'s bounds (128 files, 16 MiB) every file is still right', async () => {
  const many = path.join(root, 'many');
  fs.mkdirSync(many);
  for (let i = 0; i < 130; i++) fs.writeFileSync(path.join(many, `f${i}.css`), `.c${i} { color: red; }\n`.repeat(50));
  // random text compresses to ~3/4: three of these hold more than 16 MiB gzip'd
  for (let i = 0; i < 3; i++) fs.writeFileSync(path.join(many, `big${i}.js`), require('crypto').randomBytes(6 << 20).toString('base64').slice(0, GZ_MAX));
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 130; i++) {
      const r = await get(`/_utils/many/f${i}.css`, { 'Accept-Encoding': 'gzip' });
      eq(zlib.gunzipSync(r.body).toString(), `.c${i} { color: red; }\n`.repeat(50));
    }
    for (let i = 0; i < 3; i++) {
      const r = await get(`/_utils/many/big${i}.js`, { 'Accept-Encoding': 'gzip' });
      eq(r.headers['content-encoding'], 'gzip');
      ok(zlib.gunzipSync(r.body).equals(fs.readFileSync(path.join(many, `big${i}.js`))), `big${i}.js`);
    }
  }
});

test('ETag: If-None-Match → 304 (either form, a list, *), a changed file a new tag', async () => {
  const r = await get('/_utils/app.js');
  const tag = r.headers.etag;
  const gz = await get('/_utils/app.js', { 'Accept-Encoding': 'gzip' });
  eq(gz.headers.etag, tag.slice(0, -1) + '-gz"');
  for (const inm of [tag, gz.headers.etag, `"nope", ${tag}`, '*']) {
    for (const ae of ['gzip', 'identity']) {
      const n = await get('/_utils/app.js', { 'If-None-Match': inm, 'Accept-Encoding': ae });
      eq(n.status, 304, `${inm} ${ae}`);
      eq(n.text, '');
      eq(n.headers.etag, ae === 'gzip' ? gz.headers.etag : tag);
      eq(n.headers['cache-control'], 'private, must-revalidate');
    }
  }
  const other = await get('/_utils/app.js', { 'If-None-Match': '"other"' });
  eq(other.status, 200);
  const p = path.join(root, 'app.js');
  fs.writeFileSync(p, 'changed();\n'.repeat(100));
  fs.utimesSync(p, new Date(), new Date(Date.now() + 5000));
  const now = await get('/_utils/app.js', { 'If-None-Match': tag, 'Accept-Encoding': 'gzip' });
  eq(now.status, 200);
  ok(now.headers.etag !== gz.headers.etag);
  eq(zlib.gunzipSync(now.body).toString(), 'changed();\n'.repeat(100)); // the cache saw the change
});

test('Last-Modified: an equal If-Modified-Since → 304; If-None-Match wins over it', async () => {
  const r = await get('/_utils/a.css');
  const lm = r.headers['last-modified'];
  eq((await get('/_utils/a.css', { 'If-Modified-Since': lm })).status, 304);
  eq((await get('/_utils/a.css', { 'If-Modified-Since': 'Mon, 01 Jan 1990 00:00:00 GMT' })).status, 200);
  eq((await get('/_utils/a.css', { 'If-Modified-Since': lm, 'If-None-Match': '"other"' })).status, 200);
});

test('HEAD: the GET headers without a body', async () => {
  for (const ae of ['gzip', 'identity']) {
    const g = await get('/_utils/a.css', { 'Accept-Encoding': ae });
    const h = await req('HEAD', B + '/_utils/a.css', null, { 'Accept-Encoding': ae });
    eq(h.status, 200);
    eq(h.text, '');
    for (const k of ['content-type', 'content-length', 'etag', 'last-modified', 'content-encoding', 'cache-control'])
      eq(h.headers[k], g.headers[k], k);
  }
  const big = await req('HEAD', B + '/_utils/past-limit.js');
  eq(Number(big.headers['content-length']), GZ_MAX + 1);
});

test('directories: a slash gives index.html, none redirects, no index is 404', async () => {
  const r = await get('/_utils/sub');
  eq(r.status, 301);
  eq(r.headers.location, `http://127.0.0.1:${srv.port}/_utils/sub/`);
  const s = await get('/_utils/sub/');
  eq(s.status, 200);
  eq(s.text, '<p>sub</p>');
  isErr(await get('/_utils/empty/'), 404, 'not_found', 'missing');
  isErr(await get('/_utils/index.html/'), 404, 'not_found', 'missing'); // a file is no directory
});

test('a missing file is 404 not_found, with the /_utils headers', async () => {
  const r = await get('/_utils/nope.js');
  isErr(r, 404, 'not_found', 'missing');
  eq(r.headers['cache-control'], 'private, must-revalidate');
});

test('path traversal is refused: .., encoded slashes and dots, backslash, NUL, dot files', async () => {
  const paths = ['/_utils/../secret.txt', '/_utils/%2e%2e/secret.txt', '/_utils/%2E%2E/secret.txt',
    '/_utils/sub/../../secret.txt', '/_utils/sub/%2e%2e%2f%2e%2e%2fsecret.txt', '/_utils/..%2fsecret.txt',
    '/_utils/..%5csecret.txt', '/_utils/%2fetc%2fpasswd', '/_utils/a%2Fb', '/_utils/index.html%00.js',
    '/_utils/%00', '/_utils/.hidden', '/_utils/./index.html', '/_utils/sub/.', '/_utils/..', '/_utils/...'];
  for (const p of paths) {
    const r = await raw(p);
    isErr(r, 404, 'not_found', 'missing');
    ok(!r.text.includes('TOP SECRET') && !r.text.includes('dot file') && !r.text.includes('<title>root'), p);
  }
  // the same files through their real names are there
  eq((await raw('/_utils/index.html')).status, 200);
});

test('only GET and HEAD: 405 with Allow', async () => {
  for (const m of ['POST', 'PUT', 'DELETE']) {
    const r = await req(m, B + '/_utils/index.html', '{}', { 'Content-Type': 'application/json' });
    isErr(r, 405, 'method_not_allowed');
    eq(r.headers.allow, 'GET,HEAD');
  }
});

test('CSP: [csp] utils_header_value, utils_enable=false with the legacy switch', async () => {
  const put = (k, v) => req('PUT', `${U}/_node/_local/_config/csp/${k}`, JSON.stringify(v), { 'Content-Type': 'application/json' });
  const del = (k) => req('DELETE', `${U}/_node/_local/_config/csp/${k}`);
  eq((await put('utils_header_value', "default-src 'self'")).status, 200);
  eq((await get('/_utils/')).headers['content-security-policy'], "default-src 'self'");
  eq((await put('utils_enable', 'false')).status, 200);
  eq((await get('/_utils/')).headers['content-security-policy'], CSP); // legacy [csp] enable defaults to true
  await put('header_value', 'img-src *');
  eq((await get('/_utils/')).headers['content-security-policy'], 'img-src *');
  await put('enable', 'false');
  eq((await get('/_utils/')).headers['content-security-policy'], undefined);
  for (const k of ['utils_header_value', 'utils_enable', 'header_value', 'enable']) eq((await del(k)).status, 200);
  eq((await get('/_utils/')).headers['content-security-policy'], CSP);
});

test('a docroot that is not there: 404 naming it', async () => {
  const gone = path.join(dir, 'gone');
  const put = await req('PUT', `${U}/_node/_local/_config/chttpd/docroot`, JSON.stringify(gone), { 'Content-Type': 'application/json' });
  eq(put.status, 200);
  try {
    const r = await get('/_utils/');
    isErr(r, 404, 'not_found', `[chttpd] docroot "${gone}": No such file or directory.`);
  } finally {
    await req('PUT', `${U}/_node/_local/_config/chttpd/docroot`, JSON.stringify(root), { 'Content-Type': 'application/json' });
  }
  eq((await get('/_utils/')).status, 200);
});

test('COUCHDB_FAUXTON_DOCROOT when [chttpd] docroot is unset; the tree\'s Fauxton otherwise', async () => {
  const other = path.join(dir, 'other');
  fs.mkdirSync(other);
  fs.writeFileSync(path.join(other, 'index.html'), 'from the environment');
  const e = await startDivan({ env: { COUCHDB_FAUXTON_DOCROOT: other } });
  try {
    eq((await req('GET', e.base + '/_utils/')).text, 'from the environment');
  } finally { await e.stop(); fs.rmSync(e.dataDir, { recursive: true, force: true }); }
  const bad = await startDivan({ env: { COUCHDB_FAUXTON_DOCROOT: path.join(dir, 'nowhere') } });
  try {
    isErr(await req('GET', bad.base + '/_utils/'), 404, 'not_found', `COUCHDB_FAUXTON_DOCROOT "${path.join(dir, 'nowhere')}": No such file or directory.`);
  } finally { await bad.stop(); fs.rmSync(bad.dataDir, { recursive: true, force: true }); }
  // no setting at all: the Fauxton scripts/deps.sh installed in this tree, found beside the binary
  const fx = path.join(ROOT, 'share/fauxton/node_modules/fauxton/dist/release');
  ok(fs.existsSync(path.join(fx, 'index.html')), `${fx}: run scripts/deps.sh`);
  const d = await startDivan();
  try {
    const r = await req('GET', d.base + '/_utils/');
    eq(r.status, 200);
    eq(r.body, fs.readFileSync(path.join(fx, 'index.html')));
    const js = /src="(dashboard\.assets\/js\/bundle\.[0-9a-f]+\.js)"/.exec(r.text);
    ok(js, 'index.html names its bundle');
    const b = await req('GET', d.base + '/_utils/' + js[1], null, { 'Accept-Encoding': 'gzip' });
    eq(b.headers['content-type'], 'application/javascript');
    eq(zlib.gunzipSync(b.body), fs.readFileSync(path.join(fx, js[1])));
  } finally { await d.stop(); fs.rmSync(d.dataDir, { recursive: true, force: true }); }
});

// ---- what Fauxton calls besides its files --------------------------------

test('/_cluster_setup GET: a single node that is set up', async () => {
  const r = await req('GET', U + '/_cluster_setup');
  eq(r.status, 200);
  eq(r.json, { state: 'single_node_enabled' });
  isErr(await req('GET', B + '/_cluster_setup'), 401, 'unauthorized');
  const missing = await req('GET', U + '/_cluster_setup?ensure_dbs_exist=' + encodeURIComponent('["_users","nodb"]'));
  eq(missing.json, { state: 'single_node_disabled' });
  const fine = await req('GET', U + '/_cluster_setup?ensure_dbs_exist=' + encodeURIComponent('["_users"]'));
  eq(fine.json, { state: 'single_node_enabled' });
  isErr(await req('GET', U + '/_cluster_setup?ensure_dbs_exist=3'), 400, 'bad_request');
  isErr(await req('GET', U + '/_cluster_setup?ensure_dbs_exist=[1]'), 400, 'bad_request');
  isErr(await req('GET', U + '/_cluster_setup?ensure_dbs_exist=[x'), 400, 'bad_request');
  isErr(await req('PUT', U + '/_cluster_setup', {}), 405, 'method_not_allowed');
});

test('/_cluster_setup POST: finish_cluster and enable_single_node', async () => {
  const post = (b) => req('POST', U + '/_cluster_setup', b);
  isErr(await post({ action: 'finish_cluster' }), 400, 'bad_request', 'Cluster is already finished');
  const made = await post({ action: 'finish_cluster', ensure_dbs_exist: ['setup-made'] });
  eq(made.status, 201);
  eq(made.json, { ok: true });
  eq((await req('GET', U + '/setup-made')).status, 200);
  const en = await post({ action: 'enable_single_node', username: 'boss', password: 'b0ss', bind_address: '127.0.0.1', port: srv.port, ensure_dbs_exist: ['setup-two'] });
  eq(en.status, 201);
  eq((await req('GET', U + '/setup-two')).status, 200);
  const boss = U.replace('admin:testpass', 'boss:b0ss');
  eq((await req('GET', boss + '/_session')).json.userCtx.roles, ['_admin']); // the new admin logs in
  const stored = await req('GET', U + '/_node/_local/_config/admins/boss');
  ok(/^-pbkdf2/.test(stored.json), 'the password is stored hashed: ' + stored.text);
  eq((await req('GET', U + '/_node/_local/_config/chttpd/port')).json, String(srv.port));
  isErr(await post({ action: 'enable_cluster' }), 400, 'bad_request');
  isErr(await post({ action: 'nope' }), 400, 'bad_request', "Invalid Action'");
  isErr(await post({}), 400, 'bad_request', "Invalid Action'");
  isErr(await post([]), 400, 'bad_request');
  isErr(await req('POST', U + '/_cluster_setup', 'x', { 'Content-Type': 'text/plain' }), 415, 'bad_content_type');
  isErr(await req('POST', B + '/_cluster_setup', { action: 'finish_cluster' }), 401, 'unauthorized');
});

test('CORS: [httpd] enable_cors, which Fauxton\'s CORS page writes, turns it on', async () => {
  const cfg = (s, k, v) => req('PUT', `${U}/_node/_local/_config/${s}/${k}`, JSON.stringify(v), { 'Content-Type': 'application/json' });
  eq((await cfg('cors', 'origins', 'https://app.example')).status, 200);
  const off = await req('GET', U + '/', null, { Origin: 'https://app.example' });
  eq(off.headers['access-control-allow-origin'], undefined);
  eq((await cfg('httpd', 'enable_cors', 'true')).status, 200);
  const on = await req('GET', U + '/', null, { Origin: 'https://app.example' });
  eq(on.headers['access-control-allow-origin'], 'https://app.example');
  eq((await cfg('chttpd', 'enable_cors', 'false')).status, 200); // [chttpd] wins
  eq((await req('GET', U + '/', null, { Origin: 'https://app.example' })).headers['access-control-allow-origin'], undefined);
});

test('stop', async () => {
  await srv.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

run();
