/* dump.h — one database to a dump file and back (`divan dump` / `divan
 * load`, cli/dump.c; later `divan move` and the HTTP forms stream the same
 * records). The file format is dumpfmt.h's; dump.c's header has the data
 * flow and the consistency argument.
 *
 * A loaded database is byte-identical to its source under its own prefix:
 * revision trees, bodies, attachments, changes rows with their Sequences,
 * update_seq, local documents, _security, _revs_limit, purge infos and
 * index rows. Its Incarnation is one more than the highest in the dump, so
 * every later write sorts after every copied row. It gets a new DbUUID and
 * CreatedAt, and a "created" _db_updates event.
 */
#ifndef DV_STORE_DUMP_H
#define DV_STORE_DUMP_H

#include "store/dumpfmt.h"
#include "store/store.h"

#define STORE_DUMP_ROUNDS 8          /* catch-up rounds before a dump gives up */
#define STORE_DUMP_TXN_BYTES (4u << 20) /* bytes read (dump) or written (load) per transaction */
#define STORE_DUMP_TXN_MS 2000       /* a dump's read transaction stops after this long */

typedef struct store_dump_opts {
  /* tests: runs after the full pass, before the first catch-up round */
  void (*after_full)(void *arg);
  void *arg;
  int max_rounds;                    /* 0 = STORE_DUMP_ROUNDS */
  /* tests: bytes read per transaction (0 = STORE_DUMP_TXN_BYTES), and a
   * call after each transaction of the full pass (writes between them) */
  size_t txn_bytes;
  void (*each_txn)(void *arg);
} store_dump_opts;

typedef struct store_dump_stats {
  uint64_t kvs;                      /* K records */
  uint64_t docs;                     /* replace-document records (catch-up) */
  uint64_t bytes;                    /* record bytes (uncompressed) */
  int rounds;                        /* catch-up rounds the dump ran */
  int64_t inc;                       /* load: the new database's Incarnation */
} store_dump_stats;

/* Write database `name` to out. 0, or DV_ENO_DB, DV_ECONFLICT (writes
 * went on through max_rounds catch-up rounds), out's error, kv errors.
 * *why (may be NULL) gets a one-line reason on failure. st may be NULL.
 * Limits: a document caught up is read in one transaction (its revisions,
 * bodies and attachment chunks), so one whose attachments take longer than
 * kv's 5 s to read fails the dump with transaction_too_old; index rows are
 * copied as they are (an index being built meanwhile is copied as far as
 * it got, in several snapshots). */
int store_dump(store *s, const char *name, const store_dump_opts *o, dump_out_fn out, void *arg,
               store_dump_stats *st, const char **why) DV_MUST_CHECK;

/* Load a dump read from in as a new database `name`. 0, or DV_EDB_EXISTS,
 * DV_EBAD_DB_NAME, DV_ECORRUPT / DV_ENOTSUP (a damaged, truncated or newer
 * file: nothing of it stays in the store), kv errors; *why (may be NULL)
 * gets a one-line reason. st may be NULL. */
int store_load(store *s, const char *name, dump_in_fn in, void *arg, store_dump_stats *st,
               const char **why) DV_MUST_CHECK;

#endif
