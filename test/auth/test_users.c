/* test_users.c — the rules of the _users database (src/auth/users.c):
 * who may write and read which document, every refusal of the _auth
 * validate function with its exact code and reason (the code's row in
 * util/err.h gives CouchDB's status and error), the JavaScript corner cases of
 * malformed documents, the password -> pbkdf2 rewrite (checked by deriving
 * the key again), public_fields stripping, design and _local documents,
 * and allocation failure.
 *
 * Requesters: ADMIN (server or db admin), BOB and ALICE (plain users),
 * ANON (no name). JSON is written with ' for " to stay readable.
 */
#include "test.h"
#include "auth/crypto.h"
#include "auth/users.h"
#include "json/json.h"
#include "util/alloc.h"

static dv_arena A;

static const users_ctx ADMIN = {"root", 1};
static const users_ctx BOB = {"bob", 0};
static const users_ctx ALICE = {"alice", 0};
static const users_ctx ANON = {NULL, 0};

#define BOB_ID "org.couchdb.user:bob"
#define ALICE_ID "org.couchdb.user:alice"

/* bob's new document and his stored one (roles set by an admin). */
#define BOB_NEW "{'_id':'org.couchdb.user:bob','type':'user','name':'bob','roles':[]}"
#define BOB_OLD                                                                                  \
  "{'_id':'org.couchdb.user:bob','_rev':'1-a','type':'user','name':'bob','roles':['a','b']," \
  "'password_scheme':'pbkdf2','pbkdf2_prf':'sha256','iterations':10,'derived_key':'00','salt':'11'}"
#define BOB_UPD                                                                                  \
  "{'_id':'org.couchdb.user:bob','_rev':'1-a','type':'user','name':'bob','roles':['b','a']," \
  "'password_scheme':'pbkdf2','pbkdf2_prf':'sha256','iterations':10,'derived_key':'00','salt':'11'}"
#define DEL "{'_deleted':true}"

static const char *who(const users_ctx *u) {
  return u->is_admin ? "admin" : u->name ? u->name : "anonymous";
}

/* JSON text, ' standing for ", parsed into A; NULL stays NULL. */
static json_val *J(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s);
  char *t = arena_strndup(&A, s, n);
  ASSERT(t);
  for (size_t i = 0; i < n; i++)
    if (t[i] == '\'') t[i] = '"';
  json_val *v = NULL;
  ASSERTF(!json_parse(&A, t, n, NULL, &v, NULL), "bad test JSON: %s", s);
  return v;
}

/* Compact JSON of v, ' for ", in A. */
static const char *S(const json_val *v) {
  dv_buf b = DV_BUF_INIT;
  ASSERT_OK(json_write(&b, v));
  char *s = arena_strndup(&A, (const char *)b.p, b.len);
  buf_free(&b);
  for (char *p = s; *p; p++)
    if (*p == '"') *p = '\'';
  return s;
}

static const char *str(const json_val *o, const char *k) {
  const json_val *v = json_obj_getz(o, k);
  ASSERTF(v && v->type == JSON_STRING, "member %s is not a string", k);
  return arena_strndup(&A, v->u.s, v->len);
}

/* Every write is checked twice: by users_check_write, and as the store's
 * hooks run it — users_before_write before the write, users_validate on its
 * result in the edit — which must answer the same. */
static int write_as(const users_ctx *u, const char *id, const char *doc, const char *old,
                    json_val **out, const char **why) {
  *why = NULL;
  int rc = users_check_write(&A, u, id, strlen(id), J(doc), J(old), "sha256", 10, out, why);
  json_val *pre = NULL;
  const char *why2 = NULL;
  int rc2 = users_before_write(&A, u, id, strlen(id), J(doc), "sha256", 10, &pre);
  if (!rc2) rc2 = users_validate(&A, u, id, strlen(id), pre, J(old), "sha256", 10, &why2);
  ASSERTF(rc == rc2 && (!*why) == (!why2) && (!*why || !strcmp(*why, why2)),
          "write %s %s as %s: users_check_write %s \"%s\", split %s \"%s\"", id, doc, who(u),
          dv_err_name(rc), *why ? *why : "-", dv_err_name(rc2), why2 ? why2 : "-");
  return rc;
}

/* A refusal: one of the codes store/hooks.h takes from a validator (the
 * store's own refusal() in hooks.c), so users_validate answers there. */
static int is_refusal(int rc) {
  return rc == DV_EFORBIDDEN || rc == DV_EUNAUTHORIZED || rc == DV_ENOT_FOUND || rc == DV_EVDU_TYPEERROR ||
         rc == DV_EVDU_UNKNOWN;
}

/* The write is accepted; returns *out. */
#define OK_W(u, id, doc, old) ok_w(__LINE__, u, id, doc, old)
static json_val *ok_w(int line, const users_ctx *u, const char *id, const char *doc,
                      const char *old) {
  json_val *out = NULL;
  const char *why;
  int rc = write_as(u, id, doc, old, &out, &why);
  if (rc || !out || why)
    test_fail_(__FILE__, line, "write %s as %s: %s \"%s\"", id, who(u), dv_err_name(rc), why ? why : "-");
  return out;
}

/* The write is refused with exactly this code and reason, and *out is
 * untouched. */
#define NO_W(u, id, doc, old, code, reason) no_w(__LINE__, u, id, doc, old, code, reason)
static void no_w(int line, const users_ctx *u, const char *id, const char *doc, const char *old,
                 int code, const char *reason) {
  json_val *out = (json_val *)&out;
  const char *why;
  int rc = write_as(u, id, doc, old, &out, &why);
  if (!is_refusal(rc) || rc != code || !why || strcmp(why, reason) || out != (json_val *)&out)
    test_fail_(__FILE__, line, "write %s %s as %s: %s \"%s\"; want %s \"%s\"", id, doc, who(u),
               dv_err_name(rc), why ? why : "-", dv_err_name(code), reason);
}
#define FORBID(u, id, doc, old, reason) NO_W(u, id, doc, old, DV_EFORBIDDEN, reason)
#define MISSING(u, id, doc, old) NO_W(u, id, doc, old, DV_ENOT_FOUND, "missing")

static int read_as(const users_ctx *u, const char *id, const json_val *doc, const char *pub,
                   json_val **out, const char **why) {
  *why = NULL;
  return users_check_read(&A, u, id, strlen(id), doc, pub, out, why);
}

/* The read succeeds; returns what the requester sees. */
#define OK_R(u, id, doc, pub) ok_r(__LINE__, u, id, doc, pub)
static json_val *ok_r(int line, const users_ctx *u, const char *id, const json_val *doc,
                      const char *pub) {
  json_val *out = NULL;
  const char *why;
  int rc = read_as(u, id, doc, pub, &out, &why);
  if (rc || !out || why)
    test_fail_(__FILE__, line, "read %s as %s: %s \"%s\"", id, who(u), dv_err_name(rc), why ? why : "-");
  return out;
}

#define NO_R(u, id, doc, pub, code, reason) no_r(__LINE__, u, id, doc, pub, code, reason)
static void no_r(int line, const users_ctx *u, const char *id, const json_val *doc,
                 const char *pub, int code, const char *reason) {
  json_val *out = (json_val *)&out;
  const char *why;
  int rc = read_as(u, id, doc, pub, &out, &why);
  if (!is_refusal(rc) || rc != code || !why || strcmp(why, reason) || out != (json_val *)&out)
    test_fail_(__FILE__, line, "read %s as %s: %s \"%s\"; want %s \"%s\"", id, who(u),
               dv_err_name(rc), why ? why : "-", dv_err_name(code), reason);
}

/* ---- the answers ------------------------------------------------------------ */

/* The refusals are codes whose rows of util/err.h answer as CouchDB's
 * couch_users_db and _auth function do. */
TEST(users_refusal_rows) {
  static const struct {
    int rc;
    int status;
    const char *error;
  } t[] = {
      {DV_ENOT_FOUND, 404, "not_found"},        {DV_EFORBIDDEN, 403, "forbidden"},
      {DV_EUNAUTHORIZED, 401, "unauthorized"},  {DV_EVDU_TYPEERROR, 500, "TypeError"},
      {DV_EVDU_UNKNOWN, 500, "unknown_error"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    ASSERT_EQ(dv_err_http(t[i].rc), t[i].status);
    ASSERT_STR_EQ(dv_err_couch(t[i].rc), t[i].error);
  }
}

/* ---- ids ------------------------------------------------------------------ */

TEST(users_name_of) {
  size_t n = 99;
  const char *id = "org.couchdb.user:bob";
  ASSERT(users_name_of(id, strlen(id), &n) == id + 17);
  ASSERT_EQ(n, 3);
  ASSERT(users_name_of("org.couchdb.user:", 17, &n) != NULL);
  ASSERT_EQ(n, 0);
  n = 99;
  ASSERT(users_name_of("org.couchdb.user", 16, &n) == NULL);
  ASSERT(users_name_of("org.couchdb.usex:bob", 20, &n) == NULL);
  ASSERT(users_name_of("_design/_auth", 13, &n) == NULL);
  ASSERT(users_name_of("org.couchdb.user:bob", 10, &n) == NULL); /* the length rules */
  ASSERT_EQ(n, 99);
  /* the name may hold anything after the prefix, a NUL too */
  ASSERT(users_name_of("org.couchdb.user:a\0b", 20, &n) != NULL);
  ASSERT_EQ(n, 3);
}

/* ---- who may write --------------------------------------------------------- */

TEST(users_signup_anonymous) {
  arena_init(&A, 0);
  /* an anonymous requester may create an account, with no roles */
  json_val *doc = J(BOB_NEW), *out = NULL;
  const char *why;
  ASSERT_OK(
      users_check_write(&A, &ANON, BOB_ID, strlen(BOB_ID), doc, NULL, "sha256", 10, &out, &why));
  ASSERT(out == doc); /* no password: the document as sent */
  FORBID(&ANON, BOB_ID, "{'type':'user','name':'bob','roles':['x']}", NULL,
         "Only _admin may set roles");
  FORBID(&ANON, BOB_ID, "{'type':'user','name':'bob','roles':['_admin']}", NULL,
         "Only _admin may set roles");
  /* not an update of someone's account (a conflict is the store's business;
   * here the old document is passed) */
  FORBID(&ANON, BOB_ID, BOB_UPD, BOB_OLD, "You may only update your own user document.");
  FORBID(&ANON, BOB_ID, DEL, BOB_OLD, "Only admins may delete other user docs.");
  /* ids: only org.couchdb.user:NAME */
  FORBID(&ANON, "org.couchdb.user:bobby", BOB_NEW, NULL,
         "Doc ID must be of the form org.couchdb.user:name");
  FORBID(&ANON, "bob", BOB_NEW, NULL, "Doc ID must be of the form org.couchdb.user:name");
  /* the other rules apply as to everyone */
  FORBID(&ANON, "org.couchdb.user:_bob", "{'type':'user','name':'_bob','roles':[]}", NULL,
         "Username may not start with underscore.");
  FORBID(&ANON, BOB_ID, "{'type':'person','name':'bob','roles':[]}", NULL, "doc.type must be user");
  arena_free(&A);
}

TEST(users_write_own_doc) {
  arena_init(&A, 0);
  /* bob updates his own document: same roles in any order */
  OK_W(&BOB, BOB_ID, BOB_UPD, BOB_OLD);
  OK_W(&BOB, BOB_ID, BOB_UPD, BOB_OLD);
  OK_W(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':['b','a'],'email':'b@x'}", BOB_OLD);
  /* ... but not his roles */
  FORBID(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':['a','b','c']}", BOB_OLD,
         "Only _admin may edit roles");
  FORBID(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':['a']}", BOB_OLD,
         "Only _admin may edit roles");
  FORBID(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':['a','c']}", BOB_OLD,
         "Only _admin may edit roles");
  FORBID(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':['a','a']}", BOB_OLD,
         "Only _admin may edit roles");
  FORBID(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':[]}", BOB_OLD,
         "Only _admin may edit roles");
  /* an old document without roles counts as [] */
  OK_W(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':[]}", "{'type':'user','name':'bob'}");
  FORBID(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':['a']}",
         "{'type':'user','name':'bob','roles':null}", "Only _admin may edit roles");
  /* creating his account while logged in: like a signup, no roles */
  OK_W(&BOB, BOB_ID, BOB_NEW, NULL);
  FORBID(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':['x']}", NULL,
         "Only _admin may set roles");
  /* roles an admin gave him that start with '_' still fail the last rule */
  FORBID(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':['_x']}",
         "{'type':'user','name':'bob','roles':['_x']}",
         "No system roles (starting with underscore) in users db.");
  OK_W(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':['_metrics']}",
       "{'type':'user','name':'bob','roles':['_metrics']}");
  /* he may delete it */
  OK_W(&BOB, BOB_ID, DEL, BOB_OLD);
  OK_W(&BOB, BOB_ID, "{'_deleted':true,'_rev':'1-a','type':'junk'}", BOB_OLD);
  arena_free(&A);
}

TEST(users_write_other_doc) {
  arena_init(&A, 0);
  /* before_doc_update: a plain user touching any document but his own
   * account gets 404 missing, whatever the document says */
  MISSING(&ALICE, BOB_ID, BOB_UPD, BOB_OLD);
  MISSING(&ALICE, BOB_ID, BOB_NEW, NULL);
  MISSING(&ALICE, BOB_ID, DEL, BOB_OLD);
  MISSING(&ALICE, BOB_ID, "{'type':'user','name':'alice','roles':[]}", NULL);
  MISSING(&BOB, "bob", BOB_NEW, NULL);
  MISSING(&BOB, "org.couchdb.user:", BOB_NEW, NULL);
  MISSING(&BOB, "org.couchdb.user:bobby", "{'type':'user','name':'bobby','roles':[]}", NULL);
  MISSING(&BOB, "_design/x", "{'views':{}}", NULL);
  /* the 404 comes before anything else is looked at */
  MISSING(&ALICE, BOB_ID, "{'password':42}", NULL);
  /* a user whose id names him but whose name field differs: the rules */
  FORBID(&BOB, BOB_ID, "{'type':'user','name':'alice','roles':[]}", NULL,
         "Doc ID must be of the form org.couchdb.user:name");
  arena_free(&A);
}

TEST(users_write_admin) {
  arena_init(&A, 0);
  /* admins may create accounts with roles, edit and delete any */
  OK_W(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':['reader','writer']}", NULL);
  OK_W(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':['c']}", BOB_OLD);
  OK_W(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':['_metrics']}", NULL);
  OK_W(&ADMIN, BOB_ID, DEL, BOB_OLD);
  OK_W(&ADMIN, BOB_ID, DEL, NULL);
  /* but the document rules still hold */
  FORBID(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':['_admin']}", NULL,
         "No system roles (starting with underscore) in users db.");
  FORBID(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':['ok','_reader']}", NULL,
         "No system roles (starting with underscore) in users db.");
  FORBID(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':[]}",
         "{'type':'user','name':'robert','roles':[]}", "Usernames can not be changed.");
  FORBID(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':[]}", "{'type':'user','roles':[]}",
         "Usernames can not be changed.");
  FORBID(&ADMIN, BOB_ID, "{'name':'bob','roles':[]}", NULL, "doc.type must be user");
  /* an empty role is not a system role */
  OK_W(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':['']}", NULL);
  arena_free(&A);
}

/* Every refusal of the _auth function, in its order, as an admin. */
TEST(users_validate_reasons) {
  arena_init(&A, 0);
  static const struct {
    const char *doc;
    const char *reason;
  } t[] = {
      {"{'name':'bob','roles':[]}", "doc.type must be user"},
      {"{'type':'User','name':'bob','roles':[]}", "doc.type must be user"},
      {"{'type':['user'],'name':'bob','roles':[]}", "doc.type must be user"},
      {"{'type':null}", "doc.type must be user"},
      {"{'type':'user','roles':[]}", "doc.name is required"},
      {"{'type':'user','name':'','roles':[]}", "doc.name is required"},
      {"{'type':'user','name':null,'roles':[]}", "doc.name is required"},
      {"{'type':'user','name':0,'roles':[]}", "doc.name is required"},
      {"{'type':'user','name':-0.0,'roles':[]}", "doc.name is required"},
      {"{'type':'user','name':false,'roles':[]}", "doc.name is required"},
      {"{'type':'user','name':'bob'}", "doc.roles must exist"},
      {"{'type':'user','name':'bob','roles':null}", "doc.roles must exist"},
      {"{'type':'user','name':'bob','roles':''}", "doc.roles must exist"},
      {"{'type':'user','name':'bob','roles':0}", "doc.roles must exist"},
      {"{'type':'user','name':'bob','roles':false}", "doc.roles must exist"},
      {"{'type':'user','name':'bob','roles':'not an array'}", "doc.roles must be an array"},
      {"{'type':'user','name':'bob','roles':{}}", "doc.roles must be an array"},
      {"{'type':'user','name':'bob','roles':1}", "doc.roles must be an array"},
      {"{'type':'user','name':'bob','roles':true}", "doc.roles must be an array"},
      {"{'type':'user','name':'bob','roles':[12]}", "doc.roles can only contain strings"},
      {"{'type':'user','name':'bob','roles':['a',null]}", "doc.roles can only contain strings"},
      {"{'type':'user','name':'bob','roles':[['a']]}", "doc.roles can only contain strings"},
      {"{'type':'user','name':'bobby','roles':[]}",
       "Doc ID must be of the form org.couchdb.user:name"},
      {"{'type':'user','name':'bob','roles':[],'password_sha':'abc'}",
       "Users with password_sha must have a salt.See /_utils/script/couch.js for example code."},
      {"{'type':'user','name':'bob','roles':[],'password_sha':'abc','salt':''}",
       "Users with password_sha must have a salt.See /_utils/script/couch.js for example code."},
      {"{'type':'user','name':'bob','roles':[],'password_sha':1,'salt':0}",
       "Users with password_sha must have a salt.See /_utils/script/couch.js for example code."},
      {"{'type':'user','name':'bob','roles':[],'password_scheme':'md5'}",
       "Password scheme `md5` not supported."},
      {"{'type':'user','name':'bob','roles':[],'password_scheme':'PBKDF2'}",
       "Password scheme `PBKDF2` not supported."},
      {"{'type':'user','name':'bob','roles':[],'password_scheme':5}",
       "Password scheme `5` not supported."},
      {"{'type':'user','name':'bob','roles':[],'password_scheme':['pbkdf2']}",
       "Password scheme `pbkdf2` not supported."},
      {"{'type':'user','name':'bob','roles':[],'password_scheme':{}}",
       "Password scheme `[object Object]` not supported."},
      {"{'type':'user','name':'bob','roles':[],'password_scheme':'pbkdf2','derived_key':'ab'}",
       "iterations must be a number."},
      {"{'type':'user','name':'bob','roles':[],'password_scheme':'pbkdf2','iterations':'10',"
       "'derived_key':'ab'}",
       "iterations must be a number."},
      {"{'type':'user','name':'bob','roles':[],'password_scheme':'pbkdf2','iterations':10}",
       "derived_key must be a string."},
      {"{'type':'user','name':'bob','roles':[],'password_scheme':'pbkdf2','iterations':10,"
       "'derived_key':12}",
       "derived_key must be a string."},
      {"{'type':'user','name':'bob','roles':['_admin']}",
       "No system roles (starting with underscore) in users db."},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    json_val *out = NULL;
    const char *why;
    int rc = write_as(&ADMIN, BOB_ID, t[i].doc, NULL, &out, &why);
    ASSERTF(rc == DV_EFORBIDDEN && why && !strcmp(why, t[i].reason), "%s: %s \"%s\"; want \"%s\"", t[i].doc,
            dv_err_name(rc), why ? why : "-", t[i].reason);
  }
  /* names, under their own ids */
  FORBID(&ADMIN, "org.couchdb.user:_bob", "{'type':'user','name':'_bob','roles':[]}", NULL,
         "Username may not start with underscore.");
  FORBID(&ADMIN, "org.couchdb.user:_", "{'type':'user','name':'_','roles':[]}", NULL,
         "Username may not start with underscore.");
  FORBID(&ADMIN, "org.couchdb.user:joe:erlang", "{'type':'user','name':'joe:erlang','roles':[]}",
         NULL, "Character `:` is not allowed in usernames.");
  FORBID(&ADMIN, "org.couchdb.user::", "{'type':'user','name':':','roles':[]}", NULL,
         "Character `:` is not allowed in usernames.");
  /* the system-role rule comes before the name rules */
  FORBID(&ADMIN, "org.couchdb.user:_bob", "{'type':'user','name':'_bob','roles':['_x']}", NULL,
         "No system roles (starting with underscore) in users db.");
  /* what passes */
  OK_W(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':[],'password_sha':'','salt':''}", NULL);
  OK_W(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':[],'password_sha':'ab','salt':'s'}",
       NULL);
  OK_W(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':[],'password_scheme':'simple'}", NULL);
  OK_W(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':[],'password_scheme':'bcrypt'}", NULL);
  OK_W(&ADMIN, BOB_ID, "{'type':'user','name':'bob','roles':[],'password_scheme':''}", NULL);
  OK_W(&ADMIN, BOB_ID,
       "{'type':'user','name':'bob','roles':[],'password_scheme':'pbkdf2','iterations':1.5,"
       "'derived_key':''}",
       NULL);
  OK_W(&ADMIN, "org.couchdb.user:b_b", "{'type':'user','name':'b_b','roles':[]}", NULL);
  OK_W(&ADMIN, "org.couchdb.user:jchris@apache.org",
       "{'type':'user','name':'jchris@apache.org','roles':[]}", NULL);
  OK_W(&ADMIN, "org.couchdb.user:\xc3\xa9mile", "{'type':'user','name':'\xc3\xa9mile','roles':[]}",
       NULL);
  arena_free(&A);
}


/* Documents the _auth function reads with JavaScript's rules. */
TEST(users_validate_js_semantics) {
  arena_init(&A, 0);
  /* a name is turned into text for the id check (numbers as JS prints
   * them), and a name that is not a string or an array then makes the
   * function crash on name.indexOf */
  NO_W(&ADMIN, "org.couchdb.user:5", "{'type':'user','name':5,'roles':[]}", NULL, DV_EVDU_TYPEERROR,
       "newDoc.name.indexOf is not a function");
  NO_W(&ADMIN, "org.couchdb.user:100", "{'type':'user','name':100.0,'roles':[]}", NULL, DV_EVDU_TYPEERROR,
       "newDoc.name.indexOf is not a function");
  NO_W(&ADMIN, "org.couchdb.user:1.5", "{'type':'user','name':1.5,'roles':[]}", NULL, DV_EVDU_TYPEERROR,
       "newDoc.name.indexOf is not a function");
  NO_W(&ADMIN, "org.couchdb.user:1e+21", "{'type':'user','name':1e21,'roles':[]}", NULL, DV_EVDU_TYPEERROR,
       "newDoc.name.indexOf is not a function");
  NO_W(&ADMIN, "org.couchdb.user:1e-7", "{'type':'user','name':1e-7,'roles':[]}", NULL, DV_EVDU_TYPEERROR,
       "newDoc.name.indexOf is not a function");
  NO_W(&ADMIN, "org.couchdb.user:true", "{'type':'user','name':true,'roles':[]}", NULL, DV_EVDU_TYPEERROR,
       "newDoc.name.indexOf is not a function");
  NO_W(&ADMIN, "org.couchdb.user:[object Object]", "{'type':'user','name':{'a':1},'roles':[]}",
       NULL, DV_EVDU_TYPEERROR, "newDoc.name.indexOf is not a function");
  FORBID(&ADMIN, "org.couchdb.user:5.0", "{'type':'user','name':5,'roles':[]}", NULL,
         "Doc ID must be of the form org.couchdb.user:name");
  FORBID(&ADMIN, "org.couchdb.user:1e21", "{'type':'user','name':1e21,'roles':[]}", NULL,
         "Doc ID must be of the form org.couchdb.user:name");
  /* an object's "0" member is its name[0] */
  FORBID(&ADMIN, "org.couchdb.user:[object Object]", "{'type':'user','name':{'0':'_'},'roles':[]}",
         NULL, "Username may not start with underscore.");
  /* an array name passes: its text is its elements joined by ',' */
  OK_W(&ADMIN, BOB_ID, "{'type':'user','name':['bob'],'roles':[]}", NULL);
  OK_W(&ADMIN, "org.couchdb.user:a,,1,x,[object Object]",
       "{'type':'user','name':['a',null,1,['x'],{}],'roles':[]}", NULL);
  OK_W(&ADMIN, "org.couchdb.user:_b", "{'type':'user','name':['_b'],'roles':[]}", NULL);
  FORBID(&ADMIN, "org.couchdb.user:_", "{'type':'user','name':['_'],'roles':[]}", NULL,
         "Username may not start with underscore.");
  FORBID(&ADMIN, "org.couchdb.user::", "{'type':'user','name':[':'],'roles':[]}", NULL,
         "Character `:` is not allowed in usernames.");
  OK_W(&ADMIN, "org.couchdb.user:a:b", "{'type':'user','name':['a:b'],'roles':[]}", NULL);
  /* two arrays are never ===: an array name can never be updated */
  FORBID(&ADMIN, BOB_ID, "{'type':'user','name':['bob'],'roles':[]}",
         "{'type':'user','name':['bob'],'roles':[]}", "Usernames can not be changed.");
  /* numbers compare by value */
  NO_W(&ADMIN, "org.couchdb.user:5", "{'type':'user','name':5,'roles':[]}",
       "{'type':'user','name':5.0,'roles':[]}", DV_EVDU_TYPEERROR,
       "newDoc.name.indexOf is not a function");
  FORBID(&ADMIN, "org.couchdb.user:5", "{'type':'user','name':5,'roles':[]}",
         "{'type':'user','name':'5','roles':[]}", "Usernames can not be changed.");
  /* a non-admin's own update: userCtx.name !== newDoc.name is strict */
  const users_ctx five = {"5", 0};
  FORBID(&five, "org.couchdb.user:5", "{'type':'user','name':5,'roles':[]}",
         "{'type':'user','name':5,'roles':[]}", "You may only update your own user document.");
  /* deletes compare userCtx.name == oldDoc.name loosely */
  OK_W(&five, "org.couchdb.user:5", DEL, "{'type':'user','name':5,'roles':[]}");
  const users_ctx five_blank = {" 5\t", 0};
  OK_W(&five_blank, "org.couchdb.user: 5\t", DEL, "{'name':5.0}");
  const users_ctx hex = {"0x10", 0};
  OK_W(&hex, "org.couchdb.user:0x10", DEL, "{'name':16}");
  const users_ctx one = {"1", 0};
  OK_W(&one, "org.couchdb.user:1", DEL, "{'name':true}");
  FORBID(&one, "org.couchdb.user:1", DEL, "{'name':false}",
         "Only admins may delete other user docs.");
  FORBID(&one, "org.couchdb.user:1", DEL, "{'name':'01'}",
         "Only admins may delete other user docs.");
  OK_W(&BOB, BOB_ID, DEL, "{'name':['bob']}");
  FORBID(&BOB, BOB_ID, DEL, "{'name':'Bob'}", "Only admins may delete other user docs.");
  FORBID(&BOB, BOB_ID, DEL, "{'type':'user'}", "Only admins may delete other user docs.");
  /* null == undefined: an anonymous requester may delete a nameless doc */
  OK_W(&ANON, BOB_ID, DEL, "{'type':'user'}");
  OK_W(&ANON, BOB_ID, DEL, "{'name':null}");
  /* only _deleted: true is a delete */
  FORBID(&BOB, BOB_ID, "{'_deleted':false}", BOB_OLD, "doc.type must be user");
  /* the function reads oldDoc.name on a delete: no old document, a crash */
  NO_W(&BOB, BOB_ID, DEL, NULL, DV_EVDU_TYPEERROR,
       "can't access property \"name\", oldDoc is null");
  NO_W(&ANON, BOB_ID, DEL, NULL, DV_EVDU_TYPEERROR,
       "can't access property \"name\", oldDoc is null");
  /* old roles that are not an array cannot be sorted */
  NO_W(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':[]}",
       "{'type':'user','name':'bob','roles':'admin'}", DV_EVDU_TYPEERROR,
       "(oldDoc.roles || []).sort is not a function");
  FORBID(&BOB, BOB_ID, "{'type':'user','name':'bob','roles':['1']}",
         "{'type':'user','name':'bob','roles':[1]}", "Only _admin may edit roles");
  arena_free(&A);
}

/* ---- passwords -------------------------------------------------------------- */

static void check_creds(const json_val *o, const char *prf, size_t keylen, const char *password) {
  ASSERT(json_obj_getz(o, "password") == NULL);
  ASSERT(json_obj_getz(o, "password_sha") == NULL);
  ASSERT(json_obj_getz(o, "preserve_salt") == NULL);
  ASSERT_STR_EQ(str(o, "password_scheme"), "pbkdf2");
  ASSERT_STR_EQ(str(o, "pbkdf2_prf"), prf);
  const json_val *it = json_obj_getz(o, "iterations");
  int64_t n = 0;
  ASSERT(it && it->type == JSON_NUMBER && !json_num_int64(it->u.s, it->len, &n));
  const char *dk = str(o, "derived_key"), *salt = str(o, "salt");
  ASSERT_EQ(strlen(dk), keylen);
  for (const char *p = dk; *p; p++) ASSERT(strchr("0123456789abcdef", *p));
  int ok = 0;
  ASSERT_OK(cr_user_verify("pbkdf2", prf, dk, salt, (long)n, NULL, password, &ok));
  ASSERT(ok);
  ok = 1;
  ASSERT_OK(cr_user_verify("pbkdf2", prf, dk, salt, (long)n, NULL, "not it", &ok));
  ASSERT(!ok);
}

TEST(users_password_hashed) {
  arena_init(&A, 0);
  /* signup with a password */
  json_val *o = OK_W(&ANON, BOB_ID,
                     "{'_id':'org.couchdb.user:bob','type':'user','name':'bob','roles':[],"
                     "'password':'mp3'}",
                     NULL);
  check_creds(o, "sha256", 64, "mp3");
  ASSERT_EQ(strlen(str(o, "salt")), 32);
  for (const char *p = str(o, "salt"); *p; p++) ASSERT(strchr("0123456789abcdef", *p));
  ASSERT_EQ(json_obj_getz(o, "iterations")->len, 2); /* 10 */
  /* CouchDB's member order: _ members, the credentials, the rest */
  ASSERT_EQ(o->len, 9);
  static const char *const order[] = {"_id",        "password_scheme", "pbkdf2_prf",
                                      "salt",       "iterations",      "derived_key",
                                      "type",       "name",            "roles"};
  for (size_t i = 0; i < 9; i++)
    ASSERT_MEM_EQ(o->u.members[i].key, o->u.members[i].klen, order[i], strlen(order[i]));
  /* each write gets a fresh salt */
  json_val *o2 =
      OK_W(&ANON, BOB_ID, "{'type':'user','name':'bob','roles':[],'password':'mp3'}", NULL);
  ASSERT(strcmp(str(o, "salt"), str(o2, "salt")) != 0);
  ASSERT(strcmp(str(o, "derived_key"), str(o2, "derived_key")) != 0);
  /* the owner changes it: the old credentials are replaced, the rest kept */
  o = OK_W(&BOB, BOB_ID,
           "{'_id':'org.couchdb.user:bob','_rev':'1-a','type':'user','name':'bob',"
           "'roles':['a','b'],'password_scheme':'simple','password_sha':'xx','salt':'old',"
           "'iterations':'junk','derived_key':7,'pbkdf2_prf':'sha','email':'b@x',"
           "'password':'couch'}",
           BOB_OLD);
  check_creds(o, "sha256", 64, "couch");
  ASSERT(strcmp(str(o, "salt"), "old") != 0);
  static const char *const order2[] = {"_id",         "_rev", "password_scheme", "pbkdf2_prf",
                                       "salt",        "iterations", "derived_key",  "type",
                                       "name",        "roles", "email"};
  ASSERT_EQ(o->len, 11);
  for (size_t i = 0; i < 11; i++)
    ASSERT_MEM_EQ(o->u.members[i].key, o->u.members[i].klen, order2[i], strlen(order2[i]));
  ASSERT_STR_EQ(str(o, "email"), "b@x");
  /* the admin's prf and iterations */
  const char *why;
  json_val *out = NULL;
  ASSERT_OK(users_check_write(&A, &ADMIN, BOB_ID, strlen(BOB_ID),
                              J("{'type':'user','name':'bob','roles':[],'password':'x'}"), NULL,
                              "sha512", 3, &out, &why));
  check_creds(out, "sha512", 128, "x");
  ASSERT_STR_EQ(S(json_obj_getz(out, "iterations")), "3");
  ASSERT_OK(users_check_write(&A, &ADMIN, BOB_ID, strlen(BOB_ID),
                              J("{'type':'user','name':'bob','roles':[],'password':'x'}"), NULL,
                              "sha", 2, &out, &why));
  check_creds(out, "sha", 40, "x");
  ASSERT_OK(users_check_write(&A, &ADMIN, BOB_ID, strlen(BOB_ID),
                              J("{'type':'user','name':'bob','roles':[],'password':'x'}"), NULL,
                              NULL, 2, &out, &why));
  check_creds(out, "sha256", 64, "x"); /* NULL prf: CouchDB's default */
  /* an empty password is a password */
  o = OK_W(&ANON, BOB_ID, "{'type':'user','name':'bob','roles':[],'password':''}", NULL);
  check_creds(o, "sha256", 64, "");
  /* a design document an admin writes with a password is hashed too */
  o = OK_W(&ADMIN, "_design/x", "{'password':'p','views':{}}", NULL);
  check_creds(o, "sha256", 64, "p");
  /* so is a deletion's */
  o = OK_W(&BOB, BOB_ID, "{'_deleted':true,'password':'p'}", BOB_OLD);
  check_creds(o, "sha256", 64, "p");
  arena_free(&A);
}

TEST(users_password_left_alone) {
  arena_init(&A, 0);
  /* no password, or "password": null: the document as sent */
  json_val *doc = J("{'type':'user','name':'bob','roles':[],'password':null,'password_sha':'a',"
                    "'salt':'b','preserve_salt':true}"),
           *out = NULL;
  const char *why;
  ASSERT_OK(
      users_check_write(&A, &ANON, BOB_ID, strlen(BOB_ID), doc, NULL, "sha256", 10, &out, &why));
  ASSERT(out == doc);
  doc = J(BOB_UPD);
  ASSERT_OK(users_check_write(&A, &BOB, BOB_ID, strlen(BOB_ID), doc, J(BOB_OLD), "nonsense", 0,
                              &out, &why));
  ASSERT(out == doc); /* the configuration is only read for a password */
  arena_free(&A);
}

TEST(users_password_refused) {
  arena_init(&A, 0);
  /* not a string: couch_passwords:pbkdf2's message, the value as Erlang's
   * ~p prints what jiffy decoded */
  static const struct {
    const char *pw;
    const char *reason;
  } t[] = {
      {"123", "Password value of '123' is invalid."},
      {"-0", "Password value of '0' is invalid."},
      {"123456789012345678901234567890",
       "Password value of '123456789012345678901234567890' is invalid."},
      {"1.5", "Password value of '1.5' is invalid."},
      {"100.0", "Password value of '100.0' is invalid."},
      {"0.25", "Password value of '0.25' is invalid."},
      {"true", "Password value of 'true' is invalid."},
      {"false", "Password value of 'false' is invalid."},
      {"[]", "Password value of '[]' is invalid."},
      {"[1,2]", "Password value of '[1,2]' is invalid."},
      {"[104,105]", "Password value of '\"hi\"' is invalid."},
      {"[104,10]", "Password value of '\"h\\n\"' is invalid."},
      {"['x',null,{}]", "Password value of '[<<\"x\">>,null,{[]}]' is invalid."},
      {"{'a':'b','c':[1]}",
       "Password value of '{[{<<\"a\">>,<<\"b\">>},{<<\"c\">>,[1]}]}' is invalid."},
      {"['q\\\"uo\\\\te']", "Password value of '[<<\"q\\\"uo\\\\te\">>]' is invalid."},
      {"['\\u0001\\u00ff']", "Password value of '[<<1,195,191>>]' is invalid."},
      {"['']", "Password value of '[<<>>]' is invalid."},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char doc[256];
    snprintf(doc, sizeof doc, "{'type':'user','name':'bob','roles':[],'password':%s}", t[i].pw);
    json_val *out = NULL;
    const char *why;
    int rc = write_as(&ANON, BOB_ID, doc, NULL, &out, &why);
    ASSERTF(rc == DV_EFORBIDDEN && why && !strcmp(why, t[i].reason), "%s: %s \"%s\"; want \"%s\"", doc,
            dv_err_name(rc), why ? why : "-", t[i].reason);
  }
  /* the password is looked at before the _auth rules */
  FORBID(&ANON, BOB_ID, "{'type':'nobody','password':7}", NULL,
         "Password value of '7' is invalid.");
  FORBID(&ANON, "_design/x", "{'password':7}", NULL, "Password value of '7' is invalid.");
  /* a refusal by the rules after a good password: nothing to hand back */
  FORBID(&ANON, BOB_ID, "{'type':'user','name':'bob','roles':['r'],'password':'p'}", NULL,
         "Only _admin may set roles");
  /* a configuration that cannot hash */
  const char *why;
  json_val *out = NULL;
  json_val *doc = J("{'type':'user','name':'bob','roles':[],'password':'p'}");
  ASSERT_EQ(users_check_write(&A, &ANON, BOB_ID, strlen(BOB_ID), doc, NULL, "md5", 10, &out, &why),
            DV_EFORBIDDEN);
  ASSERT_STR_EQ(why, "Server cannot hash passwords at this time.");
  ASSERT_EQ(users_check_write(&A, &ANON, BOB_ID, strlen(BOB_ID), doc, NULL, "SHA256", 10, &out, &why),
            DV_EFORBIDDEN);
  ASSERT_EQ(users_check_write(&A, &ANON, BOB_ID, strlen(BOB_ID), doc, NULL, "sha256", 0, &out, &why),
            DV_EFORBIDDEN);
  ASSERT_STR_EQ(why, "Server cannot hash passwords at this time.");
  ASSERT(out == NULL);
  arena_free(&A);
}

TEST(users_password_salt) {
  arena_init(&A, 0);
  /* preserve_salt: true keeps the document's salt */
  json_val *o = OK_W(&BOB, BOB_ID,
                     "{'type':'user','name':'bob','roles':['a','b'],'salt':'abc',"
                     "'preserve_salt':true,'password':'pw'}",
                     BOB_OLD);
  ASSERT_STR_EQ(str(o, "salt"), "abc");
  check_creds(o, "sha256", 64, "pw");
  /* only true */
  o = OK_W(&BOB, BOB_ID,
           "{'type':'user','name':'bob','roles':['a','b'],'salt':'abc',"
           "'preserve_salt':'yes','password':'pw'}",
           BOB_OLD);
  ASSERT_EQ(strlen(str(o, "salt")), 32);
  check_creds(o, "sha256", 64, "pw");
  /* no salt to keep: a fresh one */
  o = OK_W(&BOB, BOB_ID,
           "{'type':'user','name':'bob','roles':['a','b'],'preserve_salt':true,'password':'pw'}",
           BOB_OLD);
  ASSERT_EQ(strlen(str(o, "salt")), 32);
  check_creds(o, "sha256", 64, "pw");
  /* a salt that is not a string */
  FORBID(&BOB, BOB_ID,
         "{'type':'user','name':'bob','roles':[],'salt':5,'preserve_salt':true,'password':'pw'}",
         BOB_OLD, "Salt value of '5' is invalid.");
  FORBID(&BOB, BOB_ID, "{'salt':null,'preserve_salt':true,'password':'pw'}", BOB_OLD,
         "Salt value of 'null' is invalid.");
  /* neither is: no clause of couch_passwords:pbkdf2/5 matches */
  NO_W(&BOB, BOB_ID, "{'salt':1,'preserve_salt':true,'password':2}", BOB_OLD, DV_EVDU_UNKNOWN,
       "function_clause");
  /* a password with a NUL byte is hashed whole */
  o = OK_W(&ANON, BOB_ID, "{'type':'user','name':'bob','roles':[],'password':'a\\u0000b'}", NULL);
  const char *salt = str(o, "salt"), *dk = str(o, "derived_key");
  uint8_t key[32];
  char hex[65];
  ASSERT_OK(cr_pbkdf2(CR_SHA256, "a\0b", 3, (const uint8_t *)salt, strlen(salt), 10, key, 32));
  cr_hex(key, 32, hex);
  ASSERT_STR_EQ(dk, hex);
  ASSERT_OK(cr_pbkdf2(CR_SHA256, "a", 1, (const uint8_t *)salt, strlen(salt), 10, key, 32));
  cr_hex(key, 32, hex);
  ASSERT(strcmp(dk, hex) != 0);
  arena_free(&A);
}

/* ---- design and _local documents -------------------------------------------- */

TEST(users_design_docs) {
  arena_init(&A, 0);
  const char *ddoc = "{'_id':'_design/_auth','validate_doc_update':'function(){}'}";
  /* writes: anything goes for an admin, nobody else */
  OK_W(&ADMIN, "_design/_auth", ddoc, NULL);
  OK_W(&ADMIN, "_design/_auth", "{'anything':[1,2]}", ddoc);
  OK_W(&ADMIN, "_design/_auth", DEL, ddoc);
  NO_W(&ANON, "_design/_auth", ddoc, NULL, DV_EUNAUTHORIZED,
       "You are not a db or server admin.");
  NO_W(&ANON, "_design/_auth", DEL, ddoc, DV_EUNAUTHORIZED, "You are not a db or server admin.");
  MISSING(&BOB, "_design/_auth", ddoc, NULL);
  MISSING(&BOB, "_design/_auth", DEL, ddoc);
  /* reads */
  json_val *d = J(ddoc);
  ASSERT(OK_R(&ADMIN, "_design/_auth", d, "validate_doc_update") == d);
  NO_R(&BOB, "_design/_auth", d, "validate_doc_update", DV_EFORBIDDEN,
       "Only administrators can view design docs in the users database.");
  NO_R(&ANON, "_design/_auth", d, NULL, DV_EFORBIDDEN,
       "Only administrators can view design docs in the users database.");
  arena_free(&A);
}

TEST(users_local_docs) {
  arena_init(&A, 0);
  /* CouchDB runs neither hook for _local documents */
  json_val *d = J("{'password':'plain','x':1}"), *out = NULL;
  const char *why;
  ASSERT_OK(users_check_write(&A, &ANON, "_local/x", 8, d, NULL, "sha256", 10, &out, &why));
  ASSERT(out == d);
  ASSERT_OK(users_check_write(&A, &BOB, "_local/x", 8, d, NULL, "sha256", 10, &out, &why));
  ASSERT(out == d);
  ASSERT_OK(users_check_read(&A, &ANON, "_local/x", 8, d, NULL, &out, &why));
  ASSERT(out == d);
  arena_free(&A);
}

/* ---- reads ------------------------------------------------------------------ */

TEST(users_read) {
  arena_init(&A, 0);
  json_val *d = J("{'_id':'org.couchdb.user:bob','_rev':'2-b','type':'user','name':'bob',"
                  "'roles':['a'],'email':'b@x','derived_key':'00','salt':'11'}");
  /* admins and the owner see everything: the document itself */
  ASSERT(OK_R(&ADMIN, BOB_ID, d, NULL) == d);
  ASSERT(OK_R(&BOB, BOB_ID, d, NULL) == d);
  ASSERT(OK_R(&BOB, BOB_ID, d, "name") == d);
  /* anyone else: nothing public, nothing to see */
  NO_R(&ALICE, BOB_ID, d, NULL, DV_ENOT_FOUND, "missing");
  NO_R(&ALICE, BOB_ID, d, "", DV_ENOT_FOUND, "missing");
  NO_R(&ANON, BOB_ID, d, NULL, DV_ENOT_FOUND, "missing");
  NO_R(&ALICE, BOB_ID, d, "phone,address", DV_ENOT_FOUND, "missing");
  NO_R(&ALICE, BOB_ID, d, "_id,_rev", DV_ENOT_FOUND, "missing"); /* not body fields */
  /* the public fields, with _id and _rev */
  ASSERT_STR_EQ(S(OK_R(&ALICE, BOB_ID, d, "name")),
                "{'_id':'org.couchdb.user:bob','_rev':'2-b','name':'bob'}");
  ASSERT_STR_EQ(S(OK_R(&ANON, BOB_ID, d, "email,name")),
                "{'_id':'org.couchdb.user:bob','_rev':'2-b','name':'bob','email':'b@x'}");
  /* blanks count only next to a comma, as in re:split(V, "\\s*,\\s*") */
  ASSERT_STR_EQ(S(OK_R(&ALICE, BOB_ID, d, "name \t,\n roles ,  type")),
                "{'_id':'org.couchdb.user:bob','_rev':'2-b','type':'user','name':'bob',"
                "'roles':['a']}");
  NO_R(&ALICE, BOB_ID, d, " name", DV_ENOT_FOUND, "missing");
  NO_R(&ALICE, BOB_ID, d, "name ", DV_ENOT_FOUND, "missing");
  NO_R(&ALICE, BOB_ID, d, "Name", DV_ENOT_FOUND, "missing");
  ASSERT_STR_EQ(S(OK_R(&ALICE, BOB_ID, d, ",name,")),
                "{'_id':'org.couchdb.user:bob','_rev':'2-b','name':'bob'}");
  /* an empty piece of the list names the (odd) empty key */
  json_val *odd = J("{'_id':'org.couchdb.user:bob','':1,'salt':'s'}");
  ASSERT_STR_EQ(S(OK_R(&ALICE, BOB_ID, odd, "")), "{'_id':'org.couchdb.user:bob','':1}");
  /* a document that is no account: stripped for everyone but admins */
  json_val *x = J("{'_id':'other','name':'bob','secret':1}");
  ASSERT_STR_EQ(S(OK_R(&BOB, "other", x, "name")), "{'_id':'other','name':'bob'}");
  NO_R(&ANON, "other", x, NULL, DV_ENOT_FOUND, "missing");
  ASSERT(OK_R(&ADMIN, "other", x, NULL) == x);
  /* the owner is told by the id, not by the name field */
  json_val *y = J("{'_id':'org.couchdb.user:bob','name':'alice','secret':1}");
  ASSERT(OK_R(&BOB, BOB_ID, y, NULL) == y);
  NO_R(&ALICE, BOB_ID, y, NULL, DV_ENOT_FOUND, "missing");
  arena_free(&A);
}

/* ---- allocation failure ----------------------------------------------------- */

TEST(users_alloc_fail) {
  int failures = 0, done = 0;
  for (long k = 0; k < 400 && !done; k++) {
    arena_init(&A, 64); /* small chunks: many allocations */
    json_val *doc = J("{'_id':'org.couchdb.user:bob','type':'user','name':'bob','roles':[],"
                      "'email':'b@x','password':'pw'}");
    json_val *bad = J("{'type':'user','name':'bob','roles':[],'password':[1,{'a':'b'}]}");
    json_val *scheme = J("{'type':'user','name':'bob','roles':[],'password_scheme':'md5'}");
    json_val *other = J("{'_id':'org.couchdb.user:bob','name':'bob','email':'e'}");
    json_val *out = NULL, *hashed = NULL;
    const char *w1, *w2, *w3, *w4;
    dv_alloc_fail_after(k);
    int r1 =
        users_check_write(&A, &ANON, BOB_ID, strlen(BOB_ID), doc, NULL, "sha256", 2, &hashed, &w1);
    int r2 = users_check_write(&A, &ANON, BOB_ID, strlen(BOB_ID), bad, NULL, "sha256", 2, &out, &w2);
    int r3 =
        users_check_write(&A, &ADMIN, BOB_ID, strlen(BOB_ID), scheme, NULL, "sha256", 2, &out, &w3);
    int r4 = users_check_read(&A, &ALICE, BOB_ID, strlen(BOB_ID), other, "name", &out, &w4);
    dv_alloc_fail_after(-1);
    /* a failure of the server is the code with its own reason */
    const char *oom = dv_strerror(DV_ENOMEM);
    ASSERT(r1 == 0 || (r1 == DV_ENOMEM && !strcmp(w1, oom)));
    ASSERT(r2 == DV_EFORBIDDEN || (r2 == DV_ENOMEM && !strcmp(w2, oom)));
    ASSERT(r3 == DV_EFORBIDDEN || (r3 == DV_ENOMEM && !strcmp(w3, oom)));
    ASSERT(r4 == 0 || (r4 == DV_ENOMEM && !strcmp(w4, oom)));
    failures += (r1 != 0) + (r2 != DV_EFORBIDDEN) + (r3 != DV_EFORBIDDEN) + (r4 != 0);
    if (!r1 && r2 == DV_EFORBIDDEN && r3 == DV_EFORBIDDEN && !r4) {
      check_creds(hashed, "sha256", 64, "pw");
      ASSERT_STR_EQ(S(out), "{'_id':'org.couchdb.user:bob','name':'bob'}");
      done = 1;
    }
    arena_free(&A);
  }
  ASSERT(done);
  ASSERT(failures > 3);
}
