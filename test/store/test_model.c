/* test_model.c — the store's revision trees against an in-memory model.
 *
 * Tens of thousands of random store_update calls over a small id space (so
 * conflicts, branches and stemming are frequent), each checked against a
 * model of CouchDB revision trees written here from the rules of seed 000
 * and DESIGN.md "Update paths", not from the store's code:
 *
 * - A document is a set of branches; a branch is its path of revisions,
 *   leaf first (positions falling by one), the leaf's deleted flag and the
 *   leaf's body. Winner: live beats deleted, then higher pos, then higher
 *   hash (bytewise: 16-byte hashes, tuple order = byte order).
 * - Interactive edits (new_edits=1): no parent creates pos 1 when the doc
 *   has no branch, extends the deleted winner when every branch is
 *   deleted, and conflicts when the winner is live. A parent must be a live
 *   leaf (a deleted leaf, an inner or stemmed rev, an unknown rev or a
 *   missing doc conflict); the new rev (hash chosen by the store) replaces
 *   that branch's leaf. A second edit of one id in one call conflicts.
 * - Replication (new_edits=0): a path whose leaf is already known is a
 *   no-op (no write, no new changes row); one that contains a branch's leaf
 *   extends that branch; one that shares any rev with a branch starts a new
 *   branch: the incoming path down to the first rev it shares, then that
 *   branch's revs below it; anything else is a new branch.
 * - Both kinds keep at most revs_limit revs on the branch written — and,
 *   as the store rewrites the old and the new winner's KVs on every write
 *   (the Sequence lives there), on those two as well; no other branch is
 *   stemmed.
 *
 * A "true tree" of every revision ever written (with parent links, stemmed
 * or not) drives the generator: replicated paths extend leaves, fork from
 * inner and stemmed-away revisions, repeat known revisions or start new
 * roots. Paths whose merge the rules leave ambiguous (two branches' leaves
 * on one path, or two overlapping branches that would give different
 * results) are not sent: the model would have to guess.
 *
 * After every call: each touched document's leaves (store_doc_leaves:
 * winner first, ancestors) and winner (store_doc_get, body compared as
 * JSON), every edit's rc and rev; every call for a while and then every
 * CHECK_EVERY calls: the whole changes feed (one row per doc, increasing
 * sequences, the winner, an untouched doc keeps its sequence, order of
 * last modification; style=all_docs lists every leaf, winner first) and
 * the db_info counters; now and then one document
 * in depth (_revisions, _conflicts, _deleted_conflicts, every leaf by rev,
 * an inner rev is not found). At the end the store and the kv are closed,
 * reopened, and every document is checked again.
 *
 * DV_SEED fixes the seed; DV_MODEL_OPS overrides the number of calls per
 * test. A failure prints the seed, the call, the document's model, what
 * the store holds and the document's recent history.
 */
#include <stdarg.h>

#include "storet.h"

#define HLEN 16           /* hash bytes of every rev here */
#define HIST 24           /* recent history lines kept per document */
#define DENSE_CHECKS 600  /* calls checked in full before thinning out */
#define CHECK_EVERY 50    /* then a full check every this many calls */
#define SWEEP_PER_MILLE 15 /* calls that delete every live leaf of a doc */
#define MAX_BRANCHES 30    /* replication stops adding branches to a doc here */

/* ---- the model ----------------------------------------------------------- */

typedef struct mrev {
  int64_t pos;       /* generation */
  uint8_t h[HLEN];   /* hash */
} mrev;

typedef struct mbranch {
  mrev *path;        /* leaf first, malloc'd */
  size_t n;          /* revs on the path */
  int deleted;       /* the leaf is a tombstone */
  char *body;        /* the leaf's body as JSON text (malloc'd), NULL = {} */
} mbranch;

typedef struct tnode {
  mrev r;            /* the revision */
  long parent;       /* index of its parent in the doc's nodes, -1 unknown */
  int children;      /* nodes whose parent it is */
} tnode;

typedef struct mdoc {
  char id[24];       /* document id */
  mbranch *br;       /* branches, in no particular order */
  size_t nbr, brcap; /* used / allocated */
  tnode *t;          /* every revision ever written ("true tree") */
  size_t nt, tcap;   /* used / allocated */
  long mod;          /* call index of the last write, -1 never */
  store_seq seq;     /* sequence the feed showed last */
  long seq_mod;      /* mod when seq was seen, -2 never seen */
  char *hist[HIST];  /* ring of recent history lines */
  unsigned nhist;    /* lines ever added */
} mdoc;

typedef struct profile {
  const char *name;  /* test name, for messages */
  uint64_t seed;     /* default seed */
  long ops;          /* store_update calls */
  int ids;           /* size of the id space */
  int repl_pct;      /* share of replication calls */
  int max_batch;     /* edits per call, 1..max_batch */
  int64_t limit0;    /* revs_limit at the start (0 = leave the default) */
  int limit_pct10;   /* per mille of calls that change revs_limit */
  int64_t limit_lo, limit_hi; /* range revs_limit is drawn from */
  int64_t limit_alt; /* nonzero: half the changes set this one instead */
} profile;

typedef struct model {
  const profile *pf; /* parameters */
  uint64_t rng;      /* generator state */
  uint64_t seed;     /* for messages */
  storet *st;        /* the store under test */
  mdoc *docs;        /* pf->ids documents */
  int64_t limit;     /* revs_limit in force */
  long op;           /* index of the current call */
  long body_n;       /* bodies made so far (a unique field in each) */
  dv_arena a;        /* per-call scratch */
  /* statistics */
  long n_edits, n_ok, n_conflict, n_noop, n_ambig, n_dup, n_stemmed, n_limit_changes;
  long n_full_checks, n_deep_checks, n_new_branch, n_extend_branch;
  long n_recreate, n_deleted_seen; /* deleted winners extended / read as deleted */
  long n_sweeps;                   /* docs whose live leaves were all deleted */
} model;

static model *M; /* for the failure dump */

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n);
  ASSERT(q != NULL);
  return q;
}

static char *xstrdup(const char *s) {
  if (!s) return NULL;
  char *c = strdup(s);
  ASSERT(c != NULL);
  return c;
}

static int rev_eq(const mrev *a, const mrev *b) {
  return a->pos == b->pos && !memcmp(a->h, b->h, HLEN);
}

static const char *hex16(const uint8_t *h) {
  static char buf[4][2 * HLEN + 1];
  static int k;
  char *o = buf[k++ & 3];
  for (int i = 0; i < HLEN; i++) sprintf(o + 2 * i, "%02x", h[i]);
  return o;
}

static const char *rs(const mrev *r) {
  static char buf[8][64];
  static int k;
  char *o = buf[k++ & 7];
  snprintf(o, 64, "%lld-%s", (long long)r->pos, hex16(r->h));
  return o;
}

static void hist_add(mdoc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hist_add(mdoc *d, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  unsigned k = d->nhist++ % HIST;
  free(d->hist[k]);
  d->hist[k] = xstrdup(line);
}

/* b1 beats b2 as the winner: > 0. */
static int leaf_cmp(const mbranch *b1, const mbranch *b2) {
  if (b1->deleted != b2->deleted) return b1->deleted ? -1 : 1;
  if (b1->path[0].pos != b2->path[0].pos) return b1->path[0].pos < b2->path[0].pos ? -1 : 1;
  return memcmp(b1->path[0].h, b2->path[0].h, HLEN);
}

/* Branch indexes in the store's order: winner first, then descending. */
static size_t *sorted_branches(const mdoc *d) {
  size_t *ix = malloc((d->nbr + 1) * sizeof *ix);
  ASSERT(ix != NULL);
  for (size_t i = 0; i < d->nbr; i++) ix[i] = i;
  for (size_t i = 1; i < d->nbr; i++) /* insertion sort: few branches */
    for (size_t j = i; j > 0 && leaf_cmp(&d->br[ix[j]], &d->br[ix[j - 1]]) > 0; j--) {
      size_t x = ix[j];
      ix[j] = ix[j - 1];
      ix[j - 1] = x;
    }
  return ix;
}

static long winner(const mdoc *d) {
  long w = -1;
  for (size_t i = 0; i < d->nbr; i++)
    if (w < 0 || leaf_cmp(&d->br[i], &d->br[w]) > 0) w = (long)i;
  return w;
}

static long tfind(const mdoc *d, const mrev *r) {
  for (size_t i = 0; i < d->nt; i++)
    if (rev_eq(&d->t[i].r, r)) return (long)i;
  return -1;
}

static long tadd(mdoc *d, const mrev *r, long parent) {
  long k = tfind(d, r);
  if (k >= 0) return k;
  if (d->nt == d->tcap) {
    d->tcap = d->tcap ? d->tcap * 2 : 64;
    d->t = xrealloc(d->t, d->tcap * sizeof *d->t);
  }
  d->t[d->nt].r = *r;
  d->t[d->nt].parent = parent;
  d->t[d->nt].children = 0;
  if (parent >= 0) d->t[parent].children++;
  return (long)d->nt++;
}

/* Index of the branch whose path holds r, and where; -1 if none. */
static long in_branch(const mdoc *d, const mrev *r, size_t *at) {
  for (size_t i = 0; i < d->nbr; i++)
    for (size_t j = 0; j < d->br[i].n; j++)
      if (rev_eq(&d->br[i].path[j], r)) {
        if (at) *at = j;
        return (long)i;
      }
  return -1;
}

static long leaf_branch(const mdoc *d, const mrev *r) {
  for (size_t i = 0; i < d->nbr; i++)
    if (rev_eq(&d->br[i].path[0], r)) return (long)i;
  return -1;
}

static void branch_set(mbranch *b, const mrev *path, size_t n, int deleted, const char *body) {
  mrev *p = malloc(n * sizeof *p);
  ASSERT(p != NULL);
  memcpy(p, path, n * sizeof *p);
  free(b->path);
  b->path = p;
  b->n = n;
  b->deleted = deleted;
  char *bd = xstrdup(body);
  free(b->body);
  b->body = bd;
}

static mbranch *branch_new(mdoc *d) {
  if (d->nbr == d->brcap) {
    d->brcap = d->brcap ? d->brcap * 2 : 4;
    d->br = xrealloc(d->br, d->brcap * sizeof *d->br);
  }
  mbranch *b = &d->br[d->nbr++];
  memset(b, 0, sizeof *b);
  return b;
}

/* After a write the store rewrites the old and the new winner's KVs too
 * (the Sequence lives on the winner), and every KV it writes keeps at most
 * revs_limit revs: those two branches are stemmed along with the one
 * written. */
static void restem_winners(mdoc *d, long old_w) {
  long nw = winner(d);
  if (old_w >= 0 && (int64_t)d->br[old_w].n > M->limit) d->br[old_w].n = (size_t)M->limit;
  if (nw >= 0 && (int64_t)d->br[nw].n > M->limit) d->br[nw].n = (size_t)M->limit;
}

/* ---- the merge rules of new_edits=false ---------------------------------- */

enum { M_WRITE = 0, M_NOOP = 1, M_AMBIG = 2 };

typedef struct merge {
  int kind;        /* M_WRITE / M_NOOP / M_AMBIG */
  long replace;    /* branch replaced, -1 = a new branch */
  mrev *path;      /* the branch written (malloc'd), stemmed */
  size_t n;        /* its length */
  int stemmed;     /* 1 if revs_limit cut it */
} merge;

/* The incoming path followed by b's revs older than its oldest. */
static mrev *merged_path(const mrev *in, size_t n, const mbranch *b, int64_t limit, size_t *out_n,
                         int *stemmed) {
  int64_t oldest = in[n - 1].pos;
  size_t m = n;
  mrev *p = malloc((n + b->n) * sizeof *p);
  ASSERT(p != NULL);
  memcpy(p, in, n * sizeof *p);
  for (size_t j = 0; j < b->n; j++)
    if (b->path[j].pos < oldest) p[m++] = b->path[j];
  *stemmed = (int64_t)m > limit;
  if (*stemmed) m = (size_t)limit;
  *out_n = m;
  return p;
}

/* The incoming path down to its first rev on branch b (in[0..j), that rev
 * being b->path[k-1]), then b's revs below it: the incoming revs under
 * the overlap are not kept (the brief's rule 3, which the store follows;
 * CouchDB's key-tree merge would keep them). */
static mrev *forked_path(const mrev *in, size_t j, const mbranch *b, size_t k, int64_t limit,
                         size_t *out_n, int *stemmed) {
  size_t m = j + (b->n - k);
  mrev *p = malloc(m * sizeof *p);
  ASSERT(p != NULL);
  memcpy(p, in, j * sizeof *p);
  memcpy(p + j, b->path + k, (b->n - k) * sizeof *p);
  *stemmed = (int64_t)m > limit;
  if (*stemmed) m = (size_t)limit;
  *out_n = m;
  return p;
}

static merge model_merge(const mdoc *d, const mrev *in, size_t n, int64_t limit) {
  merge r = {M_NOOP, -1, NULL, 0, 0};
  if (in_branch(d, &in[0], NULL) >= 0) return r; /* rule 1: known leaf */
  long lb = -1;
  for (size_t i = 0; i < d->nbr; i++) /* rule 2: a branch's leaf on the path */
    for (size_t j = 0; j < n; j++)
      if (rev_eq(&d->br[i].path[0], &in[j])) {
        if (lb >= 0 && lb != (long)i) { r.kind = M_AMBIG; return r; }
        lb = (long)i;
      }
  r.kind = M_WRITE;
  if (lb >= 0) {
    r.replace = lb;
    r.path = merged_path(in, n, &d->br[lb], limit, &r.n, &r.stemmed);
    return r;
  }
  for (size_t i = 0; i < d->nbr; i++) { /* rule 3: shares an inner rev */
    size_t j, k = 0;
    int shares = 0;
    for (j = 0; j < n && !shares; j++)
      for (k = 0; k < d->br[i].n && !shares; k++) shares = rev_eq(&d->br[i].path[k], &in[j]);
    if (!shares) continue;
    size_t pn;
    int st;
    mrev *p = forked_path(in, j, &d->br[i], k, limit, &pn, &st);
    if (!r.path) {
      r.path = p;
      r.n = pn;
      r.stemmed = st;
    } else {
      int same = pn == r.n && !memcmp(p, r.path, pn * sizeof *p);
      free(p);
      if (!same) {
        free(r.path);
        r.path = NULL;
        r.kind = M_AMBIG;
        return r;
      }
    }
  }
  if (!r.path) { /* rule 4: unrelated */
    r.n = n;
    r.stemmed = (int64_t)n > limit;
    if (r.stemmed) r.n = (size_t)limit;
    r.path = malloc(n * sizeof *r.path);
    ASSERT(r.path != NULL);
    memcpy(r.path, in, n * sizeof *in);
  }
  return r;
}

/* ---- dumping state on failure -------------------------------------------- */

static void dump_doc(const mdoc *d) {
  printf("model of %s (%zu branches, revs_limit %lld):\n", d->id, d->nbr, (long long)M->limit);
  size_t *ix = sorted_branches(d);
  for (size_t k = 0; k < d->nbr; k++) {
    const mbranch *b = &d->br[ix[k]];
    printf("  %s%s body %.200s path:", k == 0 ? "W " : "  ", b->deleted ? "deleted" : "live",
           b->body ? b->body : "{}");
    for (size_t j = 0; j < b->n; j++) printf(" %s", rs(&b->path[j]));
    printf("\n");
  }
  free(ix);
  dv_arena a;
  arena_init(&a, 0);
  store_leaf *lv = NULL;
  size_t nl = 0;
  int rc = store_doc_leaves(M->st->db, d->id, strlen(d->id), &a, &lv, &nl);
  printf("store_doc_leaves: %s, %zu leaves\n", rc ? dv_err_name(rc) : "ok", rc ? 0 : nl);
  for (size_t k = 0; !rc && k < nl; k++) {
    printf("  %s %s path: %s", k == 0 ? "W " : "  ", lv[k].deleted ? "deleted" : "live",
           storet_rev_str(&a, &lv[k].rev));
    for (size_t j = 0; j < lv[k].n_anc; j++) printf(" %s", storet_rev_str(&a, &lv[k].anc[j]));
    printf("\n");
  }
  arena_free(&a);
  printf("recent history of %s (oldest first):\n", d->id);
  unsigned first = d->nhist > HIST ? d->nhist - HIST : 0;
  for (unsigned k = first; k < d->nhist; k++) printf("  %s\n", d->hist[k % HIST]);
}

#define MFAIL(d, ...)                                                                   \
  do {                                                                                  \
    printf("FAILED at call %ld (test %s, seed %llu)\n", M->op, M->pf->name,             \
           (unsigned long long)M->seed);                                                \
    if (d) dump_doc(d);                                                                 \
    fflush(stdout);                                                                     \
    test_fail_(__FILE__, __LINE__, __VA_ARGS__);                                        \
  } while (0)

#define MCHECK(d, c, ...)                                                               \
  do {                                                                                  \
    if (!(c)) MFAIL(d, __VA_ARGS__);                                                    \
  } while (0)

/* ---- checks -------------------------------------------------------------- */

static int srev_is(const store_rev *s, const mrev *r) {
  return s->pos == r->pos && !s->raw && s->len == HLEN && !memcmp(s->h, r->h, HLEN);
}

static const char *srs(const store_rev *s) { return storet_rev_str(&M->a, s); }

static json_val *body_json(const char *body) { return storet_json(&M->a, body ? body : "{}"); }

static int str_is(const json_val *v, const char *s) {
  return v && v->type == JSON_STRING && v->len == strlen(s) && !memcmp(v->u.s, s, v->len);
}

/* The doc's leaves and winner as the store tells them. */
static void check_doc(mdoc *d) {
  store_db *db = M->st->db;
  size_t idl = strlen(d->id);
  store_leaf *lv = NULL;
  size_t nl = 0;
  int rc = store_doc_leaves(db, d->id, idl, &M->a, &lv, &nl);
  json_val *doc = NULL;
  int grc = store_doc_get(db, d->id, idl, NULL, 0, &M->a, &doc);
  if (d->nbr == 0) {
    MCHECK(d, rc == DV_ENOT_FOUND, "leaves of missing doc %s: %s", d->id, dv_err_name(rc));
    MCHECK(d, grc == DV_ENOT_FOUND, "get of missing doc %s: %s", d->id, dv_err_name(grc));
    return;
  }
  MCHECK(d, rc == 0, "store_doc_leaves %s: %s", d->id, dv_err_name(rc));
  if (nl != d->nbr) {
    printf("store_doc_leaves gave %zu leaves:\n", nl);
    for (size_t k = 0; k < nl; k++) printf("  %s%s\n", srs(&lv[k].rev), lv[k].deleted ? " deleted" : "");
    MFAIL(d, "%s: %zu leaves, model has %zu", d->id, nl, d->nbr);
  }
  size_t *ix = sorted_branches(d);
  for (size_t k = 0; k < nl; k++) {
    const mbranch *b = &d->br[ix[k]];
    MCHECK(d, srev_is(&lv[k].rev, &b->path[0]), "%s leaf %zu: %s, model %s", d->id, k,
           srs(&lv[k].rev), rs(&b->path[0]));
    MCHECK(d, !lv[k].deleted == !b->deleted, "%s leaf %zu (%s): deleted %d, model %d", d->id, k,
           rs(&b->path[0]), lv[k].deleted, b->deleted);
    MCHECK(d, lv[k].n_anc + 1 == b->n, "%s leaf %zu (%s): %zu ancestors, model %zu", d->id, k,
           rs(&b->path[0]), lv[k].n_anc, b->n - 1);
    for (size_t j = 0; j < lv[k].n_anc; j++)
      MCHECK(d, srev_is(&lv[k].anc[j], &b->path[j + 1]), "%s leaf %zu (%s): ancestor %zu is %s, model %s",
             d->id, k, rs(&b->path[0]), j, srs(&lv[k].anc[j]), rs(&b->path[j + 1]));
  }
  const mbranch *w = &d->br[ix[0]];
  free(ix);
  if (w->deleted) {
    MCHECK(d, grc == DV_EDELETED, "get of %s (deleted winner): %s", d->id, dv_err_name(grc));
    M->n_deleted_seen++;
    return;
  }
  MCHECK(d, grc == 0, "get of %s: %s", d->id, dv_err_name(grc));
  json_val *id = json_obj_getz(doc, "_id"), *rev = json_obj_getz(doc, "_rev");
  MCHECK(d, id && id->type == JSON_STRING && id->len == idl && !memcmp(id->u.s, d->id, idl),
         "%s: _id wrong in %s", d->id, storet_json_text(&M->a, doc));
  MCHECK(d, str_is(rev, rs(&w->path[0])), "%s: _rev %s, model %s", d->id, storet_json_text(&M->a, rev),
         rs(&w->path[0]));
  MCHECK(d, !json_obj_getz(doc, "_deleted"), "%s: live winner has _deleted", d->id);
  const char *where = NULL;
  json_val *want = body_json(w->body), *got = storet_body(&M->a, doc);
  MCHECK(d, storet_json_eq(&M->a, got, want, &where), "%s: body differs at %s:\n  got  %.500s\n  want %.500s",
         d->id, where, storet_json_text(&M->a, got), storet_json_text(&M->a, want));
}

/* Is "N-HASH" among the listed leaves (filtered by deleted flag)? */
static int leaf_listed(const mdoc *d, const json_val *s, int deleted, long skip) {
  for (size_t i = 0; i < d->nbr; i++)
    if ((long)i != skip && !d->br[i].deleted == !deleted && str_is(s, rs(&d->br[i].path[0]))) return 1;
  return 0;
}

static void check_rev_list(mdoc *d, const json_val *doc, const char *field, int deleted, long w) {
  size_t want = 0;
  for (size_t i = 0; i < d->nbr; i++) want += (long)i != w && !d->br[i].deleted == !deleted;
  json_val *l = json_obj_getz(doc, field);
  if (!want) {
    MCHECK(d, !l || (l->type == JSON_ARRAY && l->len == 0), "%s: %s should be absent: %s", d->id,
           field, storet_json_text(&M->a, l));
    return;
  }
  MCHECK(d, l && l->type == JSON_ARRAY && l->len == want, "%s: %s has %s, want %zu revs", d->id, field,
         storet_json_text(&M->a, l), want);
  for (size_t i = 0; i < l->len; i++) {
    MCHECK(d, leaf_listed(d, l->u.items[i], deleted, w), "%s: %s lists %s, not such a leaf", d->id,
           field, storet_json_text(&M->a, l->u.items[i]));
    for (size_t j = 0; j < i; j++)
      MCHECK(d, !storet_json_eq(&M->a, l->u.items[i], l->u.items[j], NULL), "%s: %s repeats a rev", d->id, field);
  }
}

/* One document in depth: extras of the winner, every leaf by rev, a
 * non-leaf rev. */
static void check_deep(mdoc *d) {
  M->n_deep_checks++;
  store_db *db = M->st->db;
  size_t idl = strlen(d->id);
  long w = winner(d);
  if (w < 0) return;
  const mbranch *wb = &d->br[w];
  json_val *doc = NULL;
  int rc = store_doc_get(db, d->id, idl, NULL, STORE_REVS | STORE_CONFLICTS | STORE_DELETED_CONFLICTS,
                         &M->a, &doc);
  if (!wb->deleted) {
    MCHECK(d, rc == 0, "get %s with extras: %s", d->id, dv_err_name(rc));
    json_val *rv = json_obj_getz(doc, "_revisions");
    MCHECK(d, rv && rv->type == JSON_OBJECT, "%s: no _revisions in %s", d->id, storet_json_text(&M->a, doc));
    json_val *start = json_obj_getz(rv, "start"), *ids = json_obj_getz(rv, "ids");
    char sbuf[32];
    snprintf(sbuf, sizeof sbuf, "%lld", (long long)wb->path[0].pos);
    MCHECK(d, start && start->type == JSON_NUMBER && start->len == strlen(sbuf) && !memcmp(start->u.s, sbuf, start->len),
           "%s: _revisions.start %s, want %s", d->id, storet_json_text(&M->a, start), sbuf);
    MCHECK(d, ids && ids->type == JSON_ARRAY && ids->len == wb->n, "%s: _revisions.ids %s, want %zu ids", d->id,
           storet_json_text(&M->a, ids), wb->n);
    for (size_t j = 0; j < wb->n; j++)
      MCHECK(d, str_is(ids->u.items[j], hex16(wb->path[j].h)), "%s: _revisions.ids[%zu] = %s, want %s", d->id, j,
             storet_json_text(&M->a, ids->u.items[j]), hex16(wb->path[j].h));
    check_rev_list(d, doc, "_conflicts", 0, w);
    check_rev_list(d, doc, "_deleted_conflicts", 1, w);
    const char *where;
    json_val *want = body_json(wb->body), *got = storet_body(&M->a, doc);
    MCHECK(d, storet_json_eq(&M->a, got, want, &where), "%s: body with extras differs at %s", d->id, where);
  } else {
    MCHECK(d, rc == DV_EDELETED, "get %s (deleted) with extras: %s", d->id, dv_err_name(rc));
  }
  /* every leaf by rev */
  for (size_t i = 0; i < d->nbr; i++) {
    const mbranch *b = &d->br[i];
    store_rev r = {b->path[0].pos, b->path[0].h, HLEN, 0};
    json_val *ld = NULL;
    rc = store_doc_get(db, d->id, idl, &r, 0, &M->a, &ld);
    MCHECK(d, rc == 0, "get %s rev %s (a %s leaf): %s", d->id, rs(&b->path[0]), b->deleted ? "deleted" : "live",
           dv_err_name(rc));
    MCHECK(d, str_is(json_obj_getz(ld, "_rev"), rs(&b->path[0])), "%s: get by rev %s gave %s", d->id,
           rs(&b->path[0]), storet_json_text(&M->a, ld));
    json_val *del = json_obj_getz(ld, "_deleted");
    if (b->deleted)
      MCHECK(d, del && del->type == JSON_BOOL && del->b, "%s: deleted leaf %s read without _deleted: %s", d->id,
             rs(&b->path[0]), storet_json_text(&M->a, ld));
    else
      MCHECK(d, !del, "%s: live leaf %s read with _deleted", d->id, rs(&b->path[0]));
    const char *where;
    json_val *want = body_json(b->body), *got = storet_body(&M->a, ld);
    MCHECK(d, storet_json_eq(&M->a, got, want, &where), "%s: leaf %s body differs at %s:\n  got  %.300s\n  want %.300s",
           d->id, rs(&b->path[0]), where, storet_json_text(&M->a, got), storet_json_text(&M->a, want));
  }
  /* a revision that is not a leaf (inner, stemmed or replaced) */
  for (int tries = 0; tries < 8 && d->nt; tries++) {
    const tnode *tn = &d->t[storet_below(&M->rng, d->nt)];
    if (leaf_branch(d, &tn->r) >= 0) continue;
    store_rev r = {tn->r.pos, tn->r.h, HLEN, 0};
    json_val *ld = NULL;
    rc = store_doc_get(db, d->id, idl, &r, 0, &M->a, &ld);
    MCHECK(d, rc == DV_ENOT_FOUND, "get %s rev %s (not a leaf): %s %s", d->id, rs(&tn->r), dv_err_name(rc),
           rc ? "" : storet_json_text(&M->a, ld));
    break;
  }
}

static int seq_cmp_(const store_seq *a, const store_seq *b) { return store_seq_cmp(a, b); }

static mdoc *doc_by_id(const char *id, size_t n) {
  for (int i = 0; i < M->pf->ids; i++)
    if (strlen(M->docs[i].id) == n && !memcmp(M->docs[i].id, id, n)) return &M->docs[i];
  return NULL;
}

/* style=all_docs: every row's leaves are the doc's branches, winner
 * first. */
static int all_docs_cb(void *arg, const store_change *c) {
  (void)arg;
  mdoc *d = doc_by_id(c->id, c->id_len);
  MCHECK(NULL, d != NULL, "all_docs feed: unknown id %.*s", (int)c->id_len, c->id);
  MCHECK(d, c->n_leaves == d->nbr, "all_docs feed: %s has %zu leaves, model %zu", d->id, c->n_leaves, d->nbr);
  const mbranch *w = &d->br[winner(d)];
  MCHECK(d, srev_is(&c->leaves[0].rev, &w->path[0]), "all_docs feed: %s first leaf %s, winner %s", d->id,
         srs(&c->leaves[0].rev), rs(&w->path[0]));
  for (size_t i = 0; i < c->n_leaves; i++) {
    const store_leaf *l = &c->leaves[i];
    long b = -1;
    for (size_t k = 0; k < d->nbr && b < 0; k++)
      if (srev_is(&l->rev, &d->br[k].path[0])) b = (long)k;
    MCHECK(d, b >= 0, "all_docs feed: %s lists %s, not a leaf", d->id, srs(&l->rev));
    MCHECK(d, !l->deleted == !d->br[b].deleted, "all_docs feed: %s leaf %s deleted %d", d->id, srs(&l->rev),
           l->deleted);
    for (size_t k = 0; k < i; k++)
      MCHECK(d, !storet_rev_eq(&c->leaves[k].rev, &l->rev), "all_docs feed: %s lists %s twice", d->id,
             srs(&l->rev));
  }
  return 0;
}

/* The whole changes feed and the counters. */
static void check_feed(void) {
  M->n_full_checks++;
  storet_change *rows = NULL;
  store_seq last;
  size_t n = storet_changes(M->st->db, &M->a, NULL, &rows, &last);
  long live = 0, del = 0, with = 0;
  for (int i = 0; i < M->pf->ids; i++) {
    mdoc *d = &M->docs[i];
    if (!d->nbr) continue;
    with++;
    if (d->br[winner(d)].deleted) del++;
    else live++;
  }
  MCHECK(NULL, (long)n == with, "changes: %zu rows, model has %ld documents", n, with);
  char seen[4096] = {0};
  long prev_mod = -1;
  for (size_t i = 0; i < n; i++) {
    storet_change *c = &rows[i];
    mdoc *d = doc_by_id(c->id, c->id_len);
    MCHECK(NULL, d != NULL, "changes row %zu: unknown id %s", i, c->id);
    size_t k = (size_t)(d - M->docs);
    MCHECK(d, !seen[k], "changes: %s appears twice", d->id);
    seen[k] = 1;
    MCHECK(d, d->nbr > 0, "changes: row for %s, which has no revision", d->id);
    if (i) {
      char a1[STORE_SEQ_STR], a2[STORE_SEQ_STR];
      store_seq_format(&rows[i - 1].seq, a1);
      store_seq_format(&c->seq, a2);
      MCHECK(d, seq_cmp_(&rows[i - 1].seq, &c->seq) < 0, "changes: row %zu seq %s not after %s", i, a2, a1);
    }
    const mbranch *w = &d->br[winner(d)];
    MCHECK(d, srev_is(&c->rev, &w->path[0]), "changes: %s row rev %s, winner %s", d->id, srs(&c->rev),
           rs(&w->path[0]));
    MCHECK(d, !c->deleted == !w->deleted, "changes: %s row deleted %d, winner %d", d->id, c->deleted, w->deleted);
    MCHECK(d, d->mod >= prev_mod, "changes: %s (last written in call %ld) after a doc written in call %ld",
           d->id, d->mod, prev_mod);
    prev_mod = d->mod;
    if (d->seq_mod != -2) {
      char a1[STORE_SEQ_STR], a2[STORE_SEQ_STR];
      store_seq_format(&d->seq, a1);
      store_seq_format(&c->seq, a2);
      if (d->seq_mod == d->mod)
        MCHECK(d, seq_cmp_(&d->seq, &c->seq) == 0, "changes: %s unchanged since call %ld but its seq moved %s -> %s",
               d->id, d->mod, a1, a2);
      else
        MCHECK(d, seq_cmp_(&d->seq, &c->seq) < 0, "changes: %s written in call %ld but its seq did not grow: %s -> %s",
               d->id, d->mod, a1, a2);
    }
    d->seq = c->seq;
    d->seq_mod = d->mod;
  }
  store_changes_opts ao;
  memset(&ao, 0, sizeof ao);
  ao.limit = -1;
  ao.all_docs = 1;
  int rc = store_changes(M->st->db, &ao, all_docs_cb, NULL, NULL);
  MCHECK(NULL, rc == 0, "store_changes all_docs: %s", dv_err_name(rc));
  store_db_info info;
  rc = store_db_info_get(M->st->db, &info);
  MCHECK(NULL, rc == 0, "store_db_info_get: %s", dv_err_name(rc));
  MCHECK(NULL, info.doc_count == live, "doc_count %lld, model %ld", (long long)info.doc_count, live);
  MCHECK(NULL, info.doc_del_count == del, "doc_del_count %lld, model %ld", (long long)info.doc_del_count, del);
  MCHECK(NULL, info.revs_limit == M->limit, "revs_limit %lld, model %lld", (long long)info.revs_limit,
         (long long)M->limit);
  if (n) {
    char a1[STORE_SEQ_STR], a2[STORE_SEQ_STR];
    store_seq_format(&info.update_seq, a1);
    store_seq_format(&rows[n - 1].seq, a2);
    MCHECK(NULL, seq_cmp_(&info.update_seq, &rows[n - 1].seq) == 0, "update_seq %s, newest row %s", a1, a2);
    MCHECK(NULL, seq_cmp_(&last, &rows[n - 1].seq) == 0, "store_changes last %s, newest row %s",
           (store_seq_format(&last, a1), a1), a2);
  } else {
    MCHECK(NULL, store_seq_is_zero(&info.update_seq), "update_seq not zero on an empty feed");
  }
}

/* ---- generating edits ---------------------------------------------------- */

static void rand_hash(uint8_t h[HLEN]) {
  for (int i = 0; i < HLEN; i += 8) {
    uint64_t x = storet_rand(&M->rng);
    memcpy(h + i, &x, 8);
  }
}

/* A small random JSON body (text, malloc'd). */
static char *rand_body(void) {
  static const char *words[] = {"alpha", "béta", "\\u00e9t\\u00e9", "x", "", "a\\\"q", "\\ud83d\\ude00 smile", "long long words here"};
  dv_buf b = DV_BUF_INIT;
  buf_printf(&b, "{\"n\":%ld", ++M->body_n);
  int fields = (int)storet_below(&M->rng, 5);
  for (int i = 0; i < fields; i++) {
    buf_printf(&b, ",\"f%d\":", i);
    switch (storet_below(&M->rng, 8)) {
      case 0: buf_printf(&b, "%lld", (long long)(storet_rand(&M->rng) >> storet_below(&M->rng, 64))); break;
      case 1: buf_printf(&b, "\"%s\"", words[storet_below(&M->rng, 8)]); break;
      case 2: buf_printf(&b, "%s", storet_chance(&M->rng, 1, 2) ? "true" : "null"); break;
      case 3: buf_printf(&b, "[1,\"two\",{\"three\":3.5},[]]"); break;
      case 4: buf_printf(&b, "{\"k\":{\"deep\":[%d,{}]},\"e\":\"\"}", (int)storet_below(&M->rng, 100)); break;
      case 5: buf_printf(&b, "-0.25"); break;
      case 6: buf_printf(&b, "{}"); break;
      default: buf_printf(&b, "\"%s-%llu\"", words[0], (unsigned long long)storet_below(&M->rng, 1000)); break;
    }
  }
  buf_putc(&b, '}');
  ASSERT_OK(buf_error(&b));
  char *s = xstrdup((const char *)b.p);
  buf_free(&b);
  return s;
}

/* One edit of a call, with what the model expects. */
typedef struct gedit {
  mdoc *d;           /* the document */
  int dup;           /* 1: a second edit of its id in this call */
  int deleted;       /* tombstone */
  char *body;        /* body text (malloc'd) or NULL */
  /* interactive */
  int has_parent;    /* a parent rev is given */
  mrev parent;       /* it */
  long target;       /* branch the edit replaces, -1 new branch (pos 1) */
  int want_conflict; /* expected DV_ECONFLICT */
  const char *why;   /* what kind of edit (for history lines) */
  /* replication */
  mrev *path;        /* malloc'd */
  size_t n;          /* length */
  merge mg;          /* expected merge */
} gedit;

/* Interactive: choose a parent (or none) and say what should happen. */
static void gen_interactive(gedit *g) {
  mdoc *d = g->d;
  uint64_t *r = &M->rng;
  g->deleted = storet_chance(r, 1, 6);
  g->target = -1;
  long w = winner(d);
  if (!d->nbr) {
    int k = (int)storet_below(r, 10);
    if (k < 8) { g->why = "create"; }
    else if (k == 8) { g->why = "create deleted"; g->deleted = 1; }
    else { g->why = "edit missing doc"; g->has_parent = 1; g->parent.pos = 1 + (int64_t)storet_below(r, 3); rand_hash(g->parent.h); g->want_conflict = 1; }
    if (!g->deleted || storet_chance(r, 1, 10)) g->body = rand_body();
    return;
  }
  int k = (int)storet_below(r, 100);
  if (k < 12) { /* no parent */
    g->why = "no parent";
    if (d->br[w].deleted) g->target = w;
    else g->want_conflict = 1;
  } else if (k < 60) { /* the winner */
    g->why = "winner";
    g->has_parent = 1;
    g->parent = d->br[w].path[0];
    if (d->br[w].deleted) g->want_conflict = 1;
    else g->target = w;
  } else if (k < 78) { /* any leaf: live ones succeed, deleted ones conflict */
    long b = (long)storet_below(r, d->nbr);
    g->why = d->br[b].deleted ? "deleted leaf" : "a live leaf";
    g->has_parent = 1;
    g->parent = d->br[b].path[0];
    if (d->br[b].deleted) g->want_conflict = 1;
    else g->target = b;
  } else if (k < 90) { /* a non-leaf rev from the true tree */
    g->why = "inner rev";
    g->has_parent = 1;
    g->want_conflict = 1;
    long t = -1;
    for (int tries = 0; tries < 10 && t < 0; tries++) {
      long c = (long)storet_below(r, d->nt);
      if (leaf_branch(d, &d->t[c].r) < 0) t = c;
    }
    if (t >= 0) g->parent = d->t[t].r;
    else { g->why = "made-up rev"; g->parent = d->br[w].path[0]; rand_hash(g->parent.h); }
  } else { /* made up: known pos, unknown hash, or a pos beyond */
    g->why = "made-up rev";
    g->has_parent = 1;
    g->want_conflict = 1;
    g->parent = d->br[storet_below(r, d->nbr)].path[0];
    if (storet_chance(r, 1, 2)) rand_hash(g->parent.h);
    else g->parent.pos += 1 + (int64_t)storet_below(r, 3);
  }
  if (!g->deleted || storet_chance(r, 1, 10)) g->body = rand_body();
}

/* The known ancestors of true-tree node t, t first, at most m of them. */
static size_t tree_chain(const mdoc *d, long t, size_t m, mrev *out) {
  size_t n = 0;
  while (t >= 0 && n < m) {
    out[n++] = d->t[t].r;
    t = d->t[t].parent;
  }
  return n;
}

/* Replication: a path over the true tree; 0 if none could be made that
 * the rules decide unambiguously. */
static int gen_replicate(gedit *g) {
  mdoc *d = g->d;
  uint64_t *r = &M->rng;
  g->deleted = storet_chance(r, 1, 5);
  if (!g->deleted || storet_chance(r, 1, 10)) g->body = rand_body();
  for (int tries = 0; tries < 6; tries++) {
    size_t knew = 1 + storet_below(r, 3), m = storet_below(r, 12);
    long base = -1;
    int k = d->nbr ? (int)storet_below(r, 100) : 90;
    if (d->nbr >= MAX_BRANCHES) k = k < 60 ? k * 40 / 60 : 62 + (k - 60) / 2; /* no new branches */
    if (k < 40) { /* extend a leaf, ancestors sometimes left out */
      g->why = "repl: extend leaf";
      base = tfind(d, &d->br[storet_below(r, d->nbr)].path[0]);
      if (storet_chance(r, 1, 8)) m = 0;
      else m += 1;
    } else if (k < 62) { /* fork from an inner or stemmed-away rev */
      g->why = "repl: fork";
      base = (long)storet_below(r, d->nt);
      m += 1;
    } else if (k < 82) { /* repeat a rev that is on a branch: a no-op */
      g->why = "repl: known";
      const mbranch *b = &d->br[storet_below(r, d->nbr)];
      base = tfind(d, &b->path[storet_below(r, b->n)]);
      knew = 0;
      m += 1;
    } else { /* a new root, maybe stemmed (pos > 1) */
      g->why = "repl: new root";
      base = -1;
      knew = 1 + storet_below(r, 6);
      m = 0;
    }
    ASSERT(knew || base >= 0);
    mrev *p = malloc((knew + m + 1) * sizeof *p);
    ASSERT(p != NULL);
    int64_t top = base >= 0 ? d->t[base].r.pos + (int64_t)knew
                            : (int64_t)knew + (storet_chance(r, 1, 2) ? 0 : (int64_t)storet_below(r, 5));
    for (size_t i = 0; i < knew; i++) {
      p[i].pos = top - (int64_t)i;
      rand_hash(p[i].h);
    }
    size_t n = knew + (base >= 0 ? tree_chain(d, base, m, p + knew) : 0);
    merge mg = model_merge(d, p, n, M->limit);
    if (mg.kind == M_AMBIG) {
      M->n_ambig++;
      free(p);
      continue;
    }
    g->path = p;
    g->n = n;
    g->mg = mg;
    return 1;
  }
  return 0;
}

static void gedit_free(gedit *g) {
  free(g->body);
  free(g->path);
  free(g->mg.path);
}

/* ---- applying a call ----------------------------------------------------- */

static void apply_interactive(gedit *g, const store_edit *e) {
  mdoc *d = g->d;
  char pbuf[64] = "none";
  if (g->has_parent) snprintf(pbuf, sizeof pbuf, "%s", rs(&g->parent));
  if (g->dup || g->want_conflict) {
    MCHECK(d, e->rc == DV_ECONFLICT, "%s edit (%s%s, parent %s): rc %s, want conflict", d->id,
           g->dup ? "second in call, " : "", g->why, pbuf, dv_err_name(e->rc));
    hist_add(d, "call %ld: interactive %s%s parent %s -> conflict", M->op, g->dup ? "dup " : "", g->why, pbuf);
    M->n_conflict++;
    return;
  }
  MCHECK(d, e->rc == 0, "%s edit (%s, parent %s%s): rc %s, want ok", d->id, g->why, pbuf,
         g->deleted ? ", delete" : "", dv_err_name(e->rc));
  M->n_ok++;
  long old_w = winner(d);
  const mrev *parent = g->target >= 0 ? &d->br[g->target].path[0] : NULL;
  if (!g->has_parent && parent) M->n_recreate++;
  int64_t want_pos = parent ? parent->pos + 1 : 1;
  MCHECK(d, e->rev.pos == want_pos && !e->rev.raw && e->rev.len == HLEN, "%s: new rev %s, want pos %lld", d->id,
         srs(&e->rev), (long long)want_pos);
  mrev nr;
  nr.pos = e->rev.pos;
  memcpy(nr.h, e->rev.h, HLEN);
  MCHECK(d, tfind(d, &nr) < 0, "%s: the store minted rev %s, which exists already", d->id, rs(&nr));
  long pt = parent ? tfind(d, parent) : -1;
  tadd(d, &nr, pt);
  mbranch *b = g->target >= 0 ? &d->br[g->target] : branch_new(d);
  size_t n = 1 + b->n;
  mrev *p = malloc(n * sizeof *p);
  ASSERT(p != NULL);
  p[0] = nr;
  if (b->n) memcpy(p + 1, b->path, b->n * sizeof *p);
  if ((int64_t)n > M->limit) {
    n = (size_t)M->limit;
    M->n_stemmed++;
  }
  branch_set(b, p, n, g->deleted, g->body);
  free(p);
  restem_winners(d, old_w);
  d->mod = M->op;
  hist_add(d, "call %ld: interactive %s parent %s%s -> %s (len %zu)%s", M->op, g->why, pbuf,
           g->deleted ? " delete" : "", rs(&nr), n, g->body ? "" : " no body");
}

static void apply_replicate(gedit *g, const store_edit *e) {
  mdoc *d = g->d;
  char desc[160];
  snprintf(desc, sizeof desc, "%s [%s .. %s] len %zu%s", g->why, rs(&g->path[0]), rs(&g->path[g->n - 1]), g->n,
           g->deleted ? " deleted" : "");
  if (g->dup) {
    MCHECK(d, e->rc == DV_ECONFLICT, "%s: second edit in one call (%s): rc %s, want conflict", d->id, desc,
           dv_err_name(e->rc));
    hist_add(d, "call %ld: repl dup %s -> conflict", M->op, desc);
    M->n_conflict++;
    return;
  }
  MCHECK(d, e->rc == 0, "%s: replicated %s: rc %s", d->id, desc, dv_err_name(e->rc));
  MCHECK(d, srev_is(&e->rev, &g->path[0]), "%s: replicated %s: result rev %s", d->id, desc, srs(&e->rev));
  /* the true tree learns the path */
  for (size_t i = g->n; i-- > 0;) {
    long parent = i + 1 < g->n ? tfind(d, &g->path[i + 1]) : -1;
    if (tfind(d, &g->path[i]) < 0) tadd(d, &g->path[i], parent);
  }
  if (g->mg.kind == M_NOOP) {
    M->n_noop++;
    hist_add(d, "call %ld: repl %s -> no-op", M->op, desc);
    return;
  }
  M->n_ok++;
  if (g->mg.stemmed) M->n_stemmed++;
  long old_w = winner(d);
  mbranch *b;
  if (g->mg.replace >= 0) {
    b = &d->br[g->mg.replace];
    M->n_extend_branch++;
  } else {
    b = branch_new(d);
    M->n_new_branch++;
  }
  branch_set(b, g->mg.path, g->mg.n, g->deleted, g->body);
  restem_winners(d, old_w);
  d->mod = M->op;
  hist_add(d, "call %ld: repl %s -> %s branch, len %zu", M->op, desc, g->mg.replace >= 0 ? "extends a" : "new", g->mg.n);
}

/* Delete every live leaf of one document, one call each, so that
 * documents with deleted winners (and what follows: recreation, DV_EDELETED,
 * replication onto a deleted tree) keep turning up however many branches
 * replication has grown. */
static void sweep(mdoc *d) {
  for (size_t i = 0; i < d->nbr; i++) {
    if (d->br[i].deleted) continue;
    gedit g;
    memset(&g, 0, sizeof g);
    g.d = d;
    g.deleted = 1;
    g.has_parent = 1;
    g.parent = d->br[i].path[0];
    g.target = (long)i;
    g.why = "sweep";
    store_edit e;
    memset(&e, 0, sizeof e);
    e.id = d->id;
    e.id_len = strlen(d->id);
    e.deleted = 1;
    e.parent = (store_rev){g.parent.pos, g.parent.h, HLEN, 0};
    int rc = store_update(M->st->db, NULL, &e, 1, 1);
    MCHECK(d, rc == 0, "store_update (sweep): %s", dv_err_name(rc));
    M->n_edits++;
    apply_interactive(&g, &e);
    check_doc(d);
  }
  M->n_sweeps++;
}

static void one_call(void) {
  const profile *pf = M->pf;
  uint64_t *r = &M->rng;
  arena_reset(&M->a);
  if (storet_below(r, 1000) < SWEEP_PER_MILLE) {
    mdoc *d = &M->docs[storet_below(r, (uint64_t)pf->ids)];
    sweep(d);
    return;
  }
  if (pf->limit_pct10 && storet_below(r, 1000) < (uint64_t)pf->limit_pct10) {
    int64_t lim = pf->limit_lo + (int64_t)storet_below(r, (uint64_t)(pf->limit_hi - pf->limit_lo + 1));
    if (pf->limit_alt && storet_chance(r, 1, 2)) lim = pf->limit_alt;
    int rc = store_db_set_revs_limit(M->st->db, lim);
    MCHECK(NULL, rc == 0, "store_db_set_revs_limit %lld: %s", (long long)lim, dv_err_name(rc));
    M->limit = lim;
    M->n_limit_changes++;
  }
  int repl = storet_below(r, 100) < (uint64_t)pf->repl_pct;
  size_t n = 1 + storet_below(r, (uint64_t)pf->max_batch);
  gedit *g = calloc(n, sizeof *g);
  store_edit *e = calloc(n, sizeof *e);
  ASSERT(g && e);
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    gedit *x = &g[used];
    memset(x, 0, sizeof *x);
    if (used && storet_chance(r, 1, 8)) { /* the same id again */
      x->d = g[storet_below(r, used)].d;
      x->dup = 1;
      M->n_dup++;
    } else {
      x->d = &M->docs[storet_below(r, (uint64_t)pf->ids)];
      for (size_t j = 0; j < used; j++) x->dup |= g[j].d == x->d;
    }
    if (repl) {
      if (!gen_replicate(x)) { gedit_free(x); continue; }
    } else {
      gen_interactive(x);
    }
    store_edit *s = &e[used];
    s->id = x->d->id;
    s->id_len = strlen(x->d->id);
    s->body = x->body ? storet_json(&M->a, x->body) : NULL;
    s->deleted = x->deleted;
    if (repl) {
      store_rev *p = arena_alloc(&M->a, x->n * sizeof *p);
      ASSERT(p != NULL);
      for (size_t j = 0; j < x->n; j++) p[j] = (store_rev){x->path[j].pos, x->path[j].h, HLEN, 0};
      s->path = p;
      s->path_len = x->n;
    } else if (x->has_parent) {
      s->parent = (store_rev){x->parent.pos, x->parent.h, HLEN, 0};
    }
    used++;
  }
  if (!used) { free(g); free(e); return; }
  int rc = store_update(M->st->db, NULL, e, used, repl ? 0 : 1);
  MCHECK(g[0].d, rc == 0, "store_update (%zu edits, new_edits=%d): %s", used, !repl, dv_err_name(rc));
  M->n_edits += (long)used;
  for (size_t i = 0; i < used; i++) {
    if (repl) apply_replicate(&g[i], &e[i]);
    else apply_interactive(&g[i], &e[i]);
  }
  for (size_t i = 0; i < used; i++) check_doc(g[i].d);
  check_doc(&M->docs[storet_below(r, (uint64_t)pf->ids)]); /* an untouched one */
  if (storet_chance(r, 1, 10)) check_deep(g[0].d);
  for (size_t i = 0; i < used; i++) gedit_free(&g[i]);
  free(g);
  free(e);
}

static void reopen(void) {
  storet *t = M->st;
  store_db_close(t->db);
  store_close(t->s);
  kv_close(t->kv);
  int rc = storet_kv_open(t->dir, 0, &t->kv);
  ASSERTF(rc == 0, "kv open again: %s", dv_err_name(rc));
  rc = store_open(t->kv, NULL, &t->s);
  ASSERTF(rc == 0, "store_open again: %s", dv_err_name(rc));
  rc = store_db_open(t->s, "model", &t->db);
  ASSERTF(rc == 0, "store_db_open again: %s", dv_err_name(rc));
}

static void run_model(const profile *pf) {
  model m;
  memset(&m, 0, sizeof m);
  M = &m;
  m.pf = pf;
  m.seed = storet_seed(pf->name, pf->seed);
  m.rng = m.seed;
  long ops = storet_env_long("DV_MODEL_OPS", pf->ops);
  arena_init(&m.a, 0);
  m.st = storet_open(NULL, 0, "model");
  m.docs = calloc((size_t)pf->ids, sizeof *m.docs);
  ASSERT(m.docs != NULL);
  for (int i = 0; i < pf->ids; i++) {
    snprintf(m.docs[i].id, sizeof m.docs[i].id, "doc-%02d", i);
    m.docs[i].mod = -1;
    m.docs[i].seq_mod = -2;
  }
  ASSERT_OK(store_db_get_revs_limit(m.st->db, &m.limit));
  ASSERT_EQ(m.limit, STORE_DEFAULT_REVS_LIMIT);
  if (pf->limit0) {
    ASSERT_OK(store_db_set_revs_limit(m.st->db, pf->limit0));
    m.limit = pf->limit0;
  }
  check_feed();
  double t0 = storet_now();
  for (m.op = 0; m.op < ops; m.op++) {
    one_call();
    if (m.op < DENSE_CHECKS || m.op % CHECK_EVERY == 0) check_feed();
    if (m.op % 2000 == 1999) {
      printf("  %ld calls, %.1f s\n", m.op + 1, storet_now() - t0);
      fflush(stdout);
    }
  }
  check_feed();
  reopen();
  arena_reset(&m.a);
  for (int i = 0; i < pf->ids; i++) {
    check_doc(&m.docs[i]);
    check_deep(&m.docs[i]);
  }
  check_feed();
  long branches = 0, maxb = 0, deleted_w = 0;
  for (int i = 0; i < pf->ids; i++) {
    branches += (long)m.docs[i].nbr;
    if ((long)m.docs[i].nbr > maxb) maxb = (long)m.docs[i].nbr;
    if (m.docs[i].nbr && m.docs[i].br[winner(&m.docs[i])].deleted) deleted_w++;
  }
  printf("%s: %ld calls, %ld edits in %.1f s: %ld written, %ld conflicts (%ld second edits of an id), "
         "%ld no-op replications, %ld new branches, %ld branches extended by replication, %ld stemmed "
         "writes, %ld sweeps, %ld deleted winners extended without a parent, %ld reads of a deleted winner, %ld "
         "revs_limit changes, %ld ambiguous paths not sent; %ld full checks, %ld deep checks; "
         "end: %ld branches (max %ld per doc), %ld deleted winners, revs_limit %lld\n",
         pf->name, ops, m.n_edits, storet_now() - t0, m.n_ok, m.n_conflict, m.n_dup, m.n_noop, m.n_new_branch,
         m.n_extend_branch, m.n_stemmed, m.n_sweeps, m.n_recreate, m.n_deleted_seen, m.n_limit_changes, m.n_ambig,
         m.n_full_checks, m.n_deep_checks, branches, maxb, deleted_w, (long long)m.limit);
  /* the model test must have exercised what it claims to */
  if (ops < pf->ops) goto done; /* a shortened run need not reach everything */
  ASSERT(m.n_conflict > 0 && m.n_ok > 0 && m.n_recreate > 0 && m.n_deleted_seen > 0);
  if (pf->repl_pct) ASSERT(m.n_noop > 0 && m.n_new_branch > 0 && m.n_extend_branch > 0);
  if (pf->limit0 || pf->limit_pct10) ASSERT(m.n_stemmed > 0);
done:
  for (int i = 0; i < pf->ids; i++) {
    mdoc *d = &m.docs[i];
    for (size_t j = 0; j < d->nbr; j++) {
      free(d->br[j].path);
      free(d->br[j].body);
    }
    free(d->br);
    free(d->t);
    for (unsigned k = 0; k < HIST; k++) free(d->hist[k]);
  }
  free(m.docs);
  arena_free(&m.a);
  storet_close(m.st);
  M = NULL;
}

/* Small revs_limit from the start (3..10, sometimes 1..10), replication
 * heavy: stemming, forks from stemmed-away revs, new roots. */
TEST(store_model_stem) {
  static const profile pf = {"store_model_stem", 0x5eed0001, 9000, 40, 45, 4, 4, 20, 1, 10, 0};
  run_model(&pf);
}

/* The default revs_limit for most of the run (long histories), dropping to
 * 3..10 now and then; mostly interactive. */
TEST(store_model_deep) {
  static const profile pf = {"store_model_deep", 0x5eed0002, 9000, 40, 25, 4, 0, 4, 3, 10, 1000};
  run_model(&pf);
}

/* Eight ids and batches of up to 8 edits: the same id twice in one call
 * and conflicts at every turn. */
TEST(store_model_crowd) {
  static const profile pf = {"store_model_crowd", 0x5eed0003, 4000, 8, 35, 8, 6, 10, 2, 12, 0};
  run_model(&pf);
}
