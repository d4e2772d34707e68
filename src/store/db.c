/* db.c — databases: names, create, delete, the handle cache, list, info,
 * _revs_limit and _security.
 *
 * Data flow of a handle (DESIGN.md "Key layout", last paragraph):
 *   store_db_open: cache hit -> ref++; miss -> one transaction reads the
 *     metadata version (snapshot), (R,0,"dbs",Name) and the cached meta,
 *     and the handle joins the cache.
 *   every transaction that uses a handle -> st_db_check: snapshot read of
 *     the metadata version; unchanged -> the cache is good; changed -> read
 *     (R,0,"dbs",Name) again (a different or no prefix -> the handle is
 *     dead: DV_ENO_DB, dropped from the cache). Either way a read conflict
 *     on (R,0,"dbs",Name), so a write racing the database's deletion fails
 *     and its retry sees DV_ENO_DB instead of landing under a dead prefix.
 *   delete, _revs_limit, _security, a write of a _design/ document (edit.c:
 *     the write hooks may change, hooks.c) -> bump the metadata version.
 *
 * A database's prefix comes from (R,0,"prefix_counter"), read non-snapshot
 * (two creators conflict), so a re-created database never reuses one.
 */
#include <string.h>

#include "store/store_int.h"
#include "util/alloc.h"
#include "util/stats.h"

static unsigned name_hash(const char *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 16777619u;
  return h & 255;
}

static void dbs_key(store *s, dv_buf *b, const char *name, size_t len) {
  tup_w w;
  st_key_cluster(s, b, &w, "dbs");
  tup_str(&w, name, len);
}

/* The decoded value of (R,0,"dbs",Name). */
struct dbrec {
  int64_t prefix, inc, created_at;
  uint8_t uuid[16];
  int64_t moving; /* unix µs a move's read-only round began (store_db_set_moving), 0: none */
};

/* (DbPrefix, Incarnation, CreatedAt, DbUUID[, MovingSince]) */
static void dbrec_encode(const struct dbrec *r, dv_buf *v) {
  tup_w w;
  tup_w_init(&w, v);
  tup_int(&w, r->prefix);
  tup_int(&w, r->inc);
  tup_int(&w, r->created_at);
  tup_bytes(&w, r->uuid, 16);
  if (r->moving) tup_int(&w, r->moving);
}

static int dbrec_decode(const uint8_t *v, size_t vl, struct dbrec *out) {
  tup_r r;
  tup_item it;
  tup_r_init(&r, v, vl);
  if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
  out->prefix = it.i64;
  if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
  out->inc = it.i64;
  if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
  out->created_at = it.i64;
  if (out->created_at < 100000000000LL) out->created_at *= 1000000; /* seconds, as earlier stores wrote it */
  if (tup_get(&r, TUP_BYTES, &it) || it.s_len != 16) return DV_ECORRUPT;
  tup_item_copy(&it, out->uuid);
  out->moving = 0;
  if (!tup_r_done(&r)) {
    if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
    out->moving = it.i64;
  }
  return 0;
}

/* Read the db record; *found 0 when absent. */
static int dbrec_read(store *s, kv_txn *txn, const char *name, size_t len, int flags,
                      struct dbrec *out, int *found) {
  dv_buf k;
  buf_init(&k);
  dbs_key(s, &k, name, len);
  const uint8_t *v;
  size_t vl;
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, flags, &v, &vl, found);
  if (!rc && *found) rc = dbrec_decode(v, vl, out);
  buf_free(&k);
  return rc;
}

static int meta_read_int(const st_dbx *x, kv_txn *txn, const char *name, int64_t dflt, int64_t *out) {
  const uint8_t *v;
  size_t vl;
  int found, rc = st_meta_get(txn, x, name, KV_SNAPSHOT, &v, &vl, &found);
  *out = dflt;
  if (!rc && found) {
    tup_r r;
    tup_item it;
    tup_r_init(&r, v, vl);
    if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) rc = DV_ECORRUPT;
    else *out = it.i64;
  }
  return rc;
}

static int mdv_read(kv_txn *txn, uint8_t out[16], size_t *out_len, int *found) {
  const uint8_t *v;
  size_t vl;
  int rc = kv_get(txn, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN, KV_SNAPSHOT, &v, &vl, found);
  if (rc) return rc;
  *out_len = 0;
  if (*found) {
    if (vl > 16) vl = 16;
    memcpy(out, v, vl);
    *out_len = vl;
  }
  return 0;
}

/* ---- the handle cache -------------------------------------------------------- */

static void handle_free(store_db *db) {
  st_rank_free(db->rank);
  st_hooks_put(db->hooks);
  pthread_mutex_destroy(&db->mu);
  dv_free(db->conflict);
  dv_free(db->name);
  dv_free(db);
}

/* Unlink db from the cache (under s->mu). */
static void cache_unlink(store *s, store_db *db) {
  store_db **pp = &s->tab[name_hash(db->name, db->name_len)];
  while (*pp && *pp != db) pp = &(*pp)->next;
  if (*pp) *pp = db->next, dv_stat_move(DV_ST_OPEN_DATABASES, -1);
  db->next = NULL;
}

static void mark_dead(store_db *db) {
  store *s = db->s;
  pthread_mutex_lock(&s->mu);
  pthread_mutex_lock(&db->mu);
  int was = db->dead;
  db->dead = 1;
  pthread_mutex_unlock(&db->mu);
  if (!was) cache_unlink(s, db);
  pthread_mutex_unlock(&s->mu);
  if (!was) store_db_close(db); /* the cache's own reference */
}

int st_db_check(store_db *db, kv_txn *txn, st_dbx *out) {
  uint8_t mdv[16];
  size_t mdv_len;
  int found;
  int rc = mdv_read(txn, mdv, &mdv_len, &found);
  if (rc) return rc;
  rc = kv_add_conflict_range(txn, db->conflict, db->conflict_len - 1, db->conflict, db->conflict_len,
                             KV_CONFLICT_READ);
  if (rc) return rc;
  pthread_mutex_lock(&db->mu);
  int dead = db->dead;
  int same = found == db->mdv_found && (!found || (mdv_len == db->mdv_len && !memcmp(mdv, db->mdv, mdv_len)));
  pthread_mutex_unlock(&db->mu);
  if (dead) return DV_ENO_DB;
  if (!same) {
    struct dbrec rec;
    int have;
    rc = dbrec_read(db->s, txn, db->name, db->name_len, KV_SNAPSHOT, &rec, &have);
    if (rc) return rc;
    if (!have || rec.prefix != db->prefix) {
      mark_dead(db);
      return DV_ENO_DB;
    }
    st_dbx tmp = {.s = db->s, .db = db, .prefix = rec.prefix, .inc = rec.inc};
    int64_t rl;
    rc = meta_read_int(&tmp, txn, "revs_limit", STORE_DEFAULT_REVS_LIMIT, &rl);
    if (rc) return rc;
    pthread_mutex_lock(&db->mu);
    db->inc = rec.inc;
    db->moving = rec.moving;
    db->revs_limit = rl;
    memcpy(db->mdv, mdv, mdv_len);
    db->mdv_len = mdv_len;
    db->mdv_found = found;
    db->meta_gen++; /* the write hooks load again (hooks.c) */
    pthread_mutex_unlock(&db->mu);
  }
  pthread_mutex_lock(&db->mu);
  out->s = db->s;
  out->db = db;
  out->name = db->name;
  out->name_len = db->name_len;
  out->prefix = db->prefix;
  out->inc = db->inc;
  out->revs_limit = db->revs_limit;
  out->moving = db->moving;
  pthread_mutex_unlock(&db->mu);
  return 0;
}

struct load_arg {
  store *s;
  const char *name;
  size_t len;
  struct dbrec rec;
  int64_t revs_limit;
  uint8_t mdv[16];
  size_t mdv_len;
  int mdv_found;
};

static int load_fn(kv_txn *txn, void *arg) {
  struct load_arg *a = arg;
  int rc = mdv_read(txn, a->mdv, &a->mdv_len, &a->mdv_found);
  if (rc) return rc;
  int found;
  rc = dbrec_read(a->s, txn, a->name, a->len, KV_SNAPSHOT, &a->rec, &found);
  if (rc) return rc;
  if (!found) return DV_ENO_DB;
  st_dbx x = {.s = a->s, .prefix = a->rec.prefix};
  return meta_read_int(&x, txn, "revs_limit", STORE_DEFAULT_REVS_LIMIT, &a->revs_limit);
}

int store_db_open(store *s, const char *name, store_db **out) {
  size_t len = strlen(name);
  unsigned h = name_hash(name, len);
  pthread_mutex_lock(&s->mu);
  for (store_db *d = s->tab[h]; d; d = d->next) {
    if (d->name_len == len && !memcmp(d->name, name, len)) {
      d->refs++;
      pthread_mutex_unlock(&s->mu);
      *out = d;
      return 0;
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (store_db_name_check(name, len)) return DV_ENO_DB;
  struct load_arg a = {.s = s, .name = name, .len = len};
  st_op op = {.fn = load_fn, .arg = &a};
  int rc = st_run(s, &op);
  if (rc) return rc;
  store_db *db = dv_calloc(1, sizeof *db);
  if (!db) return DV_ENOMEM;
  db->name = dv_strndup(name, len);
  dv_buf ck;
  buf_init(&ck);
  dbs_key(s, &ck, name, len);
  buf_putc(&ck, 0);
  db->conflict = buf_error(&ck) ? NULL : buf_detach(&ck, &db->conflict_len);
  buf_free(&ck);
  if (!db->name || !db->conflict) {
    dv_free(db->name);
    dv_free(db->conflict);
    dv_free(db);
    return DV_ENOMEM;
  }
  db->s = s;
  db->name_len = len;
  pthread_mutex_init(&db->mu, NULL);
  db->prefix = a.rec.prefix;
  db->inc = a.rec.inc;
  db->moving = a.rec.moving;
  db->created_at = a.rec.created_at;
  memcpy(db->uuid, a.rec.uuid, 16);
  db->revs_limit = a.revs_limit;
  memcpy(db->mdv, a.mdv, a.mdv_len);
  db->mdv_len = a.mdv_len;
  db->mdv_found = a.mdv_found;
  db->refs = 2; /* the caller's and the cache's */
  pthread_mutex_lock(&s->mu);
  for (store_db *d = s->tab[h]; d; d = d->next) {
    if (d->name_len == len && !memcmp(d->name, name, len)) { /* lost a race: use the cached one */
      d->refs++;
      pthread_mutex_unlock(&s->mu);
      handle_free(db);
      *out = d;
      return 0;
    }
  }
  db->next = s->tab[h];
  s->tab[h] = db;
  pthread_mutex_unlock(&s->mu);
  dv_stat_move(DV_ST_OPEN_DATABASES, 1);
  *out = db;
  return 0;
}

void store_db_close(store_db *db) {
  if (!db) return;
  store *s = db->s;
  pthread_mutex_lock(&s->mu);
  int last = --db->refs == 0;
  pthread_mutex_unlock(&s->mu);
  if (last) handle_free(db);
}

void st_db_free_all(store *s) {
  for (int i = 0; i < 256; i++) {
    store_db *d = s->tab[i];
    while (d) {
      store_db *n = d->next;
      handle_free(d);
      d = n;
    }
    s->tab[i] = NULL;
  }
}

const char *store_db_name(const store_db *db) { return db->name; }

/* ---- create / delete ------------------------------------------------------- */

struct cd_arg {
  store *s;
  st_op *op;
  const char *name;
  size_t len;
};

int st_db_prefix_alloc(store *s, kv_txn *txn, int64_t *out) {
  dv_buf k;
  buf_init(&k);
  tup_w w;
  st_key_cluster(s, &k, &w, "prefix_counter");
  const uint8_t *cv;
  size_t cl;
  int found;
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, 0, &cv, &cl, &found);
  if (!rc) {
    *out = (found ? st_le64_get(cv, cl) : 0) + 1;
    uint8_t le[8];
    st_le64(*out, le);
    rc = kv_set(txn, k.p, k.len, le, 8);
  }
  buf_free(&k);
  return rc;
}

int st_db_register(store *s, kv_txn *txn, const char *name, size_t len, int64_t prefix, int64_t inc) {
  struct dbrec rec;
  int found;
  int rc = dbrec_read(s, txn, name, len, 0, &rec, &found);
  if (rc) return rc;
  if (found) return DV_EDB_EXISTS;
  rec.prefix = prefix;
  rec.inc = inc;
  rec.created_at = st_now_us();
  rec.moving = 0;
  st_random(rec.uuid, 16);
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  dbrec_encode(&rec, &v);
  dbs_key(s, &k, name, len);
  rc = buf_error(&k) || buf_error(&v) ? DV_ENOMEM : kv_set(txn, k.p, k.len, v.p, v.len);
  if (!rc) rc = st_dbu_event(s, txn, name, len, "created");
  buf_free(&k);
  buf_free(&v);
  return rc;
}

static int create_fn(kv_txn *txn, void *arg) {
  struct cd_arg *a = arg;
  store *s = a->s;
  struct dbrec rec;
  int found;
  int rc = dbrec_read(s, txn, a->name, a->len, 0, &rec, &found);
  if (rc) return rc;
  if (found) return DV_EDB_EXISTS;
  int64_t prefix;
  rc = st_db_prefix_alloc(s, txn, &prefix);
  if (!rc) rc = st_db_register(s, txn, a->name, a->len, prefix, 0);
  if (!rc) rc = st_txid_write(s, txn, a->op);
  return rc;
}

int store_db_create(store *s, const char *name) {
  size_t len = strlen(name);
  int rc = store_db_name_check(name, len);
  if (rc) return rc;
  st_op op = {.fn = create_fn, .use_txid = 1};
  struct cd_arg a = {s, &op, name, len};
  op.arg = &a;
  return st_run(s, &op);
}

/* Drop this process's cached handle of a name that no longer names the
 * database it did (delete, rename) at once. */
static void drop_cached(store *s, const char *name, size_t len) {
  unsigned h = name_hash(name, len);
  store_db *dead = NULL;
  pthread_mutex_lock(&s->mu);
  for (store_db *d = s->tab[h]; d; d = d->next)
    if (d->name_len == len && !memcmp(d->name, name, len)) dead = d;
  if (dead) dead->refs++;
  pthread_mutex_unlock(&s->mu);
  if (dead) {
    mark_dead(dead);
    store_db_close(dead);
  }
}

static int delete_fn(kv_txn *txn, void *arg) {
  struct cd_arg *a = arg;
  store *s = a->s;
  kv_set_frees_space(txn); /* a full disk must not keep a database from being dropped */
  struct dbrec rec;
  int found;
  int rc = dbrec_read(s, txn, a->name, a->len, 0, &rec, &found);
  if (rc) return rc;
  if (!found) return DV_ENO_DB;
  dv_buf k, e;
  buf_init(&k);
  buf_init(&e);
  tup_w w;
  st_key_root(s, &k, &w);
  tup_int(&w, 1);
  tup_int(&w, rec.prefix);
  rc = buf_error(&k) ? DV_ENOMEM : 0;
  if (!rc) {
    buf_append(&e, k.p, k.len);
    buf_putc(&e, 0xff);
    rc = buf_error(&e) ? DV_ENOMEM : kv_clear_range(txn, k.p, k.len, e.p, e.len);
  }
  if (!rc) {
    dbs_key(s, &k, a->name, a->len);
    rc = buf_error(&k) ? DV_ENOMEM : kv_clear(txn, k.p, k.len);
  }
  if (!rc) rc = st_mdv_bump(txn);
  if (!rc) rc = st_dbu_event(s, txn, a->name, a->len, "deleted");
  if (!rc) rc = st_txid_write(s, txn, a->op);
  buf_free(&k);
  buf_free(&e);
  return rc;
}

int store_db_delete(store *s, const char *name) {
  size_t len = strlen(name);
  if (store_db_name_check(name, len)) return DV_ENO_DB;
  st_op op = {.fn = delete_fn, .use_txid = 1};
  struct cd_arg a = {s, &op, name, len};
  op.arg = &a;
  int rc = st_run(s, &op);
  if (!rc) drop_cached(s, name, len);
  return rc;
}

/* ---- a move's mark and its end (move.c) ----------------------------------------- */

struct mv_arg {
  store *s;
  st_op *op;
  const char *name, *to;
  size_t len, to_len;
  int on;
};

static int moving_fn(kv_txn *txn, void *arg) {
  struct mv_arg *a = arg;
  struct dbrec rec;
  int found;
  int rc = dbrec_read(a->s, txn, a->name, a->len, 0, &rec, &found);
  if (rc) return rc;
  if (!found) return DV_ENO_DB;
  if (!a->on && !rec.moving) return 0;
  rec.moving = a->on ? st_now_us() : 0;
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  dbs_key(a->s, &k, a->name, a->len);
  dbrec_encode(&rec, &v);
  rc = buf_error(&k) || buf_error(&v) ? DV_ENOMEM : kv_set(txn, k.p, k.len, v.p, v.len);
  if (!rc) rc = st_mdv_bump(txn);
  buf_free(&k);
  buf_free(&v);
  return rc;
}

int store_db_set_moving(store *s, const char *name, int on) {
  size_t len = strlen(name);
  if (store_db_name_check(name, len)) return DV_ENO_DB;
  struct mv_arg a = {.s = s, .name = name, .len = len, .on = on};
  st_op op = {.fn = moving_fn, .arg = &a};
  return st_run(s, &op);
}

static int rename_fn(kv_txn *txn, void *arg) {
  struct mv_arg *a = arg;
  struct dbrec rec, other;
  int found;
  int rc = dbrec_read(a->s, txn, a->name, a->len, 0, &rec, &found);
  if (rc) return rc;
  if (!found) return DV_ENO_DB;
  rc = dbrec_read(a->s, txn, a->to, a->to_len, 0, &other, &found);
  if (rc) return rc;
  if (found) return DV_EDB_EXISTS;
  rec.moving = 0;
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  dbs_key(a->s, &k, a->name, a->len);
  rc = buf_error(&k) ? DV_ENOMEM : kv_clear(txn, k.p, k.len);
  dbs_key(a->s, &k, a->to, a->to_len);
  dbrec_encode(&rec, &v);
  if (!rc) rc = buf_error(&k) || buf_error(&v) ? DV_ENOMEM : kv_set(txn, k.p, k.len, v.p, v.len);
  if (!rc) rc = st_mdv_bump(txn);
  if (!rc) rc = st_dbu_event(a->s, txn, a->name, a->len, "deleted");
  if (!rc) rc = st_dbu_event(a->s, txn, a->to, a->to_len, "created");
  if (!rc) rc = st_txid_write(a->s, txn, a->op);
  buf_free(&k);
  buf_free(&v);
  return rc;
}

int store_db_rename(store *s, const char *name, const char *to) {
  size_t len = strlen(name), to_len = strlen(to);
  if (store_db_name_check(name, len)) return DV_ENO_DB;
  int rc = store_db_name_check(to, to_len);
  if (rc) return rc;
  st_op op = {.fn = rename_fn, .use_txid = 1};
  struct mv_arg a = {.s = s, .op = &op, .name = name, .len = len, .to = to, .to_len = to_len};
  op.arg = &a;
  rc = st_run(s, &op);
  if (!rc) drop_cached(s, name, len);
  return rc;
}

/* ---- ranges of string-keyed rows --------------------------------------------- */

int st_range_bounds(const dv_buf *prefix, const store_range *r, dv_buf *begin, dv_buf *end) {
  const char *lo = r->descending ? r->end : r->start;
  size_t lo_len = r->descending ? r->end_len : r->start_len;
  const char *hi = r->descending ? r->start : r->end;
  size_t hi_len = r->descending ? r->start_len : r->end_len;
  int lo_incl = r->descending ? r->inclusive_end : 1;
  int hi_incl = r->descending ? 1 : r->inclusive_end;
  tup_w w;
  buf_reset(begin);
  buf_reset(end);
  buf_append(begin, prefix->p, prefix->len);
  buf_append(end, prefix->p, prefix->len);
  if (lo) {
    tup_w_init(&w, begin);
    tup_str(&w, lo, lo_len);
    if (!lo_incl) buf_putc(begin, 0xff);
  }
  if (hi) {
    tup_w_init(&w, end);
    tup_str(&w, hi, hi_len);
    if (hi_incl) buf_putc(end, 0xff);
  } else {
    buf_putc(end, 0xff);
  }
  if (buf_error(begin) || buf_error(end)) return DV_ENOMEM;
  return 0;
}

struct list_arg {
  store *s;
  const store_range *r;
  store_name_cb cb;
  void *cbarg;
  int stopped;
  dv_buf last;   /* last name delivered (continuation across transactions) */
  int have_last;
  int64_t skip, left;
  int done;
};

/* One batch: up to 1000 names after `last`, read with one range read (the
 * callback runs after it, so a slow callback cannot age the read). */
static int list_fn(kv_txn *txn, void *arg) {
  struct list_arg *a = arg;
  dv_buf pfx, b, e;
  buf_init(&pfx);
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  st_key_cluster(a->s, &pfx, &w, "dbs");
  int rc = st_range_bounds(&pfx, a->r, &b, &e);
  if (!rc && a->have_last) {
    dv_buf *side = a->r->descending ? &e : &b;
    buf_reset(side);
    buf_append(side, a->last.p, a->last.len);
    if (!a->r->descending) buf_putc(side, 0); /* strictly after last */
    if (buf_error(side)) rc = DV_ENOMEM;
  }
  kv_pair *pairs;
  int n = 0, more = 0;
  if (!rc && st_nonempty(&b, &e))
    rc = kv_get_range(txn, b.p, b.len, e.p, e.len, 1000, KV_SNAPSHOT | (a->r->descending ? KV_REVERSE : 0),
                      &pairs, &n, &more);
  for (int i = 0; !rc && i < n && !a->stopped; i++) {
    tup_r r;
    tup_item it;
    tup_r_init(&r, pairs[i].key + pfx.len, pairs[i].key_len - pfx.len);
    if (tup_get(&r, TUP_STR, &it)) { rc = DV_ECORRUPT; break; }
    buf_reset(&a->last);
    buf_append(&a->last, pairs[i].key, pairs[i].key_len);
    a->have_last = 1;
    if (a->skip > 0) { a->skip--; continue; }
    if (a->left == 0) { a->stopped = 1; break; }
    if (a->left > 0) a->left--;
    dv_buf nm;
    buf_init(&nm);
    const uint8_t *p;
    rc = tup_item_data(&it, &nm, &p);
    if (!rc) {
      int c = a->cb(a->cbarg, (const char *)p, it.s_len);
      if (c) a->stopped = 1;
    }
    buf_free(&nm);
  }
  if (!rc && !more) a->done = 1;
  buf_free(&pfx);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

int store_db_list(store *s, const store_range *r, store_name_cb cb, void *arg) {
  struct list_arg a = {.s = s, .r = r, .cb = cb, .cbarg = arg, .skip = r->skip, .left = r->limit};
  buf_init(&a.last);
  int rc = 0;
  while (!rc && !a.done && !a.stopped) {
    kv_txn *txn;
    rc = kv_txn_begin(s->kv, &txn);
    if (rc) break;
    rc = list_fn(txn, &a);
    kv_txn_destroy(txn);
  }
  buf_free(&a.last);
  return rc;
}

/* ---- info, revs_limit, security ---------------------------------------------- */

struct info_arg {
  store_db *db;
  store_db_info *out;
};

static int counter_get(kv_txn *txn, const st_dbx *x, const char *name, int64_t *out) {
  const uint8_t *v;
  size_t vl;
  int found, rc = st_meta_get(txn, x, name, KV_SNAPSHOT, &v, &vl, &found);
  *out = !rc && found ? st_le64_get(v, vl) : 0;
  return rc;
}

static int info_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct info_arg *a = arg;
  int rc = 0;
  store_db_info *o = a->out;
  memset(o, 0, sizeof *o);
  if ((rc = counter_get(txn, x, "doc_count", &o->doc_count))) return rc;
  if ((rc = counter_get(txn, x, "doc_del_count", &o->doc_del_count))) return rc;
  if ((rc = counter_get(txn, x, "size_active", &o->size_active))) return rc;
  if ((rc = counter_get(txn, x, "size_external", &o->size_external))) return rc;
  const uint8_t *v;
  size_t vl;
  int found;
  rc = st_meta_get(txn, x, "update_seq", KV_SNAPSHOT, &v, &vl, &found);
  if (rc) return rc;
  if (found) {
    tup_r r;
    tup_r_init(&r, v, vl);
    if (st_seq_get(&r, &o->update_seq)) return DV_ECORRUPT;
  }
  o->revs_limit = x->revs_limit;
  o->incarnation = x->inc;
  o->prefix = x->prefix;
  pthread_mutex_lock(&a->db->mu);
  o->created_at = a->db->created_at;
  st_hex(a->db->uuid, 16, o->uuid);
  o->uuid[32] = 0;
  pthread_mutex_unlock(&a->db->mu);
  return 0;
}

int store_db_info_get(store_db *db, store_db_info *out) {
  struct info_arg a = {db, out};
  st_op op = {.dbfn = info_fn, .db = db, .arg = &a};
  return st_run(db->s, &op);
}

struct rl_arg {
  store_db *db;
  st_op *op;
  int64_t n;
};

static int rl_get_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct rl_arg *a = arg;
  a->n = x->revs_limit;
  return 0;
}

int store_db_get_revs_limit(store_db *db, int64_t *out) {
  struct rl_arg a = {.db = db};
  st_op op = {.dbfn = rl_get_fn, .db = db, .arg = &a};
  int rc = st_run(db->s, &op);
  if (!rc) *out = a.n;
  return rc;
}

/* Set one meta KV to val, bump the metadata version, TxId, queue event. */
static int meta_set(kv_txn *txn, const st_dbx *x, st_op *op, const char *name, const void *val, size_t vl) {
  dv_buf k;
  buf_init(&k);
  st_key_meta(x, &k, name);
  int rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, val, vl);
  buf_free(&k);
  if (!rc) rc = st_mdv_bump(txn);
  if (!rc) rc = st_dbu_enqueue(x->s, txn, x->name, x->name_len, x->prefix);
  if (!rc) rc = st_txid_write(x->s, txn, op);
  return rc;
}

static int rl_set_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct rl_arg *a = arg;
  dv_buf v;
  buf_init(&v);
  tup_w w;
  tup_w_init(&w, &v);
  tup_int(&w, a->n);
  int rc = buf_error(&v) ? DV_ENOMEM : meta_set(txn, x, a->op, "revs_limit", v.p, v.len);
  buf_free(&v);
  return rc;
}

int store_db_set_revs_limit(store_db *db, int64_t n) {
  if (n < 1 || n > STORE_MAX_REVS_LIMIT) return DV_EBAD_REVS_LIMIT;
  st_op op = {.dbfn = rl_set_fn, .db = db, .use_txid = 1};
  struct rl_arg a = {db, &op, n};
  op.arg = &a;
  int rc = st_run(db->s, &op);
  if (!rc) {
    pthread_mutex_lock(&db->mu);
    db->revs_limit = n;
    pthread_mutex_unlock(&db->mu);
  }
  return rc;
}

struct sec_arg {
  store_db *db;
  st_op *op;
  dv_buf *text;     /* set: JSON to store; get: JSON read */
  int found;
};

static int sec_get_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct sec_arg *a = arg;
  int rc = 0;
  const uint8_t *v;
  size_t vl;
  rc = st_meta_get(txn, x, "security", 0, &v, &vl, &a->found);
  buf_reset(a->text);
  if (!rc && a->found) buf_append(a->text, v, vl);
  return rc ? rc : buf_error(a->text);
}

int store_db_get_security(store_db *db, dv_arena *ar, json_val **out) {
  dv_buf t;
  buf_init(&t);
  struct sec_arg a = {.db = db, .text = &t};
  st_op op = {.dbfn = sec_get_fn, .db = db, .arg = &a};
  int rc = st_run(db->s, &op);
  if (!rc) {
    if (!a.found) {
      *out = json_new_object(ar);
      if (!*out) rc = DV_ENOMEM;
    } else {
      json_opts jo = {.flags = JSON_COPY};
      json_err je;
      rc = json_parse(ar, t.p, t.len, &jo, out, &je);
      if (rc) rc = DV_ECORRUPT;
    }
  }
  buf_free(&t);
  return rc;
}

static int sec_set_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct sec_arg *a = arg;
  return meta_set(txn, x, a->op, "security", a->text->p, a->text->len);
}

int store_db_set_security(store_db *db, const json_val *sec) {
  if (!sec || sec->type != JSON_OBJECT) return DV_ENOT_OBJECT;
  dv_buf t;
  buf_init(&t);
  int rc = json_write(&t, sec);
  if (!rc && t.len > KV_MAX_VALUE) rc = DV_EDOC_TOO_LARGE;
  if (!rc) {
    st_op op = {.dbfn = sec_set_fn, .db = db, .use_txid = 1};
    struct sec_arg a = {.db = db, .op = &op, .text = &t};
    op.arg = &a;
    rc = st_run(db->s, &op);
  }
  buf_free(&t);
  return rc;
}
