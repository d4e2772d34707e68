/* users.c — the rules of the `_users` database (users.h): CouchDB's
 * couch_users_db.erl hooks and its _design/_auth validate_doc_update,
 * written in C.
 *
 * The validate function is JavaScript, and a document that is not shaped
 * as expected is judged by JavaScript's rules: `!x` is false for 0, "" and
 * null, `a !== b` is never true for two objects, 'org.couchdb.user:' +
 * name turns a number or an array into text. The js_* helpers below give
 * those semantics for JSON values (a NULL json_val * stands for
 * `undefined`, a missing member), so a malformed document gets the answer
 * CouchDB gives, not one of our own.
 *
 * The reasons, where they come from (CouchDB 3.4/3.5 sources):
 *
 *   reason                                                  source
 *   "missing" (404 not_found)                               couch_users_db:before_doc_update
 *                                                           and after_doc_read, throw(not_found);
 *                                                           chttpd:error_info(not_found)
 *   "Server cannot hash passwords at this time."            couch_users_db ?PASSWORD_SERVER_ERROR
 *   "Password value of '~p' is invalid."                    couch_passwords:pbkdf2/5
 *   "Salt value of '~p' is invalid."                        couch_passwords:pbkdf2/5
 *   "You are not a db or server admin." (401/403)           couch_db:check_is_admin (design docs)
 *   "Only administrators can view design docs in the users database."
 *                                                           couch_users_db:after_doc_read
 *   and from AUTH_DB_DOC_VALIDATE_FUNCTION (couch_js_functions.hrl), in its order:
 *   "Only admins may delete other user docs."
 *   "doc.type must be user"
 *   "doc.name is required"
 *   "doc.roles must exist"
 *   "doc.roles must be an array"
 *   "doc.roles can only contain strings"
 *   "Doc ID must be of the form org.couchdb.user:name"
 *   "Usernames can not be changed."
 *   "Users with password_sha must have a salt.See /_utils/script/couch.js for example code."
 *                                                           (sic: no space after the first '.')
 *   "Password scheme `X` not supported."
 *   "iterations must be a number."
 *   "derived_key must be a string."
 *   "You may only update your own user document."
 *   "Only _admin may edit roles"
 *   "Only _admin may set roles"
 *   "No system roles (starting with underscore) in users db."   (_metrics excepted)
 *   "Username may not start with underscore."
 *   "Character `:` is not allowed in usernames."
 *
 * Where the JavaScript throws a TypeError instead (it reads oldDoc.name when
 * there is no old document, calls indexOf on a name that is a number, sorts
 * old roles that are not an array), CouchDB answers 500 with the error's
 * name; we answer 500 "TypeError" with SpiderMonkey's message.
 */
#include "auth/users.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/crypto.h"
#include "util/buf.h"

#define PREFIX_LEN (sizeof USERS_ID_PREFIX - 1)

/* ---- answers ---------------------------------------------------------------- */

/* Every answer is a code of util/err.h with *why its reason: the code's
 * row gives the status and CouchDB's error name. */
static int refuse(const char **why, int rc, const char *reason) {
  *why = reason;
  return rc;
}

static int forbid(const char **why, const char *reason) { return refuse(why, DV_EFORBIDDEN, reason); }

/* The _auth function crashed: CouchDB answers 500 with the JS error's name. */
static int crash(const char **why, const char *msg) { return refuse(why, DV_EVDU_TYPEERROR, msg); }

/* The server failed (not the client's doing): the code's own reason. */
static int fail(const char **why, int rc) { return refuse(why, rc, dv_strerror(rc)); }

/* 1 for a refusal of the request, 0 for a failure of the server. */
static int refused(int rc) {
  return rc == DV_EFORBIDDEN || rc == DV_EUNAUTHORIZED || rc == DV_ENOT_FOUND || rc == DV_EVDU_TYPEERROR ||
         rc == DV_EVDU_UNKNOWN;
}

/* A buffer's text copied into the arena; NULL on ENOMEM. */
static const char *buf_to_arena(dv_arena *a, dv_buf *b) {
  if (buf_error(b)) return NULL;
  return arena_strndup(a, b->p ? (const char *)b->p : "", b->len);
}

/* ---- small helpers ---------------------------------------------------------- */

static int has_prefix(const char *s, size_t n, const char *p) {
  size_t pn = strlen(p);
  return n >= pn && memcmp(s, p, pn) == 0;
}

static int str_is(const json_val *v, const char *s) {
  size_t n = strlen(s);
  return v && v->type == JSON_STRING && v->len == n && memcmp(v->u.s, s, n) == 0;
}

/* The requester's name equals s[0..n). */
static int name_is(const char *name, const char *s, size_t n) {
  return name && strlen(name) == n && memcmp(name, s, n) == 0;
}

static int is_true(const json_val *v) { return v && v->type == JSON_BOOL && v->b; }

const char *users_name_of(const char *id, size_t id_len, size_t *name_len) {
  if (!id || !has_prefix(id, id_len, USERS_ID_PREFIX)) return NULL;
  *name_len = id_len - PREFIX_LEN;
  return id + PREFIX_LEN;
}

/* ---- JavaScript semantics --------------------------------------------------- */

/* The number's value as JavaScript reads it: an overflow is +-Infinity, an
 * underflow 0, as JSON.parse gives. */
static int js_num(const json_val *v, double *out) {
  int rc = json_num_double(v->u.s, v->len, out);
  return rc == DV_ERANGE ? 0 : rc;
}

/* `!!v`; v NULL is undefined. */
static int js_truthy(const json_val *v, int *out) {
  if (!v) { *out = 0; return 0; }
  switch (v->type) {
    case JSON_NULL: *out = 0; return 0;
    case JSON_BOOL: *out = v->b; return 0;
    case JSON_STRING: *out = v->len > 0; return 0;
    case JSON_NUMBER: {
      double d;
      int rc = js_num(v, &d);
      if (rc) return rc;
      *out = d != 0;
      return 0;
    }
    default: *out = 1; return 0;
  }
}

/* Number.prototype.toString: the shortest round-trip digits, plain between
 * 1e-7 and 1e21, else d.ddde+-x — jiffy's format without its ".0". */
static int js_num_str(const json_val *v, dv_buf *b) {
  double d;
  int rc = js_num(v, &d);
  if (rc) return rc;
  if (isinf(d)) { buf_puts(b, d < 0 ? "-Infinity" : "Infinity"); return 0; }
  if (d == 0) { buf_putc(b, '0'); return 0; }
  char t[JSON_NUM_BUF];
  size_t n = json_fmt_double(d, t);
  if (n > 2 && !strchr(t, 'e') && t[n - 2] == '.' && t[n - 1] == '0') n -= 2;
  buf_append(b, t, n);
  return 0;
}

/* String(v) (ToString of ToPrimitive): arrays join their elements with ','
 * (null as ""), objects are "[object Object]". */
static int js_str(const json_val *v, dv_buf *b) {
  switch (v->type) {
    case JSON_NULL: buf_puts(b, "null"); return 0;
    case JSON_BOOL: buf_puts(b, v->b ? "true" : "false"); return 0;
    case JSON_NUMBER: return js_num_str(v, b);
    case JSON_STRING: buf_append(b, v->u.s, v->len); return 0;
    case JSON_OBJECT: buf_puts(b, "[object Object]"); return 0;
    default:
      for (size_t i = 0; i < v->len; i++) {
        const json_val *x = v->u.items[i];
        if (i) buf_putc(b, ',');
        if (x->type != JSON_NULL) {
          int rc = js_str(x, b);
          if (rc) return rc;
        }
      }
      return 0;
  }
}

/* `a === b` for two values parsed from different documents (objects and
 * arrays are never identical); NULL is undefined. */
static int js_strict_eq(const json_val *x, const json_val *y, int *out) {
  *out = 0;
  if (!x || !y) { *out = !x && !y; return 0; }
  if (x->type != y->type) return 0;
  switch (x->type) {
    case JSON_NULL: *out = 1; return 0;
    case JSON_BOOL: *out = x->b == y->b; return 0;
    case JSON_STRING: *out = x->len == y->len && !memcmp(x->u.s, y->u.s, x->len); return 0;
    case JSON_NUMBER: {
      double a, b;
      int rc = js_num(x, &a);
      if (!rc) rc = js_num(y, &b);
      if (!rc) *out = a == b;
      return rc;
    }
    default: return 0;
  }
}

static int js_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* ToNumber(string): blanks trimmed, "" is 0, decimal literals, Infinity,
 * 0x/0o/0b integers; anything else NaN. */
static double js_str_num(const char *s, size_t n) {
  while (n && js_space(*s)) s++, n--;
  while (n && js_space(s[n - 1])) n--;
  if (!n) return 0;
  char buf[400];
  if (n >= sizeof buf) return NAN;
  memcpy(buf, s, n);
  buf[n] = 0;
  if (n > 2 && buf[0] == '0' && strchr("xXoObB", buf[1])) {
    int base = (buf[1] == 'x' || buf[1] == 'X') ? 16 : (buf[1] == 'o' || buf[1] == 'O') ? 8 : 2;
    double d = 0;
    for (size_t i = 2; i < n; i++) {
      int c = buf[i], dv = c >= '0' && c <= '9' ? c - '0'
                           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99;
      if (dv >= base) return NAN;
      d = d * base + dv;
    }
    return d;
  }
  const char *p = buf;
  int neg = 0;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  if (!strcmp(p, "Infinity")) return neg ? -INFINITY : INFINITY;
  /* StrDecimalLiteral: digits [. digits] | . digits, then [eE][+-]digits */
  const char *q = p;
  size_t di = 0, df = 0;
  while (*q >= '0' && *q <= '9') q++, di++;
  if (*q == '.') {
    q++;
    while (*q >= '0' && *q <= '9') q++, df++;
  }
  if (!di && !df) return NAN;
  if (*q == 'e' || *q == 'E') {
    q++;
    if (*q == '+' || *q == '-') q++;
    if (!(*q >= '0' && *q <= '9')) return NAN;
    while (*q >= '0' && *q <= '9') q++;
  }
  if (*q) return NAN;
  return strtod(buf, NULL);
}

/* `name == v`, name being userCtx.name (NULL is null). */
static int js_loose_eq_name(const char *name, const json_val *v, int *out) {
  *out = 0;
  if (!v || v->type == JSON_NULL) { *out = !name; return 0; }
  if (!name) return 0;
  size_t n = strlen(name);
  switch (v->type) {
    case JSON_STRING: *out = name_is(name, v->u.s, v->len); return 0;
    case JSON_BOOL: *out = js_str_num(name, n) == (v->b ? 1.0 : 0.0); return 0;
    case JSON_NUMBER: {
      double d;
      int rc = js_num(v, &d);
      if (!rc) *out = js_str_num(name, n) == d;
      return rc;
    }
    default: {
      dv_buf b = DV_BUF_INIT;
      int rc = js_str(v, &b);
      if (!rc) rc = buf_error(&b);
      if (!rc) *out = name_is(name, b.p ? (const char *)b.p : "", b.len);
      buf_free(&b);
      return rc;
    }
  }
}

/* ---- Erlang's ~p, for couch_passwords' messages ----------------------------- */

/* What jiffy decodes a JSON value into, printed as io_lib:format("~p")
 * prints it: null/true/false atoms, integers, floats in Erlang's shortest
 * form, strings as <<"...">> binaries, arrays as lists (a list of
 * printable character codes prints as "..."), objects as {[{K,V},...]}.
 * Long terms are not line-broken as ~p would past 80 columns. */

/* Latin-1 printable, as io_lib:printable_latin1_list. */
static int erl_printable(long c) {
  return (c >= 32 && c <= 126) || (c >= 160 && c <= 255) || (c >= 8 && c <= 13) || c == 27;
}

static void erl_char(dv_buf *b, unsigned c) {
  static const char esc[] = {'b', 't', 'n', 'v', 'f', 'r'}; /* 8..13 */
  if (c == '"' || c == '\\') { buf_putc(b, '\\'); buf_putc(b, (uint8_t)c); }
  else if (c >= 8 && c <= 13) { buf_putc(b, '\\'); buf_putc(b, (uint8_t)esc[c - 8]); }
  else if (c == 27) buf_puts(b, "\\e");
  else buf_putc(b, (uint8_t)c); /* a Latin-1 code: the byte, as list_to_binary makes it */
}

static void erl_binary(dv_buf *b, const char *s, size_t n) {
  size_t i;
  for (i = 0; i < n && erl_printable((uint8_t)s[i]); i++) {}
  buf_puts(b, "<<");
  if (n && i == n) {
    buf_putc(b, '"');
    for (i = 0; i < n; i++) erl_char(b, (uint8_t)s[i]);
    buf_putc(b, '"');
  } else {
    for (i = 0; i < n; i++) buf_printf(b, "%s%u", i ? "," : "", (unsigned)(uint8_t)s[i]);
  }
  buf_puts(b, ">>");
}

/* io_lib_format:fwrite_g: shortest digits; plain unless the exponent form
 * is shorter; always a '.' and a digit after it. */
static void erl_float(dv_buf *b, double d) {
  char t[JSON_NUM_BUF], dig[JSON_NUM_BUF];
  size_t n = json_fmt_double(d, t);
  if (d == 0) { buf_puts(b, signbit(d) ? "-0.0" : "0.0"); return; }
  /* Digits and decimal point position of jiffy's text. */
  const char *p = t;
  int nd = 0, place = 0, seen_dot = 0, lead = 1;
  if (*p == '-') { buf_putc(b, '-'); p++; }
  for (; p < t + n && *p != 'e'; p++) {
    if (*p == '.') { seen_dot = 1; continue; }
    if (lead && *p == '0') { if (seen_dot) place--; continue; }
    lead = 0;
    dig[nd++] = *p;
    if (!seen_dot) place++;
  }
  if (p < t + n) place += atoi(p + 1);
  while (nd > 1 && dig[nd - 1] == '0') nd--;
  dig[nd] = 0;
  int exp = place - nd; /* value = digits * 10^exp */
  char el[16];
  int ecost = snprintf(el, sizeof el, "%d", exp) + 2;
  int plain;
  if (place <= 0) plain = -place <= ecost;
  else if (place >= nd) plain = exp <= ecost;
  else plain = 1;
  if (plain) {
    if (place <= 0) {
      buf_puts(b, "0.");
      for (int i = 0; i < -place; i++) buf_putc(b, '0');
      buf_puts(b, dig);
    } else if (place >= nd) {
      buf_puts(b, dig);
      for (int i = 0; i < exp; i++) buf_putc(b, '0');
      buf_puts(b, ".0");
    } else {
      buf_append(b, dig, (size_t)place);
      buf_putc(b, '.');
      buf_puts(b, dig + place);
    }
  } else {
    buf_putc(b, (uint8_t)dig[0]);
    buf_putc(b, '.');
    buf_puts(b, nd > 1 ? dig + 1 : "0");
    buf_printf(b, "e%d", place - 1);
  }
}

static int erl_p(dv_buf *b, const json_val *v) {
  switch (v->type) {
    case JSON_NULL: buf_puts(b, "null"); return 0;
    case JSON_BOOL: buf_puts(b, v->b ? "true" : "false"); return 0;
    case JSON_STRING: erl_binary(b, v->u.s, v->len); return 0;
    case JSON_NUMBER:
      if (v->num == JSON_NUM_DOUBLE) {
        double d;
        int rc = js_num(v, &d);
        if (rc) return rc;
        erl_float(b, d);
      } else if (v->len == 2 && !memcmp(v->u.s, "-0", 2)) {
        buf_putc(b, '0'); /* jiffy's integer 0 */
      } else {
        buf_append(b, v->u.s, v->len);
      }
      return 0;
    case JSON_ARRAY: {
      int str = v->len > 0;
      for (size_t i = 0; str && i < v->len; i++) {
        const json_val *x = v->u.items[i];
        int64_t c;
        str = x->type == JSON_NUMBER && x->num == JSON_NUM_INT64 &&
              !json_num_int64(x->u.s, x->len, &c) && erl_printable(c);
      }
      if (str) {
        buf_putc(b, '"');
        for (size_t i = 0; i < v->len; i++) {
          int64_t c = 0;
          if (json_num_int64(v->u.items[i]->u.s, v->u.items[i]->len, &c)) return DV_EINTERNAL;
          erl_char(b, (unsigned)c);
        }
        buf_putc(b, '"');
        return 0;
      }
      buf_putc(b, '[');
      for (size_t i = 0; i < v->len; i++) {
        if (i) buf_putc(b, ',');
        int rc = erl_p(b, v->u.items[i]);
        if (rc) return rc;
      }
      buf_putc(b, ']');
      return 0;
    }
    default:
      buf_puts(b, "{[");
      for (size_t i = 0; i < v->len; i++) {
        buf_puts(b, i ? ",{" : "{");
        erl_binary(b, v->u.members[i].key, v->u.members[i].klen);
        buf_putc(b, ',');
        int rc = erl_p(b, v->u.members[i].val);
        if (rc) return rc;
        buf_putc(b, '}');
      }
      buf_puts(b, "]}");
      return 0;
  }
}

/* 403 "<what> value of '<~p of v>' is invalid." */
static int invalid_value(dv_arena *a, const char **why, const char *what, const json_val *v) {
  dv_buf b = DV_BUF_INIT;
  buf_printf(&b, "%s value of '", what);
  int rc = erl_p(&b, v);
  buf_puts(&b, "' is invalid.");
  const char *msg = rc ? NULL : buf_to_arena(a, &b);
  buf_free(&b);
  if (!msg) return fail(why, rc ? rc : DV_ENOMEM);
  return forbid(why, msg);
}

/* ---- the _design/_auth validate_doc_update ---------------------------------- */

static int cmp_str(const void *x, const void *y) {
  const json_val *a = *(const json_val *const *)x, *b = *(const json_val *const *)y;
  size_t n = a->len < b->len ? a->len : b->len;
  int c = memcmp(a->u.s, b->u.s, n);
  return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* The roles of the old and new documents hold the same strings, as many
 * times each (the function sorts both and compares them pairwise; a
 * non-string in the old roles never equals the new roles' strings). */
static int same_roles(dv_arena *a, const json_val *old_roles, const json_val *new_roles, int *out) {
  size_t n = new_roles->len;
  *out = 0;
  if (old_roles->len != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (old_roles->u.items[i]->type != JSON_STRING) return 0;
  if (!n) { *out = 1; return 0; }
  json_val **x = arena_alloc(a, 2 * n * sizeof *x);
  if (!x) return DV_ENOMEM;
  memcpy(x, old_roles->u.items, n * sizeof *x);
  memcpy(x + n, new_roles->u.items, n * sizeof *x);
  qsort(x, n, sizeof *x, cmp_str);
  qsort(x + n, n, sizeof *x, cmp_str);
  for (size_t i = 0; i < n; i++)
    if (cmp_str(&x[i], &x[n + i])) return 0;
  *out = 1;
  return 0;
}

/* AUTH_DB_DOC_VALIDATE_FUNCTION(newDoc, oldDoc, userCtx, secObj), step by
 * step; nd is the document as CouchDB hands it over (after before_doc_update
 * rewrote the password), id its _id. */
static int auth_validate(dv_arena *a, const users_ctx *u, const char *id, size_t id_len,
                         const json_val *nd, const json_val *od, const char **why) {
  int rc, t;
  if (is_true(json_obj_getz(nd, "_deleted"))) {
    /* allow deletes by admins and matching users without checking the rest */
    if (u->is_admin) return 0;
    if (!od) return crash(why, "can't access property \"name\", oldDoc is null");
    if ((rc = js_loose_eq_name(u->name, json_obj_getz(od, "name"), &t))) return fail(why, rc);
    if (t) return 0;
    return forbid(why, "Only admins may delete other user docs.");
  }

  if (!str_is(json_obj_getz(nd, "type"), "user")) return forbid(why, "doc.type must be user");

  const json_val *name = json_obj_getz(nd, "name");
  if ((rc = js_truthy(name, &t))) return fail(why, rc);
  if (!t) return forbid(why, "doc.name is required");

  const json_val *roles = json_obj_getz(nd, "roles");
  if ((rc = js_truthy(roles, &t))) return fail(why, rc);
  if (!t) return forbid(why, "doc.roles must exist");
  if (roles->type != JSON_ARRAY) return forbid(why, "doc.roles must be an array");
  for (size_t i = 0; i < roles->len; i++)
    if (roles->u.items[i]->type != JSON_STRING)
      return forbid(why, "doc.roles can only contain strings");

  {
    dv_buf b = DV_BUF_INIT;
    buf_puts(&b, USERS_ID_PREFIX);
    rc = js_str(name, &b);
    if (!rc) rc = buf_error(&b);
    t = !rc && b.len == id_len && !memcmp(b.p, id, id_len);
    buf_free(&b);
    if (rc) return fail(why, rc);
    if (!t) return forbid(why, "Doc ID must be of the form org.couchdb.user:name");
  }

  if (od) { /* validate all updates */
    if ((rc = js_strict_eq(json_obj_getz(od, "name"), name, &t))) return fail(why, rc);
    if (!t) return forbid(why, "Usernames can not be changed.");
  }

  const json_val *sha = json_obj_getz(nd, "password_sha");
  if ((rc = js_truthy(sha, &t))) return fail(why, rc);
  if (t) {
    if ((rc = js_truthy(json_obj_getz(nd, "salt"), &t))) return fail(why, rc);
    if (!t)
      return forbid(why, "Users with password_sha must have a salt."
                         "See /_utils/script/couch.js for example code.");
  }

  const json_val *scheme = json_obj_getz(nd, "password_scheme");
  if ((rc = js_truthy(scheme, &t))) return fail(why, rc);
  if (t && !str_is(scheme, "simple") && !str_is(scheme, "pbkdf2") && !str_is(scheme, "bcrypt")) {
    dv_buf b = DV_BUF_INIT;
    buf_puts(&b, "Password scheme `");
    rc = js_str(scheme, &b);
    buf_puts(&b, "` not supported.");
    const char *msg = rc ? NULL : buf_to_arena(a, &b);
    buf_free(&b);
    if (!msg) return fail(why, rc ? rc : DV_ENOMEM);
    return forbid(why, msg);
  }
  if (str_is(scheme, "pbkdf2")) {
    const json_val *it = json_obj_getz(nd, "iterations"), *dk = json_obj_getz(nd, "derived_key");
    if (!it || it->type != JSON_NUMBER) return forbid(why, "iterations must be a number.");
    if (!dk || dk->type != JSON_STRING) return forbid(why, "derived_key must be a string.");
  }

  if (!u->is_admin) { /* is_server_or_database_admin: the caller folded secObj into is_admin */
    if (od) { /* validate non-admin updates */
      if (!(name->type == JSON_STRING && name_is(u->name, name->u.s, name->len)))
        return forbid(why, "You may only update your own user document.");
      /* validate role updates: (oldDoc.roles || []).sort() vs newDoc.roles.sort() */
      static const json_val none = {.type = JSON_ARRAY};
      const json_val *old_roles = json_obj_getz(od, "roles");
      if ((rc = js_truthy(old_roles, &t))) return fail(why, rc);
      if (!t) old_roles = &none;
      if (old_roles->type != JSON_ARRAY)
        return crash(why, "(oldDoc.roles || []).sort is not a function");
      if ((rc = same_roles(a, old_roles, roles, &t))) return fail(why, rc);
      if (!t) return forbid(why, "Only _admin may edit roles");
    } else if (roles->len > 0) {
      return forbid(why, "Only _admin may set roles");
    }
  }

  /* no system roles in users db */
  for (size_t i = 0; i < roles->len; i++) {
    const json_val *r = roles->u.items[i];
    if (!str_is(r, "_metrics") && r->len > 0 && r->u.s[0] == '_')
      return forbid(why, "No system roles (starting with underscore) in users db.");
  }

  /* no system names as names: newDoc.name[0] === '_' */
  const json_val *first = name->type == JSON_STRING ? NULL
                          : name->type == JSON_ARRAY ? json_arr_get(name, 0)
                          : json_obj_getz(name, "0");
  if (name->type == JSON_STRING ? name->u.s[0] == '_' : str_is(first, "_"))
    return forbid(why, "Username may not start with underscore.");

  /* newDoc.name.indexOf(':') >= 0 */
#define COLON "Character `:` is not allowed in usernames."
  if (name->type == JSON_STRING) {
    if (memchr(name->u.s, ':', name->len)) return forbid(why, COLON);
  } else if (name->type == JSON_ARRAY) {
    for (size_t i = 0; i < name->len; i++)
      if (str_is(name->u.items[i], ":")) return forbid(why, COLON);
  } else {
    return crash(why, "newDoc.name.indexOf is not a function");
  }
#undef COLON
  return 0;
}

/* ---- before_doc_update's password rewrite ----------------------------------- */

/* Members save_doc drops before adding fresh credentials. */
static int credential_key(const json_member *m) {
  static const char *const keys[] = {"derived_key", "iterations", "password", "password_scheme",
                                     "password_sha", "preserve_salt", "pbkdf2_prf", "salt"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (m->klen == strlen(keys[i]) && !memcmp(m->key, keys[i], m->klen)) return 1;
  return 0;
}

/* doc's "_" members, then the credentials (values filled in later; the
 * rules look only at their types), then its other members minus the old
 * credentials: CouchDB's [{password_scheme,..},{pbkdf2_prf,..},{salt,..},
 * {iterations,..},{derived_key,..} | Body0] under _id and _rev. */
static json_val *credentials_doc(dv_arena *a, const json_val *doc, const char *prf_name,
                                 long iterations, const json_val *salt) {
  json_val *o = json_new_object(a);
  if (!o) return NULL;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < doc->len; i++) {
      const json_member *m = &doc->u.members[i];
      int meta = m->klen > 0 && m->key[0] == '_';
      if (pass == 0 ? !meta : (meta || credential_key(m))) continue;
      if (json_obj_set(a, o, m->key, m->klen, m->val)) return NULL;
    }
    if (pass == 0 &&
        (json_obj_setz(a, o, "password_scheme", json_new_stringz(a, "pbkdf2")) ||
         json_obj_setz(a, o, "pbkdf2_prf", json_new_stringz(a, prf_name)) ||
         json_obj_setz(a, o, "salt", salt ? (json_val *)salt : json_new_stringz(a, "")) ||
         json_obj_setz(a, o, "iterations", json_new_int(a, iterations)) ||
         json_obj_setz(a, o, "derived_key", json_new_stringz(a, ""))))
      return NULL;
  }
  return o;
}

/* Hash pw (with the given salt, or a fresh one) into o's salt and
 * derived_key. */
static int fill_credentials(dv_arena *a, json_val *o, const json_val *pw, const json_val *salt,
                            int prf, long iterations) {
  char key[2 * CR_MAX_HASH_LEN + 1], fresh[CR_SALT_HEX_LEN + 1];
  int rc;
  if (!salt && !memchr(pw->u.s, 0, pw->len)) {
    /* the common case: a fresh salt, a password that is a C string */
    char *p = arena_strndup(a, pw->u.s, pw->len);
    if (!p) return DV_ENOMEM;
    rc = cr_user_hash(p, prf, iterations, key, fresh);
    memset(p, 0, pw->len);
    if (rc) return rc;
  } else {
    /* preserve_salt, or a password with a NUL byte (CouchDB hashes all of
     * its bytes; a C string would stop at the NUL) */
    uint8_t dk[CR_MAX_HASH_LEN];
    size_t dn = cr_hash_len(prf);
    const char *s = salt ? salt->u.s : fresh;
    size_t sn = salt ? salt->len : CR_SALT_HEX_LEN;
    if (!salt) cr_random_hex(fresh, CR_SALT_HEX_LEN / 2);
    rc = cr_pbkdf2(prf, pw->u.s, pw->len, (const uint8_t *)s, sn, iterations, dk, dn);
    if (rc) return rc;
    cr_hex(dk, dn, key);
  }
  if (!salt && json_obj_setz(a, o, "salt", json_new_stringz(a, fresh))) return DV_ENOMEM;
  return json_obj_setz(a, o, "derived_key", json_new_stringz(a, key));
}

/* ---- the checks ------------------------------------------------------------- */

/* What check_write does: all of it (users_check_write), the checks alone
 * (users_validate, the store's validator), or only before_doc_update's
 * password rewrite when it would pass (users_before_write). */
enum { CW_ALL, CW_CHECK, CW_PREPARE };

static int check_write(dv_arena *a, const users_ctx *u, const char *id, size_t id_len, const json_val *doc,
                       const json_val *old, const char *prf_name, long iterations, int mode, json_val **out,
                       const char **why) {
  int rc;
  *why = NULL;
  if (!doc || doc->type != JSON_OBJECT) return fail(why, DV_EINVAL);
  if (has_prefix(id, id_len, "_local/")) { /* neither hook runs for _local docs */
    *out = (json_val *)doc;
    return 0;
  }

  /* before_doc_update: admins, the owner and anonymous signups go on */
  size_t nlen = 0;
  const char *dname = users_name_of(id, id_len, &nlen);
  if (!u->is_admin && u->name && !(dname && name_is(u->name, dname, nlen)))
    return mode == CW_PREPARE ? (*out = (json_val *)doc, 0) : refuse(why, DV_ENOT_FOUND, "missing");

  /* save_doc: a "password" that is not null becomes pbkdf2 credentials */
  const json_val *pw = json_obj_getz(doc, "password"), *salt = NULL;
  json_val *creds = NULL;
  int prf = -1;
  if (pw && pw->type != JSON_NULL) {
    if (!prf_name) prf_name = "sha256";
    prf = cr_prf_by_name(prf_name);
    if (prf < 0 || !cr_iterations_valid(iterations))
      return forbid(why, "Server cannot hash passwords at this time.");
    if (is_true(json_obj_getz(doc, "preserve_salt"))) salt = json_obj_getz(doc, "salt");
    int salt_ok = !salt || salt->type == JSON_STRING;
    if (pw->type != JSON_STRING && salt_ok) return invalid_value(a, why, "Password", pw);
    if (pw->type == JSON_STRING && !salt_ok) return invalid_value(a, why, "Salt", salt);
    if (pw->type != JSON_STRING) return refuse(why, DV_EVDU_UNKNOWN, "function_clause");
    creds = credentials_doc(a, doc, prf_name, iterations, salt);
    if (!creds) return fail(why, DV_ENOMEM);
  }
  if (mode == CW_PREPARE) { /* the rules run later, on the rewritten document */
    if (creds && (rc = fill_credentials(a, creds, pw, salt, prf, iterations))) return fail(why, rc);
    *out = creds ? creds : (json_val *)doc;
    return 0;
  }

  /* validate_doc_update */
  if (has_prefix(id, id_len, "_design/")) {
    if (!u->is_admin)
      return u->name ? forbid(why, "You are not a db or server admin.")
                     : refuse(why, DV_EUNAUTHORIZED, "You are not a db or server admin.");
  } else if ((rc = auth_validate(a, u, id, id_len, creds ? creds : doc, old, why))) {
    return rc;
  }

  if (creds && mode == CW_ALL && (rc = fill_credentials(a, creds, pw, salt, prf, iterations)))
    return fail(why, rc);
  *out = creds && mode == CW_ALL ? creds : (json_val *)doc;
  return 0;
}

int users_check_write(dv_arena *a, const users_ctx *u, const char *id, size_t id_len, const json_val *doc,
                      const json_val *old, const char *prf_name, long iterations, json_val **out,
                      const char **why) {
  return check_write(a, u, id, id_len, doc, old, prf_name, iterations, CW_ALL, out, why);
}

int users_validate(dv_arena *a, const users_ctx *u, const char *id, size_t id_len, const json_val *doc,
                   const json_val *old, const char *prf_name, long iterations, const char **why) {
  json_val *out;
  return check_write(a, u, id, id_len, doc, old, prf_name, iterations, CW_CHECK, &out, why);
}

int users_before_write(dv_arena *a, const users_ctx *u, const char *id, size_t id_len, const json_val *doc,
                       const char *prf_name, long iterations, json_val **out) {
  const char *why;
  int rc = check_write(a, u, id, id_len, doc, NULL, prf_name, iterations, CW_PREPARE, out, &why);
  if (refused(rc)) { /* the validator answers, in the store's edit */
    *out = (json_val *)doc;
    return 0;
  }
  return rc;
}

/* One name of [chttpd_auth] public_fields equals key: the value is split as
 * re:split(V, "\\s*,\\s*") splits it (blanks go only where they touch a
 * comma; an empty piece names the empty key). */
static int public_field(const char *fields, const char *key, size_t klen) {
  const char *p = fields;
  for (int first = 1;; first = 0) {
    const char *c = strchr(p, ','), *end = c ? c : p + strlen(p);
    const char *s = p;
    if (!first)
      while (s < end && js_space(*s)) s++;
    if (c)
      while (end > s && js_space(end[-1])) end--;
    if ((size_t)(end - s) == klen && !memcmp(s, key, klen)) return 1;
    if (!c) return 0;
    p = c + 1;
  }
}

int users_check_read(dv_arena *a, const users_ctx *u, const char *id, size_t id_len,
                     const json_val *doc, const char *public_fields, json_val **out,
                     const char **why) {
  *why = NULL;
  if (!doc || doc->type != JSON_OBJECT) return fail(why, DV_EINVAL);
  if (has_prefix(id, id_len, "_local/")) {
    *out = (json_val *)doc;
    return 0;
  }
  if (has_prefix(id, id_len, "_design/") && !u->is_admin)
    return forbid(why, "Only administrators can view design docs in the users database.");
  size_t nlen = 0;
  const char *dname = users_name_of(id, id_len, &nlen);
  if (u->is_admin || (dname && name_is(u->name, dname, nlen))) {
    *out = (json_val *)doc;
    return 0;
  }

  /* strip_non_public_fields: the body keeps its public members; _id, _rev
   * and the other "_" members are not body and stay */
  if (!public_fields) public_fields = "";
  json_val *o = json_new_object(a);
  if (!o) return fail(why, DV_ENOMEM);
  size_t kept = 0;
  for (size_t i = 0; i < doc->len; i++) {
    const json_member *m = &doc->u.members[i];
    int meta = m->klen > 0 && m->key[0] == '_';
    if (!meta && !public_field(public_fields, m->key, m->klen)) continue;
    if (json_obj_set(a, o, m->key, m->klen, m->val)) return fail(why, DV_ENOMEM);
    kept += !meta;
  }
  if (!kept) return refuse(why, DV_ENOT_FOUND, "missing");
  *out = o;
  return 0;
}
