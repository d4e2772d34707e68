/* Tests for src/repl/spec.c: a replication's JSON parsed into repl_spec
 * (endpoints, options, their limits at and one past the bound), CouchDB's
 * version-4 replication id (vectors computed with Erlang/OTP 25's
 * term_to_binary and md5, see repl_id_vectors), and the rules for
 * documents of a _replicator database. */
#include <string.h>

#include "repl/repl.h"
#include "test.h"

static json_val *js(dv_arena *a, const char *text) {
  json_val *v;
  json_err e;
  ASSERTF(!json_parse(a, text, strlen(text), NULL, &v, &e), "bad test JSON: %s", text);
  return v;
}

static int parse(dv_arena *a, const char *text, repl_spec *s, const char **reason) {
  return repl_spec_parse(a, js(a, text), s, reason);
}

static const char *hdr(const repl_ep *e, const char *name) {
  for (size_t i = 0; i < e->nhdrs; i++)
    if (!strcasecmp(e->hdrs[i].name, name)) return e->hdrs[i].value;
  return NULL;
}

TEST(repl_spec_endpoints) {
  dv_arena a;
  arena_init(&a, 0);
  repl_spec s;
  const char *why;
  ASSERT_OK(parse(&a, "{\"source\":\"http://ad%40m:p%3Aw@127.0.0.1:15984/src\",\"target\":\"tgt\"}", &s, &why));
  ASSERT_STR_EQ(s.source.url, "http://127.0.0.1:15984/src/");
  ASSERT_STR_EQ(s.source.user, "ad@m");
  ASSERT_STR_EQ(s.source.pass, "p:w");
  ASSERT_STR_EQ(s.source.host, "127.0.0.1");
  ASSERT_EQ(s.source.port, 15984);
  ASSERT_STR_EQ(s.source.path, "/src/");
  ASSERT_STR_EQ(hdr(&s.source, "Authorization"), "Basic YWRAbTpwOnc="); /* b64("ad@m:p:w") */
  ASSERT(s.source.local == NULL);
  ASSERT_STR_EQ(s.target.local, "tgt");
  ASSERT(s.target.url == NULL);
  dv_buf b;
  buf_init(&b);
  repl_ep_show(&s.source, &b);
  buf_putc(&b, 0);
  ASSERT_STR_EQ((char *)b.p, "http://ad@m:*****@127.0.0.1:15984/src/");
  buf_free(&b);

  /* default ports are "default" in the id; 5984 counts as default for http */
  ASSERT_OK(parse(&a, "{\"source\":\"http://h:5984/x/\",\"target\":\"https://h:443\"}", &s, &why));
  ASSERT_EQ(s.source.port, 0);
  ASSERT_STR_EQ(s.source.url, "http://h:5984/x/");
  ASSERT_EQ(s.target.port, 0);
  ASSERT_STR_EQ(s.target.url, "https://h/");
  ASSERT_STR_EQ(s.target.path, "/");

  /* object form: headers, auth.basic; a Basic header names the user */
  ASSERT_OK(parse(&a,
                  "{\"source\":{\"url\":\"http://h/db\",\"headers\":{\"Authorization\":\"Basic Ym9iOnNlY3JldA==\","
                  "\"X-Trace\":\"1\"}},\"target\":{\"url\":\"http://h/t\",\"auth\":{\"basic\":{\"username\":\"u\","
                  "\"password\":\"p\"}}}}",
                  &s, &why));
  ASSERT_STR_EQ(s.source.user, "bob");
  ASSERT_STR_EQ(hdr(&s.source, "X-Trace"), "1");
  ASSERT_STR_EQ(s.target.user, "u");
  ASSERT_STR_EQ(hdr(&s.target, "Authorization"), "Basic dTpw");

  /* IPv6 literal with a port */
  ASSERT_OK(parse(&a, "{\"source\":\"http://[::1]:8000/d\",\"target\":\"t\"}", &s, &why));
  ASSERT_STR_EQ(s.source.host, "[::1]");
  ASSERT_EQ(s.source.port, 8000);

  static const char *bad[] = {
      "{\"target\":\"t\"}",                                  /* no source */
      "{\"source\":\"s\"}",                                  /* no target */
      "{\"source\":1,\"target\":\"t\"}",                     /* wrong type */
      "{\"source\":\"\",\"target\":\"t\"}",                  /* empty */
      "{\"source\":\"Bad Name\",\"target\":\"t\"}",          /* not a db name */
      "{\"source\":\"ftp://h/d\",\"target\":\"t\"}",         /* scheme */
      "{\"source\":\"http:///d\",\"target\":\"t\"}",         /* no host */
      "{\"source\":\"http://h:0/d\",\"target\":\"t\"}",      /* port 0 */
      "{\"source\":\"http://h:65536/d\",\"target\":\"t\"}",  /* port past 65535 */
      "{\"source\":\"http://h:/d\",\"target\":\"t\"}",       /* empty port */
      "{\"source\":\"http://h/d?x=1\",\"target\":\"t\"}",    /* query */
      "{\"source\":\"http://[::1/d\",\"target\":\"t\"}",     /* bad IPv6 */
      "{\"source\":{\"url\":\"http://h/d\",\"headers\":[]},\"target\":\"t\"}",
      "{\"source\":{\"url\":\"http://h/d\",\"headers\":{\"A\":1}},\"target\":\"t\"}",
      "{\"source\":{\"url\":\"http://h/d\",\"headers\":{\"A B\":\"x\"}},\"target\":\"t\"}",
      "{\"source\":{\"url\":\"http://h/d\",\"headers\":{\"A\":\"x\\r\\nB: y\"}},\"target\":\"t\"}",
      "{\"source\":{\"url\":\"http://h/d\",\"auth\":{\"basic\":{\"username\":\"u\"}}},\"target\":\"t\"}",
      "[]",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why = NULL;
    ASSERTF(parse(&a, bad[i], &s, &why) == DV_EINVAL && why && *why, "accepted: %s", bad[i]);
  }
  ASSERT_OK(parse(&a, "{\"source\":\"http://h:65535/d\",\"target\":\"t\"}", &s, &why)); /* the last port */
  arena_free(&a);
}

TEST(repl_spec_options) {
  dv_arena a;
  arena_init(&a, 0);
  repl_spec s;
  const char *why;
  ASSERT_OK(parse(&a, "{\"source\":\"s\",\"target\":\"t\"}", &s, &why));
  ASSERT_EQ(s.continuous, 0);
  ASSERT_EQ(s.use_checkpoints, 1);
  ASSERT_EQ(s.worker_processes, 4);
  ASSERT_EQ(s.worker_batch_size, 500);
  ASSERT_EQ(s.checkpoint_interval_ms, 30000);
  ASSERT_OK(parse(&a,
                  "{\"source\":\"s\",\"target\":\"t\",\"continuous\":true,\"create_target\":true,"
                  "\"worker_processes\":\"2\",\"since_seq\":\"12-abc\",\"doc_ids\":[\"a\",\"b\"],"
                  "\"winning_revs_only\":true,\"user_ctx\":{\"name\":\"bob\",\"roles\":[\"r1\"]}}",
                  &s, &why));
  ASSERT_EQ(s.continuous, 1);
  ASSERT_EQ(s.create_target, 1);
  ASSERT_EQ(s.winning_revs_only, 1);
  ASSERT_EQ(s.worker_processes, 2);
  ASSERT_STR_EQ(s.since_seq, "\"12-abc\"");
  ASSERT_EQ(s.doc_ids->len, 2);
  ASSERT_STR_EQ(s.user, "bob");
  ASSERT_EQ(s.nroles, 1);
  ASSERT_OK(parse(&a, "{\"source\":\"s\",\"target\":\"t\",\"since_seq\":42}", &s, &why));
  ASSERT_STR_EQ(s.since_seq, "42");
  ASSERT_OK(parse(&a, "{\"source\":\"s\",\"target\":\"t\",\"filter\":\"d/f\",\"query_params\":{\"k\":\"v\"}}", &s, &why));
  ASSERT_STR_EQ(s.filter, "d/f");
  ASSERT_OK(parse(&a, "{\"source\":\"s\",\"target\":\"t\",\"filter\":\"_selector\",\"selector\":{\"a\":1}}", &s, &why));
  ASSERT_OK(parse(&a, "{\"cancel\":true,\"replication_id\":\"abc+continuous\"}", &s, &why));
  ASSERT_EQ(s.cancel, 1);
  ASSERT_STR_EQ(s.replication_id, "abc+continuous");

  static const char *bad[] = {
      "{\"source\":\"s\",\"target\":\"t\",\"continuous\":\"yes\"}",
      "{\"source\":\"s\",\"target\":\"t\",\"doc_ids\":\"a\"}",
      "{\"source\":\"s\",\"target\":\"t\",\"doc_ids\":[1]}",
      "{\"source\":\"s\",\"target\":\"t\",\"selector\":[]}",
      "{\"source\":\"s\",\"target\":\"t\",\"filter\":\"nofilter\"}",
      "{\"source\":\"s\",\"target\":\"t\",\"filter\":\"a/b/c\"}",
      "{\"source\":\"s\",\"target\":\"t\",\"filter\":\"_view\"}",
      "{\"source\":\"s\",\"target\":\"t\",\"filter\":\"_doc_ids\"}",
      "{\"source\":\"s\",\"target\":\"t\",\"filter\":\"d/f\",\"doc_ids\":[\"a\"]}",
      "{\"source\":\"s\",\"target\":\"t\",\"doc_ids\":[\"a\"],\"selector\":{}}",
      "{\"source\":\"s\",\"target\":\"t\",\"query_params\":\"k=v\"}",
      "{\"source\":\"s\",\"target\":\"t\",\"since_seq\":{}}",
      "{\"source\":\"s\",\"target\":\"t\",\"worker_batch_size\":\"many\"}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why = NULL;
    ASSERTF(parse(&a, bad[i], &s, &why) == DV_EINVAL && why && *why, "accepted: %s", bad[i]);
  }
  arena_free(&a);
}

/* Every bounded option at its bounds and one past them. */
TEST(repl_spec_limits) {
  static const struct { const char *k; int lo, hi; } lim[] = {
      {"worker_processes", 1, 64},         {"worker_batch_size", 1, 10000},
      {"http_connections", 1, 1000},       {"connection_timeout", 100, 3600000},
      {"retries_per_request", 0, 100},     {"checkpoint_interval", 1, 86400000},
  };
  dv_arena a;
  arena_init(&a, 0);
  for (size_t i = 0; i < sizeof lim / sizeof *lim; i++) {
    char t[160];
    repl_spec s;
    const char *why;
    int at[] = {lim[i].lo, lim[i].hi}, past[] = {lim[i].lo - 1, lim[i].hi + 1};
    for (int k = 0; k < 2; k++) {
      snprintf(t, sizeof t, "{\"source\":\"s\",\"target\":\"t\",\"%s\":%d}", lim[i].k, at[k]);
      ASSERTF(parse(&a, t, &s, &why) == 0, "refused: %s", t);
      snprintf(t, sizeof t, "{\"source\":\"s\",\"target\":\"t\",\"%s\":%d}", lim[i].k, past[k]);
      ASSERTF(parse(&a, t, &s, &why) == DV_EINVAL, "accepted: %s", t);
    }
  }
  arena_free(&a);
}

static void id_of(dv_arena *a, const char *text, const char *code, char base[33], char full[REPL_ID_MAX]) {
  repl_spec s;
  const char *why;
  ASSERTF(parse(a, text, &s, &why) == 0, "%s: %s", text, why);
  ASSERT_OK(repl_id_make(&s, "0123456789abcdef0123456789abcdef", code, base, full));
}

TEST(repl_id_rules) {
  dv_arena a;
  arena_init(&a, 0);
  char b1[33], b2[33], f[REPL_ID_MAX];
  id_of(&a, "{\"source\":\"http://u:one@h/db\",\"target\":\"t\"}", NULL, b1, f);
  ASSERT_STR_EQ(f, b1);
  ASSERT_EQ(strlen(b1), 32);
  /* a new password keeps the id (and so the checkpoints) */
  id_of(&a, "{\"source\":\"http://u:two@h/db\",\"target\":\"t\"}", NULL, b2, f);
  ASSERT_STR_EQ(b1, b2);
  /* so do options that are not part of it */
  id_of(&a, "{\"source\":\"http://u:two@h/db\",\"target\":\"t\",\"worker_processes\":1}", NULL, b2, f);
  ASSERT_STR_EQ(b1, b2);
  /* user, host, port, path, filters change it */
  static const char *other[] = {
      "{\"source\":\"http://v:one@h/db\",\"target\":\"t\"}",
      "{\"source\":\"http://u:one@h2/db\",\"target\":\"t\"}",
      "{\"source\":\"http://u:one@h:81/db\",\"target\":\"t\"}",
      "{\"source\":\"http://u:one@h/db2\",\"target\":\"t\"}",
      "{\"source\":\"http://u:one@h/db\",\"target\":\"t2\"}",
      "{\"source\":\"http://u:one@h/db\",\"target\":\"t\",\"doc_ids\":[\"a\"]}",
      "{\"source\":\"http://u:one@h/db\",\"target\":\"t\",\"selector\":{\"a\":1}}",
      "{\"source\":\"http://u:one@h/db\",\"target\":\"t\",\"winning_revs_only\":true}",
  };
  for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
    id_of(&a, other[i], NULL, b2, f);
    ASSERTF(strcmp(b1, b2), "same id for %s", other[i]);
  }
  id_of(&a, "{\"source\":\"s\",\"target\":\"t\",\"continuous\":true,\"create_target\":true}", NULL, b1, f);
  char want[REPL_ID_MAX];
  snprintf(want, sizeof want, "%s+continuous+create_target", b1);
  ASSERT_STR_EQ(f, want);
  arena_free(&a);
}

/* Expected ids from Erlang/OTP 25:
 *   md5(term_to_binary([<<"0123456789abcdef0123456789abcdef">>, Src, Tgt | F])) */
TEST(repl_id_vectors) {
  static const struct { const char *spec, *code, *id; } v[] = {
      /* {remote,"admin","127.0.0.1",15984,"/src/",[],undefined}, <<"tgt">> */
      {"{\"source\":\"http://admin:pw@127.0.0.1:15984/src\",\"target\":\"tgt\"}", NULL,
       "0dbaa5144b40e5452d8db9eba4c551c7"},
      /* {remote,undefined,"example.org",default,"/a/b/",[{"X-A","1"}],undefined},
       * {remote,"bob","h",default,"/",[],undefined}, [<<"a">>,<<"b">>] */
      {"{\"source\":{\"url\":\"http://example.org/a/b\",\"headers\":{\"X-A\":\"1\"}},"
       "\"target\":\"http://bob:x@h\",\"doc_ids\":[\"a\",\"b\"]}",
       NULL, "b9ce7890be8aced625a23bea36b7e38b"},
      /* EJSON selector: strings, a float, a big and a negative int, atoms, a list */
      {"{\"source\":\"src\",\"target\":\"tgt\",\"selector\":{\"type\":\"x\",\"n\":1.5,\"big\":300,\"neg\":-2,"
       "\"t\":true,\"z\":null,\"l\":[1,\"s\"]}}",
       NULL, "62cdf193da088de13a0e9b1c80731cb3"},
      /* a design-document filter: [Code, {[{<<"k">>,<<"v">>}]}] */
      {"{\"source\":\"src\",\"target\":\"tgt\",\"filter\":\"d/f\",\"query_params\":{\"k\":\"v\"}}",
       "function(doc, req) { return true; }", "b5dc7dc8c7d50f499404c7ff07c51766"},
      /* no query_params: {[]} */
      {"{\"source\":\"src\",\"target\":\"tgt\",\"filter\":\"d/f\"}", "f", "77e3a702ac94ee0393553d7d193bf532"},
  };
  dv_arena a;
  arena_init(&a, 0);
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    char b[33], f[REPL_ID_MAX];
    id_of(&a, v[i].spec, v[i].code, b, f);
    ASSERTF(!strcmp(b, v[i].id), "vector %zu: %s, want %s", i, b, v[i].id);
  }
  arena_free(&a);
}

TEST(repl_doc_rules) {
  dv_arena a;
  arena_init(&a, 0);
  const char *why;
  /* admins may write anything that describes a replication */
  ASSERT_OK(repl_doc_validate(&a, js(&a, "{\"_id\":\"r\",\"source\":\"s\",\"target\":\"t\"}"), "admin", 1, &why));
  ASSERT_OK(repl_doc_validate(&a, js(&a, "{\"_id\":\"_design/x\"}"), "admin", 1, &why));
  ASSERT_OK(repl_doc_validate(&a, js(&a, "{\"_id\":\"r\",\"_deleted\":true}"), "bob", 0, &why));
  ASSERT_OK(repl_doc_validate(&a,
                              js(&a, "{\"source\":\"s\",\"target\":\"t\",\"user_ctx\":{\"name\":\"bob\","
                                     "\"roles\":[\"r\"]}}"),
                              "bob", 0, &why));
  ASSERT_OK(repl_doc_validate(&a, js(&a, "{\"source\":\"http://h/s\",\"target\":\"http://h/t\"}"), "bob", 0, &why));
  static const struct { const char *doc; int admin; } bad[] = {
      {"{\"source\":\"s\"}", 1},
      {"{\"source\":\"s\",\"target\":\"t\",\"cancel\":true}", 1},
      {"{\"source\":\"s\",\"target\":\"t\",\"_replication_state\":1}", 1},
      {"{\"source\":\"s\",\"target\":\"t\",\"user_ctx\":\"bob\"}", 1},
      {"{\"source\":\"s\",\"target\":\"t\",\"user_ctx\":{\"roles\":[1]}}", 1},
      {"{\"_id\":\"_design/x\"}", 0},
      {"{\"source\":\"s\",\"target\":\"t\"}", 0}, /* local db, no user_ctx */
      {"{\"source\":\"s\",\"target\":\"t\",\"user_ctx\":{\"name\":\"alice\"}}", 0},
      {"{\"source\":\"s\",\"target\":\"t\",\"user_ctx\":{\"name\":\"bob\",\"roles\":[\"_admin\"]}}", 0},
      {"[]", 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why = NULL;
    ASSERTF(repl_doc_validate(&a, js(&a, bad[i].doc), "bob", bad[i].admin, &why) == DV_EINVAL && why,
            "accepted: %s", bad[i].doc);
  }
  ASSERT(repl_is_replicator_db("_replicator", 11));
  ASSERT(repl_is_replicator_db("a/_replicator", 13));
  ASSERT(!repl_is_replicator_db("a_replicator", 12));
  ASSERT(!repl_is_replicator_db("/_replicator", 12));
  ASSERT(!repl_is_replicator_db("_replicatorx", 12));
  arena_free(&a);
}

TEST(repl_spec_fuzz_smoke) { test_fuzz_smoke("fuzz_repl"); }
