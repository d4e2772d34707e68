/* http.h — the CouchDB HTTP API server over store.h (libmicrohttpd).
 *
 * main.c fills http_opts and calls http_start; the server runs on its own
 * threads (an epoll thread pool, plus one reaper thread for waiting feeds)
 * until http_stop. Everything about requests lives in http_int.h.
 */
#ifndef DV_HTTP_H
#define DV_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "util/err.h"

#define HTTP_DEFAULT_MAX_BODY (64u << 20)  /* max_http_request_size, bytes */
#define HTTP_DEFAULT_THREADS 128           /* pool threads: a write holds one while it commits */
#define HTTP_DEFAULT_TIMEOUT 300           /* idle connection timeout, seconds */
#define HTTP_HEADER_LIMIT (64u << 10)      /* request line + headers, bytes */
#define HTTP_DEFAULT_HEAD_TIMEOUT 30       /* request_head_timeout: seconds from a head's first byte to its end */
#define HTTP_DEFAULT_MAX_CONNS 10000       /* max_connections: open client connections */
#define HTTP_DEFAULT_MAX_CONNS_PER_CLIENT 1000 /* max_connections_per_client: from one address */

typedef struct http_opts {
  const char *bind;       /* listen address (IPv4 or IPv6 literal) */
  int port;               /* 0 = any free port (see http_port) */
  int threads;            /* pool threads; 0 = HTTP_DEFAULT_THREADS */
  size_t max_body;        /* 0 = HTTP_DEFAULT_MAX_BODY */
  int timeout_s;          /* idle connection timeout; 0 = HTTP_DEFAULT_TIMEOUT */
  int head_timeout_s;     /* request_head_timeout; 0 = HTTP_DEFAULT_HEAD_TIMEOUT */
  int max_conns;          /* max_connections; 0 = HTTP_DEFAULT_MAX_CONNS (capped by the fd limit) */
  int max_conns_per_client; /* max_connections_per_client; 0 = HTTP_DEFAULT_MAX_CONNS_PER_CLIENT, -1 = no limit */
  const char *version;    /* divan's version, for GET / */
  const char *data_dir;   /* shown by /_node/_local/_config */
  size_t max_document_size; /* the store's limit, shown by _config */
  struct dv_config *config; /* the ini configuration (auth, CORS, _config); not owned */
} http_opts;

typedef struct http_server http_server;

/* Start serving. The store must outlive the server. Returns 0, DV_EIO
 * (cannot bind), DV_ENOMEM or store errors. */
int http_start(store *st, const http_opts *o, http_server **out) DV_MUST_CHECK;
/* The port actually bound. */
int http_port(http_server *h);
/* Stop: ends every feed, waits for requests in flight. NULL is a no-op. */
void http_stop(http_server *h);

#endif
