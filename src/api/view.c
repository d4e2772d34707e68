/* view.c — the view endpoints (index/view.h does the work):
 *   GET|HEAD|POST /{db}/_design/{ddoc}/_view/{view}
 *   POST          /{db}/_design/{ddoc}/_view/{view}/queries
 *   GET           /{db}/_design/{ddoc}/_info
 * (_view_cleanup and _compact/{ddoc} are db.c's rows; their view part is
 * api_view_cleanup here).
 *
 * Data flow of a query, in CouchDB's order of checks (chttpd_view,
 * couch_mrview_http): the design document (404 missing / deleted) ─▶ the
 * method ─▶ its views (vw_from_ddoc) and the view (404
 * missing_named_view) ─▶ the parameters: a POST body's members, then the
 * query string over them (vargs.h), checked against the view's type ─▶
 * the key range check ("No rows can match…") ─▶ on an offload thread
 * (hres_offload: building may take long): the index brought up to date
 * (update=true), the rows or groups read into the answer's JSON, and for
 * update=lazy the builder kicked ─▶ a pool thread sends it.
 */
#include <string.h>

#include "api/api.h"
#include "index/collate.h"
#include "index/vargs.h"
#include "index/view.h"
#include "util/alloc.h"

/* One query of a request. */
typedef struct vq {
  vw_args a;
  const vw_view *v;
  vw_range *ranges;
  size_t n_ranges;
  dv_buf out;                 /* its answer object */
} vq;

/* A list function over the view (_list): its design document and name,
 * the request object, and what it answered. */
typedef struct vlist {
  qs_ddoc dd;
  const char *name;
  dv_buf req;                 /* the request object (JSON), built on the pool thread */
  qs_proc *p;
  qs_err e;
  dv_buf body;                /* the chunks, in order */
  json_val *resp;             /* the start's response object */
  int ended;                  /* the function answered "end" */
  dv_arena a;
} vlist;

typedef struct vjob {
  vw_index *ix;
  vq *q;
  size_t n;
  int multi;                  /* /queries: {"results":[…]} */
  vlist *list;                /* _list: the rows go to it */
  int stream;                 /* one map query: its rows are streamed (vstream) */
  int rc;
  vw_err e;
} vjob;

/* ---- parameters ----------------------------------------------------------------- */

static int arg_fail(hreq *r, int rc, const char *why) {
  hres_errw(r, rc, why);
  return -1;
}

/* The query string's parameters over a. */
static int args_qs(hreq *r, vw_args *a) {
  for (int i = 0; i < r->nparams; i++) {
    const char *why = NULL;
    int rc = vw_args_set(a, r->params[i].key, r->params[i].klen, r->params[i].val, r->params[i].vlen, NULL, &r->a, &why);
    if (rc) return arg_fail(r, rc, why);
  }
  return 0;
}

/* An object's members (a POST body, one of /queries') over a. */
static int args_obj(hreq *r, vw_args *a, const json_val *o) {
  for (size_t i = 0; i < o->len; i++) {
    const json_member *m = &o->u.members[i];
    const char *why = NULL;
    int rc = vw_args_set(a, m->key, m->klen, NULL, 0, m->val, &r->a, &why);
    if (rc) return arg_fail(r, rc, why);
  }
  return 0;
}

static int slot_cmp(const vw_slot *sl, const json_val *x, const json_val *y) {
  return sl->raw ? collate_raw_cmp(x, y) : collate_cmp(x, y);
}

/* Erlang's =:= on two keys: the same JSON, 1 and 1.0 apart. */
static int same_term(const json_val *x, const json_val *y) {
  dv_buf a, b;
  buf_init(&a);
  buf_init(&b);
  int same = !json_write(&a, x) && !json_write(&b, y) && a.len == b.len && !memcmp(a.p, b.p, a.len);
  buf_free(&a);
  buf_free(&b);
  return same;
}

static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  return c ? c : (an > bn) - (an < bn);
}

/* couch_mrview_util:check_range, then the ranges the reader walks. */
static int plan(hreq *r, const vw_index *ix, vq *q) {
  vw_args *a = &q->a;
  const vw_slot *sl = &ix->slots[q->v->slot];
  if (a->start_key && a->end_key && !same_term(a->start_key, a->end_key)) { /* check_range skips K =:= K */
    int c = slot_cmp(sl, a->start_key, a->end_key);
    if (!c) { /* equal keys: the docids decide (their defaults: <<>> and <<255>>) */
      const char *sd = a->start_docid ? a->start_docid : a->descending ? "\xff" : "";
      const char *ed = a->end_docid ? a->end_docid : a->descending ? "" : "\xff";
      size_t sl_ = a->start_docid ? a->start_docid_len : strlen(sd), el = a->end_docid ? a->end_docid_len : strlen(ed);
      c = bytes_cmp(sd, sl_, ed, el);
    }
    if (!a->descending && c > 0)
      return arg_fail(r, DV_EQUERY_PARSE,
                      "No rows can match your key range, reverse your start_key and end_key or set descending=true");
    if (a->descending && c < 0)
      return arg_fail(r, DV_EQUERY_PARSE,
                      "No rows can match your key range, reverse your start_key and end_key or set descending=false");
  }
  if (a->keys) {
    q->n_ranges = a->keys->len;
    q->ranges = arena_calloc(&r->a, (q->n_ranges ? q->n_ranges : 1) * sizeof *q->ranges);
    if (!q->ranges) return arg_fail(r, DV_ENOMEM, NULL);
    for (size_t i = 0; i < q->n_ranges; i++)
      q->ranges[i] = (vw_range){.start_key = a->keys->u.items[i], .end_key = a->keys->u.items[i],
                                .start_docid = a->start_docid, .start_docid_len = a->start_docid_len,
                                .end_docid = a->end_docid, .end_docid_len = a->end_docid_len, .inclusive_end = 1};
  } else {
    q->n_ranges = 1;
    q->ranges = arena_calloc(&r->a, sizeof *q->ranges);
    if (!q->ranges) return arg_fail(r, DV_ENOMEM, NULL);
    q->ranges[0] = (vw_range){.start_key = a->start_key, .end_key = a->end_key,
                              .start_docid = a->start_key ? a->start_docid : NULL, .start_docid_len = a->start_docid_len,
                              .end_docid = a->end_key ? a->end_docid : NULL, .end_docid_len = a->end_docid_len,
                              .inclusive_end = a->inclusive_end};
  }
  return 0;
}

/* ---- reading (offload thread) ------------------------------------------------------ */

struct rows_out {
  json_w *w;
  hreq *r;                    /* attachments=true: included documents carry their content */
  int attachments;
  int rc;                     /* reading an attachment failed */
};

static int put_row(void *arg, const vw_row *row) {
  json_w *w = ((struct rows_out *)arg)->w;
  json_w_obj_begin(w);
  json_w_keyz(w, "id");
  json_w_str(w, row->id, row->id_len);
  json_w_keyz(w, "key");
  json_w_raw(w, row->key, row->key_len);
  json_w_keyz(w, "value");
  json_w_raw(w, row->value, row->value_len);
  if (row->has_doc) {
    struct rows_out *ro = arg;
    hatt_ro att = {.data = 1};
    if (row->doc && ro->attachments && !ro->rc) ro->rc = hatt_doc(ro->r->app->db, &ro->r->a, row->doc, &att, NULL, NULL);
    json_w_keyz(w, "doc");
    if (row->doc) json_w_val(w, row->doc);
    else json_w_null(w);
  }
  json_w_obj_end(w);
  return 0;
}

static int put_red(void *arg, const vw_red_row *row) {
  json_w *w = ((struct rows_out *)arg)->w;
  json_w_obj_begin(w);
  json_w_keyz(w, "key");
  json_w_raw(w, row->key, row->key_len);
  if (row->error) {
    json_w_keyz(w, "error");
    json_w_strz(w, row->error);
    json_w_keyz(w, "reason");
    json_w_strz(w, row->reason ? row->reason : "");
  } else {
    json_w_keyz(w, "value");
    json_w_raw(w, row->value, row->value_len);
  }
  json_w_obj_end(w);
  return 0;
}

static int one_query(hreq *r, vjob *j, vq *q) {
  store_db *db = r->app->db;
  json_w w;
  json_w_init(&w, &q->out);
  json_w_obj_begin(&w);
  struct rows_out ro = {&w, r, q->a.attachments, 0};
  int rc = 0;
  if (!q->a.red) {
    vw_map_opts o = {.ranges = q->ranges, .n_ranges = q->n_ranges, .descending = q->a.descending, .skip = q->a.skip,
                     .limit = q->a.limit, .include_docs = q->a.include_docs,
                     .doc_flags = (q->a.conflicts == 1 ? STORE_CONFLICTS : 0) |
                                  (q->a.att_encoding_info ? STORE_ATT_INFO : 0)};
    uint64_t total = 0, offset = 0;
    rc = vw_map_meta(db, j->ix, q->v->slot, &o, &total, &offset);
    json_w_keyz(&w, "total_rows");
    json_w_uint(&w, total);
    json_w_keyz(&w, "offset");
    json_w_uint(&w, offset);
    if (q->a.update_seq) {
      vw_info in;
      char s[STORE_SEQ_STR] = "0";
      if (!rc && !(rc = vw_info_get(db, j->ix, &in)) && in.have_seq) store_seq_format(&in.seq, s);
      json_w_keyz(&w, "update_seq");
      json_w_strz(&w, s);
    }
    json_w_keyz(&w, "rows");
    json_w_arr_begin(&w);
    if (!rc) rc = vw_map_rows(db, j->ix, q->v->slot, &o, put_row, &ro);
    if (!rc) rc = ro.rc;
    json_w_arr_end(&w);
  } else {
    if (q->a.update_seq) {
      vw_info in;
      char s[STORE_SEQ_STR] = "0";
      if (!(rc = vw_info_get(db, j->ix, &in)) && in.have_seq) store_seq_format(&in.seq, s);
      json_w_keyz(&w, "update_seq");
      json_w_strz(&w, s);
    }
    vw_red_opts o = {.ranges = q->ranges, .n_ranges = q->n_ranges, .keys = q->a.keys != NULL,
                     .descending = q->a.descending, .group_level = q->a.level, .skip = q->a.skip, .limit = q->a.limit};
    json_w_keyz(&w, "rows");
    json_w_arr_begin(&w);
    if (!rc) rc = vw_reduce_rows(db, j->ix, q->v, &o, put_red, &ro, &r->a, &j->e);
    json_w_arr_end(&w);
  }
  json_w_obj_end(&w);
  if (!rc && (json_w_finish(&w) || buf_error(&q->out))) rc = DV_ENOMEM;
  return rc;
}

static int list_run(hreq *r, vjob *j);

static void view_work(hreq *r) {
  vjob *j = r->app->pending;
  if (j->list) {
    j->rc = j->q[0].a.update == VW_UPDATE_TRUE ? vw_refresh(r->app->db, j->ix, &r->a, &j->e) : 0;
    if (!j->rc) j->rc = list_run(r, j);
    if (j->q[0].a.update == VW_UPDATE_LAZY) vw_kick(r->app->db_name, j->ix);
    return;
  }
  int update = 0, lazy = 0;
  for (size_t i = 0; i < j->n; i++) {
    update |= j->q[i].a.update == VW_UPDATE_TRUE;
    lazy |= j->q[i].a.update == VW_UPDATE_LAZY;
  }
  j->rc = update ? vw_refresh(r->app->db, j->ix, &r->a, &j->e) : 0;
  j->stream = !j->multi && j->n == 1 && !j->q[0].a.red && r->method != HM_HEAD; /* a HEAD has no body to stream */
  for (size_t i = 0; !j->rc && !j->stream && i < j->n; i++) j->rc = one_query(r, j, &j->q[i]);
  if (lazy) vw_kick(r->app->db_name, j->ix);
}

/* ---- a streamed map answer (DESIGN.md "Long reads") ------------------------------------
 * The head (total_rows, offset, update_seq) is written first, then each
 * feed step reads one batch of rows in its own transaction and sends it,
 * so an answer of any size holds one batch in memory. The request (its
 * arena, its db handle, the query's ranges) lives until the answer ends. */

typedef struct vstream {
  hreq *r;
  vjob *j;
  vw_map_opts o;
  vw_map_iter *it;
  dv_buf head;
  int nrows;                  /* rows sent */
} vstream;

struct stream_out {
  vstream *s;
  dv_buf *out;
};

static int stream_row(void *arg, const vw_row *row) {
  struct stream_out *so = arg;
  dv_buf b;
  buf_init(&b);
  json_w w;
  json_w_init(&w, &b);
  struct rows_out ro = {&w, so->s->r, so->s->j->q[0].a.attachments, 0};
  put_row(&ro, row);
  int rc = ro.rc ? ro.rc : json_w_finish(&w) ? DV_ENOMEM : 0;
  if (!rc) {
    buf_puts(so->out, so->s->nrows++ ? ",\r\n" : "\r\n");
    buf_append(so->out, b.p, b.len);
  }
  buf_free(&b);
  return rc;
}

static int stream_step(void *arg, hfeed *f, dv_buf *out) {
  (void)f;
  vstream *s = arg;
  if (s->head.len) {
    buf_append(out, s->head.p, s->head.len);
    buf_free(&s->head);
  }
  int done = 0;
  struct stream_out so = {s, out};
  if (vw_map_iter_next(s->it, stream_row, &so, &done)) return HF_FAIL; /* the status is sent: cut the body */
  if (!done) return buf_error(out) ? HF_FAIL : HF_MORE;
  buf_puts(out, "\r\n]}\n");
  return buf_error(out) ? HF_FAIL : HF_DONE;
}

static void stream_done(void *arg) {
  vstream *s = arg;
  vw_map_iter_free(s->it);
  buf_free(&s->head);
  dv_free(s);
}

static const hfeed_ops stream_ops = {stream_step, stream_done};

static void stream_start(hreq *r, vjob *j) {
  vq *q = &j->q[0];
  vstream *s = dv_calloc(1, sizeof *s);
  if (!s) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  s->r = r;
  s->j = j;
  buf_init(&s->head);
  s->o = (vw_map_opts){.ranges = q->ranges, .n_ranges = q->n_ranges, .descending = q->a.descending, .skip = q->a.skip,
                       .limit = q->a.limit, .include_docs = q->a.include_docs,
                       .doc_flags = (q->a.conflicts == 1 ? STORE_CONFLICTS : 0) |
                                    (q->a.att_encoding_info ? STORE_ATT_INFO : 0)};
  uint64_t total = 0, offset = 0;
  int rc = vw_map_meta(r->app->db, j->ix, q->v->slot, &s->o, &total, &offset);
  char seq[STORE_SEQ_STR] = "0";
  if (!rc && q->a.update_seq) {
    vw_info in;
    if (!(rc = vw_info_get(r->app->db, j->ix, &in)) && in.have_seq) store_seq_format(&in.seq, seq);
  }
  if (!rc) rc = vw_map_iter_new(r->app->db, j->ix, q->v->slot, &s->o, &s->it);
  if (rc) {
    stream_done(s);
    hres_err(r, rc);
    return;
  }
  buf_printf(&s->head, "{\"total_rows\":%llu,\"offset\":%llu", (unsigned long long)total, (unsigned long long)offset);
  if (q->a.update_seq) buf_printf(&s->head, ",\"update_seq\":\"%s\"", seq);
  buf_puts(&s->head, ",\"rows\":[");
  if (buf_error(&s->head)) {
    stream_done(s);
    hres_err(r, DV_ENOMEM);
    return;
  }
  hres_feed(r, 200, "application/json", &stream_ops, s);
}

static void view_then(hreq *r) {
  vjob *j = r->app->pending;
  if (!j->rc && j->stream) {
    stream_start(r, j);
    return;
  }
  if (j->rc) {
    qs_err e = {j->e.error, j->e.reason};
    api_qs_fail(r, j->rc, j->e.error ? &e : NULL);
  } else {
    dv_buf b;
    buf_init(&b);
    if (j->multi) buf_puts(&b, "{\"results\":[");
    for (size_t i = 0; i < j->n; i++) {
      if (i) buf_putc(&b, ',');
      buf_append(&b, j->q[i].out.p, j->q[i].out.len);
    }
    if (j->multi) buf_puts(&b, "]}");
    if (buf_error(&b)) hres_err(r, DV_ENOMEM);
    else hres_raw(r, 200, "application/json", b.p, b.len);
    buf_free(&b);
  }
  for (size_t i = 0; i < j->n; i++) buf_free(&j->q[i].out);
}

/* ---- _list: the rows through a list function (offload thread) ---------------------- */

/* Send one line to the list function; its answer ["start"|"chunks"|"end",
 * chunks…] appended to the body. */
static int list_say(vlist *l, dv_buf *line) {
  dv_buf out;
  buf_init(&out);
  int rc = buf_error(line) ? DV_ENOMEM : qs_prompt(l->p, (char *)line->p, line->len, &out, &l->a, &l->e);
  json_val *ans = NULL;
  if (!rc && json_parse(&l->a, out.p, out.len, &(json_opts){.flags = JSON_COPY}, &ans, NULL)) rc = DV_EQS_PROCESS;
  buf_free(&out);
  if (rc) return rc;
  const json_val *kind = json_arr_get(ans, 0), *chunks = json_arr_get(ans, 1);
  if (!kind || kind->type != JSON_STRING || !chunks || chunks->type != JSON_ARRAY) {
    l->e = (qs_err){"list_error", "The list function answered no chunks."};
    return DV_EQS;
  }
  for (size_t i = 0; i < chunks->len; i++)
    if (chunks->u.items[i]->type == JSON_STRING) buf_append(&l->body, chunks->u.items[i]->u.s, chunks->u.items[i]->len);
  if (kind->len == 5 && !memcmp(kind->u.s, "start", 5)) l->resp = json_arr_get(ans, 2);
  if (kind->len == 3 && !memcmp(kind->u.s, "end", 3)) l->ended = 1;
  return buf_error(&l->body) ? DV_ENOMEM : 0;
}

static int list_row_json(vlist *l, const char *json, size_t n) {
  if (l->ended) return 1; /* it stopped early: no more rows */
  dv_buf line;
  buf_init(&line);
  buf_puts(&line, "[\"list_row\",");
  buf_append(&line, json, n);
  buf_putc(&line, ']');
  int rc = list_say(l, &line);
  buf_free(&line);
  return rc ? rc : l->ended;
}

static int list_map_row(void *arg, const vw_row *row) {
  dv_buf b;
  buf_init(&b);
  json_w w;
  json_w_init(&w, &b);
  struct rows_out ro = {&w, NULL, 0, 0};
  put_row(&ro, row);
  int rc = json_w_finish(&w) ? DV_ENOMEM : list_row_json(arg, (char *)b.p, b.len);
  buf_free(&b);
  return rc;
}

static int list_red_row(void *arg, const vw_red_row *row) {
  dv_buf b;
  buf_init(&b);
  json_w w;
  json_w_init(&w, &b);
  struct rows_out ro = {&w, NULL, 0, 0};
  put_red(&ro, row);
  int rc = json_w_finish(&w) ? DV_ENOMEM : list_row_json(arg, (char *)b.p, b.len);
  buf_free(&b);
  return rc;
}

static int list_run(hreq *r, vjob *j) {
  vlist *l = j->list;
  vq *q = &j->q[0];
  store_db *db = r->app->db;
  int rc = qs_acquire(l->dd.lang, &l->p, &l->e);
  if (!rc) rc = qs_load_ddoc(l->p, &l->dd, &l->a, &l->e);
  dv_buf line;
  buf_init(&line);
  json_w w;
  json_w_init(&w, &line);
  json_w_arr_begin(&w);
  json_w_strz(&w, "ddoc");
  json_w_str(&w, l->dd.id, l->dd.id_len);
  json_w_arr_begin(&w);
  json_w_strz(&w, "lists");
  json_w_strz(&w, l->name);
  json_w_arr_end(&w);
  json_w_arr_begin(&w);
  json_w_obj_begin(&w); /* the head */
  vw_map_opts mo = {.ranges = q->ranges, .n_ranges = q->n_ranges, .descending = q->a.descending, .skip = q->a.skip,
                    .limit = q->a.limit, .include_docs = q->a.include_docs,
                    .doc_flags = q->a.conflicts == 1 ? STORE_CONFLICTS : 0};
  if (!rc && !q->a.red) {
    uint64_t total = 0, offset = 0;
    rc = vw_map_meta(db, j->ix, q->v->slot, &mo, &total, &offset);
    json_w_keyz(&w, "total_rows");
    json_w_uint(&w, total);
    json_w_keyz(&w, "offset");
    json_w_uint(&w, offset);
  }
  json_w_obj_end(&w);
  json_w_raw(&w, (char *)l->req.p, l->req.len);
  json_w_arr_end(&w);
  json_w_arr_end(&w);
  if (!rc) rc = json_w_finish(&w) ? DV_ENOMEM : list_say(l, &line);
  buf_free(&line);
  if (!rc && !l->ended) {
    if (!q->a.red) {
      rc = vw_map_rows(db, j->ix, q->v->slot, &mo, list_map_row, l);
    } else {
      vw_red_opts ro = {.ranges = q->ranges, .n_ranges = q->n_ranges, .keys = q->a.keys != NULL,
                        .descending = q->a.descending, .group_level = q->a.level, .skip = q->a.skip, .limit = q->a.limit};
      rc = vw_reduce_rows(db, j->ix, q->v, &ro, list_red_row, l, &r->a, &j->e);
    }
  }
  if (!rc && !l->ended) {
    buf_init(&line);
    buf_puts(&line, "[\"list_end\"]");
    rc = list_say(l, &line);
    buf_free(&line);
  }
  if (l->p) qs_release(l->p, rc != 0);
  l->p = NULL;
  if (rc == DV_EQS || rc == DV_EQS_PROCESS || rc == DV_EQS_COMPILE) {
    j->e.error = l->e.error;
    j->e.reason = l->e.reason;
  }
  return rc;
}

static void list_then(hreq *r) {
  vjob *j = r->app->pending;
  vlist *l = j->list;
  if (j->rc) {
    qs_err e = {j->e.error, j->e.reason};
    api_qs_fail(r, j->rc, j->e.error ? &e : NULL);
  } else {
    int64_t code = 200;
    const char *ctype = "text/html; charset=utf-8";
    const json_val *resp = l->resp && l->resp->type == JSON_OBJECT ? l->resp : NULL;
    const json_val *c = resp ? json_obj_getz(resp, "code") : NULL, *h = resp ? json_obj_getz(resp, "headers") : NULL;
    if (c && c->type == JSON_NUMBER && (json_num_int64(c->u.s, c->len, &code) || code < 100 || code > 599)) code = 200;
    for (size_t i = 0; h && h->type == JSON_OBJECT && i < h->len; i++) {
      const json_member *m = &h->u.members[i];
      if (m->val->type != JSON_STRING) continue;
      if (m->klen == 12 && !strncasecmp(m->key, "content-type", 12)) {
        char *t = arena_strndup(&r->a, m->val->u.s, m->val->len);
        if (t) ctype = t;
      }
    }
    hres_raw(r, (int)code, ctype, l->body.p, l->body.len);
    for (size_t i = 0; h && h->type == JSON_OBJECT && i < h->len; i++) {
      const json_member *m = &h->u.members[i];
      if (m->val->type != JSON_STRING || (m->klen == 12 && !strncasecmp(m->key, "content-type", 12))) continue;
      char *k = arena_strndup(&r->a, m->key, m->klen), *v = arena_strndup(&r->a, m->val->u.s, m->val->len);
      if (k && v) hres_header(r, k, v);
    }
    hres_header(r, "Vary", "Accept");
  }
  buf_free(&l->body);
  buf_free(&l->req);
  arena_free(&l->a);
}

/* ---- the handlers ---------------------------------------------------------------------- */

/* The design document and its views: 0, or -1 answered. */
static int open_views(hreq *r, json_val **doc, vw_index **ix) {
  int rc = store_doc_get(r->app->db, r->app->docid, r->app->docid_len, NULL, 0, &r->a, doc);
  if (rc) return arg_fail(r, rc == DV_EBAD_DOCID ? DV_ENOT_FOUND : rc, NULL);
  rc = vw_from_ddoc(&r->a, *doc, ix);
  if (rc == DV_ENOT_FOUND) *ix = NULL;
  else if (rc) return arg_fail(r, rc, NULL);
  return 0;
}

/* One query's view and parameters (base: the query string's, for /queries). */
static int prepare(hreq *r, vjob *j, vq *q, const char *view, size_t view_len, const json_val *body, int multi) {
  q->v = j->ix ? vw_find(j->ix, view, view_len) : NULL;
  if (!q->v) return arg_fail(r, DV_ENOT_FOUND, "missing_named_view");
  vw_args_init(&q->a);
  if (multi) { /* the query string, then the query's own members; keys and grouping never inherited */
    if (args_qs(r, &q->a)) return -1;
    q->a.keys = NULL;
    q->a.group = -1;
    q->a.group_level = -1;
    if (body && args_obj(r, &q->a, body)) return -1;
  } else {
    if (body && args_obj(r, &q->a, body)) return -1;
    if (args_qs(r, &q->a)) return -1;
  }
  const char *why = NULL;
  int rc = vw_args_check(&q->a, q->v->red >= 0, &why);
  if (rc) return arg_fail(r, rc, why);
  buf_init(&q->out);
  return plan(r, j->ix, q);
}

static void hapi_view(hreq *r) {
  dv_stat_inc(DV_ST_HTTPD_VIEW_READS);
  json_val *doc;
  vjob *j = arena_calloc(&r->a, sizeof *j);
  if (!j) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  if (open_views(r, &doc, &j->ix)) return;
  int queries = r->nseg == 6 && !strcmp(r->seg[5], "queries");
  if (r->nseg != 5 && !queries) {
    hres_errw(r, DV_ENOT_FOUND, "missing_named_view");
    return;
  }
  if (queries ? r->method != HM_POST : (r->method != HM_GET && r->method != HM_HEAD && r->method != HM_POST)) {
    hres_method(r, queries ? "POST" : "GET,POST,HEAD");
    return;
  }
  const char *view = r->seg[4];
  size_t view_len = r->seg_len[4];
  json_val *body = NULL;
  if (r->method == HM_POST && (hreq_need_json(r) || hreq_json_body(r, 1, &body))) return;
  if (!queries) {
    if (body && json_obj_getz(body, "queries")) {
      hres_errw(r, DV_EBAD_REQUEST, "The `queries` parameter is no longer supported at this endpoint");
      return;
    }
    const json_val *keys = body ? json_obj_getz(body, "keys") : NULL;
    if (keys && keys->type != JSON_ARRAY) {
      hres_errw(r, DV_EBAD_REQUEST, "`keys` member must be an array.");
      return;
    }
    j->n = 1;
    j->q = arena_calloc(&r->a, sizeof *j->q);
    if (!j->q) {
      hres_err(r, DV_ENOMEM);
      return;
    }
    if (prepare(r, j, &j->q[0], view, view_len, body, 0)) return;
  } else {
    const json_val *qs = json_obj_getz(body, "queries");
    if (!qs) {
      hres_errw(r, DV_EBAD_REQUEST, "POST body must include `queries` parameter.");
      return;
    }
    if (qs->type != JSON_ARRAY) {
      hres_errw(r, DV_EBAD_REQUEST, "`queries` member must be an array.");
      return;
    }
    j->multi = 1;
    j->n = qs->len;
    j->q = arena_calloc(&r->a, (j->n ? j->n : 1) * sizeof *j->q);
    if (!j->q) {
      hres_err(r, DV_ENOMEM);
      return;
    }
    for (size_t i = 0; i < j->n; i++) {
      const json_val *one = qs->u.items[i];
      if (one->type != JSON_OBJECT) {
        hres_errw(r, DV_EBAD_REQUEST, "Each query must be a JSON object.");
        return;
      }
      const json_val *keys = json_obj_getz(one, "keys");
      if (keys && keys->type != JSON_ARRAY) {
        hres_errw(r, DV_EBAD_REQUEST, "`keys` member must be an array.");
        return;
      }
      if (prepare(r, j, &j->q[i], view, view_len, one, 1)) return;
    }
  }
  r->app->pending = j;
  hres_offload(r, view_work, view_then);
}

void api_view_list(hreq *r, const json_val *vdoc, const char *view, size_t view_len, const qs_ddoc *list_dd,
                   const char *list_name, const json_val *body) {
  vjob *j = arena_calloc(&r->a, sizeof *j);
  vlist *l = arena_calloc(&r->a, sizeof *l);
  j = j && l ? j : NULL;
  if (!j || !(j->q = arena_calloc(&r->a, sizeof *j->q))) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  int rc = vw_from_ddoc(&r->a, vdoc, &j->ix);
  if (rc && rc != DV_ENOT_FOUND) {
    hres_err(r, rc);
    return;
  }
  if (rc) j->ix = NULL;
  j->n = 1;
  const json_val *keys = body ? json_obj_getz(body, "keys") : NULL;
  json_val kb = {0};
  if (keys) { /* only keys is taken from a POST body */
    kb.type = JSON_OBJECT;
    kb.len = 1;
    json_member *m = arena_alloc(&r->a, sizeof *m);
    if (!m) {
      hres_err(r, DV_ENOMEM);
      return;
    }
    *m = (json_member){"keys", 4, (json_val *)keys};
    kb.u.members = m;
  }
  if (prepare(r, j, &j->q[0], view, view_len, keys ? &kb : NULL, 0)) return;
  arena_init(&l->a, 0);
  buf_init(&l->body);
  buf_init(&l->req);
  l->dd = *list_dd;
  l->name = list_name;
  if (api_js_req(r, NULL, &l->req)) {
    buf_free(&l->req);
    return;
  }
  j->list = l;
  r->app->pending = j;
  hres_offload(r, view_work, list_then);
}

/* GET /{db}/_design/{ddoc}/_info */
static void hapi_info(hreq *r) {
  json_val *doc;
  vw_index *ix;
  if (open_views(r, &doc, &ix)) return;
  if (r->method != HM_GET && r->method != HM_HEAD) {
    hres_method(r, "GET");
    return;
  }
  vw_info in = {0};
  int rc = ix ? vw_info_get(r->app->db, ix, &in) : 0;
  if (rc) {
    hres_err(r, rc);
    return;
  }
  char seq[STORE_SEQ_STR] = "0";
  if (in.have_seq) store_seq_format(&in.seq, seq);
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "name");
  json_w_str(&w, r->app->docid + 8, r->app->docid_len - 8);
  json_w_keyz(&w, "view_index");
  json_w_obj_begin(&w); /* CouchDB 3.4's cluster merge: reverse alphabetical */
  json_w_keyz(&w, "waiting_commit");
  json_w_bool(&w, 0);
  json_w_keyz(&w, "waiting_clients");
  json_w_int(&w, 0);
  json_w_keyz(&w, "updater_running");
  json_w_bool(&w, in.updater_running);
  json_w_keyz(&w, "update_seq");
  json_w_strz(&w, seq);
  json_w_keyz(&w, "sizes");
  json_w_obj_begin(&w);
  json_w_keyz(&w, "file");
  json_w_int(&w, 0);
  json_w_keyz(&w, "external");
  json_w_int(&w, 0);
  json_w_keyz(&w, "active");
  json_w_int(&w, 0);
  json_w_obj_end(&w);
  json_w_keyz(&w, "signature");
  json_w_strz(&w, ix ? ix->sig_hex : "00000000000000000000000000000000");
  json_w_keyz(&w, "purge_seq");
  json_w_int(&w, in.purge_seq);
  json_w_keyz(&w, "language");
  json_w_strz(&w, ix ? ix->lang : "javascript");
  json_w_keyz(&w, "compact_running");
  json_w_bool(&w, 0);
  json_w_obj_end(&w);
  json_w_obj_end(&w);
}

/* ---- _view_cleanup's work: the signatures the design documents use -------------- */

struct keep_arg {
  dv_arena a;
  uint8_t (*sigs)[VW_SIG_LEN];
  size_t n, cap;
  int rc;
};

static int keep_row(void *arg, const store_doc_row *row) {
  struct keep_arg *k = arg;
  vw_index *ix;
  if (!row->doc || vw_from_ddoc(&k->a, row->doc, &ix)) return 0;
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 16;
    uint8_t (*s)[VW_SIG_LEN] = arena_alloc(&k->a, cap * sizeof *s);
    if (!s) return k->rc = DV_ENOMEM;
    if (k->n) memcpy(s, k->sigs, k->n * sizeof *s);
    k->sigs = s;
    k->cap = cap;
  }
  memcpy(k->sigs[k->n++], ix->sig, VW_SIG_LEN);
  return 0;
}

int api_view_cleanup(store_db *db) {
  struct keep_arg k = {0};
  arena_init(&k.a, 0);
  store_range rg;
  store_range_init(&rg);
  int rc = store_all_docs(db, STORE_DESIGN, &rg, 1, 0, keep_row, &k);
  if (!rc) rc = k.rc;
  if (!rc) rc = vw_cleanup(db, (const uint8_t(*)[VW_SIG_LEN])k.sigs, k.n, NULL);
  arena_free(&k.a);
  return rc;
}

/* ---- routes ------------------------------------------------------------------------- */

/* POST /{db}/_temp_view: gone since CouchDB 2.0 */
static void hapi_temp_view(hreq *r) { hres_err(r, DV_EGONE_TEMP_VIEW); }

static const http_route routes[] = {
    {HTTP_ANY, "/{db}/_temp_view", API_NEEDS_DB, hapi_temp_view},
    {HTTP_ANY, "/{db}/_design/{id}/_view/{rest}", API_NEEDS_DB, hapi_view},
    {HTTP_ANY, "/{db}/_design/{id}/_info", API_NEEDS_DB, hapi_info},
};
const api_routes api_view_routes = API_TABLE(routes);
