/* qs_int.h — the query server protocol's reader (qsproto.c), private to
 * qs.c and its fuzz target: no process, no engine, no store. */
#ifndef DV_INDEX_QS_INT_H
#define DV_INDEX_QS_INT_H

#include "index/qs.h"

/* Is the line ["log", …]? (It is logged and skipped, couch_os_process.) */
int qs_is_log_line(const char *s, size_t n);

/* Read one answer line into a: 0 with *out (when out is not NULL) the
 * value; DV_EQS for ["error", name, reason] (e filled, in a); DV_EQS for
 * ["fatal", name, reason] and DV_EQS_PROCESS for a line that is not JSON,
 * both with *dead = 1 (the process must go). */
int qs_answer(const char *s, size_t n, dv_arena *a, json_val **out, qs_err *e, int *dead) DV_MUST_CHECK;

#endif
