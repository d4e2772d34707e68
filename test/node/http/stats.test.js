// stats.test.js — black-box checks of a node's metrics and health against a
// real `divan serve`: /_node/{node}/_stats in CouchDB 3.4's shape (every
// metric {value,type,desc}, histograms couch_stats_math's object), counters
// moving by exactly what known requests do, one metric by path (an unknown
// path is null, as couch_stats_httpd:extract_path), _prometheus parsed
// line by line, _system's numbers, _versions, /_up with [couchdb]
// maintenance_mode, DIVAN_STATS=off, and (on the fdb backend, over the
// libfdb_c double with commit_unknown_result injected) divan's kv counters.
//
// A request is counted when it ends, so a read of _stats does not see
// itself: a check reads, makes its requests, reads again, and expects
// exactly its own requests plus the first read.
'use strict';
const http = require('http');
const { test, run, req, eq, ok, isErr, basicAuth } = require('../lib/t');
const { startDivan } = require('../lib/divan');

const FDB = !!process.env.DIVAN_FDB;
let srv, U;

const stats = async (path = '') => {
  const r = await req('GET', `${U}/_node/_local/_stats${path}`);
  eq(r.status, 200, r.text);
  return r.json;
};
const val = async (path) => (await stats(path)).value;
const put = async (path, body) => {
  const r = await req('PUT', U + path, body);
  ok(r.status === 201 || r.status === 202, `PUT ${path}: ${r.status} ${r.text}`);
  return r.json;
};

test('start', async () => { srv = await startDivan(); U = srv.url; });

const HIST_KEYS = ['min', 'max', 'arithmetic_mean', 'geometric_mean', 'harmonic_mean', 'median', 'variance',
  'standard_deviation', 'skewness', 'kurtosis', 'percentile', 'histogram', 'n'];

// Every leaf of the tree: [path, metric].
function leaves(o, path = []) {
  if (o && typeof o === 'object' && 'type' in o && 'desc' in o && 'value' in o) return [[path.join('.'), o]];
  return Object.entries(o).flatMap(([k, v]) => leaves(v, path.concat(k)));
}

test('_stats: CouchDB\'s tree, every metric {value,type,desc}', async () => {
  const s = await stats();
  for (const g of ['couchdb', 'mango', 'divan']) ok(s[g] && typeof s[g] === 'object', g);
  for (const k of ['database_reads', 'database_writes', 'document_inserts', 'document_writes', 'open_databases',
    'request_time', 'open_os_files']) ok(s.couchdb[k], 'couchdb.' + k);
  for (const k of ['requests', 'bulk_requests', 'view_reads', 'clients_requesting_changes']) ok(s.couchdb.httpd[k], 'couchdb.httpd.' + k);
  for (const m of ['COPY', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']) eq(s.couchdb.httpd_request_methods[m].type, 'counter');
  for (const c of ['200', '201', '202', '400', '401', '404', '409', '412', '500']) eq(s.couchdb.httpd_status_codes[c].type, 'counter');
  const all = leaves(s);
  ok(all.length > 60, String(all.length));
  for (const [p, m] of all) {
    eq(Object.keys(m), ['value', 'type', 'desc'], p);
    ok(['counter', 'gauge', 'histogram'].includes(m.type), p + ' ' + m.type);
    ok(typeof m.desc === 'string' && m.desc.length > 5, p);
    if (m.type !== 'histogram') { ok(Number.isInteger(m.value) && m.value >= 0, `${p}: ${m.value}`); continue; }
    eq(Object.keys(m.value), HIST_KEYS, p);
    eq(m.value.percentile.map((x) => x[0]), [50, 75, 90, 95, 99, 999], p);
    eq(m.value.histogram, [[0, 0]], p);
    for (const k of HIST_KEYS.slice(0, 10)) ok(typeof m.value[k] === 'number', `${p}.${k}`);
  }
  eq(s.couchdb.request_time.type, 'histogram');
  eq(s.couchdb.open_databases.type, 'counter'); // CouchDB's type; a gauge in Prometheus
  // the node by name is the same node; another name is not
  const byName = await req('GET', `${U}/_node/divan@127.0.0.1/_stats/couchdb/httpd_request_methods/COPY`);
  eq(byName.status, 200);
  eq(byName.json.type, 'counter');
  isErr(await req('GET', `${U}/_node/nonode@nohost/_stats`), 404, 'not_found', 'no such node: nonode@nohost');
});

test('_stats/{group}/{metric}: one metric; an unknown path is null (extract_path)', async () => {
  const m = await stats('/couchdb/request_time');
  eq(m.type, 'histogram');
  eq(m.desc, 'length of a request inside divan');
  const g = await stats('/couchdb/httpd_status_codes');
  ok(g['200'] && g['404'] && !g.type);
  for (const p of ['/couchdb/nope', '/nope', '/couchdb/httpd/requests/value/deeper']) {
    const r = await req('GET', `${U}/_node/_local/_stats${p}`);
    eq(r.status, 200);
    eq(r.text.trim(), 'null', p);
  }
  const v = await req('GET', `${U}/_node/_local/_stats/couchdb/httpd/requests/value`);
  ok(Number.isInteger(v.json), v.text);
  isErr(await req('POST', `${U}/_node/_local/_stats`, {}), 405, 'method_not_allowed');
  isErr(await req('PUT', `${U}/_node/_local/_system`, {}), 405, 'method_not_allowed');
  isErr(await req('GET', `${srv.base}/_node/_local/_stats`), 401, 'unauthorized');
  isErr(await req('GET', `${srv.base}/_node/_local/_prometheus`), 401, 'unauthorized');
});

test('requests: methods, status codes and requests move by exactly what was sent', async () => {
  const before = (await stats()).couchdb; // this read counts in the next one
  for (let i = 0; i < 3; i++) eq((await req('GET', U + '/')).status, 200);
  for (let i = 0; i < 2; i++) eq((await req('HEAD', U + '/')).status, 200);
  for (let i = 0; i < 2; i++) isErr(await req('POST', U + '/', {}), 405, 'method_not_allowed');
  isErr(await req('DELETE', U + '/no_such_db'), 404, 'not_found');
  isErr(await req('GET', srv.base + '/_all_dbs'), 401, 'unauthorized');
  const after = (await stats()).couchdb;
  const d = (p) => p.split('.').reduce((o, k) => o[k], after).value - p.split('.').reduce((o, k) => o[k], before).value;
  eq(d('httpd_request_methods.GET'), 3 + 1 + 1); // three GET /, the first _stats, the 401
  eq(d('httpd_request_methods.HEAD'), 2);
  eq(d('httpd_request_methods.POST'), 2);
  eq(d('httpd_request_methods.DELETE'), 1);
  eq(d('httpd_request_methods.PUT'), 0);
  eq(d('httpd_status_codes.200'), 3 + 2 + 1);
  eq(d('httpd_status_codes.405'), 2);
  eq(d('httpd_status_codes.404'), 1);
  eq(d('httpd_status_codes.401'), 1);
  eq(d('httpd.requests'), 10);
  ok(after.request_time.value.n >= 10, JSON.stringify(after.request_time.value)); // a 5-10 s window
  ok(after.request_time.value.max >= after.request_time.value.min);
});

test('documents: writes, inserts, reads, local writes, bulk requests', async () => {
  await put('/sdb');
  await put('/sdb/a', { x: 1 });
  const b = (await stats()).couchdb;
  const a1 = await put('/sdb/a1', { x: 1 });                       // an insert
  await put('/sdb/a1', { _rev: a1.rev, x: 2 });                     // a write, not an insert
  const conflict = await req('PUT', U + '/sdb/a1', { x: 3 });       // refused: no write
  eq(conflict.status, 409);
  const bulk = await req('POST', U + '/sdb/_bulk_docs', { docs: [{ _id: 'b1' }, { _id: 'b2' }, { _id: 'b3' }] });
  eq(bulk.status, 201);
  await put('/sdb/_local/l1', { x: 1 });
  for (let i = 0; i < 2; i++) eq((await req('GET', U + '/sdb/a')).status, 200);
  eq((await req('GET', U + '/sdb/a?open_revs=all', null, { Accept: 'application/json' })).status, 200);
  const ad = await req('GET', U + '/sdb/_all_docs?include_docs=true&keys=%5B%22a%22%2C%22b1%22%5D');
  eq(ad.json.rows.length, 2);
  const a = (await stats()).couchdb;
  eq(a.document_writes.value - b.document_writes.value, 5);
  eq(a.document_inserts.value - b.document_inserts.value, 4);
  eq(a.database_writes.value - b.database_writes.value, 4 + 1); // three PUTs, one _bulk_docs, the _local PUT
  eq(a.local_document_writes.value - b.local_document_writes.value, 1);
  eq(a.database_reads.value - b.database_reads.value, 2 + 1 + 2);
  eq(a.httpd.bulk_requests.value - b.httpd.bulk_requests.value, 1);
  ok(a.httpd.bulk_docs.value.n >= 1 && a.httpd.bulk_docs.value.max >= 3 && a.httpd.bulk_docs.value.min <= 3,
    JSON.stringify(a.httpd.bulk_docs.value));
  ok(a.open_databases.value >= 1, String(a.open_databases.value));
});

// A continuous _changes feed held open: counted while it lives.
function feed(path) {
  const u = new URL(U + path);
  let text = '';
  const r = http.request({ hostname: u.hostname, port: u.port, path: u.pathname + u.search, agent: false,
    headers: { Authorization: basicAuth(u) } }, (res) => res.on('data', (c) => { text += c; }).on('error', () => {}));
  r.on('error', () => {});
  r.end();
  return { close: () => r.destroy(), text: () => text };
}

async function until(what, fn, ms = 5000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await new Promise((res) => setTimeout(res, 50));
  }
}

test('clients_requesting_changes: +1 while a continuous feed is open, back when it ends', async () => {
  const p = '/couchdb/httpd/clients_requesting_changes';
  const v0 = await val(p);
  const f = feed('/sdb/_changes?feed=continuous&heartbeat=200');
  await until('the feed', async () => (await val(p)) === v0 + 1);
  await until('a row', async () => /"id":"a"/.test(f.text()));
  const n = await req('GET', U + '/sdb/_changes'); // a normal feed is no client requesting changes
  eq(n.status, 200);
  eq(await val(p), v0 + 1);
  f.close();
  await until('the feed to end', async () => (await val(p)) === v0);
});

test('views, mango and purge', async () => {
  await put('/sdb/_design/v', { views: { by_x: { map: 'function (d) { if (d.x) emit(d.x, 1); }' } } });
  const b = await stats();
  eq((await req('GET', U + '/sdb/_design/v/_view/by_x')).status, 200);
  eq((await req('POST', U + '/sdb/_design/v/_view/by_x', { keys: [1] })).status, 200);
  const f = await req('POST', U + '/sdb/_find', { selector: { x: { $gt: 0 } } });
  eq(f.status, 200);
  eq(f.json.docs.length, 2);
  ok(/No matching index found/.test(f.json.warning), f.text);
  const p = await req('POST', U + '/sdb/_purge', { b3: ['1-nonexistent'] });
  eq(p.status, 201);
  const a = await stats();
  eq(a.couchdb.httpd.view_reads.value - b.couchdb.httpd.view_reads.value, 2);
  eq(a.mango.unindexed_queries.value - b.mango.unindexed_queries.value, 1);
  eq(a.mango.results_returned.value - b.mango.results_returned.value, 2);
  ok(a.mango.docs_examined.value - b.mango.docs_examined.value >= 2);
  eq(a.mango.query_time.type, 'histogram');
  ok(a.mango.query_time.value.n >= 1);
  eq(a.couchdb.httpd.purge_requests.value - b.couchdb.httpd.purge_requests.value, 1);
  eq(a.couchdb.database_purges.value - b.couchdb.database_purges.value, 1);
});

test('divan: kv commits, the engine\'s numbers', async () => {
  const b = await stats('/divan');
  await put('/sdb/k1', { x: 1 });
  const a = await stats('/divan');
  ok(a.kv.commits.value - b.kv.commits.value >= 1);
  for (const k of ['conflicts', 'transaction_too_old', 'commit_unknown_result', 'retries']) eq(a.kv[k].type, 'counter');
  eq(a.store.commit_unknown_recovered.type, 'counter');
  if (FDB) {
    eq(a.rocksdb, undefined); // a FoundationDB client sees no storage engine's numbers: none shown, none made up
  } else {
    ok(a.rocksdb.batches.value - b.rocksdb.batches.value >= 1);
    ok(a.rocksdb.batch_size.value.n >= 1);
    ok(a.rocksdb.wal_sync_time.value.n >= 1 && a.rocksdb.wal_sync_time.value.max > 0);
    for (const k of ['pending_compaction_bytes', 'running_compactions', 'running_flushes', 'sst_bytes', 'memtable_bytes', 'write_stopped']) {
      eq(a.rocksdb[k].type, 'gauge', k);
      ok(Number.isInteger(a.rocksdb[k].value) && a.rocksdb[k].value >= 0, k);
    }
    ok(a.rocksdb.memtable_bytes.value > 0);
  }
});

test('index lag: per view and json index, exact, 0 once built', async () => {
  await put('/lag');
  for (let i = 0; i < 4; i++) await put(`/lag/d${i}`, { n: i });
  const lag = async () => (await stats('/divan/index_lag/lag')) || {};
  // the design document's write hands its views to the background builder
  await put('/lag/_design/v', { views: { a: { map: 'function (d) { emit(d.n, null); }' }, b: { map: 'function (d) { emit(null, 1); }', reduce: '_count' } } });
  await until('the builder', async () => { const l = await lag(); return l['_design/v'] && l['_design/v'].a.value === 0; }, 30000);
  const idx = await req('POST', U + '/lag/_index', { index: { fields: ['n'] }, name: 'by_n', ddoc: 'm' });
  eq(idx.status, 200, idx.text);
  await until('the json index', async () => { const l = await lag(); return l['_design/m'] && l['_design/m'].by_n.value === 0; }, 30000);
  let l = await lag();
  eq(l['_design/v'].a.type, 'gauge');
  eq(l['_design/v'].a.value, 1); // the json index's design document: one change the views have not seen
  eq(l['_design/v'].b.value, 1);
  for (let i = 4; i < 7; i++) await put(`/lag/d${i}`, { n: i });
  l = await lag();
  eq(l['_design/v'].a.value, 4);
  eq(l['_design/v'].b.value, 4);
  eq(l['_design/m'].by_n.value, 0); // a built json index is kept by every write
  eq((await req('GET', U + '/lag/_design/v/_view/b')).json.rows[0].value, 7);
  l = await lag();
  eq(l['_design/v'].a.value, 0);
  eq(l['_design/v'].b.value, 0);
  const m = await req('GET', `${U}/_node/_local/_stats/divan/index_lag/lag/_design%2Fv/a/value`);
  eq(m.json, 0);
});

test('index lag is counted up to 1,000: below, at and past the cap', async () => {
  const a = async () => (await stats('/divan/index_lag/lag/_design%2Fv/a')).value;
  eq(await a(), 0);
  const docs = [];
  for (let i = 0; i < 999; i++) docs.push({ _id: 'c' + i, n: i });
  eq((await req('POST', U + '/lag/_bulk_docs', { docs })).status, 201);
  eq(await a(), 999);
  await put('/lag/c999', {});
  eq(await a(), 1000);
  await put('/lag/c1000', {});
  eq(await a(), 1000); // at least 1,000: the description says where counting stops
  ok(/counted up to 1000$/.test((await stats('/divan/index_lag/lag/_design%2Fv/a')).desc));
});

// A Prometheus text exposition: every line a comment (# HELP/# TYPE) or
// name{labels} value; returns the samples and each family's type.
function parseProm(text) {
  const types = {}, samples = [];
  const lines = text.split('\n');
  eq(lines.pop(), '', 'ends with a newline');
  for (const line of lines) {
    let m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
    if (m) {
      if (m[1] === 'TYPE') {
        ok(['counter', 'gauge', 'summary', 'histogram', 'untyped'].includes(m[3]), line);
        ok(!(m[2] in types), 'one TYPE per family: ' + line);
        types[m[2]] = m[3];
      }
      continue;
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\})? (-?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|NaN|\+Inf|-Inf))$/.exec(line);
    ok(m, 'not a sample line: ' + JSON.stringify(line));
    const labels = {};
    for (const lm of (m[2] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1]] = lm[2];
    const fam = m[1].replace(/_(sum|count)$/, '');
    ok(types[m[1]] || types[fam], 'a sample after its family\'s TYPE: ' + line);
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return { types, samples };
}

test('_prometheus: the text format, CouchDB\'s names, the same numbers as _stats', async () => {
  await put('/sdb/p1', {});
  const r = await req('GET', `${U}/_node/_local/_prometheus`);
  eq(r.status, 200);
  ok(/^text\/plain/.test(r.headers['content-type']), r.headers['content-type']);
  const s = await stats(); // nothing written between the two reads
  const { types, samples } = parseProm(r.text);
  const one = (name, labels = {}) => {
    const x = samples.filter((y) => y.name === name && Object.entries(labels).every(([k, v]) => y.labels[k] === v));
    eq(x.length, 1, name + JSON.stringify(labels));
    return x[0].value;
  };
  eq(types.couchdb_document_writes_total, 'counter');
  eq(one('couchdb_document_writes_total'), s.couchdb.document_writes.value);
  eq(one('couchdb_database_writes_total'), s.couchdb.database_writes.value);
  eq(types.couchdb_open_databases, 'gauge');
  eq(types.couchdb_httpd_clients_requesting_changes, 'gauge');
  eq(types.couchdb_httpd_request_methods, 'counter');
  eq(one('couchdb_httpd_request_methods', { method: 'PUT' }), s.couchdb.httpd_request_methods.PUT.value);
  eq(one('couchdb_httpd_status_codes', { code: '201' }), s.couchdb.httpd_status_codes['201'].value);
  eq(types.couchdb_request_time_seconds, 'summary');
  for (const q of ['0.5', '0.75', '0.9', '0.95', '0.99', '0.999']) ok(one('couchdb_request_time_seconds', { quantile: q }) >= 0);
  ok(one('couchdb_request_time_seconds_count') >= 1);
  ok(one('couchdb_request_time_seconds_sum') > 0);
  eq(types.couchdb_mango_unindexed_queries_total, 'counter');
  eq(types.couchdb_divan_kv_commits_total, 'counter');
  ok(one('couchdb_uptime_seconds') >= 0);
  ok(one('couchdb_divan_memory_bytes', { memory_type: 'rss' }) > 1 << 20);
  ok(samples.some((x) => x.name === 'couchdb_divan_index_lag' && x.labels.db === 'lag' && x.labels.ddoc === '_design/v' && x.labels.index === 'a'));
  if (!FDB) eq(types.couchdb_divan_rocksdb_wal_sync_time_seconds, 'summary');
  else ok(!samples.some((x) => /rocksdb/.test(x.name)));
  const h = await req('HEAD', `${U}/_node/_local/_prometheus`);
  eq(h.status, 200);
  eq(h.text, '');
});

test('_system: the process\'s numbers', async () => {
  const r = await req('GET', `${U}/_node/_local/_system`);
  eq(r.status, 200);
  const s = r.json;
  for (const k of ['uptime', 'run_queue', 'context_switches', 'io_input', 'io_output', 'os_proc_count', 'threads', 'open_files']) {
    ok(Number.isInteger(s[k]) && s[k] >= 0, `${k}: ${s[k]}`);
  }
  ok(s.uptime < 3600);
  ok(s.threads >= 2 && s.threads < 1000, String(s.threads));
  ok(s.open_files > 3 && s.open_files < 10000, String(s.open_files));
  ok(s.run_queue >= 1 && s.run_queue <= s.threads); // this request's thread runs
  ok(s.io_output > 0);
  ok(s.memory.rss > 1 << 20 && s.memory.rss <= s.memory.virtual && s.memory.rss <= s.memory.rss_peak, JSON.stringify(s.memory));
  if (!/address/.test(process.env.DV_BUILD || '')) ok(s.memory.heap_in_use > 0); // ASan's allocator: not known, not shown
  else eq(s.memory.heap_in_use, undefined);
  eq(s.message_queues, {});
  eq(s.distribution, {});
  // one more query server context after a view ran
  ok(s.os_proc_count >= 1, 'the view tests started one: ' + s.os_proc_count);
});

test('_versions', async () => {
  const r = await req('GET', `${U}/_node/_local/_versions`);
  eq(r.status, 200);
  const v = r.json;
  eq(v.javascript_engine.name, 'spidermonkey');
  ok(/^\d+$/.test(v.javascript_engine.version), v.javascript_engine.version);
  ok(v.javascript_engine.version_dyn.startsWith(v.javascript_engine.version + '.'), v.javascript_engine.version_dyn);
  eq(v.collation_driver.name, 'libicu');
  for (const k of ['library_version', 'collation_algorithm_version', 'collator_version']) ok(/^\d+(\.\d+)+$/.test(v.collation_driver[k]), k);
  eq(v.erlang, undefined);
  eq(v.storage_engine.name, FDB ? 'foundationdb' : 'rocksdb');
  if (FDB) ok(/^\d{3}$/.test(v.storage_engine.api_version), JSON.stringify(v.storage_engine));
  else ok(/^\d+\.\d+\.\d+$/.test(v.storage_engine.version), JSON.stringify(v.storage_engine));
  eq(v.http_server.name, 'libmicrohttpd');
  ok(/^\d+\.\d+\.\d+$/.test(v.http_server.version));
  ok(typeof v.divan.version === 'string' && v.divan.version.length > 0);
});

test('/_up: ok while the store answers; [couchdb] maintenance_mode as chttpd_misc', async () => {
  let r = await req('GET', srv.base + '/_up'); // anyone may ask
  eq(r.status, 200);
  eq(r.json, { status: 'ok', seeds: {} });
  const cfg = `${U}/_node/_local/_config/couchdb/maintenance_mode`;
  eq((await req('PUT', cfg, '"true"')).status, 200);
  r = await req('GET', srv.base + '/_up');
  eq(r.status, 404);
  eq(r.json, { status: 'maintenance_mode' });
  eq((await req('PUT', cfg, '"nolb"')).status, 200);
  r = await req('GET', srv.base + '/_up');
  eq(r.status, 404);
  eq(r.json, { status: 'nolb' });
  eq((await req('DELETE', cfg)).status, 200);
  eq((await req('GET', srv.base + '/_up')).status, 200);
  isErr(await req('POST', srv.base + '/_up', {}), 405, 'method_not_allowed');
});

test('[stats] enabled = false pauses counting; true starts the counters from 0 again', async () => {
  const open0 = await val('/couchdb/open_databases');
  const cfg = `${U}/_node/_local/_config/stats/enabled`;
  eq((await req('PUT', cfg, '"false"')).status, 200);
  isErr(await req('GET', `${U}/_node/_local/_stats`), 404, 'not_found', 'Statistics are off: [stats] enabled is false.');
  isErr(await req('GET', `${U}/_node/_local/_prometheus`), 404, 'not_found');
  await put('/paused'); // an open database more: counted through the pause, or the gauge would stay wrong
  for (let i = 0; i < 3; i++) eq((await req('GET', U + '/')).status, 200);
  eq((await req('PUT', cfg, '"true"')).status, 200);
  const s = await stats();
  eq(s.couchdb.httpd.requests.value, 1); // the PUT that resumed: it ends after the resume
  eq(s.couchdb.httpd_request_methods.PUT.value, 1);
  eq(s.couchdb.httpd_request_methods.GET.value, 0);
  eq(s.couchdb.document_writes.value, 0);
  eq(s.couchdb.open_databases.value, open0 + 1);
  eq((await req('DELETE', cfg)).status, 200);
  eq((await val('/couchdb/httpd_request_methods/DELETE')), 1);
});

test('DIVAN_STATS=off: nothing counted, and the endpoints say so instead of showing zeros', async () => {
  const other = await startDivan({ env: { DIVAN_STATS: 'off' } });
  try {
    eq((await req('GET', other.url + '/')).status, 200);
    isErr(await req('GET', `${other.url}/_node/_local/_stats`), 404, 'not_found', 'Statistics are off: this divan runs with DIVAN_STATS=off.');
    isErr(await req('GET', `${other.url}/_node/_local/_prometheus`), 404, 'not_found');
    eq((await req('GET', `${other.url}/_node/_local/_system`)).status, 200);
    eq((await req('GET', `${other.url}/_up`)).status, 200);
  } finally {
    await other.stop();
  }
});

if (FDB) {
  test('fdb: commit_unknown_result injected — counted, and the writes found committed by their ids', async () => {
    const other = await startDivan({ env: { FDBSIM_FAULTS: 'commit_unknown_after=0.3', FDBSIM_SEED: '7' } });
    try {
      const V = other.url;
      eq((await req('PUT', V + '/cu')).status, 201);
      for (let i = 0; i < 30; i++) {
        const r = await req('PUT', `${V}/cu/d${i}`, { i });
        eq(r.status, 201, r.text);
      }
      // A background writer's (the _db_updates queue's) unknown result is
      // counted at once and its retry only after its backoff: read until
      // every one counted has been retried (at most 5 s).
      let s;
      for (const end = Date.now() + 5000; ;) {
        s = (await req('GET', `${V}/_node/_local/_stats/divan`)).json;
        if (s.kv.retries.value >= s.kv.commit_unknown_result.value || Date.now() > end) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      ok(s.kv.commit_unknown_result.value >= 3, JSON.stringify(s.kv));
      ok(s.kv.retries.value >= s.kv.commit_unknown_result.value, JSON.stringify(s.kv));
      ok(s.store.commit_unknown_recovered.value >= 3, JSON.stringify(s.store));
      const d = (await req('GET', `${V}/cu`)).json;
      eq(d.doc_count, 30); // each write once, whatever its first commit's answer said
    } finally {
      await other.stop();
    }
  });
}

test('stop', async () => { await srv.stop(); });

run();
