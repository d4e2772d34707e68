/* vdef.c — a design document's views as an index (view.h): its canonical
 * definition, its signature, its slots.
 *
 * Data flow: the design document ─▶ def, one canonical JSON text
 *   {"language": L, "options": {…}, "lib": {…}|null,
 *    "views": [[name, map, reduce|null, raw], … by name]}
 * ─▶ Sig = MD5(def) ─▶ parsed back (vw_from_def, also the builder's way in
 * from the state row) into slots: the first view of each distinct (map,
 * collation) makes a slot, every view with a reduce adds it to its slot's,
 * in name order. So the signature moves exactly when something that shapes
 * the rows or the reductions moves (CouchDB's ddoc_to_mrst digests views,
 * language, options and lib the same way), and not with other fields of
 * the design document.
 */
#include <stdlib.h>
#include <string.h>

#include "index/view.h"
#include "util/md5.h"

typedef struct named {
  const char *name;
  size_t len;
  const json_val *v;
} named;

static int by_name(const void *a, const void *b) {
  const named *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->name, y->name, n);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int is_str(const json_val *v) { return v && v->type == JSON_STRING; }

/* "options": {"collation": "raw"} on a view or on the design document. */
static int raw_of(const json_val *opts) {
  const json_val *c = opts && opts->type == JSON_OBJECT ? json_obj_getz(opts, "collation") : NULL;
  return is_str(c) && c->len == 3 && !memcmp(c->u.s, "raw", 3);
}

static int bool_opt(const json_val *opts, const char *k) {
  const json_val *v = opts && opts->type == JSON_OBJECT ? json_obj_getz(opts, k) : NULL;
  return v && v->type == JSON_BOOL && v->b;
}

static char *dupn(dv_arena *a, const char *s, size_t n) { return arena_strndup(a, s, n); }

const vw_view *vw_find(const vw_index *ix, const char *name, size_t len) {
  size_t lo = 0, hi = ix->n_views;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const char *m = ix->views[mid].name;
    size_t ml = strlen(m), n = ml < len ? ml : len;
    int c = memcmp(m, name, n);
    if (!c) c = (ml > len) - (ml < len);
    if (!c) return &ix->views[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

int vw_from_def(dv_arena *a, const char *def, size_t len, vw_index **out) {
  json_val *d;
  int rc = json_parse(a, def, len, &(json_opts){.flags = JSON_COPY}, &d, NULL);
  if (rc) return rc == DV_ENOMEM ? rc : DV_ECORRUPT;
  const json_val *lang = json_obj_getz(d, "language"), *opts = json_obj_getz(d, "options"),
                 *lib = json_obj_getz(d, "lib"), *views = json_obj_getz(d, "views");
  if (!is_str(lang) || !views || views->type != JSON_ARRAY) return DV_ECORRUPT;
  vw_index *ix = arena_calloc(a, sizeof *ix);
  if (!ix) return DV_ENOMEM;
  dv_md5 m;
  dv_md5_init(&m);
  dv_md5_update(&m, def, len);
  dv_md5_final(&m, ix->sig);
  static const char hx[] = "0123456789abcdef";
  for (int i = 0; i < VW_SIG_LEN; i++) {
    ix->sig_hex[2 * i] = hx[ix->sig[i] >> 4];
    ix->sig_hex[2 * i + 1] = hx[ix->sig[i] & 15];
  }
  ix->sig_hex[2 * VW_SIG_LEN] = 0;
  ix->def = dupn(a, def, len);
  ix->def_len = len;
  ix->lang = dupn(a, lang->u.s, lang->len);
  ix->include_design = bool_opt(opts, "include_design");
  ix->local_seq = bool_opt(opts, "local_seq");
  if (lib && lib->type == JSON_OBJECT) {
    dv_buf b;
    buf_init(&b);
    if (json_write(&b, lib) || buf_error(&b)) {
      buf_free(&b);
      return DV_ENOMEM;
    }
    ix->lib_json = dupn(a, (char *)b.p, b.len);
    buf_free(&b);
    if (!ix->lib_json) return DV_ENOMEM;
  }
  size_t n = views->len;
  ix->views = arena_calloc(a, (n ? n : 1) * sizeof *ix->views);
  ix->slots = arena_calloc(a, (n ? n : 1) * sizeof *ix->slots);
  if (!ix->def || !ix->lang || !ix->views || !ix->slots) return DV_ENOMEM;
  for (size_t i = 0; i < n; i++) { /* the slots, and how many reduces each gets */
    const json_val *v = views->u.items[i];
    const json_val *name = json_arr_get(v, 0), *map = json_arr_get(v, 1), *red = json_arr_get(v, 2),
                   *raw = json_arr_get(v, 3);
    if (!is_str(name) || !is_str(map) || !raw || raw->type != JSON_BOOL) return DV_ECORRUPT;
    size_t s = 0;
    while (s < ix->n_slots && !(ix->slots[s].raw == raw->b && strlen(ix->slots[s].map) == map->len &&
                                !memcmp(ix->slots[s].map, map->u.s, map->len)))
      s++;
    if (s == ix->n_slots) {
      ix->slots[s].map = dupn(a, map->u.s, map->len);
      ix->slots[s].raw = raw->b;
      if (!ix->slots[s].map) return DV_ENOMEM;
      ix->n_slots++;
    }
    vw_view *w = &ix->views[ix->n_views++];
    w->name = dupn(a, name->u.s, name->len);
    if (!w->name) return DV_ENOMEM;
    w->slot = s;
    w->red = -1;
    if (is_str(red)) w->red = (int)ix->slots[s].n_red++;
  }
  for (size_t s = 0; s < ix->n_slots; s++) {
    vw_slot *sl = &ix->slots[s];
    size_t k = sl->n_red ? sl->n_red : 1;
    sl->reds = arena_calloc(a, k * sizeof *sl->reds);
    sl->kinds = arena_calloc(a, k * sizeof *sl->kinds);
    if (!sl->reds || !sl->kinds) return DV_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    const json_val *red = json_arr_get(views->u.items[i], 2);
    const vw_view *w = &ix->views[i];
    if (w->red < 0) continue;
    vw_slot *sl = &ix->slots[w->slot];
    sl->reds[w->red] = dupn(a, red->u.s, red->len);
    if (!sl->reds[w->red]) return DV_ENOMEM;
    sl->kinds[w->red] = vr_kind_of(red->u.s, red->len);
  }
  *out = ix;
  return 0;
}

int vw_from_ddoc(dv_arena *a, const json_val *ddoc, vw_index **out) {
  const json_val *id = json_obj_getz(ddoc, "_id"), *views = json_obj_getz(ddoc, "views"),
                 *lang = json_obj_getz(ddoc, "language"), *opts = json_obj_getz(ddoc, "options");
  if (!views || views->type != JSON_OBJECT) return DV_ENOT_FOUND;
  named *vs = malloc((views->len ? views->len : 1) * sizeof *vs);
  if (!vs) return DV_ENOMEM;
  size_t n = 0;
  const json_val *lib = NULL;
  for (size_t i = 0; i < views->len; i++) {
    const json_member *mb = &views->u.members[i];
    if (mb->klen == 3 && !memcmp(mb->key, "lib", 3)) {
      lib = mb->val;
      continue;
    }
    const json_val *v = mb->val;
    if (!v || v->type != JSON_OBJECT || !is_str(json_obj_getz(v, "map"))) continue;
    vs[n++] = (named){mb->key, mb->klen, v};
  }
  if (!n) {
    free(vs);
    return DV_ENOT_FOUND;
  }
  qsort(vs, n, sizeof *vs, by_name);
  int ddoc_raw = raw_of(opts);
  dv_buf b;
  buf_init(&b);
  json_w w;
  json_w_init(&w, &b);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "language");
  if (is_str(lang)) json_w_str(&w, lang->u.s, lang->len);
  else json_w_strz(&w, "javascript");
  json_w_keyz(&w, "options");
  if (opts && opts->type == JSON_OBJECT) json_w_val(&w, opts);
  else json_w_raw(&w, "{}", 2);
  json_w_keyz(&w, "lib");
  if (lib && lib->type == JSON_OBJECT) json_w_val(&w, lib);
  else json_w_null(&w);
  json_w_keyz(&w, "views");
  json_w_arr_begin(&w);
  for (size_t i = 0; i < n; i++) {
    const json_val *map = json_obj_getz(vs[i].v, "map"), *red = json_obj_getz(vs[i].v, "reduce");
    json_w_arr_begin(&w);
    json_w_str(&w, vs[i].name, vs[i].len);
    json_w_str(&w, map->u.s, map->len);
    if (is_str(red)) json_w_str(&w, red->u.s, red->len);
    else json_w_null(&w);
    json_w_bool(&w, ddoc_raw || raw_of(json_obj_getz(vs[i].v, "options")));
    json_w_arr_end(&w);
  }
  json_w_arr_end(&w);
  json_w_obj_end(&w);
  free(vs);
  int rc = json_w_finish(&w) || buf_error(&b) ? DV_ENOMEM : vw_from_def(a, (char *)b.p, b.len, out);
  buf_free(&b);
  if (rc) return rc;
  if (is_str(id) && !((*out)->ddoc_id = dupn(a, id->u.s, id->len))) return DV_ENOMEM;
  return 0;
}
