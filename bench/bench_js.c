/* bench_js.c — the embedded JavaScript engine through qs.h, as the write
 * path and the changes feed use it:
 *   validate   validate_doc_update calls per second, one document per call
 *              (a simple validator, ES5 and with modern syntax);
 *   filter     documents per second through a filter function, in calls of
 *              100 documents (as a filtered _changes batches them);
 *   threads    validate calls per second from 4 threads over 4 contexts;
 *   memory     RSS per context (a fresh context, prelude evaluated, one
 *              design document loaded): what js_contexts costs.
 * Measured against nothing: the figures are the engine's own ceiling,
 * reported so the choice of SpiderMonkey (js_sm.cc's header) stays
 * checked; the HTTP benchmarks compare with peers.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/qs.h"
#include "util/config.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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

static const char DD_ES5[] =
    "{\"_id\":\"_design/v\",\"_rev\":\"1-a\",\"validate_doc_update\":\"function(newDoc, oldDoc, userCtx, secObj) { "
    "if (!newDoc.type) throw({forbidden: 'type required'}); if (typeof newDoc.n !== 'number') throw({forbidden: "
    "'n must be a number'}); }\",\"filters\":{\"even\":\"function(doc, req) { return doc.n % 2 == 0; }\"}}";
static const char DD_MODERN[] =
    "{\"_id\":\"_design/m\",\"_rev\":\"1-a\",\"validate_doc_update\":\"(newDoc, oldDoc, {name}) => { const {type, n} "
    "= newDoc; if (!type) throw {forbidden: `type required`}; if (typeof n !== 'number') throw {forbidden: 'n'}; }\"}";
static const char DOC_ARGS[] =
    "[{\"_id\":\"doc-000123\",\"_rev\":\"1-0123456789abcdef0123456789abcdef\",\"type\":\"order\",\"n\":123,"
    "\"customer\":{\"name\":\"Ada\",\"city\":\"Paris\"},\"items\":[1,2,3,4]},null,{\"db\":\"bench\",\"name\":\"bob\","
    "\"roles\":[]},{}]";

static double validate_rate(const char *dd, double secs) {
  qs_ddoc q = {.id = strstr(dd, "_design/m") ? "_design/m" : "_design/v", .id_len = 9, .rev = "1-a", .json = dd,
               .json_len = strlen(dd)};
  dv_arena a;
  arena_init(&a, 0);
  long n = 0;
  double t0 = now(), t;
  do {
    for (int i = 0; i < 200; i++) {
      json_val *v;
      qs_err e;
      if (qs_ddoc_call(&q, "[\"validate_doc_update\"]", 23, DOC_ARGS, sizeof DOC_ARGS - 1, &a, &v, &e)) {
        fprintf(stderr, "bench_js: %s: %s\n", e.error, e.reason);
        exit(1);
      }
      arena_reset(&a);
    }
    n += 200;
  } while ((t = now() - t0) < secs);
  arena_free(&a);
  return n / t;
}

static void *validate_thread(void *arg) {
  *(double *)arg = validate_rate(DD_ES5, 2.0);
  return NULL;
}

int main(void) {
  dv_config *cfg;
  char err[128];
  const char ini[] = "[divan]\njs_contexts = 4\n";
  if (config_parse(ini, sizeof ini - 1, &cfg, err, sizeof err) || qs_start(cfg)) return 1;

  long base = rss_kb();
  double modern = validate_rate(DD_MODERN, 2.0);
  long one = rss_kb();
  double es5 = validate_rate(DD_ES5, 2.0);
  modern = validate_rate(DD_MODERN, 2.0);

  /* filter: 100 documents per call */
  dv_buf args;
  buf_init(&args);
  buf_puts(&args, "[[");
  for (int i = 0; i < 100; i++)
    buf_printf(&args, "%s{\"_id\":\"d%06d\",\"_rev\":\"1-abc\",\"n\":%d,\"type\":\"t\",\"tags\":[\"a\",\"b\"]}",
               i ? "," : "", i, i);
  buf_puts(&args, "],{\"query\":{},\"method\":\"GET\"}]");
  qs_ddoc q = {.id = "_design/v", .id_len = 9, .rev = "1-a", .json = DD_ES5, .json_len = sizeof DD_ES5 - 1};
  dv_arena a;
  arena_init(&a, 0);
  long docs = 0;
  double t0 = now(), t;
  do {
    json_val *v;
    qs_err e;
    if (qs_ddoc_call(&q, "[\"filters\",\"even\"]", 18, (char *)args.p, args.len, &a, &v, &e)) {
      fprintf(stderr, "bench_js: %s: %s\n", e.error, e.reason);
      return 1;
    }
    arena_reset(&a);
    docs += 100;
  } while ((t = now() - t0) < 2.0);
  double filt = docs / t;
  arena_free(&a);
  buf_free(&args);

  pthread_t th[4];
  double r[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, validate_thread, &r[i]);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  long four = rss_kb();
  qs_stats st;
  qs_stats_get(&st);

  printf("validate_doc_update (ES5):     %9.0f calls/s\n", es5);
  printf("validate_doc_update (modern):  %9.0f calls/s\n", modern);
  printf("filter, 100 docs per call:     %9.0f docs/s\n", filt);
  printf("validate, 4 threads:           %9.0f calls/s\n", r[0] + r[1] + r[2] + r[3]);
  printf("memory: first context %ld KB; %zu contexts %ld KB (%ld KB each)\n", one - base, st.alive, four - base,
         st.alive ? (four - base) / (long)st.alive : 0);
  qs_stop();
  config_free(cfg);
  return 0;
}
