/* fuzz_repl.c — libFuzzer target for src/repl/spec.c: the body of POST
 * /_replicate and every _replicator document go through repl_spec_parse,
 * repl_id_make and repl_doc_validate.
 *
 * The input is JSON (inputs that do not parse are skipped). Invariants
 * beyond "no crash, no read past a value":
 *   - a spec that parses has a source and a target, each either a local
 *     name or a URL ending in '/' without credentials, and in-range
 *     options; a refusal always says why;
 *   - its id is 32 hex digits, the same when computed twice and the same
 *     for a deep copy (repl_spec_copy), with exactly the extensions the
 *     options ask for;
 *   - the shown endpoint never contains the password;
 *   - repl_doc_validate accepts for an admin whatever parses (unless it
 *     asks to cancel or has a bad user_ctx/_replication_state), and refuses
 *     with a reason otherwise. */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "repl/repl.h"

static void check_ep(const repl_ep *e) {
  assert(e->local || e->url);
  if (e->url) {
    size_t n = strlen(e->url);
    assert(n && e->url[n - 1] == '/');
    assert(!strncmp(e->url, "http://", 7) || !strncmp(e->url, "https://", 8));
    assert(e->path && e->path[0] == '/');
    dv_buf b;
    buf_init(&b);
    repl_ep_show(e, &b);
    buf_putc(&b, 0);
    if (e->user) assert(strstr((char *)b.p, ":*****@")); /* userinfo shown masked */
    buf_free(&b);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dv_arena a;
  arena_init(&a, 0);
  json_val *v;
  json_err je;
  if (json_parse(&a, data, size, NULL, &v, &je)) {
    arena_free(&a);
    return 0;
  }
  repl_spec s;
  const char *why = NULL;
  int rc = repl_spec_parse(&a, v, &s, &why);
  if (rc) {
    assert(rc == DV_EINVAL || rc == DV_ENOMEM);
    assert(rc == DV_ENOMEM || (why && *why));
  } else if (!(s.cancel && s.replication_id && !s.source.local && !s.source.url)) {
    check_ep(&s.source);
    check_ep(&s.target);
    assert(s.worker_processes >= 1 && s.worker_processes <= 64);
    assert(s.worker_batch_size >= 1 && s.worker_batch_size <= 10000);
    char b1[33], f1[REPL_ID_MAX], b2[33], f2[REPL_ID_MAX];
    assert(!repl_id_make(&s, "0123456789abcdef0123456789abcdef", "code", b1, f1));
    assert(strlen(b1) == 32 && strspn(b1, "0123456789abcdef") == 32);
    repl_spec c;
    assert(!repl_spec_copy(&a, &s, &c));
    assert(!repl_id_make(&c, "0123456789abcdef0123456789abcdef", "code", b2, f2));
    assert(!strcmp(b1, b2) && !strcmp(f1, f2));
    assert(!strncmp(f1, b1, 32));
    assert(!!strstr(f1, "+continuous") == !!s.continuous);
    assert(!!strstr(f1, "+create_target") == !!s.create_target);
  }
  why = NULL;
  rc = repl_doc_validate(&a, v, "user", 1, &why);
  assert(!rc || (rc == DV_EINVAL && why) || rc == DV_ENOMEM);
  why = NULL;
  rc = repl_doc_validate(&a, v, "user", 0, &why);
  assert(!rc || (rc == DV_EINVAL && why) || rc == DV_ENOMEM);
  arena_free(&a);
  return 0;
}
