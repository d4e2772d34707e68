/* bench_tuple.c — throughput of the tuple codec on the keys divan writes.
 *
 * Packs and unpacks a document-leaf key of the shape store/ uses,
 *   ("divan", 1, 42, "d", "docid-000123", true, 3, <16 bytes>, "path", 0)
 * plus a number-heavy and a string-heavy variant, and prints keys/s, ns per
 * key and MB/s for each direction. For orientation only: one thread, warm
 * caches, no KV store behind it.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tuple/tuple.h"
#include "util/buf.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const uint8_t rev_hash[16] = {0x3f, 0x1c, 0x9a, 0x00, 0x42, 0x17, 0xee, 0x01,
                                     0x5b, 0x60, 0x7d, 0x88, 0x93, 0xa4, 0xb5, 0xc6};

static void pack_doc_key(tup_w *w, int i) {
  tup_strz(w, "divan");
  tup_int(w, 1);
  tup_int(w, 42);
  tup_str(w, "d", 1);
  tup_str(w, "docid-000123", 12);
  tup_bool(w, 1);
  tup_int(w, 3 + (i & 1));
  tup_bytes(w, rev_hash, sizeof rev_hash); /* holds a 0x00: escaped */
  tup_str(w, "path", 4);
  tup_int(w, 0);
}

static void pack_numbers(tup_w *w, int i) {
  for (int k = 0; k < 8; k++) tup_int(w, (int64_t)i * 1000003 * (k + 1) - 5000000);
  tup_double(w, i * 0.25);
  tup_float(w, (float)i);
}

static void pack_strings(tup_w *w, int i) {
  tup_strz(w, "a fairly ordinary document id, longer than most");
  tup_strz(w, "h\xc3\xa9llo w\xc3\xb6rld \xe2\x98\x83");
  tup_bytes(w, "\x00\x01\x00\x02\x00\x03", 6);
  tup_int(w, i);
}

struct kind {
  const char *name;              /* printed */
  void (*pack)(tup_w *w, int i); /* builds one key */
};

static volatile uint64_t sink;

static int run(const struct kind *k, int iters) {
  dv_buf b = DV_BUF_INIT;
  tup_w w;
  size_t bytes = 0;

  double t0 = now();
  for (int i = 0; i < iters; i++) {
    buf_reset(&b);
    tup_w_init(&w, &b);
    k->pack(&w, i);
    if (tup_w_finish(&w)) {
      fprintf(stderr, "%s: pack failed\n", k->name);
      buf_free(&b);
      return 1;
    }
    bytes += b.len;
  }
  double t_pack = now() - t0;

  /* unpack the last key over and over, touching every element's value */
  tup_r r;
  tup_item it;
  uint64_t acc = 0;
  t0 = now();
  for (int i = 0; i < iters; i++) {
    tup_r_init(&r, b.p, b.len);
    while (tup_next(&r, &it) == 1) {
      switch (it.type) {
      case TUP_INT: acc += it.mag64; break;
      case TUP_STR:
      case TUP_BYTES: acc += it.s_len; break;
      default: acc += it.raw_len; break;
      }
    }
  }
  double t_unpack = now() - t0;
  sink = acc;

  printf("%-8s %3zu B/key   pack %5.1f M keys/s %5.0f ns %5.0f MB/s   "
         "unpack %5.1f M keys/s %5.0f ns %5.0f MB/s\n",
         k->name, b.len, iters / t_pack / 1e6, t_pack / iters * 1e9, bytes / 1e6 / t_pack,
         iters / t_unpack / 1e6, t_unpack / iters * 1e9, (double)b.len * iters / 1e6 / t_unpack);
  dv_buf t = DV_BUF_INIT;
  (void)tup_format(&t, b.p, b.len);
  printf("         %s\n", (const char *)t.p);
  buf_free(&t);
  buf_free(&b);
  return 0;
}

int main(void) {
  static const struct kind kinds[] = {
      {"doc key", pack_doc_key},
      {"numbers", pack_numbers},
      {"strings", pack_strings},
  };
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (run(&kinds[i], 3000000)) return 1;
  return 0;
}
