/* fuzz_config.c — libFuzzer target for the ini configuration
 * (src/util/config.c).
 *
 * Each input is parsed as an ini text. A rejected input must carry a
 * "line N: …" message with N inside the input. For an accepted one the
 * target checks:
 *  - config_each walks (section, key) in strictly increasing byte order and
 *    config_get agrees with every value it reports;
 *  - rebuilding: every entry set with persist=1 into a fresh file, that
 *    file reloaded gives the same entries (up to 64 entries, to stay fast);
 *  - editing in place: the input written to a file loads to the same
 *    entries; a key added to an existing section with persist=1 reloads
 *    with everything else unchanged, and deleting it again with persist=1
 *    gives back the input byte for byte; replacing the last entry's value
 *    reloads to what memory says.
 * Any failed check aborts, which libFuzzer reports as a crash.
 *
 * Files go to a private directory under /dev/shm (or $TMPDIR, or /tmp),
 * emptied after each input and removed at exit. Build: make build/fuzz/fuzz_config. Seeds:
 * test/fuzz/seeds/fuzz_config.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/buf.h"
#include "util/config.h"

#define CHECK(c)                                                                   \
  do {                                                                             \
    if (!(c)) {                                                                    \
      fprintf(stderr, "fuzz_config: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                     \
    }                                                                              \
  } while (0)

#define NEW_KEY "fuzz~added~key"

static char dir[256], path_a[320], path_b[320], path_tmp[330];

static void cleanup(void) {
  unlink(path_a);
  unlink(path_b);
  unlink(path_tmp);
  rmdir(dir);
}

static void setup(void) {
  if (dir[0]) return;
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/fuzz_config.XXXXXX", base ? base : "/tmp");
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path_a, sizeof path_a, "%s/a.ini", dir);
  snprintf(path_b, sizeof path_b, "%s/b.ini", dir);
  snprintf(path_tmp, sizeof path_tmp, "%s/b.ini.tmp", dir);
  atexit(cleanup);
}

/* Entries as length-prefixed strings, so any byte may appear in them. */
struct walk {
  dv_buf out;          /* the entries */
  dv_buf prev;         /* "section\0key" of the last one */
  size_t n;            /* entries so far */
  dv_config *c;        /* if set: check config_get against each entry */
  char first[256];     /* the first section seen (for NEW_KEY), if short */
  int have_first;      /* first[] is set */
};

static int walk_cb(void *arg, const char *s, const char *k, const char *v) {
  struct walk *w = arg;
  size_t sl = strlen(s), kl = strlen(k);
  dv_buf cur = DV_BUF_INIT;
  buf_append(&cur, s, sl + 1);
  buf_append(&cur, k, kl);
  CHECK(!buf_error(&cur));
  if (w->n) { /* strictly increasing: section, then key */
    size_t m = cur.len < w->prev.len ? cur.len : w->prev.len;
    int d = memcmp(w->prev.p, cur.p, m);
    CHECK(d < 0 || (d == 0 && w->prev.len < cur.len));
  }
  buf_reset(&w->prev);
  buf_append(&w->prev, cur.p, cur.len);
  buf_free(&cur);
  buf_printf(&w->out, "%zu:%s%zu:%s%zu:%s", sl, s, kl, k, strlen(v), v);
  if (w->c) {
    char *g = config_get(w->c, s, k);
    CHECK(g && !strcmp(g, v));
    dv_free(g);
    (void)config_get_int(w->c, s, k, 0);
    (void)config_get_bool(w->c, s, k, 0);
  }
  if (!w->have_first && sl < sizeof w->first) {
    memcpy(w->first, s, sl + 1);
    w->have_first = 1;
  }
  w->n++;
  return 0;
}

static void walk(dv_config *c, struct walk *w, int check_get) {
  memset(w, 0, sizeof *w);
  w->c = check_get ? c : NULL;
  CHECK(config_each(c, NULL, walk_cb, w) == 0);
  CHECK(!buf_error(&w->out) && !buf_error(&w->prev));
}

static void walk_free(struct walk *w) {
  buf_free(&w->out);
  buf_free(&w->prev);
}

static int same(const struct walk *a, const struct walk *b) {
  return a->n == b->n && a->out.len == b->out.len && (!a->out.len || !memcmp(a->out.p, b->out.p, a->out.len));
}

static dv_config *load(const char *path) {
  dv_config *c = NULL;
  char err[512];
  int rc = config_load(path, &c, err, sizeof err);
  if (rc) fprintf(stderr, "fuzz_config: load: %s\n", err);
  CHECK(rc == 0);
  return c;
}

static int set_cb(void *arg, const char *s, const char *k, const char *v) {
  CHECK(config_set(arg, s, k, v, 1, NULL) == 0);
  return 0;
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  dv_buf b = DV_BUF_INIT;
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&b, chunk, n);
  fclose(f);
  CHECK(!buf_error(&b));
  buf_putc(&b, 0);
  return (char *)buf_detach(&b, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dv_config *c = NULL;
  char err[128] = "";
  int rc = config_parse((const char *)data, size, &c, err, sizeof err);
  if (rc) {
    CHECK(rc == DV_EINVAL);
    unsigned long line = 0;
    CHECK(sscanf(err, "line %lu: ", &line) == 1);
    size_t lines = 1;
    for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
    CHECK(line >= 1 && line <= lines);
    return 0;
  }
  setup();
  struct walk want, got;
  walk(c, &want, 1);

  /* rebuild the entries through persisted sets into a fresh file */
  if (want.n <= 64) {
    unlink(path_a);
    dv_config *a = load(path_a);
    CHECK(config_each(c, NULL, set_cb, a) == 0);
    config_free(a);
    if (want.n) {
      a = load(path_a);
      walk(a, &got, 0);
      CHECK(same(&want, &got));
      walk_free(&got);
      config_free(a);
    }
  }

  /* edit the input itself */
  FILE *f = fopen(path_b, "wb");
  CHECK(f && fwrite(data, 1, size, f) == size && fclose(f) == 0);
  dv_config *b = load(path_b);
  walk(b, &got, 0);
  CHECK(same(&want, &got));
  walk_free(&got);
  if (want.have_first) {
    char *had = config_get(b, want.first, NEW_KEY);
    if (!had) {
      CHECK(config_set(b, want.first, NEW_KEY, "v", 1, NULL) == 0);
      dv_config *r = load(path_b);
      struct walk mem;
      walk(b, &mem, 1);
      walk(r, &got, 0);
      CHECK(same(&mem, &got));
      CHECK(got.n == want.n + 1);
      walk_free(&mem);
      walk_free(&got);
      config_free(r);
      char *old = NULL;
      CHECK(config_delete(b, want.first, NEW_KEY, 1, &old) == 0);
      CHECK(old && !strcmp(old, "v"));
      dv_free(old);
      size_t len = 0;
      char *text = read_all(path_b, &len);
      CHECK(len - 1 == size && !memcmp(text, data, size));
      dv_free(text);
    }
    dv_free(had);
  }
  if (want.n) { /* replace the last entry (in its place) */
    char *s = NULL, *k = NULL;
    char *p = (char *)want.out.p, *end = p + want.out.len;
    while (p < end) { /* find the last entry's section and key */
      char *fields[3];
      for (int i = 0; i < 3; i++) {
        size_t l = strtoul(p, &p, 10);
        p++; /* ':' */
        fields[i] = dv_strndup(p, l);
        p += l;
      }
      dv_free(s);
      dv_free(k);
      dv_free(fields[2]);
      s = fields[0];
      k = fields[1];
    }
    CHECK(config_set(b, s, k, "replaced value", 1, NULL) == 0);
    dv_config *r = load(path_b);
    struct walk mem;
    walk(b, &mem, 1);
    walk(r, &got, 0);
    CHECK(same(&mem, &got));
    walk_free(&mem);
    walk_free(&got);
    config_free(r);
    dv_free(s);
    dv_free(k);
  }
  CHECK(access(path_tmp, F_OK) != 0);
  unlink(path_a); /* leave nothing behind should a later input crash */
  unlink(path_b);
  config_free(b);
  walk_free(&want);
  config_free(c);
  return 0;
}
