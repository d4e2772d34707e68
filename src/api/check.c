/* check.c — `divan check` online, for a running server (index/icheck.h):
 *
 *   GET /_node/{node}/_check[?db=NAME]   server admins only
 *
 * CouchDB 3.4 has no such endpoint; it sits under /_node/{node}/ beside
 * _stats and _system, the node-level tools a server admin reads ({node} is
 * _local or the node's name, else 404 as _stats answers). Without db it
 * checks the cluster rows and every database; with db only that database
 * (404 not_found when there is none). The answer, always 200 once the
 * check ran:
 *   {"ok": true|false, "checked": {"databases": N, "documents": N,
 *    "revisions": N, "changes": N, "bodies": N, "attachments": N,
 *    "local_docs": N, "purge_infos": N, "index_rows": N, "db_updates": N},
 *    "problems": [{"db","id","problem","expected"}…],
 *    "notes": [{"db","note"}…], "truncated": true (only when more than
 *    CHECK_MAX_LISTED findings were found: the counts still count all)}
 * "ok" is false when a problem was found. Notes are what could not be
 * checked exactly beside live writes (a database written during the
 * scan: its counters and index comparisons are skipped) — see
 * store/check.h. The check is read-only, in bounded transactions; it runs
 * on the request's thread for as long as it takes (it is an admin's tool,
 * not a request of the serving path).
 */
#include <string.h>

#include "api/api.h"
#include "index/icheck.h"

#define CHECK_MAX_LISTED 1000 /* findings listed in one answer */

typedef struct ck_item {
  struct ck_item *next;
  store_check_item it;
} ck_item;

typedef struct ck_list {
  dv_arena *a;
  ck_item *head, **tail;
  size_t n;
  int truncated;
} ck_list;

static int keep(void *arg, const store_check_item *it) {
  ck_list *l = arg;
  if (l->n >= CHECK_MAX_LISTED) {
    l->truncated = 1;
    return 0;
  }
  ck_item *c = arena_alloc(l->a, sizeof *c);
  if (!c) return DV_ENOMEM;
  memset(c, 0, sizeof *c);
  c->it.note = it->note;
  c->it.db = it->db ? arena_strndup(l->a, it->db, strlen(it->db)) : NULL;
  c->it.id = it->id ? arena_strndup(l->a, it->id, it->id_len) : NULL;
  c->it.id_len = it->id_len;
  c->it.what = arena_strndup(l->a, it->what, strlen(it->what));
  c->it.expected = it->expected ? arena_strndup(l->a, it->expected, strlen(it->expected)) : NULL;
  if (!c->it.what) return DV_ENOMEM;
  *l->tail = c;
  l->tail = &c->next;
  l->n++;
  return 0;
}

static void put_items(json_w *w, const ck_list *l, int notes) {
  json_w_arr_begin(w);
  for (const ck_item *c = l->head; c; c = c->next) {
    if (c->it.note != notes) continue;
    json_w_obj_begin(w);
    if (c->it.db) {
      json_w_keyz(w, "db");
      json_w_strz(w, c->it.db);
    }
    if (c->it.id) {
      json_w_keyz(w, "id");
      json_w_str(w, c->it.id, c->it.id_len);
    }
    json_w_keyz(w, notes ? "note" : "problem");
    json_w_strz(w, c->it.what);
    if (c->it.expected) {
      json_w_keyz(w, "expected");
      json_w_strz(w, c->it.expected);
    }
    json_w_obj_end(w);
  }
  json_w_arr_end(w);
}

static void hapi_check(hreq *r) {
  if (!api_our_node(r)) return;
  size_t dl = 0;
  const char *db = hq_get(r, "db", &dl);
  if (db && (strlen(db) != dl || store_db_name_check(db, dl))) {
    hres_err(r, DV_EBAD_DB_NAME);
    return;
  }
  ck_list l = {.a = &r->a};
  l.tail = &l.head;
  store_check_out out = {.cb = keep, .arg = &l};
  int rc = icheck_run(api_store(r), db, &out);
  if (rc) {
    hres_err(r, rc);
    return;
  }
  const store_check_counts *c = &out.counts;
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "ok");
  json_w_bool(&w, c->problems == 0);
  json_w_keyz(&w, "checked");
  json_w_obj_begin(&w);
  const struct {
    const char *k;
    int64_t v;
  } n[] = {{"databases", c->databases},     {"documents", c->documents},   {"revisions", c->revisions},
           {"changes", c->changes},         {"bodies", c->bodies},         {"attachments", c->attachments},
           {"local_docs", c->local_docs},   {"purge_infos", c->purge_infos}, {"index_rows", c->index_rows},
           {"db_updates", c->db_updates},   {"problems", c->problems},     {"notes", c->notes}};
  for (size_t i = 0; i < sizeof n / sizeof *n; i++) {
    json_w_keyz(&w, n[i].k);
    json_w_int(&w, n[i].v);
  }
  json_w_obj_end(&w);
  json_w_keyz(&w, "problems");
  put_items(&w, &l, 0);
  json_w_keyz(&w, "notes");
  put_items(&w, &l, 1);
  if (l.truncated) {
    json_w_keyz(&w, "truncated");
    json_w_bool(&w, 1);
  }
  json_w_obj_end(&w);
}

static const http_route routes[] = {
    {GET_HEAD, "/_node/{any}/_check", API_SERVER_ADMIN, hapi_check},
};
const api_routes api_check_routes = API_TABLE(routes);
