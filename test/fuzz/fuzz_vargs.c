/* fuzz_vargs.c — libFuzzer target for a view query's parameters
 * (src/index/vargs.h).
 *
 * The input is lines: "q NAME=VALUE" is a query-string parameter, "b JSON"
 * a POST body whose members are applied first; the first byte of the input
 * (its low bit) says whether the view has a reduce. The target checks:
 *  - vw_args_set fails only with DV_EQUERY_PARSE or DV_EJSON, always with a
 *    reason; vw_args_check only with DV_EQUERY_PARSE and a reason;
 *  - after a successful check: keys is an array or absent, a map query
 *    neither reduces nor groups, a reducing query has no include_docs and
 *    no conflicts, limit and skip are not negative, update is one of the
 *    three.
 * Any failed check aborts, which libFuzzer reports as a crash.
 *
 * Build: make fuzzers. Seeds: test/fuzz/seeds/fuzz_vargs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/vargs.h"
#include "json/json.h"
#include "util/arena.h"

#define CHECK(c)                                                                  \
  do {                                                                            \
    if (!(c)) {                                                                   \
      fprintf(stderr, "fuzz_vargs: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                    \
    }                                                                             \
  } while (0)

__attribute__((weak)) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!size) return 0;
  int red_view = data[0] & 1;
  dv_arena a;
  arena_init(&a, 0);
  vw_args args;
  vw_args_init(&args);
  const char *p = (const char *)data + 1, *end = (const char *)data + size;
  int failed = 0;
  while (p < end && !failed) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    if (le - p >= 2 && p[1] == ' ') {
      const char *why = NULL;
      int rc = 0;
      if (p[0] == 'q') {
        const char *eq = memchr(p + 2, '=', (size_t)(le - p - 2));
        const char *v = eq ? eq + 1 : le;
        rc = vw_args_set(&args, p + 2, (size_t)((eq ? eq : le) - (p + 2)), v, (size_t)(le - v), NULL, &a, &why);
      } else if (p[0] == 'b') {
        json_val *body;
        if (!json_parse(&a, p + 2, (size_t)(le - p - 2), &(json_opts){.flags = JSON_COPY}, &body, NULL) &&
            body->type == JSON_OBJECT)
          for (size_t i = 0; !rc && i < body->len; i++)
            rc = vw_args_set(&args, body->u.members[i].key, body->u.members[i].klen, NULL, 0, body->u.members[i].val,
                             &a, &why);
      }
      if (rc) {
        CHECK(rc == DV_EQUERY_PARSE || rc == DV_EJSON);
        CHECK(why && *why);
        failed = 1;
      }
    }
    p = le + 1;
  }
  if (!failed) {
    const char *why = NULL;
    int rc = vw_args_check(&args, red_view, &why);
    if (rc) {
      CHECK(rc == DV_EQUERY_PARSE && why && *why);
    } else {
      CHECK(!args.keys || args.keys->type == JSON_ARRAY);
      if (!red_view) CHECK(!args.red && args.level == 0);
      if (args.red) CHECK(!args.include_docs && args.conflicts == -1);
      CHECK(args.limit >= 0 && args.skip >= 0);
      CHECK(args.update >= VW_UPDATE_FALSE && args.update <= VW_UPDATE_LAZY);
    }
  }
  arena_free(&a);
  return 0;
}
