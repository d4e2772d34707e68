/* The kv layer's tests: X(name, timeout_seconds).
 *
 * KV_EACH_BACKEND lists a contract test (test/kv/kvt.h KV_CONTRACT) once
 * per backend; a new backend is one more X() line here and one more TEST
 * line in KV_CONTRACT. */
#define KV_EACH_BACKEND(X, name, timeout) \
  X(kv_##name##_rocks, timeout) X(kv_##name##_fault, timeout) X(kv_##name##_fdb, timeout)

#define KV_TESTS(X) \
  KV_EACH_BACKEND(X, serializable, 30) \
  KV_EACH_BACKEND(X, rmw_conflict, 20) \
  KV_EACH_BACKEND(X, write_skew, 20) \
  KV_EACH_BACKEND(X, phantom, 20) \
  KV_EACH_BACKEND(X, conflict_ranges, 20) \
  KV_EACH_BACKEND(X, snapshot_reads, 20) \
  KV_EACH_BACKEND(X, conflict_model, 30) \
  KV_EACH_BACKEND(X, limits_size, 20) \
  KV_EACH_BACKEND(X, limits_txn_bytes, 30) \
  KV_EACH_BACKEND(X, too_old, 20) \
  KV_EACH_BACKEND(X, errors_sticky, 20) \
  KV_EACH_BACKEND(X, full_keyspace, 20) \
  KV_EACH_BACKEND(X, metadata_version_snapshots, 20) \
  KV_EACH_BACKEND(X, vs_unreadable, 20) \
  KV_EACH_BACKEND(X, vs_unreadable_model, 20) \
  KV_EACH_BACKEND(X, commit_versions, 20) \
  KV_EACH_BACKEND(X, retry, 20) \
  KV_EACH_BACKEND(X, timeout, 20) \
  KV_EACH_BACKEND(X, ryw_model, 60) \
  KV_EACH_BACKEND(X, get_range, 20) \
  KV_EACH_BACKEND(X, bulk_hints, 60) \
  KV_EACH_BACKEND(X, iter_stream, 60) \
  KV_EACH_BACKEND(X, vstamp_format, 20) \
  KV_EACH_BACKEND(X, vstamp_order, 30) \
  KV_EACH_BACKEND(X, vstamp_batch, 20) \
  KV_EACH_BACKEND(X, watch, 30) \
  KV_EACH_BACKEND(X, watch_close, 20) \
  KV_EACH_BACKEND(X, durable_reopen, 30) \
  X(kv_fault_kinds, 20) \
  X(kv_fault_kv_run, 20) \
  X(kv_fault_probability, 30) \
  X(kv_fault_threads, 30) \
  X(kv_crash_rocks, 120) \
  X(kv_fdb_open_errors, 20) \
  X(kv_fdb_retry_limit, 20) \
  X(kv_fdb_fault_classes, 30) \
  X(kv_history_budget, 60) \
  X(kv_history_trim, 20) \
  X(kv_wset_model, 60)
