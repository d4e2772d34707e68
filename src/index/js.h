/* js.h — one embedded JavaScript context (SpiderMonkey 102, js_sm.cc),
 * behind a C interface: the "process" of qs.h's embedded query server.
 *
 * A js_ctx owns a thread of its own (SpiderMonkey binds a context to the
 * thread that made it) with a JSContext, one global holding the standard
 * classes and the prelude (js_prelude.js), and nothing else: no file,
 * network or process access exists in it. The prelude speaks CouchDB's
 * query server protocol: js_prompt hands it one command line and returns
 * the next line it emits (its answer, or for list functions a chunk line
 * while it waits for the next row: the conversation of an external query
 * server, without the pipes).
 *
 *   caller ── line ──▶ ctx thread: dv_handle(line) in JS ──▶ answer line
 *          ◀── out ──   (or dv_exchange(chunk) mid-call: out = chunk, and
 *                        the JS waits for the caller's next js_prompt)
 *
 * Limits: a prompt running past timeout_ms is interrupted (the context is
 * then dead: JS_DEAD); the heap is capped at mem_limit bytes (GC max
 * bytes), and a call that hits it fails with JS_DEAD too. The native stack
 * is capped below the thread's, so deep recursion is an exception, not a
 * crash. A dead context is freed by the caller and a new one made.
 *
 * js_post runs a C function on the context's thread instead (qs_run): its
 * prompts then skip the two hand-offs between threads, which on a write
 * path cost more than the JavaScript itself (vdubench).
 */
#ifndef DV_INDEX_JS_H
#define DV_INDEX_JS_H

#include <stddef.h>

#include "util/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct js_ctx js_ctx;

/* Once per process, before any js_new, on the main thread (JS_Init). */
int js_init(void);
/* After every context is freed. */
void js_shutdown(void);

/* A new context (its thread starts and evaluates the prelude). 0, DV_ENOMEM,
 * or DV_EQS_PROCESS when the engine cannot start (why in err, NUL-terminated). */
int js_new(size_t mem_limit, js_ctx **out, char *err, size_t errlen);
void js_free(js_ctx *c);

enum {
  JS_OK = 0,
  JS_DEAD_TIMEOUT = 1, /* interrupted after timeout_ms: free the context */
  JS_DEAD_OOM = 2,     /* out of memory: free the context */
  JS_DEAD_ERROR = 3,   /* the prelude itself failed: free the context */
};
/* Send one line (no newline) and append the next line the context emits
 * to out. Returns JS_OK or a JS_DEAD_* (nothing appended). Log lines the
 * functions write with log() go to the log (util/log.h, info) as they come. */
int js_prompt(js_ctx *c, const char *line, size_t len, unsigned timeout_ms, dv_buf *out);

/* Run fn(arg) on c's thread, after what it is doing (returns at once; the
 * caller must hold c, as for js_prompt, until fn is done). A js_prompt
 * that fn makes on that thread runs there and then: no hand-off between
 * threads, its timeout watched by the engine's watchdog thread. fn may
 * js_free(c) (when a prompt killed it): the thread then tears the context
 * down once fn returns. */
void js_post(js_ctx *c, void (*fn)(void *), void *arg);

/* Bytes the context's GC heap holds now (for tests and stats). */
size_t js_heap_bytes(js_ctx *c);

/* The engine's major version as built against ("102") and the library's
 * own version string ("102.15.1"), for /_node/_local/_versions. Static. */
const char *js_engine_version(void);
const char *js_engine_library_version(void);

#ifdef __cplusplus
}
#endif

#endif
