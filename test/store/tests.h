/* The store layer's tests: X(name, timeout_seconds), one per line.
 *
 * The store_* tests run twice: on the embedded engine, and as fdb_store_*
 * on the fdb backend over the libfdb_c double (test_on_fdb.c). Their list
 * takes a row macro R: R(X, name, timeout). */
#define STORE_ROW(X, name, timeout) X(name, timeout)
#define STORE_ROW_FDB(X, name, timeout) X(fdb_##name, timeout)

#define STORE_TESTS(X) \
  STORE_BODY_TESTS(X) STORE_KV_TESTS(X, STORE_ROW) STORE_KV_TESTS(X, STORE_ROW_FDB) STORE_FDB_TESTS(X)

/* Only on the fdb backend (test_fdb.c): several processes, a failing cluster. */
#define STORE_FDB_TESTS(X) \
  X(fdb_store_coherence, 60) \
  X(fdb_store_hooks_coherence, 30) \
  X(fdb_store_fault_run, 300)

#define STORE_BODY_TESTS(X) \
  X(body_vectors, 5) \
  X(body_long_leaves, 10) \
  X(body_bigint_edges, 10) \
  X(body_roundtrip_prop, 120) \
  X(body_deep, 20) \
  X(body_limits, 10) \
  X(body_hostile_implode, 60) \
  X(body_alloc_fail, 60) \
  X(body_digest_cases, 10) \
  X(body_json_size, 10) \
  X(body_speed, 30) \
  X(body_fuzz_smoke, 120) \
  X(store_docid_rules, 5)

#define STORE_KV_TESTS(X, R) \
  R(X, store_db_names, 5) \
  R(X, store_db_lifecycle, 20) \
  R(X, store_two_caches, 20) \
  R(X, store_edit_basics, 20) \
  R(X, store_replicated_merge, 20) \
  R(X, store_read_profile, 20) \
  R(X, store_creates_one_read, 20) \
  R(X, store_creates_race, 60) \
  R(X, store_hooks_validate, 20) \
  R(X, store_hooks_lazy_old, 20) \
  R(X, store_hooks_conflict_order, 20) \
  R(X, store_hooks_index_update, 20) \
  R(X, store_hooks_reload, 20) \
  R(X, store_changes_alldocs_local, 30) \
  R(X, store_db_updates_feed, 20) \
  R(X, store_commit_unknown, 120) \
  R(X, store_inspect_keyspace, 20) \
  R(X, store_long_reads, 60) \
  R(X, store_background_consumer, 20) \
  R(X, store_txid_cleanup, 20) \
  R(X, store_model_stem, 300) \
  R(X, store_model_deep, 300) \
  R(X, store_model_crowd, 300) \
  R(X, store_roundtrip, 300) \
  R(X, store_roundtrip_cases, 60) \
  R(X, store_doc_too_large, 30) \
  R(X, store_doc_txn_budget, 60) \
  R(X, store_doc_path_too_long, 30) \
  R(X, store_att_inline_roundtrip, 30) \
  R(X, store_att_stubs_and_collection, 30) \
  R(X, store_att_conflicts_and_purge, 30) \
  R(X, store_att_uploads, 60) \
  R(X, store_att_spill, 60) \
  R(X, store_att_from_json, 10) \
  R(X, store_att_meta_hostile, 30) \
  R(X, store_purge_leaf, 10) \
  R(X, store_purge_full, 10) \
  R(X, store_purge_winner, 10) \
  R(X, store_purge_deleted_leaf, 10) \
  R(X, store_purge_recreate, 10) \
  R(X, store_purge_infos_limit, 20) \
  R(X, store_purge_random, 30) \
  R(X, store_purge_no_db, 10) \
  R(X, store_purge_commit_unknown, 20) \
  R(X, store_doc_rank_model, 120) \
  R(X, store_doc_rank_empty, 10) \
  R(X, store_all_docs_bodies, 60) \
  R(X, store_async_same_results, 120) \
  R(X, store_async_done_once, 30) \
  R(X, store_async_many, 120) \
  R(X, store_async_retry, 120) \
  R(X, store_async_local, 30)
