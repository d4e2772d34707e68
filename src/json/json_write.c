/* json_write.c — compact JSON output: the DOM writer, string escaping and
 * the streaming writer (json.h).
 *
 * Output matches CouchDB's: no whitespace, UTF-8 as is, and only the
 * escapes JSON requires ('"', '\' and control characters). Strings are
 * copied in runs between the bytes that need attention, found sixteen at a
 * time (json_int.h), into space reserved up front; only an escape grows the
 * reservation. The bytes written directly are NUL-terminated at the end of
 * each public call, keeping dv_buf's promise.
 *
 * Not here: number canonicalisation (json_num.c) — DOM numbers already
 * hold canonical text, so writing one is a copy.
 */
#include <string.h>

#include "json/json.h"
#include "json/json_int.h"

static inline void put(dv_buf *b, const void *s, size_t n) {
  if (!n) return;
  if (b->cap - b->len >= n && b->p) {
    memcpy(b->p + b->len, s, n);
    b->len += n;
  } else {
    buf_append(b, s, n);
  }
}

static inline void put1(dv_buf *b, uint8_t c) {
  if (b->len < b->cap) b->p[b->len++] = c;
  else buf_putc(b, c);
}

static inline void terminate(dv_buf *b) {
  if (b->p) b->p[b->len] = 0;
}

static const char hexdig[] = "0123456789abcdef";

/* Append s as a string literal. Invariant inside the loop: the buffer has
 * room for the rest of the input copied 1:1 plus the closing quote. */
static void put_str(dv_buf *b, const uint8_t *s, size_t n) {
  if (!s) s = (const uint8_t *)"", n = 0;
  if (n > SIZE_MAX - 2 || buf_reserve(b, n + 2)) return;
  uint8_t *o = b->p + b->len;
  const uint8_t *p = s, *end = s + n;
  *o++ = '"';
#define GROW(extra)                                                   \
  do {                                                                \
    b->len = (size_t)(o - b->p);                                      \
    if (buf_reserve(b, (size_t)(end - p) + (extra) + 1)) return;      \
    o = b->p + b->len;                                                \
  } while (0)
  for (;;) {
    const uint8_t *q = json__scan(p, end);
    memcpy(o, p, (size_t)(q - p));
    o += q - p;
    p = q;
    if (p == end) break;
    uint8_t c = *p;
    if (c >= 0x80) {
      size_t k = json__utf8_seq(p, end);
      if (k) {
        memcpy(o, p, k);
        o += k;
        p += k;
      } else {
        GROW(2); /* U+FFFD for one invalid byte */
        *o++ = 0xEF;
        *o++ = 0xBF;
        *o++ = 0xBD;
        p++;
      }
      continue;
    }
    uint8_t e;
    switch (c) {
      case '"': e = '"'; break;
      case '\\': e = '\\'; break;
      case '\b': e = 'b'; break;
      case '\f': e = 'f'; break;
      case '\n': e = 'n'; break;
      case '\r': e = 'r'; break;
      case '\t': e = 't'; break;
      default: e = 0; break;
    }
    if (e) {
      GROW(1);
      *o++ = '\\';
      *o++ = e;
    } else {
      GROW(5);
      memcpy(o, "\\u00", 4);
      o[4] = (uint8_t)hexdig[c >> 4];
      o[5] = (uint8_t)hexdig[c & 15];
      o += 6;
    }
    p++;
  }
#undef GROW
  *o++ = '"';
  b->len = (size_t)(o - b->p);
}

void json_escape(dv_buf *b, const char *s, size_t n) {
  put_str(b, (const uint8_t *)s, n);
  terminate(b);
}

static void w_val(dv_buf *b, const json_val *v) {
  switch (v ? v->type : JSON_NULL) {
    case JSON_BOOL:
      if (v->b) put(b, "true", 4);
      else put(b, "false", 5);
      break;
    case JSON_NUMBER:
      put(b, v->u.s, v->len);
      break;
    case JSON_STRING:
      put_str(b, (const uint8_t *)v->u.s, v->len);
      break;
    case JSON_ARRAY:
      put1(b, '[');
      for (size_t i = 0; i < v->len; i++) {
        if (i) put1(b, ',');
        w_val(b, v->u.items[i]);
      }
      put1(b, ']');
      break;
    case JSON_OBJECT:
      put1(b, '{');
      for (size_t i = 0; i < v->len; i++) {
        const json_member *m = &v->u.members[i];
        if (i) put1(b, ',');
        put_str(b, (const uint8_t *)m->key, m->klen);
        put1(b, ':');
        w_val(b, m->val);
      }
      put1(b, '}');
      break;
    default:
      put(b, "null", 4);
      break;
  }
}

int json_write(dv_buf *b, const json_val *v) {
  w_val(b, v);
  terminate(b);
  return buf_error(b);
}

/* ------------------------------------------------------------------ */
/* The streaming writer                                                */
/* ------------------------------------------------------------------ */

#define W_IN_OBJ(w) (((w)->obj[((w)->depth - 1) >> 3] >> (((w)->depth - 1) & 7)) & 1)

void json_w_init(json_w *w, dv_buf *b) {
  w->b = b;
  w->depth = 0;
  w->comma = 0;
  w->want_value = 0;
  w->rc = 0;
}

/* Before a value: check it is allowed here and write the comma. */
static int v_begin(json_w *w) {
  if (w->rc) return 0;
  if (w->depth > 0 && W_IN_OBJ(w) && !w->want_value) {
    w->rc = DV_EINVAL;
    return 0;
  }
  if (w->comma) put1(w->b, ',');
  w->want_value = 0;
  return 1;
}

static void v_end(json_w *w) {
  w->comma = w->depth > 0;
  terminate(w->b);
}

static void open_c(json_w *w, int is_obj) {
  if (!v_begin(w)) return;
  if (w->depth >= JSON_DEPTH_LIMIT) {
    w->rc = DV_EINVAL;
    return;
  }
  int d = w->depth++;
  uint8_t bit = (uint8_t)(1u << (d & 7));
  if (is_obj) w->obj[d >> 3] |= bit;
  else w->obj[d >> 3] &= (uint8_t)~bit;
  put1(w->b, is_obj ? '{' : '[');
  w->comma = 0;
  terminate(w->b);
}

static void close_c(json_w *w, int is_obj) {
  if (w->rc) return;
  if (w->depth == 0 || W_IN_OBJ(w) != is_obj || w->want_value) {
    w->rc = DV_EINVAL;
    return;
  }
  w->depth--;
  put1(w->b, is_obj ? '}' : ']');
  v_end(w);
}

void json_w_obj_begin(json_w *w) { open_c(w, 1); }
void json_w_obj_end(json_w *w) { close_c(w, 1); }
void json_w_arr_begin(json_w *w) { open_c(w, 0); }
void json_w_arr_end(json_w *w) { close_c(w, 0); }

void json_w_key(json_w *w, const char *k, size_t n) {
  if (w->rc) return;
  if (w->depth == 0 || !W_IN_OBJ(w) || w->want_value) {
    w->rc = DV_EINVAL;
    return;
  }
  if (w->comma) put1(w->b, ',');
  put_str(w->b, (const uint8_t *)k, n);
  put1(w->b, ':');
  w->comma = 0;
  w->want_value = 1;
  terminate(w->b);
}

void json_w_keyz(json_w *w, const char *k) { json_w_key(w, k, strlen(k)); }

void json_w_str(json_w *w, const char *s, size_t n) {
  if (!v_begin(w)) return;
  put_str(w->b, (const uint8_t *)s, n);
  v_end(w);
}

void json_w_strz(json_w *w, const char *s) { json_w_str(w, s, strlen(s)); }

void json_w_int(json_w *w, int64_t v) {
  char t[24];
  size_t n = json_fmt_int64(v, t);
  if (!v_begin(w)) return;
  put(w->b, t, n);
  v_end(w);
}

void json_w_uint(json_w *w, uint64_t v) {
  char t[24];
  size_t n = json_fmt_uint64(v, t);
  if (!v_begin(w)) return;
  put(w->b, t, n);
  v_end(w);
}

void json_w_double(json_w *w, double d) {
  char t[JSON_NUM_BUF];
  size_t n = json_fmt_double(d, t);
  if (!n) {
    if (!w->rc) w->rc = DV_EINVAL;
    return;
  }
  if (!v_begin(w)) return;
  put(w->b, t, n);
  v_end(w);
}

void json_w_num(json_w *w, const char *text, size_t n) {
  json_num num;
  int rc = json_num_parse(text, n, &num);
  if (rc) {
    if (!w->rc) w->rc = rc == DV_ENOMEM ? DV_ENOMEM : DV_EINVAL;
    return;
  }
  if (!v_begin(w)) return;
  put(w->b, num.text, num.len);
  v_end(w);
}

void json_w_bool(json_w *w, int b) {
  if (!v_begin(w)) return;
  if (b) put(w->b, "true", 4);
  else put(w->b, "false", 5);
  v_end(w);
}

void json_w_null(json_w *w) {
  if (!v_begin(w)) return;
  put(w->b, "null", 4);
  v_end(w);
}

void json_w_raw(json_w *w, const char *json, size_t n) {
  if (!v_begin(w)) return;
  put(w->b, json, n);
  v_end(w);
}

void json_w_val(json_w *w, const json_val *v) {
  if (!v_begin(w)) return;
  w_val(w->b, v);
  v_end(w);
}

int json_w_finish(json_w *w) {
  if (w->rc) return w->rc;
  if (w->depth != 0 || w->want_value) return DV_EINVAL;
  return buf_error(w->b);
}
