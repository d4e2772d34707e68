/* name.c — CouchDB's rules for names, alone in their file: pure, so the
 * parsers above the store (the replicator's spec, fuzz targets, the HTTP
 * write paths) use them without the rest of the store. Database names,
 * document ids (with CouchDB's reasons, which the HTTP layer answers with),
 * and the one list of a document's special ("_") members. */
#include <string.h>

#include "store/store.h"

static int has_prefix(const char *p, size_t n, const char *pfx) {
  size_t k = strlen(pfx);
  return n >= k && !memcmp(p, pfx, k);
}

const char *store_docid_problem(const char *id, size_t n, int local) {
  if (!id || n == 0) return "Document id must not be empty";
  if (n == 8 && !memcmp(id, "_design/", 8)) return "Illegal document id `_design/`";
  if (local && n == 7 && !memcmp(id, "_local/", 7)) return "Illegal document id `_local/`";
  if (n > STORE_MAX_DOCID) return "Document id is too long";
  if (json_utf8_check(id, n, NULL)) return "Document id must be valid UTF-8";
  if (id[0] == '_' && !has_prefix(id, n, "_design/") && !(local && has_prefix(id, n, "_local/")))
    return "Only reserved document ids may start with underscore.";
  return NULL;
}

int store_docid_check(const char *id, size_t len, int local) {
  return store_docid_problem(id, len, local) ? DV_EBAD_DOCID : 0;
}

int store_db_name_check(const char *name, size_t len) {
  static const char *const sys[] = {"_users", "_replicator", "_global_changes"};
  for (size_t i = 0; i < sizeof sys / sizeof *sys; i++)
    if (len == strlen(sys[i]) && !memcmp(name, sys[i], len)) return 0;
  if (len == 0 || len > STORE_MAX_DBNAME) return DV_EBAD_DB_NAME;
  if (!(name[0] >= 'a' && name[0] <= 'z')) return DV_EBAD_DB_NAME;
  for (size_t i = 1; i < len; i++) {
    char c = name[i];
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) continue;
    if (!strchr("_$()+/-", c) || c == 0) return DV_EBAD_DB_NAME;
  }
  return 0;
}


/* couch_doc:transfer_fields, clause by clause: the members every write path
 * (PUT, POST, _bulk_docs, replication) accepts, and what becomes of each. */
static const struct {
  const char *name;
  store_member kind;
} members[] = {
    {"_id", STORE_MEMBER_ID},
    {"_rev", STORE_MEMBER_REV},
    {"_revisions", STORE_MEMBER_REVISIONS},
    {"_deleted", STORE_MEMBER_DELETED},
    {"_attachments", STORE_MEMBER_ATTACHMENTS},
    {"_revs_info", STORE_MEMBER_IGNORED},
    {"_local_seq", STORE_MEMBER_IGNORED},
    {"_conflicts", STORE_MEMBER_IGNORED},
    {"_deleted_conflicts", STORE_MEMBER_IGNORED},
    {"_access", STORE_MEMBER_KEPT},
    {"_replication_state", STORE_MEMBER_KEPT},
    {"_replication_state_time", STORE_MEMBER_KEPT},
    {"_replication_state_reason", STORE_MEMBER_KEPT},
    {"_replication_id", STORE_MEMBER_KEPT},
    {"_replication_stats", STORE_MEMBER_KEPT},
};

store_member store_doc_member(const char *key, size_t len) {
  if (len == 0 || key[0] != '_') return STORE_MEMBER_USER;
  for (size_t i = 0; i < sizeof members / sizeof *members; i++)
    if (len == strlen(members[i].name) && !memcmp(key, members[i].name, len)) return members[i].kind;
  return STORE_MEMBER_BAD;
}
