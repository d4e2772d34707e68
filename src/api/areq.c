/* areq.c — request helpers with CouchDB's meaning, for every endpoint
 * file: opening the request's database (with its membership check),
 * document-id checks, the answer of a write, new ids, and whether a client
 * takes gzip.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <pthread.h>
#include <time.h>

#include "api/api.h"

int api_open_db(hreq *r) {
  if (r->app->db) return 0;
  int rc = store_db_name_check(r->app->db_name, strlen(r->app->db_name));
  if (!rc) rc = store_db_open(api_store(r), r->app->db_name, &r->app->db);
  if (rc) {
    if (rc == DV_EBAD_DB_NAME)
      hres_errwf(r, rc,
                 "Name: '%s'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, "
                 "-, and / are allowed. Must begin with a letter.",
                 r->app->db_name);
    else
      hres_err(r, rc);
    return -1;
  }
  return api_db_member(r, r->route && (r->route->flags & API_DB_ADMIN));
}

int api_docid_ok(hreq *r, const char *id, size_t n, int local) {
  const char *why = store_docid_problem(id, n, local);
  if (!why) return 0;
  hres_errw(r, DV_EBAD_DOCID, why);
  return -1;
}

void api_written(hreq *r, int status, const char *id, size_t n, const char *rev, int etag, int loc) {
  json_w w;
  hres_jw(r, status, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "ok");
  json_w_bool(&w, 1);
  json_w_keyz(&w, "id");
  json_w_str(&w, id, n);
  if (rev) {
    json_w_keyz(&w, "rev");
    json_w_strz(&w, rev);
  }
  json_w_obj_end(&w);
  if (rev && etag) hres_etag(r, rev);
  if (loc) {
    const char *seg[2] = {r->app->db_name, id};
    size_t len[2] = {strlen(r->app->db_name), n};
    hres_location(r, seg, len, 2);
  }
}

static void random_bytes(uint8_t *b, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = getrandom(b + got, n - got, 0);
    if (k <= 0) break;
    got += (size_t)k;
  }
  for (; got < n; got++) b[got] = (uint8_t)(rand() ^ (int)time(NULL)); /* getrandom failed */
}

/* Random bytes for the ids' increments, drawn 256 at a time (under
 * uuid_mu): one getrandom per id was a system call per document of a
 * _bulk_docs without ids, 0.8 % of the server's CPU in one (perf). */
static uint8_t rand_pool[256];
static size_t rand_left;

static uint32_t random_below(uint32_t n) {
  if (rand_left < 4) {
    random_bytes(rand_pool, sizeof rand_pool);
    rand_left = sizeof rand_pool;
  }
  rand_left -= 4;
  const uint8_t *b = rand_pool + rand_left;
  return (uint32_t)(((uint64_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]) * n) >> 32);
}

/* CouchDB's default [uuids] algorithm, "sequential" (couch_uuids.erl): 26
 * hex digits of random prefix, then a 6-digit counter that grows by a
 * random 1..0xffe per id; a new prefix when it would pass 0xfff000. Ids
 * minted one after another sort together, so new documents land next to
 * each other in the key space (RocksDB's memtable, its compactions and
 * the block cache all like that), and still cannot be guessed. A run of
 * n ids (a _bulk_docs request's, /_uuids?count=n) is minted under one
 * lock, so no other request's ids fall between them, and starts a new
 * prefix when it would not fit the current one: the store settles that
 * none of a run exists with one range read (edit.c, creates_absent). */
static pthread_mutex_t uuid_mu = PTHREAD_MUTEX_INITIALIZER;
static char uuid_prefix[27];
static uint32_t uuid_seq;

void api_uuids(char *out, size_t n) {
  static const char hex[] = "0123456789abcdef";
  pthread_mutex_lock(&uuid_mu);
  for (size_t k = 0; k < n; k++, out += 33) {
    uint32_t inc = 1 + random_below(0xffe);
    /* a run that fits one prefix gets one: its ids are one span of keys */
    uint32_t room = k == 0 && n > 1 && n <= 0xfff000 / 0xffe ? (uint32_t)n * 0xffe : inc;
    if (!uuid_prefix[0] || uuid_seq + room >= 0xfff000) {
      uint8_t b[13];
      random_bytes(b, sizeof b);
      for (int i = 0; i < 13; i++) {
        uuid_prefix[2 * i] = hex[b[i] >> 4];
        uuid_prefix[2 * i + 1] = hex[b[i] & 15];
      }
      uuid_prefix[26] = 0;
      uuid_seq = 1 + random_below(0xffe);
    } else {
      uuid_seq += inc;
    }
    memcpy(out, uuid_prefix, 26);
    for (int i = 0; i < 6; i++) out[26 + i] = hex[(uuid_seq >> (20 - 4 * i)) & 15];
    out[32] = 0;
  }
  pthread_mutex_unlock(&uuid_mu);
}

void api_uuid(char out[33]) { api_uuids(out, 1); }

/* chttpd:error_info for what a query server answered: the names CouchDB
 * gives a status of their own, else 500 with the name as thrown; a dead
 * or missing process with its own reason. */
void api_qs_fail(hreq *r, int rc, const qs_err *e) {
  if (rc != DV_EQS) {
    hres_errw(r, rc, e && e->reason && *e->reason ? e->reason : NULL);
    return;
  }
  static const struct {
    const char *name;
    int rc;
  } known[] = {
      {"not_found", DV_ENOT_FOUND},           {"forbidden", DV_EFORBIDDEN},         {"unauthorized", DV_EUNAUTHORIZED},
      {"not_acceptable", DV_ENOT_ACCEPTABLE}, {"bad_request", DV_EBAD_REQUEST},
  };
  int code = DV_EQS;
  for (size_t i = 0; e->error && i < sizeof known / sizeof *known; i++)
    if (!strcmp(e->error, known[i].name)) code = known[i].rc;
  hres_errn(r, code, e->error, e->reason);
}

/* attachments (att.c) and /_utils (utils.c) */
int api_accepts_gzip(hreq *r) {
  const char *h = hreq_hdr(r, "Accept-Encoding");
  int gz = -1, star = -1;
  for (const char *p = h; p && *p;) {
    while (*p == ' ' || *p == '\t' || *p == ',') p++;
    size_t k = strcspn(p, ",");
    size_t t = strcspn(p, ";,");
    size_t e = t;
    while (e && (p[e - 1] == ' ' || p[e - 1] == '\t')) e--;
    int q = 1;
    const char *qs = memchr(p, ';', k);
    if (qs) {
      const char *v = qs + 1;
      while (*v == ' ') v++;
      if ((v[0] == 'q' || v[0] == 'Q') && v[1] == '=') {
        v += 2;
        q = 0; /* q=0, 0.0, 0.000: refused; anything above zero: accepted */
        for (; v < p + k && ((*v >= '0' && *v <= '9') || *v == '.'); v++)
          if (*v >= '1' && *v <= '9') q = 1;
      }
    }
    if ((e == 4 && !strncasecmp(p, "gzip", 4)) || (e == 6 && !strncasecmp(p, "x-gzip", 6))) gz = q;
    else if (e == 1 && *p == '*') star = q;
    p += k;
  }
  if (gz >= 0) return gz;
  return star > 0;
}

/* 201 Created with the request's path as Location (PUT /{db}, and its
 * ?load=true form). */
void api_created(hreq *r) {
  dv_buf loc;
  buf_init(&loc);
  buf_printf(&loc, "/%s", r->path[0] == '/' ? r->path + 1 : r->path);
  hres_ok(r, 201);
  if (!buf_error(&loc)) hres_header(r, "Location", (const char *)loc.p);
  buf_free(&loc);
}

int api_our_node(hreq *r) {
  if (!strcmp(r->seg[1], "_local") || !strcmp(r->seg[1], API_NODE_NAME)) return 1;
  hres_errwf(r, DV_ENOT_FOUND, "no such node: %s", r->seg[1]);
  return 0;
}
