/* fuzz_dump.c — libFuzzer target for the dump file reader (store/dumpfmt.c):
 * the input is a dump file. The reader must never crash, read outside its
 * input or hand out a record past its block, and must end in a record
 * stream, the end (0), or an error with a reason. A file it reads whole is
 * written again through the writer, and that copy must read back as the
 * same records with the same counts. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/dumpfmt.h"

typedef struct in {
  const uint8_t *p;
  size_t n, at;
} in;

static long rd(void *arg, uint8_t *p, size_t n) {
  in *m = arg;
  if (n > m->n - m->at) n = m->n - m->at;
  memcpy(p, m->p + m->at, n);
  m->at += n;
  return (long)n;
}

static int out(void *arg, const uint8_t *p, size_t n) {
  buf_append(arg, p, n);
  return 0;
}

/* Records as one flat string: tag, lengths, bytes. */
static void flat(dv_buf *b, const dump_rec *r) {
  buf_putc(b, (uint8_t)r->tag);
  buf_append(b, &r->a_len, sizeof r->a_len);
  buf_append(b, r->a, r->a_len);
  buf_append(b, &r->b_len, sizeof r->b_len);
  buf_append(b, r->b, r->b_len);
  buf_append(b, &r->inc, sizeof r->inc);
}

static int read_all(const uint8_t *p, size_t n, dv_buf *recs, dump_w *w) {
  in m = {p, n, 0};
  dump_r r;
  int rc = dump_r_open(&r, rd, &m);
  if (!rc) {
    dump_rec rec;
    while ((rc = dump_r_next(&r, &rec)) == 1) {
      assert(rec.a_len == 0 || rec.a != NULL);
      flat(recs, &rec);
      if (!w) continue;
      switch (rec.tag) {
      case DUMP_HEADER: dump_w_header(w, (const char *)rec.a, rec.a_len, rec.inc); break;
      case DUMP_KV: dump_w_kv(w, rec.a, rec.a_len, rec.b, rec.b_len); break;
      case DUMP_DOC: dump_w_doc(w, (const char *)rec.a, rec.a_len); break;
      case DUMP_DOC_END: dump_w_doc_end(w); break;
      case DUMP_SECTION: dump_w_section(w, (char)rec.a[0]); break;
      default: assert(0);
      }
    }
  }
  if (rc) assert(r.why && *r.why);
  dump_r_free(&r);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dv_buf recs, copy, recs2;
  buf_init(&recs);
  buf_init(&copy);
  buf_init(&recs2);
  dump_w w;
  if (dump_w_open(&w, out, &copy)) abort();
  if (read_all(data, size, &recs, &w) == 0) {
    if (dump_w_finish(&w)) abort();
    int rc = read_all(copy.p, copy.len, &recs2, NULL);
    assert(rc == 0);
    assert(recs.len == recs2.len && (!recs.len || !memcmp(recs.p, recs2.p, recs.len)));
  }
  dump_w_free(&w);
  buf_free(&recs);
  buf_free(&copy);
  buf_free(&recs2);
  return 0;
}
