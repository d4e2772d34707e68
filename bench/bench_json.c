/* bench_json.c — throughput of the JSON layer on CouchDB-like documents.
 *
 * Generates a JSON array of 1,000 documents (~1 MB: _id, _rev, strings,
 * integers, short decimals and full-precision doubles, nested objects and
 * arrays, some non-ASCII text and escapes, booleans, nulls), then measures
 *   pull  — the reader alone, walking every event (json_next);
 *   dom   — json_parse into an arena (reset between runs);
 *   write — json_write of that DOM into a reused buffer.
 * Each figure is the median of 9 runs, a run being as many iterations as
 * fill at least 0.2 s. The bars from the issue are 400 MB/s for parsing and
 * 300 MB/s for serialising on the 2-core reference machine.
 *
 * It is not a correctness test (test/json has those) and it measures one
 * thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json/json.h"

#define NDOCS 1000
#define RUNS 9
#define MIN_RUN_SECONDS 0.2

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *words[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot",
                              "golf", "hotel", "india", "juliet", "kilo", "lima",
                              "mike", "november", "oscar", "papa", "quebec", "romeo"};
static const char *cities[] = {"Zürich", "München", "København", "Kraków", "東京",
                               "Paris", "Berlin", "São Paulo", "Reykjavík", "London"};
#define NW (sizeof words / sizeof words[0])
#define NC (sizeof cities / sizeof cities[0])

static void sentence(json_w *w, int nwords, int fancy) {
  char s[1024];
  size_t n = 0;
  for (int i = 0; i < nwords && n < sizeof s - 64; i++) {
    const char *wd = words[rnd() % NW];
    if (i) s[n++] = ' ';
    memcpy(s + n, wd, strlen(wd));
    n += strlen(wd);
  }
  if (fancy) { /* some escapes and non-ASCII, as user text has */
    const char *tail = " \"quoted\"\n\tüñíçødé ✓ 😀";
    memcpy(s + n, tail, strlen(tail));
    n += strlen(tail);
  }
  json_w_str(w, s, n);
}

static void doc(json_w *w, int i) {
  char t[128];
  json_w_obj_begin(w);
  snprintf(t, sizeof t, "doc-%06d-%08x", i, (unsigned)rnd());
  json_w_keyz(w, "_id");
  json_w_strz(w, t);
  int n = snprintf(t, sizeof t, "%d-", (int)(rnd() % 9) + 1);
  for (int k = 0; k < 32; k++) t[n++] = "0123456789abcdef"[rnd() % 16];
  t[n] = 0;
  json_w_keyz(w, "_rev");
  json_w_strz(w, t);
  json_w_keyz(w, "type");
  json_w_strz(w, i % 3 ? "order" : "customer");
  json_w_keyz(w, "name");
  sentence(w, 2, 0);
  snprintf(t, sizeof t, "%s.%s@example.com", words[rnd() % NW], words[rnd() % NW]);
  json_w_keyz(w, "email");
  json_w_strz(w, t);
  json_w_keyz(w, "age");
  json_w_int(w, (int64_t)(rnd() % 90) + 10);
  json_w_keyz(w, "created");
  json_w_int(w, 1700000000000 + (int64_t)(rnd() % 100000000));
  json_w_keyz(w, "balance");
  snprintf(t, sizeof t, "%d.%02d", (int)(rnd() % 100000), (int)(rnd() % 100));
  json_w_num(w, t, strlen(t));
  json_w_keyz(w, "score"); /* a computed double: full precision */
  json_w_double(w, (double)(rnd() % 1000000) / 7.0);
  json_w_keyz(w, "active");
  json_w_bool(w, (int)(rnd() & 1));
  json_w_keyz(w, "deleted_at");
  json_w_null(w);
  json_w_keyz(w, "tags");
  json_w_arr_begin(w);
  for (int k = (int)(rnd() % 5); k >= 0; k--) json_w_strz(w, words[rnd() % NW]);
  json_w_arr_end(w);
  json_w_keyz(w, "address");
  json_w_obj_begin(w);
  json_w_keyz(w, "street");
  sentence(w, 3, 0);
  json_w_keyz(w, "city");
  json_w_strz(w, cities[rnd() % NC]);
  json_w_keyz(w, "zip");
  snprintf(t, sizeof t, "%05d", (int)(rnd() % 100000));
  json_w_strz(w, t);
  json_w_keyz(w, "geo");
  json_w_obj_begin(w);
  json_w_keyz(w, "lat");
  snprintf(t, sizeof t, "%d.%06d", (int)(rnd() % 180) - 90, (int)(rnd() % 1000000));
  json_w_num(w, t, strlen(t));
  json_w_keyz(w, "lon");
  snprintf(t, sizeof t, "%d.%06d", (int)(rnd() % 360) - 180, (int)(rnd() % 1000000));
  json_w_num(w, t, strlen(t));
  json_w_obj_end(w);
  json_w_obj_end(w);
  json_w_keyz(w, "items");
  json_w_arr_begin(w);
  for (int k = (int)(rnd() % 4); k >= 0; k--) {
    json_w_obj_begin(w);
    json_w_keyz(w, "sku");
    snprintf(t, sizeof t, "SKU-%06d", (int)(rnd() % 1000000));
    json_w_strz(w, t);
    json_w_keyz(w, "qty");
    json_w_int(w, (int64_t)(rnd() % 10) + 1);
    json_w_keyz(w, "price");
    snprintf(t, sizeof t, "%d.%02d", (int)(rnd() % 500), (int)(rnd() % 100));
    json_w_num(w, t, strlen(t));
    json_w_keyz(w, "gift");
    json_w_bool(w, (int)(rnd() % 5 == 0));
    json_w_obj_end(w);
  }
  json_w_arr_end(w);
  json_w_keyz(w, "description");
  sentence(w, 25 + (int)(rnd() % 40), i % 4 == 0);
  json_w_keyz(w, "matrix");
  json_w_arr_begin(w);
  for (int r = 0; r < 3; r++) {
    json_w_arr_begin(w);
    for (int c = 0; c < 3; c++) json_w_int(w, (int64_t)(rnd() % 1000) - 500);
    json_w_arr_end(w);
  }
  json_w_arr_end(w);
  json_w_keyz(w, "meta");
  json_w_obj_begin(w);
  json_w_keyz(w, "source");
  json_w_strz(w, "import");
  json_w_keyz(w, "version");
  json_w_int(w, 3);
  json_w_keyz(w, "empty_obj");
  json_w_obj_begin(w);
  json_w_obj_end(w);
  json_w_keyz(w, "empty_arr");
  json_w_arr_begin(w);
  json_w_arr_end(w);
  json_w_obj_end(w);
  json_w_obj_end(w);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

enum { PULL, DOM, WRITE };

static volatile size_t sink;

/* Median MB/s of RUNS runs of one operation. */
static double measure(int what, const char *json, size_t len, dv_arena *a, json_val *dom,
                      dv_buf *out) {
  double rates[RUNS];
  for (int run = 0; run < RUNS; run++) {
    size_t bytes = 0;
    double t0 = now(), t;
    do {
      if (what == PULL) {
        json_reader r;
        if (json_reader_init(&r, json, len, NULL)) exit(1);
        int ev;
        size_t n = 0;
        while ((ev = json_next(&r)) > 0) n += (size_t)ev;
        if (ev < 0) {
          fprintf(stderr, "parse error %d at %zu: %s\n", ev, r.err.offset, r.err.msg);
          exit(1);
        }
        json_reader_free(&r);
        sink += n;
        bytes += len;
      } else if (what == DOM) {
        json_val *v;
        json_err e;
        arena_reset(a);
        if (json_parse(a, json, len, NULL, &v, &e)) exit(1);
        sink += v->len;
        bytes += len;
      } else {
        buf_reset(out);
        if (json_write(out, dom)) exit(1);
        sink += out->len;
        bytes += out->len;
      }
      t = now();
    } while (t - t0 < MIN_RUN_SECONDS);
    rates[run] = (double)bytes / (t - t0) / 1e6;
  }
  qsort(rates, RUNS, sizeof rates[0], cmp_double);
  return rates[RUNS / 2];
}

int main(int argc, char **argv) {
  /* "pull", "dom" or "write" runs that one alone (for a profiler). */
  const char *only = argc > 1 ? argv[1] : NULL;
  dv_buf src = DV_BUF_INIT;
  json_w w;
  json_w_init(&w, &src);
  json_w_arr_begin(&w);
  for (int i = 0; i < NDOCS; i++) doc(&w, i);
  json_w_arr_end(&w);
  if (json_w_finish(&w)) {
    fprintf(stderr, "generator failed\n");
    return 1;
  }

  dv_arena a = DV_ARENA_INIT;
  arena_init(&a, 0);
  json_val *dom;
  json_err e;
  if (json_parse(&a, src.p, src.len, NULL, &dom, &e)) {
    fprintf(stderr, "parse failed at %zu: %s\n", e.offset, e.msg);
    return 1;
  }
  dv_arena a2 = DV_ARENA_INIT;
  dv_buf out = DV_BUF_INIT;
  double pull = 0, dparse = 0, wr = 0;
  if (!only || !strcmp(only, "pull"))
    pull = measure(PULL, (const char *)src.p, src.len, &a2, dom, &out);
  if (!only || !strcmp(only, "dom"))
    dparse = measure(DOM, (const char *)src.p, src.len, &a2, dom, &out);
  if (!only || !strcmp(only, "write"))
    wr = measure(WRITE, (const char *)src.p, src.len, &a2, dom, &out);

  printf("input: %d documents, %zu bytes (output %zu bytes)\n", NDOCS, src.len, out.len);
  printf("%-22s %10s %8s\n", "operation", "MB/s", "bar");
  printf("%-22s %10.0f %8s\n", "pull parse (events)", pull, ">=400");
  printf("%-22s %10.0f %8s\n", "DOM parse (arena)", dparse, ">=400");
  printf("%-22s %10.0f %8s\n", "DOM serialize", wr, ">=300");
  buf_free(&src);
  buf_free(&out);
  arena_free(&a);
  arena_free(&a2);
  return 0;
}
