/* fuzz_vreduce.c — libFuzzer target for src/index/vreduce.c, the built-in
 * reduces. The input is one byte of choices, then a JSON text; when the
 * text is an array its elements are the rows (each both key and value;
 * bit 0x40 makes every key null). For each of _sum, _count, _stats and
 * _approx_count_distinct the target reduces all rows, reduces chunks (the
 * choice byte picks their sizes) and rereduces the chunk states in one or
 * two levels, and finalizes every state it got. It checks:
 *  - every call returns 0 or DV_EVIEW_BUILTIN (with CouchDB's error name
 *    and a reason), never anything else, and on failure leaves out empty;
 *  - reduce is deterministic (twice, same bytes);
 *  - a state this module wrote always finalizes, and the answer is JSON;
 *  - for _count and _approx_count_distinct, rereduce of the chunks is
 *    byte-equal to the reduce of all rows (their merges are exact);
 *  - vr_state_error agrees with vr_final: a state it calls an error
 *    finalizes to an object whose "error" is builtin_reduce_error.
 * The JSON text itself is also fed to rereduce as a state, which must fail
 * cleanly when it is not one. ASan/UBSan catch the rest, leaks included.
 *
 * Build: make build/fuzz/fuzz_vreduce. Seeds: test/fuzz/seeds/fuzz_vreduce.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/vreduce.h"
#include "json/json.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/err.h"

#define CHECK(c)                                                                    \
  do {                                                                              \
    if (!(c)) {                                                                     \
      fprintf(stderr, "fuzz_vreduce: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                      \
    }                                                                               \
  } while (0)

#define MAXCHUNKS 64

static void check_rc(int rc, const vr_err *e, const dv_buf *out, size_t start) {
  CHECK(rc == 0 || rc == DV_EVIEW_BUILTIN);
  if (rc) {
    CHECK(e->error && !strcmp(e->error, "builtin_reduce_error"));
    CHECK(e->reason != NULL);
    CHECK(out->len == start);
  }
}

static void check_final(vr_kind k, const dv_buf *st, dv_arena *a) {
  dv_buf out = DV_BUF_INIT;
  CHECK(vr_final(k, st->p, st->len, &out) == 0);
  json_val *v = NULL;
  json_opts o = {JSON_DEPTH_LIMIT, 0, 0};
  CHECK(json_parse(a, out.p, out.len, &o, &v, NULL) == 0);
  vr_err e = {0};
  int isErr = vr_state_error(k, st->p, st->len, a, &e);
  CHECK(isErr == 0 || isErr == 1);
  if (isErr) {
    const json_val *x = json_obj_getz(v, "error");
    CHECK(k == VR_SUM && x && x->type == JSON_STRING && x->len == 20);
    CHECK(!memcmp(x->u.s, "builtin_reduce_error", 20));
  }
  buf_free(&out);
}

static void one_kind(vr_kind k, const vr_row *rows, size_t n, unsigned choice, dv_arena *a) {
  dv_buf all = DV_BUF_INIT, again = DV_BUF_INIT;
  vr_err e = {0};
  int rc = vr_reduce(k, rows, n, a, &all, &e);
  check_rc(rc, &e, &all, 0);
  int rc2 = vr_reduce(k, rows, n, a, &again, &e);
  CHECK(rc2 == rc && again.len == all.len && (!all.len || !memcmp(again.p, all.p, all.len)));
  if (!rc) check_final(k, &all, a);
  /* chunks of 1 + (choice % 4) rows, rereduced in groups of 3 then once */
  size_t per = 1 + choice % 4;
  dv_buf st[MAXCHUNKS];
  size_t ns = 0;
  int failed = 0;
  for (size_t i = 0; i < n && ns < MAXCHUNKS; i += per) {
    size_t c = n - i < per ? n - i : per;
    buf_init(&st[ns]);
    rc = vr_reduce(k, rows + i, c, a, &st[ns], &e);
    check_rc(rc, &e, &st[ns], 0);
    failed |= rc != 0;
    ns++;
  }
  if (!failed && ns && ns * per >= n) {
    dv_buf mid[MAXCHUNKS], top = DV_BUF_INIT;
    size_t nm = 0;
    for (size_t i = 0; i < ns; i += 3) {
      const uint8_t *p[3];
      size_t l[3], c = ns - i < 3 ? ns - i : 3;
      for (size_t j = 0; j < c; j++) {
        p[j] = st[i + j].p;
        l[j] = st[i + j].len;
      }
      buf_init(&mid[nm]);
      rc = vr_rereduce(k, p, l, c, a, &mid[nm], &e);
      check_rc(rc, &e, &mid[nm], 0);
      failed |= rc != 0;
      nm++;
    }
    if (!failed) {
      const uint8_t *p[MAXCHUNKS];
      size_t l[MAXCHUNKS];
      for (size_t i = 0; i < nm; i++) {
        p[i] = mid[i].p;
        l[i] = mid[i].len;
      }
      rc = vr_rereduce(k, p, l, nm, a, &top, &e);
      check_rc(rc, &e, &top, 0);
      if (!rc) {
        check_final(k, &top, a);
        if ((k == VR_COUNT || k == VR_APPROX) && all.len)
          CHECK(top.len == all.len && !memcmp(top.p, all.p, all.len));
      }
    }
    for (size_t i = 0; i < nm; i++) buf_free(&mid[i]);
    buf_free(&top);
  }
  for (size_t i = 0; i < ns; i++) buf_free(&st[i]);
  buf_free(&all);
  buf_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned choice = data[0];
  const uint8_t *text = data + 1;
  size_t tn = size - 1;
  dv_arena a = DV_ARENA_INIT;
  static const vr_kind kinds[] = {VR_SUM, VR_COUNT, VR_STATS, VR_APPROX};
  /* the text as a state: a clean failure or a reduction */
  for (int i = 0; i < 4; i++) {
    const uint8_t *p[2] = {text, text};
    size_t l[2] = {tn, tn};
    dv_buf out = DV_BUF_INIT;
    vr_err e = {0};
    int rc = vr_rereduce(kinds[i], p, l, 1 + (choice & 1), &a, &out, &e);
    CHECK(rc == 0 || rc == DV_EVIEW_BUILTIN || rc == DV_ECORRUPT);
    if (rc) CHECK(out.len == 0);
    dv_buf f = DV_BUF_INIT;
    rc = vr_final(kinds[i], text, tn, &f);
    CHECK(rc == 0 || rc == DV_ECORRUPT);
    rc = vr_state_error(kinds[i], text, tn, &a, &e);
    CHECK(rc == 0 || rc == 1 || rc == DV_ECORRUPT);
    buf_free(&out);
    buf_free(&f);
  }
  json_val *v = NULL;
  if (json_parse(&a, text, tn, NULL, &v, NULL) == 0 && v->type == JSON_ARRAY && v->len <= 4096) {
    vr_row *rows = arena_alloc(&a, (v->len + 1) * sizeof *rows);
    CHECK(rows != NULL);
    for (size_t i = 0; i < v->len; i++)
      rows[i] = (vr_row){choice & 0x40 ? NULL : v->u.items[i], v->u.items[i], "doc", 3};
    for (int i = 0; i < 4; i++) one_kind(kinds[i], rows, v->len, choice >> 1, &a);
  }
  arena_free(&a);
  return 0;
}
