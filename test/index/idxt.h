/* idxt.h — helpers shared by the index layer's tests. */
#ifndef DV_TEST_IDXT_H
#define DV_TEST_IDXT_H

#include "json/json.h"
#include "util/arena.h"

/* Parse JSON written with ' for " (so tables read without escapes) into the
 * arena; the test fails on text that does not parse. */
json_val *idxt_json(dv_arena *a, const char *text);

#endif
