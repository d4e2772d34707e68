/* test_mquery.c — Mango's _find and _explain (src/index/mquery.c) over a
 * real store with json indexes maintained by mindex: option errors in
 * CouchDB 3.4's order and words, the index CouchDB would choose and its
 * warnings, ranges (the multi-range reads of $in/$or giving the very
 * documents and order of a full scan), sort both ways, skip/limit/bookmark
 * paging, fields, covering, the _explain document, no_usable_index, and a
 * randomized comparison with a brute-force filter and sort (DV_SEED,
 * DV_MQ_QUERIES steer it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idxt.h"
#include "index/collate.h"
#include "index/mango.h"
#include "index/mindex.h"
#include "index/mquery.h"
#include "store/storet.h"
#include "kv/kv_fault.h"
#include "test.h"

#define J idxt_json

static int load(void *arg, const char *name, size_t len, store_hooks *out) {
  return mindex_hooks_load(arg, name, len, out);
}
static void unload(void *arg, store_hooks *h) {
  (void)arg;
  mindex_hooks_unload(h);
}

static storet *open_db(void) {
  storet *t = storet_open(NULL, 0, "db");
  store_set_hooks(t->s, &(store_hooks_provider){.load = load, .unload = unload, .arg = t->s});
  ASSERT_OK(mindex_start(t->s));
  return t;
}

static void close_db(storet *t) {
  mindex_stop();
  storet_close(t);
}

/* A json index (fields: JSON text of the map's fields object, ' for "). */
static void add_index(storet *t, const char *ddoc, const char *name, const char *fields, const char *partial) {
  char buf[2048];
  snprintf(buf, sizeof buf,
           "{'_id':'_design/%s','language':'query','views':{'%s':{'map':{'fields':%s,"
           "'partial_filter_selector':%s},'reduce':'_count','options':{'def':{'fields':[]}}}}}",
           ddoc, name, fields, partial ? partial : "{}");
  json_val *d = J(&t->a, buf);
  ASSERT_OK(storet_put_doc(t->db, &t->a, storet_json_text(&t->a, d), 1, NULL));
}

static void put(storet *t, const char *doc) {
  json_val *d = J(&t->a, doc);
  ASSERT_OK(storet_put_doc(t->db, &t->a, storet_json_text(&t->a, d), 1, NULL));
}

typedef struct got {
  dv_arena *a;
  json_val *docs;
  int stop_after;  /* > 0: the sink stops the query after that many */
} got;

static int sink_doc(void *arg, const json_val *doc) {
  got *g = arg;
  ASSERT_OK(json_arr_push(g->a, g->docs, json_dup(g->a, doc)));
  if (g->stop_after && (int)g->docs->len >= g->stop_after) return 77;
  return 0;
}

/* Run a _find; the documents land in *docs. Returns mq_find's rc (or mq_parse's). */
static int find(storet *t, const char *body, json_val **docs, mq_result *res, const char **why) {
  mq_req *q;
  const char *w = NULL;
  int rc = mq_parse(&t->a, J(&t->a, body), &q, &w);
  got g = {&t->a, json_new_array(&t->a), 0};
  mq_result r;
  memset(&r, 0, sizeof r);
  if (!rc) rc = mq_find(t->db, &t->a, q, &(mq_sink){sink_doc, &g}, &r, &w);
  if (docs) *docs = g.docs;
  if (res) *res = r;
  if (why) *why = w;
  return rc;
}

static json_val *explain(storet *t, const char *body) {
  mq_req *q;
  const char *w = NULL;
  json_val *out;
  ASSERT_OK(mq_parse(&t->a, J(&t->a, body), &q, &w));
  int rc = mq_explain(t->db, &t->a, q, &out, &w);
  ASSERTF(rc == 0, "explain %s: %d %s", body, rc, w ? w : "");
  return out;
}

/* The documents' "_id"s joined with ",". */
static const char *ids(dv_arena *a, const json_val *docs) {
  dv_buf b = DV_BUF_INIT;
  for (size_t i = 0; i < docs->len; i++) {
    const json_val *id = json_obj_getz(docs->u.items[i], "_id");
    if (i) buf_putc(&b, ',');
    if (id) buf_append(&b, id->u.s, id->len);
    else buf_puts(&b, "?");
  }
  const char *s = arena_strndup(a, b.p ? (const char *)b.p : "", b.len);
  buf_free(&b);
  return s;
}

static const char *find_ids(storet *t, const char *body) {
  json_val *docs;
  const char *why = NULL;
  int rc = find(t, body, &docs, NULL, &why);
  ASSERTF(rc == 0, "find %s: %d %s", body, rc, why ? why : "");
  return ids(&t->a, docs);
}

static void expect_err(storet *t, const char *body, int want, const char *reason) {
  const char *why = NULL;
  int rc = find(t, body, NULL, NULL, &why);
  ASSERTF(rc == want, "find %s: rc %d (%s), want %d", body, rc, why ? why : "", want);
  if (reason) ASSERTF(why && !strcmp(why, reason), "find %s:\n  \"%s\"\n  \"%s\"", body, why ? why : "", reason);
}

static const char *jtext(dv_arena *a, const json_val *v) { return storet_json_text(a, v); }

static const char *member_text(dv_arena *a, const json_val *o, const char *path) {
  const json_val *v = mi_field(o, path, strlen(path));
  return v ? jtext(a, v) : "(missing)";
}

#define ASSERT_MEMBER(a, o, path, want) ASSERT_STR_EQ(member_text((a), (o), (path)), (want))

/* ---- options ----------------------------------------------------------------------- */

/* Two ids in byte order (strcmp's, without reading past the JSON strings,
 * which are not NUL-terminated). */
static int id_cmp(const json_val *x, const json_val *y) {
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->u.s, y->u.s, n);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

TEST(mquery_options) {
  storet *t = open_db();
  put(t, "{'_id':'a','x':1}");
  static const struct {
    const char *body;
    int rc;
    const char *why;
  } cases[] = {
      {"{}", DV_EMQ_MISSING_KEY, "Missing required key: selector"},
      {"{'limit':-1}", DV_EMQ_MISSING_KEY, "Missing required key: selector"},
      {"{'selector':[]}", DV_EMANGO_SELECTOR_JSON, "Selector must be a JSON object, not: []"},
      {"{'selector':{},'limit':-1}", DV_EMQ_NON_NEG_INTEGER, "-1 is not an integer greater than or equal to zero"},
      {"{'selector':{},'limit':'x'}", DV_EMQ_NON_NEG_INTEGER,
       "<<120>> is not an integer greater than or equal to zero"},
      {"{'selector':{},'limit':5.0}", DV_EMQ_NON_NEG_INTEGER, "5.0 is not an integer greater than or equal to zero"},
      {"{'selector':{},'skip':-2,'limit':-1}", DV_EMQ_NON_NEG_INTEGER,
       "-1 is not an integer greater than or equal to zero"},
      {"{'selector':{},'skip':-2}", DV_EMQ_NON_NEG_INTEGER, "-2 is not an integer greater than or equal to zero"},
      {"{'selector':{},'r':0}", DV_EMQ_POS_INTEGER, "0 is not an integer greater than zero"},
      {"{'selector':{},'use_index':'a/b/c'}", DV_EMQ_INDEX_NAME, "Invalid index name: <<97,47,98,47,99>>"},
      {"{'selector':{},'use_index':5}", DV_EMQ_INDEX_NAME, "Invalid index name: 5"},
      {"{'selector':{},'sort':{}}", DV_EMQ_SORT_JSON, "Sort must be an array of sort specs, not: {[]}"},
      {"{'selector':{},'sort':['']}", DV_EMQ_SORT_FIELD, "Invalid sort field: <<>>"},
      {"{'selector':{},'sort':[{'a':'up'}]}", DV_EMQ_SORT_FIELD, "Invalid sort field: {[{<<97>>,<<117,112>>}]}"},
      {"{'selector':{},'sort':['a',{'b':'desc'}]}", DV_EMQ_MIXED_SORT,
       "Sorts currently only support a single direction for all fields."},
      {"{'selector':{},'fields':'a'}", DV_EMQ_FIELDS, "Fields must be an array of strings, not: <<97>>"},
      {"{'selector':{},'fields':[1]}", DV_EMQ_FIELD, "Invalid JSON for field spec: 1"},
      {"{'selector':{},'conflicts':1}", DV_EMQ_BOOLEAN, "Invalid boolean value: 1"},
      {"{'selector':{},'stale':'no'}", DV_EMQ_STALE, "Invalid value for stale: <<110,111>>"},
      {"{'selector':{},'execution_stats':'true'}", DV_EMQ_BOOLEAN, "Invalid boolean value: <<116,114,117,101>>"},
      {"{'selector':{},'allow_fallback':null}", DV_EMQ_BOOLEAN, "Invalid boolean value: null"},
      {"{'selector':{},'bookmark':5}", DV_EMQ_UNKNOWN, "Unknown Error: mango_opts :: {invalid_bookmark,5}"},
      {"{'selector':{},'foo':1,'bar':2}", DV_EMQ_INVALID_KEY, "Invalid key foo for this request."},
      {"{'foo':1,'selector':{},'limit':-1}", DV_EMQ_NON_NEG_INTEGER,
       "-1 is not an integer greater than or equal to zero"},
      {"{'selector':{'a':{'$foo':1}}}", DV_EMANGO_OPERATOR, "Invalid operator: $foo"},
      {"{'selector':{},'bookmark':'!!'}", DV_EMQ_BOOKMARK, "Invalid bookmark value: \"!!\""},
      {"{'selector':{},'bookmark':'abc'}", DV_EMQ_BOOKMARK, "Invalid bookmark value: \"abc\""},
      {"{'selector':{'a':1},'sort':['a']}", DV_EMQ_NO_INDEX,
       "No index exists for this sort, try indexing by the sort fields."},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) expect_err(t, cases[i].body, cases[i].rc, cases[i].why);
  /* accepted forms */
  static const char *ok[] = {
      "{'selector':{},'use_index':null,'bookmark':null,'limit':0,'skip':0,'sort':[],'fields':[],"
      "'partition':'','r':2,'conflicts':true,'stale':false,'update':false,'stable':true,"
      "'execution_stats':true,'allow_fallback':true}",
      "{'selector':{},'use_index':['x','y'],'stale':'ok','bookmark':''}",
      "{'selector':{},'use_index':'_design/x/y','stale':'false','limit':123456789012345678901234567890}",
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) ASSERT_STR_EQ(find_ids(t, ok[i]), i == 0 ? "" : "a");
  /* explain shows the options as CouchDB does */
  json_val *e = explain(t, "{'selector':{'x':{'$gt':0}},'use_index':'_design/foo/bar','stale':'ok','r':3}");
  ASSERT_STR_EQ(jtext(&t->a, json_obj_getz(e, "opts")),
                "{\"use_index\":[\"foo\",\"bar\"],\"bookmark\":\"nil\",\"limit\":25,\"skip\":0,\"sort\":{},"
                "\"fields\":[],\"partition\":\"\",\"r\":3,\"conflicts\":false,\"stale\":\"ok\",\"update\":false,"
                "\"stable\":true,\"execution_stats\":false,\"allow_fallback\":true}");
  ASSERT_MEMBER(&t->a, e, "selector", "{\"x\":{\"$gt\":0}}");
  ASSERT_MEMBER(&t->a, e, "mrargs.include_docs", "false");
  ASSERT_MEMBER(&t->a, e, "mrargs.conflicts", "\"undefined\"");
  close_db(t);
}

/* ---- index choice, warnings, explain ---------------------------------------------------- */

TEST(mquery_select) {
  storet *t = open_db();
  for (int i = 0; i < 30; i++) {
    char d[256];
    snprintf(d, sizeof d, "{'_id':'d%02d','year':%d,'title':'t%d','type':'%s'}", i, 2000 + i, i % 7,
             i % 2 ? "movie" : "show");
    put(t, d);
  }
  add_index(t, "a", "A", "{'year':'asc'}", NULL);
  add_index(t, "b", "B", "{'year':'asc','title':'asc'}", NULL);
  add_index(t, "p", "P", "{'year':'asc'}", "{'type':'movie'}");
  mq_result r;
  json_val *docs;
  const char *why;

  /* Appendix B */
  const char *q = "{'selector':{'year':{'$gt':2010}},'sort':[{'year':'asc'}],'limit':2}";
  json_val *e = explain(t, q);
  ASSERT_MEMBER(&t->a, e, "index.ddoc", "\"_design/a\"");
  ASSERT_MEMBER(&t->a, e, "index.name", "\"A\"");
  ASSERT_MEMBER(&t->a, e, "mrargs.start_key", "[2010]");
  ASSERT_MEMBER(&t->a, e, "mrargs.end_key", "[\"<MAX>\"]");
  ASSERT_MEMBER(&t->a, e, "mrargs.direction", "\"fwd\"");
  ASSERT_MEMBER(&t->a, e, "mrargs.include_docs", "true");
  ASSERT_MEMBER(&t->a, e, "covering", "false");
  ASSERT_MEMBER(&t->a, e, "divan", "{\"ranges\":1,\"covering\":false}");
  ASSERT_MEMBER(&t->a, e, "selector_hints",
                "[{\"type\":\"json\",\"indexable_fields\":[\"year\"],\"unindexable_fields\":[]}]");
  const char *keys[] = {"dbname", "index", "partitioned", "selector", "opts", "limit", "skip", "fields",
                        "index_candidates", "selector_hints", "mrargs", "covering", "divan"};
  ASSERT_EQ(e->len, sizeof keys / sizeof *keys);
  for (size_t i = 0; i < e->len; i++) ASSERT_MEM_EQ(e->u.members[i].key, e->u.members[i].klen, keys[i], strlen(keys[i]));
  const json_val *c = json_obj_getz(e, "index_candidates");
  ASSERT_EQ(c->len, 3);
  /* descending by ddoc: p, b, then _all_docs */
  ASSERT_MEMBER(&t->a, c->u.items[0], "index.ddoc", "\"_design/p\"");
  /* (Appendix B calls B usable, but §5.3's rule makes its second column
   * "title" a required field the selector lacks: field_mismatch) */
  ASSERT_MEMBER(&t->a, c->u.items[0], "analysis",
                "{\"usable\":false,\"reasons\":[{\"name\":\"is_partial\"}],\"ranking\":2,\"covering\":false}");
  ASSERT_MEMBER(&t->a, c->u.items[1], "index.ddoc", "\"_design/b\"");
  ASSERT_MEMBER(&t->a, c->u.items[1], "analysis",
                "{\"usable\":false,\"reasons\":[{\"name\":\"field_mismatch\"}],\"ranking\":1,\"covering\":false}");
  ASSERT_MEMBER(&t->a, c->u.items[2], "index.name", "\"_all_docs\"");
  ASSERT_MEMBER(&t->a, c->u.items[2], "analysis",
                "{\"usable\":false,\"reasons\":[{\"name\":\"field_mismatch\"}],\"ranking\":1,\"covering\":null}");
  /* with a condition on title both are usable: B has the longer prefix */
  e = explain(t, "{'selector':{'year':{'$gt':2010},'title':{'$gt':null}},'fields':['year']}");
  ASSERT_MEMBER(&t->a, e, "index.name", "\"B\"");
  ASSERT_MEMBER(&t->a, e, "mrargs.start_key", "[2010,null]");
  c = json_obj_getz(e, "index_candidates");
  ASSERT_MEMBER(&t->a, c->u.items[1], "analysis",
                "{\"usable\":true,\"reasons\":[{\"name\":\"less_overlap\"}],\"ranking\":1,\"covering\":true}");
  ASSERT_MEMBER(&t->a, c->u.items[2], "analysis",
                "{\"usable\":true,\"reasons\":[{\"name\":\"unfavored_type\"}],\"ranking\":2,\"covering\":null}");
  ASSERT_MEMBER(&t->a, c->u.items[0], "analysis.ranking", "3");
  /* two equal candidates: fewer columns, then names */
  e = explain(t, "{'selector':{'year':{'$gt':2010},'title':{'$gt':null}},'use_index':'b'}");
  ASSERT_MEMBER(&t->a, e, "index.name", "\"B\"");
  ASSERT_OK(find(t, q, &docs, &r, &why));
  ASSERT_STR_EQ(ids(&t->a, docs), "d11,d12");
  ASSERT(r.ran);
  ASSERT(r.warning == NULL);
  ASSERT(strcmp(r.bookmark, "nil"));

  /* use_index the partial index: chosen, no warning */
  ASSERT_OK(find(t, "{'selector':{'year':{'$gt':2010}},'use_index':'_design/p'}", &docs, &r, &why));
  ASSERT_STR_EQ(ids(&t->a, docs), "d11,d13,d15,d17,d19,d21,d23,d25,d27,d29");
  ASSERT(r.warning == NULL);
  /* an unknown one: fallback with a warning, or invalid_index */
  ASSERT_OK(find(t, "{'selector':{'year':{'$gt':2027}},'use_index':'_design/zzz'}", &docs, &r, &why));
  ASSERT_STR_EQ(ids(&t->a, docs), "d28,d29");
  ASSERT_STR_EQ(r.warning, "_design/zzz was not used because it does not contain a valid index for this query.");
  ASSERT_OK(find(t, "{'selector':{'year':{'$gt':2027}},'use_index':['_design/a','nope']}", &docs, &r, &why));
  ASSERT_STR_EQ(r.warning, "_design/a, nope was not used because it is not a valid index for this query.");
  expect_err(t, "{'selector':{'year':{'$gt':2027}},'use_index':'zzz','allow_fallback':false}", DV_EMQ_INDEX,
             "_design/zzz specified by `use_index` could not be found or it is not suitable.");
  expect_err(t, "{'selector':{'year':{'$gt':2027}},'use_index':'a/nope','allow_fallback':false}", DV_EMQ_INDEX,
             "_design/a, nope specified by `use_index` could not be found or it is not suitable.");
  /* use_index A (usable, though B fits better): A, and B excluded by the user */
  e = explain(t, "{'selector':{'year':{'$gt':2027},'title':{'$gt':null}},'use_index':'a'}");
  ASSERT_MEMBER(&t->a, e, "index.ddoc", "\"_design/a\"");
  c = json_obj_getz(e, "index_candidates");
  ASSERT_MEMBER(&t->a, c->u.items[1], "index.ddoc", "\"_design/b\"");
  ASSERT_MEMBER(&t->a, c->u.items[1], "analysis.reasons", "[{\"name\":\"excluded_by_user\"}]");
  ASSERT_MEMBER(&t->a, c->u.items[1], "analysis.usable", "true");

  /* no indexable field: _all_docs with its warning; allow_fallback false refuses it */
  ASSERT_OK(find(t, "{'selector':{'title':'t3'},'execution_stats':true}", &docs, &r, &why));
  ASSERT_STR_EQ(ids(&t->a, docs), "d03,d10,d17,d24");
  ASSERT_STR_EQ(r.warning, "No matching index found, create an index to optimize query time.");
  ASSERT_MEMBER(&t->a, r.stats, "total_keys_examined", "33"); /* 30 docs + 3 design docs */
  ASSERT_MEMBER(&t->a, r.stats, "total_docs_examined", "33");
  ASSERT_MEMBER(&t->a, r.stats, "results_returned", "4");
  expect_err(t, "{'selector':{'title':'t3'},'allow_fallback':false}", DV_EMQ_INDEX,
             "You must specify an index with the `use_index` parameter.");
  e = explain(t, "{'selector':{'title':'t3'}}");
  ASSERT_MEMBER(&t->a, e, "index.name", "\"_all_docs\"");
  ASSERT_MEMBER(&t->a, e, "mrargs.start_key", "null");
  ASSERT_MEMBER(&t->a, e, "mrargs.end_key", "\"<MAX>\"");
  /* high docs/results ratio */
  ASSERT_OK(find(t, "{'selector':{'title':'t3','year':2003}}", &docs, &r, &why));
  ASSERT(r.warning == NULL);
  ASSERT_OK(find(t, "{'selector':{'year':{'$gt':0},'title':'t3x'}}", &docs, &r, &why));
  ASSERT_STR_EQ(r.warning, "The number of documents examined is high in proportion to the number of results "
                           "returned. Consider adding a more specific index to improve this.");
  /* _id sort through _all_docs */
  ASSERT_STR_EQ(find_ids(t, "{'selector':{'_id':{'$gt':'d25'}},'sort':[{'_id':'desc'}]}"), "d29,d28,d27,d26");
  e = explain(t, "{'selector':{'_id':{'$gt':'d25'}},'sort':[{'_id':'desc'}]}");
  ASSERT_MEMBER(&t->a, e, "mrargs.start_key", "\"<MAX>\"");
  ASSERT_MEMBER(&t->a, e, "mrargs.end_key", "\"d25\"");
  ASSERT_MEMBER(&t->a, e, "mrargs.direction", "\"rev\"");
  /* no usable index for explain: null, no mrargs */
  e = explain(t, "{'selector':{},'sort':['title']}");
  ASSERT_MEMBER(&t->a, e, "index", "null");
  ASSERT(!json_obj_getz(e, "mrargs"));
  /* a constant leading column lets B sort by title */
  e = explain(t, "{'selector':{'year':2003},'sort':['title']}");
  ASSERT_MEMBER(&t->a, e, "index.name", "\"B\"");
  ASSERT_STR_EQ(find_ids(t, "{'selector':{'year':2003},'sort':['title']}"), "d03");
  /* the empty range: no scan, no bookmark */
  ASSERT_OK(find(t, "{'selector':{'year':{'$gt':5,'$lt':3}}}", &docs, &r, &why));
  ASSERT_EQ(docs->len, 0);
  ASSERT_EQ(r.ran, 0);
  ASSERT_OK(find(t, "{'selector':{'$or':[]}}", &docs, &r, &why));
  ASSERT_EQ(r.ran, 0);
  e = explain(t, "{'selector':{'year':{'$gt':5,'$lt':3}}}");
  ASSERT_MEMBER(&t->a, e, "mrargs.start_key", "null");
  ASSERT_MEMBER(&t->a, e, "divan.ranges", "0");
  /* a sink that stops the query */
  {
    mq_req *rq;
    ASSERT_OK(mq_parse(&t->a, J(&t->a, "{'selector':{'year':{'$gt':0}}}"), &rq, &why));
    got g = {&t->a, json_new_array(&t->a), 3};
    ASSERT_EQ(mq_find(t->db, &t->a, rq, &(mq_sink){sink_doc, &g}, &r, &why), 77);
    ASSERT_EQ(g.docs->len, 3);
  }
  close_db(t);
}

/* ---- ranges, sort, paging, fields, covering ----------------------------------------------- */

static void put_many(storet *t) {
  static const char *vals[] = {"1", "2", "3", "'a'", "'b'", "null", "true", "[1,5]", "[2]", "{'k':1}", "2.0"};
  for (int i = 0; i < 60; i++) {
    char d[256];
    if (i % 13 == 12) snprintf(d, sizeof d, "{'_id':'k%02d','b':%d}", i, i % 4);
    else snprintf(d, sizeof d, "{'_id':'k%02d','a':%s,'b':%d,'c':{'d':%d}}", i, vals[i % 11], i % 4, i % 5);
    put(t, d);
  }
}

TEST(mquery_ranges) {
  storet *t = open_db();
  put_many(t);
  add_index(t, "ab", "ab", "{'a':'asc','b':'asc'}", NULL);
  /* each query against the same one with the first column's conditions
   * hidden from the range planner (inside $and with an $exists the
   * planner ignores … no: compared with a brute force list) */
  static const struct {
    const char *sel;
    int ranges;
  } qs[] = {
      {"{'a':{'$in':[3,1,'b',2]}}", 5},                         /* 1, 2(2.0), 3, 'b' + arrays: [1,5],[2] */
      {"{'a':{'$in':[1]},'b':{'$gt':0}}", 2},
      {"{'$or':[{'a':1},{'a':{'$gte':'a'}}]}", 2},
      {"{'$or':[{'a':1},{'b':2}]}", 1},
      {"{'$or':[{'a':{'$lt':2}},{'a':{'$lt':3}}]}", 1},
      {"{'a':{'$in':[2]},'$or':[{'b':1},{'b':2}]}", 2},
      {"{'a':{'$in':[]}}", 1},
      {"{'a':{'$gt':1},'$or':[{'a':2},{'a':'a'}]}", 2},
  };
  for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
    char body[512];
    for (int desc = 0; desc < 2; desc++) {
      snprintf(body, sizeof body, "{'selector':%s,'limit':1000%s}", qs[i].sel, desc ? ",'sort':[{'a':'desc'},{'b':'desc'}]" : ",'sort':['a','b']");
      json_val *e = explain(t, body);
      const char *got_ids = find_ids(t, body);
      /* brute force: every doc with a and b, matching, in (a, b, id) order */
      mango_sel *sel;
      ASSERT_OK(mango_parse(&t->a, J(&t->a, qs[i].sel), &sel, NULL));
      json_val *all = json_new_array(&t->a);
      for (int k = 0; k < 60; k++) {
        char id[8];
        json_val *d;
        snprintf(id, sizeof id, "k%02d", k);
        ASSERT_OK(storet_get(t->db, &t->a, id, NULL, 0, &d));
        if (json_obj_getz(d, "a") && json_obj_getz(d, "b") && mango_match(sel, d)) ASSERT_OK(json_arr_push(&t->a, all, d));
      }
      /* insertion sort by [a, b] then id */
      for (size_t x = 1; x < all->len; x++)
        for (size_t y = x; y > 0; y--) {
          json_val *p = all->u.items[y - 1], *n = all->u.items[y];
          int cmp = collate_cmp(json_obj_getz(p, "a"), json_obj_getz(n, "a"));
          if (!cmp) cmp = collate_cmp(json_obj_getz(p, "b"), json_obj_getz(n, "b"));
          if (!cmp) cmp = id_cmp(json_obj_getz(p, "_id"), json_obj_getz(n, "_id"));
          if ((desc ? -cmp : cmp) <= 0) break;
          all->u.items[y - 1] = n, all->u.items[y] = p;
        }
      ASSERT_STR_EQ(member_text(&t->a, e, "index.name"), "\"ab\"");
      {
        ASSERTF(!strcmp(got_ids, ids(&t->a, all)), "%s:\n  got  %s\n  want %s", body, got_ids, ids(&t->a, all));
        char want[32];
        snprintf(want, sizeof want, "%d", qs[i].ranges);
        ASSERTF(!strcmp(member_text(&t->a, e, "divan.ranges"), want), "%s: ranges %s, want %s", body,
                member_text(&t->a, e, "divan.ranges"), want);
      }
    }
  }
  /* multi-range start/end shown are CouchDB's */
  json_val *e = explain(t, "{'selector':{'a':{'$in':[1,2]},'b':{'$gte':1,'$lte':2}}}");
  ASSERT_MEMBER(&t->a, e, "index.name", "\"ab\"");
  ASSERT_MEMBER(&t->a, e, "mrargs.start_key", "[]");
  ASSERT_MEMBER(&t->a, e, "mrargs.end_key", "[\"<MAX>\"]");
  e = explain(t, "{'selector':{'a':{'$gte':1,'$lte':3},'b':{'$gt':0}}}");
  ASSERT_MEMBER(&t->a, e, "mrargs.start_key", "[1,0]");
  ASSERT_MEMBER(&t->a, e, "mrargs.end_key", "[3,\"<MAX>\"]");
  ASSERT_STR_EQ(find_ids(t, "{'selector':{'a':{'$gte':1,'$lte':3},'b':{'$gt':0}}}"), "k33,k22,k11,k55,k01,k21,k45,k10,k34,k54,k23,k43,k13,k57,k02,k46,k35");
  close_db(t);
}

TEST(mquery_paging) {
  storet *t = open_db();
  put_many(t);
  add_index(t, "ab", "ab", "{'a':'asc','b':'asc'}", NULL);
  static const char *sels[] = {"{'a':{'$gt':null}}", "{'a':{'$in':[1,2,'a']}}", "{'_id':{'$gt':'k1'}}",
                               "{'b':{'$gte':1}}"};
  for (size_t s = 0; s < sizeof sels / sizeof *sels; s++)
    for (int desc = 0; desc < 2; desc++) {
      char body[512];
      const char *sort = s == 2 ? "[{'_id':'desc'}]" : "[{'a':'desc'},{'b':'desc'}]";
      snprintf(body, sizeof body, "{'selector':%s,'limit':1000%s%s}", sels[s], desc ? ",'sort':" : "", desc ? sort : "");
      const char *all = find_ids(t, body);
      /* pages of 4 with a bookmark, and skip 1 per page */
      for (int skip = 0; skip < 2; skip++) {
        dv_buf acc = DV_BUF_INIT;
        const char *bm = NULL;
        int pages = 0, total = 0;
        for (;;) {
          json_val *docs;
          mq_result r;
          const char *why;
          char pb[700];
          snprintf(pb, sizeof pb, "{'selector':%s,'limit':4,'skip':%d%s%s%s%s%s}", sels[s], skip,
                   desc ? ",'sort':" : "", desc ? sort : "", bm ? ",'bookmark':'" : "", bm ? bm : "", bm ? "'" : "");
          ASSERT_OK(find(t, pb, &docs, &r, &why));
          ASSERT(r.ran);
          if (!docs->len) {
            if (!bm) ASSERT_STR_EQ(r.bookmark, "nil");
            else ASSERT_STR_EQ(r.bookmark, bm);
            break;
          }
          if (acc.len) buf_putc(&acc, ',');
          buf_puts(&acc, ids(&t->a, docs));
          total += (int)docs->len;
          bm = arena_strndup(&t->a, r.bookmark, strlen(r.bookmark));
          ASSERT(++pages < 100);
        }
        if (!skip) ASSERTF(!strcmp(acc.p ? (char *)acc.p : "", all), "%s pages:\n  %s\n  %s", body,
                           acc.p ? (char *)acc.p : "", all);
        else {
          /* every 5th document is skipped (the first of each page of 5 matched) */
          int n_all = 0;
          for (const char *p = all; *p; p++) n_all += *p == ',';
          if (*all) n_all++;
          ASSERT_EQ(total, n_all - (n_all + 4) / 5);
        }
        buf_putc(&acc, 0);
        buf_free(&acc);
      }
    }
  /* limit 0: nothing, bookmark kept */
  mq_result r;
  json_val *docs;
  const char *why;
  ASSERT_OK(find(t, "{'selector':{'a':{'$gt':null}},'limit':0}", &docs, &r, &why));
  ASSERT_EQ(docs->len, 0);
  ASSERT_STR_EQ(r.bookmark, "nil");
  /* a bookmark of the other kind is refused */
  ASSERT_OK(find(t, "{'selector':{'_id':{'$gt':'k1'}},'limit':1}", &docs, &r, &why));
  char body[512];
  snprintf(body, sizeof body, "{'selector':{'a':{'$gt':null}},'sort':['a','b'],'bookmark':'%s'}", r.bookmark);
  ASSERT_EQ(find(t, body, &docs, NULL, &why), DV_EMQ_BOOKMARK);
  close_db(t);
}

TEST(mquery_fields_covering) {
  storet *t = open_db();
  put(t, "{'_id':'x1','a':1,'n':{'m':[10,20],'o':'p'},'z':true}");
  put(t, "{'_id':'x2','a':2,'n':{'m':[30]},'arr':[{'q':1},{'q':2}]}");
  add_index(t, "cov", "cov", "{'a':'asc','n.o':'asc'}", NULL);
  json_val *docs;
  mq_result r;
  const char *why;
  ASSERT_OK(find(t, "{'selector':{'a':{'$gte':1}},'fields':['n.m.1','a','missing','n.o','arr.1.q','_id'],'use_index':'zz'}",
                 &docs, &r, &why));
  ASSERT_STR_EQ(jtext(&t->a, docs),
                "[{\"n\":{\"m\":{\"1\":20},\"o\":\"p\"},\"a\":1,\"_id\":\"x1\"},{\"a\":2,\"arr\":{\"1\":{\"q\":2}},\"_id\":\"x2\"}]");
  /* covering: only _id and the columns */
  const char *q = "{'selector':{'a':{'$gt':0},'n.o':{'$exists':true}},'fields':['_id','n.o'],'execution_stats':true}";
  json_val *e = explain(t, q);
  ASSERT_MEMBER(&t->a, e, "index.name", "\"cov\"");
  ASSERT_MEMBER(&t->a, e, "covering", "true");
  ASSERT_MEMBER(&t->a, e, "mrargs.include_docs", "false");
  ASSERT_MEMBER(&t->a, e, "divan.covering", "true");
  ASSERT_OK(find(t, q, &docs, &r, &why));
  ASSERT_STR_EQ(jtext(&t->a, docs), "[{\"_id\":\"x1\",\"n\":{\"o\":\"p\"}}]");
  ASSERT_MEMBER(&t->a, r.stats, "total_docs_examined", "0");
  ASSERT_MEMBER(&t->a, r.stats, "total_keys_examined", "1");
  /* a field beyond the columns: not covering */
  e = explain(t, "{'selector':{'a':{'$gt':0},'n.o':{'$exists':true}},'fields':['_id','z']}");
  ASSERT_MEMBER(&t->a, e, "covering", "false");
  ASSERT_STR_EQ(find_ids(t, "{'selector':{'a':{'$gt':0},'n.o':{'$exists':true}},'fields':['_id','z']}"), "x1");
  /* candidates' covering uses fields only */
  e = explain(t, "{'selector':{'z':true},'fields':['a']}");
  ASSERT_MEMBER(&t->a, e, "index.name", "\"_all_docs\"");
  ASSERT_MEMBER(&t->a, json_obj_getz(e, "index_candidates")->u.items[0], "analysis.covering", "true");
  ASSERT_MEMBER(&t->a, e, "selector_hints",
                "[{\"type\":\"json\",\"indexable_fields\":[\"z\"],\"unindexable_fields\":[]}]");
  close_db(t);
}

/* ---- randomized: mq_find against a brute-force filter and sort ----------------------------- */

static void rand_val(dv_buf *b, uint64_t *st, int depth) {
  switch (storet_below(st, depth ? 7 : 9)) {
  case 0: buf_puts(b, "null"); break;
  case 1: buf_puts(b, storet_chance(st, 1, 2) ? "true" : "false"); break;
  case 2:
  case 3: buf_printf(b, "%d", (int)storet_below(st, 7) - 2); break;
  case 4: buf_printf(b, "%d.5", (int)storet_below(st, 4)); break;
  case 5:
  case 6: {
    static const char *s[] = {"a", "A", "ab", "b", "B", "ba", ""};
    buf_printf(b, "\"%s\"", s[storet_below(st, 7)]);
    break;
  }
  case 7: {
    size_t n = storet_below(st, 3);
    buf_putc(b, '[');
    for (size_t i = 0; i < n; i++) {
      if (i) buf_putc(b, ',');
      rand_val(b, st, depth + 1);
    }
    buf_putc(b, ']');
    break;
  }
  default:
    buf_puts(b, "{\"x\":");
    rand_val(b, st, depth + 1);
    buf_putc(b, '}');
  }
}

static const char *const rfields[] = {"a", "b", "c.d"};

static void rand_cond(dv_buf *b, uint64_t *st, int depth) {
  const char *f = rfields[storet_below(st, 3)];
  int k = (int)storet_below(st, depth < 2 ? 12 : 10);
  if (k >= 10) {
    buf_puts(b, k == 10 ? "{\"$or\":[" : "{\"$and\":[");
    size_t n = 1 + storet_below(st, 3);
    for (size_t i = 0; i < n; i++) {
      if (i) buf_putc(b, ',');
      rand_cond(b, st, depth + 1);
    }
    buf_puts(b, "]}");
    return;
  }
  static const char *ops[] = {"$eq", "$gt", "$gte", "$lt", "$lte", "$ne", "$in", "$exists", "$beginsWith", "$eq"};
  buf_printf(b, "{\"%s\":{\"%s\":", f, ops[k]);
  if (k == 6) {
    size_t n = storet_below(st, 4);
    buf_putc(b, '[');
    for (size_t i = 0; i < n; i++) {
      if (i) buf_putc(b, ',');
      rand_val(b, st, 1);
    }
    buf_putc(b, ']');
  } else if (k == 7) {
    buf_puts(b, storet_chance(st, 3, 4) ? "true" : "false");
  } else if (k == 8) {
    buf_puts(b, storet_chance(st, 1, 2) ? "\"a\"" : "\"B\"");
  } else {
    rand_val(b, st, 1);
  }
  buf_puts(b, "}}");
}

typedef struct bf {
  json_val *doc;
  json_val *key; /* the sort/index key, NULL for _all_docs */
} bf;

static int bf_desc;
static int bf_cmp(const void *x, const void *y) {
  const bf *p = x, *q = y;
  int c = 0;
  if (p->key) c = collate_cmp(p->key, q->key);
  if (!c) {
    const json_val *a = json_obj_getz(p->doc, "_id"), *b = json_obj_getz(q->doc, "_id");
    size_t n = a->len < b->len ? a->len : b->len;
    c = memcmp(a->u.s, b->u.s, n);
    if (!c) c = a->len < b->len ? -1 : a->len > b->len;
  }
  return bf_desc ? -c : c;
}

/* A random body for document id into b: fields a, b and c.d, some missing. */
static void rand_doc(dv_buf *b, uint64_t *st, const char *id, const char *rev) {
  buf_printf(b, "{\"_id\":\"%s\"", id);
  if (rev) buf_printf(b, ",\"_rev\":\"%s\"", rev);
  for (int f = 0; f < 3; f++) {
    if (storet_chance(st, 1, 6)) continue;
    if (f == 2) buf_puts(b, storet_chance(st, 1, 8) ? ",\"c\":5" : ",\"c\":{\"d\":");
    else buf_printf(b, ",\"%s\":", rfields[f]);
    if (f == 2 && b->p[b->len - 1] == '5') continue;
    rand_val(b, st, 0);
    if (f == 2) buf_putc(b, '}');
  }
  buf_putc(b, '}');
  buf_putc(b, 0);
}

/* Random documents, indexes made over them (the background build), then
 * random updates, deletions and replicated conflicting branches while the
 * indexes are live; then random queries, each compared with a brute force
 * over every document in the chosen index's order. On the embedded engine,
 * and on the FoundationDB double with commit_unknown_result injected into
 * every write (mquery_random_fdb). */
static void random_run(int fdb) {
  uint64_t st = storet_seed("mquery_random", 20261124);
  long nq = storet_env_long("DV_MQ_QUERIES", 400);
  if (fdb) setenv("DV_STORE_BACKEND", "fdb", 1);
  storet *t = storet_open_fault("db");
  store_set_hooks(t->s, &(store_hooks_provider){.load = load, .unload = unload, .arg = t->s});
  ASSERT_OK(mindex_start(t->s));
  kv_fault_seed(t->kv, st);
  kv_fault_set(t->kv, KV_FAULT_COMMIT_UNKNOWN_AFTER, 0.05, -1);
  kv_fault_set(t->kv, KV_FAULT_COMMIT_UNKNOWN_BEFORE, 0.05, -1);
  int ndocs = 120;
  char (*idv)[16] = calloc((size_t)ndocs, sizeof *idv);
  ASSERT(idv != NULL);
  for (int i = 0; i < ndocs; i++) {
    dv_buf b = DV_BUF_INIT;
    snprintf(idv[i], sizeof idv[i], "r%03d", (int)storet_below(&st, 1000) * 1000 + i);
    rand_doc(&b, &st, idv[i], NULL);
    ASSERT_OK(storet_put_doc(t->db, &t->a, (const char *)b.p, 1, NULL));
    buf_free(&b);
  }
  add_index(t, "ia", "a", "{'a':'asc'}", NULL);
  add_index(t, "iab", "ab", "{'a':'asc','b':'asc'}", NULL);
  add_index(t, "ib", "b", "{'b':'desc'}", NULL);
  add_index(t, "icd", "cd", "{'c.d':'asc','a':'asc'}", NULL);
  /* edits while the indexes are live (or still building) */
  for (int k = 0; k < 150; k++) {
    arena_reset(&t->a);
    const char *id = idv[storet_below(&st, (uint64_t)ndocs)];
    json_val *cur;
    if (storet_get(t->db, &t->a, id, NULL, 0, &cur) != 0) continue; /* deleted: left so */
    const json_val *rv = json_obj_getz(cur, "_rev");
    const char *rev = arena_strndup(&t->a, rv->u.s, rv->len);
    dv_buf b = DV_BUF_INIT;
    unsigned op = (unsigned)storet_below(&st, 10);
    if (op < 6) { /* update */
      rand_doc(&b, &st, id, rev);
      ASSERT_OK(storet_put_doc(t->db, &t->a, (const char *)b.p, 1, NULL));
    } else if (op < 7) { /* delete */
      ASSERT_OK(storet_put(t->db, &t->a, id, NULL, rev, 1, NULL));
    } else { /* a replicated branch: it wins or loses by its rev */
      char r2[48];
      snprintf(r2, sizeof r2, "%d-%016llx%016llx", 1 + (int)storet_below(&st, 3), (unsigned long long)storet_rand(&st),
               (unsigned long long)storet_rand(&st));
      rand_doc(&b, &st, id, r2);
      ASSERT_OK(storet_put_doc(t->db, &t->a, (const char *)b.p, 0, NULL));
    }
    buf_free(&b);
  }
  kv_fault_clear(t->kv);
  free(idv);
  /* every document, for the brute force */
  json_val **docs = calloc((size_t)ndocs, sizeof *docs);
  dv_arena keep;
  arena_init(&keep, 0);
  {
    mq_req *q;
    const char *why;
    ASSERT_OK(mq_parse(&keep, J(&keep, "{'selector':{},'limit':100000}"), &q, &why));
    got g = {&keep, json_new_array(&keep), 0};
    mq_result r;
    ASSERT_OK(mq_find(t->db, &keep, q, &(mq_sink){sink_doc, &g}, &r, &why));
    ASSERT(g.docs->len <= (size_t)ndocs);
    ndocs = (int)g.docs->len; /* the live ones */
    for (int i = 0; i < ndocs; i++) docs[i] = g.docs->u.items[i];
  }
  int ran = 0, multi = 0, errs = 0;
  for (long n = 0; n < nq; n++) {
    arena_reset(&t->a);
    dv_buf b = DV_BUF_INIT;
    buf_puts(&b, "{\"selector\":");
    if (storet_chance(&st, 1, 2)) {
      rand_cond(&b, &st, 0);
    } else {
      buf_puts(&b, "{\"$and\":[");
      size_t k = 1 + storet_below(&st, 3);
      for (size_t i = 0; i < k; i++) {
        if (i) buf_putc(&b, ',');
        rand_cond(&b, &st, 1);
      }
      buf_puts(&b, "]}");
    }
    int sort = (int)storet_below(&st, 5); /* 0,1: none; 2: a; 3: a desc; 4: b */
    if (sort == 2) buf_puts(&b, ",\"sort\":[\"a\"]");
    if (sort == 3) buf_puts(&b, ",\"sort\":[{\"a\":\"desc\"}]");
    if (sort == 4) buf_puts(&b, ",\"sort\":[{\"b\":\"asc\"}]");
    int64_t limit = storet_chance(&st, 1, 3) ? (int64_t)storet_below(&st, 10) : 1000;
    int64_t skip = storet_chance(&st, 1, 3) ? (int64_t)storet_below(&st, 5) : 0;
    buf_printf(&b, ",\"limit\":%d,\"skip\":%d}", (int)limit, (int)skip);
    buf_putc(&b, 0);
    const char *body = arena_strndup(&t->a, (const char *)b.p, b.len);
    buf_free(&b);
    json_val *jb;
    ASSERT_OK(json_parse(&t->a, body, strlen(body), NULL, &jb, NULL));
    mq_req *q;
    const char *why = NULL;
    ASSERT_OK(mq_parse(&t->a, jb, &q, &why));
    json_val *e;
    ASSERTF(mq_explain(t->db, &t->a, q, &e, &why) == 0, "%s: %s", body, why);
    got g = {&t->a, json_new_array(&t->a), 0};
    mq_result r;
    int rc = mq_find(t->db, &t->a, q, &(mq_sink){sink_doc, &g}, &r, &why);
    if (rc) {
      ASSERTF(rc == DV_EMQ_NO_INDEX && sort >= 2, "%s: %d %s", body, rc, why);
      ASSERT_STR_EQ(member_text(&t->a, e, "index"), "null");
      errs++;
      continue;
    }
    ran++;
    /* the brute force, in the chosen index's order */
    const json_val *ix = json_obj_getz(e, "index");
    const json_val *fl = json_obj_getz(json_obj_getz(ix, "def"), "fields");
    const json_val *ixn = json_obj_getz(ix, "name"); /* JSON strings are not NUL-terminated */
    int special = ixn->len == 9 && !memcmp(ixn->u.s, "_all_docs", 9);
    const json_val *sel = json_obj_getz(jb, "selector");
    mango_sel *ms;
    ASSERT_OK(mango_parse(&t->a, sel, &ms, NULL));
    bf *want = arena_alloc(&t->a, (size_t)ndocs * sizeof *want);
    size_t nw = 0;
    for (int i = 0; i < ndocs; i++) {
      json_val *key = NULL;
      if (!special) {
        key = json_new_array(&t->a);
        int missing = 0;
        for (size_t c = 0; c < fl->len; c++) {
          const json_member *m = &fl->u.items[c]->u.members[0];
          const json_val *v = mi_field(docs[i], m->key, m->klen);
          if (!v) missing = 1;
          else ASSERT_OK(json_arr_push(&t->a, key, (json_val *)v));
        }
        if (missing) continue;
      }
      if (!mango_match(ms, docs[i])) continue;
      want[nw].doc = docs[i];
      want[nw].key = key;
      nw++;
    }
    bf_desc = sort == 3;
    if (nw) qsort(want, nw, sizeof *want, bf_cmp);
    dv_buf w = DV_BUF_INIT;
    int emitted = 0;
    int empty = r.ran == 0;
    for (size_t i = (size_t)skip; !empty && i < nw && emitted < limit; i++, emitted++) {
      if (emitted) buf_putc(&w, ',');
      const json_val *id = json_obj_getz(want[i].doc, "_id");
      buf_append(&w, id->u.s, id->len);
    }
    buf_putc(&w, 0);
    const char *got_ids = ids(&t->a, g.docs);
    ASSERTF(!strcmp(got_ids, (const char *)w.p), "query %ld %s (index %s, ranges %s):\n  got  %s\n  want %s", n, body,
            jtext(&t->a, ix), member_text(&t->a, e, "divan.ranges"), got_ids, (const char *)w.p);
    if (empty) ASSERT_EQ(g.docs->len, 0);
    buf_free(&w);
    if (!special && strcmp(member_text(&t->a, e, "divan.ranges"), "1")) multi++;
  }
  printf("mquery_random: %d queries ran (%d multi-range), %d no_usable_index\n", ran, multi, errs);
  ASSERT(ran > nq / 2);
  ASSERT(multi > 0);
  free(docs);
  arena_free(&keep);
  close_db(t);
  if (fdb) unsetenv("DV_STORE_BACKEND");
}

TEST(mquery_random) { random_run(0); }
TEST(mquery_random_fdb) { random_run(1); }
