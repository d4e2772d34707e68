/* mango.c — Mango's endpoints, as CouchDB 3.4's mango_httpd answers them:
 * POST/GET /{db}/_index, DELETE /{db}/_index/{ddoc}/json/{name},
 * POST /{db}/_index/_bulk_delete, POST /{db}/_find, POST /{db}/_explain.
 *
 * What an index is and what a query does lives in index/ (mquery.h: the
 * options, the design document an index adds to, the list, the query and
 * its plan; mindex.h: the index registry and builder). This file reads
 * the request, writes the design documents through the normal write path
 * (api_may_write, then the store with the requester's write context, so
 * design documents need a db admin and validators run), and writes the
 * answers.
 *
 * _find streams its documents: mq_find runs on one of a few producer
 * threads (started once, FIND_WORKERS; a query waits in their queue when
 * all are busy) that hands each document, serialised, to a bounded buffer
 * the response's feed drains; the feed is woken at the first document,
 * every FIND_WAKE bytes and at the end, not per document. The status waits
 * for the first document or the end of the query, so an error before any
 * document is an ordinary error answer, and one after it cuts the body.
 * The query owns its own arena, copy of the request body and database
 * handle, so it may outlive the request (a client that leaves stops it at
 * its next document). A thread per query cost a third of _find's time
 * (thread creation and teardown in the kernel, RocksDB's thread-local
 * set-up), measured with perf under wrk.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "index/mindex.h"
#include "index/mqidx.h"
#include "index/mquery.h"
#include "util/alloc.h"
#include "util/thread.h"

/* ---- writing a design document ------------------------------------------------- */

/* An index write in flight (api_update): its edit and what to answer. */
typedef struct idx_w {
  api_write w;
  store_edit e;
  const char *name;     /* POST: the index's name */
  int del;              /* DELETE: answer {"ok":true} */
} idx_w;

static void kick(hreq *r) { mindex_kick(r->app->db_name, strlen(r->app->db_name)); }

/* CouchDB's error_saving_ddoc for a failed save (mango_httpd), except the
 * core's refusals (not a db admin, a validator), which are answered as is. */
static void save_err(hreq *r, int rc, const char *why) {
  if (store_refusal(rc)) hres_errw(r, rc, why);
  else if (rc == DV_ECONFLICT)
    hres_errw(r, DV_EMQ_SAVING, "Encountered a conflict while saving the design document.");
  else
    hres_errwf(r, DV_EMQ_SAVING, "Unknown error while saving the design document: %s", dv_err_couch(rc));
}

static void idx_written(hreq *r) {
  idx_w *p = r->app->pending;
  int rc = p->w.rc ? p->w.rc : p->e.rc;
  if (p->del) { /* mango_idx:delete takes any {ok,_} of the save: per-doc errors are not looked at */
    if (p->w.rc) {
      save_err(r, p->w.rc, NULL);
      return;
    }
    if (!rc) kick(r);
    hres_ok(r, 200);
    return;
  }
  if (rc) {
    save_err(r, rc, p->e.why);
    return;
  }
  kick(r);
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "result");
  json_w_strz(&w, "created");
  json_w_keyz(&w, "id");
  json_w_str(&w, p->e.id, p->e.id_len);
  json_w_keyz(&w, "name");
  json_w_strz(&w, p->name);
  json_w_obj_end(&w);
}

/* Write doc (a design document with _id, and _rev unless new) as the
 * requester; the answer comes from idx_written. */
static void ddoc_write(hreq *r, const char *id, json_val *doc, const char *name, int del) {
  const char *why = NULL;
  size_t n = strlen(id);
  int rc = api_may_write(r, id, n, 0, &doc, &why);
  if (rc) {
    hres_errw(r, rc, why);
    return;
  }
  idx_w *p = arena_calloc(&r->a, sizeof *p);
  if (!p) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  rc = store_edit_from_json(&r->a, doc, 1, &p->e);
  if (rc) {
    save_err(r, rc, NULL);
    return;
  }
  p->e.id = id;
  p->e.id_len = n;
  p->name = name;
  p->del = del;
  r->app->pending = p;
  api_update(r, &p->w, &p->e, 1, 1, idx_written);
}

/* The stored design document, or *out NULL when it is missing or deleted. */
static int ddoc_get(hreq *r, const char *id, json_val **out) {
  int rc = store_doc_get(r->app->db, id, strlen(id), NULL, 0, &r->a, out);
  if (rc == DV_ENOT_FOUND || rc == DV_EDELETED) {
    *out = NULL;
    rc = 0;
  }
  return rc;
}

/* ---- POST /{db}/_index ------------------------------------------------------------- */

static void idx_create(hreq *r) {
  mq_index_req q;
  const char *why = NULL;
  int rc = mq_index_parse(&r->a, r->json, &q, &why);
  if (rc) {
    hres_errw(r, rc, why);
    return;
  }
  json_val *old, *doc;
  int exists = 0;
  if ((rc = ddoc_get(r, q.ddoc, &old)) || (rc = mq_index_add(&r->a, old, &q, &doc, &exists, &why))) {
    hres_errw(r, rc, why);
    return;
  }
  if (exists) {
    json_w w;
    hres_jw(r, 200, &w);
    json_w_obj_begin(&w);
    json_w_keyz(&w, "result");
    json_w_strz(&w, "exists");
    json_w_keyz(&w, "id");
    json_w_strz(&w, q.ddoc);
    json_w_keyz(&w, "name");
    json_w_strz(&w, q.name);
    json_w_obj_end(&w);
    return;
  }
  ddoc_write(r, q.ddoc, doc, q.name, 0);
}

/* ---- GET /{db}/_index --------------------------------------------------------------- */

/* list_to_integer: an optional sign and digits, nothing else. */
static int erl_int(const char *s, int64_t *out) {
  const char *p = s + (*s == '-' || *s == '+');
  if (!*p || strlen(p) > 18) return -1;
  for (const char *c = p; *c; c++)
    if (*c < '0' || *c > '9') return -1;
  *out = strtoll(s, NULL, 10);
  return 0;
}

static void idx_list(hreq *r) {
  mi_def *d;
  size_t n;
  int rc = mi_list(r->app->db, &r->a, &d, &n);
  if (rc) {
    hres_err(r, rc);
    return;
  }
  json_val *all = mq_index_list_json(&r->a, d, n);
  if (!all) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  int64_t total = (int64_t)all->len, limit = total, skip = 0;
  const char *ls = hq_get(r, "limit", NULL), *ss = hq_get(r, "skip", NULL);
  if ((ls && (erl_int(ls, &limit) || limit < 1)) || (ss && (erl_int(ss, &skip) || skip < 0))) {
    hres_err(r, DV_EMQ_LIST_PARAMS); /* CouchDB answers these with a 500 */
    return;
  }
  if (skip > total) skip = total;
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "total_rows");
  json_w_int(&w, total);
  json_w_keyz(&w, "indexes");
  json_w_arr_begin(&w);
  for (int64_t i = skip; i < total && i - skip < limit; i++) json_w_val(&w, all->u.items[i]);
  json_w_arr_end(&w);
  json_w_obj_end(&w);
}

/* ---- DELETE /{db}/_index/{ddoc}/json/{name}, _bulk_delete ----------------------------- */

/* "_design/" + id unless it has the prefix, in r->a. */
static char *design_id(hreq *r, const char *s, size_t n) {
  if (n >= 8 && !memcmp(s, "_design/", 8)) return arena_strndup(&r->a, s, n);
  char *id = arena_alloc(&r->a, 8 + n + 1);
  if (!id) return NULL;
  memcpy(id, "_design/", 8);
  memcpy(id + 8, s, n);
  id[8 + n] = 0;
  return id;
}

/* mango_idx:remove on the stored ddoc: the view gone, "views" gone when
 * empty, and a tombstone when only {"language":"query"} is left. *out the
 * document to write, NULL when the ddoc is gone already. */
static int without_view(hreq *r, const char *id, const char *name, json_val **out) {
  json_val *old;
  int rc = ddoc_get(r, id, &old);
  *out = NULL;
  if (rc || !old) return rc;
  json_val *doc = json_dup(&r->a, old);
  if (!doc) return DV_ENOMEM;
  json_val *views = json_obj_getz(doc, "views");
  if (views && views->type == JSON_OBJECT) {
    json_obj_del(views, name, strlen(name));
    if (!views->len) json_obj_del(doc, "views", 5);
  }
  size_t rest = 0;
  int lang_only = 1;
  for (size_t i = 0; i < doc->len; i++) {
    const json_member *m = &doc->u.members[i];
    if ((m->klen == 3 && !memcmp(m->key, "_id", 3)) || (m->klen == 4 && !memcmp(m->key, "_rev", 4))) continue;
    rest++;
    if (!(m->klen == 8 && !memcmp(m->key, "language", 8))) lang_only = 0;
  }
  if (rest == 1 && lang_only) {
    json_val *t = json_new_object(&r->a);
    if (!t || json_obj_setz(&r->a, t, "_id", json_obj_getz(doc, "_id")) ||
        json_obj_setz(&r->a, t, "_rev", json_obj_getz(doc, "_rev")) ||
        json_obj_setz(&r->a, t, "_deleted", json_new_bool(&r->a, 1)))
      return DV_ENOMEM;
    doc = t;
  }
  *out = doc;
  return 0;
}

static void idx_delete(hreq *r) {
  int six = r->nseg == 6;
  if (six && (r->method != HM_DELETE || strcmp(r->seg[2], "_design"))) { /* CouchDB's catch-all */
    hres_err(r, DV_ENOT_FOUND);
    return;
  }
  char *id = six ? design_id(r, r->seg[3], r->seg_len[3]) : design_id(r, r->seg[2], r->seg_len[2]);
  const char *type = r->seg[r->nseg - 2], *name = r->seg[r->nseg - 1];
  if (!id) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  mi_def *d;
  size_t n, k;
  int rc = mi_list(r->app->db, &r->a, &d, &n);
  if (rc) {
    hres_err(r, rc);
    return;
  }
  for (k = 0; k < n && (strcmp(d[k].ddoc, id) || strcmp(d[k].name, name)); k++) {
  }
  if (k == n || strcmp(type, "json")) {
    hres_err(r, DV_ENOT_FOUND);
    return;
  }
  json_val *doc;
  if ((rc = without_view(r, id, name, &doc))) {
    hres_err(r, rc);
    return;
  }
  if (!doc) {
    hres_err(r, DV_ENOT_FOUND);
    return;
  }
  ddoc_write(r, id, doc, name, 1);
}

/* One _bulk_delete entry, prepended as CouchDB's fold does. */
static int entry(hreq *r, json_val *arr, const char *id, const char *key, json_val *v) {
  json_val *o = json_new_object(&r->a);
  if (!o || json_obj_setz(&r->a, o, "id", json_new_stringz(&r->a, id)) || json_obj_setz(&r->a, o, key, v) ||
      json_arr_push(&r->a, arr, o))
    return DV_ENOMEM;
  memmove(arr->u.items + 1, arr->u.items, (arr->len - 1) * sizeof *arr->u.items);
  arr->u.items[0] = o;
  return 0;
}

static void bulk_delete(hreq *r) {
  const json_val *ids;
  const char *why0 = NULL;
  int rc0 = mq_bulk_delete_parse(&r->a, r->json, &ids, &why0);
  if (rc0) {
    hres_errw(r, rc0, why0);
    return;
  }
  json_val *ok = json_new_array(&r->a), *fail = json_new_array(&r->a);
  if (!ok || !fail) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  store_wctx wc;
  store_user su;
  api_wctx(r, &wc, &su);
  for (size_t i = 0; i < ids->len; i++) {
    const json_val *v = ids->u.items[i];
    if (v->type != JSON_STRING) { /* valid for use_index, but mango_httpd crashes on it */
      hres_errw(r, DV_EMQ_UNKNOWN, "Unknown Error: docids must be strings.");
      return;
    }
    char *id = design_id(r, v->u.s, v->len);
    mi_def *d;
    size_t n, found = 0, at = 0;
    int rc = id ? mi_list(r->app->db, &r->a, &d, &n) : DV_ENOMEM;
    for (size_t k = 0; !rc && k < n; k++)
      if (!strcmp(d[k].ddoc, id)) found++, at = k;
    if (!rc && found > 1) { /* mango_httpd's case_clause: the request fails, what was deleted stays */
      hres_errwf(r, DV_EMQ_UNKNOWN, "Unknown Error: %s holds more than one index.", id);
      return;
    }
    json_val *doc = NULL;
    if (!rc && found) rc = without_view(r, id, d[at].name, &doc);
    if (!rc && doc) {
      const char *why = NULL;
      rc = api_may_write(r, id, strlen(id), 0, &doc, &why);
      if (rc) {
        hres_errw(r, rc, why);
        return;
      }
      store_edit e;
      rc = store_edit_from_json(&r->a, doc, 1, &e);
      if (!rc) {
        e.id = id;
        e.id_len = strlen(id);
        rc = store_update(r->app->db, &wc, &e, 1, 1);
      }
      if (!rc) kick(r);
    }
    if (rc) {
      hres_err(r, rc);
      return;
    }
    rc = doc ? entry(r, ok, id, "ok", json_new_bool(&r->a, 1))
             : entry(r, fail, id, "error", json_new_stringz(&r->a, "not_found"));
    if (rc) {
      hres_err(r, rc);
      return;
    }
  }
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "success");
  json_w_val(&w, ok);
  json_w_keyz(&w, "fail");
  json_w_val(&w, fail);
  json_w_obj_end(&w);
}

/* ---- POST /{db}/_explain -------------------------------------------------------------- */

static void explain(hreq *r) {
  mq_req *q;
  json_val *out;
  const char *why = NULL;
  int rc = mq_parse(&r->a, r->json, &q, &why);
  if (!rc) rc = mq_explain(r->app->db, &r->a, q, &out, &why);
  if (rc) hres_errw(r, rc, why);
  else hres_json(r, 200, out);
}

/* ---- POST /{db}/_find ------------------------------------------------------------------ */

#define FIND_HIGH (256u << 10) /* bytes the producer may hold before it waits for the feed */
#define FIND_WAKE (32u << 10)  /* bytes it gathers before it wakes the feed */
#define FIND_WORKERS 16        /* producer threads */

/* One streamed _find: the producer's state and the feed's. mu guards the
 * fields from out down. */
typedef struct fstream {
  hreq *r;              /* the request, until the answer is set (answered) */
  dv_arena a;           /* the producer's: the body's copy, the query, its work */
  store_db *db;         /* a handle of the producer's own */
  mq_req *q;            /* the parsed query (in a) */
  struct fstream *next; /* the producers' queue */
  int head;             /* the feed wrote '{"docs":[' */
  pthread_mutex_t mu;
  pthread_cond_t cv;    /* room in out, or stop */
  dv_buf out;           /* documents produced, not yet handed to the feed */
  hfeed *f;             /* the feed, once its first step ran */
  int64_t ndocs;        /* documents produced */
  int answered;         /* hdefer_done was called */
  int finished;         /* mq_find returned */
  int stop;             /* the response is over: stop producing */
  int queued;           /* handed to the producers: wait for exited */
  int exited;           /* the producer is done with it */
  int rc;               /* mq_find's result */
  const char *why;      /* its reason (in a) */
  mq_result res;        /* what follows the documents */
} fstream;

static void fs_free(fstream *s) {
  store_db_close(s->db);
  buf_free(&s->out);
  arena_free(&s->a);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  dv_free(s);
}

/* The producer has news: the first news answers the request, later news
 * wakes the feed. Called with mu held; unlocks it. */
static void fs_tell(fstream *s) {
  int first = !s->answered;
  s->answered = 1;
  hfeed *f = s->f;
  hreq *r = s->r;
  pthread_mutex_unlock(&s->mu);
  if (first) hdefer_done(r);
  else if (f) hfeed_wake(f);
}

/* Wait until the producer no longer uses s (called with mu held). */
static void fs_wait_exit(fstream *s) {
  while (s->queued && !s->exited) pthread_cond_wait(&s->cv, &s->mu);
}

static int fs_doc(void *arg, const json_val *doc) {
  fstream *s = arg;
  dv_buf t;
  buf_init(&t);
  if (json_write(&t, doc)) {
    buf_free(&t);
    return DV_ENOMEM;
  }
  pthread_mutex_lock(&s->mu);
  while (s->out.len > FIND_HIGH && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
  if (s->stop) {
    pthread_mutex_unlock(&s->mu);
    buf_free(&t);
    return 1;
  }
  buf_puts(&s->out, s->ndocs ? ",\r\n" : "\r\n");
  buf_append(&s->out, t.p, t.len);
  buf_free(&t);
  s->ndocs++;
  int rc = buf_error(&s->out) ? DV_ENOMEM : 0;
  if (!s->answered || s->out.len >= FIND_WAKE) fs_tell(s);
  else pthread_mutex_unlock(&s->mu);
  return rc;
}

static void fs_run(fstream *s) {
  mq_sink sink = {fs_doc, s};
  mq_result res = {0};
  const char *why = NULL;
  pthread_mutex_lock(&s->mu);
  int stop = s->stop;
  pthread_mutex_unlock(&s->mu);
  int rc = stop ? 1 : mq_find(s->db, &s->a, s->q, &sink, &res, &why);
  pthread_mutex_lock(&s->mu);
  s->finished = 1;
  s->rc = rc;
  s->why = why;
  s->res = res;
  fs_tell(s);
  pthread_mutex_lock(&s->mu);
  s->exited = 1; /* from here on s is the response's */
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

/* The producers: FIND_WORKERS threads started by the first _find, taking
 * queries in order. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  fstream *head, *tail;
  int started;
} P = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0};

static void *producer(void *arg) {
  dv_thread_name("dv-mango-feed");
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&P.mu);
    while (!P.head) pthread_cond_wait(&P.cv, &P.mu);
    fstream *s = P.head;
    P.head = s->next;
    if (!P.head) P.tail = NULL;
    pthread_mutex_unlock(&P.mu);
    fs_run(s);
  }
  return NULL;
}

/* Queue s for a producer: 0, or DV_ENOMEM when none could start. */
static int fs_queue(fstream *s) {
  pthread_mutex_lock(&P.mu);
  for (; P.started < FIND_WORKERS; P.started++) {
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int bad = pthread_create(&th, &at, producer, NULL);
    pthread_attr_destroy(&at);
    if (bad) break;
  }
  if (!P.started) {
    pthread_mutex_unlock(&P.mu);
    return DV_ENOMEM;
  }
  s->next = NULL;
  if (P.tail) P.tail->next = s;
  else P.head = s;
  P.tail = s;
  pthread_cond_signal(&P.cv);
  pthread_mutex_unlock(&P.mu);
  return 0;
}

/* {"docs":[ … documents … \r\n],\r\n"bookmark": …[,\r\n"execution_stats": …][,\r\n"warning": …]}\r\n */
static int fs_step(void *arg, hfeed *f, dv_buf *out) {
  fstream *s = arg;
  if (!s->head) {
    buf_puts(out, "{\"docs\":[");
    s->head = 1;
  }
  pthread_mutex_lock(&s->mu);
  s->f = f;
  if (s->out.len) {
    buf_append(out, s->out.p, s->out.len);
    buf_reset(&s->out);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return HF_MORE;
  }
  int done = s->finished;
  pthread_mutex_unlock(&s->mu);
  if (!done) return HF_WAIT;
  if (s->rc < 0) return HF_FAIL; /* the status is sent: cut the body */
  buf_puts(out, "\r\n]");
  json_w w;
  if (s->res.ran) {
    buf_puts(out, ",\r\n\"bookmark\": ");
    json_escape(out, s->res.bookmark ? s->res.bookmark : "nil", strlen(s->res.bookmark ? s->res.bookmark : "nil"));
    if (s->res.stats) {
      buf_puts(out, ",\r\n\"execution_stats\": ");
      json_w_init(&w, out);
      json_w_val(&w, s->res.stats);
      if (json_w_finish(&w)) return HF_FAIL;
    }
    if (s->res.warning) {
      buf_puts(out, ",\r\n\"warning\": ");
      json_escape(out, s->res.warning, strlen(s->res.warning));
    }
  }
  buf_puts(out, "}\r\n");
  return HF_DONE;
}

static void fs_done(void *arg) {
  fstream *s = arg;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv);
  fs_wait_exit(s);
  pthread_mutex_unlock(&s->mu);
  fs_free(s);
}

static const hfeed_ops fs_ops = {fs_step, fs_done};

/* The producer's first news: an error before any document, or the feed. */
static void fs_answer(hreq *r) {
  fstream *s = r->app->pending;
  r->app->pending = NULL;
  pthread_mutex_lock(&s->mu);
  int err = s->finished && !s->ndocs && s->rc < 0;
  s->r = NULL;
  if (err) fs_wait_exit(s);
  pthread_mutex_unlock(&s->mu);
  if (err) {
    hres_errw(r, s->rc, s->why);
    fs_free(s);
    return;
  }
  hres_feed(r, 200, "application/json", &fs_ops, s);
}

static void find(hreq *r) {
  fstream *s = dv_calloc(1, sizeof *s);
  if (!s) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  arena_init(&s->a, 0);
  buf_init(&s->out);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->r = r;
  const char *why = NULL;
  json_val *body = json_dup(&s->a, r->json);
  int rc = body ? store_db_open(api_store(r), r->app->db_name, &s->db) : DV_ENOMEM;
  if (!rc) rc = mq_parse(&s->a, body, &s->q, &why);
  if (rc) {
    hres_errw(r, rc, why);
    fs_free(s);
    return;
  }
  r->app->pending = s;
  hres_defer_then(r, fs_answer);
  s->queued = 1;
  if (fs_queue(s)) { /* no producer: answered as a failed query */
    pthread_mutex_lock(&s->mu);
    s->queued = 0;
    s->finished = 1;
    s->rc = DV_ENOMEM;
    fs_tell(s);
  }
}

/* ---- routes ------------------------------------------------------------------------------ */

static void only_get_post(hreq *r) { hres_method(r, "GET,POST"); }

static const http_route routes[] = {
    {GET_HEAD, "/{db}/_index", API_NEEDS_DB, idx_list},
    {M(POST), "/{db}/_index", API_NEEDS_DB | HTTP_JSON_OBJECT, idx_create},
    {HTTP_ANY, "/{db}/_index", API_NEEDS_DB, only_get_post},
    {M(POST), "/{db}/_index/_bulk_delete", API_NEEDS_DB | HTTP_JSON_OBJECT, bulk_delete},
    {M(DELETE), "/{db}/_index/{any}/{any}/{any}", API_NEEDS_DB, idx_delete},
    {HTTP_ANY, "/{db}/_index/{any}/{any}/{any}/{any}", API_NEEDS_DB, idx_delete},
    {HTTP_ANY, "/{db}/_index/{rest}", API_NEEDS_DB, hapi_missing},
    {M(POST), "/{db}/_find", API_NEEDS_DB | HTTP_JSON_OBJECT, find},
    {M(POST), "/{db}/_explain", API_NEEDS_DB | HTTP_JSON_OBJECT, explain},
};
const api_routes api_mango_routes = API_TABLE(routes);
