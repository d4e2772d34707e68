/* Tests for src/http/multipart: the bodies CouchDB clients send (the
 * replicator's multipart/related document + attachments, form-data),
 * RFC 2046's corners (preamble, epilogue, transport padding, empty parts,
 * boundary-like data), every malformed case and limit, and that any split
 * of a body into mp_feed calls gives the same callbacks.
 *
 * Each body is run through a parser whose callbacks write a log:
 * "{" a part begins, "name=value;" a header, "|" the headers end, the data
 * bytes as they are, "}" the part ends. */
#include <stdint.h>

#include "util/multipart.h"
#include "test.h"
#include "util/alloc.h"
#include "util/buf.h"

typedef struct logger {
  dv_buf b;          /* the log */
  size_t data_calls; /* data callbacks */
  int abort_at;      /* stop with -77 at this callback (0: never) */
  int calls;         /* callbacks so far */
} logger;

static int tick(logger *l) { return l->abort_at && ++l->calls == l->abort_at ? -77 : 0; }

static int on_begin(void *a) {
  buf_puts(&((logger *)a)->b, "{");
  return tick(a);
}
static int on_header(void *a, const char *n, size_t nl, const char *v, size_t vl) {
  logger *l = a;
  buf_append(&l->b, n, nl);
  buf_puts(&l->b, "=");
  buf_append(&l->b, v, vl);
  buf_puts(&l->b, ";");
  return tick(l);
}
static int on_hend(void *a) {
  buf_puts(&((logger *)a)->b, "|");
  return tick(a);
}
static int on_data(void *a, const uint8_t *p, size_t n) {
  logger *l = a;
  ASSERT(n > 0);
  buf_append(&l->b, p, n);
  l->data_calls++;
  return tick(l);
}
static int on_end(void *a) {
  buf_puts(&((logger *)a)->b, "}");
  return tick(a);
}

static const mp_callbacks CB = {on_begin, on_header, on_hend, on_data, on_end};

enum { ONE_SHOT = 0, BYTEWISE = 1, RANDOM = -1 };

/* Run body through a parser for boundary bd fed in the given way; the log
 * goes to l (initialised here), the result is the first error or
 * mp_finish's. */
static int run_with(const char *bd, const void *body, size_t n, int how, unsigned seed, size_t maxh,
                    size_t maxp, logger *l) {
  memset(l, 0, sizeof *l);
  buf_init(&l->b);
  mp_parser *p;
  int rc = mp_new(bd, &CB, l, maxh, maxp, &p);
  ASSERT_OK(rc);
  const uint8_t *s = body;
  size_t i = 0;
  while (!rc && i < n) {
    size_t k = n - i;
    if (how == BYTEWISE) k = 1;
    if (how == RANDOM) {
      seed = seed * 1103515245u + 12345u;
      k = 1 + (seed >> 16) % 97;
      if (k > n - i) k = n - i;
    }
    rc = mp_feed(p, s + i, k);
    i += k;
  }
  if (!rc) rc = mp_finish(p);
  else ASSERT_EQ(mp_finish(p), rc); /* sticky */
  mp_free(p);
  buf_putc(&l->b, 0);
  ASSERT_OK(buf_error(&l->b));
  return rc;
}

/* Run a body every way (one shot, byte by byte, random chunks with a few
 * seeds); all must agree. Returns the result; the log is in *out (freed
 * by the caller with dv_free()). */
static int run_all(const char *bd, const char *body, size_t n, size_t maxh, size_t maxp, char **out) {
  logger ref, l;
  int rc = run_with(bd, body, n, ONE_SHOT, 0, maxh, maxp, &ref);
  for (int k = 0; k < 6; k++) {
    int rc2 = run_with(bd, body, n, k == 0 ? BYTEWISE : RANDOM, (unsigned)k * 7919u, maxh, maxp, &l);
    ASSERT_EQ(rc2, rc);
    ASSERT_MEM_EQ(l.b.p, l.b.len, ref.b.p, ref.b.len);
    buf_free(&l.b);
  }
  *out = (char *)ref.b.p;
  return rc;
}

/* A body's result and log, checked every way. */
#define CHECK(bd, body, expect_rc, expect_log)                                   \
  do {                                                                           \
    char *log_;                                                                  \
    int rc_ = run_all(bd, body, sizeof(body) - 1, 16384, 0, &log_);              \
    ASSERTF(rc_ == (expect_rc), "line %d: rc %d, log \"%s\"", __LINE__, rc_, log_); \
    if ((expect_log) != NULL) ASSERT_STR_EQ(log_, (const char *)(expect_log));   \
    dv_free(log_);                                                               \
  } while (0)

/* ---- the boundary parameter ----------------------------------------------- */

TEST(multipart_boundary) {
  char b[MP_MAX_BOUNDARY + 1];
  static const struct { const char *ct, *want; } ok[] = {
      {"multipart/related; boundary=abc", "abc"},
      {"multipart/related;boundary=\"abc\"", "abc"},
      {"multipart/form-data; charset=utf-8; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW",
       "----WebKitFormBoundary7MA4YWxkTrZu0gW"},
      {"multipart/related; BOUNDARY=\"a b:c?\"", "a b:c?"},
      {"multipart/related; type=\"a;boundary=no\"; boundary=yes", "yes"},
      {"multipart/related; boundary = e40e2a4be5b3a5c1e5a6b6f8ce3bd2ab ; type=application/json",
       "e40e2a4be5b3a5c1e5a6b6f8ce3bd2ab"},
      {"multipart/related; boundary=\"a\\\"\"", NULL}, /* '"' is no bchar */
      {"multipart/mixed; flag; boundary=x", "x"},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    int rc = mp_boundary(ok[i].ct, b, sizeof b);
    if (!ok[i].want) {
      ASSERT_EQ(rc, DV_EINVAL);
      continue;
    }
    ASSERTF(rc == 0, "%s: %d", ok[i].ct, rc);
    ASSERT_STR_EQ(b, ok[i].want);
  }
  char b70[71], ct[128];
  memset(b70, 'z', 70);
  b70[70] = 0;
  snprintf(ct, sizeof ct, "multipart/related; boundary=%s", b70);
  ASSERT_OK(mp_boundary(ct, b, sizeof b));
  ASSERT_STR_EQ(b, b70);
  ASSERT_EQ(mp_boundary(ct, b, 70), DV_EINVAL); /* no room for the NUL */
  snprintf(ct, sizeof ct, "multipart/related; boundary=\"%sz\"", b70);
  ASSERT_EQ(mp_boundary(ct, b, sizeof b), DV_EINVAL); /* 71 */
  static const char *bad[] = {
      "multipart/related",         "multipart/related; boundary=",  "multipart/related; boundary=\"\"",
      "multipart/related; boundary=\"abc", "multipart/related; boundary=\"ab \"",
      "multipart/related; boundary=a{b", "multipart/related; boundaryx=abc", "application/json",
      "multipart/related; type=\"unterminated; boundary=abc", "",
  };
  strcpy(b, "untouched");
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ASSERTF(mp_boundary(bad[i], b, sizeof b) == DV_EINVAL, "%s", bad[i]);
  ASSERT_EQ(mp_boundary(NULL, b, sizeof b), DV_EINVAL);
  ASSERT_STR_EQ(b, "untouched");
  /* mp_new checks the boundary too */
  mp_parser *p = NULL;
  ASSERT_EQ(mp_new("", NULL, NULL, 100, 0, &p), DV_EINVAL);
  ASSERT_EQ(mp_new(NULL, NULL, NULL, 100, 0, &p), DV_EINVAL);
  ASSERT_EQ(mp_new("a\r\nb", NULL, NULL, 100, 0, &p), DV_EINVAL);
  ASSERT_EQ(mp_new("trailing ", NULL, NULL, 100, 0, &p), DV_EINVAL);
  snprintf(ct, sizeof ct, "%sz", b70);
  ASSERT_EQ(mp_new(ct, NULL, NULL, 100, 0, &p), DV_EINVAL);
  ASSERT(p == NULL);
  ASSERT_OK(mp_new(b70, NULL, NULL, 100, 0, &p));
  mp_free(p);
  mp_free(NULL);
}

/* ---- well-formed bodies --------------------------------------------------- */

TEST(multipart_related_replicator) {
  /* As couch_doc:doc_to_multi_part_stream writes it: the JSON document,
   * then each attachment with "follows": true in _attachments order; the
   * second one is gzip-encoded binary holding CRLFs and "--". */
  static const char body[] =
      "--e40e2a4be5b3a5c1e5a6b6f8ce3bd2ab\r\n"
      "Content-Type: application/json\r\n"
      "\r\n"
      "{\"_id\":\"doc\",\"_rev\":\"1-abc\",\"_attachments\":{\"a.txt\":{\"content_type\":\"text/plain\","
      "\"length\":5,\"follows\":true},\"b.bin\":{\"content_type\":\"application/octet-stream\","
      "\"encoding\":\"gzip\",\"length\":24,\"follows\":true}}}"
      "\r\n--e40e2a4be5b3a5c1e5a6b6f8ce3bd2ab\r\n"
      "Content-Disposition: attachment; filename=\"a.txt\"\r\n"
      "Content-Type: text/plain\r\n"
      "Content-Length: 5\r\n"
      "\r\n"
      "hello"
      "\r\n--e40e2a4be5b3a5c1e5a6b6f8ce3bd2ab\r\n"
      "Content-Disposition: attachment; filename=\"b.bin\"\r\n"
      "Content-Type: application/octet-stream\r\n"
      "Content-Encoding: gzip\r\n"
      "\r\n"
      "\x1f\x8b\x08\x00\r\n--\r\n--e40e\x00\xff\r\r\n-\r\n--e40e2a4be5b3a5c1e5a6b6f8ce3bd2a"
      "\r\n--e40e2a4be5b3a5c1e5a6b6f8ce3bd2ab--";
  static const char want[] =
      "{Content-Type=application/json;|"
      "{\"_id\":\"doc\",\"_rev\":\"1-abc\",\"_attachments\":{\"a.txt\":{\"content_type\":\"text/plain\","
      "\"length\":5,\"follows\":true},\"b.bin\":{\"content_type\":\"application/octet-stream\","
      "\"encoding\":\"gzip\",\"length\":24,\"follows\":true}}}}"
      "{Content-Disposition=attachment; filename=\"a.txt\";Content-Type=text/plain;Content-Length=5;|hello}"
      "{Content-Disposition=attachment; filename=\"b.bin\";Content-Type=application/octet-stream;"
      "Content-Encoding=gzip;|"
      "\x1f\x8b\x08\x00\r\n--\r\n--e40e\x00\xff\r\r\n-\r\n--e40e2a4be5b3a5c1e5a6b6f8ce3bd2a}";
  char *log;
  ASSERT_OK(run_all("e40e2a4be5b3a5c1e5a6b6f8ce3bd2ab", body, sizeof body - 1, 16384, 0, &log));
  dv_free(log);
  /* the log holds a NUL (from the binary part): compare it whole */
  logger l;
  ASSERT_OK(run_with("e40e2a4be5b3a5c1e5a6b6f8ce3bd2ab", body, sizeof body - 1, ONE_SHOT, 0, 16384, 0, &l));
  ASSERT_MEM_EQ(l.b.p, l.b.len - 1, want, sizeof want - 1);
  buf_free(&l.b);
}

TEST(multipart_form_data) {
  static const char body[] =
      "------WebKitFormBoundary7MA4YWxkTrZu0gW\r\n"
      "Content-Disposition: form-data; name=\"_rev\"\r\n"
      "\r\n"
      "1-967a00dff5e02add41819138abb3284d\r\n"
      "------WebKitFormBoundary7MA4YWxkTrZu0gW\r\n"
      "Content-Disposition: form-data; name=\"_attachments\"; filename=\"x.txt\"\r\n"
      "Content-Type: text/plain\r\n"
      "\r\n"
      "line 1\r\nline 2\r\n\r\n"
      "------WebKitFormBoundary7MA4YWxkTrZu0gW--\r\n";
  CHECK("----WebKitFormBoundary7MA4YWxkTrZu0gW", body, 0,
        "{Content-Disposition=form-data; name=\"_rev\";|1-967a00dff5e02add41819138abb3284d}"
        "{Content-Disposition=form-data; name=\"_attachments\"; filename=\"x.txt\";"
        "Content-Type=text/plain;|line 1\r\nline 2\r\n}");
}

TEST(multipart_empty_parts) {
  CHECK("b", "--b\r\n\r\n\r\n--b--", 0, "{|}");                       /* no headers, no data */
  CHECK("b", "--b\r\n\r\n--b--", 0, "{|}");                           /* the CRLF is shared */
  CHECK("b", "--b\r\nA: x\r\n\r\n--b--", 0, "{A=x;|}");               /* RFC 2046: [CRLF *OCTET] */
  CHECK("b", "--b\r\nA: x\r\n\r\n\r\n--b\r\n\r\n\r\n--b--", 0, "{A=x;|}{|}");
  CHECK("b", "--b\r\n\r\n\r\n\r\n--b--", 0, "{|\r\n}");               /* one CRLF of data */
  CHECK("b", "--b--", 0, "");                                         /* no part at all */
  CHECK("b", "--b\r\nA: x\r\n\r\n--bx\r\n--b--", 0, "{A=x;|--bx}");
}

TEST(multipart_preamble_epilogue) {
  CHECK("b", "This is the preamble.\r\n--bnot\r\n--b\r\n\r\nx\r\n--b--\r\nepilogue\r\n--b\r\n\r\ny", 0,
        "{|x}");
  CHECK("b", "\r\n--b\r\n\r\nx\r\n--b--", 0, "{|x}");
  CHECK("b", "--bb\r\n-b\r\n--b\r\n\r\nx\r\n--b--trailing", 0, "{|x}");
  CHECK("b", "\r\r\n--b\r\n\r\nx\r\n--b--", 0, "{|x}");
  CHECK("b", "--b \r\n\r\nx\r\n--b--", 0, "{|x}");
}

TEST(multipart_transport_padding) {
  CHECK("b", "--b \t \r\nA: 1\r\n\r\nx\r\n--b\t\r\n\r\ny\r\n--b--  \r\n", 0, "{A=1;|x}{|y}");
  CHECK("b", "--b\nA: 1\n\nx\r\n--b  \n\ny\r\n--b--", 0, "{A=1;|x}{|y}"); /* bare LF */
  /* padding then something else: not a delimiter, data */
  CHECK("b", "--b\r\n\r\nx\r\n--b  y\r\n--b -\r\n--b--", 0, "{|x\r\n--b  y\r\n--b -}");
  /* more padding than MP_MAX_PADDING: not a delimiter */
  char body[600];
  int n = snprintf(body, sizeof body, "--b\r\n\r\nx\r\n--b%*s\r\n\r\ny\r\n--b--", MP_MAX_PADDING + 1, "");
  char *log;
  ASSERT_OK(run_all("b", body, (size_t)n, 100, 0, &log));
  ASSERT_EQ(strlen(log), 3 + 5 + MP_MAX_PADDING + 1 + 5 + 1); /* "{|x" "\r\n--b" padding "\r\n\r\ny" "}" */
  dv_free(log);
  n = snprintf(body, sizeof body, "--b\r\n\r\nx\r\n--b%*s\r\n\r\ny\r\n--b--", MP_MAX_PADDING, "");
  ASSERT_OK(run_all("b", body, (size_t)n, 100, 0, &log));
  ASSERT_STR_EQ(log, "{|x}{|y}");
  dv_free(log);
}

TEST(multipart_boundary_like_data) {
  /* every prefix of the delimiter, and near misses after a full one */
  CHECK("bnd", "--bnd\r\n\r\n\r\r\n\r\n-\r\n--\r\n--b\r\n--bn\r\n--bnx\r\n--bnd-x\r\n--bndd"
        "\r\n--bnd \r\r\n--bnd\r\r\n--bnd--", 0,
        "{|\r\r\n\r\n-\r\n--\r\n--b\r\n--bn\r\n--bnx\r\n--bnd-x\r\n--bndd\r\n--bnd \r\r\n--bnd\r}");
  /* a lone CR or LF around the delimiter */
  CHECK("b", "--b\r\n\r\n\n--b\r--b\r\n--b--", 0, "{|\n--b\r--b}");
  /* the boundary is case-sensitive */
  CHECK("Ab", "--Ab\r\n\r\n\r\n--ab\r\n--AB\r\n--Ab--", 0, "{|\r\n--ab\r\n--AB}");
  /* data after the empty line that starts like a delimiter */
  CHECK("b", "--b\r\n\r\n--x\r\n--b--", 0, "{|--x}");
  CHECK("b", "--b\r\n\r\n-\r\n--b--", 0, "{|-}");
  CHECK("b", "--b\r\nA:\r\n\r\n--b-\r\n--b--", 0, "{A=;|--b-}");
}

TEST(multipart_headers) {
  /* folding, trimming, names as sent, empty values */
  CHECK("b", "--b\r\nX-Long: one\r\n  two\r\n\tthree \r\nEmpty:\r\nx-CASE:   v  \r\nF: \r\n \r\n  z\r\n\r\n--b--", 0,
        "{X-Long=one two three;Empty=;x-CASE=v;F=z;|}");
  CHECK("b", "--b\nA: 1\r\nB: 2\n\r\nd\r\n--b--", 0, "{A=1;B=2;|d}");
  CHECK("b", "--b\r\nA: a:b: c\r\n\r\n\r\n--b--", 0, "{A=a:b: c;|}");
}

TEST(multipart_large_part) {
  /* 16 MiB of data through a parser with no part buffer: pieces are handed
   * over as they come, nothing is held back but a delimiter prefix */
  size_t n = 16u << 20, chunk = 65536;
  uint8_t *buf = malloc(chunk);
  ASSERT(buf != NULL);
  for (size_t i = 0; i < chunk; i++) buf[i] = (uint8_t)(i % 7 == 0 ? '\r' : i % 5 == 0 ? '-' : 'a' + i % 26);
  logger l;
  memset(&l, 0, sizeof l);
  size_t total = 0;
  mp_callbacks cb = {0};
  cb.data = on_data;
  mp_parser *p;
  ASSERT_OK(mp_new("zz", &cb, &l, 100, 0, &p));
  ASSERT_OK(mp_feed(p, (const uint8_t *)"--zz\r\n\r\n", 8));
  for (size_t i = 0; i < n; i += chunk) {
    ASSERT_OK(mp_feed(p, buf, chunk));
    total += l.b.len;
    buf_reset(&l.b);
  }
  ASSERT_OK(mp_feed(p, (const uint8_t *)"\r\n--zz--", 8));
  total += l.b.len;
  ASSERT_OK(mp_finish(p));
  ASSERT_EQ(total, n);
  mp_free(p);
  buf_free(&l.b);
  free(buf);
}

/* ---- malformed bodies and limits ------------------------------------------ */

TEST(multipart_malformed) {
  /* truncated: no closing delimiter, wherever the body stops */
  static const char full[] = "pre\r\n--b \r\nA: 1\r\n\r\nxy\r\n--b--";
  for (size_t k = 0; k < sizeof full - 1; k++) {
    char *log;
    ASSERTF(run_all("b", full, k, 100, 0, &log) == DV_EINVAL, "cut at %zu", k);
    dv_free(log);
  }
  CHECK("b", "", DV_EINVAL, "");
  CHECK("b", "no delimiter at all", DV_EINVAL, "");
  CHECK("b", "--b\r\n\r\nx\r\n--b", DV_EINVAL, "{|x");
  CHECK("b", "--b\r\n\r\nx\r\n--b-", DV_EINVAL, "{|x");
  CHECK("b", "--b\r\n\r\nx\r\n--b\r\n", DV_EINVAL, "{|x}{");
  /* bad header lines */
  CHECK("b", "--b\r\nno colon here\r\n\r\nx\r\n--b--", DV_EINVAL, "{");
  CHECK("b", "--b\r\n: no name\r\n\r\nx\r\n--b--", DV_EINVAL, "{");
  CHECK("b", "--b\r\nA B: space\r\n\r\nx\r\n--b--", DV_EINVAL, "{");
  CHECK("b", "--b\r\nA : space\r\n\r\nx\r\n--b--", DV_EINVAL, "{");
  CHECK("b", "--b\r\n folded: first\r\n\r\nx\r\n--b--", DV_EINVAL, "{");
  CHECK("b", "--b\r\nA: b\rc\r\n\r\nx\r\n--b--", DV_EINVAL, "{");
  CHECK("b", "--b\r\nA: b\x00" "c\r\n\r\nx\r\n--b--", DV_EINVAL, "{");
  CHECK("b", "--b\r\n\rX\r\n--b--", DV_EINVAL, "{");
  CHECK("b", "--b\r\nA: 1\r\n\rX\r\n--b--", DV_EINVAL, "{");
  /* the block is parsed at its end: the headers before the bad line were handed out */
  CHECK("b", "--b\r\n\r\nok\r\n--b\r\nA: 1\r\nbad\r\n\r\nx\r\n--b--", DV_EINVAL, "{|ok}{A=1;");
  /* a bad header after the parse ended is not looked at */
  CHECK("b", "--b\r\n\r\nok\r\n--b--\r\n--b\r\nbad\r\n\r\n", 0, "{|ok}");
}

TEST(multipart_header_limit) {
  /* the first part's header lines are 6 + 8 bytes ("A: 1\r\n", "BB: 22\r\n") */
  static const char body[] = "--b\r\nA: 1\r\nBB: 22\r\n\r\nx\r\n--b\r\nC: 3\r\n\r\ny\r\n--b--";
  const size_t hb = 6 + 8;
  char *log;
  ASSERT_OK(run_all("b", body, sizeof body - 1, hb, 0, &log));
  ASSERT_STR_EQ(log, "{A=1;BB=22;|x}{C=3;|y}");
  dv_free(log);
  ASSERT_EQ(run_all("b", body, sizeof body - 1, hb - 1, 0, &log), DV_EVALUE_TOO_LARGE);
  ASSERT_STR_EQ(log, "{");
  dv_free(log);
  /* a line that never ends is refused at the limit, not buffered */
  ASSERT_EQ(run_all("b", "--b\r\nAAAAAAAAAAAAAAAAAAAAAAAA", 27, 10, 0, &log), DV_EVALUE_TOO_LARGE);
  dv_free(log);
  /* no headers at all fit in a limit of 0 */
  ASSERT_OK(run_all("b", "--b\r\n\r\nx\r\n--b--", 15, 0, 0, &log));
  ASSERT_STR_EQ(log, "{|x}");
  dv_free(log);
  ASSERT_EQ(run_all("b", "--b\r\nA:1\r\n\r\nx\r\n--b--", 20, 0, 0, &log), DV_EVALUE_TOO_LARGE);
  dv_free(log);
  /* folded headers count as sent */
  ASSERT_OK(run_all("b", "--b\r\nA: 1\r\n 2\r\n\r\n--b--", 22, 10, 0, &log));
  ASSERT_STR_EQ(log, "{A=1 2;|}");
  dv_free(log);
  ASSERT_EQ(run_all("b", "--b\r\nA: 1\r\n 2\r\n\r\n--b--", 22, 9, 0, &log), DV_EVALUE_TOO_LARGE);
  dv_free(log);
}

TEST(multipart_part_limit) {
  static const char body[] = "--b\r\n\r\n1\r\n--b\r\n\r\n2\r\n--b\r\n\r\n3\r\n--b--";
  char *log;
  ASSERT_OK(run_all("b", body, sizeof body - 1, 100, 3, &log));
  ASSERT_STR_EQ(log, "{|1}{|2}{|3}");
  dv_free(log);
  ASSERT_EQ(run_all("b", body, sizeof body - 1, 100, 2, &log), DV_EVALUE_TOO_LARGE);
  ASSERT_STR_EQ(log, "{|1}{|2}"); /* the second part ended before the third was refused */
  dv_free(log);
  ASSERT_EQ(run_all("b", body, sizeof body - 1, 100, 1, &log), DV_EVALUE_TOO_LARGE);
  ASSERT_STR_EQ(log, "{|1}");
  dv_free(log);
  ASSERT_OK(run_all("b", body, sizeof body - 1, 100, 0, &log)); /* 0: no limit */
  dv_free(log);
  /* the closing delimiter is no part */
  ASSERT_OK(run_all("b", "--b\r\n\r\n1\r\n--b--", 15, 100, 1, &log));
  dv_free(log);
}

/* ---- chunking ------------------------------------------------------------- */

TEST(multipart_chunking) {
  /* random bodies built from delimiter fragments: every split agrees with
   * one shot (run_all checks byte by byte and random chunk sizes) */
  static const char *frag[] = {"\r\n--q", "\r\n", "--q", "\r", "\n", "-", " ", "q", "A: 1\r\n",
                               "\r\n--q--", "\r\n--q\r\n", "\r\n--q \r\n", "x", "\x00", ":", "\t"};
  unsigned seed = 12345;
  char body[512];
  for (int t = 0; t < 400; t++) {
    size_t n = 0;
    if (t % 2) n += (size_t)snprintf(body, sizeof body, "--q\r\n");
    while (n < 300) {
      seed = seed * 1103515245u + 12345u;
      const char *f = frag[(seed >> 16) % (sizeof frag / sizeof frag[0])];
      size_t fl = *f ? strlen(f) : 1;
      memcpy(body + n, f, fl);
      n += fl;
    }
    char *log;
    int rc = run_all("q", body, n, 64, 0, &log);
    ASSERT(rc == 0 || rc == DV_EINVAL || rc == DV_EVALUE_TOO_LARGE);
    dv_free(log);
  }
}

/* ---- callbacks and allocation --------------------------------------------- */

TEST(multipart_callback_abort) {
  static const char body[] = "--b\r\nA: 1\r\nB: 2\r\n\r\nxyz\r\n--b\r\n\r\nw\r\n--b--";
  /* callbacks in one-shot order: { A B | xyz } { | w } */
  const int ncalls = 10;
  for (int at = 1; at <= ncalls; at++) {
    logger l;
    memset(&l, 0, sizeof l);
    buf_init(&l.b);
    l.abort_at = at;
    mp_parser *p;
    ASSERT_OK(mp_new("b", &CB, &l, 100, 0, &p));
    ASSERT_EQ(mp_feed(p, (const uint8_t *)body, sizeof body - 1), -77);
    ASSERT_EQ(l.calls, at);
    /* sticky: nothing more is called */
    ASSERT_EQ(mp_feed(p, (const uint8_t *)body, sizeof body - 1), -77);
    ASSERT_EQ(mp_finish(p), -77);
    ASSERT_EQ(l.calls, at);
    mp_free(p);
    buf_free(&l.b);
  }
  /* with no abort the count is right */
  logger l;
  ASSERT_OK(run_with("b", body, sizeof body - 1, ONE_SHOT, 0, 100, 0, &l));
  ASSERT_STR_EQ((char *)l.b.p, "{A=1;B=2;|xyz}{|w}");
  buf_free(&l.b);
  /* NULL callbacks, and a NULL table */
  mp_callbacks none = {0};
  mp_parser *p;
  ASSERT_OK(mp_new("b", &none, NULL, 100, 0, &p));
  ASSERT_OK(mp_feed(p, (const uint8_t *)body, sizeof body - 1));
  ASSERT_OK(mp_finish(p));
  mp_free(p);
  ASSERT_OK(mp_new("b", NULL, NULL, 100, 0, &p));
  ASSERT_OK(mp_feed(p, (const uint8_t *)body, sizeof body - 1));
  ASSERT_OK(mp_feed(p, (const uint8_t *)"ignored", 7));
  ASSERT_OK(mp_feed(p, NULL, 0));
  ASSERT_OK(mp_finish(p));
  mp_free(p);
}

TEST(multipart_alloc_fail) {
  mp_parser *p = NULL;
  dv_alloc_fail_after(0);
  ASSERT_EQ(mp_new("b", &CB, NULL, 16384, 0, &p), DV_ENOMEM);
  dv_alloc_fail_after(-1);
  ASSERT(p == NULL);
  ASSERT_EQ(mp_new("b", &CB, NULL, (size_t)-1, 0, &p), DV_ENOMEM);
  ASSERT(p == NULL);
  /* mp_new is the only allocation: a parse allocates nothing */
  ASSERT_OK(mp_new("b", NULL, NULL, 16384, 0, &p));
  dv_alloc_fail_after(0);
  ASSERT_OK(mp_feed(p, (const uint8_t *)"--b\r\nA: 1\r\n\r\nx\r\n--b--", 22));
  ASSERT_OK(mp_finish(p));
  dv_alloc_fail_after(-1);
  mp_free(p);
}

TEST(multipart_fuzz_smoke) { test_fuzz_smoke("fuzz_multipart"); }
