/* stats.h — the process's metrics: one declared table of every counter
 * and histogram divan keeps (name, kind, description), and the calls that
 * count them from anywhere, at no measurable cost on the request path.
 *
 * The table is CouchDB's stats_descriptions.cfg made a C table: a metric is
 * declared once, as a row of DV_STATS_MAP, and api/stats.c shows every row
 * in CouchDB's shapes (/_node/_local/_stats, /_prometheus) without knowing
 * any by name. The path is the metric's place in the _stats tree
 * ("couchdb.httpd.requests" is {"couchdb":{"httpd":{"requests":…}}}); the
 * description is CouchDB's own where CouchDB has the metric.
 *
 * Kinds:
 *   COUNTER   counted up (dv_stat_add); CouchDB type "counter"
 *   UPDOWN    counted up and down (dv_stat_move: open databases, live
 *             feeds): "counter" in _stats,
 *             a gauge in Prometheus, as CouchDB does
 *   GAUGE     not counted here: the endpoint reads it when it reports
 *             (files open, the engine's compaction backlog, index lag);
 *             CouchDB type "gauge"
 *   HIST_MS   a histogram of milliseconds (dv_stat_hist); "histogram",
 *             a summary in seconds in Prometheus
 *   HIST      a histogram of a count (documents per request, transactions
 *             per group commit)
 *
 * Cost. Every thread counts into its own shard (one block per thread,
 * allocated on its first count, cache-line aligned, so no two threads write
 * one line): a counter is a relaxed load and store of the thread's own
 * slot, no lock, no atomic read-modify-write; a histogram sample adds one
 * to a fixed log-scale bin of the thread's own copy. Readers sum the
 * shards. A thread that exits hands its shard to the next new thread, which
 * keeps counting into it, so totals never lose what a thread counted and a
 * process holds as many shards as it ever had threads counting at once.
 *
 * Histograms use CouchDB's base-2 bins (couch_stats_histogram): a value's
 * bin is the top 14 bits of its IEEE double (11 exponent bits and 3
 * mantissa bits: 8 bins per power of two, each at most 12.5 % wide), values
 * clamped to [0.01, 4,000,000], 230 bins. A reading covers the samples of
 * the last DV_STAT_EPOCH_S to 2 × DV_STAT_EPOCH_S seconds (CouchDB's
 * [stats] interval is 10 s): each thread keeps three epochs of bins and
 * reuses the oldest when a new epoch starts; a reader sums the current and
 * the previous one. The summary is couch_stats_math's: n, min and max of
 * the bins in use, means, variance, skewness, kurtosis and percentiles
 * computed from bin midpoints, percentiles interpolated inside their bin.
 *
 * DIVAN_STATS=off in the environment (read once, before main) turns every
 * count into a no-op for the process's life. dv_stats_set(0) ([stats]
 * enabled = false) pauses counting at run time — what `make bench`
 * compares against, in one process — and dv_stats_set(1) resumes it with
 * every COUNTER row from 0 again, so a counter always counts from when
 * counting last started (Prometheus reads that as a counter reset); UPDOWN
 * rows (dv_stat_move) keep counting through a pause, or they would stay
 * wrong after it. While counting is off, dv_stats_on() returns 0 and the
 * endpoints say so rather than show zeros.
 *
 * Not here: what the metrics are shown as (api/stats.c), values read only
 * when reported (GAUGE rows: api/stats.c fills them).
 */
#ifndef DV_STATS_H
#define DV_STATS_H

#include <stddef.h>
#include <stdint.h>

/* divan.index_lag's rows are counted up to this many changes per index
 * (the report reads them: its cost stays bounded). */
#define DV_STAT_INDEX_LAG_CAP 1000
#define DV__STAT_STR2(x) #x
#define DV__STAT_STR(x) DV__STAT_STR2(x)

/*  X(ID, kind, path, description) */
#define DV_STATS_MAP(X)                                                                                          \
  /* CouchDB's (src/couch/priv/stats_descriptions.cfg, src/chttpd/priv/…) */                                  \
  X(DATABASE_READS, COUNTER, "couchdb.database_reads", "number of times a document was read from a database")   \
  X(DATABASE_WRITES, COUNTER, "couchdb.database_writes", "number of times a database was changed")              \
  X(DOCUMENT_INSERTS, COUNTER, "couchdb.document_inserts", "number of documents inserted")                      \
  X(DOCUMENT_WRITES, COUNTER, "couchdb.document_writes", "number of document write operations")                 \
  X(LOCAL_DOCUMENT_WRITES, COUNTER, "couchdb.local_document_writes", "number of _local document write operations") \
  X(DATABASE_PURGES, COUNTER, "couchdb.database_purges", "number of times a database was purged")               \
  X(OPEN_DATABASES, UPDOWN, "couchdb.open_databases", "number of open databases")                               \
  X(OPEN_OS_FILES, GAUGE, "couchdb.open_os_files", "number of file descriptors divan has open")                 \
  X(REQUEST_TIME, HIST_MS, "couchdb.request_time", "length of a request inside divan")            \
  X(HTTPD_REQUESTS, COUNTER, "couchdb.httpd.requests", "number of HTTP requests")                               \
  X(HTTPD_BULK_REQUESTS, COUNTER, "couchdb.httpd.bulk_requests", "number of bulk requests")                     \
  X(HTTPD_BULK_DOCS, HIST, "couchdb.httpd.bulk_docs", "distribution of the number of docs in _bulk_docs requests") \
  X(HTTPD_VIEW_READS, COUNTER, "couchdb.httpd.view_reads", "number of view reads")                              \
  X(HTTPD_CLIENTS_REQUESTING_CHANGES, UPDOWN, "couchdb.httpd.clients_requesting_changes",                      \
    "number of clients for continuous _changes")                                                               \
  X(HTTPD_PURGE_REQUESTS, COUNTER, "couchdb.httpd.purge_requests", "number of purge requests")                  \
  X(M_COPY, COUNTER, "couchdb.httpd_request_methods.COPY", "number of HTTP COPY requests")                      \
  X(M_DELETE, COUNTER, "couchdb.httpd_request_methods.DELETE", "number of HTTP DELETE requests")                \
  X(M_GET, COUNTER, "couchdb.httpd_request_methods.GET", "number of HTTP GET requests")                         \
  X(M_HEAD, COUNTER, "couchdb.httpd_request_methods.HEAD", "number of HTTP HEAD requests")                      \
  X(M_OPTIONS, COUNTER, "couchdb.httpd_request_methods.OPTIONS", "number of HTTP OPTIONS requests")             \
  X(M_POST, COUNTER, "couchdb.httpd_request_methods.POST", "number of HTTP POST requests")                      \
  X(M_PUT, COUNTER, "couchdb.httpd_request_methods.PUT", "number of HTTP PUT requests")                         \
  X(S_200, COUNTER, "couchdb.httpd_status_codes.200", "number of HTTP 200 OK responses")                        \
  X(S_201, COUNTER, "couchdb.httpd_status_codes.201", "number of HTTP 201 Created responses")                   \
  X(S_202, COUNTER, "couchdb.httpd_status_codes.202", "number of HTTP 202 Accepted responses")                  \
  X(S_204, COUNTER, "couchdb.httpd_status_codes.204", "number of HTTP 204 No Content responses")                \
  X(S_206, COUNTER, "couchdb.httpd_status_codes.206", "number of HTTP 206 Partial Content")                     \
  X(S_301, COUNTER, "couchdb.httpd_status_codes.301", "number of HTTP 301 Moved Permanently responses")         \
  X(S_302, COUNTER, "couchdb.httpd_status_codes.302", "number of HTTP 302 Found responses")                     \
  X(S_304, COUNTER, "couchdb.httpd_status_codes.304", "number of HTTP 304 Not Modified responses")              \
  X(S_400, COUNTER, "couchdb.httpd_status_codes.400", "number of HTTP 400 Bad Request responses")               \
  X(S_401, COUNTER, "couchdb.httpd_status_codes.401", "number of HTTP 401 Unauthorized responses")              \
  X(S_403, COUNTER, "couchdb.httpd_status_codes.403", "number of HTTP 403 Forbidden responses")                 \
  X(S_404, COUNTER, "couchdb.httpd_status_codes.404", "number of HTTP 404 Not Found responses")                 \
  X(S_405, COUNTER, "couchdb.httpd_status_codes.405", "number of HTTP 405 Method Not Allowed responses")        \
  X(S_406, COUNTER, "couchdb.httpd_status_codes.406", "number of HTTP 406 Not Acceptable responses")            \
  X(S_408, COUNTER, "couchdb.httpd_status_codes.408", "number of HTTP 408 Request Timeout responses")           \
  X(S_409, COUNTER, "couchdb.httpd_status_codes.409", "number of HTTP 409 Conflict responses")                  \
  X(S_410, COUNTER, "couchdb.httpd_status_codes.410", "number of HTTP 410 Gone responses")                      \
  X(S_412, COUNTER, "couchdb.httpd_status_codes.412", "number of HTTP 412 Precondition Failed responses")       \
  X(S_413, COUNTER, "couchdb.httpd_status_codes.413", "number of HTTP 413 Request Entity Too Long responses")   \
  X(S_414, COUNTER, "couchdb.httpd_status_codes.414", "number of HTTP 414 Request URI Too Long responses")      \
  X(S_415, COUNTER, "couchdb.httpd_status_codes.415", "number of HTTP 415 Unsupported Media Type responses")    \
  X(S_416, COUNTER, "couchdb.httpd_status_codes.416",                                                          \
    "number of HTTP 416 Requested Range Not Satisfiable responses")                                            \
  X(S_417, COUNTER, "couchdb.httpd_status_codes.417", "number of HTTP 417 Expectation Failed responses")        \
  X(S_431, COUNTER, "couchdb.httpd_status_codes.431",                                                          \
    "number of HTTP 431 Request Header Fields Too Large responses")                                             \
  X(S_500, COUNTER, "couchdb.httpd_status_codes.500", "number of HTTP 500 Internal Server Error responses")     \
  X(S_501, COUNTER, "couchdb.httpd_status_codes.501", "number of HTTP 501 Not Implemented responses")           \
  X(S_503, COUNTER, "couchdb.httpd_status_codes.503", "number of HTTP 503 Service unavailable responses")       \
  X(S_507, COUNTER, "couchdb.httpd_status_codes.507", "number of HTTP 507 Insufficient Storage responses")      \
  X(MANGO_UNINDEXED, COUNTER, "mango.unindexed_queries", "number of mango queries that could not use an index") \
  X(MANGO_INVALID_INDEX, COUNTER, "mango.query_invalid_index",                                                 \
    "number of mango queries that generated an invalid index warning")                                         \
  X(MANGO_TOO_MANY_DOCS, COUNTER, "mango.too_many_docs_scanned",                                               \
    "number of mango queries that generated an index scan warning")                                            \
  X(MANGO_KEYS_EXAMINED, COUNTER, "mango.keys_examined", "number of keys examined by mango queries")            \
  X(MANGO_DOCS_EXAMINED, COUNTER, "mango.docs_examined", "number of documents examined by mango queries")       \
  X(MANGO_QUORUM_DOCS_EXAMINED, COUNTER, "mango.quorum_docs_examined",                                         \
    "number of documents examined by mango queries, using cluster quorum")                                     \
  X(MANGO_RESULTS_RETURNED, COUNTER, "mango.results_returned", "number of rows returned by mango queries")      \
  X(MANGO_QUERY_TIME, HIST_MS, "mango.query_time", "length of time processing a mango query")    \
  /* divan's own */                                                                                            \
  X(KV_COMMITS, COUNTER, "divan.kv.commits", "number of transactions that wrote and committed")               \
  X(KV_CONFLICTS, COUNTER, "divan.kv.conflicts", "number of commits refused for a conflict (not_committed)")   \
  X(KV_TOO_OLD, COUNTER, "divan.kv.transaction_too_old",                                                       \
    "number of transactions that passed the 5 s window (transaction_too_old)")                                 \
  X(KV_COMMIT_UNKNOWN, COUNTER, "divan.kv.commit_unknown_result",                                              \
    "number of commits whose outcome was unknown (commit_unknown_result)")                                     \
  X(KV_HISTORY_COARSENED, COUNTER, "divan.kv.history_coarsened",                                              \
    "number of times the conflict history went over its share of memory_limit and was coarsened")            \
  X(KV_HISTORY_BYTES, GAUGE, "divan.kv.history_bytes", "bytes the conflict history holds")                    \
  X(KV_RETRIES, COUNTER, "divan.kv.retries", "number of transactions run again after a retryable error")       \
  X(STORE_UNKNOWN_RECOVERED, COUNTER, "divan.store.commit_unknown_recovered",                                  \
    "number of writes whose commit_unknown_result attempt was found committed by its transaction id")          \
  X(ROCKS_BATCHES, COUNTER, "divan.rocksdb.batches", "number of group commits: one synced WAL write each")     \
  X(ROCKS_BATCH_SIZE, HIST, "divan.rocksdb.batch_size", "transactions written by one group commit")            \
  X(ROCKS_SYNC_TIME, HIST_MS, "divan.rocksdb.wal_sync_time",                                                   \
    "time of one group commit's synced WAL write")                                                     \
  X(ROCKS_PENDING_COMPACTION, GAUGE, "divan.rocksdb.pending_compaction_bytes",                                 \
    "bytes RocksDB estimates compaction must rewrite (estimate-pending-compaction-bytes)")                     \
  X(ROCKS_RUNNING_COMPACTIONS, GAUGE, "divan.rocksdb.running_compactions", "compactions running now")          \
  X(ROCKS_RUNNING_FLUSHES, GAUGE, "divan.rocksdb.running_flushes", "memtable flushes running now")             \
  X(ROCKS_SST_BYTES, GAUGE, "divan.rocksdb.sst_bytes", "bytes of the live table files")                       \
  X(ROCKS_MEMTABLE_BYTES, GAUGE, "divan.rocksdb.memtable_bytes", "bytes of the memtables")                     \
  X(ROCKS_WRITE_STOPPED, GAUGE, "divan.rocksdb.write_stopped", "1 while RocksDB stops writes (compaction far behind)") \
  X(ROCKS_WRITE_FAILURES, COUNTER, "divan.rocksdb.write_failures",                                           \
    "number of group commits RocksDB failed to write or sync (none of them acknowledged)")                    \
  X(ROCKS_READ_ONLY, GAUGE, "divan.rocksdb.read_only",                                                       \
    "1 once a write could not be made durable (a failed sync): writes are refused until a restart")           \
  X(INDEX_LAG, GAUGE, "divan.index_lag",                                                                       \
    "changes of the database not yet in the index, per database, design document and index; counted up to "   \
    DV__STAT_STR(DV_STAT_INDEX_LAG_CAP))

typedef enum dv_stat_kind {
  DV_SK_COUNTER, /* up only */
  DV_SK_UPDOWN,  /* up and down */
  DV_SK_GAUGE,   /* read when reported, not counted here */
  DV_SK_HIST_MS, /* histogram of milliseconds */
  DV_SK_HIST,    /* histogram of a count */
} dv_stat_kind;

typedef enum dv_stat_id {
#define DV__ST_ID(id, kind, path, desc) DV_ST_##id,
  DV_STATS_MAP(DV__ST_ID)
#undef DV__ST_ID
  DV_ST_N
} dv_stat_id;

/* The histograms' own numbering (DV_SH_REQUEST_TIME …): rows of the
 * histogram kinds only. */
#define DV__SH_COUNTER(id)
#define DV__SH_UPDOWN(id)
#define DV__SH_GAUGE(id)
#define DV__SH_HIST_MS(id) DV_SH_##id,
#define DV__SH_HIST(id) DV_SH_##id,
typedef enum dv_stat_hist_id {
#define DV__SH_ID(id, kind, path, desc) DV__SH_##kind(id)
  DV_STATS_MAP(DV__SH_ID)
#undef DV__SH_ID
  DV_SH_N
} dv_stat_hist_id;

typedef struct dv_stat_def {
  const char *path;        /* "couchdb.httpd.requests" */
  const char *desc;        /* its description */
  dv_stat_kind kind;
  int hist;                /* its DV_SH_ number, -1 for the other kinds */
} dv_stat_def;

/* Every row, indexed by dv_stat_id. */
extern const dv_stat_def dv_stat_defs[DV_ST_N];

/* ---- counting (any thread, never blocks, never fails) ------------------- */

/* One thread's shard: its counters (first, so the inline path reaches them
 * without a call), then its histograms. Private to stats.c but for c[]. */
typedef struct dv__stat_shard {
  int64_t c[DV_ST_N];         /* counters, by dv_stat_id: this thread's part */
  struct dv__stat_hists *h;   /* its histograms (stats.c) */
  struct dv__stat_shard *next; /* every shard (stats.c's list) */
  struct dv__stat_shard *free_next; /* the free list: shards of threads gone */
} dv__stat_shard;

extern int dv__stats_on;                         /* 0: DIVAN_STATS=off, or paused (dv_stats_set) */
extern int dv__stats_env_off;                    /* DIVAN_STATS=off: not even UPDOWN rows */
extern __thread dv__stat_shard *dv__stats_tls;   /* this thread's shard, NULL before its first count */
dv__stat_shard *dv__stats_shard(void);           /* make it (NULL: no memory; the count is dropped) */

static inline void dv__stat_add(dv_stat_id id, int64_t n) {
  dv__stat_shard *s = dv__stats_tls;
  if (__builtin_expect(s == NULL, 0) && !(s = dv__stats_shard())) return;
  /* the shard has one writer, this thread: no read-modify-write needed */
  __atomic_store_n(&s->c[id], __atomic_load_n(&s->c[id], __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* Add n to COUNTER id. */
static inline void dv_stat_add(dv_stat_id id, int64_t n) {
  if (__atomic_load_n(&dv__stats_on, __ATOMIC_RELAXED)) dv__stat_add(id, n);
}
static inline void dv_stat_inc(dv_stat_id id) { dv_stat_add(id, 1); }

/* Move UPDOWN id by n (+1 / -1), paused or not. */
static inline void dv_stat_move(dv_stat_id id, int64_t n) {
  if (!dv__stats_env_off) dv__stat_add(id, n);
}

/* Record one sample of histogram h (milliseconds for HIST_MS rows). */
void dv_stat_hist(dv_stat_hist_id h, double v);

/* 1 while counting: not DIVAN_STATS=off, not paused. */
static inline int dv_stats_on(void) { return __atomic_load_n(&dv__stats_on, __ATOMIC_RELAXED); }
/* 1 under DIVAN_STATS=off (nothing counts, for the process's life). */
static inline int dv_stats_env_off(void) { return dv__stats_env_off; }
/* Pause (0) or resume (1) counting; a resume starts the COUNTER rows from 0.
 * A no-op under DIVAN_STATS=off, or when nothing changes. Any thread. */
void dv_stats_set(int on);

/* ---- reading -------------------------------------------------------------- */

/* Counter id summed over every thread (since counting last started, for
 * COUNTER rows). */
int64_t dv_stat_value(dv_stat_id id);

#define DV_STAT_EPOCH_S 5   /* histogram window: the last 5 to 10 seconds */
#define DV_STAT_BINS 230    /* couch_stats_histogram's ?BIN_COUNT */
#define DV_STAT_MIN 0.01    /* its ?MIN_VAL: smaller values count here */
#define DV_STAT_MAX 4000000.0 /* its ?MAX_VAL: larger values count here */

/* couch_stats_math:summary of a histogram: all 0 when n is 0. */
typedef struct dv_stat_summary {
  int64_t n;
  double min, max;            /* bounds of the lowest and highest bins in use */
  double mean, gmean, hmean;  /* arithmetic, geometric, harmonic */
  double median;
  double variance, stddev, skewness, kurtosis;
  double pct[6];              /* 50, 75, 90, 95, 99, 99.9 */
} dv_stat_summary;
extern const int dv_stat_pcts[6]; /* 50, 75, 90, 95, 99, 999: CouchDB's keys */

/* Histogram h over the current window, summed over every thread. */
void dv_stat_hist_read(dv_stat_hist_id h, dv_stat_summary *out);

/* The bin of a value (0 .. DV_STAT_BINS-1), its bounds and midpoint. */
int dv_stat_bin(double v);
double dv_stat_bin_min(int bin);
double dv_stat_bin_max(int bin);
double dv_stat_bin_mid(int bin);
/* The summary of bins[DV_STAT_BINS] (counts per bin). */
void dv_stat_summarise(const uint64_t *bins, dv_stat_summary *out);

#endif
