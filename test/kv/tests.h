/* The kv layer's tests: X(name, timeout_seconds). */
#define KV_TESTS(X)
