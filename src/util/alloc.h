/* alloc.h — the one allocation wrapper (Redis's zmalloc, libuv's uv__malloc).
 *
 * All of divan allocates through these so that tests can make the N-th
 * allocation fail (dv_alloc_fail_after) and check that every caller turns
 * that into DV_ENOMEM and leaks nothing. They are thin: no pooling, no
 * accounting beyond a counter used by the failure hook.
 */
#ifndef DV_ALLOC_H
#define DV_ALLOC_H

#include <stddef.h>

void *dv_malloc(size_t n);
void *dv_calloc(size_t count, size_t size);
void *dv_realloc(void *p, size_t n);
void dv_free(void *p);                          /* NULL is a no-op */
char *dv_strndup(const char *s, size_t n);      /* NUL-terminated copy */
void *dv_memdup(const void *p, size_t n);

/* Make every allocation after the next n succeed-then-fail: n = 0 fails the
 * very next one; a negative n turns failure injection off (the default).
 * Process-wide, for tests only. */
void dv_alloc_fail_after(long n);

#endif
