/* mango.c — Mango selectors: parsing and matching (see mango.h).
 *
 * Placeholder while the real implementation is written: every selector
 * parses, and matching accepts every document.
 */
#include "index/mango.h"

struct mango_sel {
  const json_val *sel; /* the selector as given */
};

int mango_parse(dv_arena *a, const json_val *sel, mango_sel **out, const char **reason) {
  mango_sel *s;
  if (!sel || sel->type != JSON_OBJECT) {
    if (reason) *reason = "Selector must be a JSON object";
    return DV_EINVAL;
  }
  s = arena_alloc(a, sizeof *s);
  if (!s) return DV_ENOMEM;
  s->sel = sel;
  *out = s;
  return 0;
}

int mango_match(const mango_sel *s, const json_val *doc) {
  (void)s;
  (void)doc;
  return 1;
}

int mango_cmp(const json_val *a, const json_val *b) {
  if (a->type != b->type) return a->type < b->type ? -1 : 1;
  return 0;
}
