/* The json layer's tests: X(name, timeout_seconds). */
#define JSON_TESTS(X)
