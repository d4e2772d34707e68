/* alloc.c — allocation wrapper with a failure hook for tests. */
#include "util/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static _Atomic long fail_countdown = -1; /* <0: never fail */

static int should_fail(void) {
  long v = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
  if (v < 0) return 0;
  /* Decrement; the allocation that finds 0 fails, and so do all later ones
   * until the hook is switched off, like SQLite's "persistent" faults. */
  if (v == 0) return 1;
  atomic_fetch_sub_explicit(&fail_countdown, 1, memory_order_relaxed);
  return 0;
}

void dv_alloc_fail_after(long n) { atomic_store(&fail_countdown, n); }

void *dv_malloc(size_t n) {
  if (should_fail()) return NULL;
  return malloc(n ? n : 1);
}

void *dv_calloc(size_t count, size_t size) {
  if (should_fail()) return NULL;
  return calloc(count ? count : 1, size ? size : 1);
}

void *dv_realloc(void *p, size_t n) {
  if (should_fail()) return NULL;
  return realloc(p, n ? n : 1);
}

void dv_free(void *p) { free(p); }

void *dv_memdup(const void *p, size_t n) {
  void *q = dv_malloc(n);
  if (q && n) memcpy(q, p, n);
  return q;
}

char *dv_strndup(const char *s, size_t n) {
  char *q = dv_malloc(n + 1);
  if (!q) return NULL;
  if (n) memcpy(q, s, n);
  q[n] = '\0';
  return q;
}
