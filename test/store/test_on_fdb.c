/* test_on_fdb.c — the store tests again, on the fdb backend.
 *
 * Each store_* test of tests.h gets a twin test_fdb_store_* here that
 * sets DV_STORE_BACKEND=fdb (so storet_kv_open opens src/kv/fdb.c over
 * the libfdb_c double, test/fdbsim) and runs the same body. Nothing else
 * differs: the layer above kv/ must not know which backend runs.
 */
#include <stdlib.h>

#include "storet.h"
#include "tests.h"

#define ON_FDB(X, name, timeout)          \
  void test_##name(void);                 \
  TEST(fdb_##name) {                      \
    setenv("DV_STORE_BACKEND", "fdb", 1); \
    test_##name();                        \
  }
STORE_KV_TESTS(unused, ON_FDB)
