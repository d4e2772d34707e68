/* test_http.c — runs each node black-box suite against the divan binary
 * of this build ($DIVAN_BIN, which `make test` sets). A suite prints one
 * line per failed check and "N passed, N failed"; its exit status decides.
 * The suites live in test/node/http/ (endpoint by endpoint) and
 * test/node/clients/ (real CouchDB clients from npm: PouchDB, nano). */
#include <stdio.h>
#include <stdlib.h>

#include "test.h"

static void suite(const char *file) {
  const char *bin = getenv("DIVAN_BIN");
  ASSERT(bin != NULL); /* make test sets it */
  int rc = test_sh("TEST_TMPDIR='%s' DIVAN_BIN='%s' node %s 2>&1", test_tmpdir(), bin, file);
  ASSERT_EQ(rc, 0);
}

/* The same suite with every server on `divan serve --fdb` over the libfdb_c
 * double ($DV_FDBSIM, which make test sets; test/node/lib/divan.js reads
 * DIVAN_FDB). */
static void suite_fdb(const char *file) {
  const char *bin = getenv("DIVAN_BIN");
  const char *lib = getenv("DV_FDBSIM");
  ASSERT(bin != NULL && lib != NULL); /* make test sets them */
  int rc = test_sh("TEST_TMPDIR='%s' DIVAN_BIN='%s' DIVAN_FDB='%s' node %s 2>&1", test_tmpdir(), bin, lib, file);
  ASSERT_EQ(rc, 0);
}

TEST(http_server) { suite("test/node/http/server.test.js"); }
TEST(http_limits) { suite("test/node/http/limits.test.js"); }
TEST(http_doc) { suite("test/node/http/doc.test.js"); }
TEST(http_att) { suite("test/node/http/att.test.js"); }
TEST(http_docatt) { suite("test/node/http/docatt.test.js"); }
TEST(http_bulk) { suite("test/node/http/bulk.test.js"); }
TEST(http_changes) { suite("test/node/http/changes.test.js"); }
TEST(http_purge) { suite("test/node/http/purge.test.js"); }
TEST(http_viewcrash) { suite("test/node/http/viewcrash.test.js"); }
TEST(http_auth) { suite("test/node/http/auth.test.js"); }
TEST(http_conformance) { suite("test/node/http/conformance.test.js"); }
TEST(http_hostile) { suite("test/node/http/hostile.test.js"); }
TEST(http_move) { suite("test/node/http/move.test.js"); }
TEST(http_config) { suite("test/node/http/config.test.js"); }
TEST(http_slowloris) { suite("test/node/http/slowloris.test.js"); }
TEST(http_idlefeeds) { suite("test/node/http/idlefeeds.test.js"); }
TEST(http_memory) { suite("test/node/http/memory.test.js"); }
TEST(http_diskfull) { suite("test/node/http/diskfull.test.js"); }
TEST(http_fsyncfail) { suite("test/node/http/fsyncfail.test.js"); }
TEST(http_fdlimit) { suite("test/node/http/fdlimit.test.js"); }
TEST(http_slowclients) { suite("test/node/http/slowclients.test.js"); }
TEST(http_mango) { suite("test/node/http/mango.test.js"); }
TEST(http_render) { suite("test/node/http/render.test.js"); }
TEST(http_jslimits) { suite("test/node/http/jslimits.test.js"); }
TEST(http_filters) { suite("test/node/http/filters.test.js"); }
TEST(http_validate) { suite("test/node/http/validate.test.js"); }
TEST(http_views) { suite("test/node/http/views.test.js"); }
TEST(http_logs) { suite("test/node/http/logs.test.js"); }
TEST(http_utils) { suite("test/node/http/utils.test.js"); }
/* Fauxton in Debian's chromium; its screenshots go to $DV_BUILD/fauxton-shots
 * (one folder per build, so the sanitizer run keeps its own). */
TEST(http_fauxton) {
  const char *bin = getenv("DIVAN_BIN"), *build = getenv("DV_BUILD");
  ASSERT(bin != NULL); /* make test sets it */
  int rc = test_sh("TEST_TMPDIR='%s' DIVAN_BIN='%s' FAUXTON_SHOTS='%s/fauxton-shots' node test/node/http/fauxton.test.js 2>&1",
                   test_tmpdir(), bin, build ? build : "build");
  ASSERT_EQ(rc, 0);
}
TEST(http_stats) { suite("test/node/http/stats.test.js"); }
TEST(http_check) { suite("test/node/http/check.test.js"); }
/* make soak's short version: 120 s of mixed load, 10 kills -9, the ledger's
 * checks and divan check (test/node/soak/soak.js prints its seed and counts). */
TEST(soak_short) {
  const char *bin = getenv("DIVAN_BIN"), *build = getenv("DV_BUILD");
  ASSERT(bin != NULL); /* make test sets it */
  int rc = test_sh("TEST_TMPDIR='%s' DIVAN_BIN='%s' DV_BUILD='%s' SOAK_SECONDS=120 SOAK_KILLS=10 node test/node/soak/soak.js 2>&1",
                   test_tmpdir(), bin, build ? build : "");
  ASSERT_EQ(rc, 0);
}
TEST(fdb_http_stats) { suite_fdb("test/node/http/stats.test.js"); }
TEST(fdb_http_validate) { suite_fdb("test/node/http/validate.test.js"); }
TEST(fdb_http_views) { suite_fdb("test/node/http/views.test.js"); }
TEST(fdb_http_config) { suite_fdb("test/node/http/config.test.js"); }
TEST(fdb_http_server) { suite_fdb("test/node/http/server.test.js"); }
TEST(fdb_http_limits) { suite_fdb("test/node/http/limits.test.js"); }
TEST(fdb_http_doc) { suite_fdb("test/node/http/doc.test.js"); }
TEST(fdb_http_att) { suite_fdb("test/node/http/att.test.js"); }
TEST(fdb_http_docatt) { suite_fdb("test/node/http/docatt.test.js"); }
TEST(fdb_http_bulk) { suite_fdb("test/node/http/bulk.test.js"); }
TEST(fdb_http_changes) { suite_fdb("test/node/http/changes.test.js"); }
TEST(fdb_http_purge) { suite_fdb("test/node/http/purge.test.js"); }
TEST(fdb_http_viewcrash) { suite_fdb("test/node/http/viewcrash.test.js"); }
TEST(fdb_http_auth) { suite_fdb("test/node/http/auth.test.js"); }
TEST(fdb_http_conformance) { suite_fdb("test/node/http/conformance.test.js"); }
TEST(fdb_http_render) { suite_fdb("test/node/http/render.test.js"); }
TEST(fdb_http_filters) { suite_fdb("test/node/http/filters.test.js"); }
TEST(client_nano) { suite("test/node/clients/nano.test.js"); }
TEST(client_pouchdb) { suite("test/node/clients/pouchdb.test.js"); }
TEST(client_pouchdb_auth) { suite("test/node/clients/pouchdb_auth.test.js"); }
TEST(client_pouchdb_att) { suite("test/node/clients/pouchdb_att.test.js"); }
TEST(client_pouchdb_repl) { suite("test/node/clients/pouchdb_repl.test.js"); }
TEST(client_pouchdb_find) { suite("test/node/clients/pouchdb_find.test.js"); }
TEST(client_pouchdb_filter) { suite("test/node/clients/pouchdb_filter.test.js"); }
TEST(client_pouchdb_vdu) { suite("test/node/clients/pouchdb_vdu.test.js"); }
TEST(client_pouchdb_query) { suite("test/node/clients/pouchdb_query.test.js"); }
TEST(repl_replicate) { suite("test/node/repl/replicate.test.js"); }
TEST(repl_replicator_db) { suite("test/node/repl/replicator_db.test.js"); }
TEST(repl_faults) { suite("test/node/repl/faults.test.js"); }
TEST(repl_bigatt) { suite("test/node/repl/bigatt.test.js"); }
TEST(repl_lease) { suite("test/node/repl/lease.test.js"); }

/* The router's percent-decoding under libFuzzer for 20 s (make fuzz runs it
 * longer). */
TEST(http_url_fuzz_smoke) { test_fuzz_smoke("fuzz_url"); }
