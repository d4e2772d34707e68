/* qs.h — query servers: where design-document functions run.
 *
 * One interface over two kinds of process, CouchDB's query server protocol
 * (line-based JSON, one command line in, one answer line out):
 *
 *   embedded   "javascript": SpiderMonkey 102 in this process (js.h,
 *              js_sm.cc). A pool of contexts, each on a thread of its own;
 *              the prelude (js_prelude.js) speaks the protocol inside it.
 *   external   a language named in the ini's [query_servers] section
 *              (CouchDB's format: `language = command line`), run as child
 *              processes spoken to over pipes. An entry for javascript
 *              replaces the embedded engine.
 *
 * Data flow of a design-document call (qs_ddoc_call):
 *
 *   caller ──acquire a process of dd->lang (wait while all are busy)──▶
 *   the process has dd->id at dd->rev? no: ["ddoc","new",id,ddoc] ─▶ true
 *   ["ddoc", id, path, args] ──▶ answer line (["log",…] lines before it
 *   are logged) ──▶ parsed into the caller's arena ──▶ release.
 *
 * A process that times out ([couchdb] os_process_timeout, default 5000 ms),
 * runs out of memory (embedded: [query_server_config] js_memory_limit per
 * context, default 64 MiB) or answers garbage is destroyed and replaced at
 * the next acquire; the call fails with CouchDB's os_process_error. Nothing
 * a function does reaches files, the network or processes: the embedded
 * global holds only the standard classes and the prelude.
 *
 * Threads: every function here may be called from any thread; a call
 * blocks its thread until the answer (or the timeout).
 */
#ifndef DV_INDEX_QS_H
#define DV_INDEX_QS_H

#include <stddef.h>

#include "json/json.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/config.h"
#include "util/err.h"

/* Start the query servers from cfg ([query_servers], [query_server_config]
 * os_process_limit and js_memory_limit, [couchdb] os_process_timeout).
 * Contexts and processes start lazily, at their first call. cfg must
 * outlive qs_stop. Calling it again (tests) restarts with the new cfg. */
int qs_start(dv_config *cfg) DV_MUST_CHECK;
/* Stop every process and context (waits for calls in flight). */
void qs_stop(void);

/* A design document, as a call needs it. */
typedef struct qs_ddoc {
  const char *id;     /* "_design/x" */
  size_t id_len;
  const char *rev;    /* its current rev, "N-hex": the process reloads it when this changes */
  const char *lang;   /* its "language"; NULL = "javascript" */
  const char *json;   /* the whole document as JSON text (_id, _rev and every field) */
  size_t json_len;
} qs_ddoc;

/* Why a call failed, as CouchDB answers it. */
typedef struct qs_err {
  const char *error;  /* CouchDB's error name: "compilation_error", "os_process_error",
                         "render_error", "unknown_query_language", or what a function
                         threw (["error", name, reason] / {"error": name, "reason": …}) */
  const char *reason; /* its reason text */
} qs_err;

/* [query_server_config] reduce_limit: "true" (CouchDB's default; a
 * JavaScript reduce whose answer does not shrink is reduce_overflow_error),
 * "log" (logged, the answer kept) or "false" (no check). */
typedef enum qs_reduce_limit { QS_REDUCE_LIMIT_ON, QS_REDUCE_LIMIT_LOG, QS_REDUCE_LIMIT_OFF } qs_reduce_limit;
qs_reduce_limit qs_get_reduce_limit(void);

/* Does dd's language have a query server (embedded or in the ini)? */
int qs_has_lang(const char *lang);

/* Run ["ddoc", dd->id, path, args…] where path_json is the JSON array of
 * the function's path (e.g. ["validate_doc_update"], ["filters","by_type"])
 * and args_json the JSON array of its arguments, given as the protocol's
 * last element (e.g. [newDoc, oldDoc, userCtx, secObj]). On 0, *out is the
 * answer line parsed into a. On DV_EQS (the call failed in the query
 * server: *e says how, in a, the process is fine or was replaced) or
 * another code (DV_ENOMEM, …). */
int qs_ddoc_call(const qs_ddoc *dd, const char *path_json, size_t path_len, const char *args_json, size_t args_len,
                 dv_arena *a, json_val **out, qs_err *e) DV_MUST_CHECK;

/* ---- sessions: several commands on one process (views' map_doc, lists) ---- */

typedef struct qs_proc qs_proc;

/* Take a process of lang for a conversation (waits while all are busy). */
int qs_acquire(const char *lang, qs_proc **out, qs_err *e) DV_MUST_CHECK;
/* Make sure the process has dd loaded (["ddoc","new",…] when not). */
int qs_load_ddoc(qs_proc *p, const qs_ddoc *dd, dv_arena *a, qs_err *e) DV_MUST_CHECK;
/* Send one command line (a JSON array, no newline) and read its answer
 * into out (appended, without the newline). An answer ["error", name,
 * reason] is returned as DV_EQS with *e filled, the process kept. */
int qs_prompt(qs_proc *p, const char *line, size_t len, dv_buf *out, dv_arena *a, qs_err *e) DV_MUST_CHECK;
/* Give the process back; broken=1 (a conversation left half way) destroys it. */
void qs_release(qs_proc *p, int broken);

/* ---- jobs: C work on a process's thread -------------------------------------- */

/* A call from another thread costs two hand-offs between threads, which
 * on a write path cost more than the JavaScript (bench/http/vdubench.js).
 * A job avoids them: qs_run queues it for the next free embedded context,
 * whose thread runs fn(arg); qs_ddoc_call and qs_acquire of that language
 * made by fn on that thread use that context directly (qs_release of it is
 * a no-op), with the same timeout, watched by the engine's watchdog. fn
 * holds a context, so it should not wait for long (a store commit's
 * completion, not its fsync). Jobs run in order; one that kills the
 * context ends the context's turn and the next job goes to another. */
typedef struct qs_job {
  void (*fn)(void *arg);
  void *arg;
  struct qs_job *next; /* qs's */
} qs_job;
/* 0: job will run (or ran already), the caller's memory must live until
 * fn has returned. DV_ENOTSUP: lang's processes are external (no thread
 * of ours: run fn elsewhere); DV_EQS_LANG: no such language; DV_EQS_PROCESS:
 * no context could start. */
int qs_run(const char *lang, qs_job *job) DV_MUST_CHECK;

/* Counters for tests and /_active_tasks: contexts or processes alive,
 * started since qs_start, and destroyed after a timeout or out of memory. */
typedef struct qs_stats {
  size_t alive, started, timeouts, oom;
} qs_stats;
void qs_stats_get(qs_stats *out);

#endif
