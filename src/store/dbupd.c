/* dbupd.c — the _db_updates feed (seed 002, option 1; DESIGN.md
 * "_db_updates consumer").
 *
 * Data flow:
 *   every write transaction -> st_dbu_enqueue: one blind versionstamped key
 *     (R,0,"db_updates_queue",Part,VS) = (DbName, DbPrefix, "updated"),
 *     Part = hash(DbName) mod N. No reads, so no conflicts between writers.
 *   create/delete -> st_dbu_event: the row goes straight into the index.
 *   consumer (store_db_updates_consume, background thread) per partition:
 *     snapshot range read of the queue (appenders' versionstamped keys would
 *     otherwise conflict with it); nothing there -> done, nothing written.
 *     Otherwise take the partition's lease, and for each distinct name:
 *     drop it if (R,0,"dbs",Name) no longer has that DbPrefix (deleted or
 *     re-created), else replace the database's one index row with
 *     (R,0,"db_updates",VS) keyed by the CONSUMER's commit stamp, remember
 *     it in (R,0,"db_updates_by_name",Name); clear what was consumed with
 *     one clear_range; bump the tick key (watched by feeds). A TxId guards
 *     the transaction against commit_unknown_result.
 *   readers -> store_db_updates: a range read of the index after `since`.
 *     Because index rows are keyed by the commit that wrote them, a reader
 *     resuming from the last stamp it saw never skips a row: a later
 *     update moves the row to a later key.
 * The queue is durable, so a crash between append and consumption loses
 * nothing: the next consumer finds the entries.
 */
#include <string.h>

#include "store/store_int.h"

static unsigned partition_of(const store *s, const char *name, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)name[i]) * 16777619u;
  return h % (unsigned)s->partitions;
}

int st_dbu_enqueue(store *s, kv_txn *txn, const char *name, size_t name_len, int64_t prefix) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  tup_w w;
  st_key_cluster(s, &k, &w, "db_updates_queue");
  tup_int(&w, partition_of(s, name, name_len));
  tup_vs_incomplete(&w, 0);
  int rc = tup_w_finish_vs(&w);
  tup_w_init(&w, &v);
  tup_str(&w, name, name_len);
  tup_int(&w, prefix);
  tup_strz(&w, "updated");
  if (!rc) rc = buf_error(&k) || buf_error(&v) ? DV_ENOMEM : 0;
  if (!rc) rc = kv_set_versionstamped_key(txn, k.p, k.len, v.p, v.len);
  buf_free(&k);
  buf_free(&v);
  return rc;
}

/* Replace the database's index row with a new one stamped by this commit
 * (user version uv). */
static int index_put(store *s, kv_txn *txn, const char *name, size_t len, const char *type, uint16_t uv) {
  dv_buf bk, k, v;
  buf_init(&bk);
  buf_init(&k);
  buf_init(&v);
  tup_w w;
  st_key_cluster(s, &bk, &w, "db_updates_by_name");
  tup_str(&w, name, len);
  const uint8_t *old;
  size_t ol;
  int found;
  int rc = buf_error(&bk) ? DV_ENOMEM : kv_get(txn, bk.p, bk.len, 0, &old, &ol, &found);
  if (!rc && found) {
    tup_r r;
    tup_item it;
    tup_r_init(&r, old, ol);
    if (tup_get(&r, TUP_VS, &it)) {
      rc = DV_ECORRUPT;
    } else {
      st_key_cluster(s, &k, &w, "db_updates");
      tup_put_item(&w, &it);
      rc = buf_error(&k) ? DV_ENOMEM : kv_clear(txn, k.p, k.len);
    }
  }
  if (!rc) {
    st_key_cluster(s, &k, &w, "db_updates");
    tup_vs_incomplete(&w, uv);
    rc = tup_w_finish_vs(&w);
    tup_w_init(&w, &v);
    tup_str(&w, name, len);
    tup_strz(&w, type);
    if (!rc) rc = buf_error(&k) || buf_error(&v) ? DV_ENOMEM : 0;
    if (!rc) rc = kv_set_versionstamped_key(txn, k.p, k.len, v.p, v.len);
  }
  if (!rc) {
    buf_reset(&v);
    tup_w_init(&w, &v);
    tup_vs_incomplete(&w, uv);
    rc = tup_w_finish_vs(&w);
    if (!rc) rc = buf_error(&v) ? DV_ENOMEM : kv_set_versionstamped_value(txn, bk.p, bk.len, v.p, v.len);
  }
  buf_free(&bk);
  buf_free(&k);
  buf_free(&v);
  return rc;
}

static int tick(store *s, kv_txn *txn) {
  dv_buf k;
  buf_init(&k);
  tup_w w;
  st_key_cluster(s, &k, &w, "db_updates_tick");
  uint8_t one[8];
  st_le64(1, one);
  int rc = buf_error(&k) ? DV_ENOMEM : kv_atomic(txn, KV_ADD, k.p, k.len, one, 8);
  buf_free(&k);
  return rc;
}

int st_dbu_event(store *s, kv_txn *txn, const char *name, size_t name_len, const char *type) {
  int rc = index_put(s, txn, name, name_len, type, 0);
  return rc ? rc : tick(s, txn);
}

/* ---- the consumer ------------------------------------------------------------ */

#define DBU_BATCH 1000
#define DBU_LEASE_MS 5000

struct cons_arg {
  store *s;
  st_op *op;
  int part;
  int64_t consumed; /* entries consumed by the attempt (op->result) */
  dv_buf last;      /* the last queue key that attempt consumed */
};

static int lease_take(struct cons_arg *a, kv_txn *txn, int *ok) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  tup_w w;
  st_key_cluster(a->s, &k, &w, "db_updates_lease");
  tup_int(&w, a->part);
  const uint8_t *cur;
  size_t cl;
  int found;
  int64_t now = st_now_ms();
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, 0, &cur, &cl, &found);
  *ok = 1;
  if (!rc && found) {
    tup_r r;
    tup_item owner, exp;
    tup_r_init(&r, cur, cl);
    if (tup_get(&r, TUP_BYTES, &owner) || owner.s_len != 16 || tup_get(&r, TUP_INT, &exp)) {
      found = 0; /* unreadable lease: take it over */
    } else {
      uint8_t o[16];
      tup_item_copy(&owner, o);
      if (memcmp(o, a->s->owner, 16) && exp.i64 > now) *ok = 0;
    }
  }
  if (!rc && *ok) {
    tup_w_init(&w, &v);
    tup_bytes(&w, a->s->owner, 16);
    tup_int(&w, now + DBU_LEASE_MS);
    rc = buf_error(&v) ? DV_ENOMEM : kv_set(txn, k.p, k.len, v.p, v.len);
  }
  buf_free(&k);
  buf_free(&v);
  return rc;
}

static int cons_fn(kv_txn *txn, void *arg) {
  struct cons_arg *a = arg;
  store *s = a->s;
  a->consumed = 0;
  buf_reset(&a->last);
  dv_buf pfx, b, e, k, nm;
  buf_init(&pfx);
  buf_init(&b);
  buf_init(&e);
  buf_init(&k);
  buf_init(&nm);
  tup_w w;
  st_key_cluster(s, &pfx, &w, "db_updates_queue");
  tup_int(&w, a->part);
  buf_append(&e, pfx.p, pfx.len);
  buf_putc(&e, 0xff);
  /* Start after what this process consumed last: every entry up to it is
   * cleared, and an appender that commits later gets a later stamp. The
   * queue's head is a run of tombstones that a read from the partition's
   * start would walk through every time (22% of the server's CPU under
   * PUTs). */
  const dv_buf *cur = &s->dbu_cursor[a->part];
  if (cur->len) {
    buf_append(&b, cur->p, cur->len);
    buf_putc(&b, 0);
  } else {
    buf_append(&b, pfx.p, pfx.len);
  }
  kv_pair *pairs;
  int n = 0, more, rc = buf_error(&pfx) || buf_error(&b) || buf_error(&e) ? DV_ENOMEM : 0;
  if (!rc) rc = kv_get_range(txn, b.p, b.len, e.p, e.len, DBU_BATCH, KV_SNAPSHOT, &pairs, &n, &more);
  if (rc || n == 0) goto out;
  int ok;
  rc = lease_take(a, txn, &ok);
  if (rc || !ok) goto out;
  /* Distinct names, latest entry wins (entries of one name are identical
   * apart from the prefix, which the check below settles). */
  uint16_t uv = 0;
  for (int i = 0; i < n && !rc; i++) {
    tup_r r;
    tup_item name, prefix;
    tup_r_init(&r, pairs[i].val, pairs[i].val_len);
    if (tup_get(&r, TUP_STR, &name) || tup_get(&r, TUP_INT, &prefix)) continue; /* drop junk */
    int dup = 0;
    for (int j = i + 1; j < n && !dup; j++) {
      tup_r r2;
      tup_item n2;
      tup_r_init(&r2, pairs[j].val, pairs[j].val_len);
      dup = !tup_get(&r2, TUP_STR, &n2) && n2.raw_len == name.raw_len &&
            !memcmp(n2.raw, name.raw, name.raw_len);
    }
    if (dup) continue;
    const uint8_t *np;
    rc = tup_item_data(&name, &nm, &np);
    if (rc) break;
    /* Is the name still that database? */
    st_key_cluster(s, &k, &w, "dbs");
    tup_put_item(&w, &name);
    const uint8_t *dv;
    size_t dl;
    int found;
    rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, 0, &dv, &dl, &found);
    if (rc) break;
    if (!found) continue;
    tup_r dr;
    tup_item dp;
    tup_r_init(&dr, dv, dl);
    if (tup_get(&dr, TUP_INT, &dp) || dp.i64 != prefix.i64) continue;
    rc = index_put(s, txn, (const char *)np, name.s_len, "updated", uv++);
  }
  if (rc) goto out;
  /* Clear what was consumed: [first, last] with one clear_range. */
  buf_reset(&k);
  buf_append(&k, pairs[n - 1].key, pairs[n - 1].key_len);
  buf_putc(&k, 0);
  rc = buf_error(&k) ? DV_ENOMEM : kv_clear_range(txn, pairs[0].key, pairs[0].key_len, k.p, k.len);
  if (!rc) rc = tick(s, txn);
  if (!rc) rc = st_txid_write(s, txn, a->op);
  if (!rc) {
    a->consumed = n;
    buf_append(&a->last, pairs[n - 1].key, pairs[n - 1].key_len);
    if (buf_error(&a->last)) rc = DV_ENOMEM;
  }
out:
  buf_free(&pfx);
  buf_free(&b);
  buf_free(&e);
  buf_free(&k);
  buf_free(&nm);
  return rc;
}

int store_db_updates_consume(store *s) {
  int total = 0, rc = 0;
  pthread_mutex_lock(&s->dbu_mu);
  for (int p = 0; p < s->partitions && !rc; p++) {
    for (;;) {
      st_op op = {.fn = cons_fn, .use_txid = 1};
      struct cons_arg a = {.s = s, .op = &op, .part = p};
      buf_init(&a.last);
      op.arg = &a;
      op.result = &a.consumed;
      rc = st_run(s, &op);
      /* Committed (or found committed through its TxId): the attempt that
       * did it left its last key in a.last. */
      if (!rc && a.consumed > 0 && a.last.len) {
        buf_reset(&s->dbu_cursor[p]);
        buf_append(&s->dbu_cursor[p], a.last.p, a.last.len);
        if (buf_error(&s->dbu_cursor[p])) buf_free(&s->dbu_cursor[p]); /* start from the head again */
      }
      buf_free(&a.last);
      if (rc) break;
      total += a.consumed;
      if (a.consumed < DBU_BATCH) break;
    }
  }
  pthread_mutex_unlock(&s->dbu_mu);
  return rc ? rc : total;
}

/* ---- the reader ---------------------------------------------------------------- */

int store_db_updates(store *s, const store_seq *since, int64_t limit,
                     int (*cb)(void *arg, const store_dbu_row *row), void *arg, store_seq *out_last) {
  store_seq last = {0};
  if (since) last = *since;
  dv_buf pfx, b, e, nm;
  buf_init(&pfx);
  buf_init(&b);
  buf_init(&e);
  buf_init(&nm);
  tup_w w;
  st_key_cluster(s, &pfx, &w, "db_updates");
  int rc = buf_error(&pfx) ? DV_ENOMEM : 0;
  int64_t left = limit;
  int done = 0;
  while (!rc && !done && left != 0) {
    buf_reset(&b);
    buf_append(&b, pfx.p, pfx.len);
    if (!store_seq_is_zero(&last)) {
      tup_w_init(&w, &b);
      tup_vs(&w, last.vs);
      buf_putc(&b, 0);
    }
    buf_reset(&e);
    buf_append(&e, pfx.p, pfx.len);
    buf_putc(&e, 0xff);
    if (buf_error(&b) || buf_error(&e)) { rc = DV_ENOMEM; break; }
    kv_txn *txn;
    rc = kv_txn_begin(s->kv, &txn);
    if (rc) break;
    kv_pair *pairs;
    int n = 0, more = 0;
    int want = left > 0 && left < 1000 ? (int)left : 1000;
    rc = kv_get_range(txn, b.p, b.len, e.p, e.len, want, KV_SNAPSHOT, &pairs, &n, &more);
    for (int i = 0; !rc && i < n; i++) {
      tup_r r;
      tup_item vs, name, type;
      tup_r_init(&r, pairs[i].key + pfx.len, pairs[i].key_len - pfx.len);
      if (tup_get(&r, TUP_VS, &vs)) { rc = DV_ECORRUPT; break; }
      tup_r_init(&r, pairs[i].val, pairs[i].val_len);
      if (tup_get(&r, TUP_STR, &name) || tup_get(&r, TUP_STR, &type)) { rc = DV_ECORRUPT; break; }
      const uint8_t *np;
      rc = tup_item_data(&name, &nm, &np);
      if (rc) break;
      char tbuf[16];
      size_t tl = type.s_len < sizeof tbuf - 1 ? type.s_len : sizeof tbuf - 1;
      memcpy(tbuf, type.s, tl);
      tbuf[tl] = 0;
      store_dbu_row row = {.name = (const char *)np, .name_len = name.s_len, .type = tbuf};
      memcpy(row.seq.vs, vs.fixed, 12);
      last = row.seq;
      if (left > 0) left--;
      if (cb(arg, &row)) { done = 1; break; }
    }
    if (!more) done = 1;
    kv_txn_destroy(txn);
  }
  if (!rc && out_last) *out_last = last;
  buf_free(&pfx);
  buf_free(&b);
  buf_free(&e);
  buf_free(&nm);
  return rc;
}
