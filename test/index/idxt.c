/* idxt.c — helpers shared by the index layer's tests (idxt.h). */
#include <string.h>

#include "idxt.h"
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
