/* test_ryw.c — read-your-writes against an in-memory model, on every backend.
 *
 * Thousands of random cases, from a fixed seed: a committed starting state
 * over six keys, then 1-4 operations (a last phase: 5-12) drawn from set, clear, clear_range,
 * atomic ADD / MAX / MIN / BYTE_MIN / BYTE_MAX, with point reads and
 * forward / reverse / limited range reads inside the transaction compared
 * against the model after the operations (and often between them), then
 * the committed state compared once more from a fresh transaction. The
 * model's atomic ops are written here from FDB's definitions, not taken
 * from kv.c, so a shared mistake cannot hide. A failing case prints its
 * seed, starting state and operations.
 */
#include <stdarg.h>

#include "kvt.h"

#define NK 6
#define MAXV 16
#define RYW_CASES 2500 /* 1-4 operations each */
#define RYW_DEEP 500   /* then 5-12 operations each */

typedef struct bkey {
  const char *k; /* bytes */
  size_t len;    /* length (may contain NUL) */
} bkey;

static const bkey keys[NK] = {{"r/a", 3}, {"r/b", 3}, {"r/c", 3}, {"r/d", 3}, {"r/e", 3}, {"r/f", 3}};
/* Range boundaries, sorted: around and between the keys. */
static const bkey bounds[] = {{"r/", 2},     {"r/a", 3}, {"r/a\0", 4}, {"r/b", 3}, {"r/b\0", 4},
                              {"r/c", 3},    {"r/c\0", 4}, {"r/d", 3}, {"r/d\0", 4}, {"r/e", 3},
                              {"r/e\0", 4}, {"r/f", 3}, {"r/f\0", 4}, {"r0", 2}};
#define NB (sizeof bounds / sizeof bounds[0])

typedef struct mval {
  int present;        /* key exists */
  uint8_t v[MAXV];    /* its value */
  size_t len;         /* value length */
} mval;

typedef struct model {
  mval m[NK]; /* state per key */
} model;

/* The index of key i in bounds[] is 1 + 2*i; key i is in [bounds[b],
 * bounds[e]) iff b <= 1+2i < e. */
static int key_in(int i, int b, int e) { return b <= 1 + 2 * i && 1 + 2 * i < e; }

static int lex_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  size_t n = an < bn ? an : bn;
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return an < bn ? -1 : an > bn ? 1 : 0;
}

/* FDB's atomic ops over one model value. */
static void model_atomic(mval *x, kv_atomic_op op, const uint8_t *p, size_t pl) {
  if (!x->present) { /* every op stores the param over an absent key */
    x->present = 1;
    memcpy(x->v, p, pl);
    x->len = pl;
    return;
  }
  if (op == KV_BYTE_MIN || op == KV_BYTE_MAX) {
    int c = lex_cmp(x->v, x->len, p, pl);
    if ((op == KV_BYTE_MIN && c > 0) || (op == KV_BYTE_MAX && c < 0)) {
      memcpy(x->v, p, pl);
      x->len = pl;
    }
    return;
  }
  uint8_t cur[MAXV];
  for (size_t i = 0; i < pl; i++) cur[i] = i < x->len ? x->v[i] : 0;
  if (op == KV_ADD) {
    int carry = 0;
    for (size_t i = 0; i < pl; i++) {
      int s = cur[i] + p[i] + carry;
      cur[i] = (uint8_t)(s & 0xff);
      carry = s >> 8;
    }
  } else {
    int c = 0; /* compare as unsigned little-endian numbers */
    for (size_t i = pl; i-- > 0 && !c;)
      if (cur[i] != p[i]) c = cur[i] < p[i] ? -1 : 1;
    if ((op == KV_MAX && c < 0) || (op == KV_MIN && c > 0)) memcpy(cur, p, pl);
  }
  memcpy(x->v, cur, pl);
  x->len = pl;
}

/* A log of the current case, printed when a check fails. */
static char case_log[8192];
static size_t case_len;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(case_log + case_len, sizeof case_log - case_len, fmt, ap);
  va_end(ap);
  if (n > 0) case_len += (size_t)n;
  if (case_len >= sizeof case_log) case_len = sizeof case_log - 1;
}

#define CHECK(c, ...)                                                              \
  do {                                                                             \
    if (!(c)) {                                                                    \
      fprintf(stderr, "case log:\n%s", case_log);                                  \
      test_fail_(__FILE__, __LINE__, __VA_ARGS__);                                 \
    }                                                                              \
  } while (0)

static const char *hexs(const uint8_t *p, size_t n) {
  static char out[4][2 * MAXV + 8];
  static int which;
  char *o = out[which++ % 4];
  size_t j = 0;
  for (size_t i = 0; i < n && i < MAXV; i++) j += (size_t)sprintf(o + j, "%02x", p[i]);
  o[j] = 0;
  return o;
}

static void log_state(const model *m) {
  for (int i = 0; i < NK; i++) {
    if (m->m[i].present) logf_(" %s=%s", keys[i].k, hexs(m->m[i].v, m->m[i].len));
    else logf_(" %s=absent", keys[i].k);
  }
  logf_("\n");
}

static const char *op_name(kv_atomic_op op) {
  switch (op) {
  case KV_ADD: return "ADD";
  case KV_MAX: return "MAX";
  case KV_MIN: return "MIN";
  case KV_BYTE_MIN: return "BYTE_MIN";
  case KV_BYTE_MAX: return "BYTE_MAX";
  }
  return "?";
}

/* Compare the transaction's view with the model: every key by point
 * read, then a few range reads. */
static void check_view(kv_txn *t, const model *m, uint64_t *rs, const char *when) {
  for (int i = 0; i < NK; i++) {
    const uint8_t *v;
    size_t vl;
    int found;
    int flags = kvt_rand_below(rs, 2) ? KV_SNAPSHOT : 0;
    int rc = kv_get(t, keys[i].k, keys[i].len, flags, &v, &vl, &found);
    CHECK(rc == 0, "%s: get %s: %s", when, keys[i].k, dv_err_name(rc));
    const mval *x = &m->m[i];
    CHECK(found == x->present, "%s: get %s found=%d, model %d", when, keys[i].k, found, x->present);
    if (found)
      CHECK(vl == x->len && (!vl || !memcmp(v, x->v, vl)), "%s: get %s = %s, model %s", when,
            keys[i].k, hexs(v, vl), hexs(x->v, x->len));
  }
  for (int r = 0; r < 3; r++) {
    int b, e;
    if (r == 0) { b = 0; e = NB - 1; }
    else {
      b = kvt_rand_below(rs, NB);
      e = b + kvt_rand_below(rs, NB - b);
    }
    int reverse = r == 0 ? kvt_rand_below(rs, 2) : kvt_rand_below(rs, 2);
    int limit = kvt_rand_below(rs, 4);
    int flags = (reverse ? KV_REVERSE : 0) | (kvt_rand_below(rs, 2) ? KV_SNAPSHOT : 0);
    /* expected: present keys in range, in the read's order */
    int exp[NK], ne = 0;
    for (int k = 0; k < NK; k++) {
      int i = reverse ? NK - 1 - k : k;
      if (m->m[i].present && key_in(i, b, e)) exp[ne++] = i;
    }
    kv_pair *p;
    int n, more;
    int rc = kv_get_range(t, bounds[b].k, bounds[b].len, bounds[e].k, bounds[e].len, limit, flags, &p,
                          &n, &more);
    CHECK(rc == 0, "%s: range [%s, %s) limit %d rev %d: %s", when, hexs((const uint8_t *)bounds[b].k, bounds[b].len),
          hexs((const uint8_t *)bounds[e].k, bounds[e].len), limit, reverse, dv_err_name(rc));
    int want = limit && ne > limit ? limit : ne;
    CHECK(n == want, "%s: range [%s, %s) limit %d rev %d: %d pairs, model %d", when,
          hexs((const uint8_t *)bounds[b].k, bounds[b].len), hexs((const uint8_t *)bounds[e].k, bounds[e].len),
          limit, reverse, n, want);
    for (int j = 0; j < n; j++) {
      const mval *x = &m->m[exp[j]];
      CHECK(p[j].key_len == keys[exp[j]].len && !memcmp(p[j].key, keys[exp[j]].k, p[j].key_len),
            "%s: range pair %d key %s, model %s", when, j, hexs(p[j].key, p[j].key_len), keys[exp[j]].k);
      CHECK(p[j].val_len == x->len && (!x->len || !memcmp(p[j].val, x->v, x->len)),
            "%s: range pair %d (%s) = %s, model %s", when, j, keys[exp[j]].k, hexs(p[j].val, p[j].val_len),
            hexs(x->v, x->len));
    }
    if (limit && ne > limit) CHECK(more == 1, "%s: more=%d with %d of %d returned", when, more, n, ne);
    if (!limit || ne < limit) CHECK(more == 0, "%s: more=%d with all %d returned", when, more, n);
  }
}

static void random_value(uint64_t *rs, uint8_t *v, size_t *len) {
  *len = (size_t)kvt_rand_below(rs, 9);
  /* Small alphabets make equal prefixes and carries likely. */
  int alpha = kvt_rand_below(rs, 3);
  for (size_t i = 0; i < *len; i++) {
    uint8_t x = (uint8_t)kvt_rand(rs);
    v[i] = alpha == 0 ? (x & 1 ? 0xff : 0x00) : alpha == 1 ? (uint8_t)('a' + x % 3) : x;
  }
}

KV_CONTRACT(ryw_model) {
  kv_db *db = kvt_open(be);
  uint64_t rs = 0x72797731; /* fixed seed */
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  long checks = 0;
  for (int c = 0; c < RYW_CASES + RYW_DEEP; c++) {
    uint64_t case_seed = rs;
    case_len = 0;
    case_log[0] = 0;
    logf_("case %d (rng state %llu)\nstart:", c, (unsigned long long)case_seed);
    model m;
    memset(&m, 0, sizeof m);
    /* Committed starting state. */
    ASSERT_OK(kv_clear_range(t, "r/", 2, "r0", 2));
    for (int i = 0; i < NK; i++) {
      if (kvt_rand_below(&rs, 3) == 0) continue;
      m.m[i].present = 1;
      random_value(&rs, m.m[i].v, &m.m[i].len);
      ASSERT_OK(kv_set(t, keys[i].k, keys[i].len, m.m[i].v, m.m[i].len));
    }
    ASSERT_OK(kv_commit(t));
    kv_txn_reset(t);
    log_state(&m);

    if (kvt_rand_below(&rs, 3) == 0) check_view(t, &m, &rs, "before ops"), checks++;
    int nops = c < RYW_CASES ? 1 + kvt_rand_below(&rs, 4) : 5 + kvt_rand_below(&rs, 8);
    for (int o = 0; o < nops; o++) {
      int kind = kvt_rand_below(&rs, 12);
      int i = kvt_rand_below(&rs, NK);
      uint8_t v[MAXV];
      size_t vl;
      if (kind < 3) {
        random_value(&rs, v, &vl);
        logf_("op %d: set %s = %s\n", o, keys[i].k, hexs(v, vl));
        ASSERT_OK(kv_set(t, keys[i].k, keys[i].len, v, vl));
        m.m[i].present = 1;
        memcpy(m.m[i].v, v, vl);
        m.m[i].len = vl;
      } else if (kind < 5) {
        logf_("op %d: clear %s\n", o, keys[i].k);
        ASSERT_OK(kv_clear(t, keys[i].k, keys[i].len));
        m.m[i].present = 0;
      } else if (kind < 7) {
        int b = kvt_rand_below(&rs, NB), e = b + kvt_rand_below(&rs, NB - b);
        logf_("op %d: clear_range [%s, %s)\n", o, hexs((const uint8_t *)bounds[b].k, bounds[b].len),
              hexs((const uint8_t *)bounds[e].k, bounds[e].len));
        ASSERT_OK(kv_clear_range(t, bounds[b].k, bounds[b].len, bounds[e].k, bounds[e].len));
        for (int k = 0; k < NK; k++)
          if (key_in(k, b, e)) m.m[k].present = 0;
      } else {
        static const kv_atomic_op ops[] = {KV_ADD, KV_MAX, KV_MIN, KV_BYTE_MIN, KV_BYTE_MAX};
        kv_atomic_op op = ops[kvt_rand_below(&rs, 5)];
        random_value(&rs, v, &vl);
        logf_("op %d: %s %s %s\n", o, op_name(op), keys[i].k, hexs(v, vl));
        ASSERT_OK(kv_atomic(t, op, keys[i].k, keys[i].len, v, vl));
        model_atomic(&m.m[i], op, v, vl);
      }
      if (o == nops - 1 || kvt_rand_below(&rs, 2)) {
        char when[32];
        sprintf(when, "after op %d", o);
        check_view(t, &m, &rs, when);
        checks++;
      }
    }
    logf_("model after ops:");
    log_state(&m);
    int rc = kv_commit(t);
    CHECK(rc == 0, "commit: %s", dv_err_name(rc));
    kv_txn_reset(t);
    check_view(t, &m, &rs, "after commit");
    checks++;
    kv_txn_reset(t);
  }
  printf("%s: %d cases, %ld view checks\n", be->name, RYW_CASES + RYW_DEEP, checks);
  kv_txn_destroy(t);
  kv_close(db);
}
