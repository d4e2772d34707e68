/* list.h — every test, one list per layer (each layer's tests.h). */
#include "util/tests.h"
#include "tuple/tests.h"
#include "json/tests.h"
#include "kv/tests.h"
#include "store/tests.h"
#include "index/tests.h"
#include "auth/tests.h"
#include "http/tests.h"
#include "repl/tests.h"
#include "cli/tests.h"
#include "pkg/tests.h"

/* the source tree itself (test_tree.c) */
#define TREE_TESTS(X)                                                                        \
  X(tree_layering, 120) X(tree_layering_catches, 120) X(tree_one_error_table, 120)         \
  X(tree_one_error_table_catches, 120)

#define TEST_LIST(X) TREE_TESTS(X) UTIL_TESTS(X) TUPLE_TESTS(X) JSON_TESTS(X) KV_TESTS(X) STORE_TESTS(X) INDEX_TESTS(X) AUTH_TESTS(X) HTTP_TESTS(X) REPL_TESTS(X) CLI_TESTS(X) PKG_TESTS(X)
