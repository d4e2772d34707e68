/* fuzz_mango_req.c — libFuzzer target for the Mango request parsers of
 * src/index/mquery.h: mq_parse (the body of _find and _explain) and
 * mq_index_parse (the body of POST _index).
 *
 * Each input is parsed as JSON; when it is an object, both parsers get it
 * (it is no valid body for most of them: they must say so). The target
 * checks:
 *  - each parser either succeeds or fails with a code of util/err.h whose
 *    status is 400 (CouchDB's mango_error rows), 503 (mq_index_parse:
 *    "type" text/nouveau, no index service) or 500 (mq_parse: a bookmark
 *    that is not a string, CouchDB's unknown_error), with a reason — never
 *    a crash, never DV_ENOMEM with this much memory, never an unnamed code;
 *  - a second parse of the same body gives the same answer (code, reason,
 *    and for _index the same ddoc, name and view);
 *  - neither parser changes its input (compared as written JSON);
 *  - a valid _index request has ddoc "_design/…" (not just "_design/"), a
 *    name, and a view {"map": {"fields": {…}, "partial_filter_selector":
 *    {…}}, "reduce": "_count", "options": {"def": …}}; without "ddoc" and
 *    "name" both are the same generated 40 lowercase hex digits.
 * Any failed check aborts, which libFuzzer reports as a crash.
 *
 * Build: make fuzzers (clang -fsanitize=fuzzer,address,undefined).
 * Seeds: test/fuzz/seeds/fuzz_mango_req. The entry point is weak, like the
 * other targets', in case a test binary links this file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/mquery.h"
#include "json/json.h"
#include "util/buf.h"
#include "util/err.h"

#define CHECK(c)                                                                      \
  do {                                                                                \
    if (!(c)) {                                                                       \
      fprintf(stderr, "fuzz_mango_req: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                        \
    }                                                                                 \
  } while (0)

/* v as compact JSON in b (reset first). */
static void dump(dv_buf *b, const json_val *v) {
  buf_reset(b);
  CHECK(json_write(b, v) == 0);
}

static int same_str(const char *x, const char *y) { return x == y || (x && y && !strcmp(x, y)); }

static int is_hex40(const char *s) {
  if (strlen(s) != 40) return 0;
  for (int i = 0; i < 40; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

static const json_val *member(const json_val *o, const char *k, int type) {
  const json_val *v = json_obj_getz(o, k);
  CHECK(v != NULL && v->type == type);
  return v;
}

static void check_error(int rc, const char *why, int index) {
  int st = dv_err_http(rc);
  CHECK(rc != DV_ENOMEM);
  CHECK(strcmp(dv_err_name(rc), "UNKNOWN"));
  CHECK(st == 400 || (index && st == 503) || (!index && st == 500));
  CHECK(why != NULL && why[0]);
}

static void check_index(dv_arena *a, const json_val *body, dv_buf *b1, dv_buf *b2) {
  mq_index_req q1, q2;
  const char *why1 = NULL, *why2 = NULL;
  memset(&q1, 0, sizeof q1);
  memset(&q2, 0, sizeof q2);
  dump(b1, body);
  int rc1 = mq_index_parse(a, body, &q1, &why1);
  int rc2 = mq_index_parse(a, body, &q2, &why2);
  dump(b2, body);
  CHECK(b1->len == b2->len && !memcmp(b1->p, b2->p, b1->len)); /* input untouched */
  CHECK(rc1 == rc2);
  if (rc1) {
    check_error(rc1, why1, 1);
    CHECK(same_str(why1, why2));
    return;
  }
  CHECK(q1.ddoc && q1.name && q1.view && q2.ddoc && q2.name && q2.view);
  CHECK(!strncmp(q1.ddoc, "_design/", 8) && q1.ddoc[8]);
  /* an empty name is a name (mango_opts:validate_idx_name takes any string) */
  const json_val *given = json_obj_getz(body, "name");
  CHECK(q1.name[0] || (given && given->type == JSON_STRING && !given->len));
  CHECK(!strcmp(q1.ddoc, q2.ddoc) && !strcmp(q1.name, q2.name));
  if (!json_obj_getz(body, "ddoc") && !json_obj_getz(body, "name")) {
    CHECK(is_hex40(q1.name));
    CHECK(!strcmp(q1.ddoc + 8, q1.name));
  }
  CHECK(q1.view->type == JSON_OBJECT);
  const json_val *map = member(q1.view, "map", JSON_OBJECT);
  member(map, "fields", JSON_OBJECT);
  member(map, "partial_filter_selector", JSON_OBJECT);
  const json_val *red = member(q1.view, "reduce", JSON_STRING);
  CHECK(red->len == 6 && !memcmp(red->u.s, "_count", 6));
  const json_val *opts = member(q1.view, "options", JSON_OBJECT);
  CHECK(json_obj_getz(opts, "def") != NULL);
  dump(b1, q1.view);
  dump(b2, q2.view);
  CHECK(b1->len == b2->len && !memcmp(b1->p, b2->p, b1->len));
}

static void check_find(dv_arena *a, const json_val *body, dv_buf *b1, dv_buf *b2) {
  mq_req *r1 = NULL, *r2 = NULL;
  const char *why1 = NULL, *why2 = NULL;
  dump(b1, body);
  int rc1 = mq_parse(a, body, &r1, &why1);
  int rc2 = mq_parse(a, body, &r2, &why2);
  dump(b2, body);
  CHECK(b1->len == b2->len && !memcmp(b1->p, b2->p, b1->len)); /* input untouched */
  CHECK(rc1 == rc2);
  if (rc1) {
    check_error(rc1, why1, 0);
    CHECK(same_str(why1, why2));
    return;
  }
  CHECK(r1 != NULL && r2 != NULL);
  /* a valid body has a selector */
  CHECK(json_obj_getz(body, "selector") != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dv_arena a = DV_ARENA_INIT;
  dv_buf b1 = DV_BUF_INIT, b2 = DV_BUF_INIT;
  json_val *v = NULL;
  if (json_parse(&a, data, size, NULL, &v, NULL) != 0 || v->type != JSON_OBJECT) goto out;
  check_find(&a, v, &b1, &b2);
  check_index(&a, v, &b1, &b2);
out:
  buf_free(&b1);
  buf_free(&b2);
  arena_free(&a);
  return 0;
}
