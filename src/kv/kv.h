/* kv.h — the transactional key-value contract every layer above kv/ uses.
 *
 * divan stores everything through this one interface, which has
 * FoundationDB's semantics so that the same layer runs on the embedded
 * engine (kv/rocks.c: RocksDB under divan's own commit pipeline) and on a
 * FoundationDB cluster (kv/fdb.c). Nothing above kv/ knows which backend
 * runs. This header is the manual; ../shared/DESIGN.md "The KV contract"
 * is the design it implements.
 *
 * Semantics (FoundationDB's):
 * - Strictly serializable optimistic transactions. A transaction reads a
 *   consistent snapshot at its read version. Its commit fails with
 *   DV_ENOT_COMMITTED if any key or range it read (other than snapshot
 *   reads) was written by a transaction that committed after its read
 *   version — including one committed earlier in the same group-commit
 *   batch. A range read that stops early (limit, or an iterator closed
 *   early) conflicts only up to the last key it returned.
 * - Read-your-writes: every read sees the transaction's own sets, clears,
 *   clear_ranges and atomic ops, in the order they were made — except keys
 *   written with a versionstamp: a read that may touch such a key fails
 *   with DV_EACCESSED_UNREADABLE (FDB error 1036).
 * - Limits (enforced by every backend, errors as FDB's): key <= 10,000
 *   bytes (DV_EKEY_TOO_LARGE), value <= 100,000 bytes
 *   (DV_EVALUE_TOO_LARGE), mutations plus conflict ranges <= 10,000,000
 *   bytes per transaction (DV_ETXN_TOO_LARGE, at commit), 5 seconds from
 *   the read version (DV_ETXN_TOO_OLD, retryable). Keys starting with
 *   0xFF are the system keyspace: only KV_METADATA_VERSION_KEY is legal
 *   there (DV_EKEY_OUTSIDE_LEGAL otherwise).
 * - Error classes (util/err.h): retryable (not_committed,
 *   transaction_too_old, future_version, commit_unknown_result — the last
 *   one means "maybe committed"); fatal (too large, timed out, cancelled).
 *   kv_on_error() decides, kv_run() loops.
 * - A failed transaction is unusable until kv_txn_reset(), as LMDB's
 *   MDB_TXN_ERROR: every call returns the stored error.
 *
 * Versions and versionstamps: a commit version is a 64-bit integer that
 * strictly increases; the 10-byte versionstamp of a committed transaction
 * is its commit version (8 bytes big-endian) followed by its order inside
 * the commit batch (2 bytes big-endian), so stamps strictly increase in
 * commit order. set_versionstamped_key/value take FDB's format: the
 * key (or value) holds a 10-byte placeholder somewhere and ends with a
 * 4-byte little-endian offset of that placeholder; at commit the
 * placeholder is replaced by the stamp and the 4 bytes are dropped.
 *
 * Memory: everything a read returns is borrowed (STYLE.md, LMDB's MDB_val):
 * kv_get values and kv_get_range arrays stay valid until the transaction is
 * reset or destroyed; an iterator's current pair only until the next
 * kv_iter_next/kv_iter_free. Copy what must outlive that.
 *
 * Threads: a kv_db is shared by all threads. A kv_txn is used by one thread
 * at a time. Commit completion callbacks and watch callbacks run on the
 * backend's own thread: they must not block, and may not call back into
 * the same transaction except to read its committed version/stamp.
 */
#ifndef DV_KV_H
#define DV_KV_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct kv_db kv_db;       /* an open store, shared by threads */
typedef struct kv_txn kv_txn;     /* one transaction, one thread at a time */
typedef struct kv_iter kv_iter;   /* a range read in progress */
typedef struct kv_watch kv_watch; /* a registered watch */

/* FoundationDB's limits. */
#define KV_MAX_KEY 10000
#define KV_MAX_VALUE 100000
#define KV_MAX_TXN_BYTES 10000000
#define KV_MAX_TXN_AGE_MS 5000
#define KV_STAMP_LEN 10

/* The one legal system key: a 10-byte versionstamp value, bumped with
 * kv_set_versionstamped_value(txn, KV_METADATA_VERSION_KEY, 14 zero bytes)
 * to tell every process that cached metadata changed (FDB's own key). */
#define KV_METADATA_VERSION_KEY "\xff/metadataVersion"
#define KV_METADATA_VERSION_KEY_LEN 18

/* ---- opening ---------------------------------------------------------- */

typedef struct kv_rocks_opts {
  size_t memory_mb;        /* the memory the engine may plan with ([divan] memory_limit less the
                              process's own start; main.c); 0 = KV_ROCKS_MEMORY_MB. Its shares
                              (rocks.c): an eighth block cache, two memtables of a sixteenth each,
                              a sixteenth the conflict history, a 32nd a group commit's batch */
  size_t block_cache_mb;   /* overrides the block cache's share; 0 = from memory_mb */
  size_t memtable_mb;      /* overrides one memtable's share; 0 = from memory_mb */
  int no_sync;             /* 1: skip fsync of the WAL (tests of speed only) */
  int create_if_missing;   /* 1: create the directory and store */
  int64_t reserve_mb;      /* free-space reserve in MB: 0 = default, -1 = none */
} kv_rocks_opts;

/* The free-space reserve (issue 24): while the filesystem holding the
 * store has less free than the reserve, commits that write fail with
 * DV_ENOSPC (HTTP 507) before RocksDB runs out of room — unless the
 * transaction frees space (kv_set_frees_space: a database's deletion) —
 * so RocksDB always has room for its flushes, compactions and the
 * deletion. Reads are never refused. If RocksDB hits ENOSPC anyway (another
 * process filled the disk), it stops writing (its "background error"); the
 * committer then resumes it by itself as soon as the free space is back
 * above the reserve and a flush's room: it reopens the store (the WAL is
 * replayed up to the failed write; every acknowledged commit is before it).
 * Any other failed write — a failed fsync above all — is never resumed:
 * that commit and every later one get DV_EREAD_ONLY (HTTP 500 read_only)
 * until the server restarts, reads still answer, and kv_db_info says
 * read_only (README "The embedded storage engine"). A dropped database's space is given back
 * at once by a background compaction of its range.
 *
 * The default reserve is room for what RocksDB writes on its own — a
 * memtable flush, the next WAL (preallocated at 1.1 memtables) and a
 * compaction: the larger of 2 memtables + 64 MB (192 MB) and 5 % of the
 * filesystem, at most KV_ROCKS_RESERVE_MAX_MB and half the filesystem. */
#define KV_ROCKS_RESERVE_MAX_MB 1024
#define KV_ROCKS_MEMORY_MB 128   /* the default [divan] memory_limit */
#define KV_ROCKS_MEMORY_MIN_MB 16 /* the least the engine plans with (shares of 2, 1, 1, 0.5 MB) */

/* Open (creating if asked) the embedded store in directory `path`. Only one
 * process may hold a directory: a second gets DV_ELOCKED. Options may be
 * NULL for defaults (create_if_missing = 1). Returns 0 and *out_db, or
 * DV_EIO / DV_ELOCKED / DV_ENOMEM / DV_ECORRUPT. */
int kv_open_rocks(const char *path, const kv_rocks_opts *opts, kv_db **out_db) DV_MUST_CHECK;

typedef struct kv_fdb_opts {
  const char *library;     /* libfdb_c to dlopen; NULL = "libfdb_c.so" */
} kv_fdb_opts;

/* Open a FoundationDB cluster through libfdb_c, loaded with dlopen at the
 * first call (kv/fdb.c). cluster_file NULL uses FDB's default (the
 * FDB_CLUSTER_FILE variable, then /etc/foundationdb/fdb.cluster). The
 * first call also selects the API version (710, or the library's highest
 * if lower, not below 620) and starts FDB's network thread, which lives
 * until the process exits; one process loads one library, so a later
 * call naming another one gets DV_EINVAL. Any number of stores may be open
 * on one cluster, in this or other processes. opts may be NULL. Returns 0
 * and *out_db, or DV_ENOTSUP (no library, or one too old), DV_EIO (FDB
 * refused: the cluster file), DV_ENOMEM, DV_EINVAL. */
int kv_open_fdb(const char *cluster_file, const kv_fdb_opts *opts, kv_db **out_db) DV_MUST_CHECK;

/* Close a store: waits for commits in flight, fails outstanding watches
 * with DV_ECANCELLED. All transactions must be destroyed first. NULL is a
 * no-op. */
void kv_close(kv_db *db);

/* The store's current committed version (the newest a new transaction
 * would read at). */
int64_t kv_db_version(kv_db *db);

/* Backend name ("rocks", "fdb", "fault(rocks)"), for logs and /_node. */
const char *kv_db_backend(kv_db *db);

/* Ask the backend to reorganise storage now (the embedded engine compacts
 * RocksDB over the whole keyspace; on FoundationDB it is a no-op). Blocks
 * until done; safe while other threads read and commit. CouchDB's
 * `_compact` maps here. Returns 0 or DV_EIO. */
int kv_compact(kv_db *db);

/* A hint after committing n bytes of bulk data that will not be read soon
 * (attachment content): the backend may push it out of memory. The
 * embedded engine flushes its memtable once such writes pass
 * KV_BULK_FLUSH_BYTES since the last flush and returns freed heap to the
 * OS, so a long upload holds tens of MB, not two whole memtables; on
 * FoundationDB it is a no-op. Never fails, never blocks on I/O. */
#define KV_BULK_FLUSH_BYTES (16u << 20)
void kv_bulk_written(kv_db *db, size_t n);

/* What the engine says of itself, for /_node/_local/_versions and the
 * metrics (api/stats.c). A number the backend cannot know is -1: on
 * FoundationDB compaction and memory belong to the cluster's storage
 * servers, which a client does not see (they are in the cluster's status
 * document, \xff\xff/status/json, not read here). */
typedef struct kv_info {
  const char *engine;              /* "rocksdb", "foundationdb" (static) */
  char version[32];                /* its library's version ("7.8.3"); FDB: the API version in use ("710") */
  int64_t pending_compaction_bytes; /* RocksDB's estimate-pending-compaction-bytes */
  int64_t running_compactions;     /* num-running-compactions */
  int64_t running_flushes;         /* num-running-flushes */
  int64_t sst_bytes;               /* total-sst-files-size */
  int64_t memtable_bytes;          /* cur-size-all-mem-tables */
  int64_t write_stopped;           /* is-write-stopped: 1 while writes are held */
  int64_t history_bytes;           /* the embedded engine's conflict history (rocks.c) */
  int64_t read_only;               /* 1 once a write failed other than for space (a failed
                                      fsync): every write gets DV_EREAD_ONLY until a restart */
} kv_info;

/* Fill *out (never fails; unknown numbers -1). Safe from any thread,
 * also while the store is being reopened (numbers then -1). */
void kv_db_info(kv_db *db, kv_info *out);

/* ---- transactions ------------------------------------------------------ */

/* Create a transaction. Its read version is taken lazily at the first read
 * (or kv_get_read_version). Returns 0 / DV_ENOMEM. */
int kv_txn_begin(kv_db *db, kv_txn **out_txn) DV_MUST_CHECK;

/* Forget everything the transaction did: reads, writes, error state, read
 * version. Borrowed values become invalid. */
void kv_txn_reset(kv_txn *txn);

/* Destroy a transaction (after its commit completed, if one was started).
 * NULL is a no-op. */
void kv_txn_destroy(kv_txn *txn);

/* The read version, taking one now if none was taken yet. */
int kv_get_read_version(kv_txn *txn, int64_t *out_version) DV_MUST_CHECK;

/* ---- reads ------------------------------------------------------------- */

enum {
  KV_SNAPSHOT = 1 << 0, /* no read conflict for this read */
  KV_REVERSE = 1 << 1,  /* range: return keys in descending order */
  KV_BULK = 1 << 2,     /* range: bulk data read once (attachment content):
                           the backend keeps it out of its caches (RocksDB:
                           fill_cache off; a hint, no change in results) */
};

/* Point read. On success *out_found is 1 with *out_val and *out_len set
 * (borrowed until reset/destroy), or 0 when the key is absent.
 * flags: KV_SNAPSHOT. Errors: DV_EKEY_TOO_LARGE, DV_EKEY_OUTSIDE_LEGAL,
 * DV_ETXN_TOO_OLD, DV_EACCESSED_UNREADABLE, DV_EIO. */
int kv_get(kv_txn *txn, const void *key, size_t key_len, int flags, const uint8_t **out_val,
           size_t *out_len, int *out_found) DV_MUST_CHECK;

typedef struct kv_pair {
  const uint8_t *key; /* borrowed */
  size_t key_len;
  const uint8_t *val; /* borrowed */
  size_t val_len;
} kv_pair;

/* Start a range read of keys in [begin, end). limit 0 = no limit. flags:
 * KV_SNAPSHOT, KV_REVERSE. The iterator streams: the backend fetches in
 * batches, merges in the transaction's own writes (KV_BULK: see above), and adds the read
 * conflict range when the iterator is freed — [begin, end) if it reached
 * the end, or only up to the last key returned if it stopped early. */
int kv_iter_begin(kv_txn *txn, const void *begin, size_t begin_len, const void *end, size_t end_len,
                  int limit, int flags, kv_iter **out_iter) DV_MUST_CHECK;

/* Next pair: returns 1 with *out set (valid until the next call), 0 at the
 * end of the range or limit, or a negative error (the transaction is then
 * failed as well). */
int kv_iter_next(kv_iter *it, kv_pair *out) DV_MUST_CHECK;

/* Finish a range read (records its read conflict range). NULL is a no-op. */
void kv_iter_free(kv_iter *it);

/* Convenience: read up to `limit` pairs of [begin, end) into an array owned
 * by the transaction (valid until reset/destroy). *out_more is 1 when the
 * limit was reached: there may be more keys (as FDB's `more`, it can be 1
 * when exactly `limit` keys remained; looking further would widen the read
 * conflict range). Continue from the last key to be sure. */
int kv_get_range(kv_txn *txn, const void *begin, size_t begin_len, const void *end, size_t end_len,
                 int limit, int flags, kv_pair **out_pairs, int *out_count, int *out_more) DV_MUST_CHECK;

/* ---- writes ------------------------------------------------------------ */

/* Writes are buffered in the transaction and applied atomically at commit.
 * Errors at call time: DV_EKEY_TOO_LARGE, DV_EVALUE_TOO_LARGE,
 * DV_EKEY_OUTSIDE_LEGAL, DV_EINVERTED_RANGE, DV_ENOMEM; the transaction
 * is then failed. */
int kv_set(kv_txn *txn, const void *key, size_t key_len, const void *val, size_t val_len) DV_MUST_CHECK;
int kv_clear(kv_txn *txn, const void *key, size_t key_len) DV_MUST_CHECK;
int kv_clear_range(kv_txn *txn, const void *begin, size_t begin_len, const void *end,
                   size_t end_len) DV_MUST_CHECK;

typedef enum kv_atomic_op {
  KV_ADD = 2,      /* little-endian integer addition (FDB ADD), any width */
  KV_MAX = 12,     /* keep the larger, compared as unsigned little-endian */
  KV_MIN = 13,     /* keep the smaller; param is stored when the key is absent */
  KV_BYTE_MIN = 15,/* keep the lexicographically smaller byte string */
  KV_BYTE_MAX = 16,/* keep the lexicographically larger byte string */
} kv_atomic_op;

/* Atomic read-modify-write without a read conflict, FDB semantics: the
 * existing value is zero-extended or truncated to the param's length
 * first; an absent key counts as zeros (for MIN: param is stored). */
int kv_atomic(kv_txn *txn, kv_atomic_op op, const void *key, size_t key_len, const void *param,
              size_t param_len) DV_MUST_CHECK;

/* Set a key whose bytes contain a 10-byte placeholder for the commit's
 * versionstamp: `key` ends with a 4-byte little-endian offset of the
 * placeholder (FDB API >= 520). The key (without the suffix) must respect
 * KV_MAX_KEY. DV_EINVAL if the offset does not fit. */
int kv_set_versionstamped_key(kv_txn *txn, const void *key, size_t key_len, const void *val,
                              size_t val_len) DV_MUST_CHECK;

/* Set a value with a versionstamp placeholder, same suffix format. */
int kv_set_versionstamped_value(kv_txn *txn, const void *key, size_t key_len, const void *val,
                                size_t val_len) DV_MUST_CHECK;

enum { KV_CONFLICT_READ = 0, KV_CONFLICT_WRITE = 1 };

/* Add an explicit conflict range [begin, end), read or write. */
int kv_add_conflict_range(kv_txn *txn, const void *begin, size_t begin_len, const void *end,
                          size_t end_len, int type) DV_MUST_CHECK;

/* ---- commit ------------------------------------------------------------ */

/* Completion of an asynchronous commit: rc is 0 or a DV_E* error. Runs on
 * the backend's thread (or at once on the caller's); must not block — in
 * particular it must not call kv_commit — but it may reset or destroy the
 * transaction. */
typedef void (*kv_commit_cb)(kv_txn *txn, int rc, void *arg);

/* Start committing. The callback runs exactly once (possibly before this
 * returns, e.g. for a read-only transaction or an error found at once).
 * While the commit is in flight the transaction must not be used.
 * A commit is acknowledged (rc 0) only when it is durable. */
void kv_commit_async(kv_txn *txn, kv_commit_cb cb, void *arg);

/* Blocking commit. Returns 0 or an error. */
int kv_commit(kv_txn *txn) DV_MUST_CHECK;

/* After a successful commit: its commit version (-1 for a read-only
 * transaction) and its 10-byte versionstamp. DV_EINVAL before commit or
 * for a transaction that wrote nothing. */
int kv_get_committed_version(kv_txn *txn, int64_t *out_version) DV_MUST_CHECK;
int kv_get_versionstamp(kv_txn *txn, uint8_t out_stamp[KV_STAMP_LEN]) DV_MUST_CHECK;

/* FDB's on_error: if rc is retryable, sleep a jittered backoff that grows
 * with each retry, reset the transaction and return 0 (retry it);
 * otherwise, or past the retry limit, return rc. */
int kv_on_error(kv_txn *txn, int rc) DV_MUST_CHECK;

/* Delay (milliseconds) kv_on_error would sleep for this transaction's next
 * retry; -1 when rc is not retryable or the limit is reached. A peek: it
 * neither resets nor counts the retry (kv_on_error_nowait does both). */
int kv_retry_delay_ms(kv_txn *txn, int rc);

/* kv_on_error for callers that cannot sleep (a commit callback, a worker
 * with a timed queue): if rc is retryable within the retry limit, reset
 * the transaction, count the retry and return the delay in milliseconds
 * (>= 0; 0 for a first not_committed, as kv_on_error) the caller lets pass
 * before it runs the transaction again; otherwise return rc (negative),
 * the transaction untouched. Never blocks, so it may run in a commit
 * callback. The backoff is kv.c's on every backend (FDB's own on_error
 * future, which waits, is not used). */
int kv_on_error_nowait(kv_txn *txn, int rc) DV_MUST_CHECK;

/* Retry loop: run fn(txn, arg) then commit, again and again on retryable
 * errors (kv_on_error), until success or a fatal error. fn must be safe to
 * run more than once; it returns 0 to commit or an error to abort. */
typedef int (*kv_txn_fn)(kv_txn *txn, void *arg);
int kv_run(kv_db *db, kv_txn_fn fn, void *arg) DV_MUST_CHECK;

/* Transaction options. */
int kv_set_retry_limit(kv_txn *txn, int limit);   /* default 100; -1 = none */
int kv_set_timeout_ms(kv_txn *txn, int ms);       /* 0 = none; then DV_ETIMED_OUT */
/* This transaction frees space (a database's deletion): a backend that
 * refuses writes with DV_ENOSPC while its disk is nearly full (the rocks
 * backend's free-space reserve) still commits it. Cleared by a reset. A
 * no-op on FoundationDB. */
void kv_set_frees_space(kv_txn *txn);

/* ---- watches ----------------------------------------------------------- */

/* Called once: rc 0 when the key's value changed, or DV_ECANCELLED /
 * another error. Runs on the backend's thread (or, for a cancellation, on
 * the thread calling kv_watch_free); must not block and must not call
 * kv_watch_free on its own watch — signal another thread to do that. */
typedef void (*kv_watch_cb)(void *arg, int rc);

/* Watch a key: the watch is registered when the transaction commits (as
 * in FDB, a read-only transaction commits trivially) and fires when the
 * key's value differs from the value the transaction saw (its own write, or
 * the value at its read version) — at once if it already differs, so no
 * wake-up is lost between a read and the watch. The returned handle stays
 * valid until kv_watch_free. */
int kv_watch_add(kv_txn *txn, const void *key, size_t key_len, kv_watch_cb cb, void *arg,
             kv_watch **out_watch) DV_MUST_CHECK;

/* Cancel (if it has not fired, cb runs with DV_ECANCELLED) and free. The
 * callback has finished running when this returns. NULL is a no-op. */
void kv_watch_free(kv_watch *w);

/* ---- helpers ----------------------------------------------------------- */

/* FDB's strinc: the first key that is not prefixed by `key` (strip trailing
 * 0xFF bytes, increment the last byte). Writes into out (capacity
 * key_len) and returns the new length, or DV_EINVAL for "" or all 0xFF. */
int kv_strinc(const void *key, size_t key_len, uint8_t *out, size_t *out_len);

#endif
