/* kvt.c — the helpers of kvt.h, shared by the kv tests.
 *
 * Not a test file itself: it registers no tests, it only opens stores for
 * each backend and wraps the few multi-step calls the tests repeat.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kv/kv_fault.h"
#include "kvt.h"

static int open_rocks(const char *dir, kv_db **out) { return kv_open_rocks(dir, NULL, out); }

static int open_fault(const char *dir, kv_db **out) {
  kv_db *inner;
  int rc = kv_open_rocks(dir, NULL, &inner);
  if (rc) return rc;
  rc = kv_fault_wrap(inner, out);
  if (rc) kv_close(inner);
  return rc;
}

/* ---- the libfdb_c double ---------------------------------------------------- */

static const char *fdbsim_path(void) {
  static char path[1024];
  const char *p = getenv("DV_FDBSIM");
  if (p) return p;
  const char *b = getenv("DV_BUILD");
  snprintf(path, sizeof path, "%s/fdbsim/libfdb_c.so", b ? b : "build/cc");
  return path;
}

const char *kvt_fdbsim_cluster_file(const char *dir) {
  char *path = NULL;
  if (asprintf(&path, "%s.cluster", dir) < 0) abort();
  FILE *f = fopen(path, "w");
  ASSERTF(f != NULL, "cannot write %s", path);
  fprintf(f, "divan:test@%s\n", dir);
  fclose(f);
  return path;
}

int kvt_fdbsim_open(const char *dir, kv_db **out) {
  setenv("FDBSIM_NO_SYNC", "1", 0);
  kv_fdb_opts o = {.library = fdbsim_path()};
  return kv_open_fdb(kvt_fdbsim_cluster_file(dir), &o, out);
}

/* A function the loaded double exports (it is loaded by kv_open_fdb). */
static void *fdbsim_sym(const char *name) {
  void *h = dlopen(fdbsim_path(), RTLD_NOW | RTLD_NOLOAD);
  ASSERTF(h != NULL, "the fdb double is not loaded (%s)", fdbsim_path());
  void *f = dlsym(h, name);
  ASSERTF(f != NULL, "the fdb double has no %s", name);
  dlclose(h);
  return f;
}

void kvt_fdbsim_fault(const char *kind, double probability, long count) {
  int (*fn)(const char *, double, long) = (int (*)(const char *, double, long))fdbsim_sym("fdbsim_set_fault");
  ASSERTF(fn(kind, probability, count) == 0, "unknown fdbsim fault kind %s", kind);
}

long kvt_fdbsim_injected(const char *kind) {
  long (*fn)(const char *) = (long (*)(const char *))fdbsim_sym("fdbsim_injected");
  return fn(kind);
}

void kvt_fdbsim_clear(void) {
  void (*fn)(void) = (void (*)(void))fdbsim_sym("fdbsim_clear_faults");
  fn();
}

void kvt_fdbsim_seed(uint64_t seed) {
  void (*fn)(uint64_t) = (void (*)(uint64_t))fdbsim_sym("fdbsim_seed");
  fn(seed);
}

const kvt_backend kvt_rocks = {"rocks", open_rocks, 0};
const kvt_backend kvt_fault = {"fault", open_fault, 0};
const kvt_backend kvt_fdb = {"fdb", kvt_fdbsim_open, 1};

const char *kvt_newdir(const char *tag) {
  static int n;
  char *p = NULL;
  if (asprintf(&p, "%s/%s-%d", test_tmpdir(), tag ? tag : "db", n++) < 0) abort();
  return p;
}

kv_db *kvt_open_at(const kvt_backend *be, const char *dir) {
  kv_db *db = NULL;
  int rc = be->open(dir, &db);
  ASSERTF(rc == 0, "open %s at %s: %s (%d)", be->name, dir, dv_err_name(rc), rc);
  return db;
}

kv_db *kvt_open(const kvt_backend *be) { return kvt_open_at(be, kvt_newdir(be->name)); }

void kvt_put(kv_db *db, const char *key, const void *val, size_t val_len) {
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kv_set(t, key, strlen(key), val, val_len));
  ASSERT_OK(kv_commit(t));
  kv_txn_destroy(t);
}

void kvt_put_str(kv_db *db, const char *key, const char *val) { kvt_put(db, key, val, strlen(val)); }

void kvt_put_i64(kv_db *db, const char *key, int64_t v) {
  uint8_t b[8];
  kvt_be64(b, v);
  kvt_put(db, key, b, 8);
}

void kvt_del(kv_db *db, const char *key) {
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kv_clear(t, key, strlen(key)));
  ASSERT_OK(kv_commit(t));
  kv_txn_destroy(t);
}

int kvt_read(kv_db *db, const void *key, size_t key_len, void *buf, size_t cap, size_t *len) {
  kv_txn *t;
  const uint8_t *v;
  size_t vl;
  int found;
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kv_get(t, key, key_len, 0, &v, &vl, &found));
  if (found) {
    if (buf) memcpy(buf, v, vl < cap ? vl : cap);
    if (len) *len = vl;
  }
  kv_txn_destroy(t);
  return found;
}

void kvt_expect_str(kv_db *db, const char *key, const char *want) {
  char buf[256];
  size_t n = 0;
  int found = kvt_read(db, key, strlen(key), buf, sizeof buf, &n);
  ASSERTF(found, "key %s absent, want \"%s\"", key, want);
  ASSERTF(n == strlen(want) && !memcmp(buf, want, n), "key %s = \"%.*s\", want \"%s\"", key,
          (int)(n < sizeof buf ? n : sizeof buf), buf, want);
}

void kvt_expect_absent(kv_db *db, const char *key) {
  char buf[64];
  size_t n = 0;
  int found = kvt_read(db, key, strlen(key), buf, sizeof buf, &n);
  ASSERTF(!found, "key %s present (%zu bytes), want absent", key, n);
}

void kvt_be64(uint8_t out[8], int64_t v) {
  uint64_t u = (uint64_t)v;
  for (int i = 7; i >= 0; i--) { out[i] = (uint8_t)u; u >>= 8; }
}

int64_t kvt_from_be64(const uint8_t in[8]) {
  uint64_t u = 0;
  for (int i = 0; i < 8; i++) u = u << 8 | in[i];
  return (int64_t)u;
}

int kvt_get_i64(kv_txn *t, const char *key, int flags, int64_t dflt, int64_t *out) {
  const uint8_t *v;
  size_t vl;
  int found;
  int rc = kv_get(t, key, strlen(key), flags, &v, &vl, &found);
  if (rc) return rc;
  if (!found) { *out = dflt; return 0; }
  ASSERTF(vl == 8, "key %s: value of %zu bytes, want 8", key, vl);
  *out = kvt_from_be64(v);
  return 0;
}

int kvt_set_i64(kv_txn *t, const char *key, int64_t v) {
  uint8_t b[8];
  kvt_be64(b, v);
  return kv_set(t, key, strlen(key), b, 8);
}

int64_t kvt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kvt_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {}
}

void kvt_waiter_init(kvt_waiter *w) {
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->done = 0;
  w->calls = 0;
  w->rc = 0;
}

static void waiter_cb(kv_txn *t, int rc, void *arg) {
  kvt_waiter *w = arg;
  pthread_mutex_lock(&w->mu);
  w->rc = rc;
  w->done = 1;
  w->calls++;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

void kvt_commit_start(kv_txn *t, kvt_waiter *w) {
  kvt_waiter_init(w);
  kv_commit_async(t, waiter_cb, w);
}

int kvt_commit_wait(kvt_waiter *w) {
  pthread_mutex_lock(&w->mu);
  while (!w->done) pthread_cond_wait(&w->cv, &w->mu);
  int rc = w->rc;
  pthread_mutex_unlock(&w->mu);
  return rc;
}

void kvt_flag_init(kvt_flag *f) {
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  f->calls = 0;
  f->rc = 1;
}

void kvt_flag_cb(void *arg, int rc) {
  kvt_flag *f = arg;
  pthread_mutex_lock(&f->mu);
  f->calls++;
  f->rc = rc;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
}

int kvt_flag_wait(kvt_flag *f, int ms) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += ms / 1000;
  until.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
  pthread_mutex_lock(&f->mu);
  while (!f->calls)
    if (pthread_cond_timedwait(&f->cv, &f->mu, &until)) break;
  int n = f->calls;
  pthread_mutex_unlock(&f->mu);
  return n;
}

int kvt_flag_calls(kvt_flag *f) {
  pthread_mutex_lock(&f->mu);
  int n = f->calls;
  pthread_mutex_unlock(&f->mu);
  return n;
}

int64_t kvt_stamp_version(const uint8_t stamp[KV_STAMP_LEN]) { return kvt_from_be64(stamp); }

int kvt_stamp_order(const uint8_t stamp[KV_STAMP_LEN]) { return stamp[8] << 8 | stamp[9]; }

uint64_t kvt_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int kvt_rand_below(uint64_t *s, int n) { return (int)(kvt_rand(s) % (uint64_t)n); }
