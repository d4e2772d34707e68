/* rocks.c — the embedded backend: RocksDB under an FDB-style commit pipeline.
 *
 * RocksDB stores the bytes; this file supplies what FoundationDB's proxies
 * and resolvers do (../shared/DESIGN.md "Embedded backend"). It is the only
 * file that includes rocksdb/c.h.
 *
 * Data flow of a commit:
 *
 *   client thread                     committer thread (one per store)
 *   -------------                     ---------------------------------
 *   reads at snapshot S(rv) + own     take every queued commit (a batch)
 *   write set (wset.h, RYW)           version = last + 1
 *   kv_commit_async: enqueue ───────► for each, IN ORDER:
 *   (kv_commit: enqueue, and if no
 *    batch runs, run it right here)
 *                                       too old? (rv below history floor,
 *                                         or read version older than 5 s)
 *                                       read ranges ∩ writes of batches
 *                                         newer than rv, or of commits
 *                                         accepted earlier in this batch
 *                                         → not_committed
 *                                       else accept: order = n++, replay
 *                                         its writes into the batch overlay
 *                                         (another wset), stamping
 *                                         versionstamped keys and values
 *                                     overlay → ONE WriteBatch (atomic ops
 *                                       computed against the stored base,
 *                                       small clear_ranges as point deletes,
 *                                       large ones as range tombstones) +
 *                                       the version counter, ONE synced write
 *                                     publish {version, snapshot} as a pair
 *                                       (with the snapshot's metadata
 *                                       version, read once for all readers)
 *                                     register watches of these commits
 *                                     acknowledge (callbacks) ◄── durable
 *                                     fire watches whose key changed
 *                                     keep the batch's write ranges in the
 *                                       history for 5 s
 *
 * Keys: user keys as given; the one system key \xff/metadataVersion as
 * given; the persisted commit version at "\xff\xff/version" (8 bytes big
 * endian), outside every range a caller can read.
 *
 * A versionstamp is the batch's version (8 bytes BE) and the commit's order
 * in the batch (2 bytes BE). Versions survive restarts (the counter is
 * written in the same WriteBatch as the data), so stamps never repeat.
 *
 * Known simplifications: versionstamped keys are applied after the rest of
 * their transaction's writes (a clear_range issued after one in the same
 * transaction does not remove it).
 *
 * Conflict checks cost O(log n) per read range and segment: the history
 * keeps one sorted, merged segment per batch, and the commits accepted
 * earlier in the running batch form a stack of O(log n) segments
 * ("write-range segments" below).
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "kv/kv_int.h"
#include "kv/wset.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/log.h"
#include "util/stats.h"
#include "util/thread.h"

#define VERSION_KEY "\xff\xff/version"
#define VERSION_KEY_LEN 10
#define MAX_BATCH_TXNS 8192
#define SMALL_CLEAR_KEYS 64
#define SPACE_CHECK_MS 200   /* free space is measured at most this often */
#define RESUME_EVERY_MS 500  /* a stopped RocksDB is asked to resume at most this often */

/* rocks_reclaim.cc: what RocksDB's C API lacks — giving a deleted range's
 * space back (DeleteFilesInRange, then CompactRange), cancelling it. */
int kv__rocks_reclaim(rocksdb_t *db, const char *b, size_t bl, const char *e, size_t el);
void kv__rocks_cancel(rocksdb_t *db);
/* … and the library's version ("7.8.3", from rocksdb/version.h). */
const char *kv__rocks_version(void);

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- structures ---------------------------------------------------------- */

/* A published read point: a version and the RocksDB snapshot that holds
 * exactly the commits up to it. */
typedef struct snap {
  int64_t version;                 /* commit version */
  const rocksdb_snapshot_t *s;     /* RocksDB snapshot */
  uint8_t mdv[32];                 /* \xff/metadataVersion in it, read once at */
  int8_t mdv_state;                /* publish: 1 present, 0 absent, -1 longer than mdv */
  uint8_t mdv_len;                 /* (then it is read from RocksDB as any key) */
  int64_t time_ms;                 /* when it was published */
  _Atomic int refs;                /* transactions using it + 1 if current */
  struct snap *older, *newer;      /* the live snapshots, oldest first (snap_mu) */
} snap;

/* A key range [b, e) whose bytes live at offsets in a dv_buf. */
typedef struct range {
  size_t b, bl;                    /* begin offset, length */
  size_t e, el;                    /* end offset, length */
} range;

/* Write ranges of one committed batch, sorted and merged. */
typedef struct hist {
  struct hist *next;               /* newer batch */
  struct hist *prev;               /* older batch */
  int64_t version;                 /* its commit version */
  int64_t time_ms;                 /* when it committed */
  dv_buf bytes;                    /* range bytes */
  range *r;                        /* ranges, sorted by begin, disjoint */
  size_t n;                        /* number of ranges */
  size_t cost;                     /* bytes it holds, counted in rdb.h_bytes */
} hist;

typedef struct vskey {
  struct vskey *next;              /* next, in call order */
  const uint8_t *key;              /* key with placeholder, no suffix */
  size_t kl;                       /* its length */
  size_t off;                      /* placeholder offset */
  const uint8_t *val;              /* value */
  size_t vl;
} vskey;

enum { W_PENDING, W_ACTIVE, W_FIRING, W_DONE, W_CANCELLED };

/* The watch registry. It is reference-counted apart from the store so that
 * a watch handle may be freed after kv_close (which cancels it). */
typedef struct whub {
  pthread_mutex_t mu;              /* guards everything about watches */
  pthread_cond_t cv;               /* a firing callback finished */
  struct rwatch *list;             /* active watches */
  int refs;                        /* the store + one per watch handle */
} whub;

typedef struct rwatch {
  kv_watch base;                   /* must be first */
  whub *hub;                       /* registry */
  uint8_t *key;                    /* watched key */
  size_t kl;
  uint8_t *val;                    /* value the transaction saw */
  size_t vl;
  int present;                     /* 1 if that value existed */
  kv_watch_cb cb;                  /* callback */
  void *arg;
  int state;                       /* W_* (under hub->mu) */
  int refs;                        /* handle + list membership (under hub->mu) */
  struct rwatch *next, *prev;      /* db's active list */
  struct rwatch *tnext;            /* transaction's pending list */
} rwatch;

typedef struct rdb {
  kv_db base;                      /* must be first */
  rocksdb_t *db;                   /* the store */
  rocksdb_options_t *opts;
  rocksdb_block_based_table_options_t *bbto;
  rocksdb_cache_t *cache;
  rocksdb_writeoptions_t *wo;      /* synced unless no_sync */
  rocksdb_readoptions_t *ro_latest;/* committer reads of the newest state */
  int lock_fd;                     /* flock on <dir>/divan.lock */

  pthread_mutex_t snap_mu;         /* guards cur, reopening */
  pthread_cond_t snap_cv;          /* a reopen finished */
  snap *cur;                       /* published {version, snapshot} */
  snap *s_old, *s_new;             /* every live snapshot, oldest (lowest version) first */
  _Atomic int nsnaps;              /* snapshots alive (cur and older ones still used) */
  int reopening;                   /* recover() is reopening the store: new readers wait */
  pthread_rwlock_t db_rw;          /* d->db for hints from any thread (flush, compact); reopen writes */
  rocksdb_t *(*open_fn)(const rocksdb_options_t *, const char *, char **); /* rocksdb_open */

  pthread_mutex_t batch_mu;        /* held while a batch runs (committer or a leader) */
  pthread_mutex_t q_mu;            /* guards the queue and stop */
  pthread_cond_t q_cv;
  struct rtxn *q_head, *q_tail;    /* commits waiting for the committer */
  int stop;                        /* close requested */
  pthread_t committer;

  /* committer-owned */
  int64_t version;                 /* last durable commit version */
  hist *h_old, *h_new;             /* history, oldest first */
  int64_t h_floor;                 /* reads older than this are too old */
  _Atomic size_t h_bytes;          /* bytes the history holds (hist.cost summed; kv_db_info reads it) */
  size_t h_budget;                 /* … kept under this by coarsening (history_trim) */
  size_t batch_bytes;              /* a group commit's write sets, at most (past one commit) */
  ws overlay;                      /* the batch's combined writes */
  dv_buf bw;                       /* the accepting commit's write ranges (bytes) */
  range *bw_r;                     /* … and ranges, unsorted */
  size_t bw_n, bw_cap;
  range *bw_tmp;                   /* bw_sort's scratch, kept across batches */
  size_t bw_tmp_cap;
  rocksdb_writebatch_t *wb;        /* the batch's WriteBatch, cleared and reused */
  hist *seg[64];                   /* write ranges of the commits accepted so
                                      far in this batch: sorted, disjoint
                                      segments, each at most half the size
                                      of the one below it */
  int nseg;

  whub *hub;                       /* watches */
  uint64_t bulk_bytes;             /* bulk bytes written (kv_bulk_written) */

  /* free space (committer-owned) */
  char *path;                      /* the data directory, for statvfs */
  uint64_t reserve;                /* bytes kept free; 0 = no reserve */
  uint64_t room;                   /* free bytes a reopen needs (a flush and a new WAL) */
  int64_t space_at_ms;             /* when `low` was measured */
  int low;                         /* free space was below the reserve */
  int stopped;                     /* RocksDB refused a write: recover() before the next */
  int stop_rc;                     /* why: DV_ENOSPC (recover() resumes) or DV_EREAD_ONLY (never) */
  _Atomic int read_only;           /* stop_rc is DV_EREAD_ONLY: for r_info, from any thread */
  int64_t resume_at_ms;            /* last resume attempt */
  dv_buf drop_b, drop_e;           /* the batch's range tombstones: their union (committer) */
  pthread_mutex_t rc_mu;           /* the reclaim thread's state below */
  pthread_cond_t rc_cv;
  dv_buf rc_b, rc_e;               /* a range to reclaim (empty: none) */
  int rc_running, rc_stop;         /* the thread runs; close asked it to end */
  pthread_t rc_thread;
} rdb;

typedef struct rtxn {
  kv_txn base;                     /* must be first */
  rdb *db;
  snap *snap;                      /* read point; NULL until first read */
  int64_t rv_ms;                   /* when the read version was taken */
  rocksdb_readoptions_t *ro;       /* reads at snap */
  int64_t start_ms;                /* for the timeout option */
  int timeout_ms;                  /* 0 = none */
  ws w;                            /* own writes */
  int has_writes;                  /* any mutation or write conflict */
  vskey *vs_head, *vs_tail;        /* versionstamped keys */
  dv_buf vs_bytes;                 /* where they may land: [lo, hi) ranges … */
  range *vsr;                      /* … disjoint (overlapping ones merged) */
  size_t nvsr, capvsr;
  dv_buf cb_bytes;                 /* conflict range bytes */
  range *reads;                    /* read conflict ranges */
  size_t nreads, capreads;
  range *wconf;                    /* explicit write conflict ranges */
  size_t nwconf, capwconf;
  rwatch *pending;                 /* watches to register at commit */
  /* commit */
  kv_commit_cb cb;
  void *cb_arg;
  struct rtxn *q_next;             /* queue link */
  int result;                      /* commit result (committer) */
  int committed;                   /* 1 after a successful commit */
  int64_t committed_version;       /* -1 for read-only */
  uint16_t order;                  /* position in the batch */
  size_t qbytes;                   /* size estimate for batching */
} rtxn;

typedef struct riter {
  kv_iter base;                    /* must be first */
  rtxn *t;
  rocksdb_iterator_t *ri;          /* over the snapshot, bounded */
  rocksdb_readoptions_t *ro;       /* ri's options: they hold the Slices its bounds point at */
  int reverse, snapshot;           /* from base.flags */
  int returned;                    /* pairs returned */
  int done;                        /* range exhausted */
  int ri_step;                     /* move ri before looking at it again */
  ws_node *wn;                     /* next write-set node to merge */
  dv_buf last;                     /* last key returned */
  dv_buf scratch;                  /* computed values */
} riter;

static const kv_methods rocks_methods;

/* ---- snapshots ---------------------------------------------------------- */

static void snap_unref(rdb *d, snap *s) {
  if (!s) return;
  if (atomic_fetch_sub(&s->refs, 1) == 1) {
    pthread_mutex_lock(&d->snap_mu);
    if (s->older) s->older->newer = s->newer;
    else d->s_old = s->newer;
    if (s->newer) s->newer->older = s->older;
    else d->s_new = s->older;
    pthread_mutex_unlock(&d->snap_mu);
    rocksdb_release_snapshot(d->db, s->s);
    dv_free(s);
    atomic_fetch_sub(&d->nsnaps, 1);
  }
}

static snap *snap_acquire(rdb *d) {
  pthread_mutex_lock(&d->snap_mu);
  while (d->reopening) pthread_cond_wait(&d->snap_cv, &d->snap_mu); /* recover() */
  snap *s = d->cur;
  atomic_fetch_add(&s->refs, 1);
  pthread_mutex_unlock(&d->snap_mu);
  return s;
}

/* The metadata version as of s: every transaction's first read (the
 * store checks its database handle with it, db.c), so it is read once per
 * published snapshot — per batch of commits — instead of by each of them
 * through every sorted run. */
static int snap_read_mdv(rdb *d, snap *s) {
  rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
  rocksdb_readoptions_set_snapshot(ro, s->s);
  char *err = NULL;
  rocksdb_pinnableslice_t *ps =
      rocksdb_get_pinned(d->db, ro, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN, &err);
  rocksdb_readoptions_destroy(ro);
  if (err) {
    rocksdb_free(err);
    return DV_EIO;
  }
  s->mdv_state = 0;
  s->mdv_len = 0;
  if (ps) {
    size_t n;
    const char *p = rocksdb_pinnableslice_value(ps, &n);
    s->mdv_state = n <= sizeof s->mdv ? 1 : -1;
    if (n <= sizeof s->mdv) memcpy(s->mdv, p, n), s->mdv_len = (uint8_t)n;
    rocksdb_pinnableslice_destroy(ps);
  }
  return 0;
}

static int publish(rdb *d, int64_t version) {
  snap *s = dv_malloc(sizeof *s);
  if (!s) return DV_ENOMEM;
  s->version = version;
  s->s = rocksdb_create_snapshot(d->db);
  if (snap_read_mdv(d, s)) s->mdv_state = -1; /* read it as any key, and fail then */
  s->time_ms = now_ms();
  atomic_init(&s->refs, 1);
  atomic_fetch_add(&d->nsnaps, 1);
  pthread_mutex_lock(&d->snap_mu);
  snap *old = d->cur;
  d->cur = s;
  s->newer = NULL;
  s->older = d->s_new;
  if (d->s_new) d->s_new->newer = s;
  else d->s_old = s;
  d->s_new = s;
  pthread_mutex_unlock(&d->snap_mu);
  snap_unref(d, old);
  return 0;
}

/* ---- ranges ------------------------------------------------------------- */

static int cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
  return ws_keycmp(a, al, b, bl);
}

/* A new slot at the end of a range array, or NULL on DV_ENOMEM. */
static range *range_slot(range **arr, size_t *n, size_t *cap) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    range *r = dv_realloc(*arr, nc * sizeof *r);
    if (!r) return NULL;
    *arr = r;
    *cap = nc;
  }
  return &(*arr)[(*n)++];
}

/* Room for `more` ranges past n, in one allocation (a chain of doublings
 * of a large array is a chain of fresh mappings, each copied and faulted
 * in again). */
static int range_reserve(range **arr, size_t n, size_t *cap, size_t more) {
  if (n + more <= *cap) return 0;
  range *r = dv_realloc(*arr, (n + more) * sizeof *r);
  if (!r) return DV_ENOMEM;
  *arr = r;
  *cap = n + more;
  return 0;
}

/* Append [b, e) to a range array whose bytes live in `bytes`. */
static int range_push(dv_buf *bytes, range **arr, size_t *n, size_t *cap, const uint8_t *b,
                      size_t bl, const uint8_t *e, size_t el) {
  range *r = range_slot(arr, n, cap);
  if (!r) return DV_ENOMEM;
  r->b = bytes->len;
  r->bl = bl;
  buf_append(bytes, b, bl);
  r->e = bytes->len;
  r->el = el;
  buf_append(bytes, e, el);
  return buf_error(bytes);
}

/* Append the point range [k, k\0), sharing the key's bytes. */
static int range_push_point(dv_buf *bytes, range **arr, size_t *n, size_t *cap, const uint8_t *k,
                            size_t kl) {
  range *r = range_slot(arr, n, cap);
  if (!r) return DV_ENOMEM;
  r->b = bytes->len;
  r->bl = kl;
  r->e = bytes->len;
  r->el = kl + 1;
  buf_append(bytes, k, kl);
  buf_putc(bytes, 0);
  return buf_error(bytes);
}

static int intersects(const uint8_t *ab, size_t abl, const uint8_t *ae, size_t ael, const uint8_t *bb,
                      size_t bbl, const uint8_t *be, size_t bel) {
  return cmp(ab, abl, be, bel) < 0 && cmp(bb, bbl, ae, ael) < 0;
}

/* ---- transactions: reads ------------------------------------------------- */

static int txn_check_time(rtxn *t) {
  int64_t now = now_ms();
  if (t->timeout_ms && now - t->start_ms > t->timeout_ms) return DV_ETIMED_OUT;
  if (t->snap && now - t->rv_ms > KV_MAX_TXN_AGE_MS) return DV_ETXN_TOO_OLD;
  return 0;
}

static int ensure_snap(rtxn *t) {
  if (!t->snap) {
    t->snap = snap_acquire(t->db);
    t->rv_ms = now_ms();
    rocksdb_readoptions_set_snapshot(t->ro, t->snap->s);
  }
  return txn_check_time(t);
}

static int r_get_read_version(kv_txn *kt, int64_t *out) {
  rtxn *t = (rtxn *)kt;
  int rc = ensure_snap(t);
  if (rc) return rc;
  *out = t->snap->version;
  return 0;
}

/* Could a versionstamped key of this transaction land in [b, e)? The
 * possible keys of one are prefix + any 10 bytes + suffix, the range
 * [prefix 00…, prefix ff… suffix \0); r_set_vs_key keeps their union as
 * disjoint ranges (one, for a _bulk_docs' changes rows). */
static int vs_unreadable(const rtxn *t, const uint8_t *b, size_t bl, const uint8_t *e, size_t el) {
  const uint8_t *p = t->vs_bytes.p;
  for (size_t i = 0; i < t->nvsr; i++) {
    const range *r = &t->vsr[i];
    if (intersects(b, bl, e, el, p + r->b, r->bl, p + r->e, r->el)) return 1;
  }
  return 0;
}

/* The stored value of k at the transaction's snapshot, copied into memory
 * the transaction owns. */
static int snap_get(rtxn *t, const uint8_t *k, size_t kl, const uint8_t **v, size_t *vl, int *found) {
  if (kl == KV_METADATA_VERSION_KEY_LEN && t->snap->mdv_state >= 0 &&
      !memcmp(k, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN)) {
    *found = t->snap->mdv_state;
    *vl = t->snap->mdv_len;
    *v = !*found ? NULL : *vl ? ws_dup(&t->w, t->snap->mdv, *vl) : (const uint8_t *)"";
    return *found && !*v ? DV_ENOMEM : 0;
  }
  char *err = NULL;
  rocksdb_pinnableslice_t *ps = rocksdb_get_pinned(t->db->db, t->ro, (const char *)k, kl, &err);
  if (err) {
    rocksdb_free(err);
    return DV_EIO;
  }
  if (!ps) {
    *found = 0;
    return 0;
  }
  size_t n;
  const char *p = rocksdb_pinnableslice_value(ps, &n);
  uint8_t *copy = ws_dup(&t->w, p, n); /* bump allocation, freed at reset */
  if (!copy) {
    rocksdb_pinnableslice_destroy(ps);
    return DV_ENOMEM;
  }
  rocksdb_pinnableslice_destroy(ps);
  *v = copy;
  *vl = n;
  *found = 1;
  return 0;
}

static int add_read_point(rtxn *t, const uint8_t *k, size_t kl) {
  return range_push_point(&t->cb_bytes, &t->reads, &t->nreads, &t->capreads, k, kl);
}

/* Read k as the transaction sees it. */
static int txn_read(rtxn *t, const uint8_t *k, size_t kl, const uint8_t **v, size_t *vl, int *found) {
  ws_state st;
  ws_lookup(&t->w, k, kl, &st);
  switch (st.kind) {
  case WS_KNOWN:
    *found = st.present;
    *v = st.val;
    *vl = st.vlen;
    return 0;
  case WS_UNREADABLE:
    return DV_EACCESSED_UNREADABLE;
  case WS_STACKED: {
    const uint8_t *base = NULL;
    size_t blen = 0;
    int present = 0;
    int rc = snap_get(t, k, kl, &base, &blen, &present);
    if (rc) return rc;
    const uint8_t *r = ws_apply_atoms(&t->w, st.node->atoms, base, blen, present, vl);
    if (!r) return DV_ENOMEM;
    *v = r;
    *found = 1;
    return 0;
  }
  default:
    return snap_get(t, k, kl, v, vl, found);
  }
}

static int r_get(kv_txn *kt, const uint8_t *k, size_t kl, int flags, const uint8_t **v, size_t *vl,
                 int *found) {
  rtxn *t = (rtxn *)kt;
  int rc = ensure_snap(t);
  if (rc) return rc;
  if (t->vs_head) {
    uint8_t e[KV_MAX_KEY + 1];
    memcpy(e, k, kl);
    e[kl] = 0;
    if (vs_unreadable(t, k, kl, e, kl + 1)) return DV_EACCESSED_UNREADABLE;
  }
  rc = txn_read(t, k, kl, v, vl, found);
  if (rc) return rc;
  if (!*found) { *v = NULL; *vl = 0; }
  if (!(flags & KV_SNAPSHOT)) rc = add_read_point(t, k, kl);
  return rc;
}

/* ---- iterators ------------------------------------------------------------ */

static int r_iter_begin(kv_txn *kt, const uint8_t *b, size_t bl, const uint8_t *e, size_t el, int limit,
                        int flags, kv_iter **out) {
  rtxn *t = (rtxn *)kt;
  int rc = ensure_snap(t);
  if (rc) return rc;
  if (t->vs_head && vs_unreadable(t, b, bl, e, el)) return DV_EACCESSED_UNREADABLE;
  riter *it = kv__iter_new(sizeof *it, &rocks_methods, kt, b, bl, e, el, limit, flags);
  if (!it) return DV_ENOMEM;
  it->t = t;
  it->reverse = !!(flags & KV_REVERSE);
  it->snapshot = !!(flags & KV_SNAPSHOT);
  /* Bounds on a private read options object. RocksDB's iterator keeps
   * pointers to the bound Slices inside it, so it lives as long as ri. */
  rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
  rocksdb_readoptions_set_snapshot(ro, t->snap->s);
  rocksdb_readoptions_set_iterate_lower_bound(ro, (const char *)it->base.b, bl);
  rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)it->base.e, el);
  if (flags & KV_BULK) rocksdb_readoptions_set_fill_cache(ro, 0); /* a download must not fill the block cache */
  it->ri = rocksdb_create_iterator(t->db->db, ro);
  it->ro = ro;
  buf_init(&it->last);
  buf_init(&it->scratch);
  if (cmp(b, bl, e, el) >= 0) {
    it->done = 1;
  } else if (!it->reverse) {
    ws_node *pn = ws_find_lt(&t->w, b, bl);
    it->wn = pn->next[0];
    if (pn != t->w.head && pn->cleared_after) {
      /* b lies inside a cleared region: skip the store to its end. */
      if (it->wn) rocksdb_iter_seek(it->ri, (const char *)it->wn->key, it->wn->klen);
      else rocksdb_iter_seek_to_last(it->ri), rocksdb_iter_next(it->ri);
    } else {
      rocksdb_iter_seek_to_first(it->ri);
    }
  } else {
    ws_node *pn = ws_find_lt(&t->w, e, el);
    it->wn = pn == t->w.head ? NULL : pn;
    if (it->wn && it->wn->cleared_after)
      rocksdb_iter_seek_for_prev(it->ri, (const char *)it->wn->key, it->wn->klen);
    else
      rocksdb_iter_seek_to_last(it->ri);
  }
  *out = &it->base;
  return 0;
}

/* Read the rocks iterator's current key, if valid. */
static int ri_key(rocksdb_iterator_t *ri, const uint8_t **k, size_t *kl) {
  if (!rocksdb_iter_valid(ri)) return 0;
  *k = (const uint8_t *)rocksdb_iter_key(ri, kl);
  return 1;
}

static int node_in_range(const riter *it, const ws_node *n) {
  if (!n) return 0;
  if (!it->reverse) return cmp(n->key, n->klen, it->base.e, it->base.el) < 0;
  return cmp(n->key, n->klen, it->base.b, it->base.bl) >= 0;
}

/* Emit value of write-set node n merged with the store value at the same
 * key (if the rocks iterator sits on it). Returns 1 with *out set, 0 if the
 * key has no value, or an error. */
static int node_value(riter *it, const ws_node *n, int store_here, kv_pair *out) {
  const uint8_t *sv = NULL;
  size_t svl = 0;
  if (store_here) sv = (const uint8_t *)rocksdb_iter_value(it->ri, &svl);
  out->key = n->key;
  out->key_len = n->klen;
  switch (n->op) {
  case WS_SET:
    out->val = n->val;
    out->val_len = n->vlen;
    return 1;
  case WS_CLEAR:
    return 0;
  case WS_VSVAL:
    return DV_EACCESSED_UNREADABLE;
  case WS_ATOMIC: {
    size_t len;
    const uint8_t *v = ws_apply_atoms(&it->t->w, n->atoms, sv, svl, store_here, &len);
    if (!v) return DV_ENOMEM;
    out->val = v;
    out->val_len = len;
    return 1;
  }
  default:
    if (!store_here) return 0;
    out->val = sv;
    out->val_len = svl;
    return 1;
  }
}

/* Copy the pair into the iterator's scratch so the store iterator may
 * move before the caller reads it. */
static int pin_pair(riter *it, kv_pair *out) {
  buf_reset(&it->scratch);
  buf_append(&it->scratch, out->key, out->key_len);
  buf_append(&it->scratch, out->val, out->val_len);
  if (buf_error(&it->scratch)) return DV_ENOMEM;
  out->key = it->scratch.p;
  out->val = it->scratch.p + out->key_len;
  return 0;
}

static int iter_step(riter *it, kv_pair *out) {
  rtxn *t = it->t;
  ws *w = &t->w;
  for (;;) {
    if (it->ri_step) {
      if (it->reverse) rocksdb_iter_prev(it->ri);
      else rocksdb_iter_next(it->ri);
      it->ri_step = 0;
    }
    const uint8_t *rk = NULL;
    size_t rkl = 0;
    int have_r = ri_key(it->ri, &rk, &rkl);
    ws_node *n = node_in_range(it, it->wn) ? it->wn : NULL;
    if (!have_r && !n) return 0;
    int c = 0; /* <0: node first, >0: store first, 0: same key */
    if (!n) c = 1;
    else if (!have_r) c = -1;
    else c = it->reverse ? -cmp(n->key, n->klen, rk, rkl) : cmp(n->key, n->klen, rk, rkl);
    if (c > 0) {
      /* A store key not covered by any node: the region it lies in was
       * checked when the bounding node was passed. */
      out->key = rk;
      out->key_len = rkl;
      out->val = (const uint8_t *)rocksdb_iter_value(it->ri, &out->val_len);
      it->ri_step = 1;
      return 1;
    }
    /* The node comes first (or at the same key). */
    int rc = node_value(it, n, c == 0, out);
    if (c == 0) it->ri_step = 1;
    if (!it->reverse) {
      it->wn = n->next[0];
      if (n->cleared_after) {
        /* (n, next) is cleared: the store has nothing visible there, so
         * seek past it now (copying the pair first: it may point into the
         * store iterator). */
        it->ri_step = 0;
        if (rc == 1 && pin_pair(it, out)) return DV_ENOMEM;
        if (it->wn) rocksdb_iter_seek(it->ri, (const char *)it->wn->key, it->wn->klen);
        else rocksdb_iter_seek_to_last(it->ri), rocksdb_iter_next(it->ri);
      }
    } else {
      ws_node *p = ws_find_lt(w, n->key, n->klen);
      it->wn = p == w->head ? NULL : p;
      if (it->wn && it->wn->cleared_after) {
        /* (p, n) is cleared: jump the store to p's key or below. */
        it->ri_step = 0;
        if (rc == 1 && pin_pair(it, out)) return DV_ENOMEM;
        rocksdb_iter_seek_for_prev(it->ri, (const char *)it->wn->key, it->wn->klen);
      }
    }
    if (rc) return rc;
  }
}

static int r_iter_next(kv_iter *ki, kv_pair *out) {
  riter *it = (riter *)ki;
  if (it->done) return 0;
  if (it->base.limit && it->returned >= it->base.limit) return 0;
  int rc = txn_check_time(it->t);
  if (rc) return rc;
  rc = iter_step(it, out);
  if (rc == 0) {
    it->done = 1;
    return 0;
  }
  if (rc < 0) return rc;
  char *err = NULL;
  rocksdb_iter_get_error(it->ri, &err);
  if (err) {
    rocksdb_free(err);
    return DV_EIO;
  }
  it->returned++;
  if (!it->snapshot) {
    buf_reset(&it->last);
    buf_append(&it->last, out->key, out->key_len);
    if (buf_error(&it->last)) return DV_ENOMEM;
  }
  return 1;
}

static void r_iter_free(kv_iter *ki) {
  riter *it = (riter *)ki;
  rtxn *t = it->t;
  if (!it->snapshot && !t->base.err) {
    int rc = 0;
    if (it->done) {
      rc = range_push(&t->cb_bytes, &t->reads, &t->nreads, &t->capreads, it->base.b, it->base.bl, it->base.e, it->base.el);
    } else if (it->returned) {
      if (!it->reverse) {
        /* [b, last\0) */
        buf_putc(&it->last, 0);
        rc = range_push(&t->cb_bytes, &t->reads, &t->nreads, &t->capreads, it->base.b, it->base.bl, it->last.p,
                        it->last.len);
      } else {
        rc = range_push(&t->cb_bytes, &t->reads, &t->nreads, &t->capreads, it->last.p, it->last.len,
                        it->base.e, it->base.el);
      }
    }
    if (rc && !t->base.err) t->base.err = rc;
  }
  rocksdb_iter_destroy(it->ri);
  rocksdb_readoptions_destroy(it->ro);
  buf_free(&it->last);
  buf_free(&it->scratch);
  kv__iter_free(&it->base);
}

/* ---- transactions: writes ------------------------------------------------- */

static int r_set(kv_txn *kt, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  rtxn *t = (rtxn *)kt;
  t->has_writes = 1;
  return ws_set(&t->w, k, kl, v, vl);
}

static int r_clear(kv_txn *kt, const uint8_t *k, size_t kl) {
  rtxn *t = (rtxn *)kt;
  t->has_writes = 1;
  return ws_clear(&t->w, k, kl);
}

static int r_clear_range(kv_txn *kt, const uint8_t *b, size_t bl, const uint8_t *e, size_t el) {
  rtxn *t = (rtxn *)kt;
  t->has_writes = 1;
  return ws_clear_range(&t->w, b, bl, e, el);
}

static int r_atomic(kv_txn *kt, kv_atomic_op op, const uint8_t *k, size_t kl, const uint8_t *p, size_t pl) {
  rtxn *t = (rtxn *)kt;
  t->has_writes = 1;
  return ws_atomic(&t->w, op, k, kl, p, pl);
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Add where x may land to the transaction's unreadable ranges, merging it
 * with every range it overlaps or touches (the union stays exact). */
static int vs_range_add(rtxn *t, const vskey *x) {
  uint8_t lo[KV_MAX_KEY], hi[KV_MAX_KEY + 1];
  memcpy(lo, x->key, x->kl);
  memset(lo + x->off, 0x00, KV_STAMP_LEN);
  memcpy(hi, x->key, x->kl);
  memset(hi + x->off, 0xff, KV_STAMP_LEN);
  hi[x->kl] = 0;
  const uint8_t *b = lo, *e = hi;
  size_t bl = x->kl, el = x->kl + 1;
  for (size_t i = 0; i < t->nvsr;) {
    const range *r = &t->vsr[i];
    const uint8_t *rb = t->vs_bytes.p + r->b, *re = t->vs_bytes.p + r->e;
    if (cmp(rb, r->bl, e, el) > 0 || cmp(b, bl, re, r->el) > 0) {
      i++;
      continue;
    }
    /* Overlaps or touches: take it into [b, e) (its bytes stay put in
     * vs_bytes until the reset, so the pointers stay valid) and drop it. */
    if (cmp(rb, r->bl, b, bl) < 0) { b = rb; bl = r->bl; }
    if (cmp(re, r->el, e, el) > 0) { e = re; el = r->el; }
    t->vsr[i] = t->vsr[--t->nvsr];
  }
  /* b and e may point into vs_bytes, which range_push may move: copy. */
  uint8_t nb[KV_MAX_KEY + 1], ne[KV_MAX_KEY + 1];
  memcpy(nb, b, bl);
  memcpy(ne, e, el);
  return range_push(&t->vs_bytes, &t->vsr, &t->nvsr, &t->capvsr, nb, bl, ne, el);
}

static int r_set_vs_key(kv_txn *kt, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  rtxn *t = (rtxn *)kt;
  vskey *x = (vskey *)ws_dup(&t->w, &(vskey){0}, sizeof *x);
  if (!x) return DV_ENOMEM;
  x->kl = kl - 4;
  x->off = le32(k + kl - 4);
  x->key = ws_dup(&t->w, k, x->kl);
  x->val = ws_dup(&t->w, v, vl);
  x->vl = vl;
  if (!x->key || !x->val) return DV_ENOMEM;
  if (t->vs_tail) t->vs_tail->next = x;
  else t->vs_head = x;
  t->vs_tail = x;
  t->has_writes = 1;
  return vs_range_add(t, x);
}

static int r_set_vs_value(kv_txn *kt, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  rtxn *t = (rtxn *)kt;
  t->has_writes = 1;
  return ws_set_vsval(&t->w, k, kl, v, vl); /* suffix kept; stamped at commit */
}

static int r_add_conflict_range(kv_txn *kt, const uint8_t *b, size_t bl, const uint8_t *e, size_t el,
                                int type) {
  rtxn *t = (rtxn *)kt;
  if (cmp(b, bl, e, el) >= 0) return 0;
  if (type == KV_CONFLICT_READ) {
    int rc = ensure_snap(t);
    if (rc) return rc;
    return range_push(&t->cb_bytes, &t->reads, &t->nreads, &t->capreads, b, bl, e, el);
  }
  t->has_writes = 1;
  return range_push(&t->cb_bytes, &t->wconf, &t->nwconf, &t->capwconf, b, bl, e, el);
}

/* ---- watches ---------------------------------------------------------------- */

static void watch_unref_locked(rwatch *w) {
  if (--w->refs == 0) {
    dv_free(w->key);
    dv_free(w->val);
    dv_free(w);
  }
}

static void hub_unref_locked(whub *h) {
  if (--h->refs == 0) {
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    dv_free(h);
    return;
  }
  pthread_mutex_unlock(&h->mu);
}

/* Fire a watch that is PENDING or ACTIVE (caller holds hub->mu; it is
 * released around the callback). */
static void watch_fire_locked(rdb *d, rwatch *w, int rc) {
  if (w->state == W_ACTIVE) {
    if (w->prev) w->prev->next = w->next;
    else d->hub->list = w->next;
    if (w->next) w->next->prev = w->prev;
    w->next = w->prev = NULL;
  }
  w->state = W_FIRING;
  pthread_mutex_unlock(&d->hub->mu);
  w->cb(w->arg, rc);
  pthread_mutex_lock(&d->hub->mu);
  w->state = W_DONE;
  pthread_cond_broadcast(&d->hub->cv);
  watch_unref_locked(w); /* the list's (or pending list's) reference */
}

static int r_watch_add(kv_txn *kt, const uint8_t *k, size_t kl, kv_watch_cb cb, void *arg, kv_watch **out) {
  rtxn *t = (rtxn *)kt;
  int rc = ensure_snap(t);
  if (rc) return rc;
  const uint8_t *v = NULL;
  size_t vl = 0;
  int found = 0;
  rc = txn_read(t, k, kl, &v, &vl, &found);
  if (rc) return rc;
  rwatch *w = dv_calloc(1, sizeof *w);
  if (!w) return DV_ENOMEM;
  w->base.m = &rocks_methods;
  w->hub = t->db->hub;
  w->key = dv_memdup(k, kl ? kl : 1);
  w->val = found ? dv_memdup(v, vl ? vl : 1) : NULL;
  if (!w->key || (found && !w->val)) {
    dv_free(w->key);
    dv_free(w->val);
    dv_free(w);
    return DV_ENOMEM;
  }
  w->kl = kl;
  w->vl = vl;
  w->present = found;
  w->cb = cb;
  w->arg = arg;
  w->state = W_PENDING;
  w->refs = 2; /* the handle, and the transaction's pending list */
  pthread_mutex_lock(&w->hub->mu);
  w->hub->refs++;
  pthread_mutex_unlock(&w->hub->mu);
  w->tnext = t->pending;
  t->pending = w;
  *out = &w->base;
  return 0;
}

static void r_watch_free(kv_watch *kw) {
  rwatch *w = (rwatch *)kw;
  whub *h = w->hub;
  pthread_mutex_lock(&h->mu);
  if (w->state == W_ACTIVE || w->state == W_PENDING) {
    int was_active = w->state == W_ACTIVE;
    if (was_active) {
      if (w->prev) w->prev->next = w->next;
      else h->list = w->next;
      if (w->next) w->next->prev = w->prev;
    }
    w->state = W_CANCELLED;
    pthread_mutex_unlock(&h->mu);
    w->cb(w->arg, DV_ECANCELLED);
    pthread_mutex_lock(&h->mu);
    if (was_active) watch_unref_locked(w); /* the list's reference */
    /* A pending watch stays on its transaction's list, which drops it. */
  }
  while (w->state == W_FIRING) pthread_cond_wait(&h->cv, &h->mu);
  watch_unref_locked(w); /* the handle's reference */
  hub_unref_locked(h);   /* unlocks, and frees the hub after a close */
}

/* A transaction's pending watches end: registered (rc 0, after a commit),
 * or failed with rc. */
static void watches_settle(rdb *d, rtxn *t, int rc) {
  rwatch *w = t->pending;
  t->pending = NULL;
  if (!w) return;
  pthread_mutex_lock(&d->hub->mu);
  while (w) {
    rwatch *next = w->tnext;
    w->tnext = NULL;
    if (w->state == W_CANCELLED) {
      watch_unref_locked(w);
    } else if (rc) {
      watch_fire_locked(d, w, rc);
    } else {
      /* Register; fire at once if the value already differs. */
      char *err = NULL;
      size_t n = 0;
      char *cur = rocksdb_get(d->db, d->ro_latest, (const char *)w->key, w->kl, &n, &err);
      if (err) rocksdb_free(err);
      int same = cur ? (w->present && n == w->vl && (!n || !memcmp(cur, w->val, n))) : !w->present;
      if (cur) rocksdb_free(cur);
      if (!same) {
        watch_fire_locked(d, w, 0);
      } else {
        w->state = W_ACTIVE;
        w->prev = NULL;
        w->next = d->hub->list;
        if (d->hub->list) d->hub->list->prev = w;
        d->hub->list = w;
      }
    }
    w = next;
  }
  pthread_mutex_unlock(&d->hub->mu);
}

/* After a batch: fire active watches whose key the overlay changed. */
static void watches_after_batch(rdb *d) {
  pthread_mutex_lock(&d->hub->mu);
  rwatch *w = d->hub->list;
  while (w) {
    rwatch *next = w->next;
    ws_state st;
    ws_lookup(&d->overlay, w->key, w->kl, &st);
    if (st.kind == WS_KNOWN) {
      int same = st.present ? (w->present && st.vlen == w->vl && (!st.vlen || !memcmp(st.val, w->val, st.vlen)))
                            : !w->present;
      if (!same) {
        watch_fire_locked(d, w, 0);
        next = d->hub->list; /* the list may have changed while unlocked */
        /* Restart from the head: fired watches are gone from it, and the
         * rest are re-checked harmlessly. */
      }
    }
    w = next;
  }
  pthread_mutex_unlock(&d->hub->mu);
}

/* ---- commit: client side ------------------------------------------------------ */

/* Commit-time work that needs no committer: a transaction that writes
 * nothing and registers no watch, or one past its timeout. Returns 1 if
 * the commit is already decided (*rc set). */
static int commit_trivially(rtxn *t, int *rc) {
  *rc = t->timeout_ms && now_ms() - t->start_ms > t->timeout_ms ? DV_ETIMED_OUT : 0;
  if (!*rc && (t->has_writes || t->pending)) return 0;
  if (!*rc) {
    t->committed = 1;
    t->committed_version = -1;
  }
  return 1;
}

static void enqueue(rdb *d, rtxn *t, kv_commit_cb cb, void *arg, int wake) {
  t->cb = cb;
  t->cb_arg = arg;
  t->q_next = NULL;
  t->qbytes = t->w.arena_bytes + t->cb_bytes.len;
  pthread_mutex_lock(&d->q_mu);
  if (d->q_tail) d->q_tail->q_next = t;
  else d->q_head = t;
  d->q_tail = t;
  if (wake) pthread_cond_signal(&d->q_cv);
  pthread_mutex_unlock(&d->q_mu);
}

static void r_commit_async(kv_txn *kt, kv_commit_cb cb, void *arg) {
  rtxn *t = (rtxn *)kt;
  int rc;
  if (commit_trivially(t, &rc)) {
    cb(kt, rc, arg);
    return;
  }
  enqueue(t->db, t, cb, arg, 1);
}

static int r_get_committed_version(kv_txn *kt, int64_t *out) {
  rtxn *t = (rtxn *)kt;
  if (!t->committed) return DV_EINVAL;
  *out = t->committed_version;
  return 0;
}

static int r_get_versionstamp(kv_txn *kt, uint8_t out[KV_STAMP_LEN]) {
  rtxn *t = (rtxn *)kt;
  if (!t->committed || t->committed_version < 0) return DV_EINVAL;
  kv__stamp_make(out, t->committed_version, t->order);
  return 0;
}

static int r_set_timeout_ms(kv_txn *kt, int ms) {
  ((rtxn *)kt)->timeout_ms = ms;
  return 0;
}

/* ---- commit: the committer ------------------------------------------------------ */

static int conflicts_hist(const hist *h, const uint8_t *b, size_t bl, const uint8_t *e, size_t el) {
  /* First range whose end > b, by binary search; conflict if it begins < e. */
  size_t lo = 0, hi = h->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const range *r = &h->r[mid];
    if (cmp(h->bytes.p + r->e, r->el, b, bl) <= 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo == h->n) return 0;
  const range *r = &h->r[lo];
  return cmp(h->bytes.p + r->b, r->bl, e, el) < 0;
}

static int resolve(rdb *d, rtxn *t) {
  if (!t->nreads) return 0;
  int64_t rv = t->snap->version;
  if (rv < d->h_floor || now_ms() - t->rv_ms > KV_MAX_TXN_AGE_MS) return DV_ETXN_TOO_OLD;
  const uint8_t *cb = t->cb_bytes.p;
  for (size_t i = 0; i < t->nreads; i++) {
    const range *r = &t->reads[i];
    const uint8_t *b = cb + r->b, *e = cb + r->e;
    /* newest first, down to the read version: a walk from the oldest
     * end would pass 5 s of batches for every read range */
    for (hist *h = d->h_new; h && h->version > rv; h = h->prev)
      if (conflicts_hist(h, b, r->bl, e, r->el)) return DV_ENOT_COMMITTED;
    for (int j = 0; j < d->nseg; j++)
      if (conflicts_hist(d->seg[j], b, r->bl, e, r->el)) return DV_ENOT_COMMITTED;
  }
  return 0;
}

static int bw_point(rdb *d, const uint8_t *k, size_t kl) {
  return range_push_point(&d->bw, &d->bw_r, &d->bw_n, &d->bw_cap, k, kl);
}

static int bw_range(rdb *d, const uint8_t *b, size_t bl, const uint8_t *e, size_t el) {
  return range_push(&d->bw, &d->bw_r, &d->bw_n, &d->bw_cap, b, bl, e, el);
}

/* Replay an accepted transaction into the batch overlay and record its
 * write ranges. */
static int accept(rdb *d, rtxn *t, int64_t version, uint16_t order) {
  uint8_t stamp[KV_STAMP_LEN];
  kv__stamp_make(stamp, version, order);
  ws *o = &d->overlay;
  uint8_t kz[KV_MAX_KEY + 1];
  int rc = 0;
  for (ws_node *n = ws_first(&t->w); n && !rc; n = n->next[0]) {
    if (n->cleared_after) {
      ws_node *nx = n->next[0]; /* always present: the range's end node */
      if (n->op == WS_CLEAR) {
        rc = ws_clear_range(o, n->key, n->klen, nx->key, nx->klen);
        if (!rc) rc = bw_range(d, n->key, n->klen, nx->key, nx->klen);
        continue;
      }
      memcpy(kz, n->key, n->klen);
      kz[n->klen] = 0;
      rc = ws_clear_range(o, kz, n->klen + 1, nx->key, nx->klen);
      if (!rc) rc = bw_range(d, kz, n->klen + 1, nx->key, nx->klen);
      if (rc) break;
    }
    switch (n->op) {
    case WS_SET:
      rc = ws_set(o, n->key, n->klen, n->val, n->vlen);
      break;
    case WS_CLEAR:
      rc = ws_clear(o, n->key, n->klen);
      break;
    case WS_ATOMIC:
      for (ws_atom *a = n->atoms; a && !rc; a = a->next) rc = ws_atomic(o, a->op, n->key, n->klen, a->param, a->plen);
      break;
    case WS_VSVAL: {
      size_t vl = n->vlen - 4;
      uint8_t *v = ws_dup(o, n->val, vl);
      if (!v) { rc = DV_ENOMEM; break; }
      memcpy(v + le32(n->val + vl), stamp, KV_STAMP_LEN);
      rc = ws_set(o, n->key, n->klen, v, vl);
      break;
    }
    default:
      continue; /* a boundary only */
    }
    if (!rc) rc = bw_point(d, n->key, n->klen);
  }
  for (vskey *x = t->vs_head; x && !rc; x = x->next) {
    memcpy(kz, x->key, x->kl);
    memcpy(kz + x->off, stamp, KV_STAMP_LEN);
    rc = ws_set(o, kz, x->kl, x->val, x->vl);
    if (!rc) rc = bw_point(d, kz, x->kl);
  }
  const uint8_t *cb = t->cb_bytes.p;
  for (size_t i = 0; i < t->nwconf && !rc; i++) {
    const range *r = &t->wconf[i];
    rc = bw_range(d, cb + r->b, r->bl, cb + r->e, r->el);
  }
  return rc;
}

/* Turn the overlay into one WriteBatch. Atomic nodes are computed against
 * the stored value and become SETs in the overlay (watches read them). */
static int materialize(rdb *d, rocksdb_writebatch_t *wb) {
  ws *o = &d->overlay;
  uint8_t kz[KV_MAX_KEY + 1];
  char *err = NULL;
  for (ws_node *n = ws_first(o); n; n = n->next[0]) {
    if (n->cleared_after) {
      ws_node *nx = n->next[0];
      const uint8_t *b = n->key;
      size_t bl = n->klen;
      if (n->op != WS_CLEAR) {
        memcpy(kz, n->key, n->klen);
        kz[n->klen] = 0;
        b = kz;
        bl = n->klen + 1;
      }
      /* A few keys: point deletes (a range tombstone slows every later
       * read that crosses it). Many: one range tombstone. */
      rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
      rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)nx->key, nx->klen);
      rocksdb_iterator_t *it = rocksdb_create_iterator(d->db, ro);
      int count = 0;
      for (rocksdb_iter_seek(it, (const char *)b, bl); rocksdb_iter_valid(it) && count <= SMALL_CLEAR_KEYS;
           rocksdb_iter_next(it))
        count++;
      if (count > SMALL_CLEAR_KEYS) {
        rocksdb_writebatch_delete_range(wb, (const char *)b, bl, (const char *)nx->key, nx->klen);
        if (!d->drop_b.len || ws_keycmp(b, bl, d->drop_b.p, d->drop_b.len) < 0) {
          buf_reset(&d->drop_b);
          buf_append(&d->drop_b, b, bl);
        }
        if (!d->drop_e.len || ws_keycmp(nx->key, nx->klen, d->drop_e.p, d->drop_e.len) > 0) {
          buf_reset(&d->drop_e);
          buf_append(&d->drop_e, nx->key, nx->klen);
        }
      } else {
        for (rocksdb_iter_seek(it, (const char *)b, bl); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
          size_t kl;
          const char *k = rocksdb_iter_key(it, &kl);
          rocksdb_writebatch_delete(wb, k, kl);
        }
      }
      rocksdb_iter_get_error(it, &err);
      rocksdb_iter_destroy(it);
      rocksdb_readoptions_destroy(ro);
      if (err) { rocksdb_free(err); return DV_EIO; }
      if (n->op == WS_CLEAR) continue;
    }
    switch (n->op) {
    case WS_SET:
      rocksdb_writebatch_put(wb, (const char *)n->key, n->klen, (const char *)n->val, n->vlen);
      break;
    case WS_CLEAR:
      rocksdb_writebatch_delete(wb, (const char *)n->key, n->klen);
      break;
    case WS_ATOMIC: {
      size_t bl = 0;
      char *base = rocksdb_get(d->db, d->ro_latest, (const char *)n->key, n->klen, &bl, &err);
      if (err) { rocksdb_free(err); return DV_EIO; }
      size_t len;
      const uint8_t *v = ws_apply_atoms(o, n->atoms, (const uint8_t *)base, bl, base != NULL, &len);
      if (base) rocksdb_free(base);
      if (!v) return DV_ENOMEM;
      n->op = WS_SET;
      n->val = v;
      n->vlen = len;
      n->atoms = n->atoms_tail = NULL;
      rocksdb_writebatch_put(wb, (const char *)n->key, n->klen, (const char *)v, len);
      break;
    }
    default:
      break;
    }
  }
  return 0;
}

/* ---- commit: write-range segments ---------------------------------------------
 *
 * The write ranges of the commits accepted so far in a batch are kept as a
 * stack of segments (hist, without version): each sorted by begin, its
 * ranges disjoint, each at most half the size of the one below, so there
 * are O(log n) of them and a read range is checked with one binary search
 * each. After a commit is accepted its ranges become a segment, pushed and
 * merged down; at the end of the batch the stack merges into one segment,
 * which joins the history. */

static void hist_free(hist *h) {
  if (!h) return;
  buf_free(&h->bytes);
  dv_free(h->r);
  dv_free(h);
}

/* Append [b, e) to a segment built in begin order, merged into its last
 * range if it overlaps or touches it. */
static int seg_append(hist *h, size_t *cap, const uint8_t *b, size_t bl, const uint8_t *e, size_t el) {
  if (h->n) {
    range *last = &h->r[h->n - 1];
    if (cmp(b, bl, h->bytes.p + last->e, last->el) <= 0) {
      if (cmp(e, el, h->bytes.p + last->e, last->el) > 0) {
        last->e = h->bytes.len;
        last->el = el;
        buf_append(&h->bytes, e, el);
      }
      return buf_error(&h->bytes);
    }
  }
  if (el == bl + 1 && !e[bl] && !memcmp(b, e, bl)) /* a point: one copy of the key */
    return range_push_point(&h->bytes, &h->r, &h->n, cap, b, bl);
  return range_push(&h->bytes, &h->r, &h->n, cap, b, bl, e, el);
}

/* Sort the accepted commit's write ranges by begin key. accept() pushes
 * the write set's keys in order, then its versionstamped keys and conflict
 * ranges, each in order as a rule: a few sorted runs, so a natural merge
 * sort (runs merged pairwise, pass after pass) is about linear. Its scratch
 * array is kept across batches: qsort's own, for a 1,000-document commit's
 * 15,000 ranges, was a fresh mapping each time. Stable. */
static int bw_sort(rdb *d) {
  size_t n = d->bw_n;
  if (n < 2) return 0;
  if (range_reserve(&d->bw_tmp, 0, &d->bw_tmp_cap, n)) return DV_ENOMEM;
  const uint8_t *p = d->bw.p;
#define BW_LESS(x, y) (cmp(p + (x).b, (x).bl, p + (y).b, (y).bl) < 0)
  range *src = d->bw_r, *dst = d->bw_tmp;
  for (;;) {
    size_t i = 0, runs = 0;
    while (i < n) {
      size_t m = i + 1, e;
      while (m < n && !BW_LESS(src[m], src[m - 1])) m++;
      for (e = m < n ? m + 1 : m; e < n && !BW_LESS(src[e], src[e - 1]); e++) {}
      size_t a = i, b = m, o = i;
      while (a < m && b < e) dst[o++] = BW_LESS(src[b], src[a]) ? src[b++] : src[a++];
      while (a < m) dst[o++] = src[a++];
      while (b < e) dst[o++] = src[b++];
      i = e;
      runs++;
    }
    range *t = src;
    src = dst;
    dst = t;
    if (runs == 1) break;
  }
#undef BW_LESS
  if (src != d->bw_r) { /* the sorted ranges are in the scratch array: trade */
    size_t c = d->bw_cap;
    d->bw_tmp = d->bw_r;
    d->bw_r = src;
    d->bw_cap = d->bw_tmp_cap;
    d->bw_tmp_cap = c;
  }
  return 0;
}

/* The accepted commit's write ranges (d->bw) as a segment; NULL on
 * DV_ENOMEM. */
static hist *seg_from_bw(rdb *d) {
  hist *h = dv_calloc(1, sizeof *h);
  if (!h) return NULL;
  size_t cap = 0;
  /* at most as many ranges and bytes as bw holds (a point keeps sharing
   * its key's bytes): sized once */
  if (bw_sort(d) || range_reserve(&h->r, 0, &cap, d->bw_n) || buf_reserve(&h->bytes, d->bw.len)) {
    hist_free(h);
    return NULL;
  }
  for (size_t i = 0; i < d->bw_n; i++) {
    const range *r = &d->bw_r[i];
    if (seg_append(h, &cap, d->bw.p + r->b, r->bl, d->bw.p + r->e, r->el)) {
      hist_free(h);
      return NULL;
    }
  }
  return h;
}

/* One segment holding the union of x and y, which are freed; NULL on
 * DV_ENOMEM (x and y are freed all the same). */
static hist *seg_merge(hist *x, hist *y) {
  hist *h = dv_calloc(1, sizeof *h);
  size_t cap = 0, i = 0, j = 0;
  int rc = h ? 0 : DV_ENOMEM;
  if (!rc && (range_reserve(&h->r, 0, &cap, x->n + y->n) || buf_reserve(&h->bytes, x->bytes.len + y->bytes.len)))
    rc = DV_ENOMEM;
  while (!rc && (i < x->n || j < y->n)) {
    const hist *from;
    const range *r;
    if (j == y->n || (i < x->n && cmp(x->bytes.p + x->r[i].b, x->r[i].bl, y->bytes.p + y->r[j].b,
                                      y->r[j].bl) <= 0)) {
      from = x;
      r = &x->r[i++];
    } else {
      from = y;
      r = &y->r[j++];
    }
    rc = seg_append(h, &cap, from->bytes.p + r->b, r->bl, from->bytes.p + r->e, r->el);
  }
  hist_free(x);
  hist_free(y);
  if (rc) {
    hist_free(h);
    return NULL;
  }
  return h;
}

/* Push the accepted commit's write ranges onto the batch's segment stack. */
static int seg_push(rdb *d) {
  if (!d->bw_n) return 0;
  hist *h = seg_from_bw(d);
  if (!h) return DV_ENOMEM;
  d->seg[d->nseg++] = h;
  while (d->nseg >= 2 &&
         (d->seg[d->nseg - 1]->n * 2 > d->seg[d->nseg - 2]->n || d->nseg == (int)(sizeof d->seg / sizeof d->seg[0]))) {
    hist *m = seg_merge(d->seg[d->nseg - 2], d->seg[d->nseg - 1]);
    d->nseg -= 2;
    if (!m) return DV_ENOMEM;
    d->seg[d->nseg++] = m;
  }
  return 0;
}

static void seg_clear(rdb *d) {
  while (d->nseg) hist_free(d->seg[--d->nseg]);
}

/* ---- the history: what it keeps, and in how much memory ---------------------
 *
 * A commit with read version rv conflicts with the write ranges of every
 * batch newer than rv (resolve). So an entry is needed only while some
 * transaction may still commit with an older read version, and every read
 * version is a live snapshot's (ensure_snap): entries at or below the oldest
 * live snapshot are dropped at once (exact: no conflict is lost), and h_floor
 * rises with them. A transaction that has not read yet takes the newest
 * snapshot, above every dropped entry. Entries also go after 5 s, when
 * every transaction that could use them is too old anyway.
 *
 * So the history is short while transactions are short. A long one (a
 * feed's scan, a slow client's transaction) keeps up to 5 s of it alive; at
 * 45k documents/s that was ~300 MB. When the history holds more than
 * h_budget bytes (an eighth of [divan] memory_limit), its oldest entries
 * are coarsened: neighbouring ranges merge into one covering both, the
 * pairs with the longest common key prefix first (the keys of one document,
 * then of one database), halving the ranges each round; an entry down to
 * one range merges with the next newer one under the newer's version. Each
 * step only widens what a commit is checked against: a conflict may be
 * reported that was not one (the transaction is retried), never missed.
 * bench_kv "history" measures the false-conflict rate. */

static size_t hist_cost(const hist *h) { return sizeof *h + h->bytes.len + h->n * sizeof *h->r; }

static void hist_link_oldest_out(rdb *d) {
  hist *h = d->h_old;
  d->h_old = h->next;
  if (d->h_old) d->h_old->prev = NULL;
  else d->h_new = NULL;
  d->h_bytes -= h->cost;
  if (h->version > d->h_floor) d->h_floor = h->version;
  hist_free(h);
}

/* Merge the batch's segments into one history entry at `version`. */
static int history_add(rdb *d, int64_t version) {
  while (d->nseg >= 2) {
    hist *m = seg_merge(d->seg[d->nseg - 2], d->seg[d->nseg - 1]);
    d->nseg -= 2;
    if (!m) return DV_ENOMEM;
    d->seg[d->nseg++] = m;
  }
  hist *h = d->nseg ? d->seg[--d->nseg] : dv_calloc(1, sizeof *h);
  if (!h) return DV_ENOMEM;
  if (h->n) { /* fit: its size is what the budget counts */
    range *r = dv_realloc(h->r, h->n * sizeof *r);
    if (r) h->r = r;
    uint8_t *p = dv_realloc(h->bytes.p, h->bytes.len + 1);
    if (p) h->bytes.p = p, h->bytes.cap = h->bytes.len;
  }
  h->version = version;
  h->time_ms = now_ms();
  h->cost = hist_cost(h);
  d->h_bytes += h->cost;
  h->prev = d->h_new;
  if (d->h_new) d->h_new->next = h;
  else d->h_old = h;
  d->h_new = h;
  return 0;
}

/* Length of the common prefix of a and b. */
static size_t lcp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
  size_t n = al < bl ? al : bl, i = 0;
  while (i < n && a[i] == b[i]) i++;
  return i;
}

/* Coarsen h (n >= 2): merge about half of its neighbouring pairs — those
 * whose gap has the longest common prefix — into covering ranges. The new
 * entry replaces h in the list. DV_ENOMEM leaves h as it was. */
static int hist_coarsen(rdb *d, hist *h) {
  size_t n = h->n, hi[257] = {0};
  uint16_t *g = dv_malloc((n - 1) * sizeof *g); /* gap i: between r[i] and r[i+1] */
  if (!g) return DV_ENOMEM;
  const uint8_t *p = h->bytes.p;
  for (size_t i = 0; i + 1 < n; i++) {
    size_t l = lcp(p + h->r[i].e, h->r[i].el, p + h->r[i + 1].b, h->r[i + 1].bl);
    g[i] = (uint16_t)(l > 255 ? 255 : l);
    hi[g[i]]++;
  }
  /* the threshold: merge gaps with lcp >= t, about half of them (at least one) */
  size_t want = (n - 1 + 1) / 2, have = 0;
  int t = 255;
  while (t > 0 && have + hi[t] < want) have += hi[t--];
  hist *m = dv_calloc(1, sizeof *m);
  size_t cap = 0;
  int rc = m ? 0 : DV_ENOMEM;
  for (size_t i = 0; i < n && !rc;) {
    size_t j = i;
    while (j + 1 < n && g[j] >= t) j++; /* r[i..j] become one */
    rc = range_push(&m->bytes, &m->r, &m->n, &cap, p + h->r[i].b, h->r[i].bl, p + h->r[j].e, h->r[j].el);
    i = j + 1;
  }
  dv_free(g);
  if (rc) {
    hist_free(m);
    return DV_ENOMEM;
  }
  m->version = h->version;
  m->time_ms = h->time_ms;
  m->cost = hist_cost(m);
  m->prev = h->prev;
  m->next = h->next;
  if (m->prev) m->prev->next = m;
  else d->h_old = m;
  if (m->next) m->next->prev = m;
  else d->h_new = m;
  d->h_bytes += m->cost;
  d->h_bytes -= h->cost;
  hist_free(h);
  return 0;
}

static void history_trim(rdb *d) {
  int64_t cutoff = now_ms() - KV_MAX_TXN_AGE_MS - 100;
  pthread_mutex_lock(&d->snap_mu);
  int64_t oldest_rv = d->s_old ? d->s_old->version : d->version;
  pthread_mutex_unlock(&d->snap_mu);
  while (d->h_old && (d->h_old->version <= oldest_rv || d->h_old->time_ms < cutoff)) hist_link_oldest_out(d);
  /* over the budget: coarsen, oldest first */
  while (d->h_bytes > d->h_budget && d->h_old) {
    hist *a = d->h_old;
    if (a->n >= 2) {
      if (hist_coarsen(d, a)) break;
    } else { /* one range or none: fold it into the next newer entry, under that one's version */
      hist *b = a->next;
      if (!b) break;
      hist *bn = b->next;
      int64_t vb = b->version, tb = b->time_ms;
      size_t cost = a->cost + b->cost;
      hist *m = seg_merge(a, b); /* frees a and b */
      d->h_bytes -= cost;
      if (m) {
        m->version = vb;
        m->time_ms = tb;
        m->cost = hist_cost(m);
        d->h_bytes += m->cost;
      } else if (vb > d->h_floor) { /* both lost: whoever would need them is too old */
        d->h_floor = vb;
      }
      if (m) m->next = bn, m->prev = NULL;
      d->h_old = m ? m : bn;
      if (bn) bn->prev = m;
      else d->h_new = m;
      if (!m) break;
    }
    dv_stat_inc(DV_ST_KV_HISTORY_COARSENED);
  }
}

/* ---- giving back the space of deleted ranges ------------------------------------
 *
 * A dropped database is one range tombstone: its data stays in the table
 * files until a compaction drops it, so on a full disk deleting a database
 * freed nothing (issue 24). After a batch that wrote range tombstones and
 * held a commit that frees space (kv_set_frees_space: a database's
 * deletion), their union is handed to one reclaim thread, which deletes
 * the table files wholly inside it and compacts the rest
 * (kv__rocks_reclaim). Ranges that arrive meanwhile are merged into the
 * next round. Other large clears (the TxId buckets' cleanup, the
 * _db_updates queue's consumer) are left to the normal compactions: a
 * forced compaction of their range rewrote every table file that spans
 * it — with the exploded layout, nearly all of them — and under PUTs of
 * single documents it took more than half of all compaction CPU. */

static void *reclaim_main(void *arg) {
  dv_thread_name("dv-reclaim");
  rdb *d = arg;
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  pthread_mutex_lock(&d->rc_mu);
  while (!d->rc_stop) {
    if (!d->rc_b.len) {
      pthread_cond_wait(&d->rc_cv, &d->rc_mu);
      continue;
    }
    buf_reset(&b);
    buf_reset(&e);
    buf_append(&b, d->rc_b.p, d->rc_b.len);
    buf_append(&e, d->rc_e.p, d->rc_e.len);
    buf_reset(&d->rc_b);
    buf_reset(&d->rc_e);
    pthread_mutex_unlock(&d->rc_mu);
    if (!buf_error(&b) && !buf_error(&e) && !pthread_rwlock_rdlock(&d->db_rw)) {
      if (d->db) (void)kv__rocks_reclaim(d->db, (const char *)b.p, b.len, (const char *)e.p, e.len);
      pthread_rwlock_unlock(&d->db_rw);
    }
    pthread_mutex_lock(&d->rc_mu);
  }
  pthread_mutex_unlock(&d->rc_mu);
  buf_free(&b);
  buf_free(&e);
  return NULL;
}

/* Queue the batch's dropped ranges (committer, after a durable write). */
static void reclaim_later(rdb *d) {
  if (!d->drop_b.len) return;
  pthread_mutex_lock(&d->rc_mu);
  if (!d->rc_b.len || ws_keycmp(d->drop_b.p, d->drop_b.len, d->rc_b.p, d->rc_b.len) < 0) {
    buf_reset(&d->rc_b);
    buf_append(&d->rc_b, d->drop_b.p, d->drop_b.len);
  }
  if (!d->rc_e.len || ws_keycmp(d->drop_e.p, d->drop_e.len, d->rc_e.p, d->rc_e.len) > 0) {
    buf_reset(&d->rc_e);
    buf_append(&d->rc_e, d->drop_e.p, d->drop_e.len);
  }
  if (!d->rc_running && !d->rc_stop) d->rc_running = !pthread_create(&d->rc_thread, NULL, reclaim_main, d);
  pthread_cond_signal(&d->rc_cv);
  pthread_mutex_unlock(&d->rc_mu);
  buf_reset(&d->drop_b);
  buf_reset(&d->drop_e);
}

/* Free bytes for unprivileged users on the store's filesystem, or -1. */
static int64_t free_bytes(const char *path, uint64_t *total) {
  struct statvfs v;
  if (statvfs(path, &v)) return -1;
  if (total) *total = (uint64_t)v.f_blocks * v.f_frsize;
  return (int64_t)((uint64_t)v.f_bavail * v.f_frsize);
}

/* 1 when the free space is below the reserve (measured every SPACE_CHECK_MS). */
static int space_low(rdb *d, int64_t now) {
  if (!d->reserve) return 0;
  if (now - d->space_at_ms >= SPACE_CHECK_MS || d->stopped) {
    int64_t f = free_bytes(d->path, NULL);
    d->low = f >= 0 && (uint64_t)f < d->reserve;
    d->space_at_ms = now;
  }
  return d->low;
}

static int read_version(rdb *d, int64_t *out);
static void run_batch(rdb *d, rtxn *list);
static rtxn *take_batch(rdb *d);

/* Close and open the store again (recover(), under batch_mu): the way out
 * of a failed WAL write, which RocksDB treats as fatal (DB::Resume refuses
 * it). New readers wait at snap_acquire; queued commits are answered
 * (DV_ENOSPC, the store is stopped) so their snapshots go; once no
 * snapshot but the published one is alive, the store is reopened (its WAL
 * replayed up to the failed record: every acknowledged commit is before
 * it) and the version published again. 0, or an error with the old store
 * still open (gave up waiting for readers) or none (reopen failed: retried
 * later, reads fail meanwhile). */
static int reopen(rdb *d) {
  pthread_mutex_lock(&d->snap_mu);
  d->reopening = 1;
  pthread_mutex_unlock(&d->snap_mu);
  int rc = DV_EIO;
  int64_t until = now_ms() + 3000;
  for (;;) {
    rtxn *list = take_batch(d);
    if (list) run_batch(d, list); /* stopped: every writer gets DV_ENOSPC */
    if (atomic_load(&d->nsnaps) <= 1 && (!d->cur || atomic_load(&d->cur->refs) == 1)) break;
    if (now_ms() > until) goto out; /* a reader holds on: try again later */
    usleep(2000);
  }
  if (pthread_rwlock_wrlock(&d->db_rw)) goto out;
  if (d->db) {
    if (d->cur) snap_unref(d, d->cur);
    d->cur = NULL;
    rocksdb_close(d->db);
  }
  char *err = NULL;
  d->db = d->open_fn(d->opts, d->path, &err);
  if (err) {
    log_error("cannot reopen the store: %s", err);
    rocksdb_free(err);
    d->db = NULL;
  } else {
    int64_t v = 0;
    rc = read_version(d, &v);
    if (!rc && v != d->version) rc = DV_ECORRUPT; /* the WAL lost an acknowledged commit */
    if (!rc) rc = publish(d, d->version);
  }
  pthread_rwlock_unlock(&d->db_rw);
out:
  pthread_mutex_lock(&d->snap_mu);
  d->reopening = !d->cur; /* without a published snapshot readers keep waiting */
  pthread_cond_broadcast(&d->snap_cv);
  pthread_mutex_unlock(&d->snap_mu);
  return rc;
}

/* After a failed write RocksDB refuses every write until it is resumed.
 * Only a full disk is resumed (stop_rc DV_ENOSPC, see write_failed).
 * Once there is room again — the reserve, and at least a memtable's flush
 * and a new WAL — the store is reopened (called by the committer between
 * batches, under batch_mu). Not DB::Resume: after a failed WAL append it
 * refuses (RocksDB treats that as fatal), and after a failed flush it
 * switches the memtable and syncs the errored WAL writer, which Debian's
 * librocksdb (built with assertions) aborts on. */
static void recover(rdb *d) {
  int64_t now = now_ms();
  if (!d->stopped || d->stop_rc != DV_ENOSPC || now - d->resume_at_ms < RESUME_EVERY_MS) return;
  d->resume_at_ms = now;
  int64_t f = free_bytes(d->path, NULL);
  if (space_low(d, now) || (f >= 0 && (uint64_t)f < d->room)) return;
  if (!reopen(d)) {
    d->stopped = 0;
    log_notice("the store accepts writes again");
  }
}

/* Was RocksDB's error a failed sync? Its messages name the call:
 * "IO error: While fdatasync: <file>: Input/output error" (env/io_posix.cc). */
static int sync_error(const char *err) {
  static const char *const calls[] = {"While fsync", "While fdatasync", "While sync_file_range", "While msync",
                                      "While fcntl(F_FULLFSYNC"};
  for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
    if (strstr(err, calls[i])) return 1;
  return 0;
}

/* A synced write failed (err: RocksDB's message), so nothing of its batch
 * is acknowledged. RocksDB stops writing after it until resumed. A full
 * disk (an append refused for space) is the client's 507 and is resumed
 * once there is room (recover()). Anything else — above all a failed
 * fsync, whatever its errno — turns the store read-only until the server
 * restarts: after a failed fsync the kernel may have dropped the dirty
 * pages and cleared the error, so a later sync that succeeds proves
 * nothing ("fsyncgate"; CouchDB's couch_file stops on it too); a restart
 * replays the WAL from what the disk really holds. Returns the answer of
 * this batch and every later write: DV_ENOSPC or DV_EREAD_ONLY. */
static int write_failed(rdb *d, const char *err, int64_t now) {
  int nospace = !sync_error(err) && (strstr(err, "No space") || strstr(err, "NoSpace") || strstr(err, "no space"));
  int rc = nospace ? DV_ENOSPC : DV_EREAD_ONLY;
  dv_stat_inc(DV_ST_ROCKS_WRITE_FAILURES);
  if (!d->stopped || d->stop_rc != rc) {
    if (rc == DV_EREAD_ONLY)
      log_error("rocksdb write failed: %s; the store is read-only until the server restarts", err);
    else
      log_error("rocksdb write failed: %s", err);
  }
  if (d->stopped && d->stop_rc == DV_EREAD_ONLY) rc = DV_EREAD_ONLY; /* never back to resumable */
  d->stopped = 1;
  d->stop_rc = rc;
  d->resume_at_ms = now;
  if (rc == DV_EREAD_ONLY) atomic_store(&d->read_only, 1);
  pthread_mutex_lock(&d->q_mu); /* the committer watches for the space coming back */
  pthread_cond_signal(&d->q_cv);
  pthread_mutex_unlock(&d->q_mu);
  return rc;
}

static void run_batch(rdb *d, rtxn *list) {
  int64_t version = d->version + 1;
  uint16_t order = 0;
  ws_reset(&d->overlay);
  seg_clear(d);
  int rc = 0;
  int64_t now = now_ms();
  int low = space_low(d, now), frees = 0;
  for (rtxn *t = list; t; t = t->q_next) {
    t->result = 0;
    if (!t->has_writes) continue; /* read-only with watches */
    if (d->stopped || (low && !t->base.frees_space)) { /* the disk is (nearly) full: 507 */
      t->result = d->stopped ? d->stop_rc : DV_ENOSPC;
      continue;
    }
    int r = resolve(d, t);
    if (!r) {
      t->order = order;
      buf_reset(&d->bw);
      d->bw_n = 0;
      r = accept(d, t, version, order);
      if (!r) r = seg_push(d);
      if (r) {
        /* Partly replayed: the overlay is unusable; fail the batch. */
        rc = r;
        break;
      }
      order++;
      frees |= t->base.frees_space;
    }
    t->result = r;
  }
  if (!rc && order) {
    rocksdb_writebatch_t *wb = d->wb;
    rocksdb_writebatch_clear(wb);
    rc = materialize(d, wb);
    if (!rc) {
      uint8_t vb[8];
      for (int i = 0; i < 8; i++) vb[i] = (uint8_t)((uint64_t)version >> (56 - 8 * i));
      rocksdb_writebatch_put(wb, VERSION_KEY, VERSION_KEY_LEN, (const char *)vb, 8);
      char *err = NULL;
      int64_t t0 = dv_stats_on() ? now_us() : 0;
      rocksdb_write(d->db, d->wo, wb, &err);
      if (!err && t0) { /* a group commit: its size and its synced write's time */
        dv_stat_inc(DV_ST_ROCKS_BATCHES);
        dv_stat_hist(DV_SH_ROCKS_BATCH_SIZE, order);
        dv_stat_hist(DV_SH_ROCKS_SYNC_TIME, (double)(now_us() - t0) / 1000.0);
      }
      if (err) {
        rc = write_failed(d, err, now);
        rocksdb_free(err);
      }
    }
    size_t wbl = 0;
    rocksdb_writebatch_data(wb, &wbl);
    if (wbl > 2 * d->batch_bytes) { /* one outsized commit: give its memory back */
      rocksdb_writebatch_t *fresh = rocksdb_writebatch_create();
      if (fresh) {
        rocksdb_writebatch_destroy(wb);
        d->wb = fresh;
      }
    }
    if (!rc && frees) reclaim_later(d);
    buf_reset(&d->drop_b);
    buf_reset(&d->drop_e);
    if (!rc) {
      d->version = version;
      if (publish(d, version) || history_add(d, version)) rc = DV_ENOMEM;
    }
  }
  if (rc) {
    /* Nothing of this batch is durable (or, for a failure after the write,
     * the outcome is unknown to the clients). */
    int after_write = d->version == version;
    for (rtxn *t = list; t; t = t->q_next)
      if (t->has_writes && !t->result) t->result = after_write ? DV_ECOMMIT_UNKNOWN : rc;
  }
  /* Watches of these commits register against the newest state, then
   * everyone is acknowledged, then watches fire. */
  for (rtxn *t = list; t; t = t->q_next) {
    if (!t->result) {
      t->committed = 1;
      t->committed_version = t->has_writes ? version : -1;
    }
    watches_settle(d, t, t->result);
  }
  for (rtxn *t = list, *next; t; t = next) {
    next = t->q_next; /* the callback may destroy t */
    t->cb(&t->base, t->result, t->cb_arg);
  }
  if (!rc && order) watches_after_batch(d);
  seg_clear(d);
  history_trim(d);
}

/* Take the next batch off the queue: as many as wait, within the batch
 * limits. Caller holds batch_mu (so batches run one at a time, in queue
 * order). NULL when the queue is empty. */
static rtxn *take_batch(rdb *d) {
  pthread_mutex_lock(&d->q_mu);
  rtxn *list = d->q_head, *last = list;
  if (list) {
    size_t n = 1, bytes = list->qbytes;
    while (last->q_next && n < MAX_BATCH_TXNS && bytes + last->q_next->qbytes <= d->batch_bytes) {
      last = last->q_next;
      bytes += last->qbytes;
      n++;
    }
    d->q_head = last->q_next;
    if (!d->q_head) d->q_tail = NULL;
    last->q_next = NULL;
  }
  pthread_mutex_unlock(&d->q_mu);
  return list;
}

static void *committer_main(void *arg) {
  dv_thread_name("dv-commit");
  rdb *d = arg;
  for (;;) {
    pthread_mutex_lock(&d->q_mu);
    while (!d->q_head && !d->stop) {
      if (!d->stopped || d->stop_rc != DV_ENOSPC) { /* read-only: nothing to wait for */
        pthread_cond_wait(&d->q_cv, &d->q_mu);
        continue;
      }
      /* stopped by a failed write: look again for free space now and then */
      struct timespec ts = dv_deadline_ms(CLOCK_REALTIME, RESUME_EVERY_MS);
      pthread_cond_timedwait(&d->q_cv, &d->q_mu, &ts);
      break;
    }
    int quit = !d->q_head && d->stop;
    pthread_mutex_unlock(&d->q_mu);
    if (quit) break;
    pthread_mutex_lock(&d->batch_mu);
    if (d->stopped) recover(d);
    rtxn *list = take_batch(d); /* a leader may have taken them already */
    if (list) run_batch(d, list);
    pthread_mutex_unlock(&d->batch_mu);
  }
  return NULL;
}

/* Blocking commit, leader style (RocksDB's write thread): a caller that
 * finds no batch running runs the batch itself — its own commit and any
 * that queued meanwhile — so an uncontended commit costs no thread
 * handoff (measured: one committer 0.79x -> 1.01x of a raw synced put).
 * Otherwise it wakes the committer thread and waits like an async caller.
 * Asynchronous commits always go through the committer thread, so a
 * request waiting for one holds no thread. */
static int r_commit_sync(kv_txn *kt) {
  rtxn *t = (rtxn *)kt;
  rdb *d = t->db;
  int rc;
  if (commit_trivially(t, &rc)) return rc;
  kv__waiter w = KV__WAITER_INIT;
  enqueue(d, t, kv__wait_cb, &w, 0);
  if (pthread_mutex_trylock(&d->batch_mu) == 0) {
    /* Our transaction is queued and nobody else can take it now. */
    rtxn *list;
    while (!w.done && (list = take_batch(d))) run_batch(d, list);
    pthread_mutex_unlock(&d->batch_mu);
  }
  pthread_mutex_lock(&d->q_mu);
  if (d->q_head) pthread_cond_signal(&d->q_cv); /* ours, or others left behind */
  pthread_mutex_unlock(&d->q_mu);
  return kv__wait(&w);
}

/* ---- transactions: lifecycle ---------------------------------------------------- */

static void txn_clear(rtxn *t) {
  if (t->pending) watches_settle(t->db, t, DV_ECANCELLED);
  if (t->snap) {
    snap_unref(t->db, t->snap);
    t->snap = NULL;
  }
  ws_reset(&t->w);
  t->has_writes = 0;
  t->vs_head = t->vs_tail = NULL;
  buf_reset(&t->vs_bytes);
  t->nvsr = 0;
  buf_reset(&t->cb_bytes);
  t->nreads = t->nwconf = 0;
  t->committed = 0;
  t->committed_version = -1;
  t->order = 0;
  t->start_ms = now_ms();
}

static int r_txn_begin(kv_db *kd, kv_txn **out) {
  rdb *d = (rdb *)kd;
  rtxn *t = dv_calloc(1, sizeof *t);
  if (!t) return DV_ENOMEM;
  kv__txn_init(&t->base, &rocks_methods, kd);
  t->db = d;
  t->ro = rocksdb_readoptions_create();
  if (ws_init(&t->w)) {
    rocksdb_readoptions_destroy(t->ro);
    dv_free(t);
    return DV_ENOMEM;
  }
  buf_init(&t->cb_bytes);
  buf_init(&t->vs_bytes);
  t->committed_version = -1;
  t->start_ms = now_ms();
  *out = &t->base;
  return 0;
}

static void r_txn_reset(kv_txn *kt) {
  rtxn *t = (rtxn *)kt;
  txn_clear(t);
  rocksdb_readoptions_destroy(t->ro);
  t->ro = rocksdb_readoptions_create();
}

static void r_txn_destroy(kv_txn *kt) {
  rtxn *t = (rtxn *)kt;
  txn_clear(t);
  ws_free(&t->w);
  buf_free(&t->cb_bytes);
  buf_free(&t->vs_bytes);
  dv_free(t->vsr);
  dv_free(t->reads);
  dv_free(t->wconf);
  rocksdb_readoptions_destroy(t->ro);
  dv_free(t);
}

/* ---- open / close ------------------------------------------------------------------ */

static int64_t r_db_version(kv_db *kd) {
  rdb *d = (rdb *)kd;
  pthread_mutex_lock(&d->snap_mu);
  while (d->reopening) pthread_cond_wait(&d->snap_cv, &d->snap_mu);
  int64_t v = d->cur->version;
  pthread_mutex_unlock(&d->snap_mu);
  return v;
}

/* Free every part of a store that exists; used by close and by a failed
 * open. The committer must not be running. */
static void rdb_free(rdb *d) {
  if (d->cur) snap_unref(d, d->cur);
  while (d->h_old) {
    hist *h = d->h_old;
    d->h_old = h->next;
    hist_free(h);
  }
  seg_clear(d);
  ws_free(&d->overlay);
  buf_free(&d->bw);
  dv_free(d->bw_r);
  dv_free(d->bw_tmp);
  if (d->wb) rocksdb_writebatch_destroy(d->wb);
  if (d->ro_latest) rocksdb_readoptions_destroy(d->ro_latest);
  if (d->wo) rocksdb_writeoptions_destroy(d->wo);
  if (d->db) rocksdb_close(d->db);
  if (d->opts) rocksdb_options_destroy(d->opts);
  if (d->bbto) rocksdb_block_based_options_destroy(d->bbto);
  if (d->cache) rocksdb_cache_destroy(d->cache);
  if (d->lock_fd >= 0) close(d->lock_fd);
  dv_free(d->path);
  if (d->hub) {
    pthread_mutex_lock(&d->hub->mu);
    hub_unref_locked(d->hub); /* handles still out keep it alive */
  }
  pthread_mutex_destroy(&d->snap_mu);
  pthread_cond_destroy(&d->snap_cv);
  pthread_rwlock_destroy(&d->db_rw);
  pthread_mutex_destroy(&d->rc_mu);
  pthread_cond_destroy(&d->rc_cv);
  buf_free(&d->drop_b);
  buf_free(&d->drop_e);
  buf_free(&d->rc_b);
  buf_free(&d->rc_e);
  pthread_mutex_destroy(&d->q_mu);
  pthread_mutex_destroy(&d->batch_mu);
  pthread_cond_destroy(&d->q_cv);
  dv_free(d);
}

static void r_close(kv_db *kd) {
  rdb *d = (rdb *)kd;
  pthread_mutex_lock(&d->rc_mu); /* end the reclaim thread (its compaction too) */
  d->rc_stop = 1;
  int rc_running = d->rc_running;
  pthread_cond_signal(&d->rc_cv);
  pthread_mutex_unlock(&d->rc_mu);
  if (rc_running) {
    if (d->db) kv__rocks_cancel(d->db);
    pthread_join(d->rc_thread, NULL);
  }
  pthread_mutex_lock(&d->q_mu);
  d->stop = 1;
  pthread_cond_signal(&d->q_cv);
  pthread_mutex_unlock(&d->q_mu);
  pthread_join(d->committer, NULL);
  pthread_mutex_lock(&d->hub->mu);
  while (d->hub->list) watch_fire_locked(d, d->hub->list, DV_ECANCELLED);
  pthread_mutex_unlock(&d->hub->mu);
  rdb_free(d);
}

/* The persisted commit version, or 0 for a new store. */
static int read_version(rdb *d, int64_t *out) {
  char *err = NULL;
  size_t n = 0;
  char *v = rocksdb_get(d->db, d->ro_latest, VERSION_KEY, VERSION_KEY_LEN, &n, &err);
  if (err) {
    rocksdb_free(err);
    return DV_EIO;
  }
  int rc = 0;
  uint64_t x = 0;
  if (v && n == 8) {
    for (int i = 0; i < 8; i++) x = x << 8 | (uint8_t)v[i];
  } else if (v) {
    rc = DV_ECORRUPT;
  }
  if (v) rocksdb_free(v);
  *out = (int64_t)x;
  return rc;
}

int kv_open_rocks(const char *path, const kv_rocks_opts *o, kv_db **out_db) {
  kv_rocks_opts def = {.create_if_missing = 1};
  if (!o) o = &def;
  if (o->create_if_missing && mkdir(path, 0755) && errno != EEXIST) return DV_EIO;
  char lockpath[4096];
  snprintf(lockpath, sizeof lockpath, "%s/divan.lock", path);
  int fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return DV_EIO;
  if (flock(fd, LOCK_EX | LOCK_NB)) {
    close(fd);
    return DV_ELOCKED;
  }
  rdb *d = dv_calloc(1, sizeof *d);
  if (!d) {
    close(fd);
    return DV_ENOMEM;
  }
  int rc = 0;
  char *err = NULL;
  d->base.m = &rocks_methods;
  d->lock_fd = fd;
  pthread_mutex_init(&d->snap_mu, NULL);
  pthread_cond_init(&d->snap_cv, NULL);
  pthread_rwlock_init(&d->db_rw, NULL);
  d->open_fn = rocksdb_open;
  pthread_mutex_init(&d->rc_mu, NULL);
  pthread_cond_init(&d->rc_cv, NULL);
  buf_init(&d->drop_b);
  buf_init(&d->drop_e);
  buf_init(&d->rc_b);
  buf_init(&d->rc_e);
  pthread_mutex_init(&d->q_mu, NULL);
  pthread_mutex_init(&d->batch_mu, NULL);
  pthread_cond_init(&d->q_cv, NULL);
  buf_init(&d->bw);
  d->hub = dv_calloc(1, sizeof *d->hub);
  d->wb = rocksdb_writebatch_create();
  if (!d->hub || !d->wb || ws_init(&d->overlay)) {
    rc = DV_ENOMEM;
    goto fail;
  }
  pthread_mutex_init(&d->hub->mu, NULL);
  pthread_cond_init(&d->hub->cv, NULL);
  d->hub->refs = 1;

  d->opts = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(d->opts, o->create_if_missing);
  rocksdb_options_increase_parallelism(d->opts, 2);
  rocksdb_options_set_max_background_jobs(d->opts, 2);
  /* The memory budget's shares (kv.h kv_rocks_opts): an eighth block
   * cache, two memtables of a sixteenth each, a sixteenth the conflict
   * history, a 32nd a group commit's batch (its overlay and WriteBatch are
   * two more copies). With the default memory_limit (128 MiB, ~97 of it
   * left after the process's start): 12, 2 × 6, 6 and 3 MiB. The rest is
   * the requests' (a quarter, http.h body_budget) and the process's own
   * (JSON, JavaScript contexts, the pinned top-level indexes, compactions, the
   * allocator's slack). */
  size_t mem_mb = o->memory_mb ? o->memory_mb : KV_ROCKS_MEMORY_MB;
  if (mem_mb < KV_ROCKS_MEMORY_MIN_MB) mem_mb = KV_ROCKS_MEMORY_MIN_MB;
  size_t memtable_mb = o->memtable_mb ? o->memtable_mb : mem_mb / 16;
  size_t cache_mb = o->block_cache_mb ? o->block_cache_mb : mem_mb / 8;
  d->h_budget = (mem_mb << 20) / 16;
  d->batch_bytes = (mem_mb << 20) / 32;
  rocksdb_options_set_write_buffer_size(d->opts, memtable_mb << 20);
  rocksdb_options_set_max_write_buffer_number(d->opts, 2);
  /* Level 1 sized to what level 0 holds at its compaction trigger
   * (RocksDB's tuning guide), in files of a quarter of it. A flush writes
   * a memtable's KVs LZ4-compressed: a 5 MiB memtable of documents makes a
   * level-0 file of about 0.9 MB, so 4 of them are under one memtable's
   * size, which is level 1's. Documents' keys are spread (server-made ids
   * are random), so every L0->L1 compaction rewrites nearly all of level
   * 1: the bigger level 1 is against what level 0 brings, the more it
   * rewrites for nothing. RocksDB's defaults (256 MiB in 64 MiB files)
   * rewrote one growing file each time; 5 memtables (26 MiB, the previous
   * setting, which counted memtables as if uncompressed) still rewrote ~20
   * MB for each ~3.6 MB brought, and compaction took a whole core.
   * bench.js (divan only, bulk1 and bulk, 10 s each after the 100k-doc
   * preload), old and new binaries interleaved, L1 26 MiB -> 5 MiB:
   * _bulk_docs 1 connection 18.0k/16.3k -> 24.1k/24.3k docs/s, 4
   * connections 11.5k/14.5k -> 19.1k/23.9k (p99 1.67/1.15 s -> 0.35/0.26
   * s), peak RSS unchanged (95/97 -> 97/94 MiB); compaction's CPU per
   * document ~42 -> ~32 us. */
  rocksdb_options_set_max_bytes_for_level_base(d->opts, (uint64_t)memtable_mb << 20);
  rocksdb_options_set_target_file_size_base(d->opts, (uint64_t)memtable_mb << 18);
  rocksdb_options_set_compression(d->opts, rocksdb_lz4_compression);
  /* No WAL compression: Debian's RocksDB 7.8.3 misreads a compressed record
   * whose fragments land at the same offset of its read buffer (fixed
   * upstream in 8.0, facebook/rocksdb#11198), so a store killed while
   * writing large batches could not be opened again ("Corruption: bad
   * WriteBatch Delete", seen in repl_faults). */
  d->cache = rocksdb_cache_create_lru(cache_mb << 20);
  d->bbto = rocksdb_block_based_options_create();
  rocksdb_block_based_options_set_block_cache(d->bbto, d->cache);
  rocksdb_block_based_options_set_filter_policy(d->bbto, rocksdb_filterpolicy_create_bloom(10));
  /* Index and filter blocks live in the block cache, partitioned: a small
   * top-level index per table stays pinned, the partitions (4 KB) come and
   * go through the LRU with high priority, and level 0's stay pinned. Held
   * outside the cache (in the table readers) they were ~13 MB per million
   * documents beyond memory_limit, growing with the data. 1M documents
   * (10M keys), one machine, A/B interleaved: `divan load` peak RSS
   * 115-120 -> 102-103 MiB at the same speed (20 s); a server's VmHWM
   * after 10 s of random GETs ~61 -> ~49 MiB; GETs/s 15.0-18.6k -> 13.1-
   * 16.5k (about 8 % of a get: the LRU lookups); _bulk_docs unchanged. */
  rocksdb_block_based_options_set_cache_index_and_filter_blocks(d->bbto, 1);
  rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(d->bbto, 1);
  rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(d->bbto, 1);
  rocksdb_block_based_options_set_index_type(d->bbto, rocksdb_block_based_table_index_type_two_level_index_search);
  rocksdb_block_based_options_set_partition_filters(d->bbto, 1);
  rocksdb_block_based_options_set_metadata_block_size(d->bbto, 4096);
  rocksdb_block_based_options_set_pin_top_level_index_and_filter(d->bbto, 1);
  rocksdb_block_based_options_set_format_version(d->bbto, 5);
  /* Point reads dominate (a document's winner, its leaves): a hash index
   * inside each data block finds the restart interval without a binary
   * search, and a short restart interval (4 keys, still delta-encoded in
   * between) bounds the linear key parsing after it. Random gets on a
   * compacted 1M-key store, one thread, quiet machine: defaults (4 KB,
   * interval 16) ~235k/s; 8 KB/4 ~305k/s; 16 KB/4 ~320k/s; 32 KB/4
   * ~350k/s. 32 KB also compresses better; an SSD reads 32 KB about as
   * fast as 4 KB, and the block hash index works up to 64 KB blocks. */
  rocksdb_block_based_options_set_data_block_index_type(
      d->bbto, rocksdb_block_based_table_data_block_index_type_binary_search_and_hash);
  rocksdb_block_based_options_set_data_block_hash_ratio(d->bbto, 0.75);
  rocksdb_block_based_options_set_block_size(d->bbto, 32 << 10);
  rocksdb_block_based_options_set_block_restart_interval(d->bbto, 4);
  rocksdb_options_set_block_based_table_factory(d->opts, d->bbto);
  d->db = rocksdb_open(d->opts, path, &err);
  if (err) {
    log_error("cannot open the store at %s: %s", path, err);
    rocksdb_free(err);
    d->db = NULL;
    rc = DV_EIO;
    goto fail;
  }
  d->wo = rocksdb_writeoptions_create();
  rocksdb_writeoptions_set_sync(d->wo, !o->no_sync);
  size_t plen = strlen(path) + 1;
  if (!(d->path = dv_malloc(plen))) {
    rc = DV_ENOMEM;
    goto fail;
  }
  memcpy(d->path, path, plen);
  d->room = ((uint64_t)memtable_mb << 20) * 23 / 10;
  if (o->reserve_mb > 0) {
    d->reserve = (uint64_t)o->reserve_mb << 20;
  } else if (o->reserve_mb == 0) { /* see kv.h: room for a flush, a new WAL and a compaction */
    uint64_t total = 0, mem = (uint64_t)memtable_mb << 20;
    if (free_bytes(path, &total) >= 0) {
      uint64_t r = total / 20;
      if (r < 2 * mem + (64u << 20)) r = 2 * mem + (64u << 20);
      if (r > (uint64_t)KV_ROCKS_RESERVE_MAX_MB << 20) r = (uint64_t)KV_ROCKS_RESERVE_MAX_MB << 20;
      if (r > total / 2) r = total / 2;
      d->reserve = r;
    }
  }
  d->ro_latest = rocksdb_readoptions_create();
  /* Stamps continue above everything ever acknowledged. */
  if ((rc = read_version(d, &d->version))) goto fail;
  d->h_floor = d->version;
  if ((rc = publish(d, d->version))) goto fail;
  if (pthread_create(&d->committer, NULL, committer_main, d)) {
    rc = DV_ENOMEM;
    goto fail;
  }
  *out_db = &d->base;
  return 0;
fail:
  rdb_free(d);
  return rc;
}

/* Bulk writes (attachment content) fill the memtable with data nobody
 * reads soon: past KV_BULK_FLUSH_BYTES of them, flush it (without waiting)
 * so a 1 GiB upload never holds two full 64 MB memtables, and hand the
 * heap the write path freed back to the OS. */
static void r_bulk_written(kv_db *kd, size_t n) {
  rdb *d = (rdb *)kd;
  uint64_t before = __atomic_fetch_add(&d->bulk_bytes, n, __ATOMIC_RELAXED);
  if (before / KV_BULK_FLUSH_BYTES == (before + n) / KV_BULK_FLUSH_BYTES) return;
  if (pthread_rwlock_tryrdlock(&d->db_rw)) return; /* being reopened: a hint, skipped */
  rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
  rocksdb_flushoptions_set_wait(fo, 0);
  char *err = NULL;
  if (d->db) rocksdb_flush(d->db, fo, &err);
  rocksdb_free(err); /* a hint: a failed flush changes nothing */
  rocksdb_flushoptions_destroy(fo);
  pthread_rwlock_unlock(&d->db_rw);
  malloc_trim(0);
}

static int r_compact(kv_db *kd) {
  rdb *d = (rdb *)kd;
  if (pthread_rwlock_rdlock(&d->db_rw)) return 0;
  if (d->db) rocksdb_compact_range(d->db, NULL, 0, NULL, 0);
  pthread_rwlock_unlock(&d->db_rw);
  return 0;
}

/* RocksDB's own numbers, through its properties. */
static void r_info(kv_db *kd, kv_info *out) {
  rdb *d = (rdb *)kd;
  static const struct {
    const char *prop;
    size_t off;
  } props[] = {
      {"rocksdb.estimate-pending-compaction-bytes", offsetof(kv_info, pending_compaction_bytes)},
      {"rocksdb.num-running-compactions", offsetof(kv_info, running_compactions)},
      {"rocksdb.num-running-flushes", offsetof(kv_info, running_flushes)},
      {"rocksdb.total-sst-files-size", offsetof(kv_info, sst_bytes)},
      {"rocksdb.cur-size-all-mem-tables", offsetof(kv_info, memtable_bytes)},
      {"rocksdb.is-write-stopped", offsetof(kv_info, write_stopped)},
  };
  out->engine = "rocksdb";
  out->history_bytes = (int64_t)atomic_load_explicit(&d->h_bytes, memory_order_relaxed);
  snprintf(out->version, sizeof out->version, "%s", kv__rocks_version());
  out->read_only = atomic_load(&d->read_only);
  if (pthread_rwlock_tryrdlock(&d->db_rw)) return; /* being reopened: not known now */
  for (size_t i = 0; d->db && i < sizeof props / sizeof *props; i++) {
    uint64_t v;
    if (!rocksdb_property_int(d->db, props[i].prop, &v)) *(int64_t *)((char *)out + props[i].off) = (int64_t)v;
  }
  pthread_rwlock_unlock(&d->db_rw);
}

static const kv_methods rocks_methods = {
    .name = "rocks",
    .close = r_close,
    .db_version = r_db_version,
    .txn_begin = r_txn_begin,
    .txn_reset = r_txn_reset,
    .txn_destroy = r_txn_destroy,
    .get_read_version = r_get_read_version,
    .get = r_get,
    .iter_begin = r_iter_begin,
    .iter_next = r_iter_next,
    .iter_free = r_iter_free,
    .set = r_set,
    .clear = r_clear,
    .clear_range = r_clear_range,
    .atomic = r_atomic,
    .set_vs_key = r_set_vs_key,
    .set_vs_value = r_set_vs_value,
    .add_conflict_range = r_add_conflict_range,
    .commit_async = r_commit_async,
    .commit_sync = r_commit_sync,
    .get_committed_version = r_get_committed_version,
    .get_versionstamp = r_get_versionstamp,
    .watch_add = r_watch_add,
    .watch_free = r_watch_free,
    .set_timeout_ms = r_set_timeout_ms,
    .compact = r_compact,
    .bulk_written = r_bulk_written,
    .info = r_info,
};
