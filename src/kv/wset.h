/* wset.h — an ordered write set: the writes of one transaction, kept so
 * that reads can see them (read-your-writes) and the committer can apply
 * them. Private to src/kv.
 *
 * It is FoundationDB's WriteMap in small: a skip list of nodes, one per key
 * that was written or that bounds a cleared range. Each node holds the
 * point state of its key and one bit saying whether the keys strictly
 * between it and the next node are cleared:
 *
 *   node.op        what the key itself is now
 *     WS_NONE        untouched (a range boundary only): read the store
 *     WS_SET         val/vlen
 *     WS_CLEAR       absent
 *     WS_ATOMIC      store value (unknown here) with atoms applied in order
 *     WS_VSVAL       a value with a versionstamp placeholder: unreadable
 *   node.cleared_after   (node.key, next.key) is cleared
 *
 * clear_range(b, e) makes a node at b (CLEAR, cleared_after), a node at e
 * that keeps e's previous state, and unlinks every node in between, so a
 * point lookup is one search for the greatest node <= key. An atomic op
 * over a known value (set, cleared, or inside a cleared range) is computed
 * at once and becomes a SET; over an unknown one it stacks.
 *
 * The same structure is the committer's overlay of a whole batch (rocks.c):
 * each accepted transaction's write set is replayed into it, so later
 * transactions of the batch and the final WriteBatch see the earlier ones.
 *
 * Keys and values are copied into an arena owned by the write set and
 * freed only by ws_reset/ws_free, so pointers handed to readers stay valid
 * for the whole transaction even when a key is written again.
 */
#ifndef DV_KV_WSET_H
#define DV_KV_WSET_H

#include <stddef.h>
#include <stdint.h>

#include "kv/kv.h"

#define WS_MAX_HEIGHT 20

enum { WS_NONE = 0, WS_SET, WS_CLEAR, WS_ATOMIC, WS_VSVAL };

typedef struct ws_atom {
  struct ws_atom *next;   /* next op, applied after this one */
  kv_atomic_op op;        /* the operation */
  const uint8_t *param;   /* its parameter (arena) */
  size_t plen;            /* parameter length */
} ws_atom;

typedef struct ws_node {
  const uint8_t *key;     /* arena copy; NULL for the head */
  size_t klen;            /* key length */
  const uint8_t *val;     /* WS_SET / WS_VSVAL value (arena) */
  size_t vlen;            /* value length */
  ws_atom *atoms;         /* WS_ATOMIC: ops, first to last */
  ws_atom *atoms_tail;    /* last op, for appending */
  uint8_t op;             /* WS_* */
  uint8_t cleared_after;  /* keys between this node and the next are cleared */
  uint8_t height;         /* levels in next[] */
  struct ws_node *next[]; /* forward links, level 0 first */
} ws_node;

typedef struct ws_chunk ws_chunk;

typedef struct ws {
  ws_node *head;          /* sentinel before every key */
  int level;              /* highest level in use */
  size_t count;           /* nodes, excluding the head */
  uint64_t rng;           /* xorshift state for node heights */
  ws_chunk *chunks;       /* arena chunks, newest first */
  uint8_t *cur;           /* free space in the newest chunk */
  size_t avail;           /* bytes left there */
  size_t arena_bytes;     /* total arena bytes allocated */
  ws_node *last;          /* the node inserted last, or NULL (see get_or_insert) */
  ws_node *fing[WS_MAX_HEIGHT]; /* its predecessors when inserted, per level */
} ws;

int ws_init(ws *w);       /* 0 or DV_ENOMEM */
void ws_reset(ws *w);     /* empty, keeps one chunk */
void ws_free(ws *w);

/* Mutations. All copy their inputs. 0 or DV_ENOMEM (or DV_EINVALID_MUTATION
 * for an atomic op over a versionstamped value). */
int ws_set(ws *w, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl);
int ws_set_vsval(ws *w, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl);
int ws_clear(ws *w, const uint8_t *k, size_t kl);
int ws_clear_range(ws *w, const uint8_t *b, size_t bl, const uint8_t *e, size_t el);
int ws_atomic(ws *w, kv_atomic_op op, const uint8_t *k, size_t kl, const uint8_t *p, size_t pl);

/* Greatest node with key <= k, or the head (key NULL) if none. */
ws_node *ws_find_le(const ws *w, const uint8_t *k, size_t kl);
/* Greatest node with key < k, or the head. */
ws_node *ws_find_lt(const ws *w, const uint8_t *k, size_t kl);
/* First node (after the head), or NULL. */
static inline ws_node *ws_first(const ws *w) { return w->head->next[0]; }

/* What the write set says about key k. */
enum { WS_UNKNOWN = 0, WS_KNOWN, WS_STACKED, WS_UNREADABLE };
typedef struct ws_state {
  int kind;               /* WS_UNKNOWN: read the store; WS_KNOWN: present/val;
                             WS_STACKED: apply node->atoms to the store value;
                             WS_UNREADABLE: a versionstamped value */
  int present;            /* WS_KNOWN: 1 if the key has a value */
  const uint8_t *val;     /* WS_KNOWN and present: the value */
  size_t vlen;
  const ws_node *node;    /* the node at k, if any */
} ws_state;
void ws_lookup(const ws *w, const uint8_t *k, size_t kl, ws_state *out);

/* Copy n bytes into the arena (NULL on allocation failure). */
uint8_t *ws_dup(ws *w, const void *p, size_t n);

/* Apply a node's stacked atomic ops to a base value. The result is written
 * to an arena buffer of the write set `scratch` (which may be w itself) and
 * returned with its length. NULL on DV_ENOMEM. */
const uint8_t *ws_apply_atoms(ws *scratch, const ws_atom *a, const uint8_t *base, size_t blen,
                              int present, size_t *out_len);

int ws_keycmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl);

#endif
