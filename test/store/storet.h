/* storet.h — helpers shared by the store tests (the .c files of test/store).
 *
 * Not a test file: it opens a kv store and a store in a fresh directory,
 * creates databases, writes and reads documents given as JSON text, reads
 * the whole changes feed, compares JSON values (object key order ignored,
 * numbers by their canonical text) and draws deterministic random numbers
 * from a seed that DV_SEED can override. Every helper asserts on errors
 * the caller did not ask to see, so a test reads as the contract; helpers
 * that return an edit's or a read's rc leave judging it to the caller.
 *
 * Memory: strings and values a helper returns live in the arena passed in
 * (or t->a), until the caller resets it.
 */
#ifndef DV_TEST_STORET_H
#define DV_TEST_STORET_H

#include <stdint.h>

#include "json/json.h"
#include "kv/kv.h"
#include "store/store.h"
#include "test.h"
#include "util/arena.h"

typedef struct storet {
  char *dir;       /* the kv directory (under test_tmpdir()) */
  kv_db *kv;       /* the kv store */
  store *s;        /* the layer over it */
  store_db *db;    /* the database storet_open created ("db"), or NULL */
  dv_arena a;      /* scratch arena for the test; reset it when convenient */
} storet;

/* Open the kv store the store tests run on, in directory dir (created if
 * missing): the embedded engine (sync = 0 skips the WAL fsync), or — when
 * storet_on_fdb() — the fdb backend over the libfdb_c double keeping its
 * data in dir (test/kv/kvt.h kvt_fdbsim_open). Returns kv_open_*'s rc. */
int storet_kv_open(const char *dir, int sync, kv_db **out_kv);
/* 1 while the store tests run on the fdb backend: the test_fdb_* copies
 * of the store tests (test_on_fdb.c) set DV_STORE_BACKEND=fdb. */
int storet_on_fdb(void);

/* Two store instances over one fresh "cluster" of the libfdb_c double,
 * each with its own kv handle and handle cache: the way several divan
 * processes share one FoundationDB cluster. Asserts success. */
typedef struct storet_pair {
  kv_db *kv[2];  /* one kv_db per instance, over the same double */
  store *s[2];   /* the two stores */
} storet_pair;
void storet_fdb_pair(storet_pair *p);
void storet_fdb_pair_close(storet_pair *p);

/* Open a fresh kv store in a new directory under test_tmpdir() and a store
 * over it (opts may be NULL). sync = 0 skips the WAL fsync, for tests that
 * do not crash the process. dbname non-NULL: create that database and open
 * a handle in t->db. Asserts success. */
storet *storet_open(const store_opts *opts, int sync, const char *dbname);
/* The same (no WAL fsync, default options) over the fault backend
 * (kv/kv_fault.h): t->kv is the wrapper, for kv_fault_set. */
storet *storet_open_fault(const char *dbname);
/* Close the handle, the store and the kv store, free the arena. */
void storet_close(storet *t);
/* Create a database and open a handle to it (the caller closes it). */
store_db *storet_create_db(storet *t, const char *name);

/* ---- JSON ---------------------------------------------------------------- */

/* Parse JSON text (asserts it is valid), copied into the arena. */
json_val *storet_json(dv_arena *a, const char *text);
json_val *storet_json_n(dv_arena *a, const char *text, size_t n);
/* Compact JSON text of v, NUL-terminated, in the arena. */
const char *storet_json_text(dv_arena *a, const json_val *v);
/* 1 if a and b are equal JSON values: object members compared as sets
 * (key order ignored), arrays in order, numbers by canonical text, strings
 * by bytes. On a difference, where (may be NULL) gets a short path to it
 * ("/a/3/b"), in the arena. */
int storet_json_eq(dv_arena *a, const json_val *x, const json_val *y, const char **where);
/* A copy of a document object without its top-level members whose key
 * starts with '_' (_id, _rev, _revisions, _conflicts…): the user body. */
json_val *storet_body(dv_arena *a, const json_val *doc);

/* Assert two JSON values are equal; prints both (truncated) and the first
 * difference otherwise. */
#define STORET_ASSERT_JSON_EQ(a, x, y)                                                     \
  do {                                                                                    \
    const char *w_ = NULL;                                                                \
    if (!storet_json_eq((a), (x), (y), &w_))                                              \
      test_fail_(__FILE__, __LINE__, "%s == %s: differ at %s\n  %.2000s\n  %.2000s", #x, #y, \
                 w_ ? w_ : "?", storet_json_text((a), (x)), storet_json_text((a), (y)));  \
  } while (0)

/* ---- revisions ----------------------------------------------------------- */

/* Parse "N-HASH" into the arena (asserts). */
store_rev storet_rev(dv_arena *a, const char *text);
store_rev storet_rev_n(dv_arena *a, const char *text, size_t n);
/* The revision in a document's "_rev" member (asserts it is there). */
store_rev storet_doc_rev(dv_arena *a, const json_val *doc);
/* "N-HASH" text of a revision, in the arena. */
const char *storet_rev_str(dv_arena *a, const store_rev *r);
/* A copy of r whose hash lives in the arena. */
store_rev storet_rev_dup(dv_arena *a, const store_rev *r);
/* 1 if a and b are the same revision (pos, raw flag and hash bytes). */
int storet_rev_eq(const store_rev *a, const store_rev *b);

/* ---- documents ----------------------------------------------------------- */

/* One interactive edit: body_json is the user body (NULL = {}), parent
 * "N-HASH" or NULL. Returns the edit's rc (store_update itself must return
 * 0); on success *out_rev (may be NULL) gets the new rev, hash in a. */
int storet_put(store_db *db, dv_arena *a, const char *id, const char *body_json,
               const char *parent, int deleted, store_rev *out_rev);
/* One edit from a whole CouchDB document text (_id, _rev, _deleted,
 * _revisions…) through store_edit_from_json; asserts that conversion
 * succeeds. Returns the edit's rc; *out_rev as storet_put. */
int storet_put_doc(store_db *db, dv_arena *a, const char *doc_json, int new_edits,
                   store_rev *out_rev);
/* store_doc_get by id and optional rev text; returns its rc. */
int storet_get(store_db *db, dv_arena *a, const char *id, const char *rev, int flags,
               json_val **out);

/* ---- the changes feed ---------------------------------------------------- */

typedef struct storet_change {
  store_seq seq;   /* the row's sequence */
  char *id;        /* document id (arena, NUL-terminated) */
  size_t id_len;   /* its length */
  store_rev rev;   /* winning revision (hash in the arena) */
  int deleted;     /* winner is a tombstone */
} storet_change;

/* Every row of the feed after `since` (NULL = from zero), oldest first, in
 * the arena. Returns the number of rows; *out_last (may be NULL) gets the
 * last sequence store_changes reported. */
size_t storet_changes(store_db *db, dv_arena *a, const store_seq *since, storet_change **out,
                      store_seq *out_last);

/* ---- random numbers ------------------------------------------------------ */

/* The seed for a randomized test: DV_SEED (decimal or 0x hex) if set, else
 * dflt; printed as "<what>: seed N (DV_SEED=N reproduces)". */
uint64_t storet_seed(const char *what, uint64_t dflt);
/* splitmix64. */
uint64_t storet_rand(uint64_t *state);
/* Uniform in [0, n) (n > 0). */
uint64_t storet_below(uint64_t *state, uint64_t n);
/* 1 with probability num/den. */
int storet_chance(uint64_t *state, unsigned num, unsigned den);
/* An integer environment variable, or dflt when unset or not a number. */
long storet_env_long(const char *name, long dflt);

/* Monotonic seconds, for progress lines. */
double storet_now(void);

#endif
