/* test_json_dom.c — the JSON layer's APIs: pull reader events and
 * zero-copy strings, json_skip, error offsets, the DOM (lookups, strings
 * with NUL, JSON_COPY), builders and editing, string escaping, the
 * streaming writer and its misuse checks, UTF-8 validation, and allocation
 * failure injection.
 *
 * Not here: the accept/reject table (test_json_conf.c) and random round
 * trips (test_json_prop.c).
 */
#include <math.h>
#include <time.h>

#include "test.h"
#include "json/json.h"
#include "util/alloc.h"

static int parse(dv_arena *a, const char *s, json_val **v) {
  return json_parse(a, s, strlen(s), NULL, v, NULL);
}

static const char *write_str(dv_buf *b, const json_val *v) {
  buf_reset(b);
  ASSERT_OK(json_write(b, v));
  return (const char *)b->p;
}

TEST(json_pull_events) {
  const char *in = "{\"a\":[1,-2.5e3,\"x\\ny\",true,false,null],\"\\u00e9\":{},\"z\":\"plain\"}";
  static const int want[] = {JSON_EV_OBJ_BEGIN, JSON_EV_KEY,    JSON_EV_ARR_BEGIN, JSON_EV_NUMBER,
                             JSON_EV_NUMBER,    JSON_EV_STRING, JSON_EV_TRUE,      JSON_EV_FALSE,
                             JSON_EV_NULL,      JSON_EV_ARR_END, JSON_EV_KEY,      JSON_EV_OBJ_BEGIN,
                             JSON_EV_OBJ_END,   JSON_EV_KEY,    JSON_EV_STRING,    JSON_EV_OBJ_END,
                             JSON_EV_END};
  json_reader r;
  ASSERT_OK(json_reader_init(&r, in, strlen(in), NULL));
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int ev = json_next(&r);
    ASSERTF(ev == want[i], "event %zu: %d, want %d", i, ev, want[i]);
    switch (i) {
      case 1: /* "a": zero-copy, points into the input */
        ASSERT(r.len == 1 && r.str == in + 2 && !r.escaped);
        break;
      case 3:
        ASSERT(r.len == 1 && r.str[0] == '1' && r.num_int);
        break;
      case 4:
        ASSERT(r.len == 6 && memcmp(r.str, "-2.5e3", 6) == 0 && !r.num_int);
        break;
      case 5: /* decoded into scratch */
        ASSERT(r.escaped && r.len == 3 && memcmp(r.str, "x\ny", 3) == 0);
        break;
      case 10:
        ASSERT(r.escaped && r.len == 2 && memcmp(r.str, "\xc3\xa9", 2) == 0);
        break;
      case 14:
        ASSERT(!r.escaped && r.len == 5 && r.str >= in && r.str < in + strlen(in));
        break;
    }
  }
  ASSERT_EQ(json_next(&r), JSON_EV_END); /* repeats */
  ASSERT_EQ(r.depth, 0);
  json_reader_free(&r);
  json_reader_free(NULL);

  /* a string with NUL */
  json_reader r2;
  ASSERT_OK(json_reader_init(&r2, "\"a\\u0000b\"", 10, NULL));
  ASSERT_EQ(json_next(&r2), JSON_EV_STRING);
  ASSERT_MEM_EQ(r2.str, r2.len, "a\0b", 3);
  ASSERT_EQ(json_next(&r2), JSON_EV_END);
  json_reader_free(&r2);
}

TEST(json_pull_skip) {
  const char *in = "{\"skip\":{\"a\":[1,{\"b\":[]}],\"c\":\"d\"},\"keep\":[7,[8]],\"s\":1}";
  json_reader r;
  ASSERT_OK(json_reader_init(&r, in, strlen(in), NULL));
  ASSERT_EQ(json_next(&r), JSON_EV_OBJ_BEGIN);
  ASSERT_EQ(json_next(&r), JSON_EV_KEY);
  ASSERT_OK(json_skip(&r)); /* the value of "skip" */
  ASSERT_EQ(json_next(&r), JSON_EV_KEY);
  ASSERT_MEM_EQ(r.str, r.len, "keep", 4);
  ASSERT_EQ(json_next(&r), JSON_EV_ARR_BEGIN);
  ASSERT_EQ(json_next(&r), JSON_EV_NUMBER);
  ASSERT_EQ(json_next(&r), JSON_EV_ARR_BEGIN);
  ASSERT_OK(json_skip(&r)); /* the rest of [8] */
  ASSERT_EQ(json_next(&r), JSON_EV_ARR_END);
  ASSERT_EQ(json_next(&r), JSON_EV_KEY);
  ASSERT_EQ(json_next(&r), JSON_EV_NUMBER);
  ASSERT_OK(json_skip(&r)); /* after a scalar: nothing */
  ASSERT_EQ(json_next(&r), JSON_EV_OBJ_END);
  ASSERT_EQ(json_next(&r), JSON_EV_END);
  json_reader_free(&r);

  /* skipping the whole document, and an error inside the skipped part */
  ASSERT_OK(json_reader_init(&r, "[1,[2,]]", 8, NULL));
  ASSERT_EQ(json_skip(&r), DV_EJSON);
  ASSERT_EQ(r.err.offset, 6);
  ASSERT_EQ(json_next(&r), DV_EJSON); /* sticky */
  json_reader_free(&r);
}

TEST(json_errors) {
  static const struct {
    const char *in;
    size_t off;
    const char *msg;
  } t[] = {
      {"[1,]", 3, "trailing comma"},
      {"{\"a\":1,}", 7, "trailing comma"},
      {"01", 0, "leading zero in number"},
      {"", 0, "empty input"},
      {"[1 2]", 3, "expected ',' or ']'"},
      {"{\"a\" 1}", 5, "expected ':'"},
      {"\"\\ud800\"", 1, "lone surrogate in \\u escape"},
      {"\"ab\\q\"", 3, "invalid escape"},
      {"\"ab\x01\"", 3, "control character in string"},
      {"  \"ab\xc0\x80\"", 5, "invalid UTF-8"},
      {"[1] x", 4, "unexpected data after the value"},
      {"[1", 2, "unexpected end of input"},
      {"\"abc", 4, "unterminated string"},
      {"nul", 0, "invalid literal"},
      {"1.", 2, "expected a digit after '.'"},
      {"1e+", 3, "expected a digit in the exponent"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    dv_arena a = DV_ARENA_INIT;
    json_val *v = (json_val *)&a; /* must stay untouched */
    json_err e = {999, NULL};
    int rc = json_parse(&a, t[i].in, strlen(t[i].in), NULL, &v, &e);
    ASSERTF(rc == DV_EJSON, "%s: rc %d", t[i].in, rc);
    ASSERT(v == (json_val *)&a);
    ASSERTF(e.offset == t[i].off && strcmp(e.msg, t[i].msg) == 0, "%s: %zu %s, want %zu %s",
            t[i].in, e.offset, e.msg, t[i].off, t[i].msg);
    arena_free(&a);
  }
  /* the HTTP layer maps the code, as CouchDB answers */
  ASSERT_EQ(dv_err_http(DV_EJSON), 400);
  ASSERT_STR_EQ(dv_err_couch(DV_EJSON), "bad_request");
  ASSERT_STR_EQ(dv_strerror(DV_EJSON), "invalid UTF-8 JSON");
  /* NULL input is empty input */
  dv_arena a = DV_ARENA_INIT;
  json_val *v;
  ASSERT_EQ(json_parse(&a, NULL, 0, NULL, &v, NULL), DV_EJSON);
  /* max_len: the pull reader too */
  json_opts o = {0, 3, 0};
  json_reader r;
  ASSERT_EQ(json_reader_init(&r, "[1,2]", 5, &o), DV_EJSON_SIZE);
  ASSERT_EQ(json_next(&r), DV_EJSON_SIZE);
  json_reader_free(&r);
  arena_free(&a);
}

TEST(json_dom_access) {
  dv_arena a = DV_ARENA_INIT;
  dv_buf b = DV_BUF_INIT;
  json_val *v;
  const char *in = "{\"_id\":\"doc\",\"n\":[1,2.50,\"x\"],\"k\\u0000\":true,\"o\":{\"p\":null},"
                   "\"s\":\"a\\u0000b\"}";
  ASSERT_OK(parse(&a, in, &v));
  ASSERT_EQ(v->type, JSON_OBJECT);
  ASSERT_EQ(v->len, 5);
  json_val *id = json_obj_getz(v, "_id");
  ASSERT(id && id->type == JSON_STRING);
  ASSERT_MEM_EQ(id->u.s, id->len, "doc", 3);
  ASSERT(id->u.s > in && id->u.s < in + strlen(in)); /* zero-copy */
  json_val *n = json_obj_getz(v, "n");
  ASSERT(n && n->type == JSON_ARRAY && n->len == 3);
  ASSERT_EQ(json_arr_get(n, 0)->num, JSON_NUM_INT64);
  ASSERT_MEM_EQ(json_arr_get(n, 1)->u.s, json_arr_get(n, 1)->len, "2.5", 3);
  ASSERT(json_arr_get(n, 3) == NULL);
  ASSERT(json_arr_get(v, 0) == NULL);
  ASSERT(json_obj_getz(n, "x") == NULL);
  ASSERT(json_obj_get(v, "k", 1) == NULL);
  json_val *k = json_obj_get(v, "k\0", 2);
  ASSERT(k && k->type == JSON_BOOL && k->b == 1);
  ASSERT_EQ(json_obj_getz(json_obj_getz(v, "o"), "p")->type, JSON_NULL);
  json_val *s = json_obj_getz(v, "s");
  ASSERT_MEM_EQ(s->u.s, s->len, "a\0b", 3);
  ASSERT_STR_EQ(write_str(&b, v),
                "{\"_id\":\"doc\",\"n\":[1,2.5,\"x\"],\"k\\u0000\":true,\"o\":{\"p\":null},"
                "\"s\":\"a\\u0000b\"}");

  /* JSON_COPY: the DOM survives the input */
  char *mut = strdup("{\"key\":\"value\",\"num\":12,\"f\":1.5}");
  json_opts o = {0, 0, JSON_COPY};
  json_val *c;
  ASSERT_OK(json_parse(&a, mut, strlen(mut), &o, &c, NULL));
  memset(mut, 'X', strlen(mut));
  free(mut);
  ASSERT_STR_EQ(write_str(&b, c), "{\"key\":\"value\",\"num\":12,\"f\":1.5}");
  buf_free(&b);
  arena_free(&a);
}

TEST(json_dom_build) {
  dv_arena a = DV_ARENA_INIT;
  dv_buf b = DV_BUF_INIT;
  json_val *o = json_new_object(&a);
  ASSERT_OK(json_obj_setz(&a, o, "_id", json_new_stringz(&a, "x")));
  ASSERT_OK(json_obj_setz(&a, o, "_rev", json_new_stringz(&a, "1-abc")));
  ASSERT_OK(json_obj_setz(&a, o, "i", json_new_int(&a, INT64_MIN)));
  ASSERT_OK(json_obj_setz(&a, o, "u", json_new_uint(&a, UINT64_MAX)));
  ASSERT_OK(json_obj_setz(&a, o, "d", json_new_double(&a, 0.1)));
  ASSERT_OK(json_obj_setz(&a, o, "z", json_new_double(&a, -0.0)));
  ASSERT_OK(json_obj_setz(&a, o, "n", json_new_number(&a, "1E2", 3)));
  ASSERT_OK(json_obj_setz(&a, o, "t", json_new_bool(&a, 7)));
  ASSERT_OK(json_obj_setz(&a, o, "nul", json_new_null(&a)));
  json_val *arr = json_new_array(&a);
  for (int i = 0; i < 10; i++) ASSERT_OK(json_arr_push(&a, arr, json_new_int(&a, i)));
  ASSERT_OK(json_obj_setz(&a, o, "arr", arr));
  ASSERT_OK(json_obj_setz(&a, o, "empty", json_new_object(&a)));
  ASSERT_OK(json_obj_set(&a, o, "k\0", 2, json_new_string(&a, "\0", 1)));
  ASSERT_STR_EQ(write_str(&b, o),
                "{\"_id\":\"x\",\"_rev\":\"1-abc\",\"i\":-9223372036854775808,"
                "\"u\":18446744073709551615,\"d\":0.1,\"z\":-0.0,\"n\":100.0,\"t\":true,"
                "\"nul\":null,\"arr\":[0,1,2,3,4,5,6,7,8,9],\"empty\":{},\"k\\u0000\":\"\\u0000\"}");
  ASSERT_EQ(json_obj_getz(o, "u")->num, JSON_NUM_UINT64);
  ASSERT_EQ(json_obj_getz(o, "i")->num, JSON_NUM_INT64);
  ASSERT_EQ(json_obj_getz(o, "d")->num, JSON_NUM_DOUBLE);

  /* set replaces in place; delete keeps the order of the rest */
  ASSERT_OK(json_obj_setz(&a, o, "_rev", json_new_stringz(&a, "2-def")));
  ASSERT_EQ(json_obj_del(o, "i", 1), 1);
  ASSERT_EQ(json_obj_del(o, "i", 1), 0);
  ASSERT_EQ(json_obj_del(o, "u", 1), 1);
  ASSERT_EQ(json_obj_del(o, "k\0", 2), 1);
  ASSERT_EQ(json_obj_del(arr, "x", 1), 0);
  ASSERT_STR_EQ(write_str(&b, o),
                "{\"_id\":\"x\",\"_rev\":\"2-def\",\"d\":0.1,\"z\":-0.0,\"n\":100.0,\"t\":true,"
                "\"nul\":null,\"arr\":[0,1,2,3,4,5,6,7,8,9],\"empty\":{}}");

  /* errors: NULL values propagate as ENOMEM, wrong types are EINVAL */
  ASSERT(json_new_double(&a, NAN) == NULL);
  ASSERT(json_new_double(&a, INFINITY) == NULL);
  ASSERT(json_new_number(&a, "01", 2) == NULL);
  ASSERT(json_new_number(&a, "", 0) == NULL);
  ASSERT_EQ(json_obj_setz(&a, o, "x", NULL), DV_ENOMEM);
  ASSERT_EQ(json_arr_push(&a, arr, NULL), DV_ENOMEM);
  ASSERT_EQ(json_obj_setz(&a, arr, "x", json_new_null(&a)), DV_EINVAL);
  ASSERT_EQ(json_arr_push(&a, o, json_new_null(&a)), DV_EINVAL);

  /* editing a parsed document (exact-size vectors grow by copying) */
  json_val *doc;
  ASSERT_OK(parse(&a, "{\"_id\":\"a\",\"_rev\":\"1-x\",\"v\":[1],\"_attachments\":{}}", &doc));
  ASSERT_OK(json_obj_setz(&a, doc, "_rev", json_new_stringz(&a, "2-y")));
  ASSERT_EQ(json_obj_del(doc, "_attachments", 12), 1);
  ASSERT_OK(json_arr_push(&a, json_obj_getz(doc, "v"), json_new_int(&a, 2)));
  ASSERT_OK(json_obj_setz(&a, doc, "new", json_new_bool(&a, 0)));
  ASSERT_STR_EQ(write_str(&b, doc), "{\"_id\":\"a\",\"_rev\":\"2-y\",\"v\":[1,2],\"new\":false}");

  /* json_dup shares nothing */
  dv_arena a2 = DV_ARENA_INIT;
  json_val *copy = json_dup(&a2, doc);
  ASSERT(copy != NULL);
  const char *before = strdup(write_str(&b, doc));
  ASSERT_OK(json_obj_setz(&a, doc, "_id", json_new_stringz(&a, "changed")));
  arena_free(&a); /* the copy must not point into a */
  ASSERT_STR_EQ(write_str(&b, copy), before);
  free((void *)before);
  ASSERT(json_dup(&a2, NULL) == NULL);
  arena_free(&a2);
  buf_free(&b);
}

TEST(json_escape_output) {
  dv_buf b = DV_BUF_INIT;
  char all[32];
  for (int i = 0; i < 32; i++) all[i] = (char)i;
  json_escape(&b, all, 32);
  ASSERT_STR_EQ((char *)b.p,
                "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r"
                "\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018"
                "\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\"");
  buf_reset(&b);
  json_escape(&b, "q\"b\\s/d\x7f", 8);
  ASSERT_STR_EQ((char *)b.p, "\"q\\\"b\\\\s/d\x7f\"");
  buf_reset(&b);
  /* non-ASCII stays raw; invalid bytes become U+FFFD */
  json_escape(&b, "\xc3\xa9\xf0\x9f\x98\x80\xff" "a\xed\xa0\x80" "b\xc3", 13);
  ASSERT_STR_EQ((char *)b.p,
                "\"\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbd" "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                "b\xef\xbf\xbd\"");
  buf_reset(&b);
  json_escape(&b, NULL, 0);
  ASSERT_STR_EQ((char *)b.p, "\"\"");
  /* a long string of nothing but escapes grows the buffer as it goes */
  buf_reset(&b);
  char *ctl = malloc(10000);
  memset(ctl, 1, 10000);
  json_escape(&b, ctl, 10000);
  ASSERT_EQ(b.len, 60002);
  ASSERT_MEM_EQ(b.p + 59995, 7, "\\u0001\"", 7);
  ASSERT_EQ(b.p[b.len], 0);
  free(ctl);
  buf_free(&b);
}

TEST(json_stream_writer) {
  dv_buf b = DV_BUF_INIT;
  json_w w;
  json_w_init(&w, &b);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "ok");
  json_w_bool(&w, 1);
  json_w_keyz(&w, "rows");
  json_w_arr_begin(&w);
  json_w_int(&w, -5);
  json_w_uint(&w, UINT64_MAX);
  json_w_double(&w, 2.5);
  json_w_double(&w, 3.0);
  json_w_num(&w, "1.50", 4);
  json_w_num(&w, "123456789012345678901234567890", 30);
  json_w_null(&w);
  json_w_strz(&w, "s\"");
  json_w_raw(&w, "{\"spliced\":[1,2]}", 17);
  json_w_obj_begin(&w);
  json_w_obj_end(&w);
  json_w_arr_begin(&w);
  json_w_arr_end(&w);
  json_w_arr_end(&w);
  json_w_key(&w, "k\0", 2);
  dv_arena a = DV_ARENA_INIT;
  json_val *v;
  ASSERT_OK(parse(&a, "{\"x\":[true]}", &v));
  json_w_val(&w, v);
  json_w_obj_end(&w);
  ASSERT_OK(json_w_finish(&w));
  ASSERT_STR_EQ((char *)b.p,
                "{\"ok\":true,\"rows\":[-5,18446744073709551615,2.5,3.0,1.5,"
                "123456789012345678901234567890,null,\"s\\\"\",{\"spliced\":[1,2]},{},[]],"
                "\"k\\u0000\":{\"x\":[true]}}");
  ASSERT_EQ(b.p[b.len], 0);

  /* top-level values follow each other without separators */
  buf_reset(&b);
  json_w_init(&w, &b);
  json_w_int(&w, 1);
  json_w_strz(&w, "a");
  ASSERT_OK(json_w_finish(&w));
  ASSERT_STR_EQ((char *)b.p, "1\"a\"");

  /* misuse */
  struct {
    int what;
  } cases[] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    buf_reset(&b);
    json_w_init(&w, &b);
    switch (cases[i].what) {
      case 0: json_w_keyz(&w, "top"); break;                    /* key at top level */
      case 1: json_w_arr_begin(&w); json_w_keyz(&w, "k"); break; /* key in an array */
      case 2: json_w_obj_begin(&w); json_w_int(&w, 1); break;   /* value without key */
      case 3: json_w_obj_begin(&w); json_w_arr_end(&w); break;  /* wrong closer */
      case 4: json_w_arr_end(&w); break;                        /* nothing open */
      case 5: json_w_obj_begin(&w); break;                      /* unclosed */
      case 6: json_w_obj_begin(&w); json_w_keyz(&w, "k"); json_w_obj_end(&w); break;
      case 7: json_w_double(&w, NAN); break;
      case 8: json_w_num(&w, "1.", 2); break;
    }
    ASSERTF(json_w_finish(&w) == DV_EINVAL, "misuse case %zu accepted", i);
  }
  /* a failed writer stays failed */
  buf_reset(&b);
  json_w_init(&w, &b);
  json_w_keyz(&w, "bad");
  json_w_int(&w, 1);
  ASSERT_EQ(json_w_finish(&w), DV_EINVAL);
  ASSERT_EQ(b.len, 0);
  /* depth ceiling */
  buf_reset(&b);
  json_w_init(&w, &b);
  for (int i = 0; i <= JSON_DEPTH_LIMIT; i++) json_w_arr_begin(&w);
  ASSERT_EQ(json_w_finish(&w), DV_EINVAL);
  buf_free(&b);
  arena_free(&a);
}

TEST(json_utf8) {
  size_t bad = 99;
  ASSERT_OK(json_utf8_check("", 0, &bad));
  ASSERT_OK(json_utf8_check(NULL, 0, NULL));
  ASSERT_OK(json_utf8_check("plain ascii text longer than eight", 34, &bad));
  ASSERT_OK(json_utf8_check("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", 13, &bad));
  ASSERT_OK(json_utf8_check("a\0b", 3, &bad)); /* NUL is valid UTF-8 */
  static const struct {
    const char *s;
    size_t n, off;
  } t[] = {
      {"abcdefghij\x80", 11, 10},  {"\xc0\x80", 2, 0},         {"ab\xed\xa0\x80", 5, 2},
      {"\xf4\x90\x80\x80", 4, 0},  {"x\xe2\x82", 3, 1},         {"\xf8\x88\x80\x80\x80", 5, 0},
      {"ok\xc3\xa9\xff", 5, 4},    {"\xe0\x9f\xbf", 3, 0},      {"\xf0\x8f\xbf\xbf", 4, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    ASSERT_EQ(json_utf8_check(t[i].s, t[i].n, &bad), DV_EJSON);
    ASSERTF(bad == t[i].off, "case %zu: offset %zu, want %zu", i, bad, t[i].off);
  }
}

/* Every allocation the DOM parser makes can fail: the result is then
 * DV_ENOMEM and nothing leaks (ASan's leak check runs on exit). */
TEST(json_alloc_fail) {
  const char *in = "{\"a\":[1,2,{\"b\\n\":\"c\\u00e9\",\"d\":[[],{}]}],\"e\":\"x\\\"y\",\"a\":1.50,"
                   "\"long\":\"0123456789012345678901234567890123456789\"}";
  dv_buf want = DV_BUF_INIT, got = DV_BUF_INIT;
  {
    dv_arena a = DV_ARENA_INIT;
    json_val *v;
    ASSERT_OK(parse(&a, in, &v));
    ASSERT_OK(json_write(&want, v));
    arena_free(&a);
  }
  int failures = 0;
  for (long k = 0; k < 200; k++) {
    dv_arena a = DV_ARENA_INIT;
    arena_init(&a, 64); /* small chunks: many allocations */
    json_val *v = NULL;
    json_err e;
    dv_alloc_fail_after(k);
    int rc = json_parse(&a, in, strlen(in), NULL, &v, &e);
    dv_alloc_fail_after(-1);
    if (rc) {
      ASSERT_EQ(rc, DV_ENOMEM);
      ASSERT_STR_EQ(e.msg, "out of memory");
      failures++;
    } else {
      buf_reset(&got);
      ASSERT_OK(json_write(&got, v));
      ASSERT_MEM_EQ(got.p, got.len, want.p, want.len);
    }
    arena_free(&a);
  }
  ASSERT(failures > 5);
  /* the pull reader's scratch buffer */
  json_reader r;
  ASSERT_OK(json_reader_init(&r, "\"a\\nb\"", 6, NULL));
  dv_alloc_fail_after(0);
  ASSERT_EQ(json_next(&r), DV_ENOMEM);
  dv_alloc_fail_after(-1);
  json_reader_free(&r);
  /* the writer: a failed growth is reported once at the end */
  dv_buf small = DV_BUF_INIT;
  json_w w;
  json_w_init(&w, &small);
  dv_alloc_fail_after(0);
  json_w_arr_begin(&w);
  json_w_strz(&w, "x");
  json_w_arr_end(&w);
  dv_alloc_fail_after(-1);
  ASSERT_EQ(json_w_finish(&w), DV_ENOMEM);
  buf_free(&small);
  buf_free(&want);
  buf_free(&got);
}

/* json_obj_set on large objects (issue 24: copying a 100,000-key document
 * member by member was quadratic, 9 s): set, replace, get and delete stay
 * right across the index's growth and on objects the parser made, and
 * sets stay linear: 200,000 take less than 40 times what 20,000 take (10×
 * when linear, 100× when quadratic; a ratio in one process, the best of
 * three each, so neither a slow machine nor a sanitizer fails it). */
static double sets_ms(dv_arena *a, size_t n, json_val **out) {
  double best = 1e300;
  for (int round = 0; round < 3; round++) {
    arena_reset(a);
    json_val *o = json_new_object(a);
    char k[32];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < n; i++) {
      int kn = snprintf(k, sizeof k, "k%zu", i);
      ASSERT_OK(json_obj_set(a, o, k, (size_t)kn, json_new_int(a, (int64_t)i)));
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (ms < best) best = ms;
    *out = o;
  }
  return best;
}

TEST(json_dom_big_object) {
  dv_arena a;
  arena_init(&a, 0);
  json_val *o;
  char k[32];
  const size_t n = 200000;
  double small = sets_ms(&a, n / 10, &o), big = sets_ms(&a, n, &o);
  printf("%zu sets: %.1f ms; %zu sets: %.1f ms (%.1f×)\n", n / 10, small, n, big, big / (small > 0.01 ? small : 0.01));
  ASSERTF(big < 40 * (small > 0.5 ? small : 0.5), "%zu sets took %.0f ms, %zu took %.1f ms", n, big, n / 10, small);
  ASSERT_EQ(o->len, n);
  ASSERT_OK(json_obj_set(&a, o, "k7", 2, json_new_int(&a, -7))); /* replace keeps the place */
  ASSERT_EQ(o->len, n);
  ASSERT(o->u.members[7].val->u.s[0] == '-');
  ASSERT_EQ(json_obj_del(o, "k3", 2), 1);
  ASSERT_EQ(json_obj_del(o, "k3", 2), 0);
  ASSERT_EQ(o->len, n - 1);
  ASSERT(json_obj_getz(o, "k3") == NULL);
  for (size_t i = 0; i < n; i += 997) {
    if (i == 3) continue;
    int kn = snprintf(k, sizeof k, "k%zu", i);
    json_val *v = json_obj_get(o, k, (size_t)kn);
    ASSERTF(v && v->type == JSON_NUMBER, "k%zu missing", i);
  }
  ASSERT_OK(json_obj_set(&a, o, "", 0, json_new_null(&a))); /* the empty key too */
  ASSERT(json_obj_get(o, "", 0) && o->len == n);
  /* a parsed object (no index yet) gains one when it grows through set */
  dv_buf b;
  buf_init(&b);
  buf_puts(&b, "{");
  for (int i = 0; i < 100; i++) {
    char e[32];
    snprintf(e, sizeof e, "%s\"p%d\":%d", i ? "," : "", i, i);
    buf_puts(&b, e);
  }
  buf_puts(&b, "}");
  json_val *p;
  ASSERT_OK(json_parse(&a, (const char *)b.p, b.len, NULL, &p, NULL));
  ASSERT_OK(json_obj_set(&a, p, "p50", 3, json_new_int(&a, 5000)));
  ASSERT_EQ(p->len, 100);
  ASSERT_OK(json_obj_set(&a, p, "new", 3, json_new_int(&a, 1)));
  ASSERT_EQ(p->len, 101);
  ASSERT(p->hashed);
  ASSERT(json_obj_getz(p, "p99") && json_obj_getz(p, "new") == p->u.members[100].val);
  const json_val *p50 = json_obj_getz(p, "p50"); /* number text: not NUL-terminated */
  ASSERT(p50->len == 4 && !memcmp(p50->u.s, "5000", 4));
  dv_buf out; /* not b: the parsed strings point into it */
  buf_init(&out);
  const char *w = write_str(&out, p);
  ASSERT(strstr(w, "\"p49\":49,\"p50\":5000,\"p51\":51") && strstr(w, "\"p99\":99,\"new\":1}"));
  buf_free(&out);
  buf_free(&b);
  arena_free(&a);
}
