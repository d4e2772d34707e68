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
  X(md5_long, 10)
