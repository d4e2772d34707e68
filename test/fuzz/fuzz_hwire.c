/* fuzz_hwire.c — libFuzzer target for the request-framing state machine
 * of src/http/hwire.c: the bytes every client connection sends.
 *
 * The first two input bytes pick the head limit (64..65599) and a split
 * point; the rest is the connection's byte stream. Invariants beyond "no
 * crash, no read past the input":
 *   - the answer does not depend on how the stream is cut: whole, at the
 *     split point, and one byte at a time give the same code, the same
 *     count of completed heads, the same in_head and in_body flags;
 *   - a body is never in progress inside a head, nor after an answer;
 *   - an answer is 0 or one of the DV_EHTTP_* codes, and it is sticky;
 *   - a head never grows past the limit without an answer. */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "http/hwire.h"
#include "util/err.h"

static int known(int rc) {
  return rc == 0 || rc == DV_EHTTP_FOLD || rc == DV_EHTTP_HEADER || rc == DV_EHTTP_LENGTH || rc == DV_EHTTP_SMUGGLE ||
         rc == DV_EHTTP_TE || rc == DV_EHTTP_CODING || rc == DV_EHTTP_CHUNK || rc == DV_EHTTP_CHUNK_LINE ||
         rc == DV_EHTTP_HEAD_LARGE || rc == DV_EHTTP_URI_LONG;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  uint32_t head_max = 64 + (uint32_t)data[0] * 257;
  const uint8_t *p = data + 2;
  size_t n = size - 2, cut = n ? (size_t)data[1] * 131 % (n + 1) : 0;
  hwire a, b, c;
  hwire_init(&a, head_max);
  hwire_init(&b, head_max);
  hwire_init(&c, head_max);
  int ra = hwire_feed(&a, p, n);
  int rb = hwire_feed(&b, p, cut);
  if (!rb) rb = hwire_feed(&b, p + cut, n - cut);
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    rc = hwire_feed(&c, p + i, 1);
    assert(c.head <= head_max || rc);
  }
  assert(known(ra));
  assert(ra == rb && ra == rc);
  if (!ra) {
    assert(a.heads == b.heads && a.heads == c.heads);
    assert(a.in_head == b.in_head && a.in_head == c.in_head);
    assert(hwire_in_body(&a) == hwire_in_body(&b) && hwire_in_body(&a) == hwire_in_body(&c));
    assert(!(a.in_head && hwire_in_body(&a)));
    assert(a.head <= head_max);
  } else {
    assert(hwire_feed(&a, (const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18) == ra);
    assert(!a.in_head);
    assert(!hwire_in_body(&a));
  }
  return 0;
}
