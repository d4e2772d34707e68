/* dump.h — one database to a dump file and back (`divan dump` / `divan
 * load`, cli/dump.c), and without a file: `divan move` (store_move) and
 * the HTTP forms (api/dump.c) stream the same records through a bounded
 * pipe (move.c). The file format is dumpfmt.h's; dump.c's header has the data
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
  /* a move (store_move): called once before the last catch-up round —
   * after a round that caught up at most STORE_MOVE_FREEZE_DOCS documents,
   * or found the database still, or at round max_rounds - 2 — to make the
   * source refuse writes (0, or an error that fails the dump); the dump
   * then ends only with a still round after it. frozen (tests) runs right
   * after it. */
  int (*freeze)(void *arg);
  void (*frozen)(void *arg);
  /* Resume (dump.c): start at resume->ck (a 'C' record; empty: at the
   * beginning), with its dump id, refusing a database whose DbUUID is not
   * resume->uuid. append: out continues a file cut right after that
   * checkpoint (dump_scan): no header, the counts and CRC go on from
   * resume's; else a new stream: header, then the checkpoint again. */
  const dump_cont *resume;
  int append;
  /* tests: after each checkpoint went out; not 0 stops the dump with it */
  int (*each_ckpt)(void *arg, const dump_ckpt *ck);
} store_dump_opts;

#define STORE_MOVE_FREEZE_DOCS 1000

typedef struct store_dump_stats {
  uint64_t kvs;                      /* K records */
  uint64_t docs;                     /* replace-document records (catch-up) */
  uint64_t bytes;                    /* record bytes (uncompressed) */
  int rounds;                        /* catch-up rounds the dump ran */
  int64_t inc;                       /* load: the new database's Incarnation */
  uint64_t records;                  /* load: records read (H and C included) */
  uint64_t applied;                  /* load: records written by this run (a resumed one skips some) */
  int kept;                          /* load: it failed and left its prefix and mark for a resume */
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

/* How store_load runs (may be NULL: a new load, cleared on any error). */
enum { STORE_LOAD_RESUME_FILE = 1, STORE_LOAD_RESUME_STREAM };
typedef struct store_load_opts {
  /* Resume the unfinished load of `name` (its (R,0,"loads") mark, dump.c),
   * refused with nothing changed when there is none, when the dump is
   * another one (the header's id), or when the name exists:
   *   STORE_LOAD_RESUME_FILE: in is the same dump read again from its
   *     start (the mark of its id): the records the load committed are
   *     read and checked but not written again;
   *   STORE_LOAD_RESUME_STREAM: in is a dump resumed at the mark's
   *     checkpoint (the newest mark of the name; store_move). */
  int resume;
  /* an error of in itself (not a damaged file: the source side of a
   * move failing) leaves the prefix and the mark for a resume */
  int keep_on_input_error;
  /* tests: record bytes per transaction (0 = STORE_DUMP_TXN_BYTES / 2),
   * and a call after each batch committed; not 0 stops the load there
   * with that error as if the process had been killed */
  size_t batch_bytes;
  int (*after_batch)(void *arg);
  void *arg;
} store_load_opts;

/* Load a dump read from in as a new database `name`. 0, or DV_EDB_EXISTS,
 * DV_EBAD_DB_NAME, DV_ECORRUPT / DV_ENOTSUP (a damaged, truncated or newer
 * file: nothing of it stays in the store, a resumed load's earlier part
 * included), DV_ENOT_FOUND / DV_ECONFLICT (a resume with no mark, or of
 * another dump: nothing changed), kv errors; *why (may be NULL) gets a
 * one-line reason. st may be NULL; st->kept says the prefix and the mark
 * stayed for a resume. */
int store_load(store *s, const char *name, const store_load_opts *o, dump_in_fn in, void *arg,
               store_dump_stats *st, const char **why) DV_MUST_CHECK;

/* An unfinished load's mark (R,0,"loads",DbPrefix). */
typedef struct store_load_mark {
  int64_t prefix, started;
  uint64_t committed;     /* records of its stream written */
  int64_t max_inc;
  dump_cont c;            /* name, id, uuid (the source's) and ck: the last
                             checkpoint whose records are all written (empty:
                             none); a dump resumed from it continues the load */
} store_load_mark;
/* The mark of an unfinished load of name: of dump id (NULL: the newest
 * of any). 0, DV_ENOT_FOUND, DV_ECONFLICT (only marks of other dumps), kv
 * errors. Free it with store_load_mark_free (also after an error). */
int store_load_mark_find(store *s, const char *name, const uint8_t *id, store_load_mark *out) DV_MUST_CHECK;
void store_load_mark_free(store_load_mark *m);

/* ---- a bounded pipe between a dump and its reader (move.c) ---------------- */

/* Bytes from one writer thread (dump_pipe_write, a dump_out_fn) to one
 * reader (dump_pipe_read, a dump_in_fn, blocking; or dump_pipe_take,
 * not), at most cap bytes held. Either side closes: the writer with its
 * result (an error reaches the reader after the bytes before it), the
 * reader when it stops (the writer's next write fails, DV_ECANCELLED).
 * Reference counted: each side drops its reference. */
typedef struct dump_pipe dump_pipe;
dump_pipe *dump_pipe_new(size_t cap); /* one reference; NULL without memory */
void dump_pipe_ref(dump_pipe *p);
void dump_pipe_unref(dump_pipe *p);
/* Called (any thread, no lock held) when bytes or the writer's close
 * arrive: an HTTP feed's wake. */
void dump_pipe_on_data(dump_pipe *p, void (*fn)(void *arg), void *arg);
int dump_pipe_write(void *p, const uint8_t *b, size_t n);
long dump_pipe_read(void *p, uint8_t *b, size_t n);
/* Without waiting: up to max bytes appended to out; 1 when bytes came, 0
 * when none are there yet, DUMP_PIPE_END when the writer closed with
 * success and everything was taken, or the writer's error. */
#define DUMP_PIPE_END 2
int dump_pipe_take(dump_pipe *p, dv_buf *out, size_t max);
void dump_pipe_close_w(dump_pipe *p, int rc);
void dump_pipe_close_r(dump_pipe *p);

/* A dump on a thread of its own into a pipe (the HTTP form's): the pipe
 * is closed with its result when it ends. */
typedef struct store_pipe_job store_pipe_job;
typedef store_pipe_job store_dump_job;
int store_dump_start(store *s, const char *name, dump_pipe *p, store_dump_job **out) DV_MUST_CHECK;
/* Wait for it (close the pipe's read side first to stop it early), its
 * result and reason; frees the job. */
int store_dump_join(store_dump_job *j, store_dump_stats *st, const char **why);
/* A load on a thread of its own reading the pipe (the HTTP form's). */
typedef store_pipe_job store_load_job;
int store_load_start(store *s, const char *name, dump_pipe *p, store_load_job **out) DV_MUST_CHECK;
int store_load_join(store_load_job *j, store_dump_stats *st, const char **why);

/* ---- move ---------------------------------------------------------------------- */

enum { STORE_MOVE_KEEP, STORE_MOVE_RENAME, STORE_MOVE_DELETE };
#define STORE_MOVE_PIPE (8u << 20) /* bytes in flight between the dump and the load */

typedef struct store_move_opts {
  int then;               /* STORE_MOVE_*: what becomes of the source */
  const char *rename_to;  /* STORE_MOVE_RENAME: NULL = Name_moved_<unix seconds> */
  store_dump_opts dump;   /* tests: the dump's hooks (freeze is the move's) */
  store_load_opts load;   /* tests: the load's batch size and hook (resume is the move's) */
  /* go on with the target's unfinished load of newname (a move whose
   * source side failed, or one killed): the dump starts at its last
   * checkpoint and the load writes on into its prefix */
  int resume;
} store_move_opts;

typedef struct store_move_stats {
  store_dump_stats dump, load;
  char retired[256];      /* STORE_MOVE_RENAME: the source's new name */
} store_move_stats;

/* Move database name of src to dst as newname (NULL: name): the dump
 * streams into the load through a STORE_MOVE_PIPE pipe, with no file; the
 * source stays writable until its last catch-up round, which runs with
 * the source marked read-only (store_db_set_moving); once the load has
 * committed the source is kept (the mark lifted: it is a copy from then
 * on), renamed or deleted. Any failure before that lifts the mark; a
 * failure of the load leaves nothing of the target, one of the dump (the
 * source side) leaves what was loaded and its mark (st->load.kept) for a
 * move with o->resume. 0, or store_dump's and store_load's errors,
 * DV_EDB_EXISTS (the target, or the rename's name), DV_ENOT_FOUND (a
 * resume with nothing to resume), with *why. */
int store_move(store *src, const char *name, store *dst, const char *newname, const store_move_opts *o,
               store_move_stats *st, const char **why) DV_MUST_CHECK;

#endif
