/* test_mango.c — Mango selectors (src/index/mango.c): matching, parse
 * errors and collation, table-driven.
 *
 * The cases come from CouchDB's documentation ("Selector Syntax",
 * "Condition Operators", "Combination Operators") and from the behaviour
 * of src/mango/src/mango_selector.erl, including its edge cases: negations
 * pushed below fields (so {"$not": {"a": 1}} needs "a"), $exists on bad
 * paths, empty $or/$in/$all/$nin, $all's exact membership, "_id" compared
 * in Erlang term order, Erlang rem for $mod. JSON in the tables is written
 * with single quotes, which the helper turns into double quotes.
 */
#include <pthread.h>

#include "index/mango.h"
#include "idxt.h"
#include "test.h"
#include "util/alloc.h"

#define J idxt_json

#define DOC                                                                              \
  "{'_id':'doc1','_rev':'1-abc','name':'Paul','age':36,'year':2011,"                     \
  "'genre':['Horror','Comedy'],'director':{'name':'Jim','age':50},"                      \
  "'title':'Live And Let Die','imdb':{'rating':8.1,'votes':1500},'tags':[],"             \
  "'results':[82,85,88],'nullf':null,'t':true,'f':false,'obj':{},'a.b':'dotted',"        \
  "'arr':[{'x':1},{'x':2,'y':3}],'big':123456789012345678901234567890,'float':2.5,"      \
  "'models':{'foo':1,'bar':2}}"

struct mcase {
  const char *sel; /* selector */
  const char *doc; /* document (NULL: DOC) */
  int want;        /* 1 = matches */
};

static const struct mcase cases[] = {
    /* equality, implicit $eq, paths */
    {"{'name':'Paul'}", NULL, 1},
    {"{'name':'paul'}", NULL, 0},
    {"{'age':36}", NULL, 1},
    {"{'age':36.0}", NULL, 1},
    {"{'age':{'$eq':36}}", NULL, 1},
    {"{'director':{'name':'Jim'}}", NULL, 1},
    {"{'director.name':'Jim'}", NULL, 1},
    {"{'director':{'$eq':{'name':'Jim','age':50}}}", NULL, 1},
    {"{'director':{'$eq':{'age':50,'name':'Jim'}}}", NULL, 0},
    {"{'director':{'name':'Jim','age':50}}", NULL, 1},
    {"{'director':{'name':'Jim','age':51}}", NULL, 0},
    {"{'missing':null}", NULL, 0},
    {"{'nullf':null}", NULL, 1},
    {"{'genre':['Horror','Comedy']}", NULL, 1},
    {"{'genre':'Horror'}", NULL, 0},
    {"{}", NULL, 1},
    {"{'a\\\\.b':'dotted'}", NULL, 1},
    {"{'a.b':'dotted'}", NULL, 0},
    {"{'arr.1.y':3}", NULL, 1},
    {"{'arr.0.y':3}", NULL, 0},
    {"{'arr.5.x':1}", NULL, 0},
    {"{'arr.x':1}", NULL, 0},
    {"{'results.-0':82}", NULL, 1},
    {"{'results.+1':85}", NULL, 1},
    {"{'results.01':85}", NULL, 1},
    {"{'obj':{}}", NULL, 1},
    {"{'obj':{'$eq':{}}}", NULL, 1},
    {"{'director':{}}", NULL, 0},
    {"{'imdb':{'rating':8.1,'votes':{'$gt':1000}}}", NULL, 1},
    {"{'a':{'b':{'c':1}}}", "{'a':{'b':{'c':1}}}", 1},
    {"{'a':{'b.c':1}}", "{'a':{'b':{'c':1}}}", 1},
    {"{'a.b':{'c':{'$gt':0}}}", "{'a':{'b':{'c':1}}}", 1},
    {"{'':{'b':1}}", "{'b':1}", 1}, /* "" + "b" is "b" in CouchDB's path join */
    /* a key ending with a backslash escapes the dot that joins it to the next */
    {"{'a\\\\':{'b':1}}", "{'a.b':1}", 1},
    {"{'a\\\\':{'b':1}}", "{'a':{'b':1}}", 0},
    {"{'x':{'a\\\\':{'b.c':1}}}", "{'x':{'a.b':{'c':1}}}", 1},
    {"{'a\\\\':{'':1}}", "{'a.':1}", 1},
    {"{'a\\\\':1}", "{'a':1}", 1},
    {"{'a\\\\':{'b\\\\':{'c':1}}}", "{'a.b.c':1}", 1},
    {"{'a..b':{'$and':[]}}", NULL, 1}, /* a bad path no condition uses is no error */

    /* comparisons and collation across types */
    {"{'year':{'$gt':2010}}", NULL, 1},
    {"{'year':{'$gt':2011}}", NULL, 0},
    {"{'year':{'$gte':2011}}", NULL, 1},
    {"{'year':{'$lt':2012}}", NULL, 1},
    {"{'year':{'$lte':2010}}", NULL, 0},
    {"{'year':{'$ne':2011}}", NULL, 0},
    {"{'year':{'$ne':2012}}", NULL, 1},
    {"{'missing':{'$ne':1}}", NULL, 0},
    {"{'missing':{'$lt':1}}", NULL, 0},
    {"{'name':{'$gt':5}}", NULL, 1},
    {"{'name':{'$lt':5}}", NULL, 0},
    {"{'nullf':{'$lt':false}}", NULL, 1},
    {"{'f':{'$lt':true}}", NULL, 1},
    {"{'t':{'$lt':0}}", NULL, 1},
    {"{'genre':{'$gt':'zzz'}}", NULL, 1},
    {"{'director':{'$gt':['a']}}", NULL, 1},
    {"{'big':{'$gt':123456789012345678901234567889}}", NULL, 1},
    {"{'big':{'$lt':1.2345678901234568e29}}", NULL, 1},
    {"{'big':{'$gt':1.2345678901234568e29}}", NULL, 0},
    {"{'float':{'$gt':2}}", NULL, 1},
    {"{'float':{'$lt':3}}", NULL, 1},
    {"{'float':2.50}", NULL, 1},
    {"{'float':{'$gte':25e-1}}", NULL, 1},
    {"{'imdb.rating':{'$gte':8}}", NULL, 1},
    {"{'genre':{'$lt':['Horror','Comedy','X']}}", NULL, 1},
    {"{'genre':{'$gt':['Horror']}}", NULL, 1},
    {"{'director':{'$lt':{'name':'Jim','age':50,'z':1}}}", NULL, 1},
    {"{'director':{'$gt':{'name':'Jil'}}}", NULL, 1},
    {"{'name':{'$lt':'Z'}}", NULL, 1},
    {"{'n':{'$gt':9007199254740992.0}}", "{'n':9007199254740993}", 1},
    {"{'n':0}", "{'n':-0.0}", 1},
    {"{'n':{'$gt':0}}", "{'n':1e-400}", 1},
    {"{'n':{'$gt':1e308}}", "{'n':1e400}", 1},

    /* $exists */
    {"{'name':{'$exists':true}}", NULL, 1},
    {"{'name':{'$exists':false}}", NULL, 0},
    {"{'missing':{'$exists':false}}", NULL, 1},
    {"{'missing':{'$exists':true}}", NULL, 0},
    {"{'nullf':{'$exists':true}}", NULL, 1},
    {"{'name.first':{'$exists':false}}", NULL, 0}, /* a bad path is no "not found" */
    {"{'director.first':{'$exists':false}}", NULL, 1},
    {"{'results.7':{'$exists':false}}", NULL, 0},
    {"{'$not':{'missing':{'$exists':true}}}", NULL, 1},
    {"{'missing':{'$not':{'$exists':true}}}", NULL, 1},
    {"{'$not':{'name':{'$exists':false}}}", NULL, 1},

    /* $type */
    {"{'name':{'$type':'string'}}", NULL, 1},
    {"{'age':{'$type':'number'}}", NULL, 1},
    {"{'float':{'$type':'number'}}", NULL, 1},
    {"{'nullf':{'$type':'null'}}", NULL, 1},
    {"{'t':{'$type':'boolean'}}", NULL, 1},
    {"{'genre':{'$type':'array'}}", NULL, 1},
    {"{'director':{'$type':'object'}}", NULL, 1},
    {"{'name':{'$type':'object'}}", NULL, 0},
    {"{'name':{'$type':'foo'}}", NULL, 0},
    {"{'missing':{'$type':'null'}}", NULL, 0},

    /* $in, $nin */
    {"{'name':{'$in':['Paul','John']}}", NULL, 1},
    {"{'name':{'$in':['John']}}", NULL, 0},
    {"{'genre':{'$in':['Comedy']}}", NULL, 1},
    {"{'genre':{'$in':[['Horror','Comedy']]}}", NULL, 0},
    {"{'name':{'$in':[]}}", NULL, 0},
    {"{'name':{'$nin':['John']}}", NULL, 1},
    {"{'name':{'$nin':['Paul']}}", NULL, 0},
    {"{'genre':{'$nin':['Comedy']}}", NULL, 0},
    {"{'genre':{'$nin':['Drama']}}", NULL, 1},
    {"{'missing':{'$nin':['x']}}", NULL, 0},
    {"{'name':{'$nin':[]}}", NULL, 1},
    {"{'age':{'$in':[36.0]}}", NULL, 1},
    {"{'tags':{'$in':['x']}}", NULL, 0},
    {"{'tags':{'$nin':['x']}}", NULL, 1},

    /* $all */
    {"{'genre':{'$all':['Comedy','Horror']}}", NULL, 1},
    {"{'genre':{'$all':['Comedy','Drama']}}", NULL, 0},
    {"{'genre':{'$all':[]}}", NULL, 0},
    {"{'genre':{'$all':[['Horror','Comedy']]}}", NULL, 1},
    {"{'name':{'$all':['Paul']}}", NULL, 0},
    {"{'results':{'$all':[82.0]}}", NULL, 0}, /* lists:member is =:= */
    {"{'results':{'$all':[82,88]}}", NULL, 1},
    {"{'results':{'$all':[[82.0,85,88]]}}", NULL, 1}, /* but the whole-list form is == */

    /* $size */
    {"{'genre':{'$size':2}}", NULL, 1},
    {"{'genre':{'$size':1}}", NULL, 0},
    {"{'tags':{'$size':0}}", NULL, 1},
    {"{'name':{'$size':4}}", NULL, 0},
    {"{'tags':{'$size':123456789012345678901234567890}}", NULL, 0},

    /* $mod: Erlang rem, integers only */
    {"{'age':{'$mod':[5,1]}}", NULL, 1},
    {"{'age':{'$mod':[5,2]}}", NULL, 0},
    {"{'float':{'$mod':[2,0]}}", NULL, 0},
    {"{'n':{'$mod':[3,-1]}}", "{'n':-7}", 1},
    {"{'n':{'$mod':[3,2]}}", "{'n':-7}", 0},
    {"{'n':{'$mod':[-3,-1]}}", "{'n':-7}", 1},
    {"{'n':{'$mod':[-3,1]}}", "{'n':7}", 1},
    {"{'big':{'$mod':[11,7]}}", NULL, 1},
    {"{'big':{'$mod':[13,0]}}", NULL, 1},
    {"{'big':{'$mod':[1000000000000000000000,12345678901234567890]}}", NULL, 1},
    {"{'big':{'$mod':[9223372036854775807,4860475750367701695]}}", NULL, 1},
    {"{'n':{'$mod':[1000,-890]}}", "{'n':-123456789012345678901234567890}", 1},
    {"{'n':{'$mod':[100000000000000000000,-5]}}", "{'n':-5}", 1},
    {"{'n':{'$mod':[-1,0]}}", "{'n':-9223372036854775808}", 1},
    {"{'n':{'$mod':[5,0]}}", "{'n':5.0}", 0},
    {"{'n':{'$mod':[5,0]}}", "{'n':-0}", 1},
    {"{'n':{'$mod':[5,-0]}}", "{'n':10}", 1},

    /* $regex (PCRE approximated by POSIX ERE) */
    {"{'name':{'$regex':'^P'}}", NULL, 1},
    {"{'name':{'$regex':'^p'}}", NULL, 0},
    {"{'name':{'$regex':'(?i)^p'}}", NULL, 1},
    {"{'name':{'$regex':'a.l'}}", NULL, 1},
    {"{'title':{'$regex':'\\\\d'}}", NULL, 0},
    {"{'year':{'$regex':'2011'}}", NULL, 0},
    {"{'s':{'$regex':'^[a-z]+\\\\d{3}$'}}", "{'s':'abc123'}", 1},
    {"{'s':{'$regex':'^\\\\w+$'}}", "{'s':'abc123'}", 1},
    {"{'s':{'$regex':'^\\\\w+$'}}", "{'s':'abc 123'}", 0},
    {"{'s':{'$regex':'\\\\s'}}", "{'s':'abc 123'}", 1},
    {"{'s':{'$regex':'(?:abc)+1'}}", "{'s':'abc123'}", 1},
    {"{'s':{'$regex':'b.*?3'}}", "{'s':'abc123'}", 1},
    {"{'s':{'$regex':'[\\\\d]{3}'}}", "{'s':'abc123'}", 1},
    {"{'s':{'$regex':'x|c1'}}", "{'s':'abc123'}", 1},
    {"{'s':{'$regex':'a\\\\.b'}}", "{'s':'a.b'}", 1},
    {"{'s':{'$regex':'a\\\\.b'}}", "{'s':'axb'}", 0},
    {"{'s':{'$regex':'[\\\\]]'}}", "{'s':'a]b'}", 1},
    {"{'s':{'$regex':'a[\\\\-x]b'}}", "{'s':'a-b'}", 1},
    {"{'s':{'$regex':'\\\\t'}}", "{'s':'tab\\there'}", 1},
    {"{'s':{'$regex':'\\\\x41'}}", "{'s':'zAz'}", 1},
    {"{'s':{'$regex':'a{2}'}}", "{'s':'baab'}", 1},
    {"{'s':{'$regex':'a{x'}}", "{'s':'a{x'}", 1},
    {"{'s':{'$regex':'b$'}}", "{'s':'a\\u0000b'}", 1},
    {"{'s':{'$regex':''}}", "{'s':''}", 1},
    {"{'s':{'$regex':'^(a{2}){3}$'}}", "{'s':'aaaaaa'}", 1},
    {"{'s':{'$regex':'^(a{2}){3}$'}}", "{'s':'aaaaa'}", 0},
    {"{'s':{'$regex':'^(?:a+?|b)+$'}}", "{'s':'abba'}", 1},
    {"{'s':{'$regex':'(x{30}){30}|ok'}}", "{'s':'ok'}", 1},
    {"{'s':{'$regex':'^{a'}}", "{'s':'{a'}", 1},
    {"{'s':{'$regex':'(ab|^)*?c+?\\\\*'}}", "{'s':'abc*'}", 1},
    {"{'s':{'$regex':'(?i)[a]*+B'}}", "{'s':'aab'}", 1},

    /* $beginsWith */
    {"{'name':{'$beginsWith':'Pa'}}", NULL, 1},
    {"{'name':{'$beginsWith':'pa'}}", NULL, 0},
    {"{'name':{'$beginsWith':''}}", NULL, 1},
    {"{'name':{'$beginsWith':'Paula'}}", NULL, 0},
    {"{'age':{'$beginsWith':'3'}}", NULL, 0},
    {"{'_id':{'$beginsWith':'doc'}}", NULL, 1},

    /* $elemMatch, $allMatch, $keyMapMatch */
    {"{'genre':{'$elemMatch':{'$eq':'Horror'}}}", NULL, 1},
    {"{'results':{'$elemMatch':{'$gte':80,'$lt':85}}}", NULL, 1},
    {"{'results':{'$elemMatch':{'$gte':89}}}", NULL, 0},
    {"{'arr':{'$elemMatch':{'x':2,'y':3}}}", NULL, 1},
    {"{'arr':{'$elemMatch':{'x':1,'y':3}}}", NULL, 0},
    {"{'tags':{'$elemMatch':{'$exists':true}}}", NULL, 0},
    {"{'name':{'$elemMatch':{'$eq':'Paul'}}}", NULL, 0},
    {"{'results':{'$allMatch':{'$gt':80}}}", NULL, 1},
    {"{'results':{'$allMatch':{'$gt':83}}}", NULL, 0},
    {"{'tags':{'$allMatch':{'$gt':0}}}", NULL, 0},
    {"{'arr':{'$allMatch':{'x':{'$exists':true}}}}", NULL, 1},
    {"{'models':{'$keyMapMatch':{'$eq':'foo'}}}", NULL, 1},
    {"{'models':{'$keyMapMatch':{'$eq':'baz'}}}", NULL, 0},
    {"{'obj':{'$keyMapMatch':{'$exists':true}}}", NULL, 0},
    {"{'genre':{'$keyMapMatch':{'$eq':'Horror'}}}", NULL, 0},
    {"{'m':{'$keyMapMatch':{'$regex':'^b'}}}", "{'m':{'a':1,'bc':2}}", 1},

    /* combinations */
    {"{'$and':[{'name':'Paul'},{'age':36}]}", NULL, 1},
    {"{'$and':[{'name':'Paul'},{'age':37}]}", NULL, 0},
    {"{'$and':[]}", NULL, 1},
    {"{'$or':[{'name':'John'},{'age':36}]}", NULL, 1},
    {"{'$or':[{'name':'John'},{'age':37}]}", NULL, 0},
    {"{'$or':[]}", NULL, 1},
    {"{'$nor':[{'name':'John'},{'age':37}]}", NULL, 1},
    {"{'$nor':[{'name':'Paul'},{'age':37}]}", NULL, 0},
    {"{'$nor':[{'missing':1}]}", NULL, 0},
    {"{'$not':{'name':'John'}}", NULL, 1},
    {"{'$not':{'missing':1}}", NULL, 0},
    {"{'name':{'$not':{'$eq':'John'}}}", NULL, 1},
    {"{'year':{'$not':{'$gt':2015}}}", NULL, 1},
    {"{'$not':{'$not':{'name':'Paul'}}}", NULL, 1},
    {"{'$not':{'$and':[{'name':'Paul'},{'age':37}]}}", NULL, 1},
    {"{'$not':{'$or':[{'name':'Paul'},{'age':37}]}}", NULL, 0},
    {"{'$not':{'$nor':[{'name':'Paul'},{'age':37}]}}", NULL, 1},
    {"{'name':'Paul','age':{'$gt':30}}", NULL, 1},
    {"{'name':'Paul','age':{'$gt':40}}", NULL, 0},
    {"{'age':{'$gt':30,'$lt':40}}", NULL, 1},
    {"{'age':{'$gt':30,'$lt':35}}", NULL, 0},
    {"{'$not':{'genre':{'$elemMatch':{'$eq':'Drama'}}}}", NULL, 1},
    {"{'$not':{'name':{'$regex':'^J'}}}", NULL, 1},
    {"{'$not':{'missing':{'$regex':'^J'}}}", NULL, 0},
    {"{'genre':{'$elemMatch':{'$not':{'$eq':'Horror'}}}}", NULL, 1},
    {"{'arr':{'$elemMatch':{'$not':{'y':3}}}}", NULL, 1},
    {"{'$not':{'arr':{'$elemMatch':{'y':3}}}}", NULL, 0},
    {"{'year':{'$or':[2010,2011]}}", NULL, 1},
    {"{'year':{'$and':[{'$gt':2000},{'$lt':2020}]}}", NULL, 1},
    {"{'director':{'$or':[{'name':'Bob'},{'age':50}]}}", NULL, 1},
    {"{'$or':[{'$and':[{'name':'Paul'},{'age':{'$in':[35,36]}}]},{'x':1}]}", NULL, 1},
    {"{'$text':'anything'}", NULL, 1},
    {"{'$and':[{'$gt':0}]}", NULL, 1}, /* a root-level $and may hold a bare condition */

    /* "_id" compares in Erlang term order (strings after everything) */
    {"{'_id':{'$gt':null}}", NULL, 1},
    {"{'_id':{'$gt':['x']}}", NULL, 1},
    {"{'_id':{'$lt':{'a':1}}}", NULL, 0},
    {"{'_id':'doc1'}", NULL, 1},
    {"{'_id':{'$in':['doc1','doc2']}}", NULL, 1},
    {"{'_rev':{'$gt':['x']}}", NULL, 0},
    {"{'arr':{'$elemMatch':{'_id':{'$gt':[]}}}}", "{'arr':[{'_id':'x'}]}", 1},
};

TEST(mango_match_table) {
  dv_arena a = DV_ARENA_INIT;
  size_t n = sizeof cases / sizeof cases[0];
  ASSERT(n >= 100);
  for (size_t i = 0; i < n; i++) {
    json_val *sel = J(&a, cases[i].sel), *doc = J(&a, cases[i].doc ? cases[i].doc : DOC);
    mango_sel *s = NULL;
    const char *why = NULL;
    int rc = mango_parse(&a, sel, &s, &why);
    ASSERTF(rc == 0, "case %zu %s: parse failed: %s", i, cases[i].sel, why);
    int got = mango_match(s, doc);
    ASSERTF(got == cases[i].want, "case %zu %s on %s: got %d, want %d", i, cases[i].sel,
            cases[i].doc ? cases[i].doc : "DOC", got, cases[i].want);
    arena_reset(&a);
  }
  printf("%zu selector cases\n", n);
  arena_free(&a);
}

struct ecase {
  const char *sel;    /* selector */
  const char *error;  /* CouchDB error name (of the code's row, status 400) */
  const char *reason; /* exact reason */
};

static const struct ecase errors[] = {
    {"{'name':{'$foo':1}}", "invalid_operator", "Invalid operator: $foo"},
    {"{'$foo':1}", "invalid_operator", "Invalid operator: $foo"},
    {"{'name':{'$in':5}}", "bad_arg", "Bad argument for operator $in: 5"},
    {"{'name':{'$nin':'x'}}", "bad_arg", "Bad argument for operator $nin: <<120>>"},
    {"{'name':{'$all':{}}}", "bad_arg", "Bad argument for operator $all: {[]}"},
    {"{'$and':{'a':1}}", "bad_arg", "Bad argument for operator $and: {[{<<97>>,1}]}"},
    {"{'$or':1}", "bad_arg", "Bad argument for operator $or: 1"},
    {"{'$nor':null}", "bad_arg", "Bad argument for operator $nor: null"},
    {"{'$not':[1]}", "bad_arg", "Bad argument for operator $not: [1]"},
    {"{'a':{'$exists':1}}", "bad_arg", "Bad argument for operator $exists: 1"},
    {"{'a':{'$type':5}}", "bad_arg", "Bad argument for operator $type: 5"},
    {"{'a':{'$mod':[0,1]}}", "bad_arg", "Bad argument for operator $mod: [0,1]"},
    {"{'a':{'$mod':[-0,1]}}", "bad_arg", "Bad argument for operator $mod: [0,1]"},
    {"{'a':{'$mod':[2.5,1]}}", "bad_arg", "Bad argument for operator $mod: [2.5,1]"},
    {"{'a':{'$mod':[2,1.0]}}", "bad_arg", "Bad argument for operator $mod: [2,1.0]"},
    {"{'a':{'$mod':[2]}}", "bad_arg", "Bad argument for operator $mod: [2]"},
    {"{'a':{'$mod':'x'}}", "bad_arg", "Bad argument for operator $mod: <<120>>"},
    {"{'a':{'$size':-1}}", "bad_arg", "Bad argument for operator $size: -1"},
    {"{'a':{'$size':1.5}}", "bad_arg", "Bad argument for operator $size: 1.5"},
    {"{'a':{'$size':1e22}}", "bad_arg", "Bad argument for operator $size: 1.0e22"},
    {"{'a':{'$size':'1'}}", "bad_arg", "Bad argument for operator $size: <<49>>"},
    {"{'a':{'$regex':'('}}", "bad_arg", "Bad argument for operator $regex: <<40>>"},
    {"{'a':{'$regex':'a(?=b)'}}", "bad_arg", "Bad argument for operator $regex: <<97,40,63,61,98,41>>"},
    {"{'a':{'$regex':'(a)\\\\1'}}", "bad_arg", "Bad argument for operator $regex: <<40,97,41,92,49>>"},
    {"{'a':{'$regex':'[a'}}", "bad_arg", "Bad argument for operator $regex: <<91,97>>"},
    {"{'a':{'$regex':'a\\\\'}}", "bad_arg", "Bad argument for operator $regex: <<97,92>>"},
    /* glibc would expand this to a million nodes; PCRE would accept it */
    {"{'a':{'$regex':'((a{99}){99}){99}'}}", "bad_arg", "Bad argument for operator $regex: <<40,40,97,123,57,57,125,41,123,57,57,125,41,123,57,57,125>>"},
    /* quantifiers with nothing to repeat, as PCRE refuses them; a long
     * stack of them took glibc's regcomp seconds (found by fuzz_mango) */
    {"{'a':{'$regex':'a**'}}", "bad_arg", "Bad argument for operator $regex: <<97,42,42>>"},
    {"{'a':{'$regex':'a+?*'}}", "bad_arg", "Bad argument for operator $regex: <<97,43,63,42>>"},
    {"{'a':{'$regex':'a{2}{3}'}}", "bad_arg", "Bad argument for operator $regex: <<97,123,50,125,123,51,125>>"},
    {"{'a':{'$regex':'*a'}}", "bad_arg", "Bad argument for operator $regex: <<42,97>>"},
    {"{'a':{'$regex':'(+a)'}}", "bad_arg", "Bad argument for operator $regex: <<40,43,97,41>>"},
    {"{'a':{'$regex':'a|?'}}", "bad_arg", "Bad argument for operator $regex: <<97,124,63>>"},
    {"{'a':{'$regex':'\\\\b*'}}", "bad_arg", "Bad argument for operator $regex: <<92,98,42>>"},
    {"{'a':{'$regex':5}}", "invalid_operator", "Invalid operator: $regex"},
    {"{'a':{'$beginsWith':5}}", "invalid_operator", "Invalid operator: $beginsWith"},
    {"{'a':{'$elemMatch':[1]}}", "bad_arg", "Bad argument for operator $elemMatch: [1]"},
    {"{'a':{'$allMatch':1}}", "bad_arg", "Bad argument for operator $allMatch: 1"},
    {"{'a':{'$keyMapMatch':'x'}}", "bad_arg", "Bad argument for operator $keyMapMatch: <<120>>"},
    {"{'$where':'x'}", "not_supported", "Unsupported operator: $where"},
    {"{'a':{'$near':1}}", "not_supported", "Unsupported operator: $near"},
    {"{'a':{'$geoWithin':1}}", "not_supported", "Unsupported operator: $geoWithin"},
    {"{'$gt':1}", "invalid_selector", "One or more conditions is missing a field name."},
    {"{'$not':{'$gt':1}}", "invalid_selector", "One or more conditions is missing a field name."},
    {"{'':1}", "invalid_selector", "One or more conditions is missing a field name."},
    {"{'a':{'$text':'x'}}", "bad_field",
     "Invalid field normalization on selector: "
     "{[{<<36,100,101,102,97,117,108,116>>,{[{<<36,116,101,120,116>>,<<120>>}]}}]}"},
    {"{'$default':5}", "bad_field",
     "Invalid field normalization on selector: {[{<<36,100,101,102,97,117,108,116>>,5}]}"},
    {"{'$text':{}}", "bad_arg", "Bad argument for operator $text: {[]}"},
    {"{'$not':{'$text':'x'}}", "bad_arg",
     "Bad argument for operator $not: "
     "{[{<<36,100,101,102,97,117,108,116>>,{[{<<36,116,101,120,116>>,<<120>>}]}}]}"},
    {"{'a..b':1}", "invalid_field_name", "Invalid field name: a..b"},
    {"{'a':{'':1}}", "invalid_field_name", "Invalid field name: a."},
    {"{'.a':1}", "invalid_field_name", "Invalid field name: .a"},
    {"[1]", "invalid_selector_json", "Selector must be a JSON object, not: [1]"},
    {"'sel'", "invalid_selector_json", "Selector must be a JSON object, not: <<115,101,108>>"},
    /* the first error in document order wins, as in CouchDB's passes */
    {"{'$and':[{'a':{'$foo':1}},{'b':{'$in':1}}]}", "invalid_operator", "Invalid operator: $foo"},
    {"{'a':{'$elemMatch':{'$in':1}}}", "bad_arg", "Bad argument for operator $in: 1"},
    {"{'a':{'$text':'x'},'b':{'$in':1}}", "bad_arg", "Bad argument for operator $in: 1"},
    {"{'o':{'$in':{'k':[true,false,null,-1.5e-7,'']}}}", "bad_arg",
     "Bad argument for operator $in: {[{<<107>>,[true,false,null,-1.5e-7,<<>>]}]}"},
};

TEST(mango_parse_errors) {
  dv_arena a = DV_ARENA_INIT;
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
    json_val *sel = J(&a, errors[i].sel);
    mango_sel *s = (mango_sel *)&a; /* must stay untouched */
    const char *why = NULL;
    int rc = mango_parse(&a, sel, &s, &why);
    ASSERT(s == (mango_sel *)&a);
    /* the code's row is CouchDB's answer: 400 and the mango_error name */
    ASSERTF(rc != DV_ENOMEM && dv_err_http(rc) == 400 && !strcmp(dv_err_couch(rc), errors[i].error),
            "case %zu %s: %s (%d %s), want %s", i, errors[i].sel, dv_err_name(rc), dv_err_http(rc),
            dv_err_couch(rc), errors[i].error);
    ASSERT_STR_EQ(why, errors[i].reason);
    arena_reset(&a);
  }
  /* NULL reason pointers are fine */
  mango_sel *s;
  ASSERT_EQ(mango_parse(&a, J(&a, "{'$foo':1}"), &s, NULL), DV_EMANGO_OPERATOR);
  ASSERT_EQ(mango_parse(&a, NULL, &s, NULL), DV_EMANGO_SELECTOR_JSON);
  arena_free(&a);
}

/* Values in ascending collation order; a row of several values holds
 * values that compare equal. */
static const char *order[][3] = {
    {"null"},
    {"false"},
    {"true"},
    {"-1e400"},
    {"-5", "-5.0", "-50e-1"},
    {"-0.5"},
    {"0", "-0", "0.0"},
    {"1e-400"},
    {"0.1", "0.10000000000000001"},
    {"1", "1.0", "10e-1"},
    {"1.5"},
    {"2"},
    {"9007199254740992", "9007199254740992.0"},
    {"9007199254740993"},
    {"123456789012345678901234567890"},
    {"1e400"},
    {"''"},
    {"'\\ud83d\\ude00'"}, /* ICU: symbols before letters */
    {"'a'"},
    {"'A'"},
    {"'aa'"},
    {"'b'"},
    {"'B'"},
    {"'\\u00e9'"},
    {"[]"},
    {"[null]"},
    {"[1]", "[1.0]"},
    {"[1,2]"},
    {"[2]"},
    {"['a']"},
    {"[[]]"},
    {"[{}]"},
    {"{}"},
    {"{'a':1}", "{'a':1.0}"},
    {"{'a':1,'b':1}"},
    {"{'a':2}"},
    {"{'b':0}"},
};

TEST(mango_collation) {
  dv_arena a = DV_ARENA_INIT;
  size_t rows = sizeof order / sizeof order[0];
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < rows; j++)
      for (int x = 0; x < 3 && order[i][x]; x++)
        for (int y = 0; y < 3 && order[j][y]; y++) {
          json_val *p = J(&a, order[i][x]), *q = J(&a, order[j][y]);
          int want = i < j ? -1 : i > j ? 1 : 0, got = mango_cmp(p, q);
          got = got < 0 ? -1 : got > 0 ? 1 : 0;
          ASSERTF(got == want, "cmp(%s, %s) = %d, want %d", order[i][x], order[j][y], got, want);
        }
  arena_free(&a);
}

/* Every allocation failure is DV_ENOMEM, never a crash or a half-built
 * selector; with enough memory the parse succeeds. */
TEST(mango_alloc_fail) {
  const char *text =
      "{'$or':[{'a.b':{'$gt':1,'$lt':5}},{'$not':{'c':{'$in':[1,2]}}}],"
      "'d':{'$elemMatch':{'e':{'$regex':'^x\\\\d+'}}},'f':{'$nor':[{'g':1}]},"
      "'$and':[{'h':{'$mod':[3,1]}},{'i\\\\.j':{'$exists':false}}],'k':{'$in':5}}";
  int ok = 0, nomem = 0;
  for (long n = 0; n < 200 && !ok; n++) {
    dv_arena a = DV_ARENA_INIT;
    json_val *sel = J(&a, text);
    mango_sel *s = NULL;
    const char *why = NULL;
    dv_alloc_fail_after(n);
    int rc = mango_parse(&a, sel, &s, &why);
    dv_alloc_fail_after(-1);
    ASSERTF(rc == DV_ENOMEM || rc == DV_EMANGO_BAD_ARG, "n=%ld rc=%d", n, rc);
    nomem += rc == DV_ENOMEM;
    if (rc == DV_ENOMEM) ASSERT_STR_EQ(why, dv_strerror(DV_ENOMEM));
    if (rc == DV_EMANGO_BAD_ARG) {
      ASSERT_STR_EQ(why, "Bad argument for operator $in: 5");
      ok = 1;
    }
    arena_free(&a);
  }
  ASSERT(ok);
  ASSERT(nomem > 0);
}

/* A regex selector matched from several threads at once, with more
 * patterns than the per-thread cache holds (16) and more matches per
 * pattern than it allows before recompiling (1000). */
#define RX_N 17
#define RX_THREADS 3
struct rx_job {
  const mango_sel *sel[RX_N]; /* selectors on field s */
  const json_val *doc[2];   /* "abc123" and "zzz" */
  int bad;                  /* wrong answers seen */
};

static void *rx_worker(void *p) {
  struct rx_job *j = p;
  for (int r = 0; r < 510; r++) /* past RX_REUSE: patterns get recompiled */
    for (int k = 0; k < RX_N; k++) {
      if (mango_match(j->sel[k], j->doc[0]) != 1) j->bad++;
      if (mango_match(j->sel[k], j->doc[1]) != 0) j->bad++;
    }
  return NULL;
}

TEST(mango_regex_threads) {
  dv_arena a = DV_ARENA_INIT;
  struct rx_job job;
  memset(&job, 0, sizeof job);
  for (int k = 0; k < RX_N; k++) {
    char text[96];
    /* different patterns, all matching "abc123" and not "zzz" */
    snprintf(text, sizeof text, "{'s':{'$regex':'(?:abc|q{%d})\\\\d'}}", k + 1);
    mango_sel *s;
    ASSERT_OK(mango_parse(&a, J(&a, text), &s, NULL));
    job.sel[k] = s;
  }
  job.doc[0] = J(&a, "{'s':'abc123'}");
  job.doc[1] = J(&a, "{'s':'zzz'}");
  pthread_t t[RX_THREADS];
  struct rx_job jobs[RX_THREADS];
  for (int i = 0; i < RX_THREADS; i++) {
    jobs[i] = job;
    ASSERT_OK(pthread_create(&t[i], NULL, rx_worker, &jobs[i]));
  }
  for (int i = 0; i < RX_THREADS; i++) {
    pthread_join(t[i], NULL);
    ASSERT_EQ(jobs[i].bad, 0);
  }
  rx_worker(&job);
  ASSERT_EQ(job.bad, 0);
  arena_free(&a);
}

/* Deep selectors and documents (JSON's 1000 levels), and a selector whose
 * many conditions share a long deep prefix: memory stays linear in the
 * selector's size. */
TEST(mango_deep) {
  dv_arena a = DV_ARENA_INIT;
  dv_buf sel = DV_BUF_INIT, dotted = DV_BUF_INIT, doc = DV_BUF_INIT, nots = DV_BUF_INIT;
  int depth = 900;
  for (int i = 0; i < depth; i++) buf_puts(&sel, "{'a':");
  buf_puts(&sel, "{'$gt':0}");
  for (int i = 0; i < depth; i++) buf_puts(&sel, "}");
  buf_puts(&dotted, "{'a");
  for (int i = 1; i < depth; i++) buf_puts(&dotted, ".a");
  buf_puts(&dotted, "':1}");
  for (int i = 0; i < depth; i++) buf_puts(&doc, "{'a':");
  buf_puts(&doc, "1");
  for (int i = 0; i < depth; i++) buf_puts(&doc, "}");
  for (int i = 0; i < depth; i++) buf_puts(&nots, "{'$not':");
  buf_puts(&nots, "{'a':{'$exists':true}}");
  for (int i = 0; i < depth; i++) buf_puts(&nots, "}");
  ASSERT(!buf_error(&sel) && !buf_error(&dotted) && !buf_error(&doc) && !buf_error(&nots));
  json_val *d = J(&a, (const char *)doc.p);
  mango_sel *s;
  ASSERT_OK(mango_parse(&a, J(&a, (const char *)sel.p), &s, NULL));
  ASSERT_EQ(mango_match(s, d), 1);
  ASSERT_OK(mango_parse(&a, J(&a, (const char *)dotted.p), &s, NULL));
  ASSERT_EQ(mango_match(s, d), 1);
  ASSERT_OK(mango_parse(&a, J(&a, (const char *)nots.p), &s, NULL)); /* an even number of $not */
  ASSERT_EQ(mango_match(s, d), 1);
  ASSERT_EQ(mango_match(s, J(&a, "{'b':1}")), 0);

  /* 400 levels of 100-byte keys over 3000 conditions: CouchDB's joined
   * path strings would cost 3000 x 40 KB here. */
  dv_buf big = DV_BUF_INIT;
  for (int i = 0; i < 400; i++) buf_printf(&big, "{'%0100d':", i);
  buf_putc(&big, '{');
  for (int i = 0; i < 3000; i++) buf_printf(&big, "%s'k%d':{'$exists':false}", i ? "," : "", i);
  buf_putc(&big, '}');
  for (int i = 0; i < 400; i++) buf_putc(&big, '}');
  ASSERT(!buf_error(&big));
  dv_arena b = DV_ARENA_INIT;
  json_val *bv = J(&b, (const char *)big.p);
  size_t before = b.used;
  ASSERT_OK(mango_parse(&b, bv, &s, NULL));
  printf("selector of %zu bytes: %zu bytes parsed\n", big.len, b.used - before);
  ASSERT(b.used - before < 20 * big.len);
  ASSERT_EQ(mango_match(s, d), 1);
  arena_free(&b);
  buf_free(&big);
  buf_free(&sel);
  buf_free(&dotted);
  buf_free(&doc);
  buf_free(&nots);
  arena_free(&a);
}

TEST(mango_fuzz_smoke) { test_fuzz_smoke("fuzz_mango"); }

/* The request parsers of index/mquery.h (_find/_explain and POST _index
 * bodies) under libFuzzer for 20 s (test/fuzz/fuzz_mango_req.c). */
TEST(mango_req_fuzz_smoke) { test_fuzz_smoke("fuzz_mango_req"); }
