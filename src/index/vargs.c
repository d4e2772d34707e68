/* vargs.c — view query parameters (vargs.h), clause by clause after
 * couch_mrview_http:parse_param and couch_mrview_util:validate_args.
 *
 * Texts (CouchDB 3.4; ~p of an Erlang string prints it in double quotes,
 * of a binary as <<"…">>):
 *   Invalid boolean parameter: "yes"
 *   Invalid value for integer: "abc"        (a POST body string: <<"abc">>)
 *   Invalid value for positive integer: "-1"
 *   Invalid value for `stale`.  /  `stable`.  /  `update`.
 * and validate_args' list, in its order (vw_args_check).
 */
#include "index/vargs.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

void vw_args_init(vw_args *a) {
  memset(a, 0, sizeof *a);
  a->reduce = -1;
  a->limit = VW_LIMIT_MAX;
  a->group = -1;
  a->group_level = -1;
  a->update = VW_UPDATE_TRUE;
  a->inclusive_end = 1;
  a->conflicts = -1;
  a->sorted = 1;
}

static int is(const char *n, size_t len, const char *z) { return strlen(z) == len && !memcmp(n, z, len); }

/* ~p of the value: "text" for the query string, <<"text">> for a body string. */
static const char *shown(dv_arena *ar, const char *t, size_t n, int binary) {
  char *s = arena_alloc(ar, n + 8);
  if (!s) return "";
  size_t k = 0;
  if (binary) s[k++] = '<', s[k++] = '<';
  s[k++] = '"';
  memcpy(s + k, t, n);
  k += n;
  s[k++] = '"';
  if (binary) s[k++] = '>', s[k++] = '>';
  s[k] = 0;
  return s;
}

static int failf(dv_arena *ar, const char **why, const char *fmt, const char *v) {
  size_t n = strlen(fmt) + strlen(v) + 1;
  char *s = arena_alloc(ar, n);
  if (!s) {
    *why = "Out of memory.";
    return DV_ENOMEM;
  }
  snprintf(s, n, fmt, v);
  *why = s;
  return DV_EQUERY_PARSE;
}

/* j's JSON text in the arena (*len its length, len may be NULL); NULL when
 * out of memory. */
static const char *json_text(dv_arena *ar, const json_val *j, size_t *len) {
  dv_buf b;
  buf_init(&b);
  const char *s = json_write(&b, j) ? NULL : arena_strndup(ar, (char *)b.p, b.len);
  if (len) *len = b.len;
  buf_free(&b);
  return s;
}

/* The text of a parameter: the query string's, or a body string's. */
static int text_of(const char *text, size_t tl, const json_val *j, const char **t, size_t *n, int *binary) {
  if (j) {
    if (j->type != JSON_STRING) return -1;
    *t = j->u.s;
    *n = j->len;
    *binary = 1;
    return 0;
  }
  *t = text;
  *n = tl;
  *binary = 0;
  return 0;
}

static int parse_bool(const char *text, size_t tl, const json_val *j, int *out, dv_arena *ar, const char **why) {
  if (j && j->type == JSON_BOOL) {
    *out = j->b;
    return 0;
  }
  const char *t;
  size_t n;
  int bin;
  if (text_of(text, tl, j, &t, &n, &bin)) { /* a number, null, … in a body */
    const char *s = json_text(ar, j, NULL);
    return s ? failf(ar, why, "Invalid boolean parameter: %s", s) : DV_ENOMEM;
  }
  if (n == 4 && !strncasecmp(t, "true", 4)) *out = 1;
  else if (n == 5 && !strncasecmp(t, "false", 5)) *out = 0;
  else return failf(ar, why, "Invalid boolean parameter: %s", shown(ar, t, n, 0)); /* binary_to_list first */
  return 0;
}

/* list_to_integer: an optional sign, then digits. */
static int parse_int(const char *text, size_t tl, const json_val *j, int64_t *out, int pos, dv_arena *ar,
                     const char **why) {
  const char *t;
  size_t n;
  int bin = 0;
  int64_t v = 0;
  int is_num = j && j->type == JSON_NUMBER;
  if (is_num ? json_num_int64(j->u.s, j->len, &v) != 0 : text_of(text, tl, j, &t, &n, &bin) != 0) {
    const char *s = json_text(ar, j, NULL); /* a body's 1.5, null, … */
    return s ? failf(ar, why, "Invalid value for integer: %s", s) : DV_ENOMEM;
  }
  if (!is_num) {
    size_t i = 0;
    int neg = 0;
    if (!bin && n && (t[0] == '-' || t[0] == '+')) neg = t[i++] == '-';
    int ok = !bin && i < n;
    for (; ok && i < n; i++) {
      if (t[i] < '0' || t[i] > '9' || v > (INT64_MAX - (t[i] - '0')) / 10) ok = 0;
      else v = v * 10 + (t[i] - '0');
    }
    if (!ok) return failf(ar, why, "Invalid value for integer: %s", shown(ar, t, n, bin));
    if (neg) v = -v;
  }
  if (pos && v < 0) {
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    return failf(ar, why, "Invalid value for positive integer: %s", j ? num : shown(ar, text, tl, 0));
  }
  *out = v;
  return 0;
}

static int parse_json(const char *text, size_t tl, const json_val *j, const json_val **out, dv_arena *ar,
                      const char **why) {
  if (j) {
    *out = j;
    return 0;
  }
  json_val *v;
  int rc = json_parse(ar, text, tl, &(json_opts){.flags = JSON_COPY}, &v, NULL);
  if (rc) {
    *why = rc == DV_ENOMEM ? "Out of memory." : "invalid UTF-8 JSON";
    return rc == DV_ENOMEM ? rc : DV_EJSON;
  }
  *out = v;
  return 0;
}

/* couch_util:to_binary: a string as is, anything else its JSON text. */
static int parse_docid(const char *text, size_t tl, const json_val *j, const char **out, size_t *len, dv_arena *ar) {
  if (!j) {
    *out = text;
    *len = tl;
    return 0;
  }
  if (j->type == JSON_STRING) {
    *out = j->u.s;
    *len = j->len;
    return 0;
  }
  *out = json_text(ar, j, len);
  return *out ? 0 : DV_ENOMEM;
}

/* The parameters that set one field each, as couch_mrview_http:parse_param
 * reads them: the name, CouchDB's other spelling, how the value is read,
 * and the field (with a docid, its length's field too). */
enum { P_BOOL, P_INT, P_JSON, P_DOCID };
static const struct param {
  const char *name, *alias;
  int kind;
  size_t off, len_off;
} PARAMS[] = {
    {"reduce", NULL, P_BOOL, offsetof(vw_args, reduce), 0},
    {"startkey", "start_key", P_JSON, offsetof(vw_args, start_key), 0},
    {"endkey", "end_key", P_JSON, offsetof(vw_args, end_key), 0},
    {"startkey_docid", "start_key_doc_id", P_DOCID, offsetof(vw_args, start_docid), offsetof(vw_args, start_docid_len)},
    {"endkey_docid", "end_key_doc_id", P_DOCID, offsetof(vw_args, end_docid), offsetof(vw_args, end_docid_len)},
    {"limit", NULL, P_INT, offsetof(vw_args, limit), 0},
    {"skip", NULL, P_INT, offsetof(vw_args, skip), 0},
    {"group_level", NULL, P_INT, offsetof(vw_args, group_level), 0},
    {"group", NULL, P_BOOL, offsetof(vw_args, group), 0},
    {"descending", NULL, P_BOOL, offsetof(vw_args, descending), 0},
    {"inclusive_end", NULL, P_BOOL, offsetof(vw_args, inclusive_end), 0},
    {"include_docs", NULL, P_BOOL, offsetof(vw_args, include_docs), 0},
    {"update_seq", NULL, P_BOOL, offsetof(vw_args, update_seq), 0},
    {"conflicts", NULL, P_BOOL, offsetof(vw_args, conflicts), 0},
    {"sorted", NULL, P_BOOL, offsetof(vw_args, sorted), 0},
    {"attachments", NULL, P_BOOL, offsetof(vw_args, attachments), 0},
    {"att_encoding_info", NULL, P_BOOL, offsetof(vw_args, att_encoding_info), 0},
};

int vw_args_set(vw_args *a, const char *nm, size_t nl, const char *text, size_t tl, const json_val *j, dv_arena *ar,
                const char **why) {
  int rc = 0;
  if (!nl) return 0;
  for (size_t i = 0; i < sizeof PARAMS / sizeof *PARAMS; i++) {
    const struct param *p = &PARAMS[i];
    if (!is(nm, nl, p->name) && !(p->alias && is(nm, nl, p->alias))) continue;
    char *f = (char *)a + p->off;
    switch (p->kind) {
    case P_BOOL: return parse_bool(text, tl, j, (int *)f, ar, why);
    case P_INT: return parse_int(text, tl, j, (int64_t *)f, 1, ar, why);
    case P_JSON: return parse_json(text, tl, j, (const json_val **)f, ar, why);
    default: return parse_docid(text, tl, j, (const char **)f, (size_t *)((char *)a + p->len_off), ar);
    }
  }
  if (is(nm, nl, "key")) {
    const json_val *v;
    if (!(rc = parse_json(text, tl, j, &v, ar, why))) a->start_key = a->end_key = v;
  } else if (is(nm, nl, "keys")) {
    const json_val *v;
    if (!(rc = parse_json(text, tl, j, &v, ar, why))) {
      if (v->type == JSON_ARRAY && v->len == 1) { /* 3.3.1: one key is `key` */
        a->start_key = a->end_key = v->u.items[0];
        a->keys = NULL;
      } else {
        a->keys = v;
      }
    }
  } else if (is(nm, nl, "stale") || is(nm, nl, "stable") || is(nm, nl, "update")) {
    const char *t;
    size_t n;
    int bin;
    if (j && j->type == JSON_BOOL) t = j->b ? "true" : "false", n = strlen(t);
    else if (text_of(text, tl, j, &t, &n, &bin)) t = "", n = 0;
    if (is(nm, nl, "stale")) {
      if (is(t, n, "ok")) a->stable = 1, a->update = VW_UPDATE_FALSE;
      else if (is(t, n, "update_after")) a->stable = 1, a->update = VW_UPDATE_LAZY;
      else *why = "Invalid value for `stale`.", rc = DV_EQUERY_PARSE;
    } else if (is(nm, nl, "stable")) {
      if (is(t, n, "true")) a->stable = 1;
      else if (is(t, n, "false")) a->stable = 0;
      else *why = "Invalid value for `stable`.", rc = DV_EQUERY_PARSE;
    } else {
      if (is(t, n, "true")) a->update = VW_UPDATE_TRUE;
      else if (is(t, n, "false")) a->update = VW_UPDATE_FALSE;
      else if (is(t, n, "lazy")) a->update = VW_UPDATE_LAZY;
      else *why = "Invalid value for `update`.", rc = DV_EQUERY_PARSE;
    }
  }
  return rc;
}

int vw_args_check(vw_args *a, int red_view, const char **why) {
#define FAIL(msg)           \
  do {                      \
    *why = msg;             \
    return DV_EQUERY_PARSE; \
  } while (0)
  /* apply_limit ([query_server_config] query_limit, CouchDB's default) */
  if (a->limit > VW_LIMIT_MAX) FAIL("Limit is too large, must not exceed 268435456");
  /* determine_group_level */
  int level;
  if (a->group == -1 && a->group_level == -1) level = 0;
  else if (a->group == 0 && a->group_level == -1) level = 0;
  else if (a->group == 0 && a->group_level > 0) FAIL("Can't specify group=false and group_level>0 at the same time");
  else if (a->group == 1 && a->group_level == -1) level = -1;
  else level = (int)(a->group_level > 0x7fffffff ? 0x7fffffff : a->group_level);
  int red = red_view && a->reduce != 0;
  if (!red_view && a->reduce == 1) FAIL("Reduce is invalid for map-only views.");
  if (red && level != -1 && a->keys) FAIL("Multi-key fetches for reduce views must use `group=true`");
  if (a->keys && a->keys->type != JSON_ARRAY) FAIL("`keys` must be an array of strings.");
  if (a->keys && a->keys->len && (a->start_key || a->end_key))
    FAIL("`keys` is incompatible with `key`, `start_key` and `end_key`");
  if (!red && level != 0) FAIL("Invalid use of grouping on a map view.");
  if (red && a->include_docs) FAIL("`include_docs` is invalid for reduce");
  if (red && a->conflicts != -1) FAIL("`conflicts` is invalid for reduce views.");
  a->red = red;
  a->level = level;
  return 0;
#undef FAIL
}
