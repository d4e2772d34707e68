/* The store layer's tests: X(name, timeout_seconds), one per line. */
#define STORE_TESTS(X) \
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
  X(store_db_names, 5) \
  X(store_db_lifecycle, 20) \
  X(store_two_caches, 20) \
  X(store_edit_basics, 20) \
  X(store_replicated_merge, 20) \
  X(store_read_profile, 20) \
  X(store_changes_alldocs_local, 30) \
  X(store_db_updates_feed, 20) \
  X(store_commit_unknown, 120) \
  X(store_inspect_keyspace, 20) \
  X(store_long_reads, 60) \
  X(store_background_consumer, 20) \
  X(store_txid_cleanup, 20)
