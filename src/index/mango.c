/* mango.c — Mango selectors: parsing, normalisation and matching (mango.h).
 *
 * What it is for. A selector arrives as a JSON DOM; mango_parse turns it
 * into a tree of mnode conditions exactly the way CouchDB's
 * mango_selector:normalize/1 does, in its three passes:
 *
 *   1. norm_ops     validate every operator's argument and make implicit
 *                   operators explicit: {"a": 1} -> {"a": {"$eq": 1}},
 *                   {"a": 1, "b": 2} -> {"$and": [{"a": …}, {"b": …}]};
 *   2. norm_fields  push field names down through $and/$or/$not/$nor to the
 *                   conditions, joining nested names with dots:
 *                   {"a": {"b": {"$gt": 1}}} -> {"a.b": {"$gt": 1}};
 *   3. norm_negations  push $not and $nor down to the conditions with De
 *                   Morgan's laws, inverting what can be inverted
 *                   ($lt <-> $gte, $eq <-> $ne, $in <-> $nin, $exists).
 *
 * The passes matter for the result, not only for speed: after them a
 * negated condition sits below its field, so {"$not": {"a": 1}} does not
 * match a document without "a" (the field lookup fails first), which is
 * what CouchDB answers. mango_match then walks the tree against a document
 * the way mango_selector:match/3 does.
 *
 * What it is not. It chooses no index and plans no query (that is _find's
 * business); it does not support $text beyond CouchDB's own fallback (a
 * $text condition at the top level matches every document, as it does in
 * CouchDB once a text index has chosen the candidates).
 *
 * Values are compared in CouchDB's collation (collate.c: ICU for strings,
 * exact numbers), except for the field "_id", which CouchDB compares in
 * Erlang term order (mango_json:cmp_raw): numbers < false < null < true <
 * objects < arrays < strings, strings by their bytes.
 *
 * Errors are CouchDB's mango_error messages; an offending argument is
 * printed the way Erlang's ~w prints the decoded JSON (a string "ab" is
 * <<97,98>>, an object {"a":1} is {[{<<97>>,1}]}), so reasons read exactly
 * as CouchDB's do.
 *
 * Deliberate differences, each where CouchDB would crash or cannot be
 * copied: {"$mod": [0, r]} is a bad argument (CouchDB accepts it and then
 * fails every match with badarith); an empty step in a field path used by
 * a condition ("a..b") is a 400 invalid_field_name when parsing (CouchDB
 * throws while matching); $regex is POSIX ERE, not PCRE (see mango.h and
 * rx_translate below).
 */
#define _GNU_SOURCE
#include "index/mango.h"

#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/collate.h"
#include "index/mango_int.h"
#include "util/alloc.h"
#include "util/buf.h"

/* Parse state. */
typedef struct mctx {
  dv_arena *a;   /* where the tree lives */
  const char *why; /* the reason of a refused selector (arena or static) */
} mctx;

/* ------------------------------------------------------------------ */
/* Error messages                                                      */
/* ------------------------------------------------------------------ */

/* Erlang's ~w of a binary: <<104,105>>. */
static void erl_bin(dv_buf *b, const char *s, size_t n) {
  buf_puts(b, "<<");
  for (size_t i = 0; i < n; i++) buf_printf(b, i ? ",%u" : "%u", (unsigned)(uint8_t)s[i]);
  buf_puts(b, ">>");
}

/* 1 if a number text is an integer (jiffy decodes it to an Erlang
 * integer): no fraction and no exponent. */
static int num_is_int(const json_val *v) {
  if (v->num <= JSON_NUM_BIGINT) return 1;
  if (v->num == JSON_NUM_DOUBLE) return 0;
  for (size_t i = 0; i < v->len; i++)
    if (v->u.s[i] == '.' || v->u.s[i] == 'e' || v->u.s[i] == 'E') return 0;
  return 1;
}

/* A float as Erlang's io_lib writes it (io_lib_format:fwrite_g's
 * insert_decimal): the shortest digits, in plain notation unless the
 * exponent form is shorter ("100.0", "0.001", but "1.0e10", "1.5e-7"). */
static void float_w(dv_buf *b, const char *s, size_t n) {
  size_t i = 0;
  if (n && s[0] == '-') buf_putc(b, '-'), i = 1;
  char dg[40];
  long nd = 0, intd = -1, e = 0;
  for (; i < n; i++) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      if (nd < (long)sizeof dg) dg[nd++] = c;
    } else if (c == '.') {
      intd = nd;
    } else if (c == 'e' || c == 'E') {
      char tmp[16];
      size_t k = n - i - 1 < sizeof tmp - 1 ? n - i - 1 : sizeof tmp - 1;
      memcpy(tmp, s + i + 1, k);
      tmp[k] = 0;
      e = strtol(tmp, NULL, 10);
      break;
    }
  }
  if (intd < 0) intd = nd;
  long lead = 0;
  while (lead < nd && dg[lead] == '0') lead++;
  if (lead == nd) {
    buf_puts(b, "0.0");
    return;
  }
  long place = intd + e - lead, L = nd - lead;
  const char *S = dg + lead;
  while (L > 1 && S[L - 1] == '0') L--;
  if (place == 0) {
    buf_puts(b, "0.");
    buf_append(b, S, (size_t)L);
  } else if (place < 0 || place >= L) {
    char expl[24];
    int el = snprintf(expl, sizeof expl, "%ld", place - 1);
    long cost = el + 1 + (L == 1 ? 2 : 1);
    if (place < 0 && 2 - place <= cost) {
      buf_puts(b, "0.");
      for (long k = 0; k < -place; k++) buf_putc(b, '0');
      buf_append(b, S, (size_t)L);
    } else if (place > 0 && place - L + 2 <= cost) {
      buf_append(b, S, (size_t)L);
      for (long k = 0; k < place - L; k++) buf_putc(b, '0');
      buf_puts(b, ".0");
    } else {
      buf_putc(b, (uint8_t)S[0]);
      buf_putc(b, '.');
      if (L == 1) buf_putc(b, '0');
      else buf_append(b, S + 1, (size_t)L - 1);
      buf_putc(b, 'e');
      buf_append(b, expl, (size_t)el);
    }
  } else {
    buf_append(b, S, (size_t)place);
    buf_putc(b, '.');
    buf_append(b, S + place, (size_t)(L - place));
  }
}

/* Erlang's ~w of the value jiffy decodes from v. Floats as float_w
 * writes them ("1.0e22", not "1e+22"; "1.0e10", not "10000000000.0"). */
static void erl_w(dv_buf *b, const json_val *v) {
  switch (v->type) {
  case JSON_NULL: buf_puts(b, "null"); break;
  case JSON_BOOL: buf_puts(b, v->b ? "true" : "false"); break;
  case JSON_NUMBER: {
    const char *s = v->u.s;
    if (num_is_int(v)) {
      if (v->len == 2 && s[0] == '-' && s[1] == '0') buf_putc(b, '0');
      else buf_append(b, s, v->len);
    } else {
      float_w(b, s, v->len);
    }
    break;
  }
  case JSON_STRING: erl_bin(b, v->u.s, v->len); break;
  case JSON_ARRAY:
    buf_putc(b, '[');
    for (size_t i = 0; i < v->len; i++) {
      if (i) buf_putc(b, ',');
      erl_w(b, v->u.items[i]);
    }
    buf_putc(b, ']');
    break;
  case JSON_OBJECT:
    buf_puts(b, "{[");
    for (size_t i = 0; i < v->len; i++) {
      if (i) buf_putc(b, ',');
      buf_putc(b, '{');
      erl_bin(b, v->u.members[i].key, v->u.members[i].klen);
      buf_putc(b, ',');
      erl_w(b, v->u.members[i].val);
      buf_putc(b, '}');
    }
    buf_puts(b, "]}");
    break;
  }
}

/* A finished message buffer into the arena as the reason; rc, one of the
 * DV_EMANGO_* codes (or DV_ENOMEM when the message itself could not be
 * built). */
static int fail_buf(mctx *c, int rc, dv_buf *b) {
  char *r = buf_error(b) ? NULL : arena_strndup(c->a, (const char *)b->p, b->len);
  if (!r) rc = DV_ENOMEM;
  c->why = r ? r : dv_strerror(DV_ENOMEM);
  buf_free(b);
  return rc;
}

/* A message that is text plus, optionally, an operator name. */
static int fail(mctx *c, int rc, const char *text, const char *op, size_t oplen) {
  dv_buf b = DV_BUF_INIT;
  buf_puts(&b, text);
  if (op) buf_append(&b, op, oplen);
  return fail_buf(c, rc, &b);
}

/* "Bad argument for operator $op: <arg as ~w>". */
static int fail_arg(mctx *c, const char *op, const json_val *arg) {
  dv_buf b = DV_BUF_INIT;
  buf_printf(&b, "Bad argument for operator %s: ", op);
  erl_w(&b, arg);
  return fail_buf(c, DV_EMANGO_BAD_ARG, &b);
}

/* ~w of the {"$default": …} node CouchDB would have built. */
static void erl_default(dv_buf *b, const mnode *n) {
  buf_puts(b, "{[{");
  erl_bin(b, "$default", 8);
  buf_putc(b, ',');
  if (n->b) {
    buf_puts(b, "{[{");
    erl_bin(b, "$text", 5);
    buf_putc(b, ',');
    erl_w(b, n->arg);
    buf_puts(b, "}]}");
  } else {
    erl_w(b, n->arg);
  }
  buf_puts(b, "}]}");
}

/* ------------------------------------------------------------------ */
/* Number and value comparison                                         */
/* ------------------------------------------------------------------ */

/* The one comparison (collate.c): CouchDB's collation (raw = 0) or
 * Erlang's term order (raw = 1, the "_id" comparisons). */
static int vcmp(const json_val *a, const json_val *b, int raw) {
  return raw ? collate_raw_cmp(a, b) : collate_cmp(a, b);
}

int mango_cmp(const json_val *a, const json_val *b) { return vcmp(a, b, 0); }

/* Erlang's =:= (exact = 1: lists:member in $all) or == (exact = 0): the
 * same structure, but =:= tells the integer 1 from the float 1.0. */
static int veq(const json_val *a, const json_val *b, int exact) {
  if (a->type != b->type) return 0;
  switch (a->type) {
  case JSON_NULL: return 1;
  case JSON_BOOL: return a->b == b->b;
  case JSON_NUMBER:
    if (exact && num_is_int(a) != num_is_int(b)) return 0;
    return collate_num_cmp(a->u.s, a->len, b->u.s, b->len) == 0;
  case JSON_STRING: return a->len == b->len && !memcmp(a->u.s, b->u.s, a->len);
  case JSON_ARRAY:
    if (a->len != b->len) return 0;
    for (size_t i = 0; i < a->len; i++)
      if (!veq(a->u.items[i], b->u.items[i], exact)) return 0;
    return 1;
  case JSON_OBJECT:
    if (a->len != b->len) return 0;
    for (size_t i = 0; i < a->len; i++) {
      const json_member *p = &a->u.members[i], *q = &b->u.members[i];
      if (p->klen != q->klen || memcmp(p->key, q->key, p->klen)) return 0;
      if (!veq(p->val, q->val, exact)) return 0;
    }
    return 1;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* $mod: Erlang's rem on integers of any size                          */
/* ------------------------------------------------------------------ */

/* r := r - d for digit strings with r >= d (no leading zeros); returns
 * the new length of r, leading zeros removed. */
static size_t dsub(char *r, size_t rn, const char *d, size_t dn) {
  int borrow = 0;
  for (size_t i = 0; i < rn; i++) {
    int x = r[rn - 1 - i] - '0' - borrow - (i < dn ? d[dn - 1 - i] - '0' : 0);
    borrow = x < 0;
    r[rn - 1 - i] = (char)('0' + (x < 0 ? x + 10 : x));
  }
  size_t k = 0;
  while (k < rn && r[k] == '0') k++;
  memmove(r, r + k, rn - k);
  return rn - k;
}

/* Does `value rem divisor == remainder` hold (Erlang rem: truncated, the
 * sign of the dividend)? All three are integer texts; divisor is not 0. */
static int mod_match(const json_val *v, const json_val *dv, const json_val *rv) {
  int64_t x, d, r;
  if (!json_num_int64(v->u.s, v->len, &x) && !json_num_int64(dv->u.s, dv->len, &d)) {
    int64_t m = d == -1 ? 0 : x % d;
    return !json_num_int64(rv->u.s, rv->len, &r) && m == r;
  }
  /* Big numbers: long division on the digits. */
  const char *a = v->u.s, *b = dv->u.s;
  size_t an = v->len, bn = dv->len;
  int neg = 0;
  if (an && *a == '-') a++, an--, neg = 1;
  if (bn && *b == '-') b++, bn--;
  char small[64], *rem = bn + 2 <= sizeof small ? small : dv_malloc(bn + 2);
  if (!rem) return 0;
  size_t rn = 0;
  for (size_t i = 0; i < an; i++) {
    if (rn || a[i] != '0') rem[rn++] = a[i];
    while (rn > bn || (rn == bn && memcmp(rem, b, bn) >= 0)) rn = dsub(rem, rn, b, bn);
  }
  /* Compare "-"? rem with the wanted remainder's text ("-0" is 0). */
  const char *w = rv->u.s;
  size_t wn = rv->len;
  int ok;
  if (wn == 2 && w[0] == '-' && w[1] == '0') w = "0", wn = 1;
  if (rn == 0) {
    ok = wn == 1 && w[0] == '0';
  } else {
    int wneg = *w == '-';
    ok = wneg == neg && wn - (size_t)wneg == rn && !memcmp(w + wneg, rem, rn);
  }
  if (rem != small) dv_free(rem);
  return ok;
}

/* ------------------------------------------------------------------ */
/* $regex: PCRE approximated by POSIX extended regular expressions     */
/* ------------------------------------------------------------------ */

#define RX_CFLAGS (REG_EXTENDED | REG_NOSUB)

static void rx_lit(dv_buf *o, uint8_t c) {
  if (strchr(".[]()*+?{}|^$\\", c) && c) buf_putc(o, '\\');
  buf_putc(o, c);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A byte written as an escape in PCRE (\t \n \xHH …) at p[i] (just after the
 * backslash); returns its value and advances *i past it, or -1 if the
 * escape is not a single byte. */
static int rx_byte_escape(const char *p, size_t n, size_t *i) {
  char e = p[*i];
  static const char from[] = "tnrfvea", to[] = "\t\n\r\f\v\033\007";
  const char *k = e ? strchr(from, e) : NULL;
  if (k) {
    (*i)++;
    return (uint8_t)to[k - from];
  }
  if (e != 'x') return -1;
  size_t j = *i + 1;
  int v = 0, digits = 0;
  if (j < n && p[j] == '{') {
    for (j++; j < n && hexval(p[j]) >= 0; j++, digits++)
      if (v <= 0xff) v = v * 16 + hexval(p[j]); /* past 0xff it is refused anyway */
    if (j >= n || p[j] != '}' || !digits) return -1;
    j++;
  } else {
    for (; j < n && hexval(p[j]) >= 0 && digits < 2; j++, digits++) v = v * 16 + hexval(p[j]);
  }
  if (v == 0 || v > 0xff) return -1; /* NUL, or a code point we cannot write as one byte */
  *i = j;
  return v;
}

/* Is p[i..] a PCRE bound ({n}, {n,}, {n,m})? Returns its length or 0. */
static size_t rx_bound(const char *p, size_t n, size_t i) {
  size_t j = i + 1, d1 = 0, d2 = 0;
  while (j < n && p[j] >= '0' && p[j] <= '9') j++, d1++;
  if (!d1) return 0;
  if (j < n && p[j] == ',') {
    j++;
    while (j < n && p[j] >= '0' && p[j] <= '9') j++, d2++;
  }
  if (j < n && p[j] == '}' && d1 <= 3 && d2 <= 3) return j - i + 1;
  return 0;
}

/* A bracket expression starting at p[*i] == '['; appends the POSIX form. */
static int rx_bracket(const char *p, size_t n, size_t *i, dv_buf *o) {
  dv_buf body = DV_BUF_INIT;
  size_t j = *i + 1;
  int neg = 0, rb = 0, dash = 0, caret = 0, rc = DV_EINVAL;
  if (j < n && p[j] == '^') neg = 1, j++;
  if (j < n && p[j] == ']') rb = 1, j++;
  for (;;) {
    if (j >= n) goto out;
    uint8_t c = (uint8_t)p[j];
    if (c == ']') break;
    if (c == 0) goto out;
    if (c == '\\') {
      int v;
      j++;
      if (j >= n) goto out;
      char e = p[j];
      if (e == 'd' || e == 'w' || e == 's') {
        buf_puts(&body, e == 'd' ? "0-9" : e == 'w' ? "[:alnum:]_" : "[:space:]");
        j++;
        continue;
      }
      if (e == 'b') {
        v = '\b';
        j++;
      } else if ((v = rx_byte_escape(p, n, &j)) < 0) {
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) goto out;
        v = (uint8_t)e; /* an escaped punctuation character is itself */
        j++;
      }
      if (v == ']') rb = 1;
      else if (v == '-') dash = 1;
      else if (v == '^') caret = 1;
      else buf_putc(&body, (uint8_t)v);
      continue;
    }
    if (c == '[' && j + 1 < n && (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
      /* A POSIX class such as [:alpha:], copied through. */
      char kind = p[j + 1];
      size_t k = j + 2;
      while (k + 1 < n && !(p[k] == kind && p[k + 1] == ']')) k++;
      if (k + 1 >= n) goto out;
      buf_append(&body, p + j, k + 2 - j);
      j = k + 2;
      continue;
    }
    buf_putc(&body, c);
    j++;
  }
  /* ']' must come first, '-' last, '^' anywhere but first. */
  if (caret && !neg && !rb && !dash && body.len == 0) {
    buf_puts(o, "\\^");
  } else {
    buf_putc(o, '[');
    if (neg) buf_putc(o, '^');
    if (rb) buf_putc(o, ']');
    if (caret && !neg && !rb && body.len == 0) buf_putc(o, '-'), dash = 0;
    buf_append(o, body.p ? (const char *)body.p : "", body.len);
    if (caret) buf_putc(o, '^');
    if (dash) buf_putc(o, '-');
    buf_putc(o, ']');
  }
  *i = j + 1;
  rc = 0;
out:
  buf_free(&body);
  return rc;
}

/* glibc's regcomp expands a bounded repeat by copying its operand, so
 * ((a{99}){99}){99} compiles to a million nodes (hundreds of megabytes),
 * where PCRE compiles it to a few bytes. The translator therefore estimates
 * the expanded size, node by node, and refuses a pattern beyond
 * RX_MAX_NODES (a few megabytes of compiled form); RX_MAX_DEPTH is PCRE's
 * own default limit on nested parentheses. */
#define RX_MAX_NODES 4096
#define RX_MAX_DEPTH 250

typedef struct rx_size {
  uint64_t size[RX_MAX_DEPTH + 1]; /* nodes so far in each open group */
  uint64_t last[RX_MAX_DEPTH + 1]; /* nodes of the last atom in each (a quantifier repeats it) */
  int depth;                       /* open groups */
} rx_size;

static uint64_t sat(uint64_t v) { return v > RX_MAX_NODES ? RX_MAX_NODES + 1 : v; }

/* An atom of k nodes; DV_EINVAL when the budget is spent. */
static int rx_atom(rx_size *z, uint64_t k) {
  z->last[z->depth] = sat(k);
  z->size[z->depth] = sat(z->size[z->depth] + k);
  return z->size[z->depth] > RX_MAX_NODES ? DV_EINVAL : 0;
}

/* The last atom repeated: at most `times` copies of it plus one node. */
static int rx_repeat(rx_size *z, uint64_t times) {
  uint64_t l = z->last[z->depth];
  z->size[z->depth] = sat(z->size[z->depth] + l * (times ? times - 1 : 0) + 1);
  z->last[z->depth] = sat(l * (times ? times : 1) + 1);
  return z->size[z->depth] > RX_MAX_NODES ? DV_EINVAL : 0;
}

/* Translate a PCRE pattern into a POSIX ERE (NUL-terminated, into o);
 * *cflags gets REG_ICASE for a leading (?i). DV_EINVAL for what ERE cannot
 * express or what would compile too large. Lazy and possessive quantifiers
 * lose their suffix, which does not change whether a string matches
 * somewhere. */
static int rx_translate(const char *p, size_t n, dv_buf *o, int *cflags) {
  size_t i = 0;
  int rc = 0, rep = 0; /* rep: the last thing written may take a quantifier */
  rx_size *z = dv_calloc(1, sizeof *z);
  if (!z) return DV_ENOMEM;
  *cflags = 0;
  if (n >= 4 && !memcmp(p, "(?i)", 4)) *cflags |= REG_ICASE, i = 4;
  while (i < n && !rc) {
    uint8_t c = (uint8_t)p[i];
    if (c == 0) {
      rc = DV_EINVAL;
    } else if (c == '\\') {
      static const struct {
        char e;
        const char *ere;
      } classes[] = {{'d', "[0-9]"},          {'D', "[^0-9]"},       {'s', "[[:space:]]"},
                     {'S', "[^[:space:]]"},   {'w', "[[:alnum:]_]"}, {'W', "[^[:alnum:]_]"},
                     {'b', "\\b"},            {'B', "\\B"},          {'A', "^"},
                     {'z', "$"},              {'Z', "$"}};
      const char *ere = NULL;
      int v;
      i++;
      if (i >= n) {
        rc = DV_EINVAL;
        break;
      }
      char e = p[i];
      for (size_t k = 0; k < sizeof classes / sizeof classes[0]; k++)
        if (classes[k].e == e) ere = classes[k].ere;
      if (ere) {
        buf_puts(o, ere);
        i++;
        rep = !strchr("bBAzZ", e); /* PCRE does not repeat an assertion */
      } else if ((v = rx_byte_escape(p, n, &i)) >= 0) {
        rx_lit(o, (uint8_t)v);
      } else if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
        rc = DV_EINVAL; /* backreferences, \p, \Q…\E, \K, \G, octal… */
        break;
      } else {
        rx_lit(o, (uint8_t)e);
        i++;
      }
      if (!ere) rep = 1;
      rc = rx_atom(z, 1);
    } else if (c == '[') {
      rc = rx_bracket(p, n, &i, o);
      if (!rc) rc = rx_atom(z, 1);
      rep = 1;
    } else if (c == '(') {
      if (i + 1 < n && p[i + 1] == '?') {
        if (!(i + 2 < n && p[i + 2] == ':')) {
          rc = DV_EINVAL; /* lookaround, named groups, inline flags */
          break;
        }
        i += 2;
      }
      buf_putc(o, '(');
      i++;
      if (z->depth == RX_MAX_DEPTH) {
        rc = DV_EINVAL;
        break;
      }
      z->depth++;
      z->size[z->depth] = z->last[z->depth] = 0;
      rep = 0;
    } else if (c == ')') {
      buf_putc(o, ')');
      i++;
      if (z->depth) {
        uint64_t k = z->size[z->depth] + 1;
        z->depth--;
        rc = rx_atom(z, k);
      } /* else regcomp will refuse the stray parenthesis */
      rep = 1;
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      size_t len = 1;
      uint64_t times = c == '+' ? 2 : 1;
      /* PCRE refuses a quantifier with nothing repeatable before it: at
       * the start, after '(' or '|', after an assertion, or stacked on
       * another (a** — only one lazy '?' or possessive '+' suffix may
       * follow). ERE would accept the stack, and glibc's regcomp takes
       * exponential time on a long run of them. */
      if (!rep && (c != '{' || rx_bound(p, n, i))) {
        rc = DV_EINVAL;
        break;
      }
      if (c == '{') {
        len = rx_bound(p, n, i);
        if (!len) { /* PCRE reads a '{' that starts no bound as itself */
          buf_puts(o, "\\{");
          i++;
          rc = rx_atom(z, 1);
          rep = 1;
          continue;
        }
        /* {n}, {n,} and {n,m} cost max(n, m) + 1 copies at most */
        uint64_t a = 0, b = 0;
        size_t j = i + 1;
        for (; p[j] >= '0' && p[j] <= '9'; j++) a = a * 10 + (uint64_t)(p[j] - '0');
        if (p[j] == ',') j++;
        for (; p[j] >= '0' && p[j] <= '9'; j++) b = b * 10 + (uint64_t)(p[j] - '0');
        times = (a > b ? a : b) + 1;
      }
      buf_append(o, p + i, len);
      i += len;
      if (i < n && (p[i] == '?' || p[i] == '+')) i++;
      rc = rx_repeat(z, times);
      rep = 0;
    } else if (c == '}') {
      buf_puts(o, "\\}");
      i++;
      rc = rx_atom(z, 1);
      rep = 1;
    } else {
      buf_putc(o, c);
      i++;
      rc = c == '|' ? 0 : rx_atom(z, 1);
      rep = c != '|' && c != '^' && c != '$';
    }
  }
  dv_free(z);
  if (rc) return rc;
  return buf_error(o) ? DV_ENOMEM : 0;
}

/* Compiled patterns are cached per thread (the arena cannot run regfree,
 * so the tree keeps only the pattern text). A thread's cache is freed when
 * the thread exits. glibc's regexec builds its DFA lazily and keeps every
 * state it built inside the regex_t, so a pattern such as
 * (a|b)*a(a|b){20} grows by megabytes per thousand subjects; a cached
 * pattern is therefore compiled afresh after RX_REUSE matches, which bounds
 * what it can accumulate at the cost of one regcomp per RX_REUSE matches. */
#define RX_SLOTS 16
#define RX_REUSE 1000

typedef struct rx_slot {
  char *pat;     /* the translated pattern (dv_malloc), NULL if the slot is free */
  int cflags;    /* flags it was compiled with */
  uint64_t used; /* cache tick of its last use, for eviction */
  unsigned uses; /* matches since it was compiled */
  regex_t re;    /* the compiled pattern */
} rx_slot;

typedef struct rx_cache {
  uint64_t tick;             /* bumped on every lookup */
  rx_slot slot[RX_SLOTS];    /* the cached patterns */
} rx_cache;

static pthread_once_t rx_once = PTHREAD_ONCE_INIT;
static pthread_key_t rx_key;
static int rx_key_ok;
static __thread rx_cache *rx_tl;

static void rx_cache_free(void *p) {
  rx_cache *c = p;
  for (int i = 0; i < RX_SLOTS; i++)
    if (c->slot[i].pat) {
      regfree(&c->slot[i].re);
      dv_free(c->slot[i].pat);
    }
  dv_free(c);
}

static void rx_key_init(void) { rx_key_ok = pthread_key_create(&rx_key, rx_cache_free) == 0; }

/* The compiled form of a translated pattern, or NULL (out of memory, or
 * regcomp refused it; *rc says which when rc is not NULL). */
static const regex_t *rx_get(const char *pat, int cflags, int *rc) {
  rx_cache *c = rx_tl;
  if (rc) *rc = DV_ENOMEM;
  if (!c) {
    pthread_once(&rx_once, rx_key_init);
    c = dv_calloc(1, sizeof *c);
    if (!c) return NULL;
    if (rx_key_ok) pthread_setspecific(rx_key, c);
    rx_tl = c;
  }
  c->tick++;
  rx_slot *victim = &c->slot[0];
  for (int i = 0; i < RX_SLOTS; i++) {
    rx_slot *s = &c->slot[i];
    if (s->pat && s->cflags == cflags && !strcmp(s->pat, pat)) {
      regex_t fresh;
      s->used = c->tick;
      if (++s->uses >= RX_REUSE && regcomp(&fresh, pat, RX_CFLAGS | cflags) == 0) {
        regfree(&s->re);
        s->re = fresh;
        s->uses = 0;
      }
      if (rc) *rc = 0;
      return &s->re;
    }
    if (!s->pat ? victim->pat != NULL : victim->pat && s->used < victim->used) victim = s;
  }
  char *copy = dv_strndup(pat, strlen(pat));
  if (!copy) return NULL;
  regex_t re;
  if (regcomp(&re, pat, RX_CFLAGS | cflags) != 0) {
    dv_free(copy);
    if (rc) *rc = DV_EINVAL;
    return NULL;
  }
  if (victim->pat) {
    regfree(&victim->re);
    dv_free(victim->pat);
  }
  victim->pat = copy;
  victim->cflags = cflags;
  victim->used = c->tick;
  victim->uses = 0;
  victim->re = re;
  if (rc) *rc = 0;
  return &victim->re;
}

/* Does the regular expression match somewhere in the string? DOM strings
 * are not NUL-terminated (and may hold NUL bytes): the match runs on a
 * terminated copy, with REG_STARTEND giving the length, because some
 * regexec implementations (and sanitizer interceptors) read up to a NUL
 * whatever REG_STARTEND says. */
static int rx_match(const mnode *n, const json_val *v) {
  const regex_t *re = rx_get(n->str, n->b, NULL);
  if (!re) return 0;
  char small[256], *s = v->len < sizeof small ? small : dv_malloc(v->len + 1);
  if (!s) return 0;
  if (v->len) memcpy(s, v->u.s, v->len);
  s[v->len] = 0;
  regmatch_t m[1];
  m[0].rm_so = 0;
  m[0].rm_eo = (regoff_t)v->len;
  int r = regexec(re, s, 1, m, REG_STARTEND) == 0;
  if (s != small) dv_free(s);
  return r;
}

/* ------------------------------------------------------------------ */
/* Pass 1: norm_ops                                                    */
/* ------------------------------------------------------------------ */

static mnode *node(mctx *c, int op) {
  mnode *n = arena_calloc(c->a, sizeof *n);
  if (n) n->op = (uint8_t)op;
  return n;
}

static int key_is(const char *k, size_t kn, const char *lit) {
  return strlen(lit) == kn && !memcmp(k, lit, kn);
}

static int norm_ops(mctx *c, const json_val *v, mnode **out);

/* One node with a single kid. */
static int wrap(mctx *c, int op, mnode *kid, mnode **out) {
  mnode *n = node(c, op);
  mnode **k = arena_alloc(c->a, sizeof *k);
  if (!n || !k) return DV_ENOMEM;
  k[0] = kid;
  n->kid = k;
  n->n = 1;
  *out = n;
  return 0;
}

/* $and/$or/$nor over an array of selectors. */
static int norm_list(mctx *c, int op, const json_val *arr, mnode **out) {
  mnode *n = node(c, op);
  if (!n) return DV_ENOMEM;
  n->n = arr->len;
  if (arr->len) {
    n->kid = arena_alloc(c->a, arr->len * sizeof *n->kid);
    if (!n->kid) return DV_ENOMEM;
  }
  for (size_t i = 0; i < arr->len; i++) {
    int rc = norm_ops(c, arr->u.items[i], &n->kid[i]);
    if (rc) return rc;
  }
  *out = n;
  return 0;
}

static int is_int(const json_val *v) { return v->type == JSON_NUMBER && num_is_int(v); }

static int is_zero_int(const json_val *v) {
  return v->len == 1 ? v->u.s[0] == '0' : v->len == 2 && v->u.s[0] == '-' && v->u.s[1] == '0';
}

/* One {key: value} member, as norm_ops({[{Key, Value}]}). */
static int norm_prop(mctx *c, const char *k, size_t kn, const json_val *v, mnode **out) {
  static const struct {
    const char *name;
    int op;
  } cmp_ops[] = {{"$lt", MO_LT}, {"$lte", MO_LTE}, {"$eq", MO_EQ},
                 {"$ne", MO_NE}, {"$gte", MO_GTE}, {"$gt", MO_GT}};
  static const char *unsupported[] = {"$where", "$geoWithin", "$geoIntersects", "$near",
                                      "$nearSphere"};
  mnode *n, *kid;
  int rc;

  if (kn == 0 || k[0] != '$') {
    /* A {Field: Cond} pair. */
    rc = norm_ops(c, v, &kid);
    if (rc) return rc;
    rc = wrap(c, MO_FIELD, kid, out);
    if (rc) return rc;
    (*out)->str = k;
    (*out)->slen = kn;
    return 0;
  }
  if (key_is(k, kn, "$and") || key_is(k, kn, "$or") || key_is(k, kn, "$nor")) {
    const char *name = k[1] == 'a' ? "$and" : k[2] == 'r' ? "$or" : "$nor";
    if (v->type != JSON_ARRAY) return fail_arg(c, name, v);
    return norm_list(c, k[1] == 'a' ? MO_AND : k[2] == 'r' ? MO_OR : MO_NOR, v, out);
  }
  if (key_is(k, kn, "$not") || key_is(k, kn, "$elemMatch") || key_is(k, kn, "$allMatch") ||
      key_is(k, kn, "$keyMapMatch")) {
    int op = k[1] == 'n' ? MO_NOT : k[1] == 'e' ? MO_ELEM : k[1] == 'a' ? MO_ALLM : MO_KEYMAP;
    char name[16];
    memcpy(name, k, kn);
    name[kn] = 0;
    if (v->type != JSON_OBJECT) return fail_arg(c, name, v);
    rc = norm_ops(c, v, &kid);
    if (rc) return rc;
    return wrap(c, op, kid, out);
  }
  if (key_is(k, kn, "$in") || key_is(k, kn, "$nin") || key_is(k, kn, "$all")) {
    const char *name = k[1] == 'i' ? "$in" : k[1] == 'n' ? "$nin" : "$all";
    if (v->type != JSON_ARRAY) return fail_arg(c, name, v);
    n = node(c, k[1] == 'i' ? MO_IN : k[1] == 'n' ? MO_NIN : MO_ALL);
    goto with_arg;
  }
  if (key_is(k, kn, "$exists")) {
    if (v->type != JSON_BOOL) return fail_arg(c, "$exists", v);
    n = node(c, MO_EXISTS);
    if (!n) return DV_ENOMEM;
    n->b = v->b;
    goto with_arg;
  }
  if (key_is(k, kn, "$type")) {
    if (v->type != JSON_STRING) return fail_arg(c, "$type", v);
    n = node(c, MO_TYPE);
    goto with_arg;
  }
  if (key_is(k, kn, "$mod")) {
    /* CouchDB accepts a zero divisor and then fails every match with a
     * badarith crash; refusing it up front is kinder and as CouchDB-like
     * as a 400 gets. */
    if (v->type != JSON_ARRAY || v->len != 2 || !is_int(v->u.items[0]) ||
        !is_int(v->u.items[1]) || is_zero_int(v->u.items[0]))
      return fail_arg(c, "$mod", v);
    n = node(c, MO_MOD);
    goto with_arg;
  }
  if (key_is(k, kn, "$regex") && v->type == JSON_STRING) {
    dv_buf pat = DV_BUF_INIT;
    int cflags = 0;
    rc = rx_translate(v->u.s, v->len, &pat, &cflags);
    if (rc == 0) {
      /* Compile once now: a bad pattern is the caller's error, and the
       * compiled form stays in this thread's cache for the matches. */
      (void)rx_get(pat.p ? (const char *)pat.p : "", cflags, &rc);
    }
    if (rc) {
      buf_free(&pat);
      return rc == DV_ENOMEM ? DV_ENOMEM : fail_arg(c, "$regex", v);
    }
    n = node(c, MO_REGEX);
    char *s = arena_strndup(c->a, pat.p ? (const char *)pat.p : "", pat.len);
    buf_free(&pat);
    if (!n || !s) return DV_ENOMEM;
    n->str = s;
    n->slen = strlen(s);
    n->b = (uint8_t)cflags;
    goto with_arg;
  }
  if (key_is(k, kn, "$size")) {
    if (!is_int(v) || (v->u.s[0] == '-' && !is_zero_int(v))) return fail_arg(c, "$size", v);
    n = node(c, MO_SIZE);
    goto with_arg;
  }
  if (key_is(k, kn, "$text")) {
    if (v->type != JSON_STRING && v->type != JSON_NUMBER && v->type != JSON_BOOL)
      return fail_arg(c, "$text", v);
    n = node(c, MO_DEFAULT);
    if (!n) return DV_ENOMEM;
    n->b = 1;
    goto with_arg;
  }
  if (key_is(k, kn, "$beginsWith") && v->type == JSON_STRING) {
    if (json_utf8_check(v->u.s, v->len, NULL)) return fail_arg(c, "$beginsWith", v);
    n = node(c, MO_BEGINS);
    goto with_arg;
  }
  if (key_is(k, kn, "$default")) {
    /* Not an operator users should write, but CouchDB passes it through
     * (its normaliser must accept its own output). */
    n = node(c, MO_DEFAULT);
    goto with_arg;
  }
  for (size_t i = 0; i < sizeof cmp_ops / sizeof cmp_ops[0]; i++)
    if (key_is(k, kn, cmp_ops[i].name)) {
      n = node(c, cmp_ops[i].op);
      goto with_arg;
    }
  for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
    if (key_is(k, kn, unsupported[i])) return fail(c, DV_EMANGO_NOT_SUPPORTED, "Unsupported operator: ", k, kn);
  return fail(c, DV_EMANGO_OPERATOR, "Invalid operator: ", k, kn);

with_arg:
  if (!n) return DV_ENOMEM;
  n->arg = v;
  *out = n;
  return 0;
}

/* norm_ops of any value: an object is its members (two or more make an
 * implicit $and); anything else, {} included, means equality. */
static int norm_ops(mctx *c, const json_val *v, mnode **out) {
  if (v->type == JSON_OBJECT && v->len == 1)
    return norm_prop(c, v->u.members[0].key, v->u.members[0].klen, v->u.members[0].val, out);
  if (v->type == JSON_OBJECT && v->len > 1) {
    mnode *n = node(c, MO_AND);
    if (!n) return DV_ENOMEM;
    n->n = v->len;
    n->kid = arena_alloc(c->a, v->len * sizeof *n->kid);
    if (!n->kid) return DV_ENOMEM;
    for (size_t i = 0; i < v->len; i++) {
      const json_member *m = &v->u.members[i];
      int rc = norm_prop(c, m->key, m->klen, m->val, &n->kid[i]);
      if (rc) return rc;
    }
    *out = n;
    return 0;
  }
  mnode *n = node(c, MO_EQ);
  if (!n) return DV_ENOMEM;
  n->arg = v;
  *out = n;
  return 0;
}

/* ------------------------------------------------------------------ */
/* Pass 2: norm_fields                                                 */
/* ------------------------------------------------------------------ */

/* The path extended by one key (see struct mpath). */
static int path_push(mctx *c, const mpath *up, const char *k, size_t kn, const mpath **out) {
  mpath *p = arena_calloc(c->a, sizeof *p);
  size_t steps = 1;
  if (!p) return DV_ENOMEM;
  p->up = up;
  p->key = k;
  p->klen = kn;
  p->merge = up && up->klen && up->key[up->klen - 1] == '\\';
  p->bad = up ? up->bad : 0;
  for (size_t i = 0; i < kn; i++)
    if (k[i] == '.' && (i == 0 || k[i - 1] != '\\')) steps++;
  p->seg = arena_alloc(c->a, steps * sizeof *p->seg);
  if (!p->seg) return DV_ENOMEM;
  size_t start = 0;
  for (size_t i = 0; i <= kn; i++) {
    if (i < kn && !(k[i] == '.' && (i == 0 || k[i - 1] != '\\'))) continue;
    const char *seg = k + start;
    size_t len = i - start, pre = 0;
    const mseg *last = NULL;
    if (p->n == 0 && p->merge) {
      last = &up->seg[up->n - 1];
      pre = last->n + 1;
    } else if (len == 0) {
      p->bad = 1;
    }
    if (pre || memchr(seg, '\\', len)) {
      char *d = arena_alloc(c->a, pre + len + 1);
      size_t m = 0;
      if (!d) return DV_ENOMEM;
      if (pre) {
        memcpy(d, last->s, last->n);
        d[last->n] = '.';
        m = pre;
      }
      for (size_t j = 0; j < len; j++)
        if (seg[j] != '\\') d[m++] = seg[j];
      seg = d;
      len = m;
    }
    p->seg[p->n].s = seg;
    p->seg[p->n].n = len;
    p->n++;
    start = i + 1;
  }
  *out = p;
  return 0;
}

/* The path as CouchDB spells it: the keys joined with dots. */
static void path_text(dv_buf *b, const mpath *p) {
  if (p->up) {
    path_text(b, p->up);
    buf_putc(b, '.');
  }
  buf_append(b, p->key, p->klen);
}

/* A field node over a condition, for a path. */
static int field_at(mctx *c, mnode *cond, const mpath *path, mnode **out) {
  if (path && path->bad) {
    dv_buf b = DV_BUF_INIT;
    buf_puts(&b, "Invalid field name: ");
    path_text(&b, path);
    return fail_buf(c, DV_EMANGO_FIELD_NAME, &b);
  }
  int rc = wrap(c, MO_FIELD, cond, out);
  if (rc) return rc;
  (*out)->path = path;
  (*out)->b = path && !path->up && key_is(path->key, path->klen, "_id");
  return 0;
}

static int norm_fields(mctx *c, mnode *n, const mpath *path, mnode **out) {
  int rc;
  switch (n->op) {
  case MO_AND:
  case MO_OR:
  case MO_NOR:
  case MO_NOT:
    for (size_t i = 0; i < n->n; i++) {
      rc = norm_fields(c, n->kid[i], path, &n->kid[i]);
      if (rc) return rc;
    }
    *out = n;
    return 0;
  case MO_ELEM:
  case MO_ALLM:
  case MO_KEYMAP:
    /* Their argument is a selector of its own, relative to the element. */
    rc = norm_fields(c, n->kid[0], NULL, &n->kid[0]);
    if (rc) return rc;
    return field_at(c, n, path, out);
  case MO_DEFAULT: {
    int ok = n->b || (n->arg->type == JSON_OBJECT && n->arg->len == 1 &&
                      key_is(n->arg->u.members[0].key, n->arg->u.members[0].klen, "$text"));
    if (ok && !path) {
      *out = n;
      return 0;
    }
    dv_buf b = DV_BUF_INIT;
    buf_puts(&b, "Invalid field normalization on selector: ");
    erl_default(&b, n);
    return fail_buf(c, DV_EMANGO_BAD_FIELD, &b);
  }
  case MO_FIELD: {
    /* Append this name to the path ("" + name is just name, so an empty
     * name at the top adds nothing). */
    const mpath *p = NULL;
    if (path || n->slen) {
      rc = path_push(c, path, n->str, n->slen, &p);
      if (rc) return rc;
    }
    return norm_fields(c, n->kid[0], p, out);
  }
  default:
    /* A terminal condition: it gets the path. */
    return field_at(c, n, path, out);
  }
}

/* ------------------------------------------------------------------ */
/* Pass 3: norm_negations                                              */
/* ------------------------------------------------------------------ */

static int negate(mctx *c, mnode *n, mnode **out);

static int norm_negations(mctx *c, mnode *n, mnode **out) {
  int rc;
  switch (n->op) {
  case MO_NOT: return negate(c, n->kid[0], out);
  case MO_NOR:
    n->op = MO_AND;
    for (size_t i = 0; i < n->n; i++) {
      rc = negate(c, n->kid[i], &n->kid[i]);
      if (rc) return rc;
    }
    *out = n;
    return 0;
  case MO_AND:
  case MO_OR:
  case MO_ELEM:
  case MO_ALLM:
  case MO_KEYMAP:
    /* (After norm_fields the last three only occur below a field, where
     * CouchDB does not look for negations either; kept for symmetry.) */
    for (size_t i = 0; i < n->n; i++) {
      rc = norm_negations(c, n->kid[i], &n->kid[i]);
      if (rc) return rc;
    }
    *out = n;
    return 0;
  default: *out = n; return 0;
  }
}

static int negate(mctx *c, mnode *n, mnode **out) {
  static const uint8_t inv[] = {
      [MO_LT] = MO_GTE, [MO_LTE] = MO_GT, [MO_EQ] = MO_NE, [MO_NE] = MO_EQ,
      [MO_GTE] = MO_LT, [MO_GT] = MO_LTE, [MO_IN] = MO_NIN, [MO_NIN] = MO_IN,
  };
  int rc;
  switch (n->op) {
  case MO_NOT: return norm_negations(c, n->kid[0], out);
  case MO_NOR:
    n->op = MO_OR;
    for (size_t i = 0; i < n->n; i++) {
      rc = norm_negations(c, n->kid[i], &n->kid[i]);
      if (rc) return rc;
    }
    *out = n;
    return 0;
  case MO_AND:
  case MO_OR:
    n->op = n->op == MO_AND ? MO_OR : MO_AND;
    for (size_t i = 0; i < n->n; i++) {
      rc = negate(c, n->kid[i], &n->kid[i]);
      if (rc) return rc;
    }
    *out = n;
    return 0;
  case MO_DEFAULT: {
    dv_buf b = DV_BUF_INIT;
    buf_puts(&b, "Bad argument for operator $not: ");
    erl_default(&b, n);
    return fail_buf(c, DV_EMANGO_BAD_ARG, &b);
  }
  case MO_LT:
  case MO_LTE:
  case MO_EQ:
  case MO_NE:
  case MO_GTE:
  case MO_GT:
  case MO_IN:
  case MO_NIN: {
    mnode *m = node(c, inv[n->op]);
    if (!m) return DV_ENOMEM;
    m->arg = n->arg;
    *out = m;
    return 0;
  }
  case MO_EXISTS: {
    mnode *m = node(c, MO_EXISTS);
    if (!m) return DV_ENOMEM;
    m->arg = n->arg;
    m->b = !n->b;
    *out = m;
    return 0;
  }
  case MO_FIELD: {
    mnode *m = node(c, MO_FIELD);
    if (!m) return DV_ENOMEM;
    *m = *n;
    m->kid = arena_alloc(c->a, sizeof *m->kid);
    if (!m->kid) return DV_ENOMEM;
    rc = negate(c, n->kid[0], &m->kid[0]);
    if (rc) return rc;
    *out = m;
    return 0;
  }
  default: /* any other operator keeps an explicit $not */
    return wrap(c, MO_NOT, n, out);
  }
}

/* ------------------------------------------------------------------ */
/* Parsing                                                             */
/* ------------------------------------------------------------------ */

int mango_parse(dv_arena *a, const json_val *sel, mango_sel **out, const char **why) {
  mctx c = {a, NULL};
  mnode *root = NULL;
  mango_sel *s;
  int rc;
  if (!sel || sel->type != JSON_OBJECT) {
    dv_buf b = DV_BUF_INIT;
    buf_puts(&b, "Selector must be a JSON object, not: ");
    if (sel) erl_w(&b, sel);
    rc = fail_buf(&c, DV_EMANGO_SELECTOR_JSON, &b);
    goto fail;
  }
  if (sel->len) {
    rc = norm_ops(&c, sel, &root);
    if (rc) goto fail;
    rc = norm_fields(&c, root, NULL, &root);
    if (rc) goto fail;
    rc = norm_negations(&c, root, &root);
    if (rc) goto fail;
    if (root->op == MO_FIELD && !root->path) {
      rc = fail(&c, DV_EMANGO_SELECTOR, "One or more conditions is missing a field name.", NULL, 0);
      goto fail;
    }
  }
  s = arena_alloc(a, sizeof *s);
  if (!s) {
    rc = DV_ENOMEM;
    goto fail;
  }
  s->root = root;
  *out = s;
  return 0;

fail:
  if (why) *why = rc == DV_ENOMEM ? dv_strerror(rc) : c.why;
  return rc;
}

/* ------------------------------------------------------------------ */
/* Matching                                                            */
/* ------------------------------------------------------------------ */

enum { GF_FOUND, GF_NOT_FOUND, GF_BAD_PATH };

/* An array index the way Erlang's list_to_integer reads a path step:
 * optional sign, decimal digits. -1 when it is not one or out of range. */
static long long step_index(const mseg *s, size_t len) {
  size_t i = 0;
  int neg = 0;
  unsigned long long v = 0;
  if (i < s->n && (s->s[i] == '+' || s->s[i] == '-')) neg = s->s[i] == '-', i++;
  if (i == s->n) return -1;
  for (; i < s->n; i++) {
    if (s->s[i] < '0' || s->s[i] > '9') return -1;
    if (v <= len) v = v * 10 + (unsigned)(s->s[i] - '0');
  }
  if (neg && v) return -1;
  return v < len ? (long long)v : -1;
}

/* One step of mango_doc:get_field. */
static int step(const json_val **v, const mseg *seg) {
  const json_val *x = *v;
  if (x->type == JSON_OBJECT) {
    x = json_obj_get(x, seg->s, seg->n);
    if (!x) return GF_NOT_FOUND;
  } else if (x->type == JSON_ARRAY) {
    long long k = step_index(seg, x->len);
    if (k < 0) return GF_BAD_PATH;
    x = x->u.items[k];
  } else {
    return GF_BAD_PATH;
  }
  *v = x;
  return GF_FOUND;
}

int mango__split_path(dv_arena *a, const char *f, size_t n, mseg **out, size_t *nseg) {
  size_t cap = 1;
  for (size_t i = 0; i < n; i++) cap += f[i] == '.';
  mseg *seg = arena_alloc(a, cap * sizeof *seg);
  char *buf = arena_alloc(a, n + 1);
  if (!seg || !buf) return DV_ENOMEM;
  size_t k = 0, m = 0, st = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && f[i] == '\\' && i + 1 < n && f[i + 1] == '.') {
      buf[m++] = '.';
      i++;
      continue;
    }
    if (i < n && f[i] != '.') {
      buf[m++] = f[i];
      continue;
    }
    seg[k].s = buf + st;
    seg[k].n = m - st;
    k++;
    st = m;
  }
  *out = seg;
  *nseg = k;
  return 0;
}

const json_val *mango__get_path(const json_val *v, const mseg *seg, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    if (!seg[i].n || step(&v, &seg[i]) != GF_FOUND) return NULL;
  return v;
}

/* mango_doc:get_field along a path; drop leaves out the path's last step
 * (it is continued by a merged key below). */
static int get_field(const json_val **v, const mpath *p, int drop) {
  if (!p) return GF_FOUND;
  int r = get_field(v, p->up, p->merge);
  for (size_t i = 0; !r && i + (size_t)drop < p->n; i++) r = step(v, &p->seg[i]);
  return r;
}

static const char *type_name(const json_val *v) {
  static const char *names[] = {"null", "boolean", "number", "string", "array", "object"};
  return names[v->type];
}

static int match(const mnode *n, const json_val *v, int raw) {
  switch (n->op) {
  case MO_AND:
    for (size_t i = 0; i < n->n; i++)
      if (!match(n->kid[i], v, raw)) return 0;
    return 1;
  case MO_OR:
    for (size_t i = 0; i < n->n; i++)
      if (match(n->kid[i], v, raw)) return 1;
    return n->n == 0;
  case MO_NOT: return !match(n->kid[0], v, raw);
  case MO_NOR: /* normalised away; kept for completeness */
    for (size_t i = 0; i < n->n; i++)
      if (match(n->kid[i], v, raw)) return 0;
    return 1;
  case MO_FIELD: {
    const json_val *sub = v;
    int r = get_field(&sub, n->path, 0);
    if (r == GF_NOT_FOUND) return n->kid[0]->op == MO_EXISTS && !n->kid[0]->b;
    if (r == GF_BAD_PATH) return 0;
    return match(n->kid[0], sub, raw || n->b);
  }
  case MO_ELEM:
    if (v->type != JSON_ARRAY) return 0;
    for (size_t i = 0; i < v->len; i++)
      if (match(n->kid[0], v->u.items[i], raw)) return 1;
    return 0;
  case MO_ALLM:
    if (v->type != JSON_ARRAY || v->len == 0) return 0;
    for (size_t i = 0; i < v->len; i++)
      if (!match(n->kid[0], v->u.items[i], raw)) return 0;
    return 1;
  case MO_KEYMAP:
    if (v->type != JSON_OBJECT) return 0;
    for (size_t i = 0; i < v->len; i++) {
      json_val key;
      memset(&key, 0, sizeof key);
      key.type = JSON_STRING;
      key.len = v->u.members[i].klen;
      key.u.s = v->u.members[i].key;
      if (match(n->kid[0], &key, raw)) return 1;
    }
    return 0;
  case MO_LT: return vcmp(v, n->arg, raw) < 0;
  case MO_LTE: return vcmp(v, n->arg, raw) <= 0;
  case MO_EQ: return vcmp(v, n->arg, raw) == 0;
  case MO_NE: return vcmp(v, n->arg, raw) != 0;
  case MO_GTE: return vcmp(v, n->arg, raw) >= 0;
  case MO_GT: return vcmp(v, n->arg, raw) > 0;
  case MO_IN:
  case MO_NIN: {
    /* An array value is in when one of its elements equals an argument. */
    int in = 0;
    const json_val *arr = n->arg;
    for (size_t i = 0; i < arr->len && !in; i++) {
      if (v->type == JSON_ARRAY) {
        for (size_t j = 0; j < v->len && !in; j++) in = vcmp(v->u.items[j], arr->u.items[i], raw) == 0;
      } else {
        in = vcmp(v, arr->u.items[i], raw) == 0;
      }
    }
    return n->op == MO_IN ? in : !in;
  }
  case MO_ALL: {
    const json_val *arr = n->arg;
    if (arr->len == 0) return 0;
    if (arr->len == 1 && arr->u.items[0]->type == JSON_ARRAY && veq(arr->u.items[0], v, 0)) return 1;
    if (v->type != JSON_ARRAY) return 0;
    for (size_t i = 0; i < arr->len; i++) {
      int member = 0;
      for (size_t j = 0; j < v->len && !member; j++) member = veq(arr->u.items[i], v->u.items[j], 1);
      if (!member) return 0;
    }
    return 1;
  }
  case MO_EXISTS: return n->b; /* the value is there */
  case MO_TYPE: return key_is(n->arg->u.s, n->arg->len, type_name(v));
  case MO_MOD:
    if (!is_int(v)) return 0;
    return mod_match(v, n->arg->u.items[0], n->arg->u.items[1]);
  case MO_REGEX: return v->type == JSON_STRING && rx_match(n, v);
  case MO_SIZE: {
    uint64_t want;
    if (v->type != JSON_ARRAY) return 0;
    if (is_zero_int(n->arg)) return v->len == 0;
    return !json_num_uint64(n->arg->u.s, n->arg->len, &want) && want == v->len;
  }
  case MO_BEGINS:
    return v->type == JSON_STRING && v->len >= n->arg->len &&
           !memcmp(v->u.s, n->arg->u.s, n->arg->len);
  case MO_DEFAULT: return 1;
  }
  return 0;
}

int mango_match(const mango_sel *s, const json_val *doc) {
  if (!s->root) return 1;
  return match(s->root, doc, 0);
}

/* ------------------------------------------------------------------ */
/* The normalised selector as JSON (mango_int.h)                       */
/* ------------------------------------------------------------------ */

void mango__erl_w(dv_buf *b, const json_val *v) { erl_w(b, v); }

const char *mango__path_name(dv_arena *a, const mpath *p, size_t *len) {
  dv_buf b = DV_BUF_INIT;
  if (p) path_text(&b, p);
  char *s = buf_error(&b) ? NULL : arena_strndup(a, b.p ? (const char *)b.p : "", b.len);
  if (s && len) *len = b.len;
  buf_free(&b);
  return s;
}

/* {key: v}, or NULL when out of memory. */
static json_val *one(dv_arena *a, const char *key, size_t kn, json_val *v) {
  json_val *o = json_new_object(a);
  if (!o || !v || json_obj_set(a, o, key, kn, v)) return NULL;
  return o;
}

json_val *mango__node_json(dv_arena *a, const mnode *n) {
  static const char *const names[] = {
      [MO_AND] = "$and", [MO_OR] = "$or", [MO_NOT] = "$not", [MO_NOR] = "$nor",
      [MO_ELEM] = "$elemMatch", [MO_ALLM] = "$allMatch", [MO_KEYMAP] = "$keyMapMatch",
      [MO_LT] = "$lt", [MO_LTE] = "$lte", [MO_EQ] = "$eq", [MO_NE] = "$ne", [MO_GTE] = "$gte",
      [MO_GT] = "$gt", [MO_IN] = "$in", [MO_NIN] = "$nin", [MO_ALL] = "$all",
      [MO_EXISTS] = "$exists", [MO_TYPE] = "$type", [MO_MOD] = "$mod", [MO_REGEX] = "$regex",
      [MO_SIZE] = "$size", [MO_BEGINS] = "$beginsWith", [MO_DEFAULT] = "$default"};
  const char *op = names[n->op];
  switch (n->op) {
  case MO_AND:
  case MO_OR:
  case MO_NOR: {
    json_val *arr = json_new_array(a);
    for (size_t i = 0; arr && i < n->n; i++)
      if (json_arr_push(a, arr, mango__node_json(a, n->kid[i]))) return NULL;
    return one(a, op, strlen(op), arr);
  }
  case MO_NOT:
  case MO_ELEM:
  case MO_ALLM:
  case MO_KEYMAP: return one(a, op, strlen(op), mango__node_json(a, n->kid[0]));
  case MO_FIELD: {
    size_t len = 0;
    const char *name = mango__path_name(a, n->path, &len);
    return name ? one(a, name, len, mango__node_json(a, n->kid[0])) : NULL;
  }
  case MO_EXISTS: return one(a, op, strlen(op), json_new_bool(a, n->b));
  case MO_DEFAULT:
    if (n->b) return one(a, op, strlen(op), one(a, "$text", 5, json_dup(a, n->arg)));
    return one(a, op, strlen(op), json_dup(a, n->arg));
  default: return one(a, op, strlen(op), json_dup(a, n->arg));
  }
}

json_val *mango_to_json(dv_arena *a, const mango_sel *s) {
  if (!s->root) return json_new_object(a);
  return mango__node_json(a, s->root);
}
