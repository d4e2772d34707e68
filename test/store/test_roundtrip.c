/* test_roundtrip.c — JSON documents survive the store unchanged, and the
 * store refuses what it must refuse without storing any of it.
 *
 * store_roundtrip: thousands of random document texts — unicode up to
 * 4-byte characters, \u0000 in keys and values, escapes and raw UTF-8,
 * integers past 64 bits, doubles, -0, -0.0, 1.0, 1e400, empty containers,
 * nesting a few hundred levels deep, duplicate keys in the text, now and
 * then a string over 100 KB — are parsed (json_parse), split into fields
 * (store_edit_from_json), written in batches (store_update) and read back
 * (store_doc_get): the body must equal the parsed text minus _id/_rev as a
 * JSON value (key order is not kept, numbers compare by canonical text).
 * Some are then updated through their _rev and some deleted.
 *
 * store_roundtrip_cases: the same check over fixed edge cases (each number
 * class, strings around the 100,000-byte value limit, keys with NUL, nested
 * underscore keys, a 9,000-byte key).
 *
 * store_doc_too_large / store_doc_txn_budget / store_doc_path_too_long:
 * max_document_size exactly (ok) and one byte over (DV_EDOC_TOO_LARGE); an
 * array of 400,000 zeros under the size limit whose exploded KVs pass the
 * transaction budget (DV_EDOC_TOO_LARGE); a path over 10,000 bytes
 * (DV_EPATH_TOO_LONG). A refused edit gets its own rc, the others in the
 * same call are written, and nothing of the refused document is stored:
 * no revision, no changes row, no counter moved, an older revision stays.
 *
 * DV_SEED fixes the seed of store_roundtrip; DV_ROUNDTRIP_DOCS its count.
 */
#include <math.h>

#include "storet.h"

#define RT_DOCS 2400      /* random documents (>= 2,000) */
#define RT_BATCH 12       /* edits per store_update call, at most */
#define RT_DEEP 500       /* deepest nesting generated */

static uint64_t rng;

static uint64_t rnd(uint64_t n) { return storet_below(&rng, n); }

/* ---- random JSON text ---------------------------------------------------- */

static void put_utf8(dv_buf *b, uint32_t cp) {
  if (cp < 0x80) buf_putc(b, (uint8_t)cp);
  else if (cp < 0x800) {
    buf_putc(b, (uint8_t)(0xC0 | cp >> 6));
    buf_putc(b, (uint8_t)(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    buf_putc(b, (uint8_t)(0xE0 | cp >> 12));
    buf_putc(b, (uint8_t)(0x80 | ((cp >> 6) & 0x3F)));
    buf_putc(b, (uint8_t)(0x80 | (cp & 0x3F)));
  } else {
    buf_putc(b, (uint8_t)(0xF0 | cp >> 18));
    buf_putc(b, (uint8_t)(0x80 | ((cp >> 12) & 0x3F)));
    buf_putc(b, (uint8_t)(0x80 | ((cp >> 6) & 0x3F)));
    buf_putc(b, (uint8_t)(0x80 | (cp & 0x3F)));
  }
}

static uint32_t rand_cp(void) {
  uint32_t cp;
  switch (rnd(10)) {
    case 0: return (uint32_t)rnd(0x20);                                  /* control, NUL */
    case 1: return "\"\\/_"[rnd(4)];
    case 2: return 0x80 + (uint32_t)rnd(0x800 - 0x80);                    /* 2 bytes */
    case 3:                                                               /* 3 bytes */
      do cp = 0x800 + (uint32_t)rnd(0x10000 - 0x800);
      while (cp >= 0xD800 && cp <= 0xDFFF);
      return cp;
    case 4: return 0x10000 + (uint32_t)rnd(0x110000 - 0x10000);          /* 4 bytes */
    case 5: return 0x1F600 + (uint32_t)rnd(0x50);                        /* emoji */
    default: return 0x20 + (uint32_t)rnd(0x5F);                          /* printable */
  }
}

/* One code point as JSON string text: raw, or escaped in one of the ways
 * JSON allows. */
static void put_cp(dv_buf *b, uint32_t cp) {
  int esc = cp < 0x20 || cp == '"' || cp == '\\' || rnd(6) == 0;
  if (!esc) { put_utf8(b, cp); return; }
  const char *shortc = NULL;
  switch (cp) {
    case '"': shortc = "\\\""; break;
    case '\\': shortc = "\\\\"; break;
    case '/': shortc = "\\/"; break;
    case '\b': shortc = "\\b"; break;
    case '\f': shortc = "\\f"; break;
    case '\n': shortc = "\\n"; break;
    case '\r': shortc = "\\r"; break;
    case '\t': shortc = "\\t"; break;
  }
  if (shortc && rnd(2)) { buf_puts(b, shortc); return; }
  if (cp < 0x10000) buf_printf(b, rnd(2) ? "\\u%04x" : "\\u%04X", cp);
  else {
    uint32_t v = cp - 0x10000;
    buf_printf(b, "\\u%04x\\u%04X", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
  }
}

static void gen_string(dv_buf *b, size_t max_cps) {
  buf_putc(b, '"');
  size_t n = rnd(max_cps + 1);
  for (size_t i = 0; i < n; i++) put_cp(b, rand_cp());
  buf_putc(b, '"');
}

/* A string of at least `bytes` bytes of content, mixing widths. */
static void gen_big_string(dv_buf *b, size_t bytes) {
  buf_putc(b, '"');
  size_t start = b->len;
  while (b->len - start < bytes) {
    if (rnd(4)) put_utf8(b, 'a' + (uint32_t)rnd(26));
    else put_utf8(b, rnd(2) ? 0x1F600 + (uint32_t)rnd(0x50) : 0x4E00 + (uint32_t)rnd(0x100));
  }
  buf_putc(b, '"');
}

static const char *const numbers[] = {
    "0", "-0", "0.0", "-0.0", "1", "-1", "1.0", "-1.5", "1e2", "1E2", "1e+2", "2.5e-3", "1e400",
    "-1e400", "1e-400", "-1e-400", "5e-324", "1.7976931348623157e308", "2.2250738585072014e-308",
    "0.1", "0.30000000000000004", "123456.789", "1e21", "1e-7", "255", "256", "65535", "65536",
    "9007199254740993", "2147483647", "-2147483648", "9223372036854775807", "-9223372036854775808",
    "9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
    "-18446744073709551616", "340282366920938463463374607431768211456",
    "123456789012345678901234567890123456789012345678901234567890", "100000000000000000000.0",
    "0.000001", "1.5e300", "3.0e-5", "-7E-10"};
#define NNUM (sizeof numbers / sizeof numbers[0])

static void gen_number(dv_buf *b) {
  switch (rnd(6)) {
    case 0:
    case 1: buf_puts(b, numbers[rnd(NNUM)]); return;
    case 2: buf_printf(b, "%lld", (long long)(storet_rand(&rng) >> rnd(64))); return;
    case 3: { /* a big integer, sometimes past 255 digits */
      size_t nd = rnd(8) ? 20 + rnd(60) : 250 + rnd(300);
      if (rnd(2)) buf_putc(b, '-');
      buf_putc(b, (uint8_t)('1' + rnd(9)));
      for (size_t i = 1; i < nd; i++) buf_putc(b, (uint8_t)('0' + rnd(10)));
      return;
    }
    case 4: { /* a random finite double, printed in full */
      double d;
      uint64_t bits;
      do {
        bits = storet_rand(&rng);
        memcpy(&d, &bits, sizeof d);
      } while (!isfinite(d));
      buf_printf(b, "%.17g", d);
      return;
    }
    default: buf_printf(b, "%d.%de%d", (int)rnd(1000), (int)rnd(1000), (int)rnd(80) - 40); return;
  }
}

static void ws(dv_buf *b) {
  if (!rnd(5)) buf_puts(b, &" \n\t\r"[rnd(4)]);
}

static void gen_value(dv_buf *b, int depth);

static void gen_key(dv_buf *b, int top, char (*seen)[32], int *nseen) {
  if (*nseen && !rnd(10)) { /* a duplicate of an earlier key of this object */
    buf_puts(b, seen[rnd((uint64_t)*nseen)]);
    return;
  }
  dv_buf k = DV_BUF_INIT;
  if (top) buf_printf(&k, "\"k%d", (int)rnd(1000)); /* no leading '_' at top level */
  else buf_putc(&k, '"');
  size_t n = rnd(top ? 6 : 10);
  for (size_t i = 0; i < n; i++) put_cp(&k, rand_cp());
  buf_putc(&k, '"');
  buf_append(b, k.p, k.len);
  if (*nseen < 16 && k.len < 32) { memcpy(seen[*nseen], k.p, k.len + 1); (*nseen)++; }
  buf_free(&k);
}

static void gen_object(dv_buf *b, int depth, int top) {
  buf_putc(b, '{');
  ws(b);
  size_t n = top ? 1 + rnd(12) : rnd(depth > 4 ? 3 : 7);
  char seen[16][32];
  int nseen = 0;
  for (size_t i = 0; i < n; i++) {
    if (i) buf_putc(b, ',');
    ws(b);
    gen_key(b, top, seen, &nseen);
    ws(b);
    buf_putc(b, ':');
    ws(b);
    gen_value(b, depth + 1);
    ws(b);
  }
  buf_putc(b, '}');
}

static void gen_array(dv_buf *b, int depth) {
  buf_putc(b, '[');
  size_t n = rnd(depth > 4 ? 3 : 8);
  if (!rnd(200)) n = 1000 + rnd(4000); /* a long array */
  for (size_t i = 0; i < n; i++) {
    if (i) buf_putc(b, ',');
    ws(b);
    if (n > 100) gen_number(b);
    else gen_value(b, depth + 1);
  }
  buf_putc(b, ']');
}

/* Nesting hundreds of levels deep, alternating arrays and objects. */
static void gen_deep(dv_buf *b, int levels) {
  int *kind = malloc((size_t)levels * sizeof *kind);
  ASSERT(kind != NULL);
  for (int i = 0; i < levels; i++) {
    kind[i] = (int)rnd(2);
    if (kind[i]) buf_printf(b, "{\"d%d\":", (int)rnd(10));
    else buf_puts(b, rnd(3) ? "[" : "[1,");
  }
  gen_value(b, 6);
  for (int i = levels; i-- > 0;) buf_putc(b, kind[i] ? '}' : ']');
  free(kind);
}

static void gen_value(dv_buf *b, int depth) {
  int k = (int)rnd(depth > 6 ? 6 : 10);
  switch (k) {
    case 0: buf_puts(b, "null"); return;
    case 1: buf_puts(b, rnd(2) ? "true" : "false"); return;
    case 2: gen_number(b); return;
    case 3:
    case 4: gen_string(b, 12); return;
    case 5: buf_puts(b, rnd(2) ? "{}" : "[]"); return;
    case 6:
    case 7: gen_object(b, depth, 0); return;
    default: gen_array(b, depth); return;
  }
}

/* A whole document text with _id. */
static void gen_doc(dv_buf *b, int i) {
  buf_printf(b, "{\"_id\":\"rt-%05d\",", i);
  size_t mark = b->len;
  gen_object(b, 1, 1);
  /* splice: drop the generated '{' so the members follow _id */
  memmove(b->p + mark, b->p + mark + 1, b->len - mark - 1);
  b->len--;
  if (!rnd(25)) { /* deep nesting */
    b->len--; /* the closing '}' */
    buf_puts(b, ",\"deep\":");
    gen_deep(b, 200 + (int)rnd(RT_DEEP - 200 + 1));
    buf_putc(b, '}');
  }
  if (!rnd(100)) { /* a string over 100 KB */
    b->len--;
    buf_puts(b, ",\"big\":");
    gen_big_string(b, 100001 + rnd(100000));
    buf_putc(b, '}');
  }
  b->p[b->len] = 0;
}

/* ---- checking ------------------------------------------------------------ */

typedef struct rdoc {
  char id[32];        /* document id */
  json_val *want;     /* the body expected (in the test arena) */
  store_rev rev;      /* current rev (hash in the test arena) */
  int deleted;        /* deleted last */
} rdoc;

static void expect_doc(store_db *db, dv_arena *a, const rdoc *d) {
  json_val *got = NULL;
  int rc = store_doc_get(db, d->id, strlen(d->id), NULL, 0, a, &got);
  if (d->deleted) {
    ASSERTF(rc == DV_EDELETED, "%s: get after delete: %s", d->id, dv_err_name(rc));
    return;
  }
  ASSERTF(rc == 0, "%s: get: %s", d->id, dv_err_name(rc));
  json_val *id = json_obj_getz(got, "_id"), *rev = json_obj_getz(got, "_rev");
  ASSERTF(id && id->type == JSON_STRING && id->len == strlen(d->id) && !memcmp(id->u.s, d->id, id->len),
          "%s: _id", d->id);
  const char *rs = storet_rev_str(a, &d->rev);
  ASSERTF(rev && rev->type == JSON_STRING && rev->len == strlen(rs) && !memcmp(rev->u.s, rs, rev->len),
          "%s: _rev %s, want %s", d->id, storet_json_text(a, rev), rs);
  json_val *body = storet_body(a, got);
  const char *where = NULL;
  if (!storet_json_eq(a, body, d->want, &where)) {
    printf("%s: stored body differs at %s\n got:  %.3000s\n want: %.3000s\n", d->id, where,
           storet_json_text(a, body), storet_json_text(a, d->want));
    test_fail_(__FILE__, __LINE__, "%s: body differs at %s", d->id, where);
  }
  /* what came back writes and parses again to the same value */
  const char *text = storet_json_text(a, got);
  json_opts o = {0};
  o.max_depth = JSON_DEPTH_LIMIT;
  json_val *again = NULL;
  ASSERT_OK(json_parse(a, text, strlen(text), &o, &again, NULL));
  ASSERT(storet_json_eq(a, again, got, NULL));
}

/* Parse a doc text, make an edit of it (new_edits=1). */
static json_val *doc_edit(dv_arena *a, const char *text, size_t len, store_edit *e) {
  json_opts o = {0};
  o.flags = JSON_COPY;
  json_val *doc = NULL;
  json_err err = {0};
  int rc = json_parse(a, text, len, &o, &doc, &err);
  ASSERTF(rc == 0, "generated JSON does not parse: %s at %zu (%s): %.300s", dv_err_name(rc), err.offset,
          err.msg, text + (err.offset > 100 ? err.offset - 100 : 0));
  memset(e, 0, sizeof *e);
  rc = store_edit_from_json(a, doc, 1, e);
  ASSERTF(rc == 0, "store_edit_from_json: %s: %.300s", dv_err_name(rc), text);
  return doc;
}

TEST(store_roundtrip) {
  rng = storet_seed("store_roundtrip", 0x707d7219);
  long ndocs = storet_env_long("DV_ROUNDTRIP_DOCS", RT_DOCS);
  storet *t = storet_open(NULL, 0, "rt");
  dv_arena *a = &t->a;
  dv_buf b = DV_BUF_INIT;
  long bytes = 0, maxlen = 0, deep = 0, big = 0, updated = 0, deleted = 0, calls = 0;
  double t0 = storet_now();
  for (long i = 0; i < ndocs;) {
    arena_reset(a);
    size_t n = 1 + rnd(RT_BATCH);
    if (i + (long)n > ndocs) n = (size_t)(ndocs - i);
    store_edit e[RT_BATCH];
    rdoc d[RT_BATCH];
    memset(d, 0, sizeof d);
    for (size_t k = 0; k < n; k++) {
      snprintf(d[k].id, sizeof d[k].id, "rt-%05ld", i + (long)k);
      buf_reset(&b);
      gen_doc(&b, (int)(i + (long)k));
      bytes += (long)b.len;
      if ((long)b.len > maxlen) maxlen = (long)b.len;
      deep += strstr((const char *)b.p, "\"deep\":") != NULL;
      big += strstr((const char *)b.p, "\"big\":") != NULL;
      json_val *doc = doc_edit(a, (const char *)b.p, b.len, &e[k]);
      ASSERT(e[k].id && e[k].id_len == strlen(d[k].id) && !memcmp(e[k].id, d[k].id, e[k].id_len));
      d[k].want = storet_body(a, doc);
    }
    ASSERT_OK(store_update(t->db, NULL, e, n, 1));
    calls++;
    for (size_t k = 0; k < n; k++) {
      ASSERTF(e[k].rc == 0, "%s: rc %s", d[k].id, dv_err_name(e[k].rc));
      ASSERT_EQ(e[k].rev.pos, 1);
      d[k].rev = storet_rev_dup(a, &e[k].rev);
    }
    for (size_t k = 0; k < n; k++) expect_doc(t->db, a, &d[k]);
    i += (long)n;
  }
  /* update a quarter of them through _rev (a third of those: deletions) */
  for (long i = 0; i < ndocs; i++) {
    if (rnd(4)) continue;
    arena_reset(a);
    rdoc d;
    memset(&d, 0, sizeof d);
    snprintf(d.id, sizeof d.id, "rt-%05ld", i);
    store_leaf *lv;
    size_t nl;
    ASSERT_OK(store_doc_leaves(t->db, d.id, strlen(d.id), a, &lv, &nl));
    ASSERT_EQ(nl, 1);
    const char *rs = storet_rev_str(a, &lv[0].rev);
    buf_reset(&b);
    int del = !rnd(3);
    if (del) {
      buf_printf(&b, "{\"_id\":\"%s\",\"_rev\":\"%s\",\"_deleted\":true}", d.id, rs);
    } else { /* {"_id":"rt-…",<members>} becomes {"_id":"rt-…","_rev":"…",<members>} */
      gen_doc(&b, (int)i);
      dv_buf c = DV_BUF_INIT;
      buf_printf(&c, "{\"_id\":\"%s\",\"_rev\":\"%s\",%s", d.id, rs, (const char *)b.p + strlen(d.id) + 10);
      buf_reset(&b);
      buf_append(&b, c.p, c.len);
      buf_free(&c);
    }
    store_edit e;
    json_val *doc = doc_edit(a, (const char *)b.p, b.len, &e);
    ASSERT_EQ(e.parent.pos, 1);
    ASSERT_OK(store_update(t->db, NULL, &e, 1, 1));
    ASSERTF(e.rc == 0, "%s: update: %s", d.id, dv_err_name(e.rc));
    ASSERT_EQ(e.rev.pos, 2);
    d.rev = storet_rev_dup(a, &e.rev);
    d.deleted = del;
    d.want = storet_body(a, doc);
    expect_doc(t->db, a, &d);
    if (del) deleted++;
    else updated++;
  }
  /* the feed and the counters agree */
  arena_reset(a);
  size_t nrows = storet_changes(t->db, a, NULL, NULL, NULL);
  ASSERT_EQ(nrows, ndocs);
  store_db_info info;
  ASSERT_OK(store_db_info_get(t->db, &info));
  ASSERT_EQ(info.doc_count, ndocs - deleted);
  ASSERT_EQ(info.doc_del_count, deleted);
  printf("store_roundtrip: %ld documents in %ld calls (%ld bytes of JSON, longest %ld, %ld nested 200-%d "
         "deep, %ld with a string over 100 KB), %ld updated and %ld deleted through _rev, in %.1f s\n",
         ndocs, calls, bytes, maxlen, deep, RT_DEEP, big, updated, deleted, storet_now() - t0);
  if (ndocs >= RT_DOCS) ASSERT(deep > 0 && big > 0 && updated > 0 && deleted > 0);
  buf_free(&b);
  storet_close(t);
}

/* ---- fixed cases --------------------------------------------------------- */

/* Write a doc text, read it back, compare. Returns the rev text. */
static void roundtrip_one(storet *t, const char *text, size_t len) {
  dv_arena *a = &t->a;
  store_edit e;
  json_val *doc = doc_edit(a, text, len, &e);
  ASSERT_OK(store_update(t->db, NULL, &e, 1, 1));
  ASSERTF(e.rc == 0, "%.*s: rc %s", (int)(e.id_len), e.id, dv_err_name(e.rc));
  rdoc d;
  memset(&d, 0, sizeof d);
  snprintf(d.id, sizeof d.id, "%.*s", (int)e.id_len, e.id);
  d.rev = storet_rev_dup(a, &e.rev);
  d.want = storet_body(a, doc);
  expect_doc(t->db, a, &d);
}

TEST(store_roundtrip_cases) {
  storet *t = storet_open(NULL, 0, "cases");
  dv_buf b = DV_BUF_INIT;
  int n = 0;
  /* every number of the list, alone and in arrays */
  for (size_t i = 0; i < NNUM; i++) {
    buf_reset(&b);
    buf_printf(&b, "{\"_id\":\"num-%zu\",\"n\":%s,\"a\":[%s,[%s]],\"o\":{\"x\":%s}}", i, numbers[i], numbers[i],
               numbers[i], numbers[i]);
    roundtrip_one(t, (const char *)b.p, b.len);
    n++;
  }
  static const char *const cases[] = {
      "{\"_id\":\"empty\"}",
      "{\"_id\":\"empties\",\"o\":{},\"a\":[],\"s\":\"\",\"n\":null,\"aa\":[[],{},[[]],[{}]],\"oo\":{\"\":{}}}",
      "{\"_id\":\"nul\",\"a\\u0000b\":\"x\\u0000y\",\"\\u0000\":[\"\\u0000\"],\"k\":{\"\\u0000\\u0000\":0}}",
      "{\"_id\":\"emptykey\",\"\":1,\"o\":{\"\":{\"\":[\"\"]}}}",
      "{\"_id\":\"nested_underscore\",\"o\":{\"_id\":1,\"_rev\":\"x\",\"_deleted\":true,\"_a\":{\"_b\":[]}}}",
      "{\"_id\":\"dups\",\"a\":1,\"b\":2,\"a\":{\"x\":1},\"c\":[1],\"a\":[3]}",
      "{\"_id\":\"dups_nested\",\"o\":{\"k\":1,\"k\":2,\"j\":{\"z\":1,\"z\":{}}}}",
      "{\"_id\":\"astral\",\"s\":\"\\ud83d\\ude00\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\",\"\xf0\x9f\x98\x80\":\"\\uDBFF\\uDFFF\"}",
      "{\"_id\":\"bools\",\"t\":true,\"f\":false,\"a\":[true,false,null]}",
      "{\"_id\":\"keys_like_ints\",\"0\":0,\"1\":[0,1],\"-1\":{\"2\":2}}",
      "{\"_id\":\"escapes\",\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u001f\\u007f\"}",
      "{\"_id\":\"_design/ddoc\",\"views\":{\"v\":{\"map\":\"function(doc){emit(doc._id,null)}\"}}}",
      "{\"_id\":\"unicode id \xc3\xa9\xf0\x9f\x98\x80\",\"x\":1}",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    roundtrip_one(t, cases[i], strlen(cases[i]));
    n++;
  }
  /* strings around the 100,000-byte value limit and past it, ASCII and
   * with multi-byte characters across every boundary */
  static const size_t lens[] = {99990, 99999, 100000, 100001, 100010, 199999, 200000, 200001, 350003};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
    for (int wide = 0; wide < 2; wide++) {
      buf_reset(&b);
      buf_printf(&b, "{\"_id\":\"long-%zu-%d\",\"s\":\"", lens[i], wide);
      for (size_t k = 0; k < lens[i];) {
        if (wide && k % 7 == 3 && k + 4 <= lens[i]) {
          buf_append(&b, "\xf0\x9f\x98\x80", 4);
          k += 4;
        } else {
          buf_putc(&b, (uint8_t)('a' + k % 26));
          k++;
        }
      }
      buf_puts(&b, "\",\"after\":[\"x\"]}");
      roundtrip_one(t, (const char *)b.p, b.len);
      n++;
    }
  /* a 9,000-byte key and a 9,000-byte id-less path are fine */
  buf_reset(&b);
  buf_puts(&b, "{\"_id\":\"longkey\",\"");
  for (int k = 0; k < 9000; k++) buf_putc(&b, (uint8_t)('a' + k % 26));
  buf_puts(&b, "\":{\"x\":[1,2]}}");
  roundtrip_one(t, (const char *)b.p, b.len);
  n++;
  /* 1000 levels of arrays (the JSON depth limit) with short paths */
  buf_reset(&b);
  buf_puts(&b, "{\"_id\":\"depth999\",\"a\":");
  for (int k = 0; k < 998; k++) buf_putc(&b, '[');
  buf_puts(&b, "1");
  for (int k = 0; k < 998; k++) buf_putc(&b, ']');
  buf_putc(&b, '}');
  roundtrip_one(t, (const char *)b.p, b.len);
  n++;
  printf("store_roundtrip_cases: %d documents\n", n);
  buf_free(&b);
  storet_close(t);
}

/* ---- refusals ------------------------------------------------------------ */

/* Nothing of `id` is stored, and the counters and feed are as before. */
static void expect_absent(storet *t, const char *id, const store_db_info *before, size_t rows_before) {
  dv_arena *a = &t->a;
  json_val *doc;
  int rc = store_doc_get(t->db, id, strlen(id), NULL, 0, a, &doc);
  ASSERTF(rc == DV_ENOT_FOUND, "%s: get of a refused doc: %s", id, dv_err_name(rc));
  store_leaf *lv;
  size_t nl;
  rc = store_doc_leaves(t->db, id, strlen(id), a, &lv, &nl);
  ASSERTF(rc == DV_ENOT_FOUND, "%s: leaves of a refused doc: %s", id, dv_err_name(rc));
  storet_change *rows;
  size_t n = storet_changes(t->db, a, NULL, &rows, NULL);
  for (size_t i = 0; i < n; i++)
    ASSERTF(strcmp(rows[i].id, id) != 0, "%s: a changes row for a refused doc", id);
  if (before) {
    ASSERT_EQ(n, rows_before);
    store_db_info info;
    ASSERT_OK(store_db_info_get(t->db, &info));
    ASSERT_EQ(info.doc_count, before->doc_count);
    ASSERT_EQ(info.doc_del_count, before->doc_del_count);
    ASSERT_EQ(info.size_external, before->size_external);
    ASSERT_EQ(info.size_active, before->size_active);
  }
}

/* A body {"x":"aaa…"} whose compact JSON is exactly `size` bytes. */
static json_val *sized_body(dv_arena *a, size_t size) {
  ASSERT(size >= 8);
  size_t sl = size - 8; /* {"x":""} is 8 bytes */
  char *s = arena_alloc(a, sl + 1);
  ASSERT(s != NULL);
  memset(s, 'a', sl);
  s[sl] = 0;
  json_val *o = json_new_object(a);
  ASSERT_OK(json_obj_setz(a, o, "x", json_new_string(a, s, sl)));
  dv_buf b = DV_BUF_INIT;
  ASSERT_OK(json_write(&b, o));
  ASSERT_EQ(b.len, size);
  buf_free(&b);
  return o;
}

TEST(store_doc_too_large) {
  store_opts o = {0};
  o.max_document_size = 10000;
  storet *t = storet_open(&o, 0, "big");
  dv_arena *a = &t->a;
  ASSERT_EQ(storet_put(t->db, a, "before", "{\"v\":1}", NULL, 0, NULL), 0);
  store_db_info before;
  ASSERT_OK(store_db_info_get(t->db, &before));
  size_t rows = storet_changes(t->db, a, NULL, NULL, NULL);

  /* one call: at the limit, one byte over, at the limit again */
  store_edit e[3];
  memset(e, 0, sizeof e);
  const char *ids[3] = {"at-limit", "over-limit", "at-limit-2"};
  size_t sizes[3] = {10000, 10001, 10000};
  for (int i = 0; i < 3; i++) {
    e[i].id = ids[i];
    e[i].id_len = strlen(ids[i]);
    e[i].body = sized_body(a, sizes[i]);
  }
  ASSERT_OK(store_update(t->db, NULL, e, 3, 1));
  ASSERTF(e[0].rc == 0, "a body of exactly max_document_size: %s", dv_err_name(e[0].rc));
  ASSERTF(e[1].rc == DV_EDOC_TOO_LARGE, "one byte over max_document_size: %s", dv_err_name(e[1].rc));
  ASSERTF(e[2].rc == 0, "a body of exactly max_document_size after a refused one: %s", dv_err_name(e[2].rc));
  for (int i = 0; i < 3; i += 2) {
    json_val *doc;
    ASSERT_OK(storet_get(t->db, a, ids[i], NULL, 0, &doc));
    STORET_ASSERT_JSON_EQ(a, storet_body(a, doc), e[i].body);
  }
  store_db_info info;
  ASSERT_OK(store_db_info_get(t->db, &info));
  ASSERT_EQ(info.doc_count, before.doc_count + 2);
  rows += 2;
  before = info;
  expect_absent(t, "over-limit", &before, rows);

  /* new_edits=false is bounded the same way */
  store_edit r;
  memset(&r, 0, sizeof r);
  r.id = "repl-over";
  r.id_len = strlen(r.id);
  r.body = sized_body(a, 10001);
  store_rev path[2] = {storet_rev(a, "2-0123456789abcdef0123456789abcdef"),
                       storet_rev(a, "1-fedcba9876543210fedcba9876543210")};
  r.path = path;
  r.path_len = 2;
  ASSERT_OK(store_update(t->db, NULL, &r, 1, 0));
  ASSERTF(r.rc == DV_EDOC_TOO_LARGE, "replicated doc over the limit: %s", dv_err_name(r.rc));
  expect_absent(t, "repl-over", &before, rows);

  /* an update over the limit leaves the old revision the winner */
  json_val *old;
  ASSERT_OK(storet_get(t->db, a, "before", NULL, 0, &old));
  store_edit u;
  memset(&u, 0, sizeof u);
  u.id = "before";
  u.id_len = strlen(u.id);
  u.body = sized_body(a, 10001);
  u.parent = storet_doc_rev(a, old);
  ASSERT_OK(store_update(t->db, NULL, &u, 1, 1));
  ASSERTF(u.rc == DV_EDOC_TOO_LARGE, "update over the limit: %s", dv_err_name(u.rc));
  json_val *now;
  ASSERT_OK(storet_get(t->db, a, "before", NULL, 0, &now));
  STORET_ASSERT_JSON_EQ(a, now, old);
  store_leaf *lv;
  size_t nl;
  ASSERT_OK(store_doc_leaves(t->db, "before", 6, a, &lv, &nl));
  ASSERT_EQ(nl, 1);
  ASSERT_EQ(lv[0].rev.pos, 1);
  ASSERT_EQ(storet_changes(t->db, a, NULL, NULL, NULL), rows);
  storet_close(t);
}

TEST(store_doc_txn_budget) {
  storet *t = storet_open(NULL, 0, "budget");
  dv_arena *a = &t->a;
  ASSERT_EQ(storet_put(t->db, a, "small", "{\"v\":1}", NULL, 0, NULL), 0);
  store_db_info before;
  ASSERT_OK(store_db_info_get(t->db, &before));
  size_t rows = storet_changes(t->db, a, NULL, NULL, NULL);
  /* {"zeros":[0,0,…]}: 800 KB of JSON, under 1,000,000, but ~400,000 leaf
   * KVs of some 40 bytes each, past the 10 MB transaction budget */
  dv_buf b = DV_BUF_INIT;
  buf_puts(&b, "{\"_id\":\"zeros\",\"zeros\":[0");
  for (int i = 1; i < 400000; i++) buf_puts(&b, ",0");
  buf_puts(&b, "]}");
  store_edit e[3];
  memset(e, 0, sizeof e);
  doc_edit(a, (const char *)b.p, b.len, &e[1]);
  dv_buf w = DV_BUF_INIT;
  ASSERT_OK(json_write(&w, e[1].body));
  ASSERTF(w.len < STORE_DEFAULT_MAX_DOC, "body is %zu bytes", w.len);
  buf_free(&w);
  e[0].id = "ok-1";
  e[0].id_len = 4;
  e[0].body = storet_json(a, "{\"a\":[0,0,0]}");
  e[2].id = "ok-2";
  e[2].id_len = 4;
  e[2].body = storet_json(a, "{\"b\":{}}");
  double t0 = storet_now();
  ASSERT_OK(store_update(t->db, NULL, e, 3, 1));
  printf("store_update with a 400,000-zero array: %.2f s\n", storet_now() - t0);
  ASSERTF(e[1].rc == DV_EDOC_TOO_LARGE, "exploded doc past the transaction budget: %s", dv_err_name(e[1].rc));
  ASSERTF(e[0].rc == 0 && e[2].rc == 0, "the other edits of the call: %s, %s", dv_err_name(e[0].rc),
          dv_err_name(e[2].rc));
  store_db_info info;
  ASSERT_OK(store_db_info_get(t->db, &info));
  ASSERT_EQ(info.doc_count, before.doc_count + 2);
  expect_absent(t, "zeros", &info, rows + 2);
  /* alone in its call, too */
  doc_edit(a, (const char *)b.p, b.len, &e[1]);
  ASSERT_OK(store_update(t->db, NULL, &e[1], 1, 1));
  ASSERTF(e[1].rc == DV_EDOC_TOO_LARGE, "alone: %s", dv_err_name(e[1].rc));
  expect_absent(t, "zeros", &info, rows + 2);
  /* a smaller array of zeros that fits goes in and comes back */
  buf_reset(&b);
  buf_puts(&b, "{\"_id\":\"zeros-ok\",\"zeros\":[0");
  for (int i = 1; i < 20000; i++) buf_puts(&b, ",0");
  buf_puts(&b, "]}");
  roundtrip_one(t, (const char *)b.p, b.len);
  buf_free(&b);
  storet_close(t);
}

TEST(store_doc_path_too_long) {
  storet *t = storet_open(NULL, 0, "paths");
  dv_arena *a = &t->a;
  ASSERT_EQ(storet_put(t->db, a, "small", "{\"v\":1}", NULL, 0, NULL), 0);
  store_db_info before;
  ASSERT_OK(store_db_info_get(t->db, &before));
  size_t rows = storet_changes(t->db, a, NULL, NULL, NULL);
  dv_buf b = DV_BUF_INIT;
  /* a top-level key of 10,001 bytes */
  buf_puts(&b, "{\"_id\":\"longkey\",\"");
  for (int k = 0; k < 10001; k++) buf_putc(&b, (uint8_t)('a' + k % 26));
  buf_puts(&b, "\":1}");
  store_edit e;
  doc_edit(a, (const char *)b.p, b.len, &e);
  ASSERT_OK(store_update(t->db, NULL, &e, 1, 1));
  ASSERTF(e.rc == DV_EPATH_TOO_LONG, "10,001-byte key: %s", dv_err_name(e.rc));
  expect_absent(t, "longkey", &before, rows);
  /* a long key deep inside, with an empty object (a marker KV) under it */
  buf_reset(&b);
  buf_puts(&b, "{\"_id\":\"longkey2\",\"a\":[1,{\"b\":{\"");
  for (int k = 0; k < 6000; k++) buf_putc(&b, (uint8_t)('a' + k % 26));
  buf_puts(&b, "\":{\"");
  for (int k = 0; k < 5000; k++) buf_putc(&b, (uint8_t)('A' + k % 26));
  buf_puts(&b, "\":{}}}}]}");
  doc_edit(a, (const char *)b.p, b.len, &e);
  ASSERT_OK(store_update(t->db, NULL, &e, 1, 1));
  ASSERTF(e.rc == DV_EPATH_TOO_LONG, "11,000-byte nested path: %s", dv_err_name(e.rc));
  expect_absent(t, "longkey2", &before, rows);
  /* nesting: 900 objects under 12-byte keys */
  buf_reset(&b);
  buf_puts(&b, "{\"_id\":\"deeppath\",\"v\":");
  for (int k = 0; k < 900; k++) buf_puts(&b, "{\"abcdefghijkl\":");
  buf_puts(&b, "true");
  for (int k = 0; k < 900; k++) buf_putc(&b, '}');
  buf_putc(&b, '}');
  doc_edit(a, (const char *)b.p, b.len, &e);
  ASSERT_OK(store_update(t->db, NULL, &e, 1, 1));
  ASSERTF(e.rc == DV_EPATH_TOO_LONG, "900 levels of 12-byte keys: %s", dv_err_name(e.rc));
  expect_absent(t, "deeppath", &before, rows);
  /* in a call with good edits, with new_edits=false too */
  store_edit m[3];
  memset(m, 0, sizeof m);
  doc_edit(a, (const char *)b.p, b.len, &m[1]);
  m[0].id = "good-1";
  m[0].id_len = 6;
  m[2].id = "good-2";
  m[2].id_len = 6;
  store_rev p0 = storet_rev(a, "1-00000000000000000000000000000001");
  store_rev p1 = storet_rev(a, "1-00000000000000000000000000000002");
  store_rev p2 = storet_rev(a, "1-00000000000000000000000000000003");
  m[0].path = &p0;
  m[1].path = &p1;
  m[2].path = &p2;
  m[0].path_len = m[1].path_len = m[2].path_len = 1;
  ASSERT_OK(store_update(t->db, NULL, m, 3, 0));
  ASSERTF(m[1].rc == DV_EPATH_TOO_LONG, "replicated: %s", dv_err_name(m[1].rc));
  ASSERTF(m[0].rc == 0 && m[2].rc == 0, "the good ones: %s %s", dv_err_name(m[0].rc), dv_err_name(m[2].rc));
  expect_absent(t, "deeppath", NULL, 0);
  ASSERT_EQ(storet_changes(t->db, a, NULL, NULL, NULL), rows + 2);
  buf_free(&b);
  storet_close(t);
}
