// jslimits.test.js — hostile design-document functions against a real
// `divan serve` with a short [couchdb] os_process_timeout and a small
// [query_server_config] js_memory_limit: a show that loops forever and one
// that allocates without bound are each stopped with CouchDB's
// os_process_error while concurrent requests (plain reads and other
// functions) keep answering, and the server lives on; so is a
// validate_doc_update that loops, while other writes go on; a design document
// whose language has no query server answers unknown_query_language; an
// external query server from [query_servers] runs a validator;
// [query_server_config] reduce_limit = false and = log let a JavaScript
// reduce that does not shrink answer (the default is its error).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { test, run, req, eq, ok } = require('../lib/t');
const { startDivan } = require('../lib/divan');

let srv, U, D;
const fn = (f) => f.toString();

// A query server written here: CouchDB's line protocol over stdio.
const qsFile = path.join(os.tmpdir(), `dv_jslimits_qs_${process.pid}.js`);
fs.writeFileSync(qsFile, `
const rl = require('readline').createInterface({ input: process.stdin });
const ddocs = {};
const out = (x) => process.stdout.write(JSON.stringify(x) + '\\n');
rl.on('line', (line) => {
  const c = JSON.parse(line);
  if (c[0] === 'ddoc' && c[1] === 'new') { ddocs[c[2]] = c[3]; return out(true); }
  if (c[0] === 'ddoc' && c[2][0] === 'validate_doc_update') {
    // this server's "language": a JSON list of forbidden words
    const words = JSON.parse(ddocs[c[1]].validate_doc_update);
    const bad = words.find((w) => JSON.stringify(c[3][0]).includes(w));
    return out(bad ? { forbidden: 'word ' + bad } : 1);
  }
  out(['error', 'unknown_command', String(c[0])]);
});
`);

test('start', async () => {
  srv = await startDivan({
    config: `[couchdb]\nos_process_timeout = 3000\n[query_server_config]\njs_memory_limit = 33554432\n` +
            `[divan]\njs_contexts = 3\n[query_servers]\nwords = node ${qsFile}\n`,
  });
  U = srv.url;
  D = U + '/jsl';
  eq((await req('PUT', D)).status, 201);
  const r = await req('PUT', D + '/_design/h', {
    shows: {
      spin: fn(function () { for (;;) {} }),
      hog: fn(function () { var a = []; for (;;) a.push({ x: [1, 2, 3], s: 'x' + a.length }); }),
      fine: fn(function (doc) { return 'fine ' + (doc ? doc._id : ''); }),
    },
  });
  eq(r.status, 201, r.text);
  eq((await req('PUT', D + '/d1', { a: 1 })).status, 201);
});

async function hostileWithNeighbours(name) {
  // every context started first: a neighbour must not wait for a start
  await Promise.all([1, 2, 3].map(() => req('GET', D + '/_design/h/_show/fine/d1')));
  const t0 = Date.now();
  let hostileDone = false;
  const hostile = req('GET', D + '/_design/h/_show/' + name).then((r) => { hostileDone = true; return r; });
  // while it runs, plain reads and another function answer: all of them
  // before the hostile call ends
  for (let i = 0; i < 10; i++) {
    const [a, b] = await Promise.all([req('GET', D + '/d1'), req('GET', D + '/_design/h/_show/fine/d1')]);
    eq(a.status, 200);
    eq(b.status, 200, b.text);
    eq(b.text, 'fine d1');
  }
  const neighboursFirst = !hostileDone;
  const r = await hostile;
  return { r, took: Date.now() - t0, neighboursFirst };
}

test('a show that loops forever is stopped at os_process_timeout; neighbours are not held up', async () => {
  const { r, took, neighboursFirst } = await hostileWithNeighbours('spin');
  eq(r.status, 500, r.text);
  eq(r.json.error, 'os_process_error');
  eq(r.json.reason, 'OS process timed out.');
  ok(took >= 2900, `stopped after ${took} ms, before the 3000 ms timeout`);
  ok(neighboursFirst, 'every neighbour answered while the loop ran');
});

test('a show that allocates without bound is stopped at js_memory_limit; neighbours are not held up', async () => {
  const { r } = await hostileWithNeighbours('hog');
  eq(r.status, 500, r.text);
  eq(r.json.error, 'os_process_error');
  ok(/out of memory/.test(r.json.reason), r.json.reason);
});

test('several hostile calls at once, then everything works again', async () => {
  const rs = await Promise.all([1, 2, 3, 4].map((i) => req('GET', D + '/_design/h/_show/' + (i % 2 ? 'spin' : 'hog'))));
  for (const r of rs) eq(r.status, 500, r.text);
  const r = await req('GET', D + '/_design/h/_show/fine/d1');
  eq(r.status, 200);
  eq(r.text, 'fine d1');
  eq((await req('GET', U + '/_up')).status, 200);
});

test('a validator that loops forever: the write is stopped at os_process_timeout; neighbours are not held up', async () => {
  eq((await req('PUT', U + '/jsv')).status, 201);
  eq((await req('PUT', U + '/plain')).status, 201);
  const dd = await req('PUT', U + '/jsv/_design/v', {
    validate_doc_update: fn(function (doc) { if (doc.spin) for (;;) {} if (!doc.ok) throw ({ forbidden: 'not ok' }); }),
  });
  eq(dd.status, 201, dd.text);
  eq((await req('PUT', U + '/jsv/warm', { ok: 1 })).status, 201); // a context has the validator
  const t0 = Date.now();
  let hostileDone = false;
  const hostile = req('PUT', U + '/jsv/spinner', { spin: true }).then((r) => { hostileDone = true; return r; });
  // meanwhile: reads, writes to a database without validators, and
  // validated writes to the same database (the other contexts run them)
  for (let i = 0; i < 10; i++) {
    const [a, b, c, d] = await Promise.all([req('GET', D + '/d1'), req('PUT', U + '/plain/p' + i, { i }),
      req('PUT', U + '/jsv/ok' + i, { ok: 1 }), req('PUT', U + '/jsv/no' + i, { ok: 0 })]);
    eq(a.status, 200);
    eq(b.status, 201, b.text);
    eq(c.status, 201, c.text);
    eq(d.status, 403, d.text);
    eq(d.json.reason, 'not ok');
  }
  ok(!hostileDone, 'every neighbour answered while the validator looped');
  const r = await hostile;
  eq(r.status, 500, r.text);
  eq(r.json.error, 'os_process_error');
  eq(r.json.reason, 'OS process timed out.');
  ok(Date.now() - t0 >= 2900, `stopped after ${Date.now() - t0} ms, before the 3000 ms timeout`);
  eq((await req('GET', U + '/jsv/spinner')).status, 404); // nothing of it was stored
  // the database takes validated writes again
  eq((await req('PUT', U + '/jsv/after', { ok: 1 })).status, 201);
  eq((await req('PUT', U + '/jsv/after2', { ok: 0 })).status, 403);
});

test('a language without a query server answers unknown_query_language', async () => {
  eq((await req('PUT', D + '/_design/cobol', { language: 'cobol', shows: { s: 'DISPLAY X' } })).status, 201);
  const r = await req('GET', D + '/_design/cobol/_show/s');
  eq(r.status, 500, r.text);
  eq(r.json.error, 'unknown_query_language');
});

test('an external query server from [query_servers] runs a validator', async () => {
  const dd = await req('PUT', D + '/_design/words', { language: 'words', validate_doc_update: JSON.stringify(['spam', 'eggs']) });
  eq(dd.status, 201, dd.text);
  let r = await req('PUT', D + '/w1', { text: 'ham' });
  eq(r.status, 201, r.text);
  r = await req('PUT', D + '/w2', { text: 'spam and ham' });
  eq(r.status, 403, r.text);
  eq(r.json.reason, 'word spam');
  eq((await req('DELETE', D + '/_design/words?rev=' + dd.json.rev)).status, 200);
  r = await req('PUT', D + '/w2', { text: 'spam and ham' });
  eq(r.status, 201, r.text);
});

test('[query_server_config] reduce_limit: true (the default) refuses a reduce that does not shrink, false and log let it answer', async () => {
  const ddoc = {
    views: {
      grow: {
        map: fn(function (doc) { emit(doc._id, 1); }),
        reduce: fn(function (keys, values) { var a = []; for (var i = 0; i < 1000; i++) a.push('wazzap'); return a; }),
      },
    },
  };
  for (const limit of [null, 'true', 'false', 'log']) {
    const s = await startDivan(limit === null ? {} : { config: `[query_server_config]\nreduce_limit = ${limit}\n` });
    try {
      const d = s.url + '/rl';
      eq((await req('PUT', d)).status, 201);
      eq((await req('POST', d + '/_bulk_docs', { docs: [{ _id: 'a' }, { _id: 'b' }, { _id: 'c' }] })).status, 201);
      eq((await req('PUT', d + '/_design/r', ddoc)).status, 201);
      const r = await req('GET', d + '/_design/r/_view/grow');
      eq(r.status, 200, r.text);
      const row = r.json.rows[0];
      if (limit === null || limit === 'true') {
        eq(row.error, 'reduce_overflow_error', JSON.stringify(row).slice(0, 200));
      } else {
        ok(Array.isArray(row.value) && row.value.length === 1000, `reduce_limit = ${limit}: ` + JSON.stringify(row).slice(0, 200));
        if (limit === 'log')
          ok(await s.logSays(/Reduce output must shrink more rapidly/), 'logged: ' + s.log().slice(-2000));
      }
    } finally {
      await s.stop();
    }
  }
});

test('stop', async () => {
  fs.unlinkSync(qsFile);
  await srv.stop();
});

run();
