/* vargs.h — a view query's parameters, parsed and checked as CouchDB 3.4
 * parses and checks them (couch_mrview_http:parse_params and
 * couch_mrview_util:validate_args), with its error texts. Pure: no store,
 * no HTTP; api/view.c hands it the query string's pairs and a POST body's
 * members, and fuzz_vargs hands it anything.
 *
 * Data flow: pairs in order (a POST body's members first, then the query
 * string: the last one wins per field) ─▶ vw_args_set each ─▶ vw_args_check
 * with the view's type (map, or reduce unless reduce=false) ─▶ the args
 * the reader needs, defaults filled.
 */
#ifndef DV_INDEX_VARGS_H
#define DV_INDEX_VARGS_H

#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "util/arena.h"
#include "util/err.h"

#define VW_LIMIT_MAX 268435456 /* CouchDB's default limit and [query_server_config] query_limit */

typedef struct vw_args {
  int reduce;                 /* -1: not given */
  const json_val *start_key, *end_key;   /* NULL: not given */
  const json_val *keys;       /* NULL: not given */
  const char *start_docid, *end_docid;   /* NULL: not given */
  size_t start_docid_len, end_docid_len;
  int descending;
  int64_t limit, skip;
  int group;                  /* -1: not given */
  int64_t group_level;        /* -1: not given */
  int update;                 /* VW_UPDATE_* */
  int stable;
  int inclusive_end;
  int include_docs;
  int conflicts;              /* -1: not given */
  int sorted;
  int update_seq;
  int attachments, att_encoding_info;
  /* after vw_args_check */
  int red;                    /* the query reduces */
  int level;                  /* 0 none, -1 exact, N */
} vw_args;

enum { VW_UPDATE_FALSE = 0, VW_UPDATE_TRUE = 1, VW_UPDATE_LAZY = 2 };

/* CouchDB's defaults. */
void vw_args_init(vw_args *a);

/* One parameter: text (from the query string: JSON parameters are parsed
 * here, into ar) or json (a POST body's member, already decoded). 0; or
 * DV_EQUERY_PARSE / DV_EJSON (bad_request, invalid JSON) / DV_ENOMEM with
 * *why CouchDB's reason (in ar, or static). Unknown names are ignored. */
int vw_args_set(vw_args *a, const char *name, size_t name_len, const char *text, size_t text_len,
                const json_val *json, dv_arena *ar, const char **why) DV_MUST_CHECK;

/* validate_args for a view with (red_view = 1) or without a reduce: 0, or
 * DV_EQUERY_PARSE with *why. Sets red and level. */
int vw_args_check(vw_args *a, int red_view, const char **why) DV_MUST_CHECK;

#endif
