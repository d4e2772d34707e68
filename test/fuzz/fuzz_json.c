/* fuzz_json.c — libFuzzer target for the JSON layer (src/json).
 *
 * Each input is read as a JSON text, and the target checks:
 *  - the pull reader alone: events are well nested, depth never goes
 *    negative, zero-copy strings lie inside the input, numbers are valid
 *    number texts, errors carry a message and an offset inside the input;
 *  - the DOM parser agrees with the pull reader on accept/reject and on the
 *    error code;
 *  - idempotence: an accepted input, written out, is valid UTF-8 and parses
 *    again, and writing that second DOM gives exactly the same text;
 *  - the pull reader's events replayed through the streaming writer give
 *    the same text as the DOM writer when the input has no duplicate keys
 *    (the DOM resolves them, the reader reports them);
 *  - json_num_parse on the raw bytes: when they are a number, its
 *    canonical text is canonical (a fixed point).
 * Any failed check aborts, which libFuzzer reports as a crash.
 *
 * Build: make fuzzers (clang -fsanitize=fuzzer,address,undefined).
 * Seeds: test/fuzz/seeds/fuzz_json. The test runner also links this file
 * (every test/ file is), so the entry point is weak.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"

#define CHECK(c)                                                                 \
  do {                                                                           \
    if (!(c)) {                                                                  \
      fprintf(stderr, "fuzz_json: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                   \
    }                                                                            \
  } while (0)

/* Walk every event; returns the reader's final code (0 or an error) and
 * writes the events through the streaming writer into out. */
static int pull(const uint8_t *data, size_t size, dv_buf *out) {
  json_reader r;
  json_w w;
  int rc = json_reader_init(&r, data, size, NULL);
  CHECK(rc == 0);
  json_w_init(&w, out);
  int ev, depth = 0;
  while ((ev = json_next(&r)) > 0) {
    CHECK(r.depth >= 0 && r.depth <= JSON_DEFAULT_DEPTH);
    switch (ev) {
      case JSON_EV_OBJ_BEGIN: depth++; json_w_obj_begin(&w); break;
      case JSON_EV_ARR_BEGIN: depth++; json_w_arr_begin(&w); break;
      case JSON_EV_OBJ_END: depth--; json_w_obj_end(&w); break;
      case JSON_EV_ARR_END: depth--; json_w_arr_end(&w); break;
      case JSON_EV_KEY:
      case JSON_EV_STRING:
        if (!r.escaped)
          CHECK(r.len == 0 ||
                ((const uint8_t *)r.str >= data && (const uint8_t *)r.str + r.len <= data + size));
        CHECK(json_utf8_check(r.str, r.len, NULL) == 0);
        if (ev == JSON_EV_KEY) json_w_key(&w, r.str, r.len);
        else json_w_str(&w, r.str, r.len);
        break;
      case JSON_EV_NUMBER: {
        json_num n;
        CHECK(json_num_parse(r.str, r.len, &n) == 0);
        json_w_num(&w, r.str, r.len);
        break;
      }
      case JSON_EV_TRUE: json_w_bool(&w, 1); break;
      case JSON_EV_FALSE: json_w_bool(&w, 0); break;
      case JSON_EV_NULL: json_w_null(&w); break;
      default: CHECK(0);
    }
    CHECK(depth == r.depth);
  }
  if (ev == 0) {
    CHECK(depth == 0);
    CHECK(json_next(&r) == JSON_EV_END);
    CHECK(json_w_finish(&w) == 0);
  } else {
    CHECK(ev == DV_EJSON || ev == DV_EJSON_DEPTH);
    CHECK(r.err.msg != NULL && r.err.offset <= size);
    CHECK(json_next(&r) == ev); /* sticky */
  }
  json_reader_free(&r);
  return ev;
}

/* Members in the DOM; equal to the reader's count of keys exactly when no
 * duplicate key was resolved away. */
static size_t count_members(const json_val *v) {
  size_t n = 0;
  if (v->type == JSON_ARRAY)
    for (size_t i = 0; i < v->len; i++) n += count_members(v->u.items[i]);
  if (v->type == JSON_OBJECT)
    for (size_t i = 0; i < v->len; i++) n += 1 + count_members(v->u.members[i].val);
  return n;
}

static size_t count_keys(const uint8_t *data, size_t size) {
  json_reader r;
  size_t n = 0;
  int ev;
  CHECK(json_reader_init(&r, data, size, NULL) == 0);
  while ((ev = json_next(&r)) > 0) n += ev == JSON_EV_KEY;
  json_reader_free(&r);
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dv_buf replay = DV_BUF_INIT, s1 = DV_BUF_INIT, s2 = DV_BUF_INIT;
  dv_arena a = DV_ARENA_INIT;
  int prc = pull(data, size, &replay);

  json_val *v = NULL, *v2 = NULL;
  json_err e = {0, NULL};
  int rc = json_parse(&a, data, size, NULL, &v, &e);
  CHECK(rc == prc);
  if (rc == 0) {
    CHECK(json_write(&s1, v) == 0);
    CHECK(json_utf8_check(s1.p, s1.len, NULL) == 0);
    rc = json_parse(&a, s1.p, s1.len, NULL, &v2, &e);
    CHECK(rc == 0);
    CHECK(json_write(&s2, v2) == 0);
    CHECK(s1.len == s2.len && memcmp(s1.p, s2.p, s1.len) == 0);
    if (count_members(v) == count_keys(data, size))
      CHECK(replay.len == s1.len && memcmp(replay.p, s1.p, s1.len) == 0);
  } else {
    CHECK(e.msg != NULL && e.offset <= size);
  }

  /* the raw bytes as a number text */
  json_num n;
  if (size < 4096 && json_num_parse((const char *)data, size, &n) == 0) {
    json_num m;
    CHECK(json_num_parse(n.text, n.len, &m) == 0);
    CHECK(m.cls == n.cls && m.len == n.len && memcmp(m.text, n.text, n.len) == 0);
  }

  buf_free(&replay);
  buf_free(&s1);
  buf_free(&s2);
  arena_free(&a);
  return 0;
}
