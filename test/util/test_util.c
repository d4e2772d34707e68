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
  /* every row: a negative code and a name no other row has (dv_err_name
   * finds it back), a real HTTP error status, an error name and a reason;
   * and no two rows with one (status, error, reason): a row says
   * something the others do not */
  static const struct {
    int code, http;
    const char *name, *couch, *reason;
  } rows[] = {
#define ROW(name, code, http, err, reason, cls) {code, http, #name, err, reason},
      DV_ERR_MAP(ROW)
#undef ROW
  };
  size_t n = sizeof rows / sizeof rows[0];
  for (size_t i = 0; i < n; i++) {
    ASSERTF(rows[i].code < 0, "%s: code %d", rows[i].name, rows[i].code);
    ASSERTF(rows[i].http >= 400 && rows[i].http <= 599, "%s: status %d", rows[i].name, rows[i].http);
    ASSERTF(rows[i].couch[0] && rows[i].reason[0], "%s: empty error or reason", rows[i].name);
    ASSERT_STR_EQ(dv_err_name(rows[i].code), rows[i].name);
    for (size_t j = i + 1; j < n; j++) {
      ASSERTF(rows[i].code != rows[j].code, "%s and %s share code %d", rows[i].name, rows[j].name, rows[i].code);
      ASSERTF(strcmp(rows[i].name, rows[j].name), "two rows named %s", rows[i].name);
      ASSERTF(rows[i].http != rows[j].http || strcmp(rows[i].couch, rows[j].couch) ||
                  strcmp(rows[i].reason, rows[j].reason),
              "%s and %s answer the same", rows[i].name, rows[j].name);
    }
  }
  /* rows made for one CouchDB answer keep its (status, error) pair */
  ASSERT_EQ(dv_err_http(DV_EMISSING_REV), 409);
  ASSERT_STR_EQ(dv_err_couch(DV_EMISSING_REV), "not_found");
  ASSERT_EQ(dv_err_http(DV_ERANGE_UNSATISFIABLE), 416);
  ASSERT_EQ(dv_err_http(DV_EDB_NOT_FOUND), 404);
  ASSERT_STR_EQ(dv_err_couch(DV_EDB_NOT_FOUND), "db_not_found");
  ASSERT_EQ(dv_err_http(DV_EREPL_UNREACHABLE), 500);
  ASSERT_STR_EQ(dv_err_couch(DV_EREPL_UNREACHABLE), "db_not_found");
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
