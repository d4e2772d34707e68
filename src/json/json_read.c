/* json_read.c — the strict pull reader, the DOM parser built on it, and
 * UTF-8 validation; see json.h for the rules they enforce.
 *
 * The reader is a small state machine over a complete buffer. It keeps one
 * bit per nesting level (object or array), so depth costs no memory, and
 * it delivers strings zero-copy when they have no escapes. Its speed comes
 * from three things: a whitespace table checked before any branch on the
 * state, a string scanner that skips sixteen plain bytes at a time
 * (json_int.h), and no per-byte function calls anywhere else.
 *
 * The DOM parser consumes reader events (the reader's body is inlined into
 * it) with an explicit stack, never recursion: members and elements of the
 * open containers collect in one growing scratch array, and each container,
 * when it closes, gets an exactly-sized vector in the arena. Objects
 * resolve duplicate keys there, with a small hash table.
 *
 * Not here: number canonicalisation (json_num.c), builders and lookups
 * (json_dom.c), output (json_write.c).
 */
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json/json.h"
#include "json/json_int.h"
#include "util/alloc.h"

/* Reader states: what the grammar expects at r->p. */
enum {
  ST_VALUE,     /* a value (top level, after ':' or after ',' in an array) */
  ST_ARR_FIRST, /* a value or ']' (just after '[') */
  ST_OBJ_FIRST, /* a key or '}' (just after '{') */
  ST_KEY,       /* a key (after ',' in an object) */
  ST_AFTER,     /* ',' or the closer after a value, or the end at top level */
  ST_DONE,      /* JSON_EV_END was returned */
  ST_ERROR,     /* r->rc holds the error */
};

const uint8_t json__special[256] = {
    [0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1,
};

static const uint8_t ws_tab[256] = {[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1};

static const uint8_t empty_input[1] = {0};

#define IS_DIGIT(c) ((unsigned)((c) - '0') < 10u)
#define TOP_IS_OBJ(r) (((r)->stack[((r)->depth - 1) >> 3] >> (((r)->depth - 1) & 7)) & 1)

__attribute__((cold, noinline)) static int fail(json_reader *r, const uint8_t *at, int rc,
                                                 const char *msg) {
  r->rc = rc;
  r->state = ST_ERROR;
  r->err.offset = (size_t)(at - r->begin);
  r->err.msg = msg;
  r->p = at;
  return rc;
}

int json_reader_init(json_reader *r, const void *p, size_t len, const json_opts *opts) {
  r->begin = p ? (const uint8_t *)p : empty_input;
  if (!p) len = 0;
  r->p = r->begin;
  r->end = r->begin + len;
  r->str = NULL;
  r->len = 0;
  r->num_int = 0;
  r->escaped = 0;
  r->state = ST_VALUE;
  r->depth = 0;
  r->max_depth = JSON_DEFAULT_DEPTH;
  if (opts && opts->max_depth > 0)
    r->max_depth = opts->max_depth < JSON_DEPTH_LIMIT ? opts->max_depth : JSON_DEPTH_LIMIT;
  r->rc = 0;
  r->err.offset = 0;
  r->err.msg = NULL;
  buf_init(&r->scratch);
  if (opts && opts->max_len && len > opts->max_len)
    return fail(r, r->begin + opts->max_len, DV_EJSON_SIZE, "JSON value too large");
  return 0;
}

void json_reader_free(json_reader *r) {
  if (!r) return;
  buf_free(&r->scratch);
}

static int hex4(const uint8_t *p, const uint8_t *end, uint32_t *out) {
  if (end - p < 4) return -1;
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    uint8_t c = p[i];
    uint32_t d;
    if (c >= '0' && c <= '9') d = (uint32_t)(c - '0');
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') d = (uint32_t)((c | 0x20) - 'a' + 10);
    else return -1;
    v = v << 4 | d;
  }
  *out = v;
  return 0;
}

static void put_utf8(dv_buf *b, uint32_t cp) {
  uint8_t t[4];
  size_t n;
  if (cp < 0x80) {
    t[0] = (uint8_t)cp;
    n = 1;
  } else if (cp < 0x800) {
    t[0] = (uint8_t)(0xC0 | cp >> 6);
    t[1] = (uint8_t)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    t[0] = (uint8_t)(0xE0 | cp >> 12);
    t[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    t[2] = (uint8_t)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    t[0] = (uint8_t)(0xF0 | cp >> 18);
    t[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    t[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    t[3] = (uint8_t)(0x80 | (cp & 0x3F));
    n = 4;
  }
  buf_append(b, t, n);
}

/* Scan plain bytes (validating UTF-8) from p up to the next '"', '\' or
 * error; returns that position, or NULL after failing the reader. */
static inline const uint8_t *scan_run(json_reader *r, const uint8_t *p) {
  const uint8_t *end = r->end;
  for (;;) {
    p = json__scan(p, end);
    if (p == end) {
      fail(r, p, DV_EJSON, "unterminated string");
      return NULL;
    }
    uint8_t c = *p;
    if (c == '"' || c == '\\') return p;
    if (c < 0x20) {
      fail(r, p, DV_EJSON, "control character in string");
      return NULL;
    }
    do {
      size_t k = json__utf8_seq(p, end);
      if (!k) {
        fail(r, p, DV_EJSON, "invalid UTF-8");
        return NULL;
      }
      p += k;
    } while (p < end && *p >= 0x80);
  }
}

/* The rest of a string from the first backslash at p: decode into the
 * scratch buffer. start is the first byte of the string's contents. */
__attribute__((noinline)) static int read_escaped(json_reader *r, const uint8_t **pp,
                                                  const uint8_t *start, const uint8_t *p) {
  dv_buf *b = &r->scratch;
  const uint8_t *end = r->end;
  buf_reset(b);
  if (p > start) buf_append(b, start, (size_t)(p - start));
  for (;;) {
    /* *p == '\\' */
    if (end - p < 2) return fail(r, end, DV_EJSON, "unterminated string");
    uint8_t ch;
    switch (p[1]) {
      case '"': ch = '"'; break;
      case '\\': ch = '\\'; break;
      case '/': ch = '/'; break;
      case 'b': ch = '\b'; break;
      case 'f': ch = '\f'; break;
      case 'n': ch = '\n'; break;
      case 'r': ch = '\r'; break;
      case 't': ch = '\t'; break;
      case 'u': {
        uint32_t cp, lo;
        if (hex4(p + 2, end, &cp)) return fail(r, p, DV_EJSON, "invalid \\u escape");
        const uint8_t *q = p + 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (end - q < 6 || q[0] != '\\' || q[1] != 'u' || hex4(q + 2, end, &lo) ||
              lo < 0xDC00 || lo > 0xDFFF)
            return fail(r, p, DV_EJSON, "lone surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          q += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return fail(r, p, DV_EJSON, "lone surrogate in \\u escape");
        }
        put_utf8(b, cp);
        p = q;
        goto run;
      }
      default:
        return fail(r, p, DV_EJSON, "invalid escape");
    }
    buf_putc(b, ch);
    p += 2;
  run:;
    const uint8_t *s = p;
    p = scan_run(r, p);
    if (!p) return r->rc;
    if (p > s) buf_append(b, s, (size_t)(p - s));
    if (*p == '"') break;
  }
  if (buf_error(b)) return fail(r, p, DV_ENOMEM, "out of memory");
  r->str = (const char *)b->p;
  r->len = b->len;
  r->escaped = 1;
  *pp = p + 1;
  return 0;
}

/* A string whose opening quote is at *pp; on success *pp is past the
 * closing quote and r->str/len/escaped describe it. */
static inline int read_string(json_reader *r, const uint8_t **pp) {
  const uint8_t *start = *pp + 1;
  const uint8_t *p = scan_run(r, start);
  if (!p) return r->rc;
  if (*p == '\\') return read_escaped(r, pp, start, p);
  r->str = (const char *)start;
  r->len = (size_t)(p - start);
  r->escaped = 0;
  *pp = p + 1;
  return 0;
}

static inline int read_number(json_reader *r, const uint8_t **pp) {
  const uint8_t *s = *pp, *p = s, *end = r->end;
  int is_int = 1;
  if (*p == '-') p++;
  if (p == end) return fail(r, p, DV_EJSON, "invalid number");
  if (*p == '0') {
    p++;
    if (p < end && IS_DIGIT(*p)) return fail(r, p - 1, DV_EJSON, "leading zero in number");
  } else if (IS_DIGIT(*p)) {
    p++;
    while (p < end && IS_DIGIT(*p)) p++;
  } else {
    return fail(r, p, DV_EJSON, "invalid number");
  }
  if (p < end && *p == '.') {
    p++;
    if (p == end || !IS_DIGIT(*p)) return fail(r, p, DV_EJSON, "expected a digit after '.'");
    while (p < end && IS_DIGIT(*p)) p++;
    is_int = 0;
  }
  if (p < end && (*p | 0x20) == 'e') {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (p == end || !IS_DIGIT(*p)) return fail(r, p, DV_EJSON, "expected a digit in the exponent");
    while (p < end && IS_DIGIT(*p)) p++;
    is_int = 0;
  }
  r->str = (const char *)s;
  r->len = (size_t)(p - s);
  r->num_int = is_int;
  r->escaped = 0;
  *pp = p;
  return 0;
}

static int literal(json_reader *r, const uint8_t *p, const char *word, size_t n, int ev) {
  if ((size_t)(r->end - p) < n || memcmp(p, word, n) != 0)
    return fail(r, p, DV_EJSON, "invalid literal");
  r->p = p + n;
  r->state = ST_AFTER;
  return ev;
}

/* The reader proper; inlined into json_parse as well as json_next. */
static inline __attribute__((always_inline)) int reader_next(json_reader *r) {
  const uint8_t *p = r->p, *end = r->end;
  int rc;
  for (;;) {
    while (p < end && ws_tab[*p]) p++;
    switch (r->state) {
      case ST_AFTER: {
        if (r->depth == 0) {
          if (p != end) return fail(r, p, DV_EJSON, "unexpected data after the value");
          r->p = p;
          r->state = ST_DONE;
          return JSON_EV_END;
        }
        if (p == end) return fail(r, p, DV_EJSON, "unexpected end of input");
        int in_obj = TOP_IS_OBJ(r);
        if (*p == ',') {
          p++;
          r->state = in_obj ? ST_KEY : ST_VALUE;
          continue;
        }
        if (*p == (in_obj ? '}' : ']')) {
          r->p = p + 1;
          r->depth--;
          return in_obj ? JSON_EV_OBJ_END : JSON_EV_ARR_END;
        }
        return fail(r, p, DV_EJSON, in_obj ? "expected ',' or '}'" : "expected ',' or ']'");
      }
      case ST_OBJ_FIRST:
        if (p < end && *p == '}') {
          r->p = p + 1;
          r->depth--;
          r->state = ST_AFTER;
          return JSON_EV_OBJ_END;
        }
        /* fall through */
      case ST_KEY:
        if (p == end) return fail(r, p, DV_EJSON, "unexpected end of input");
        if (*p != '"')
          return fail(r, p, DV_EJSON,
                      *p == '}' && r->state == ST_KEY ? "trailing comma" : "expected a string key");
        rc = read_string(r, &p);
        if (rc) return rc;
        while (p < end && ws_tab[*p]) p++;
        if (p == end || *p != ':') return fail(r, p, DV_EJSON, "expected ':'");
        r->p = p + 1;
        r->state = ST_VALUE;
        return JSON_EV_KEY;
      case ST_ARR_FIRST:
        if (p < end && *p == ']') {
          r->p = p + 1;
          r->depth--;
          r->state = ST_AFTER;
          return JSON_EV_ARR_END;
        }
        /* fall through */
      case ST_VALUE:
        if (p == end)
          return fail(r, p, DV_EJSON,
                      r->depth == 0 ? "empty input" : "unexpected end of input");
        switch (*p) {
          case '"':
            rc = read_string(r, &p);
            if (rc) return rc;
            r->p = p;
            r->state = ST_AFTER;
            return JSON_EV_STRING;
          case '-': case '0': case '1': case '2': case '3': case '4':
          case '5': case '6': case '7': case '8': case '9':
            rc = read_number(r, &p);
            if (rc) return rc;
            r->p = p;
            r->state = ST_AFTER;
            return JSON_EV_NUMBER;
          case '{':
          case '[': {
            if (r->depth >= r->max_depth)
              return fail(r, p, DV_EJSON_DEPTH, "nesting too deep");
            int d = r->depth++;
            uint8_t bit = (uint8_t)(1u << (d & 7));
            if (*p == '{') {
              r->stack[d >> 3] |= bit;
              r->state = ST_OBJ_FIRST;
            } else {
              r->stack[d >> 3] &= (uint8_t)~bit;
              r->state = ST_ARR_FIRST;
            }
            r->p = p + 1;
            return *p == '{' ? JSON_EV_OBJ_BEGIN : JSON_EV_ARR_BEGIN;
          }
          case 't': return literal(r, p, "true", 4, JSON_EV_TRUE);
          case 'f': return literal(r, p, "false", 5, JSON_EV_FALSE);
          case 'n': return literal(r, p, "null", 4, JSON_EV_NULL);
          case ']':
            if (r->state == ST_VALUE && r->depth > 0 && !TOP_IS_OBJ(r))
              return fail(r, p, DV_EJSON, "trailing comma");
            return fail(r, p, DV_EJSON, "unexpected character");
          default:
            return fail(r, p, DV_EJSON, "unexpected character");
        }
      case ST_DONE:
        return JSON_EV_END;
      default:
        return r->rc;
    }
  }
}

int json_next(json_reader *r) { return reader_next(r); }

int json_skip(json_reader *r) {
  int target;
  if (r->state == ST_OBJ_FIRST || r->state == ST_ARR_FIRST) {
    target = r->depth - 1;
  } else if (r->state == ST_VALUE) {
    int ev = json_next(r);
    if (ev < 0) return ev;
    if (ev != JSON_EV_OBJ_BEGIN && ev != JSON_EV_ARR_BEGIN) return 0;
    target = r->depth - 1;
  } else {
    return r->state == ST_ERROR ? r->rc : 0;
  }
  while (r->depth > target) {
    int ev = json_next(r);
    if (ev < 0) return ev;
  }
  return 0;
}

int json_utf8_check(const void *p, size_t n, size_t *out_bad) {
  const uint8_t *s = p ? p : empty_input, *q = s, *end = s + (p ? n : 0);
  while (q < end) {
    if (*q < 0x80) {
      /* ASCII runs: eight bytes at a time */
      while (end - q >= 8) {
        uint64_t v;
        memcpy(&v, q, 8);
        if (v & 0x8080808080808080ull) break;
        q += 8;
      }
      while (q < end && *q < 0x80) q++;
      continue;
    }
    size_t k = json__utf8_seq(q, end);
    if (!k) {
      if (out_bad) *out_bad = (size_t)(q - s);
      return DV_EJSON;
    }
    q += k;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* The DOM parser                                                      */
/* ------------------------------------------------------------------ */

/* An open container. */
typedef struct frame {
  size_t start;      /* its first element in the scratch member array */
  const char *key;   /* the key it will have in its parent object */
  size_t klen;       /* that key's length */
} frame;

typedef struct dom_ctx {
  dv_arena *a;        /* where the DOM goes */
  json_member *tmp;   /* elements of the open containers, innermost last */
  size_t ntmp;        /* in use */
  size_t captmp;      /* allocated */
  frame *fr;          /* open containers, innermost last */
  size_t nfr;         /* in use */
  size_t capfr;       /* allocated */
  size_t *htab;       /* dedupe hash table for large objects */
  size_t hcap;        /* its slots */
} dom_ctx;

#define HEMPTY ((size_t)-1)

/* Keys of large objects are hashed with SipHash-1-3 under a per-process
 * random key, so a request cannot pick keys that all collide and turn
 * duplicate resolution quadratic (hash flooding). */
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                         \
  do {                                                                   \
    v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);           \
    v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                               \
    v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                               \
    v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);           \
  } while (0)

static uint64_t siphash13(const uint8_t *in, size_t n, uint64_t k0, uint64_t k1) {
  uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
  uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
  uint64_t b = (uint64_t)n << 56;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t m;
    memcpy(&m, in + i, 8);
    v3 ^= m;
    SIPROUND;
    v0 ^= m;
  }
  for (size_t k = 0; i + k < n; k++) b |= (uint64_t)in[i + k] << (8 * k);
  v3 ^= b;
  SIPROUND;
  v0 ^= b;
  v2 ^= 0xff;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

static _Atomic uint64_t hash_k0, hash_k1;
static _Atomic int hash_seeded;

/* The process's hash key, drawn once (racing first calls may each draw
 * one; any of them is a good key). */
static void hash_key(uint64_t *k0, uint64_t *k1) {
  if (!atomic_load_explicit(&hash_seeded, memory_order_acquire)) {
    uint64_t k[2];
    if (getentropy(k, sizeof k) != 0) {
      k[0] = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&k;
      k[1] = (uint64_t)clock() * 0x9E3779B97F4A7C15ull;
    }
    atomic_store_explicit(&hash_k0, k[0], memory_order_relaxed);
    atomic_store_explicit(&hash_k1, k[1], memory_order_relaxed);
    atomic_store_explicit(&hash_seeded, 1, memory_order_release);
  }
  *k0 = atomic_load_explicit(&hash_k0, memory_order_relaxed);
  *k1 = atomic_load_explicit(&hash_k1, memory_order_relaxed);
}

uint64_t json__key_hash(const char *key, size_t klen) {
  uint64_t k0, k1;
  hash_key(&k0, &k1);
  return siphash13((const uint8_t *)key, klen, k0, k1);
}

/* Drop every member whose key occurs again later (the last one wins and
 * keeps its place); returns the surviving count, or (size_t)-1 on ENOMEM. */
static size_t dedupe(dom_ctx *c, json_member *m, size_t n) {
  size_t dead = 0;
  if (n < 2) return n;
  if (n <= 32) {
    /* A 64-slot table on the stack with a cheap hash of the length and the
     * first and last bytes; walk from the last member so the survivor of
     * each key is seen first. */
    uint8_t slot[64];
    memset(slot, 0xFF, sizeof slot);
    for (size_t i = n; i-- > 0;) {
      size_t kl = m[i].klen;
      const uint8_t *k = (const uint8_t *)m[i].key;
      unsigned h = kl ? (unsigned)(kl * 7 + k[0] * 31 + k[kl - 1] * 131) : 0;
      for (;;) {
        h &= 63;
        if (slot[h] == 0xFF) {
          slot[h] = (uint8_t)i;
          break;
        }
        const json_member *o = &m[slot[h]];
        if (o->klen == kl && (kl == 0 || memcmp(o->key, k, kl) == 0)) {
          m[i].val = NULL;
          dead++;
          break;
        }
        h++;
      }
    }
  } else {
    size_t cap = 64;
    while (cap < 2 * n) cap *= 2;
    if (cap > c->hcap) {
      size_t *t = dv_realloc(c->htab, cap * sizeof *t);
      if (!t) return (size_t)-1;
      c->htab = t;
      c->hcap = cap;
    }
    size_t *t = c->htab, mask = cap - 1;
    uint64_t k0, k1;
    hash_key(&k0, &k1);
    for (size_t i = 0; i < cap; i++) t[i] = HEMPTY;
    for (size_t i = n; i-- > 0;) {
      size_t h = (size_t)siphash13((const uint8_t *)m[i].key, m[i].klen, k0, k1) & mask;
      for (;;) {
        size_t j = t[h];
        if (j == HEMPTY) {
          t[h] = i;
          break;
        }
        if (m[j].klen == m[i].klen && memcmp(m[j].key, m[i].key, m[i].klen) == 0) {
          m[i].val = NULL;
          dead++;
          break;
        }
        h = (h + 1) & mask;
      }
    }
  }
  if (!dead) return n;
  size_t w = 0;
  for (size_t i = 0; i < n; i++)
    if (m[i].val) m[w++] = m[i];
  return w;
}

int json_parse(dv_arena *a, const void *p, size_t len, const json_opts *opts, json_val **out,
               json_err *err) {
  json_reader r;
  dom_ctx c = {a, NULL, 0, 0, NULL, 0, 0, NULL, 0};
  int copy = opts && (opts->flags & JSON_COPY);
  int cstr = opts && (opts->flags & JSON_CSTR);
  const char *key = NULL;
  size_t klen = 0;
  json_val *root = NULL;
  int rc = json_reader_init(&r, p, len, opts);
  if (rc) goto done;

  for (;;) {
    int ev = reader_next(&r);
    json_val *v;
    switch (ev) {
      case JSON_EV_KEY:
        klen = r.len;
        key = cstr ? arena_strndup(a, r.str, r.len) : (r.escaped || copy) ? arena_memdup(a, r.str, r.len) : r.str;
        if (!key) goto nomem;
        continue;
      case JSON_EV_STRING:
        v = json__node(a, JSON_STRING);
        if (!v) goto nomem;
        v->len = r.len;
        v->u.s = cstr ? arena_strndup(a, r.str, r.len) : (r.escaped || copy) ? arena_memdup(a, r.str, r.len) : r.str;
        if (!v->u.s) goto nomem;
        break;
      case JSON_EV_NUMBER: {
        json_num num;
        rc = json__num_canon(r.str, r.len, r.num_int, &num);
        if (rc) goto nomem;
        v = json__node(a, JSON_NUMBER);
        if (!v) goto nomem;
        v->num = (uint8_t)num.cls;
        v->len = num.len;
        v->u.s = (num.text == r.str && !copy) ? r.str : arena_memdup(a, num.text, num.len);
        if (!v->u.s) goto nomem;
        break;
      }
      case JSON_EV_TRUE:
      case JSON_EV_FALSE:
        v = json__node(a, JSON_BOOL);
        if (!v) goto nomem;
        v->b = ev == JSON_EV_TRUE;
        break;
      case JSON_EV_NULL:
        v = json__node(a, JSON_NULL);
        if (!v) goto nomem;
        break;
      case JSON_EV_OBJ_BEGIN:
      case JSON_EV_ARR_BEGIN:
        if (c.nfr == c.capfr) {
          size_t cap = c.capfr ? 2 * c.capfr : 16;
          frame *f = dv_realloc(c.fr, cap * sizeof *f);
          if (!f) goto nomem;
          c.fr = f;
          c.capfr = cap;
        }
        c.fr[c.nfr].start = c.ntmp;
        c.fr[c.nfr].key = key;
        c.fr[c.nfr].klen = klen;
        c.nfr++;
        continue;
      case JSON_EV_OBJ_END: {
        frame *f = &c.fr[--c.nfr];
        size_t cnt = c.ntmp - f->start;
        size_t n = cnt ? dedupe(&c, c.tmp + f->start, cnt) : 0;
        if (n == (size_t)-1) goto nomem;
        v = json__node(a, JSON_OBJECT);
        if (!v) goto nomem;
        if (n) {
          v->u.members = arena_alloc_align(a, n * sizeof(json_member), 8);
          if (!v->u.members) goto nomem;
          memcpy(v->u.members, c.tmp + f->start, n * sizeof(json_member));
        }
        v->len = v->cap = n;
        c.ntmp = f->start;
        key = f->key;
        klen = f->klen;
        break;
      }
      case JSON_EV_ARR_END: {
        frame *f = &c.fr[--c.nfr];
        size_t n = c.ntmp - f->start;
        v = json__node(a, JSON_ARRAY);
        if (!v) goto nomem;
        if (n) {
          v->u.items = arena_alloc_align(a, n * sizeof(json_val *), 8);
          if (!v->u.items) goto nomem;
          for (size_t i = 0; i < n; i++) v->u.items[i] = c.tmp[f->start + i].val;
        }
        v->len = v->cap = n;
        c.ntmp = f->start;
        key = f->key;
        klen = f->klen;
        break;
      }
      case JSON_EV_END:
        rc = 0;
        goto done;
      default:
        rc = ev;
        goto done;
    }
    if (c.nfr == 0) {
      root = v;
      continue;
    }
    if (c.ntmp == c.captmp) {
      size_t cap = c.captmp ? 2 * c.captmp : 64;
      json_member *t = dv_realloc(c.tmp, cap * sizeof *t);
      if (!t) goto nomem;
      c.tmp = t;
      c.captmp = cap;
    }
    c.tmp[c.ntmp].key = key;
    c.tmp[c.ntmp].klen = klen;
    c.tmp[c.ntmp].val = v;
    c.ntmp++;
  }

nomem:
  rc = DV_ENOMEM;
  if (!r.rc) fail(&r, r.p, DV_ENOMEM, "out of memory");
done:
  if (rc == 0) *out = root;
  else if (err) *err = r.err;
  dv_free(c.tmp);
  dv_free(c.fr);
  dv_free(c.htab);
  json_reader_free(&r);
  return rc;
}
