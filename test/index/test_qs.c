/* test_qs.c — the query servers (index/qs.h): the embedded SpiderMonkey
 * engine through CouchDB's protocol, its limits (timeout, memory, stack),
 * reloading a design document, and an external query server written here
 * in node. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "index/qs.h"
#include "test.h"
#include "util/config.h"

static dv_config *qcfg(const char *ini) {
  dv_config *c;
  char err[128];
  ASSERT_OK(config_parse(ini, strlen(ini), &c, err, sizeof err));
  ASSERT_OK(qs_start(c));
  return c;
}

static void qdone(dv_config *c) {
  qs_stop();
  config_free(c);
}

/* One call; the answer as JSON text into out or "ERR name: reason". */
static const char *call_into(char *out, size_t outlen, const char *id, const char *rev, const char *ddoc,
                             const char *path, const char *args) {
  dv_arena a;
  arena_init(&a, 0);
  qs_ddoc dd = {.id = id, .id_len = strlen(id), .rev = rev, .json = ddoc, .json_len = strlen(ddoc)};
  json_val *v = NULL;
  qs_err e = {0};
  int rc = qs_ddoc_call(&dd, path, strlen(path), args, strlen(args), &a, &v, &e);
  if (rc) snprintf(out, outlen, "ERR %s: %s", e.error ? e.error : "?", e.reason ? e.reason : "?");
  else {
    dv_buf b;
    buf_init(&b);
    ASSERT_OK(json_write(&b, v));
    snprintf(out, outlen, "%.*s", (int)b.len, (char *)b.p);
    buf_free(&b);
  }
  arena_free(&a);
  return out;
}

/* The same into a static buffer (one thread). */
static const char *call(const char *id, const char *rev, const char *ddoc, const char *path, const char *args) {
  static char out[8192];
  return call_into(out, sizeof out, id, rev, ddoc, path, args);
}

#define DD_VDU                                                                                         \
  "{\"_id\":\"_design/v\",\"_rev\":\"1-a\",\"validate_doc_update\":\"function(newDoc, oldDoc, userCtx, " \
  "secObj) { if (!newDoc.type) throw({forbidden: 'no type'}); if (newDoc.type == 'x') throw({unauthorized: " \
  "userCtx.name}); }\"}"

TEST(qs_validate) {
  dv_config *c = qcfg("");
  const char *args = "[{\"_id\":\"a\",\"type\":\"t\"},null,{\"db\":\"d\",\"name\":\"bob\",\"roles\":[]},{}]";
  ASSERT_STR_EQ(call("_design/v", "1-a", DD_VDU, "[\"validate_doc_update\"]", args), "1");
  ASSERT_STR_EQ(call("_design/v", "1-a", DD_VDU, "[\"validate_doc_update\"]",
                     "[{\"_id\":\"a\"},null,{\"db\":\"d\",\"name\":null,\"roles\":[]},{}]"),
                "{\"forbidden\":\"no type\"}");
  ASSERT_STR_EQ(call("_design/v", "1-a", DD_VDU, "[\"validate_doc_update\"]",
                     "[{\"_id\":\"a\",\"type\":\"x\"},null,{\"db\":\"d\",\"name\":\"bob\",\"roles\":[]},{}]"),
                "{\"unauthorized\":\"bob\"}");
  /* a new rev of the design document replaces the function */
  const char *v2 = "{\"_id\":\"_design/v\",\"_rev\":\"2-b\",\"validate_doc_update\":\"(n) => { throw {forbidden: "
                   "`v2 ${n._id}`}; }\"}";
  ASSERT_STR_EQ(call("_design/v", "2-b", v2, "[\"validate_doc_update\"]", args), "{\"forbidden\":\"v2 a\"}");
  qdone(c);
}

TEST(qs_modern_syntax) {
  dv_config *c = qcfg("");
  /* arrow functions, let/const, template literals, destructuring, spread, classes */
  const char *dd =
      "{\"_id\":\"_design/m\",\"filters\":{\"f\":\"(doc, req) => { const {type, n = 0, ...rest} = doc; "
      "let arr = [...(doc.tags || []), type]; class K { constructor(x) { this.x = x; } big() { return this.x > 1; } } "
      "return new K(n).big() && `${type}` === req.query.type && arr.length > 0 && Object.keys(rest).includes('_id'); "
      "}\"}}";
  ASSERT_STR_EQ(call("_design/m", "1-a", dd, "[\"filters\",\"f\"]",
                     "[[{\"_id\":\"a\",\"type\":\"t\",\"n\":2},{\"_id\":\"b\",\"type\":\"t\",\"n\":1},"
                     "{\"_id\":\"c\",\"type\":\"u\",\"n\":5}],{\"query\":{\"type\":\"t\"}}]"),
                "[true,[true,false,false]]");
  qdone(c);
}

TEST(qs_environment) {
  dv_config *c = qcfg("");
  const char *dd =
      "{\"_id\":\"_design/e\",\"lib\":{\"util\":\"exports.twice = function(x) { return require('./more').k * x; };\","
      "\"more\":\"exports.k = 2;\"},"
      "\"shows\":{\"s\":\"function(doc, req) { log('hello'); var u = require('lib/util'); "
      "return {json: {t: u.twice(21), s: sum([1,2,3]), a: isArray([1]), j: toJSON({x:1}), self: this._id, "
      "emitT: typeof emit, f: typeof Function, io: typeof require}}; }\","
      "\"bad\":\"function( {\",\"notfn\":\"42\",\"thrower\":\"function() { throw(['error','not_found','gone']); }\","
      "\"obj\":\"function() { throw({error: 'custom', reason: 'why'}); }\","
      "\"plain\":\"function(doc) { return 'hi ' + (doc ? doc._id : 'nobody'); }\","
      "\"prov\":\"function(doc, req) { provides('json', function() { return {json: {p: 1}}; }); "
      "provides('html', function() { return '<p>x</p>'; }); }\","
      "\"badreq\":\"function() { return require('lib/nothere'); }\"}}";
  const char *r = call("_design/e", "1-a", dd, "[\"shows\",\"s\"]", "[null,{}]");
  ASSERT(strstr(r, "\"t\":42"));
  ASSERT(strstr(r, "\"s\":6"));
  ASSERT(strstr(r, "\"a\":true"));
  ASSERT(strstr(r, "\"j\":\"{\\\"x\\\":1}\""));
  ASSERT(strstr(r, "\"self\":\"_design/e\""));
  ASSERT(strstr(r, "\"emitT\":\"function\""));
  r = call("_design/e", "1-a", dd, "[\"shows\",\"bad\"]", "[null,{}]");
  ASSERTF(!strncmp(r, "ERR compilation_error: SyntaxError", 34), "%s", r);
  r = call("_design/e", "1-a", dd, "[\"shows\",\"notfn\"]", "[null,{}]");
  ASSERT_STR_EQ(r, "ERR compilation_error: Expression does not eval to a function. (42)");
  ASSERT_STR_EQ(call("_design/e", "1-a", dd, "[\"shows\",\"thrower\"]", "[null,{}]"), "ERR not_found: gone");
  ASSERT_STR_EQ(call("_design/e", "1-a", dd, "[\"shows\",\"obj\"]", "[null,{}]"), "ERR custom: why");
  ASSERT_STR_EQ(call("_design/e", "1-a", dd, "[\"shows\",\"nope\"]", "[null,{}]"),
                "ERR not_found: missing shows function nope on design doc _design/e");
  ASSERT_STR_EQ(call("_design/e", "1-a", dd, "[\"shows\",\"plain\"]", "[{\"_id\":\"x\"},{}]"),
                "[\"resp\",{\"body\":\"hi x\"}]");
  ASSERT_STR_EQ(call("_design/e", "1-a", dd, "[\"shows\",\"prov\"]", "[null,{\"headers\":{\"Accept\":\"text/html\"}}]"),
                "[\"resp\",{\"body\":\"<p>x</p>\",\"headers\":{\"Content-Type\":\"text/html; charset=utf-8\"}}]");
  ASSERT_STR_EQ(call("_design/e", "1-a", dd, "[\"shows\",\"prov\"]", "[null,{\"query\":{\"format\":\"json\"}}]"),
                "[\"resp\",{\"json\":{\"p\":1},\"headers\":{\"Content-Type\":\"application/json\"}}]");
  r = call("_design/e", "1-a", dd, "[\"shows\",\"prov\"]", "[null,{\"headers\":{\"Accept\":\"image/png\"}}]");
  ASSERTF(!strncmp(r, "ERR not_acceptable: Content-Type image/png not supported", 55), "%s", r);
  r = call("_design/e", "1-a", dd, "[\"shows\",\"badreq\"]", "[null,{}]");
  ASSERTF(!strncmp(r, "ERR invalid_require_path: Object has no property \"nothere\"", 58), "%s", r);
  qdone(c);
}

TEST(qs_no_host_access) {
  dv_config *c = qcfg("");
  /* nothing of the host is reachable: no file, network, process or eval */
  const char *dd =
      "{\"_id\":\"_design/h\",\"shows\":{\"s\":\"function() { var names = ['print','read','readline','os','load',"
      "'snarf','quit','system','evalcx','fetch','XMLHttpRequest','process','require','dv_log','dv_compile',"
      "'dv_exchange','putstr','gc']; return {json: names.filter(function(n) { return typeof globalThis[n] !== "
      "'undefined'; })}; }\",\"ev\":\"function() { return {json: eval('1+1')}; }\","
      "\"fn\":\"function() { return {json: new Function('return 1')()}; }\"}}";
  /* require is CouchDB's CommonJS loader over the design document, nothing else */
  ASSERT_STR_EQ(call("_design/h", "1-a", dd, "[\"shows\",\"s\"]", "[null,{}]"), "[\"resp\",{\"json\":[\"require\"]}]");
  const char *r = call("_design/h", "1-a", dd, "[\"shows\",\"ev\"]", "[null,{}]");
  ASSERTF(strstr(r, "ERR render_error: function raised error: EvalError: call to eval() blocked by CSP"), "%s", r);
  r = call("_design/h", "1-a", dd, "[\"shows\",\"fn\"]", "[null,{}]");
  ASSERTF(strstr(r, "ERR render_error: function raised error: EvalError: call to Function() blocked by CSP"), "%s", r);
  qdone(c);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

typedef struct spin_arg {
  const char *r;
  double took;
} spin_arg;

static void *spin_thread(void *arg) {
  spin_arg *s = arg;
  double t0 = now_s();
  static char keep[512];
  snprintf(keep, sizeof keep, "%s",
           call("_design/loop", "1-a", "{\"_id\":\"_design/loop\",\"shows\":{\"s\":\"function() { for (;;) {} }\"}}",
                "[\"shows\",\"s\"]", "[null,{}]"));
  s->r = keep;
  s->took = now_s() - t0;
  return NULL;
}

TEST(qs_timeout) {
  dv_config *c = qcfg("[couchdb]\nos_process_timeout = 700\n[divan]\njs_contexts = 2\n");
  pthread_t th;
  spin_arg s = {0};
  ASSERT_EQ(pthread_create(&th, NULL, spin_thread, &s), 0);
  usleep(100000);
  /* another function answers at once while one loops forever */
  double t0 = now_s();
  for (int i = 0; i < 50; i++)
    ASSERT_STR_EQ(call("_design/v", "1-a", DD_VDU, "[\"validate_doc_update\"]",
                       "[{\"_id\":\"a\",\"type\":\"t\"},null,{\"db\":\"d\",\"name\":null,\"roles\":[]},{}]"),
                  "1");
  ASSERTF(now_s() - t0 < 0.5, "50 calls beside a loop took %.3f s", now_s() - t0);
  pthread_join(th, NULL);
  ASSERT_STR_EQ(s.r, "ERR os_process_error: OS process timed out.");
  ASSERTF(s.took > 0.6 && s.took < 3, "took %.3f s", s.took);
  qs_stats st;
  qs_stats_get(&st);
  ASSERT_EQ(st.timeouts, 1);
  /* the context was replaced: the same design document works again */
  ASSERT_STR_EQ(call("_design/v", "1-a", DD_VDU, "[\"validate_doc_update\"]",
                     "[{\"_id\":\"a\"},null,{\"db\":\"d\",\"name\":null,\"roles\":[]},{}]"),
                "{\"forbidden\":\"no type\"}");
  qdone(c);
}

/* ---- qs_run: jobs on a context's thread ---- */

#define DD_LOOP "{\"_id\":\"_design/loop\",\"validate_doc_update\":\"function() { for (;;) {} }\"}"

typedef struct rjob {
  qs_job job;
  int n;
  int loop;            /* first call the looping validator */
  pthread_t th;        /* the thread it ran on */
  char out[2][256];    /* its calls' answers */
  double took;         /* its first call's time */
} rjob;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
} RJ = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void rjob_fn(void *arg) {
  rjob *j = arg;
  j->th = pthread_self();
  char args[160];
  snprintf(args, sizeof args, "[{\"_id\":\"d%d\"%s},null,{\"db\":\"d\",\"name\":null,\"roles\":[]},{}]", j->n,
           j->n % 3 ? ",\"type\":\"t\"" : "");
  double t0 = now_s();
  if (j->loop) call_into(j->out[0], sizeof j->out[0], "_design/loop", "1-a", DD_LOOP, "[\"validate_doc_update\"]", args);
  else call_into(j->out[0], sizeof j->out[0], "_design/v", "1-a", DD_VDU, "[\"validate_doc_update\"]", args);
  j->took = now_s() - t0;
  /* a second call of the same job, on the same context */
  call_into(j->out[1], sizeof j->out[1], "_design/v", "1-a", DD_VDU, "[\"validate_doc_update\"]", args);
  pthread_mutex_lock(&RJ.mu);
  RJ.done++;
  pthread_cond_broadcast(&RJ.cv);
  pthread_mutex_unlock(&RJ.mu);
}

/* Wait until n jobs are done (at most secs): 0, or -1 on the deadline. */
static int rjob_wait(int n, double secs) {
  double end = now_s() + secs;
  pthread_mutex_lock(&RJ.mu);
  while (RJ.done < n && now_s() < end) {
    pthread_mutex_unlock(&RJ.mu);
    usleep(2000);
    pthread_mutex_lock(&RJ.mu);
  }
  int ok = RJ.done >= n;
  pthread_mutex_unlock(&RJ.mu);
  return ok ? 0 : -1;
}

typedef struct rsub {
  rjob *jobs;
  int from, to;
} rsub;

static void *rjob_submit(void *arg) {
  rsub *s = arg;
  for (int i = s->from; i < s->to; i++) ASSERT_OK(qs_run(NULL, &s->jobs[i].job));
  return NULL;
}

/* Jobs from three threads run on the one context's thread, and the calls
 * they make use that context directly: with js_contexts = 1, a call that
 * waited for a free context would wait forever. */
TEST(qs_run_jobs) {
  dv_config *c = qcfg("[divan]\njs_contexts = 1\n[query_servers]\nnodeqs = node -e 0\n");
  enum { N = 60 };
  static rjob jobs[N];
  memset(jobs, 0, sizeof jobs);
  RJ.done = 0;
  for (int i = 0; i < N; i++) jobs[i] = (rjob){.job = {.fn = rjob_fn, .arg = &jobs[i]}, .n = i};
  pthread_t th[3];
  rsub subs[3];
  for (int t = 0; t < 3; t++) {
    subs[t] = (rsub){jobs, t * N / 3, (t + 1) * N / 3};
    ASSERT_EQ(pthread_create(&th[t], NULL, rjob_submit, &subs[t]), 0);
  }
  for (int t = 0; t < 3; t++) pthread_join(th[t], NULL);
  ASSERTF(rjob_wait(N, 20) == 0, "%d of %d jobs ran", RJ.done, N);
  for (int i = 0; i < N; i++) {
    const char *want = i % 3 ? "1" : "{\"forbidden\":\"no type\"}";
    ASSERT_STR_EQ(jobs[i].out[0], want);
    ASSERT_STR_EQ(jobs[i].out[1], want);
    ASSERT(pthread_equal(jobs[i].th, jobs[0].th));
    for (int t = 0; t < 3; t++) ASSERT(!pthread_equal(jobs[i].th, th[t]));
  }
  qs_stats st;
  qs_stats_get(&st);
  ASSERT_EQ(st.started, 1);
  /* a job's calls and an outside caller's share the one context in turn */
  ASSERT_STR_EQ(call("_design/v", "1-a", DD_VDU, "[\"validate_doc_update\"]",
                     "[{\"_id\":\"a\",\"type\":\"t\"},null,{\"db\":\"d\",\"name\":null,\"roles\":[]},{}]"),
                "1");
  /* an external language's processes have no thread of ours; no language, no job */
  qs_job j = {.fn = rjob_fn, .arg = &jobs[0]};
  ASSERT_EQ(qs_run("nodeqs", &j), DV_ENOTSUP);
  ASSERT_EQ(qs_run("cobol", &j), DV_EQS_LANG);
  qdone(c);
}

/* A job whose function loops is stopped at the timeout by the watchdog (no
 * caller waits on another thread to do it); its context is replaced, its
 * next call fails at once, and the jobs queued behind it run on the new
 * context. */
TEST(qs_run_timeout) {
  dv_config *c = qcfg("[divan]\njs_contexts = 1\n[couchdb]\nos_process_timeout = 300\n");
  enum { N = 6 };
  static rjob jobs[N];
  memset(jobs, 0, sizeof jobs);
  RJ.done = 0;
  for (int i = 0; i < N; i++) jobs[i] = (rjob){.job = {.fn = rjob_fn, .arg = &jobs[i]}, .n = i + 1, .loop = i == 0};
  for (int i = 0; i < N; i++) ASSERT_OK(qs_run(NULL, &jobs[i].job));
  ASSERTF(rjob_wait(N, 20) == 0, "%d of %d jobs ran", RJ.done, N);
  ASSERT_STR_EQ(jobs[0].out[0], "ERR os_process_error: OS process timed out.");
  ASSERTF(jobs[0].took > 0.25 && jobs[0].took < 2, "took %.3f s", jobs[0].took);
  ASSERT(!strncmp(jobs[0].out[1], "ERR os_process_error", 20));
  for (int i = 1; i < N; i++) {
    ASSERT_STR_EQ(jobs[i].out[0], (i + 1) % 3 ? "1" : "{\"forbidden\":\"no type\"}");
    ASSERT(!pthread_equal(jobs[i].th, jobs[0].th));
  }
  qs_stats st;
  qs_stats_get(&st);
  ASSERT_EQ(st.timeouts, 1);
  ASSERT_EQ(st.started, 2);
  ASSERT_EQ(st.alive, 1);
  qdone(c);
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char l[256];
  long v = 0;
  while (f && fgets(l, sizeof l, f))
    if (!strncmp(l, "VmRSS:", 6)) v = atol(l + 6);
  if (f) fclose(f);
  return v;
}

TEST(qs_memory_cap) {
  dv_config *c = qcfg("[query_server_config]\njs_memory_limit = 33554432\n[divan]\njs_contexts = 1\n");
  const char *dd =
      "{\"_id\":\"_design/mem\",\"shows\":{\"grow\":\"function() { var a = []; for (;;) a.push({x: [1,2,3], s: 'x' + "
      "a.length}); }\",\"str\":\"function() { var s = 'x'; for (;;) s = s + s; }\","
      "\"rec\":\"function() { function f(n) { return f(n + 1) + 1; } return f(0); }\","
      "\"ok\":\"function() { return 'fine'; }\"}}";
  long before = rss_kb();
  const char *r = call("_design/mem", "1-a", dd, "[\"shows\",\"grow\"]", "[null,{}]");
  ASSERTF(!strncmp(r, "ERR os_process_error: The JavaScript context ran out of memory", 62), "%s", r);
  long after = rss_kb();
  ASSERTF(after - before < 200 * 1024, "RSS grew %ld KB", after - before);
  r = call("_design/mem", "1-a", dd, "[\"shows\",\"str\"]", "[null,{}]");
  ASSERTF(!strncmp(r, "ERR ", 4), "%s", r); /* a string past the engine's limit: an error either way */
  /* deep recursion is an exception in the function, not a crash */
  r = call("_design/mem", "1-a", dd, "[\"shows\",\"rec\"]", "[null,{}]");
  ASSERTF(strstr(r, "ERR render_error: function raised error: InternalError: too much recursion"), "%s", r);
  ASSERT_STR_EQ(call("_design/mem", "1-a", dd, "[\"shows\",\"ok\"]", "[null,{}]"), "[\"resp\",{\"body\":\"fine\"}]");
  qs_stats st;
  qs_stats_get(&st);
  ASSERT(st.oom >= 1);
  qdone(c);
}

TEST(qs_views_protocol) {
  dv_config *c = qcfg("");
  qs_proc *p;
  qs_err e;
  dv_arena a;
  arena_init(&a, 0);
  ASSERT_OK(qs_acquire(NULL, &p, &e));
  dv_buf out;
  buf_init(&out);
#define P(line, want)                                                           \
  do {                                                                          \
    buf_reset(&out);                                                            \
    ASSERT_OK(qs_prompt(p, line, strlen(line), &out, &a, &e));                  \
    ASSERT_MEM_EQ(out.p, out.len, want, strlen(want));                          \
  } while (0)
  P("[\"reset\"]", "true");
  P("[\"add_fun\",\"function(doc) { emit(doc.k, 1); if (doc.two) emit([doc.k, 2], null); }\"]", "true");
  P("[\"map_doc\",{\"_id\":\"a\",\"k\":\"x\",\"two\":true}]", "[[[\"x\",1],[[\"x\",2],null]]]");
  P("[\"reduce\",[\"function(k, v, re) { return sum(v); }\",\"(k, v) => v.length\"],[[[\"x\",\"a\"],2],[[\"y\",\"b\"],3]]]",
    "[true,[5,2]]");
  P("[\"rereduce\",[\"function(k, v, re) { return re ? sum(v) * 10 : 0; }\"],[1,2]]", "[true,[30]]");
  buf_reset(&out);
  { const char *af = "[\"add_fun\",\"function(\"]"; ASSERT_EQ(qs_prompt(p, af, strlen(af), &out, &a, &e), DV_EQS); }
  ASSERT_STR_EQ(e.error, "compilation_error");
  qs_release(p, 0);
  buf_free(&out);
  arena_free(&a);
  qdone(c);
}

/* A query server written here: node, CouchDB's line protocol over stdio,
 * "language": "nodejs". It logs a line before each answer. */
static const char ext_qs[] =
    "const rl = require('readline').createInterface({input: process.stdin});\n"
    "const ddocs = {}; let funs = [];\n"
    "const out = (x) => process.stdout.write(JSON.stringify(x) + '\\n');\n"
    "rl.on('line', (line) => {\n"
    "  const c = JSON.parse(line);\n"
    "  out(['log', 'got ' + c[0]]);\n"
    "  if (c[0] === 'reset') { funs = []; return out(true); }\n"
    "  if (c[0] === 'add_fun') { funs.push(eval('(' + c[1] + ')')); return out(true); }\n"
    "  if (c[0] === 'map_doc') { return out(funs.map((f) => { const r = []; global.emit = (k, v) => r.push([k, v]); f(c[1]); return r; })); }\n"
    "  if (c[0] === 'ddoc' && c[1] === 'new') { ddocs[c[2]] = c[3]; return out(true); }\n"
    "  if (c[0] === 'ddoc') {\n"
    "    const d = ddocs[c[1]]; if (!d) return out(['error', 'query_protocol_error', 'uncached']);\n"
    "    if (c[2][0] === 'validate_doc_update') { try { eval('(' + d.validate_doc_update + ')').apply(d, c[3]); return out(1); } catch (e) { return out(e); } }\n"
    "    if (c[2][0] === 'filters') { const f = eval('(' + d.filters[c[2][1]] + ')'); return out([true, c[3][0].map((doc) => !!f(doc, c[3][1]))]); }\n"
    "    if (c[2][0] === 'shows' && c[2][1] === 'hang') { return; }\n"
    "    if (c[2][0] === 'shows' && c[2][1] === 'die') { process.exit(3); }\n"
    "    return out(['error', 'not_found', 'missing ' + c[2].join('.')]);\n"
    "  }\n"
    "  out(['error', 'unknown_command', c[0]]);\n"
    "});\n";

TEST(qs_external) {
  char path[] = "/tmp/dv_qs_XXXXXX.js";
  int fd = mkstemps(path, 3);
  ASSERT(fd >= 0);
  ASSERT_EQ(write(fd, ext_qs, sizeof ext_qs - 1), (ssize_t)(sizeof ext_qs - 1));
  close(fd);
  char ini[512];
  snprintf(ini, sizeof ini, "[query_servers]\nnodejs = node %s\n[couchdb]\nos_process_timeout = 3000\n", path);
  dv_config *c = qcfg(ini);
  ASSERT(qs_has_lang("nodejs"));
  ASSERT(qs_has_lang(NULL));
  ASSERT(!qs_has_lang("python"));
  const char *dd = "{\"_id\":\"_design/n\",\"language\":\"nodejs\",\"validate_doc_update\":\"function(d) { if (!d.ok) "
                   "throw {forbidden: 'not ok'}; }\",\"filters\":{\"f\":\"(d, req) => d.n > req.query.min\"}}";
  dv_arena a;
  arena_init(&a, 0);
  qs_ddoc q = {.id = "_design/n", .id_len = 9, .rev = "1-a", .lang = "nodejs", .json = dd, .json_len = strlen(dd)};
  json_val *v;
  qs_err e;
  const char *args = "[{\"_id\":\"x\"},null,{},{}]";
  ASSERT_OK(qs_ddoc_call(&q, "[\"validate_doc_update\"]", 23, args, strlen(args), &a, &v, &e));
  ASSERT(v->type == JSON_OBJECT && json_obj_getz(v, "forbidden"));
  const char *fa = "[[{\"n\":1},{\"n\":5}],{\"query\":{\"min\":2}}]";
  ASSERT_OK(qs_ddoc_call(&q, "[\"filters\",\"f\"]", 15, fa, strlen(fa), &a, &v, &e));
  ASSERT(v->type == JSON_ARRAY && v->len == 2 && v->u.items[1]->len == 2 && !v->u.items[1]->u.items[0]->b &&
         v->u.items[1]->u.items[1]->b);
  ASSERT_EQ(qs_ddoc_call(&q, "[\"shows\",\"x\"]", 13, "[null,{}]", 9, &a, &v, &e), DV_EQS);
  ASSERT_STR_EQ(e.error, "not_found");
  /* the views commands */
  qs_proc *p;
  ASSERT_OK(qs_acquire("nodejs", &p, &e));
  dv_buf out;
  buf_init(&out);
  ASSERT_OK(qs_prompt(p, "[\"reset\"]", 9, &out, &a, &e));
  buf_reset(&out);
  const char *af = "[\"add_fun\",\"function(doc) { emit(doc._id, 1); }\"]";
  ASSERT_OK(qs_prompt(p, af, strlen(af), &out, &a, &e));
  buf_reset(&out);
  { const char *md = "[\"map_doc\",{\"_id\":\"z\"}]"; ASSERT_OK(qs_prompt(p, md, strlen(md), &out, &a, &e)); }
  ASSERT_MEM_EQ(out.p, out.len, "[[[\"z\",1]]]", 11);
  qs_release(p, 0);
  buf_free(&out);
  /* a server that never answers is killed at the timeout; one that exits is replaced */
  double t0 = now_s();
  ASSERT_EQ(qs_ddoc_call(&q, "[\"shows\",\"hang\"]", 16, "[null,{}]", 9, &a, &v, &e), DV_EQS_PROCESS);
  ASSERT_STR_EQ(e.reason, "OS process timed out.");
  ASSERT(now_s() - t0 > 2.5);
  ASSERT_EQ(qs_ddoc_call(&q, "[\"shows\",\"die\"]", 15, "[null,{}]", 9, &a, &v, &e), DV_EQS_PROCESS);
  ASSERT_OK(qs_ddoc_call(&q, "[\"filters\",\"f\"]", 15, fa, strlen(fa), &a, &v, &e));
  /* an unknown language */
  q.lang = "cobol";
  ASSERT_EQ(qs_ddoc_call(&q, "[\"filters\",\"f\"]", 15, fa, strlen(fa), &a, &v, &e), DV_EQS_LANG);
  ASSERT_STR_EQ(e.error, "unknown_query_language");
  arena_free(&a);
  unlink(path);
  qdone(c);
}

TEST(qs_fuzz_smoke) { test_fuzz_smoke("fuzz_qs"); }
