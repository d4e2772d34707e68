/* mquery_int.h — private to index/mquery.c and index/mqparse.c: a parsed
 * _find/_explain request (mquery.h's opaque mq_req) and the helpers both
 * use. The parser lives apart (mqparse.c) so that it links without the
 * store: the fuzz target for request bodies runs it alone. */
#ifndef DV_MQUERY_INT_H
#define DV_MQUERY_INT_H

#include <string.h>

#include "index/mango_int.h"
#include "index/mquery.h"

#define MQ_DEFAULT_LIMIT 25     /* [mango] default_limit */

typedef struct mq_str {
  const char *s;   /* NUL-terminated (in the arena) */
  size_t n;        /* its length */
} mq_str;

struct mq_req {
  mango_sel *sel;            /* the normalised selector */
  const mnode *root;         /* its tree (NULL: {}) */
  json_val *norm;            /* it as CouchDB's JSON */
  size_t n_use;              /* use_index: 0, [D] or [D, N] */
  mq_str use[2];             /* D (as given) and N */
  const char *bookmark;      /* NULL: nil */
  size_t bookmark_len;
  int64_t limit, skip;
  size_t n_sort;             /* sort fields */
  mq_str *sort;
  int desc;                  /* the sort's one direction is "desc" */
  json_val *sort_json;       /* {"f": "dir", …} for explain */
  size_t n_fields;           /* 0: all fields */
  mq_str *fields;
  json_val *fields_json;     /* the list, [] for all */
  mq_str partition;          /* "" = global */
  int64_t r;
  int conflicts, stale_ok, update, stable, stats, allow_fallback;
};

/* rc with a static reason (NULL: the code's own). */
static inline int fail_s(const char **why, int rc, const char *text) {
  if (why) *why = text ? text : dv_strerror(rc);
  return rc;
}

static inline int str_is(const char *s, size_t n, const char *lit) { return strlen(lit) == n && !memcmp(s, lit, n); }

#endif
