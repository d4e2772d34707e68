/* bulk.c — the bulk endpoints of a database: _bulk_docs, _bulk_get,
 * _revs_diff, _missing_revs, and the _all_docs family (_all_docs,
 * _design_docs, _local_docs and their /queries forms).
 *
 * Each handler turns a request into store.h calls and writes CouchDB 3.x's
 * answer, following chttpd_db.erl, couch_doc.erl and couch_mrview_http.erl
 * for status codes, messages and shapes:
 *
 *   _bulk_docs   every document is checked before anything is written (a
 *                bad id, rev or special member fails the whole request with
 *                400, as couch_doc:from_json_obj_validate does); _local/
 *                documents go to store_local_put, all others to
 *                store_update (one call, or with new_edits=false one per
 *                "round" so that several leaves of one id all land); the
 *                answer has one entry per document in request order, or
 *                (new_edits=false) only the failures.
 *   _bulk_get    one result per requested document, {"ok": doc} or
 *                {"error": {id, rev, error, reason}} per revision.
 *   _revs_diff / _missing_revs   the revisions a document's tree lacks,
 *                from store_doc_leaves (leaves plus their ancestors).
 *   _all_docs    range or keys mode; total_rows, offset and update_seq as
 *                CouchDB computes them (offset counts the live documents
 *                before the first row, which costs a scan of them).
 *
 * Attachments (api/docatt.c): _bulk_docs takes inline data and stubs (as PouchDB
 * and the replicator send them; an error of one document's stubs is that
 * document's row, a bad or oversized attachment fails the request as
 * CouchDB's from_json_obj_validate does); _bulk_get and _all_docs
 * include_docs inline content with attachments=true / atts_since.
 *
 * Not here: multipart _bulk_get answers, _purge. Answers are built whole in
 * r->out (bounded by the request), except _all_docs in range mode, which
 * streams through a feed ("streaming _all_docs" below).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "api/api.h"
#include "auth/users.h"
#include "repl/repl.h"
#include "util/alloc.h"

/* CouchDB's default max_bulk_docs_count and max_bulk_get_count. */
#define BULK_MAX_DOCS 10000

/* ---- small helpers ---------------------------------------------------------- */

static int mem_is(const char *p, size_t n, const char *s) {
  size_t sl = strlen(s);
  return n == sl && !memcmp(p, s, n);
}

static int has_prefix(const char *p, size_t n, const char *pfx) {
  size_t pl = strlen(pfx);
  return n >= pl && !memcmp(p, pfx, pl);
}

static int is_local_id(const char *id, size_t n) { return n > 7 && !memcmp(id, "_local/", 7); }

static int json_is_int(const json_val *v) {
  return v && v->type == JSON_NUMBER &&
         (v->num == JSON_NUM_INT64 || v->num == JSON_NUM_UINT64 || v->num == JSON_NUM_BIGINT);
}

/* Write a revision as a JSON string; t is scratch space. */
static void jw_rev(json_w *w, dv_buf *t, const store_rev *rv) {
  buf_reset(t);
  store_rev_format(rv, t);
  json_w_str(w, (const char *)t->p, t->len);
}

/* Append a revision as a JSON string literal to o; t is scratch space. */
static void buf_rev(dv_buf *o, dv_buf *t, const store_rev *rv) {
  if (!rv->raw) { /* hex: nothing to escape */
    buf_putc(o, '"');
    store_rev_format(rv, o);
    buf_putc(o, '"');
    return;
  }
  buf_reset(t);
  store_rev_format(rv, t);
  json_escape(o, (const char *)t->p, t->len);
}

/* CouchDB's parse_rev accepts "INT-ANYTHING" (Erlang list_to_integer for
 * the position: an optional sign and digits). The store is stricter later
 * and answers with the same message. */
static int rev_text_ok(const char *s, size_t n) {
  const char *dash = memchr(s, '-', n);
  if (!dash) return 0;
  const char *p = s;
  if (p < dash && (*p == '+' || *p == '-')) p++;
  if (p == dash) return 0;
  for (; p < dash; p++)
    if (*p < '0' || *p > '9') return 0;
  return 1;
}

/* A non-negative decimal integer in s[0..n), or -1. */
static int64_t parse_nonneg(const char *s, size_t n) {
  if (n == 0 || n > 18) return -1;
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

/* ---- _bulk_docs --------------------------------------------------------------- */

/* One document of a _bulk_docs request. */
typedef struct bdoc {
  const json_val *doc;  /* the document as sent */
  const char *id;       /* its _id (NULL: none given) */
  size_t id_len;
  const json_val *rev;  /* its _rev (a string), or NULL */
  int has_revisions;    /* 1: _revisions given */
  int deleted;          /* _deleted */
  int local;            /* 1: a _local/ document */
  store_edit *e;        /* regular documents: the edit in the edits array */
  json_val *body;       /* local documents: the user members */
  int64_t lrev;         /* local documents: N of the "0-N" given (0: none) */
  int rc;               /* local documents: the result */
  int64_t new_rev;      /* local documents: the revision written */
  int deny;             /* refused before writing (rights): its code … */
  const char *deny_reason; /* … and reason; the document is not written */
} bdoc;

/* The checks couch_doc:from_json_obj_validate and chttpd_db:validate_revs
 * make, in member order, with CouchDB's errors. Writes the error and
 * returns -1 when the document is refused. */
static int bdoc_check(hreq *r, bdoc *d, int new_edits) {
  const json_val *doc = d->doc;
  if (!doc || doc->type != JSON_OBJECT) {
    hres_errw(r, DV_EBAD_REQUEST, "Document must be a JSON object");
    return -1;
  }
  for (size_t i = 0; i < doc->len; i++) {
    const json_member *m = &doc->u.members[i];
    const json_val *v = m->val;
    int bad = 0;
    switch (store_doc_member(m->key, m->klen)) {
    case STORE_MEMBER_ID: {
      if (v->type != JSON_STRING) {
        hres_errw(r, DV_EBAD_DOCID, "Document id must be a string");
        return -1;
      }
      const char *why = store_docid_problem(v->u.s, v->len, 1);
      if (why) {
        hres_errw(r, DV_EBAD_DOCID, why);
        return -1;
      }
      d->id = v->u.s;
      d->id_len = v->len;
      break;
    }
    case STORE_MEMBER_REV:
      if (v->type != JSON_STRING || !rev_text_ok(v->u.s, v->len)) {
        hres_err(r, DV_EBAD_REV);
        return -1;
      }
      d->rev = v;
      break;
    case STORE_MEMBER_REVISIONS: {
      if (v->type != JSON_OBJECT) {
        bad = 1;
        break;
      }
      const json_val *start = json_obj_getz(v, "start"), *ids = json_obj_getz(v, "ids");
      if (!json_is_int(start)) {
        hres_errw(r, DV_EDOC_FIELD, "_revisions.start isn't an integer.");
        return -1;
      }
      if (!ids || ids->type != JSON_ARRAY) {
        hres_errw(r, DV_EDOC_FIELD, "_revisions.ids isn't a array.");
        return -1;
      }
      for (size_t k = 0; k < ids->len; k++)
        if (ids->u.items[k]->type != JSON_STRING) {
          hres_errw(r, DV_EDOC_FIELD, "RevId isn't a string");
          return -1;
        }
      d->has_revisions = 1;
      break;
    }
    case STORE_MEMBER_DELETED:
      if (v->type == JSON_BOOL) d->deleted = v->b;
      else bad = 1;
      break;
    case STORE_MEMBER_ATTACHMENTS:
      bad = v->type != JSON_OBJECT; /* store_edit_from_json reads them; hatt_prepare readies their content */
      break;
    case STORE_MEMBER_USER:
    case STORE_MEMBER_IGNORED:
    case STORE_MEMBER_KEPT:
      break;
    case STORE_MEMBER_BAD:
      bad = 1;
      break;
    }
    if (bad) {
      hres_errwf(r, DV_EDOC_FIELD, "Bad special document member: %.*s", (int)m->klen, m->key);
      return -1;
    }
  }
  if (!new_edits && !d->rev && !d->has_revisions) {
    hres_errw(r, DV_EBAD_REQUEST,
              "When `new_edits: false`, the document needs `_rev` or `_revisions` specified");
    return -1;
  }
  d->local = d->id && is_local_id(d->id, d->id_len);
  return 0;
}

/* A _local/ document: its user members, and N of the "0-N" it edits. */
static int bdoc_local(hreq *r, bdoc *d) {
  d->body = json_new_object(&r->a);
  if (!d->body) goto oom;
  for (size_t i = 0; i < d->doc->len; i++) {
    const json_member *m = &d->doc->u.members[i];
    store_member k = store_doc_member(m->key, m->klen);
    if (k != STORE_MEMBER_USER && k != STORE_MEMBER_KEPT) continue;
    if (json_obj_set(&r->a, d->body, m->key, m->klen, m->val)) goto oom;
  }
  if (d->rev) {
    const char *dash = memchr(d->rev->u.s, '-', d->rev->len);
    d->lrev = parse_nonneg(dash + 1, d->rev->len - (size_t)(dash + 1 - d->rev->u.s));
    if (d->lrev < 0) {
      hres_err(r, DV_EBAD_REV);
      return -1;
    }
  }
  return 0;
oom:
  hres_err(r, DV_ENOMEM);
  return -1;
}

static void jw_result_err(json_w *w, dv_buf *t, const char *id, size_t id_len, const store_rev *rev, int rc,
                          const char *why) {
  json_w_obj_begin(w);
  json_w_keyz(w, "id");
  json_w_str(w, id, id_len);
  if (rev) {
    json_w_keyz(w, "rev");
    jw_rev(w, t, rev);
  }
  json_w_keyz(w, "error");
  json_w_strz(w, dv_err_couch(rc));
  json_w_keyz(w, "reason");
  json_w_strz(w, why ? why : dv_strerror(rc));
  json_w_obj_end(w);
}

/* An id and where it stands in the request, for sorting. */
typedef struct idpos {
  const char *id; /* the document's _id */
  size_t len;
  size_t at;      /* its index in the request */
} idpos;

static int idpos_cmp(const void *a, const void *b) {
  const idpos *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->id, y->id, n);
  if (c) return c;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* Where each regular document's edit goes. The store refuses a second edit
 * of an id in one call; interactively that is CouchDB's answer too (a
 * conflict), so one call takes everything. Replication sends every leaf of
 * a conflicted document in one request and CouchDB merges them all, so
 * with new_edits=false the edits are laid out in rounds (the k-th
 * occurrence of each id in round k), one store_update per round. Writes
 * slot[i] (index into the edits array), round_end[] (end of each round's
 * slice), their counts. */
static int bulk_rounds(hreq *r, const bdoc *d, size_t n, int new_edits, size_t **out_slot, size_t **out_round_end,
                       size_t *out_rounds, size_t *out_edits) {
  size_t *slot = arena_alloc(&r->a, (n ? n : 1) * sizeof *slot);
  size_t *occ = arena_calloc(&r->a, (n ? n : 1) * sizeof *occ);
  idpos *v = arena_alloc(&r->a, (n ? n : 1) * sizeof *v);
  size_t *count = arena_calloc(&r->a, (n + 1) * sizeof *count);
  if (!slot || !occ || !v || !count) goto oom;
  size_t nv = 0, n_edits = 0, n_rounds = 0;
  for (size_t i = 0; i < n; i++) {
    if (d[i].local || d[i].deny) continue;
    n_edits++;
    if (!new_edits && d[i].id) v[nv++] = (idpos){.id = d[i].id, .len = d[i].id_len, .at = i};
  }
  qsort(v, nv, sizeof *v, idpos_cmp);
  for (size_t k = 1; k < nv; k++)
    if (v[k].len == v[k - 1].len && !memcmp(v[k].id, v[k - 1].id, v[k].len)) occ[v[k].at] = occ[v[k - 1].at] + 1;
  for (size_t i = 0; i < n; i++)
    if (!d[i].local && !d[i].deny) {
      count[occ[i]]++;
      if (occ[i] + 1 > n_rounds) n_rounds = occ[i] + 1;
    }
  size_t *round_end = arena_alloc(&r->a, (n_rounds ? n_rounds : 1) * sizeof *round_end);
  if (!round_end) goto oom;
  for (size_t k = 0, at = 0; k < n_rounds; k++) { /* count[k] becomes the round's next free slot */
    size_t c = count[k];
    count[k] = at;
    at += c;
    round_end[k] = at;
  }
  for (size_t i = 0; i < n; i++)
    if (!d[i].local && !d[i].deny) slot[i] = count[occ[i]]++;
  *out_slot = slot;
  *out_round_end = round_end;
  *out_rounds = n_rounds;
  *out_edits = n_edits;
  return 0;
oom:
  hres_err(r, DV_ENOMEM);
  return -1;
}

/* May the requester write this document? Design documents need a db
 * admin. In the users database a plaintext password becomes PBKDF2 fields
 * here (d->doc replaced); the _users rules answer from the store's edit
 * (its validator, auth.c). A refusal is the document's own result row
 * (d->deny, d->deny_reason), as CouchDB answers: api_may_write; -1 only for a request-wide error,
 * written. */
static int bdoc_rights(hreq *r, bdoc *d) {
  const char *why;
  json_val *doc = (json_val *)d->doc;
  int rc = api_may_write(r, d->id, d->id ? d->id_len : 0, 0, &doc, &why);
  if (rc == DV_EFORBIDDEN || rc == DV_EUNAUTHORIZED) {
    d->deny = rc;
    d->deny_reason = why;
    return 0;
  }
  if (rc) {
    hres_err(r, rc);
    return -1;
  }
  d->doc = doc;
  return 0;
}

/* A _bulk_docs write in progress: its rounds, one store_update_async each. */
typedef struct bulk_w {
  api_write w;
  bdoc *d;
  size_t n;
  store_edit *edits;
  size_t *round_end;
  size_t n_rounds, k;   /* rounds, and the next one */
  int new_edits;
} bulk_w;

static void bulk_answer(hreq *r, bulk_w *b);

/* Start the next round, or answer once they are all written. */
static void bulk_round(hreq *r) {
  bulk_w *b = r->app->pending;
  if (b->w.rc) {
    hres_err(r, b->w.rc);
    return;
  }
  if (b->k == b->n_rounds) {
    bulk_answer(r, b);
    return;
  }
  size_t from = b->k ? b->round_end[b->k - 1] : 0, to = b->round_end[b->k++];
  api_update(r, &b->w, b->edits + from, to - from, b->new_edits, bulk_round);
}

static void bulk_answer(hreq *r, bulk_w *b) {
  bdoc *d = b->d;
  size_t n = b->n;
  int new_edits = b->new_edits;
  json_w w;
  dv_buf t;
  buf_init(&t);
  hres_jw(r, 201, &w);
  json_w_arr_begin(&w);
  for (size_t i = 0; i < n; i++) {
    if (d[i].deny) { /* refused for its rights, as CouchDB: one row */
      json_w_obj_begin(&w);
      json_w_keyz(&w, "id");
      if (d[i].id) json_w_str(&w, d[i].id, d[i].id_len);
      else json_w_null(&w);
      json_w_keyz(&w, "error");
      json_w_strz(&w, dv_err_couch(d[i].deny));
      json_w_keyz(&w, "reason");
      json_w_strz(&w, d[i].deny_reason);
      json_w_obj_end(&w);
      continue;
    }
    const char *id = d[i].local ? d[i].id : d[i].e->id;
    size_t id_len = d[i].local ? d[i].id_len : d[i].e->id_len;
    int rc = d[i].local ? d[i].rc : d[i].e->rc;
    const char *why = rc && !d[i].local ? hatt_reason(r, rc, NULL, d[i].e) : NULL;
    if (!new_edits) { /* replication: only the failures, with their rev */
      const store_edit *e = d[i].e;
      /* a validator's refusal too: {id, rev, error, reason}
       * (chttpd_db:update_doc_result_to_json({{Id, Rev}, Error})) */
      if (rc) jw_result_err(&w, &t, id, id_len, e && e->path_len ? &e->path[0] : NULL, rc, why);
      continue;
    }
    if (rc) {
      jw_result_err(&w, &t, id, id_len, NULL, rc, why);
      continue;
    }
    json_w_obj_begin(&w);
    json_w_keyz(&w, "ok");
    json_w_bool(&w, 1);
    json_w_keyz(&w, "id");
    json_w_str(&w, id, id_len);
    json_w_keyz(&w, "rev");
    if (d[i].local) {
      char rv[32];
      int rl = snprintf(rv, sizeof rv, "0-%lld", (long long)d[i].new_rev);
      json_w_str(&w, rv, (size_t)rl);
    } else {
      jw_rev(&w, &t, &d[i].e->rev);
    }
    json_w_obj_end(&w);
  }
  json_w_arr_end(&w);
  buf_free(&t);
  if (json_w_finish(&w)) hres_err(r, DV_ENOMEM);
}

void hapi_bulk_docs(hreq *r) {
  json_val *body = r->json;
  const json_val *docs = json_obj_getz(body, "docs");
  dv_stat_inc(DV_ST_HTTPD_BULK_REQUESTS);
  if (docs && docs->type == JSON_ARRAY) dv_stat_hist(DV_SH_HTTPD_BULK_DOCS, (double)docs->len);
  if (!docs) {
    hres_errw(r, DV_EBAD_REQUEST, "POST body must include `docs` parameter.");
    return;
  }
  if (docs->type != JSON_ARRAY) {
    hres_errw(r, DV_EBAD_REQUEST, "`docs` parameter must be an array.");
    return;
  }
  if (docs->len > BULK_MAX_DOCS) {
    hres_errwf(r, DV_EBULK_DOCS_COUNT, "%d", BULK_MAX_DOCS);
    return;
  }
  int new_edits = 1;
  const json_val *ne = json_obj_getz(body, "new_edits");
  if (ne) {
    if (ne->type != JSON_BOOL) {
      hres_errw(r, DV_EBAD_REQUEST, "`new_edits` parameter must be a boolean.");
      return;
    }
    new_edits = ne->b;
  }

  /* Check every document before writing any. */
  size_t n = docs->len;
  bdoc *d = arena_calloc(&r->a, (n ? n : 1) * sizeof *d);
  if (!d) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    d[i].doc = docs->u.items[i];
    if (bdoc_check(r, &d[i], new_edits)) return;
    if (d[i].local && bdoc_local(r, &d[i])) return;
    if (!d[i].local && bdoc_rights(r, &d[i])) return;
  }
  size_t *slot = NULL, *round_end = NULL, n_rounds = 0, n_edits = 0;
  if (bulk_rounds(r, d, n, new_edits, &slot, &round_end, &n_rounds, &n_edits)) return;
  store_edit *edits = arena_calloc(&r->a, (n_edits ? n_edits : 1) * sizeof *edits);
  hatt_w *aw = hatt_w_new(r);
  if (!edits || !aw) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  /* the ids to mint, as one run (api_uuids) */
  size_t n_mint = 0;
  for (size_t i = 0; i < n; i++)
    n_mint += !d[i].local && !d[i].deny && !json_obj_getz(d[i].doc, "_id");
  char *mint = n_mint ? arena_alloc(&r->a, 33 * n_mint) : NULL;
  if (n_mint && !mint) {
    hres_err(r, DV_ENOMEM);
    goto done;
  }
  if (n_mint) api_uuids(mint, n_mint);
  for (size_t i = 0; i < n; i++) {
    if (d[i].local || d[i].deny) continue;
    store_edit *e = d[i].e = &edits[slot[i]];
    int rc = store_edit_from_json(&r->a, d[i].doc, new_edits, e);
    if (rc) {
      hres_errw(r, rc, hatt_reason(r, rc, d[i].doc, NULL));
      goto done;
    }
    if (!e->id) { /* CouchDB mints a uuid for a document without _id */
      char *u = n_mint ? mint : arena_alloc(&r->a, 33);
      if (!u) {
        hres_err(r, DV_ENOMEM);
        goto done;
      }
      if (n_mint) mint += 33, n_mint--;
      else api_uuid(u);
      e->id = u;
      e->id_len = 32;
    }
    const char *why = NULL;
    if ((rc = hatt_prepare(aw, e, &why))) {
      hres_errw(r, rc, why);
      goto done;
    }
  }

  /* Write: local documents one by one, the others with one store_update
   * per round. */
  for (size_t i = 0; i < n; i++) {
    if (!d[i].local) continue;
    /* new_edits or not, as CouchDB: the rev given + 1, never checked */
    d[i].rc = store_local_put(r->app->db, d[i].id, d[i].id_len, d[i].body, d[i].lrev, d[i].deleted, 0, &d[i].new_rev);
    if (!new_edits && d[i].deleted && d[i].rc == DV_ENOT_FOUND) d[i].rc = 0; /* replicating a deletion of nothing */
    if (d[i].rc == DV_ENO_DB || dv_err_retryable(d[i].rc)) {
      hres_err(r, d[i].rc);
      goto done;
    }
  }
  /* the rounds go to the store one after the other, each without holding
   * a thread while it commits (bulk_round) */
  bulk_w *b = arena_calloc(&r->a, sizeof *b);
  if (!b) {
    hres_err(r, DV_ENOMEM);
    goto done;
  }
  *b = (bulk_w){.d = d, .n = n, .edits = edits, .round_end = round_end, .n_rounds = n_rounds,
                .new_edits = new_edits};
  r->app->pending = b;
  bulk_round(r);
  return;
done:
  hatt_w_done(aw);
}

/* ---- _bulk_get ------------------------------------------------------------------ */

/* {"error":{"id":id,"rev":rev,"error":error,"reason":reason}} for the code
 * rc (reason NULL: its own); id and rev are JSON values (null when
 * absent), rev_text a plain string instead. */
static void jw_get_error(json_w *w, const json_val *id, const json_val *rev, const char *rev_text, int rc,
                         const char *reason) {
  json_w_obj_begin(w);
  json_w_keyz(w, "error");
  json_w_obj_begin(w);
  json_w_keyz(w, "id");
  if (id) json_w_val(w, id);
  else json_w_null(w);
  json_w_keyz(w, "rev");
  if (rev_text) json_w_strz(w, rev_text);
  else if (rev) json_w_val(w, rev);
  else json_w_null(w);
  json_w_keyz(w, "error");
  json_w_strz(w, dv_err_couch(rc));
  json_w_keyz(w, "reason");
  json_w_strz(w, reason ? reason : dv_strerror(rc));
  json_w_obj_end(w);
  json_w_obj_end(w);
}

/* One requested document: {"id":…,"docs":[…]}. Returns 0, or a
 * request-wide store error (nothing of the entry is usable then).
 * with_atts: attachments=true (an item's non-empty atts_since implies it). */
static int bulk_get_one(hreq *r, json_w *w, const json_val *item, int flags, int with_atts) {
  const json_val *id = NULL, *rev = NULL;
  int err = 0; /* the entry's error, with why its reason */
  const char *why = NULL;
  store_rev rv;
  int have_rev = 0;
  if (!item || item->type != JSON_OBJECT || item->len == 0) {
    err = DV_EBAD_REQUEST, why = "document must be a JSON object";
  } else if (!(id = json_obj_getz(item, "id"))) {
    err = DV_EBAD_REQUEST, why = "document id missed";
  } else if (id->type != JSON_STRING) {
    err = DV_EBAD_DOCID, why = "Document id must be a string";
  } else if ((why = store_docid_problem(id->u.s, id->len, 1))) {
    err = DV_EBAD_DOCID;
  } else if ((rev = json_obj_getz(item, "rev"))) {
    if (rev->type != JSON_STRING || !rev_text_ok(rev->u.s, rev->len) ||
        (!is_local_id(id->u.s, id->len) && store_rev_parse(rev->u.s, rev->len, &r->a, &rv)))
      err = DV_EBAD_REQUEST, why = "Invalid rev format";
    else
      have_rev = 1;
  }
  const json_val *as = NULL;
  if (!err) { /* atts_since must be a list of revs */
    as = json_obj_getz(item, "atts_since");
    if (as && as->type != JSON_ARRAY) {
      rev = as;
      err = DV_EBAD_REQUEST, why = "att_since value must be array of revs.";
    }
    for (size_t k = 0; !err && as && k < as->len; k++) {
      const json_val *a = as->u.items[k];
      store_rev tmp;
      if (a->type != JSON_STRING || !rev_text_ok(a->u.s, a->len) || store_rev_parse(a->u.s, a->len, &r->a, &tmp))
        rev = a, err = DV_EBAD_REQUEST, why = "Invalid rev format";
    }
  }
  json_w_obj_begin(w);
  json_w_keyz(w, "id");
  if (id) json_w_val(w, id);
  else json_w_null(w);
  json_w_keyz(w, "docs");
  json_w_arr_begin(w);
  if (err) {
    jw_get_error(w, id, rev, NULL, err, why);
    goto done;
  }
  if (is_local_id(id->u.s, id->len)) { /* a _local/ document has one revision */
    json_val *doc;
    int rc = store_local_get(r->app->db, id->u.s, id->len, &r->a, &doc);
    if (rc && rc != DV_ENOT_FOUND) return rc;
    const json_val *cur = rc ? NULL : json_obj_getz(doc, "_rev");
    if (rc || (have_rev && (!cur || cur->len != rev->len || memcmp(cur->u.s, rev->u.s, rev->len)))) {
      jw_get_error(w, id, rev, have_rev ? NULL : "undefined", DV_ENOT_FOUND, NULL);
    } else {
      json_w_obj_begin(w);
      json_w_keyz(w, "ok");
      json_w_val(w, doc);
      json_w_obj_end(w);
    }
    goto done;
  }
  json_val *res;
  int rc = store_doc_open_revs(r->app->db, id->u.s, id->len, have_rev ? &rv : NULL, have_rev, flags, &r->a, &res);
  if (rc == DV_ENOT_FOUND || rc == DV_EBAD_DOCID) {
    jw_get_error(w, id, rev, have_rev ? NULL : "undefined", DV_ENOT_FOUND, NULL);
    goto done;
  }
  if (rc) return rc;
  hatt_ro ro = {.data = with_atts || (as && as->len), .since = as};
  for (size_t k = 0; k < res->len; k++) {
    const json_val *o = res->u.items[k];
    const json_val *miss = json_obj_getz(o, "missing");
    if (miss) {
      jw_get_error(w, id, miss, NULL, DV_ENOT_FOUND, NULL);
      continue;
    }
    if (ro.data && (rc = hatt_doc(r->app->db, &r->a, json_obj_getz(o, "ok"), &ro, NULL, NULL))) return rc;
    json_w_val(w, o);
  }
  if (res->len == 0) jw_get_error(w, id, rev, have_rev ? NULL : "undefined", DV_ENOT_FOUND, NULL);
done:
  json_w_arr_end(w);
  json_w_obj_end(w);
  return 0;
}

void hapi_bulk_get(hreq *r) {
  json_val *body = r->json;
  /* Query parameters: couch_httpd_db's doc options; the per-revision ones
   * make no sense here and are refused. */
  int flags = 0, with_atts = 0;
  for (int i = 0; i < r->nparams; i++) {
    const hparam *p = &r->params[i];
    static const char *const refused[] = {"open_revs", "new_edits", "w", "rev", "atts_since"};
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++)
      if (!strcmp(p->key, refused[k])) {
        hres_errwf(r, DV_EBAD_REQUEST, "\"%s\" query parameter is not acceptable", p->key);
        return;
      }
    if (strcmp(p->val, "true")) continue;
    if (!strcmp(p->key, "revs")) flags |= STORE_REVS;
    else if (!strcmp(p->key, "revs_info")) flags |= STORE_REVS_INFO;
    else if (!strcmp(p->key, "conflicts")) flags |= STORE_CONFLICTS;
    else if (!strcmp(p->key, "deleted_conflicts")) flags |= STORE_DELETED_CONFLICTS;
    else if (!strcmp(p->key, "meta")) flags |= STORE_META;
    else if (!strcmp(p->key, "local_seq")) flags |= STORE_LOCAL_SEQ;
    else if (!strcmp(p->key, "latest")) flags |= STORE_LATEST;
    else if (!strcmp(p->key, "att_encoding_info")) flags |= STORE_ATT_INFO;
    else if (!strcmp(p->key, "attachments")) with_atts = 1;
  }
  const json_val *docs = json_obj_getz(body, "docs");
  if (!docs || docs->type != JSON_ARRAY) {
    hres_errw(r, DV_EBAD_REQUEST, "Missing JSON list of 'docs'.");
    return;
  }
  if (docs->len > BULK_MAX_DOCS) {
    hres_errwf(r, DV_EBULK_GET_COUNT, "%d", BULK_MAX_DOCS);
    return;
  }
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "results");
  json_w_arr_begin(&w);
  for (size_t i = 0; i < docs->len; i++) {
    int rc = bulk_get_one(r, &w, docs->u.items[i], flags, with_atts);
    if (rc) {
      hres_err(r, rc);
      return;
    }
  }
  json_w_arr_end(&w);
  json_w_obj_end(&w);
  if (json_w_finish(&w)) hres_err(r, DV_ENOMEM);
}

/* ---- _revs_diff and _missing_revs ------------------------------------------------ */

/* The revisions asked about for one document. */
typedef struct rdiff {
  const json_member *m;  /* id → [revs] as sent */
  store_rev *revs;       /* parsed */
  size_t n;
} rdiff;

/* Parse the body {"id": ["rev", …], …}: writes CouchDB's error and returns
 * NULL on bad input. */
static rdiff *rdiff_parse(hreq *r, size_t *out_n) {
  json_val *body = r->json;
  rdiff *q = arena_calloc(&r->a, (body->len ? body->len : 1) * sizeof *q);
  if (!q) {
    hres_err(r, DV_ENOMEM);
    return NULL;
  }
  for (size_t i = 0; i < body->len; i++) {
    const json_member *m = &body->u.members[i];
    q[i].m = m;
    if (m->val->type != JSON_ARRAY) {
      hres_errw(r, DV_EBAD_REQUEST, "Invalid list of revisions");
      return NULL;
    }
    q[i].n = m->val->len;
    q[i].revs = arena_alloc(&r->a, (q[i].n ? q[i].n : 1) * sizeof *q[i].revs);
    if (!q[i].revs) {
      hres_err(r, DV_ENOMEM);
      return NULL;
    }
    for (size_t k = 0; k < q[i].n; k++) {
      const json_val *s = m->val->u.items[k];
      if (s->type != JSON_STRING || store_rev_parse(s->u.s, s->len, &r->a, &q[i].revs[k])) {
        hres_err(r, DV_EBAD_REV);
        return NULL;
      }
    }
  }
  *out_n = body->len;
  return q;
}

/* Which of q's revs the tree lacks (marked in miss[]), and how many. Leaves
 * are returned for possible_ancestors. Request-wide errors are returned. */
static int rdiff_missing(hreq *r, const rdiff *q, char *miss, size_t *n_miss, store_leaf **leaves,
                         size_t *n_leaves) {
  *leaves = NULL;
  *n_leaves = 0;
  *n_miss = 0;
  int rc = store_doc_leaves(r->app->db, q->m->key, q->m->klen, &r->a, leaves, n_leaves);
  if (rc == DV_ENOT_FOUND || rc == DV_EBAD_DOCID) rc = 0, *n_leaves = 0;
  if (rc) return rc;
  for (size_t k = 0; k < q->n; k++) {
    int found = 0;
    for (size_t j = 0; !found && j < *n_leaves; j++) {
      const store_leaf *l = &(*leaves)[j];
      if (!store_rev_cmp(&l->rev, &q->revs[k])) found = 1;
      for (size_t a = 0; !found && a < l->n_anc; a++)
        if (!store_rev_cmp(&l->anc[a], &q->revs[k])) found = 1;
    }
    miss[k] = !found;
    *n_miss += !found;
  }
  return 0;
}

/* diff = 1: _revs_diff's answer; 0: _missing_revs'. */
static void revs_diff(hreq *r, int diff) {
  size_t n;
  rdiff *q = rdiff_parse(r, &n);
  if (!q) return;
  json_w w;
  dv_buf t;
  buf_init(&t);
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  if (!diff) {
    json_w_keyz(&w, "missing_revs");
    json_w_obj_begin(&w);
  }
  for (size_t i = 0; i < n; i++) {
    char *miss = arena_alloc(&r->a, q[i].n ? q[i].n : 1);
    size_t n_miss, n_leaves;
    store_leaf *leaves;
    int rc = miss ? rdiff_missing(r, &q[i], miss, &n_miss, &leaves, &n_leaves) : DV_ENOMEM;
    if (rc) {
      buf_free(&t);
      hres_err(r, rc);
      return;
    }
    if (!n_miss) continue;
    json_w_key(&w, q[i].m->key, q[i].m->klen);
    if (diff) {
      json_w_obj_begin(&w);
      json_w_keyz(&w, "missing");
    }
    json_w_arr_begin(&w);
    int64_t max_pos = 0;
    for (size_t k = 0; k < q[i].n; k++) {
      if (!miss[k]) continue;
      jw_rev(&w, &t, &q[i].revs[k]);
      if (q[i].revs[k].pos > max_pos) max_pos = q[i].revs[k].pos;
    }
    json_w_arr_end(&w);
    if (diff) {
      /* possible_ancestors: the leaves older than a missing revision */
      size_t n_anc = 0;
      for (size_t j = 0; j < n_leaves; j++) n_anc += leaves[j].rev.pos < max_pos;
      if (n_anc) {
        json_w_keyz(&w, "possible_ancestors");
        json_w_arr_begin(&w);
        for (size_t j = 0; j < n_leaves; j++)
          if (leaves[j].rev.pos < max_pos) jw_rev(&w, &t, &leaves[j].rev);
        json_w_arr_end(&w);
      }
      json_w_obj_end(&w);
    }
  }
  if (!diff) json_w_obj_end(&w);
  json_w_obj_end(&w);
  buf_free(&t);
  if (json_w_finish(&w)) hres_err(r, DV_ENOMEM);
}

void hapi_revs_diff(hreq *r) { revs_diff(r, 1); }
void hapi_missing_revs(hreq *r) { revs_diff(r, 0); }

/* ---- _all_docs, _design_docs, _local_docs ------------------------------------------ */

/* One query's arguments (couch_mrview's #mrargs, the parts that apply). */
typedef struct adq {
  int descending;            /* descending=true */
  int include_docs;          /* include_docs=true */
  int inclusive_end;         /* inclusive_end (default true) */
  int conflicts;             /* conflicts=true: _conflicts in included docs */
  int update_seq;            /* update_seq=true */
  int attachments;           /* attachments=true: included docs carry content */
  int att_encoding_info;     /* att_encoding_info=true */
  int64_t limit;             /* -1: none */
  int64_t skip;              /* rows dropped first */
  const json_val *start_key; /* startkey/start_key/key (any JSON), or NULL */
  const json_val *end_key;   /* endkey/end_key/key, or NULL */
  const char *start_docid;   /* startkey_docid, or NULL */
  size_t start_docid_len;
  const char *end_docid;     /* endkey_docid, or NULL */
  size_t end_docid_len;
  const json_val *keys;      /* keys (any JSON until validated), or NULL */
  int reduce;                /* reduce=true given */
  int group;                 /* -1 unset, 0 false, 1 true */
  int64_t group_level;       /* -1 unset */
  int partition;             /* partition given */
} adq;

static void adq_init(adq *q) {
  memset(q, 0, sizeof *q);
  q->inclusive_end = 1;
  q->limit = -1;
  q->group = -1;
  q->group_level = -1;
}

/* A parameter's value: the text of a query-string value, or a JSON value
 * from a POST body (CouchDB's "decoded" parameters). */
typedef struct pval {
  const char *s;     /* text (NULL when j is set) */
  size_t n;
  const json_val *j; /* decoded JSON */
} pval;

/* The value as Erlang's ~p shows it in CouchDB's messages: "text" for a
 * query-string value, <<"text">> for a decoded string, else its JSON. */
static const char *pval_show(hreq *r, const pval *v) {
  dv_buf b;
  buf_init(&b);
  if (!v->j) {
    buf_putc(&b, '"');
    buf_append(&b, v->s, v->n);
    buf_putc(&b, '"');
  } else if (v->j->type == JSON_STRING) {
    buf_puts(&b, "<<\"");
    buf_append(&b, v->j->u.s, v->j->len);
    buf_puts(&b, "\">>");
  } else if (json_write(&b, v->j)) {
    buf_reset(&b);
  }
  char *s = arena_strndup(&r->a, b.p ? (const char *)b.p : "", b.len);
  buf_free(&b);
  return s ? s : "";
}

/* The text of a value that must be a string (NULL for other JSON). */
static const char *pval_text(const pval *v, size_t *n) {
  if (!v->j) {
    *n = v->n;
    return v->s;
  }
  if (v->j->type == JSON_STRING) {
    *n = v->j->len;
    return v->j->u.s;
  }
  return NULL;
}

static int pval_bool(hreq *r, const pval *v, int *out) {
  if (v->j && v->j->type == JSON_BOOL) {
    *out = v->j->b;
    return 0;
  }
  size_t n;
  const char *s = pval_text(v, &n);
  if (s && n == 4 && !strncasecmp(s, "true", 4)) *out = 1;
  else if (s && n == 5 && !strncasecmp(s, "false", 5)) *out = 0;
  else {
    hres_errwf(r, DV_EQUERY_PARSE, "Invalid boolean parameter: %s", pval_show(r, v));
    return -1;
  }
  return 0;
}

/* couch_mrview_http:parse_pos_int. */
static int pval_pos_int(hreq *r, const pval *v, int64_t *out) {
  size_t n;
  const char *s = pval_text(v, &n);
  if (!s && json_is_int(v->j)) s = v->j->u.s, n = v->j->len;
  size_t i = 0;
  int neg = 0;
  if (s && n && (s[0] == '+' || s[0] == '-')) neg = s[0] == '-', i = 1;
  int ok = s && i < n;
  int64_t x = 0;
  for (; ok && i < n; i++) {
    if (s[i] < '0' || s[i] > '9') ok = 0;
    else x = x > (INT64_MAX - 9) / 10 ? INT64_MAX : x * 10 + (s[i] - '0'); /* saturate: "no limit" */
  }
  if (!ok) {
    hres_errwf(r, DV_EQUERY_PARSE, "Invalid value for integer: %s", pval_show(r, v));
    return -1;
  }
  if (neg && x) {
    hres_errwf(r, DV_EQUERY_PARSE, "Invalid value for positive integer: %s", pval_show(r, v));
    return -1;
  }
  *out = x;
  return 0;
}

/* A JSON key: parsed from the query string, as is from a body. */
static int pval_json(hreq *r, const pval *v, const json_val **out) {
  if (v->j) {
    *out = v->j;
    return 0;
  }
  json_val *j;
  if (hreq_parse_json(r, v->s, v->n, &j)) return -1;
  *out = j;
  return 0;
}

static int pval_docid(hreq *r, const pval *v, const char *name, const char **out, size_t *out_len) {
  size_t n;
  const char *s = pval_text(v, &n);
  if (!s) {
    hres_errwf(r, DV_EQUERY_PARSE, "`%s` must be a string.", name);
    return -1;
  }
  *out = s;
  *out_len = n;
  return 0;
}

/* One parameter (couch_mrview_http:parse_param); unknown ones are ignored. */
static int adq_param(hreq *r, adq *q, const char *k, size_t kl, const pval *v) {
  int b;
  size_t n;
  const char *s;
#define K(name) mem_is(k, kl, name)
  if (K("key")) {
    if (pval_json(r, v, &q->start_key)) return -1;
    q->end_key = q->start_key;
  } else if (K("keys")) {
    return pval_json(r, v, &q->keys);
  } else if (K("startkey") || K("start_key")) {
    return pval_json(r, v, &q->start_key);
  } else if (K("endkey") || K("end_key")) {
    return pval_json(r, v, &q->end_key);
  } else if (K("startkey_docid") || K("start_key_doc_id")) {
    return pval_docid(r, v, "start_key_docid", &q->start_docid, &q->start_docid_len);
  } else if (K("endkey_docid") || K("end_key_doc_id")) {
    return pval_docid(r, v, "end_key_docid", &q->end_docid, &q->end_docid_len);
  } else if (K("limit")) {
    return pval_pos_int(r, v, &q->limit);
  } else if (K("skip")) {
    return pval_pos_int(r, v, &q->skip);
  } else if (K("group_level")) {
    return pval_pos_int(r, v, &q->group_level);
  } else if (K("descending")) {
    return pval_bool(r, v, &q->descending);
  } else if (K("include_docs")) {
    return pval_bool(r, v, &q->include_docs);
  } else if (K("inclusive_end")) {
    return pval_bool(r, v, &q->inclusive_end);
  } else if (K("conflicts")) {
    return pval_bool(r, v, &q->conflicts);
  } else if (K("update_seq")) {
    return pval_bool(r, v, &q->update_seq);
  } else if (K("reduce")) {
    return pval_bool(r, v, &q->reduce);
  } else if (K("group")) {
    return pval_bool(r, v, &q->group);
  } else if (K("attachments")) {
    return pval_bool(r, v, &q->attachments);
  } else if (K("att_encoding_info")) {
    return pval_bool(r, v, &q->att_encoding_info);
  } else if (K("sorted")) {
    return pval_bool(r, v, &b); /* checked; rows are always sorted */
  } else if (K("stale")) {
    s = pval_text(v, &n);
    if (!s || !(mem_is(s, n, "ok") || mem_is(s, n, "update_after"))) {
      hres_errw(r, DV_EQUERY_PARSE, "Invalid value for `stale`.");
      return -1;
    }
  } else if (K("stable")) {
    s = pval_text(v, &n);
    if (!s || !(mem_is(s, n, "true") || mem_is(s, n, "false"))) {
      hres_errw(r, DV_EQUERY_PARSE, "Invalid value for `stable`.");
      return -1;
    }
  } else if (K("update")) {
    s = pval_text(v, &n);
    if (!s || !(mem_is(s, n, "true") || mem_is(s, n, "false") || mem_is(s, n, "lazy"))) {
      hres_errw(r, DV_EQUERY_PARSE, "Invalid value for `update`.");
      return -1;
    }
  } else if (K("partition")) {
    q->partition = 1;
  }
#undef K
  return 0;
}

static int adq_params_qs(hreq *r, adq *q) {
  for (int i = 0; i < r->nparams; i++) {
    pval v = {.s = r->params[i].val, .n = r->params[i].vlen};
    if (adq_param(r, q, r->params[i].key, r->params[i].klen, &v)) return -1;
  }
  return 0;
}

static int adq_params_obj(hreq *r, adq *q, const json_val *o) {
  for (size_t i = 0; i < o->len; i++) {
    pval v = {.j = o->u.members[i].val};
    if (adq_param(r, q, o->u.members[i].key, o->u.members[i].klen, &v)) return -1;
  }
  return 0;
}

/* couch_mrview_util:validate_args, for a map-only "view". */
static int adq_validate(hreq *r, adq *q) {
  const char *why = NULL;
  int grouped = q->group == 1 ? (q->group_level != 0) : q->group_level > 0;
  if (q->group == 0 && q->group_level > 0) why = "Can't specify group=false and group_level>0 at the same time";
  else if (q->reduce) why = "Reduce is invalid for map-only views.";
  else if (q->keys && q->keys->type != JSON_ARRAY) why = "`keys` must be an array of strings.";
  else if (q->keys && q->keys->len && (q->start_key || q->end_key))
    why = "`keys` is incompatible with `key`, `start_key` and `end_key`";
  else if (grouped) why = "Invalid use of grouping on a map view.";
  else if (q->partition) why = "`partition` parameter is not supported on this db";
  if (why) {
    hres_errw(r, DV_EQUERY_PARSE, why);
    return -1;
  }
  return 0;
}

/* Per-request state of an _all_docs answer. */
typedef struct adctx {
  hreq *r;
  int which;               /* STORE_ALL, STORE_DESIGN, STORE_LOCAL */
  dv_buf *o;               /* output (r->out) */
  dv_buf t;                /* scratch for revision text */
  int have_info;           /* info is read */
  store_db_info info;      /* doc_count, update_seq */
  int64_t ddocs;           /* live design documents (-1: not counted yet) */
  /* the query running */
  const adq *q;
  int64_t nrows;           /* rows written */
  int64_t count;           /* rows counted (offset scans) */
  const json_val *keys;    /* keys mode: the keys in answer order */
  size_t key_at;           /* keys mode: the next key's index in keys[] */
  size_t *key_idx;         /* keys mode: positions in keys of the rows asked */
  int err;                 /* a write failed */
  int att_rc;              /* reading an included doc's attachments failed */
  int stream;              /* range mode leaves its rows to ad_stream (issue 24) */
  int rows_later;          /* ad_run wrote the head only: ad_stream writes the rows */
  dv_buf last;             /* streaming: the id of the last row sent */
  int have_last;           /* streaming: last holds one */
  int64_t page_rows;       /* streaming: rows the store handed over in this page */
} adctx;

static void row_sep(adctx *c) {
  if (c->nrows++) buf_puts(c->o, ",\r\n");
}

/* {"id":…,"key":…,"value":{"rev":…[,"deleted":true]}[,"doc":…]} */
static void row_write(adctx *c, const store_doc_row *row, const json_val *key) {
  dv_buf *o = c->o;
  row_sep(c);
  buf_puts(o, "{\"id\":");
  json_escape(o, row->id, row->id_len);
  buf_puts(o, ",\"key\":");
  if (key) {
    if (json_write(o, key)) c->err = 1;
  } else {
    json_escape(o, row->id, row->id_len);
  }
  buf_puts(o, ",\"value\":{\"rev\":");
  buf_rev(o, &c->t, &row->rev);
  if (row->deleted) buf_puts(o, ",\"deleted\":true");
  buf_putc(o, '}');
  if (c->q->include_docs) {
    buf_puts(o, ",\"doc\":");
    hatt_ro ro = {.data = c->q->attachments};
    if (row->doc && ro.data && !c->att_rc) c->att_rc = hatt_doc(c->r->app->db, &c->r->a, row->doc, &ro, NULL, NULL);
    if (row->doc) {
      if (json_write(o, row->doc)) c->err = 1;
    } else {
      buf_puts(o, "null");
    }
  }
  buf_putc(o, '}');
}

static void row_missing(adctx *c, const json_val *key) {
  row_sep(c);
  buf_puts(c->o, "{\"key\":");
  if (json_write(c->o, key)) c->err = 1;
  buf_printf(c->o, ",\"error\":\"%s\"}", dv_err_couch(DV_ENOT_FOUND));
}

static int count_cb(void *arg, const store_doc_row *row) {
  (void)row;
  ((adctx *)arg)->count++;
  return 0;
}

static int range_cb(void *arg, const store_doc_row *row) {
  row_write(arg, row, NULL);
  return 0;
}

/* keys mode: store rows come one per key asked, in order; keys the store
 * was not asked about (not strings, or outside the namespace) are
 * "not_found" rows in between. */
static int keys_cb(void *arg, const store_doc_row *row) {
  adctx *c = arg;
  size_t want = c->key_idx[c->key_at++];
  const json_val *key = c->keys->u.items[want];
  if (row->missing) row_missing(c, key);
  else row_write(c, row, key);
  return 0;
}

/* keys mode: the row of a _local/ document (not_found unless mine). */
static int keys_local_row(adctx *c, const json_val *k, int mine) {
  json_val *doc;
  int rc = mine ? store_local_get(c->r->app->db, k->u.s, k->len, &c->r->a, &doc) : DV_ENOT_FOUND;
  if (rc == DV_ENOT_FOUND) {
    row_missing(c, k);
    return 0;
  }
  if (rc) return rc;
  const json_val *rv = json_obj_getz(doc, "_rev");
  store_doc_row row = {.id = k->u.s, .id_len = k->len, .doc = doc};
  if (rv && rv->type == JSON_STRING && rv->len > 2) /* "0-N" */
    row.rev = (store_rev){.pos = 0, .h = (const uint8_t *)rv->u.s + 2, .len = (uint32_t)rv->len - 2, .raw = 1};
  row_write(c, &row, k);
  return 0;
}

static int ad_info(adctx *c) {
  if (c->have_info) return 0;
  int rc = store_db_info_get(c->r->app->db, &c->info);
  if (!rc) c->have_info = 1;
  return rc;
}

static int ad_total(adctx *c, int64_t *out) {
  int rc = 0;
  if (c->which == STORE_ALL) {
    rc = ad_info(c);
    if (!rc) *out = c->info.doc_count;
  } else {
    if (c->ddocs < 0) {
      store_range all;
      store_range_init(&all);
      c->count = 0;
      rc = store_all_docs(c->r->app->db, STORE_DESIGN, &all, 0, 0, count_cb, c);
      if (!rc) c->ddocs = c->count;
    }
    if (!rc) *out = c->ddocs;
  }
  return rc;
}

/* Live documents (of every kind) before the first row of the range in its
 * direction: couch_btree's offset. */
static int ad_before(adctx *c, const store_range *rg, int64_t *out) {
  const char *at = rg->start;
  size_t at_len = rg->start_len;
  if (c->which == STORE_DESIGN) { /* the range starts at "_design/" or ends at "_design0" at most */
    const char *lim = rg->descending ? "_design0" : "_design/";
    int cmp = 0;
    if (at) {
      cmp = memcmp(at, lim, at_len < 8 ? at_len : 8);
      if (!cmp) cmp = at_len < 8 ? -1 : (at_len > 8);
    }
    if (!at || (rg->descending ? cmp > 0 : cmp < 0)) at = lim, at_len = 8;
  }
  *out = 0;
  if (!at) return 0;
  return store_doc_rank(c->r->app->db, at, at_len, rg->descending, out);
}

static void put_int_or_null(dv_buf *o, int have, int64_t v) {
  if (have) buf_printf(o, "%lld", (long long)v);
  else buf_puts(o, "null");
}

/* Run one query, appending its answer object to c->o. Request-wide store
 * errors are returned (the caller answers with them). */
static int ad_run(adctx *c, const adq *q) {
  hreq *r = c->r;
  dv_buf *o = c->o;
  int rc;
  c->q = q;
  c->nrows = 0;
  int doc_flags = (q->conflicts ? STORE_CONFLICTS : 0) | (q->att_encoding_info ? STORE_ATT_INFO : 0);
  int local = c->which == STORE_LOCAL;
  int keys_mode = q->keys != NULL && q->keys->type == JSON_ARRAY;
  int64_t total = 0, offset = 0;
  if (!local && (rc = ad_total(c, &total))) return rc;

  store_range rg;
  store_range_init(&rg);
  if (!keys_mode) {
    /* couch_mrview_util:all_docs_key_opts: string keys, else the docids */
    if (q->start_key && q->start_key->type == JSON_STRING)
      rg.start = q->start_key->u.s, rg.start_len = q->start_key->len;
    else if (q->start_docid)
      rg.start = q->start_docid, rg.start_len = q->start_docid_len;
    if (q->end_key && q->end_key->type == JSON_STRING)
      rg.end = q->end_key->u.s, rg.end_len = q->end_key->len;
    else if (q->end_docid)
      rg.end = q->end_docid, rg.end_len = q->end_docid_len;
    rg.inclusive_end = q->inclusive_end;
    rg.descending = q->descending;
    rg.limit = q->limit;
    rg.skip = q->skip;
    if (!local) {
      if ((rc = ad_before(c, &rg, &offset))) return rc;
      offset = offset + q->skip < total ? offset + q->skip : total;
    }
  }
  if (q->update_seq && !keys_mode && (rc = ad_info(c))) return rc;

  buf_puts(o, "{\"total_rows\":");
  put_int_or_null(o, !local, total);
  buf_puts(o, ",\"offset\":");
  put_int_or_null(o, !local && !keys_mode, offset);
  if (q->update_seq) {
    buf_puts(o, ",\"update_seq\":");
    if (keys_mode) {
      buf_puts(o, "null");
    } else {
      char seq[STORE_SEQ_STR];
      store_seq_format(&c->info.update_seq, seq);
      json_escape(o, seq, strlen(seq));
    }
  }
  buf_puts(o, ",\"rows\":[\r\n");

  if (!keys_mode && c->stream) {
    c->rows_later = 1; /* the rows and the end: ad_stream, page by page */
    return 0;
  } else if (!keys_mode) {
    rc = store_all_docs(r->app->db, c->which, &rg, q->include_docs, doc_flags, range_cb, c);
    if (rc) return rc;
  } else {
    /* fabric_view_all_docs: descending reverses the keys, then skip and limit */
    size_t nk = q->keys->len, from = 0, to = nk;
    from = (uint64_t)q->skip < nk ? (size_t)q->skip : nk;
    if (q->limit >= 0 && (uint64_t)q->limit < to - from) to = from + (size_t)q->limit;
    size_t want = to - from;
    const char **ids = arena_alloc(&r->a, (want ? want : 1) * sizeof *ids);
    size_t *lens = arena_alloc(&r->a, (want ? want : 1) * sizeof *lens);
    c->key_idx = arena_alloc(&r->a, (want ? want : 1) * sizeof *c->key_idx);
    if (!ids || !lens || !c->key_idx) return DV_ENOMEM;
    c->keys = q->keys;
    c->key_at = 0;
    size_t n_ask = 0;
    for (size_t i = from; i <= to; i++) {
      size_t ki = q->descending ? nk - 1 - i : i;
      const json_val *k = i < to ? q->keys->u.items[ki] : NULL;
      int loc = k && k->type == JSON_STRING && is_local_id(k->u.s, k->len);
      /* _local/ ids are read one by one (as fabric's open_doc does, even
       * on _all_docs); the rows asked of the store so far go first */
      if (n_ask && (i == to || local || loc)) {
        c->key_at = 0;
        rc = store_all_docs_keys(r->app->db, ids, lens, n_ask, q->include_docs, doc_flags, keys_cb, c);
        if (rc) return rc;
        n_ask = 0;
      }
      if (i == to) break;
      if (local || (loc && c->which == STORE_ALL)) {
        if ((rc = keys_local_row(c, k, loc))) return rc;
        continue;
      }
      int mine = k->type == JSON_STRING && (c->which == STORE_ALL || has_prefix(k->u.s, k->len, "_design/"));
      ids[n_ask] = mine ? k->u.s : "";
      lens[n_ask] = mine ? k->len : 0;
      c->key_idx[n_ask++] = ki;
    }
  }
  buf_puts(o, "\r\n]}");
  if (c->att_rc) return c->att_rc;
  return c->err || buf_error(o) ? DV_ENOMEM : 0;
}

/* ---- streaming _all_docs (range mode) ------------------------------------------
 *
 * A range answer can be any size (200,000 documents with include_docs is
 * ~40 MB), so it is not built in r->out: ad_run writes the head
 * (total_rows, offset), then a feed asks the store for AD_PAGE rows at a
 * time and sends them as they come (issue 24: the whole answer used to sit
 * in memory, twice while its buffer grew). Each page continues from the
 * last id sent, included, and drops that row: pages are separate
 * transactions (as store_all_docs' own batches are), so every id comes
 * once, in order, as of the page that read it. The request (r, its arena,
 * its db handle) lives until the response ends, so the steps use it. */

#define AD_PAGE 500

typedef struct adstream {
  adctx c;                 /* the query's state; c.o points at the step's output */
  dv_buf head;             /* the head ad_run wrote, sent first */
  int64_t sent;            /* rows sent */
  int done;                /* the rows are complete */
} adstream;

static int page_cb(void *arg, const store_doc_row *row) {
  adctx *c = arg;
  c->page_rows++;
  if (c->have_last && row->id_len == c->last.len && !memcmp(row->id, c->last.p, row->id_len)) return 0;
  row_write(c, row, NULL);
  buf_reset(&c->last);
  buf_append(&c->last, row->id, row->id_len);
  c->have_last = 1;
  return 0;
}

static int ad_step(void *arg, hfeed *f, dv_buf *out) {
  (void)f;
  adstream *a = arg;
  adctx *c = &a->c;
  const adq *q = c->q;
  c->o = out;
  if (a->head.len) {
    buf_append(out, a->head.p, a->head.len);
    buf_free(&a->head);
  }
  int64_t left = q->limit < 0 ? -1 : q->limit - c->nrows;
  if (!a->done && left != 0) {
    store_range rg;
    store_range_init(&rg);
    if (q->start_key && q->start_key->type == JSON_STRING) rg.start = q->start_key->u.s, rg.start_len = q->start_key->len;
    else if (q->start_docid) rg.start = q->start_docid, rg.start_len = q->start_docid_len;
    if (q->end_key && q->end_key->type == JSON_STRING) rg.end = q->end_key->u.s, rg.end_len = q->end_key->len;
    else if (q->end_docid) rg.end = q->end_docid, rg.end_len = q->end_docid_len;
    rg.inclusive_end = q->inclusive_end;
    rg.descending = q->descending;
    if (c->have_last) rg.start = (const char *)c->last.p, rg.start_len = c->last.len;
    else rg.skip = q->skip;
    int64_t ask = AD_PAGE + c->have_last; /* the last row sent comes again */
    if (left > 0 && left + c->have_last < ask) ask = left + c->have_last;
    rg.limit = ask;
    c->page_rows = 0;
    int doc_flags = (q->conflicts ? STORE_CONFLICTS : 0) | (q->att_encoding_info ? STORE_ATT_INFO : 0);
    int rc = store_all_docs(c->r->app->db, c->which, &rg, q->include_docs, doc_flags, page_cb, c);
    if (rc || c->att_rc || c->err) return HF_FAIL; /* the status is sent: cut the body */
    if (c->page_rows < ask) a->done = 1;
  }
  if (a->done || (q->limit >= 0 && c->nrows >= q->limit)) {
    buf_puts(out, "\r\n]}\n");
    return HF_DONE;
  }
  return HF_MORE;
}

static void ad_stream_done(void *arg) {
  adstream *a = arg;
  buf_free(&a->head);
  buf_free(&a->c.t);
  buf_free(&a->c.last);
  dv_free(a);
}

static const hfeed_ops ad_stream_ops = {ad_step, ad_stream_done};

/* ad_run wrote the head of a range answer into r->out: send it and the
 * rows as a feed. */
static void ad_stream_start(adctx *c) {
  hreq *r = c->r;
  adstream *a = dv_calloc(1, sizeof *a);
  if (!a) {
    buf_free(&c->t);
    hres_err(r, DV_ENOMEM);
    return;
  }
  a->c = *c;
  buf_init(&a->c.last);
  buf_init(&a->head);
  buf_append(&a->head, r->out.p, r->out.len);
  buf_reset(&r->out);
  if (buf_error(&a->head)) {
    ad_stream_done(a);
    hres_err(r, DV_ENOMEM);
    return;
  }
  hres_feed(r, 200, "application/json", &ad_stream_ops, a);
}

void hapi_all_docs(hreq *r, int which, int queries) {
  int get = r->method == HM_GET || r->method == HM_HEAD;
  if (queries ? r->method != HM_POST : !get && r->method != HM_POST) {
    hres_method(r, queries ? "POST" : "GET,HEAD,POST");
    return;
  }
  adctx c = {.r = r, .which = which, .o = &r->out, .ddocs = -1};
  adq *qs;
  size_t nq = 1;

  if (!queries) {
    qs = arena_alloc(&r->a, sizeof *qs);
    if (!qs) goto oom;
    adq_init(qs);
    if (get) {
      json_val *k = NULL; /* chttpd_db checks keys before the other parameters */
      if (hq_json(r, "keys", &k)) return;
      if (k && k->type != JSON_ARRAY && k->type != JSON_NULL) {
        hres_errw(r, DV_EBAD_REQUEST, "`keys` parameter must be an array.");
        return;
      }
    } else {
      json_val *body;
      if (hreq_need_json(r) || hreq_json_body(r, 1, &body)) return;
      const json_val *k = json_obj_getz(body, "keys");
      if (k && k->type != JSON_ARRAY && k->type != JSON_NULL) {
        hres_errw(r, DV_EBAD_REQUEST, "`keys` body member must be an array.");
        return;
      }
      if (adq_params_obj(r, qs, body)) return; /* the body first, then the query string */
    }
    if (adq_params_qs(r, qs) || adq_validate(r, qs)) return;
  } else {
    json_val *body;
    if (hreq_json_body(r, 1, &body)) return;
    const json_val *list = json_obj_getz(body, "queries");
    if (!list) {
      hres_errw(r, DV_EBAD_REQUEST, "POST body must include `queries` parameter.");
      return;
    }
    if (list->type != JSON_ARRAY) {
      hres_errw(r, DV_EBAD_REQUEST, "`queries` member must be an array.");
      return;
    }
    nq = list->len;
    qs = arena_alloc(&r->a, (nq ? nq : 1) * sizeof *qs);
    if (!qs) goto oom;
    adq base;
    adq_init(&base);
    if (adq_params_qs(r, &base)) return;
    for (size_t i = 0; i < nq; i++) { /* every query is checked before any runs */
      const json_val *one = list->u.items[i];
      if (one->type != JSON_OBJECT) {
        hres_errw(r, DV_EBAD_REQUEST, "Each query must be a JSON object.");
        return;
      }
      qs[i] = base;
      if (adq_params_obj(r, &qs[i], one) || adq_validate(r, &qs[i])) return;
    }
  }

  json_w w;
  hres_jw(r, 200, &w); /* the status; the body is appended below */
  buf_init(&c.t);
  int rc = 0;
  c.stream = !queries && r->method != HM_HEAD; /* libmicrohttpd 0.9.75 sends a feed's body to HEAD */
  if (c.stream) {
    rc = ad_run(&c, &qs[0]);
    if (!rc && buf_error(&r->out)) rc = DV_ENOMEM;
    if (!rc && c.rows_later) {
      ad_stream_start(&c); /* the answer is a feed from here */
      return;
    }
    buf_free(&c.t);
    if (rc) hres_err(r, rc);
    return;
  }
  if (queries) buf_puts(&r->out, "{\"results\":[\r\n");
  for (size_t i = 0; !rc && i < nq; i++) {
    if (i) buf_puts(&r->out, ",\r\n");
    rc = ad_run(&c, &qs[i]);
  }
  if (queries) buf_puts(&r->out, "\r\n]}");
  buf_free(&c.t);
  if (!rc && buf_error(&r->out)) rc = DV_ENOMEM;
  if (rc) hres_err(r, rc);
  return;
oom:
  hres_err(r, DV_ENOMEM);
}

/* ---- routes ------------------------------------------------------------------ */

static void all_docs(hreq *r) { hapi_all_docs(r, STORE_ALL, 0); }
static void all_docs_queries(hreq *r) { hapi_all_docs(r, STORE_ALL, 1); }
static void design_docs(hreq *r) { hapi_all_docs(r, STORE_DESIGN, 0); }
static void design_docs_queries(hreq *r) { hapi_all_docs(r, STORE_DESIGN, 1); }
static void local_docs(hreq *r) { hapi_all_docs(r, STORE_LOCAL, 0); }
static void local_docs_queries(hreq *r) { hapi_all_docs(r, STORE_LOCAL, 1); }

static const http_route routes[] = {
    {HTTP_ANY, "/{db}/_all_docs", API_NEEDS_DB | API_SYSDB_ADMIN, all_docs},
    {HTTP_ANY, "/{db}/_all_docs/queries", API_NEEDS_DB | API_SYSDB_ADMIN, all_docs_queries},
    {HTTP_ANY, "/{db}/_design_docs", API_NEEDS_DB, design_docs},
    {HTTP_ANY, "/{db}/_design_docs/queries", API_NEEDS_DB, design_docs_queries},
    {HTTP_ANY, "/{db}/_local_docs", API_NEEDS_DB, local_docs},
    {HTTP_ANY, "/{db}/_local_docs/queries", API_NEEDS_DB, local_docs_queries},
    {M(POST), "/{db}/_bulk_docs", API_NEEDS_DB | HTTP_JSON_OBJECT, hapi_bulk_docs},
    {M(POST), "/{db}/_bulk_get", API_NEEDS_DB | HTTP_JSON_OBJECT, hapi_bulk_get},
    {M(POST), "/{db}/_revs_diff", API_NEEDS_DB | HTTP_JSON_OBJECT, hapi_revs_diff},
    {M(POST), "/{db}/_missing_revs", API_NEEDS_DB | HTTP_JSON_OBJECT, hapi_missing_revs},
};
const api_routes api_bulk_routes = API_TABLE(routes);
