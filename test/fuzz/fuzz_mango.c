/* fuzz_mango.c — libFuzzer target for Mango selectors (src/index/mango.c).
 *
 * Each input is parsed as JSON and, when it is, used as a selector; the
 * target checks:
 *  - mango_parse either succeeds or fails with a code whose row is a 400
 *    (CouchDB's mango_error) and a reason (never a crash, never DV_ENOMEM
 *    with this much memory), and a second parse agrees with it;
 *  - a parsed selector matches each of a few fixed documents, and the input
 *    itself, with 0 or 1, the same answer twice;
 *  - normalisation is stable under wrappers CouchDB treats as no-ops:
 *    {"$and":[S]}, {"$or":[S]} and {"$not":{"$not":S}} parse and give the
 *    same answers as S;
 *  - mango_cmp is reflexive and antisymmetric on the input's values.
 * Any failed check aborts, which libFuzzer reports as a crash.
 *
 * Build: make fuzzers (clang -fsanitize=fuzzer,address,undefined).
 * Seeds: test/fuzz/seeds/fuzz_mango. The entry point is weak, like the
 * other targets', in case a test binary links this file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/mango.h"
#include "json/json.h"

#define CHECK(c)                                                                  \
  do {                                                                            \
    if (!(c)) {                                                                   \
      fprintf(stderr, "fuzz_mango: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                    \
    }                                                                             \
  } while (0)

static const char *doc_texts[] = {
    "{\"_id\":\"doc1\",\"_rev\":\"1-abc\",\"name\":\"Paul\",\"age\":36,\"genre\":[\"Horror\","
    "\"Comedy\"],\"director\":{\"name\":\"Jim\",\"age\":50},\"results\":[82,85,88],\"n\":null,"
    "\"t\":true,\"f\":false,\"o\":{},\"a\":{\"b\":{\"c\":[1,{\"d\":2}]}},\"s\":\"abc123\","
    "\"big\":123456789012345678901234567890,\"x\":2.5,\"arr\":[{\"x\":1},{\"x\":2,\"y\":3}]}",
    "{\"_id\":\"a\",\"a\":[1,2,3],\"b\":\"\",\"c\":-0,\"d\":1e400,\"e\":[[],{},null]}",
    "{\"_id\":\"\\u00e9\",\"_deleted\":true,\"k\":{\"$gt\":1},\"v\":[\"x\",\"y\"]}",
};
#define NDOCS (sizeof doc_texts / sizeof doc_texts[0])

static dv_arena doc_arena = DV_ARENA_INIT;
static json_val *docs[NDOCS];

static void load_docs(void) {
  if (docs[0]) return;
  for (size_t i = 0; i < NDOCS; i++)
    CHECK(json_parse(&doc_arena, doc_texts[i], strlen(doc_texts[i]), NULL, &docs[i], NULL) == 0);
}

/* A selector wrapped as {"$and":[S]}, {"$or":[S]} or {"$not":{"$not":S}}. */
static json_val *wrap(dv_arena *a, int how, json_val *s) {
  json_val *arr, *inner, *outer = json_new_object(a);
  CHECK(outer != NULL);
  if (how < 2) {
    arr = json_new_array(a);
    CHECK(arr != NULL && json_arr_push(a, arr, s) == 0);
    CHECK(json_obj_setz(a, outer, how == 0 ? "$and" : "$or", arr) == 0);
  } else {
    inner = json_new_object(a);
    CHECK(inner != NULL && json_obj_setz(a, inner, "$not", s) == 0);
    CHECK(json_obj_setz(a, outer, "$not", inner) == 0);
  }
  return outer;
}

/* Collation checks over the value and its direct children. */
static void check_cmp(const json_val *v) {
  CHECK(mango_cmp(v, v) == 0);
  size_t n = v->type == JSON_ARRAY || v->type == JSON_OBJECT ? v->len : 0;
  if (n > 16) n = 16;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      const json_val *p = v->type == JSON_ARRAY ? v->u.items[i] : v->u.members[i].val;
      const json_val *q = v->type == JSON_ARRAY ? v->u.items[j] : v->u.members[j].val;
      int x = mango_cmp(p, q), y = mango_cmp(q, p);
      CHECK((x < 0 && y > 0) || (x > 0 && y < 0) || (x == 0 && y == 0));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dv_arena a = DV_ARENA_INIT;
  json_val *sel = NULL;
  load_docs();
  if (json_parse(&a, data, size, NULL, &sel, NULL) != 0) goto out;
  check_cmp(sel);

  mango_sel *s = NULL;
  const char *why = NULL, *why2 = NULL;
  int rc = mango_parse(&a, sel, &s, &why);
  mango_sel *s2 = NULL;
  int rc2 = mango_parse(&a, sel, &s2, &why2);
  CHECK(rc == rc2);
  if (rc) {
    CHECK(rc != DV_ENOMEM && dv_err_http(rc) == 400 && strcmp(dv_err_name(rc), "UNKNOWN"));
    CHECK(why != NULL && why2 != NULL && !strcmp(why, why2));
    goto out;
  }
  int want[NDOCS + 1];
  for (size_t i = 0; i <= NDOCS; i++) {
    const json_val *d = i < NDOCS ? docs[i] : sel;
    want[i] = mango_match(s, d);
    CHECK(want[i] == 0 || want[i] == 1);
    CHECK(mango_match(s2, d) == want[i]);
  }
  /* ({} alone matches everything; wrapped it means "equals {}".) */
  for (int how = 0; how < 3 && sel->len; how++) {
    mango_sel *w = NULL;
    rc = mango_parse(&a, wrap(&a, how, sel), &w, NULL);
    CHECK(rc == 0);
    for (size_t i = 0; i <= NDOCS; i++) CHECK(mango_match(w, i < NDOCS ? docs[i] : sel) == want[i]);
  }
out:
  arena_free(&a);
  return 0;
}
