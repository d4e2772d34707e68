/* test_vreduce.c — the built-in reduces (src/index/vreduce.c) against
 * CouchDB 3.4's couch_query_servers.erl: tables of inputs and the answers
 * and error texts CouchDB gives (each traced through its clauses by hand;
 * the comments name them), Erlang's io_lib layouts inside the texts, the
 * reduce_limit check's sizes, the sketch's accuracy, and the property the
 * view tree relies on: reduce(all rows) is byte-equal to any nesting of
 * rereduces over any chunking of them.
 */
#include <math.h>
#include <stdlib.h>

#include "idxt.h"
#include "index/vreduce.h"
#include "test.h"
#include "util/alloc.h"

#define J idxt_json

/* The reason of _sum's error object, as JSON string content. */
#define SUMERR                                                                                              \
  "The _sum function requires that map values be numbers, arrays of numbers, or objects. Objects cannot be " \
  "mixed with other data structures. Objects can be arbitrarily nested, provided that the values for all "  \
  "fields are themselves numbers, arrays of numbers, or objects."
#define SUMERR_OBJ(cause) "{\"error\":\"builtin_reduce_error\",\"reason\":\"" SUMERR "\",\"caused_by\":" cause "}"
#define STATERR "The _stats function requires that map values be numbers or arrays of numbers, not '"

/* Rows whose values are the elements of the JSON array vals (' for "),
 * keys null and ids "id". */
static vr_row *mk_rows(dv_arena *a, const char *vals, size_t *n) {
  json_val *v = J(a, vals);
  ASSERT(v->type == JSON_ARRAY);
  vr_row *r = arena_alloc(a, (v->len + 1) * sizeof *r);
  for (size_t i = 0; i < v->len; i++) r[i] = (vr_row){NULL, v->u.items[i], "id", 2};
  *n = v->len;
  return r;
}

/* The answer of reduce + final over vals, NUL-terminated, in the arena. */
static const char *answer(dv_arena *a, vr_kind k, const char *vals) {
  size_t n;
  vr_row *r = mk_rows(a, vals, &n);
  dv_buf st = DV_BUF_INIT, out = DV_BUF_INIT;
  vr_err e = {0};
  int rc = vr_reduce(k, r, n, a, &st, &e);
  ASSERTF(rc == 0, "reduce %s: rc %d (%s)", vals, rc, e.reason ? e.reason : "");
  ASSERT_OK(vr_final(k, st.p, st.len, &out));
  const char *s = arena_strndup(a, (const char *)out.p, out.len);
  buf_free(&st);
  buf_free(&out);
  return s;
}

/* The failure of reduce over vals: DV_EVIEW_BUILTIN and its vr_err. */
static vr_err failure(dv_arena *a, vr_kind k, const char *vals) {
  size_t n;
  vr_row *r = mk_rows(a, vals, &n);
  dv_buf st = DV_BUF_INIT;
  buf_puts(&st, "keep");
  vr_err e = {0};
  int rc = vr_reduce(k, r, n, a, &st, &e);
  ASSERTF(rc == DV_EVIEW_BUILTIN, "reduce %s: rc %d, state %s", vals, rc, (const char *)st.p);
  ASSERT_MEM_EQ(st.p, st.len, "keep", 4); /* out untouched on failure */
  ASSERT_STR_EQ(e.error, "builtin_reduce_error");
  ASSERT(e.reason != NULL);
  buf_free(&st);
  return e;
}

/* Text with ' for ". */
static const char *q(dv_arena *a, const char *s) {
  char *t = arena_strndup(a, s, strlen(s));
  for (char *p = t; *p; p++)
    if (*p == '\'') *p = '"';
  return t;
}

TEST(vreduce_kind_of) {
  static const struct {
    const char *src;
    vr_kind k;
  } t[] = {
      {"_sum", VR_SUM},          {"_summary", VR_SUM},  {"_sum\n", VR_SUM},     {"_count", VR_COUNT},
      {"_count ", VR_COUNT},     {"_stats", VR_STATS},  {"_statsfoo", VR_STATS}, {"_approx_count_distinct", VR_APPROX},
      {"_approx_count_distinctX", VR_APPROX},           {"_approx_count", VR_UNKNOWN},
      {"_su", VR_UNKNOWN},       {"_", VR_UNKNOWN},     {"_top_3", VR_UNKNOWN}, {"_first", VR_UNKNOWN},
      {"_SUM", VR_UNKNOWN},      {" _sum", VR_JS},      {"\n_count", VR_JS},    {"", VR_JS},
      {"function(k, v) { return sum(v); }", VR_JS},     {"sum", VR_JS},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    ASSERTF(vr_kind_of(t[i].src, strlen(t[i].src)) == t[i].k, "%s: %d", t[i].src, vr_kind_of(t[i].src, strlen(t[i].src)));
  ASSERT_EQ(vr_kind_of(NULL, 0), VR_JS);
  ASSERT_EQ(vr_kind_of("_sum", 3), VR_UNKNOWN);
}

/* sum_values/2, sum_arrays/2, sum_objects/2. */
TEST(vreduce_sum_table) {
  static const char *const t[][2] = {
      {"[]", "0"},
      {"[1,2,3]", "6"},
      {"[1,2.5]", "3.5"},
      {"[1.5,1.5]", "3.0"},
      {"[0.1,0.2]", "0.30000000000000004"},
      {"[-0]", "0"},
      {"[1e21,1]", "1e+21"},
      {"[[1,2],[3,4,5]]", "[4,6,5]"},
      {"[[1,2,3],[4]]", "[5,2,3]"},
      {"[5,[1,2]]", "[6,2]"},                /* sum_arrays([Acc], Value) */
      {"[[1,2],5]", "[6,2]"},                /* sum_arrays(Acc, [Value]) */
      {"[[]]", "[0]"},                       /* sum_arrays([0], []) */
      {"[[],[]]", "[0]"},
      {"[[1,'a',{}]]", "[1,'a',{}]"},        /* the longer tail is not checked */
      {"[[1],[3,'x',{}],[]]", "[4,'x',{}]"},
      {"[{'b':1,'a':2}]", "{'b':1,'a':2}"},  /* Acc 0: the object as it is */
      {"[{'b':1,'a':2},{'a':1,'c':[1]}]", "{'a':3,'b':1,'c':[1]}"},
      {"[{'a':{'x':1}},{'a':{'y':2,'x':1}}]", "{'a':{'x':2,'y':2}}"},
      {"[{'a':[1,2]},{'a':3}]", "{'a':[4,2]}"},
      {"[0,{'a':1}]", "{'a':1}"},
      {"[1,-1,{'a':1}]", "{'a':1}"},         /* Acc is 0 again */
      {"[{'a':0},{'a':{'b':1}}]", "{'a':{'b':1}}"},
      {"[{},{}]", "{}"},
      {"[{'a':{'error':'builtin_reduce_error','k':1}},{'a':{'z':1}}]",
       "{'a':{'error':'builtin_reduce_error','k':1,'z':1}}"}, /* only the Value side is checked */
      {"[{'ab':1,'a':1,'b':1,'':1},{'aa':1}]", "{'':1,'a':1,'aa':1,'ab':1,'b':1}"},
      {"[9223372036854775807,1]", "9223372036854775808"},
      {"[-9223372036854775808,-1]", "-9223372036854775809"},
      {"[9223372036854775807,9223372036854775807,-9223372036854775807,-9223372036854775807]", "0"},
      {"[123456789012345678901234567890,1]", "123456789012345678901234567891"},
      {"[123456789012345678901234567890,-123456789012345678901234567890]", "0"},
      {"[18446744073709551616,1.5]", "18446744073709552000.0"},
      {"[[9223372036854775807],[1]]", "[9223372036854775808]"},
  };
  dv_arena a = DV_ARENA_INIT;
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    const char *got = answer(&a, VR_SUM, t[i][0]);
    ASSERTF(!strcmp(got, q(&a, t[i][1])), "_sum %s = %s, want %s", t[i][0], got, q(&a, t[i][1]));
  }
  arena_free(&a);
  LEAK_CHECK();
}

/* builtin_sum_rows/2: a throw becomes the reduction; caused_by is
 * throw_sum_error's argument. */
TEST(vreduce_sum_errors) {
  static const char *const t[][2] = {
      {"['a']", "'a'"},
      {"[1,'a',2]", "'a'"},
      {"[null]", "null"},
      {"[true]", "true"},
      {"[1,false]", "false"},
      {"[[1,2],['x']]", "[1,2]"},            /* the accumulator's tail */
      {"[[1,2,3],[1,'x']]", "[2,3]"},
      {"[['x'],[1]]", "[0]"},                /* sum_arrays([0], Value) */
      {"[[{'a':1}],[1]]", "[0]"},
      {"[[1,{'a':1}],[1,1]]", "[{'a':1}]"},
      {"[{'a':1},5]", "5"},
      {"[{'a':1},[1]]", "[1]"},
      {"[{'a':'s'},{'a':1}]", "1"},
      {"[{'a':1},{'a':'s'}]", "'s'"},
      {"[{'a':{'b':'x'}},{'a':{'b':2}}]", "2"},
  };
  dv_arena a = DV_ARENA_INIT;
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    const char *got = answer(&a, VR_SUM, t[i][0]);
    const char *want = q(&a, SUMERR_OBJ("") );
    char *w = arena_alloc(&a, strlen(want) + strlen(t[i][1]) + 1);
    size_t l = strlen(want) - 1;
    memcpy(w, want, l);
    strcpy(w + l, q(&a, t[i][1]));
    strcat(w, "}");
    ASSERTF(!strcmp(got, w), "_sum %s =\n  %s\nwant\n  %s", t[i][0], got, w);
  }
  /* a builtin_reduce_error object is the sum, as it is */
  static const char *const obj[][2] = {
      {"[{'error':'builtin_reduce_error','reason':'x'}]", "{'error':'builtin_reduce_error','reason':'x'}"},
      {"[1,{'error':'builtin_reduce_error'},'a']", "{'error':'builtin_reduce_error'}"},
      {"[{'a':{'z':1}},{'a':{'error':'builtin_reduce_error','k':1}}]", "{'error':'builtin_reduce_error','k':1}"},
  };
  for (size_t i = 0; i < sizeof obj / sizeof *obj; i++) {
    const char *got = answer(&a, VR_SUM, obj[i][0]);
    ASSERTF(!strcmp(got, q(&a, obj[i][1])), "_sum %s = %s", obj[i][0], got);
  }
  /* where CouchDB crashes (case_clause, badarith): the reduce fails */
  static const char *const crash[][3] = {
      {"[{'error':1}]", "case_clause", "{'error':1}"},
      {"[{'a':1},{'error':'x'}]", "case_clause", "{'error':'x'}"},
      {"[5,{'a':1}]", "case_clause", "{'a':1}"},
      {"[[1],{'a':1}]", "case_clause", "{'a':1}"},
      {"[0.0,{'a':1}]", "case_clause", "{'a':1}"},
      {"[1e308,1e308]", "badarith", NULL},
      {"[[1e308],[1e308]]", "badarith", NULL},
  };
  for (size_t i = 0; i < sizeof crash / sizeof *crash; i++) {
    vr_err e = failure(&a, VR_SUM, crash[i][0]);
    ASSERTF(strstr(e.reason, crash[i][1]), "%s: %s", crash[i][0], e.reason);
    if (crash[i][2]) ASSERT_STR_EQ(e.caused_by, q(&a, crash[i][2]));
    else ASSERT(e.caused_by == NULL);
  }
  arena_free(&a);
  LEAK_CHECK();
}

/* Error states propagate through rereduce, and vr_state_error finds them. */
TEST(vreduce_sum_error_state) {
  dv_arena a = DV_ARENA_INIT;
  size_t n;
  vr_row *r = mk_rows(&a, "[1,2]", &n);
  dv_buf s1 = DV_BUF_INIT, s2 = DV_BUF_INIT, s3 = DV_BUF_INIT, out = DV_BUF_INIT;
  vr_err e = {0};
  ASSERT_OK(vr_reduce(VR_SUM, r, n, &a, &s1, &e));
  r = mk_rows(&a, "[3,'bad',4]", &n);
  ASSERT_OK(vr_reduce(VR_SUM, r, n, &a, &s2, &e));
  ASSERT_EQ(vr_state_error(VR_SUM, s1.p, s1.len, &a, &e), 0);
  ASSERT_EQ(vr_state_error(VR_SUM, s2.p, s2.len, &a, NULL), 1);
  memset(&e, 0, sizeof e);
  ASSERT_EQ(vr_state_error(VR_SUM, s2.p, s2.len, &a, &e), 1);
  ASSERT_STR_EQ(e.error, "builtin_reduce_error");
  ASSERT_STR_EQ(e.reason, SUMERR);
  ASSERT_STR_EQ(e.caused_by, "\"bad\"");
  for (int order = 0; order < 2; order++) {
    const uint8_t *st[2] = {order ? s2.p : s1.p, order ? s1.p : s2.p};
    size_t ln[2] = {order ? s2.len : s1.len, order ? s1.len : s2.len};
    buf_reset(&s3);
    ASSERT_OK(vr_rereduce(VR_SUM, st, ln, 2, &a, &s3, &e));
    ASSERT_MEM_EQ(s3.p, s3.len, s2.p, s2.len);
  }
  ASSERT_OK(vr_final(VR_SUM, s3.p, s3.len, &out));
  ASSERT_STR_EQ((const char *)out.p, SUMERR_OBJ("\"bad\""));
  ASSERT_EQ(vr_state_error(VR_COUNT, s2.p, s2.len, &a, &e), 0);
  ASSERT_EQ(vr_state_error(VR_SUM, (const uint8_t *)"{", 1, &a, &e), DV_ECORRUPT);
  buf_free(&s1);
  buf_free(&s2);
  buf_free(&s3);
  buf_free(&out);
  arena_free(&a);
  LEAK_CHECK();
}

/* check_sum_overflow/3: objects of n 4-byte keys with value 1 weigh
 * 8 + 13n bytes; two disjoint ones sum to 9 + 26n with the version byte,
 * and the input [[[null, <<"id">>], V1], [[null, <<"id">>], V2]] weighs
 * 71 + 26n (id "i"). The limit is 4906: n = 188 passes, 189 does not. */
static void objects(dv_buf *b, int n, int from) {
  buf_putc(b, '{');
  for (int i = 0; i < n; i++) buf_printf(b, "%s\"k%03d\":1", i ? "," : "", from + i);
  buf_putc(b, '}');
}

TEST(vreduce_sum_overflow) {
  dv_arena a = DV_ARENA_INIT;
  for (int n = 188; n <= 189; n++) {
    dv_buf t = DV_BUF_INIT, st = DV_BUF_INIT, out = DV_BUF_INIT;
    buf_putc(&t, '[');
    objects(&t, n, 0);
    buf_putc(&t, ',');
    objects(&t, n, 500);
    buf_putc(&t, ']');
    json_val *v = J(&a, (const char *)t.p);
    vr_row r[2] = {{NULL, v->u.items[0], "i", 1}, {NULL, v->u.items[1], "i", 1}};
    vr_err e = {0};
    ASSERT_OK(vr_reduce(VR_SUM, r, 2, &a, &st, &e));
    ASSERT_OK(vr_final(VR_SUM, st.p, st.len, &out));
    int err = vr_state_error(VR_SUM, st.p, st.len, &a, &e);
    if (n == 188) {
      ASSERT_EQ(err, 0);
      ASSERT(out.len > 3000);
    } else {
      ASSERT_EQ(err, 1);
      ASSERT_STR_EQ((const char *)out.p, "{\"error\":\"builtin_reduce_error\",\"reason\":\"Reduce output must shrink "
                                         "more rapidly: input size: 4985 output size: 4923\"}");
      ASSERT(e.caused_by == NULL);
    }
    /* rereduce of the two one-row states: input [[[], S1], [[], S2]] weighs 37 + 26n */
    dv_buf s1 = DV_BUF_INIT, s2 = DV_BUF_INIT, s3 = DV_BUF_INIT;
    ASSERT_OK(vr_reduce(VR_SUM, &r[0], 1, &a, &s1, &e));
    ASSERT_OK(vr_reduce(VR_SUM, &r[1], 1, &a, &s2, &e));
    const uint8_t *ss[2] = {s1.p, s2.p};
    size_t ls[2] = {s1.len, s2.len};
    ASSERT_OK(vr_rereduce(VR_SUM, ss, ls, 2, &a, &s3, &e));
    if (n == 188) ASSERT_MEM_EQ(s3.p, s3.len, st.p, st.len);
    else
      ASSERT_STR_EQ((const char *)s3.p, "{\"error\":\"builtin_reduce_error\",\"reason\":\"Reduce output must shrink "
                                        "more rapidly: input size: 4951 output size: 4923\"}");
    buf_free(&s1);
    buf_free(&s2);
    buf_free(&s3);
    buf_free(&t);
    buf_free(&st);
    buf_free(&out);
  }
  arena_free(&a);
  LEAK_CHECK();
}

/* builtin_stats/2, stat_values/2, build_initial_accumulator/1,
 * unpack_stats/1, pack_stats/1. */
TEST(vreduce_stats_table) {
#define ST(s, c, mn, mx, q) "{'sum':" s ",'count':" c ",'min':" mn ",'max':" mx ",'sumsqr':" q "}"
  static const char *const t[][2] = {
      {"[]", ST("0", "0", "0", "0", "0")},
      {"[2]", ST("2", "1", "2", "2", "4")},
      {"[2,5,6]", ST("13", "3", "2", "6", "65")},
      {"[-1,2.5]", ST("1.5", "2", "-1", "2.5", "7.25")},
      {"[1,1.0]", ST("2.0", "2", "1.0", "1.0", "2.0")}, /* min/max keep the later when equal */
      {"[1.0,1]", ST("2.0", "2", "1", "1", "2.0")},
      {"[[1,2],[3,4]]", "[" ST("4", "2", "1", "3", "10") "," ST("6", "2", "2", "4", "20") "]"},
      {"[[1,[2,3]],[4,[5,6]]]", "[" ST("5", "2", "1", "4", "17") ",[" ST("7", "2", "2", "5", "29") "," ST("9", "2", "3", "6", "45") "]]"},
      {"[[]]", "[]"},
      {"[{'sum':10,'count':2,'min':3,'max':7,'sumsqr':58,'x':'ignored'}]", ST("10", "2", "3", "7", "58")},
      {"[{'sum':10,'count':2,'min':3,'max':7,'sumsqr':58},1,{'max':8,'min':-1,'sumsqr':1,'count':1,'sum':2}]",
       ST("13", "4", "-1", "8", "60")},
      {"[[{'sum':1,'count':1,'min':1,'max':1,'sumsqr':1}],[2]]", "[" ST("3", "2", "1", "2", "5") "]"},
      {"[3037000500,3037000500]", ST("6074001000", "2", "3037000500", "3037000500", "18446744074000500000")},
      {"[123456789012345678901234567890]",
       ST("123456789012345678901234567890", "1", "123456789012345678901234567890", "123456789012345678901234567890",
          "15241578753238836750495351562536198787501905199875019052100")},
      /* integers and floats compare exactly (2^64 + 1 > 2^64.0); equal ones keep the later */
      {"[18446744073709551617,18446744073709551616.0]",
       ST("36893488147419103000.0", "2", "18446744073709552000.0", "18446744073709551617", "6.80564733841877e+38")},
      {"[18446744073709551616.0,18446744073709551616]",
       ST("36893488147419103000.0", "2", "18446744073709551616", "18446744073709551616", "6.80564733841877e+38")},
      {"[18446744073709551616,18446744073709551616.0]",
       ST("36893488147419103000.0", "2", "18446744073709552000.0", "18446744073709552000.0", "6.80564733841877e+38")},
      {"[18446744073709551616,1.5,-18446744073709551616]",
       ST("0.0", "3", "-18446744073709551616", "18446744073709551616", "6.80564733841877e+38")},
  };
  dv_arena a = DV_ARENA_INIT;
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    const char *got = answer(&a, VR_STATS, t[i][0]);
    ASSERTF(!strcmp(got, q(&a, t[i][1])), "_stats %s =\n  %s\nwant\n  %s", t[i][0], got, q(&a, t[i][1]));
  }
  arena_free(&a);
#undef ST
  LEAK_CHECK();
}

/* 84 spaces: where ~p continues after STATERR's 83 characters (column 84). */
#define SP84 "                                                                                    "

/* The throws of builtin_stats, with io_lib's ~w and ~p. */
TEST(vreduce_stats_errors) {
  static const char *const t[][2] = {
      /* build_initial_accumulator(Else): ~w */
      {"['abc']", "non-numeric _stats input: <<97,98,99>>"},
      {"[null,1]", "non-numeric _stats input: null"},
      {"[[1,'a']]", "non-numeric _stats input: <<97>>"},
      {"['']", "non-numeric _stats input: <<>>"},
      /* stat_values(Else, _): ~p at column 84 */
      {"[1,'abc']", STATERR "<<\"abc\">>'"},
      {"[1,true]", STATERR "true'"},
      {"[1,'a\\\"b\\\\c\\n']", STATERR "<<\"a\\\"b\\\\c\\n\">>'"},
      {"[1,'\\u00e9']", STATERR "<<\"\xc3\xa9\">>'"},               /* bytes >= 160 are printable latin-1 */
      {"[1,'\\u0001']", STATERR "<<1>>'"},
      {"[1,'\\u20ac']", STATERR "<<226,130,\n" SP84 " 172>>'"},  /* pp_binary: 8 characters a line */
      {"[1,[72,105]]", STATERR "\"Hi\"'"},                       /* a printable list is a string */
      {"[1,[1,2]]", STATERR "[1,\n" SP84 "2]'"},
      {"[1,[]]", STATERR "[]'"},
      {"[[1],5]", STATERR "{5,\n" SP84 "1,\n" SP84 "5,\n" SP84 "5,\n" SP84 "25}'"},
      {"[[1],2.5]", STATERR "{2.5,\n" SP84 "1,\n" SP84 "2.5,\n" SP84 "2.5,\n" SP84 "6.25}'"},
      {"[[1],{'sum':1,'count':1,'min':1,'max':1,'sumsqr':1}]",
       STATERR "{1,\n" SP84 "1,\n" SP84 "1,\n" SP84 "1,\n" SP84 "1}'"},
      {"[1,[{'a':1}]]", STATERR "[{[{<<\"a\">>,\n" SP84 "   1}]}]'"},
      /* get_number/2 */
      {"[{'sum':1}]", "user _stats input missing required field count ([{<<\"sum\">>,1}])"},
      {"[1,{}]", "user _stats input missing required field sum ([])"},
      {"[{'sum':1,'count':1,'min':1,'max':1}]",
       "user _stats input missing required field sumsqr ([{<<\"sum\">>,1},\n"
       "                                                  {<<\"count\">>,1},\n"
       "                                                  {<<\"min\">>,1},\n"
       "                                                  {<<\"max\">>,1}])"},
      {"[{'sum':'x'}]", "non-numeric _stats input received for sum: <<120>>"},
      {"[1,{'sum':1,'count':null}]", "non-numeric _stats input received for count: null"},
      {"[{'sum':{'a':[1,'b']}}]", "non-numeric _stats input received for sum: {[{<<97>>,[1,<<98>>]}]}"},
      {"[{'sum':[0.1,100.0,1000.0,1e21,1e-7,0.0001,0.001,123456.789,9007199254740992.0,9007199254740991.0,"
       "120.0,1200.0,-0.0,5e-324,1.5e300]}]",
       "non-numeric _stats input received for sum: [0.1,100.0,1.0e3,1.0e21,1.0e-7,1.0e-4,0.001,123456.789,"
       "9.007199254740992e15,9007199254740991.0,120.0,1.2e3,-0.0,5.0e-324,1.5e300]"},
  };
  dv_arena a = DV_ARENA_INIT;
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    vr_err e = failure(&a, VR_STATS, t[i][0]);
    ASSERTF(!strcmp(e.reason, t[i][1]), "_stats %s:\n  got  %s\n  want %s", t[i][0], e.reason, t[i][1]);
    ASSERT(e.caused_by == NULL);
  }
  /* where CouchDB crashes */
  vr_err e = failure(&a, VR_STATS, "[[1,2],[1]]");
  ASSERT(strstr(e.reason, "lists:zipwith") != NULL);
  ASSERT_STR_EQ(e.caused_by, "[1]");
  e = failure(&a, VR_STATS, "[1e200]");
  ASSERT(strstr(e.reason, "badarith") != NULL);
  e = failure(&a, VR_STATS, "[[1,2],[1,'x']]"); /* zipwith evaluates the pairs first */
  ASSERT_STR_EQ(e.reason, STATERR "<<\"x\">>'");
  arena_free(&a);
  LEAK_CHECK();
}

TEST(vreduce_count) {
  dv_arena a = DV_ARENA_INIT;
  ASSERT_STR_EQ(answer(&a, VR_COUNT, "[]"), "0");
  ASSERT_STR_EQ(answer(&a, VR_COUNT, "[null,'a',{},[1],1.5]"), "5");
  dv_buf s = DV_BUF_INIT, t = DV_BUF_INIT, out = DV_BUF_INIT;
  size_t n;
  vr_row *r = mk_rows(&a, "[1,2,3]", &n);
  ASSERT_OK(vr_reduce(VR_COUNT, r, n, &a, &s, NULL));
  ASSERT_EQ(s.len, 8);
  const uint8_t *st[3] = {s.p, s.p, s.p};
  size_t ln[3] = {8, 8, 8};
  ASSERT_OK(vr_rereduce(VR_COUNT, st, ln, 3, &a, &t, NULL)); /* builtin_sum_rows on rereduce */
  ASSERT_OK(vr_final(VR_COUNT, t.p, t.len, &out));
  ASSERT_STR_EQ((const char *)out.p, "9");
  ln[1] = 7;
  buf_reset(&t);
  ASSERT_EQ(vr_rereduce(VR_COUNT, st, ln, 3, &a, &t, NULL), DV_ECORRUPT);
  ASSERT_EQ(t.len, 0);
  ASSERT_EQ(vr_final(VR_COUNT, s.p, 7, &out), DV_ECORRUPT);
  ASSERT_EQ(vr_reduce(VR_JS, r, n, &a, &t, NULL), DV_EINVAL);
  ASSERT_EQ(vr_reduce(VR_UNKNOWN, r, n, &a, &t, NULL), DV_EINVAL);
  buf_free(&s);
  buf_free(&t);
  buf_free(&out);
  arena_free(&a);
  LEAK_CHECK();
}

TEST(vreduce_xxh64) {
  /* the reference implementation's values, seed 0 */
  ASSERT(vr__xxh64("", 0, 0) == 0xef46db3751d8e999ull);
  ASSERT(vr__xxh64("a", 1, 0) == 0xd24ec4f1a98c6e5bull);
  ASSERT(vr__xxh64("abc", 3, 0) == 0x44bc2cf5ad770999ull);
  ASSERT(vr__xxh64("null", 4, 0) == 0x3ec9e10063179f3aull);
  ASSERT(vr__xxh64("\"hello\"", 7, 0) == 0xb0f7111020ce8debull);
  ASSERT(vr__xxh64("0123456789abcdefghijklmnopqrstuvwxyz", 36, 0) == 0x69196c1b3af0bff9ull);
  char x[40];
  memset(x, 'x', sizeof x);
  ASSERT(vr__xxh64(x, 40, 0) == 0x926f564e1b3e18d5ull);
}

/* The estimate of n distinct keys (each given dup times), by one reduce
 * and by a rereduce of chunks, which must be byte-equal. */
static uint64_t approx(dv_arena *a, size_t n, int dup, const char *fmt) {
  vr_row *r = dv_malloc(n * dup * sizeof *r);
  ASSERT(r != NULL);
  char t[64];
  for (size_t i = 0; i < n * dup; i++) {
    snprintf(t, sizeof t, fmt, i % n);
    r[i] = (vr_row){J(a, t), NULL, NULL, 0};
  }
  dv_buf s = DV_BUF_INIT, c = DV_BUF_INIT, u = DV_BUF_INIT, out = DV_BUF_INIT;
  ASSERT_OK(vr_reduce(VR_APPROX, r, n * dup, a, &s, NULL));
  ASSERT_EQ(s.len, 2048);
  size_t k = 7, per = (n * dup + k - 1) / k;
  const uint8_t *st[7];
  size_t ln[7];
  for (size_t i = 0; i < k; i++) {
    size_t lo = i * per < n * dup ? i * per : n * dup, hi = lo + per < n * dup ? lo + per : n * dup;
    ASSERT_OK(vr_reduce(VR_APPROX, r + lo, hi - lo, a, &c, NULL));
  }
  for (size_t i = 0; i < k; i++) {
    st[i] = c.p + i * 2048;
    ln[i] = 2048;
  }
  ASSERT_OK(vr_rereduce(VR_APPROX, st, ln, k, a, &u, NULL));
  ASSERT_MEM_EQ(u.p, u.len, s.p, s.len);
  ASSERT_OK(vr_final(VR_APPROX, s.p, s.len, &out));
  uint64_t est = strtoull((const char *)out.p, NULL, 10);
  dv_free(r);
  buf_free(&s);
  buf_free(&c);
  buf_free(&u);
  buf_free(&out);
  arena_reset(a);
  return est;
}

TEST(vreduce_approx_accuracy) {
  dv_arena a = DV_ARENA_INIT;
  ASSERT_EQ(approx(&a, 0, 1, "%zu"), 0);
  ASSERT_EQ(approx(&a, 1, 5, "%zu"), 1);
  ASSERT_EQ(approx(&a, 10, 3, "[%zu,'k']"), 10);
  uint64_t e = approx(&a, 100, 2, "'doc-%zu'");
  ASSERTF(e >= 98 && e <= 102, "100 keys: %llu", (unsigned long long)e);
  e = approx(&a, 1000, 1, "%zu.5");
  ASSERTF(e >= 970 && e <= 1030, "1000 keys: %llu", (unsigned long long)e);
  static const char *const fmts[] = {"%zu", "'user:%zu'", "[%zu,null]", "{'id':%zu}"};
  for (size_t f = 0; f < 4; f++) {
    e = approx(&a, 10000, 2, fmts[f]);
    ASSERTF(e >= 9500 && e <= 10500, "10k keys (%s): %llu", fmts[f], (unsigned long long)e);
  }
  e = approx(&a, 100000, 1, "%zu");
  ASSERTF(e >= 95000 && e <= 105000, "100k keys: %llu", (unsigned long long)e);
  e = approx(&a, 100000, 1, "'k%zu'");
  ASSERTF(e >= 95000 && e <= 105000, "100k keys: %llu", (unsigned long long)e);
  /* 1 and 1.0 are two keys (two terms in Erlang), "1" a third */
  json_val *v = J(&a, "[1,1.0,'1',1,1.0]");
  vr_row r[5];
  for (int i = 0; i < 5; i++) r[i] = (vr_row){v->u.items[i], NULL, NULL, 0};
  dv_buf s = DV_BUF_INIT, out = DV_BUF_INIT;
  ASSERT_OK(vr_reduce(VR_APPROX, r, 5, &a, &s, NULL));
  ASSERT_OK(vr_final(VR_APPROX, s.p, s.len, &out));
  ASSERT_STR_EQ((const char *)out.p, "3");
  s.p[0] = 55; /* a register no hash can give */
  ASSERT_EQ(vr_final(VR_APPROX, s.p, s.len, &out), DV_ECORRUPT);
  buf_free(&s);
  buf_free(&out);
  arena_free(&a);
  LEAK_CHECK();
}

/* A random JSON value of the shape `shape` for _sum and _stats. */
static void rand_value(dv_buf *b, int kind, int shape, unsigned *seed) {
  long x = (long)(rand_r(seed) % 2001) - 1000;
  if (shape == 0 || kind == VR_COUNT || kind == VR_APPROX) {
    buf_printf(b, "%ld", rand_r(seed) % 8 == 0 ? x * 1000000000000L : x);
  } else if (shape == 1) { /* arrays: of any length for _sum, of 3 for _stats */
    int n = kind == VR_SUM ? rand_r(seed) % 5 : 3;
    buf_putc(b, '[');
    for (int i = 0; i < n; i++) buf_printf(b, "%s%ld", i ? "," : "", (long)(rand_r(seed) % 100) - 50);
    buf_putc(b, ']');
  } else if (kind == VR_SUM) { /* objects of some of 6 keys */
    buf_putc(b, '{');
    int first = 1;
    for (int i = 0; i < 6; i++)
      if (rand_r(seed) % 2) {
        buf_printf(b, "%s\"k%d\":%ld", first ? "" : ",", 5 - i, (long)(rand_r(seed) % 100) + 1);
        first = 0;
      }
    buf_putc(b, '}');
  } else { /* _stats: precomputed objects or numbers */
    if (rand_r(seed) % 2) buf_printf(b, "%ld", x);
    else buf_printf(b, "{\"sum\":%ld,\"count\":2,\"min\":%ld,\"max\":%ld,\"sumsqr\":%ld}", 3 * x, x, 2 * x, 5 * x * x);
  }
}

/* Rereduce states[0..n) by random chunks and random depth until one is
 * left. */
static void rere(vr_kind k, dv_arena *a, dv_buf *st, size_t n, dv_buf *out, unsigned *seed) {
  if (n == 1 && rand_r(seed) % 2) {
    buf_append(out, st[0].p, st[0].len);
    return;
  }
  dv_buf *next = dv_malloc((n + 1) * sizeof *next);
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    size_t c = 1 + rand_r(seed) % 4;
    if (c > n - i) c = n - i;
    const uint8_t *p[4];
    size_t l[4];
    for (size_t j = 0; j < c; j++) {
      p[j] = st[i + j].p;
      l[j] = st[i + j].len;
    }
    buf_init(&next[m]);
    vr_err e = {0};
    int rc = vr_rereduce(k, p, l, c, a, &next[m], &e);
    ASSERTF(rc == 0, "rereduce: %d %s", rc, e.reason ? e.reason : "");
    m++;
    i += c;
  }
  if (m == 1) buf_append(out, next[0].p, next[0].len);
  else rere(k, a, next, m, out, seed);
  for (size_t i = 0; i < m; i++) buf_free(&next[i]);
  dv_free(next);
}

TEST(vreduce_property) {
  static const vr_kind kinds[] = {VR_SUM, VR_COUNT, VR_STATS, VR_APPROX};
  unsigned seed = 20260424;
  for (int iter = 0; iter < 400; iter++) {
    vr_kind k = kinds[iter % 4];
    int shape = rand_r(&seed) % 3;
    size_t n = 1 + rand_r(&seed) % 120;
    dv_arena a = DV_ARENA_INIT;
    dv_buf t = DV_BUF_INIT;
    buf_putc(&t, '[');
    for (size_t i = 0; i < n; i++) {
      if (i) buf_putc(&t, ',');
      rand_value(&t, k, shape, &seed);
    }
    buf_putc(&t, ']');
    size_t nr;
    vr_row *r = mk_rows(&a, (const char *)t.p, &nr);
    for (size_t i = 0; i < nr; i++) {
      char key[32];
      snprintf(key, sizeof key, "[%u,\"x\"]", rand_r(&seed) % 50);
      r[i].key = J(&a, key);
    }
    dv_buf all = DV_BUF_INIT, again = DV_BUF_INIT, got = DV_BUF_INIT;
    vr_err e = {0};
    int rc = vr_reduce(k, r, nr, &a, &all, &e);
    ASSERTF(rc == 0, "reduce %s: %d %s", (const char *)t.p, rc, e.reason ? e.reason : "");
    ASSERT_OK(vr_reduce(k, r, nr, &a, &again, &e)); /* deterministic */
    ASSERT_MEM_EQ(again.p, again.len, all.p, all.len);
    ASSERT_EQ(vr_state_error(k, all.p, all.len, &a, &e), 0);
    /* random chunks, each reduced, then rereduced at random depth */
    dv_buf *st = dv_malloc((nr + 1) * sizeof *st);
    size_t ns = 0;
    for (size_t i = 0; i < nr;) {
      size_t c = 1 + rand_r(&seed) % 9;
      if (c > nr - i) c = nr - i;
      buf_init(&st[ns]);
      ASSERT_OK(vr_reduce(k, r + i, c, &a, &st[ns], &e));
      ns++;
      i += c;
    }
    rere(k, &a, st, ns, &got, &seed);
    if (got.len != all.len || memcmp(got.p, all.p, all.len))
      ASSERTF(0, "kind %d over %s:\n  reduce   %.300s\n  rereduce %.300s", k, (const char *)t.p,
              k == VR_APPROX || k == VR_COUNT ? "(binary)" : (const char *)all.p,
              k == VR_APPROX || k == VR_COUNT ? "(binary)" : (const char *)got.p);
    for (size_t i = 0; i < ns; i++) buf_free(&st[i]);
    dv_free(st);
    buf_free(&t);
    buf_free(&all);
    buf_free(&again);
    buf_free(&got);
    arena_free(&a);
  }
  LEAK_CHECK();
}

/* Every allocation failure is DV_ENOMEM, leaks nothing (ASan checks) and
 * leaves out as it was. */
TEST(vreduce_alloc_fail) {
  static const struct {
    vr_kind k;
    const char *vals;
  } t[] = {
      {VR_SUM, "[{'b':[1,2,123456789012345678901234567890],'a':{'x':1.5}},{'a':{'y':2},'c':3},4]"},
      {VR_SUM, "[[1,2],['x']]"},
      {VR_STATS, "[[1,{'sum':1,'count':1,'min':1,'max':1,'sumsqr':1}],[18446744073709551616,2.5]]"},
      {VR_STATS, "[{'sum':1,'count':1,'min':1,'max':1}]"},
      {VR_STATS, "[1,[1,'\\u20ac',{'a':[1,2]}]]"},
      {VR_APPROX, "[1,'a',[1,2],{'a':{'b':null}}]"},
      {VR_COUNT, "[1,2]"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    int ok = 0, nomem = 0;
    for (long f = 0; f < 400 && !ok; f++) {
      dv_arena a = DV_ARENA_INIT;
      size_t n;
      vr_row *r = mk_rows(&a, t[i].vals, &n);
      for (size_t j = 0; j < n; j++) r[j].key = r[j].value;
      dv_buf s = DV_BUF_INIT, u = DV_BUF_INIT, out = DV_BUF_INIT;
      vr_err e = {0};
      dv_alloc_fail_after(f);
      int rc = vr_reduce(t[i].k, r, n, &a, &s, &e);
      if (rc == 0) {
        const uint8_t *st[2] = {s.p, s.p};
        size_t ln[2] = {s.len, s.len};
        rc = vr_rereduce(t[i].k, st, ln, 2, &a, &u, &e);
        if (rc == 0) rc = vr_final(t[i].k, u.p, u.len, &out);
        if (rc == 0 && t[i].k == VR_SUM) rc = vr_state_error(t[i].k, u.p, u.len, &a, &e) < 0 ? DV_ENOMEM : 0;
      }
      dv_alloc_fail_after(-1);
      ASSERTF(rc == 0 || rc == DV_ENOMEM || rc == DV_EVIEW_BUILTIN, "case %zu f=%ld rc=%d", i, f, rc);
      if (rc == DV_ENOMEM) nomem++;
      ok = rc == 0 || rc == DV_EVIEW_BUILTIN;
      buf_free(&s);
      buf_free(&u);
      buf_free(&out);
      arena_free(&a);
    }
    ASSERTF(ok && nomem > 0, "case %zu: ok %d nomem %d", i, ok, nomem);
  }
  LEAK_CHECK();
}

/* The fuzz target's smoke run (make fuzz runs it longer). */
TEST(vreduce_fuzz_smoke) { test_fuzz_smoke("fuzz_vreduce"); }
