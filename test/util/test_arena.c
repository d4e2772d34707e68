/* test_arena.c — the per-request arena (src/util/arena.h): alignment,
 * big allocations in their own chunks, growth in place, reset keeping one
 * chunk, allocation failure, and many small allocations staying intact.
 *
 * Not here: the JSON DOM that lives in arenas (test/json).
 */
#include "test.h"
#include "util/alloc.h"
#include "util/arena.h"

TEST(arena_basic) {
  dv_arena a = DV_ARENA_INIT;
  /* every allocation is aligned as asked, and distinct */
  void *prev = NULL;
  for (size_t n = 0; n < 200; n++) {
    void *p = arena_alloc(&a, n);
    ASSERT(p != NULL);
    ASSERT_EQ((uintptr_t)p % DV_ARENA_ALIGN, 0);
    ASSERT(p != prev);
    memset(p, 0xAB, n);
    prev = p;
  }
  for (size_t align = 1; align <= 4096; align *= 2) {
    void *p = arena_alloc_align(&a, 3, align);
    ASSERT(p != NULL);
    ASSERT_EQ((uintptr_t)p % align, 0);
  }
  ASSERT(arena_alloc_align(&a, 8, 3) == NULL);    /* not a power of two */
  ASSERT(arena_alloc_align(&a, 8, 8192) == NULL); /* too large an alignment */
  /* zero-size allocations are unique */
  void *z1 = arena_alloc_align(&a, 0, 1), *z2 = arena_alloc_align(&a, 0, 1);
  ASSERT(z1 && z2 && z1 != z2);
  char *s = arena_strndup(&a, "hello world", 5);
  ASSERT_STR_EQ(s, "hello");
  char *m = arena_memdup(&a, "a\0b", 3);
  ASSERT_MEM_EQ(m, 3, "a\0b", 3);
  unsigned char *c = arena_calloc(&a, 100);
  for (int i = 0; i < 100; i++) ASSERT_EQ(c[i], 0);
  ASSERT(a.used > 0 && a.reserved >= a.used);
  arena_free(&a);
  ASSERT(a.chunks == NULL && a.reserved == 0);
  arena_free(&a); /* twice is fine */
  arena_free(NULL);
}

TEST(arena_big) {
  dv_arena a = DV_ARENA_INIT;
  arena_init(&a, 1024);
  char *small1 = arena_alloc(&a, 16);
  memset(small1, 1, 16);
  /* a big allocation gets its own chunk and leaves the current one usable */
  uint8_t *cur_before = a.cur;
  char *big = arena_alloc(&a, 1 << 20);
  ASSERT(big != NULL);
  memset(big, 2, 1 << 20);
  ASSERT(a.cur == cur_before);
  char *small2 = arena_alloc(&a, 16);
  ASSERT(small2 == small1 + 16 + DV_ARENA_RZ); /* the red zone under ASan */
  /* several big ones, with a large alignment */
  for (int i = 0; i < 8; i++) {
    uint8_t *p = arena_alloc_align(&a, 100000 + (size_t)i, 4096);
    ASSERT(p != NULL);
    ASSERT_EQ((uintptr_t)p % 4096, 0);
    memset(p, i, 100000 + (size_t)i);
  }
  ASSERT(a.reserved > 8 * 100000);
  for (int i = 0; i < 16; i++) ASSERT_EQ(small1[i], 1);
  ASSERT_EQ(big[12345], 2);
  /* absurd sizes fail cleanly */
  ASSERT(arena_alloc(&a, SIZE_MAX - 8) == NULL);
  ASSERT(arena_strndup(&a, "x", SIZE_MAX) == NULL);
  arena_free(&a);
}

TEST(arena_many) {
  /* 100,000 small allocations in growing chunks keep their contents */
  dv_arena a = DV_ARENA_INIT;
  enum { N = 100000 };
  uint32_t **ptrs = malloc(N * sizeof *ptrs);
  for (uint32_t i = 0; i < N; i++) {
    size_t words = 1 + i % 7;
    ptrs[i] = arena_alloc_align(&a, words * 4, 4);
    ASSERT(ptrs[i] != NULL);
    for (size_t k = 0; k < words; k++) ptrs[i][k] = i * 7 + (uint32_t)k;
  }
  for (uint32_t i = 0; i < N; i++)
    for (size_t k = 0; k < 1 + i % 7; k++) ASSERT_EQ(ptrs[i][k], i * 7 + (uint32_t)k);
  /* chunks grew: far fewer than one per 8 KB */
  ASSERT(a.nchunks < 40);
  ASSERT(a.reserved < 2 * a.used + DV_ARENA_CHUNK_MAX);
  free(ptrs);
  arena_free(&a);
}

TEST(arena_reset) {
  dv_arena a = DV_ARENA_INIT;
  for (int round = 0; round < 5; round++) {
    for (int i = 0; i < 1000; i++) ASSERT(arena_alloc(&a, 100) != NULL);
    ASSERT(arena_alloc(&a, 1 << 20) != NULL); /* a big one, freed by reset */
    arena_reset(&a);
    ASSERT_EQ(a.used, 0);
    /* one ordinary chunk is kept for the next request */
    ASSERT(a.chunks != NULL && a.chunks == a.current && a.nchunks == 1);
    ASSERT(a.reserved < (1 << 20));
    size_t kept = a.reserved;
    /* the next small allocation needs no dv_malloc */
    dv_alloc_fail_after(0);
    void *p = arena_alloc(&a, 64);
    dv_alloc_fail_after(-1);
    ASSERT(p != NULL);
    ASSERT_EQ(a.reserved, kept);
  }
  arena_reset(&a);
  arena_free(&a);
  /* reset of an arena that never allocated */
  dv_arena e = DV_ARENA_INIT;
  arena_reset(&e);
  ASSERT(e.chunks == NULL);
  arena_free(&e);
}

TEST(arena_realloc) {
  dv_arena a = DV_ARENA_INIT;
  /* the latest block grows in place */
  char *p = arena_alloc_align(&a, 8, 8);
  memcpy(p, "abcdefgh", 8);
  char *q = arena_realloc(&a, p, 8, 64, 8);
  ASSERT(q == p);
  ASSERT_MEM_EQ(q, 8, "abcdefgh", 8);
  /* an older block moves, keeping its bytes */
  char *r = arena_alloc_align(&a, 8, 8);
  ASSERT(r != NULL);
  char *s = arena_realloc(&a, q, 64, 128, 8);
  ASSERT(s != q);
  ASSERT_MEM_EQ(s, 8, "abcdefgh", 8);
  /* shrinking the latest block gives the tail back */
  char *t = arena_realloc(&a, s, 128, 16, 8);
  ASSERT(t == s);
  char *u = arena_alloc_align(&a, 1, 1);
  ASSERT(u == t + 16 + DV_ARENA_RZ);
  /* growing past the chunk moves to a new one */
  char *v = arena_realloc(&a, u, 1, 100000, 8);
  ASSERT(v != NULL && v != u);
  ASSERT(arena_realloc(&a, NULL, 0, 10, 8) != NULL);
  arena_free(&a);
}

TEST(arena_alloc_fail) {
  dv_arena a = DV_ARENA_INIT;
  dv_alloc_fail_after(0);
  ASSERT(arena_alloc(&a, 10) == NULL);
  ASSERT(arena_alloc(&a, 1 << 20) == NULL);
  ASSERT(arena_strndup(&a, "x", 1) == NULL);
  dv_alloc_fail_after(-1);
  ASSERT(arena_alloc(&a, 10) != NULL);
  /* a failure mid-way leaves earlier blocks intact */
  char *keep = arena_strndup(&a, "keep", 4);
  dv_alloc_fail_after(0);
  ASSERT(arena_alloc(&a, 1 << 20) == NULL);
  dv_alloc_fail_after(-1);
  ASSERT_STR_EQ(keep, "keep");
  arena_free(&a);
}

/* Under AddressSanitizer the bytes after every block, a zero-byte block's
 * unique pointer, the free tail and everything after a reset are poisoned,
 * so reading past an arena block is reported (a plan that read the first
 * column of a zero-column index went unseen for a whole issue). Elsewhere
 * the red zone costs nothing. */
TEST(arena_redzone) {
#ifdef DV_ARENA_ASAN
  dv_arena a = DV_ARENA_INIT;
  char *p = arena_alloc_align(&a, 5, 1);
  ASSERT(p != NULL);
  for (int i = 0; i < 5; i++) ASSERT(!__asan_address_is_poisoned(p + i));
  ASSERT(__asan_address_is_poisoned(p + 5));
  char *z = arena_alloc(&a, 0);
  ASSERT(z != NULL && __asan_address_is_poisoned(z));
  ASSERT(__asan_address_is_poisoned(a.cur)); /* the free tail */
  char *q = arena_realloc(&a, arena_alloc_align(&a, 8, 8), 8, 64, 8); /* grown in place */
  ASSERT(!__asan_address_is_poisoned(q + 63) && __asan_address_is_poisoned(q + 64));
  char *r = arena_realloc(&a, q, 64, 8, 8); /* shrunk in place */
  ASSERT(r == q && __asan_address_is_poisoned(q + 8));
  arena_reset(&a);
  ASSERT(__asan_address_is_poisoned(p));
  arena_free(&a);
#else
  ASSERT_EQ(DV_ARENA_RZ, 0);
#endif
}
