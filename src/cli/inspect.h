/* inspect.h — `divan inspect`: print the keyspace decoded as tuples.
 *
 * One line per KV, in key order: the key as a tuple, " = ", then the value
 * as a tuple when it is one, le64(N) for an 8-byte counter that is not, or
 * hex. So anyone can hold the store's layout against the seeds and
 * ../shared/DESIGN.md. Read-only; one snapshot per batch of keys.
 */
#ifndef DV_CLI_INSPECT_H
#define DV_CLI_INSPECT_H

#include <stdio.h>

#include "kv/kv.h"

/* Print every KV, or with db_name only that database's keys (its dbs row
 * and its prefix). DV_ENO_DB when the database does not exist. */
int cli_inspect(kv_db *kv, const char *db_name, FILE *out) DV_MUST_CHECK;

/* `divan inspect`, its flags read by main.c: open the store in DATA
 * read-only, print it (only DB's keys when DB is not NULL) to stdout.
 * Returns the exit status: 0, or 1 after a line on stderr. */
int cli_inspect_run(const char *data, const char *db);

#endif
