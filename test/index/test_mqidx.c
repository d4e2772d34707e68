/* test_mqidx.c — Mango's index definitions (src/index/mqidx.c): POST
 * _index validation with CouchDB 3.4's errors and reasons, the generated
 * names (CouchDB's SHA-1 over the Erlang term), the design document built
 * by adding an index ("created" vs "exists", language and partitioned
 * checks), and GET _index's list shapes. */
#include <string.h>

#include "idxt.h"
#include "index/mindex.h"
#include "index/mquery.h"
#include "test.h"

#define J idxt_json

static char *text_of(const json_val *v) {
  static char out[4096];
  dv_buf b;
  buf_init(&b);
  if (json_write(&b, v) || b.len >= sizeof out) {
    buf_free(&b);
    return "<?>";
  }
  memcpy(out, b.p, b.len);
  out[b.len] = 0;
  buf_free(&b);
  return out;
}

TEST(mqidx_parse_names) {
  dv_arena a;
  arena_init(&a, 0);
  mq_index_req q;
  const char *why;
  /* the spec's computed names (Appendix A encoding, 3.4 option set) */
  ASSERT_OK(mq_index_parse(&a, J(&a, "{'index':{'fields':['foo']},'name':'foo-index','type':'json'}"), &q, &why));
  ASSERT_STR_EQ(q.ddoc, "_design/74644dcd981a77aa2a982e4eb0956fbad86c5a3f");
  ASSERT_STR_EQ(q.name, "foo-index");
  ASSERT_EQ(q.partitioned, -1);
  ASSERT_STR_EQ(text_of(q.view), "{\"map\":{\"fields\":{\"foo\":\"asc\"},\"partial_filter_selector\":{}},"
                                 "\"reduce\":\"_count\",\"options\":{\"def\":{\"fields\":[\"foo\"]}}}");
  ASSERT_OK(mq_index_parse(&a, J(&a, "{'index':{'fields':['year']}}"), &q, &why));
  ASSERT_STR_EQ(q.name, "855c8056b450efa1f5018cd1cc092c62b6fdaa2d");
  ASSERT_STR_EQ(q.ddoc, "_design/855c8056b450efa1f5018cd1cc092c62b6fdaa2d");
  /* defaults and explicit equal values hash alike; w changes it */
  ASSERT_OK(mq_index_parse(&a, J(&a, "{'index':{'fields':['year']},'type':'json','w':2}"), &q, &why));
  ASSERT_STR_EQ(q.name, "855c8056b450efa1f5018cd1cc092c62b6fdaa2d");
  ASSERT_OK(mq_index_parse(&a, J(&a, "{'index':{'fields':['year']},'w':3}"), &q, &why));
  ASSERT(strcmp(q.name, "855c8056b450efa1f5018cd1cc092c62b6fdaa2d"));
  ASSERT_EQ(strlen(q.name), 40);
  /* a given ddoc, with or without its prefix; desc fields; a partial filter */
  ASSERT_OK(mq_index_parse(&a,
                           J(&a, "{'index':{'fields':[{'a':'desc'},{'b.c':'desc'}],"
                                 "'partial_filter_selector':{'t':'x'}},'ddoc':'d','partitioned':false}"),
                           &q, &why));
  ASSERT_STR_EQ(q.ddoc, "_design/d");
  ASSERT_EQ(strlen(q.name), 40);
  ASSERT_EQ(q.partitioned, 0);
  ASSERT_STR_EQ(text_of(json_obj_getz(q.view, "map")),
                "{\"fields\":{\"a\":\"desc\",\"b.c\":\"desc\"},\"partial_filter_selector\":{\"t\":{\"$eq\":\"x\"}}}");
  ASSERT_OK(mq_index_parse(&a, J(&a, "{'index':{'fields':[]},'ddoc':'_design/x','name':'n'}"), &q, &why));
  ASSERT_STR_EQ(q.ddoc, "_design/x");
  arena_free(&a);
}

TEST(mqidx_parse_errors) {
  static const struct {
    const char *body;
    int rc;
    const char *why;
  } t[] = {
      {"{}", DV_EMQ_MISSING_KEY, "Missing required key: index"},
      {"{'zz':1}", DV_EMQ_MISSING_KEY, "Missing required key: index"},
      {"{'index':{'fields':['a']},'zz':1}", DV_EMQ_INVALID_KEY, "Invalid key zz for this request."},
      {"{'index':{'fields':['a']},'partial_filter_selector':{}}", DV_EMQ_INVALID_KEY,
       "Invalid key partial_filter_selector for this request."},
      {"{'index':{},'type':1}", DV_EMQ_STRING, "Invalid string: 1"},
      {"{'index':{},'name':['x']}", DV_EMQ_STRING, "Invalid string: [<<120>>]"},
      {"{'index':{},'ddoc':{'a':true}}", DV_EMQ_STRING, "Invalid string: {[{<<97>>,true}]}"},
      {"{'index':{},'w':0}", DV_EMQ_POS_INTEGER, "0 is not an integer greater than zero"},
      {"{'index':{},'w':-1}", DV_EMQ_POS_INTEGER, "-1 is not an integer greater than zero"},
      {"{'index':{},'w':2.0}", DV_EMQ_POS_INTEGER, "2.0 is not an integer greater than zero"},
      {"{'index':{},'w':'x'}", DV_EMQ_POS_INTEGER, "<<120>> is not an integer greater than zero"},
      {"{'index':{},'partitioned':'x'}", DV_EMQ_PARTITIONED_VALUE, "Invalid value for partitioned: <<120>>"},
      {"{'index':{},'type':'geo'}", DV_EMQ_INDEX, "Invalid type for index: geo"},
      {"{'index':{},'type':'text'}", DV_EMQ_SERVICE, "text"},
      {"{'index':{},'type':'nouveau'}", DV_EMQ_SERVICE, "nouveau"},
      {"{'index':{'fields':['a']},'ddoc':''}", DV_EBAD_DOCID, "Illegal document id `_design/`"},
      {"{'index':{'fields':['a']},'ddoc':'_design/'}", DV_EBAD_DOCID, "Illegal document id `_design/`"},
      {"{'index':['a']}", DV_EMQ_INDEX, "JSON indexes must be an object, not: [<<97>>]"},
      {"{'index':'a'}", DV_EMQ_INDEX, "JSON indexes must be an object, not: <<97>>"},
      {"{'index':{}}", DV_EMQ_MISSING_KEY, "Missing required key: fields"},
      {"{'index':{'fields':'a'}}", DV_EMQ_SORT_JSON, "Sort must be an array of sort specs, not: <<97>>"},
      {"{'index':{'fields':['']}}", DV_EMQ_SORT_FIELD, "Invalid sort field: <<>>"},
      {"{'index':{'fields':[1.5e10]}}", DV_EMQ_SORT_FIELD, "Invalid sort field: 1.5e10"},
      {"{'index':{'fields':[1e10]}}", DV_EMQ_SORT_FIELD, "Invalid sort field: 1.0e10"},
      {"{'index':{'fields':[100.0]}}", DV_EMQ_SORT_FIELD, "Invalid sort field: 100.0"},
      {"{'index':{'fields':[-0.001]}}", DV_EMQ_SORT_FIELD, "Invalid sort field: -0.001"},
      {"{'index':{'fields':[1e-7]}}", DV_EMQ_SORT_FIELD, "Invalid sort field: 1.0e-7"},
      {"{'index':{'fields':[0.5,2]}}", DV_EMQ_SORT_FIELD, "Invalid sort field: 0.5"},
      {"{'index':{'fields':[12]}}", DV_EMQ_SORT_FIELD, "Invalid sort field: 12"},
      {"{'index':{'fields':[{'a':'up'}]}}", DV_EMQ_SORT_FIELD, "Invalid sort field: {[{<<97>>,<<117,112>>}]}"},
      {"{'index':{'fields':[{'a':'asc','b':'asc'}]}}", DV_EMQ_SORT_FIELD,
       "Invalid sort field: {[{<<97>>,<<97,115,99>>},{<<98>>,<<97,115,99>>}]}"},
      {"{'index':{'fields':['a',{'b':'desc'}]}}", DV_EMQ_MIXED_SORT,
       "Sorts currently only support a single direction for all fields."},
      {"{'index':{'fields':['a'],'partial_filter_selector':[]}}", DV_EMANGO_SELECTOR_JSON,
       "Selector must be a JSON object, not: []"},
      {"{'index':{'fields':['a'],'partial_filter_selector':{'a':{'$foo':1}}}}", DV_EMANGO_OPERATOR, NULL},
      {"{'index':{'fields':['a'],'x':1}}", DV_EMQ_INVALID_KEY, "Invalid key x for this request."},
  };
  dv_arena a;
  arena_init(&a, 0);
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    mq_index_req q;
    const char *why = NULL;
    int rc = mq_index_parse(&a, J(&a, t[i].body), &q, &why);
    ASSERTF(rc == t[i].rc, "%s: rc %d, want %d", t[i].body, rc, t[i].rc);
    if (t[i].why) ASSERTF(why && !strcmp(why, t[i].why), "%s: why '%s'", t[i].body, why ? why : "(null)");
    else ASSERTF(why != NULL, "%s: no reason", t[i].body);
  }
  arena_free(&a);
}

TEST(mqidx_add) {
  dv_arena a;
  arena_init(&a, 0);
  mq_index_req q;
  const char *why;
  json_val *doc;
  int exists = -1;
  ASSERT_OK(mq_index_parse(&a, J(&a, "{'index':{'fields':['foo']},'name':'foo-index','ddoc':'d'}"), &q, &why));
  ASSERT_OK(mq_index_add(&a, NULL, &q, &doc, &exists, &why));
  ASSERT_EQ(exists, 0);
  ASSERT_STR_EQ(text_of(doc), "{\"_id\":\"_design/d\",\"language\":\"query\",\"views\":{\"foo-index\":{\"map\":"
                              "{\"fields\":{\"foo\":\"asc\"},\"partial_filter_selector\":{}},\"reduce\":\"_count\","
                              "\"options\":{\"def\":{\"fields\":[\"foo\"]}}}}}");
  /* stored (with a rev): the same index again exists */
  ASSERT_OK(json_obj_setz(&a, doc, "_rev", json_new_stringz(&a, "1-abc")));
  json_val *doc2;
  ASSERT_OK(mq_index_add(&a, doc, &q, &doc2, &exists, &why));
  ASSERT_EQ(exists, 1);
  /* as the store gives it back: members sorted */
  ASSERT_OK(mq_index_add(&a,
                         J(&a, "{'_id':'_design/d','_rev':'1-abc','language':'query','views':{'foo-index':{"
                               "'map':{'fields':{'foo':'asc'},'partial_filter_selector':{}},"
                               "'options':{'def':{'fields':['foo']}},'reduce':'_count'}}}"),
                         &q, &doc2, &exists, &why));
  ASSERT_EQ(exists, 1);
  /* another name is appended; the same name with other fields replaced in place */
  mq_index_req q2, q3;
  ASSERT_OK(mq_index_parse(&a, J(&a, "{'index':{'fields':['bar']},'name':'bar','ddoc':'d'}"), &q2, &why));
  ASSERT_OK(mq_index_add(&a, doc, &q2, &doc2, &exists, &why));
  ASSERT_EQ(exists, 0);
  const json_val *rev = json_obj_getz(doc2, "_rev"); /* JSON strings are not NUL-terminated */
  ASSERT_MEM_EQ(rev->u.s, rev->len, "1-abc", 5);
  const json_val *v = json_obj_getz(doc2, "views");
  ASSERT_EQ(v->len, 2);
  ASSERT_MEM_EQ(v->u.members[1].key, v->u.members[1].klen, "bar", 3);
  ASSERT_OK(mq_index_parse(&a, J(&a, "{'index':{'fields':['baz']},'name':'foo-index','ddoc':'d'}"), &q3, &why));
  ASSERT_OK(mq_index_add(&a, doc2, &q3, &doc, &exists, &why));
  ASSERT_EQ(exists, 0);
  v = json_obj_getz(doc, "views");
  ASSERT_EQ(v->len, 2);
  ASSERT_MEM_EQ(v->u.members[0].key, v->u.members[0].klen, "foo-index", 9);
  ASSERT_STR_EQ(text_of(json_obj_getz(json_obj_getz(v->u.members[0].val, "map"), "fields")), "{\"baz\":\"asc\"}");
  /* views that is no object is replaced */
  ASSERT_OK(mq_index_add(&a, J(&a, "{'_id':'_design/d','_rev':'1-a','language':'query','views':3,'x':1}"), &q, &doc,
                         &exists, &why));
  ASSERT_STR_EQ(text_of(json_obj_getz(doc, "x")), "1");
  ASSERT_EQ(json_obj_getz(doc, "views")->type, JSON_OBJECT);
  /* language */
  ASSERT_EQ(mq_index_add(&a, J(&a, "{'_id':'_design/d','_rev':'1-a','language':'javascript'}"), &q, &doc, &exists,
                         &why),
            DV_EMQ_DDOC_LANG);
  ASSERT_STR_EQ(why, "Existing design doc has an invalid language: {<<108,97,110,103,117,97,103,101>>,<<106,97,118,97,115,99,114,105,112,116>>}");
  ASSERT_EQ(mq_index_add(&a, J(&a, "{'_id':'_design/d','_rev':'1-a','views':{}}"), &q, &doc, &exists, &why),
            DV_EMQ_DDOC_LANG);
  ASSERT_STR_EQ(why, "Existing design doc has an invalid language: false");
  /* partitioned: set on a new ddoc, a mismatch on an existing one */
  mq_index_req qp;
  ASSERT_OK(mq_index_parse(&a, J(&a, "{'index':{'fields':['a']},'ddoc':'d','partitioned':false}"), &qp, &why));
  ASSERT_OK(mq_index_add(&a, NULL, &qp, &doc, &exists, &why));
  ASSERT_STR_EQ(text_of(json_obj_getz(doc, "options")), "{\"partitioned\":false}");
  ASSERT_EQ(mq_index_add(&a, J(&a, "{'_id':'_design/d','_rev':'1-a','language':'query'}"), &qp, &doc, &exists, &why),
            DV_EMQ_PARTITIONED_OPTION);
  ASSERT_OK(mq_index_add(&a, J(&a, "{'_id':'_design/d','_rev':'1-a','language':'query','options':{'partitioned':false}}"),
                         &qp, &doc, &exists, &why));
  ASSERT_OK(mq_index_parse(&a, J(&a, "{'index':{'fields':['a']},'ddoc':'d','partitioned':true}"), &qp, &why));
  ASSERT_EQ(mq_index_add(&a, NULL, &qp, &doc, &exists, &why), DV_EMQ_DESIGN_DOC);
  arena_free(&a);
}

TEST(mqidx_list_json) {
  dv_arena a;
  arena_init(&a, 0);
  json_val *l = mq_index_list_json(&a, NULL, 0);
  ASSERT(l);
  ASSERT_STR_EQ(text_of(l), "[{\"ddoc\":null,\"name\":\"_all_docs\",\"type\":\"special\","
                            "\"def\":{\"fields\":[{\"_id\":\"asc\"}]}}]");
  mi_def *d;
  size_t n;
  ASSERT_OK(mi_from_ddoc(&a,
                         J(&a, "{'_id':'_design/x','language':'query','views':{"
                               "'b':{'map':{'fields':{'f':'desc','g':'desc'},'partial_filter_selector':{}},"
                               "'reduce':'_count','options':{'def':{'fields':[{'f':'desc'},{'g':'desc'}]}}},"
                               "'a':{'map':{'fields':{'h':'asc'},'partial_filter_selector':{'t':{'$gt':1}}},"
                               "'reduce':'_count','options':{'def':{'fields':['h']}}}}}"),
                         &d, &n));
  ASSERT_EQ(n, 2);
  l = mq_index_list_json(&a, d, n);
  ASSERT(l);
  ASSERT_EQ(l->len, 3);
  ASSERT_STR_EQ(text_of(l->u.items[1]),
                "{\"ddoc\":\"_design/x\",\"name\":\"a\",\"type\":\"json\",\"partitioned\":false,"
                "\"def\":{\"fields\":[{\"h\":\"asc\"}],\"partial_filter_selector\":{\"t\":{\"$gt\":1}}}}");
  ASSERT_STR_EQ(text_of(l->u.items[2]),
                "{\"ddoc\":\"_design/x\",\"name\":\"b\",\"type\":\"json\",\"partitioned\":false,"
                "\"def\":{\"fields\":[{\"f\":\"desc\"},{\"g\":\"desc\"}]}}");
  arena_free(&a);
}
