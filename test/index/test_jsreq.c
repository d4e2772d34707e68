/* test_jsreq.c — CouchDB's request object (src/index/jsreq.h): the exact
 * text for a GET _changes and a form POST to an update handler, the rules
 * CouchDB applies while building it (json_query_keys, repeated names,
 * mochiweb's Cookie and form parsers, methods it has no atom for), and the
 * fuzzer's smoke run.
 */
#include "index/jsreq.h"
#include "test.h"

static const char *build(const jsreq *q, dv_buf *b) {
  buf_reset(b);
  ASSERT_OK(jsreq_build(q, b));
  buf_putc(b, 0);
  return (const char *)b->p;
}

#define PAIR(k, v) {k, sizeof k - 1, v, sizeof v - 1}

TEST(jsreq_changes_get) {
  static const char *seg[] = {"db", "_changes"};
  static const size_t segl[] = {2, 8};
  jsreq_pair qp[] = {PAIR("filter", "dd/f"), PAIR("type", "a"), PAIR("since", "0"), PAIR("type", "b")};
  jsreq_pair hp[] = {PAIR("Host", "localhost:5984"), PAIR("Accept", "a"), PAIR("accept", "b"),
                     PAIR("Cookie", " AuthSession=abc; $Path=\"/\"; q=\"x\\\"y\" , z")};
  static const char *roles[] = {"_admin"};
  jsreq q = {0};
  q.info = "{\"db_name\":\"db\"}";
  q.info_len = strlen(q.info);
  q.uuid = "00000000000000000000000000000001";
  q.method = "GET";
  q.req_path = seg, q.req_path_len = segl, q.n_req_path = 2;
  q.raw_path = "/db/_changes?filter=dd%2Ff", q.raw_path_len = strlen(q.raw_path);
  q.query = qp, q.n_query = 4;
  q.headers = hp, q.n_headers = 4;
  q.peer = "10.0.0.1";
  q.db = "db", q.user = "adm", q.roles = roles, q.n_roles = 1;
  q.sec = "{\"admins\":{}}", q.sec_len = strlen(q.sec);
  dv_buf b;
  buf_init(&b);
  ASSERT_STR_EQ(build(&q, &b),
                "{\"info\":{\"db_name\":\"db\"},\"uuid\":\"00000000000000000000000000000001\",\"id\":null,"
                "\"method\":\"GET\",\"requested_path\":[\"db\",\"_changes\"],\"path\":[\"db\",\"_changes\"],"
                "\"raw_path\":\"/db/_changes?filter=dd%2Ff\","
                "\"query\":{\"filter\":\"dd/f\",\"type\":\"b\",\"since\":\"0\"},"
                "\"headers\":{\"Host\":\"localhost:5984\",\"Accept\":\"a, b\","
                "\"Cookie\":\" AuthSession=abc; $Path=\\\"/\\\"; q=\\\"x\\\\\\\"y\\\" , z\"},"
                "\"body\":\"undefined\",\"peer\":\"10.0.0.1\",\"form\":{},"
                "\"cookie\":{\"AuthSession\":\"abc\",\"q\":\"x\\\"y\",\"z\":\"\"},"
                "\"userCtx\":{\"db\":\"db\",\"name\":\"adm\",\"roles\":[\"_admin\"]},\"secObj\":{\"admins\":{}}}");
  buf_free(&b);
}

TEST(jsreq_form_post) {
  static const char *seg[] = {"db", "_design", "dd", "_update", "u", "a/b"};
  static const size_t segl[] = {2, 7, 2, 7, 1, 3};
  jsreq_pair qp[] = {PAIR("key", "[1, \"x\"]"), PAIR("descending", "true"), PAIR("k", "v")};
  jsreq_pair hp[] = {PAIR("Content-Type", "application/x-www-form-urlencoded; charset=UTF-8")};
  const char body[] = "a=1&b=x+y%20z;c&=d&a=2&e=%zz";
  jsreq q = {0};
  q.method = "POST";
  q.id = "a/b", q.id_len = 3;
  q.req_path = seg, q.req_path_len = segl, q.n_req_path = 6;
  q.query = qp, q.n_query = 3;
  q.headers = hp, q.n_headers = 1;
  q.body = body, q.body_len = sizeof body - 1;
  q.db = "db";
  dv_buf b;
  buf_init(&b);
  ASSERT_STR_EQ(build(&q, &b),
                "{\"info\":{},\"uuid\":null,\"id\":\"a/b\",\"method\":\"POST\","
                "\"requested_path\":[\"db\",\"_design\",\"dd\",\"_update\",\"u\",\"a/b\"],"
                "\"path\":[\"db\",\"_design\",\"dd\",\"_update\",\"u\",\"a/b\"],\"raw_path\":\"\","
                "\"query\":{\"key\":[1,\"x\"],\"descending\":true,\"k\":\"v\"},"
                "\"headers\":{\"Content-Type\":\"application/x-www-form-urlencoded; charset=UTF-8\"},"
                "\"body\":\"a=1&b=x+y%20z;c&=d&a=2&e=%zz\",\"peer\":\"127.0.0.1\","
                "\"form\":{\"a\":\"2\",\"b\":\"x y z\",\"c\":\"\",\"\":\"d\",\"e\":\"%zz\"},\"cookie\":{},"
                "\"userCtx\":{\"db\":\"db\",\"name\":null,\"roles\":[]},\"secObj\":{}}");
  /* the rewrite variant leaves out info, uuid, id and form; a method
   * CouchDB has no atom for is its character codes */
  q.flags = JSREQ_REWRITE;
  q.method = "PROPFIND";
  q.n_query = 0;
  const char *s = build(&q, &b);
  ASSERT(!strncmp(s, "{\"method\":[80,82,79,80,70,73,78,68],\"requested_path\"", 52));
  ASSERT(!strstr(s, "\"form\"") && !strstr(s, "\"uuid\"") && !strstr(s, "\"info\""));
  /* a json_query_keys value that is not JSON */
  jsreq_pair bad[] = {PAIR("startkey", "nope")};
  q.query = bad, q.n_query = 1;
  buf_reset(&b);
  ASSERT_EQ(jsreq_build(&q, &b), DV_EJSON);
  buf_free(&b);
}

TEST(jsreq_fuzz_smoke) { test_fuzz_smoke("fuzz_jsreq"); }
