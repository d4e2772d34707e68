/* name.c — CouchDB's rule for database names, alone in its file: pure, so
 * the parsers above the store (the replicator's spec, fuzz targets) use it
 * without the rest of the store. */
#include <string.h>

#include "store/store.h"

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

