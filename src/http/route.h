/* route.h — between server.c and the rest of src/http: request decoding
 * (hreq.c) and dispatch (route.c). Private to src/http. */
#ifndef DV_HTTP_ROUTE_H
#define DV_HTTP_ROUTE_H

#include "http/http_int.h"

/* Split r->path on '/' and percent-decode each segment into r->seg. A bad
 * escape or too many segments writes a 400 and returns nonzero. */
int hreq__split_path(hreq *r);
/* Add one raw query parameter (MHD hands them undecoded); val may be NULL.
 * Nonzero when out of memory. */
int hreq__add_param(hreq *r, const char *key, const char *val);

/* Pick the handler for r and run it (it fills r's response). */
void route_request(hreq *r);

#endif
