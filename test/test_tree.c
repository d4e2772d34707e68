/* test_tree.c — checks of the source tree itself: the layering of
 * ../shared/DESIGN.md "Layers" (scripts/layers.sh), on this checkout and
 * on a small tree that breaks it, so the check is known to catch a
 * violation. */
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
