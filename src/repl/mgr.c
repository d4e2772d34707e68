/* mgr.c — the replication scheduler: every job, its thread and state, the
 * _replicator databases, and what /_scheduler and /_active_tasks show.
 *
 * Data flow:
 *   POST /_replicate ─▶ repl_submit: a transient job (its thread runs
 *     job_run once for one-shot and answers the waiting request; for
 *     continuous it runs until cancelled, retrying with backoff).
 *   _replicator docs ─▶ the listener thread, a client of this server over
 *     loopback (admin through the internal token): it lists the databases
 *     named _replicator or ending in /_replicator, reads each one's _changes with
 *     include_docs since its last seq, and starts, restarts (the
 *     replication fields changed) or stops (deleted) the document's job;
 *     then it waits on /_db_updates?feed=longpoll. A document already
 *     marked completed or failed is shown, not run. Because the documents
 *     persist, continuous replications come back after a restart and
 *     resume from their checkpoints.
 *   A job's thread: job_run; on an error the job is "crashing", waits
 *     retry_initial_ms · 2^(errors-1) (capped) and runs again from its
 *     checkpoint; a one-shot document job that completes writes
 *     _replication_state "completed" (+ _replication_stats) into its
 *     document; a document that cannot describe a replication gets
 *     "failed" (+ _replication_state_reason).
 *   Job memory: threads are detached; a transient job frees itself when its
 *   thread ends; a document job stays listed (state completed/failed) until
 *   its document goes away, and is freed by whoever unlinks it once its
 *   thread has finished.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "repl/repl_int.h"
#include "util/alloc.h"
#include "util/md5.h"
#include "util/log.h"
#include "util/thread.h"

#define NODE "divan@127.0.0.1"
#define LISTEN_WAIT_S 5
/* After an answer that named only other databases, the listener waits this
 * long before it asks again (from the answer's last_seq, so nothing is
 * missed): on a busy server _db_updates answers a longpoll after nearly
 * every commit, and each answer was a loopback request on both sides —
 * ~2 us of the listener's and one HTTP request of the pool's per durable
 * PUT at 12k/s. A _replicator change is seen at most this much later. */
#define LISTEN_IDLE_MS 200

/* The counters as /_scheduler, /_active_tasks and _replication_stats name
 * them (a checkpoint's history names two of them differently: job.c). */
static const struct {
  const char *name;
  size_t off;
} counts_fields[] = {
    {"revisions_checked", offsetof(repl_counts, missing_checked)},
    {"missing_revisions_found", offsetof(repl_counts, missing_found)},
    {"docs_read", offsetof(repl_counts, docs_read)},
    {"docs_written", offsetof(repl_counts, docs_written)},
    {"doc_write_failures", offsetof(repl_counts, doc_write_failures)},
    {"bulk_get_docs", offsetof(repl_counts, bulk_get_docs)},
    {"bulk_get_attempts", offsetof(repl_counts, bulk_get_attempts)},
};
#define N_COUNTS (sizeof counts_fields / sizeof counts_fields[0])

static int64_t *count_at(const repl_counts *n, size_t i) {
  return (int64_t *)((char *)n + counts_fields[i].off);
}

static const char *state_name[] = {"initializing", "running", "pending", "crashing", "error", "completed", "failed"};


static void iso8601(int64_t ms, char out[32]) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- local endpoints --------------------------------------------------------- */

/* A local database becomes this server over loopback, as the job's user. */
static int resolve_local(repl_mgr *m, rjob *j, repl_ep *e) {
  if (!e->local) return 0;
  dv_buf b;
  buf_init(&b);
  buf_puts(&b, m->local_base);
  rh_escape(&b, e->local, strlen(e->local));
  buf_putc(&b, '/');
  e->url = buf_error(&b) ? NULL : arena_strndup(&j->a, (char *)b.p, b.len);
  buf_reset(&b);
  const repl_spec *s = &j->spec;
  buf_puts(&b, s->user ? s->user : "");
  buf_putc(&b, ';');
  for (size_t i = 0; i < s->nroles; i++) {
    if (i) buf_putc(&b, ',');
    buf_puts(&b, s->roles[i]);
  }
  /* header value: token;user;roles — the HTTP layer checks the token */
  dv_buf v;
  buf_init(&v);
  buf_puts(&v, m->token);
  buf_putc(&v, ';');
  buf_append(&v, b.p, b.len);
  repl_hdr *h = arena_alloc(&j->a, (e->nhdrs + 1) * sizeof *h);
  if (h) {
    if (e->nhdrs) memcpy(h, e->hdrs, e->nhdrs * sizeof *h);
    h[e->nhdrs].name = arena_strndup(&j->a, m->header, strlen(m->header));
    h[e->nhdrs].value = buf_error(&v) ? NULL : arena_strndup(&j->a, (char *)v.p, v.len);
  }
  buf_free(&b);
  buf_free(&v);
  if (!e->url || !h || !h[e->nhdrs].name || !h[e->nhdrs].value) return DV_ENOMEM;
  e->hdrs = h;
  e->nhdrs++;
  return 0;
}

/* ---- jobs ---------------------------------------------------------------------- */

static void job_free(rjob *j) {
  dv_free(j->err);
  dv_free(j->source_seq);
  dv_free(j->checkpointed_seq);
  dv_free(j->through_seq);
  arena_free(&j->a);
  dv_free(j);
}

static void unlink_job(repl_mgr *m, rjob *j) {
  for (rjob **p = &m->jobs; *p; p = &(*p)->next)
    if (*p == j) {
      *p = j->next;
      return;
    }
}

static int backoff_ms(repl_mgr *m, int errors) {
  int64_t w = m->o.retry_initial_ms;
  for (int i = 1; i < errors && w < m->o.retry_max_ms; i++) w *= 2;
  return (int)(w > m->o.retry_max_ms ? m->o.retry_max_ms : w);
}

static void doc_mark(repl_mgr *m, rjob *j, const char *state, const char *reason);
static int admin_ep(repl_mgr *m, dv_arena *a, repl_ep *e, int strict_local);
static rjob *doc_job(repl_mgr *m, const char *db, const char *docid);

/* ---- leases: one process runs each _replicator document's job ----------------------
 *
 * Several divan processes may serve one FoundationDB cluster, and each one's
 * listener sees every _replicator document. A job runs only in the process
 * holding its lease: the local document DB/_local/repl-lease:DOCID =
 * {"owner": <this process's id>, "expires": <wall ms>, "doc": DOCID}, the
 * id an md5 of repl_opts.identity (host, data directory, configured port),
 * so a process restarted in place takes its leases back at once.
 * Taking or renewing it is a read and a rev-checked write (the
 * local_rev_header "strict": CouchDB's own _local writes are not checked),
 * so two processes racing for it cannot both win (409). The holder renews it every
 * lease_ms/3 (the listener thread does); a job whose lease another process
 * took ends its run and waits; a process that dies stops renewing, and
 * after lease_ms another one takes over, resuming from the checkpoint.
 * Leases are released (expires 0) when a job ends. */

/* 1: this process holds the lease now (taken, renewed or released); 0:
 * another live process holds it; -1: this server did not answer. */
static int lease_try(repl_mgr *m, const char *db, const char *docid, int release) {
  dv_arena a;
  arena_init(&a, 0);
  repl_ep e;
  rh_conn c;
  if (admin_ep(m, &a, &e, 1) || rh_init(&c, &e, 10000, 1, NULL)) {
    arena_free(&a);
    return -1;
  }
  dv_buf p, b;
  buf_init(&p);
  buf_init(&b);
  rh_escape(&p, db, strlen(db));
  buf_puts(&p, "/_local/");
  buf_puts(&b, "repl-lease:");
  buf_puts(&b, docid);
  rh_escape(&p, (char *)b.p, b.len);
  buf_putc(&p, 0);
  int result = buf_error(&p) || buf_error(&b) ? -1 : 0;
  for (int attempt = 0; !result && attempt < 2; attempt++) {
    rh_resp r;
    if (rh_do(&c, "GET", (char *)p.p, NULL, NULL, NULL, 0, &r)) {
      result = -1;
      break;
    }
    json_val *v = NULL;
    json_opts jo = {.flags = JSON_COPY | JSON_CSTR};
    json_err je;
    if (r.status == 200 && (json_parse(&a, r.body.p, r.body.len, &jo, &v, &je) || v->type != JSON_OBJECT)) v = NULL;
    long st = r.status;
    rh_resp_free(&r);
    if (st != 200 && st != 404) {
      result = -1;
      break;
    }
    const json_val *ov = v ? json_obj_getz(v, "owner") : NULL, *xv = v ? json_obj_getz(v, "expires") : NULL;
    const json_val *rv = v ? json_obj_getz(v, "_rev") : NULL;
    int mine = ov && ov->type == JSON_STRING && !strcmp(ov->u.s, m->owner);
    int64_t expires = 0;
    if (xv && xv->type == JSON_NUMBER && json_num_int64(xv->u.s, xv->len, &expires)) expires = 0;
    if (release && !mine) {
      result = 1; /* nothing of ours to give back */
      break;
    }
    if (!release && !mine && ov && expires > rjob_now_ms()) break; /* 0: held elsewhere */
    buf_reset(&b);
    json_w w;
    json_w_init(&w, &b);
    json_w_obj_begin(&w);
    if (rv && rv->type == JSON_STRING) {
      json_w_keyz(&w, "_rev");
      json_w_strz(&w, rv->u.s);
    }
    json_w_keyz(&w, "owner");
    json_w_strz(&w, m->owner);
    json_w_keyz(&w, "expires");
    json_w_int(&w, release ? 0 : rjob_now_ms() + m->o.lease_ms);
    json_w_keyz(&w, "doc");
    json_w_strz(&w, docid);
    json_w_obj_end(&w);
    if (json_w_finish(&w) || rh_do(&c, "PUT", (char *)p.p, NULL, "application/json", b.p, b.len, &r)) {
      result = -1;
      break;
    }
    st = r.status;
    rh_resp_free(&r);
    if (st == 201 || st == 200) result = 1;
    else if (st != 409) result = -1; /* 409: another process wrote it first: look again */
  }
  buf_free(&p);
  buf_free(&b);
  rh_free(&c);
  arena_free(&a);
  return result;
}

/* A document job waits for its lease: 0 once held, -1 when stopped. */
static int lease_wait(repl_mgr *m, rjob *j) {
  int said = 0;
  for (;;) {
    int got = lease_try(m, j->db, j->docid, 0);
    if (got == 1) {
      pthread_mutex_lock(&m->mu);
      j->leased = 1;
      j->lease_lost = 0;
      j->halt = j->stop;
      j->lease_renew_ms = rjob_now_ms() + m->o.lease_ms / 3;
      pthread_mutex_unlock(&m->mu);
      return 0;
    }
    if (!said) {
      pthread_mutex_lock(&m->mu);
      dv_free(j->err);
      const char *why = got ? "waiting for this server to answer" : "another divan process runs this replication";
      j->err = dv_strndup(why, strlen(why));
      pthread_mutex_unlock(&m->mu);
      rjob_event(j, RJ_PENDING, "pending");
      said = 1;
    }
    if (rh_sleep(&j->stop, m->o.lease_ms / 3)) return -1;
  }
}

/* The listener renews the leases that are due; a lost one halts its run. */
static void lease_renew_due(repl_mgr *m) {
  enum { MAXR = 64 };
  char *db[MAXR], *doc[MAXR];
  int n = 0;
  int64_t now = rjob_now_ms();
  pthread_mutex_lock(&m->mu);
  for (rjob *j = m->jobs; j && n < MAXR; j = j->next)
    if (j->db && j->leased && !j->finished && !j->stop && now >= j->lease_renew_ms) {
      db[n] = dv_strndup(j->db, strlen(j->db));
      doc[n] = dv_strndup(j->docid, strlen(j->docid));
      if (db[n] && doc[n]) n++;
      else dv_free(db[n]), dv_free(doc[n]);
    }
  pthread_mutex_unlock(&m->mu);
  for (int i = 0; i < n; i++) {
    int got = lease_try(m, db[i], doc[i], 0);
    pthread_mutex_lock(&m->mu);
    rjob *j = doc_job(m, db[i], doc[i]); /* under m->mu */
    if (j && j->leased && !j->finished) {
      if (got == 1) j->lease_renew_ms = rjob_now_ms() + m->o.lease_ms / 3;
      else if (got == 0) j->lease_lost = j->halt = 1;
    }
    pthread_mutex_unlock(&m->mu);
    dv_free(db[i]);
    dv_free(doc[i]);
  }
}

static void *job_thread(void *arg) {
  dv_thread_name("dv-repl-job");
  rjob *j = arg;
  repl_mgr *m = j->m;
  for (;;) {
    if (j->db && !j->leased && lease_wait(m, j)) break;
    repl_result res = {0};
    int rc = job_run(j, &res);
    if (j->done) { /* transient one-shot: answer the request, then go */
      j->done(j->done_arg, &res);
      buf_free(&res.body);
      dv_free(res.reason);
      break;
    }
    if (j->stop) {
      buf_free(&res.body);
      dv_free(res.reason);
      break;
    }
    if (j->lease_lost) { /* another process took the job over: wait for it again */
      buf_free(&res.body);
      dv_free(res.reason);
      pthread_mutex_lock(&m->mu);
      j->leased = j->lease_lost = 0;
      j->halt = j->stop;
      pthread_mutex_unlock(&m->mu);
      continue;
    }
    if (!rc) { /* a one-shot document job completed */
      rjob_event(j, RJ_COMPLETED, "finished");
      doc_mark(m, j, "completed", NULL);
      buf_free(&res.body);
      dv_free(res.reason);
      break;
    }
    pthread_mutex_lock(&m->mu);
    j->error_count++;
    dv_free(j->err);
    char msg[600];
    snprintf(msg, sizeof msg, "%s: %s", res.rc ? dv_err_couch(res.rc) : "error", res.reason ? res.reason : "");
    j->err = dv_strndup(msg, strlen(msg));
    int errors = j->error_count;
    pthread_mutex_unlock(&m->mu);
    log_error("replication %s%s%s crashed (%d in a row): %s", j->id, j->docid ? " of " : "", j->docid ? j->docid : "",
              errors, msg);
    rjob_event(j, RJ_CRASHING, "crashed");
    buf_free(&res.body);
    dv_free(res.reason);
    if (rh_sleep(&j->stop, backoff_ms(m, errors))) break;
    rjob_event(j, RJ_PENDING, NULL);
  }
  if (j->db && j->leased) (void)lease_try(m, j->db, j->docid, 1);
  pthread_mutex_lock(&m->mu);
  j->finished = 1;
  int transient = !j->db;
  if (transient) unlink_job(m, j);
  pthread_cond_broadcast(&m->cv);
  pthread_mutex_unlock(&m->mu);
  if (transient) job_free(j);
  return NULL;
}

/* A new job from a spec (copied): ids computed, local endpoints resolved. */
static int job_new(repl_mgr *m, const repl_spec *spec, rjob **out) {
  rjob *j = dv_calloc(1, sizeof *j);
  if (!j) return DV_ENOMEM;
  j->m = m;
  arena_init(&j->a, 0);
  int rc = repl_spec_copy(&j->a, spec, &j->spec);
  if (!rc) rc = repl_id_make(&j->spec, m->uuid, NULL, j->base_id, j->id);
  if (!rc) rc = resolve_local(m, j, &j->spec.source);
  if (!rc) rc = resolve_local(m, j, &j->spec.target);
  if (rc) {
    job_free(j);
    return rc;
  }
  j->start_ms = j->last_update_ms = rjob_now_ms();
  j->n.changes_pending = -1;
  j->state = RJ_INITIALIZING;
  j->hist[0].ms = j->start_ms;
  j->hist[0].type = "added";
  j->nhist = 1;
  *out = j;
  return 0;
}

static int job_start(repl_mgr *m, rjob *j) {
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  pthread_mutex_lock(&m->mu);
  j->next = m->jobs;
  m->jobs = j;
  int rc = pthread_create(&j->th, &at, job_thread, j) ? DV_ENOMEM : 0;
  if (rc) unlink_job(m, j);
  else j->has_thread = 1;
  pthread_mutex_unlock(&m->mu);
  pthread_attr_destroy(&at);
  return rc;
}

/* Stop a job and wait for its thread (caller does not hold m->mu). */
static void job_stop_wait(repl_mgr *m, rjob *j) {
  pthread_mutex_lock(&m->mu);
  j->stop = j->halt = 1;
  while (j->has_thread && !j->finished) pthread_cond_wait(&m->cv, &m->mu);
  pthread_mutex_unlock(&m->mu);
}

static int id_matches(const rjob *j, const char *id) {
  char want[REPL_ID_MAX];
  snprintf(want, sizeof want, "%s", id);
  for (char *p = want; *p; p++)
    if (*p == ' ') *p = '+'; /* mochiweb's unquoting of '+' */
  return !strcmp(j->id, want) || !strcmp(j->base_id, want);
}

int repl_submit(repl_mgr *m, const repl_spec *spec, repl_done_cb done, void *arg, char out_id[REPL_ID_MAX]) {
  if (spec->cancel) {
    char want[REPL_ID_MAX];
    if (spec->replication_id) snprintf(want, sizeof want, "%s", spec->replication_id);
    else {
      char base[33];
      int rc = repl_id_make(spec, m->uuid, NULL, base, want);
      if (rc) return rc;
    }
    rjob *found = NULL;
    pthread_mutex_lock(&m->mu);
    int admin = 0;
    for (size_t i = 0; i < spec->nroles; i++) admin |= !strcmp(spec->roles[i], "_admin");
    for (rjob *j = m->jobs; j; j = j->next)
      if (!j->db && !j->stop && id_matches(j, want) &&
          (admin || (spec->user && j->spec.user && !strcmp(spec->user, j->spec.user)))) { /* own jobs only */
        found = j;
        break;
      }
    if (found) {
      found->stop = found->halt = 1;
      snprintf(out_id, REPL_ID_MAX, "%s", found->id);
    }
    pthread_mutex_unlock(&m->mu);
    return found ? 0 : DV_ENOT_FOUND;
  }
  rjob *j;
  int rc = job_new(m, spec, &j);
  if (rc) return rc;
  snprintf(out_id, REPL_ID_MAX, "%s", j->id);
  if (spec->continuous) {
    pthread_mutex_lock(&m->mu);
    for (rjob *o = m->jobs; o; o = o->next)
      if (!o->db && !o->stop && !strcmp(o->id, j->id)) { /* already running: the same answer */
        pthread_mutex_unlock(&m->mu);
        job_free(j);
        return 0;
      }
    pthread_mutex_unlock(&m->mu);
  } else {
    j->done = done;
    j->done_arg = arg;
  }
  rc = job_start(m, j);
  if (rc) job_free(j);
  return rc;
}

/* ---- the listener: _replicator databases -------------------------------------------- */

typedef struct rdb {
  char *name;
  char *since; /* JSON text of the last seq read */
  int seen;
} rdb;

typedef struct listener {
  repl_mgr *m;
  repl_ep ep;     /* the server root, as admin */
  rh_conn c;
  rdb *dbs;
  size_t ndbs;
  char *dbu_since;
} listener;

static rdb *rdb_get(listener *l, const char *name) {
  for (size_t i = 0; i < l->ndbs; i++)
    if (!strcmp(l->dbs[i].name, name)) return &l->dbs[i];
  rdb *n = dv_realloc(l->dbs, (l->ndbs + 1) * sizeof *n);
  if (!n) return NULL;
  l->dbs = n;
  rdb *d = &n[l->ndbs++];
  d->name = dv_strndup(name, strlen(name));
  d->since = NULL;
  d->seen = 0;
  return d;
}

static rjob *doc_job(repl_mgr *m, const char *db, const char *docid) {
  for (rjob *j = m->jobs; j; j = j->next)
    if (j->db && !strcmp(j->db, db) && !strcmp(j->docid, docid)) return j;
  return NULL;
}

static void doc_job_remove(repl_mgr *m, const char *db, const char *docid) {
  pthread_mutex_lock(&m->mu);
  rjob *j = doc_job(m, db, docid);
  pthread_mutex_unlock(&m->mu);
  if (!j) return;
  job_stop_wait(m, j);
  pthread_mutex_lock(&m->mu);
  unlink_job(m, j);
  pthread_mutex_unlock(&m->mu);
  job_free(j);
}

/* The replication part of a doc (no _rev, no _replication_* fields) as
 * text, to tell a real change from the manager's own state writes. */
static char *doc_spec_text(const json_val *doc) {
  dv_buf b;
  buf_init(&b);
  json_w w;
  json_w_init(&w, &b);
  json_w_obj_begin(&w);
  for (size_t i = 0; i < doc->len; i++) {
    const json_member *mm = &doc->u.members[i];
    if ((mm->klen == 4 && !memcmp(mm->key, "_rev", 4)) || (mm->klen >= 13 && !memcmp(mm->key, "_replication_", 13)))
      continue;
    json_w_key(&w, mm->key, mm->klen);
    json_w_val(&w, mm->val);
  }
  json_w_obj_end(&w);
  char *s = json_w_finish(&w) ? NULL : dv_strndup((char *)b.p, b.len);
  buf_free(&b);
  return s;
}

static void doc_changed(listener *l, const char *db, const char *docid, const json_val *doc) {
  repl_mgr *m = l->m;
  const json_val *stv = json_obj_getz(doc, "_replication_state");
  const char *state = stv && stv->type == JSON_STRING ? stv->u.s : NULL;
  char *text = doc_spec_text(doc);
  if (!text) return;
  pthread_mutex_lock(&m->mu);
  rjob *old = doc_job(m, db, docid);
  int same = old && old->spec_text && !strcmp(old->spec_text, text);
  pthread_mutex_unlock(&m->mu);
  if (same) {
    dv_free(text);
    return;
  }
  if (old) doc_job_remove(m, db, docid);
  dv_arena a;
  arena_init(&a, 0);
  repl_spec s;
  const char *reason = NULL;
  int rc = repl_spec_parse(&a, doc, &s, &reason);
  if (!rc && !json_obj_getz(doc, "user_ctx")) { /* no user_ctx: the admins' replication */
    static char *admin_roles[] = {"_admin"};
    s.roles = admin_roles;
    s.nroles = 1;
  }
  rjob *j = NULL;
  if (!rc) rc = job_new(m, &s, &j);
  if (rc) { /* cannot be a replication: show it failed */
    repl_spec empty;
    memset(&empty, 0, sizeof empty);
    j = dv_calloc(1, sizeof *j);
    if (!j) goto out;
    j->m = m;
    arena_init(&j->a, 0);
    j->spec = empty;
    j->spec.source.url = j->spec.target.url = "";
    j->start_ms = j->last_update_ms = rjob_now_ms();
    j->state = RJ_FAILED;
    j->err = dv_strndup(reason ? reason : "bad replication document", strlen(reason ? reason : "bad replication document"));
  }
  j->db = arena_strndup(&j->a, db, strlen(db));
  j->docid = arena_strndup(&j->a, docid, strlen(docid));
  j->spec_text = arena_strndup(&j->a, text, strlen(text));
  if (j->state == RJ_FAILED) {
    j->finished = 1;
    pthread_mutex_lock(&m->mu);
    j->next = m->jobs;
    m->jobs = j;
    pthread_mutex_unlock(&m->mu);
    if (!state || strcmp(state, "failed")) doc_mark(m, j, "failed", j->err);
  } else if (state && (!strcmp(state, "completed") || !strcmp(state, "failed"))) {
    j->state = !strcmp(state, "completed") ? RJ_COMPLETED : RJ_FAILED;
    j->finished = 1;
    const json_val *sts = json_obj_getz(doc, "_replication_stats");
    for (size_t i = 0; i < N_COUNTS; i++) {
      const json_val *x = sts ? json_obj_getz(sts, counts_fields[i].name) : NULL;
      if (x && x->type == JSON_NUMBER && json_num_int64(x->u.s, x->len, count_at(&j->n, i))) *count_at(&j->n, i) = 0;
    }
    const json_val *r = json_obj_getz(doc, "_replication_state_reason");
    if (r && r->type == JSON_STRING) j->err = dv_strndup(r->u.s, r->len);
    pthread_mutex_lock(&m->mu);
    j->next = m->jobs;
    m->jobs = j;
    pthread_mutex_unlock(&m->mu);
  } else if (job_start(m, j)) {
    job_free(j);
  }
out:
  arena_free(&a);
  dv_free(text);
}

static void listen_db(listener *l, rdb *d) {
  dv_arena a;
  arena_init(&a, 0);
  for (;;) {
    arena_reset(&a);
    dv_buf p;
    buf_init(&p);
    rh_escape(&p, d->name, strlen(d->name));
    buf_puts(&p, "/_changes?include_docs=true&limit=1000&since=");
    rh_seq_param(&p, &a, d->since);
    buf_putc(&p, 0);
    rh_resp r;
    int rc = buf_error(&p) ? DV_ENOMEM : rh_do(&l->c, "GET", (char *)p.p, NULL, NULL, NULL, 0, &r);
    buf_free(&p);
    if (rc) break;
    json_val *v = NULL;
    json_opts jo = {.flags = JSON_COPY | JSON_CSTR};
    json_err je;
    if (r.status != 200 || json_parse(&a, r.body.p, r.body.len, &jo, &v, &je) || v->type != JSON_OBJECT) {
      rh_resp_free(&r);
      break;
    }
    rh_resp_free(&r);
    const json_val *rows = json_obj_getz(v, "results");
    for (size_t i = 0; rows && rows->type == JSON_ARRAY && i < rows->len && !l->m->stop; i++) {
      const json_val *row = rows->u.items[i];
      const char *id = NULL;
      const json_val *idv = json_obj_getz(row, "id");
      if (idv && idv->type == JSON_STRING) id = idv->u.s;
      if (!id || !strncmp(id, "_design/", 8)) continue;
      const json_val *del = json_obj_getz(row, "deleted");
      const json_val *doc = json_obj_getz(row, "doc");
      if ((del && del->type == JSON_BOOL && del->b) || !doc || doc->type != JSON_OBJECT)
        doc_job_remove(l->m, d->name, id);
      else
        doc_changed(l, d->name, id, doc);
    }
    const json_val *last = json_obj_getz(v, "last_seq");
    if (last) {
      dv_buf t;
      buf_init(&t);
      if (!json_write(&t, last)) {
        dv_free(d->since);
        d->since = dv_strndup((char *)t.p, t.len);
      }
      buf_free(&t);
    }
    if (!rows || rows->type != JSON_ARRAY || rows->len < 1000) break;
  }
  arena_free(&a);
}

static void listen_all(listener *l) {
  rh_resp r;
  if (rh_do(&l->c, "GET", "_all_dbs", NULL, NULL, NULL, 0, &r)) return;
  dv_arena a;
  arena_init(&a, 0);
  json_val *v;
  json_opts jo = {.flags = JSON_COPY | JSON_CSTR};
  json_err je;
  if (r.status == 200 && !json_parse(&a, r.body.p, r.body.len, &jo, &v, &je) && v->type == JSON_ARRAY) {
    for (size_t i = 0; i < l->ndbs; i++) l->dbs[i].seen = 0;
    for (size_t i = 0; i < v->len && !l->m->stop; i++) {
      const json_val *n = v->u.items[i];
      if (n->type != JSON_STRING || !repl_is_replicator_db(n->u.s, n->len)) continue;
      rdb *d = rdb_get(l, n->u.s);
      if (!d) continue;
      d->seen = 1;
      listen_db(l, d);
    }
    for (size_t i = 0; i < l->ndbs; i++)
      if (!l->dbs[i].seen && l->dbs[i].since) { /* deleted database: its jobs go */
        repl_mgr *m = l->m;
        for (;;) {
          pthread_mutex_lock(&m->mu);
          rjob *j = NULL;
          for (rjob *k = m->jobs; k; k = k->next)
            if (k->db && !strcmp(k->db, l->dbs[i].name)) j = k;
          char *docid = j ? dv_strndup(j->docid, strlen(j->docid)) : NULL;
          pthread_mutex_unlock(&m->mu);
          if (!j) break;
          doc_job_remove(m, l->dbs[i].name, docid);
          dv_free(docid);
        }
        dv_free(l->dbs[i].since);
        l->dbs[i].since = NULL;
      }
  }
  rh_resp_free(&r);
  arena_free(&a);
}

/* Wait for a database update (or LISTEN_WAIT_S, or a third of the lease):
 * 1 when one touched a replicator database (or the answer could not be
 * read), so the listener looks at them again; 0 otherwise — a busy server's
 * other updates wake it without costing a listing. */
static int listen_wait(listener *l) {
  char path[512];
  int wait_ms = LISTEN_WAIT_S * 1000 < l->m->o.lease_ms / 3 ? LISTEN_WAIT_S * 1000 : l->m->o.lease_ms / 3;
  snprintf(path, sizeof path, "_db_updates?feed=longpoll&timeout=%d&since=", wait_ms);
  dv_buf p;
  buf_init(&p);
  buf_puts(&p, path);
  buf_puts(&p, l->dbu_since ? l->dbu_since : "now");
  buf_putc(&p, 0);
  rh_resp r;
  int rc = buf_error(&p) ? DV_ENOMEM : rh_do(&l->c, "GET", (char *)p.p, NULL, NULL, NULL, 0, &r);
  buf_free(&p);
  if (rc) {
    rh_sleep(&l->m->stop, 1000);
    return 1;
  }
  int relevant = 1;
  dv_arena a;
  arena_init(&a, 0);
  json_val *v;
  json_opts jo = {.flags = JSON_COPY | JSON_CSTR};
  json_err je;
  if (r.status == 200 && !json_parse(&a, r.body.p, r.body.len, &jo, &v, &je) && v->type == JSON_OBJECT) {
    const json_val *last = json_obj_getz(v, "last_seq");
    if (last && last->type == JSON_STRING) {
      dv_buf t;
      buf_init(&t);
      rh_escape(&t, last->u.s, last->len);
      dv_free(l->dbu_since);
      l->dbu_since = buf_error(&t) ? NULL : dv_strndup((char *)t.p, t.len);
      buf_free(&t);
    }
    const json_val *rows = json_obj_getz(v, "results");
    if (rows && rows->type == JSON_ARRAY) {
      relevant = 0;
      for (size_t i = 0; i < rows->len && !relevant; i++) {
        const json_val *n = json_obj_getz(rows->u.items[i], "db_name");
        relevant = !n || n->type != JSON_STRING || repl_is_replicator_db(n->u.s, n->len);
      }
    }
  } else {
    rh_sleep(&l->m->stop, 1000);
  }
  rh_resp_free(&r);
  arena_free(&a);
  return relevant;
}

static int admin_ep(repl_mgr *m, dv_arena *a, repl_ep *e, int strict_local) {
  memset(e, 0, sizeof *e);
  e->url = arena_strndup(a, m->local_base, strlen(m->local_base));
  e->hdrs = arena_alloc(a, 2 * sizeof *e->hdrs);
  if (!e->url || !e->hdrs) return DV_ENOMEM;
  char v[160];
  snprintf(v, sizeof v, "%s;;_admin", m->token);
  e->hdrs[0].name = arena_strndup(a, m->header, strlen(m->header));
  e->hdrs[0].value = arena_strndup(a, v, strlen(v));
  e->nhdrs = 1;
  if (strict_local && m->local_rev_header[0]) {
    e->hdrs[1].name = arena_strndup(a, m->local_rev_header, strlen(m->local_rev_header));
    e->hdrs[1].value = arena_strndup(a, "strict", 6);
    if (!e->hdrs[1].name || !e->hdrs[1].value) return DV_ENOMEM;
    e->nhdrs = 2;
  }
  return e->hdrs[0].name && e->hdrs[0].value ? 0 : DV_ENOMEM;
}

static void *listener_main(void *arg) {
  dv_thread_name("dv-repl-listen");
  repl_mgr *m = arg;
  listener l = {.m = m};
  dv_arena a;
  arena_init(&a, 0);
  if (admin_ep(m, &a, &l.ep, 0) || rh_init(&l.c, &l.ep, 30000, 2, &m->stop)) {
    arena_free(&a);
    return NULL;
  }
  for (int look = 1; !m->stop;) {
    if (look) listen_all(&l);
    lease_renew_due(m);
    if (m->stop) break;
    look = listen_wait(&l);
    if (!look) rh_sleep(&m->stop, LISTEN_IDLE_MS);
  }
  rh_free(&l.c);
  for (size_t i = 0; i < l.ndbs; i++) dv_free(l.dbs[i].name), dv_free(l.dbs[i].since);
  dv_free(l.dbs);
  dv_free(l.dbu_since);
  arena_free(&a);
  return NULL;
}

/* Write the job's end state into its document (a new revision). */
static void doc_mark(repl_mgr *m, rjob *j, const char *state, const char *reason) {
  dv_arena a;
  arena_init(&a, 0);
  repl_ep e;
  rh_conn c;
  volatile int nostop = 0;
  if (admin_ep(m, &a, &e, 0) || rh_init(&c, &e, 30000, 2, &nostop)) {
    arena_free(&a);
    return;
  }
  dv_buf p;
  buf_init(&p);
  rh_escape(&p, j->db, strlen(j->db));
  buf_putc(&p, '/');
  rh_escape(&p, j->docid, strlen(j->docid));
  buf_putc(&p, 0);
  for (int attempt = 0; attempt < 3; attempt++) {
    rh_resp r;
    if (buf_error(&p) || rh_do(&c, "GET", (char *)p.p, NULL, NULL, NULL, 0, &r)) break;
    json_val *doc;
    json_opts jo = {.flags = JSON_COPY | JSON_CSTR};
    json_err je;
    int ok = r.status == 200 && !json_parse(&a, r.body.p, r.body.len, &jo, &doc, &je) && doc->type == JSON_OBJECT;
    rh_resp_free(&r);
    if (!ok) break;
    char ts[32];
    iso8601(rjob_now_ms(), ts);
    if (json_obj_setz(&a, doc, "_replication_state", json_new_stringz(&a, state))) {}
    if (json_obj_setz(&a, doc, "_replication_state_time", json_new_stringz(&a, ts))) {}
    if (reason) if (json_obj_setz(&a, doc, "_replication_state_reason", json_new_stringz(&a, reason))) {}
    if (!strcmp(state, "completed")) {
      json_val *st = json_new_object(&a);
      pthread_mutex_lock(&m->mu);
      repl_counts n = j->n;
      pthread_mutex_unlock(&m->mu);
      for (size_t i = 0; i < N_COUNTS; i++)
        if (json_obj_setz(&a, st, counts_fields[i].name, json_new_int(&a, *count_at(&n, i)))) {}
      if (json_obj_setz(&a, doc, "_replication_stats", st)) {}
    }
    dv_buf b;
    buf_init(&b);
    if (json_write(&b, doc)) {
      buf_free(&b);
      break;
    }
    int rc = rh_do(&c, "PUT", (char *)p.p, NULL, "application/json", b.p, b.len, &r);
    buf_free(&b);
    if (rc) break;
    long st = r.status;
    rh_resp_free(&r);
    if (st != 409) break;
  }
  buf_free(&p);
  rh_free(&c);
  arena_free(&a);
}

/* ---- start / stop ----------------------------------------------------------------------- */

int repl_mgr_start(const repl_opts *o, repl_mgr **out) {
  if (rh_global_init()) return DV_EIO;
  repl_mgr *m = dv_calloc(1, sizeof *m);
  if (!m) return DV_ENOMEM;
  m->o = *o;
  if (!m->o.retry_initial_ms) m->o.retry_initial_ms = 1000;
  if (!m->o.retry_max_ms) m->o.retry_max_ms = 60000;
  if (m->o.lease_ms < 300) m->o.lease_ms = 30000;
  uint8_t rnd[16];
  if (o->identity) {
    dv_md5 c;
    dv_md5_init(&c);
    dv_md5_update(&c, o->identity, strlen(o->identity));
    dv_md5_final(&c, rnd);
  } else {
    FILE *ur = fopen("/dev/urandom", "rb");
    if (!ur || fread(rnd, 1, sizeof rnd, ur) != sizeof rnd)
      for (size_t i = 0; i < sizeof rnd; i++) rnd[i] = (uint8_t)(rand() ^ (int)rjob_now_ms() ^ (int)(i * 131));
    if (ur) fclose(ur);
  }
  for (size_t i = 0; i < sizeof rnd; i++) snprintf(m->owner + 2 * i, 3, "%02x", rnd[i]);
  snprintf(m->local_base, sizeof m->local_base, "%s", o->local_base);
  snprintf(m->header, sizeof m->header, "%s", o->internal_header);
  snprintf(m->local_rev_header, sizeof m->local_rev_header, "%s", o->local_rev_header ? o->local_rev_header : "");
  snprintf(m->token, sizeof m->token, "%s", o->internal_token);
  snprintf(m->uuid, sizeof m->uuid, "%s", o->server_uuid);
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->cv, NULL);
  if (pthread_create(&m->listener, NULL, listener_main, m) == 0) m->has_listener = 1;
  *out = m;
  return 0;
}

void repl_mgr_stop(repl_mgr *m) {
  if (!m) return;
  pthread_mutex_lock(&m->mu);
  m->stop = 1;
  for (rjob *j = m->jobs; j; j = j->next) j->stop = j->halt = 1;
  pthread_mutex_unlock(&m->mu);
  if (m->has_listener) pthread_join(m->listener, NULL);
  pthread_mutex_lock(&m->mu);
  for (;;) { /* transient jobs unlink themselves; document jobs end finished */
    int running = 0;
    for (rjob *j = m->jobs; j; j = j->next)
      if (j->has_thread && !j->finished) running = 1;
    if (!running) break;
    pthread_cond_wait(&m->cv, &m->mu);
  }
  while (m->jobs) {
    rjob *j = m->jobs;
    m->jobs = j->next;
    job_free(j);
  }
  pthread_mutex_unlock(&m->mu);
  pthread_mutex_destroy(&m->mu);
  pthread_cond_destroy(&m->cv);
  dv_free(m);
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void w_seq(json_w *w, const char *k, const char *seq) {
  json_w_keyz(w, k);
  if (seq) json_w_raw(w, seq, strlen(seq));
  else json_w_null(w);
}

static void w_ep(json_w *w, const char *k, const repl_ep *e) {
  dv_buf b;
  buf_init(&b);
  repl_ep_show(e, &b);
  json_w_keyz(w, k);
  json_w_str(w, (char *)b.p, b.len);
  buf_free(&b);
}

static void w_counts(json_w *w, const rjob *j, int with_seqs) {
  for (size_t i = 0; i < N_COUNTS; i++) {
    json_w_keyz(w, counts_fields[i].name);
    json_w_int(w, __atomic_load_n(count_at(&j->n, i), __ATOMIC_RELAXED));
  }
  int64_t p = __atomic_load_n(&j->n.changes_pending, __ATOMIC_RELAXED);
  json_w_keyz(w, "changes_pending");
  if (p >= 0) json_w_int(w, p);
  else json_w_null(w);
  if (with_seqs) {
    w_seq(w, "checkpointed_source_seq", j->checkpointed_seq);
    w_seq(w, "source_seq", j->source_seq);
    w_seq(w, "through_seq", j->through_seq);
  }
}

static void w_info(json_w *w, const rjob *j) {
  json_w_keyz(w, "info");
  if (j->state == RJ_CRASHING || j->state == RJ_FAILED || j->state == RJ_ERROR ||
      (j->state == RJ_PENDING && j->err)) {
    json_w_obj_begin(w);
    json_w_keyz(w, "error");
    json_w_strz(w, j->err ? j->err : "unknown");
    json_w_obj_end(w);
    return;
  }
  json_w_obj_begin(w);
  w_counts(w, j, 1);
  json_w_obj_end(w);
}

static void w_user(json_w *w, const rjob *j) {
  json_w_keyz(w, "user");
  if (j->spec.user) json_w_strz(w, j->spec.user);
  else json_w_null(w);
}

static int cmp_jobs_id(const void *a, const void *b) {
  return strcmp((*(rjob *const *)a)->id, (*(rjob *const *)b)->id);
}
static int cmp_jobs_doc(const void *a, const void *b) {
  const rjob *x = *(rjob *const *)a, *y = *(rjob *const *)b;
  int c = strcmp(x->db, y->db);
  return c ? c : strcmp(x->docid, y->docid);
}

/* The jobs matching a predicate, sorted. */
static rjob **collect(repl_mgr *m, int docs, size_t *out_n) {
  size_t n = 0;
  for (rjob *j = m->jobs; j; j = j->next) n++;
  rjob **v = dv_malloc((n + 1) * sizeof *v);
  if (!v) return NULL;
  size_t k = 0;
  for (rjob *j = m->jobs; j; j = j->next) {
    if (docs ? !j->db : (j->finished || j->stop)) continue;
    v[k++] = j;
  }
  qsort(v, k, sizeof *v, docs ? cmp_jobs_doc : cmp_jobs_id);
  *out_n = k;
  return v;
}

static void w_job(json_w *w, const rjob *j) {
  char ts[32];
  json_w_obj_begin(w);
  json_w_keyz(w, "database");
  if (j->db) json_w_strz(w, j->db);
  else json_w_null(w);
  json_w_keyz(w, "doc_id");
  if (j->docid) json_w_strz(w, j->docid);
  else json_w_null(w);
  json_w_keyz(w, "history");
  json_w_arr_begin(w);
  for (int i = 0; i < j->nhist; i++) {
    json_w_obj_begin(w);
    iso8601(j->hist[i].ms, ts);
    json_w_keyz(w, "timestamp");
    json_w_strz(w, ts);
    json_w_keyz(w, "type");
    json_w_strz(w, j->hist[i].type);
    json_w_obj_end(w);
  }
  json_w_arr_end(w);
  json_w_keyz(w, "id");
  json_w_strz(w, j->id);
  w_info(w, j);
  json_w_keyz(w, "node");
  json_w_strz(w, NODE);
  json_w_keyz(w, "pid");
  snprintf(ts, sizeof ts, "<0.%u.0>", (unsigned)((uintptr_t)j >> 4 & 0xfffff));
  json_w_strz(w, ts);
  w_ep(w, "source", &j->spec.source);
  w_ep(w, "target", &j->spec.target);
  iso8601(j->start_ms, ts);
  json_w_keyz(w, "start_time");
  json_w_strz(w, ts);
  w_user(w, j);
  json_w_obj_end(w);
}

int repl_jobs_json(repl_mgr *m, const char *id, int64_t skip, int64_t limit, dv_buf *out) {
  json_w w;
  json_w_init(&w, out);
  pthread_mutex_lock(&m->mu);
  size_t n;
  rjob **v = collect(m, 0, &n);
  int rc = v ? 0 : DV_ENOMEM;
  if (!rc && id) {
    rc = DV_ENOT_FOUND;
    for (size_t i = 0; i < n; i++)
      if (id_matches(v[i], id)) {
        w_job(&w, v[i]);
        rc = 0;
        break;
      }
  } else if (!rc) {
    json_w_obj_begin(&w);
    json_w_keyz(&w, "total_rows");
    json_w_int(&w, (int64_t)n);
    json_w_keyz(&w, "offset");
    json_w_int(&w, skip);
    json_w_keyz(&w, "jobs");
    json_w_arr_begin(&w);
    for (size_t i = (size_t)skip; i < n && (limit < 0 || (int64_t)(i - (size_t)skip) < limit); i++) w_job(&w, v[i]);
    json_w_arr_end(&w);
    json_w_obj_end(&w);
  }
  pthread_mutex_unlock(&m->mu);
  dv_free(v);
  return rc ? rc : json_w_finish(&w);
}

static void w_doc(json_w *w, const rjob *j) {
  char ts[32];
  json_w_obj_begin(w);
  json_w_keyz(w, "database");
  json_w_strz(w, j->db);
  json_w_keyz(w, "doc_id");
  json_w_strz(w, j->docid);
  json_w_keyz(w, "error_count");
  json_w_int(w, j->error_count);
  json_w_keyz(w, "id");
  if (j->state == RJ_COMPLETED || j->state == RJ_FAILED) json_w_null(w);
  else json_w_strz(w, j->id);
  if (j->state == RJ_COMPLETED) {
    json_w_keyz(w, "info");
    json_w_obj_begin(w);
    w_counts(w, j, 1);
    json_w_obj_end(w);
  } else {
    w_info(w, j);
  }
  iso8601(j->last_update_ms, ts);
  json_w_keyz(w, "last_updated");
  json_w_strz(w, ts);
  json_w_keyz(w, "node");
  json_w_strz(w, NODE);
  json_w_keyz(w, "source_proxy");
  json_w_null(w);
  json_w_keyz(w, "target_proxy");
  json_w_null(w);
  if (j->state == RJ_FAILED && !j->spec.source.host && !j->spec.source.local) {
    json_w_keyz(w, "source");
    json_w_null(w);
    json_w_keyz(w, "target");
    json_w_null(w);
  } else {
    w_ep(w, "source", &j->spec.source);
    w_ep(w, "target", &j->spec.target);
  }
  iso8601(j->start_ms, ts);
  json_w_keyz(w, "start_time");
  json_w_strz(w, ts);
  json_w_keyz(w, "state");
  json_w_strz(w, state_name[j->state]);
  json_w_obj_end(w);
}

int repl_docs_json(repl_mgr *m, const char *db, const char *docid, int64_t skip, int64_t limit, dv_buf *out) {
  json_w w;
  json_w_init(&w, out);
  pthread_mutex_lock(&m->mu);
  size_t n, k = 0;
  rjob **v = collect(m, 1, &n);
  int rc = v ? 0 : DV_ENOMEM;
  for (size_t i = 0; !rc && i < n; i++)
    if (!db || !strcmp(v[i]->db, db)) v[k++] = v[i];
  if (!rc && docid) {
    rc = DV_ENOT_FOUND;
    for (size_t i = 0; i < k; i++)
      if (!strcmp(v[i]->docid, docid)) {
        w_doc(&w, v[i]);
        rc = 0;
        break;
      }
  } else if (!rc) {
    json_w_obj_begin(&w);
    json_w_keyz(&w, "total_rows");
    json_w_int(&w, (int64_t)k);
    json_w_keyz(&w, "offset");
    json_w_int(&w, skip);
    json_w_keyz(&w, "docs");
    json_w_arr_begin(&w);
    for (size_t i = (size_t)skip; i < k && (limit < 0 || (int64_t)(i - (size_t)skip) < limit); i++) w_doc(&w, v[i]);
    json_w_arr_end(&w);
    json_w_obj_end(&w);
  }
  pthread_mutex_unlock(&m->mu);
  dv_free(v);
  return rc ? rc : json_w_finish(&w);
}

int repl_tasks_json(repl_mgr *m, dv_buf *out) {
  json_w w;
  json_w_init(&w, out);
  pthread_mutex_lock(&m->mu);
  json_w_arr_begin(&w);
  for (rjob *j = m->jobs; j; j = j->next) {
    if (j->finished || j->stop || j->state != RJ_RUNNING) continue;
    char ts[32];
    json_w_obj_begin(&w);
    json_w_keyz(&w, "type");
    json_w_strz(&w, "replication");
    json_w_keyz(&w, "replication_id");
    json_w_strz(&w, j->id);
    json_w_keyz(&w, "continuous");
    json_w_bool(&w, j->spec.continuous);
    json_w_keyz(&w, "database");
    if (j->db) json_w_strz(&w, j->db);
    else json_w_null(&w);
    json_w_keyz(&w, "doc_id");
    if (j->docid) json_w_strz(&w, j->docid);
    else json_w_null(&w);
    w_ep(&w, "source", &j->spec.source);
    w_ep(&w, "target", &j->spec.target);
    w_counts(&w, j, 1);
    json_w_keyz(&w, "node");
    json_w_strz(&w, NODE);
    json_w_keyz(&w, "pid");
    snprintf(ts, sizeof ts, "<0.%u.0>", (unsigned)((uintptr_t)j >> 4 & 0xfffff));
    json_w_strz(&w, ts);
    json_w_keyz(&w, "process_status");
    json_w_strz(&w, "waiting");
    json_w_keyz(&w, "started_on");
    json_w_int(&w, j->started_on_ms / 1000);
    json_w_keyz(&w, "updated_on");
    json_w_int(&w, j->last_update_ms / 1000);
    json_w_keyz(&w, "checkpoint_interval");
    json_w_int(&w, j->spec.checkpoint_interval_ms);
    w_user(&w, j);
    json_w_obj_end(&w);
  }
  json_w_arr_end(&w);
  pthread_mutex_unlock(&m->mu);
  return json_w_finish(&w);
}
