/* The tuple layer's tests: X(name, timeout_seconds). */
#define TUPLE_TESTS(X) \
  X(tuple_vectors, 10) \
  X(tuple_vectors_generated, 30) \
  X(tuple_writer_misuse, 5) \
  X(tuple_versionstamp_offset, 5) \
  X(tuple_reader_api, 5) \
  X(tuple_strinc_range, 5) \
  X(tuple_format, 5) \
  X(tuple_crosscheck_fdb_tuple, 120) \
  X(tuple_order, 60) \
  X(tuple_hostile, 30) \
  X(tuple_truncated, 30) \
  X(tuple_corrupted, 60) \
  X(tuple_deep_nesting, 30) \
  X(tuple_fuzz_smoke, 120)
