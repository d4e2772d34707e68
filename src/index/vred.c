/* vred.c — the reductions of a view slot's tree (view_int.h vw_red_ops):
 * what vtree.h calls to reduce rows and rereduce summaries.
 *
 * A state is one tag byte and a body:
 *   0x00 + the reduce's own state   built-ins: vreduce.h's bytes; JavaScript:
 *                                   the JSON text the query server answered
 *   0x01 + {"error":E,"reason":R}   the reduce failed for this range (a
 *                                   _stats value it cannot take, a
 *                                   JavaScript reduce_overflow_error or a
 *                                   function that threw): kept as the
 *                                   reduction, as CouchDB keeps it in its
 *                                   btree, so a map query and the other
 *                                   views still work; a query that meets it
 *                                   answers it (vread.c)
 * An error state wins every rereduce it takes part in.
 *
 * Rows reach reduce as the tree's KVs: key = the slot's rows prefix +
 * (EK, DocID, N), value = (KeyJSON, ValueJSON). Built-ins get them parsed
 * (vr_row); JavaScript gets one ["reduce", [src…], [[[k, id], v]…]] per
 * call for every JavaScript reduce of the slot, and ["rereduce", [src],
 * [state…]] per summary, in the step's or the query's session.
 */
#include <string.h>

#include "index/view_int.h"
#include "util/alloc.h"

void vw_red_init(vw_red_ctx *c, const vw_index *ix, size_t slot, vw_session *ss, size_t rows_prefix_len) {
  memset(c, 0, sizeof *c);
  c->ix = ix;
  c->slot = slot;
  c->ss = ss;
  c->rows_prefix_len = rows_prefix_len;
  arena_init(&c->a, 0);
}

void vw_red_free(vw_red_ctx *c) { arena_free(&c->a); }

static int put_error(dv_buf *out, const char *error, const char *reason) {
  buf_putc(out, 1);
  json_w w;
  json_w_init(&w, out);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "error");
  json_w_strz(&w, error ? error : "unknown_error");
  json_w_keyz(&w, "reason");
  json_w_strz(&w, reason ? reason : "");
  json_w_obj_end(&w);
  return json_w_finish(&w) ? DV_ENOMEM : 0;
}

/* One row of the tree as its parts. */
static int row_parts(vw_red_ctx *c, const kv_pair *kv, vr_row *r, const char **kj, size_t *kjl, const char **vj,
                     size_t *vjl) {
  tup_r t;
  tup_item ek, id, k, v;
  if (kv->key_len < c->rows_prefix_len) return DV_ECORRUPT;
  tup_r_init(&t, kv->key + c->rows_prefix_len, kv->key_len - c->rows_prefix_len);
  if (tup_get(&t, TUP_BYTES, &ek) || tup_get(&t, TUP_STR, &id)) return DV_ECORRUPT;
  tup_r_init(&t, kv->val, kv->val_len);
  if (tup_get(&t, TUP_STR, &k) || tup_get(&t, TUP_STR, &v)) return DV_ECORRUPT;
  char *ids = arena_alloc(&c->a, id.s_len + 1), *ks = arena_alloc(&c->a, k.s_len + 1),
       *vs = arena_alloc(&c->a, v.s_len + 1);
  if (!ids || !ks || !vs) return DV_ENOMEM;
  tup_item_copy(&id, (uint8_t *)ids);
  tup_item_copy(&k, (uint8_t *)ks);
  tup_item_copy(&v, (uint8_t *)vs);
  ids[id.s_len] = ks[k.s_len] = vs[v.s_len] = 0;
  r->id = ids;
  r->id_len = id.s_len;
  *kj = ks;
  *kjl = k.s_len;
  *vj = vs;
  *vjl = v.s_len;
  return 0;
}

/* The answer [true, [r…]] of a reduce or rereduce: its results. */
static int results(vw_red_ctx *c, json_val **out) {
  json_val *v;
  int rc = json_parse(&c->a, c->ss->out.p, c->ss->out.len, &(json_opts){.flags = JSON_COPY}, &v, NULL);
  if (rc) return rc == DV_ENOMEM ? rc : DV_EQS_PROCESS;
  const json_val *ok = json_arr_get(v, 0);
  json_val *rs = json_arr_get(v, 1);
  if (!ok || ok->type != JSON_BOOL || !ok->b || !rs || rs->type != JSON_ARRAY) return DV_EQS_PROCESS;
  *out = rs;
  return 0;
}

/* A call failed in the query server: DV_EQS is the function's own error
 * (kept as an error state), anything else fails the caller. */
static int js_failed(vw_red_ctx *c, int rc, dv_buf *out, size_t n) {
  if (rc != DV_EQS) {
    if (rc == DV_EQS_PROCESS) c->ss->broken = 1;
    return rc;
  }
  for (size_t i = 0; i < n; i++)
    if ((rc = put_error(&out[i], c->ss->e.error, c->ss->e.reason))) return rc;
  return 0;
}

static int red_reduce(void *ctx, const kv_pair *rows, size_t n, dv_buf *out) {
  vw_red_ctx *c = ctx;
  const vw_slot *sl = &c->ix->slots[c->slot];
  arena_reset(&c->a);
  vr_row *rs = arena_calloc(&c->a, (n ? n : 1) * sizeof *rs);
  const char **kj = arena_calloc(&c->a, (n ? n : 1) * sizeof *kj), **vj = arena_calloc(&c->a, (n ? n : 1) * sizeof *vj);
  size_t *kjl = arena_calloc(&c->a, (n ? n : 1) * sizeof *kjl), *vjl = arena_calloc(&c->a, (n ? n : 1) * sizeof *vjl);
  if (!rs || !kj || !vj || !kjl || !vjl) return DV_ENOMEM;
  int need_dom = 0, n_js = 0;
  for (size_t i = 0; i < sl->n_red; i++) {
    need_dom |= sl->kinds[i] != VR_JS;
    n_js += sl->kinds[i] == VR_JS;
  }
  for (size_t i = 0; i < n; i++) {
    int rc = row_parts(c, &rows[i], &rs[i], &kj[i], &kjl[i], &vj[i], &vjl[i]);
    json_val *k = NULL, *v = NULL;
    if (!rc && need_dom) rc = json_parse(&c->a, kj[i], kjl[i], NULL, &k, NULL);
    if (!rc && need_dom) rc = json_parse(&c->a, vj[i], vjl[i], NULL, &v, NULL);
    if (rc) return rc == DV_ENOMEM ? rc : DV_ECORRUPT;
    rs[i].key = k;
    rs[i].value = v;
  }
  for (size_t i = 0; i < sl->n_red; i++) {
    if (sl->kinds[i] == VR_JS) continue;
    vr_err e = {0};
    dv_buf st;
    buf_init(&st);
    int rc = vr_reduce(sl->kinds[i], rs, n, &c->a, &st, &e);
    if (!rc) {
      buf_putc(&out[i], 0);
      buf_append(&out[i], st.p, st.len);
    } else if (rc == DV_EVIEW_BUILTIN) {
      rc = put_error(&out[i], sl->kinds[i] == VR_STATS ? "invalid_value" : e.error, e.reason);
    }
    buf_free(&st);
    if (rc) return rc;
  }
  if (!n_js) return 0;
  dv_buf line;
  buf_init(&line);
  json_w w;
  vw_cmd(&w, &line, "reduce");
  json_w_arr_begin(&w);
  for (size_t i = 0; i < sl->n_red; i++)
    if (sl->kinds[i] == VR_JS) json_w_strz(&w, sl->reds[i]);
  json_w_arr_end(&w);
  json_w_arr_begin(&w);
  for (size_t i = 0; i < n; i++) {
    json_w_arr_begin(&w);
    json_w_arr_begin(&w);
    json_w_raw(&w, kj[i], kjl[i]);
    json_w_str(&w, rs[i].id, rs[i].id_len);
    json_w_arr_end(&w);
    json_w_raw(&w, vj[i], vjl[i]);
    json_w_arr_end(&w);
  }
  json_w_arr_end(&w);
  int rc = vw_session_prompt(c->ss, &w, &line);
  buf_free(&line);
  json_val *res = NULL;
  if (!rc) rc = results(c, &res);
  if (rc) {
    dv_buf *errs = out; /* every JavaScript reduce of the slot gets the error */
    for (size_t i = 0; i < sl->n_red; i++)
      if (sl->kinds[i] == VR_JS && (rc = js_failed(c, rc, &errs[i], 1))) return rc;
    return 0;
  }
  size_t j = 0;
  for (size_t i = 0; i < sl->n_red; i++) {
    if (sl->kinds[i] != VR_JS) continue;
    const json_val *r = json_arr_get(res, j++);
    buf_putc(&out[i], 0);
    if (r) {
      if (json_write(&out[i], r)) return DV_ENOMEM;
    } else {
      buf_append(&out[i], "null", 4);
    }
    if (buf_error(&out[i])) return DV_ENOMEM;
  }
  return 0;
}

static int red_rereduce(void *ctx, size_t which, const vt_red *in, size_t n, dv_buf *out) {
  vw_red_ctx *c = ctx;
  const vw_slot *sl = &c->ix->slots[c->slot];
  for (size_t i = 0; i < n; i++) { /* an error wins */
    if (!in[i].len) return DV_ECORRUPT;
    if (in[i].p[0] == 1) {
      buf_append(out, in[i].p, in[i].len);
      return buf_error(out) ? DV_ENOMEM : 0;
    }
  }
  arena_reset(&c->a);
  vr_kind k = sl->kinds[which];
  if (k != VR_JS) {
    const uint8_t **ps = arena_calloc(&c->a, (n ? n : 1) * sizeof *ps);
    size_t *ls = arena_calloc(&c->a, (n ? n : 1) * sizeof *ls);
    if (!ps || !ls) return DV_ENOMEM;
    for (size_t i = 0; i < n; i++) {
      ps[i] = in[i].p + 1;
      ls[i] = in[i].len - 1;
    }
    vr_err e = {0};
    dv_buf st;
    buf_init(&st);
    int rc = vr_rereduce(k, ps, ls, n, &c->a, &st, &e);
    if (!rc) {
      buf_putc(out, 0);
      buf_append(out, st.p, st.len);
      rc = buf_error(out) ? DV_ENOMEM : 0;
    } else if (rc == DV_EVIEW_BUILTIN) {
      rc = put_error(out, k == VR_STATS ? "invalid_value" : e.error, e.reason);
    }
    buf_free(&st);
    return rc;
  }
  dv_buf line;
  buf_init(&line);
  json_w w;
  vw_cmd(&w, &line, "rereduce");
  json_w_arr_begin(&w);
  json_w_strz(&w, sl->reds[which]);
  json_w_arr_end(&w);
  json_w_arr_begin(&w);
  for (size_t i = 0; i < n; i++) json_w_raw(&w, (const char *)in[i].p + 1, in[i].len - 1);
  json_w_arr_end(&w);
  int rc = vw_session_prompt(c->ss, &w, &line);
  buf_free(&line);
  json_val *res = NULL;
  if (!rc) rc = results(c, &res);
  if (rc) return js_failed(c, rc, out, 1);
  const json_val *r = json_arr_get(res, 0);
  buf_putc(out, 0);
  if (r) {
    if (json_write(out, r)) return DV_ENOMEM;
  } else {
    buf_append(out, "null", 4);
  }
  return buf_error(out) ? DV_ENOMEM : 0;
}

const vt_ops vw_red_ops = {red_reduce, red_rereduce};
