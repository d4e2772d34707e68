/* buf.c — growable byte buffer; see buf.h. */
#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"
#include "util/err.h"

void buf_init(dv_buf *b) { b->p = NULL; b->len = b->cap = 0; b->oom = 0; }

void buf_free(dv_buf *b) { dv_free(b->p); buf_init(b); }

void buf_reset(dv_buf *b) {
  b->len = 0;
  b->oom = 0;
  if (b->p) b->p[0] = 0;
}

int buf_reserve(dv_buf *b, size_t more) {
  if (b->oom) return DV_ENOMEM;
  /* A buffer that never allocated still gets its NUL terminator's byte,
   * so p is never NULL after a successful reserve. */
  if (b->p && b->cap - b->len >= more) return 0;
  size_t need = b->len + more;
  if (need < b->len) { b->oom = 1; return DV_ENOMEM; } /* overflow */
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) {
    if (cap > SIZE_MAX / 2) { cap = need; break; }
    cap *= 2;
  }
  uint8_t *p = dv_realloc(b->p, cap + 1);
  if (!p) { b->oom = 1; return DV_ENOMEM; }
  b->p = p;
  b->cap = cap;
  return 0;
}

uint8_t *buf_extend(dv_buf *b, size_t n) {
  if (buf_reserve(b, n)) return NULL;
  uint8_t *at = b->p + b->len;
  b->len += n;
  b->p[b->len] = 0;
  return at;
}

void buf_append(dv_buf *b, const void *p, size_t n) {
  uint8_t *at = buf_extend(b, n);
  if (at && n) memcpy(at, p, n);
}

void buf_putc(dv_buf *b, uint8_t c) {
  uint8_t *at = buf_extend(b, 1);
  if (at) *at = c;
}

void buf_puts(dv_buf *b, const char *s) { buf_append(b, s, strlen(s)); }

void buf_printf(dv_buf *b, const char *fmt, ...) {
  va_list ap;
  char small[256];
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) { b->oom = 1; return; }
  if ((size_t)n < sizeof small) { buf_append(b, small, (size_t)n); return; }
  uint8_t *at = buf_extend(b, (size_t)n);
  if (!at) return;
  va_start(ap, fmt);
  vsnprintf((char *)at, (size_t)n + 1, fmt, ap);
  va_end(ap);
}

int buf_error(const dv_buf *b) { return b->oom ? DV_ENOMEM : 0; }

uint8_t *buf_detach(dv_buf *b, size_t *out_len) {
  uint8_t *p = b->p;
  if (out_len) *out_len = b->len;
  buf_init(b);
  return p;
}
