/* test_vargs.c — a view query's parameters (index/vargs.h): CouchDB 3.4's
 * parsing and validate_args, case by case with its texts
 * (/work/view_spec.md §2; couch_mrview_http, couch_mrview_util). */
#include <string.h>

#include "index/vargs.h"
#include "test.h"

/* Parse "a=1&b=2" (no escapes) then check for a view with or without a
 * reduce: "ok", or the reason. */
static const char *run(const char *qs, int red_view, vw_args *out) {
  static char buf[512];
  dv_arena a;
  arena_init(&a, 0);
  vw_args args;
  vw_args_init(&args);
  const char *why = NULL;
  int rc = 0;
  for (const char *p = qs; *p && !rc;) {
    const char *amp = strchr(p, '&'), *e = amp ? amp : p + strlen(p);
    const char *eq = memchr(p, '=', (size_t)(e - p));
    const char *v = eq ? eq + 1 : e;
    rc = vw_args_set(&args, p, (size_t)((eq ? eq : e) - p), v, (size_t)(e - v), NULL, &a, &why);
    p = amp ? amp + 1 : e;
  }
  if (!rc) rc = vw_args_check(&args, red_view, &why);
  snprintf(buf, sizeof buf, "%s", rc ? why : "ok");
  if (rc == DV_EJSON) snprintf(buf, sizeof buf, "bad_request: %s", why);
  if (out) *out = args;
  arena_free(&a);
  return buf;
}

TEST(vargs_errors) {
  static const struct {
    const char *qs;
    int red;
    const char *want;
  } t[] = {
      {"descending=yes", 0, "Invalid boolean parameter: \"yes\""},
      {"descending=TRUE", 0, "ok"},
      {"limit=abc", 0, "Invalid value for integer: \"abc\""},
      {"limit=1.5", 0, "Invalid value for integer: \"1.5\""},
      {"limit=-1", 0, "Invalid value for positive integer: \"-1\""},
      {"skip=-1", 0, "Invalid value for positive integer: \"-1\""},
      {"group_level=-1", 1, "Invalid value for positive integer: \"-1\""},
      {"stale=bad", 0, "Invalid value for `stale`."},
      {"stable=yes", 0, "Invalid value for `stable`."},
      {"update=maybe", 0, "Invalid value for `update`."},
      {"group=false&group_level=1", 1, "Can't specify group=false and group_level>0 at the same time"},
      {"reduce=true", 0, "Reduce is invalid for map-only views."},
      {"keys=[1,2]", 1, "Multi-key fetches for reduce views must use `group=true`"},
      {"keys=[]", 1, "Multi-key fetches for reduce views must use `group=true`"},
      {"keys=[1,2]&group=true", 1, "ok"},
      {"keys=[1]", 1, "ok"}, /* one key is key (3.3.1) */
      {"keys=\"a\"", 0, "`keys` must be an array of strings."},
      {"keys=[1,2]&startkey=1", 0, "`keys` is incompatible with `key`, `start_key` and `end_key`"},
      {"endkey=\"b\"&keys=[\"a\",\"b\"]", 1, "Multi-key fetches for reduce views must use `group=true`"},
      {"endkey=\"b\"&keys=[\"a\",\"b\"]&group=true", 1, "`keys` is incompatible with `key`, `start_key` and `end_key`"},
      {"group=true", 0, "Invalid use of grouping on a map view."},
      {"group_level=2", 0, "Invalid use of grouping on a map view."},
      {"reduce=false&group=true", 1, "Invalid use of grouping on a map view."},
      {"include_docs=true", 1, "`include_docs` is invalid for reduce"},
      {"include_docs=true&reduce=false", 1, "ok"},
      {"conflicts=false", 1, "`conflicts` is invalid for reduce views."},
      {"startkey=foo", 0, "bad_request: invalid UTF-8 JSON"},
      {"key=\"a\"&endkey=\"b\"", 0, "ok"},
      {"unknown=1&list=x", 0, "ok"},
      {"limit=268435456", 0, "ok"},
      {"limit=268435457", 0, "Limit is too large, must not exceed 268435456"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    const char *got = run(t[i].qs, t[i].red, NULL);
    ASSERTF(!strcmp(got, t[i].want), "%s (reduce view %d): got \"%s\", want \"%s\"", t[i].qs, t[i].red, got, t[i].want);
  }
}

TEST(vargs_values) {
  vw_args a;
  ASSERT_STR_EQ(run("", 1, &a), "ok");
  ASSERT_EQ(a.red, 1);
  ASSERT_EQ(a.level, 0);
  ASSERT_EQ(a.limit, VW_LIMIT_MAX);
  ASSERT_EQ(a.update, VW_UPDATE_TRUE);
  ASSERT_EQ(a.inclusive_end, 1);
  ASSERT_STR_EQ(run("group=true", 1, &a), "ok");
  ASSERT_EQ(a.level, -1);
  ASSERT_STR_EQ(run("group=true&group_level=2", 1, &a), "ok");
  ASSERT_EQ(a.level, 2);
  ASSERT_STR_EQ(run("stale=ok", 0, &a), "ok");
  ASSERT_EQ(a.update, VW_UPDATE_FALSE);
  ASSERT_EQ(a.stable, 1);
  ASSERT_STR_EQ(run("stale=update_after", 0, &a), "ok");
  ASSERT_EQ(a.update, VW_UPDATE_LAZY);
  ASSERT_STR_EQ(run("update=lazy&limit=+5&skip=0", 0, &a), "ok");
  ASSERT_EQ(a.update, VW_UPDATE_LAZY);
  ASSERT_EQ(a.limit, 5);
  ASSERT_STR_EQ(run("limit=3&limit=7", 0, &a), "ok"); /* the last one wins */
  ASSERT_EQ(a.limit, 7);
  ASSERT_STR_EQ(run("reduce=false", 1, &a), "ok");
  ASSERT_EQ(a.red, 0);
}

TEST(vargs_fuzz_smoke) { test_fuzz_smoke("fuzz_vargs"); }
