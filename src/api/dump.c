/* dump.c — `divan dump` and `divan load` online, for moving a database
 * between two running servers (store/dump.h; README "Dump and load"):
 *
 *   POST /_node/{node}/_dump/{db}   server admins only: the dump file
 *                                   (application/octet-stream, chunked)
 *   PUT  /{db}?load=true            server admins only: the body is a dump
 *                                   file, loaded as the new database {db}
 *
 * CouchDB 3.4 has neither. The dump sits under /_node/{node}/ beside
 * _check ({node} is _local or the node's name, else 404); POST because
 * it is an action that runs for as long as the copy takes, not a resource
 * a cache may keep. The load is the database-creating PUT with a body, so
 * its answers are create's: 201 {"ok":true} with Location, 412 file_exists
 * when {db} exists (answered before any body byte is read), 400
 * illegal_database_name; a refused file (damaged, truncated, a newer
 * format) is 400 bad_request with the reason of dumpfmt.h's reader, and
 * nothing of it stays. Until the end nothing is visible (store_load).
 *
 * Data flow (memory bounded by the pipe, API_DUMP_PIPE, whatever the
 * size of the database):
 *   dump:  a thread runs store_dump into a dump_pipe ─▶ the response is a
 *          feed whose step takes what the pipe holds (HF_WAIT when empty;
 *          the writer wakes it) ─▶ the end of the pipe ends the body; a
 *          failed dump cuts the body (no trailer: a load refuses it). The
 *          client that leaves closes the pipe, which stops the dump.
 *   load:  a HTTP_STREAM_BODY route: the body's pieces go to a sink that
 *          writes them to a dump_pipe (waiting for room) ─▶ a thread runs
 *          store_load from it ─▶ the body's end closes the pipe and the
 *          answer is the load's. Neither [chttpd] max_http_request_size
 *          nor the request body budget applies (a streamed body: a dump of
 *          many GB is legitimate), nor [couchdb] max_document_size (the
 *          file holds stored KVs, not documents; the source accepted them).
 * The dump here is a dump: the source stays writable and writes after its
 * last catch-up round are not in it. `divan move` (the CLI) is the form
 * that makes the source read-only for its last round and retires it.
 */
#include <string.h>

#include "api/api.h"
#include "store/dump.h"
#include "util/alloc.h"
#include "util/log.h"

#define API_DUMP_PIPE (1u << 20)    /* bytes between the dump and the response, or the body and the load */
#define API_DUMP_STEP (64u << 10)   /* bytes a feed step hands the engine */

/* ---- dump ------------------------------------------------------------------------ */

typedef struct dfeed {
  dump_pipe *p;
  store_dump_job *job;
  int hooked;
} dfeed;

static void wake_feed(void *arg) { hfeed_wake(arg); }

static int dump_step(void *arg, hfeed *f, dv_buf *out) {
  dfeed *d = arg;
  if (!d->hooked) {
    dump_pipe_on_data(d->p, wake_feed, f);
    d->hooked = 1;
  }
  (void)hfeed_woken(f);
  int rc = dump_pipe_take(d->p, out, API_DUMP_STEP);
  if (rc == 1) return HF_MORE;
  if (rc == 0) return HF_WAIT;
  if (rc == DUMP_PIPE_END) return HF_DONE;
  return HF_FAIL; /* the dump failed: a body without its trailer */
}

static void dump_done(void *arg) {
  dfeed *d = arg;
  dump_pipe_close_r(d->p);
  const char *why = NULL;
  int rc = store_dump_join(d->job, NULL, &why);
  if (rc && rc != DV_ECANCELLED) log_warning("online dump failed: %s", why ? why : dv_strerror(rc));
  dump_pipe_unref(d->p);
  dv_free(d);
}

static void hapi_dump(hreq *r) {
  if (!api_our_node(r)) return;
  if (api_open_db(r)) return; /* 404 before a byte of the body */
  dfeed *d = dv_calloc(1, sizeof *d);
  if (!d || !(d->p = dump_pipe_new(API_DUMP_PIPE))) {
    dv_free(d);
    hres_err(r, DV_ENOMEM);
    return;
  }
  int rc = store_dump_start(api_store(r), r->app->db_name, d->p, &d->job);
  if (rc) {
    dump_pipe_unref(d->p);
    dv_free(d);
    hres_err(r, rc);
    return;
  }
  static const hfeed_ops ops = {.step = dump_step, .done = dump_done};
  hres_feed(r, 200, "application/octet-stream", &ops, d);
}

/* ---- load ------------------------------------------------------------------------ */

typedef struct lsink {
  dump_pipe *p;
  store_load_job *job;
  int joined, rc;
  const char *why;
} lsink;

static void load_join(lsink *l, int wrc) {
  if (l->joined) return;
  dump_pipe_close_w(l->p, wrc);
  l->rc = store_load_join(l->job, NULL, &l->why);
  l->joined = 1;
}

/* The load's error as the answer. */
static void load_err(hreq *r, int rc, const char *why) {
  if (rc == DV_ECORRUPT || rc == DV_ENOTSUP) hres_errw(r, DV_EBAD_REQUEST, why);
  else if (rc == DV_EDB_EXISTS || rc == DV_EBAD_DB_NAME) hres_err(r, rc);
  else hres_errw(r, rc, why);
}

static int load_write(void *arg, hreq *r, const uint8_t *p, size_t n) {
  lsink *l = arg;
  if (!dump_pipe_write(l->p, p, n)) return 0;
  load_join(l, DV_ECANCELLED); /* the load stopped: its reason is the answer */
  load_err(r, l->rc ? l->rc : DV_EBAD_REQUEST, l->why ? l->why : "the dump file goes on past its end");
  return -1;
}

static void load_finish(void *arg, hreq *r) {
  lsink *l = arg;
  load_join(l, 0);
  if (l->rc) {
    load_err(r, l->rc, l->why);
    return;
  }
  api_created(r);
}

static void load_done(void *arg) {
  lsink *l = arg;
  load_join(l, DV_EIO); /* the client left: the load fails and leaves nothing */
  dump_pipe_unref(l->p);
  dv_free(l);
}

static void hapi_db_load(hreq *r) {
  const char *name = r->app->db_name;
  if (store_db_name_check(name, strlen(name))) {
    (void)api_open_db(r); /* CouchDB's illegal_database_name */
    return;
  }
  store_db *db;
  int rc = store_db_open(api_store(r), name, &db);
  if (!rc) {
    store_db_close(db);
    hres_err(r, DV_EDB_EXISTS);
    return;
  }
  if (rc != DV_ENO_DB) {
    hres_err(r, rc);
    return;
  }
  lsink *l = dv_calloc(1, sizeof *l);
  if (!l || !(l->p = dump_pipe_new(API_DUMP_PIPE))) {
    dv_free(l);
    hres_err(r, DV_ENOMEM);
    return;
  }
  rc = store_load_start(api_store(r), name, l->p, &l->job);
  if (rc) {
    dump_pipe_unref(l->p);
    dv_free(l);
    hres_err(r, rc);
    return;
  }
  static const hsink_ops ops = {.write = load_write, .finish = load_finish, .done = load_done};
  hreq_sink(r, &ops, l);
}

static const http_route routes[] = {
    {M(POST), "/_node/{any}/_dump/{db}", API_SERVER_ADMIN, hapi_dump},
};
const api_routes api_dump_routes = API_TABLE(routes);

/* db.c's table holds the load's row, beside PUT /{db} */
void hapi__db_load(hreq *r) { hapi_db_load(r); }
