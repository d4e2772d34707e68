/* arena.h — a per-request bump allocator (STYLE.md: "Per-request work
 * allocates from an arena freed once at the end of the request").
 *
 * An arena hands out memory from chunks obtained with dv_malloc, by bumping
 * a pointer; nothing is freed on its own. arena_reset() drops everything at
 * once and keeps one chunk for the next request; arena_free() returns it all.
 * Allocation failure (including dv_alloc_fail_after in tests) is reported as
 * NULL, like malloc. A request that asks for more than a quarter of a chunk
 * gets a chunk of its own, so a large string never wastes the rest of the
 * current chunk.
 *
 * It is not thread-safe (one arena per request, one request per thread at a
 * time), it does not run destructors, and it is not a general heap: memory
 * that must outlive the request belongs elsewhere.
 */
#ifndef DV_ARENA_H
#define DV_ARENA_H

#include <stddef.h>
#include <stdint.h>

/* Alignment of arena_alloc: enough for any scalar type (max_align_t). */
#define DV_ARENA_ALIGN 16
/* Default size of an ordinary chunk (arena_init with chunk_size 0). */
#define DV_ARENA_CHUNK 8192
/* Ordinary chunks grow with the arena (never beyond this size), so a large
 * request does not cost one dv_malloc per 8 KB. */
#define DV_ARENA_CHUNK_MAX (1u << 20)

/* Under AddressSanitizer every allocation is followed by DV_ARENA_RZ
 * poisoned bytes and a chunk's free tail is poisoned, so reading past an
 * arena block (or through the unique pointer of a zero-byte one) is
 * reported as it would be for malloc. Elsewhere the red zone is 0 bytes
 * and the code below folds to the plain bump. */
#if defined(__SANITIZE_ADDRESS__)
#define DV_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DV_ARENA_ASAN 1
#endif
#endif
#ifdef DV_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define DV_ARENA_RZ 16
#define DV_ARENA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define DV_ARENA_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#else
#define DV_ARENA_RZ 0
#define DV_ARENA_UNPOISON(p, n) ((void)(p), (void)(n))
#define DV_ARENA_POISON(p, n) ((void)(p), (void)(n))
#endif
/* Do n bytes and the red zone fit in `room` free bytes? */
#if DV_ARENA_RZ
#define DV_ARENA_FITS(room, n) ((room) >= DV_ARENA_RZ && (n) <= (room) - DV_ARENA_RZ)
#else
#define DV_ARENA_FITS(room, n) ((n) <= (room))
#endif

typedef struct dv_arena_chunk dv_arena_chunk;

typedef struct dv_arena {
  uint8_t *cur;              /* next free byte of the current chunk */
  uint8_t *end;              /* end of the current chunk */
  dv_arena_chunk *chunks;    /* every chunk, most recent first */
  dv_arena_chunk *current;   /* the chunk cur points into (NULL: none yet) */
  size_t chunk_size;         /* size of the first ordinary chunk */
  size_t used;               /* bytes handed out since init/reset (incl. padding) */
  size_t reserved;           /* bytes currently obtained from dv_malloc */
  size_t nchunks;            /* chunks currently held */
} dv_arena;

#define DV_ARENA_INIT {NULL, NULL, NULL, NULL, DV_ARENA_CHUNK, 0, 0, 0}

/* Prepare an empty arena; chunk_size 0 means DV_ARENA_CHUNK. Allocates
 * nothing until the first request. */
void arena_init(dv_arena *a, size_t chunk_size);

/* Free every chunk; the arena is left empty and may be used again.
 * NULL is a no-op. Every pointer the arena gave out becomes invalid. */
void arena_free(dv_arena *a);

/* Forget every allocation but keep one chunk for reuse, so a request loop
 * costs no dv_malloc in the steady state. Pointers become invalid. */
void arena_reset(dv_arena *a);

/* Slow path of the inline allocator (a new chunk); not for direct use. */
void *arena__alloc_slow(dv_arena *a, size_t n, size_t align);

/* n bytes aligned to `align` (a power of two, at most 4096), uninitialised,
 * valid until arena_reset/arena_free. n = 0 returns a valid unique pointer.
 * NULL when out of memory. Inline: the common case is a compare and a bump. */
static inline void *arena_alloc_align(dv_arena *a, size_t n, size_t align) {
  uintptr_t p = ((uintptr_t)a->cur + (align - 1)) & ~(uintptr_t)(align - 1);
  /* the align checks fold away when align is a constant, as it always is */
  if (align && !(align & (align - 1)) && align <= 4096 && a->cur && n &&
      p <= (uintptr_t)a->end && DV_ARENA_FITS((uintptr_t)a->end - p, n)) {
    a->used += (size_t)(p - (uintptr_t)a->cur) + n + DV_ARENA_RZ;
    a->cur = (uint8_t *)(p + n + DV_ARENA_RZ);
    DV_ARENA_UNPOISON((void *)p, n);
    return (void *)p;
  }
  return arena__alloc_slow(a, n, align);
}

/* n bytes aligned to DV_ARENA_ALIGN; NULL when out of memory. */
static inline void *arena_alloc(dv_arena *a, size_t n) {
  return arena_alloc_align(a, n, DV_ARENA_ALIGN);
}

/* n zeroed bytes aligned to DV_ARENA_ALIGN; NULL when out of memory. */
void *arena_calloc(dv_arena *a, size_t n);

/* A copy of p[0..n) (byte-aligned); NULL when out of memory. */
void *arena_memdup(dv_arena *a, const void *p, size_t n);

/* A NUL-terminated copy of s[0..n); NULL when out of memory. */
char *arena_strndup(dv_arena *a, const char *s, size_t n);

/* Grow (or shrink) a block obtained from this arena with the same align:
 * extends it in place when it is the most recent allocation and the chunk
 * has room, otherwise allocates anew and copies min(old_n, new_n) bytes (the
 * old block is not reclaimed). p NULL behaves as arena_alloc_align. NULL when
 * out of memory; the old block is then untouched. */
void *arena_realloc(dv_arena *a, void *p, size_t old_n, size_t new_n, size_t align);

#endif
