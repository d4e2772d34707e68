/* mqparse.c — the options of a _find or _explain body, as CouchDB 3.4's
 * mango_opts:validate_find checks them (mquery.h mq_parse): the spec list
 * in its order, each key's validator and error, unknown keys last. No
 * store here (mquery_int.h says why). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/mquery_int.h"

/* ---- errors -------------------------------------------------------------------------- */

/* rc with reason pre + ~w of v + post, in the arena. */
static int fail_w(dv_arena *a, const char **why, int rc, const char *pre, const json_val *v, const char *post) {
  dv_buf b = DV_BUF_INIT;
  buf_puts(&b, pre);
  if (v) mango__erl_w(&b, v);
  if (post) buf_puts(&b, post);
  char *s = buf_error(&b) ? NULL : arena_strndup(a, b.p ? (const char *)b.p : "", b.len);
  buf_free(&b);
  if (!s) rc = DV_ENOMEM;
  if (why) *why = s ? s : dv_strerror(DV_ENOMEM);
  return rc;
}


/* ---- option validators ---------------------------------------------------------------- */


static int is_int_val(const json_val *v) {
  if (v->type != JSON_NUMBER) return 0;
  if (v->num <= JSON_NUM_BIGINT) return 1;
  if (v->num == JSON_NUM_DOUBLE) return 0;
  for (size_t i = 0; i < v->len; i++)
    if (v->u.s[i] == '.' || v->u.s[i] == 'e' || v->u.s[i] == 'E') return 0;
  return 1;
}

/* An integer >= min into *out (big ones clamp to INT64_MAX); -1 if not. */
static int get_int(const json_val *v, int64_t min, int64_t *out) {
  if (!is_int_val(v)) return -1;
  int neg = v->u.s[0] == '-';
  int zero = 1;
  for (size_t i = neg; i < v->len; i++)
    if (v->u.s[i] != '0') zero = 0;
  int64_t x;
  if (zero) x = 0;
  else if (neg) return -1;
  else if (json_num_int64(v->u.s, v->len, &x)) x = INT64_MAX;
  if (x < min) return -1;
  *out = x;
  return 0;
}

static int dup_str(dv_arena *a, const char *s, size_t n, mq_str *out) {
  char *c = arena_strndup(a, s ? s : "", n);
  if (!c) return DV_ENOMEM;
  out->s = c;
  out->n = n;
  return 0;
}

static int v_use_index(dv_arena *a, const json_val *v, mq_req *q, const char **why) {
  mq_str parts[4];
  size_t np = 0;
  if (v->type == JSON_NULL) return 0;
  if (v->type == JSON_STRING) {
    size_t st = 0;
    for (size_t i = 0; i <= v->len; i++) {
      if (i < v->len && v->u.s[i] != '/') continue;
      if (np == 4) goto bad;
      parts[np].s = v->u.s + st;
      parts[np].n = i - st;
      np++;
      st = i + 1;
    }
    size_t from = 0;
    if (np == 2 && str_is(parts[0].s, parts[0].n, "_design")) from = 1;
    else if (np == 3 && str_is(parts[0].s, parts[0].n, "_design")) from = 1;
    else if (np > 2) goto bad;
    q->n_use = np - from;
    for (size_t i = 0; i < q->n_use; i++)
      if (dup_str(a, parts[from + i].s, parts[from + i].n, &q->use[i])) return DV_ENOMEM;
    return 0;
  }
  if (v->type == JSON_ARRAY && v->len <= 2) {
    for (size_t i = 0; i < v->len; i++)
      if (v->u.items[i]->type != JSON_STRING) goto bad;
    q->n_use = v->len;
    for (size_t i = 0; i < v->len; i++)
      if (dup_str(a, v->u.items[i]->u.s, v->u.items[i]->len, &q->use[i])) return DV_ENOMEM;
    return 0;
  }
bad:
  return fail_w(a, why, DV_EMQ_INDEX_NAME, "Invalid index name: ", v, NULL);
}

static int v_sort(dv_arena *a, const json_val *v, mq_req *q, const char **why) {
  if (v->type != JSON_ARRAY)
    return fail_w(a, why, DV_EMQ_SORT_JSON, "Sort must be an array of sort specs, not: ", v, NULL);
  q->sort = arena_alloc(a, (v->len + 1) * sizeof *q->sort);
  q->sort_json = json_new_object(a);
  if (!q->sort || !q->sort_json) return DV_ENOMEM;
  int dir = -1;
  for (size_t i = 0; i < v->len; i++) {
    const json_val *f = v->u.items[i];
    const char *name;
    size_t n;
    int desc;
    if (f->type == JSON_STRING && f->len) {
      name = f->u.s, n = f->len, desc = 0;
    } else if (f->type == JSON_OBJECT && f->len == 1 && f->u.members[0].val->type == JSON_STRING &&
               (str_is(f->u.members[0].val->u.s, f->u.members[0].val->len, "asc") ||
                str_is(f->u.members[0].val->u.s, f->u.members[0].val->len, "desc"))) {
      name = f->u.members[0].key, n = f->u.members[0].klen, desc = f->u.members[0].val->len == 4;
    } else {
      return fail_w(a, why, DV_EMQ_SORT_FIELD, "Invalid sort field: ", f, NULL);
    }
    if (dir >= 0 && dir != desc)
      return fail_s(why, DV_EMQ_MIXED_SORT, "Sorts currently only support a single direction for all fields.");
    dir = desc;
    if (dup_str(a, name, n, &q->sort[q->n_sort])) return DV_ENOMEM;
    q->n_sort++;
    if (json_obj_set(a, q->sort_json, name, n, json_new_stringz(a, desc ? "desc" : "asc"))) return DV_ENOMEM;
  }
  q->desc = dir == 1;
  return 0;
}

static int v_fields(dv_arena *a, const json_val *v, mq_req *q, const char **why) {
  if (v->type != JSON_ARRAY)
    return fail_w(a, why, DV_EMQ_FIELDS, "Fields must be an array of strings, not: ", v, NULL);
  q->fields = arena_alloc(a, (v->len + 1) * sizeof *q->fields);
  if (!q->fields) return DV_ENOMEM;
  for (size_t i = 0; i < v->len; i++) {
    const json_val *f = v->u.items[i];
    if (f->type != JSON_STRING) return fail_w(a, why, DV_EMQ_FIELD, "Invalid JSON for field spec: ", f, NULL);
    if (dup_str(a, f->u.s, f->len, &q->fields[i])) return DV_ENOMEM;
  }
  q->n_fields = v->len;
  q->fields_json = json_dup(a, v);
  return q->fields_json ? 0 : DV_ENOMEM;
}

static int v_bool(dv_arena *a, const json_val *v, int *out, const char **why) {
  if (v->type != JSON_BOOL) return fail_w(a, why, DV_EMQ_BOOLEAN, "Invalid boolean value: ", v, NULL);
  *out = v->b;
  return 0;
}

static int v_partition(dv_arena *a, const json_val *v, mq_req *q, const char **why) {
  if (v->type != JSON_STRING) return fail_s(why, DV_EMQ_PARTITION, "Partition must be a string");
  if (v->len && v->u.s[0] == '_') return fail_s(why, DV_EMQ_PARTITION, "Partition must not start with an underscore");
  if (v->len > 128) return fail_s(why, DV_EMQ_PARTITION, "Partition must be at most 128 bytes long");
  return dup_str(a, v->u.s, v->len, &q->partition);
}

static const char *const find_keys[] = {"selector", "use_index", "bookmark", "limit", "skip",
                                        "sort", "fields", "partition", "r", "conflicts",
                                        "stale", "update", "stable", "execution_stats", "allow_fallback"};

int mq_parse(dv_arena *a, const json_val *body, mq_req **out, const char **why) {
  int rc;
  mq_req *q = arena_calloc(a, sizeof *q);
  if (!q) return fail_s(why, DV_ENOMEM, NULL);
  q->limit = MQ_DEFAULT_LIMIT;
  q->r = 1;
  q->update = 1;
  q->allow_fallback = 1;
  q->partition.s = "";
  if (!body || body->type != JSON_OBJECT) return fail_s(why, DV_EBAD_REQUEST, "Request body must be a JSON object");
  const json_val *v;
  /* in mango_opts's order: the first failing option wins */
  if (!(v = json_obj_getz(body, "selector"))) return fail_s(why, DV_EMQ_MISSING_KEY, "Missing required key: selector");
  if ((rc = mango_parse(a, v, &q->sel, why))) return rc;
  q->root = mango__root(q->sel);
  if (!(q->norm = mango_to_json(a, q->sel))) return fail_s(why, DV_ENOMEM, NULL);
  if ((v = json_obj_getz(body, "use_index")) && (rc = v_use_index(a, v, q, why))) return rc;
  if ((v = json_obj_getz(body, "bookmark"))) {
    if (v->type == JSON_STRING && v->len) {
      q->bookmark = arena_strndup(a, v->u.s, v->len);
      q->bookmark_len = v->len;
      if (!q->bookmark) return fail_s(why, DV_ENOMEM, NULL);
    } else if (v->type != JSON_NULL && v->type != JSON_STRING) {
      return fail_w(a, why, DV_EMQ_UNKNOWN, "Unknown Error: mango_opts :: {invalid_bookmark,", v, "}");
    }
  }
  if ((v = json_obj_getz(body, "limit")) && get_int(v, 0, &q->limit))
    return fail_w(a, why, DV_EMQ_NON_NEG_INTEGER, "", v, " is not an integer greater than or equal to zero");
  if ((v = json_obj_getz(body, "skip")) && get_int(v, 0, &q->skip))
    return fail_w(a, why, DV_EMQ_NON_NEG_INTEGER, "", v, " is not an integer greater than or equal to zero");
  if ((v = json_obj_getz(body, "sort")) && (rc = v_sort(a, v, q, why))) return rc;
  if ((v = json_obj_getz(body, "fields")) && (rc = v_fields(a, v, q, why))) return rc;
  if ((v = json_obj_getz(body, "partition")) && (rc = v_partition(a, v, q, why))) return rc;
  if ((v = json_obj_getz(body, "r")) && get_int(v, 1, &q->r))
    return fail_w(a, why, DV_EMQ_POS_INTEGER, "", v, " is not an integer greater than zero");
  if ((v = json_obj_getz(body, "conflicts")) && (rc = v_bool(a, v, &q->conflicts, why))) return rc;
  if ((v = json_obj_getz(body, "stale"))) {
    if (v->type == JSON_STRING && str_is(v->u.s, v->len, "ok")) q->stale_ok = 1;
    else if (!(v->type == JSON_BOOL && !v->b) && !(v->type == JSON_STRING && str_is(v->u.s, v->len, "false")))
      return fail_w(a, why, DV_EMQ_STALE, "Invalid value for stale: ", v, NULL);
  }
  if ((v = json_obj_getz(body, "update")) && (rc = v_bool(a, v, &q->update, why))) return rc;
  if ((v = json_obj_getz(body, "stable")) && (rc = v_bool(a, v, &q->stable, why))) return rc;
  if ((v = json_obj_getz(body, "execution_stats")) && (rc = v_bool(a, v, &q->stats, why))) return rc;
  if ((v = json_obj_getz(body, "allow_fallback")) && (rc = v_bool(a, v, &q->allow_fallback, why))) return rc;
  for (size_t i = 0; i < body->len; i++) {
    const json_member *m = &body->u.members[i];
    int known = 0;
    for (size_t k = 0; k < sizeof find_keys / sizeof *find_keys; k++) known |= str_is(m->key, m->klen, find_keys[k]);
    if (!known) {
      dv_buf b = DV_BUF_INIT;
      buf_puts(&b, "Invalid key ");
      buf_append(&b, m->key, m->klen);
      buf_puts(&b, " for this request.");
      char *s = buf_error(&b) ? NULL : arena_strndup(a, (const char *)b.p, b.len);
      buf_free(&b);
      return s ? fail_s(why, DV_EMQ_INVALID_KEY, s) : fail_s(why, DV_ENOMEM, NULL);
    }
  }
  if (!q->sort_json && !(q->sort_json = json_new_object(a))) return fail_s(why, DV_ENOMEM, NULL);
  if (!q->fields_json && !(q->fields_json = json_new_array(a))) return fail_s(why, DV_ENOMEM, NULL);
  if (q->stale_ok) q->stable = 1, q->update = 0;
  *out = q;
  return 0;
}

