/* The index layer's tests: X(name, timeout_seconds). */
#define INDEX_TESTS(X) \
  X(mango_match_table, 10) \
  X(mango_parse_errors, 10) \
  X(mango_collation, 10) \
  X(mango_alloc_fail, 10) \
  X(mango_regex_threads, 60) \
  X(mango_deep, 30) \
  X(mango_fuzz_smoke, 120) \
  X(collate_docs_spec, 10) \
  X(collate_docs_ranges, 10) \
  X(collate_docs_ascii, 10) \
  X(collate_numbers, 10) \
  X(collate_raw, 10) \
  X(collate_keys_random, 60) \
  X(collate_keys_long, 10) \
  X(collate_threads, 30) \
  X(collate_alloc_fail, 10) \
  X(collate_fuzz_smoke, 120) \
  X(mindex_write_paths, 30) \
  X(mindex_key_limit, 30) \
  X(mindex_property, 240) \
  X(mindex_property_fdb, 240) \
  X(mindex_build_while_writing, 240) \
  X(mqidx_parse_names, 10) \
  X(mqidx_parse_errors, 10) \
  X(mqidx_add, 10) \
  X(mqidx_list_json, 10)
