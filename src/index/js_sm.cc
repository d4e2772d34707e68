// js_sm.cc — js.h over SpiderMonkey 102 (Debian's libmozjs-102): the one
// C++ file of index/. Data flow and limits: js.h.
//
// Each js_ctx is a thread that owns its JSContext for life (SpiderMonkey
// binds a context to its thread). The caller and the thread meet under the
// context's mutex: the caller posts a line (has_in) and waits for a line
// back (has_out); the thread runs the prelude's dv_handle(line), or, when a
// list function asks for its next row, dv_exchange(chunk) posts the chunk
// and waits for the next line inside the same JavaScript call. A caller
// whose deadline passes asks for an interrupt (JS_RequestInterruptCallback
// is thread-safe); the interrupt callback then stops the script, and the
// context answers JS_DEAD_TIMEOUT.
//
// js_post hands the thread a task instead of a line: fn(arg) runs on it,
// and a js_prompt that fn makes on that thread runs the line there and then
// (inline, no hand-off). Nobody waits for an inline prompt, so its deadline
// is watched by the watchdog thread: it scans the contexts with a deadline
// set every WATCH_MS and interrupts those past it. It sleeps for good when
// no inline prompt ran since its last scan, and the next one wakes it.
// A context freed from its own thread (by fn, when a prompt killed it) is
// torn down by that thread once fn returns.
// SpiderMonkey's Rooted<T> links itself into a list on the context: GCC 12
// takes that for a dangling pointer (it is unlinked in the destructor).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <jsapi.h>

#include <js/CallAndConstruct.h>
#include <js/CompilationAndEvaluation.h>
#include <js/Context.h>
#include <js/Conversions.h>
#include <js/ContextOptions.h>
#include <js/Exception.h>
#include <js/GCAPI.h>
#include <js/GlobalObject.h>
#include <js/Initialization.h>
#include <js/Interrupt.h>
#include <js/Principals.h>
#include <js/PropertyAndElement.h>
#include <js/RealmOptions.h>
#include <js/SourceText.h>
#include <js/Stack.h>
#include <js/Warnings.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <string>

extern "C" {
#include "index/js.h"
#include "util/alloc.h"
#include "util/deadline.h"
#include "util/err.h"
#include "util/log.h"
#include "util/thread.h"
}

// The prelude, linked in from its own file (js_prelude.js), NUL-terminated.
__asm__(".section .rodata\n"
        ".global dv_js_prelude\n"
        ".type dv_js_prelude, @object\n"
        "dv_js_prelude:\n"
        ".incbin \"src/index/js_prelude.js\"\n"
        ".byte 0\n"
        ".size dv_js_prelude, .-dv_js_prelude\n"
        ".previous\n");
extern "C" const char dv_js_prelude[];

enum { STACK_BYTES = 16 << 20, STACK_QUOTA = 12 << 20, WATCH_MS = 50 };

struct js_ctx {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  JSContext *cx;          // set by the thread before ready
  JS::PersistentRootedObject *global; // the thread's, for inline prompts
  void (*task)(void *);   // js_post: runs next on the thread
  void *task_arg;
  int self_free;          // js_free came from the thread itself: it deletes c
  int dead;               // an inline prompt killed it: later ones fail at once
  std::atomic<int64_t> deadline; // an inline prompt's, monotonic ms (0: none)
  js_ctx *wnext, **wprev; // the watchdog's list
  size_t mem_limit;
  int ready, start_rc;    // the thread finished starting (start_rc: 0 or an error)
  char err[256];
  int stop;               // js_free: leave
  int has_in;             // a line waits for the thread
  std::string in;
  int has_out;            // a line waits for the caller
  int out_rc;             // JS_OK or JS_DEAD_*
  std::string out;
  int timed_out;          // the caller's deadline passed: the interrupt callback stops the script
  int over_memory;        // a GC left the heap nearly full: the interrupt callback stops the script
  size_t heap;
};

static JSClass global_class = {"global", JSCLASS_GLOBAL_FLAGS, &JS::DefaultGlobalClassOps, nullptr, nullptr, nullptr};

static js_ctx *ctx_of(JSContext *cx) { return static_cast<js_ctx *>(JS_GetContextPrivate(cx)); }

static bool on_interrupt(JSContext *cx) {
  js_ctx *c = ctx_of(cx);
  pthread_mutex_lock(&c->mu);
  bool go_on = !c->timed_out && !c->stop && !c->over_memory;
  pthread_mutex_unlock(&c->mu);
  return go_on;  // false: an uncatchable stop
}

static int64_t mono_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

// contexts whose thread has not finished (js_shutdown waits for them)
static std::atomic<int> live_contexts{0};

// ---- the watchdog of inline prompts ----

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  js_ctx *list;           // every context alive
  std::atomic<int> started;
  std::atomic<int> sleeping;   // set (under mu) before re-reading calls, then waits
  std::atomic<uint64_t> calls; // inline prompts so far
} W = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, nullptr, 0, {0}, {0}};

static void *watch_main(void *) {
  dv_thread_name("dv-js-watch");
  pthread_mutex_lock(&W.mu);
  uint64_t seen = W.calls.load();
  for (;;) {
    int64_t now = mono_ms();
    int waiting = 0;
    for (js_ctx *c = W.list; c; c = c->wnext) {
      int64_t d = c->deadline.load();
      if (!d) continue;
      waiting = 1;
      if (now < d) continue;
      pthread_mutex_lock(&c->mu);
      if (c->deadline.load() == d && c->cx && !c->timed_out) {
        c->timed_out = 1;
        JS_RequestInterruptCallback(c->cx);
      }
      pthread_mutex_unlock(&c->mu);
    }
    uint64_t calls = W.calls.load();
    if (!waiting && calls == seen) { // idle: sleep until an inline prompt wakes us
      // sleeping is set before calls is read again, and watch_arm adds to
      // calls before it reads sleeping (both sequentially consistent): one
      // of the two sees the other, so no prompt is left unwatched.
      W.sleeping.store(1);
      if (W.calls.load() == seen) pthread_cond_wait(&W.cv, &W.mu);
      W.sleeping.store(0);
    } else {
      seen = calls;
      pthread_mutex_unlock(&W.mu);
      struct timespec ts = {0, WATCH_MS * 1000000L};
      nanosleep(&ts, nullptr);
      pthread_mutex_lock(&W.mu);
    }
  }
  return nullptr;
}

static void watch_add(js_ctx *c) {
  pthread_mutex_lock(&W.mu);
  c->wnext = W.list;
  c->wprev = &W.list;
  if (W.list) W.list->wprev = &c->wnext;
  W.list = c;
  pthread_mutex_unlock(&W.mu);
}

static void watch_remove(js_ctx *c) {
  pthread_mutex_lock(&W.mu);
  *c->wprev = c->wnext;
  if (c->wnext) c->wnext->wprev = c->wprev;
  pthread_mutex_unlock(&W.mu);
}

// An inline prompt starts: the watchdog must be awake. 0, or -1 when it cannot start.
static int watch_arm(js_ctx *c, unsigned timeout_ms) {
  c->deadline.store(mono_ms() + (int64_t)timeout_ms);
  W.calls.fetch_add(1);
  if (!W.sleeping.load() && W.started) return 0; // awake (started is set once, before any of this)
  pthread_mutex_lock(&W.mu);
  int rc = 0;
  if (!W.started) {
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &at, watch_main, nullptr) ? -1 : 0;
    pthread_attr_destroy(&at);
    W.started = !rc;
  } else if (W.sleeping.load()) {
    pthread_cond_signal(&W.cv);
  }
  pthread_mutex_unlock(&W.mu);
  return rc;
}

// A string argument as UTF-8 (empty when not a string).
static std::string arg_utf8(JSContext *cx, const JS::CallArgs &args, unsigned i) {
  if (args.length() <= i) return std::string();
  JS::RootedString s(cx, JS::ToString(cx, args[i]));
  if (!s) return std::string();
  JS::UniqueChars u = JS_EncodeStringToUTF8(cx, s);
  return u ? std::string(u.get()) : std::string();
}

// dv_log(text): CouchDB's log() — one line of the log at info, as
// couch_query_servers logs a query server's ["log", Msg].
static bool native_log(JSContext *cx, unsigned argc, JS::Value *vp) {
  JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
  std::string s = arg_utf8(cx, args, 0); // at any level: the conversion may run the argument's toString
  log_msg(DV_LOG_INFO, NULL, "query server javascript log: %s", s.c_str());
  args.rval().setUndefined();
  return true;
}

// Post `line` as this context's output and wait for the caller's next line.
// Returns the new line, or false (uncatchable) when the context stops.
static bool exchange(JSContext *cx, js_ctx *c, const std::string &line, std::string *next) {
  if (c->deadline.load()) { // an inline prompt has no caller to answer it
    JS_ReportErrorASCII(cx, "getRow and send need a caller on another thread");
    return false;
  }
  pthread_mutex_lock(&c->mu);
  c->out = line;
  c->out_rc = JS_OK;
  c->has_out = 1;
  pthread_cond_broadcast(&c->cv);
  while (!c->has_in && !c->stop) pthread_cond_wait(&c->cv, &c->mu);
  bool ok = !c->stop;
  if (ok) {
    next->swap(c->in);
    c->has_in = 0;
  }
  pthread_mutex_unlock(&c->mu);
  (void)cx;
  return ok;
}

// dv_exchange(line) → the caller's next line (list functions' getRow).
static bool native_exchange(JSContext *cx, unsigned argc, JS::Value *vp) {
  JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
  std::string line = arg_utf8(cx, args, 0), next;
  if (!exchange(cx, ctx_of(cx), line, &next)) return false;
  JS::RootedString s(cx, JS_NewStringCopyUTF8N(cx, JS::UTF8Chars(next.data(), next.size())));
  if (!s) return false;
  args.rval().setString(s);
  return true;
}

// dv_compile(source, name) → the function the source evaluates to, compiled
// in the global scope (CouchDB's function strings are expressions).
// Throws a SyntaxError as is; the prelude turns it into compilation_error.
static bool native_compile(JSContext *cx, unsigned argc, JS::Value *vp) {
  JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
  std::string src = "(" + arg_utf8(cx, args, 0) + "\n)";
  std::string name = arg_utf8(cx, args, 1);
  JS::CompileOptions opts(cx);
  opts.setFileAndLine(name.empty() ? "function" : name.c_str(), 1);
  JS::SourceText<mozilla::Utf8Unit> text;
  if (!text.init(cx, src.data(), src.size(), JS::SourceOwnership::Borrowed)) return false;
  JS::RootedValue rv(cx);
  if (!JS::Evaluate(cx, opts, text, &rv)) return false;
  args.rval().set(rv);
  return true;
}

static const JSFunctionSpec natives[] = {
    JS_FN("dv_log", native_log, 1, 0),
    JS_FN("dv_exchange", native_exchange, 1, 0),
    JS_FN("dv_compile", native_compile, 2, 0),
    JS_FS_END,
};

static void warning_reporter(JSContext *, JSErrorReport *) {}

// Near its cap SpiderMonkey collects before almost every allocation (seconds
// of thrashing before it reports out of memory, and a script may catch that
// report). So a collection that leaves the heap above 7/8 of the cap stops
// the script at once, uncatchably, through the interrupt callback.
static void on_gc(JSContext *cx, JSGCStatus status, JS::GCReason, void *) {
  if (status != JSGC_END) return;
  js_ctx *c = ctx_of(cx);
  if ((size_t)JS_GetGCParameter(cx, JSGC_BYTES) <= c->mem_limit / 8 * 7) return;
  pthread_mutex_lock(&c->mu);
  c->over_memory = 1;
  pthread_mutex_unlock(&c->mu);
  JS_RequestInterruptCallback(cx);
}

// eval() and new Function() are refused, as couchjs refuses them without
// --eval; the prelude compiles functions through dv_compile instead.
static bool csp_allows(JSContext *, JS::RuntimeCode, JS::HandleString) { return false; }
static const JSSecurityCallbacks security = {csp_allows, nullptr};

// Start: context, limits, global, prelude. 0 or an error in c->err.
static int start(js_ctx *c, JS::PersistentRootedObject *global) {
  JSContext *cx = JS_NewContext(c->mem_limit > (8u << 20) ? c->mem_limit : (8u << 20));
  if (!cx) {
    snprintf(c->err, sizeof c->err, "JS_NewContext failed");
    return DV_EQS_PROCESS;
  }
  c->cx = cx;
  JS_SetContextPrivate(cx, c);
  JS_SetNativeStackQuota(cx, STACK_QUOTA);
  JS_SetGCParameter(cx, JSGC_MAX_BYTES, (uint32_t)c->mem_limit);
  JS::SetWarningReporter(cx, warning_reporter);
  JS_SetSecurityCallbacks(cx, &security);
  JS_SetGCCallback(cx, on_gc, nullptr);
  if (!JS::InitSelfHostedCode(cx)) {
    snprintf(c->err, sizeof c->err, "InitSelfHostedCode failed");
    return DV_EQS_PROCESS;
  }
  if (!JS_AddInterruptCallback(cx, on_interrupt)) {
    snprintf(c->err, sizeof c->err, "JS_AddInterruptCallback failed");
    return DV_EQS_PROCESS;
  }
  JS::RealmOptions ro;
  global->init(cx, JS_NewGlobalObject(cx, &global_class, nullptr, JS::FireOnNewGlobalHook, ro));
  if (!*global) {
    snprintf(c->err, sizeof c->err, "JS_NewGlobalObject failed");
    return DV_EQS_PROCESS;
  }
  JSAutoRealm ar(cx, *global);
  if (!JS::InitRealmStandardClasses(cx) || !JS_DefineFunctions(cx, *global, natives)) {
    snprintf(c->err, sizeof c->err, "standard classes failed");
    return DV_EQS_PROCESS;
  }
  JS::CompileOptions opts(cx);
  opts.setFileAndLine("js_prelude.js", 1);
  JS::SourceText<mozilla::Utf8Unit> text;
  JS::RootedValue rv(cx);
  if (!text.init(cx, dv_js_prelude, strlen(dv_js_prelude), JS::SourceOwnership::Borrowed) ||
      !JS::Evaluate(cx, opts, text, &rv)) {
    snprintf(c->err, sizeof c->err, "the prelude failed to evaluate");
    JS_ClearPendingException(cx);
    return DV_EQS_PROCESS;
  }
  return 0;
}

// One line through dv_handle. JS_OK with *out, or a JS_DEAD_*.
static int handle(js_ctx *c, JS::HandleObject global, const std::string &line, std::string *out) {
  JSContext *cx = c->cx;
  JSAutoRealm ar(cx, global);
  JS::RootedString s(cx, JS_NewStringCopyUTF8N(cx, JS::UTF8Chars(line.data(), line.size())));
  JS::RootedValue rv(cx);
  JS::RootedValueArray<1> argv(cx);
  if (s) argv[0].setString(s);
  if (!s || !JS_CallFunctionName(cx, global, "dv_handle", argv, &rv)) {
    pthread_mutex_lock(&c->mu);
    int timed_out = c->timed_out, over = c->over_memory;
    pthread_mutex_unlock(&c->mu);
    int oom = over || JS_IsThrowingOutOfMemory(cx) || !JS_IsExceptionPending(cx);
    JS_ClearPendingException(cx);
    return timed_out ? JS_DEAD_TIMEOUT : oom ? JS_DEAD_OOM : JS_DEAD_ERROR;
  }
  pthread_mutex_lock(&c->mu);
  int over = c->over_memory;
  pthread_mutex_unlock(&c->mu);
  if (over) return JS_DEAD_OOM;
  if (!rv.isString()) return JS_DEAD_ERROR;
  JS::RootedString r(cx, rv.toString());
  JS::UniqueChars u = JS_EncodeStringToUTF8(cx, r);
  if (!u) {
    JS_ClearPendingException(cx);
    return JS_DEAD_OOM;
  }
  out->assign(u.get());
  return JS_OK;
}

static void *ctx_main(void *arg) {
  dv_thread_name("dv-js");
  js_ctx *c = static_cast<js_ctx *>(arg);
  JSContext *cx = nullptr;
  {
    JS::PersistentRootedObject global;
    int rc = start(c, &global);
    pthread_mutex_lock(&c->mu);
    c->global = &global;
    c->start_rc = rc;
    c->ready = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    int dead = rc != 0;
    while (!dead) {
      std::string line, out;
      pthread_mutex_lock(&c->mu);
      while (!c->has_in && !c->task && !c->stop) pthread_cond_wait(&c->cv, &c->mu);
      if (c->stop) {
        pthread_mutex_unlock(&c->mu);
        break;
      }
      if (c->task) { // js_post: fn runs here; its prompts run inline
        void (*fn)(void *) = c->task;
        void *fa = c->task_arg;
        c->task = nullptr;
        pthread_mutex_unlock(&c->mu);
        fn(fa);
        pthread_mutex_lock(&c->mu);
        dead = c->stop; // fn freed the context (js_free from here)
        pthread_mutex_unlock(&c->mu);
        continue;
      }
      line.swap(c->in);
      c->has_in = 0;
      pthread_mutex_unlock(&c->mu);
      int jrc = handle(c, global, line, &out);
      size_t heap = JS_GetGCParameter(c->cx, JSGC_BYTES);
      pthread_mutex_lock(&c->mu);
      c->heap = heap;
      c->out.swap(out);
      c->out_rc = jrc;
      c->has_out = 1;
      dead = jrc != JS_OK;
      pthread_cond_broadcast(&c->cv);
      pthread_mutex_unlock(&c->mu);
    }
    // Wait for js_free before tearing down (a dead context answers no more);
    // c->cx is cleared under the mutex first, so js_free never interrupts a
    // context being destroyed.
    pthread_mutex_lock(&c->mu);
    while (!c->stop) pthread_cond_wait(&c->cv, &c->mu);
    cx = c->cx;
    c->cx = nullptr;
    c->global = nullptr;
    pthread_mutex_unlock(&c->mu);
    global.reset();
  }
  if (cx) JS_DestroyContext(cx);
  if (c->self_free) { // js_free came from this thread: nobody joins it
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    delete c;
    live_contexts.fetch_sub(1);
  }
  return nullptr;
}

extern "C" int js_init(void) { return JS_Init() ? 0 : DV_EQS_PROCESS; }

extern "C" void js_shutdown(void) {
  // a context freed from its own thread may still be tearing down
  for (int i = 0; i < 1000 && live_contexts.load(); i++) {
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, nullptr);
  }
  if (!live_contexts.load()) JS_ShutDown();
}

extern "C" int js_new(size_t mem_limit, js_ctx **out, char *err, size_t errlen) {
  *out = nullptr;
  js_ctx *c = new (std::nothrow) js_ctx();
  if (!c) return DV_ENOMEM;
  c->mem_limit = mem_limit;
  pthread_mutex_init(&c->mu, nullptr);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, STACK_BYTES);
  live_contexts.fetch_add(1);
  int e = pthread_create(&c->th, &at, ctx_main, c);
  pthread_attr_destroy(&at);
  if (e) {
    live_contexts.fetch_sub(1);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    delete c;
    if (err && errlen) snprintf(err, errlen, "pthread_create: %s", strerror(e));
    return DV_EQS_PROCESS;
  }
  pthread_mutex_lock(&c->mu);
  while (!c->ready) pthread_cond_wait(&c->cv, &c->mu);
  int rc = c->start_rc;
  pthread_mutex_unlock(&c->mu);
  if (rc) {
    if (err && errlen) snprintf(err, errlen, "%s", c->err);
    js_free(c);
    return rc;
  }
  watch_add(c);
  *out = c;
  return 0;
}

extern "C" void js_free(js_ctx *c) {
  if (!c) return;
  if (c->ready && !c->start_rc) watch_remove(c);
  pthread_mutex_lock(&c->mu);
  c->stop = 1;
  pthread_cond_broadcast(&c->cv);
  if (pthread_equal(pthread_self(), c->th)) { // from a task on its own thread: it tears down when the task returns
    c->self_free = 1;
    pthread_mutex_unlock(&c->mu);
    pthread_detach(c->th);
    return;
  }
  if (c->cx) JS_RequestInterruptCallback(c->cx); /* under the mutex: the thread clears cx under it before destroying it */
  pthread_mutex_unlock(&c->mu);
  pthread_join(c->th, nullptr);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  delete c;
  live_contexts.fetch_sub(1);
}

extern "C" void js_post(js_ctx *c, void (*fn)(void *), void *arg) {
  pthread_mutex_lock(&c->mu);
  c->task = fn;
  c->task_arg = arg;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

// js_prompt from the context's own thread (a task's): the line runs here.
static int inline_prompt(js_ctx *c, const char *line, size_t len, unsigned timeout_ms, dv_buf *out) {
  pthread_mutex_lock(&c->mu);
  int was_dead = c->dead;
  pthread_mutex_unlock(&c->mu);
  if (was_dead) return JS_DEAD_ERROR;
  if (watch_arm(c, timeout_ms)) {
    c->deadline.store(0);
    return JS_DEAD_ERROR; // no watchdog: a loop could not be stopped
  }
  std::string in(line, len), res;
  int rc = handle(c, *c->global, in, &res);
  c->deadline.store(0);
  size_t heap = JS_GetGCParameter(c->cx, JSGC_BYTES);
  pthread_mutex_lock(&c->mu);
  c->heap = heap;
  if (c->timed_out) rc = JS_DEAD_TIMEOUT; // an interrupt may still be pending
  if (rc != JS_OK) c->dead = 1;
  pthread_mutex_unlock(&c->mu);
  if (rc == JS_OK) buf_append(out, res.data(), res.size());
  return rc;
}

extern "C" int js_prompt(js_ctx *c, const char *line, size_t len, unsigned timeout_ms, dv_buf *out) {
  if (pthread_equal(pthread_self(), c->th)) return inline_prompt(c, line, len, timeout_ms, out);
  pthread_mutex_lock(&c->mu);
  int was_dead = c->dead;
  pthread_mutex_unlock(&c->mu);
  if (was_dead) return JS_DEAD_ERROR; // a task's prompt killed it: it answers no more
  struct timespec dl = dv_deadline_ms(CLOCK_MONOTONIC, timeout_ms);
  pthread_mutex_lock(&c->mu);
  c->in.assign(line, len);
  c->has_in = 1;
  c->has_out = 0;
  pthread_cond_broadcast(&c->cv);
  while (!c->has_out) {
    if (c->timed_out) {
      pthread_cond_wait(&c->cv, &c->mu);
      continue;
    }
    int e = pthread_cond_timedwait(&c->cv, &c->mu, &dl);
    if (e == ETIMEDOUT && !c->has_out) {
      c->timed_out = 1;
      JS_RequestInterruptCallback(c->cx);
    }
  }
  c->has_out = 0;
  // A deadline that passed kills the context even if the answer came
  // just in time: an interrupt may still be pending in it.
  int rc = c->timed_out ? JS_DEAD_TIMEOUT : c->out_rc;
  if (rc == JS_OK) buf_append(out, c->out.data(), c->out.size());
  c->out.clear();
  pthread_mutex_unlock(&c->mu);
  return rc;
}

extern "C" size_t js_heap_bytes(js_ctx *c) {
  pthread_mutex_lock(&c->mu);
  size_t h = c->heap;
  pthread_mutex_unlock(&c->mu);
  return h;
}

extern "C" const char *js_engine_version(void) {
#define JS__STR2(x) #x
#define JS__STR(x) JS__STR2(x)
  return JS__STR(MOZJS_MAJOR_VERSION);
}

/* JS_GetImplementationVersion says "JavaScript-C102.15.1". */
extern "C" const char *js_engine_library_version(void) {
  const char *v = JS_GetImplementationVersion();
  const char *p = v ? strstr(v, "JavaScript-C") : NULL;
  return p ? p + strlen("JavaScript-C") : v ? v : "";
}
