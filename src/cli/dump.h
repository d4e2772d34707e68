/* dump.h — `divan dump` and `divan load` (store/dump.h): one database to
 * a dump file and back, on a store the server is not running on (the
 * embedded store's lock refuses a second process) or on a FoundationDB
 * cluster (which stays online: the dump catches up with writes made
 * meanwhile).
 *
 *   divan dump --data DIR|--fdb [CLUSTER_FILE] DB > FILE   (or -o FILE)
 *   divan load --data DIR|--fdb [CLUSTER_FILE] DB < FILE   (or -i FILE)
 *   divan dump --resume -o FILE DB    go on with a dump FILE that was cut
 *   divan load --resume -i FILE DB    go on with DB's load of FILE, killed midway
 * On success one line on stderr says what was copied, how fast, and the
 * process's peak RSS (what bench/http/dumpbench.js reads). Exit
 * status: 0 done, 1 the file was refused (damaged, truncated, a newer
 * format) or the database exists / kept changing, 2 usage or open errors.
 * A load that fails leaves nothing behind; one killed midway leaves its
 * prefix and mark for --resume.
 */
#ifndef DV_CLI_DUMP_H
#define DV_CLI_DUMP_H

typedef struct cli_dump_opts {
  const char *data;          /* data directory (the embedded store) */
  const char *db;            /* the database */
  const char *file;          /* -o / -i, NULL = stdout / stdin */
  int fdb;                   /* 1: a FoundationDB cluster instead of data */
  const char *cluster_file;  /* its cluster file, NULL = FDB's default */
  const char *fdb_library;   /* libfdb_c to load, NULL = the default */
  int resume;                /* --resume: dump: go on with file; load: with DB's unfinished load of file */
} cli_dump_opts;

/* divan move SRC DB DST [NEWNAME] (store/dump.h store_move): a store is
 * "data:DIR" or "fdb:[CLUSTER_FILE]"; then is STORE_MOVE_*. Exit status 0
 * done, 1 refused (the target exists, the database kept changing), 2
 * usage, open errors or no such database. */
typedef struct cli_move_opts {
  const char *src, *dst;     /* store specs */
  const char *db, *newname;  /* newname NULL = db */
  int then;                  /* STORE_MOVE_* */
  const char *fdb_library;   /* libfdb_c to load, NULL = the default */
  int resume;                /* --resume: go on with the target's unfinished load of newname */
} cli_move_opts;

int cli_dump_run(const cli_dump_opts *o);
int cli_move_run(const cli_move_opts *o);
int cli_load_run(const cli_dump_opts *o);

#endif
