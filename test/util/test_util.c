/* Tests for src/util: the error table, dv_buf, the allocation hook. */
#include "test.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/err.h"

TEST(err_table) {
  ASSERT_EQ(DV_ENOT_COMMITTED, -1020);
  ASSERT_EQ(dv_err_http(DV_ENOT_COMMITTED), 409);
  ASSERT(dv_err_retryable(DV_ENOT_COMMITTED));
  ASSERT(dv_err_retryable(DV_ECOMMIT_UNKNOWN));
  ASSERT(dv_err_maybe_committed(DV_ECOMMIT_UNKNOWN));
  ASSERT(!dv_err_maybe_committed(DV_ENOT_COMMITTED));
  ASSERT(dv_err_retryable(DV_ETXN_TOO_OLD));
  ASSERT(!dv_err_retryable(DV_ETIMED_OUT));
  ASSERT(!dv_err_retryable(DV_EKEY_TOO_LARGE));
  ASSERT_STR_EQ(dv_err_name(DV_EVALUE_TOO_LARGE), "VALUE_TOO_LARGE");
  ASSERT_STR_EQ(dv_err_name(12345), "UNKNOWN");
  ASSERT_EQ(dv_err_http(-99999), 500);
  ASSERT_STR_EQ(dv_err_couch(DV_EJSON), "bad_request");
}

TEST(buf_grow) {
  dv_buf b = DV_BUF_INIT;
  for (int i = 0; i < 10000; i++) buf_putc(&b, (uint8_t)('a' + i % 26));
  ASSERT_EQ(b.len, 10000);
  ASSERT_EQ(b.p[b.len], 0);
  buf_printf(&b, "%d-%s", 42, "x");
  ASSERT_EQ(b.len, 10004);
  ASSERT_MEM_EQ(b.p + 10000, 4, "42-x", 4);
  char big[1000];
  memset(big, 'z', sizeof big);
  buf_printf(&b, "%.*s", 999, big);
  ASSERT_EQ(b.len, 11003);
  ASSERT_OK(buf_error(&b));
  size_t n;
  uint8_t *p = buf_detach(&b, &n);
  ASSERT_EQ(n, 11003);
  ASSERT(b.p == NULL && b.len == 0);
  dv_free(p);
  buf_free(&b);
}

TEST(buf_empty_append) {
  dv_buf b = DV_BUF_INIT;
  buf_append(&b, "", 0);          /* nothing appended, but p is valid */
  ASSERT(b.p != NULL);
  ASSERT_EQ(b.len, 0);
  ASSERT_EQ(b.p[0], 0);
  ASSERT(buf_extend(&b, 0) != NULL);
  buf_free(&b);
}

TEST(alloc_fail) {
  dv_buf b = DV_BUF_INIT;
  dv_alloc_fail_after(0);
  buf_puts(&b, "hello");
  ASSERT_EQ(buf_error(&b), DV_ENOMEM);
  buf_puts(&b, "again");          /* sticky: no crash, no growth */
  ASSERT_EQ(b.len, 0);
  dv_alloc_fail_after(-1);
  buf_reset(&b);
  buf_puts(&b, "ok");
  ASSERT_OK(buf_error(&b));
  ASSERT_EQ(b.len, 2);
  buf_free(&b);
  dv_alloc_fail_after(1);         /* first succeeds, second fails */
  void *a = dv_malloc(8), *c = dv_malloc(8);
  ASSERT(a != NULL);
  ASSERT(c == NULL);
  dv_alloc_fail_after(-1);
  dv_free(a);
}
