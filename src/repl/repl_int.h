/* repl_int.h — shared by the files of src/repl only: the HTTP client
 * (rhttp.c), a job and its counters (job.c), and the manager's state
 * (mgr.c). */
#ifndef DV_REPL_INT_H
#define DV_REPL_INT_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "repl/repl.h"

/* ---- rhttp.c: requests to one endpoint ------------------------------------ */

typedef struct rh_conn {
  void *h;                 /* CURL easy handle, reused: keeps its connection */
  const repl_ep *ep;       /* base URL and headers */
  void *hdrs;              /* struct curl_slist * of ep's headers + Accept */
  volatile int *stop;      /* set by another thread: abort transfers and backoffs */
  int timeout_ms;          /* connect and stall timeout */
  int retries;             /* retries of a request on network errors and 5xx */
  char err[256];           /* the last failure, for the job's error */
} rh_conn;

typedef struct rh_resp {
  long status;             /* HTTP status (0 before an answer) */
  dv_buf body;             /* the answer's body (unless sink) */
  char ctype[256];         /* its Content-Type */
  FILE *sink;              /* rh_do_file: the body goes here instead */
} rh_resp;

int rh_global_init(void);
int rh_init(rh_conn *c, const repl_ep *ep, int timeout_ms, int retries, volatile int *stop) DV_MUST_CHECK;
void rh_free(rh_conn *c);
void rh_resp_free(rh_resp *r);

/* method path (relative to the endpoint's URL; may hold a query) with an
 * optional body. Network errors, 5xx and 429 are retried up to c->retries
 * times with a doubling backoff from 250 ms; the last answer is returned
 * whatever its status. Returns 0 with *out filled (caller frees with
 * rh_resp_free), DV_EIO when no answer came (c->err says why), or
 * DV_ECANCELLED when *c->stop was set. accept: the Accept header, or NULL
 * for application/json. */
int rh_do(rh_conn *c, const char *method, const char *path, const char *accept, const char *ctype,
          const void *body, size_t len, rh_resp *out) DV_MUST_CHECK;

/* rh_do with files: set out->sink (before the call) to receive the answer
 * there (truncated before each attempt), and/or pass src (len bytes, sent
 * from its start on each attempt) instead of body. */
int rh_do_file(rh_conn *c, const char *method, const char *path, const char *accept, const char *ctype,
               const void *body, size_t len, FILE *src, rh_resp *out) DV_MUST_CHECK;

/* Append a seq (JSON text: CouchDB's are strings or numbers; NULL is 0) as
 * the value of since=: a string's value or a number's text, escaped. */
void rh_seq_param(dv_buf *p, dv_arena *a, const char *seq);

/* Append s percent-encoded for a URL path segment or query value. */
void rh_escape(dv_buf *b, const char *s, size_t n);

/* Sleep up to ms, returning early (1) when *stop is set. */
int rh_sleep(volatile int *stop, int ms);

/* ---- job.c: one replication ------------------------------------------------- */

typedef struct repl_counts {
  int64_t docs_read, docs_written, doc_write_failures;
  int64_t missing_checked, missing_found, bulk_get_docs, bulk_get_attempts;
  int64_t changes_pending; /* -1: unknown */
} repl_counts;

enum { RJ_INITIALIZING, RJ_RUNNING, RJ_PENDING, RJ_CRASHING, RJ_ERROR, RJ_COMPLETED, RJ_FAILED };

#define RJ_HISTORY 10

typedef struct rjob {
  struct repl_mgr *m;
  struct rjob *next;
  dv_arena a;              /* the spec and strings */
  repl_spec spec;
  char id[REPL_ID_MAX];    /* full id (with extensions) */
  char base_id[33];
  char *db, *docid;        /* its _replicator document, or NULL (transient) */
  char *spec_text;         /* its replication fields as JSON text, to tell
                              a real change from the manager's own state writes */
  repl_done_cb done;       /* one-shot POST /_replicate waiter */
  void *done_arg;
  pthread_t th;
  int has_thread;
  volatile int stop;       /* ask the thread to end */
  volatile int halt;       /* end the current run (stop, or the lease went elsewhere) */
  int leased;              /* a document job holds its lease (mgr.c) */
  int lease_lost;          /* another process took it: wait and try again */
  int64_t lease_renew_ms;  /* when to renew it */
  /* under m->mu */
  int state;
  int error_count;
  char *err;               /* malloc'd: the last error ("unauthorized: …") */
  repl_counts n;           /* counters (atomics while running) */
  char *source_seq;        /* malloc'd JSON texts, or NULL */
  char *checkpointed_seq;
  char *through_seq;
  int64_t start_ms, last_update_ms, started_on_ms;
  struct { int64_t ms; const char *type; } hist[RJ_HISTORY];
  int nhist;
  int finished;            /* the thread is done (joinable) */
} rjob;

/* Run the replication once: 0 when a one-shot run completed (res->body
 * holds the answer), or an error with res->rc/reason filled.
 * Continuous runs return only on errors or stop (DV_ECANCELLED). */
int job_run(rjob *j, repl_result *res);

/* Set the error of a result: rc is the answer's code (its row gives the
 * status and error name), the reason formatted. */
void repl_result_err(repl_result *res, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- mgr.c ------------------------------------------------------------------ */

struct repl_mgr {
  repl_opts o;
  char owner[33];          /* this process, in the leases of _replicator jobs */
  char local_base[256];
  char header[64], token[80], uuid[33];
  char local_rev_header[64]; /* repl_opts.local_rev_header */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  rjob *jobs;
  volatile int stop;
  pthread_t listener;
  int has_listener;
};

/* ---- rjob.c: a job's observable state (written by job.c and mgr.c) ----------- */

/* Wall clock, unix milliseconds. */
int64_t rjob_now_ms(void);
/* Set a job's state and remember an event (takes m->mu). */
void rjob_event(rjob *j, int state, const char *event);
/* Record a job's seqs (JSON texts; NULL keeps; takes m->mu). */
void rjob_seqs(rjob *j, const char *source_seq, const char *through_seq, const char *checkpointed);

#endif
