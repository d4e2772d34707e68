/* err.c — lookups over the error table in err.h. No state. */
#include "util/err.h"

#include <stddef.h>

struct err_row {
  int code;             /* negative error code */
  int http;             /* HTTP status */
  int cls;              /* 0 plain, 1 retryable, 2 maybe committed */
  const char *name;     /* symbolic name */
  const char *couch;    /* CouchDB "error" */
  const char *reason;   /* CouchDB "reason" */
};

static const struct err_row rows[] = {
#define DV_ERR_ROW(name, code, http, err, reason, cls) {code, http, cls, #name, err, reason},
    DV_ERR_MAP(DV_ERR_ROW)
#undef DV_ERR_ROW
};

static const struct err_row *find(int rc) {
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].code == rc) return &rows[i];
  return NULL;
}

const char *dv_err_name(int rc) {
  const struct err_row *r = find(rc);
  return r ? r->name : "UNKNOWN";
}

const char *dv_strerror(int rc) {
  const struct err_row *r = find(rc);
  return r ? r->reason : "Unknown error.";
}

int dv_err_http(int rc) {
  const struct err_row *r = find(rc);
  return r ? r->http : 500;
}

const char *dv_err_couch(int rc) {
  const struct err_row *r = find(rc);
  return r ? r->couch : "unknown_error";
}

int dv_err_retryable(int rc) {
  const struct err_row *r = find(rc);
  return r ? r->cls != 0 : 0;
}

int dv_err_maybe_committed(int rc) {
  const struct err_row *r = find(rc);
  return r ? r->cls == 2 : 0;
}
