/* wset.c — the ordered write set of wset.h: a skip list over an arena. */
#include "kv/wset.h"

#include <string.h>

#include "kv/kv_int.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/err.h"

struct ws_chunk {
  ws_chunk *next;          /* older chunk */
  size_t size;             /* payload bytes */
  _Alignas(16) uint8_t data[]; /* payload */
};

#define CHUNK_MIN (64 * 1024)

static void *arena_alloc(ws *w, size_t n) {
  n = (n + 7) & ~(size_t)7;
  if (n > w->avail) {
    size_t size = n > CHUNK_MIN ? n : CHUNK_MIN;
    ws_chunk *c = dv_malloc(sizeof *c + size);
    if (!c) return NULL;
    c->next = w->chunks;
    c->size = size;
    w->chunks = c;
    w->cur = c->data;
    w->avail = size;
    w->arena_bytes += size;
  }
  void *p = w->cur;
  w->cur += n;
  w->avail -= n;
  return p;
}

uint8_t *ws_dup(ws *w, const void *p, size_t n) {
  uint8_t *q = arena_alloc(w, n ? n : 1);
  if (q && n) memcpy(q, p, n);
  return q;
}

int ws_keycmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) { return dv_bytes_cmp(a, al, b, bl); }

static ws_node *node_new(ws *w, int height) {
  ws_node *n = arena_alloc(w, sizeof *n + (size_t)height * sizeof(ws_node *));
  if (!n) return NULL;
  memset(n, 0, sizeof *n + (size_t)height * sizeof(ws_node *));
  n->height = (uint8_t)height;
  return n;
}

static int make_head(ws *w) {
  w->head = node_new(w, WS_MAX_HEIGHT);
  w->level = 1;
  w->count = 0;
  w->last = NULL;
  return w->head ? 0 : DV_ENOMEM;
}

int ws_init(ws *w) {
  memset(w, 0, sizeof *w);
  w->rng = 0x9e3779b97f4a7c15ull;
  return make_head(w);
}

void ws_free(ws *w) {
  ws_chunk *c = w->chunks;
  while (c) {
    ws_chunk *next = c->next;
    dv_free(c);
    c = next;
  }
  memset(w, 0, sizeof *w);
}

void ws_reset(ws *w) {
  if (!w->chunks) { ws_init(w); return; }
  /* Keep the newest chunk only: a transaction reused after reset usually
   * needs about as much again. */
  ws_chunk *keep = w->chunks, *c = keep->next;
  while (c) {
    ws_chunk *next = c->next;
    dv_free(c);
    c = next;
  }
  keep->next = NULL;
  w->chunks = keep;
  w->cur = keep->data;
  w->avail = keep->size;
  w->arena_bytes = keep->size;
  make_head(w); /* cannot fail: the kept chunk has room for it */
}

static int random_height(ws *w) {
  uint64_t x = w->rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  w->rng = x;
  int h = 1;
  while (h < WS_MAX_HEIGHT && (x & 3) == 0) { h++; x >>= 2; }
  return h;
}

/* Fill upd[i] with the last node at level i whose key is < k; return the
 * level-0 successor (first node >= k) or NULL. */
static ws_node *search(const ws *w, const uint8_t *k, size_t kl, ws_node **upd) {
  ws_node *x = w->head;
  for (int i = w->level - 1; i >= 0; i--) {
    while (x->next[i] && ws_keycmp(x->next[i]->key, x->next[i]->klen, k, kl) < 0) x = x->next[i];
    if (upd) upd[i] = x;
  }
  return x->next[0];
}

ws_node *ws_find_lt(const ws *w, const uint8_t *k, size_t kl) {
  ws_node *x = w->head;
  for (int i = w->level - 1; i >= 0; i--)
    while (x->next[i] && ws_keycmp(x->next[i]->key, x->next[i]->klen, k, kl) < 0) x = x->next[i];
  return x;
}

ws_node *ws_find_le(const ws *w, const uint8_t *k, size_t kl) {
  ws_node *x = ws_find_lt(w, k, kl);
  ws_node *n = x->next[0];
  if (n && ws_keycmp(n->key, n->klen, k, kl) == 0) return n;
  return x;
}

/* The node for key k, created if missing with the state the key had: a
 * key inside a cleared region starts CLEAR and bounds the rest of it.
 *
 * A finger on the last insert: a key that falls right after it, with no
 * node in between, is linked there without a search — at each level its
 * predecessor is the last node itself where that is tall enough, else
 * the last node's own predecessor there (nothing was inserted since). A
 * _bulk_docs transaction writes each document's body, revision and
 * changes keys in three ascending runs, so most of its ~15 keys a
 * document take this path; the search from the head compared ~2 log2(n)
 * keys sharing a long prefix and was 60 % of the request thread's time in
 * a 1,000-document _bulk_docs (perf). ws_clear_range unlinks nodes, so
 * it drops the finger. */
static ws_node *get_or_insert(ws *w, const uint8_t *k, size_t kl) {
  ws_node *upd[WS_MAX_HEIGHT];
  ws_node *n, *l = w->last;
  int c;
  if (l && (c = ws_keycmp(l->key, l->klen, k, kl)) <= 0) {
    if (c == 0) return l;
    n = l->next[0];
    if (!n || (c = ws_keycmp(n->key, n->klen, k, kl)) > 0) {
      for (int i = 0; i < w->level; i++) upd[i] = i < l->height ? l : w->fing[i];
      goto insert;
    }
    if (c == 0) return n;
  }
  n = search(w, k, kl, upd);
  if (n && ws_keycmp(n->key, n->klen, k, kl) == 0) return n;
insert:;
  int h = random_height(w);
  n = node_new(w, h);
  if (!n) return NULL;
  n->key = ws_dup(w, k, kl);
  if (!n->key) return NULL;
  n->klen = kl;
  ws_node *pred = upd[0];
  if (pred->cleared_after) {
    n->op = WS_CLEAR;
    n->cleared_after = 1;
  }
  if (h > w->level) {
    for (int i = w->level; i < h; i++) upd[i] = w->head;
    w->level = h;
  }
  for (int i = 0; i < h; i++) {
    n->next[i] = upd[i]->next[i];
    upd[i]->next[i] = n;
  }
  w->count++;
  w->last = n;
  memcpy(w->fing, upd, (size_t)w->level * sizeof *upd);
  return n;
}

static int put_value(ws *w, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl, int op) {
  ws_node *n = get_or_insert(w, k, kl);
  if (!n) return DV_ENOMEM;
  const uint8_t *copy = ws_dup(w, v, vl);
  if (!copy) return DV_ENOMEM;
  n->op = (uint8_t)op;
  n->val = copy;
  n->vlen = vl;
  n->atoms = n->atoms_tail = NULL;
  return 0;
}

int ws_set(ws *w, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  return put_value(w, k, kl, v, vl, WS_SET);
}

int ws_set_vsval(ws *w, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  return put_value(w, k, kl, v, vl, WS_VSVAL);
}

int ws_clear(ws *w, const uint8_t *k, size_t kl) {
  ws_node *n = get_or_insert(w, k, kl);
  if (!n) return DV_ENOMEM;
  n->op = WS_CLEAR;
  n->val = NULL;
  n->vlen = 0;
  n->atoms = n->atoms_tail = NULL;
  return 0;
}

int ws_clear_range(ws *w, const uint8_t *b, size_t bl, const uint8_t *e, size_t el) {
  if (ws_keycmp(b, bl, e, el) >= 0) return 0;
  /* The end node first: it must take the state e had before the clear. */
  ws_node *en = get_or_insert(w, e, el);
  if (!en) return DV_ENOMEM;
  ws_node *bn = get_or_insert(w, b, bl);
  if (!bn) return DV_ENOMEM;
  bn->op = WS_CLEAR;
  bn->val = NULL;
  bn->vlen = 0;
  bn->atoms = bn->atoms_tail = NULL;
  bn->cleared_after = 1;
  /* Unlink every node strictly between bn and en, level by level: at each
   * level, the last node <= b links straight to the first node >= e. */
  w->last = NULL;
  ws_node *x = w->head;
  for (int i = w->level - 1; i >= 0; i--) {
    while (x->next[i] && ws_keycmp(x->next[i]->key, x->next[i]->klen, b, bl) <= 0) x = x->next[i];
    ws_node *y = x->next[i];
    while (y && ws_keycmp(y->key, y->klen, e, el) < 0) {
      if (i == 0) w->count--;
      y = y->next[i];
    }
    x->next[i] = y;
  }
  return 0;
}

const uint8_t *ws_apply_atoms(ws *scratch, const ws_atom *a, const uint8_t *base, size_t blen,
                              int present, size_t *out_len) {
  const uint8_t *cur = base;
  size_t len = blen;
  for (; a; a = a->next) {
    size_t cap = len > a->plen ? len : a->plen;
    uint8_t *out = arena_alloc(scratch, cap ? cap : 1);
    if (!out) return NULL;
    len = kv__atomic_apply(a->op, cur, len, present, a->param, a->plen, out, &present);
    cur = out;
  }
  *out_len = len;
  return cur;
}

int ws_atomic(ws *w, kv_atomic_op op, const uint8_t *k, size_t kl, const uint8_t *p, size_t pl) {
  ws_node *n = get_or_insert(w, k, kl);
  if (!n) return DV_ENOMEM;
  ws_atom *a = arena_alloc(w, sizeof *a);
  uint8_t *param = ws_dup(w, p, pl);
  if (!a || !param) return DV_ENOMEM;
  a->next = NULL;
  a->op = op;
  a->param = param;
  a->plen = pl;
  switch (n->op) {
  case WS_SET:
  case WS_CLEAR: {
    /* Known base: compute now, so reads need not touch the store. */
    size_t len;
    const uint8_t *v = ws_apply_atoms(w, a, n->val, n->vlen, n->op == WS_SET, &len);
    if (!v) return DV_ENOMEM;
    n->op = WS_SET;
    n->val = v;
    n->vlen = len;
    return 0;
  }
  case WS_VSVAL:
    /* The base holds a stamp not known until commit; FDB refuses too. */
    return DV_EINVALID_MUTATION;
  case WS_ATOMIC:
    n->atoms_tail->next = a;
    n->atoms_tail = a;
    return 0;
  default:
    n->op = WS_ATOMIC;
    n->atoms = n->atoms_tail = a;
    return 0;
  }
}

void ws_lookup(const ws *w, const uint8_t *k, size_t kl, ws_state *out) {
  ws_node *n = ws_find_le(w, k, kl);
  memset(out, 0, sizeof *out);
  if (n != w->head && ws_keycmp(n->key, n->klen, k, kl) == 0) {
    out->node = n;
    switch (n->op) {
    case WS_SET:
      out->kind = WS_KNOWN;
      out->present = 1;
      out->val = n->val;
      out->vlen = n->vlen;
      return;
    case WS_CLEAR:
      out->kind = WS_KNOWN;
      return;
    case WS_ATOMIC:
      out->kind = WS_STACKED;
      return;
    case WS_VSVAL:
      out->kind = WS_UNREADABLE;
      return;
    default:
      out->kind = WS_UNKNOWN;
      return;
    }
  }
  out->kind = n->cleared_after ? WS_KNOWN : WS_UNKNOWN;
}
