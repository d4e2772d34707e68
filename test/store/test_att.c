/* test_att.c — attachments in the store (att.c, and edit.c/read.c/purge.c
 * where they meet it): content written with the edit and read back across
 * chunk boundaries, stubs that keep content and stubs that match nothing,
 * content collected when the last leaf using it goes (edit, conflict,
 * purge), uploads linked by an edit or freed unlinked, in-memory content
 * past STORE_ATT_INLINE_MAX spilled to an upload, the sweeper, and
 * new_edits=false stubs resolved against any leaf.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "storet.h"
#include "util/alloc.h"
#include "util/b64.h"
#include "util/md5.h"

/* n pseudo-random bytes (arena). */
static uint8_t *bytes(dv_arena *a, size_t n, uint64_t seed) {
  uint8_t *p = arena_alloc(a, n ? n : 1);
  ASSERT(p != NULL);
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(storet_rand(&seed) >> 56);
  return p;
}

/* One interactive edit with attachments; returns its rc. */
static int put_atts(storet *t, const char *id, const char *parent, store_att *atts, size_t n, store_rev *out) {
  store_edit e;
  memset(&e, 0, sizeof e);
  e.id = id;
  e.id_len = strlen(id);
  if (parent) e.parent = storet_rev(&t->a, parent);
  e.atts = atts;
  e.n_atts = n;
  ASSERT_OK(store_update(t->db, NULL, &e, 1, 1));
  if (!e.rc && out) *out = storet_rev_dup(&t->a, &e.rev);
  return e.rc;
}

static store_att new_att(const char *name, const uint8_t *p, size_t n) {
  store_att a;
  memset(&a, 0, sizeof a);
  a.name = name;
  a.name_len = strlen(name);
  a.type = "application/octet-stream";
  a.type_len = strlen(a.type);
  a.data = p;
  a.data_len = n;
  return a;
}

static store_att stub_att(const char *name) {
  store_att a;
  memset(&a, 0, sizeof a);
  a.name = name;
  a.name_len = strlen(name);
  a.stub = 1;
  return a;
}

/* The attachment `name` of a leaf (rev NULL = winner). */
static store_att get_att(storet *t, const char *id, const char *rev, const char *name) {
  store_rev r, *rp = NULL;
  if (rev) r = storet_rev(&t->a, rev), rp = &r;
  store_att *v;
  size_t n;
  ASSERT_OK(store_doc_atts(t->db, id, strlen(id), rp, &t->a, NULL, &v, &n));
  for (size_t i = 0; i < n; i++)
    if (v[i].name_len == strlen(name) && !memcmp(v[i].name, name, v[i].name_len)) return v[i];
  test_fail_(__FILE__, __LINE__, "no attachment %s", name);
  return v[0];
}

/* Read all of an attachment's content with pieces of `step` bytes. */
static int read_all(storet *t, const char *id, const store_att *att, size_t step, uint8_t **out) {
  uint8_t *p = arena_alloc(&t->a, (size_t)att->enc_length + step);
  ASSERT(p != NULL);
  int64_t off = 0;
  for (;;) {
    size_t got;
    int rc = store_att_pread(t->db, id, strlen(id), att, off, p + off, step, &got);
    if (rc) return rc;
    off += (int64_t)got;
    if (got < step) break;
  }
  ASSERT_EQ(off, att->enc_length);
  *out = p;
  return 0;
}

static void md5_of(const uint8_t *p, size_t n, uint8_t out[16]) {
  dv_md5 m;
  dv_md5_init(&m);
  dv_md5_update(&m, p, n);
  dv_md5_final(&m, out);
}

TEST(store_att_inline_roundtrip) {
  storet *t = storet_open(NULL, 0, "db");
  size_t sizes[] = {0, 1, STORE_ATT_CHUNK - 1, STORE_ATT_CHUNK, STORE_ATT_CHUNK + 1, 2 * STORE_ATT_CHUNK + 17};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    char id[16];
    snprintf(id, sizeof id, "d%zu", k);
    uint8_t *p = bytes(&t->a, sizes[k], k + 1);
    store_att a = new_att("f/x.bin", p, sizes[k]);
    store_rev r;
    ASSERT_OK(put_atts(t, id, NULL, &a, 1, &r));
    store_att g = get_att(t, id, NULL, "f/x.bin");
    ASSERT_EQ(g.length, (int64_t)sizes[k]);
    ASSERT_EQ(g.enc_length, (int64_t)sizes[k]);
    ASSERT_EQ(g.revpos, 1);
    uint8_t md5[16];
    md5_of(p, sizes[k], md5);
    ASSERT(!memcmp(g.md5, md5, 16));
    size_t steps[] = {1000, STORE_ATT_CHUNK, 3 * STORE_ATT_CHUNK};
    for (size_t s = 0; s < 3; s++) {
      if (sizes[k] > 50000 && steps[s] < 10000) continue;
      uint8_t *back;
      ASSERT_OK(read_all(t, id, &g, steps[s], &back));
      ASSERT(sizes[k] == 0 || !memcmp(back, p, sizes[k]));
    }
    /* a read from the middle, across a chunk boundary */
    if (sizes[k] > STORE_ATT_CHUNK + 10) {
      uint8_t buf[20];
      size_t got;
      ASSERT_OK(store_att_pread(t->db, id, strlen(id), &g, STORE_ATT_CHUNK - 10, buf, 20, &got));
      ASSERT_EQ(got, 20);
      ASSERT(!memcmp(buf, p + STORE_ATT_CHUNK - 10, 20));
    }
    /* the document shows the stub */
    json_val *d;
    ASSERT_OK(storet_get(t->db, &t->a, id, NULL, 0, &d));
    const json_val *s = json_obj_getz(json_obj_getz(d, "_attachments"), "f/x.bin");
    ASSERT(s != NULL);
    char want[64];
    memcpy(want, "md5-", 4);
    dv_b64_encode(md5, 16, 0, want + 4);
    ASSERT_STR_EQ(storet_json_text(&t->a, json_obj_getz(s, "digest")),
                  storet_json_text(&t->a, json_new_stringz(&t->a, want)));
    ASSERT(json_obj_getz(s, "stub") != NULL && json_obj_getz(s, "encoding") == NULL);
  }
  storet_close(t);
}

TEST(store_att_stubs_and_collection) {
  storet *t = storet_open(NULL, 0, "db");
  uint8_t *p = bytes(&t->a, 250000, 7), *q = bytes(&t->a, 1000, 8);
  store_att a[2] = {new_att("a", p, 250000), new_att("b", q, 1000)};
  a[1].gzip = 1; /* stored as given; the identity length is the caller's */
  a[1].length = 5000;
  store_rev r1, r2, r3, r4;
  ASSERT_OK(put_atts(t, "doc", NULL, a, 2, &r1));
  store_att ga = get_att(t, "doc", NULL, "a"), gb = get_att(t, "doc", NULL, "b");
  ASSERT_EQ(gb.gzip, 1);
  ASSERT_EQ(gb.length, 5000);
  ASSERT_EQ(gb.enc_length, 1000);
  json_val *d;
  ASSERT_OK(storet_get(t->db, &t->a, "doc", NULL, STORE_ATT_INFO, &d));
  const json_val *sb = json_obj_getz(json_obj_getz(d, "_attachments"), "b");
  ASSERT_STR_EQ(storet_json_text(&t->a, json_obj_getz(sb, "encoding")), "\"gzip\"");
  ASSERT_STR_EQ(storet_json_text(&t->a, json_obj_getz(sb, "encoded_length")), "1000");
  /* a stub keeps the content and its revpos */
  store_att s2[2] = {stub_att("a"), stub_att("b")};
  ASSERT_OK(put_atts(t, "doc", storet_rev_str(&t->a, &r1), s2, 2, &r2));
  store_att ga2 = get_att(t, "doc", NULL, "a");
  ASSERT_EQ(ga2.revpos, 1);
  ASSERT(!memcmp(ga2.id, ga.id, 16));
  /* a stub of a name the parent lacks */
  store_att bad = stub_att("zzz");
  ASSERT_EQ(put_atts(t, "doc", storet_rev_str(&t->a, &r2), &bad, 1, NULL), DV_EMISSING_STUB);
  /* a stub with a digest that does not match */
  store_att badd = stub_att("a");
  badd.has_md5 = 1;
  memset(badd.md5, 1, 16);
  ASSERT_EQ(put_atts(t, "doc", storet_rev_str(&t->a, &r2), &badd, 1, NULL), DV_EMISSING_STUB);
  /* a stub on a new document */
  ASSERT_EQ(put_atts(t, "new", NULL, &s2[0], 1, NULL), DV_EMISSING_STUB);
  /* dropping "b": its content is gone, "a" stays */
  ASSERT_OK(put_atts(t, "doc", storet_rev_str(&t->a, &r2), &s2[0], 1, &r3));
  uint8_t *back;
  ASSERT_EQ(read_all(t, "doc", &gb, 4096, &back), DV_EATT_GONE);
  ASSERT_OK(read_all(t, "doc", &ga, STORE_ATT_CHUNK, &back));
  ASSERT(!memcmp(back, p, 250000));
  /* new content under the same name replaces it; the old goes */
  uint8_t *p2 = bytes(&t->a, 300, 9);
  store_att a3 = new_att("a", p2, 300);
  ASSERT_OK(put_atts(t, "doc", storet_rev_str(&t->a, &r3), &a3, 1, &r4));
  ASSERT_EQ(get_att(t, "doc", NULL, "a").revpos, 4);
  ASSERT_EQ(read_all(t, "doc", &ga, STORE_ATT_CHUNK, &back), DV_EATT_GONE);
  /* deleting the document collects the rest */
  store_att gnew = get_att(t, "doc", NULL, "a");
  ASSERT_OK(storet_put(t->db, &t->a, "doc", NULL, storet_rev_str(&t->a, &r4), 1, NULL));
  ASSERT_EQ(read_all(t, "doc", &gnew, STORE_ATT_CHUNK, &back), DV_EATT_GONE);
  /* the same content twice in one document is stored once and survives
   * dropping one of the names */
  store_att twin[2] = {new_att("x", q, 1000), new_att("y", q, 1000)};
  store_rev t1;
  ASSERT_OK(put_atts(t, "twin", NULL, twin, 2, &t1));
  store_att gx = get_att(t, "twin", NULL, "x"), keep_y = stub_att("y");
  ASSERT(!memcmp(gx.id, get_att(t, "twin", NULL, "y").id, 16));
  ASSERT_OK(put_atts(t, "twin", storet_rev_str(&t->a, &t1), &keep_y, 1, NULL));
  ASSERT_OK(read_all(t, "twin", &gx, 4096, &back));
  ASSERT(!memcmp(back, q, 1000));
  storet_close(t);
}

TEST(store_att_conflicts_and_purge) {
  storet *t = storet_open(NULL, 0, "db");
  uint8_t *p = bytes(&t->a, 150000, 3);
  /* two branches (new_edits=false) sharing one attachment's content */
  const char *d1 = "{\"_id\":\"c\",\"_revisions\":{\"start\":2,\"ids\":[\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\","
                   "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]},\"_attachments\":{\"f\":{\"content_type\":\"x/y\","
                   "\"data\":\"%s\",\"revpos\":1}}}";
  char *b64 = arena_alloc(&t->a, dv_b64_encoded_len(150000, 0) + 1);
  dv_b64_encode(p, 150000, 0, b64);
  char *doc = arena_alloc(&t->a, strlen(d1) + strlen(b64) + 1);
  sprintf(doc, d1, b64);
  ASSERT_OK(storet_put_doc(t->db, &t->a, doc, 0, NULL));
  store_att g = get_att(t, "c", NULL, "f");
  ASSERT_EQ(g.revpos, 1);
  ASSERT_STR_EQ(arena_strndup(&t->a, g.type, g.type_len), "x/y");
  /* the other branch keeps it by stub, found on any leaf */
  const char *d2 = "{\"_id\":\"c\",\"_revisions\":{\"start\":2,\"ids\":[\"cccccccccccccccccccccccccccccccc\","
                   "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]},\"_attachments\":{\"f\":{\"stub\":true}}}";
  ASSERT_OK(storet_put_doc(t->db, &t->a, d2, 0, NULL));
  store_att g2 = get_att(t, "c", "2-cccccccccccccccccccccccccccccccc", "f");
  ASSERT(!memcmp(g2.id, g.id, 16));
  /* a stub nothing has */
  const char *d3 = "{\"_id\":\"c\",\"_revisions\":{\"start\":2,\"ids\":[\"dddddddddddddddddddddddddddddddd\","
                   "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]},\"_attachments\":{\"nope\":{\"stub\":true}}}";
  ASSERT_EQ(storet_put_doc(t->db, &t->a, d3, 0, NULL), DV_EMISSING_STUB);
  /* editing the winner without the attachment: the other branch still uses it */
  json_val *w;
  ASSERT_OK(storet_get(t->db, &t->a, "c", NULL, 0, &w));
  store_rev wr = storet_doc_rev(&t->a, w);
  ASSERT_OK(storet_put(t->db, &t->a, "c", "{}", storet_rev_str(&t->a, &wr), 0, NULL));
  uint8_t *back;
  ASSERT_OK(read_all(t, "c", &g, STORE_ATT_CHUNK, &back));
  ASSERT(!memcmp(back, p, 150000));
  /* purging the last leaf that uses it (2-b: the edit above replaced the
   * winner, 2-c) clears it */
  store_rev *out;
  size_t np;
  store_rev pr = storet_rev(&t->a, "2-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  ASSERT_OK(store_purge(t->db, "c", 1, &pr, 1, &t->a, &out, &np));
  ASSERT_EQ(np, 1);
  ASSERT_EQ(read_all(t, "c", &g, STORE_ATT_CHUNK, &back), DV_EATT_GONE);
  storet_close(t);
}

TEST(store_att_uploads) {
  storet *t = storet_open(NULL, 0, "db");
  size_t n = 9 * 1000 * 1000 + 123; /* several upload transactions */
  uint8_t *p = bytes(&t->a, n, 11);
  store_att_upload *u;
  ASSERT_OK(store_att_upload_begin(t->db, "big", 3, &u));
  for (size_t off = 0; off < n; off += 65536) ASSERT_OK(store_att_upload_write(u, p + off, n - off < 65536 ? n - off : 65536));
  int64_t len;
  uint8_t md5[16], want[16];
  ASSERT_OK(store_att_upload_finish(u, &len, md5));
  ASSERT_EQ(len, (int64_t)n);
  md5_of(p, n, want);
  ASSERT(!memcmp(md5, want, 16));
  store_att a = new_att("big.bin", NULL, 0);
  a.up = u;
  store_rev r;
  ASSERT_OK(put_atts(t, "big", NULL, &a, 1, &r));
  store_att_upload_free(u); /* linked: its content stays */
  store_att g = get_att(t, "big", NULL, "big.bin");
  ASSERT_EQ(g.length, (int64_t)n);
  ASSERT(!memcmp(g.md5, want, 16));
  uint8_t *back;
  ASSERT_OK(read_all(t, "big", &g, 1 << 20, &back));
  ASSERT(!memcmp(back, p, n));
  /* an upload no edit links is cleared when freed */
  ASSERT_OK(store_att_upload_begin(t->db, "big", 3, &u));
  ASSERT_OK(store_att_upload_write(u, p, 300000));
  ASSERT_OK(store_att_upload_finish(u, NULL, NULL));
  store_att ghost = g;
  memcpy(ghost.id, st_upload_id(u), 16);
  ghost.enc_length = 300000;
  ASSERT_OK(read_all(t, "big", &ghost, 1 << 20, &back));
  store_att_upload_free(u);
  ASSERT_EQ(read_all(t, "big", &ghost, 1 << 20, &back), DV_EATT_GONE);
  /* an upload whose edit conflicts is not linked either */
  ASSERT_OK(store_att_upload_begin(t->db, "big", 3, &u));
  ASSERT_OK(store_att_upload_write(u, p, 1000));
  ASSERT_OK(store_att_upload_finish(u, NULL, NULL));
  a.up = u;
  ASSERT_EQ(put_atts(t, "big", "1-00000000000000000000000000000000", &a, 1, NULL), DV_ECONFLICT);
  memcpy(ghost.id, st_upload_id(u), 16);
  ghost.enc_length = 1000;
  store_att_upload_free(u);
  ASSERT_EQ(read_all(t, "big", &ghost, 4096, &back), DV_EATT_GONE);
  /* one left behind (a crash) is swept once expired, and an edit that
   * tries to link a swept upload fails cleanly */
  ASSERT_OK(store_att_upload_begin(t->db, "big", 3, &u));
  ASSERT_OK(store_att_upload_write(u, p, 1000));
  ASSERT_OK(store_att_upload_finish(u, NULL, NULL));
  ASSERT_EQ(st_att_sweep(t->s, st_now_ms()), 0); /* not expired yet */
  ASSERT_EQ(st_att_sweep(t->s, st_now_ms() + STORE_ATT_UPLOAD_TTL_S * 1000LL + 1000), 1);
  memcpy(ghost.id, st_upload_id(u), 16);
  ASSERT_EQ(read_all(t, "big", &ghost, 4096, &back), DV_EATT_GONE);
  a.up = u;
  ASSERT_EQ(put_atts(t, "big", storet_rev_str(&t->a, &r), &a, 1, NULL), DV_EATT_GONE);
  store_att_upload_free(u);
  ASSERT_OK(read_all(t, "big", &g, 1 << 20, &back)); /* the document's own is intact */
  /* an upload swept while it is still being written fails its next
   * write instead of going on with a hole */
  ASSERT_OK(store_att_upload_begin(t->db, "big", 3, &u));
  ASSERT_OK(store_att_upload_write(u, p, 1000));
  ASSERT_EQ(st_att_sweep(t->s, st_now_ms() + STORE_ATT_UPLOAD_TTL_S * 1000LL + 1000), 1);
  ASSERT_EQ(store_att_upload_finish(u, NULL, NULL), DV_EATT_GONE);
  store_att_upload_free(u);
  storet_close(t);
}

TEST(store_att_spill) {
  storet *t = storet_open(NULL, 0, "db");
  /* in-memory content past STORE_ATT_INLINE_MAX goes through an upload */
  size_t n = STORE_ATT_INLINE_MAX + 500000;
  uint8_t *p = bytes(&t->a, n, 21), *q = bytes(&t->a, 5000, 22);
  store_att a[2] = {new_att("huge", p, n), new_att("small", q, 5000)};
  store_rev r;
  ASSERT_OK(put_atts(t, "s", NULL, a, 2, &r));
  store_att g = get_att(t, "s", NULL, "huge"), h = get_att(t, "s", NULL, "small");
  uint8_t md5[16];
  md5_of(p, n, md5);
  ASSERT(!memcmp(g.md5, md5, 16));
  uint8_t *back;
  ASSERT_OK(read_all(t, "s", &g, 1 << 20, &back));
  ASSERT(!memcmp(back, p, n));
  ASSERT_OK(read_all(t, "s", &h, 1 << 20, &back));
  ASSERT(!memcmp(back, q, 5000));
  /* bad input */
  store_att un = new_att("_x", q, 1);
  ASSERT_EQ(put_atts(t, "s2", NULL, &un, 1, NULL), DV_EBAD_ATT);
  store_att dup[2] = {new_att("d", q, 1), new_att("d", q, 2)};
  ASSERT_EQ(put_atts(t, "s2", NULL, dup, 2, NULL), DV_EBAD_ATT);
  store_att fol = new_att("f", NULL, 0);
  fol.follows = 1;
  ASSERT_EQ(put_atts(t, "s2", NULL, &fol, 1, NULL), DV_EBAD_ATT);
  storet_close(t);
}

TEST(store_att_from_json) {
  dv_arena a = DV_ARENA_INIT;
  store_edit e;
  json_val *d = storet_json(&a, "{\"_id\":\"x\",\"_attachments\":{\"t.txt\":{\"content_type\":\"text/plain\","
                                "\"data\":\"aGVsbG8=\"},\"s\":{\"stub\":true,\"digest\":\"md5-XUFAKrxLKna5cZ2REBfFkg==\"},"
                                "\"f\":{\"follows\":true,\"length\":10,\"encoding\":\"gzip\",\"encoded_length\":7}}}");
  ASSERT_OK(store_edit_from_json(&a, d, 1, &e));
  ASSERT_EQ(e.n_atts, 3);
  ASSERT_EQ(e.atts[0].data_len, 5);
  ASSERT(!memcmp(e.atts[0].data, "hello", 5));
  ASSERT_EQ(e.atts[1].stub, 1);
  ASSERT_EQ(e.atts[1].has_md5, 1);
  ASSERT_EQ(e.atts[2].follows, 1);
  ASSERT_EQ(e.atts[2].gzip, 1);
  ASSERT_EQ(e.atts[2].length, 10);
  ASSERT_EQ(e.atts[2].enc_length, 7);
  const char *bad[] = {
      "{\"_attachments\":[]}",
      "{\"_attachments\":{\"_n\":{\"data\":\"\"}}}",
      "{\"_attachments\":{\"n\":{\"data\":\"!!!\"}}}",
      "{\"_attachments\":{\"n\":{\"content_type\":\"x\"}}}",
      "{\"_attachments\":{\"n\":5}}",
      "{\"_attachments\":{\"n\":{\"follows\":true,\"length\":-1}}}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ASSERT_EQ(store_edit_from_json(&a, storet_json(&a, bad[i]), 1, &e), DV_EBAD_ATT);
  arena_free(&a);
}

/* RevisionMetadata values are a decoder's input: every truncation and
 * thousands of byte flips of a valid one decode or fail with DV_ECORRUPT,
 * never crash (run under ASan by make SANITIZE=…); a valid one round-trips. */
TEST(store_att_meta_hostile) {
  dv_arena a = DV_ARENA_INIT;
  store_att in[2];
  memset(in, 0, sizeof in);
  in[0].name = "a/é.txt";
  in[0].name_len = strlen(in[0].name);
  in[0].type = "text/plain";
  in[0].type_len = 10;
  in[0].length = 1234567;
  in[0].enc_length = 4567;
  in[0].gzip = 1;
  in[0].revpos = 3;
  memset(in[0].md5, 0, 16); /* zero bytes: escaped in the tuple */
  memset(in[0].id, 0xff, 16);
  in[1] = in[0];
  in[1].name = "b";
  in[1].name_len = 1;
  in[1].gzip = 0;
  dv_buf v;
  buf_init(&v);
  ASSERT_OK(st_meta_encode(&v, in, 2));
  store_att *out;
  size_t n;
  ASSERT_OK(st_meta_atts(v.p, v.len, &a, &out, &n));
  ASSERT_EQ(n, 2);
  ASSERT(out[0].name_len == in[0].name_len && !memcmp(out[0].name, in[0].name, in[0].name_len));
  ASSERT(out[0].length == 1234567 && out[0].enc_length == 4567 && out[0].gzip && out[0].revpos == 3);
  ASSERT(!memcmp(out[0].md5, in[0].md5, 16) && !memcmp(out[0].id, in[0].id, 16) && !out[1].gzip);
  dv_buf e;
  buf_init(&e);
  ASSERT_OK(st_meta_encode(&e, NULL, 0));
  ASSERT_OK(st_meta_atts(e.p, e.len, &a, &out, &n));
  ASSERT_EQ(n, 0);
  for (size_t cut = 0; cut < v.len; cut++) {
    int rc = st_meta_atts(v.p, cut, &a, &out, &n);
    ASSERT(rc == DV_ECORRUPT || (rc == 0 && cut == 1));
  }
  uint64_t seed = storet_seed("store_att_meta_hostile", 7);
  uint8_t *m = dv_malloc(v.len);
  for (int round = 0; round < 20000; round++) {
    memcpy(m, v.p, v.len);
    int flips = 1 + (int)storet_below(&seed, 4);
    for (int f = 0; f < flips; f++) m[storet_below(&seed, v.len)] = (uint8_t)storet_rand(&seed);
    int rc = st_meta_atts(m, v.len, &a, &out, &n);
    ASSERT(rc == 0 || rc == DV_ECORRUPT);
    if (round % 1000 == 0) arena_reset(&a);
  }
  dv_free(m);
  buf_free(&v);
  buf_free(&e);
  arena_free(&a);
}
