/* jsddoc.h — design documents on the write path: every design document's
 * validate_doc_update, and CouchDB's checks of a design document's own
 * fields, run through store's validate hook (store/hooks.h) on every write
 * of a database — PUT, POST, DELETE, COPY, _bulk_docs, new_edits=false,
 * attachment edits, update handlers: whatever calls store_update with a
 * write context.
 *
 * Data flow:
 *
 *   a write to db D needs D's hook table (store/hooks.c st_hooks_get)
 *     └▶ main.c's provider ─▶ jsddoc_hooks_load(D)
 *          reads D's design documents (one _design_docs range read with
 *          the bodies), keeps those with a string validate_doc_update, in
 *          _id order (couch_db:load_validation_funs), as qs_ddoc (id, rev,
 *          language, the document's JSON) plus whether the function may
 *          read oldDoc; registers one validator, jd_validate.
 *   per edit, inside the edit's transaction ─▶ jd_validate(newDoc, old…)
 *     _design/ id  ─▶ the field checks of couch_mrview:validate_ddoc_fields
 *                     (a deletion passes): 400 invalid_design_doc. Design
 *                     documents run no validate_doc_update (CouchDB's
 *                     couch_db:validate_doc_update; who may write them is
 *                     the HTTP layer's db-admin check);
 *     other ids    ─▶ args [newDoc, oldDoc, userCtx, secObj] built once
 *                     (oldDoc read through store_old_doc only when some
 *                     function declares a second parameter or reads
 *                     `arguments`: a database without such a function
 *                     keeps seed 000's read profile) ─▶ for each function,
 *                     in order, qs_ddoc_call(["validate_doc_update"]) ─▶
 *                     the first answer that is not 1 refuses the edit:
 *                       {"forbidden": M}     403 forbidden, M
 *                       {"unauthorized": M}  401 unauthorized, M
 *                       {"k": M}, "M"        500 unknown_error, M
 *                       an Error thrown      500 its name (TypeError, …)
 *                       compilation_error, os_process_error, …  500
 *   a write to a _design/ document bumps the metadata version (store), so
 *   every process loads the table again before its next write: a new,
 *   changed or deleted validator applies from the next transaction.
 *
 * Not here: who may write a design document (api/, db admins), views'
 * compilation on save (views' issue), the _users rules (auth/, which runs
 * its validator before this one).
 */
#ifndef DV_INDEX_JSDDOC_H
#define DV_INDEX_JSDDOC_H

#include <stddef.h>

#include "json/json.h"
#include "store/hooks.h"
#include "store/store.h"
#include "util/arena.h"

/* index/'s validator part of the hooks provider: appends jd_validate for
 * database `name` to out (after whatever is there: auth's _users rules run
 * first, as in CouchDB). Reads the design documents in their own
 * transaction. 0, or DV_ENOMEM / a kv error (the write that needed the
 * table fails with it); a database that is gone gets no validator. */
int jsddoc_hooks_load(store *s, const char *name, size_t len, store_hooks *out) DV_MUST_CHECK;
/* Free what jsddoc_hooks_load put in h (other providers' entries are left). */
void jsddoc_hooks_unload(store_hooks *h);

/* CouchDB's checks of a design document's fields on write
 * (couch_mrview:validate_ddoc_fields and validate): 0, or DV_EMQ_DESIGN_DOC with
 * *why CouchDB's reason ("`filters.f` field must have object or string
 * type", "View `v` must contain map function", …; in a). doc is the whole
 * document. */
int jsddoc_check_ddoc(const json_val *doc, dv_arena *a, const char **why) DV_MUST_CHECK;

/* 1 when a validate_doc_update source may read its second argument: it
 * declares two or more parameters or mentions `arguments`, or its shape
 * is not one this reader knows (then it must assume so). */
int jsddoc_wants_old(const char *src, size_t len);

#endif
