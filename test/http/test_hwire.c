/* Tests for src/http/hwire: the request-framing table — every shape of
 * lengths, transfer codings, folding, chunk syntax and head size, with the
 * status the server answers (0: accepted, the framing understood) — fed
 * whole and one byte at a time; the head-in-progress flag the head deadline
 * uses; and the fuzz target's smoke run. */
#include <stdint.h>

#include "http/hwire.h"
#include "test.h"
#include "util/err.h"

TEST(hwire_fuzz_smoke) { test_fuzz_smoke("fuzz_hwire"); }

#define H "PUT /db/d HTTP/1.1\r\nHost: x\r\n"

static const struct {
  const char *name;
  const char *in;
  int status; /* 0 = accepted */
} shapes[] = {
    /* lengths */
    {"no body", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0},
    {"Content-Length", H "Content-Length: 7\r\n\r\n{\"a\":1}", 0},
    {"Content-Length with spaces", H "Content-Length:   7 \t\r\n\r\n{\"a\":1}", 0},
    {"Content-Length 0", H "Content-Length: 0\r\n\r\n", 0},
    {"the same Content-Length twice", H "Content-Length: 7\r\nContent-Length: 7\r\n\r\n{\"a\":1}", 0},
    {"two different Content-Lengths", H "Content-Length: 7\r\nContent-Length: 2\r\n\r\n{\"a\":1}", 400},
    {"Content-Length list", H "Content-Length: 7, 7\r\n\r\n{\"a\":1}", 400},
    {"Content-Length sign", H "Content-Length: +7\r\n\r\n{\"a\":1}", 400},
    {"Content-Length hex", H "Content-Length: 0x7\r\n\r\n{\"a\":1}", 400},
    {"Content-Length empty", H "Content-Length: \r\n\r\n", 400},
    {"Content-Length 19 digits", H "Content-Length: 1000000000000000000\r\n\r\n", 400},
    {"Content-Length 18 digits", H "Content-Length: 999999999999999999\r\n\r\n", 0},
    /* transfer codings */
    {"chunked", H "Transfer-Encoding: chunked\r\n\r\n7\r\n{\"a\":1}\r\n0\r\n\r\n", 0},
    {"Chunked in capitals", H "Transfer-Encoding: CHUNKED\r\n\r\n7\r\n{\"a\":1}\r\n0\r\n\r\n", 0},
    {"xchunked with Content-Length", H "Transfer-Encoding: xchunked\r\nContent-Length: 7\r\n\r\n{\"a\":1}", 400},
    {"xchunked", H "Transfer-Encoding: xchunked\r\n\r\n{\"a\":1}", 501},
    {"gzip, chunked", H "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
    {"chunked, identity", H "Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 501},
    {"identity", H "Transfer-Encoding: identity\r\n\r\n", 501},
    {"chunked with odd spaces", H "Transfer-Encoding:   chunked \r\n\r\n0\r\n\r\n", 400},
    {"chunked, chunked", H "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400},
    {"chunked twice", H "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
    {"chunked;param", H "Transfer-Encoding: chunked;x=1\r\n\r\n0\r\n\r\n", 400},
    {"empty Transfer-Encoding", H "Transfer-Encoding: \r\n\r\n", 400},
    {"Transfer-Encoding and Content-Length", H "Content-Length: 30\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
    {"Content-Length after Transfer-Encoding", H "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400},
    /* folding and header syntax */
    {"folded header", H "Content-Length: 7\r\nX-Foo: bar\r\n Transfer-Encoding: chunked\r\n\r\n{\"a\":1}", 400},
    {"folded with a tab", H "X-Foo: bar\r\n\tbaz\r\n\r\n", 400},
    {"folded Transfer-Encoding", H "Content-Length: 7\r\nTransfer-Encoding:\r\n chunked\r\n\r\n{\"a\":1}", 400},
    {"space before colon", H "Content-Length : 7\r\n\r\n{\"a\":1}", 400},
    {"no colon", H "Content-Length 7\r\n\r\n", 400},
    {"name not a token", H "X(a): 1\r\n\r\n", 400},
    {"bare CR in a value", H "X-A: a\rb\r\n\r\n", 400},
    {"NUL in a value", H "X-A: a\0b\r\n\r\n", 400},
    {"bare LF line ends", "GET / HTTP/1.1\nHost: x\nContent-Length: 2\n\nab", 0},
    {"empty lines before the request line", "\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 0},
    {"pipelined", "GET / HTTP/1.1\r\nHost: x\r\n\r\n" H "Content-Length: 1\r\n\r\nxGET / HTTP/1.1\r\n\r\n", 0},
    {"smuggled after a body", H "Content-Length: 1\r\n\r\nxGET / HTTP/1.1\r\nA: 1\r\nA : 2\r\n\r\n", 400},
    /* chunk syntax */
    {"chunk extension", H "Transfer-Encoding: chunked\r\n\r\n7;a=b;c\r\n{\"a\":1}\r\n0;x\r\n\r\n", 0},
    {"chunk bare LF", H "Transfer-Encoding: chunked\r\n\r\n7\n{\"a\":1}\n0\n\n", 0},
    {"trailers", H "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\n", 0},
    {"folded trailer", H "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n 2\r\n\r\n", 400},
    {"16 hex digits", H "Transfer-Encoding: chunked\r\n\r\n0000000000000001\r\nx\r\n0\r\n\r\n", 0},
    {"17 hex digits", H "Transfer-Encoding: chunked\r\n\r\n00000000000000001\r\nx\r\n0\r\n\r\n", 400},
    {"no size", H "Transfer-Encoding: chunked\r\n\r\n;x\r\n", 400},
    {"size not hex", H "Transfer-Encoding: chunked\r\n\r\nz\r\n", 400},
    {"space after size", H "Transfer-Encoding: chunked\r\n\r\n7 \r\n{\"a\":1}\r\n0\r\n\r\n", 400},
    {"data longer than its size", H "Transfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", 400},
    {"CR without LF after a size", H "Transfer-Encoding: chunked\r\n\r\n2\rab\r\n0\r\n\r\n", 400},
};

static int status_of(int rc) { return rc ? dv_err_http(rc) : 0; }

TEST(hwire_table) {
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    size_t n = strlen(shapes[i].in);
    if (strstr(shapes[i].name, "NUL")) n += 1 + strlen(shapes[i].in + n + 1); /* the literal holds a NUL */
    hwire w;
    hwire_init(&w, 65536);
    int whole = status_of(hwire_feed(&w, (const uint8_t *)shapes[i].in, n));
    ASSERTF(whole == shapes[i].status, "%s: %d, want %d", shapes[i].name, whole, shapes[i].status);
    hwire_init(&w, 65536);
    int rc = 0;
    for (size_t k = 0; k < n && !rc; k++) rc = hwire_feed(&w, (const uint8_t *)shapes[i].in + k, 1);
    ASSERTF(status_of(rc) == whole, "%s byte by byte: %d, want %d", shapes[i].name, status_of(rc), whole);
    if (!rc) ASSERTF(!w.in_head, "%s: a head left open", shapes[i].name);
  }
}

/* The long chunk extension, the head limits (414 for the request
 * line, 431 for the head and for trailers), and the in_head flag. */
TEST(hwire_limits) {
  static uint8_t big[200000];
  hwire w;
  const char *h = H "Transfer-Encoding: chunked\r\n\r\n7;";
  hwire_init(&w, 65536);
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)h, strlen(h)));
  memset(big, 'e', sizeof big);
  ASSERT_EQ(hwire_feed(&w, big, 100000), DV_EHTTP_CHUNK_LINE);
  ASSERT_EQ(hwire_feed(&w, (const uint8_t *)"\r\n", 2), DV_EHTTP_CHUNK_LINE); /* sticky */
  /* a chunk line just at the limit passes */
  hwire_init(&w, 65536);
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)h, strlen(h)));
  ASSERT_OK(hwire_feed(&w, big, HWIRE_CHUNK_LINE - 3)); /* "7;" + e… + CR = the limit */
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)"\r\n{\"a\":1}\r\n0\r\n\r\n", 16));
  ASSERT(!w.in_head && w.heads == 1);
  /* the request line alone past the limit: 414; the head: 431 */
  hwire_init(&w, 1000);
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)"GET /", 5));
  ASSERT(w.in_head);
  memset(big, 'a', 2000);
  ASSERT_EQ(hwire_feed(&w, big, 2000), DV_EHTTP_URI_LONG);
  hwire_init(&w, 1000);
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)"GET / HTTP/1.1\r\nX: ", 19));
  ASSERT_EQ(hwire_feed(&w, big, 2000), DV_EHTTP_HEAD_LARGE);
  hwire_init(&w, 1000); /* a head exactly at the limit passes */
  size_t pre = strlen("GET / HTTP/1.1\r\nX: "), post = 4;
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)"GET / HTTP/1.1\r\nX: ", pre));
  ASSERT_OK(hwire_feed(&w, big, 1000 - pre - post));
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)"\r\n\r\n", post));
  ASSERT(!w.in_head && w.heads == 1);
  hwire_init(&w, 1000); /* endless empty lines are a head too */
  memset(big, '\n', 2000);
  ASSERT_EQ(hwire_feed(&w, big, 2000), DV_EHTTP_HEAD_LARGE);
  hwire_init(&w, 1000); /* trailers count as a head */
  const char *t = H "Transfer-Encoding: chunked\r\n\r\n0\r\nX: ";
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)t, strlen(t)));
  ASSERT(w.in_head);
  memset(big, 'a', 2000);
  ASSERT_EQ(hwire_feed(&w, big, 2000), DV_EHTTP_HEAD_LARGE);
  /* in_head: set from a head's first byte until it ends, not during bodies */
  hwire_init(&w, 65536);
  ASSERT(!w.in_head);
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)"P", 1));
  ASSERT(w.in_head);
  const char *rest = "UT /db/d HTTP/1.1\r\nContent-Length: 3\r\n\r\nab";
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)rest, strlen(rest)));
  ASSERT(!w.in_head && w.heads == 1);
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)"c", 1));
  ASSERT(!w.in_head);
  ASSERT_OK(hwire_feed(&w, (const uint8_t *)"\r\n", 2));
  ASSERT(w.in_head);
}

/* hwire_in_body: from the end of a head that announces a body to its last
 * byte, for Content-Length and chunked bodies (trailers are a head); never
 * for a head without a body. The server's request_body_timeout runs on it. */
TEST(hwire_in_body) {
  hwire w;
#define FEED(s) ASSERT_OK(hwire_feed(&w, (const uint8_t *)(s), strlen(s)))
  hwire_init(&w, 8192);
  FEED("PUT /db/d HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n");
  ASSERT(!hwire_in_body(&w) && w.in_head);
  FEED("\r\n");
  ASSERT(hwire_in_body(&w) && !w.in_head);
  FEED("{}");
  ASSERT(hwire_in_body(&w));
  FEED("\n");
  ASSERT(!hwire_in_body(&w));
  FEED("GET / HTTP/1.1\r\nHost: x\r\n\r\n"); /* no body */
  ASSERT(!hwire_in_body(&w) && !w.in_head);
  FEED("POST /db HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  ASSERT(hwire_in_body(&w));
  FEED("2\r\n{}\r\n");
  ASSERT(hwire_in_body(&w));
  FEED("0\r\n");
  ASSERT(!hwire_in_body(&w) && w.in_head); /* the trailers: a head */
  FEED("\r\n");
  ASSERT(!hwire_in_body(&w) && !w.in_head);
  FEED("PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  ASSERT(!hwire_in_body(&w));
  const char *bad = "PUT /x HTTP/1.1\r\nContent-Length: 9\r\nContent-Length: 8\r\n\r\n";
  ASSERT_EQ(hwire_feed(&w, (const uint8_t *)bad, strlen(bad)), DV_EHTTP_LENGTH);
  ASSERT(!hwire_in_body(&w)); /* refused: nothing arrives any more */
#undef FEED
}
