/* arena.c — bump allocation in chunks from dv_malloc; see arena.h.
 *
 * Chunk layout: a small header (next pointer, data size) rounded up to
 * DV_ARENA_ALIGN, then the data. Ordinary chunks are bumped through; a
 * request larger than a quarter of an ordinary chunk gets a dedicated chunk
 * that is linked in but never becomes current, so the current chunk's free
 * tail stays usable.
 */
#include "util/arena.h"

#include <string.h>

#include "util/alloc.h"

struct dv_arena_chunk {
  dv_arena_chunk *next;  /* older chunk */
  size_t size;           /* data bytes after the header */
};

#define HDR ((sizeof(dv_arena_chunk) + DV_ARENA_ALIGN - 1) & ~(size_t)(DV_ARENA_ALIGN - 1))

static uint8_t *chunk_data(dv_arena_chunk *c) { return (uint8_t *)c + HDR; }

void arena_init(dv_arena *a, size_t chunk_size) {
  a->cur = a->end = NULL;
  a->chunks = a->current = NULL;
  a->chunk_size = chunk_size ? chunk_size : DV_ARENA_CHUNK;
  a->used = a->reserved = 0;
  a->nchunks = 0;
}

void arena_free(dv_arena *a) {
  if (!a) return;
  dv_arena_chunk *c = a->chunks;
  while (c) {
    dv_arena_chunk *next = c->next;
    DV_ARENA_UNPOISON(c, HDR + c->size);
    dv_free(c);
    c = next;
  }
  arena_init(a, a->chunk_size);
}

void arena_reset(dv_arena *a) {
  dv_arena_chunk *keep = a->current;
  dv_arena_chunk *c = a->chunks;
  while (c) {
    dv_arena_chunk *next = c->next;
    if (c != keep) {
      DV_ARENA_UNPOISON(c, HDR + c->size);
      dv_free(c);
    }
    c = next;
  }
  a->chunks = keep;
  a->used = 0;
  if (keep) {
    keep->next = NULL;
    a->cur = chunk_data(keep);
    a->end = a->cur + keep->size;
    DV_ARENA_POISON(a->cur, keep->size);
    a->reserved = HDR + keep->size;
    a->nchunks = 1;
  } else {
    a->cur = a->end = NULL;
    a->reserved = 0;
    a->nchunks = 0;
  }
}

static dv_arena_chunk *new_chunk(dv_arena *a, size_t size) {
  if (size > SIZE_MAX - HDR) return NULL;
  dv_arena_chunk *c = dv_malloc(HDR + size);
  if (!c) return NULL;
  c->size = size;
  c->next = a->chunks;
  a->chunks = c;
  a->reserved += HDR + size;
  a->nchunks++;
  return c;
}

void *arena__alloc_slow(dv_arena *a, size_t n, size_t align) {
  if (align == 0 || (align & (align - 1)) || align > 4096) return NULL;
  if (n == 0) {
    n = 1; /* a unique pointer: retry the bump with one byte (never readable under ASan) */
    uintptr_t p = ((uintptr_t)a->cur + (align - 1)) & ~(uintptr_t)(align - 1);
    if (a->cur && p < (uintptr_t)a->end && (uintptr_t)a->end - p >= 1 + DV_ARENA_RZ) {
      a->used += (size_t)(p - (uintptr_t)a->cur) + 1 + DV_ARENA_RZ;
      a->cur = (uint8_t *)(p + 1 + DV_ARENA_RZ);
      return (void *)p;
    }
  }
  if (n > SIZE_MAX - align) return NULL;
  size_t need = n + (align > DV_ARENA_ALIGN ? align - 1 : 0);
  size_t ord = a->chunk_size;
  while (ord < a->reserved / 2 && ord < DV_ARENA_CHUNK_MAX) ord *= 2;

  if (need > ord / 4) {
    /* A dedicated chunk, exactly as large as the request. */
    dv_arena_chunk *c = new_chunk(a, need);
    if (!c) return NULL;
    uintptr_t p = ((uintptr_t)chunk_data(c) + (align - 1)) & ~(uintptr_t)(align - 1);
    a->used += need;
    return (void *)p;
  }
  dv_arena_chunk *c = new_chunk(a, ord);
  if (!c) return NULL;
  a->current = c;
  a->cur = chunk_data(c);
  a->end = a->cur + c->size;
  DV_ARENA_POISON(a->cur, c->size);
  return arena_alloc_align(a, n, align);
}

void *arena_calloc(dv_arena *a, size_t n) {
  void *p = arena_alloc(a, n);
  if (p && n) memset(p, 0, n);
  return p;
}

void *arena_memdup(dv_arena *a, const void *p, size_t n) {
  void *q = arena_alloc_align(a, n, 1);
  if (q && n) memcpy(q, p, n);
  return q;
}

char *arena_strndup(dv_arena *a, const char *s, size_t n) {
  if (n == SIZE_MAX) return NULL;
  char *q = arena_alloc_align(a, n + 1, 1);
  if (!q) return NULL;
  if (n) memcpy(q, s, n);
  q[n] = '\0';
  return q;
}

void *arena_realloc(dv_arena *a, void *p, size_t old_n, size_t new_n, size_t align) {
  if (!p) return arena_alloc_align(a, new_n, align);
  uint8_t *b = p;
  if (old_n && b + old_n + DV_ARENA_RZ == a->cur && new_n && DV_ARENA_FITS((size_t)(a->end - b), new_n)) {
    /* The most recent allocation: grow or shrink in place. */
    if (new_n >= old_n) a->used += new_n - old_n;
    else a->used -= old_n - new_n;
    if (new_n < old_n) DV_ARENA_POISON(b + new_n, old_n - new_n);
    DV_ARENA_UNPOISON(b, new_n);
    a->cur = b + new_n + DV_ARENA_RZ;
    return p;
  }
  void *q = arena_alloc_align(a, new_n, align);
  if (!q) return NULL;
  size_t keep = old_n < new_n ? old_n : new_n;
  if (keep) memcpy(q, p, keep);
  return q;
}
