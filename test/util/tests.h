/* The util layer's tests: X(name, timeout_seconds). */
#define UTIL_TESTS(X) \
  X(err_table, 5) \
  X(buf_grow, 5) \
  X(buf_empty_append, 5) \
  X(alloc_fail, 5) \
  X(arena_basic, 5) \
  X(arena_big, 5) \
  X(arena_many, 10) \
  X(arena_reset, 5) \
  X(arena_realloc, 5) \
  X(arena_alloc_fail, 5) \
  X(md5_vectors, 5) \
  X(md5_long, 10) \
  X(config_parse_basic, 5) \
  X(config_parse_errors, 5) \
  X(config_get_typed, 5) \
  X(config_overrides, 5) \
  X(config_persist_roundtrip, 10) \
  X(config_persist_edges, 10) \
  X(config_missing_file, 5) \
  X(config_io_errors, 5) \
  X(config_refused, 5) \
  X(config_big_value, 10) \
  X(config_each_order, 5) \
  X(config_threads, 20) \
  X(config_alloc_fail, 60) \
  X(config_fuzz_smoke, 60)
