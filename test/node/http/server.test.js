// server.test.js — black-box checks of the server-level and database-level
// endpoints against a real `divan serve`: /, /_up, /_all_dbs, /_dbs_info,
// /_uuids, /_active_tasks, /_membership, /_node, PUT/GET/HEAD/DELETE /{db},
// _revs_limit, _security, _compact, _view_cleanup, _ensure_full_commit,
// routing errors. Statuses and bodies as CouchDB 3.x answers them.
'use strict';
const { test, run, req, eq, ok, isErr } = require('../lib/t');
const fs = require('fs');
const { startDivan } = require('../lib/divan');

let srv, U;
const J = { 'Content-Type': 'application/json' };

test('start', async () => { srv = await startDivan(); U = srv.url; });

test('GET / welcomes like CouchDB, with a stable uuid', async () => {
  const r = await req('GET', U + '/');
  eq(r.status, 200);
  eq(r.json.couchdb, 'Welcome');
  ok(/^[0-9a-f]{32}$/.test(r.json.uuid));
  eq(r.json.vendor.name, 'divan');
  ok(typeof r.json.version === 'string');
  ok(Array.isArray(r.json.features));
  eq(r.headers['content-type'], 'application/json');
  eq(r.headers['cache-control'], 'must-revalidate');
  ok(/divan/.test(r.headers.server));
  const again = await req('GET', U + '/');
  eq(again.json.uuid, r.json.uuid);
});

test('HEAD / has no body', async () => {
  const r = await req('HEAD', U + '/');
  eq(r.status, 200);
  eq(r.text, '');
});

test('POST / is 405 with Allow', async () => {
  const r = await req('POST', U + '/', {});
  isErr(r, 405, 'method_not_allowed');
  ok(r.headers.allow.includes('GET'));
});

test('/_up', async () => {
  const r = await req('GET', U + '/_up');
  eq(r.status, 200);
  eq(r.json.status, 'ok');
});

test('PUT /db creates: 201 ok + Location', async () => {
  const r = await req('PUT', U + '/alpha');
  eq(r.status, 201);
  eq(r.json, { ok: true });
  ok(r.headers.location.endsWith('/alpha'));
});

test('PUT /db twice: 412 file_exists', async () => {
  const r = await req('PUT', U + '/alpha');
  isErr(r, 412, 'file_exists', 'The database could not be created, the file already exists.');
});

test('PUT bad names: 400 illegal_database_name', async () => {
  for (const n of ['Alpha', '1abc', '_foo', 'a%20b', 'a.b', 'x'.repeat(239)]) {
    const r = await req('PUT', U + '/' + n);
    isErr(r, 400, 'illegal_database_name');
    ok(r.json.reason.startsWith('Name: '), r.text);
  }
});

test('names with allowed specials and an encoded slash', async () => {
  for (const n of ['a_$()+-', 'b%2Fc', 'x'.repeat(238)]) {
    const r = await req('PUT', U + '/' + n);
    eq(r.status, 201, n + ' ' + r.text);
  }
  const r = await req('GET', U + '/b%2Fc');
  eq(r.status, 200);
  eq(r.json.db_name, 'b/c');
});

test('system databases: _users and _replicator exist from the first start', async () => {
  eq((await req('PUT', U + '/_users')).status, 412);
  eq((await req('PUT', U + '/_replicator')).status, 412);
  eq((await req('GET', U + '/_users')).json.db_name, '_users');
  eq((await req('GET', U + '/_replicator')).json.db_name, '_replicator');
});

test('GET /db: CouchDB db info shape', async () => {
  const r = await req('GET', U + '/alpha');
  eq(r.status, 200);
  const i = r.json;
  eq(i.db_name, 'alpha');
  eq(i.doc_count, 0);
  eq(i.doc_del_count, 0);
  eq(typeof i.update_seq, 'string');
  eq(typeof i.purge_seq, 'string');
  for (const k of ['file', 'external', 'active']) eq(typeof i.sizes[k], 'number');
  eq(i.compact_running, false);
  eq(typeof i.instance_start_time, 'string');
  eq(typeof i.disk_format_version, 'number');
});

test('HEAD /db: 200 without body; missing: 404', async () => {
  const r = await req('HEAD', U + '/alpha');
  eq(r.status, 200);
  eq(r.text, '');
  eq((await req('HEAD', U + '/nope')).status, 404);
});

test('GET missing db: 404 Database does not exist.', async () => {
  isErr(await req('GET', U + '/nope'), 404, 'not_found', 'Database does not exist.');
  isErr(await req('GET', U + '/nope/_all_docs'), 404, 'not_found', 'Database does not exist.');
});

test('update_seq moves after a write', async () => {
  const before = (await req('GET', U + '/alpha')).json.update_seq;
  const p = await req('POST', U + '/alpha', { a: 1 });
  eq(p.status, 201, p.text);
  const after = await req('GET', U + '/alpha');
  ok(after.json.update_seq !== before);
  eq(after.json.doc_count, 1);
});

test('_all_dbs lists in order with params', async () => {
  const all = (await req('GET', U + '/_all_dbs')).json;
  ok(Array.isArray(all));
  eq([...all].sort(), all);
  ok(all.includes('alpha') && all.includes('_users') && all.includes('b/c'));
  const lim = (await req('GET', U + '/_all_dbs?limit=2')).json;
  eq(lim, all.slice(0, 2));
  const skip = (await req('GET', U + '/_all_dbs?skip=1&limit=1')).json;
  eq(skip, all.slice(1, 2));
  const desc = (await req('GET', U + '/_all_dbs?descending=true')).json;
  eq(desc, [...all].reverse());
  const range = (await req('GET', U + '/_all_dbs?startkey="a"&endkey="b"')).json;
  eq(range, all.filter((n) => n >= 'a' && n <= 'b'));
  const excl = (await req('GET', U + '/_all_dbs?start_key="alpha"&end_key="b/c"&inclusive_end=false')).json;
  ok(excl.includes('alpha') && !excl.includes('b/c'));
});

test('_all_dbs bad params: 400 query_parse_error', async () => {
  isErr(await req('GET', U + '/_all_dbs?limit=abc'), 400, 'query_parse_error');
  isErr(await req('GET', U + '/_all_dbs?limit=-1'), 400, 'query_parse_error');
  isErr(await req('GET', U + '/_all_dbs?descending=yes'), 400, 'query_parse_error');
  isErr(await req('GET', U + '/_all_dbs?skip=1.5'), 400, 'query_parse_error');
  eq((await req('GET', U + '/_all_dbs?unknown_param=1')).status, 200);
});

test('_dbs_info GET and POST keys', async () => {
  const g = await req('GET', U + '/_dbs_info?limit=1&startkey="alpha"');
  eq(g.status, 200);
  eq(g.json.length, 1);
  eq(g.json[0].key, 'alpha');
  eq(g.json[0].info.db_name, 'alpha');
  const p = await req('POST', U + '/_dbs_info', { keys: ['alpha', 'nope'] });
  eq(p.status, 200);
  eq(p.json[0].info.doc_count, 1);
  eq(p.json[1], { key: 'nope', error: 'not_found' });
});

test('_dbs_info POST errors', async () => {
  isErr(await req('POST', U + '/_dbs_info', {}), 400, 'bad_request');
  isErr(await req('POST', U + '/_dbs_info', { keys: 'alpha' }), 400, 'bad_request');
  isErr(await req('POST', U + '/_dbs_info', { keys: Array(101).fill('a') }), 400, 'bad_request');
  isErr(await req('POST', U + '/_dbs_info', '{"keys":', J), 400, 'bad_request');
  isErr(await req('POST', U + '/_dbs_info', '{"keys":[]}', { 'Content-Type': 'text/plain' }), 415, 'bad_content_type');
});

test('_uuids', async () => {
  const one = await req('GET', U + '/_uuids');
  eq(one.json.uuids.length, 1);
  const many = await req('GET', U + '/_uuids?count=10');
  eq(many.json.uuids.length, 10);
  eq(new Set(many.json.uuids).size, 10);
  ok(many.json.uuids.every((u) => /^[0-9a-f]{32}$/.test(u)));
  // CouchDB's default "sequential" algorithm: one random 26-digit prefix,
  // an increasing 6-digit suffix, so ids minted in a row sort in a row; a
  // run of ids minted at once never straddles two prefixes
  for (let round = 0; round < 20; round++) {
    const big = (await req('GET', U + '/_uuids?count=1000')).json.uuids;
    eq(new Set(big).size, 1000);
    for (let i = 1; i < big.length; i++) {
      eq(big[i].slice(0, 26), big[0].slice(0, 26));
      ok(big[i] > big[i - 1], `${big[i]} after ${big[i - 1]}`);
      const step = parseInt(big[i].slice(26), 16) - parseInt(big[i - 1].slice(26), 16);
      ok(step >= 1 && step <= 0xffe, `step ${step}`);
    }
  }
  const cfg = (await req('GET', U + '/_node/_local/_config/uuids/algorithm')).json;
  eq(cfg, 'sequential');
  ok(many.headers['cache-control'].includes('no-cache'));
  isErr(await req('GET', U + '/_uuids?count=1001'), 400, 'bad_request');
  isErr(await req('GET', U + '/_uuids?count=x'), 400, 'query_parse_error');
});

test('_active_tasks, _membership, _node', async () => {
  eq((await req('GET', U + '/_active_tasks')).json, []);
  const m = (await req('GET', U + '/_membership')).json;
  ok(m.all_nodes.length === 1 && m.cluster_nodes.length === 1);
  const n = (await req('GET', U + '/_node/_local')).json;
  eq(n.name, m.all_nodes[0]);
  const c = await req('GET', U + '/_node/_local/_config');
  eq(c.status, 200);
  eq(c.json.chttpd.port, String(srv.port));
  const s = await req('GET', U + '/_node/_local/_config/couchdb');
  eq(s.json.max_document_size, '1000000');
  const k = await req('GET', U + '/_node/' + encodeURIComponent(n.name) + '/_config/couchdb/max_document_size');
  eq(k.json, '1000000');
  isErr(await req('GET', U + '/_node/_local/_config/couchdb/nope'), 404, 'not_found');
  isErr(await req('GET', U + '/_node/other@host'), 404, 'not_found');
});

test('unknown server endpoint: 404 not_found (a database that cannot exist); PUT: illegal_database_name', async () => {
  isErr(await req('GET', U + '/_nope'), 404, 'not_found', 'Database does not exist.');
  isErr(await req('PUT', U + '/_nope'), 400, 'illegal_database_name');
});

test('_revs_limit GET/PUT and errors', async () => {
  eq((await req('GET', U + '/alpha/_revs_limit')).json, 1000);
  eq((await req('PUT', U + '/alpha/_revs_limit', '5', J)).json, { ok: true });
  eq((await req('GET', U + '/alpha/_revs_limit')).json, 5);
  isErr(await req('PUT', U + '/alpha/_revs_limit', '"x"', J), 400, 'bad_request');
  isErr(await req('PUT', U + '/alpha/_revs_limit', '0', J), 400, 'bad_request');
  isErr(await req('PUT', U + '/alpha/_revs_limit', '{', J), 400, 'bad_request');
  isErr(await req('POST', U + '/alpha/_revs_limit', '5', J), 405, 'method_not_allowed');
  isErr(await req('GET', U + '/nope/_revs_limit'), 404, 'not_found');
});

test('_security GET/PUT and errors', async () => {
  // never set: CouchDB 3's default_security = admin_only
  eq((await req('GET', U + '/alpha/_security')).json, { members: { roles: ['_admin'] }, admins: { roles: ['_admin'] } });
  const sec = { admins: { names: ['a'], roles: [] }, members: { names: [], roles: ['r'] } };
  eq((await req('PUT', U + '/alpha/_security', sec)).json, { ok: true });
  eq((await req('GET', U + '/alpha/_security')).json, sec);
  isErr(await req('PUT', U + '/alpha/_security', '[]', J), 400, 'bad_request');
  isErr(await req('PUT', U + '/alpha/_security', { members: { names: 'x' } }), 400, 'bad_request');
  isErr(await req('PUT', U + '/alpha/_security', { admins: { roles: [1] } }), 400, 'bad_request');
});

test('_compact, _view_cleanup, _ensure_full_commit', async () => {
  eq((await req('POST', U + '/alpha/_compact', '', J)).status, 202);
  eq((await req('POST', U + '/alpha/_compact', '', J)).json, { ok: true });
  isErr(await req('POST', U + '/alpha/_compact', ''), 415, 'bad_content_type');
  isErr(await req('GET', U + '/alpha/_compact'), 405, 'method_not_allowed');
  isErr(await req('POST', U + '/alpha/_compact/nodesign', '', J), 404, 'not_found');
  eq((await req('POST', U + '/alpha/_view_cleanup', '', J)).status, 202);
  const f = await req('POST', U + '/alpha/_ensure_full_commit', '', J);
  eq(f.status, 201);
  eq(f.json.ok, true);
  eq(typeof f.json.instance_start_time, 'string');
});

test('DELETE /db with ?rev is refused; DELETE works; then 404', async () => {
  isErr(await req('DELETE', U + '/alpha?rev=1-abc'), 400, 'bad_request');
  eq((await req('DELETE', U + '/alpha')).json, { ok: true });
  isErr(await req('GET', U + '/alpha'), 404, 'not_found', 'Database does not exist.');
  isErr(await req('DELETE', U + '/alpha'), 404, 'not_found');
  isErr(await req('DELETE', U + '/Bad'), 400, 'illegal_database_name');
  ok(!(await req('GET', U + '/_all_dbs')).json.includes('alpha'));
});

test('a re-created database starts empty', async () => {
  eq((await req('PUT', U + '/alpha')).status, 201);
  eq((await req('GET', U + '/alpha')).json.doc_count, 0);
});

test('unsupported methods on /db: 405', async () => {
  isErr(await req('PATCH', U + '/alpha'), 405, 'method_not_allowed');
});

test('malformed percent-encoding: 400', async () => {
  isErr(await req('GET', U + '/al%zzpha'), 400, 'bad_request');
});

test('a fatal signal leaves its stack in the log (a sanitizer build: the sanitizer\'s report)', async () => {
  const other = await startDivan();
  try {
    const how = await other.signal('SIGSEGV');
    if (/AddressSanitizer: SEGV/.test(other.log())) ok(how !== 0, String(how)); // ASan reports, then exits 1
    else {
      eq(how, 'SIGSEGV');
      ok(/divan: fatal signal 11; stack:\n\S*divan\(\+0x[0-9a-f]+\)/.test(other.log()), other.log().slice(-2000));
    }
  } finally {
    fs.rmSync(other.dataDir, { recursive: true, force: true });
  }
});

test('divan\'s threads are named, as top -H, ps -L, perf and gdb show them', async () => {
  await req('PUT', U + '/named', {});
  await req('PUT', U + '/named/d', { a: 1 }, J);
  const names = fs.readdirSync(`/proc/${srv.pid}/task`).map((t) => {
    try { return fs.readFileSync(`/proc/${srv.pid}/task/${t}/comm`, 'utf8').trim(); } catch { return null; } // ended meanwhile
  }).filter((x) => x !== null);
  ok(names.includes('dv-commit') || names.includes('dv-fdb-net'), names.join(' ')); // the committer, or FDB's network thread
  for (const n of ['dv-log', 'dv-store-bg', 'dv-cfg-watch', 'dv-http-reaper', 'dv-repl-listen'])
    ok(names.includes(n), `${n} not among ${names.join(' ')}`);
  ok(names.every((n) => n.length <= 15));
  await req('DELETE', U + '/named');
});

test('stop', async () => { await srv.stop(); });

run();
