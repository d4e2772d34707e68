/* stats.c — the metrics and health endpoints of a node, in CouchDB 3.4's
 * shapes, and the count of every request:
 *
 *   GET /_node/{node}/_stats[/group/metric…]  util/stats.h's table as
 *       CouchDB's tree: every metric {"value","type","desc"}, a histogram's
 *       value couch_stats_math's object; a path names a subtree (CouchDB's
 *       couch_stats_httpd:extract_path: an unknown one is null)
 *   GET /_node/{node}/_prometheus   the same metrics in Prometheus' text
 *       format, named as couch_prometheus_util names them
 *   GET /_node/{node}/_system       the process: uptime, memory, threads,
 *       open files, … (chttpd_node:get_stats' fields that are true here)
 *   GET /_node/{node}/_versions     the libraries divan runs on
 *
 * {node} is _local or the node's name (API_NODE_NAME), else 404 "no such
 * node" as CouchDB; server admins only. /_up is server.c's.
 *
 * Values that are not counted but read when reported (util/stats.h's GAUGE
 * rows) come from here: the files the process has open, the engine's
 * numbers (kv_db_info: RocksDB's compaction backlog; nothing on
 * FoundationDB, whose rows are then left out rather than shown as 0) and
 * the index lag — per database, design document and index (each view of a
 * design document's index, each Mango json index), the changes rows of the
 * database not yet in the index, counted up to INDEX_LAG_CAP: a view's
 * rows after the Sequence its state row has reached; a Mango index being
 * built, the rows between its build cursor and its creation (later writes
 * are indexed by the write itself, so a built Mango index is 0).
 *
 * Counting a request, once, with its answer's status: a whole answer when
 * it is queued (api_stats_answered, the http layer's answered hook), so a
 * client that has read an answer finds it counted, whichever connection
 * it asks on next; a feed or a stream when it is over (api_stats_request,
 * from route.c's done: r->end, sent whole or aborted — then its status, if
 * it had one yet). CouchDB counts the method when the request starts, so
 * a request still running (a continuous feed) shows here once it ends. A
 * request rerouted by _rewrite passes done before its end; it is counted
 * once, at its answer or end, from its start. The
 * replicator's loopback requests (the scheduler's listener, replications
 * of local databases) are not HTTP clients and are not counted: CouchDB's
 * replicator reaches its own databases without HTTP. What they read and
 * write is counted as any other (couchdb.document_writes, divan.kv.*).
 * [stats] enabled = false pauses counting (api_stats_config, at the start
 * and on every /_config change of it); _stats and _prometheus then answer
 * 404 saying so.
 */
#include <dirent.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api/api.h"
#include "index/collate.h"
#include "index/js.h"
#include "index/mindex.h"
#include "index/view.h"

#define INDEX_LAG_CAP DV_STAT_INDEX_LAG_CAP /* changes rows counted per index; the row's desc says so */

/* ---- counting a request -------------------------------------------------------- */

static int16_t status_stat[600]; /* HTTP status -> dv_stat_id + 1, 0: none */
static pthread_once_t status_once = PTHREAD_ONCE_INIT;

/* The status rows are the table's "couchdb.httpd_status_codes.NNN". */
static void status_init(void) {
  static const char pre[] = "couchdb.httpd_status_codes.";
  for (int i = 0; i < DV_ST_N; i++)
    if (!strncmp(dv_stat_defs[i].path, pre, sizeof pre - 1)) {
      int code = atoi(dv_stat_defs[i].path + sizeof pre - 1);
      if (code > 0 && code < 600) status_stat[code] = (int16_t)(i + 1);
    }
}

/* Counts r, its time up to now_us, unless it was weighed before: whether
 * it counts is decided once, at its answer (or a feed's or stream's end). */
static void count(hreq *r, int64_t now_us) {
  if (r->app->counted) return;
  r->app->counted = 1;
  if (!dv_stats_on()) return;
  if (r->app->auth_via && !strcmp(r->app->auth_via, "replicator")) return; /* our own plumbing */
  static const dv_stat_id by_method[] = {[HM_GET] = DV_ST_M_GET,       [HM_HEAD] = DV_ST_M_HEAD,
                                         [HM_POST] = DV_ST_M_POST,     [HM_PUT] = DV_ST_M_PUT,
                                         [HM_DELETE] = DV_ST_M_DELETE, [HM_COPY] = DV_ST_M_COPY,
                                         [HM_OPTIONS] = DV_ST_M_OPTIONS};
  pthread_once(&status_once, status_init);
  dv_stat_inc(DV_ST_HTTPD_REQUESTS);
  if (r->method >= HM_GET && r->method <= HM_OPTIONS) dv_stat_inc(by_method[r->method]);
  if (r->status > 0 && r->status < 600 && status_stat[r->status]) dv_stat_inc(status_stat[r->status] - 1);
  dv_stat_hist(DV_SH_REQUEST_TIME, (double)(now_us - r->t_start_us) / 1000.0);
}

void api_stats_answered(hreq *r) { count(r, hnow_us()); }

void api_stats_request(hreq *r) {
  if (r->end) count(r, r->t_end_us); /* !end: a reroute letting go of r->app; counted at its end */
}

void api_stats_config(dv_config *cfg) { dv_stats_set(cfg ? config_get_bool(cfg, "stats", "enabled", 1) : 1); }

/* ---- values read when reported --------------------------------------------------- */

/* One index's lag (strings in the request's arena). */
typedef struct lag_row {
  const char *db, *ddoc, *index;
  int64_t lag;
} lag_row;

typedef struct report {
  hreq *r;
  kv_info kv;              /* the engine's numbers */
  lag_row *lags;           /* every index's lag */
  size_t nlags, cap;
  int rc;                  /* a failure while gathering (answered as an error) */
} report;

/* Entries of /proc/self/fd, the directory's own descriptor not counted. */
static int64_t open_files(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int64_t n = 0;
  struct dirent *e;
  while ((e = readdir(d))) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1;
}

static int lag_push(report *rp, const char *db, const char *ddoc, size_t ddoc_len, const char *index, int64_t lag) {
  dv_arena *a = &rp->r->a;
  if (rp->nlags == rp->cap) {
    size_t cap = rp->cap ? 2 * rp->cap : 16;
    lag_row *p = arena_realloc(a, rp->lags, rp->cap * sizeof *p, cap * sizeof *p, 8);
    if (!p) return DV_ENOMEM;
    rp->lags = p;
    rp->cap = cap;
  }
  lag_row *l = &rp->lags[rp->nlags];
  l->db = db;
  l->ddoc = arena_strndup(a, ddoc, ddoc_len);
  l->index = arena_strndup(a, index, strlen(index));
  l->lag = lag;
  if (!l->ddoc || !l->index) return DV_ENOMEM;
  rp->nlags++;
  return 0;
}

/* Changes rows after `since` (up to `upto` when given), counted up to the cap. */
struct count_arg {
  const store_seq *upto;
  int64_t n;
};

static int count_row(void *arg, const store_change *c) {
  struct count_arg *k = arg;
  if (k->upto && store_seq_cmp(&c->seq, k->upto) > 0) return 1;
  return ++k->n >= INDEX_LAG_CAP ? 1 : 0;
}

static int changes_after(store_db *db, const store_seq *since, const store_seq *upto, int64_t *out) {
  store_changes_opts o;
  memset(&o, 0, sizeof o);
  if (since) o.since = *since;
  o.limit = INDEX_LAG_CAP + 1;
  struct count_arg k = {.upto = upto};
  int rc = store_changes(db, &o, count_row, &k, NULL);
  if (rc == 1) rc = 0;
  *out = k.n;
  return rc;
}

struct ddoc_ids {
  dv_arena *a;
  char **ids;
  size_t *lens;
  size_t n, cap;
};

static int ddoc_id(void *arg, const store_doc_row *row) {
  struct ddoc_ids *d = arg;
  if (d->n == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 16;
    char **i = arena_realloc(d->a, d->ids, d->cap * sizeof *i, cap * sizeof *i, 8);
    size_t *l = arena_realloc(d->a, d->lens, d->cap * sizeof *l, cap * sizeof *l, 8);
    if (!i || !l) return DV_ENOMEM;
    d->ids = i, d->lens = l, d->cap = cap;
  }
  if (!(d->ids[d->n] = arena_strndup(d->a, row->id, row->id_len))) return DV_ENOMEM;
  d->lens[d->n++] = row->id_len;
  return 0;
}

/* A design document's body, read in a transaction of its own (not one of
 * couchdb.database_reads: the report must not count itself). */
struct ddoc_get {
  const char *id;
  size_t len;
  dv_arena *a;
  json_val *doc;
};

static int ddoc_get_fn(store_tx *t, void *arg) {
  struct ddoc_get *g = arg;
  return store_tx_doc(t, g->id, g->len, 0, g->a, &g->doc);
}

/* Every view and Mango index of database name. */
static int db_lags(report *rp, const char *name, size_t len) {
  dv_arena *a = &rp->r->a;
  char *dbname = arena_strndup(a, name, len);
  if (!dbname) return DV_ENOMEM;
  store_db *db = NULL;
  int rc = store_db_open(api_store(rp->r), dbname, &db);
  if (rc) return rc == DV_ENO_DB ? 0 : rc; /* deleted meanwhile */
  mi_def *d = NULL;
  size_t n = 0;
  rc = mi_list(db, a, &d, &n);
  for (size_t i = 0; !rc && i < n; i++) {
    int64_t lag = 0;
    if (!d[i].ready) rc = changes_after(db, d[i].have_cursor ? &d[i].cursor : NULL, &d[i].created, &lag);
    if (!rc) rc = lag_push(rp, dbname, d[i].ddoc, strlen(d[i].ddoc), d[i].name, lag);
  }
  struct ddoc_ids ids = {.a = a};
  store_range rg;
  store_range_init(&rg);
  if (!rc) rc = store_all_docs(db, STORE_DESIGN, &rg, 0, 0, ddoc_id, &ids);
  for (size_t i = 0; !rc && i < ids.n; i++) {
    struct ddoc_get g = {.id = ids.ids[i], .len = ids.lens[i], .a = a};
    rc = store_db_run(db, ddoc_get_fn, &g);
    if (rc == DV_ENOT_FOUND || rc == DV_EDELETED) { /* gone meanwhile */
      rc = 0;
      continue;
    }
    vw_index *ix = NULL;
    if (!rc && (rc = vw_from_ddoc(a, g.doc, &ix)) == DV_ENOT_FOUND) { /* no views */
      rc = 0;
      continue;
    }
    vw_info in;
    int64_t lag = 0;
    if (!rc) rc = vw_info_get(db, ix, &in);
    if (!rc) rc = changes_after(db, in.have_seq ? &in.seq : NULL, NULL, &lag);
    for (size_t v = 0; !rc && v < ix->n_views; v++)
      rc = lag_push(rp, dbname, ids.ids[i], ids.lens[i], ix->views[v].name, lag);
  }
  store_db_close(db);
  return rc;
}

static int lag_db(void *arg, const char *name, size_t len) { return db_lags(arg, name, len); }

static int index_lags(report *rp) {
  store_range rg;
  store_range_init(&rg);
  return store_db_list(api_store(rp->r), &rg, lag_db, rp);
}

/* A GAUGE row's value: 1 with *out, 0 when this node cannot know it (the
 * row is left out). INDEX_LAG is a family (rp->lags). */
static int gauge(report *rp, dv_stat_id id, int64_t *out) {
  switch (id) {
  case DV_ST_OPEN_OS_FILES: *out = open_files(); break;
  case DV_ST_ROCKS_PENDING_COMPACTION: *out = rp->kv.pending_compaction_bytes; break;
  case DV_ST_ROCKS_RUNNING_COMPACTIONS: *out = rp->kv.running_compactions; break;
  case DV_ST_ROCKS_RUNNING_FLUSHES: *out = rp->kv.running_flushes; break;
  case DV_ST_ROCKS_SST_BYTES: *out = rp->kv.sst_bytes; break;
  case DV_ST_ROCKS_MEMTABLE_BYTES: *out = rp->kv.memtable_bytes; break;
  case DV_ST_KV_HISTORY_BYTES: *out = rp->kv.history_bytes; break;
  case DV_ST_ROCKS_WRITE_STOPPED: *out = rp->kv.write_stopped; break;
  case DV_ST_ROCKS_READ_ONLY: *out = rp->kv.read_only; break;
  default: return 0;
  }
  return *out >= 0;
}

/* Is a row under the path asked for (or the path inside the row's)? */
static int wanted(const char *path, const hreq *r, int from) {
  const char *p = path;
  for (int i = from; i < r->nseg && *p; i++) {
    size_t n = strcspn(p, ".");
    if (n != r->seg_len[i] || memcmp(p, r->seg[i], n)) return 0;
    p += n + (p[n] == '.');
  }
  return 1;
}

/* Rows of an engine's own ("divan.rocksdb.…") are shown only while that
 * engine runs: on FoundationDB there is no group commit of ours to count. */
static int shown(const report *rp, const dv_stat_def *d) {
  static const char pre[] = "divan.rocksdb.";
  return strncmp(d->path, pre, sizeof pre - 1) || !strcmp(rp->kv.engine, "rocksdb");
}

/* Gather what the rows asked for need. */
static int report_init(report *rp, hreq *r, int from) {
  memset(rp, 0, sizeof *rp);
  rp->r = r;
  kv_db_info(store_kv(api_store(r)), &rp->kv);
  return wanted(dv_stat_defs[DV_ST_INDEX_LAG].path, r, from) ? index_lags(rp) : 0;
}

/* ---- /_node/{node}/_stats ---------------------------------------------------------- */

/* The object at root's path (components split at '.'), then at extra
 * components as they are, made as needed. */
static json_val *node_at(dv_arena *a, json_val *root, const char *path, const char *const *extra, int nextra) {
  json_val *o = root;
  const char *p = path;
  for (int i = 0; o && (*p || i < nextra);) {
    const char *k;
    size_t n;
    if (*p) {
      k = p;
      n = strcspn(p, ".");
      p += n + (p[n] == '.');
    } else {
      k = extra[i];
      n = strlen(k);
      i++;
    }
    json_val *c = json_obj_get(o, k, n);
    if (!c) {
      c = json_new_object(a);
      if (json_obj_set(a, o, k, n, c)) return NULL;
    }
    o = c;
  }
  return o;
}

static int leaf(dv_arena *a, json_val *node, json_val *value, const char *type, const char *desc) {
  if (json_obj_setz(a, node, "value", value) || json_obj_setz(a, node, "type", json_new_stringz(a, type)) ||
      json_obj_setz(a, node, "desc", json_new_stringz(a, desc)))
    return DV_ENOMEM;
  return 0;
}

/* couch_stats_math's object; CouchDB shows an empty one with integer 0s. */
static json_val *hist_json(dv_arena *a, const dv_stat_summary *s) {
  json_val *o = json_new_object(a), *pct = json_new_array(a), *h = json_new_array(a), *h0 = json_new_array(a);
  if (!o || !pct || !h || !h0) return NULL;
#define NUM(x) (s->n ? json_new_double(a, x) : json_new_int(a, 0))
  if (json_obj_setz(a, o, "min", NUM(s->min)) || json_obj_setz(a, o, "max", NUM(s->max)) ||
      json_obj_setz(a, o, "arithmetic_mean", NUM(s->mean)) || json_obj_setz(a, o, "geometric_mean", NUM(s->gmean)) ||
      json_obj_setz(a, o, "harmonic_mean", NUM(s->hmean)) || json_obj_setz(a, o, "median", NUM(s->median)) ||
      json_obj_setz(a, o, "variance", NUM(s->variance)) ||
      json_obj_setz(a, o, "standard_deviation", NUM(s->stddev)) ||
      json_obj_setz(a, o, "skewness", NUM(s->skewness)) || json_obj_setz(a, o, "kurtosis", NUM(s->kurtosis)))
    return NULL;
  for (int k = 0; k < 6; k++) {
    json_val *p = json_new_array(a);
    if (json_arr_push(a, p, json_new_int(a, dv_stat_pcts[k])) || json_arr_push(a, p, NUM(s->pct[k])) ||
        json_arr_push(a, pct, p))
      return NULL;
  }
#undef NUM
  /* "Emit for compatibility reasons" (couch_stats_math): [[0,0]] */
  if (json_arr_push(a, h0, json_new_int(a, 0)) || json_arr_push(a, h0, json_new_int(a, 0)) ||
      json_arr_push(a, h, h0) || json_obj_setz(a, o, "percentile", pct) || json_obj_setz(a, o, "histogram", h) ||
      json_obj_setz(a, o, "n", json_new_int(a, s->n)))
    return NULL;
  return o;
}

/* The tree of every wanted row. */
static json_val *stats_tree(report *rp, int from) {
  dv_arena *a = &rp->r->a;
  json_val *root = json_new_object(a);
  for (int i = 0; root && i < DV_ST_N; i++) {
    const dv_stat_def *d = &dv_stat_defs[i];
    if (!wanted(d->path, rp->r, from) || !shown(rp, d)) continue;
    int rc = 0;
    if (i == DV_ST_INDEX_LAG) {
      for (size_t k = 0; !rc && k < rp->nlags; k++) {
        const char *extra[3] = {rp->lags[k].db, rp->lags[k].ddoc, rp->lags[k].index};
        json_val *n = node_at(a, root, d->path, extra, 3);
        rc = n ? leaf(a, n, json_new_int(a, rp->lags[k].lag), "gauge", d->desc) : DV_ENOMEM;
      }
    } else if (d->kind == DV_SK_GAUGE) {
      int64_t v;
      if (!gauge(rp, (dv_stat_id)i, &v)) continue;
      json_val *n = node_at(a, root, d->path, NULL, 0);
      rc = n ? leaf(a, n, json_new_int(a, v), "gauge", d->desc) : DV_ENOMEM;
    } else if (d->hist >= 0) {
      dv_stat_summary s;
      dv_stat_hist_read((dv_stat_hist_id)d->hist, &s);
      json_val *n = node_at(a, root, d->path, NULL, 0);
      rc = n ? leaf(a, n, hist_json(a, &s), "histogram", d->desc) : DV_ENOMEM;
    } else {
      json_val *n = node_at(a, root, d->path, NULL, 0);
      rc = n ? leaf(a, n, json_new_int(a, dv_stat_value((dv_stat_id)i)), "counter", d->desc) : DV_ENOMEM;
    }
    if (rc) return NULL;
  }
  return root;
}

static int stats_on(hreq *r) {
  if (dv_stats_on()) return 1;
  hres_errw(r, DV_ENOT_FOUND, dv_stats_env_off() ? "Statistics are off: this divan runs with DIVAN_STATS=off."
                                                : "Statistics are off: [stats] enabled is false.");
  return 0;
}

static void hapi_stats(hreq *r) {
  if (!api_our_node(r) || !stats_on(r)) return;
  report rp;
  int rc = report_init(&rp, r, 3);
  json_val *t = rc ? NULL : stats_tree(&rp, 3);
  if (!t) {
    hres_err(r, rc ? rc : DV_ENOMEM);
    return;
  }
  for (int i = 3; t && i < r->nseg; i++) t = json_obj_get(t, r->seg[i], r->seg_len[i]);
  if (!t) t = json_new_null(&r->a); /* couch_stats_httpd:extract_path */
  hres_json(r, 200, t);
}

/* ---- /_node/{node}/_prometheus -------------------------------------------------- */

/* couchdb_ + the path without "couchdb.", dots made underscores. */
static void prom_name(dv_buf *b, const char *path) {
  if (!strncmp(path, "couchdb.", 8)) path += 8;
  buf_puts(b, "couchdb_");
  for (const char *p = path; *p; p++) buf_putc(b, *p == '.' ? '_' : *p);
}

static void prom_head(dv_buf *b, const char *name, size_t n, const char *type, const char *desc) {
  buf_printf(b, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)n, name, desc, (int)n, name, type);
}

/* A label value: \\, \" and \n escaped. */
static void prom_label(dv_buf *b, const char *k, const char *v) {
  buf_printf(b, "%s=\"", k);
  for (const char *p = v; *p; p++) {
    if (*p == '\\' || *p == '"') buf_putc(b, '\\');
    if (*p == '\n') buf_puts(b, "\\n");
    else buf_putc(b, *p);
  }
  buf_putc(b, '"');
}

/* Rows CouchDB shows as one family with a label (couch_prometheus_util). */
static const struct {
  const char *parent;  /* the rows' path up to the label value */
  const char *label;
  const char *help;
} families[] = {
    {"couchdb.httpd_request_methods.", "method", "number of HTTP requests by method"},
    {"couchdb.httpd_status_codes.", "code", "number of HTTP responses by status code"},
};

static void prom_summary(dv_buf *b, const char *path, const char *desc, const dv_stat_summary *s, int ms) {
  static const char *const q[6] = {"0.5", "0.75", "0.9", "0.95", "0.99", "0.999"};
  double k = ms ? 1000.0 : 1.0; /* Prometheus counts time in seconds */
  dv_buf n;
  buf_init(&n);
  prom_name(&n, path);
  if (ms) buf_puts(&n, "_seconds");
  const char *name = buf_error(&n) ? "" : (const char *)n.p;
  int len = buf_error(&n) ? 0 : (int)n.len;
  prom_head(b, name, (size_t)len, "summary", desc);
  for (int i = 0; i < 6; i++) buf_printf(b, "%.*s{quantile=\"%s\"} %.10g\n", len, name, q[i], s->pct[i] / k);
  buf_printf(b, "%.*s_sum %.10g\n%.*s_count %lld\n", len, name, (double)s->n * s->mean / k, len, name,
             (long long)s->n);
  buf_free(&n);
}

static void prom_rows(report *rp, dv_buf *b) {
  const char *fam_open = NULL; /* the labelled family whose head was written */
  for (int i = 0; i < DV_ST_N; i++) {
    const dv_stat_def *d = &dv_stat_defs[i];
    if (!shown(rp, d)) continue;
    size_t f = 0;
    while (f < sizeof families / sizeof *families && strncmp(d->path, families[f].parent, strlen(families[f].parent)))
      f++;
    dv_buf n;
    buf_init(&n);
    if (f < sizeof families / sizeof *families) { /* couchdb_httpd_request_methods{method="GET"} 3 */
      size_t pl = strlen(families[f].parent);
      prom_name(&n, families[f].parent);
      if (n.len) n.len--; /* the parent's trailing '.', made '_' */
      if (fam_open != families[f].parent) prom_head(b, (const char *)n.p, n.len, "counter", families[f].help);
      fam_open = families[f].parent;
      buf_printf(b, "%.*s{", (int)n.len, (const char *)n.p);
      prom_label(b, families[f].label, d->path + pl);
      buf_printf(b, "} %lld\n", (long long)dv_stat_value((dv_stat_id)i));
    } else if (i == DV_ST_INDEX_LAG) {
      prom_name(&n, d->path);
      if (rp->nlags) prom_head(b, (const char *)n.p, n.len, "gauge", d->desc);
      for (size_t k = 0; k < rp->nlags; k++) {
        buf_printf(b, "%.*s{", (int)n.len, (const char *)n.p);
        prom_label(b, "db", rp->lags[k].db);
        buf_putc(b, ',');
        prom_label(b, "ddoc", rp->lags[k].ddoc);
        buf_putc(b, ',');
        prom_label(b, "index", rp->lags[k].index);
        buf_printf(b, "} %lld\n", (long long)rp->lags[k].lag);
      }
    } else if (d->hist >= 0) {
      dv_stat_summary s;
      dv_stat_hist_read((dv_stat_hist_id)d->hist, &s);
      prom_summary(b, d->path, d->desc, &s, d->kind == DV_SK_HIST_MS);
    } else {
      int64_t v;
      const char *type = d->kind == DV_SK_COUNTER ? "counter" : "gauge";
      if (d->kind == DV_SK_GAUGE && !gauge(rp, (dv_stat_id)i, &v)) {
        buf_free(&n);
        continue;
      }
      if (d->kind != DV_SK_GAUGE) v = dv_stat_value((dv_stat_id)i);
      prom_name(&n, d->path);
      if (d->kind == DV_SK_COUNTER && (n.len < 6 || memcmp(n.p + n.len - 6, "_total", 6))) buf_puts(&n, "_total");
      prom_head(b, (const char *)n.p, n.len, type, d->desc);
      buf_printf(b, "%.*s %lld\n", (int)n.len, (const char *)n.p, (long long)v);
    }
    if (buf_error(&n)) rp->rc = DV_ENOMEM;
    buf_free(&n);
  }
}

/* ---- the process (/_system, and Prometheus' share of it) ------------------------- */

typedef struct proc_info {
  int64_t uptime;          /* seconds since the process started */
  int64_t rss, rss_peak, vsize, data, stack, swap; /* bytes (/proc/self/status), -1 unknown */
  int64_t heap_in_use;     /* malloc's bytes in use (mallinfo2) */
  int64_t threads, run_queue;
  int64_t ctx_switches;    /* voluntary + involuntary, all threads (getrusage) */
  int64_t io_in, io_out;   /* bytes read and written, files and sockets (/proc/self/io) */
  int64_t files, files_limit;
  int64_t os_procs;        /* query server contexts and processes alive */
} proc_info;

/* "Key:   123 kB" of /proc/self/status, in bytes (or the count). */
static int64_t status_field(const char *text, const char *key) {
  const char *p = strstr(text, key);
  if (!p) return -1;
  char *end;
  long long v = strtoll(p + strlen(key), &end, 10);
  return !strncmp(end, " kB", 3) ? v * 1024 : v;
}

static char *slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  size_t n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = 0;
  return buf;
}

static void proc_get(hreq *r, proc_info *o) {
  char buf[4096];
  memset(o, 0xff, sizeof *o); /* -1 everywhere until known */
  if (slurp("/proc/self/status", buf, sizeof buf)) {
    o->rss = status_field(buf, "VmRSS:");
    o->rss_peak = status_field(buf, "VmHWM:");
    o->vsize = status_field(buf, "VmSize:");
    o->data = status_field(buf, "VmData:");
    o->stack = status_field(buf, "VmStk:");
    o->swap = status_field(buf, "VmSwap:");
    o->threads = status_field(buf, "Threads:");
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 mi = mallinfo2(); /* all zeros under a sanitizer's allocator: not known then */
  if (mi.arena || mi.hblkhd) o->heap_in_use = (int64_t)(mi.uordblks + mi.hblkhd);
#endif
  if (slurp("/proc/self/io", buf, sizeof buf)) {
    o->io_in = status_field(buf, "rchar:");
    o->io_out = status_field(buf, "wchar:");
  }
  /* uptime: the system's less the process's start (field 22, clock ticks) */
  char up[128];
  if (slurp("/proc/self/stat", buf, sizeof buf) && slurp("/proc/uptime", up, sizeof up)) {
    const char *p = strrchr(buf, ')');
    for (int f = 2; p && f < 22; f++) p = strchr(p + 1, ' ');
    long hz = sysconf(_SC_CLK_TCK);
    if (p && hz > 0) o->uptime = (int64_t)(strtod(up, NULL) - (double)strtoll(p + 1, NULL, 10) / (double)hz);
  }
  /* threads running or runnable now (state R), this one included */
  DIR *d = opendir("/proc/self/task");
  if (d) {
    struct dirent *e;
    o->run_queue = 0;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      char path[64];
      snprintf(path, sizeof path, "/proc/self/task/%.20s/stat", e->d_name);
      const char *s = slurp(path, buf, sizeof buf), *p = s ? strrchr(s, ')') : NULL;
      o->run_queue += p && p[1] == ' ' && p[2] == 'R';
    }
    closedir(d);
  }
  struct rusage ru;
  if (!getrusage(RUSAGE_SELF, &ru)) o->ctx_switches = ru.ru_nvcsw + ru.ru_nivcsw;
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl)) o->files_limit = rl.rlim_cur == RLIM_INFINITY ? -1 : (int64_t)rl.rlim_cur;
  o->files = open_files();
  qs_stats q;
  qs_stats_get(&q);
  o->os_procs = (int64_t)q.alive;
  (void)r;
}

/* A number known (>= 0) as "key": n. */
static void w_num(json_w *w, const char *key, int64_t v) {
  if (v < 0) return;
  json_w_keyz(w, key);
  json_w_int(w, v);
}

static void hapi_system(hreq *r) {
  if (!api_our_node(r)) return;
  proc_info p;
  proc_get(r, &p);
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  w_num(&w, "uptime", p.uptime);
  json_w_keyz(&w, "memory");
  json_w_obj_begin(&w);
  w_num(&w, "rss", p.rss);
  w_num(&w, "rss_peak", p.rss_peak);
  w_num(&w, "virtual", p.vsize);
  w_num(&w, "data", p.data);
  w_num(&w, "stack", p.stack);
  w_num(&w, "swap", p.swap);
  w_num(&w, "heap_in_use", p.heap_in_use);
  json_w_obj_end(&w);
  w_num(&w, "run_queue", p.run_queue);
  w_num(&w, "context_switches", p.ctx_switches);
  w_num(&w, "io_input", p.io_in);
  w_num(&w, "io_output", p.io_out);
  w_num(&w, "os_proc_count", p.os_procs);
  w_num(&w, "threads", p.threads);
  w_num(&w, "open_files", p.files);
  w_num(&w, "open_files_limit", p.files_limit);
  json_w_keyz(&w, "message_queues"); /* an Erlang VM's; none here */
  json_w_raw(&w, "{}", 2);
  json_w_keyz(&w, "distribution"); /* one node: no connections to others */
  json_w_raw(&w, "{}", 2);
  json_w_obj_end(&w);
}

static void prom_proc(hreq *r, dv_buf *b) {
  proc_info p;
  proc_get(r, &p);
  if (p.uptime >= 0) {
    prom_head(b, "couchdb_uptime_seconds", strlen("couchdb_uptime_seconds"), "counter", "couchdb uptime");
    buf_printf(b, "couchdb_uptime_seconds %lld\n", (long long)p.uptime);
  }
  static const char mem[] = "couchdb_divan_memory_bytes";
  prom_head(b, mem, sizeof mem - 1, "gauge", "the process's memory by kind (/proc/self/status, malloc)");
  const struct {
    const char *kind;
    int64_t v;
  } m[] = {{"rss", p.rss}, {"rss_peak", p.rss_peak}, {"virtual", p.vsize}, {"data", p.data},
           {"stack", p.stack}, {"swap", p.swap}, {"heap_in_use", p.heap_in_use}};
  for (size_t i = 0; i < sizeof m / sizeof *m; i++)
    if (m[i].v >= 0) buf_printf(b, "%s{memory_type=\"%s\"} %lld\n", mem, m[i].kind, (long long)m[i].v);
  const struct {
    const char *name, *type, *help;
    int64_t v;
  } g[] = {
      {"couchdb_divan_threads", "gauge", "threads of the process", p.threads},
      {"couchdb_divan_run_queue", "gauge", "threads running or runnable", p.run_queue},
      {"couchdb_divan_context_switches_total", "counter", "context switches of all threads", p.ctx_switches},
      {"couchdb_divan_io_recv_bytes_total", "counter", "bytes read from files and sockets", p.io_in},
      {"couchdb_divan_io_sent_bytes_total", "counter", "bytes written to files and sockets", p.io_out},
      {"couchdb_divan_os_procs", "gauge", "query server contexts and processes alive", p.os_procs},
  };
  for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
    if (g[i].v < 0) continue;
    prom_head(b, g[i].name, strlen(g[i].name), g[i].type, g[i].help);
    buf_printf(b, "%s %lld\n", g[i].name, (long long)g[i].v);
  }
}

static void hapi_prometheus(hreq *r) {
  if (!api_our_node(r) || !stats_on(r)) return;
  report rp;
  int rc = report_init(&rp, r, r->nseg);
  dv_buf b;
  buf_init(&b);
  if (!rc) {
    prom_rows(&rp, &b);
    prom_proc(r, &b);
    rc = rp.rc ? rp.rc : buf_error(&b) ? DV_ENOMEM : 0;
  }
  if (rc) hres_err(r, rc);
  else hres_raw(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len);
  buf_free(&b);
}

/* ---- /_node/{node}/_versions ------------------------------------------------------ */

static void w_obj2(json_w *w, const char *key, const char *k1, const char *v1, const char *k2, const char *v2) {
  json_w_keyz(w, key);
  json_w_obj_begin(w);
  json_w_keyz(w, k1);
  json_w_strz(w, v1);
  if (k2 && v2 && *v2) {
    json_w_keyz(w, k2);
    json_w_strz(w, v2);
  }
  json_w_obj_end(w);
}

/* CouchDB 3.4's javascript_engine and collation_driver, then divan's own:
 * no "erlang" (there is none), its storage engine and HTTP server. */
static void hapi_versions(hreq *r) {
  if (!api_our_node(r)) return;
  collate_versions cv;
  collate_versions_get(&cv);
  kv_info kv;
  kv_db_info(store_kv(api_store(r)), &kv);
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "javascript_engine");
  json_w_obj_begin(&w);
  json_w_keyz(&w, "name");
  json_w_strz(&w, "spidermonkey");
  json_w_keyz(&w, "version");
  json_w_strz(&w, js_engine_version());
  json_w_keyz(&w, "version_dyn");
  json_w_strz(&w, js_engine_library_version());
  json_w_obj_end(&w);
  json_w_keyz(&w, "collation_driver");
  json_w_obj_begin(&w);
  json_w_keyz(&w, "name");
  json_w_strz(&w, "libicu");
  json_w_keyz(&w, "library_version");
  json_w_strz(&w, cv.library);
  json_w_keyz(&w, "collation_algorithm_version");
  json_w_strz(&w, cv.algorithm);
  json_w_keyz(&w, "collator_version");
  json_w_strz(&w, cv.collator);
  json_w_obj_end(&w);
  w_obj2(&w, "divan", "version", api_srv_of(r)->version ? api_srv_of(r)->version : "", NULL, NULL);
  w_obj2(&w, "storage_engine", "name", kv.engine,
         strcmp(kv.engine, "foundationdb") ? "version" : "api_version", kv.version);
  w_obj2(&w, "http_server", "name", "libmicrohttpd", "version", http_engine_version());
  json_w_obj_end(&w);
}

/* ---- routes ------------------------------------------------------------------------ */

static const http_route routes[] = {
    {GET_HEAD, "/_node/{any}/_stats", API_SERVER_ADMIN, hapi_stats},
    {GET_HEAD, "/_node/{any}/_stats/{rest}", API_SERVER_ADMIN, hapi_stats},
    {GET_HEAD, "/_node/{any}/_system", API_SERVER_ADMIN, hapi_system},
    {GET_HEAD, "/_node/{any}/_prometheus", API_SERVER_ADMIN, hapi_prometheus},
    {GET_HEAD, "/_node/{any}/_versions", API_SERVER_ADMIN, hapi_versions},
};
const api_routes api_stats_routes = API_TABLE(routes);
