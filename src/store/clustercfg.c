/* clustercfg.c — cluster-wide settings (clustercfg.h) in the key space.
 *
 * Keys (store_int.h's cluster space):
 *   (R,0,"config","ini",Section,Key) = (Value,)   a setting
 *                                    = (null,)    deleted: hides every
 *                                                 file's value of the key
 *   (R,0,"config","version") = 8-byte little-endian counter, bumped (an
 *                              atomic add, so writers never conflict on
 *                              it) by every transaction that writes a row
 *
 * Data flow:
 *   attach ─▶ seed (one transaction): read every row; for each cluster-wide
 *             (section, key) of the ini file that has no row, write it;
 *             bump the version if anything was written
 *          ─▶ reload: read every row with a watch on the version ─▶
 *             config_shared_replace (the shared layer)
 *          ─▶ config_set_shared_hook: a persisted config_set/config_delete
 *             of a cluster-wide key runs cfg_write (the row or its
 *             deletion, and the version bump, in one transaction); then
 *             config.c puts it in the shared layer and the file
 *          ─▶ the watcher thread
 *   watcher ─▶ loop: sleep until the last reload's watch fires (a write
 *             anywhere, FDB's watch latency), or detach, or 30 s (a watch
 *             lost to a failed cluster connection is renewed then); reload:
 *             one transaction reads every row and adds a watch on the
 *             version key (registered at its commit, so no write between
 *             the read and the watch is missed); replace the shared layer,
 *             call changed() if it differs.
 *
 * A value of the ini file is a seed only: once a row exists, the store's
 * value is the one in force for every process, whatever its file says;
 * deleting a setting through /_config writes a deletion row so that no
 * later start re-seeds it from an old file. Two processes starting at once
 * with different files: the seed transactions conflict, one retries, reads
 * the other's rows and keeps them.
 *
 * Not here: what a setting means (its readers call config_get), which
 * settings a process reads once at start (main.c).
 */
#include "store/clustercfg.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "store/store_int.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/deadline.h"
#include "util/log.h"
#include "util/thread.h"

#define WATCH_RENEW_S 30

/* Per-process sections, and per-process keys of shared sections. */
static const char *const local_sections[] = {"log", "divan", "fdb", "rocksdb", "ssl", "stats"};
static const struct {
  const char *section, *key;
} local_keys[] = {
    {"chttpd", "bind_address"}, {"chttpd", "port"},          {"chttpd", "server_threads"},
    {"chttpd", "max_connections"}, {"chttpd", "docroot"},    {"httpd", "bind_address"},
    {"httpd", "port"},          {"couchdb", "database_dir"}, {"couchdb", "view_index_dir"},
};

int store_cfg_shared(const char *section, const char *key) {
  for (size_t i = 0; i < sizeof local_sections / sizeof *local_sections; i++)
    if (!strcmp(section, local_sections[i])) return 0;
  for (size_t i = 0; i < sizeof local_keys / sizeof *local_keys; i++)
    if (!strcmp(section, local_keys[i].section) && !strcmp(key, local_keys[i].key)) return 0;
  return 1;
}


/* ---- keys ------------------------------------------------------------------ */

static void key_rows(store *s, dv_buf *b, tup_w *w) {
  st_key_cluster(s, b, w, "config");
  tup_strz(w, "ini");
}

static void key_row(store *s, dv_buf *b, const char *section, const char *key) {
  tup_w w;
  key_rows(s, b, &w);
  tup_strz(&w, section);
  tup_strz(&w, key);
}

static void key_version(store *s, dv_buf *b) {
  tup_w w;
  st_key_cluster(s, b, &w, "config");
  tup_strz(&w, "version");
}

/* ---- rows ------------------------------------------------------------------ */

typedef struct rowset {
  dv_arena a;         /* the strings */
  config_row *rows;   /* dv_malloc'd */
  size_t n, cap;
} rowset;

struct store_cfg {
  store *s;
  dv_config *c;
  void (*changed)(void *arg);
  void *arg;
  pthread_t th;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop;           /* detach asked */
  int fired;          /* the watch fired since the last read */
  int renew_ms;       /* the watch is renewed this often without a fire */
  long reloads;
  rowset rows;        /* the last rows read (the watcher's, after attach) */
  kv_watch *w;        /* the watch the last read added, or NULL */
};

static void rows_free(rowset *r) {
  arena_free(&r->a);
  dv_free(r->rows);
  memset(r, 0, sizeof *r);
}

static void rows_reset(rowset *r) {
  arena_reset(&r->a);
  r->n = 0;
}

/* Room for one more row (r->n not moved), or NULL without memory. */
static config_row *rows_slot(rowset *r) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 32;
    config_row *nr = dv_realloc(r->rows, cap * sizeof *nr);
    if (!nr) return NULL;
    r->rows = nr;
    r->cap = cap;
  }
  return &r->rows[r->n];
}

static char *item_str(dv_arena *a, const tup_item *it) {
  char *p = arena_alloc(a, it->s_len + 1);
  if (!p) return NULL;
  tup_item_copy(it, (uint8_t *)p);
  p[it->s_len] = 0;
  return p;
}

/* Decode one row into r. A row that does not decode is skipped with a
 * warning: a damaged setting must not stop the server. */
static int row_add(rowset *r, const kv_pair *kp, size_t plen) {
  tup_r kr, vr;
  tup_item s, k, v;
  tup_r_init(&kr, kp->key + plen, kp->key_len - plen);
  tup_r_init(&vr, kp->val, kp->val_len);
  if (tup_get(&kr, TUP_STR, &s) || tup_get(&kr, TUP_STR, &k) || !tup_r_done(&kr) || tup_next(&vr, &v) != 1 ||
      (v.type != TUP_STR && v.type != TUP_NULL)) {
    log_warning("config: a cluster-wide setting's row does not decode; skipped");
    return 0;
  }
  config_row *row = rows_slot(r);
  if (!row) return DV_ENOMEM;
  row->section = item_str(&r->a, &s);
  row->key = item_str(&r->a, &k);
  row->value = v.type == TUP_STR ? item_str(&r->a, &v) : NULL;
  if (!row->section || !row->key || (v.type == TUP_STR && !row->value)) return DV_ENOMEM;
  r->n++;
  return 0;
}

/* Every row, in txn. */
static int rows_read(store *s, kv_txn *txn, rowset *r) {
  dv_buf p, b, e;
  buf_init(&p);
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  key_rows(s, &p, &w);
  int rc = buf_error(&p) ? DV_ENOMEM : tup_range(p.p, p.len, &b, &e);
  kv_iter *it = NULL;
  if (!rc) rc = kv_iter_begin(txn, b.p, b.len, e.p, e.len, 0, 0, &it);
  rows_reset(r);
  kv_pair kp;
  while (!rc && (rc = kv_iter_next(it, &kp)) == 1) rc = row_add(r, &kp, p.len);
  kv_iter_free(it);
  buf_free(&p);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

static const config_row *row_find(const rowset *r, const char *section, const char *key) {
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->rows[i].section, section) && !strcmp(r->rows[i].key, key)) return &r->rows[i];
  return NULL;
}

/* Write the row (value NULL: its deletion) and bump the version. */
static int row_write(store *s, kv_txn *txn, const char *section, const char *key, const char *value) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  key_row(s, &k, section, key);
  tup_w w;
  tup_w_init(&w, &v);
  if (value) tup_strz(&w, value);
  else tup_null(&w);
  int rc = tup_w_finish(&w);
  if (!rc) rc = buf_error(&k) || buf_error(&v) ? DV_ENOMEM : kv_set(txn, k.p, k.len, v.p, v.len);
  if (!rc) {
    static const uint8_t one[8] = {1};
    buf_reset(&k);
    key_version(s, &k);
    rc = buf_error(&k) ? DV_ENOMEM : kv_atomic(txn, KV_ADD, k.p, k.len, one, sizeof one);
  }
  buf_free(&k);
  buf_free(&v);
  return rc;
}

/* ---- seed ------------------------------------------------------------------ */

typedef struct seed_arg {
  store *s;
  rowset file;        /* the file's cluster-wide values */
  rowset have;        /* the store's rows, read in the transaction */
  int written;
} seed_arg;

static int collect_file(void *arg, const char *section, const char *key, const char *value) {
  rowset *r = arg;
  if (!store_cfg_shared(section, key)) return 0;
  config_row *row = rows_slot(r);
  if (!row) return DV_ENOMEM;
  row->section = arena_strndup(&r->a, section, strlen(section));
  row->key = arena_strndup(&r->a, key, strlen(key));
  row->value = arena_strndup(&r->a, value, strlen(value));
  if (!row->section || !row->key || !row->value) return DV_ENOMEM;
  r->n++;
  return 0;
}

static int seed_fn(kv_txn *txn, void *arg) {
  seed_arg *a = arg;
  a->written = 0;
  int rc = rows_read(a->s, txn, &a->have);
  for (size_t i = 0; i < a->file.n && !rc; i++) {
    const config_row *f = &a->file.rows[i];
    if (row_find(&a->have, f->section, f->key)) continue;
    rc = row_write(a->s, txn, f->section, f->key, f->value);
    a->written++;
  }
  return rc;
}

/* ---- the hook: a write through this process ---------------------------------- */

typedef struct write_arg {
  store *s;
  const char *section, *key, *value;
} write_arg;

static int write_fn(kv_txn *txn, void *arg) {
  write_arg *a = arg;
  return row_write(a->s, txn, a->section, a->key, a->value);
}

static int cfg_write(void *arg, const char *section, const char *key, const char *value) {
  store_cfg *x = arg;
  write_arg a = {x->s, section, key, value};
  return kv_run(store_kv(x->s), write_fn, &a);
}

/* ---- the watcher ----------------------------------------------------------- */

static void on_fire(void *arg, int rc) {
  (void)rc; /* an error wakes us too: we read again and renew the watch */
  store_cfg *x = arg;
  pthread_mutex_lock(&x->mu);
  x->fired = 1;
  pthread_cond_signal(&x->cv);
  pthread_mutex_unlock(&x->mu);
}

/* One read of every row with a watch on the version; *w the watch. */
static int read_and_watch(store_cfg *x, rowset *r, kv_watch **w) {
  kv_txn *txn = NULL;
  dv_buf k;
  buf_init(&k);
  key_version(x->s, &k);
  int rc = buf_error(&k) ? DV_ENOMEM : kv_txn_begin(store_kv(x->s), &txn);
  while (!rc) {
    *w = NULL;
    rc = rows_read(x->s, txn, r);
    if (!rc) rc = kv_watch_add(txn, k.p, k.len, on_fire, x, w);
    if (!rc) rc = kv_commit(txn);
    if (!rc) break;
    kv_watch_free(*w);
    *w = NULL;
    rc = kv_on_error(txn, rc);
  }
  kv_txn_destroy(txn);
  buf_free(&k);
  return rc;
}

static void apply(store_cfg *x, const rowset *r) {
  int changed = 0;
  if (config_shared_replace(x->c, r->rows, r->n, &changed)) {
    log_warning("config: out of memory applying the cluster-wide settings; kept the previous ones");
    return;
  }
  if (changed && x->changed) x->changed(x->arg);
}

/* Read every row with a watch on the version (x->w), and make them c's
 * shared layer. 0, or the read's error (x->w is then NULL). */
static int reload(store_cfg *x) {
  int rc = read_and_watch(x, &x->rows, &x->w);
  if (rc) return rc;
  apply(x, &x->rows);
  pthread_mutex_lock(&x->mu);
  x->reloads++;
  pthread_mutex_unlock(&x->mu);
  return 0;
}

static void *watch_main(void *arg) {
  dv_thread_name("dv-cfg-watch");
  store_cfg *x = arg;
  int rc = 0; /* of the last reload: attach's first */
  for (;;) {
    pthread_mutex_lock(&x->mu);
    struct timespec until = dv_deadline_ms(CLOCK_REALTIME, rc ? 1000 : x->renew_ms);
    while (!x->stop && !x->fired && pthread_cond_timedwait(&x->cv, &x->mu, &until) == 0) {
    }
    int stop = x->stop;
    pthread_mutex_unlock(&x->mu);
    /* Fired, or renewed now. Freeing a watch that has not fired cancels
     * it, and its callback runs then (DV_ECANCELLED): so "fired" is
     * cleared after, or every renewal would find it set and the loop
     * would reload without a pause, a core's worth, for good. */
    kv_watch_free(x->w);
    x->w = NULL;
    pthread_mutex_lock(&x->mu);
    x->fired = 0;
    pthread_mutex_unlock(&x->mu);
    if (stop) break;
    rc = reload(x);
    if (rc) log_warning("config: cannot read the cluster-wide settings: %s; trying again", dv_strerror(rc));
  }
  return NULL;
}

/* ---- attach / detach -------------------------------------------------------- */

int store_cfg_attach(store *s, dv_config *c, void (*changed)(void *arg), void *arg, store_cfg **out) {
  store_cfg *x = dv_calloc(1, sizeof *x);
  if (!x) return DV_ENOMEM;
  *x = (store_cfg){.s = s, .c = c, .changed = changed, .arg = arg, .renew_ms = WATCH_RENEW_S * 1000};
  arena_init(&x->rows.a, 4096);
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->cv, NULL);

  seed_arg sa = {.s = s};
  arena_init(&sa.file.a, 4096);
  arena_init(&sa.have.a, 4096);
  int rc = config_each_file(c, collect_file, &sa.file);
  if (!rc) {
    /* a store that takes no writes now (a full disk, read-only after a
     * failed fsync) still starts: its rows are read, the file's new ones
     * wait for the next start */
    int src = kv_run(store_kv(s), seed_fn, &sa);
    if (src) log_warning("config: cannot write the ini file's cluster-wide settings to the store (%s); "
                         "using the store's", dv_strerror(src));
    else if (sa.written) log_info("config: %d cluster-wide settings of the ini file written to the store", sa.written);
  }
  /* the rows as the seed left them, before the first request; then the
   * watcher waits on the watch this read added */
  if (!rc) rc = reload(x);
  rows_free(&sa.file);
  rows_free(&sa.have);
  if (!rc) {
    config_set_shared_hook(c, &(config_shared_hook){.scope = store_cfg_shared, .write = cfg_write, .arg = x});
    if (pthread_create(&x->th, NULL, watch_main, x)) rc = DV_ENOMEM;
    else x->started = 1;
  }
  if (rc) {
    store_cfg_detach(x);
    return rc;
  }
  *out = x;
  return 0;
}

void store_cfg_detach(store_cfg *x) {
  if (!x) return;
  config_set_shared_hook(x->c, NULL);
  if (x->started) {
    pthread_mutex_lock(&x->mu);
    x->stop = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
    pthread_join(x->th, NULL);
  }
  kv_watch_free(x->w);
  rows_free(&x->rows);
  pthread_cond_destroy(&x->cv);
  pthread_mutex_destroy(&x->mu);
  dv_free(x);
}

void store_cfg_set_renew_ms(store_cfg *x, int ms) {
  pthread_mutex_lock(&x->mu);
  x->renew_ms = ms > 0 ? ms : WATCH_RENEW_S * 1000;
  x->fired = 1; /* renew now: the next wait has the new length */
  pthread_cond_signal(&x->cv);
  pthread_mutex_unlock(&x->mu);
}

long store_cfg_reloads(store_cfg *x) {
  pthread_mutex_lock(&x->mu);
  long n = x->reloads;
  pthread_mutex_unlock(&x->mu);
  return n;
}
