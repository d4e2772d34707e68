/* Tests for src/util/md5: the RFC 1321 test suite (appendix A.5), a long
 * input fed in pieces of every awkward size, and the padding boundaries. */
#include "test.h"
#include "util/md5.h"

static const char *hex16(const uint8_t d[DV_MD5_LEN]) {
  static char s[33];
  for (int i = 0; i < 16; i++) snprintf(s + 2 * i, 3, "%02x", d[i]);
  return s;
}

static const char *md5_of(const void *p, size_t n) {
  dv_md5 c;
  uint8_t d[DV_MD5_LEN];
  dv_md5_init(&c);
  dv_md5_update(&c, p, n);
  dv_md5_final(&c, d);
  return hex16(d);
}

TEST(md5_vectors) {
  static const struct { const char *in, *out; } v[] = {
      {"", "d41d8cd98f00b204e9800998ecf8427e"},
      {"a", "0cc175b9c0f1b6a831c399e269772661"},
      {"abc", "900150983cd24fb0d6963f7d28e17f72"},
      {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
      {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
      {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
       "d174ab98d277d9f5a5611c2c9f419d9f"},
      {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
       "57edf4a22be3c955ac49da2e2107b67a"},
      {"The quick brown fox jumps over the lazy dog", "9e107d9d372bb6826bd81d3542a419d6"},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    ASSERT_STR_EQ(md5_of(v[i].in, strlen(v[i].in)), v[i].out);
  dv_md5 c;
  uint8_t d[DV_MD5_LEN];
  dv_md5_init(&c);
  dv_md5_update(&c, NULL, 0);
  dv_md5_final(&c, d);
  ASSERT_STR_EQ(hex16(d), "d41d8cd98f00b204e9800998ecf8427e");
}

TEST(md5_long) {
  /* a million 'a's (the classic extra vector), in one piece and in pieces
   * of 1..130 bytes, so every split of the 64-byte block is crossed */
  size_t n = 1000000;
  char *s = malloc(n);
  memset(s, 'a', n);
  ASSERT_STR_EQ(md5_of(s, n), "7707d6ae4e027c70eea2a935c2296f21");
  dv_md5 c;
  uint8_t d[DV_MD5_LEN];
  dv_md5_init(&c);
  for (size_t off = 0, k = 1; off < n; k = k % 130 + 1) {
    size_t take = n - off < k ? n - off : k;
    dv_md5_update(&c, s + off, take);
    off += take;
  }
  dv_md5_final(&c, d);
  ASSERT_STR_EQ(hex16(d), "7707d6ae4e027c70eea2a935c2296f21");
  /* lengths around the padding boundary (55, 56, 63, 64, 65 bytes):
   * one-shot and byte-at-a-time agree */
  for (size_t len = 50; len < 140; len++) {
    for (size_t i = 0; i < len; i++) s[i] = (char)(i * 7 + len);
    char one[33];
    strcpy(one, md5_of(s, len));
    dv_md5_init(&c);
    for (size_t i = 0; i < len; i++) dv_md5_update(&c, s + i, 1);
    dv_md5_final(&c, d);
    ASSERT_STR_EQ(hex16(d), one);
  }
  memset(s, 'x', 64);
  ASSERT_STR_EQ(md5_of(s, 56), "668a72d5ba17f08e62dabcafad6db14b");
  free(s);
}
