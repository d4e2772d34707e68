/* fuzz_multipart.c — libFuzzer target for the streaming multipart parser
 * of src/http/multipart.c, which reads request bodies any client may send
 * (document + attachment uploads, form-data).
 *
 * The whole input is a body for the fixed boundary "fzb" (the seeds show
 * its shape). It is parsed twice: in one mp_feed, and split in two at a
 * position taken from the first input byte. Invariants: no crash or
 * sanitizer report; no data callback of 0 bytes; both runs give the same
 * result, the same sequence of callbacks and the same part data (pieces of
 * data are joined, as their sizes may differ); a body that parses has every
 * part_begin matched by a part_end and all data inside a part's body. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/multipart.h"

typedef struct trace {
  uint8_t *p;   /* the log: events, lengths and data */
  size_t len;   /* bytes used */
  size_t cap;   /* bytes allocated */
  int in_data;  /* the last event was data (the next piece joins it) */
  int depth;    /* 1 inside a part */
  int in_body;  /* 1 between headers_end and part_end */
} trace;

static void put(trace *t, const void *b, size_t n) {
  if (t->len + n > t->cap) {
    t->cap = (t->len + n) * 2 + 64;
    t->p = realloc(t->p, t->cap);
    assert(t->p);
  }
  memcpy(t->p + t->len, b, n);
  t->len += n;
}

static void event(trace *t, char c) {
  t->in_data = 0;
  put(t, &c, 1);
}

static int on_begin(void *a) {
  trace *t = a;
  assert(t->depth == 0);
  t->depth = 1;
  event(t, 'B');
  return 0;
}

static int on_header(void *a, const char *n, size_t nl, const char *v, size_t vl) {
  trace *t = a;
  assert(t->depth == 1 && !t->in_body && nl > 0);
  event(t, 'H');
  put(t, &nl, sizeof nl);
  put(t, n, nl);
  put(t, &vl, sizeof vl);
  put(t, v, vl);
  return 0;
}

static int on_hend(void *a) {
  trace *t = a;
  assert(t->depth == 1 && !t->in_body);
  t->in_body = 1;
  event(t, 'E');
  return 0;
}

static int on_data(void *a, const uint8_t *p, size_t n) {
  trace *t = a;
  assert(n > 0 && t->in_body);
  if (!t->in_data) event(t, 'D');
  t->in_data = 1;
  put(t, p, n);
  return 0;
}

static int on_end(void *a) {
  trace *t = a;
  assert(t->in_body);
  t->depth = t->in_body = 0;
  event(t, 'P');
  return 0;
}

static const mp_callbacks CB = {on_begin, on_header, on_hend, on_data, on_end};

/* Parse data[0..n) fed as [0, cut) and [cut, n); the result, and the log in t. */
static int run(const uint8_t *data, size_t n, size_t cut, trace *t) {
  mp_parser *p;
  memset(t, 0, sizeof *t);
  int rc = mp_new("fzb", &CB, t, 256, 64, &p);
  assert(rc == 0);
  rc = mp_feed(p, data, cut);
  if (!rc) rc = mp_feed(p, data + cut, n - cut);
  int fin = mp_finish(p);
  if (rc) assert(fin == rc);
  else rc = fin;
  mp_free(p);
  assert(rc == 0 || rc == DV_EINVAL || rc == DV_EVALUE_TOO_LARGE);
  if (rc == 0) assert(t->depth == 0);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  trace a, b;
  size_t cut = size ? data[0] % (size + 1) : 0;
  int ra = run(data, size, size, &a);
  int rb = run(data, size, cut, &b);
  assert(ra == rb);
  assert(a.len == b.len && (!a.len || !memcmp(a.p, b.p, a.len)));
  free(a.p);
  free(b.p);
  return 0;
}
