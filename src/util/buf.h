/* buf.h — a growable byte buffer, the output type of every encoder.
 *
 * A dv_buf owns its bytes. Appends grow it geometrically; a failed growth
 * sets the sticky `oom` flag and turns later appends into no-ops, so an
 * encoder can append freely and check once at the end (buf_error), the way
 * SQLite's StrAccum reports SQLITE_NOMEM. The data is always followed by a
 * NUL byte that is not counted in len, so text can be passed to C string
 * functions.
 */
#ifndef DV_BUF_H
#define DV_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct dv_buf {
  uint8_t *p;  /* bytes; NULL until the first append */
  size_t len;  /* bytes in use */
  size_t cap;  /* bytes allocated (excluding the trailing NUL) */
  int oom;     /* sticky: an append failed to allocate */
} dv_buf;

#define DV_BUF_INIT {NULL, 0, 0, 0}

void buf_init(dv_buf *b);
void buf_free(dv_buf *b);               /* frees bytes; b may be reused */
void buf_reset(dv_buf *b);              /* len = 0, keeps capacity, clears oom */
int buf_reserve(dv_buf *b, size_t more);/* ensure room for `more` bytes; 0 or DV_ENOMEM */
void buf_append(dv_buf *b, const void *p, size_t n);
void buf_putc(dv_buf *b, uint8_t c);
void buf_puts(dv_buf *b, const char *s);
void buf_printf(dv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append n bytes uninitialised and return where they start (NULL on oom). */
uint8_t *buf_extend(dv_buf *b, size_t n);
/* 0, or DV_ENOMEM if any append since the last reset failed. */
int buf_error(const dv_buf *b);
/* Hand the bytes to the caller (who frees them with dv_free); b is emptied. */
uint8_t *buf_detach(dv_buf *b, size_t *out_len);

/* Byte strings in key order: the common length by memcmp, then the
 * shorter first. <0, 0 or >0. */
static inline int dv_bytes_cmp(const void *a, size_t al, const void *b, size_t bl) {
  size_t n = al < bl ? al : bl;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (al > bl) - (al < bl);
}

static inline void buf_putc_fast(dv_buf *b, uint8_t c) {
  if (b->len < b->cap) { b->p[b->len++] = c; b->p[b->len] = 0; }
  else buf_putc(b, c);
}

#endif
