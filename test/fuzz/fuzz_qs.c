/* fuzz_qs.c — the query server protocol reader (index/qsproto.c): any
 * line a hostile or broken query server writes is an answer, an error, or
 * a dead process, never a crash. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "index/qs_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dv_arena a;
  arena_init(&a, 0);
  (void)qs_is_log_line((const char *)data, size);
  json_val *v = NULL;
  qs_err e = {0};
  int dead = 0;
  int rc = qs_answer((const char *)data, size, &a, &v, &e, &dead);
  if (rc == DV_EQS && (!e.error || !e.reason)) __builtin_trap();
  if (rc == 0 && !v) __builtin_trap();
  if (rc == DV_EQS_PROCESS && !dead) __builtin_trap();
  arena_free(&a);
  return 0;
}
