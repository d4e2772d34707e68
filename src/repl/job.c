/* job.c — one run of a replication, CouchDB's replication protocol as the
 * client (CouchDB docs, "Replication Protocol").
 *
 * Data flow of job_run:
 *   1. Peers: GET source/ and target/ (404 ─▶ db_not_found, 401/403 ─▶
 *      unauthorized; a missing target is created with create_target). A
 *      design-document filter's code is fetched from the source (it is part
 *      of the replication id).
 *   2. Id and checkpoints: repl_id_make; GET _local/<id> on both sides; the
 *      start seq is the source_last_seq when both logs name the same
 *      session, else the recorded_seq of the newest session both histories
 *      share, else 0 (since_seq overrides).
 *   3. Loop: GET/POST source/_changes?style=all_docs&since=S&limit=W*B
 *      (feed=normal for one-shot, feed=longpoll&heartbeat for continuous;
 *      filters as _doc_ids / _selector / ddoc filter). The rows are cut
 *      into W slices, one per worker thread; each worker, on its own kept-
 *      alive connections:
 *        POST target/_revs_diff ─▶ missing revs (+ possible ancestors)
 *        POST source/_bulk_get?revs=true&latest=true (or, when the source
 *          has none, GET doc?open_revs=[…]&revs=true&latest=true)
 *        docs with attachments: GET doc?open_revs=[rev]&revs=true&latest=true
 *          &attachments=true&atts_since=[ancestors] with Accept:
 *          multipart/mixed; each multipart/related part is PUT as it came
 *          to target/doc?new_edits=false, JSON parts join the batch
 *        POST target/_bulk_docs {"docs":[…],"new_edits":false} (a 413
 *          splits the batch in halves)
 *      When every worker is done, the batch's last_seq is "through"; a
 *      checkpoint (POST target/_ensure_full_commit, then PUT _local/<id> on
 *      both sides with the session's history entry first) is written every
 *      checkpoint_interval and at the end.
 *   4. One-shot: ends when a batch comes back short; the answer is the
 *      target's checkpoint (ok, session_id, source_last_seq, history).
 *
 * Every request goes through rhttp.c's retries; an error that survives
 * them ends the run, and the manager decides about retrying the job.
 * Nothing is written to the target except with new_edits=false, so a batch
 * repeated after a crash writes the same revisions again: no duplicates.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/multipart.h"
#include "repl/repl_int.h"
#include "util/alloc.h"
#include "util/thread.h"

#define JOB_HEARTBEAT_MS 10000
#define JOB_HISTORY_MAX 50

void repl_result_err(repl_result *res, int rc, const char *fmt, ...) {
  res->rc = rc ? rc : DV_EREPL_FAILED;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dv_free(res->reason);
  res->reason = dv_strndup(msg, strlen(msg));
}


static void rfc1123(char out[40]) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 40, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void add(int64_t *p, int64_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }

/* ---- shared state of a run --------------------------------------------------- */

typedef struct run {
  rjob *j;
  const repl_spec *s;
  rh_conn src, tgt;          /* the control connections */
  int bulk_get;              /* 1 while the source answers _bulk_get */
  int multipart;             /* 1: the target takes CouchDB's multipart PUT with
                                gzip-encoded parts (CouchDB, divan); else
                                attachments travel as inline base64 JSON */
  char *filter_code;         /* a design-document filter's source */
  dv_arena a;                /* checkpoint logs, strings of the run */
  json_val *src_log, *tgt_log;
  char *src_rev, *tgt_rev;   /* _local/<id> revs (malloc'd: a long run rewrites them) */
  json_val *start_hist;      /* the target log's history at start */
  char session[33];
  char start_time[40];
  char *start_seq;           /* JSON text */
  char *through;             /* JSON text of the last seq fully done */
  repl_result *res;
} run;

typedef struct worker {
  run *x;
  rh_conn src, tgt;
  dv_arena a;
  json_val **rows;
  size_t n;
  pthread_t th;
  int rc;           /* 0, or what stopped the slice (DV_ECANCELLED: halted) */
  int answer;       /* then the code the run answers with (repl_result.rc) */
  char reason[384]; /* and its reason */
} worker;

/* The first error of a slice: rc stops it, answer and the reason are what
 * the run reports. */
static void werr(worker *w, int rc, int answer, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void werr(worker *w, int rc, int answer, const char *fmt, ...) {
  if (w->rc) return;
  w->rc = rc ? rc : DV_EIO;
  w->answer = answer;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->reason, sizeof w->reason, fmt, ap);
  va_end(ap);
}

/* A request whose answer is JSON: 0 with *out (in a) and *status; a
 * transport failure is DV_EIO with c->err. */
static int req_json(rh_conn *c, const char *method, const char *path, const char *body, size_t len,
                    dv_arena *a, long *status, json_val **out) {
  rh_resp r;
  *out = NULL;
  int rc = rh_do(c, method, path, NULL, body ? "application/json" : NULL, body, len, &r);
  if (rc) return rc;
  *status = r.status;
  json_opts jo = {.flags = JSON_COPY | JSON_CSTR};
  json_err je;
  if (r.body.len && json_parse(a, r.body.p, r.body.len, &jo, out, &je)) *out = NULL;
  rh_resp_free(&r);
  return 0;
}

static const char *jstr(const json_val *o, const char *k) {
  const json_val *v = json_obj_getz(o, k);
  return v && v->type == JSON_STRING ? v->u.s : NULL;
}

static char *jtext(dv_arena *a, const json_val *v) {
  dv_buf b;
  buf_init(&b);
  char *s = NULL;
  if (v && !json_write(&b, v)) s = arena_strndup(a, (char *)b.p, b.len);
  buf_free(&b);
  return s;
}

/* The reason of an error answer, for messages. */
static const char *why(const json_val *v) {
  const char *r = v ? jstr(v, "reason") : NULL;
  return r ? r : "";
}

/* ---- 1. peers ------------------------------------------------------------------ */

static int check_peer(run *x, rh_conn *c, const repl_ep *e, int create) {
  dv_arena a;
  arena_init(&a, 0);
  long st = 0;
  json_val *v;
  dv_buf shown;
  buf_init(&shown);
  repl_ep_show(e, &shown);
  buf_putc(&shown, 0);
  int rc = req_json(c, "GET", "", NULL, 0, &a, &st, &v);
  if (!rc && st == 404 && create) {
    rc = req_json(c, "PUT", "", NULL, 0, &a, &st, &v);
    if (!rc && (st == 201 || st == 202 || st == 412)) rc = req_json(c, "GET", "", NULL, 0, &a, &st, &v);
  }
  if (rc == DV_ECANCELLED) {
    repl_result_err(x->res, DV_EREPL_CANCELLED, "The replication was cancelled.");
  } else if (rc) {
    repl_result_err(x->res, DV_EREPL_UNREACHABLE, "could not open %s: %s", (char *)shown.p, c->err);
  } else if (st == 401 || st == 403) {
    repl_result_err(x->res, DV_EUNAUTHORIZED, "unauthorized to access or create database %s",
                    (char *)shown.p);
    rc = DV_EINVAL;
  } else if (st != 200) {
    repl_result_err(x->res, DV_EDB_NOT_FOUND, "could not open %s", (char *)shown.p);
    rc = DV_ENOT_FOUND;
  }
  buf_free(&shown);
  arena_free(&a);
  return rc;
}

static int fetch_filter(run *x) {
  const char *f = x->s->filter;
  if (!f || !strcmp(f, "_doc_ids") || !strcmp(f, "_selector")) return 0;
  const char *slash = strchr(f, '/');
  dv_buf p;
  buf_init(&p);
  buf_puts(&p, "_design/");
  rh_escape(&p, f, (size_t)(slash - f));
  buf_putc(&p, 0);
  long st = 0;
  json_val *d;
  int rc = buf_error(&p) ? DV_ENOMEM : req_json(&x->src, "GET", (char *)p.p, NULL, 0, &x->a, &st, &d);
  buf_free(&p);
  if (rc) {
    repl_result_err(x->res, DV_EREPL_FILTER_FETCH, "Couldn't fetch the filter %s: %s", f, x->src.err);
    return rc;
  }
  const json_val *fs = st == 200 && d ? json_obj_getz(d, "filters") : NULL;
  const char *code = fs ? jstr(fs, slash + 1) : NULL;
  if (!code) {
    repl_result_err(x->res, DV_ENOT_FOUND, "Couldn't find filter %s on the source database.", f);
    return DV_ENOT_FOUND;
  }
  x->filter_code = arena_strndup(&x->a, code, strlen(code));
  return x->filter_code ? 0 : DV_ENOMEM;
}

/* ---- 2. checkpoints ---------------------------------------------------------------- */

static void read_log(run *x, rh_conn *c, json_val **log, char **rev) {
  char path[128];
  snprintf(path, sizeof path, "_local/%s", x->j->base_id);
  long st = 0;
  json_val *v;
  *log = NULL;
  dv_free(*rev);
  *rev = NULL;
  if (req_json(c, "GET", path, NULL, 0, &x->a, &st, &v) || st != 200 || !v || v->type != JSON_OBJECT) return;
  *log = v;
  const char *r = jstr(v, "_rev");
  if (r) *rev = dv_strndup(r, strlen(r));
}

/* The seq to start from (JSON text): CouchDB's compare_replication_logs. */
static char *start_seq(run *x) {
  if (x->s->since_seq) return x->s->since_seq;
  const json_val *s = x->src_log, *t = x->tgt_log;
  if (!s || !t) return NULL;
  const char *ss = jstr(s, "session_id"), *ts = jstr(t, "session_id");
  if (ss && ts && !strcmp(ss, ts)) return jtext(&x->a, json_obj_getz(s, "source_last_seq"));
  const json_val *sh = json_obj_getz(s, "history"), *th = json_obj_getz(t, "history");
  if (!sh || sh->type != JSON_ARRAY || !th || th->type != JSON_ARRAY) return NULL;
  for (size_t i = 0; i < sh->len; i++) {
    const char *sid = jstr(sh->u.items[i], "session_id");
    if (!sid) continue;
    for (size_t k = 0; k < th->len; k++) {
      const char *tid = jstr(th->u.items[k], "session_id");
      if (tid && !strcmp(sid, tid)) return jtext(&x->a, json_obj_getz(sh->u.items[i], "recorded_seq"));
    }
  }
  return NULL;
}

static void history_entry(run *x, json_w *w, const char *seq, const repl_counts *n) {
  char end[40];
  rfc1123(end);
  json_w_obj_begin(w);
  json_w_keyz(w, "session_id");
  json_w_strz(w, x->session);
  json_w_keyz(w, "start_time");
  json_w_strz(w, x->start_time);
  json_w_keyz(w, "end_time");
  json_w_strz(w, end);
  json_w_keyz(w, "start_last_seq");
  json_w_raw(w, x->start_seq ? x->start_seq : "0", strlen(x->start_seq ? x->start_seq : "0"));
  json_w_keyz(w, "end_last_seq");
  json_w_raw(w, seq, strlen(seq));
  json_w_keyz(w, "recorded_seq");
  json_w_raw(w, seq, strlen(seq));
#define N(k, f)           \
  json_w_keyz(w, k);      \
  json_w_int(w, n->f);
  N("missing_checked", missing_checked)
  N("missing_found", missing_found)
  N("docs_read", docs_read)
  N("docs_written", docs_written)
  N("doc_write_failures", doc_write_failures)
  N("bulk_get_docs", bulk_get_docs)
  N("bulk_get_attempts", bulk_get_attempts)
#undef N
  json_w_obj_end(w);
}

/* The checkpoint document's body (also the one-shot answer, with ok). */
static int log_doc(run *x, dv_buf *b, const char *seq, const char *rev, int answer, int no_changes) {
  repl_counts n = x->j->n;
  json_w w;
  json_w_init(&w, b);
  json_w_obj_begin(&w);
  if (answer) {
    json_w_keyz(&w, "ok");
    json_w_bool(&w, 1);
    if (no_changes) {
      json_w_keyz(&w, "no_changes");
      json_w_bool(&w, 1);
    }
  } else {
    char id[64];
    snprintf(id, sizeof id, "_local/%s", x->j->base_id);
    json_w_keyz(&w, "_id");
    json_w_strz(&w, id);
    if (rev) {
      json_w_keyz(&w, "_rev");
      json_w_strz(&w, rev);
    }
  }
  json_w_keyz(&w, "session_id");
  json_w_strz(&w, x->session);
  json_w_keyz(&w, "source_last_seq");
  json_w_raw(&w, seq, strlen(seq));
  json_w_keyz(&w, "replication_id_version");
  json_w_int(&w, 4);
  json_w_keyz(&w, "history");
  json_w_arr_begin(&w);
  if (!no_changes) history_entry(x, &w, seq, &n);
  const json_val *h = x->start_hist;
  for (size_t i = 0; h && h->type == JSON_ARRAY && i < h->len && i < JOB_HISTORY_MAX - 1; i++)
    json_w_val(&w, h->u.items[i]);
  json_w_arr_end(&w);
  json_w_obj_end(&w);
  return json_w_finish(&w);
}

static int put_log(run *x, rh_conn *c, char **rev, const char *seq) {
  char path[128];
  snprintf(path, sizeof path, "_local/%s", x->j->base_id);
  for (int attempt = 0; attempt < 2; attempt++) {
    dv_buf b;
    buf_init(&b);
    int rc = log_doc(x, &b, seq, *rev, 0, 0);
    long st = 0;
    json_val *v = NULL;
    dv_arena t; /* per checkpoint: a continuous run writes them for days */
    arena_init(&t, 0);
    if (!rc) rc = req_json(c, "PUT", path, (char *)b.p, b.len, &t, &st, &v);
    buf_free(&b);
    if (!rc && (st == 201 || st == 200) && v) {
      const char *r = jstr(v, "rev");
      dv_free(*rev);
      *rev = r ? dv_strndup(r, strlen(r)) : NULL;
    } else if (!rc && st != 409) {
      snprintf(c->err, sizeof c->err, "checkpoint on %s: HTTP %ld %s", c->ep->url, st, why(v));
      rc = st == 401 || st == 403 ? DV_EINVAL : DV_EIO;
    } else if (!rc) {
      rc = 1; /* 409: take the current rev and try again */
    }
    arena_free(&t);
    if (rc != 1) return rc;
    json_val *log;
    read_log(x, c, &log, rev); /* someone else wrote it: take its rev */
  }
  snprintf(c->err, sizeof c->err, "checkpoint on %s: conflict", c->ep->url);
  return DV_ECONFLICT;
}

static int checkpoint(run *x, const char *seq) {
  if (!x->s->use_checkpoints) return 0;
  rh_resp r;
  if (!rh_do(&x->tgt, "POST", "_ensure_full_commit", NULL, "application/json", "", 0, &r)) rh_resp_free(&r);
  int rc = put_log(x, &x->tgt, &x->tgt_rev, seq);
  if (rc) {
    repl_result_err(x->res, rc == DV_EINVAL ? DV_EUNAUTHORIZED : DV_EREPL_CHECKPOINT, "%s", x->tgt.err);
    return rc;
  }
  /* A source the user may only read keeps no log; the next run then
   * starts again from 0 (and writes nothing twice: revs_diff). */
  (void)put_log(x, &x->src, &x->src_rev, seq);
  rjob_seqs(x->j, NULL, NULL, seq);
  return 0;
}

/* ---- 3. a worker's slice ---------------------------------------------------------------- */

typedef struct missing {
  const char *id;
  json_val *revs;       /* array of missing revs */
  json_val *ancestors;  /* possible_ancestors, or NULL */
} missing;

/* POST _bulk_docs new_edits=false for docs [i, k) of the JSON array
 * texts; splits on 413. */
static int write_docs(worker *w, dv_buf *docs, size_t *offs, size_t i, size_t k) {
  if (i >= k) return 0;
  dv_buf b;
  buf_init(&b);
  buf_puts(&b, "{\"new_edits\":false,\"docs\":[");
  for (size_t d = i; d < k; d++) {
    if (d > i) buf_putc(&b, ',');
    buf_append(&b, docs->p + offs[d], offs[d + 1] - offs[d]);
  }
  buf_puts(&b, "]}");
  if (buf_error(&b)) {
    buf_free(&b);
    return DV_ENOMEM;
  }
  long st = 0;
  json_val *v;
  int rc = req_json(&w->tgt, "POST", "_bulk_docs", (char *)b.p, b.len, &w->a, &st, &v);
  buf_free(&b);
  if (rc) {
    werr(w, rc, DV_EREPL_FAILED, "%s", w->tgt.err);
    return rc;
  }
  if (st == 413 && k - i > 1) {
    size_t mid = i + (k - i) / 2;
    return write_docs(w, docs, offs, i, mid) ? -1 : write_docs(w, docs, offs, mid, k);
  }
  if (st == 401 || st == 403) {
    werr(w, DV_EINVAL, DV_EUNAUTHORIZED, "unauthorized to write to %s: %s", w->tgt.ep->url, why(v));
    return DV_EINVAL;
  }
  if (st != 201 && st != 200 && st != 417) {
    werr(w, DV_EIO, DV_EREPL_FAILED, "_bulk_docs on %s: HTTP %ld %s", w->tgt.ep->url, st, why(v));
    return DV_EIO;
  }
  int64_t failed = 0;
  if (v && v->type == JSON_ARRAY)
    for (size_t d = 0; d < v->len; d++)
      if (json_obj_getz(v->u.items[d], "error")) failed++;
  if (st == 413) failed = (int64_t)(k - i);
  add(&w->x->j->n.doc_write_failures, failed);
  add(&w->x->j->n.docs_written, (int64_t)(k - i) - failed);
  return 0;
}

/* A doc rev with attachments: open_revs with content since the target's
 * ancestors, as multipart when the source offers it. JSON docs found go to
 * (docs, offs); multipart/related ones are PUT at once. */
#define JOB_JSON_PART_MAX (64u << 20) /* a document's JSON part read into memory */

typedef struct mpx {
  worker *w;
  const char *id;
  char ctype[256];
  FILE *part;          /* the current part's bytes (a temporary file: any size) */
  size_t part_len;
  dv_buf *docs;
  size_t **offs, *ndocs, *cap;
  int rc;
} mpx;

static int push_doc(mpx *m, const json_val *doc);

static int put_related(worker *w, const char *id, const char *ctype, FILE *body, size_t n) {
  dv_buf path;
  buf_init(&path);
  rh_escape(&path, id, strlen(id));
  buf_puts(&path, "?new_edits=false");
  buf_putc(&path, 0);
  rh_resp r;
  memset(&r, 0, sizeof r);
  int rc = buf_error(&path) ? DV_ENOMEM : rh_do_file(&w->tgt, "PUT", (char *)path.p, NULL, ctype, NULL, n, body, &r);
  buf_free(&path);
  if (rc) {
    werr(w, rc, DV_EREPL_FAILED, "%s", w->tgt.err);
    return rc;
  }
  long st = r.status;
  rh_resp_free(&r);
  if (st == 401) {
    werr(w, DV_EINVAL, DV_EUNAUTHORIZED, "unauthorized to write to %s", w->tgt.ep->url);
    return DV_EINVAL;
  }
  if (st == 201 || st == 202) add(&w->x->j->n.docs_written, 1);
  else if (st >= 500) {
    werr(w, DV_EIO, DV_EREPL_FAILED, "PUT %s%s: HTTP %ld", w->tgt.ep->url, id, st);
    return DV_EIO;
  } else add(&w->x->j->n.doc_write_failures, 1);
  return 0;
}

static int mp_hdr(void *arg, const char *name, size_t nl, const char *value, size_t vl) {
  mpx *m = arg;
  if (nl == 12 && !strncasecmp(name, "Content-Type", 12)) {
    if (vl >= sizeof m->ctype) vl = sizeof m->ctype - 1;
    memcpy(m->ctype, value, vl);
    m->ctype[vl] = 0;
  }
  return 0;
}
static int mp_begin(void *arg) {
  mpx *m = arg;
  m->ctype[0] = 0;
  m->part_len = 0;
  return fflush(m->part) || ftruncate(fileno(m->part), 0) || fseeko(m->part, 0, SEEK_SET) ? DV_EIO : 0;
}
static int mp_data(void *arg, const uint8_t *p, size_t n) {
  mpx *m = arg;
  m->part_len += n;
  return fwrite(p, 1, n, m->part) == n ? 0 : DV_EIO;
}
static int mp_end(void *arg) {
  mpx *m = arg;
  if (fflush(m->part) || fseeko(m->part, 0, SEEK_SET)) return DV_EIO;
  if (!strncasecmp(m->ctype, "multipart/related", 17)) { /* a document and its attachments: as it came */
    add(&m->w->x->j->n.docs_read, 1);
    return put_related(m->w, m->id, m->ctype, m->part, m->part_len) == DV_EINVAL ? DV_EINVAL : 0;
  }
  if (m->part_len > JOB_JSON_PART_MAX) return DV_EVALUE_TOO_LARGE;
  char *text = dv_malloc(m->part_len + 1);
  if (!text) return DV_ENOMEM;
  int rc = fread(text, 1, m->part_len, m->part) == m->part_len ? 0 : DV_EIO;
  json_val *v;
  json_opts jo = {.flags = JSON_COPY | JSON_CSTR};
  json_err je;
  if (!rc && !json_parse(&m->w->a, text, m->part_len, &jo, &v, &je) && v->type == JSON_OBJECT &&
      !json_obj_getz(v, "missing")) {
    add(&m->w->x->j->n.docs_read, 1);
    rc = push_doc(m, v);
  }
  dv_free(text);
  return rc;
}

static int push_doc(mpx *m, const json_val *doc) {
  if (*m->ndocs + 2 > *m->cap) {
    size_t nc = *m->cap * 2 + 16;
    size_t *no = dv_realloc(*m->offs, nc * sizeof *no);
    if (!no) return DV_ENOMEM;
    *m->offs = no;
    *m->cap = nc;
  }
  (*m->offs)[*m->ndocs] = m->docs->len;
  if (json_write(m->docs, doc)) {}
  (*m->ndocs)++;
  (*m->offs)[*m->ndocs] = m->docs->len;
  return buf_error(m->docs) ? DV_ENOMEM : 0;
}

static int fetch_with_atts(worker *w, mpx *m, const char *id, const char *rev, const json_val *ancestors) {
  dv_buf p;
  buf_init(&p);
  rh_escape(&p, id, strlen(id));
  buf_puts(&p, "?revs=true&latest=true&attachments=true&open_revs=");
  dv_buf q;
  buf_init(&q);
  buf_puts(&q, "[\"");
  buf_puts(&q, rev);
  buf_puts(&q, "\"]");
  rh_escape(&p, (char *)q.p, q.len);
  if (ancestors && ancestors->type == JSON_ARRAY && ancestors->len) {
    buf_reset(&q);
    if (json_write(&q, ancestors)) {}
    buf_puts(&p, "&atts_since=");
    rh_escape(&p, (char *)q.p, q.len);
  }
  buf_free(&q);
  buf_putc(&p, 0);
  /* The answer goes to a temporary file, and each multipart/related part
   * to another, PUT from there: memory stays bounded whatever the
   * attachments' size. */
  rh_resp r;
  memset(&r, 0, sizeof r);
  r.sink = tmpfile();
  m->part = r.sink ? tmpfile() : NULL;
  int rc = !m->part ? DV_EIO
           : buf_error(&p)
               ? DV_ENOMEM
               : rh_do_file(&w->src, "GET", (char *)p.p,
                            w->x->multipart ? "multipart/mixed, application/json" : "application/json", NULL, NULL,
                            0, NULL, &r);
  buf_free(&p);
  FILE *ans = r.sink;
  if (rc) {
    if (!m->part) snprintf(w->src.err, sizeof w->src.err, "cannot create a temporary file");
    werr(w, rc, DV_EREPL_FAILED, "%s", w->src.err);
    goto done;
  }
  if (r.status != 200) {
    rh_resp_free(&r);
    if (r.status != 404) { /* 404: gone meanwhile (purged), nothing to copy */
      werr(w, DV_EIO, DV_EREPL_FAILED, "GET %s%s: HTTP %ld", w->src.ep->url, id, r.status);
      rc = DV_EIO;
    }
    goto done;
  }
  m->id = id;
  off_t size = fseeko(ans, 0, SEEK_END) ? -1 : ftello(ans);
  if (size < 0 || fseeko(ans, 0, SEEK_SET)) {
    werr(w, DV_EIO, DV_EREPL_FAILED, "cannot read a temporary file");
    rc = DV_EIO;
    goto done;
  }
  char boundary[MP_MAX_BOUNDARY + 1];
  if (!strncasecmp(r.ctype, "multipart/", 10) && !mp_boundary(r.ctype, boundary, sizeof boundary)) {
    mp_callbacks cb = {.part_begin = mp_begin, .header = mp_hdr, .data = mp_data, .part_end = mp_end};
    mp_parser *mp;
    rc = mp_new(boundary, &cb, m, 16384, 0, &mp);
    uint8_t chunk[65536];
    size_t got;
    while (!rc && (got = fread(chunk, 1, sizeof chunk, ans)) > 0) rc = mp_feed(mp, chunk, got);
    if (!rc) rc = mp_finish(mp);
    mp_free(mp);
    rh_resp_free(&r);
    if (rc && !w->rc) werr(w, rc, DV_EREPL_FAILED, "bad multipart answer from %s%s", w->src.ep->url, id);
    goto done;
  }
  rh_resp_free(&r);
  if ((size_t)size > JOB_JSON_PART_MAX) {
    werr(w, DV_EIO, DV_EREPL_FAILED, "open_revs answer of %s%s too large for JSON", w->src.ep->url, id);
    rc = DV_EIO;
    goto done;
  }
  char *text = dv_malloc((size_t)size + 1);
  rc = !text ? DV_ENOMEM : fread(text, 1, (size_t)size, ans) == (size_t)size ? 0 : DV_EIO;
  json_val *v = NULL;
  json_opts jo = {.flags = JSON_COPY | JSON_CSTR};
  json_err je;
  if (!rc) rc = json_parse(&w->a, text, (size_t)size, &jo, &v, &je);
  dv_free(text);
  if (rc || v->type != JSON_ARRAY) {
    werr(w, DV_EIO, DV_EREPL_FAILED, "bad open_revs answer from %s%s", w->src.ep->url, id);
    rc = DV_EIO;
    goto done;
  }
  for (size_t i = 0; i < v->len && !rc; i++) {
    const json_val *ok = json_obj_getz(v->u.items[i], "ok");
    if (!ok || ok->type != JSON_OBJECT) continue;
    add(&w->x->j->n.docs_read, 1);
    rc = push_doc(m, ok);
  }
done:
  if (ans) fclose(ans);
  if (m->part) fclose(m->part);
  m->part = NULL;
  return rc;
}

static int has_atts(const json_val *doc) {
  const json_val *a = json_obj_getz(doc, "_attachments");
  return a && a->type == JSON_OBJECT && a->len;
}

static const json_val *ancestors_of(missing *ms, size_t nm, const char *id) {
  for (size_t i = 0; i < nm; i++)
    if (!strcmp(ms[i].id, id)) return ms[i].ancestors;
  return NULL;
}

static void worker_slice(worker *w) {
  run *x = w->x;
  arena_reset(&w->a);
  /* revs_diff */
  dv_buf b;
  buf_init(&b);
  json_w jw;
  json_w_init(&jw, &b);
  json_w_obj_begin(&jw);
  int64_t checked = 0;
  for (size_t i = 0; i < w->n; i++) {
    const json_val *row = w->rows[i];
    const char *id = jstr(row, "id");
    const json_val *ch = json_obj_getz(row, "changes");
    if (!id || !ch || ch->type != JSON_ARRAY) continue;
    json_w_keyz(&jw, id);
    json_w_arr_begin(&jw);
    for (size_t k = 0; k < ch->len; k++) {
      const char *rev = jstr(ch->u.items[k], "rev");
      if (rev) json_w_strz(&jw, rev), checked++;
    }
    json_w_arr_end(&jw);
  }
  json_w_obj_end(&jw);
  if (json_w_finish(&jw)) {
    buf_free(&b);
    werr(w, DV_ENOMEM, DV_ENOMEM, "out of memory");
    return;
  }
  long st = 0;
  json_val *diff;
  int rc = req_json(&w->tgt, "POST", "_revs_diff", (char *)b.p, b.len, &w->a, &st, &diff);
  buf_free(&b);
  if (rc) {
    werr(w, rc, DV_EREPL_FAILED, "%s", w->tgt.err);
    return;
  }
  if (st == 401 || st == 403) {
    werr(w, DV_EINVAL, DV_EUNAUTHORIZED, "unauthorized to access %s: %s", w->tgt.ep->url, why(diff));
    return;
  }
  if (st != 200 || !diff || diff->type != JSON_OBJECT) {
    werr(w, DV_EIO, DV_EREPL_FAILED, "_revs_diff on %s: HTTP %ld %s", w->tgt.ep->url, st, why(diff));
    return;
  }
  add(&x->j->n.missing_checked, checked);
  size_t nm = diff->len, nrevs = 0;
  missing *ms = nm ? arena_alloc(&w->a, nm * sizeof *ms) : NULL;
  if (nm && !ms) {
    werr(w, DV_ENOMEM, DV_ENOMEM, "out of memory");
    return;
  }
  for (size_t i = 0; i < nm; i++) {
    ms[i].id = arena_strndup(&w->a, diff->u.members[i].key, diff->u.members[i].klen);
    ms[i].revs = json_obj_getz(diff->u.members[i].val, "missing");
    ms[i].ancestors = json_obj_getz(diff->u.members[i].val, "possible_ancestors");
    if (ms[i].revs && ms[i].revs->type == JSON_ARRAY) nrevs += ms[i].revs->len;
  }
  add(&x->j->n.missing_found, (int64_t)nrevs);
  if (!nrevs) return;

  /* fetch */
  dv_buf docs;
  buf_init(&docs);
  size_t *offs = NULL, ndocs = 0, cap = 0;
  mpx m = {.w = w, .docs = &docs, .offs = &offs, .ndocs = &ndocs, .cap = &cap};
  json_val *got = NULL; /* array of docs from _bulk_get / open_revs */
  if (__atomic_load_n(&x->bulk_get, __ATOMIC_RELAXED)) {
    buf_init(&b);
    json_w_init(&jw, &b);
    json_w_obj_begin(&jw);
    json_w_keyz(&jw, "docs");
    json_w_arr_begin(&jw);
    for (size_t i = 0; i < nm; i++)
      for (size_t k = 0; ms[i].revs && ms[i].revs->type == JSON_ARRAY && k < ms[i].revs->len; k++) {
        json_w_obj_begin(&jw);
        json_w_keyz(&jw, "id");
        json_w_strz(&jw, ms[i].id);
        json_w_keyz(&jw, "rev");
        json_w_val(&jw, ms[i].revs->u.items[k]);
        json_w_obj_end(&jw);
      }
    json_w_arr_end(&jw);
    json_w_obj_end(&jw);
    json_val *bg = NULL;
    rc = json_w_finish(&jw) ? DV_ENOMEM
                            : req_json(&w->src, "POST", "_bulk_get?revs=true&latest=true", (char *)b.p, b.len, &w->a,
                                       &st, &bg);
    buf_free(&b);
    if (rc) {
      werr(w, rc, DV_EREPL_FAILED, "%s", w->src.err);
      goto out;
    }
    add(&x->j->n.bulk_get_attempts, (int64_t)nrevs);
    if (st == 200 && bg && (bg = json_obj_getz(bg, "results")) && bg->type == JSON_ARRAY) {
      got = json_new_array(&w->a);
      for (size_t i = 0; got && i < bg->len; i++) {
        const json_val *ds = json_obj_getz(bg->u.items[i], "docs");
        for (size_t k = 0; ds && ds->type == JSON_ARRAY && k < ds->len; k++) {
          json_val *ok = json_obj_getz(ds->u.items[k], "ok");
          if (ok && ok->type == JSON_OBJECT) {
            if (json_arr_push(&w->a, got, ok)) got = NULL;
            else add(&x->j->n.bulk_get_docs, 1);
          }
        }
      }
    } else if (st == 401 || st == 403) {
      werr(w, DV_EINVAL, DV_EUNAUTHORIZED, "unauthorized to read %s: %s", w->src.ep->url, why(bg));
      goto out;
    } else if (st >= 500) {
      werr(w, DV_EIO, DV_EREPL_FAILED, "_bulk_get on %s: HTTP %ld", w->src.ep->url, st);
      goto out;
    } else {
      __atomic_store_n(&x->bulk_get, 0, __ATOMIC_RELAXED); /* no _bulk_get there: open_revs from now on */
    }
  }
  if (!got) {
    got = json_new_array(&w->a);
    for (size_t i = 0; got && i < nm && !w->rc; i++) {
      if (!ms[i].revs || ms[i].revs->type != JSON_ARRAY || !ms[i].revs->len) continue;
      dv_buf p, q;
      buf_init(&p);
      buf_init(&q);
      rh_escape(&p, ms[i].id, strlen(ms[i].id));
      buf_puts(&p, "?revs=true&latest=true&open_revs=");
      if (json_write(&q, ms[i].revs)) {}
      rh_escape(&p, (char *)q.p, q.len);
      buf_putc(&p, 0);
      json_val *v = NULL;
      rc = buf_error(&p) ? DV_ENOMEM : req_json(&w->src, "GET", (char *)p.p, NULL, 0, &w->a, &st, &v);
      buf_free(&p);
      buf_free(&q);
      if (rc) {
        werr(w, rc, DV_EREPL_FAILED, "%s", w->src.err);
        goto out;
      }
      if (st == 404) continue;
      if (st != 200 || !v || v->type != JSON_ARRAY) {
        werr(w, DV_EIO, st == 401 || st == 403 ? DV_EUNAUTHORIZED : DV_EREPL_FAILED, "open_revs on %s: HTTP %ld",
             w->src.ep->url, st);
        goto out;
      }
      for (size_t k = 0; k < v->len; k++) {
        json_val *ok = json_obj_getz(v->u.items[k], "ok");
        if (ok && ok->type == JSON_OBJECT && json_arr_push(&w->a, got, ok)) got = NULL;
      }
    }
    if (!got && !w->rc) werr(w, DV_ENOMEM, DV_ENOMEM, "out of memory");
    if (w->rc) goto out;
  }
  for (size_t i = 0; i < got->len && !w->rc; i++) {
    json_val *doc = got->u.items[i];
    const char *id = jstr(doc, "_id"), *rev = jstr(doc, "_rev");
    if (!id || !rev) continue;
    if (has_atts(doc)) {
      if (fetch_with_atts(w, &m, id, rev, ancestors_of(ms, nm, id))) goto out;
      continue;
    }
    add(&x->j->n.docs_read, 1);
    if (push_doc(&m, doc)) {
      werr(w, DV_ENOMEM, DV_ENOMEM, "out of memory");
      goto out;
    }
  }
  if (!w->rc) (void)write_docs(w, &docs, offs, 0, ndocs);
out:
  buf_free(&docs);
  dv_free(offs);
}

static void *worker_main(void *arg) {
  dv_thread_name("dv-repl-work");
  worker *w = arg;
  worker_slice(w);
  return NULL;
}

/* ---- 3. the changes loop ----------------------------------------------------------------- */

static int changes(run *x, dv_arena *a, const char *since, int limit, int timeout_ms, json_val **out) {
  const repl_spec *s = x->s;
  dv_buf p, body;
  buf_init(&p);
  buf_init(&body);
  buf_printf(&p, "_changes?feed=%s&limit=%d", s->continuous ? "longpoll" : "normal", limit);
  if (s->continuous && timeout_ms > 0) buf_printf(&p, "&timeout=%d", timeout_ms);
  else if (s->continuous) buf_printf(&p, "&heartbeat=%d", JOB_HEARTBEAT_MS);
  if (!s->winning_revs_only) buf_puts(&p, "&style=all_docs");
  buf_puts(&p, "&since=");
  rh_seq_param(&p, a, since);
  const char *method = "GET";
  if (s->doc_ids || s->selector) { /* POST {"doc_ids": […]} or {"selector": {…}} */
    const char *k = s->doc_ids ? "doc_ids" : "selector";
    buf_printf(&p, "&filter=_%s", k);
    json_w w;
    json_w_init(&w, &body);
    json_w_obj_begin(&w);
    json_w_keyz(&w, k);
    json_w_val(&w, s->doc_ids ? s->doc_ids : s->selector);
    json_w_obj_end(&w);
    if (json_w_finish(&w)) {} /* an out-of-memory buffer is seen below */
    method = "POST";
  } else if (s->filter) {
    buf_puts(&p, "&filter=");
    rh_escape(&p, s->filter, strlen(s->filter));
    for (size_t i = 0; s->query_params && i < s->query_params->len; i++) {
      const json_member *m = &s->query_params->u.members[i];
      buf_putc(&p, '&');
      rh_escape(&p, m->key, m->klen);
      buf_putc(&p, '=');
      if (m->val->type == JSON_STRING) rh_escape(&p, m->val->u.s, m->val->len);
      else {
        dv_buf t;
        buf_init(&t);
        if (json_write(&t, m->val)) {}
        rh_escape(&p, (char *)t.p, t.len);
        buf_free(&t);
      }
    }
  }
  buf_putc(&p, 0);
  long st = 0;
  int rc = buf_error(&p) || buf_error(&body) ? DV_ENOMEM
                                              : req_json(&x->src, method, (char *)p.p, body.len ? (char *)body.p : NULL,
                                                         body.len, a, &st, out);
  buf_free(&p);
  buf_free(&body);
  if (rc == DV_ECANCELLED) {
    repl_result_err(x->res, DV_EREPL_CANCELLED, "The replication was cancelled.");
    return rc;
  }
  if (rc) {
    repl_result_err(x->res, DV_EREPL_FAILED, "%s", x->src.err);
    return rc;
  }
  if (st == 401 || st == 403) {
    repl_result_err(x->res, DV_EUNAUTHORIZED, "unauthorized to read the changes of %s", x->src.ep->url);
    return DV_EINVAL;
  }
  if (st == 404 && x->filter_code) {
    repl_result_err(x->res, DV_ENOT_FOUND, "The source has no filter %s.", s->filter);
    return DV_ENOT_FOUND;
  }
  if (st != 200 || !*out || (*out)->type != JSON_OBJECT) {
    repl_result_err(x->res, st == 400 ? DV_EBAD_REQUEST : DV_EREPL_FAILED, "_changes on %s: HTTP %ld %s",
                    x->src.ep->url, st, why(*out));
    return st == 400 ? DV_EINVAL : DV_EIO;
  }
  return 0;
}

static int process_batch(run *x, worker *ws, int nw, json_val *rows) {
  size_t n = rows->len, per = (n + (size_t)nw - 1) / (size_t)nw;
  int used = 0;
  for (int i = 0; i < nw; i++) {
    size_t b = (size_t)i * per, e = b + per > n ? n : b + per;
    if (b >= e) break;
    ws[i].rows = rows->u.items + b;
    ws[i].n = e - b;
    ws[i].rc = 0;
    if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i])) {
      worker_slice(&ws[i]);
      ws[i].th = 0;
    }
    used++;
  }
  int rc = 0;
  for (int i = 0; i < used; i++) {
    if (ws[i].th) pthread_join(ws[i].th, NULL);
    if (ws[i].rc && !rc) {
      rc = ws[i].rc;
      repl_result_err(x->res, ws[i].answer, "%s", ws[i].reason);
    }
  }
  return rc;
}

int job_run(rjob *j, repl_result *res) {
  const repl_spec *s = &j->spec;
  run x = {.j = j, .s = s, .bulk_get = s->use_bulk_get, .res = res};
  arena_init(&x.a, 0);
  int nw = s->worker_processes < s->http_connections ? s->worker_processes : s->http_connections;
  worker *ws = dv_calloc((size_t)nw, sizeof *ws);
  int rc = ws ? 0 : DV_ENOMEM;
  if (!rc) rc = rh_init(&x.src, &s->source, s->connection_timeout_ms, s->retries_per_request, &j->halt);
  if (!rc) rc = rh_init(&x.tgt, &s->target, s->connection_timeout_ms, s->retries_per_request, &j->halt);
  for (int i = 0; !rc && i < nw; i++) {
    ws[i].x = &x;
    arena_init(&ws[i].a, 0);
    rc = rh_init(&ws[i].src, &s->source, s->connection_timeout_ms, s->retries_per_request, &j->halt);
    if (!rc) rc = rh_init(&ws[i].tgt, &s->target, s->connection_timeout_ms, s->retries_per_request, &j->halt);
  }
  if (rc) {
    repl_result_err(res, DV_ENOMEM, "Cannot start the replication: out of memory.");
    goto out;
  }
  if ((rc = check_peer(&x, &x.src, &s->source, 0)) || (rc = check_peer(&x, &x.tgt, &s->target, s->create_target)) ||
      (rc = fetch_filter(&x)))
    goto out;
  { /* a CouchDB-protocol server says so at its root ("couchdb": "Welcome") */
    long st = 0;
    json_val *root;
    x.multipart = !req_json(&x.tgt, "GET", "../", NULL, 0, &x.a, &st, &root) && st == 200 && root &&
                  json_obj_getz(root, "couchdb");
  }
  char full[REPL_ID_MAX];
  if ((rc = repl_id_make(s, j->m->uuid, x.filter_code, j->base_id, full))) goto out;
  if (s->use_checkpoints) {
    read_log(&x, &x.src, &x.src_log, &x.src_rev);
    read_log(&x, &x.tgt, &x.tgt_log, &x.tgt_rev);
  }
  x.start_hist = x.tgt_log ? json_obj_getz(x.tgt_log, "history") : NULL;
  x.start_seq = start_seq(&x);
  uint8_t rnd[16];
  FILE *ur = fopen("/dev/urandom", "rb");
  if (!ur || fread(rnd, 1, 16, ur) != 16)
    for (int i = 0; i < 16; i++) rnd[i] = (uint8_t)(rand() ^ (int)rjob_now_ms());
  if (ur) fclose(ur);
  for (int i = 0; i < 16; i++) snprintf(x.session + 2 * i, 3, "%02x", rnd[i]);
  rfc1123(x.start_time);
  rjob_event(j, RJ_RUNNING, "started");

  char *since = dv_strndup(x.start_seq ? x.start_seq : "0", strlen(x.start_seq ? x.start_seq : "0"));
  x.through = since; /* since and through are the same malloc'd text */
  if (x.start_seq) rjob_seqs(j, since, since, since);
  int limit = s->worker_batch_size * nw;
  int64_t last_cp = rjob_now_ms();
  int seen = 0, dirty = 0;
  dv_arena ca;
  arena_init(&ca, 0);
  for (;;) {
    arena_reset(&ca);
    json_val *ch;
    /* with work not yet checkpointed, a continuous feed waits at most
     * until the idle checkpoint is due */
    int64_t idle = dirty ? 1000 - (rjob_now_ms() - last_cp) : 0;
    if ((rc = changes(&x, &ca, since, limit, dirty ? (int)(idle < 100 ? 100 : idle) : 0, &ch))) break;
    json_val *rows = json_obj_getz(ch, "results");
    char *last = jtext(&ca, json_obj_getz(ch, "last_seq"));
    const json_val *pend = json_obj_getz(ch, "pending");
    int64_t pv;
    if (pend && pend->type == JSON_NUMBER && !json_num_int64(pend->u.s, pend->len, &pv))
      __atomic_store_n(&j->n.changes_pending, pv, __ATOMIC_RELAXED);
    if (!rows || rows->type != JSON_ARRAY) {
      repl_result_err(res, DV_EREPL_FAILED, "bad _changes answer from %s", s->source.url);
      rc = DV_EIO;
      break;
    }
    if (rows->len) {
      seen = 1;
      if (last) rjob_seqs(j, last, NULL, NULL);
      if ((rc = process_batch(&x, ws, nw, rows))) break;
      dirty = 1;
    }
    if (last && since) {
      dv_free(since);
      x.through = since = dv_strndup(last, strlen(last));
      rjob_seqs(j, NULL, last, NULL);
    }
    if (!since) {
      rc = DV_ENOMEM;
      repl_result_err(res, DV_ENOMEM, "out of memory");
      break;
    }
    int done = !s->continuous && (int)rows->len < limit;
    /* checkpoint every interval, at the end, and when a continuous feed
     * has caught up (at most once a second) */
    int64_t since_cp = rjob_now_ms() - last_cp;
    if (dirty && (done || since_cp >= s->checkpoint_interval_ms || ((int)rows->len < limit && since_cp >= 1000))) {
      if ((rc = checkpoint(&x, x.through))) break;
      last_cp = rjob_now_ms();
      dirty = 0;
    }
    if (done) break;
    if (j->halt) {
      rc = DV_ECANCELLED;
      repl_result_err(res, DV_EREPL_CANCELLED, "The replication was cancelled.");
      break;
    }
  }
  if (rc == DV_ECANCELLED && dirty) (void)checkpoint(&x, x.through); /* keep what was done */
  if (!rc) {
    buf_init(&res->body);
    rc = log_doc(&x, &res->body, x.through, NULL, 1, !seen); /* nothing new: no_changes, no log written */
    if (rc) repl_result_err(res, DV_ENOMEM, "out of memory");
  }
  arena_free(&ca);
  dv_free(since);
out:
  for (int i = 0; ws && i < nw; i++) {
    rh_free(&ws[i].src);
    rh_free(&ws[i].tgt);
    arena_free(&ws[i].a);
  }
  dv_free(ws);
  rh_free(&x.src);
  rh_free(&x.tgt);
  dv_free(x.src_rev);
  dv_free(x.tgt_rev);
  arena_free(&x.a);
  if (rc && !res->rc) repl_result_err(res, rc, "%s", dv_strerror(rc)); /* a step that said nothing */
  return rc;
}
