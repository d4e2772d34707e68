/* tests.h — the HTTP layer's tests: black-box suites in node that drive a
 * real `divan serve` (test/node/http/, test/node/clients/), one
 * runner test per suite, and once more on `divan serve --fdb` over the
 * libfdb_c double (fdb_http_*) — they exercise the engine and api/ together;
 * the unit tests of hparse.c (test_hparse.c) and the request framing of
 * hwire.c (test_hwire.c). */
#define HTTP_TESTS(X)          \
  X(http_url_fuzz_smoke, 60)   \
  X(hparse_fuzz_smoke, 60)     \
  X(hparse_range, 5)           \
  X(hparse_range_resolve, 5)   \
  X(hparse_accepts, 5)         \
  X(hparse_accepts_any, 5)     \
  X(hparse_media_is, 5)        \
  X(hparse_boundary_limits, 5) \
  X(hwire_fuzz_smoke, 60)      \
  X(hwire_table, 5)            \
  X(hwire_limits, 5)           \
  X(http_server, 120)          \
  X(http_limits, 120)          \
  X(http_doc, 180)             \
  X(http_att, 240)             \
  X(http_docatt, 180)          \
  X(http_bulk, 180)            \
  X(http_changes, 180)         \
  X(http_purge, 120)           \
  X(http_viewcrash, 240)       \
  X(http_conformance, 120)     \
  X(http_hostile, 120)         \
  X(http_slowloris, 120)       \
  X(http_idlefeeds, 300)       \
  X(http_memory, 180)          \
  X(http_diskfull, 240)        \
  X(http_fsyncfail, 150)       \
  X(http_fdlimit, 150)         \
  X(http_auth, 120)            \
  X(http_mango, 150)           \
  X(http_render, 150)          \
  X(http_jslimits, 120)        \
  X(http_filters, 180)         \
  X(http_validate, 150)        \
  X(http_views, 180)           \
  X(http_logs, 120)            \
  X(http_utils, 120)           \
  X(http_fauxton, 180)         \
  X(http_stats, 120)           \
  X(http_check, 60)            \
  X(soak_short, 900)           \
  X(client_nano, 180)          \
  X(client_pouchdb, 300)       \
  X(client_pouchdb_auth, 180)  \
  X(client_pouchdb_att, 180)   \
  X(client_pouchdb_repl, 200)  \
  X(client_pouchdb_find, 120)  \
  X(client_pouchdb_filter, 120) \
  X(client_pouchdb_vdu, 120)   \
  X(client_pouchdb_query, 120) \
  X(repl_replicate, 240)       \
  X(repl_replicator_db, 200)   \
  X(repl_faults, 240)          \
  X(repl_bigatt, 180)          \
  X(repl_lease, 120)           \
  X(fdb_http_server, 120)      \
  X(fdb_http_limits, 120)      \
  X(fdb_http_doc, 180)         \
  X(fdb_http_att, 240)         \
  X(fdb_http_docatt, 180)      \
  X(fdb_http_bulk, 180)        \
  X(fdb_http_changes, 180)     \
  X(fdb_http_purge, 120)       \
  X(fdb_http_viewcrash, 240)   \
  X(fdb_http_conformance, 120) \
  X(fdb_http_auth, 120)        \
  X(fdb_http_render, 150)      \
  X(fdb_http_filters, 180) \
  X(fdb_http_validate, 200)    \
  X(fdb_http_views, 240)       \
  X(fdb_http_stats, 120)
