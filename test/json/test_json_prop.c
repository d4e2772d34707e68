/* test_json_prop.c — property tests: random DOMs (unicode up to the astral
 * planes, control characters, big integers, doubles, empty containers,
 * deep nesting) written, parsed and written again must give identical
 * text and an equal tree; the pull reader's events, replayed through the
 * streaming writer, must reproduce the text. Also runs the libFuzzer
 * target briefly (json_fuzz_smoke).
 *
 * Not here: fixed cases (test_json_conf.c, test_json_dom.c).
 */
#include <math.h>
#include <sys/stat.h>

#include "test.h"
#include "json/json.h"

static uint64_t rng;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static size_t put_cp(char *o, uint32_t cp) {
  if (cp < 0x80) { o[0] = (char)cp; return 1; }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | cp >> 6);
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | cp >> 12);
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | cp >> 18);
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* A random valid UTF-8 string of up to max code points. */
static size_t rand_str(char *o, size_t max) {
  size_t n = 0, k = rnd() % (max + 1);
  for (size_t i = 0; i < k; i++) {
    uint32_t cp;
    switch (rnd() % 8) {
      case 0: cp = (uint32_t)(rnd() % 0x20); break;                 /* control, NUL */
      case 1: cp = "\"\\/"[rnd() % 3]; break;
      case 2: cp = 0x80 + (uint32_t)(rnd() % (0x800 - 0x80)); break; /* 2 bytes */
      case 3:                                                       /* 3 bytes, no surrogates */
        do cp = 0x800 + (uint32_t)(rnd() % (0x10000 - 0x800));
        while (cp >= 0xD800 && cp <= 0xDFFF);
        break;
      case 4: cp = 0x10000 + (uint32_t)(rnd() % (0x110000 - 0x10000)); break; /* astral */
      default: cp = 0x20 + (uint32_t)(rnd() % 0x5F); break;               /* printable */
    }
    n += put_cp(o + n, cp);
  }
  return n;
}

static json_val *gen(dv_arena *a, int depth) {
  char s[512];
  /* documents are objects; containers thin out with depth */
  int kind = depth == 0 ? 11 : (int)(rnd() % (depth >= 6 ? 9 : depth < 3 ? 14 : 12));
  switch (kind) {
    case 0: return json_new_null(a);
    case 1: return json_new_bool(a, (int)(rnd() & 1));
    case 2: return json_new_int(a, (int64_t)rnd() >> (rnd() % 64));
    case 3: return json_new_uint(a, rnd());
    case 4: { /* a big integer */
      size_t n = 0, nd = 1 + rnd() % 60;
      if (rnd() & 1) s[n++] = '-';
      s[n++] = (char)('1' + rnd() % 9);
      for (size_t i = 1; i < nd; i++) s[n++] = (char)('0' + rnd() % 10);
      return json_new_number(a, s, n);
    }
    case 5: { /* any finite double */
      double d;
      do {
        uint64_t bits = rnd();
        memcpy(&d, &bits, 8);
      } while (!isfinite(d));
      return json_new_double(a, d);
    }
    case 6: { /* decimal text, canonicalised by the builder */
      int n = snprintf(s, sizeof s, "%s%llu.%llue%d", rnd() & 1 ? "-" : "",
                       (unsigned long long)(rnd() % 100000), (unsigned long long)(rnd() % 1000),
                       (int)(rnd() % 700) - 350);
      return json_new_number(a, s, (size_t)n);
    }
    case 7: case 8: {
      size_t n = rand_str(s, 24);
      return json_new_string(a, s, n);
    }
    case 9: case 12: {
      json_val *arr = json_new_array(a);
      for (int i = (int)(rnd() % 6); i > 0; i--)
        if (json_arr_push(a, arr, gen(a, depth + 1))) return NULL;
      return arr;
    }
    default: {
      json_val *o = json_new_object(a);
      for (int i = (int)(rnd() % (depth == 0 ? 14 : 6)); i > 0; i--) {
        size_t n = rand_str(s, 6);
        if (json_obj_set(a, o, s, n, gen(a, depth + 1))) return NULL;
      }
      return o;
    }
  }
}

/* A chain of n containers around a random leaf. */
static json_val *chain(dv_arena *a, int n) {
  json_val *v = gen(a, 100);
  for (int i = 0; i < n; i++) {
    json_val *c;
    if (rnd() & 1) {
      c = json_new_array(a);
      ASSERT_OK(json_arr_push(a, c, v));
    } else {
      c = json_new_object(a);
      ASSERT_OK(json_obj_setz(a, c, i & 1 ? "k" : "", v));
    }
    v = c;
  }
  return v;
}

static int equal(const json_val *x, const json_val *y) {
  if (x->type != y->type) return 0;
  switch (x->type) {
    case JSON_NULL: return 1;
    case JSON_BOOL: return x->b == y->b;
    case JSON_NUMBER:
      return x->num == y->num && x->len == y->len && memcmp(x->u.s, y->u.s, x->len) == 0;
    case JSON_STRING: return x->len == y->len && memcmp(x->u.s, y->u.s, x->len) == 0;
    case JSON_ARRAY:
      if (x->len != y->len) return 0;
      for (size_t i = 0; i < x->len; i++)
        if (!equal(x->u.items[i], y->u.items[i])) return 0;
      return 1;
    default:
      if (x->len != y->len) return 0;
      for (size_t i = 0; i < x->len; i++) {
        const json_member *m = &x->u.members[i], *n = &y->u.members[i];
        if (m->klen != n->klen || memcmp(m->key, n->key, m->klen) || !equal(m->val, n->val))
          return 0;
      }
      return 1;
  }
}

/* Replay the pull reader's events through the streaming writer. */
static void replay(const dv_buf *in, dv_buf *out) {
  json_reader r;
  json_w w;
  ASSERT_OK(json_reader_init(&r, in->p, in->len, NULL));
  json_w_init(&w, out);
  int ev;
  while ((ev = json_next(&r)) > 0) {
    switch (ev) {
      case JSON_EV_OBJ_BEGIN: json_w_obj_begin(&w); break;
      case JSON_EV_OBJ_END: json_w_obj_end(&w); break;
      case JSON_EV_ARR_BEGIN: json_w_arr_begin(&w); break;
      case JSON_EV_ARR_END: json_w_arr_end(&w); break;
      case JSON_EV_KEY: json_w_key(&w, r.str, r.len); break;
      case JSON_EV_STRING: json_w_str(&w, r.str, r.len); break;
      case JSON_EV_NUMBER: json_w_num(&w, r.str, r.len); break;
      case JSON_EV_TRUE: json_w_bool(&w, 1); break;
      case JSON_EV_FALSE: json_w_bool(&w, 0); break;
      case JSON_EV_NULL: json_w_null(&w); break;
    }
  }
  ASSERT_EQ(ev, 0);
  ASSERT_OK(json_w_finish(&w));
  json_reader_free(&r);
}

static size_t total_bytes;

static void round_trip(dv_arena *a, const json_val *v, long iter) {
  dv_buf s1 = DV_BUF_INIT, s2 = DV_BUF_INIT, s3 = DV_BUF_INIT;
  ASSERT_OK(json_write(&s1, v));
  total_bytes += s1.len;
  ASSERT_OK(json_utf8_check(s1.p, s1.len, NULL));
  json_val *v2;
  json_err e;
  json_opts o = {JSON_DEPTH_LIMIT, 0, 0};
  int rc = json_parse(a, s1.p, s1.len, &o, &v2, &e);
  ASSERTF(rc == 0, "iteration %ld: output does not parse (%s at %zu): %.200s", iter, e.msg,
          e.offset, (char *)s1.p);
  ASSERT_OK(json_write(&s2, v2));
  ASSERTF(s1.len == s2.len && memcmp(s1.p, s2.p, s1.len) == 0,
          "iteration %ld: second write differs\n  %.300s\n  %.300s", iter, (char *)s1.p,
          (char *)s2.p);
  ASSERTF(equal(v, v2), "iteration %ld: trees differ: %.300s", iter, (char *)s1.p);
  if (s1.len < 100000) {
    replay(&s1, &s3);
    ASSERTF(s1.len == s3.len && memcmp(s1.p, s3.p, s1.len) == 0,
            "iteration %ld: replay differs\n  %.300s\n  %.300s", iter, (char *)s1.p,
            (char *)s3.p);
  }
  buf_free(&s1);
  buf_free(&s2);
  buf_free(&s3);
}

TEST(json_prop_roundtrip) {
  rng = 0x9E3779B97F4A7C15ull;
  long n = 0;
  for (long i = 0; i < 20000; i++) {
    dv_arena a = DV_ARENA_INIT;
    json_val *v = gen(&a, 0);
    ASSERT(v != NULL);
    round_trip(&a, v, i);
    arena_free(&a);
    n++;
  }
  /* deep nesting, up to just under the default limit */
  for (long i = 0; i < 20; i++) {
    dv_arena a = DV_ARENA_INIT;
    json_val *v = chain(&a, 100 + (int)(rnd() % (JSON_DEFAULT_DEPTH - 100)));
    round_trip(&a, v, 100000 + i);
    arena_free(&a);
    n++;
  }
  printf("%ld random documents round-tripped, %zu bytes of JSON\n", n, total_bytes);
}

TEST(json_fuzz_smoke) { test_fuzz_smoke("fuzz_json"); }
