/* test_limits.c — FoundationDB's limits and error rules, on every backend.
 *
 * Exact boundaries of kv.h's limits (key 10,000, value 100,000,
 * transaction 10,000,000 bytes as kv.c counts them, 5 s age), the system
 * keyspace, inverted ranges, the sticky error of a failed transaction,
 * versionstamped keys being unreadable inside their transaction, commit
 * versions of read-only and writing transactions, and the retry rules of
 * kv_on_error and kv_run. Concurrency lives in test_conflict.c.
 */
#include "kvt.h"

/* ---- key and value sizes ----------------------------------------------- */

KV_CONTRACT(limits_size) {
  kv_db *db = kvt_open(be);
  uint8_t *big = malloc(KV_MAX_VALUE + 2);
  for (size_t i = 0; i < KV_MAX_VALUE + 2; i++) big[i] = (uint8_t)('a' + i % 26);
  kv_txn *t;
  const uint8_t *v;
  size_t vl;
  int found;

  /* A key of exactly 10,000 bytes: set, commit, read back (point and
   * range, whose end may be one byte longer). */
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kv_set(t, big, KV_MAX_KEY, "max-key", 7));
  ASSERT_OK(kv_commit(t));
  kv_txn_reset(t);
  ASSERT_OK(kv_get(t, big, KV_MAX_KEY, 0, &v, &vl, &found));
  ASSERT(found);
  ASSERT_MEM_EQ(v, vl, "max-key", 7);
  uint8_t *end = malloc(KV_MAX_KEY + 1);
  memcpy(end, big, KV_MAX_KEY);
  end[KV_MAX_KEY] = 0;
  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_get_range(t, big, KV_MAX_KEY, end, KV_MAX_KEY + 1, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 1);
  ASSERT_EQ(p[0].key_len, KV_MAX_KEY);
  ASSERT_OK(kv_clear(t, big, KV_MAX_KEY));
  ASSERT_OK(kv_commit(t));
  kv_txn_reset(t);

  /* 10,001 bytes: refused at once, by every call that takes a key. */
  ASSERT_EQ(kv_set(t, big, KV_MAX_KEY + 1, "x", 1), DV_EKEY_TOO_LARGE);
  kv_txn_reset(t);
  ASSERT_EQ(kv_get(t, big, KV_MAX_KEY + 1, 0, &v, &vl, &found), DV_EKEY_TOO_LARGE);
  kv_txn_reset(t);
  ASSERT_EQ(kv_clear(t, big, KV_MAX_KEY + 1), DV_EKEY_TOO_LARGE);
  kv_txn_reset(t);
  ASSERT_EQ(kv_atomic(t, KV_ADD, big, KV_MAX_KEY + 1, "\x01", 1), DV_EKEY_TOO_LARGE);
  kv_txn_reset(t);

  /* Values: 100,000 bytes commit and read back; 100,001 are refused. */
  ASSERT_OK(kv_set(t, "lim/v", 5, big, KV_MAX_VALUE));
  ASSERT_OK(kv_commit(t));
  kv_txn_reset(t);
  ASSERT_OK(kv_get(t, "lim/v", 5, 0, &v, &vl, &found));
  ASSERT(found);
  ASSERT_MEM_EQ(v, vl, big, KV_MAX_VALUE);
  kv_txn_reset(t);
  ASSERT_EQ(kv_set(t, "lim/v2", 6, big, KV_MAX_VALUE + 1), DV_EVALUE_TOO_LARGE);
  ASSERT_EQ(kv_commit(t), DV_EVALUE_TOO_LARGE); /* sticky through commit */
  kv_txn_reset(t);
  ASSERT_EQ(kv_atomic(t, KV_BYTE_MAX, "lim/v2", 6, big, KV_MAX_VALUE + 1), DV_EVALUE_TOO_LARGE);
  kv_txn_reset(t);
  kvt_expect_absent(db, "lim/v2");

  /* Versionstamped key: 10,000 bytes without its 4-byte suffix is fine,
   * 10,001 is not. Versionstamped value: 100,000 without the suffix. */
  uint8_t *vk = malloc(KV_MAX_KEY + 5);
  memset(vk, 'k', KV_MAX_KEY + 5);
  memcpy(vk, "lim/vs", 6);
  for (int over = 0; over < 2; over++) {
    size_t kl = KV_MAX_KEY + (size_t)over;
    uint32_t off = (uint32_t)(kl - KV_STAMP_LEN); /* placeholder at the end */
    uint8_t *suf = vk + kl;
    suf[0] = (uint8_t)off; suf[1] = (uint8_t)(off >> 8); suf[2] = (uint8_t)(off >> 16); suf[3] = (uint8_t)(off >> 24);
    int rc = kv_set_versionstamped_key(t, vk, kl + 4, "s", 1);
    if (over) {
      ASSERT_EQ(rc, DV_EKEY_TOO_LARGE);
    } else {
      ASSERT_OK(rc);
      ASSERT_OK(kv_commit(t));
      uint8_t stamp[KV_STAMP_LEN];
      ASSERT_OK(kv_get_versionstamp(t, stamp));
      memcpy(end, vk, kl);
      memcpy(end + off, stamp, KV_STAMP_LEN);
      ASSERT(kvt_read(db, end, kl, NULL, 0, NULL));
    }
    kv_txn_reset(t);
  }
  uint8_t *vv = malloc(KV_MAX_VALUE + 5);
  memset(vv, 'v', KV_MAX_VALUE + 5);
  for (int over = 0; over < 2; over++) {
    size_t len = KV_MAX_VALUE + (size_t)over;
    uint8_t *suf = vv + len;
    suf[0] = 0; suf[1] = 0; suf[2] = 0; suf[3] = 0; /* placeholder at 0 */
    int rc = kv_set_versionstamped_value(t, "lim/vsv", 7, vv, len + 4);
    if (over) {
      ASSERT_EQ(rc, DV_EVALUE_TOO_LARGE);
    } else {
      ASSERT_OK(rc);
      ASSERT_OK(kv_commit(t));
      size_t got = 0;
      ASSERT(kvt_read(db, "lim/vsv", 7, NULL, 0, &got));
      ASSERT_EQ(got, KV_MAX_VALUE);
    }
    kv_txn_reset(t);
  }
  /* A bad placeholder offset is DV_EINVAL. */
  ASSERT_EQ(kv_set_versionstamped_value(t, "lim/bad", 7, "abc\x05\x00\x00\x00", 7), DV_EINVAL);
  kv_txn_reset(t);
  ASSERT_EQ(kv_set_versionstamped_key(t, "lim/bad-key-xx\xff\x00\x00\x00", 18, "", 0), DV_EINVAL);
  kv_txn_reset(t);

  kv_txn_destroy(t);
  free(big);
  free(end);
  free(vk);
  free(vv);
  kv_close(db);
}

/* ---- the 10,000,000-byte transaction ------------------------------------ */

/* kv.c counts a set as 2*klen + vlen + 1 and a conflict range as
 * blen + elen; commit fails when the total passes 10,000,000. 100 sets of
 * a 10-byte key and a 99,979-byte value are 100 * 100,000 bytes exactly. */
static int txn_of_bytes(kv_db *db, size_t last_val, int conflict_extra) {
  static uint8_t val[KV_MAX_VALUE];
  memset(val, 'z', sizeof val);
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  for (int i = 0; i < 100; i++) {
    char k[16];
    sprintf(k, "big/%06d", i); /* 10 bytes */
    ASSERT_OK(kv_set(t, k, 10, val, i == 99 ? last_val : 99979));
  }
  if (conflict_extra) ASSERT_OK(kv_add_conflict_range(t, "a", 1, "b", 1, KV_CONFLICT_WRITE));
  int rc = kv_commit(t);
  kv_txn_destroy(t);
  return rc;
}

KV_CONTRACT(limits_txn_bytes) {
  kv_db *db = kvt_open(be);
  ASSERT_OK(txn_of_bytes(db, 99979, 0)); /* exactly 10,000,000 */
  size_t len = 0;
  ASSERT(kvt_read(db, "big/000099", 10, NULL, 0, &len));
  ASSERT_EQ(len, 99979);
  /* One byte over, by a value or by a conflict range: refused at commit,
   * nothing written. */
  ASSERT_EQ(txn_of_bytes(db, 99980, 0), DV_ETXN_TOO_LARGE);
  ASSERT(kvt_read(db, "big/000099", 10, NULL, 0, &len));
  ASSERT_EQ(len, 99979);
  ASSERT_EQ(txn_of_bytes(db, 99978, 1), DV_ETXN_TOO_LARGE); /* 9,999,999 + 2 */
  ASSERT_OK(txn_of_bytes(db, 99977, 1));                    /* 9,999,998 + 2 */
  /* Non-snapshot reads count too (2*klen + 1 each); snapshot reads not. */
  kv_txn *t;
  static uint8_t val[KV_MAX_VALUE];
  ASSERT_OK(kv_txn_begin(db, &t));
  for (int i = 0; i < 99; i++) {
    char k[16];
    sprintf(k, "big/%06d", i);
    ASSERT_OK(kv_set(t, k, 10, val, 99979));
  }
  ASSERT_OK(kv_set(t, "big/000099", 10, val, 99979 - 21)); /* 9,999,979 */
  const uint8_t *v;
  size_t vl;
  int found;
  ASSERT_OK(kv_get(t, "big/000000", 10, KV_SNAPSHOT, &v, &vl, &found)); /* free */
  ASSERT_OK(kv_get(t, "big/000001", 10, 0, &v, &vl, &found));           /* 21: exactly 10,000,000 */
  kvt_waiter w;
  kvt_commit_start(t, &w);
  ASSERT_OK(kvt_commit_wait(&w));
  kv_txn_reset(t);
  for (int i = 0; i < 99; i++) {
    char k[16];
    sprintf(k, "big/%06d", i);
    ASSERT_OK(kv_set(t, k, 10, val, 99979));
  }
  ASSERT_OK(kv_set(t, "big/000099", 10, val, 99979 - 21));
  ASSERT_OK(kv_get(t, "big/000001", 10, 0, &v, &vl, &found));
  ASSERT_OK(kv_get(t, "big/000002", 10, 0, &v, &vl, &found)); /* over */
  ASSERT_EQ(kv_commit(t), DV_ETXN_TOO_LARGE);
  ASSERT_EQ(kv_on_error(t, DV_ETXN_TOO_LARGE), DV_ETXN_TOO_LARGE); /* fatal */
  kv_txn_destroy(t);
  kv_close(db);
}

/* ---- transaction age ---------------------------------------------------- */

KV_CONTRACT(too_old) {
  kv_db *db = kvt_open(be);
  kvt_put_str(db, "old/k", "1");
  kv_txn *reader, *writer;
  const uint8_t *v;
  size_t vl;
  int found;
  ASSERT_OK(kv_txn_begin(db, &reader));
  ASSERT_OK(kv_txn_begin(db, &writer));
  ASSERT_OK(kv_get(reader, "old/k", 5, 0, &v, &vl, &found));
  ASSERT_OK(kv_get(writer, "old/k", 5, 0, &v, &vl, &found));
  ASSERT_OK(kv_set(writer, "old/w", 5, "x", 1));
  /* 4.5 s after its read version a transaction still reads. */
  kvt_sleep_ms(KV_MAX_TXN_AGE_MS - 500);
  ASSERT_OK(kv_get(reader, "old/k", 5, 0, &v, &vl, &found));
  kvt_sleep_ms(800);
  /* Past 5 s from the read version: reads and commits fail, retryably. */
  int rr = kv_get(reader, "old/k", 5, 0, &v, &vl, &found);
  int wr = kv_commit(writer);
  ASSERTF(rr == DV_ETXN_TOO_OLD && wr == DV_ETXN_TOO_OLD,
          "after %d ms: read %s, commit %s; want TXN_TOO_OLD for both", KV_MAX_TXN_AGE_MS + 300,
          dv_err_name(rr), dv_err_name(wr));
  kvt_expect_absent(db, "old/w");
  ASSERT_EQ(kv_get(reader, "old/k", 5, 0, &v, &vl, &found), DV_ETXN_TOO_OLD); /* sticky */
  ASSERT_OK(kv_on_error(reader, rr));                                         /* retryable */
  ASSERT_OK(kv_get(reader, "old/k", 5, 0, &v, &vl, &found));                  /* new read version */
  ASSERT(found);
  ASSERT_OK(kv_on_error(writer, wr));
  ASSERT_OK(kv_set(writer, "old/w", 5, "x", 1));
  ASSERT_OK(kv_commit(writer));
  kvt_expect_str(db, "old/w", "x");
  kv_txn_destroy(reader);
  kv_txn_destroy(writer);
  kv_close(db);
}

/* ---- legal keys, ranges, sticky errors --------------------------------- */

KV_CONTRACT(errors_sticky) {
  kv_db *db = kvt_open(be);
  kvt_put_str(db, "st/a", "1");
  kv_txn *t;
  const uint8_t *v;
  size_t vl;
  int found;
  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_txn_begin(db, &t));

  /* The system keyspace. */
  ASSERT_EQ(kv_set(t, "\xff/foo", 5, "x", 1), DV_EKEY_OUTSIDE_LEGAL);
  kv_txn_reset(t);
  ASSERT_EQ(kv_get(t, "\xff", 1, 0, &v, &vl, &found), DV_EKEY_OUTSIDE_LEGAL);
  kv_txn_reset(t);
  ASSERT_EQ(kv_clear(t, "\xff\xff/version", 10), DV_EKEY_OUTSIDE_LEGAL);
  kv_txn_reset(t);
  ASSERT_EQ(kv_get_range(t, "\xff", 1, "\xff\xff", 2, 0, 0, &p, &n, &more), DV_EKEY_OUTSIDE_LEGAL);
  kv_txn_reset(t);
  ASSERT_EQ(kv_set_versionstamped_key(t, "\xff/xxxxxxxxxx\x02\x00\x00\x00", 16, "", 0),
            DV_EKEY_OUTSIDE_LEGAL);
  kv_txn_reset(t);
  /* The metadata version key is the one legal system key: bumped with a
   * versionstamped value, read back as that stamp. */
  static const uint8_t zero14[14];
  ASSERT_OK(kv_set_versionstamped_value(t, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN,
                                        zero14, 14));
  ASSERT_OK(kv_commit(t));
  uint8_t stamp[KV_STAMP_LEN];
  ASSERT_OK(kv_get_versionstamp(t, stamp));
  kv_txn_reset(t);
  ASSERT_OK(kv_get(t, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN, KV_SNAPSHOT, &v, &vl,
                   &found));
  ASSERT(found);
  ASSERT_MEM_EQ(v, vl, stamp, KV_STAMP_LEN);
  kv_txn_reset(t);

  /* Inverted ranges, everywhere a range is taken. */
  ASSERT_EQ(kv_get_range(t, "b", 1, "a", 1, 0, 0, &p, &n, &more), DV_EINVERTED_RANGE);
  kv_txn_reset(t);
  ASSERT_EQ(kv_clear_range(t, "b", 1, "a", 1), DV_EINVERTED_RANGE);
  kv_txn_reset(t);
  ASSERT_EQ(kv_add_conflict_range(t, "b", 1, "a", 1, KV_CONFLICT_READ), DV_EINVERTED_RANGE);
  kv_txn_reset(t);
  kv_iter *it;
  ASSERT_EQ(kv_iter_begin(t, "st/b", 4, "st/a", 4, 0, KV_REVERSE, &it), DV_EINVERTED_RANGE);
  kv_txn_reset(t);
  /* An empty range [a, a) is fine and empty. */
  ASSERT_OK(kv_get_range(t, "st/a", 4, "st/a", 4, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 0);
  kv_txn_reset(t);

  /* After an error every call returns it, commit included, until reset;
   * nothing of the failed transaction is written. */
  ASSERT_OK(kv_set(t, "st/w", 4, "w", 1));
  ASSERT_EQ(kv_set(t, "st/x", 4, "\xff", KV_MAX_VALUE + 1), DV_EVALUE_TOO_LARGE);
  ASSERT_EQ(kv_get(t, "st/a", 4, 0, &v, &vl, &found), DV_EVALUE_TOO_LARGE);
  ASSERT_EQ(kv_set(t, "st/y", 4, "y", 1), DV_EVALUE_TOO_LARGE);
  ASSERT_EQ(kv_clear(t, "st/a", 4), DV_EVALUE_TOO_LARGE);
  ASSERT_EQ(kv_get_range(t, "st/", 3, "st0", 3, 0, 0, &p, &n, &more), DV_EVALUE_TOO_LARGE);
  ASSERT_EQ(kv_iter_begin(t, "st/", 3, "st0", 3, 0, 0, &it), DV_EVALUE_TOO_LARGE);
  int64_t rv;
  ASSERT_EQ(kv_get_read_version(t, &rv), DV_EVALUE_TOO_LARGE);
  ASSERT_EQ(kv_add_conflict_range(t, "a", 1, "b", 1, KV_CONFLICT_WRITE), DV_EVALUE_TOO_LARGE);
  ASSERT_EQ(kv_atomic(t, KV_ADD, "st/c", 4, "\x01", 1), DV_EVALUE_TOO_LARGE);
  ASSERT_EQ(kv_commit(t), DV_EVALUE_TOO_LARGE);
  kvt_waiter w;
  kvt_commit_start(t, &w);
  ASSERT_EQ(kvt_commit_wait(&w), DV_EVALUE_TOO_LARGE);
  ASSERT_EQ(w.calls, 1);
  kvt_expect_absent(db, "st/w");
  kv_txn_reset(t);
  ASSERT_OK(kv_get(t, "st/a", 4, 0, &v, &vl, &found));
  ASSERT(found);
  ASSERT_OK(kv_set(t, "st/w", 4, "w", 1));
  ASSERT_OK(kv_commit(t));
  kvt_expect_str(db, "st/w", "w");
  /* A failed commit is sticky too. */
  kv_txn_reset(t);
  ASSERT_OK(kv_get(t, "st/a", 4, 0, &v, &vl, &found));
  ASSERT_OK(kv_set(t, "st/a", 4, "2", 1));
  kvt_put_str(db, "st/a", "3");
  ASSERT_EQ(kv_commit(t), DV_ENOT_COMMITTED);
  ASSERT_EQ(kv_get(t, "st/a", 4, 0, &v, &vl, &found), DV_ENOT_COMMITTED);
  ASSERT_EQ(kv_set(t, "st/a", 4, "4", 1), DV_ENOT_COMMITTED);
  int64_t cv;
  ASSERT_EQ(kv_get_committed_version(t, &cv), DV_EINVAL);
  kv_txn_destroy(t);
  kvt_expect_str(db, "st/a", "3");
  kv_close(db);
}

/* ["", "\xff") is the whole user keyspace: legal, readable in both
 * directions, and it never shows the engine's own keys. The empty key is a
 * key like any other. */
KV_CONTRACT(full_keyspace) {
  kv_db *db = kvt_open(be);
  kvt_put_str(db, "", "empty");
  kvt_put_str(db, "fk/a", "a");
  static const uint8_t zero14[14];
  kv_txn *t;
  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kv_set_versionstamped_value(t, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN,
                                        zero14, 14));
  ASSERT_OK(kv_commit(t));
  kv_txn_reset(t);
  for (int rev = 0; rev < 2; rev++) {
    ASSERT_OK(kv_get_range(t, "", 0, "\xff", 1, 0, rev ? KV_REVERSE : 0, &p, &n, &more));
    ASSERT_EQ(n, 2);
    ASSERT_EQ(p[rev ? 1 : 0].key_len, 0);
    ASSERT_MEM_EQ(p[rev ? 1 : 0].val, p[rev ? 1 : 0].val_len, "empty", 5);
    ASSERT_MEM_EQ(p[rev ? 0 : 1].key, p[rev ? 0 : 1].key_len, "fk/a", 4);
  }
  ASSERT_OK(kv_clear_range(t, "", 0, "\xff", 1));
  ASSERT_OK(kv_get_range(t, "", 0, "\xff", 1, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 0);
  ASSERT_OK(kv_commit(t));
  kv_txn_reset(t);
  ASSERT_OK(kv_get_range(t, "", 0, "\xff", 1, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 0);
  /* the metadata version key survives a clear of the user keyspace */
  const uint8_t *v;
  size_t vl;
  int found;
  ASSERT_OK(kv_get(t, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN, 0, &v, &vl, &found));
  ASSERT(found);
  ASSERT_EQ(vl, KV_STAMP_LEN);
  kv_txn_destroy(t);
  kv_close(db);
}

/* The metadata version reads as of the transaction's read version, like
 * any key (the embedded backend keeps it with each published snapshot): a
 * transaction that began before a bump still sees the old value, one after
 * it the new stamp, and it survives a reopen. */
KV_CONTRACT(metadata_version_snapshots) {
  const char *dir = kvt_newdir(be->name);
  kv_db *db = kvt_open_at(be, dir);
  static const uint8_t zero14[14];
  const uint8_t *v;
  size_t vl;
  int found;
  kv_txn *old, *t;
  ASSERT_OK(kv_txn_begin(db, &old));
  ASSERT_OK(kv_get(old, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN, KV_SNAPSHOT, &v, &vl, &found));
  ASSERT_EQ(found, 0);
  uint8_t stamps[3][KV_STAMP_LEN];
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(kv_txn_begin(db, &t));
    ASSERT_OK(kv_set_versionstamped_value(t, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN, zero14, 14));
    ASSERT_OK(kv_set(t, "mv/x", 4, "x", 1));
    ASSERT_OK(kv_commit(t));
    ASSERT_OK(kv_get_versionstamp(t, stamps[i]));
    kv_txn_destroy(t);
    /* a commit that does not bump it keeps it */
    kvt_put_str(db, "mv/y", "y");
    ASSERT_OK(kv_txn_begin(db, &t));
    ASSERT_OK(kv_get(t, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN, 0, &v, &vl, &found));
    ASSERT(found);
    ASSERT_MEM_EQ(v, vl, stamps[i], KV_STAMP_LEN);
    kv_txn_destroy(t);
  }
  /* the first transaction still reads at its own version */
  ASSERT_OK(kv_get(old, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN, 0, &v, &vl, &found));
  ASSERT_EQ(found, 0);
  kv_txn_destroy(old);
  kv_close(db);
  db = kvt_open_at(be, dir);
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kv_get(t, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN, 0, &v, &vl, &found));
  ASSERT(found);
  ASSERT_MEM_EQ(v, vl, stamps[2], KV_STAMP_LEN);
  kv_txn_destroy(t);
  kv_close(db);
}

/* ---- versionstamped writes are unreadable in their transaction ---------- */

static void put_vs_key(kv_txn *t, const char *prefix, const char *suffix, const char *val) {
  uint8_t k[128];
  size_t pl = strlen(prefix), sl = strlen(suffix);
  memcpy(k, prefix, pl);
  memset(k + pl, 0, KV_STAMP_LEN);
  memcpy(k + pl + KV_STAMP_LEN, suffix, sl);
  size_t kl = pl + KV_STAMP_LEN + sl;
  k[kl] = (uint8_t)pl; k[kl + 1] = 0; k[kl + 2] = 0; k[kl + 3] = 0;
  ASSERT_OK(kv_set_versionstamped_key(t, k, kl + 4, val, strlen(val)));
}

/* Many versionstamped keys in one transaction, against a model: a read of
 * [b, e) is unreadable iff some key prefix+stamp+suffix can fall in it.
 * The backend merges the keys' possible ranges; overlapping, touching and
 * disjoint ones must all keep the answer exact. */
static void vsm_str(uint64_t *rs, char *out, const char *head) {
  static const char *alpha = "ab/\xff";
  size_t n = strlen(head);
  memcpy(out, head, n);
  int len = kvt_rand_below(rs, 4);
  for (int i = 0; i < len; i++) out[n++] = alpha[kvt_rand_below(rs, 4)];
  out[n] = 0;
}

KV_CONTRACT(vs_unreadable_model) {
  kv_db *db = kvt_open(be);
  uint64_t rs = 0x5eed5;
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  for (int round = 0; round < 200; round++) {
    char pre[16][16], suf[16][16];
    int nk = 1 + kvt_rand_below(&rs, 16);
    for (int i = 0; i < nk; i++) {
      vsm_str(&rs, pre[i], "m/");
      vsm_str(&rs, suf[i], "");
      put_vs_key(t, pre[i], suf[i], "v");
    }
    for (int q = 0; q < 20; q++) {
      char b[16], e[16];
      vsm_str(&rs, b, "m/");
      vsm_str(&rs, e, "m/");
      size_t bl = strlen(b), el = strlen(e);
      int c = memcmp(b, e, bl < el ? bl : el);
      if (c > 0 || (c == 0 && bl >= el)) continue; /* need b < e */
      int want = 0;
      for (int i = 0; i < nk && !want; i++) {
        uint8_t lo[40], hi[40];
        size_t pl = strlen(pre[i]), sl = strlen(suf[i]);
        memcpy(lo, pre[i], pl);
        memset(lo + pl, 0, KV_STAMP_LEN);
        memcpy(lo + pl + KV_STAMP_LEN, suf[i], sl);
        memcpy(hi, lo, pl + KV_STAMP_LEN + sl);
        memset(hi + pl, 0xff, KV_STAMP_LEN);
        hi[pl + KV_STAMP_LEN + sl] = 0;
        size_t kl = pl + KV_STAMP_LEN + sl;
        /* [lo, hi\0) ∩ [b, e) ≠ ∅ */
        int c1 = memcmp(lo, e, kl < el ? kl : el);
        int lo_lt_e = c1 < 0 || (c1 == 0 && kl < el);
        int c2 = memcmp(b, hi, bl < kl + 1 ? bl : kl + 1);
        int b_lt_hi = c2 < 0 || (c2 == 0 && bl < kl + 1);
        want = lo_lt_e && b_lt_hi;
      }
      /* A failed read ends the transaction (kv.c): each query gets a
       * fresh one holding the same keys. */
      kv_txn_reset(t);
      for (int i = 0; i < nk; i++) put_vs_key(t, pre[i], suf[i], "v");
      kv_pair *p;
      int n, more;
      int rc = kv_get_range(t, b, bl, e, el, 0, KV_SNAPSHOT, &p, &n, &more);
      ASSERTF(rc == (want ? DV_EACCESSED_UNREADABLE : 0), "round %d: [%s, %s) gave %d, want %s", round, b, e,
              rc, want ? "unreadable" : "ok");
    }
    kv_txn_reset(t);
  }
  kv_txn_destroy(t);
  kv_close(db);
}

KV_CONTRACT(vs_unreadable) {
  kv_db *db = kvt_open(be);
  kvt_put_str(db, "un/a", "a");
  kvt_put_str(db, "uo/z", "z");
  kv_txn *t;
  const uint8_t *v;
  size_t vl;
  int found;
  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_txn_begin(db, &t));
  put_vs_key(t, "un/s/", "/tail", "val");
  /* A range that may hold the stamped key cannot be read … */
  ASSERT_EQ(kv_get_range(t, "un/", 3, "un0", 3, 0, 0, &p, &n, &more), DV_EACCESSED_UNREADABLE);
  kv_txn_reset(t);
  put_vs_key(t, "un/s/", "/tail", "val");
  ASSERT_EQ(kv_get_range(t, "un/", 3, "un0", 3, 0, KV_REVERSE | KV_SNAPSHOT, &p, &n, &more),
            DV_EACCESSED_UNREADABLE);
  kv_txn_reset(t);
  /* … ranges and keys beside it can. */
  put_vs_key(t, "un/s/", "/tail", "val");
  ASSERT_OK(kv_get(t, "un/a", 4, 0, &v, &vl, &found));
  ASSERT(found);
  ASSERT_OK(kv_get_range(t, "un/a", 4, "un/b", 4, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 1);
  ASSERT_OK(kv_get_range(t, "uo/", 3, "uo0", 3, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 1);
  ASSERT_OK(kv_commit(t));
  uint8_t stamp[KV_STAMP_LEN];
  ASSERT_OK(kv_get_versionstamp(t, stamp));
  kv_txn_reset(t);
  uint8_t want[32];
  memcpy(want, "un/s/", 5);
  memcpy(want + 5, stamp, KV_STAMP_LEN);
  memcpy(want + 15, "/tail", 5);
  ASSERT_OK(kv_get_range(t, "un/s/", 5, "un/s0", 5, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 1);
  ASSERT_MEM_EQ(p[0].key, p[0].key_len, want, 20);
  ASSERT_MEM_EQ(p[0].val, p[0].val_len, "val", 3);
  kv_txn_reset(t);

  /* A key whose value holds a versionstamp cannot be read back either. */
  ASSERT_OK(kv_set_versionstamped_value(t, "un/v", 4, "0123456789\x00\x00\x00\x00", 14));
  ASSERT_EQ(kv_get(t, "un/v", 4, 0, &v, &vl, &found), DV_EACCESSED_UNREADABLE);
  kv_txn_reset(t);
  ASSERT_OK(kv_set_versionstamped_value(t, "un/v", 4, "0123456789\x00\x00\x00\x00", 14));
  ASSERT_EQ(kv_get_range(t, "un/", 3, "un0", 3, 0, 0, &p, &n, &more), DV_EACCESSED_UNREADABLE);
  kv_txn_reset(t);
  ASSERT_OK(kv_set_versionstamped_value(t, "un/v", 4, "0123456789\x00\x00\x00\x00", 14));
  ASSERT_OK(kv_get(t, "un/a", 4, 0, &v, &vl, &found));
  kv_txn_destroy(t);
  kv_close(db);
}

/* ---- commit versions ----------------------------------------------------- */

KV_CONTRACT(commit_versions) {
  kv_db *db = kvt_open(be);
  kv_txn *t;
  int64_t cv, rv;
  uint8_t stamp[KV_STAMP_LEN];
  const uint8_t *v;
  size_t vl;
  int found;
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_EQ(kv_get_committed_version(t, &cv), DV_EINVAL); /* before commit */
  ASSERT_EQ(kv_get_versionstamp(t, stamp), DV_EINVAL);
  /* Read-only: commits, version -1, no stamp. */
  ASSERT_OK(kv_get(t, "cv/a", 4, 0, &v, &vl, &found));
  ASSERT_OK(kv_commit(t));
  ASSERT_OK(kv_get_committed_version(t, &cv));
  ASSERT_EQ(cv, -1);
  ASSERT_EQ(kv_get_versionstamp(t, stamp), DV_EINVAL);
  kv_txn_reset(t);
  /* An empty transaction likewise. */
  ASSERT_OK(kv_commit(t));
  ASSERT_OK(kv_get_committed_version(t, &cv));
  ASSERT_EQ(cv, -1);
  kv_txn_reset(t);
  /* A writing one: a version above its read version, equal to its stamp's
   * first 8 bytes, seen by the next transaction. */
  int64_t before = kv_db_version(db), last = 0;
  for (int i = 0; i < 5; i++) {
    ASSERT_OK(kv_get_read_version(t, &rv));
    ASSERT(rv >= before);
    ASSERT_OK(kv_set(t, "cv/a", 4, "x", 1));
    ASSERT_OK(kv_commit(t));
    ASSERT_OK(kv_get_committed_version(t, &cv));
    ASSERT_OK(kv_get_versionstamp(t, stamp));
    ASSERT(cv > rv);
    ASSERT(cv > last);
    ASSERT_EQ(kvt_stamp_version(stamp), cv);
    ASSERT(kv_db_version(db) >= cv);
    last = cv;
    kv_txn_reset(t);
    ASSERT_OK(kv_get_read_version(t, &rv));
    ASSERT(rv >= cv);
    kv_txn_reset(t);
  }
  /* After reset the committed version is forgotten. */
  ASSERT_EQ(kv_get_committed_version(t, &cv), DV_EINVAL);
  ASSERT_STR_EQ(kv_db_backend(db), strcmp(be->name, "fault") ? be->name : "fault(rocks)");
  kv_txn_destroy(t);
  kv_close(db);
}

/* ---- retry rules ---------------------------------------------------------- */

typedef struct retry_arg {
  int calls;      /* fn invocations */
  int fail_first; /* return this error on the first `fail_n` calls */
  int fail_n;
  kv_db *db;      /* for provoking a real conflict */
  int provoke;    /* 1: on the first call, commit a conflicting write */
} retry_arg;

static int retry_fn(kv_txn *t, void *arg) {
  retry_arg *a = arg;
  a->calls++;
  int64_t v;
  int rc = kvt_get_i64(t, "rt/k", 0, 0, &v);
  if (rc) return rc;
  if (a->provoke && a->calls == 1) kvt_put_i64(a->db, "rt/k", v + 100);
  if (a->calls <= a->fail_n) return a->fail_first;
  return kvt_set_i64(t, "rt/k", v + 1);
}

KV_CONTRACT(retry) {
  kv_db *db = kvt_open(be);
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  static const int retryable[] = {DV_ENOT_COMMITTED, DV_ETXN_TOO_OLD, DV_EFUTURE_VERSION,
                                  DV_ECOMMIT_UNKNOWN};
  static const int fatal[] = {DV_ETIMED_OUT, DV_ETXN_TOO_LARGE, DV_EKEY_TOO_LARGE,
                              DV_EVALUE_TOO_LARGE, DV_ECANCELLED, DV_EINVAL, DV_EIO,
                              DV_EKEY_OUTSIDE_LEGAL, DV_EINVERTED_RANGE, DV_EACCESSED_UNREADABLE};
  for (size_t i = 0; i < sizeof retryable / sizeof *retryable; i++) {
    ASSERT_OK(kv_set(t, "rt/x", 4, "x", 1));
    ASSERT_EQ(kv_set(t, "rt/big", 6, "", KV_MAX_VALUE + 1), DV_EVALUE_TOO_LARGE);
    ASSERTF(kv_on_error(t, retryable[i]) == 0, "%s not retried", dv_err_name(retryable[i]));
    /* reset: usable again, the earlier write forgotten */
    ASSERT_OK(kv_commit(t));
    int64_t cv;
    ASSERT_OK(kv_get_committed_version(t, &cv));
    ASSERT_EQ(cv, -1);
    kv_txn_reset(t);
  }
  for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++) {
    ASSERT_EQ(kv_on_error(t, fatal[i]), fatal[i]);
    ASSERT_EQ(kv_retry_delay_ms(t, fatal[i]), -1);
  }
  kvt_expect_absent(db, "rt/x");
  /* The retry limit. */
  ASSERT_OK(kv_set_retry_limit(t, 2));
  ASSERT_OK(kv_on_error(t, DV_ENOT_COMMITTED));
  ASSERT_OK(kv_on_error(t, DV_ETXN_TOO_OLD));
  ASSERT_EQ(kv_retry_delay_ms(t, DV_ENOT_COMMITTED), -1);
  ASSERT_EQ(kv_on_error(t, DV_ENOT_COMMITTED), DV_ENOT_COMMITTED);
  /* Delays grow and stay within FDB's bounds (10 ms doubling to 1 s). */
  ASSERT_OK(kv_set_retry_limit(t, -1));
  kv_txn_destroy(t);
  ASSERT_OK(kv_txn_begin(db, &t));
  int d0 = kv_retry_delay_ms(t, DV_ECOMMIT_UNKNOWN);
  ASSERT(d0 >= 5 && d0 <= 10);
  kv_txn_destroy(t);

  /* kv_run: retries retryable errors from fn and from commit, stops at a
   * fatal one (nothing committed), returns 0 after one success. */
  retry_arg a = {0, DV_ENOT_COMMITTED, 2, db, 0};
  ASSERT_OK(kv_run(db, retry_fn, &a));
  ASSERT_EQ(a.calls, 3);
  int64_t v;
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kvt_get_i64(t, "rt/k", 0, 0, &v));
  ASSERT_EQ(v, 1);
  kv_txn_destroy(t);
  retry_arg b = {0, DV_ETIMED_OUT, 1, db, 0};
  ASSERT_EQ(kv_run(db, retry_fn, &b), DV_ETIMED_OUT);
  ASSERT_EQ(b.calls, 1);
  retry_arg c = {0, 0, 0, db, 1}; /* a real conflict on the first attempt */
  ASSERT_OK(kv_run(db, retry_fn, &c));
  ASSERT_EQ(c.calls, 2);
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kvt_get_i64(t, "rt/k", 0, 0, &v));
  ASSERT_EQ(v, 102);
  kv_txn_destroy(t);
  kv_close(db);
}

KV_CONTRACT(timeout) {
  kv_db *db = kvt_open(be);
  kv_txn *t;
  const uint8_t *v;
  size_t vl;
  int found;
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kv_set_timeout_ms(t, 100));
  ASSERT_OK(kv_get(t, "to/a", 4, 0, &v, &vl, &found));
  ASSERT_OK(kv_set(t, "to/a", 4, "x", 1));
  kvt_sleep_ms(200);
  int rc = kv_commit(t);
  ASSERT_EQ(rc, DV_ETIMED_OUT);
  ASSERT_EQ(kv_on_error(t, rc), DV_ETIMED_OUT); /* fatal */
  kvt_expect_absent(db, "to/a");
  kv_txn_reset(t);
  ASSERT_OK(kv_set_timeout_ms(t, 100));
  kvt_sleep_ms(200);
  ASSERT_EQ(kv_get(t, "to/a", 4, 0, &v, &vl, &found), DV_ETIMED_OUT);
  kv_txn_reset(t);
  ASSERT_OK(kv_set_timeout_ms(t, 0)); /* none */
  ASSERT_OK(kv_set(t, "to/a", 4, "y", 1));
  ASSERT_OK(kv_commit(t));
  kv_txn_destroy(t);
  kvt_expect_str(db, "to/a", "y");
  kv_close(db);
}
