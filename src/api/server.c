/* server.c — the server-level endpoints: GET /, /_up, /_all_dbs,
 * /_dbs_info, /_uuids, /_active_tasks, /_membership, /_node/…,
 * /_cluster_setup.
 *
 * Answers follow CouchDB 3.x's shapes; divan is a single node named
 * "divan@127.0.0.1" (membership and _node/_local report it).
 * /_node/_local/_config shows the settings this server runs with: flags
 * over the store's cluster-wide settings over the ini file (util/config.h's
 * layers; store/clustercfg.h).
 *
 * Not here: /_db_updates (api/changes.c), /_session (authentication issue).
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "auth/crypto.h"
#include "index/mindex.h"
#include "index/view.h"
#include "util/alloc.h"
#include "util/log.h"

#define NODE_NAME API_NODE_NAME
#define COUCH_VERSION "3.3.3" /* the CouchDB API level divan speaks */
#define MAX_UUIDS 1000        /* CouchDB's [uuids] max_count */
#define MAX_DBS_INFO 100      /* CouchDB's max_db_number_for_dbs_info_req */

void hapi_root(hreq *r) {
  const api_srv *o = api_srv_of(r);
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "couchdb");
  json_w_strz(&w, "Welcome");
  json_w_keyz(&w, "version");
  json_w_strz(&w, COUCH_VERSION);
  json_w_keyz(&w, "git_sha");
  json_w_strz(&w, "divan");
  json_w_keyz(&w, "uuid");
  json_w_strz(&w, api_srv_of(r)->uuid);
  json_w_keyz(&w, "features");
  json_w_arr_begin(&w);
  json_w_strz(&w, "access-ready");
  json_w_strz(&w, "pluggable-storage-engines");
  json_w_arr_end(&w);
  json_w_keyz(&w, "vendor");
  json_w_obj_begin(&w);
  json_w_keyz(&w, "name");
  json_w_strz(&w, "divan");
  json_w_keyz(&w, "version");
  json_w_strz(&w, o->version);
  json_w_obj_end(&w);
  json_w_obj_end(&w);
}

/* chttpd_misc:handle_up_req: [couchdb] maintenance_mode "true" or "nolb"
 * is 404 {"status":"maintenance_mode"|"nolb"}; otherwise ok — here only
 * when the store answers a read within UP_TIMEOUT_MS (store_ping: on
 * FoundationDB the cluster gives a read version and a storage server the
 * value), else 404 {"status":"nolb"} with the store's error: a load
 * balancer takes the node out, as for CouchDB's nolb. A store that turned
 * read-only after a failed sync (kv.h) still reads, but is out too: 404
 * {"status":"read_only","reason":…} until the server restarts. */
#define UP_TIMEOUT_MS 1000

void hapi_up(hreq *r) {
  dv_config *cfg = api_config(r);
  char *mm = cfg ? config_get(cfg, "couchdb", "maintenance_mode") : NULL;
  const char *down = mm && !strcmp(mm, "true") ? "maintenance_mode" : mm && !strcmp(mm, "nolb") ? "nolb" : NULL;
  dv_free(mm);
  int rc = down ? 0 : store_ping(api_store(r), UP_TIMEOUT_MS);
  kv_info kv;
  kv_db_info(store_kv(api_store(r)), &kv);
  int ro = !down && !rc && kv.read_only == 1;
  json_w w;
  hres_jw(r, down || rc || ro ? 404 : 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "status");
  json_w_strz(&w, down ? down : rc ? "nolb" : ro ? "read_only" : "ok");
  if (rc) {
    json_w_keyz(&w, "store");
    json_w_strz(&w, dv_strerror(rc));
  }
  if (ro) {
    json_w_keyz(&w, "reason");
    json_w_strz(&w, dv_strerror(DV_EREAD_ONLY));
  }
  if (!down) {
    json_w_keyz(&w, "seeds");
    json_w_raw(&w, "{}", 2);
  }
  json_w_obj_end(&w);
}

/* ---- database lists ------------------------------------------------------------ */

/* A JSON-string parameter (startkey="a"): its bytes, or an error. */
static int str_param(hreq *r, const char *name, const char **out, size_t *out_len) {
  json_val *v = NULL;
  if (hq_json(r, name, &v)) return -1;
  if (!v) return 0;
  if (v->type != JSON_STRING) {
    hres_errwf(r, DV_EQUERY_PARSE, "Invalid value for %s: must be a JSON string", name);
    return -1;
  }
  *out = v->u.s;
  *out_len = v->len;
  return 0;
}

/* CouchDB's list parameters: descending, startkey/start_key,
 * endkey/end_key, inclusive_end, limit, skip. */
static int list_params(hreq *r, store_range *rg) {
  store_range_init(rg);
  int desc = 0, incl = 1;
  int64_t limit = -1, skip = 0;
  if (hq_bool(r, "descending", &desc) || hq_bool(r, "inclusive_end", &incl) ||
      hq_int(r, "limit", 0, &limit) || hq_int(r, "skip", 0, &skip))
    return -1;
  if (str_param(r, "startkey", &rg->start, &rg->start_len) || str_param(r, "start_key", &rg->start, &rg->start_len) ||
      str_param(r, "endkey", &rg->end, &rg->end_len) || str_param(r, "end_key", &rg->end, &rg->end_len))
    return -1;
  rg->descending = desc;
  rg->inclusive_end = incl;
  rg->limit = limit;
  rg->skip = skip;
  return 0;
}

static int name_row(void *arg, const char *name, size_t len) {
  json_w_str(arg, name, len);
  return 0;
}

void hapi_all_dbs(hreq *r) {
  store_range rg;
  if (list_params(r, &rg)) return;
  json_w w;
  hres_jw(r, 200, &w);
  json_w_arr_begin(&w);
  int rc = store_db_list(api_store(r), &rg, name_row, &w);
  if (rc) {
    hres_err(r, rc);
    return;
  }
  json_w_arr_end(&w);
}

/* The body of GET /{db} (also used by /_dbs_info). */
void hapi__db_info(json_w *w, store_db *db, const store_db_info *in, int64_t purge_seq) {
  char seq[STORE_SEQ_STR], pseq[24];
  snprintf(pseq, sizeof pseq, "%lld", (long long)purge_seq);
  store_seq_format(&in->update_seq, seq);
  json_w_obj_begin(w);
  json_w_keyz(w, "db_name");
  json_w_strz(w, store_db_name(db));
  json_w_keyz(w, "purge_seq");
  json_w_strz(w, pseq);
  json_w_keyz(w, "update_seq");
  json_w_strz(w, seq);
  json_w_keyz(w, "sizes");
  json_w_obj_begin(w);
  json_w_keyz(w, "file");
  json_w_int(w, in->size_active);
  json_w_keyz(w, "external");
  json_w_int(w, in->size_external);
  json_w_keyz(w, "active");
  json_w_int(w, in->size_active);
  json_w_obj_end(w);
  json_w_keyz(w, "props");
  json_w_raw(w, "{}", 2);
  json_w_keyz(w, "doc_del_count");
  json_w_int(w, in->doc_del_count);
  json_w_keyz(w, "doc_count");
  json_w_int(w, in->doc_count);
  json_w_keyz(w, "disk_format_version");
  json_w_int(w, 8);
  json_w_keyz(w, "compact_running");
  json_w_bool(w, 0);
  json_w_keyz(w, "cluster");
  json_w_raw(w, "{\"q\":1,\"n\":1,\"w\":1,\"r\":1}", 25);
  json_w_keyz(w, "instance_start_time"); /* the creation time in microseconds, as CouchDB 3.4 */
  char ist[24];
  snprintf(ist, sizeof ist, "%lld", (long long)in->created_at);
  json_w_strz(w, ist);
  json_w_obj_end(w);
}

/* One /_dbs_info entry: {"key", "info"} or {"key", "error":"not_found"}
 * (DV_ENO_DB's error name). */
static int dbs_info_row(hreq *r, json_w *w, const char *name, size_t len) {
  char *z = arena_strndup(&r->a, name, len);
  if (!z) return DV_ENOMEM;
  store_db *db = NULL;
  store_db_info in;
  int rc = store_db_name_check(z, len) ? DV_ENO_DB : store_db_open(api_store(r), z, &db);
  int64_t pseq = 0;
  if (!rc) rc = store_db_info_get(db, &in);
  if (!rc) rc = store_db_get_purge_seq(db, &pseq);
  json_w_obj_begin(w);
  json_w_keyz(w, "key");
  json_w_str(w, name, len);
  if (!rc) {
    json_w_keyz(w, "info");
    hapi__db_info(w, db, &in, pseq);
  } else if (rc == DV_ENO_DB) {
    json_w_keyz(w, "error");
    json_w_strz(w, dv_err_couch(rc));
    rc = 0;
  }
  json_w_obj_end(w);
  store_db_close(db);
  return rc;
}

struct names {
  hreq *r;          /* the request (arena) */
  const char **s;   /* names collected */
  size_t *len;      /* their lengths */
  size_t n, cap;
};

static int collect_name(void *arg, const char *name, size_t len) {
  struct names *nm = arg;
  if (nm->n == nm->cap) {
    size_t cap = nm->cap ? 2 * nm->cap : 64;
    const char **s = arena_realloc(&nm->r->a, nm->s, nm->cap * sizeof *s, cap * sizeof *s, 8);
    size_t *l = arena_realloc(&nm->r->a, nm->len, nm->cap * sizeof *l, cap * sizeof *l, 8);
    if (!s || !l) return DV_ENOMEM;
    nm->s = s, nm->len = l, nm->cap = cap;
  }
  nm->s[nm->n] = arena_strndup(&nm->r->a, name, len);
  if (!nm->s[nm->n]) return DV_ENOMEM;
  nm->len[nm->n++] = len;
  return 0;
}

void hapi_dbs_info(hreq *r) {
  struct names nm = {.r = r};
  int rc = 0;
  if (r->method == HM_GET || r->method == HM_HEAD) {
    store_range rg;
    if (list_params(r, &rg)) return;
    rc = store_db_list(api_store(r), &rg, collect_name, &nm);
  } else if (r->method == HM_POST) {
    json_val *body, *keys;
    if (hreq_need_json(r) || hreq_json_body(r, 1, &body)) return;
    keys = json_obj_getz(body, "keys");
    if (!keys || keys->type != JSON_ARRAY) {
      hres_errw(r, DV_EBAD_REQUEST, "`keys` member must exist.");
      return;
    }
    if (keys->len > MAX_DBS_INFO) {
      hres_errwf(r, DV_EBAD_REQUEST, "`keys` member must be an array of at most %d database names.",
                MAX_DBS_INFO);
      return;
    }
    for (size_t i = 0; i < keys->len && !rc; i++) {
      json_val *k = keys->u.items[i];
      if (k->type != JSON_STRING) {
        hres_errw(r, DV_EBAD_REQUEST, "`keys` member must be an array of strings.");
        return;
      }
      rc = collect_name(&nm, k->u.s, k->len);
    }
  } else {
    hres_method(r, "GET,HEAD,POST");
    return;
  }
  if (rc) {
    hres_err(r, rc);
    return;
  }
  json_w w;
  hres_jw(r, 200, &w);
  json_w_arr_begin(&w);
  for (size_t i = 0; i < nm.n && !rc; i++) rc = dbs_info_row(r, &w, nm.s[i], nm.len[i]);
  if (rc) {
    hres_err(r, rc);
    return;
  }
  json_w_arr_end(&w);
}

void hapi_uuids(hreq *r) {
  int64_t count = 1;
  if (hq_int(r, "count", 0, &count)) return;
  if (count > MAX_UUIDS) {
    hres_errw(r, DV_EBAD_REQUEST, "count parameter too large");
    return;
  }
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "uuids");
  json_w_arr_begin(&w);
  char ids[33 * MAX_UUIDS];
  api_uuids(ids, (size_t)count);
  for (int64_t i = 0; i < count; i++) json_w_str(&w, ids + 33 * i, 32);
  json_w_arr_end(&w);
  json_w_obj_end(&w);
  hres_header(r, "Cache-Control", "must-revalidate, no-cache");
  hres_header(r, "Pragma", "no-cache");
}

/* Replications, and the Mango index builds (mindex.h) in CouchDB's
 * indexer task shape. */

/* One /_active_tasks row of type indexer (couch_task_status's fields; name
 * NULL for a view index, which CouchDB's rows do not name). */
static int task_row(dv_arena *a, json_val *arr, size_t i, const char *db, const char *ddoc, const char *name,
                    int64_t done, int64_t total, int64_t started, int64_t updated) {
  json_val *o = json_new_object(a);
  char pid[32];
  snprintf(pid, sizeof pid, "<0.%zu.0>", 100 + i);
  int64_t pct = total > 0 ? done * 100 / total : 0;
  if (pct > 100) pct = 100;
  if (!o || json_obj_setz(a, o, "type", json_new_stringz(a, "indexer")) ||
      json_obj_setz(a, o, "node", json_new_stringz(a, NODE_NAME)) || json_obj_setz(a, o, "pid", json_new_stringz(a, pid)) ||
      json_obj_setz(a, o, "database", json_new_stringz(a, db)) ||
      json_obj_setz(a, o, "design_document", json_new_stringz(a, ddoc)) ||
      (name && json_obj_setz(a, o, "index", json_new_stringz(a, name))) ||
      json_obj_setz(a, o, "changes_done", json_new_int(a, done)) ||
      json_obj_setz(a, o, "total_changes", json_new_int(a, total)) ||
      json_obj_setz(a, o, "progress", json_new_int(a, pct)) ||
      json_obj_setz(a, o, "started_on", json_new_int(a, started)) ||
      json_obj_setz(a, o, "updated_on", json_new_int(a, updated)) || json_arr_push(a, arr, o))
    return DV_ENOMEM;
  return 0;
}

void hapi_active_tasks(hreq *r) {
  dv_buf b;
  buf_init(&b);
  json_val *arr = NULL;
  int rc = api_repl_tasks(r, &b);
  /* the DOM points into b's text: b lives until the answer is written */
  if (!rc && hreq_parse_json(r, (const char *)b.p, b.len, &arr)) {
    buf_free(&b);
    return; /* answered */
  }
  mi_task t[16];
  vw_task vt[32];
  size_t n = rc ? 0 : mindex_tasks(t, sizeof t / sizeof *t);
  size_t nv = rc ? 0 : vw_tasks(vt, sizeof vt / sizeof *vt);
  for (size_t i = 0; !rc && i < n + nv; i++) {
    if (i < n)
      rc = task_row(&r->a, arr, i, t[i].db, t[i].ddoc, t[i].name, t[i].changes_done, t[i].total_changes, t[i].started_on,
                    t[i].updated_on);
    else
      rc = task_row(&r->a, arr, i, vt[i - n].db, vt[i - n].ddoc, NULL, vt[i - n].changes_done, vt[i - n].total_changes,
                    vt[i - n].started_on, vt[i - n].updated_on);
  }
  if (rc) hres_err(r, rc);
  else hres_json(r, 200, arr);
  buf_free(&b);
}

void hapi_membership(hreq *r) {
  json_w w;
  hres_jw(r, 200, &w);
  json_w_raw(&w, "{\"all_nodes\":[\"" NODE_NAME "\"],\"cluster_nodes\":[\"" NODE_NAME "\"]}",
             strlen("{\"all_nodes\":[\"" NODE_NAME "\"],\"cluster_nodes\":[\"" NODE_NAME "\"]}"));
}

/* ---- /_node ------------------------------------------------------------------------ */

/* The running configuration as CouchDB's sections of string values. */
static json_val *config_now(hreq *r) {
  const api_srv *as = api_srv_of(r);
  const http_opts *o = http_options(r->srv);
  dv_arena *a = &r->a;
  char num[32];
  json_val *c = json_new_object(a), *s;
  if (!c) return NULL;
  s = json_new_object(a);
  if (json_obj_setz(a, c, "couchdb", s)) return NULL;
  snprintf(num, sizeof num, "%zu", as->max_document_size ? as->max_document_size : (size_t)STORE_DEFAULT_MAX_DOC);
  if (json_obj_setz(a, s, "max_document_size", json_new_stringz(a, num)) ||
      json_obj_setz(a, s, "uuid", json_new_stringz(a, api_srv_of(r)->uuid)) ||
      json_obj_setz(a, s, "database_dir", json_new_stringz(a, as->data_dir ? as->data_dir : "")))
    return NULL;
  s = json_new_object(a);
  if (json_obj_setz(a, c, "chttpd", s)) return NULL;
  snprintf(num, sizeof num, "%d", http_port(r->srv));
  if (json_obj_setz(a, s, "bind_address", json_new_stringz(a, o->bind)) ||
      json_obj_setz(a, s, "port", json_new_stringz(a, num)))
    return NULL;
  snprintf(num, sizeof num, "%zu", o->max_body);
  if (json_obj_setz(a, s, "max_http_request_size", json_new_stringz(a, num))) return NULL;
  snprintf(num, sizeof num, "%d", o->threads);
  if (json_obj_setz(a, s, "server_threads", json_new_stringz(a, num))) return NULL;
  s = json_new_object(a);
  if (json_obj_setz(a, c, "uuids", s) || json_obj_setz(a, s, "algorithm", json_new_stringz(a, "sequential")) ||
      json_obj_setz(a, s, "max_count", json_new_stringz(a, "1000")))
    return NULL;
  return c;
}

struct cfg_json {
  hreq *r;
  json_val *root;    /* sections */
  int err;
};

static int cfg_add(void *arg, const char *section, const char *key, const char *value) {
  struct cfg_json *c = arg;
  dv_arena *a = &c->r->a;
  json_val *s = json_obj_getz(c->root, section);
  if (!s) {
    s = json_new_object(a);
    if (!s || json_obj_setz(a, c->root, section, s)) return c->err = DV_ENOMEM;
  }
  if (json_obj_setz(a, s, key, json_new_stringz(a, value))) return c->err = DV_ENOMEM;
  return 0;
}

/* Every section: the running settings, then what the ini file and the
 * overrides say (they win). */
static json_val *config_all(hreq *r) {
  struct cfg_json c = {.r = r, .root = config_now(r)};
  if (!c.root) return NULL;
  dv_config *cfg = api_config(r);
  if (cfg && config_each(cfg, NULL, cfg_add, &c)) return NULL;
  return c.err ? NULL : c.root;
}

/* PUT/DELETE /_node/{name}/_config/{section}/{key}: the old value as a JSON
 * string ("" when there was none); admins' passwords are stored hashed;
 * written by config_set: to the store for a cluster-wide setting (then the
 * ini file as a copy; store/clustercfg.h), else to the ini file. */
static void config_write(hreq *r) {
  dv_config *cfg = api_config(r);
  if (!cfg || r->nseg != 5) {
    hres_method(r, "GET,HEAD");
    return;
  }
  const char *section = r->seg[3], *key = r->seg[4];
  if (strlen(section) != r->seg_len[3] || strlen(key) != r->seg_len[4] || !*key) {
    hres_errw(r, DV_EBAD_REQUEST, "Invalid section or key.");
    return;
  }
  char *old = NULL;
  int rc;
  if (r->method == HM_DELETE) {
    rc = config_delete(cfg, section, key, 1, &old);
    if (rc == DV_ENOT_FOUND) {
      hres_errw(r, DV_ENOT_FOUND, "unknown_config_value");
      return;
    }
  } else {
    json_val *v;
    if (hreq_json_body(r, 0, &v)) return;
    if (v->type != JSON_STRING || memchr(v->u.s, 0, v->len)) {
      hres_errw(r, DV_EBAD_REQUEST, "request body must be a JSON string");
      return;
    }
    const char *val = arena_strndup(&r->a, v->u.s, v->len);
    char *hashed = NULL;
    if (!strcmp(section, "admins") && !cr_admin_is_hashed(val)) {
      rc = auth_admin_hash(cfg, val, &hashed);
      if (rc) {
        hres_err(r, rc);
        return;
      }
      val = hashed;
    }
    rc = config_set(cfg, section, key, val, 1, &old);
    dv_free(hashed);
  }
  if (rc) {
    dv_free(old);
    if (rc == DV_EINVAL) hres_errw(r, DV_EBAD_REQUEST, "The value cannot be written to the configuration file.");
    else hres_err(r, rc);
    return;
  }
  if (!strcmp(section, "admins") || !strcmp(section, "chttpd_auth")) auth_cache_clear();
  char why[256]; /* [log] applies at once, as couch_log's config listener; a bad writer keeps the log as it was */
  if (!strcmp(section, "log") && log_config_apply(cfg, NULL, why, sizeof why)) log_error("%s; the log is unchanged", why);
  if (!strcmp(section, "stats") && !strcmp(key, "enabled")) api_stats_config(cfg);
  json_w w;
  hres_jw(r, 200, &w);
  json_w_strz(&w, old ? old : "");
  dv_free(old);
}

void hapi_node(hreq *r) {
  /* /_node/{name}[/_config[/section[/key]]] — name is _local or ours */
  if (r->nseg < 2 || (strcmp(r->seg[1], "_local") && strcmp(r->seg[1], NODE_NAME))) {
    hres_err(r, DV_ENOT_FOUND);
    return;
  }
  if (r->nseg >= 3 && !strcmp(r->seg[2], "_config") && (r->method == HM_PUT || r->method == HM_DELETE)) {
    config_write(r);
    return;
  }
  if (r->method != HM_GET && r->method != HM_HEAD) {
    hres_method(r, "GET,HEAD");
    return;
  }
  if (r->nseg == 2) {
    json_w w;
    hres_jw(r, 200, &w);
    json_w_raw(&w, "{\"name\":\"" NODE_NAME "\"}", strlen("{\"name\":\"" NODE_NAME "\"}"));
    return;
  }
  if (strcmp(r->seg[2], "_config") || r->nseg > 5) {
    hres_err(r, DV_ENOT_FOUND);
    return;
  }
  json_val *c = config_all(r);
  if (!c) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  if (r->nseg >= 4) {
    c = json_obj_get(c, r->seg[3], r->seg_len[3]);
    if (!c) c = json_new_object(&r->a); /* CouchDB: an unknown section is {} */
    if (r->nseg == 5) {
      c = json_obj_get(c, r->seg[4], r->seg_len[4]);
      if (!c) {
        hres_errw(r, DV_ENOT_FOUND, "unknown_config_value");
        return;
      }
    }
  }
  hres_json(r, 200, c);
}

/* ---- /_cluster_setup (CouchDB's setup_httpd) ---------------------------------------
 *
 * divan is one node, so it is "set up" as a CouchDB single node is: a
 * server admin exists and the system databases do. GET says so; POST runs
 * the single-node actions of Fauxton's setup wizard (enable_single_node:
 * an admin, [chttpd] bind_address and port, the system databases;
 * finish_cluster: the databases). The cluster actions have no meaning on
 * one node and answer 400. bind_address and port are written to the ini
 * file and take effect at the next start (CouchDB restarts its listener at
 * once). */

static const char *const setup_dbs[] = {"_users", "_replicator"}; /* setup:cluster_system_dbs() */

static int count_row(void *arg, const char *section, const char *key, const char *value) {
  (*(int *)arg)++;
  return 0;
}

static const char *jstr(hreq *r, const json_val *v);

static int has_admins(hreq *r) {
  int n = 0;
  dv_config *c = api_config(r);
  if (c) (void)config_each(c, "admins", count_row, &n);
  return n > 0;
}

/* The databases to check or create: ensure_dbs_exist (a JSON array of
 * names, from the query string or the body), else setup_dbs. Written into
 * names/n (at most max). 0, or -1 with 400 written. */
static int setup_db_list(hreq *r, const json_val *given, const char **names, size_t max, size_t *n) {
  *n = 0;
  if (!given) {
    for (size_t i = 0; i < sizeof setup_dbs / sizeof *setup_dbs; i++) names[(*n)++] = setup_dbs[i];
    return 0;
  }
  if (given->type != JSON_ARRAY || given->len > max) {
    hres_errw(r, DV_EBAD_REQUEST, "ensure_dbs_exist must be an array of database names.");
    return -1;
  }
  for (size_t i = 0; i < given->len; i++) {
    names[*n] = jstr(r, given->u.items[i]);
    if (!names[(*n)++]) {
      hres_errw(r, DV_EBAD_REQUEST, "ensure_dbs_exist must be an array of database names.");
      return -1;
    }
  }
  return 0;
}

/* Do all these databases exist (setup:has_cluster_system_dbs)? */
static int dbs_exist(hreq *r, const char **names, size_t n) {
  for (size_t i = 0; i < n; i++) {
    store_db *db = NULL;
    int rc = store_db_open(api_store(r), names[i], &db);
    store_db_close(db);
    if (rc) return 0;
  }
  return 1;
}

/* Create those that are missing (fabric:create_db of each). */
static int create_dbs(hreq *r, const char **names, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int rc = store_db_name_check(names[i], strlen(names[i]));
    if (!rc) rc = store_db_create(api_store(r), names[i]);
    if (rc == DV_EDB_EXISTS) rc = 0;
    if (rc) return rc;
  }
  return 0;
}

/* A JSON string as a C string in r->a (DOM strings are not NUL-terminated),
 * or NULL: not a string, or one holding NUL. */
static const char *jstr(hreq *r, const json_val *v) {
  if (!v || v->type != JSON_STRING || memchr(v->u.s, 0, v->len)) return NULL;
  return arena_strndup(&r->a, v->u.s, v->len);
}

/* A string or number member as text in r->a (port may be either), or NULL. */
static const char *member_text(hreq *r, const json_val *o, const char *k) {
  const json_val *v = json_obj_getz(o, k);
  if (v && v->type == JSON_NUMBER) return arena_strndup(&r->a, v->u.s, v->len);
  return jstr(r, v);
}

static void setup_post(hreq *r) {
  json_val *body;
  if (hreq_need_json(r) || hreq_json_body(r, 1, &body)) return;
  const char *action = jstr(r, json_obj_getz(body, "action"));
  if (!action) action = "missing";
  const char *names[64];
  size_t n;
  int single = !strcmp(action, "enable_single_node");
  if (!single && strcmp(action, "finish_cluster")) {
    if (!strcmp(action, "enable_cluster") || !strcmp(action, "add_node") || !strcmp(action, "remove_node") ||
        !strcmp(action, "receive_cookie"))
      hres_errw(r, DV_EBAD_REQUEST, "divan runs as a single node: configure it with enable_single_node.");
    else hres_errw(r, DV_EBAD_REQUEST, "Invalid Action'"); /* sic: CouchDB's reason */
    return;
  }
  if (setup_db_list(r, json_obj_getz(body, "ensure_dbs_exist"), names, sizeof names / sizeof *names, &n)) return;
  if (!single && dbs_exist(r, names, n)) {
    hres_errw(r, DV_EBAD_REQUEST, "Cluster is already finished");
    return;
  }
  int rc = 0;
  if (single) {
    dv_config *c = api_config(r);
    const char *user = member_text(r, body, "username"), *pw = member_text(r, body, "password_hash");
    if (!pw) pw = member_text(r, body, "password");
    if (!has_admins(r) && !(user && pw)) {
      hres_errw(r, DV_EBAD_REQUEST, "Cluster setup requires admin account to be configured");
      return;
    }
    const char *bind = member_text(r, body, "bind_address"), *port = member_text(r, body, "port");
    char *hashed = NULL;
    if (!c) rc = DV_EINTERNAL;
    if (!rc && user && pw && !cr_admin_is_hashed(pw)) rc = auth_admin_hash(c, pw, &hashed);
    if (!rc && user && pw) rc = config_set(c, "admins", user, hashed ? hashed : pw, 1, NULL);
    dv_free(hashed);
    if (!rc) rc = config_set(c, "chttpd", "bind_address", bind ? bind : "0.0.0.0", 1, NULL);
    if (!rc && port) rc = config_set(c, "chttpd", "port", port, 1, NULL);
    if (!rc) auth_cache_clear();
    if (rc == DV_EINVAL) {
      hres_errw(r, DV_EBAD_REQUEST, "The value cannot be written to the configuration file.");
      return;
    }
  }
  if (!rc) rc = create_dbs(r, names, n);
  if (rc) {
    hres_err(r, rc);
    return;
  }
  json_w w;
  hres_jw(r, 201, &w);
  json_w_raw(&w, "{\"ok\":true}", 11);
}

void hapi_cluster_setup(hreq *r) {
  if (r->method == HM_POST) {
    setup_post(r);
    return;
  }
  if (r->method != HM_GET && r->method != HM_HEAD) {
    hres_method(r, "GET,POST");
    return;
  }
  json_val *given = NULL;
  const char *names[64];
  size_t n;
  if (hq_json(r, "ensure_dbs_exist", &given) || setup_db_list(r, given, names, sizeof names / sizeof *names, &n)) return;
  dv_config *c = api_config(r);
  int enabled = (c && config_get_bool(c, "couchdb", "single_node", 0)) || (has_admins(r) && dbs_exist(r, names, n));
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "state");
  json_w_strz(&w, enabled ? "single_node_enabled" : "single_node_disabled");
  json_w_obj_end(&w);
}

/* ---- routes ------------------------------------------------------------------ */

static const http_route routes[] = {
    {GET_HEAD, "/", 0, hapi_root},
    {GET_HEAD, "/_up", 0, hapi_up},
    {GET_HEAD, "/_all_dbs", API_ALL_DBS, hapi_all_dbs},
    {GET_HEAD | M(POST), "/_dbs_info", API_ALL_DBS, hapi_dbs_info},
    {GET_HEAD, "/_uuids", 0, hapi_uuids},
    {GET_HEAD, "/_active_tasks", API_SERVER_ADMIN, hapi_active_tasks},
    {GET_HEAD, "/_membership", API_SERVER_ADMIN, hapi_membership},
    {HTTP_ANY, "/_node", API_SERVER_ADMIN, hapi_node},
    {HTTP_ANY, "/_node/{rest}", API_SERVER_ADMIN, hapi_node},
    {HTTP_ANY, "/_session", 0, hapi_session},
    {HTTP_ANY, "/_cluster_setup", API_SERVER_ADMIN, hapi_cluster_setup},
};
const api_routes api_server_routes = API_TABLE(routes);
