/* test_inspect.c — the exact decoded keyspace after a scripted sequence of
 * edits (create, update, conflict, delete), through `divan inspect`'s
 * printer: the layout of ../shared/DESIGN.md "Key layout", checked byte for
 * byte. Versionstamps and the database's uuid/creation time vary between
 * runs and are masked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/inspect.h"
#include "store/store.h"
#include "storet.h"
#include "test.h"

static dv_arena a;

static store_rev put(store_db *db, const char *txt, int new_edits) {
  json_val *v;
  json_err e;
  store_edit ed;
  ASSERT_OK(json_parse(&a, txt, strlen(txt), NULL, &v, &e));
  ASSERT_OK(store_edit_from_json(&a, v, new_edits, &ed));
  ASSERT_OK(store_update(db, NULL, &ed, 1, new_edits));
  ASSERT_OK(ed.rc);
  store_rev r = ed.rev;
  r.h = arena_memdup(&a, ed.rev.h, ed.rev.len);
  return r;
}

static const char *fmt(const store_rev *r) {
  dv_buf b;
  buf_init(&b);
  store_rev_format(r, &b);
  char *s = arena_strndup(&a, (const char *)b.p, b.len);
  buf_free(&b);
  return s;
}

/* vs(<24 hex>) -> vs(*); the dbs row's CreatedAt and DbUUID -> * */
static void mask(char *s) {
  char *p, *at = s;
  while ((p = strstr(at, "vs("))) {
    if (strlen(p) >= 28 && p[27] == ')') {
      p[3] = '*';
      memmove(p + 4, p + 27, strlen(p + 27) + 1);
    }
    at = p + 3;
  }
  p = strstr(s, "\"dbs\", \"db\") = (1, 0, ");
  if (p) {
    p += strlen("\"dbs\", \"db\") = (1, 0, ");
    char *nl = strchr(p, '\n');
    memmove(p + 5, nl, strlen(nl) + 1);
    memcpy(p, "*, *)", 5);
  }
}

static const char expected[] =
    "(\"divan\", 0, \"dbs\", \"db\") = (1, 0, *, *)\n"
    "(\"divan\", 1, 1, \"c\", 0, vs(*)) = (0, \"z\", 1, b\"\\x94\\x80cc\\x15h\\xad\\xcbg\\x0bYVy\\xd6\\x12\\xf8\", 1, true)\n"
    "(\"divan\", 1, 1, \"c\", 0, vs(*)) = (0, \"a\", 2, b\"#B\\x95\\xb3\\x0d\\xb3>\\xc2=\\xde\\xf1W\\xa5*\\xf9\\xe3\", 2, true)\n"
    "(\"divan\", 1, 1, \"d\", \"a\", true, 2, b\"#B\\x95\\xb3\\x0d\\xb3>\\xc2=\\xde\\xf1W\\xa5*\\xf9\\xe3\") = (0)\n"
    "(\"divan\", 1, 1, \"d\", \"a\", true, 2, b\"#B\\x95\\xb3\\x0d\\xb3>\\xc2=\\xde\\xf1W\\xa5*\\xf9\\xe3\", \"x\") = (2.5)\n"
    "(\"divan\", 1, 1, \"d\", \"z\", true, 1, b\"\\x94\\x80cc\\x15h\\xad\\xcbg\\x0bYVy\\xd6\\x12\\xf8\") = (0)\n"
    "(\"divan\", 1, 1, \"d\", \"z\", true, 1, b\"\\x94\\x80cc\\x15h\\xad\\xcbg\\x0bYVy\\xd6\\x12\\xf8\", \"e\") = ((2))\n"
    "(\"divan\", 1, 1, \"d\", \"z\", true, 1, b\"\\x94\\x80cc\\x15h\\xad\\xcbg\\x0bYVy\\xd6\\x12\\xf8\", \"s\") = (\"t\")\n"
    "(\"divan\", 1, 1, \"d\", \"z\", true, 1, b\"\\x94\\x80cc\\x15h\\xad\\xcbg\\x0bYVy\\xd6\\x12\\xf8\", \"x\", 0) = (1)\n"
    "(\"divan\", 1, 1, \"d\", \"z\", true, 1, b\"\\x94\\x80cc\\x15h\\xad\\xcbg\\x0bYVy\\xd6\\x12\\xf8\", \"x\", 1) = ((1))\n"
    "(\"divan\", 1, 1, \"m\", \"doc_count\") = le64(2)\n"
    "(\"divan\", 1, 1, \"m\", \"size_active\") = le64(308)\n"
    "(\"divan\", 1, 1, \"m\", \"size_external\") = le64(36)\n"
    "(\"divan\", 1, 1, \"m\", \"update_seq\") = (0, vs(*))\n"
    "(\"divan\", 1, 1, \"r\", \"a\", false, 3, b\"\\x9b9\\\\\\xff\\xc1\\xa9\\x9e\\xb5\\x8f/\\xd79*\\xa7\\xca\\x9f\") = (0, null, null, (b\"\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\", b\")\\xb8\\xac~\\x1e\\x0b\\x8c\\xf9\\xc5\\xfaz\\x8d\\x0e\\xe4\\xd3\\xe8\"), 2, 0)\n"
    "(\"divan\", 1, 1, \"r\", \"a\", true, 2, b\"#B\\x95\\xb3\\x0d\\xb3>\\xc2=\\xde\\xf1W\\xa5*\\xf9\\xe3\") = (0, (0, vs(*)), 2, (b\"\\x94\\x80cc\\x15h\\xad\\xcbg\\x0bYVy\\xd6\\x12\\xf8\"), 9, 89)\n"
    "(\"divan\", 1, 1, \"r\", \"z\", true, 1, b\"\\x94\\x80cc\\x15h\\xad\\xcbg\\x0bYVy\\xd6\\x12\\xf8\") = (0, (0, vs(*)), 1, (), 27, 219)\n";

TEST(store_inspect_keyspace) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/kv", test_tmpdir());
  kv_db *kv;
  store *s;
  store_db *db;
  ASSERT_OK(storet_kv_open(dir, 0, &kv));
  ASSERT_OK(store_open(kv, NULL, &s));
  ASSERT_OK(store_db_create(s, "db"));
  ASSERT_OK(store_db_open(s, "db", &db));
  arena_init(&a, 0);
  put(db, "{\"_id\":\"z\",\"x\":[1,{}],\"s\":\"t\",\"e\":[]}", 1);
  store_rev r1 = put(db, "{\"_id\":\"a\",\"x\":[1,{}],\"s\":\"t\",\"e\":[]}", 1);
  ASSERT_STR_EQ(fmt(&r1), "1-948063631568adcb670b595679d612f8");
  char d[300];
  snprintf(d, sizeof d, "{\"_id\":\"a\",\"_rev\":\"%s\",\"x\":2.5}", fmt(&r1)); /* update */
  store_rev r2 = put(db, d, 1);
  ASSERT_STR_EQ(fmt(&r2), "2-234295b30db33ec23ddef157a52af9e3");
  /* a conflicting branch arrives by replication, then is deleted */
  put(db, "{\"_id\":\"a\",\"y\":null,\"_revisions\":{\"start\":2,\"ids\":"
          "[\"ffffffffffffffffffffffffffffffff\",\"29b8ac7e1e0b8cf9c5fa7a8d0ee4d3e8\"]}}", 0);
  store_rev r3 = put(db, "{\"_id\":\"a\",\"_rev\":\"2-ffffffffffffffffffffffffffffffff\",\"_deleted\":true}", 1);
  ASSERT_STR_EQ(fmt(&r3), "3-9b395cffc1a99eb58f2fd7392aa7ca9f");
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  ASSERT_OK(cli_inspect(kv, "db", f));
  fclose(f);
  mask(out);
  ASSERT_STR_EQ(out, expected);
  free(out);
  /* the whole keyspace holds the cluster-level rows too */
  f = open_memstream(&out, &len);
  ASSERT_OK(cli_inspect(kv, NULL, f));
  fclose(f);
  ASSERT(strstr(out, "(\"divan\", 0, \"db_updates\", vs("));
  ASSERT(strstr(out, "(\"divan\", 0, \"db_updates_queue\", "));
  ASSERT(strstr(out, "(\"divan\", 0, \"txids\", "));
  ASSERT(strstr(out, "(\"divan\", 0, \"prefix_counter\") = le64(1)"));
  free(out);
  store_db *none;
  ASSERT_EQ(store_db_open(s, "nope", &none), DV_ENO_DB);
  f = open_memstream(&out, &len);
  ASSERT_EQ(cli_inspect(kv, "nope", f), DV_ENO_DB);
  fclose(f);
  free(out);
  store_db_close(db);
  store_close(s);
  kv_close(kv);
  arena_free(&a);
}
