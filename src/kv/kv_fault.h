/* kv_fault.h — a fault-injecting kv backend that decorates another one.
 *
 * SQLite proves its pager under *fault.test; divan proves the store layer
 * the same way: kv_fault_wrap() puts a pass-through backend in front of any
 * open kv_db, and a test tells it which FoundationDB failures to produce —
 * commit_unknown_result after or before a real commit, not_committed,
 * transaction_too_old, transaction_timed_out — on the next N eligible
 * operations or with a seeded probability. Everything not injected is the
 * inner backend's own behaviour, unchanged, so the wrapper with no faults
 * set passes the whole contract suite. It is a test tool: production code
 * never opens it, and it does not simulate latency or crashes.
 *
 * Eligible operations per kind:
 *   KV_FAULT_COMMIT_UNKNOWN_AFTER  commits of transactions that wrote:
 *                                  the inner commit really happens, then
 *                                  DV_ECOMMIT_UNKNOWN is reported (also when
 *                                  the inner commit failed with
 *                                  DV_ENOT_COMMITTED: a lost reply looks
 *                                  the same; other inner errors pass).
 *   KV_FAULT_COMMIT_UNKNOWN_BEFORE commits of transactions that wrote:
 *                                  nothing is committed, DV_ECOMMIT_UNKNOWN.
 *   KV_FAULT_NOT_COMMITTED         commits of transactions that wrote:
 *                                  nothing is committed, DV_ENOT_COMMITTED.
 *   KV_FAULT_TOO_OLD               non-snapshot and snapshot point reads,
 *                                  range-read starts, and commits of
 *                                  transactions that wrote:
 *                                  DV_ETXN_TOO_OLD, nothing committed.
 *   KV_FAULT_TIMED_OUT             commits of transactions that wrote:
 *                                  nothing is committed, DV_ETIMED_OUT.
 * A transaction "wrote" when it made any mutation or added a write
 * conflict range; read-only commits are never failed (FDB's read-only
 * commits are local and cannot fail). When several kinds are armed, a
 * commit checks them in the order of the enum and the first that fires
 * wins. After an injected failure kv_get_committed_version and
 * kv_get_versionstamp return DV_EINVAL, as after any failed commit.
 *
 * Thread-safe: the settings, the random generator and the counters are
 * guarded by one mutex, so many threads may commit at once.
 */
#ifndef DV_KV_FAULT_H
#define DV_KV_FAULT_H

#include "kv/kv.h"

typedef enum kv_fault_kind {
  KV_FAULT_COMMIT_UNKNOWN_AFTER = 0, /* commit, then report commit_unknown_result */
  KV_FAULT_COMMIT_UNKNOWN_BEFORE,    /* do not commit, report commit_unknown_result */
  KV_FAULT_NOT_COMMITTED,            /* do not commit, report not_committed */
  KV_FAULT_TOO_OLD,                  /* fail a read or commit with transaction_too_old */
  KV_FAULT_TIMED_OUT,                /* fail a commit with transaction_timed_out */
  KV_FAULT_NKINDS                    /* number of kinds */
} kv_fault_kind;

/* Wrap an open store. On success the wrapper owns `inner`: kv_close() of
 * *out_db closes both. On failure `inner` is left open and still the
 * caller's. Its backend name is "fault(<inner name>)". Returns 0 or
 * DV_ENOMEM. */
int kv_fault_wrap(kv_db *inner, kv_db **out_db) DV_MUST_CHECK;

/* Arm `kind`: each eligible operation draws a number in [0, 1) and fails
 * when it is below `probability` and the kind's remaining count is not 0;
 * each injection decrements the count. count < 0 means no limit. So
 * (1.0, 3) fails the next three eligible operations, (0.1, -1) fails
 * about one in ten forever, and (p, 0) disarms the kind. `db` must come
 * from kv_fault_wrap. */
void kv_fault_set(kv_db *db, kv_fault_kind kind, double probability, long count);

/* Disarm every kind (the counters are kept). */
void kv_fault_clear(kv_db *db);

/* Seed the generator behind probabilities (the default seed is fixed, so
 * a run is reproducible as long as the order of eligible operations is). */
void kv_fault_seed(kv_db *db, uint64_t seed);

/* How many faults of `kind` were injected since the wrap (or the last
 * kv_fault_reset_counts). */
long kv_fault_injected(kv_db *db, kv_fault_kind kind);

/* How many eligible operations drew for `kind` (injected or not). A
 * commit stops drawing at the first kind that fires, so later kinds in
 * the enum do not count that commit. */
long kv_fault_eligible(kv_db *db, kv_fault_kind kind);

/* Zero the injected and eligible counters. */
void kv_fault_reset_counts(kv_db *db);

/* The store the wrapper decorates (still owned by the wrapper). */
kv_db *kv_fault_inner(kv_db *db);

#endif
