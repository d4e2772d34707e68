/* http_int.h — private to the engine's files (server.c, hreq.c). */
#ifndef DV_HTTP_INT_H
#define DV_HTTP_INT_H

#include "http/http.h"

/* Split r->path on '/' and percent-decode each segment into r->seg. A bad
 * escape or too many segments writes a 400 and returns nonzero. */
int hreq__split_path(hreq *r);
/* Add one raw query parameter (MHD hands them undecoded); val may be NULL.
 * Nonzero when out of memory. */
int hreq__add_param(hreq *r, const char *key, const char *val);

#endif
