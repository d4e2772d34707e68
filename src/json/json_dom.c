/* json_dom.c — building, looking up and editing DOM values (json.h).
 *
 * Everything is allocated from the caller's arena, so nothing here frees:
 * a vector that grows moves to a bigger block and leaves the old one to the
 * arena. Objects are vectors of members in document order with unique
 * keys; lookups are linear, which beats hashing for the dozen or so keys a
 * document object usually has. An object that json_obj_set grows past
 * HASH_MIN members gets an index (flag `hashed`): the member vector's block
 * holds, after its cap members, 2*cap uint32 slots of open addressing
 * (member index + 1, 0 empty) over json__key_hash. It is kept by
 * json_obj_set and json_obj_del and rebuilt whenever the vector grows, so
 * building an object of n keys one json_obj_set at a time costs O(n), not
 * O(n^2) (issue 24: a 100,000-key document took 9 s). Vectors made
 * elsewhere (the parser, json_dup, store/body.c) have no index and are
 * scanned until json_obj_set indexes them.
 *
 * Not here: parsing (json_read.c) and output (json_write.c).
 */
#include <string.h>

#include "json/json.h"
#include "json/json_int.h"

json_val *json_new_null(dv_arena *a) { return json__node(a, JSON_NULL); }

json_val *json_new_bool(dv_arena *a, int b) {
  json_val *v = json__node(a, JSON_BOOL);
  if (v) v->b = b != 0;
  return v;
}

static json_val *num_node(dv_arena *a, const char *text, size_t n, json_numclass cls) {
  json_val *v = json__node(a, JSON_NUMBER);
  if (!v) return NULL;
  v->num = (uint8_t)cls;
  v->len = n;
  v->u.s = arena_memdup(a, text, n);
  return v->u.s ? v : NULL;
}

json_val *json_new_int(dv_arena *a, int64_t i) {
  char t[24];
  size_t n = json_fmt_int64(i, t);
  return num_node(a, t, n, JSON_NUM_INT64);
}

json_val *json_new_uint(dv_arena *a, uint64_t u) {
  char t[24];
  size_t n = json_fmt_uint64(u, t);
  return num_node(a, t, n, u > (uint64_t)INT64_MAX ? JSON_NUM_UINT64 : JSON_NUM_INT64);
}

json_val *json_new_double(dv_arena *a, double d) {
  char t[JSON_NUM_BUF];
  size_t n = json_fmt_double(d, t);
  if (!n) return NULL;
  return num_node(a, t, n, JSON_NUM_DOUBLE);
}

json_val *json_new_number(dv_arena *a, const char *text, size_t n) {
  json_num num;
  if (json_num_parse(text, n, &num)) return NULL;
  return num_node(a, num.text, num.len, num.cls);
}

json_val *json_new_string(dv_arena *a, const char *s, size_t n) {
  json_val *v = json__node(a, JSON_STRING);
  if (!v) return NULL;
  v->len = n;
  v->u.s = arena_memdup(a, s, n);
  return v->u.s ? v : NULL;
}

json_val *json_new_stringz(dv_arena *a, const char *s) { return json_new_string(a, s, strlen(s)); }

json_val *json_new_array(dv_arena *a) { return json__node(a, JSON_ARRAY); }

json_val *json_new_object(dv_arena *a) { return json__node(a, JSON_OBJECT); }

/* Make room for one more element in an array or object vector. */
static int grow(dv_arena *a, json_val *c, size_t elem) {
  if (c->len < c->cap) return 0;
  size_t cap = c->cap ? 2 * c->cap : 4;
  if (cap > SIZE_MAX / elem) return DV_ENOMEM;
  void *p = arena_realloc(a, c->u.items, c->cap * elem, cap * elem, 8);
  if (!p) return DV_ENOMEM;
  c->u.items = p;
  c->cap = cap;
  return 0;
}

int json_arr_push(dv_arena *a, json_val *arr, json_val *v) {
  if (!v) return DV_ENOMEM;
  if (!arr || arr->type != JSON_ARRAY) return DV_EINVAL;
  int rc = grow(a, arr, sizeof(json_val *));
  if (rc) return rc;
  arr->u.items[arr->len++] = v;
  return 0;
}

#define HASH_MIN 32 /* json_obj_set indexes objects from this many members */

static uint32_t *slots(const json_val *obj) { return (uint32_t *)(obj->u.members + obj->cap); }

static int same_key(const json_member *m, const char *key, size_t klen) {
  return m->klen == klen && (klen == 0 || memcmp(m->key, key, klen) == 0);
}

/* The slot that holds key, or the empty slot where it would go. */
static uint32_t *slot_of(const json_val *obj, const char *key, size_t klen) {
  uint32_t *t = slots(obj);
  size_t mask = 2 * obj->cap - 1;
  for (size_t h = (size_t)json__key_hash(key, klen) & mask;; h = (h + 1) & mask)
    if (!t[h] || same_key(&obj->u.members[t[h] - 1], key, klen)) return &t[h];
}

/* Fill the index from the members (its slots are there: cap is a power of
 * two and the block holds 2*cap slots after the members). */
static void reindex(json_val *obj) {
  memset(slots(obj), 0, 2 * obj->cap * sizeof(uint32_t));
  for (size_t i = 0; i < obj->len; i++) {
    const json_member *m = &obj->u.members[i];
    *slot_of(obj, m->key, m->klen) = (uint32_t)(i + 1);
  }
  obj->hashed = 1;
}

static json_member *find(const json_val *obj, const char *key, size_t klen) {
  if (!obj || obj->type != JSON_OBJECT) return NULL;
  if (obj->hashed) {
    uint32_t s = *slot_of(obj, key, klen);
    return s ? &obj->u.members[s - 1] : NULL;
  }
  for (size_t i = 0; i < obj->len; i++) {
    json_member *m = &obj->u.members[i];
    if (same_key(m, key, klen)) return m;
  }
  return NULL;
}

/* Room for one more member; an object reaching HASH_MIN members (or any
 * object past it, e.g. one the parser made) moves to an indexed block. */
static int grow_obj(dv_arena *a, json_val *obj) {
  int index = obj->hashed || obj->len + 1 >= HASH_MIN;
  if (obj->len < obj->cap && obj->hashed == index) return 0;
  size_t cap = 4; /* a power of two (the index's mask), never below the old cap */
  while (cap < obj->len + 1 || cap < obj->cap) {
    if (cap > UINT32_MAX / 4) return DV_ENOMEM;
    cap *= 2;
  }
  size_t old = obj->cap * sizeof(json_member) + (obj->hashed ? 2 * obj->cap * sizeof(uint32_t) : 0);
  size_t need = cap * sizeof(json_member) + (index ? 2 * cap * sizeof(uint32_t) : 0);
  void *p = arena_realloc(a, obj->u.members, old, need, 8);
  if (!p) return DV_ENOMEM;
  obj->u.members = p;
  obj->cap = cap;
  obj->hashed = 0;
  if (index) reindex(obj);
  return 0;
}

json_val *json_obj_get(const json_val *obj, const char *key, size_t klen) {
  json_member *m = find(obj, key, klen);
  return m ? m->val : NULL;
}

json_val *json_obj_getz(const json_val *obj, const char *key) {
  return json_obj_get(obj, key, strlen(key));
}

json_val *json_arr_get(const json_val *arr, size_t i) {
  if (!arr || arr->type != JSON_ARRAY || i >= arr->len) return NULL;
  return arr->u.items[i];
}

int json_obj_set(dv_arena *a, json_val *obj, const char *key, size_t klen, json_val *v) {
  if (!v) return DV_ENOMEM;
  if (!obj || obj->type != JSON_OBJECT) return DV_EINVAL;
  json_member *m = find(obj, key, klen);
  if (m) {
    m->val = v;
    return 0;
  }
  char *k = arena_memdup(a, key, klen);
  if (!k) return DV_ENOMEM;
  int rc = grow_obj(a, obj);
  if (rc) return rc;
  m = &obj->u.members[obj->len++];
  m->key = k;
  m->klen = klen;
  m->val = v;
  if (obj->hashed) *slot_of(obj, k, klen) = (uint32_t)obj->len;
  return 0;
}

int json_obj_setz(dv_arena *a, json_val *obj, const char *key, json_val *v) {
  return json_obj_set(a, obj, key, strlen(key), v);
}

int json_obj_del(json_val *obj, const char *key, size_t klen) {
  json_member *m = find(obj, key, klen);
  if (!m) return 0;
  size_t i = (size_t)(m - obj->u.members);
  memmove(m, m + 1, (obj->len - i - 1) * sizeof *m);
  obj->len--;
  if (obj->hashed) reindex(obj); /* indexes past i moved down */
  return 1;
}

json_val *json_dup(dv_arena *a, const json_val *v) {
  if (!v) return NULL;
  json_val *c = json__node(a, v->type);
  if (!c) return NULL;
  c->num = v->num;
  c->b = v->b;
  switch (v->type) {
    case JSON_NUMBER:
    case JSON_STRING:
      c->len = v->len;
      c->u.s = arena_memdup(a, v->u.s, v->len);
      if (!c->u.s) return NULL;
      break;
    case JSON_ARRAY:
      if (v->len) {
        c->u.items = arena_alloc_align(a, v->len * sizeof(json_val *), 8);
        if (!c->u.items) return NULL;
        for (size_t i = 0; i < v->len; i++) {
          c->u.items[i] = json_dup(a, v->u.items[i]);
          if (!c->u.items[i]) return NULL;
        }
      }
      c->len = c->cap = v->len;
      break;
    case JSON_OBJECT:
      if (v->len) {
        c->u.members = arena_alloc_align(a, v->len * sizeof(json_member), 8);
        if (!c->u.members) return NULL;
        for (size_t i = 0; i < v->len; i++) {
          const json_member *m = &v->u.members[i];
          c->u.members[i].klen = m->klen;
          c->u.members[i].key = arena_memdup(a, m->key, m->klen);
          c->u.members[i].val = json_dup(a, m->val);
          if (!c->u.members[i].key || !c->u.members[i].val) return NULL;
        }
      }
      c->len = c->cap = v->len;
      break;
    default:
      break;
  }
  return c;
}
