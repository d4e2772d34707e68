/* fuzz_dump.c — libFuzzer target for the dump file reader (store/dumpfmt.c):
 * the input is a dump file. The reader must never crash, read outside its
 * input or hand out a record past its block, and must end in a record
 * stream, the end (0), or an error with a reason. A file it reads whole is
 * written again through the writer, and that copy must read back as the
 * same records with the same counts. A checkpoint record's bytes parse
 * again alone (dump_ckpt_parse) to the same fields. dump_scan (the
 * resume of a cut file) runs over every input: a place it finds is
 * inside the input and ends with a checkpoint that parses, and the input
 * cut there and continued by the writer (dump_w_continue) with the
 * counts and CRC it found reads to its trailer. */
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
  buf_append(b, r->id, sizeof r->id);
  buf_append(b, r->uuid, sizeof r->uuid);
  if (r->tag == DUMP_CKPT) {
    const dump_ckpt *c = &r->ck;
    buf_append(b, &c->round, sizeof c->round);
    buf_append(b, c->s0, c->s0_len);
    buf_append(b, &c->q0, sizeof c->q0);
    buf_append(b, c->at, c->at_len);
    buf_append(b, &c->qat, sizeof c->qat);
  }
}

static int same_ckpt(const dump_ckpt *x, const dump_ckpt *y) {
  return x->round == y->round && x->q0 == y->q0 && x->qat == y->qat && x->s0_len == y->s0_len &&
         x->at_len == y->at_len && (!x->s0_len || !memcmp(x->s0, y->s0, x->s0_len)) &&
         (!x->at_len || !memcmp(x->at, y->at, x->at_len));
}

static int read_all(const uint8_t *p, size_t n, dv_buf *recs, dump_w *w) {
  in m = {p, n, 0};
  dump_r r;
  int rc = dump_r_open(&r, rd, &m);
  if (!rc) {
    dump_rec rec;
    while ((rc = dump_r_next(&r, &rec)) == 1) {
      assert(rec.a_len == 0 || rec.a != NULL);
      assert(rec.raw && rec.raw_len >= 1 && rec.raw[0] == rec.tag);
      if (rec.tag == DUMP_CKPT) {
        dump_ckpt again;
        assert(dump_ckpt_parse(rec.raw, rec.raw_len, &again) == 0 && same_ckpt(&again, &rec.ck));
      }
      flat(recs, &rec);
      if (!w) continue;
      switch (rec.tag) {
      case DUMP_HEADER: dump_w_header(w, (const char *)rec.a, rec.a_len, rec.inc, rec.id, rec.uuid); break;
      case DUMP_CKPT: dump_w_ckpt(w, &rec.ck); break;
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

/* The resume of a cut file: scan, cut, continue, finish; the result reads
 * whole. */
static void scan_cut(const uint8_t *data, size_t size) {
  dump_cont c = {0};
  buf_init(&c.ck);
  in m = {data, size, 0};
  const char *why = NULL;
  int rc = dump_scan(rd, &m, &c, &why);
  if (rc) assert(why && *why);
  if (!rc && !c.complete) {
    dump_ckpt ck;
    assert(c.off <= size && c.ck.len && dump_ckpt_parse(c.ck.p, c.ck.len, &ck) == 0);
    dv_buf f;
    buf_init(&f);
    buf_append(&f, data, (size_t)c.off);
    dump_w w;
    dump_w_continue(&w, out, &f, &c);
    dump_w_ckpt(&w, &ck);
    if (dump_w_finish(&w)) abort();
    dump_w_free(&w);
    dv_buf recs;
    buf_init(&recs);
    assert(read_all(f.p, f.len, &recs, NULL) == 0);
    buf_free(&recs);
    buf_free(&f);
  }
  buf_free(&c.ck);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  scan_cut(data, size);
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
