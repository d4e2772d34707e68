/* mquery_stub.c — TEMPORARY: mq_parse, mq_find and mq_explain answer
 * "not implemented" until mquery.c (another branch) lands, so that
 * api/mango.c and the tests link. Drop this file when merging mquery.c. */
#include "index/mquery.h"

int mq_parse(dv_arena *a, const json_val *body, mq_req **out, const char **why) {
  (void)a, (void)body, (void)out;
  *why = "Mango queries are not supported by this divan build yet.";
  return DV_ENOTSUP;
}

int mq_find(store_db *db, dv_arena *a, const mq_req *q, const mq_sink *s, mq_result *res, const char **why) {
  (void)db, (void)a, (void)q, (void)s, (void)res;
  *why = "Mango queries are not supported by this divan build yet.";
  return DV_ENOTSUP;
}

int mq_explain(store_db *db, dv_arena *a, const mq_req *q, json_val **out, const char **why) {
  (void)db, (void)a, (void)q, (void)out;
  *why = "Mango queries are not supported by this divan build yet.";
  return DV_ENOTSUP;
}
