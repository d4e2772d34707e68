/* test_tree.c — checks of the source tree itself: the layering of
 * ../shared/DESIGN.md "Layers" (scripts/layers.sh) and the one error table
 * of STYLE.md "Errors" (scripts/errors.sh: no status and error name
 * written by hand outside util/err.h and http/hreq.c), each on this
 * checkout and on small trees that break it, so the check is known to
 * catch a violation. */
#include <sys/stat.h>

#include "test.h"

TEST(tree_layering) { ASSERT_EQ(test_sh("sh scripts/layers.sh"), 0); }

static void put(const char *root, const char *dir, const char *file, const char *text) {
  char p[1024];
  snprintf(p, sizeof p, "%s/src", root);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/src/%s", root, dir);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/src/%s/%s", root, dir, file);
  FILE *f = fopen(p, "w");
  ASSERT(f != NULL);
  fputs(text, f);
  fclose(f);
}

TEST(tree_layering_catches) {
  char root[512];
  snprintf(root, sizeof root, "%s/good", test_tmpdir());
  mkdir(root, 0755);
  put(root, "store", "a.c", "#include <stdio.h>\n#include \"kv/kv.h\"\n#include \"store/store.h\"\n");
  put(root, "api", "b.c", "#include \"repl/repl.h\"\n#include \"http/http.h\"\n");
  ASSERT_EQ(test_sh("sh scripts/layers.sh '%s'", root), 0);
  static const char *const bad[][2] = {
      {"http", "#include \"api/api.h\"\n"},        /* the engine calling up */
      {"http", "#include \"store/store.h\"\n"},    /* the engine knowing CouchDB */
      {"store", "#include \"index/mango.h\"\n"},   /* a layer above */
      {"api", "#include \"repl/repl_int.h\"\n"},  /* repl internals */
      {"auth", "#include \"http/http.h\"\n"},     /* auth is below http */
      {"kv", "#include \"json.h\"\n"},            /* no layer named */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(root, sizeof root, "%s/bad%zu", test_tmpdir(), i);
    mkdir(root, 0755);
    put(root, bad[i][0], "x.c", bad[i][1]);
    ASSERT_EQ(test_sh("sh scripts/layers.sh '%s'", root), 1);
  }
}

TEST(tree_one_error_table) { ASSERT_EQ(test_sh("sh scripts/errors.sh"), 0); }

TEST(tree_one_error_table_catches) {
  char root[512];
  snprintf(root, sizeof root, "%s/good", test_tmpdir());
  mkdir(root, 0755);
  put(root, "api", "a.c",
      "/* hres_errs(r, 404, \"not_found\", \"missing\") in a comment */\n"
      "static void f(hreq *r) { hres_errw(r, DV_ENOT_FOUND, \"missing\"); }\n"
      "static void g(json_w *w, int rc) {\n  json_w_keyz(w, \"error\");\n  json_w_strz(w, dv_err_couch(rc));\n}\n"
      "static void h(dv_buf *b) { buf_printf(b, \",\\\"error\\\":\\\"%s\\\"}\", dv_err_couch(DV_ENOT_FOUND)); }\n"
      "static void i(hreq *r) { hres_feed(r, 200, \"application/json\", NULL, NULL); }\n");
  put(root, "http", "hreq.c", "void hres_errs(hreq *r, int status, const char *error, const char *reason);\n");
  put(root, "util", "err.h", "  X(NOT_FOUND, -4001, 404, \"not_found\", \"missing\", 0) \\\n");
  ASSERT_EQ(test_sh("sh scripts/errors.sh '%s'", root), 0);
  static const char *const bad[][2] = {
      {"api", "void f(hreq *r) { hres_errs(r, 400, \"bad_request\", \"no\"); }\n"},
      {"api", "void f(hreq *r) {\n  hres_errf(r, 404, \"not_found\",\n            \"%s\", \"x\");\n}\n"},
      {"repl", "  werr(w, rc, 500, \"replication_failed\", \"%s\", why);\n"},     /* a side channel */
      {"auth", "  return refuse(e, 401, \"unauthorized\", \"no\");\n"},            /* another */
      {"api", "  json_w_keyz(w, \"error\");\n  json_w_strz(w, \"not_found\");\n"}, /* a member */
      {"api", "  buf_puts(o, \",\\\"error\\\":\\\"not_found\\\"}\");\n"},       /* raw JSON */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(root, sizeof root, "%s/bad%zu", test_tmpdir(), i);
    mkdir(root, 0755);
    put(root, bad[i][0], "x.c", bad[i][1]);
    ASSERT_EQ(test_sh("sh scripts/errors.sh '%s'", root), 1);
  }
}
