/* fuzz_collate.c — libFuzzer target for src/index/collate.c: the input is
 * two JSON texts separated by the first NUL byte (or split in the middle).
 * When both parse, collation must be antisymmetric, both orders reflexive,
 * and memcmp of their keys must agree with collate_cmp — also when each
 * sits inside an array after the same value. */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "index/collate.h"
#include "util/arena.h"

static int sgn(int x) { return x < 0 ? -1 : x > 0; }

static int keycmp(const dv_buf *a, const dv_buf *b) {
  int r = memcmp(a->p, b->p, a->len < b->len ? a->len : b->len);
  if (r) return sgn(r);
  return a->len < b->len ? -1 : a->len > b->len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t an = nul ? (size_t)(nul - data) : size / 2;
  size_t boff = nul ? an + 1 : an;
  dv_arena a = DV_ARENA_INIT;
  json_val *p = NULL, *q = NULL;
  if (json_parse(&a, (const char *)data, an, NULL, &p, NULL) ||
      json_parse(&a, (const char *)data + boff, size - boff, NULL, &q, NULL)) {
    arena_free(&a);
    return 0;
  }
  int c = sgn(collate_cmp(p, q));
  assert(sgn(collate_cmp(q, p)) == -c);
  assert(collate_cmp(p, p) == 0 && collate_raw_cmp(q, q) == 0);
  assert(sgn(collate_raw_cmp(p, q)) == -sgn(collate_raw_cmp(q, p)));
  dv_buf kp, kq;
  buf_init(&kp);
  buf_init(&kq);
  if (!collate_key(&kp, p) && !collate_key(&kq, q)) {
    assert(keycmp(&kp, &kq) == c);
    json_val *ap = json_new_array(&a), *aq = json_new_array(&a);
    if (ap && aq && !json_arr_push(&a, ap, q) && !json_arr_push(&a, ap, p) && !json_arr_push(&a, aq, q) &&
        !json_arr_push(&a, aq, q)) {
      buf_reset(&kp);
      buf_reset(&kq);
      if (!collate_key(&kp, ap) && !collate_key(&kq, aq)) assert(keycmp(&kp, &kq) == c);
    }
  }
  buf_reset(&kp);
  buf_reset(&kq);
  if (!collate_raw_key(&kp, p) && !collate_raw_key(&kq, q)) assert(keycmp(&kp, &kq) == sgn(collate_raw_cmp(p, q)));
  buf_free(&kp);
  buf_free(&kq);
  arena_free(&a);
  return 0;
}
