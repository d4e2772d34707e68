/* test_durable.c — what survives a clean close, on every backend.
 *
 * Commit, close, reopen, read everything back; versions and stamps keep
 * increasing across the reopen; a second open of a directory that is in
 * use fails with DV_ELOCKED (from another process, and from this one) —
 * on a cluster backend (fdb) it succeeds and shares the data instead.
 * Crashes (kill -9 mid-commit) are test_crash.c's.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "kvt.h"

KV_CONTRACT(durable_reopen) {
  const char *dir = kvt_newdir(be->name);
  kv_db *db = kvt_open_at(be, dir);
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  for (int i = 0; i < 1000; i++) {
    char k[32], v[32];
    sprintf(k, "d/%04d", i);
    sprintf(v, "value %d", i);
    ASSERT_OK(kv_set(t, k, strlen(k), v, strlen(v)));
  }
  ASSERT_OK(kv_atomic(t, KV_ADD, "d/ctr", 5, "\x05\x00\x00\x00", 4));
  uint8_t vk[32];
  memcpy(vk, "d/vs/", 5);
  memset(vk + 5, 0, KV_STAMP_LEN);
  vk[15] = 5; vk[16] = 0; vk[17] = 0; vk[18] = 0;
  ASSERT_OK(kv_set_versionstamped_key(t, vk, 19, "stamped", 7));
  ASSERT_OK(kv_commit(t));
  uint8_t stamp1[KV_STAMP_LEN];
  ASSERT_OK(kv_get_versionstamp(t, stamp1));
  kv_txn_reset(t);
  ASSERT_OK(kv_clear_range(t, "d/0100", 6, "d/0200", 6));
  ASSERT_OK(kv_atomic(t, KV_ADD, "d/ctr", 5, "\x01\x00\x00\x00", 4));
  ASSERT_OK(kv_commit(t));
  kv_txn_destroy(t);
  int64_t v1 = kv_db_version(db);

  if (be->shared) {
    /* A cluster: a second open (another divan process) shares the data. */
    kv_db *again = kvt_open_at(be, dir);
    kvt_expect_str(again, "d/0000", "value 0");
    kvt_put_str(again, "d/shared", "y");
    kv_close(again);
    kvt_expect_str(db, "d/shared", "y");
    kvt_del(db, "d/shared");
    v1 = kv_db_version(db);
  } else {
    /* A second open while this one holds the directory: another process
     * and this process both get DV_ELOCKED. */
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
      kv_db *other = NULL;
      int rc = be->open(dir, &other);
      _exit(rc == DV_ELOCKED ? 0 : rc == 0 ? 1 : 2);
    }
    int st;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERTF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "second open from another process: %s",
            WIFEXITED(st) && WEXITSTATUS(st) == 1 ? "succeeded" : "failed with another error");
    kv_db *again = NULL;
    int rc = be->open(dir, &again);
    ASSERTF(rc == DV_ELOCKED, "second open in-process: %s", dv_err_name(rc));
  }
  kv_close(db);

  db = kvt_open_at(be, dir);
  ASSERTF(kv_db_version(db) >= v1, "version went back from %lld to %lld on reopen", (long long)v1,
          (long long)kv_db_version(db));
  ASSERT_OK(kv_txn_begin(db, &t));
  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_get_range(t, "d/0", 3, "d/1", 3, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 900);
  for (int i = 0, j = 0; i < 1000; i++) {
    if (i >= 100 && i < 200) continue;
    char k[32], v[32];
    sprintf(k, "d/%04d", i);
    sprintf(v, "value %d", i);
    ASSERT_MEM_EQ(p[j].key, p[j].key_len, k, strlen(k));
    ASSERT_MEM_EQ(p[j].val, p[j].val_len, v, strlen(v));
    j++;
  }
  const uint8_t *v;
  size_t vl;
  int found;
  ASSERT_OK(kv_get(t, "d/ctr", 5, 0, &v, &vl, &found));
  ASSERT(found);
  ASSERT_MEM_EQ(v, vl, "\x06\x00\x00\x00", 4);
  ASSERT_OK(kv_get_range(t, "d/vs/", 5, "d/vs0", 5, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 1);
  ASSERT_MEM_EQ(p[0].key + 5, KV_STAMP_LEN, stamp1, KV_STAMP_LEN);
  /* New commits continue above everything before the reopen. */
  ASSERT_OK(kv_set(t, "d/after", 7, "x", 1));
  ASSERT_OK(kv_commit(t));
  int64_t cv;
  uint8_t stamp2[KV_STAMP_LEN];
  ASSERT_OK(kv_get_committed_version(t, &cv));
  ASSERT_OK(kv_get_versionstamp(t, stamp2));
  ASSERT(cv > v1);
  ASSERT(memcmp(stamp2, stamp1, KV_STAMP_LEN) > 0);
  kv_txn_destroy(t);
  kv_close(db);

  /* After close the directory is free again, for this process and others. */
  db = kvt_open_at(be, dir);
  kvt_expect_str(db, "d/after", "x");
  kv_close(db);
}
