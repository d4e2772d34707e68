// config.test.js — cluster-wide settings through /_node/_local/_config
// (README "Settings shared by several processes"; store/clustercfg.h): a
// cluster-wide setting lives in the store's key space, so a restart with an
// ini file that says something else (another process's file, or an old one)
// keeps what was written through the API, deletions included; a
// per-process setting ([log], [chttpd] port, …) lives in the ini file only.
// The file seeds the store on the first start. Run on the embedded store
// (http_config) and on the fdb backend over the libfdb_c double
// (fdb_http_config). Two processes on one cluster: test/auth/test_cluster.c.
'use strict';
const fs = require('fs');
const path = require('path');
const { test, run, req, eq, ok, isErr } = require('../lib/t');
const { startDivan } = require('../lib/divan');

let srv, U, dataDir;
const J = { 'Content-Type': 'application/json' };
const cfg = (p) => req('GET', `${U}/_node/_local/_config/${p}`);
const put = (p, v) => req('PUT', `${U}/_node/_local/_config/${p}`, JSON.stringify(v), J);
const del = (p) => req('DELETE', `${U}/_node/_local/_config/${p}`);
const ini = () => fs.readFileSync(path.join(dataDir, 'local.ini'), 'utf8');

test('first start: the ini file seeds the cluster-wide settings', async () => {
  srv = await startDivan({ config: '[cors]\norigins = http://seeded\nheaders = x-seeded\n[log]\nlevel = info\n' });
  U = srv.url;
  dataDir = srv.dataDir;
  eq((await cfg('cors/origins')).json, 'http://seeded');
  eq((await cfg('log/level')).json, 'info');
});

test('PUT and DELETE of cluster-wide settings: answered as CouchDB, kept in the file as a copy', async () => {
  const p = await put('cors/origins', 'http://put');
  eq(p.status, 200, p.text);
  eq(p.json, 'http://seeded');
  eq((await cfg('cors/origins')).json, 'http://put');
  const d = await del('cors/headers');
  eq(d.status, 200, d.text);
  eq(d.json, 'x-seeded');
  isErr(await cfg('cors/headers'), 404, 'not_found');
  isErr(await del('cors/headers'), 404, 'not_found');
  eq((await put('replicator/retry_max_ms', '4321')).status, 200);
  ok(/^origins = http:\/\/put$/m.test(ini()), ini());
  ok(!/^headers/m.test(ini()), ini());
  eq((await put('log/level', 'warning')).status, 200); /* per process */
  const all = (await cfg('')).json;
  eq(all.cors.origins, 'http://put');
  eq(all.replicator.retry_max_ms, '4321');
});

test('a restart with another file: the store\'s cluster-wide settings win, per-process ones come from the file', async () => {
  await srv.stop();
  fs.writeFileSync(path.join(dataDir, 'local.ini'),
    '[cors]\norigins = http://stale\nheaders = x-stale\n[log]\nlevel = error\n[uuids]\nalgorithm = utc_random\n');
  srv = await startDivan({ dataDir });
  U = srv.url;
  eq((await cfg('cors/origins')).json, 'http://put');
  isErr(await cfg('cors/headers'), 404, 'not_found'); /* the deletion holds against the file */
  eq((await cfg('replicator/retry_max_ms')).json, '4321');
  eq((await cfg('log/level')).json, 'error');
  eq((await cfg('uuids/algorithm')).json, 'utc_random'); /* a new key of the file: seeded */
});

test('a bad value is refused without a write; an admin is stored hashed', async () => {
  isErr(await put('cors/origins', 12), 400, 'bad_request');
  eq((await cfg('cors/origins')).json, 'http://put');
  eq((await put('admins/keeper', 'keeper-pw')).status, 200);
  const h = (await cfg('admins/keeper')).json;
  ok(/^-pbkdf2:sha256-/.test(h), h);
  const base = U.replace(/\/\/[^@]*@/, '//');
  const r = await req('GET', base + '/_session', undefined, { Authorization: 'Basic ' + Buffer.from('keeper:keeper-pw').toString('base64') });
  eq(r.json.userCtx.name, 'keeper', r.text);
});

test('stop', async () => { await srv.stop(); });

run();
