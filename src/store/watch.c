/* watch.c — waiting for change: kv watches on the keys every edit bumps,
 * and the server's identity.
 *
 * A database's (P,"m","update_seq") is written by every edit that adds a
 * changes row, and cleared with the whole prefix when the database is
 * deleted, so one watch on it wakes a changes feed for both. The
 * _db_updates consumer bumps (R,0,"db_updates_tick") whenever it adds
 * index rows. Each watch is registered by committing a small read-only
 * transaction; if the commit fails, the watch has already fired with the
 * error (a spurious wake-up, which callers tolerate) and we retry.
 *
 * Not here: what a woken reader does (it reads again; see http/api/changes.c).
 */
#include <string.h>

#include "store/store_int.h"

typedef int (*key_fn)(kv_txn *txn, void *arg, dv_buf *key);

static int watch_run(store *s, key_fn kf, void *arg, kv_watch_cb cb, void *cb_arg, kv_watch **out) {
  kv_txn *txn = NULL;
  dv_buf k;
  buf_init(&k);
  int rc = kv_txn_begin(store_kv(s), &txn);
  while (!rc) {
    kv_watch *w = NULL;
    buf_reset(&k);
    rc = kf(txn, arg, &k);
    if (!rc) rc = buf_error(&k) ? DV_ENOMEM : kv_watch_add(txn, k.p, k.len, cb, cb_arg, &w);
    if (!rc) rc = kv_commit(txn);
    if (!rc) {
      *out = w;
      break;
    }
    kv_watch_free(w);
    rc = kv_on_error(txn, rc); /* 0: reset, try again */
  }
  kv_txn_destroy(txn);
  buf_free(&k);
  return rc;
}

static int db_key(kv_txn *txn, void *arg, dv_buf *key) {
  st_dbx x;
  int rc = st_db_check(arg, txn, &x);
  if (!rc) st_key_meta(&x, key, "update_seq");
  return rc;
}

int store_db_watch(store_db *db, kv_watch_cb cb, void *arg, kv_watch **out) {
  return watch_run(db->s, db_key, db, cb, arg, out);
}

static int dbu_key(kv_txn *txn, void *arg, dv_buf *key) {
  tup_w w;
  st_key_cluster(arg, key, &w, "db_updates_tick");
  return 0;
}

int store_db_updates_watch(store *s, kv_watch_cb cb, void *arg, kv_watch **out) {
  return watch_run(s, dbu_key, s, cb, arg, out);
}

/* ---- the server uuid ------------------------------------------------------ */

struct uuid_arg {
  store *s;
  uint8_t id[16]; /* the stored (or new) uuid */
};

static int uuid_fn(kv_txn *txn, void *arg) {
  struct uuid_arg *a = arg;
  dv_buf k;
  buf_init(&k);
  tup_w w;
  st_key_cluster(a->s, &k, &w, "server_uuid");
  const uint8_t *v;
  size_t vl;
  int found = 0;
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, 0, &v, &vl, &found);
  if (!rc && found && vl == 16) memcpy(a->id, v, 16);
  else if (!rc) {
    st_random(a->id, 16);
    rc = kv_set(txn, k.p, k.len, a->id, 16);
  }
  buf_free(&k);
  return rc;
}

int store_server_uuid(store *s, char out[33]) {
  struct uuid_arg a = {.s = s};
  st_op op = {.fn = uuid_fn, .arg = &a};
  int rc = st_run(s, &op);
  if (!rc) {
    st_hex(a.id, 16, out);
    out[32] = 0;
  }
  return rc;
}

/* One snapshot read of the server uuid's key, in a transaction given
 * timeout_ms: on FoundationDB a read version from the cluster and a read
 * from a storage server, on the embedded engine a read of RocksDB. */
int store_ping(store *s, int timeout_ms) {
  kv_txn *txn = NULL;
  int rc = kv_txn_begin(store_kv(s), &txn);
  if (rc) return rc;
  dv_buf k;
  buf_init(&k);
  tup_w w;
  st_key_cluster(s, &k, &w, "server_uuid");
  const uint8_t *v;
  size_t vl;
  int found;
  rc = buf_error(&k) ? DV_ENOMEM : kv_set_timeout_ms(txn, timeout_ms);
  if (!rc) rc = kv_get(txn, k.p, k.len, KV_SNAPSHOT, &v, &vl, &found);
  buf_free(&k);
  kv_txn_destroy(txn);
  return rc;
}
