/* hooks.c — the write hooks' home in store/: the per-database hook table,
 * its cache on the handle, and the calls edit.c makes inside the edit
 * transaction. What the hooks do is the business of the layers that fill
 * the table (index/, auth/); this file only carries the calls.
 *
 * Data flow (DESIGN.md "Write hooks"):
 *   store_set_hooks(s, provider)     once, by the layers above, at startup
 *                                    (main.c: auth/'s and index/'s parts).
 *   store_update(db, w, edits…)      per transaction attempt (edit.c up_fn):
 *     st_db_check                    the metadata-version key moved since
 *                                    the handle's cache was read -> the
 *                                    handle's meta_gen moves on;
 *     st_hooks_get                   the handle's table when it was loaded at
 *                                    this meta_gen (and provider), else
 *                                    provider.load -> a new table, cached
 *                                    (the old one is dropped when its last
 *                                    user lets go); no provider: NULL, and
 *                                    nothing below runs;
 *     per edit, after the store found the leaf it edits (no extra read):
 *       st_hooks_validate            w non-NULL and validators present:
 *                                    the new doc as JSON, the old one behind
 *                                    a store_old accessor that reads its body
 *                                    (one range read) only when a validator
 *                                    asks; the first refusal becomes the
 *                                    edit's rc and why, the edit writes
 *                                    nothing; an edit that conflicts on a
 *                                    document with no live winner asks the
 *                                    validators first (old = none), as the
 *                                    _users rules answered before the store
 *                                    did;
 *       … the edit's writes …
 *       st_hooks_index               the document was written (its winner
 *                                    or only its changes row moved):
 *                                    index_update in the same transaction;
 *                                    an error aborts it (store_purge calls
 *                                    it too);
 *     once per transaction           an edit (or purge) of a _design/
 *                                    document wrote -> st_hooks_changed:
 *                                    st_mdv_bump, so every process (and
 *                                    every handle here) reloads its table in
 *                                    its next transaction, and a write
 *                                    conflict on the database's name key,
 *                                    which every transaction on the
 *                                    database reads: a write that ran
 *                                    concurrently with the old table fails
 *                                    and retries with the new one (an index
 *                                    created meanwhile never misses it).
 *   Without a provider or without validators the edit path reads nothing it
 *   did not read before (seed 000's profile, test store_read_profile and
 *   store_hooks_lazy_old).
 */
#include <string.h>

#include "store/store_int.h"
#include "util/alloc.h"
#include "util/b64.h"

struct st_hooks {
  store_hooks h;          /* the provider's table */
  int refs;               /* the handle's reference + one per attempt using it (atomic) */
  uint64_t gen;           /* the handle's meta_gen it was loaded at */
  uint64_t pgen;          /* the store's provider generation */
  store_hooks_provider p; /* the provider that filled it (unload) */
};

void store_set_hooks(store *s, const store_hooks_provider *p) {
  pthread_mutex_lock(&s->mu);
  if (p) s->hp = *p;
  else memset(&s->hp, 0, sizeof s->hp);
  s->hp_gen++;
  pthread_mutex_unlock(&s->mu);
}

void st_hooks_put(st_hooks *h) {
  if (!h || __atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL)) return;
  if (h->p.unload) h->p.unload(h->p.arg, &h->h);
  dv_free(h);
}

int st_hooks_get(store_db *db, st_hooks **out) {
  store *s = db->s;
  *out = NULL;
  pthread_mutex_lock(&s->mu);
  store_hooks_provider p = s->hp;
  uint64_t pgen = s->hp_gen;
  pthread_mutex_unlock(&s->mu);
  if (!p.load) return 0;
  pthread_mutex_lock(&db->mu);
  uint64_t gen = db->meta_gen;
  st_hooks *h = db->hooks;
  if (h && h->gen == gen && h->pgen == pgen) {
    __atomic_add_fetch(&h->refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&db->mu);
    *out = h;
    return 0;
  }
  pthread_mutex_unlock(&db->mu);
  h = dv_calloc(1, sizeof *h);
  if (!h) return DV_ENOMEM;
  int rc = p.load(p.arg, db->name, db->name_len, &h->h);
  if (rc) {
    if (p.unload) p.unload(p.arg, &h->h);
    dv_free(h);
    return rc;
  }
  if (h->h.n_validate > STORE_MAX_VALIDATORS) h->h.n_validate = STORE_MAX_VALIDATORS;
  h->gen = gen;
  h->pgen = pgen;
  h->p = p;
  h->refs = 2; /* the caller's and the handle's */
  st_hooks *old = NULL;
  pthread_mutex_lock(&db->mu);
  if (!db->hooks || db->hooks->gen <= gen) { /* a racing newer load stays */
    old = db->hooks;
    db->hooks = h;
  } else {
    h->refs = 1; /* the caller's only */
  }
  pthread_mutex_unlock(&db->mu);
  st_hooks_put(old);
  *out = h;
  return 0;
}

int st_hooks_validating(const st_hooks *h, const store_wctx *w) { return h && w && h->h.n_validate; }

int store_db_slow_validators(store_db *db) {
  st_hooks *h;
  int rc = st_hooks_get(db, &h);
  if (rc) return rc;
  int n = 0;
  for (size_t i = 0; h && i < h->h.n_validate; i++) n += h->h.validate[i].slow != 0;
  st_hooks_put(h);
  return n;
}

/* ---- validate -------------------------------------------------------------------- */

struct store_old {
  kv_txn *txn;            /* the edit's transaction */
  const st_dbx *x;        /* its database */
  const char *id;         /* the document */
  size_t id_len;
  const st_branch *br;    /* the leaf the edit replaces; NULL: none */
  dv_arena *a;            /* the attempt's arena */
  int loaded;             /* 1: doc is read */
  json_val *doc;          /* the old document, once read */
};

int store_old_doc(store_old *o, json_val **out) {
  if (!o->loaded && o->br) {
    int rc = st_leaf_doc(o->txn, o->x, o->id, o->id_len, o->br, o->a, &o->doc);
    if (rc) return rc;
    st_count_old_body();
  }
  o->loaded = 1;
  *out = o->doc;
  return 0;
}


int store_refusal(int rc) {
  switch (rc) {
  case DV_EFORBIDDEN: case DV_EUNAUTHORIZED: case DV_ENOT_FOUND: case DV_EVDU_TYPEERROR: case DV_EVDU_UNKNOWN:
  case DV_EVDU_ERROR: case DV_EVDU_REFERENCEERROR: case DV_EVDU_SYNTAXERROR: case DV_EVDU_RANGEERROR:
  case DV_EVDU_INTERNALERROR: case DV_EVDU_EVALERROR: case DV_EVDU_URIERROR:
  case DV_EQS: case DV_EQS_COMPILE: case DV_EQS_PROCESS: case DV_EQS_RENDER: case DV_EQS_LANG: case DV_EMQ_DESIGN_DOC:
  case DV_EVIEW_COMPILE:
    return 1;
  default:
    return 0;
  }
}

/* One revision's text "N-hex" in the arena. */
static json_val *rev_str(dv_arena *a, const store_rev *r) {
  dv_buf b;
  buf_init(&b);
  store_rev_format(r, &b);
  json_val *v = buf_error(&b) ? NULL : json_new_string(a, (const char *)b.p, b.len);
  buf_free(&b);
  return v;
}

/* An attachment as couch_att:to_json shows it without data: a stub. */
static json_val *att_stub(dv_arena *a, const store_att *t) {
  json_val *o = json_new_object(a);
  if (!o || json_obj_setz(a, o, "content_type", json_new_string(a, t->type, t->type_len)) ||
      json_obj_setz(a, o, "revpos", json_new_int(a, t->revpos)))
    return NULL;
  static const uint8_t zero[16];
  if (memcmp(t->md5, zero, 16)) {
    char d[4 + 25];
    memcpy(d, "md5-", 4);
    dv_b64_encode(t->md5, 16, 0, d + 4);
    if (json_obj_setz(a, o, "digest", json_new_stringz(a, d))) return NULL;
  }
  if (json_obj_setz(a, o, "length", json_new_int(a, t->length)) ||
      json_obj_setz(a, o, "stub", json_new_bool(a, 1)))
    return NULL;
  return o;
}

/* validate_doc_update's newDoc, as couch_doc:to_json_obj(Doc, [revs])
 * orders it: _id, _rev (revs[0]: the parent of an interactive edit, the
 * new leaf of a replicated one), the body, _deleted, _revisions (revs,
 * newest first), _attachments stubs. */
static json_val *new_doc(dv_arena *a, const store_edit *e, const store_rev *revs, size_t n_revs,
                         const store_att *atts, size_t n_atts) {
  json_val *d = json_new_object(a);
  if (!d || json_obj_setz(a, d, "_id", json_new_string(a, e->id, e->id_len))) return NULL;
  if (n_revs && json_obj_setz(a, d, "_rev", rev_str(a, &revs[0]))) return NULL;
  for (size_t i = 0; e->body && i < e->body->len; i++)
    if (json_obj_set(a, d, e->body->u.members[i].key, e->body->u.members[i].klen, e->body->u.members[i].val))
      return NULL;
  if (e->deleted && json_obj_setz(a, d, "_deleted", json_new_bool(a, 1))) return NULL;
  if (n_revs) {
    json_val *r = json_new_object(a), *ids = json_new_array(a);
    if (!r || !ids || json_obj_setz(a, r, "start", json_new_int(a, revs[0].pos))) return NULL;
    for (size_t i = 0; i < n_revs; i++) {
      json_val *s = rev_str(a, &revs[i]);
      const char *dash = s ? memchr(s->u.s, '-', s->len) : NULL;
      if (!dash || json_arr_push(a, ids, json_new_string(a, dash + 1, s->len - (size_t)(dash + 1 - s->u.s))))
        return NULL;
    }
    if (json_obj_setz(a, r, "ids", ids) || json_obj_setz(a, d, "_revisions", r)) return NULL;
  }
  if (n_atts) {
    json_val *o = json_new_object(a);
    if (!o) return NULL;
    for (size_t i = 0; i < n_atts; i++)
      if (json_obj_set(a, o, atts[i].name, atts[i].name_len, att_stub(a, &atts[i]))) return NULL;
    if (json_obj_setz(a, d, "_attachments", o)) return NULL;
  }
  return d;
}

int st_hooks_validate(const st_hooks *h, const store_wctx *w, kv_txn *txn, const st_dbx *x, store_edit *e,
                      const store_rev *revs, size_t n_revs, const store_att *atts, size_t n_atts,
                      const st_branch *old, dv_arena *a, int *refused) {
  *refused = 0;
  if (!st_hooks_validating(h, w)) return 0;
  json_val *nd = new_doc(a, e, revs, n_revs, atts, n_atts);
  if (!nd) return DV_ENOMEM;
  store_old o = {.txn = txn, .x = x, .id = e->id, .id_len = e->id_len, .br = old, .a = a};
  static const store_user anon = {0};
  const store_user *u = w->user ? w->user : &anon;
  for (size_t i = 0; i < h->h.n_validate; i++) {
    const char *why = NULL;
    int rc = h->h.validate[i].fn(h->h.validate[i].ctx, nd, &o, u, w->sec, a, &why);
    if (!rc) continue;
    if (!store_refusal(rc)) return rc;
    e->rc = rc;
    e->why = why && w->a ? arena_strndup(w->a, why, strlen(why)) : NULL;
    if (why && w->a && !e->why) return DV_ENOMEM;
    *refused = 1;
    return 0;
  }
  return 0;
}

int st_hooks_changed(kv_txn *txn, const st_dbx *x) {
  store_db *db = x->db;
  int rc = st_mdv_bump(txn);
  if (!rc)
    rc = kv_add_conflict_range(txn, db->conflict, db->conflict_len - 1, db->conflict, db->conflict_len,
                               KV_CONFLICT_WRITE);
  return rc;
}

/* ---- index_update ---------------------------------------------------------------- */

int st_hooks_index(const st_hooks *h, kv_txn *txn, const st_dbx *x, const char *id, size_t id_len,
                   const st_branch *old_w, const st_branch *new_w, const json_val *new_body) {
  if (!h || !h->h.index_update) return 0;
  store_winner ow, nw;
  if (old_w) ow = (store_winner){.rev = &old_w->rev, .deleted = old_w->deleted};
  if (new_w) nw = (store_winner){.rev = &new_w->rev, .deleted = new_w->deleted, .body = new_body};
  store_tx t = {.txn = txn, .x = x};
  return h->h.index_update(h->h.index_ctx, &t, id, id_len, old_w ? &ow : NULL, new_w ? &nw : NULL);
}
