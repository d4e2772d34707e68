/* repl.h — divan's own replicator: CouchDB's replication protocol as a
 * client (libcurl), the jobs that run it, and the _replicator databases.
 *
 * The replicator is a client of HTTP endpoints only. A "local" source or
 * target (a bare database name) is this same server reached over loopback,
 * authenticated as the user who asked (an internal token the HTTP layer
 * checks; see repl_opts.internal_*). So one code path serves local, remote,
 * divan, CouchDB and pouchdb-server peers, and the replicator does not
 * depend on the HTTP server's internals: src/api calls in here and main.c starts it, never the
 * other way round.
 *
 * Pieces (data flow in each file's header):
 *   spec.c   a replication's JSON (POST /_replicate body or _replicator
 *            document) → repl_spec; CouchDB's replication id (version 4:
 *            md5 of Erlang's term_to_binary of [ServerUUID, Source, Target
 *            | Filter]); endpoints shown with passwords masked.
 *   rhttp.c  one HTTP request to an endpoint, with retries and backoff.
 *   job.c    one replication run: peers, checkpoints, changes, revs_diff,
 *            _bulk_get / open_revs, _bulk_docs / multipart PUT, checkpoints.
 *   mgr.c    the scheduler: jobs by id, their threads, states and backoff,
 *            the _replicator databases, and the JSON of /_scheduler/jobs,
 *            /_scheduler/docs and /_active_tasks.
 */
#ifndef DV_REPL_H
#define DV_REPL_H

#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/err.h"

/* ---- a replication's description ---------------------------------------- */

typedef struct repl_hdr {
  char *name, *value;
} repl_hdr;

typedef struct repl_ep {
  char *local;      /* a local database name, or NULL for a URL */
  char *url;        /* base URL without credentials, ending in '/' (local: filled by the manager) */
  char *user;       /* from the URL's userinfo or a Basic Authorization header, or NULL */
  char *pass;       /* its password (URL userinfo), or NULL */
  repl_hdr *hdrs;   /* headers to send (user given, Authorization included) */
  size_t nhdrs;
  /* for the replication id (CouchDB's get_v4_endpoint) */
  char *host;       /* URL host */
  int port;         /* 0 = the scheme's default (or 5984) */
  char *path;       /* URL path, ending in '/' */
} repl_ep;

typedef struct repl_spec {
  repl_ep source, target;
  int continuous, create_target, cancel, winning_revs_only;
  int use_checkpoints, use_bulk_get;
  const json_val *doc_ids;      /* array of strings, or NULL */
  const json_val *selector;     /* object, or NULL */
  char *filter;                 /* "_doc_ids", "_selector", "ddoc/name", or NULL */
  const json_val *query_params; /* object, or NULL */
  char *since_seq;              /* JSON text of since_seq, or NULL */
  char *replication_id;         /* given with cancel, or NULL */
  int worker_processes, worker_batch_size, http_connections;
  int connection_timeout_ms, retries_per_request, checkpoint_interval_ms;
  char *user;                   /* user_ctx name (who asked), or NULL */
  char **roles;                 /* user_ctx roles */
  size_t nroles;
} repl_spec;

/* Parse a replication description into *out, allocated in a (which must
 * outlive it; the JSON must too). On a bad description returns DV_EINVAL
 * with *reason (static or in a) saying why, for a 400 bad_request. */
int repl_spec_parse(dv_arena *a, const json_val *body, repl_spec *out, const char **reason) DV_MUST_CHECK;

/* Deep copy of a parsed spec into arena a (JSON values included). */
int repl_spec_copy(dv_arena *a, const repl_spec *in, repl_spec *out) DV_MUST_CHECK;

#define REPL_ID_MAX 64 /* 32 hex + "+continuous+create_target" + NUL */

/* CouchDB's version-4 replication id: the 32 hex chars of the base id into
 * base (33 bytes) and, when full is not NULL, base plus "+continuous" and
 * "+create_target" as the options ask. filter_code: a user filter's source
 * (fetched from the source) or NULL. */
int repl_id_make(const repl_spec *s, const char server_uuid[33], const char *filter_code, char base[33],
                 char full[REPL_ID_MAX]) DV_MUST_CHECK;

/* The endpoint as CouchDB shows it: the URL with the password as *****. */
void repl_ep_show(const repl_ep *e, dv_buf *out);

/* ---- the manager ---------------------------------------------------------- */

typedef struct repl_mgr repl_mgr;

typedef struct repl_opts {
  const char *local_base;      /* "http://127.0.0.1:PORT/" this server answers on */
  const char *internal_header; /* header name the HTTP layer trusts on loopback */
  const char *internal_token;  /* its secret value */
  const char *local_rev_header; /* header that makes a _local write rev-checked ("strict"): leases */
  const char *server_uuid;     /* 32 hex, for replication ids */
  int retry_initial_ms;        /* first backoff of a crashing job (0: 1000) */
  int retry_max_ms;            /* backoff cap (0: 60000) */
  int lease_ms;                /* how long a _replicator job's lease lasts (0: 30000) */
  const char *identity;        /* names this process among those sharing a cluster and
                                  stays the same across its restarts (host, data
                                  directory, configured port), so a restarted process
                                  takes its leases back at once; NULL: random */
} repl_opts;

int repl_mgr_start(const repl_opts *o, repl_mgr **out) DV_MUST_CHECK;
/* Stop every job (one-shot waiters get DV_ECANCELLED) and the listener. */
void repl_mgr_stop(repl_mgr *m);

/* The outcome of a one-shot replication, for POST /_replicate. */
typedef struct repl_result {
  int rc;          /* 0, or the DV_E* code of the answer: its row in
                      util/err.h gives the status and CouchDB's error
                      (DV_EDB_NOT_FOUND 404 db_not_found, DV_EUNAUTHORIZED,
                      DV_EREPL_FAILED 500 replication_failed, …) */
  char *reason;    /* malloc'd; the answer's reason */
  dv_buf body;     /* on success: the JSON answer */
} repl_result;

typedef void (*repl_done_cb)(void *arg, repl_result *res); /* res owned by the callee until the cb returns */

/* POST /_replicate. spec is copied. One-shot: the job runs and done() is
 * called once with its result (on a job thread). Continuous: the job is
 * started and *out_id set; done is not called. Cancel: the job named by
 * the spec (or its replication_id) is stopped; DV_ENOT_FOUND if none.
 * Returns 0 or an error for the continuous/cancel forms; for one-shot 0
 * means done() will run. */
int repl_submit(repl_mgr *m, const repl_spec *spec, repl_done_cb done, void *arg, char out_id[REPL_ID_MAX])
    DV_MUST_CHECK;

/* JSON answers. `all` lists for admins; filters: NULL = any. */
int repl_jobs_json(repl_mgr *m, const char *id, int64_t skip, int64_t limit, dv_buf *out) DV_MUST_CHECK;
int repl_docs_json(repl_mgr *m, const char *db, const char *docid, int64_t skip, int64_t limit, dv_buf *out)
    DV_MUST_CHECK;
int repl_tasks_json(repl_mgr *m, dv_buf *out) DV_MUST_CHECK;

/* A _replicator database is one named "_replicator" or ending in
 * "/_replicator". */
int repl_is_replicator_db(const char *name, size_t len);

/* Check a document written to a _replicator database (CouchDB's
 * validate_doc_update there): 0, or DV_EINVAL with *reason for a 403
 * forbidden. user/is_admin: the writer. */
int repl_doc_validate(dv_arena *a, const json_val *doc, const char *user, int is_admin, const char **reason)
    DV_MUST_CHECK;

#endif
