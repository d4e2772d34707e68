/* The tuple layer's tests: X(name, timeout_seconds). */
#define TUPLE_TESTS(X)
