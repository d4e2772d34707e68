/* test_wset.c — the ordered write set (src/kv/wset.c) against a model.
 *
 * kv_wset_model: from fixed seeds, cases of 400 operations over a universe
 * of 300 keys sharing a long prefix (as tuple keys do): set, clear and
 * clear_range, the key drawn mostly as the next one after the last (the
 * ascending runs a _bulk_docs transaction writes, which get_or_insert's
 * finger links without a search), else at random, again, or just before
 * the last. After every operation the skip list must be well formed (every
 * level strictly ascending, each node on the levels its height says, the
 * count right) and every key of the universe must read as the model says:
 * its value if set, cleared, or not written — read as the store reads the
 * set (ws_find_le, then the predecessor's cleared_after). A failure prints
 * the seed and the operation.
 */
#include <stdio.h>
#include <string.h>

#include "kv/wset.h"
#include "test.h"

#define NKEYS 300
#define NOPS 400
#define NCASES 300

enum { M_ABSENT, M_SET, M_CLEARED };

typedef struct mkey {
  int state;    /* M_* */
  unsigned val; /* M_SET: the value written */
} mkey;

static uint64_t next_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* Key i: a tuple-like prefix, then i in a width that sorts as numbers. */
static size_t make_key(uint8_t *out, int i) {
  return (size_t)snprintf((char *)out, 64, "\x02" "divan\x01\x15\x07\x02" "d\x01\x02" "3f1e9a0c4b7d2e8f%05d", i);
}

static void check_shape(const ws *w, uint64_t seed, int op) {
  size_t n0 = 0;
  for (int i = 0; i < w->level; i++) {
    const ws_node *prev = NULL;
    for (const ws_node *x = w->head->next[i]; x; x = x->next[i]) {
      ASSERTF(x->height > i, "seed %llu op %d: a node of height %d on level %d", (unsigned long long)seed, op, x->height, i);
      if (prev)
        ASSERTF(ws_keycmp(prev->key, prev->klen, x->key, x->klen) < 0, "seed %llu op %d: level %d out of order",
                (unsigned long long)seed, op, i);
      prev = x;
      if (i == 0) n0++;
    }
  }
  for (int i = w->level; i < WS_MAX_HEIGHT; i++)
    ASSERTF(!w->head->next[i], "seed %llu op %d: level %d in use above level %d", (unsigned long long)seed, op, i, w->level);
  ASSERTF(n0 == w->count, "seed %llu op %d: %zu nodes, count %zu", (unsigned long long)seed, op, n0, w->count);
}

/* What the store reads for key k out of the set alone. */
static int read_state(const ws *w, const uint8_t *k, size_t kl, unsigned *val) {
  ws_node *n = ws_find_le(w, k, kl);
  if (n != w->head && ws_keycmp(n->key, n->klen, k, kl) == 0) {
    if (n->op == WS_SET) {
      ASSERT(n->vlen == sizeof *val);
      memcpy(val, n->val, sizeof *val);
      return M_SET;
    }
    if (n->op == WS_CLEAR) return M_CLEARED;
    ASSERT(n->op == WS_NONE); /* a range's end: its own state is below */
    return M_ABSENT;
  }
  return n != w->head && n->cleared_after ? M_CLEARED : M_ABSENT;
}

static void check_reads(const ws *w, const mkey *m, uint64_t seed, int op) {
  uint8_t k[64];
  for (int i = 0; i < NKEYS; i++) {
    size_t kl = make_key(k, i);
    unsigned v = 0;
    int st = read_state(w, k, kl, &v);
    ASSERTF(st == m[i].state, "seed %llu op %d: key %d reads state %d, the model says %d", (unsigned long long)seed, op,
            i, st, m[i].state);
    if (st == M_SET)
      ASSERTF(v == m[i].val, "seed %llu op %d: key %d reads %u, the model says %u", (unsigned long long)seed, op, i, v,
              m[i].val);
  }
}

TEST(kv_wset_model) {
  ws w;
  ASSERT_OK(ws_init(&w));
  uint8_t k[64], e[64];
  long fast_shaped = 0;
  for (uint64_t c = 1; c <= NCASES; c++) {
    uint64_t seed = c * 0x9e3779b97f4a7c15ull, r = seed;
    mkey m[NKEYS];
    memset(m, 0, sizeof m);
    ws_reset(&w);
    int last = (int)(next_rand(&r) % NKEYS);
    for (int op = 0; op < NOPS; op++) {
      unsigned pick = (unsigned)(next_rand(&r) % 100);
      int key = pick < 60 ? last + 1 : pick < 80 ? (int)(next_rand(&r) % NKEYS) : pick < 90 ? last : last - 1;
      if (key < 0 || key >= NKEYS) key = (int)(next_rand(&r) % NKEYS);
      if (pick < 60) fast_shaped++;
      unsigned kind = (unsigned)(next_rand(&r) % 100);
      size_t kl = make_key(k, key);
      if (kind < 75) {
        unsigned v = (unsigned)next_rand(&r);
        ASSERT_OK(ws_set(&w, k, kl, (const uint8_t *)&v, sizeof v));
        m[key] = (mkey){M_SET, v};
      } else if (kind < 90) {
        ASSERT_OK(ws_clear(&w, k, kl));
        m[key] = (mkey){M_CLEARED, 0};
      } else {
        int end = key + 1 + (int)(next_rand(&r) % 12);
        if (end > NKEYS) end = NKEYS;
        size_t el = make_key(e, end); /* key NKEYS is past the universe: still a key */
        ASSERT_OK(ws_clear_range(&w, k, kl, e, el));
        for (int i = key; i < end; i++) m[i] = (mkey){M_CLEARED, 0};
      }
      last = key;
      check_shape(&w, seed, op);
      if (op % 8 == 0 || op == NOPS - 1) check_reads(&w, m, seed, op);
    }
  }
  ASSERT(fast_shaped > NCASES * NOPS / 2);
  ws_free(&w);
}
