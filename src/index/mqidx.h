/* mqidx.h — the parts of Mango's index endpoints that mquery.h does not
 * declare (mqidx.c): the body of POST _index/_bulk_delete. */
#ifndef DV_MQIDX_H
#define DV_MQIDX_H

#include "json/json.h"
#include "util/arena.h"
#include "util/err.h"

/* Validate a _bulk_delete body (mango_opts:validate_bulk_delete): "docids"
 * (required, an array whose elements pass the use_index validator: a
 * string of one to three "/"-separated parts, or null, [], ["d"],
 * ["d","n"]) and "w" (an integer > 0); other keys are invalid_key. *ids is
 * the docids array (borrowed from body). Errors, with CouchDB's reasons:
 * DV_EMQ_MISSING_KEY, DV_EMQ_BULK_DOCS, DV_EMQ_INDEX_NAME,
 * DV_EMQ_POS_INTEGER, DV_EMQ_INVALID_KEY. */
int mq_bulk_delete_parse(dv_arena *a, const json_val *body, const json_val **ids, const char **why) DV_MUST_CHECK;

#endif
