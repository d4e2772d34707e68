/* check.h — `divan check`: verify every invariant of the key layout
 * (store/check.h, index/icheck.h) in a store the server is not running on,
 * and print a readable report.
 *
 * Report, on stdout: one line per finding,
 *   problem: db "NAME" doc "ID": WHAT; expected EXPECTED
 *   note: db "NAME": WHAT
 * then one summary line of what was checked and what was found:
 *   checked: D databases, N documents, R revisions, C changes rows,
 *   B bodies, A attachments, L local documents, P purge infos, I index
 *   rows, U _db_updates rows; X problems, Y notes
 * Exit status: 0 clean, 1 a problem was found, 2 usage or open errors.
 * Read-only: no write is ever committed.
 */
#ifndef DV_CLI_CHECK_H
#define DV_CLI_CHECK_H

#include <stdio.h>

#include "store/check.h"

typedef struct cli_check_opts {
  const char *data;          /* data directory (the embedded store) */
  const char *db;            /* only this database, or NULL */
  int fdb;                   /* 1: a FoundationDB cluster instead of data */
  const char *cluster_file;  /* its cluster file, NULL = FDB's default */
  const char *fdb_library;   /* libfdb_c to load, NULL = the default */
} cli_check_opts;

/* Print one finding as its report line. */
void cli_check_line(FILE *out, const store_check_item *it);
/* Print the summary line. */
void cli_check_summary(FILE *out, const store_check_counts *c);

/* `divan check`: returns the exit status (0, 1, or 2 after a line on
 * stderr). */
int cli_check_run(const cli_check_opts *o);

#endif
