/* test_watch.c — watches on every backend.
 *
 * A watch fires (rc 0) when its key's value changes — by set, clear,
 * clear_range or atomic op — and not otherwise; it fires at once when the
 * key changed between the watching transaction's read version and the
 * watch's registration (no lost wake-up); kv_watch_free of an unfired
 * watch calls back with DV_ECANCELLED before it returns; closing the store
 * cancels what is left. When a watch fires, the change is already visible
 * to new transactions. "Has not fired" is checked over a bounded wait.
 */
#include "kvt.h"

#define QUIET_MS 300  /* how long "does not fire" is watched */
#define FIRE_MS 5000  /* how long a watch may take to fire */

/* Register a watch on key in a read-only transaction that first reads it
 * (if `read`), and commit it. */
static kv_watch *watch_key(kv_db *db, const char *key, int read, kvt_flag *f) {
  kv_txn *t;
  kv_watch *w;
  kvt_flag_init(f);
  ASSERT_OK(kv_txn_begin(db, &t));
  if (read) {
    const uint8_t *v;
    size_t vl;
    int found;
    ASSERT_OK(kv_get(t, key, strlen(key), 0, &v, &vl, &found));
  }
  ASSERT_OK(kv_watch_add(t, key, strlen(key), kvt_flag_cb, f, &w));
  ASSERT_OK(kv_commit(t));
  kv_txn_destroy(t);
  return w;
}

static void expect_quiet(kvt_flag *f, const char *what) {
  ASSERTF(kvt_flag_wait(f, QUIET_MS) == 0, "watch fired (rc %s) after %s", dv_err_name(f->rc), what);
}

static void expect_fired(kvt_flag *f, const char *what) {
  ASSERTF(kvt_flag_wait(f, FIRE_MS) == 1, "watch did not fire within %d ms after %s", FIRE_MS, what);
  ASSERTF(f->rc == 0, "watch fired with %s after %s", dv_err_name(f->rc), what);
}

KV_CONTRACT(watch) {
  kv_db *db = kvt_open(be);
  kvt_flag f, g;
  kv_watch *w, *w2;
  kvt_put_str(db, "w/k", "1");

  /* Fires after another transaction changes the key, not before; the new
   * value is visible when it fires; one callback only. */
  w = watch_key(db, "w/k", 1, &f);
  expect_quiet(&f, "nothing");
  kvt_put_str(db, "w/other", "x");
  expect_quiet(&f, "an unrelated write");
  kvt_put_str(db, "w/k", "2");
  expect_fired(&f, "a set");
  kvt_expect_str(db, "w/k", "2");
  kv_watch_free(w);
  ASSERT_EQ(kvt_flag_calls(&f), 1);

  /* An unfired watch freed: DV_ECANCELLED before kv_watch_free returns. */
  w = watch_key(db, "w/k", 1, &f);
  kvt_put_str(db, "w/k2", "x");
  expect_quiet(&f, "a write to another key");
  kv_watch_free(w);
  ASSERT_EQ(kvt_flag_calls(&f), 1);
  ASSERT_EQ(f.rc, DV_ECANCELLED);

  /* Changed between the read version and the registration: fires at once
   * — with the key read, and with only a read version taken. */
  for (int read = 0; read < 2; read++) {
    kv_txn *t;
    int64_t rv;
    kvt_flag_init(&f);
    ASSERT_OK(kv_txn_begin(db, &t));
    if (read) {
      const uint8_t *v;
      size_t vl;
      int found;
      ASSERT_OK(kv_get(t, "w/k", 3, KV_SNAPSHOT, &v, &vl, &found));
    } else {
      ASSERT_OK(kv_get_read_version(t, &rv));
    }
    kvt_put_str(db, "w/k", read ? "3" : "4");
    ASSERT_OK(kv_watch_add(t, "w/k", 3, kvt_flag_cb, &f, &w));
    ASSERT_OK(kv_commit(t));
    kv_txn_destroy(t);
    expect_fired(&f, "a change before registration");
    kv_watch_free(w);
  }

  /* clear_range over the key fires; so does clear, an atomic op, and a set
   * of an absent key. */
  w = watch_key(db, "w/k", 0, &f);
  {
    kv_txn *t;
    ASSERT_OK(kv_txn_begin(db, &t));
    ASSERT_OK(kv_clear_range(t, "w/a", 3, "w/z", 3));
    ASSERT_OK(kv_commit(t));
    kv_txn_destroy(t);
  }
  expect_fired(&f, "a clear_range");
  kv_watch_free(w);
  /* … also a clear_range over many keys (stored as a range tombstone). */
  {
    kv_txn *t;
    ASSERT_OK(kv_txn_begin(db, &t));
    for (int i = 0; i < 500; i++) {
      char k[32];
      sprintf(k, "w/many/%04d", i);
      ASSERT_OK(kv_set(t, k, strlen(k), "x", 1));
    }
    ASSERT_OK(kv_commit(t));
    w = watch_key(db, "w/many/0250", 1, &f);
    kv_txn_reset(t);
    ASSERT_OK(kv_clear_range(t, "w/many/", 7, "w/many0", 7));
    ASSERT_OK(kv_commit(t));
    kv_txn_reset(t);
    expect_fired(&f, "a clear_range of 500 keys");
    kv_watch_free(w);
    kv_pair *p;
    int n, more;
    ASSERT_OK(kv_get_range(t, "w/many/", 7, "w/many0", 7, 0, 0, &p, &n, &more));
    ASSERT_EQ(n, 0);
    kv_txn_destroy(t);
  }
  kvt_put_str(db, "w/k", "5");
  w = watch_key(db, "w/k", 1, &f);
  kvt_del(db, "w/k");
  expect_fired(&f, "a clear");
  kv_watch_free(w);
  w = watch_key(db, "w/k", 0, &f); /* absent now */
  expect_quiet(&f, "nothing (absent key)");
  {
    kv_txn *t;
    ASSERT_OK(kv_txn_begin(db, &t));
    ASSERT_OK(kv_atomic(t, KV_ADD, "w/k", 3, "\x01\x00", 2));
    ASSERT_OK(kv_commit(t));
    kv_txn_destroy(t);
  }
  expect_fired(&f, "an atomic ADD on an absent key");
  kv_watch_free(w);
  w = watch_key(db, "w/k", 0, &f);
  {
    kv_txn *t;
    ASSERT_OK(kv_txn_begin(db, &t));
    ASSERT_OK(kv_atomic(t, KV_ADD, "w/k", 3, "\x01\x00", 2));
    ASSERT_OK(kv_commit(t));
    kv_txn_destroy(t);
  }
  expect_fired(&f, "an atomic ADD");
  kv_watch_free(w);

  /* A watch on a key the transaction itself writes compares against its
   * own write: quiet after the commit, fires on the next change. */
  {
    kv_txn *t;
    kvt_flag_init(&f);
    ASSERT_OK(kv_txn_begin(db, &t));
    ASSERT_OK(kv_set(t, "w/own", 5, "mine", 4));
    ASSERT_OK(kv_watch_add(t, "w/own", 5, kvt_flag_cb, &f, &w));
    ASSERT_OK(kv_commit(t));
    kv_txn_destroy(t);
    expect_quiet(&f, "its own transaction's write");
    kvt_put_str(db, "w/own", "theirs");
    expect_fired(&f, "a later write");
    kv_watch_free(w);
  }

  /* Two watches on one key both fire; a watch on another key does not. */
  kvt_flag h;
  kv_watch *w3;
  w = watch_key(db, "w/m", 0, &f);
  w2 = watch_key(db, "w/m", 0, &g);
  w3 = watch_key(db, "w/n", 0, &h);
  kvt_put_str(db, "w/m", "x");
  expect_fired(&f, "a set (first watch)");
  expect_fired(&g, "a set (second watch)");
  ASSERT_EQ(kvt_flag_calls(&h), 0);
  kv_watch_free(w);
  kv_watch_free(w2);
  kv_watch_free(w3);
  ASSERT_EQ(h.rc, DV_ECANCELLED);

  /* A watch whose transaction fails to commit reports the error (or
   * DV_ECANCELLED), never 0; kv_watch_free afterwards is safe. */
  {
    kv_txn *t;
    const uint8_t *v;
    size_t vl;
    int found;
    kvt_flag_init(&f);
    ASSERT_OK(kv_txn_begin(db, &t));
    ASSERT_OK(kv_get(t, "w/c", 3, 0, &v, &vl, &found));
    ASSERT_OK(kv_set(t, "w/c", 3, "a", 1));
    ASSERT_OK(kv_watch_add(t, "w/q", 3, kvt_flag_cb, &f, &w));
    kvt_put_str(db, "w/c", "b");
    ASSERT_EQ(kv_commit(t), DV_ENOT_COMMITTED);
    kv_txn_destroy(t);
    ASSERT_EQ(kvt_flag_wait(&f, FIRE_MS), 1);
    ASSERT(f.rc != 0);
    kv_watch_free(w);
    ASSERT_EQ(kvt_flag_calls(&f), 1);
  }
  kv_close(db);
}

/* Closing the store cancels outstanding watches. */
KV_CONTRACT(watch_close) {
  kv_db *db = kvt_open(be);
  kvt_flag f;
  kv_watch *w = watch_key(db, "wc/k", 1, &f);
  kv_close(db);
  ASSERT_EQ(kvt_flag_calls(&f), 1);
  ASSERT_EQ(f.rc, DV_ECANCELLED);
  kv_watch_free(w); /* the handle stays valid until freed */
  ASSERT_EQ(kvt_flag_calls(&f), 1);
}
