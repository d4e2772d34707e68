/* fuzz_log.c — libFuzzer target for the log's line formatter and level
 * names (src/util/log.c): every message byte a client can put in a line
 * (a path, a Host header, a JavaScript log() string, an error's reason)
 * passes log__format's escape-and-cut.
 *
 * Input: byte 0 picks the writer and the level, bytes 1-2 the message cap
 * (0..65535, the formatter takes 16..16000 of it), the rest is the
 * message. Checks, for the line written into a buffer of exactly
 * LOG_LINE_MAX bytes (ASan sees a byte past it):
 *  - it ends in its only '\n' and holds no other control byte but tabs;
 *  - the message part is the message escaped (\n, \r, \xHH) when that fits
 *    the cap, else the longest prefix of it that ends between escapes and
 *    within cap-3 bytes, then "...";
 *  - the input as a string: log_level_parse gives -1 or a level whose
 *    name parses back to it.
 * Any failed check aborts. Build: make build/fuzz/fuzz_log. Seeds:
 * test/fuzz/seeds/fuzz_log.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define CHECK(c)                                                                \
  do {                                                                          \
    if (!(c)) {                                                                 \
      fprintf(stderr, "fuzz_log: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                  \
    }                                                                           \
  } while (0)

/* The message escaped one byte at a time (the reference the formatter's
 * runs must agree with); ends[] the length after each byte's escape. */
static size_t escape_ref(const uint8_t *m, size_t n, char *out, size_t *ends) {
  static const char hex[] = "0123456789abcdef";
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t c = m[i];
    if (c == '\n') out[w++] = '\\', out[w++] = 'n';
    else if (c == '\r') out[w++] = '\\', out[w++] = 'r';
    else if ((c < 0x20 && c != '\t') || c == 0x7f) out[w++] = '\\', out[w++] = 'x', out[w++] = hex[c >> 4], out[w++] = hex[c & 15];
    else out[w++] = (char)c;
    ends[i] = w;
  }
  return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char *line, *ref;
  static size_t *ends;
  if (!line) {
    line = malloc(LOG_LINE_MAX);
    ref = malloc(4 * 70000);
    ends = malloc(sizeof *ends * 70000);
  }
  if (size > 65536) return 0;
  /* the level names */
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = 0;
  int l = log_level_parse(s);
  CHECK(l == -1 || (l >= DV_LOG_DEBUG && l <= DV_LOG_NONE));
  if (l > 0) CHECK(log_level_parse(log_level_name(l)) == l);
  free(s);
  if (size < 3) return 0;
  int writer = data[0] % 3, level = 1 + (data[0] / 3) % 8;
  size_t cap = (size_t)data[1] << 8 | data[2];
  const uint8_t *msg = data + 3;
  size_t len = size - 3;
  size_t n = log__format(line, writer, level, "0123456789", 1795549500123456LL, 4711, (const char *)msg, len, cap);
  CHECK(n > 0 && n <= LOG_LINE_MAX);
  CHECK(line[n - 1] == '\n');
  for (size_t i = 0; i + 1 < n; i++) CHECK((unsigned char)line[i] >= 0x20 || line[i] == '\t');
  for (size_t i = 0; i + 1 < n; i++) CHECK(line[i] != 0x7f); /* DEL is escaped too */
  /* the message starts after the id */
  const char *id = memmem(line, n, " 0123456789 ", 12);
  CHECK(id != NULL);
  const char *m = id + 12;
  size_t mlen = (size_t)(line + n - 1 - m);
  size_t max = !cap || cap > LOG_MAX_MESSAGE ? LOG_MAX_MESSAGE : cap < 16 ? 16 : cap;
  size_t rl = escape_ref(msg, len, ref, ends);
  if (rl <= max) {
    CHECK(mlen == rl && !memcmp(m, ref, rl));
  } else {
    size_t keep = 0; /* the longest boundary within max-3 */
    for (size_t i = 0; i < len && ends[i] <= max - 3; i++) keep = ends[i];
    CHECK(mlen == keep + 3 && !memcmp(m, ref, keep) && !memcmp(m + keep, "...", 3));
  }
  return 0;
}
