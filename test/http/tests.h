/* tests.h — the HTTP layer's tests: black-box suites in node that drive a
 * real `divan serve` (test/node/http/, test/node/clients/), one
 * runner test per suite. */
#define HTTP_TESTS(X)          \
  X(http_url_fuzz_smoke, 60)   \
  X(http_server, 120)          \
  X(http_limits, 120)          \
  X(http_doc, 180)             \
  X(http_bulk, 180)            \
  X(http_changes, 180)         \
  X(http_purge, 120)           \
  X(client_nano, 180)          \
  X(client_pouchdb, 300)
