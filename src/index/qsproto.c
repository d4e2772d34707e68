/* qsproto.c — reading the query server protocol's answer lines
 * (qs_int.h): what couch_os_process does with a line before its caller
 * sees it. Kept apart from qs.c so a fuzz target reads hostile lines
 * without starting an engine. */
#include <ctype.h>
#include <string.h>

#include "index/qs_int.h"

int qs_is_log_line(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && isspace((unsigned char)s[i])) i++;
  if (i >= n || s[i] != '[') return 0;
  i++;
  while (i < n && isspace((unsigned char)s[i])) i++;
  return n - i >= 5 && !memcmp(s + i, "\"log\"", 5);
}

/* A JSON value as a reason string: strings as they are, others as JSON. */
static const char *reason_of(const json_val *v, dv_arena *a) {
  if (!v) return "";
  const char *s = NULL;
  if (v->type == JSON_STRING) s = arena_strndup(a, v->u.s, v->len);
  else {
    dv_buf b;
    buf_init(&b);
    if (!json_write(&b, v) && !buf_error(&b)) s = arena_strndup(a, (char *)b.p, b.len);
    buf_free(&b);
  }
  return s ? s : "";
}

int qs_answer(const char *s, size_t n, dv_arena *a, json_val **out, qs_err *e, int *dead) {
  json_val *v;
  int rc = json_parse(a, s, n, &(json_opts){.flags = JSON_COPY}, &v, NULL);
  if (rc == DV_ENOMEM) return rc;
  if (rc) {
    *dead = 1;
    e->error = "os_process_error";
    e->reason = "The query server answered something that is not JSON.";
    return DV_EQS_PROCESS;
  }
  if (v->type == JSON_ARRAY && v->len >= 1 && v->u.items[0]->type == JSON_STRING) {
    const json_val *h = v->u.items[0];
    int is_err = h->len == 5 && !memcmp(h->u.s, "error", 5);
    int is_fatal = h->len == 5 && !memcmp(h->u.s, "fatal", 5);
    if (is_err || is_fatal) {
      if (is_fatal) *dead = 1;
      const json_val *name = json_arr_get(v, 1);
      e->error = name && name->type == JSON_STRING && name->len ? reason_of(name, a) : "unknown_error";
      e->reason = reason_of(json_arr_get(v, 2), a);
      return DV_EQS;
    }
  }
  if (out) *out = v;
  return 0;
}
