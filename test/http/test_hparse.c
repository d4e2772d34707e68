/* Tests for src/http/hparse: each header-value parser at its limits — the
 * most ranges kept and one past it, the longest bound and one digit more,
 * resolution at the body's edges, Accept's q values and wildcards, the
 * media type's separators — and the fuzz target's smoke run. */
#include <stdint.h>

#include "http/hparse.h"
#include "util/multipart.h"
#include "test.h"

TEST(hparse_fuzz_smoke) { test_fuzz_smoke("fuzz_hparse"); }

/* "bytes=0-0,1-1,…" with n ranges. */
static void ranges_of(int n, char *out, size_t cap) {
  size_t at = (size_t)snprintf(out, cap, "bytes=");
  for (int i = 0; i < n; i++) at += (size_t)snprintf(out + at, cap - at, "%s%d-%d", i ? "," : "", i, i);
}

TEST(hparse_range) {
  hrange rg[HPARSE_MAX_RANGES + 1];
  char h[512];
  /* the count: up to HPARSE_MAX_RANGES + 1 kept, parsing stops there */
  for (int n = 1; n <= HPARSE_MAX_RANGES + 3; n++) {
    ranges_of(n, h, sizeof h);
    int want = n <= HPARSE_MAX_RANGES + 1 ? n : HPARSE_MAX_RANGES + 1;
    ASSERT_EQ(hparse_range(h, rg), want);
    for (int i = 0; i < want; i++) ASSERT(rg[i].from == i && rg[i].to == i);
  }
  /* the shapes */
  ASSERT_EQ(hparse_range("bytes=5-", rg), 1);
  ASSERT(rg[0].from == 5 && rg[0].to == -1);
  ASSERT_EQ(hparse_range("bytes=-7", rg), 1);
  ASSERT(rg[0].from == -1 && rg[0].to == 7);
  ASSERT_EQ(hparse_range("bytes= 1-2 ,\t,, 3- ,", rg), 2); /* spaces, tabs and empty elements */
  ASSERT(rg[0].from == 1 && rg[0].to == 2 && rg[1].from == 3 && rg[1].to == -1);
  /* the longest bound, and one digit more */
  ASSERT_EQ(hparse_range("bytes=999999999999999999-999999999999999999", rg), 1);
  ASSERT(rg[0].from == 999999999999999999LL && rg[0].to == 999999999999999999LL);
  ASSERT_EQ(hparse_range("bytes=1000000000000000000-", rg), 0);
  ASSERT_EQ(hparse_range("bytes=-1000000000000000000", rg), 0);
  ASSERT_EQ(hparse_range("bytes=000000000000000001-", rg), 1); /* 18 digits, leading zeros count */
  /* malformed: ignored */
  static const char *bad[] = {NULL, "", "bytes", "bytes=", "bytes=-", "Bytes=1-2", "items=1-2", "bytes=1-2-3",
                              "bytes=a-1", "bytes=1 -2", "bytes=--1", "bytes=1-2,x", "bytes=0x1-2", " bytes=1-2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) ASSERTF(hparse_range(bad[i], rg) == 0, "%s", bad[i] ? bad[i] : "NULL");
  /* a malformed element anywhere drops them all, even past the limit */
  ranges_of(HPARSE_MAX_RANGES, h, sizeof h);
  strcat(h, ",z");
  ASSERT_EQ(hparse_range(h, rg), 0);
}

TEST(hparse_range_resolve) {
  hrange rg[HPARSE_MAX_RANGES + 1];
  /* inside, clipped, suffixes */
  ASSERT_EQ(hparse_range("bytes=0-0,28-28,10-100,-5,-100", rg), 5);
  ASSERT_EQ(hparse_range_resolve(rg, 5, 29), 1);
  int64_t want[5][2] = {{0, 0}, {28, 28}, {10, 28}, {24, 28}, {0, 28}};
  for (int i = 0; i < 5; i++) ASSERT(rg[i].from == want[i][0] && rg[i].to == want[i][1]);
  /* the last byte, and one past it */
  ASSERT_EQ(hparse_range("bytes=28-", rg), 1);
  ASSERT_EQ(hparse_range_resolve(rg, 1, 29), 1);
  ASSERT(rg[0].from == 28 && rg[0].to == 28);
  ASSERT_EQ(hparse_range("bytes=29-", rg), 1);
  ASSERT_EQ(hparse_range_resolve(rg, 1, 29), -1);
  ASSERT_EQ(hparse_range("bytes=29-40", rg), 1);
  ASSERT_EQ(hparse_range_resolve(rg, 1, 29), -1);
  /* backwards, "-0", an empty body */
  ASSERT_EQ(hparse_range("bytes=5-4", rg), 1);
  ASSERT_EQ(hparse_range_resolve(rg, 1, 29), -1);
  ASSERT_EQ(hparse_range("bytes=-0", rg), 1);
  ASSERT_EQ(hparse_range_resolve(rg, 1, 29), -1);
  ASSERT_EQ(hparse_range("bytes=-1", rg), 1);
  ASSERT_EQ(hparse_range_resolve(rg, 1, 0), -1);
  /* "0-" anywhere (before a bad one) is the whole body */
  ASSERT_EQ(hparse_range("bytes=3-4,0-,9-1", rg), 3);
  ASSERT_EQ(hparse_range_resolve(rg, 3, 29), 0);
  ASSERT_EQ(hparse_range("bytes=0-", rg), 1);
  ASSERT_EQ(hparse_range_resolve(rg, 1, 0), 0);
  /* the most ranges, all resolved in order */
  ASSERT_EQ(hparse_range("bytes=0-1,2-3,4-5,6-7,8-9,10-11,12-13,14-15,16-17,18-19", rg), HPARSE_MAX_RANGES);
  ASSERT_EQ(hparse_range_resolve(rg, HPARSE_MAX_RANGES, 20), 1);
  for (int i = 0; i < HPARSE_MAX_RANGES; i++) ASSERT(rg[i].from == 2 * i && rg[i].to == 2 * i + 1);
  /* the largest bounds against the largest body */
  ASSERT_EQ(hparse_range("bytes=999999999999999998-,-999999999999999999", rg), 2);
  ASSERT_EQ(hparse_range_resolve(rg, 2, INT64_MAX), 1);
  ASSERT(rg[0].from == 999999999999999998LL && rg[0].to == INT64_MAX - 1);
  ASSERT(rg[1].from == INT64_MAX - 999999999999999999LL && rg[1].to == INT64_MAX - 1);
}

TEST(hparse_accepts) {
  static const char *R = "multipart/related";
  static const struct { const char *h; int want; } c[] = {
      {NULL, 0},
      {"", 0},
      {"*/*", 0},
      {"application/json", 0},
      {"multipart/related", 1},
      {"MULTIPART/Related", 1},
      {"multipart/*", 1},
      {"application/json, multipart/related", 1},
      {"  ,, multipart/related  ;  charset=utf-8", 1},
      {"multipart/related;q=0", 0},
      {"multipart/related; Q=0.0", 0},
      {"multipart/related;q=0.001", 1},
      {"multipart/related;q=1", 1},
      {"multipart/related;q=-1", 0},
      {"multipart/*;q=0, multipart/related", 1},
      {"multipart/related;q=0, multipart/*", 1},
      {"multipart/relatedx", 0},
      {"multipart/relate", 0},
      {"multipart/mixed", 0},
      {"text/html;level=1;q=0.5, multipart/related;q=0.2", 1},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    ASSERTF(hparse_accepts(c[i].h, R) == c[i].want, "Accept: %s", c[i].h ? c[i].h : "NULL");
  ASSERT_EQ(hparse_accepts("multipart/mixed", "multipart/mixed"), 1);
}

/* mochiweb's accepts_content_type, which open_revs asks (issue 16.8): no
 * header or the wildcard takes multipart; a type with q=0 refuses it. */
TEST(hparse_accepts_any) {
  static const char *M = "multipart/mixed";
  static const struct { const char *h; int want; } c[] = {
      {NULL, 1},
      {"*/*", 1},
      {"*/*;q=0.5", 1},
      {"*/*;q=0", 0},
      {"", 0},
      {"application/json", 0},
      {"application/json, */*", 1},
      {"multipart/mixed", 1},
      {"Multipart/MIXED", 1},
      {"multipart/*", 1},
      {"multipart/mixed;q=0", 0},
      {"*/*, multipart/mixed;q=0", 0},
      {"*/*, multipart/*;q=0", 0},
      {"multipart/related", 0},
      {"multipart/mixedx", 0},
      {"multipartx/*", 0},
      {"text/html;level=1, multipart/mixed;q=0.2", 1},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    ASSERTF(hparse_accepts_any(c[i].h, M) == c[i].want, "Accept: %s", c[i].h ? c[i].h : "NULL");
}

TEST(hparse_media_is) {
  static const char *R = "multipart/related";
  static const struct { const char *v; int want; } c[] = {
      {"multipart/related", 1},
      {"multipart/related;boundary=x", 1},
      {"multipart/related; boundary=x", 1},
      {"Multipart/RELATED\tboundary=x", 1},
      {"multipart/related ", 1},
      {"multipart/relatedx", 0},
      {"multipart/relate", 0},
      {"multipart/related,", 0},
      {" multipart/related", 0},
      {"", 0},
      {"multipart/form-data; boundary=x", 0},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    ASSERTF(hparse_media_is(c[i].v, strlen(c[i].v), R) == c[i].want, "%s", c[i].v);
  ASSERT_EQ(hparse_media_is(NULL, 0, R), 0);
  /* the counted length rules, not the NUL */
  ASSERT_EQ(hparse_media_is("multipart/related;x", 17, R), 1);
  ASSERT_EQ(hparse_media_is("multipart/related", 16, R), 0);
  ASSERT_EQ(hparse_media_is("application/json; charset=utf-8", 31, "application/json"), 1);
}

TEST(hparse_boundary_limits) {
  char ct[160], out[MP_MAX_BOUNDARY + 1];
  char b[MP_MAX_BOUNDARY + 2];
  memset(b, 'b', sizeof b);
  b[MP_MAX_BOUNDARY] = 0; /* the longest boundary */
  snprintf(ct, sizeof ct, "multipart/related; boundary=\"%s\"", b);
  ASSERT_OK(mp_boundary(ct, out, sizeof out));
  ASSERT_STR_EQ(out, b);
  ASSERT_EQ(mp_boundary(ct, out, MP_MAX_BOUNDARY), DV_EINVAL); /* no room for the NUL */
  b[MP_MAX_BOUNDARY] = 'b';
  b[MP_MAX_BOUNDARY + 1] = 0; /* one longer */
  snprintf(ct, sizeof ct, "multipart/related; boundary=%s", b);
  ASSERT_EQ(mp_boundary(ct, out, sizeof out), DV_EINVAL);
}
