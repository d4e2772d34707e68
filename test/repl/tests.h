/* tests.h — the replicator's unit tests (test_spec.c: parsing a
 * replication, its id, the _replicator document rules) and the fuzz smoke
 * run of fuzz_repl. Its black-box suites (divan ↔ divan, PouchDB, faults)
 * are node suites listed in test/http/tests.h. */
#define REPL_TESTS(X)           \
  X(repl_spec_endpoints, 5)     \
  X(repl_spec_options, 5)       \
  X(repl_spec_limits, 5)        \
  X(repl_id_rules, 5)           \
  X(repl_id_vectors, 5)         \
  X(repl_doc_rules, 5)          \
  X(repl_spec_fuzz_smoke, 60)
