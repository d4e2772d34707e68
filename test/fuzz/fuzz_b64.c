/* fuzz_b64.c — libFuzzer target for the strict parsers of util/b64.c and src/http/crypto.c:
 * the base64 decoder (both alphabets) and the [admins] value parser.
 *
 * Base64: the input, as is, is decoded in both modes. Whatever decodes must
 * re-encode, in the same mode, to the input itself (standard) or to the
 * input without its '=' padding (url): the decoder accepts only canonical
 * text, so each byte string has one encoding; and that re-encoding must
 * decode to the same bytes.
 *
 * [admins]: the input up to its first NUL is an [admins] value checked
 * against a fixed password: no crash, DV_EINVAL or a verdict, never a
 * match (nobody can write a hash of that password without computing it,
 * and the fuzzer cannot; the seeds are well-formed hashes of "relax", so
 * they run the whole path and must not match either);
 * cr_admin_is_hashed must hold for anything that parsed. Values whose iteration count is above 1000 are not verified, so
 * one input cannot take a minute of PBKDF2. The input is also checked as a
 * password against a known hash of "relax": a match means it is "relax". */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/crypto.h"
#include "util/alloc.h"

static void b64_check(const uint8_t *data, size_t size, int url) {
  uint8_t *out = malloc(cr_b64_decoded_max(size) + 1);
  size_t len = 0;
  if (cr_b64_decode((const char *)data, size, url, out, &len) == 0) {
    assert(len <= cr_b64_decoded_max(size));
    size_t m = cr_b64_encoded_len(len, url);
    char *s = malloc(m + 1);
    cr_b64_encode(out, len, url, s);
    assert(strlen(s) == m);
    size_t body = size;
    if (url)
      while (body && data[body - 1] == '=') body--;
    assert(m == body && memcmp(s, data, m) == 0);
    uint8_t *again = malloc(cr_b64_decoded_max(m) + 1);
    size_t len2 = 0;
    assert(cr_b64_decode(s, m, url, again, &len2) == 0);
    assert(len2 == len && memcmp(again, out, len) == 0);
    free(again);
    free(s);
  }
  free(out);
}

/* 1 if the value ends in ",<digits>" with a count above 1000. */
static int too_costly(const char *s) {
  const char *comma = strrchr(s, ',');
  if (!comma) return 0;
  const char *d = comma + 1;
  size_t n = strlen(d);
  if (n == 0 || n > 4) return n > 4;
  return atoi(d) > 1000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  b64_check(data, size, 0);
  b64_check(data, size, 1);

  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = 0;
  int ok = 7;
  char *salt = NULL;
  if (!too_costly(s)) {
    int rc = cr_admin_verify(s, "fuzzing-not-relax", &ok, &salt);
    assert(rc == 0 || rc == DV_EINVAL);
    if (rc == 0) {
      assert(ok == 0);
      assert(salt && strlen(salt) > 0 && !strchr(salt, ','));
      assert(cr_admin_is_hashed(s));
      dv_free(salt);
    } else {
      assert(ok == 7 && salt == NULL);
    }
  }
  /* the input as a password */
  ok = 7;
  int rc = cr_admin_verify("-hashed-398845140e734303a9eb37e9ca781f9d272cbf0f,"
                           "a4d8ed5e7f2b6c9103e5d7f1a2b3c4d5", s, &ok, NULL);
  assert(rc == 0 && ok == !strcmp(s, "relax"));
  free(s);
  return 0;
}
