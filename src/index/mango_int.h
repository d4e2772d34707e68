/* mango_int.h — the normalised selector tree, private to index/ (SQLite's
 * btreeInt.h beside btree.h): mango.c builds it, the query planner
 * (mquery.c) reads it to extract key ranges, required fields and constant
 * fields, and renders it as CouchDB's normalised JSON for _explain.
 *
 * Not an interface for other layers: nothing outside src/index/ includes
 * this file.
 */
#ifndef DV_MANGO_INT_H
#define DV_MANGO_INT_H

#include <stddef.h>
#include <stdint.h>

#include "index/mango.h"
#include "util/buf.h"

enum mop {
  MO_AND,     /* all kids match (none: true) */
  MO_OR,      /* some kid matches (none: true, as CouchDB) */
  MO_NOT,     /* kid[0] does not match */
  MO_NOR,     /* no kid matches; gone after norm_negations */
  MO_FIELD,   /* kid[0] matches the value at str (a key before norm_fields,
                 a dotted path after it; "" is the value itself) */
  MO_ELEM,    /* $elemMatch: some element of an array matches kid[0] */
  MO_ALLM,    /* $allMatch: every element of a non-empty array matches */
  MO_KEYMAP,  /* $keyMapMatch: some key of a non-empty object matches */
  MO_LT,      /* the comparisons, against arg */
  MO_LTE,
  MO_EQ,
  MO_NE,
  MO_GTE,
  MO_GT,
  MO_IN,      /* arg is an array */
  MO_NIN,     /* arg is an array */
  MO_ALL,     /* arg is an array */
  MO_EXISTS,  /* b is the wanted answer */
  MO_TYPE,    /* arg is a string */
  MO_MOD,     /* arg is [divisor, remainder], two integers, divisor != 0 */
  MO_REGEX,   /* str is the translated pattern, b its regcomp flags */
  MO_SIZE,    /* arg is a non-negative integer */
  MO_BEGINS,  /* arg is a string */
  MO_DEFAULT, /* $text, i.e. CouchDB's {"$default": {"$text": arg}} */
};

typedef struct mseg {
  const char *s; /* one step of a field path (a key, or an array index) */
  size_t n;      /* its length */
} mseg;

/* A field path, one node per nested key, sharing its prefix with every
 * other path below the same key (so a deep selector costs memory linear in
 * its size). CouchDB joins the keys with "." and splits the result at every
 * dot not preceded by a backslash, then drops the backslashes
 * (mango_util:parse_field); splitting each key on its own gives the same
 * steps, except when a key ends with a backslash: then the joining dot is
 * escaped too, and the next key's first step continues this key's last. */
typedef struct mpath mpath;
struct mpath {
  const mpath *up; /* the path this key extends; NULL: the value itself */
  const char *key; /* the key as written */
  size_t klen;     /* its length */
  mseg *seg;       /* this key's steps, backslashes removed */
  size_t n;        /* their number (at least 1) */
  uint8_t merge;   /* 1: seg[0] replaces up's last step (up's key ends with '\') */
  uint8_t bad;     /* 1: the joined path has an empty step (invalid field name) */
};

typedef struct mnode mnode;
struct mnode {
  uint8_t op;          /* enum mop */
  uint8_t b;           /* EXISTS: 1 = must exist; FIELD: 1 if the path is
                          exactly "_id"; REGEX: regcomp flags beyond
                          REG_EXTENDED|REG_NOSUB; DEFAULT: 1 if it came from
                          $text (arg is the $text argument), 0 if the user
                          wrote "$default" (arg is its whole value) */
  size_t n;            /* AND/OR/NOR: number of kids */
  mnode **kid;         /* AND/OR/NOR: n kids; NOT/FIELD/ELEM/ALLM/KEYMAP: 1 */
  const json_val *arg; /* the operator's argument (borrowed from the selector) */
  const char *str;     /* FIELD before norm_fields: its key; REGEX: the
                          NUL-terminated pattern */
  size_t slen;         /* its length */
  const mpath *path;   /* FIELD after norm_fields: its path (NULL: the value
                          itself, CouchDB's "" field) */
};

struct mango_sel {
  mnode *root; /* NULL for the empty selector {}, which matches everything */
};

/* The root of a parsed selector (NULL for {}). */
static inline const mnode *mango__root(const mango_sel *s) { return s->root; }

/* The selector in CouchDB's normalised form, as mango_selector:normalize
 * returns it: {"a": {"$eq": 1}} for one condition, {"$and": [...]} for
 * several, dotted field names, negations pushed down. In arena a; NULL
 * when out of memory. */
json_val *mango_to_json(dv_arena *a, const mango_sel *s);

/* The same for one node of the tree. */
json_val *mango__node_json(dv_arena *a, const mnode *n);

/* A field path as CouchDB spells it (the keys joined with "."; "" for
 * NULL), NUL-terminated in a; NULL when out of memory. */
const char *mango__path_name(dv_arena *a, const mpath *p, size_t *len);

/* A field path split into steps at unescaped dots, "\." unescaped
 * (mango_util:parse_field), into the arena. */
int mango__split_path(dv_arena *a, const char *f, size_t n, mseg **out, size_t *nseg) DV_MUST_CHECK;

/* The value at a split path (mango_doc:get_field, the rule the matcher
 * uses: object keys, array positions as Erlang's list_to_integer reads
 * them), or NULL when it is missing, the path is bad or a step is empty. */
const json_val *mango__get_path(const json_val *v, const mseg *seg, size_t n);

/* Erlang's ~w of the value jiffy decodes from v (for error reasons). */
void mango__erl_w(dv_buf *b, const json_val *v);

#endif
