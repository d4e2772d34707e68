/* mqidx.c — the index definitions of Mango's POST/GET _index (mquery.h):
 * validating a creation request as CouchDB 3.4's mango_opts:
 * validate_idx_create, mango_idx:new and mango_idx_view:validate_new do,
 * the design document that results from adding the index (mango_idx:add,
 * mango_idx_view:add, set_ddoc_partitioned), and the "indexes" list of
 * GET _index (mango_idx:to_json).
 *
 * Not here: the query side (_find, _explain: mquery.c), reading and
 * writing the design document (api/mango.c does it through the normal
 * write path), and the index rows themselves (mindex.c).
 *
 * Generated names are CouchDB's own: mango_idx:gen_name is the SHA-1 of
 * the Erlang external term format (minor_version 1) of {RawIndex,
 * usort(Options)}, 40 lowercase hex; etf_* below encode exactly that (the
 * spec's Appendix A), so an index created here without a name gets the
 * name and design document id CouchDB 3.4 would give it.
 *
 * Error reasons quote values the way Erlang's io_lib ~w prints the decoded
 * JSON (mango__erl_w, the printer the selector errors use): <<97,98,99>>,
 * [1,2], {[{<<97>>,1}]}, 1.0e10.
 */
#include "index/mquery.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/mango.h"
#include "index/mango_int.h"

/* ---- error reasons -------------------------------------------------------------- */

/* rc with *why = pre + ~w of v (NULL: none) + post, in the arena (NULL when
 * out of memory: the code's own reason then). */
static int fail(dv_arena *a, const char **why, int rc, const char *pre, const json_val *v, const char *post) {
  dv_buf b;
  buf_init(&b);
  buf_puts(&b, pre);
  if (v) mango__erl_w(&b, v);
  if (post) buf_puts(&b, post);
  *why = buf_error(&b) ? NULL : arena_strndup(a, (const char *)b.p, b.len);
  buf_free(&b);
  return rc;
}

/* The same with a raw string in the middle (~s). */
static int fail_s(dv_arena *a, const char **why, int rc, const char *pre, const char *s, size_t n, const char *post) {
  dv_buf b;
  buf_init(&b);
  buf_puts(&b, pre);
  buf_append(&b, s, n);
  buf_puts(&b, post);
  *why = buf_error(&b) ? NULL : arena_strndup(a, (const char *)b.p, b.len);
  buf_free(&b);
  return rc;
}

/* ---- CouchDB's generated names (mango_idx:gen_name) ------------------------------- */

static void be32(dv_buf *b, uint32_t v) {
  uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  buf_append(b, x, 4);
}

static void etf_atom(dv_buf *b, const char *s) {
  size_t n = strlen(s);
  buf_putc(b, 100); /* ATOM_EXT */
  buf_putc(b, (uint8_t)(n >> 8));
  buf_putc(b, (uint8_t)n);
  buf_append(b, s, n);
}

static void etf_bin(dv_buf *b, const char *s, size_t n) {
  buf_putc(b, 109); /* BINARY_EXT */
  be32(b, (uint32_t)n);
  buf_append(b, s, n);
}

/* An integer from its decimal text: SMALL_INTEGER, INTEGER, or a bignum
 * (SMALL_BIG_EXT / LARGE_BIG_EXT, little-endian magnitude). */
static void etf_int(dv_buf *b, const char *s, size_t n) {
  int64_t v;
  if (!json_num_int64(s, n, &v) && v >= INT32_MIN && v <= INT32_MAX) {
    if (v >= 0 && v <= 255) {
      buf_putc(b, 97);
      buf_putc(b, (uint8_t)v);
    } else {
      buf_putc(b, 98);
      be32(b, (uint32_t)(int32_t)v);
    }
    return;
  }
  int neg = n && s[0] == '-';
  /* decimal digits → base 256 by repeated division */
  uint8_t dig[1024], mag[1024];
  size_t nd = 0, nm = 0;
  for (size_t i = neg; i < n && nd < sizeof dig; i++) dig[nd++] = (uint8_t)(s[i] - '0');
  size_t start = 0;
  while (start < nd && nm < sizeof mag) {
    unsigned rem = 0;
    for (size_t i = start; i < nd; i++) {
      unsigned cur = rem * 10 + dig[i];
      dig[i] = (uint8_t)(cur / 256);
      rem = cur % 256;
    }
    mag[nm++] = (uint8_t)rem;
    while (start < nd && !dig[start]) start++;
  }
  if (nm < 256) {
    buf_putc(b, 110);
    buf_putc(b, (uint8_t)nm);
  } else {
    buf_putc(b, 111);
    be32(b, (uint32_t)nm);
  }
  buf_putc(b, (uint8_t)neg);
  buf_append(b, mag, nm);
}

/* A decoded JSON value as jiffy gives it to Erlang: objects {[{K,V},…]},
 * arrays lists, strings binaries, true/false/null atoms. */
static void etf_val(dv_buf *b, const json_val *v) {
  switch (v->type) {
  case JSON_NULL:
    etf_atom(b, "null");
    break;
  case JSON_BOOL:
    etf_atom(b, v->b ? "true" : "false");
    break;
  case JSON_STRING:
    etf_bin(b, v->u.s, v->len);
    break;
  case JSON_NUMBER:
    if (v->num == JSON_NUM_DOUBLE) {
      double d = 0;
      if (json_num_double(v->u.s, v->len, &d)) d = 0;
      uint64_t u;
      memcpy(&u, &d, 8);
      buf_putc(b, 70); /* NEW_FLOAT_EXT */
      be32(b, (uint32_t)(u >> 32));
      be32(b, (uint32_t)u);
    } else {
      etf_int(b, v->u.s, v->len);
    }
    break;
  case JSON_ARRAY:
    if (v->len) {
      buf_putc(b, 108); /* LIST_EXT */
      be32(b, (uint32_t)v->len);
      for (size_t i = 0; i < v->len; i++) etf_val(b, v->u.items[i]);
    }
    buf_putc(b, 106); /* NIL_EXT */
    break;
  default:
    buf_putc(b, 104); /* SMALL_TUPLE_EXT {Proplist} */
    buf_putc(b, 1);
    if (v->len) {
      buf_putc(b, 108);
      be32(b, (uint32_t)v->len);
      for (size_t i = 0; i < v->len; i++) {
        buf_putc(b, 104);
        buf_putc(b, 2);
        etf_bin(b, v->u.members[i].key, v->u.members[i].klen);
        etf_val(b, v->u.members[i].val);
      }
    }
    buf_putc(b, 106);
  }
}

/* {Key, V}: V an atom (s) or a JSON value (v). */
static void etf_opt(dv_buf *b, const char *key, const char *atom, const json_val *v) {
  buf_putc(b, 104);
  buf_putc(b, 2);
  etf_atom(b, key);
  if (v) etf_val(b, v);
  else etf_atom(b, atom ? atom : "undefined");
}

/* mango_idx:gen_name(RawIndex, Opts): sha1(term_to_binary({Idx,
 * lists:usort(Opts)}, [{minor_version,1}])) in hex. The options are
 * CouchDB's six, in term order: ddoc, def, name, partitioned, type, w. */
static int gen_name(const json_val *idx, const json_val *ddoc, const json_val *name, const json_val *part,
                    const json_val *type, const json_val *w, char out[41]) {
  dv_buf b;
  buf_init(&b);
  buf_putc(&b, 131);
  buf_putc(&b, 104);
  buf_putc(&b, 2);
  etf_val(&b, idx);
  buf_putc(&b, 108);
  be32(&b, 6);
  etf_opt(&b, "ddoc", "auto_name", ddoc);
  etf_opt(&b, "def", NULL, idx);
  etf_opt(&b, "name", "auto_name", name);
  etf_opt(&b, "partitioned", "db_default", part);
  buf_putc(&b, 104);
  buf_putc(&b, 2);
  etf_atom(&b, "type");
  if (type) etf_val(&b, type);
  else etf_bin(&b, "json", 4);
  buf_putc(&b, 104);
  buf_putc(&b, 2);
  etf_atom(&b, "w");
  if (w) etf_val(&b, w);
  else etf_int(&b, "2", 1);
  buf_putc(&b, 106);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdn = 0;
  int rc = buf_error(&b) || !EVP_Digest(b.p, b.len, md, &mdn, EVP_sha1(), NULL) || mdn != 20 ? DV_ENOMEM : 0;
  buf_free(&b);
  if (rc) return rc;
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 20; i++) out[2 * i] = hex[md[i] >> 4], out[2 * i + 1] = hex[md[i] & 15];
  out[40] = 0;
  return 0;
}

/* ---- POST _index: the request ----------------------------------------------------- */

static int is_str(const json_val *v, const char *s) {
  return v && v->type == JSON_STRING && v->len == strlen(s) && !memcmp(v->u.s, s, v->len);
}

/* An integer > 0 (5.0 is not one). */
static int pos_int(const json_val *v) {
  if (v->type != JSON_NUMBER || v->num == JSON_NUM_DOUBLE || v->num == JSON_NUM_TEXT) return 0;
  if (v->u.s[0] == '-') return 0;
  for (size_t i = 0; i < v->len; i++)
    if (v->u.s[i] != '0') return 1;
  return 0;
}

/* The first member of obj whose key is none of keys[0..n): invalid_key. */
static int no_other_keys(dv_arena *a, const json_val *obj, const char *const *keys, size_t n, const char **why) {
  for (size_t i = 0; i < obj->len; i++) {
    const json_member *m = &obj->u.members[i];
    size_t k = 0;
    while (k < n && !(strlen(keys[k]) == m->klen && !memcmp(keys[k], m->key, m->klen))) k++;
    if (k == n) return fail_s(a, why, DV_EMQ_INVALID_KEY, "Invalid key ", m->key, m->klen, " for this request.");
  }
  return 0;
}

/* mango_sort:new on "fields": {"f": "asc"|"desc", …} in order, one direction. */
static int sort_fields(dv_arena *a, const json_val *fields, json_val **out, const char **why) {
  if (fields->type != JSON_ARRAY)
    return fail(a, why, DV_EMQ_SORT_JSON, "Sort must be an array of sort specs, not: ", fields, NULL);
  json_val *o = json_new_object(a);
  if (!o) return DV_ENOMEM;
  int dir = -1; /* 0 asc, 1 desc */
  for (size_t i = 0; i < fields->len; i++) {
    const json_val *f = fields->u.items[i];
    const char *name = NULL;
    size_t nl = 0;
    int d = -1;
    if (f->type == JSON_STRING && f->len) {
      name = f->u.s, nl = f->len, d = 0;
    } else if (f->type == JSON_OBJECT && f->len == 1) {
      const json_val *v = f->u.members[0].val;
      if (is_str(v, "asc")) d = 0;
      else if (is_str(v, "desc")) d = 1;
      name = f->u.members[0].key, nl = f->u.members[0].klen;
    }
    if (d < 0) return fail(a, why, DV_EMQ_SORT_FIELD, "Invalid sort field: ", f, NULL);
    if (dir >= 0 && d != dir) {
      *why = "Sorts currently only support a single direction for all fields.";
      return DV_EMQ_MIXED_SORT;
    }
    dir = d;
    if (json_obj_set(a, o, name, nl, json_new_stringz(a, d ? "desc" : "asc"))) return DV_ENOMEM;
  }
  *out = o;
  return 0;
}

int mq_index_parse(dv_arena *a, const json_val *body, mq_index_req *out, const char **why) {
  static const char *const top[] = {"index", "type", "name", "ddoc", "w", "partitioned"};
  static const char *const inner[] = {"fields", "partial_filter_selector"};
  *why = NULL;
  if (!body || body->type != JSON_OBJECT) {
    *why = "Request body must be a JSON object";
    return DV_EBAD_REQUEST;
  }
  /* mango_opts:validate_idx_create, in its order */
  const json_val *idx = json_obj_getz(body, "index"), *type = json_obj_getz(body, "type");
  const json_val *name = json_obj_getz(body, "name"), *ddoc = json_obj_getz(body, "ddoc");
  const json_val *w = json_obj_getz(body, "w"), *part = json_obj_getz(body, "partitioned");
  if (!idx) {
    *why = "Missing required key: index";
    return DV_EMQ_MISSING_KEY;
  }
  const json_val *strs[] = {type, name, ddoc};
  for (int i = 0; i < 3; i++)
    if (strs[i] && strs[i]->type != JSON_STRING) return fail(a, why, DV_EMQ_STRING, "Invalid string: ", strs[i], NULL);
  if (w && !pos_int(w)) return fail(a, why, DV_EMQ_POS_INTEGER, "", w, " is not an integer greater than zero");
  if (part && part->type != JSON_BOOL)
    return fail(a, why, DV_EMQ_PARTITIONED_VALUE, "Invalid value for partitioned: ", part, NULL);
  int rc = no_other_keys(a, body, top, sizeof top / sizeof *top, why);
  if (rc) return rc;

  /* mango_idx:new: type, name, ddoc id */
  if (type && !is_str(type, "json")) {
    if (is_str(type, "text") || is_str(type, "nouveau")) {
      *why = is_str(type, "text") ? "text" : "nouveau";
      return DV_EMQ_SERVICE;
    }
    return fail_s(a, why, DV_EMQ_INDEX, "Invalid type for index: ", type->u.s, type->len, "");
  }
  char hash[41] = "";
  if ((!name || !ddoc) && (rc = gen_name(idx, ddoc, name, part, type, w, hash))) return rc;
  const char *nm = name ? arena_strndup(a, name->u.s, name->len) : arena_strndup(a, hash, 40);
  char *dd;
  if (ddoc && ddoc->len >= 8 && !memcmp(ddoc->u.s, "_design/", 8)) {
    dd = arena_strndup(a, ddoc->u.s, ddoc->len);
  } else {
    const char *s = ddoc ? ddoc->u.s : hash;
    size_t n = ddoc ? ddoc->len : 40;
    dd = arena_alloc(a, 8 + n + 1);
    if (dd) {
      memcpy(dd, "_design/", 8);
      memcpy(dd + 8, s, n);
      dd[8 + n] = 0;
    }
  }
  if (!nm || !dd) return DV_ENOMEM;
  if (!strcmp(dd, "_design/")) {
    *why = "Illegal document id `_design/`";
    return DV_EBAD_DOCID;
  }

  /* mango_idx_view:validate_new */
  if (idx->type != JSON_OBJECT) return fail(a, why, DV_EMQ_INDEX, "JSON indexes must be an object, not: ", idx, NULL);
  const json_val *fields = json_obj_getz(idx, "fields"), *pfs = json_obj_getz(idx, "partial_filter_selector");
  json_val *norm = NULL; /* pfs, normalised */
  if (!fields) {
    *why = "Missing required key: fields";
    return DV_EMQ_MISSING_KEY;
  }
  json_val *fo = NULL;
  if ((rc = sort_fields(a, fields, &fo, why))) return rc;
  if (pfs) {
    if (pfs->type != JSON_OBJECT)
      return fail(a, why, DV_EMANGO_SELECTOR_JSON, "Selector must be a JSON object, not: ", pfs, NULL);
    mango_sel *sel;
    if ((rc = mango_parse(a, pfs, &sel, why))) return rc;
    if (!(norm = mango_to_json(a, sel))) return DV_ENOMEM; /* stored normalised, as CouchDB does */
  }
  if ((rc = no_other_keys(a, idx, inner, 2, why))) return rc;

  /* views.NAME: {"map": {"fields", "partial_filter_selector"}, "reduce", "options": {"def"}} */
  json_val *map = json_new_object(a), *view = json_new_object(a), *opts = json_new_object(a);
  json_val *p = norm ? norm : json_new_object(a);
  if (!map || !view || !opts || !p || json_obj_setz(a, map, "fields", fo) ||
      json_obj_setz(a, map, "partial_filter_selector", p) || json_obj_setz(a, view, "map", map) ||
      json_obj_setz(a, view, "reduce", json_new_stringz(a, "_count")) ||
      json_obj_setz(a, opts, "def", json_dup(a, idx)) || json_obj_setz(a, view, "options", opts))
    return DV_ENOMEM;
  out->ddoc = dd;
  out->name = nm;
  out->view = view;
  out->partitioned = part ? part->b : -1;
  return 0;
}

/* ---- POST _index: the design document --------------------------------------------- */

/* Equal JSON values, object members in any order: the store keeps a
 * document's leaves by path, so a stored design document comes back with
 * its members sorted, and CouchDB's term-identical test becomes this. */
static int same_json(const json_val *x, const json_val *y) {
  if (x->type != y->type) return 0;
  switch (x->type) {
  case JSON_NULL:
    return 1;
  case JSON_BOOL:
    return x->b == y->b;
  case JSON_NUMBER:
    return !mango_cmp(x, y) && x->num == y->num;
  case JSON_STRING:
    return x->len == y->len && !memcmp(x->u.s, y->u.s, x->len);
  case JSON_ARRAY:
    if (x->len != y->len) return 0;
    for (size_t i = 0; i < x->len; i++)
      if (!same_json(x->u.items[i], y->u.items[i])) return 0;
    return 1;
  default:
    if (x->len != y->len) return 0;
    for (size_t i = 0; i < x->len; i++) {
      const json_val *v = json_obj_get(y, x->u.members[i].key, x->u.members[i].klen);
      if (!v || !same_json(x->u.members[i].val, v)) return 0;
    }
    return 1;
  }
}

int mq_index_add(dv_arena *a, const json_val *old, const mq_index_req *q, json_val **out, int *exists,
                 const char **why) {
  *why = NULL;
  json_val *doc;
  if (old) {
    const json_val *lang = json_obj_getz(old, "language");
    if (!is_str(lang, "query")) {
      if (!lang) {
        *why = "Existing design doc has an invalid language: false";
        return DV_EMQ_DDOC_LANG;
      }
      return fail(a, why, DV_EMQ_DDOC_LANG, "Existing design doc has an invalid language: {<<108,97,110,103,117,97,103,101>>,", lang,
                  "}");
    }
    if (!(doc = json_dup(a, old))) return DV_ENOMEM;
  } else {
    doc = json_new_object(a);
    if (!doc || json_obj_setz(a, doc, "_id", json_new_stringz(a, q->ddoc)) ||
        json_obj_setz(a, doc, "language", json_new_stringz(a, "query")))
      return DV_ENOMEM;
  }
  /* mango_idx_view:add: views created at the end if absent (or not an
   * object), the view replaced in place or appended */
  json_val *views = json_obj_getz(doc, "views");
  if (!views || views->type != JSON_OBJECT) {
    if (!(views = json_new_object(a)) || json_obj_setz(a, doc, "views", views)) return DV_ENOMEM;
  }
  if (json_obj_setz(a, views, q->name, json_dup(a, q->view))) return DV_ENOMEM;
  /* set_ddoc_partitioned */
  const json_val *dopts = json_obj_getz(doc, "options");
  const json_val *op = dopts && dopts->type == JSON_OBJECT ? json_obj_getz(dopts, "partitioned") : NULL;
  int oldp = op && op->type == JSON_BOOL ? op->b : op ? -2 : -1; /* -2: a value that is no boolean */
  if (q->partitioned != oldp) {
    if (old) {
      return fail_s(a, why, DV_EMQ_PARTITIONED_OPTION,
                    "Requested partitioned option does not match existing value on design document ", q->ddoc,
                    strlen(q->ddoc), "");
    }
    if (q->partitioned >= 0) {
      /* divan has no partitioned databases: CouchDB's ddoc validation
       * refuses true there at the save; false is written as CouchDB does */
      if (q->partitioned) {
        *why = "partitioned option cannot be true in a non-partitioned database.";
        return DV_EMQ_DESIGN_DOC;
      }
      json_val *o = json_new_object(a);
      if (!o || json_obj_setz(a, o, "partitioned", json_new_bool(a, 0)) || json_obj_setz(a, doc, "options", o))
        return DV_ENOMEM;
    }
  }
  *exists = old && same_json(old, doc);
  *out = doc;
  return 0;
}

/* ---- GET _index ---------------------------------------------------------------------- */

/* {"ddoc","name","type":"json","partitioned","def":{"fields":[{f:dir}…][,"partial_filter_selector"]}} */
static json_val *index_json(dv_arena *a, const mi_def *d) {
  json_val *o = json_new_object(a), *def = json_new_object(a), *fs = json_new_array(a);
  if (!o || !def || !fs) return NULL;
  for (size_t i = 0; i < d->n_fields; i++) {
    json_val *f = json_new_object(a);
    if (!f || json_obj_set(a, f, d->fields[i], d->field_lens[i], json_new_stringz(a, d->desc[i] ? "desc" : "asc")) ||
        json_arr_push(a, fs, f))
      return NULL;
  }
  if (json_obj_setz(a, def, "fields", fs)) return NULL;
  if (d->partial && d->partial->type == JSON_OBJECT && d->partial->len &&
      json_obj_setz(a, def, "partial_filter_selector", json_dup(a, d->partial)))
    return NULL;
  /* partitioned: the ddoc's options.partitioned, else the database's;
   * divan's databases are never partitioned */
  if (json_obj_setz(a, o, "ddoc", json_new_stringz(a, d->ddoc)) ||
      json_obj_setz(a, o, "name", json_new_stringz(a, d->name)) ||
      json_obj_setz(a, o, "type", json_new_stringz(a, "json")) ||
      json_obj_setz(a, o, "partitioned", json_new_bool(a, 0)) || json_obj_setz(a, o, "def", def))
    return NULL;
  return o;
}

json_val *mq_index_list_json(dv_arena *a, const mi_def *d, size_t n) {
  json_val *arr = json_new_array(a), *all = json_new_object(a), *def = json_new_object(a);
  json_val *fs = json_new_array(a), *id = json_new_object(a);
  if (!arr || !all || !def || !fs || !id || json_obj_setz(a, id, "_id", json_new_stringz(a, "asc")) ||
      json_arr_push(a, fs, id) || json_obj_setz(a, def, "fields", fs) ||
      json_obj_setz(a, all, "ddoc", json_new_null(a)) ||
      json_obj_setz(a, all, "name", json_new_stringz(a, "_all_docs")) ||
      json_obj_setz(a, all, "type", json_new_stringz(a, "special")) || json_obj_setz(a, all, "def", def) ||
      json_arr_push(a, arr, all))
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (json_arr_push(a, arr, index_json(a, &d[i]))) return NULL;
  return arr;
}

/* ---- POST _index/_bulk_delete ---------------------------------------------------------- */

/* mango_opts:validate_use_index: 3.4 splits a string on every "/". */
static int use_index_ok(const json_val *v) {
  if (v->type == JSON_NULL) return 1;
  if (v->type == JSON_ARRAY) {
    for (size_t i = 0; i < v->len; i++)
      if (v->u.items[i]->type != JSON_STRING) return 0;
    return v->len <= 2;
  }
  if (v->type != JSON_STRING) return 0;
  size_t parts = 1, first = v->len;
  for (size_t i = 0; i < v->len; i++)
    if (v->u.s[i] == '/') {
      if (parts == 1) first = i;
      parts++;
    }
  if (parts <= 2) return 1;
  return parts == 3 && first == 7 && !memcmp(v->u.s, "_design", 7);
}

int mq_bulk_delete_parse(dv_arena *a, const json_val *body, const json_val **ids, const char **why) {
  static const char *const keys[] = {"docids", "w"};
  *why = NULL;
  const json_val *d = json_obj_getz(body, "docids"), *w = json_obj_getz(body, "w");
  if (!d) {
    *why = "Missing required key: docids";
    return DV_EMQ_MISSING_KEY;
  }
  if (d->type != JSON_ARRAY)
    return fail(a, why, DV_EMQ_BULK_DOCS, "Bulk Delete requires an array of non-null docids. Docids: ", d, NULL);
  for (size_t i = 0; i < d->len; i++)
    if (!use_index_ok(d->u.items[i])) return fail(a, why, DV_EMQ_INDEX_NAME, "Invalid index name: ", d->u.items[i], NULL);
  if (w && !pos_int(w)) return fail(a, why, DV_EMQ_POS_INTEGER, "", w, " is not an integer greater than zero");
  int rc = no_other_keys(a, body, keys, 2, why);
  if (rc) return rc;
  *ids = d;
  return 0;
}
