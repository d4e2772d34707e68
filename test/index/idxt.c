/* idxt.c — helpers shared by the index layer's tests (idxt.h). */
#include <string.h>

#include "idxt.h"
#include "index/mindex.h"
#include "test.h"

json_val *idxt_json(dv_arena *a, const char *text) {
  size_t n = strlen(text);
  char *s = arena_alloc(a, n + 1);
  ASSERT(s != NULL);
  for (size_t i = 0; i <= n; i++) s[i] = text[i] == '\'' ? '"' : text[i];
  json_val *v = NULL;
  json_err e = {0, NULL};
  int rc = json_parse(a, s, n, NULL, &v, &e);
  ASSERTF(rc == 0, "bad test JSON (%s at %zu): %s", e.msg, e.offset, text);
  return v;
}

static int hooks_load(void *arg, const char *name, size_t len, store_hooks *out) {
  return mindex_hooks_load(arg, name, len, out);
}

static void hooks_unload(void *arg, store_hooks *h) {
  (void)arg;
  mindex_hooks_unload(h);
}

storet *idxt_mango_db(void) {
  storet *t = storet_open(NULL, 0, "db");
  dv_arena *a = &t->a;
  store_db *db = t->db;
  store_set_hooks(t->s, &(store_hooks_provider){.load = hooks_load, .unload = hooks_unload, .arg = t->s});
  ASSERT_OK(mindex_start(t->s));
  ASSERT_OK(storet_put_doc(db, a,
                           "{\"_id\":\"_design/q\",\"language\":\"query\",\"views\":{\"by_v\":{\"map\":{\"fields\":"
                           "{\"v\":\"asc\"},\"partial_filter_selector\":{}},\"reduce\":\"_count\",\"options\":{\"def\":"
                           "{\"fields\":[\"v\"]}}}}}",
                           1, NULL));
  return t;
}

void idxt_edge_docs(store_db *db, dv_arena *a) {
  store_rev r;
  ASSERT_OK(storet_put(db, a, "a", "{\"v\":1,\"deep\":{\"x\":[1,2,{}],\"s\":\"text\"}}", NULL, 0, &r));
  ASSERT_OK(storet_put(db, a, "a", "{\"v\":2,\"deep\":{\"x\":[]}}", storet_rev_str(a, &r), 0, &r));
  ASSERT_OK(storet_put(db, a, "b", "{\"v\":3}", NULL, 0, &r));
  ASSERT_OK(storet_put(db, a, "b", NULL, storet_rev_str(a, &r), 1, NULL));
  ASSERT_OK(storet_put(db, a, "c", "{\"v\":4}", NULL, 0, NULL));
  ASSERT_OK(storet_put_doc(db, a,
                           "{\"_id\":\"c\",\"_rev\":\"2-0123456789abcdef0123456789abcdef\",\"_revisions\":{\"start\":2,"
                           "\"ids\":[\"0123456789abcdef0123456789abcdef\",\"11111111111111111111111111111111\"]},\"v\":5}",
                           0, NULL));
  ASSERT_OK(storet_put_doc(db, a, "{\"_id\":\"c\",\"_rev\":\"1-other\",\"v\":6}", 0, NULL));
  ASSERT_OK(storet_put_doc(db, a,
                           "{\"_id\":\"d\",\"v\":7,\"_attachments\":{\"f.txt\":{\"content_type\":\"text/plain\","
                           "\"data\":\"aGVsbG8gd29ybGQ=\"},\"g.bin\":{\"content_type\":\"application/octet-stream\","
                           "\"data\":\"AAECAwQ=\"}}}",
                           1, NULL));
}
