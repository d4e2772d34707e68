/* test_cluster.c — cluster-wide settings (store/clustercfg.h) as two divan
 * processes on one FoundationDB cluster see them: two store instances over
 * one libfdb_c double (two kv_open_fdb handles, as fdb_store_coherence),
 * each with its own ini file and its own dv_config.
 *
 * cluster_config_two_stores: the first to start seeds the store from its
 * file, the second's file values are hidden (per-process keys excepted);
 * a change or a deletion through one reaches the other within a second; a
 * deletion survives a restart with an old file; admins, _users accounts
 * and the cookie secret agree, so a cookie issued by one is accepted by
 * the other, and a new secret written through one ends it on both.
 * cluster_config_embedded: the same keys on the embedded store; a setting
 * written through /_config's path survives a restart with an empty file.
 * cluster_config_no_writes: a store that takes no writes still attaches.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/auth.h"
#include "auth/crypto.h"
#include "json/json.h"
#include "kv/kv_fault.h"
#include "kv/kvt.h"
#include "store/check.h"
#include "store/clustercfg.h"
#include "tuple/tuple.h"
#include "store/storet.h"
#include "test.h"
#include "util/alloc.h"

static const char *write_ini(const char *name, const char *text) {
  char *path;
  if (asprintf(&path, "%s/%s", test_tmpdir(), name) < 0) abort();
  FILE *f = fopen(path, "w");
  ASSERT(f != NULL);
  fputs(text, f);
  fclose(f);
  return path;
}

static dv_config *load(const char *path) {
  dv_config *c;
  char err[256];
  ASSERTF(config_load(path, &c, err, sizeof err) == 0, "%s", err);
  return c;
}

static char *file_text(const char *path) {
  FILE *f = fopen(path, "r");
  ASSERT(f != NULL);
  static char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return buf;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 if c's section/key equals want (NULL: absent). */
static int is(dv_config *c, const char *section, const char *key, const char *want) {
  char *v = config_get(c, section, key);
  int r = want ? v && !strcmp(v, want) : !v;
  dv_free(v);
  return r;
}

/* Wait until c's section/key is want (NULL: absent); the milliseconds it
 * took. Fails after 1 s: the bar. */
static int64_t until_is(dv_config *c, const char *section, const char *key, const char *want) {
  int64_t t0 = now_ms();
  while (!is(c, section, key, want)) {
    ASSERTF(now_ms() - t0 < 1000, "[%s] %s is not %s after 1 s", section, key, want ? want : "deleted");
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return now_ms() - t0;
}

static const char *cookie_val;
static const char *hdr(void *arg, const char *name) {
  (void)arg;
  return !strcasecmp(name, "Cookie") ? cookie_val : NULL;
}

/* Who the cookie names on e (NULL: anonymous). */
static const char *cookie_user(const auth_env *e, const char *cookie) {
  char *h;
  if (asprintf(&h, "AuthSession=%s", cookie) < 0) abort();
  cookie_val = arena_strndup(e->a, h, strlen(h));
  free(h);
  auth_user u;
  const char *set = NULL, *why = NULL;
  int rc = auth_identify(e, hdr, NULL, &u, &set, &why);
  ASSERTF(rc == 0, "auth_identify: %s %s", dv_err_name(rc), why ? why : "");
  return u.name;
}

static int password_ok(const auth_env *e, const char *name, const char *pw) {
  int ok = 0, nroles = 0;
  const char **roles = NULL;
  ASSERT_OK(auth_check_password(e, name, pw, &ok, &roles, &nroles));
  return ok;
}

/* A _users account written through st (its password hashed as the HTTP
 * path does, by auth_users_prepare). */
static void put_user(const auth_env *e, const char *name, const char *pw) {
  char id[128], *json;
  snprintf(id, sizeof id, "org.couchdb.user:%s", name);
  if (asprintf(&json, "{\"_id\":\"%s\",\"name\":\"%s\",\"password\":\"%s\",\"roles\":[],\"type\":\"user\"}", id, name,
               pw) < 0)
    abort();
  json_val *doc, *out;
  ASSERT_OK(json_parse(e->a, json, strlen(json), NULL, &doc, NULL)); /* its strings may point into json */
  auth_user admin = {.name = "root", .is_admin = 1};
  ASSERT_OK(auth_users_prepare(e, &admin, 1, id, strlen(id), doc, &out));
  dv_buf b;
  buf_init(&b);
  ASSERT_OK(json_write(&b, out));
  buf_putc(&b, 0);
  store_db *db;
  ASSERT_OK(store_db_open(e->st, "_users", &db));
  ASSERT_OK(storet_put_doc(db, e->a, (const char *)b.p, 1, NULL));
  store_db_close(db);
  buf_free(&b);
  free(json);
}

TEST(cluster_config_two_stores) {
  storet_pair pair;
  storet_fdb_pair(&pair);
  dv_arena a;
  arena_init(&a, 0);
  const char *ini_a = write_ini("a.ini",
                                "[couchdb]\nmax_document_size = 4242\n"
                                "[chttpd]\nport = 1111\n"
                                "[cors]\norigins = http://a\n"
                                "[chttpd_auth]\nsecret = 0123456789abcdef0123456789abcdef\niterations = 1000\n"
                                "[admins]\nroot = root-plain-pw\n"
                                "[log]\nlevel = debug\n");
  const char *ini_b = write_ini("b.ini",
                                "[cors]\norigins = http://b\n"
                                "[chttpd]\nport = 2222\n"
                                "[chttpd_auth]\nsecret = ffffffffffffffffffffffffffffffff\n");
  dv_config *ca = load(ini_a), *cb = load(ini_b);
  store_cfg *xa, *xb;
  /* A starts first: its file seeds the cluster; only hashes reach the store */
  ASSERT_OK(auth_hash_admins(ca));
  ASSERT_OK(store_cfg_attach(pair.s[0], ca, NULL, NULL, &xa));
  ASSERT_OK(auth_hash_admins(cb));
  ASSERT_OK(store_cfg_attach(pair.s[1], cb, NULL, NULL, &xb));
  ASSERT_OK(auth_setup(pair.s[0], ca));
  ASSERT_OK(auth_setup(pair.s[1], cb));

  ASSERT(is(cb, "couchdb", "max_document_size", "4242"));
  ASSERT(is(cb, "cors", "origins", "http://a"));      /* B's own file value is hidden */
  ASSERT(is(cb, "chttpd", "port", "2222"));           /* per process */
  ASSERT(is(ca, "chttpd", "port", "1111"));
  ASSERT(is(cb, "log", "level", NULL));               /* [log] stays with A */
  ASSERT(is(cb, "chttpd_auth", "secret", "0123456789abcdef0123456789abcdef"));
  char *root = config_get(cb, "admins", "root");
  ASSERT(root && cr_admin_is_hashed(root));
  ASSERT(!strstr(file_text(ini_a), "root-plain-pw")); /* hashed in A's file too */
  dv_free(root);

  auth_env ea = {.st = pair.s[0], .cfg = ca, .a = &a}, eb = {.st = pair.s[1], .cfg = cb, .a = &a};
  ASSERT(password_ok(&eb, "root", "root-plain-pw"));

  /* a change through A reaches B within a second; A's file keeps a copy */
  ASSERT_OK(config_set(ca, "cors", "origins", "http://c", 1, NULL));
  printf("a change seen by the other store after %lld ms\n", (long long)until_is(cb, "cors", "origins", "http://c"));
  ASSERT(strstr(file_text(ini_a), "origins = http://c"));
  ASSERT(strstr(file_text(ini_b), "origins = http://b")); /* B's file is A's business no more */

  /* a deletion through B reaches A, and survives A's restart with its old file */
  ASSERT_OK(config_delete(cb, "couchdb", "max_document_size", 1, NULL));
  printf("a deletion seen after %lld ms\n", (long long)until_is(ca, "couchdb", "max_document_size", NULL));
  ASSERT_EQ(config_delete(cb, "couchdb", "max_document_size", 1, NULL), DV_ENOT_FOUND);
  dv_config *ca2 = load(write_ini("a2.ini", "[couchdb]\nmax_document_size = 4242\n[cors]\norigins = http://old\n"));
  store_cfg *xa2;
  ASSERT_OK(store_cfg_attach(pair.s[0], ca2, NULL, NULL, &xa2));
  ASSERT(is(ca2, "couchdb", "max_document_size", NULL));
  ASSERT(is(ca2, "cors", "origins", "http://c"));
  store_cfg_detach(xa2);
  config_free(ca2);

  /* a per-process setting stays in its process */
  ASSERT_OK(config_set(ca, "chttpd", "port", "3333", 1, NULL));
  ASSERT_OK(config_set(ca, "cors", "credentials", "true", 1, NULL)); /* a shared write after it, as a marker */
  until_is(cb, "cors", "credentials", "true");
  ASSERT(is(cb, "chttpd", "port", "2222"));
  ASSERT(strstr(file_text(ini_a), "port = 3333"));

  /* a server admin added through B can log in on A */
  char *hash;
  ASSERT_OK(auth_admin_hash(cb, "ops-pw", &hash));
  ASSERT_OK(config_set(cb, "admins", "ops", hash, 1, NULL));
  until_is(ca, "admins", "ops", hash);
  dv_free(hash);
  ASSERT(password_ok(&ea, "ops", "ops-pw"));
  ASSERT(!password_ok(&ea, "ops", "wrong"));

  /* a _users account made through A logs in on B; A's cookie works on B */
  put_user(&ea, "joe", "joe-pw");
  ASSERT(password_ok(&eb, "joe", "joe-pw"));
  const char *cookie = auth_session_cookie(&ea, "joe");
  ASSERT(cookie != NULL);
  const char *who = cookie_user(&eb, cookie);
  ASSERT(who && !strcmp(who, "joe"));
  const char *cookie_b = auth_session_cookie(&eb, "joe");
  who = cookie_user(&ea, cookie_b);
  ASSERT(who && !strcmp(who, "joe"));

  /* a new secret through B ends every cookie of the old one, on both */
  ASSERT_OK(config_set(cb, "chttpd_auth", "secret", "abababababababababababababababab", 1, NULL));
  until_is(ca, "chttpd_auth", "secret", "abababababababababababababababab");
  ASSERT(cookie_user(&ea, cookie) == NULL);
  ASSERT(cookie_user(&eb, cookie) == NULL);
  who = cookie_user(&eb, auth_session_cookie(&ea, "joe"));
  ASSERT(who && !strcmp(who, "joe"));
  printf("reloads: A %ld, B %ld\n", store_cfg_reloads(xa), store_cfg_reloads(xb));

  store_cfg_detach(xa);
  store_cfg_detach(xb);
  config_free(ca);
  config_free(cb);
  arena_free(&a);
  storet_fdb_pair_close(&pair);
}

TEST(cluster_config_embedded) {
  storet *t = storet_open(NULL, 0, NULL);
  const char *ini = write_ini("e.ini", "[cors]\norigins = http://seed\n[chttpd]\nport = 1\n");
  dv_config *c = load(ini);
  store_cfg *x;
  ASSERT_OK(store_cfg_attach(t->s, c, NULL, NULL, &x));
  ASSERT_OK(config_set(c, "replicator", "retry_max_ms", "1234", 1, NULL));
  ASSERT_OK(config_set(c, "chttpd", "port", "5", 1, NULL));
  store_cfg_detach(x);
  config_free(c);
  /* a restart over the same store with an empty file */
  char *dir = strdup(t->dir);
  store_close(t->s);
  kv_close(t->kv);
  kv_db *kv;
  store *s;
  ASSERT_OK(storet_kv_open(dir, 0, &kv));
  ASSERT_OK(store_open(kv, NULL, &s));
  c = load(write_ini("empty.ini", ""));
  ASSERT_OK(store_cfg_attach(s, c, NULL, NULL, &x));
  ASSERT(is(c, "cors", "origins", "http://seed"));
  ASSERT(is(c, "replicator", "retry_max_ms", "1234"));
  ASSERT(is(c, "chttpd", "port", NULL));
  /* divan check: the rows decode; a damaged one is a problem */
  store_check_out co = {0};
  ASSERT_OK(store_check_cluster(s, &co));
  ASSERT_EQ(co.counts.problems, 0);
  dv_buf k;
  buf_init(&k);
  tup_w w;
  tup_w_init(&w, &k);
  ASSERT_OK(tup_strz(&w, "divan"));
  ASSERT_OK(tup_int(&w, 0));
  ASSERT_OK(tup_strz(&w, "config"));
  ASSERT_OK(tup_strz(&w, "ini"));
  ASSERT_OK(tup_strz(&w, "cors"));
  ASSERT_OK(tup_strz(&w, "origins"));
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(kv, &txn));
  ASSERT_OK(kv_set(txn, k.p, k.len, "\x15\x01", 2)); /* an integer, not a string */
  ASSERT_OK(kv_commit(txn));
  kv_txn_destroy(txn);
  buf_free(&k);
  memset(&co, 0, sizeof co);
  ASSERT_OK(store_check_cluster(s, &co));
  ASSERT_EQ(co.counts.problems, 1);
  store_cfg_detach(x);
  config_free(c);
  store_close(s);
  kv_close(kv);
  free(dir);
  arena_free(&t->a);
  free(t->dir);
  free(t);
}

/* A store that takes no writes (every commit that writes times out) still
 * attaches: the ini file's new values are not seeded, the store's rows are
 * in force. */
TEST(cluster_config_no_writes) {
  storet *t = storet_open_fault(NULL);
  dv_config *c = load(write_ini("w1.ini", "[cors]\norigins = http://first\n"));
  store_cfg *x;
  ASSERT_OK(store_cfg_attach(t->s, c, NULL, NULL, &x));
  store_cfg_detach(x);
  config_free(c);
  kv_fault_set(t->kv, KV_FAULT_TIMED_OUT, 1.0, -1);
  c = load(write_ini("w2.ini", "[cors]\norigins = http://second\nheaders = x-new\n"));
  ASSERT_OK(store_cfg_attach(t->s, c, NULL, NULL, &x));
  ASSERT(is(c, "cors", "origins", "http://first"));
  ASSERT(is(c, "cors", "headers", "x-new")); /* the file's own value, not seeded */
  ASSERT(config_set(c, "cors", "origins", "http://third", 1, NULL) != 0);
  ASSERT(is(c, "cors", "origins", "http://first"));
  store_cfg_detach(x);
  config_free(c);
  kv_fault_clear(t->kv);
  storet_close(t);
}

/* The watch is renewed every so often without a fire (a watch lost to a
 * failed connection comes back then). A renewal frees the old watch, whose
 * cancellation calls back like a fire: the watcher once took that for a
 * change and reloaded without a pause from the first renewal on, a whole
 * core for good. Renewing every 100 ms for 1.2 s must reload about 12
 * times, not thousands; a write is still seen after it. On the embedded
 * engine and on the FDB double. */
static void renewals(store *s) {
  dv_config *c = load(write_ini("r.ini", "[cors]\norigins = http://r\n"));
  store_cfg *x;
  ASSERT_OK(store_cfg_attach(s, c, NULL, NULL, &x));
  long r0 = store_cfg_reloads(x);
  store_cfg_set_renew_ms(x, 100);
  struct timespec ts = {1, 200000000L};
  nanosleep(&ts, NULL);
  long n = store_cfg_reloads(x) - r0;
  printf("reloads in 1.2 s, renewing every 100 ms: %ld\n", n);
  ASSERT(n >= 4 && n <= 40);
  ASSERT_OK(config_set(c, "cors", "origins", "http://after", 1, NULL));
  long r1 = store_cfg_reloads(x);
  for (int i = 0; i < 200 && store_cfg_reloads(x) == r1; i++) nanosleep(&(struct timespec){0, 10000000L}, NULL);
  ASSERT(store_cfg_reloads(x) > r1); /* the write's own fire, or a renewal */
  ASSERT(is(c, "cors", "origins", "http://after"));
  store_cfg_detach(x);
  config_free(c);
}

TEST(cluster_config_renewal) {
  storet *t = storet_open(NULL, 0, NULL);
  renewals(t->s);
  storet_close(t);
  storet_pair pair;
  storet_fdb_pair(&pair);
  renewals(pair.s[0]);
  storet_fdb_pair_close(&pair);
}
