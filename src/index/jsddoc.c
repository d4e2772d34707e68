/* jsddoc.c — validate_doc_update and the design-document field checks on
 * the write path. The data flow is in jsddoc.h; this file holds the hook
 * table part (load/unload), the validator, the mapping of a query server's
 * answer onto store's refusal codes, and couch_mrview's field checks. It
 * runs no JavaScript itself (qs.h does) and decides nothing about who may
 * write a design document (api/).
 */
#include "index/jsddoc.h"

#include <stdio.h>
#include <string.h>

#include "index/qs.h"
#include "index/vreduce.h"
#include "util/alloc.h"
#include "util/buf.h"

/* One validator: a design document with a string validate_doc_update. */
typedef struct jd_fn {
  qs_ddoc dd;        /* what qs_ddoc_call needs (strings in the hook's arena) */
  int old;           /* 1: its function may read oldDoc */
} jd_fn;

/* A database's validators, shared read-only by every writer of the table. */
typedef struct jd_hook {
  dv_arena a;        /* everything below */
  char *db;          /* the database's name (userCtx.db), NUL-terminated */
  size_t db_len;
  jd_fn *f;          /* in _id order */
  size_t n, cap;
  int any_old;       /* some f[i].old: read oldDoc for the call */
  json_val *sec;     /* the database's _security as GET /db/_security shows
                        it, read with the design documents: secObj when the
                        writer's context has none (a server admin's writes
                        skip the member check that reads it) */
} jd_hook;

static const char VDU_PATH[] = "[\"validate_doc_update\"]";

/* ---- oldDoc: does the function look at it? ---------------------------------------- */

static const char *skip_ws(const char *p, const char *e) {
  for (;;) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    if (e - p >= 2 && p[0] == '/' && p[1] == '/') {
      while (p < e && *p != '\n') p++;
    } else if (e - p >= 2 && p[0] == '/' && p[1] == '*') {
      const char *q = p + 2;
      while (e - q >= 2 && !(q[0] == '*' && q[1] == '/')) q++;
      p = e - q >= 2 ? q + 2 : e;
    } else {
      return p;
    }
  }
}

static int ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         (unsigned char)c >= 0x80;
}

/* Parameters of the list that starts at p ('('): commas at depth 1, plus
 * one when anything is between the parentheses; -1 when unbalanced. A
 * string or template inside a default value may hide a bracket: then the
 * count may be wrong upward only when a comma hides, which errs safe. */
static int count_params(const char *p, const char *e, const char **after) {
  int depth = 0, commas = 0, any = 0;
  for (; p < e; p++) {
    char c = *p;
    if (c == '(' || c == '[' || c == '{') {
      if (depth++) any = 1;
      continue;
    }
    if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) {
        *after = p + 1;
        return any ? commas + 1 : 0;
      }
      continue;
    }
    if (depth == 1 && c == ',') commas++;
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') any = 1;
  }
  return -1;
}

int jsddoc_wants_old(const char *src, size_t len) {
  const char *e = src + len;
  /* `arguments` anywhere (arguments[1] reads oldDoc without naming it) */
  for (const char *q = src; q + 9 <= e; q++)
    if (!memcmp(q, "arguments", 9) && (q == src || !ident_char(q[-1])) && (q + 9 == e || !ident_char(q[9])))
      return 1;
  const char *p = skip_ws(src, e);
  if (p < e && *p == '(') { /* a parenthesized expression, or an arrow's parameters */
    const char *q = skip_ws(p + 1, e);
    if (e - q >= 8 && !memcmp(q, "function", 8) && !ident_char(q[8])) p = q;
  }
  int n;
  const char *after;
  if (e - p >= 8 && !memcmp(p, "function", 8) && !ident_char(p[8])) {
    p = skip_ws(p + 8, e);
    if (p < e && *p == '*') p = skip_ws(p + 1, e);
    while (p < e && ident_char(*p)) p++; /* its name */
    p = skip_ws(p, e);
    if (p >= e || *p != '(') return 1;
    n = count_params(p, e, &after);
  } else if (p < e && *p == '(') {
    n = count_params(p, e, &after);
    if (n >= 0) {
      after = skip_ws(after, e);
      if (e - after < 2 || after[0] != '=' || after[1] != '>') return 1;
    }
  } else if (p < e && ident_char(*p)) { /* x => … */
    while (p < e && ident_char(*p)) p++;
    p = skip_ws(p, e);
    return e - p >= 2 && p[0] == '=' && p[1] == '>' ? 0 : 1;
  } else {
    return 1;
  }
  return n < 0 || n >= 2;
}

/* ---- loading a database's validators ------------------------------------------------ */

struct load_arg {
  jd_hook *h;
  int rc;
};

static int add_ddoc(jd_hook *h, const store_doc_row *row) {
  const json_val *d = row->doc;
  const json_val *v = json_obj_getz(d, "validate_doc_update");
  if (!v || v->type != JSON_STRING) return 0;
  const json_val *lang = json_obj_getz(d, "language");
  const json_val *rev = json_obj_getz(d, "_rev");
  if (h->n == h->cap) {
    size_t nc = h->cap ? 2 * h->cap : 4;
    jd_fn *nf = arena_alloc(&h->a, nc * sizeof *nf);
    if (!nf) return DV_ENOMEM;
    if (h->n) memcpy(nf, h->f, h->n * sizeof *nf);
    h->f = nf;
    h->cap = nc;
  }
  dv_buf b;
  buf_init(&b);
  int rc = json_write(&b, d);
  jd_fn *f = &h->f[h->n];
  memset(f, 0, sizeof *f);
  f->dd.id = arena_strndup(&h->a, row->id, row->id_len);
  f->dd.id_len = row->id_len;
  f->dd.rev = rev && rev->type == JSON_STRING ? arena_strndup(&h->a, rev->u.s, rev->len) : "0-";
  f->dd.lang = lang && lang->type == JSON_STRING ? arena_strndup(&h->a, lang->u.s, lang->len) : NULL;
  f->dd.json = rc ? NULL : arena_strndup(&h->a, (const char *)b.p, b.len);
  f->dd.json_len = b.len;
  buf_free(&b);
  if (!rc && (!f->dd.id || !f->dd.rev || (lang && lang->type == JSON_STRING && !f->dd.lang) || !f->dd.json))
    rc = DV_ENOMEM;
  if (rc) return rc;
  f->old = jsddoc_wants_old(v->u.s, v->len);
  h->any_old |= f->old;
  h->n++;
  return 0;
}

static int load_row(void *arg, const store_doc_row *row) {
  struct load_arg *l = arg;
  if (row->deleted || row->missing || !row->doc) return 0;
  l->rc = add_ddoc(l->h, row);
  return l->rc;
}

static int jd_validate(void *ctx, const json_val *nd, store_old *old, const store_user *u, const json_val *sec,
                       dv_arena *a, const char **why);

/* The _security object: stored, or CouchDB 3.4's default for a database
 * that has none ([couchdb] default_security = admin_only; auth/ applies
 * the same default when it reads it for a request). */
static int load_sec(store_db *db, jd_hook *h) {
  int rc = store_db_get_security(db, &h->a, &h->sec);
  if (rc || h->sec->type != JSON_OBJECT || h->sec->len) return rc;
  static const char admin_only[] = "{\"members\":{\"roles\":[\"_admin\"]},\"admins\":{\"roles\":[\"_admin\"]}}";
  return json_parse(&h->a, admin_only, sizeof admin_only - 1, NULL, &h->sec, NULL);
}

int jsddoc_hooks_load(store *s, const char *name, size_t len, store_hooks *out) {
  char nm[STORE_MAX_DBNAME + 1];
  if (len > STORE_MAX_DBNAME) return 0;
  memcpy(nm, name, len);
  nm[len] = 0;
  if (out->n_validate >= STORE_MAX_VALIDATORS) return DV_EINTERNAL;
  store_db *db;
  int rc = store_db_open(s, nm, &db);
  if (rc) return rc == DV_ENO_DB ? 0 : rc;
  jd_hook *h = dv_calloc(1, sizeof *h);
  if (!h) {
    store_db_close(db);
    return DV_ENOMEM;
  }
  arena_init(&h->a, 0);
  h->db = arena_strndup(&h->a, name, len);
  h->db_len = len;
  struct load_arg l = {.h = h};
  store_range r;
  store_range_init(&r);
  rc = h->db ? store_all_docs(db, STORE_DESIGN, &r, 1, 0, load_row, &l) : DV_ENOMEM;
  if (l.rc) rc = l.rc;
  if (!rc && h->n) rc = load_sec(db, h);
  store_db_close(db);
  if (rc) {
    arena_free(&h->a);
    dv_free(h);
    return rc == DV_ENO_DB ? 0 : rc;
  }
  out->validate[out->n_validate].fn = jd_validate;
  out->validate[out->n_validate].ctx = h;
  out->validate[out->n_validate].slow = h->n > 0; /* design-document checks alone never wait */
  out->n_validate++;
  return 0;
}

void jsddoc_hooks_unload(store_hooks *hk) {
  for (size_t i = 0; i < hk->n_validate; i++) {
    if (hk->validate[i].fn != jd_validate || !hk->validate[i].ctx) continue;
    jd_hook *h = hk->validate[i].ctx;
    arena_free(&h->a);
    dv_free(h);
    hk->validate[i].ctx = NULL;
  }
}

/* ---- the validator --------------------------------------------------------------------- */

/* A value as a reason: strings as they are, anything else as its JSON. */
static const char *reason_of(const json_val *v, dv_arena *a) {
  if (!v) return NULL;
  if (v->type == JSON_STRING) return arena_strndup(a, v->u.s, v->len);
  dv_buf b;
  buf_init(&b);
  const char *s = json_write(&b, v) ? NULL : arena_strndup(a, (const char *)b.p, b.len);
  buf_free(&b);
  return s;
}

/* A validator's answer (couch_query_servers:validate_doc_update). */
static int map_answer(const json_val *r, dv_arena *a, const char **why) {
  if ((r->type == JSON_NUMBER && r->len == 1 && r->u.s[0] == '1') || (r->type == JSON_BOOL && r->b)) return 0;
  if (r->type == JSON_OBJECT && r->len == 1) {
    const json_member *m = &r->u.members[0];
    *why = reason_of(m->val, a);
    if (m->klen == 9 && !memcmp(m->key, "forbidden", 9)) return DV_EFORBIDDEN;
    if (m->klen == 12 && !memcmp(m->key, "unauthorized", 12)) return DV_EUNAUTHORIZED;
    return DV_EVDU_UNKNOWN;
  }
  *why = reason_of(r, a); /* a string: unknown_error; anything else crashed CouchDB's case: 500 too */
  return DV_EVDU_UNKNOWN;
}

/* A failed call (qs_err): CouchDB answers with the error's own name. */
static int map_error(const qs_err *e, dv_arena *a, const char **why) {
  static const struct {
    const char *name;
    int rc;
  } names[] = {
      {"compilation_error", DV_EQS_COMPILE}, {"os_process_error", DV_EQS_PROCESS},
      {"unknown_query_language", DV_EQS_LANG}, {"render_error", DV_EQS_RENDER},
      {"TypeError", DV_EVDU_TYPEERROR}, {"Error", DV_EVDU_ERROR},
      {"ReferenceError", DV_EVDU_REFERENCEERROR}, {"SyntaxError", DV_EVDU_SYNTAXERROR},
      {"RangeError", DV_EVDU_RANGEERROR}, {"InternalError", DV_EVDU_INTERNALERROR},
      {"EvalError", DV_EVDU_EVALERROR}, {"URIError", DV_EVDU_URIERROR},
  };
  const char *name = e->error ? e->error : "", *reason = e->reason ? e->reason : "";
  *why = reason;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(name, names[i].name)) return names[i].rc;
  /* a thrown value that is no Error comes back as the answer (the
   * prelude's runValidate, as validate.js), so an error here is the
   * function's own ["error", name, reason] or {error, reason} */
  return DV_EVDU_UNKNOWN;
}

/* couch_util:json_user_ctx: {"db", "name", "roles"}. */
static json_val *user_ctx(const jd_hook *h, const store_user *u, dv_arena *a) {
  json_val *o = json_new_object(a), *roles = json_new_array(a);
  if (!o || !roles) return NULL;
  for (size_t i = 0; i < u->n_roles; i++)
    if (json_arr_push(a, roles, json_new_stringz(a, u->roles[i]))) return NULL;
  if (json_obj_setz(a, o, "db", json_new_string(a, h->db, h->db_len)) ||
      json_obj_setz(a, o, "name", u->name ? json_new_stringz(a, u->name) : json_new_null(a)) ||
      json_obj_setz(a, o, "roles", roles))
    return NULL;
  return o;
}

static int jd_validate(void *ctx, const json_val *nd, store_old *old, const store_user *u, const json_val *sec,
                       dv_arena *a, const char **why) {
  jd_hook *h = ctx;
  const json_val *id = json_obj_getz(nd, "_id");
  if (id && id->type == JSON_STRING && id->len >= 8 && !memcmp(id->u.s, "_design/", 8)) {
    const json_val *del = json_obj_getz(nd, "_deleted");
    if (del && del->type == JSON_BOOL && del->b) return 0;
    return jsddoc_check_ddoc(nd, a, why);
  }
  if (!h->n) return 0;
  json_val *od = NULL;
  int rc;
  if (h->any_old && (rc = store_old_doc(old, &od))) return rc;
  json_val *args = json_new_array(a);
  if (!args || json_arr_push(a, args, (json_val *)nd) || json_arr_push(a, args, od ? od : json_new_null(a)) ||
      json_arr_push(a, args, user_ctx(h, u, a)) || json_arr_push(a, args, sec ? (json_val *)sec : h->sec ? h->sec : json_new_object(a)))
    return DV_ENOMEM;
  dv_buf b;
  buf_init(&b);
  rc = json_write(&b, args);
  for (size_t i = 0; !rc && i < h->n; i++) {
    json_val *r;
    qs_err e = {0};
    rc = qs_ddoc_call(&h->f[i].dd, VDU_PATH, sizeof VDU_PATH - 1, (const char *)b.p, b.len, a, &r, &e);
    if (rc == DV_EQS) rc = map_error(&e, a, why);
    else if (!rc) rc = map_answer(r, a, why);
  }
  buf_free(&b);
  return rc;
}

/* ---- design-document fields (couch_mrview:validate_ddoc_fields) ---------------------- */

enum { T_STRING = 1, T_ARRAY = 2, T_OBJECT = 4, T_BOOLEAN = 8 };

static int has_type(const json_val *v, int types) {
  return ((types & T_STRING) && v->type == JSON_STRING) || ((types & T_ARRAY) && v->type == JSON_ARRAY) ||
         ((types & T_OBJECT) && v->type == JSON_OBJECT) || ((types & T_BOOLEAN) && v->type == JSON_BOOL);
}

/* The types as couch_mrview's format_type joins them, in its lists' order. */
static const char *type_name(int types) {
  switch (types) {
  case T_OBJECT | T_STRING: return "object or string";
  case T_STRING | T_ARRAY: return "string or array";
  case T_OBJECT: return "object";
  case T_BOOLEAN: return "boolean";
  case T_ARRAY: return "array";
  default: return "string";
  }
}

static int bad_field(dv_arena *a, const char **why, const char *path, int types) {
  dv_buf b;
  buf_init(&b);
  buf_printf(&b, "`%s` field must have %s type", path, type_name(types));
  *why = buf_error(&b) ? NULL : arena_strndup(a, (const char *)b.p, b.len);
  buf_free(&b);
  return *why ? DV_EMQ_DESIGN_DOC : DV_ENOMEM;
}

/* path's name joined with '.', as couch_mrview's join. */
static const char *dotted(dv_arena *a, const char *p1, const char *k, size_t klen, const char *p3) {
  size_t n1 = strlen(p1), n3 = p3 ? strlen(p3) : 0;
  char *s = arena_alloc(a, n1 + 1 + klen + 1 + n3 + 1);
  if (!s) return NULL;
  memcpy(s, p1, n1);
  s[n1] = '.';
  memcpy(s + n1 + 1, k, klen);
  size_t n = n1 + 1 + klen;
  if (p3) {
    s[n++] = '.';
    memcpy(s + n, p3, n3);
    n += n3;
  }
  s[n] = 0;
  return s;
}

/* [{Top, object}, {any, types}]: Top an object (when present) whose every
 * member has one of types. */
static int check_obj_of(const json_val *doc, const char *top, int types, dv_arena *a, const char **why) {
  const json_val *v = json_obj_getz(doc, top);
  if (!v) return 0;
  if (v->type != JSON_OBJECT) return bad_field(a, why, top, T_OBJECT);
  for (size_t i = 0; i < v->len; i++)
    if (!has_type(v->u.members[i].val, types)) {
      const char *p = dotted(a, top, v->u.members[i].key, v->u.members[i].klen, NULL);
      return p ? bad_field(a, why, p, types) : DV_ENOMEM;
    }
  return 0;
}

static int check_one(const json_val *doc, const char *field, int types, dv_arena *a, const char **why) {
  const json_val *v = json_obj_getz(doc, field);
  return v && !has_type(v, types) ? bad_field(a, why, field, types) : 0;
}


/* Compile one function in the session: 0, or DV_EVIEW_COMPILE with
 * CouchDB's reason. */
static int try_compile(qs_proc *p, const char *kind, const json_member *view, const json_val *src, dv_arena *a,
                       const char **why) {
  dv_buf line, out;
  buf_init(&line);
  buf_init(&out);
  json_w w;
  json_w_init(&w, &line);
  json_w_arr_begin(&w);
  json_w_strz(&w, "add_fun");
  json_w_str(&w, src->u.s, src->len);
  json_w_arr_end(&w);
  qs_err e = {0};
  int rc = json_w_finish(&w) ? DV_ENOMEM : qs_prompt(p, (char *)line.p, line.len, &out, a, &e);
  buf_free(&out);
  if (rc == DV_EQS) {
    buf_reset(&line);
    buf_puts(&line, "Compilation of the ");
    buf_puts(&line, kind);
    buf_puts(&line, " function in the '");
    buf_append(&line, view->key, view->klen);
    buf_puts(&line, "' view failed: ");
    buf_puts(&line, e.reason ? e.reason : "");
    *why = buf_error(&line) ? NULL : arena_strndup(a, (const char *)line.p, line.len);
    rc = *why ? DV_EVIEW_COMPILE : DV_ENOMEM;
  }
  buf_free(&line);
  return rc;
}

/* Every map and JavaScript reduce of views, compiled in a query server of
 * lang (one session; reset first). */
static int compile_views(const json_val *views, const char *lang, dv_arena *a, const char **why) {
  qs_proc *p;
  qs_err e = {0};
  int rc = qs_acquire(lang, &p, &e);
  if (rc) return 0; /* no process: the functions are compiled when the view is queried */
  dv_buf out;
  buf_init(&out);
  rc = qs_prompt(p, "[\"reset\"]", 9, &out, a, &e);
  buf_free(&out);
  for (size_t i = 0; !rc && i < views->len; i++) {
    const json_member *m = &views->u.members[i];
    if (m->klen == 3 && !memcmp(m->key, "lib", 3)) continue;
    const json_val *map = json_obj_getz(m->val, "map"), *red = json_obj_getz(m->val, "reduce");
    if (map && map->type == JSON_STRING) rc = try_compile(p, "map", m, map, a, why);
    if (!rc && red && red->type == JSON_STRING && vr_kind_of(red->u.s, red->len) == VR_JS)
      rc = try_compile(p, "reduce", m, red, a, why);
  }
  qs_release(p, rc && rc != DV_EVIEW_COMPILE);
  return rc == DV_EVIEW_COMPILE || rc == DV_ENOMEM ? rc : 0;
}

int jsddoc_check_ddoc(const json_val *doc, dv_arena *a, const char **why) {
  int rc;
  if ((rc = check_obj_of(doc, "filters", T_OBJECT | T_STRING, a, why))) return rc;
  if ((rc = check_one(doc, "language", T_STRING, a, why))) return rc;
  if ((rc = check_obj_of(doc, "lists", T_OBJECT | T_STRING, a, why))) return rc;
  if ((rc = check_one(doc, "options", T_OBJECT, a, why))) return rc;
  const json_val *opts = json_obj_getz(doc, "options");
  if (opts) {
    static const char *const bools[] = {"include_design", "local_seq", "partitioned"};
    for (size_t i = 0; i < 3; i++) {
      const json_val *v = json_obj_getz(opts, bools[i]);
      if (v && v->type != JSON_BOOL) {
        const char *p = dotted(a, "options", bools[i], strlen(bools[i]), NULL);
        return p ? bad_field(a, why, p, T_BOOLEAN) : DV_ENOMEM;
      }
    }
  }
  if ((rc = check_one(doc, "rewrites", T_STRING | T_ARRAY, a, why))) return rc;
  if ((rc = check_obj_of(doc, "shows", T_OBJECT | T_STRING, a, why))) return rc;
  if ((rc = check_obj_of(doc, "updates", T_OBJECT | T_STRING, a, why))) return rc;
  if ((rc = check_one(doc, "validate_doc_update", T_STRING, a, why))) return rc;
  const json_val *lang = json_obj_getz(doc, "language");
  int query = lang && lang->type == JSON_STRING && lang->len == 5 && !memcmp(lang->u.s, "query", 5);
  const json_val *views = json_obj_getz(doc, "views");
  if (views) {
    if (views->type != JSON_OBJECT) return bad_field(a, why, "views", T_OBJECT);
    const json_val *lib = json_obj_getz(views, "lib");
    if (lib && lib->type != JSON_OBJECT) return bad_field(a, why, "views.lib", T_OBJECT);
    /* [{views, object}, {any, object}, {map, MapType}] then the same for reduce */
    for (int pass = 0; pass < 2; pass++)
      for (size_t i = 0; i < views->len; i++) {
        const json_member *m = &views->u.members[i];
        if (m->val->type != JSON_OBJECT) {
          const char *p = dotted(a, "views", m->key, m->klen, NULL);
          return p ? bad_field(a, why, p, T_OBJECT) : DV_ENOMEM;
        }
        const char *f = pass == 0 ? "map" : "reduce";
        int t = pass == 0 && query ? T_OBJECT : T_STRING;
        const json_val *v = json_obj_getz(m->val, f);
        if (v && !has_type(v, t)) {
          const char *p = dotted(a, "views", m->key, m->klen, f);
          return p ? bad_field(a, why, p, t) : DV_ENOMEM;
        }
      }
    /* require_map_function_for_views; not for Mango's "query" design
     * documents, whose malformed views mango skips (mindex.h, and
     * test/node/http/mango.test.js "C." keeps that) */
    for (size_t i = 0; !query && i < views->len; i++) {
      const json_member *m = &views->u.members[i];
      if (m->klen == 3 && !memcmp(m->key, "lib", 3)) continue;
      if (!json_obj_getz(m->val, "map")) {
        dv_buf b;
        buf_init(&b);
        buf_puts(&b, "View `");
        buf_append(&b, m->key, m->klen);
        buf_puts(&b, "` must contain map function");
        *why = buf_error(&b) ? NULL : arena_strndup(a, (const char *)b.p, b.len);
        buf_free(&b);
        return *why ? DV_EMQ_DESIGN_DOC : DV_ENOMEM;
      }
    }
  }
  /* couch_mrview:validate: no partitioned databases here */
  const json_val *part = opts ? json_obj_getz(opts, "partitioned") : NULL;
  if (part && part->type == JSON_BOOL && part->b) {
    *why = "partitioned option cannot be true in a non-partitioned database.";
    return DV_EMQ_DESIGN_DOC;
  }
  /* built-in reduces and the functions themselves, checked when the
   * views' language has a query server (couch_mrview:validate compiles
   * every map and JavaScript reduce: 400 compilation_error) */
  const char *lz = lang && lang->type == JSON_STRING ? arena_strndup(a, lang->u.s, lang->len) : NULL;
  if (views && views->len && !query && qs_has_lang(lz)) {
    for (size_t i = 0; i < views->len; i++) {
      const json_member *m = &views->u.members[i];
      if (m->klen == 3 && !memcmp(m->key, "lib", 3)) continue;
      const json_val *r = json_obj_getz(m->val, "reduce");
      if (!r || r->type != JSON_STRING || vr_kind_of(r->u.s, r->len) != VR_UNKNOWN) continue;
      dv_buf b;
      buf_init(&b);
      buf_puts(&b, "`");
      buf_append(&b, r->u.s, r->len);
      buf_puts(&b, "` is not a supported reduce function.");
      *why = buf_error(&b) ? NULL : arena_strndup(a, (const char *)b.p, b.len);
      buf_free(&b);
      return *why ? DV_EMQ_DESIGN_DOC : DV_ENOMEM;
    }
    int crc = compile_views(views, lz, a, why);
    if (crc) return crc;
  }
  return 0;
}
