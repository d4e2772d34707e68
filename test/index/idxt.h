/* idxt.h — helpers shared by the index layer's tests. */
#ifndef DV_TEST_IDXT_H
#define DV_TEST_IDXT_H

#include "json/json.h"
#include "store/storet.h"
#include "util/arena.h"

/* Parse JSON written with ' for " (so tables read without escapes) into the
 * arena; the test fails on text that does not parse. */
json_val *idxt_json(dv_arena *a, const char *text);

/* A fresh embedded store (storet_open, database "db") with the Mango index
 * hooks and builder on, and one Mango index: _design/q's by_v on v, with a
 * _count reduce. The caller stops the builder (mindex_stop) before closing. */
storet *idxt_mango_db(void);

/* The documents every kind of key comes from: "a" with two revisions,
 * "b" deleted, "c" with a conflict from new_edits=false edits (a branch of
 * two and one of one), "d" with two inline attachments. */
void idxt_edge_docs(store_db *db, dv_arena *a);

#endif
