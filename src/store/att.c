/* att.c — attachments (being written: the API in store.h is the contract). */
#include "store/store_int.h"

int store_att_upload_begin(store_db *db, const char *id, size_t id_len, store_att_upload **out) {
  (void)db, (void)id, (void)id_len, (void)out;
  return DV_ENOTSUP;
}
int store_att_upload_write(store_att_upload *u, const void *p, size_t n) {
  (void)u, (void)p, (void)n;
  return DV_ENOTSUP;
}
int store_att_upload_finish(store_att_upload *u, int64_t *out_len, uint8_t md5[16]) {
  (void)u, (void)out_len, (void)md5;
  return DV_ENOTSUP;
}
void store_att_upload_free(store_att_upload *u) { (void)u; }
int store_doc_atts(store_db *db, const char *id, size_t id_len, const store_rev *rev, dv_arena *a,
                   store_rev *out_rev, store_att **out, size_t *out_n) {
  (void)db, (void)id, (void)id_len, (void)rev, (void)a, (void)out_rev, (void)out, (void)out_n;
  return DV_ENOTSUP;
}
int store_att_pread(store_db *db, const char *id, size_t id_len, const store_att *att, int64_t off,
                    uint8_t *buf, size_t cap, size_t *got) {
  (void)db, (void)id, (void)id_len, (void)att, (void)off, (void)buf, (void)cap, (void)got;
  return DV_ENOTSUP;
}
