/* test_config.c — the ini configuration (src/util/config.h): parsing and
 * every parse error with its line number, typed getters, overrides,
 * persisted edits round-tripping through a real file byte for byte, values
 * refused with nothing changed, config_each's order, many threads at once,
 * allocation failure, and the libFuzzer target briefly.
 *
 * The module imposes no size limits (lines, values, file), so there is no
 * limit to test at; config_big_value shows a 1 MiB value and a long key
 * going through the file unchanged.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/config.h"

/* ---- helpers ---- */

static void tmp_path(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", test_tmpdir(), name);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  ASSERT(f != NULL);
  ASSERT_EQ(fwrite(text, 1, strlen(text), f), strlen(text));
  ASSERT_OK(fclose(f));
}

/* The file's bytes (malloc'd, NUL-terminated), or NULL if it is missing. */
static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, len = 0, n;
  char *s = malloc(cap + 1);
  while ((n = fread(s + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap) s = realloc(s, (cap *= 2) + 1);
  }
  fclose(f);
  s[len] = 0;
  return s;
}

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

static int dump_cb(void *arg, const char *s, const char *k, const char *v) {
  buf_printf(arg, "[%s] %s=%s\n", s, k, v);
  return 0;
}

/* Every effective entry as "[s] k=v\n" lines (malloc'd). */
static char *dump(dv_config *c, const char *section) {
  dv_buf b = DV_BUF_INIT;
  ASSERT_OK(config_each(c, section, dump_cb, &b));
  ASSERT_OK(buf_error(&b));
  char *s = strdup(b.len ? (char *)b.p : "");
  buf_free(&b);
  return s;
}

static dv_config *parse_ok(const char *text) {
  dv_config *c = NULL;
  char err[128] = "";
  int rc = config_parse(text, strlen(text), &c, err, sizeof err);
  ASSERTF(rc == 0, "parse failed: %d %s", rc, err);
  return c;
}

static dv_config *load_ok(const char *path) {
  dv_config *c = NULL;
  char err[256] = "";
  int rc = config_load(path, &c, err, sizeof err);
  ASSERTF(rc == 0, "load failed: %d %s", rc, err);
  return c;
}

#define ASSERT_GET(c, s, k, want)                                               \
  do {                                                                          \
    char *v_ = config_get((c), (s), (k));                                       \
    const char *w_ = (want);                                                    \
    if (!w_) ASSERTF(v_ == NULL, "%s/%s: got \"%s\", want none", s, k, v_);     \
    else {                                                                      \
      ASSERTF(v_ != NULL, "%s/%s: got none, want \"%s\"", s, k, w_);            \
      ASSERT_STR_EQ(v_, w_);                                                    \
    }                                                                           \
    dv_free(v_);                                                                \
  } while (0)

#define ASSERT_FILE(path, want)                                                 \
  do {                                                                          \
    char *f_ = read_text(path);                                                 \
    ASSERTF(f_ != NULL, "%s is missing", path);                                 \
    ASSERT_STR_EQ(f_, (want));                                                  \
    free(f_);                                                                   \
  } while (0)

/* ---- parsing ---- */

TEST(config_parse_basic) {
  dv_config *c = parse_ok(
      "; divan test configuration\n"
      "# a hash comment\n"
      "\n"
      "[couchdb]\n"
      "uuid = abc\n"
      "max_document_size=8000000\n"
      "   \n"
      "[httpd]  ; trailing comment\n"
      "bind_address =   127.0.0.1   \n"
      "motd = first part\n"
      "  second  part\n"
      "\tthird\n"
      "empty =\n"
      "empty2 =   \n"
      "spaced key = a = b\n"
      "  indented = its own key\n"
      "later =\n"
      "  only continuation\n"
      "[couchdb]\n"
      "uuid = def\n"
      "[ünïcødé]\n"
      "clé = välue ✓\n"
      "[Case]\n"
      "Key = 1\n"
      "key = 2\n"
      "key = 3\n"
      "[]\n"
      "k]ey = [v]\n"
      "[crlf]\r\n"
      "a = b\r\n"
      "c = d e \r\n"
      "  f\r\n"
      "last = no newline");
  ASSERT(config_path(c) == NULL);
  ASSERT_GET(c, "couchdb", "uuid", "def"); /* a repeated section: the last line wins */
  ASSERT_GET(c, "couchdb", "max_document_size", "8000000");
  ASSERT_GET(c, "httpd", "bind_address", "127.0.0.1");
  ASSERT_GET(c, "httpd", "motd", "first part second  part third");
  ASSERT_GET(c, "httpd", "empty", "");
  ASSERT_GET(c, "httpd", "empty2", "");
  ASSERT_GET(c, "httpd", "spaced key", "a = b");
  ASSERT_GET(c, "httpd", "indented", "its own key");
  ASSERT_GET(c, "httpd", "later", "only continuation");
  ASSERT_GET(c, "ünïcødé", "clé", "välue ✓");
  ASSERT_GET(c, "Case", "Key", "1");
  ASSERT_GET(c, "Case", "key", "3");
  ASSERT_GET(c, "case", "key", NULL);
  ASSERT_GET(c, "Case", "KEY", NULL);
  ASSERT_GET(c, "", "k]ey", "[v]");
  ASSERT_GET(c, "crlf", "a", "b");
  ASSERT_GET(c, "crlf", "c", "d e f");
  ASSERT_GET(c, "crlf", "last", "no newline");
  ASSERT_GET(c, "httpd", "uuid", NULL);
  ASSERT_GET(c, "nope", "uuid", NULL);
  config_free(c);

  /* nothing but comments and blanks, and nothing at all */
  c = parse_ok("; only\n\n# comments\n  ; indented\n");
  char *d = dump(c, NULL);
  ASSERT_STR_EQ(d, "");
  free(d);
  config_free(c);
  ASSERT_OK(config_parse(NULL, 0, &c, NULL, 0));
  ASSERT_GET(c, "a", "b", NULL);
  config_free(c);
  config_free(NULL);

  /* continuation lines end at a blank line, a comment or a header */
  c = parse_ok("[a]\nk = 1\n  ; note\nj = 2\n  [b]\nm = 3\n");
  ASSERT_GET(c, "a", "k", "1");
  ASSERT_GET(c, "a", "j", "2");
  ASSERT_GET(c, "b", "m", "3");
  config_free(c);
}

TEST(config_parse_errors) {
#define T(text, msg) {text, sizeof(text) - 1, msg}
  static const struct {
    const char *text;  /* input, may hold NUL bytes */
    size_t len;        /* its length */
    const char *msg;   /* the error message expected */
  } t[] = {
      T("k = v\n", "line 1: key outside any section"),
      T("; comment\n\nk = v\n[a]\n", "line 3: key outside any section"),
      T("; c\n\n[a]\nk = v\nnovalue\n", "line 5: expected key = value"),
      T("[a]\nk = 1\n  cont\n  cont2\nbad\n", "line 5: expected key = value"),
      T("[a]\nk = 1\n\n  not continued\n", "line 4: expected key = value"),
      T("[a]\n  lonely\n", "line 2: expected key = value"),
      T("[a\n", "line 1: unterminated section header"),
      T("[a]\n[b\nk = v\n", "line 2: unterminated section header"),
      T("[a]x\n", "line 1: text after section header"),
      T("[a]]\n", "line 1: text after section header"),
      T("[a]\n = v\n", "line 2: empty key"),
      T("[a]\n\t=\n", "line 2: empty key"),
      T("[a]\nk = 1\r\n  more\nj = x\0y\n", "line 4: NUL byte"),
      T("\0", "line 1: NUL byte"),
      T("[a]\n\0", "line 2: NUL byte"),
  };
#undef T
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    dv_config *c = (dv_config *)0x1;
    char err[128] = "";
    int rc = config_parse(t[i].text, t[i].len, &c, err, sizeof err);
    ASSERTF(rc == DV_EINVAL, "case %zu: rc %d", i, rc);
    ASSERTF(!strcmp(err, t[i].msg), "case %zu: \"%s\", want \"%s\"", i, err, t[i].msg);
    ASSERT(c == (dv_config *)0x1); /* *out untouched */
    ASSERT_EQ(config_parse(t[i].text, t[i].len, &c, NULL, 0), DV_EINVAL);
  }
  /* a short error buffer is cut and still terminated */
  char small[8];
  memset(small, 'x', sizeof small);
  dv_config *c;
  ASSERT_EQ(config_parse("[a", 2, &c, small, sizeof small), DV_EINVAL);
  ASSERT_STR_EQ(small, "line 1:");
  /* config_load names the file */
  char path[512], err[600];
  tmp_path(path, sizeof path, "bad.ini");
  write_text(path, "[a]\nk = v\n[oops\n");
  ASSERT_EQ(config_load(path, &c, err, sizeof err), DV_EINVAL);
  char want[600];
  snprintf(want, sizeof want, "%s: line 3: unterminated section header", path);
  ASSERT_STR_EQ(err, want);
}

/* ---- getters ---- */

TEST(config_get_typed) {
  dv_config *c = parse_ok(
      "[n]\n"
      "port = 5984\n"
      "neg = -12\n"
      "plus = +7\n"
      "max = 9223372036854775807\n"
      "min = -9223372036854775808\n"
      "over = 9223372036854775808\n"
      "hex = 0x10\n"
      "float = 1.5\n"
      "trail = 12abc\n"
      "inner = 1 2\n"
      "empty =\n"
      "sign = -\n"
      "[b]\n"
      "t1 = true\nt2 = TRUE\nt3 = True\n"
      "f1 = false\nf2 = FaLsE\n"
      "one = 1\nyes = yes\nempty =\n");
  ASSERT_EQ(config_get_int(c, "n", "port", 1), 5984);
  ASSERT_EQ(config_get_int(c, "n", "neg", 1), -12);
  ASSERT_EQ(config_get_int(c, "n", "plus", 1), 7);
  ASSERT(config_get_int(c, "n", "max", 1) == 9223372036854775807LL);
  ASSERT(config_get_int(c, "n", "min", 1) == -9223372036854775807LL - 1);
  const char *bad[] = {"over", "hex", "float", "trail", "inner", "empty", "sign", "absent"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ASSERTF(config_get_int(c, "n", bad[i], 42) == 42, "%s", bad[i]);
  ASSERT_EQ(config_get_int(c, "nosection", "port", -5), -5);
  for (int d = 0; d <= 1; d++) {
    ASSERT_EQ(config_get_bool(c, "b", "t1", d), 1);
    ASSERT_EQ(config_get_bool(c, "b", "t2", d), 1);
    ASSERT_EQ(config_get_bool(c, "b", "t3", d), 1);
    ASSERT_EQ(config_get_bool(c, "b", "f1", d), 0);
    ASSERT_EQ(config_get_bool(c, "b", "f2", d), 0);
    ASSERT_EQ(config_get_bool(c, "b", "one", d), d);
    ASSERT_EQ(config_get_bool(c, "b", "yes", d), d);
    ASSERT_EQ(config_get_bool(c, "b", "empty", d), d);
    ASSERT_EQ(config_get_bool(c, "b", "absent", d), d);
  }
  /* overrides feed the typed getters too */
  ASSERT_OK(config_set(c, "n", "port", "6000", 0, NULL));
  ASSERT_EQ(config_get_int(c, "n", "port", 1), 6000);
  ASSERT_OK(config_set(c, "b", "yes", "false", 0, NULL));
  ASSERT_EQ(config_get_bool(c, "b", "yes", 1), 0);
  /* NULL arguments: the default, no crash */
  ASSERT(config_get(c, NULL, "port") == NULL);
  ASSERT(config_get(NULL, "n", "port") == NULL);
  ASSERT_EQ(config_get_int(c, "n", NULL, 3), 3);
  ASSERT_EQ(config_get_bool(NULL, "b", "t1", 0), 0);
  config_free(c);
}

/* ---- overrides ---- */

TEST(config_overrides) {
  char path[512];
  tmp_path(path, sizeof path, "local.ini");
  const char *base = "[a]\nk = file\n";
  write_text(path, base);
  dv_config *c = load_ok(path);
  char *old = (char *)0x1;

  ASSERT_OK(config_set(c, "a", "k", "ovr", 0, &old));
  ASSERT_STR_EQ(old, "file");
  dv_free(old);
  ASSERT_GET(c, "a", "k", "ovr");
  ASSERT_FILE(path, base); /* never written */
  {
    dv_config *r = load_ok(path);
    ASSERT_GET(r, "a", "k", "file");
    config_free(r);
  }
  /* a persisted set changes the file; the override stays in force */
  ASSERT_OK(config_set(c, "a", "k", "file2", 1, &old));
  ASSERT_STR_EQ(old, "ovr");
  dv_free(old);
  ASSERT_GET(c, "a", "k", "ovr");
  ASSERT_FILE(path, "[a]\nk = file2\n");
  /* a persisted set of another key keeps the override out of the file */
  ASSERT_OK(config_set(c, "a", "j", "x", 1, NULL));
  ASSERT_FILE(path, "[a]\nk = file2\nj = x\n");
  /* persist=0 delete hides the file value */
  ASSERT_OK(config_delete(c, "a", "k", 0, &old));
  ASSERT_STR_EQ(old, "ovr");
  dv_free(old);
  ASSERT_GET(c, "a", "k", NULL);
  ASSERT_EQ(config_get_int(c, "a", "k", 9), 9);
  char *d = dump(c, NULL);
  ASSERT_STR_EQ(d, "[a] j=x\n");
  free(d);
  old = (char *)0x1;
  ASSERT_EQ(config_delete(c, "a", "k", 0, &old), DV_ENOT_FOUND);
  ASSERT(old == (char *)0x1); /* untouched on error */
  ASSERT_FILE(path, "[a]\nk = file2\nj = x\n");
  /* a new override replaces the deletion */
  ASSERT_OK(config_set(c, "a", "k", "back", 0, &old));
  ASSERT(old == NULL);
  ASSERT_GET(c, "a", "k", "back");
  /* a persisted delete removes the file line and the override */
  ASSERT_OK(config_delete(c, "a", "k", 1, &old));
  ASSERT_STR_EQ(old, "back");
  dv_free(old);
  ASSERT_GET(c, "a", "k", NULL);
  ASSERT_FILE(path, "[a]\nj = x\n");
  ASSERT_EQ(config_delete(c, "a", "k", 1, NULL), DV_ENOT_FOUND);
  ASSERT_EQ(config_delete(c, "a", "k", 0, NULL), DV_ENOT_FOUND);
  /* an override of a key the file lacks: deleting it leaves nothing */
  ASSERT_OK(config_set(c, "flags", "port", "1", 0, NULL));
  ASSERT_GET(c, "flags", "port", "1");
  ASSERT_OK(config_delete(c, "flags", "port", 0, NULL));
  ASSERT_GET(c, "flags", "port", NULL);
  ASSERT_EQ(config_delete(c, "flags", "port", 0, NULL), DV_ENOT_FOUND);
  /* ... and a persisted delete of an override-only key removes it */
  ASSERT_OK(config_set(c, "flags", "port", "2", 0, NULL));
  ASSERT_OK(config_delete(c, "flags", "port", 1, &old));
  ASSERT_STR_EQ(old, "2");
  dv_free(old);
  ASSERT_GET(c, "flags", "port", NULL);
  /* persist=0 delete of a file value with no override */
  ASSERT_OK(config_delete(c, "a", "j", 0, NULL));
  ASSERT_GET(c, "a", "j", NULL);
  ASSERT_FILE(path, "[a]\nj = x\n");
  config_free(c);

  /* a config without a path: persist=1 changes memory only */
  c = parse_ok("[a]\nk = 1\n");
  ASSERT_OK(config_set(c, "a", "k", "2", 1, NULL));
  ASSERT_OK(config_set(c, "b", "n", "3", 1, NULL));
  ASSERT_OK(config_set(c, "a", "o", "4", 0, NULL));
  d = dump(c, NULL);
  ASSERT_STR_EQ(d, "[a] k=2\n[a] o=4\n[b] n=3\n");
  free(d);
  ASSERT_OK(config_delete(c, "a", "k", 1, NULL));
  ASSERT_GET(c, "a", "k", NULL);
  config_free(c);
}

/* ---- persisted edits ---- */

TEST(config_persist_roundtrip) {
  char path[512], tmp[600];
  tmp_path(path, sizeof path, "local.ini");
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  write_text(path,
             "; local.ini — edited by hand\n"
             "[couchdb]\n"
             "uuid = abc   \n"
             "; the size\n"
             "max_document_size=8000000\n"
             "\n"
             "[httpd]\n"
             "port = 5984\n"
             "motd = one\n"
             "  two\n"
             "\n"
             "# end\n");
  ASSERT_OK(chmod(path, 0640));
  dv_config *c = load_ok(path);
  ASSERT_STR_EQ(config_path(c), path);
  char *old = NULL;

  ASSERT_OK(config_set(c, "couchdb", "uuid", "xyz", 1, &old)); /* in place */
  ASSERT_STR_EQ(old, "abc");
  dv_free(old);
  ASSERT(!file_exists(tmp));
  ASSERT_FILE(path,
              "; local.ini — edited by hand\n"
              "[couchdb]\n"
              "uuid = xyz\n"
              "; the size\n"
              "max_document_size=8000000\n"
              "\n"
              "[httpd]\n"
              "port = 5984\n"
              "motd = one\n"
              "  two\n"
              "\n"
              "# end\n");
  ASSERT_OK(config_set(c, "couchdb", "new", "n", 1, &old)); /* after the section's last key */
  ASSERT(old == NULL);
  ASSERT_OK(config_set(c, "httpd", "motd", "m", 1, NULL));   /* with its continuation */
  ASSERT_OK(config_set(c, "fresh", "k", "v", 1, NULL));      /* a new section */
  ASSERT_OK(config_set(c, "fresh", "empty", "", 1, NULL));
  ASSERT_OK(config_delete(c, "httpd", "port", 1, &old));
  ASSERT_STR_EQ(old, "5984");
  dv_free(old);
  const char *want =
      "; local.ini — edited by hand\n"
      "[couchdb]\n"
      "uuid = xyz\n"
      "; the size\n"
      "max_document_size=8000000\n"
      "new = n\n"
      "\n"
      "[httpd]\n"
      "motd = m\n"
      "\n"
      "# end\n"
      "\n"
      "[fresh]\n"
      "k = v\n"
      "empty =\n";
  ASSERT_FILE(path, want);
  ASSERT(!file_exists(tmp));
  struct stat st;
  ASSERT_OK(stat(path, &st));
  ASSERT_EQ(st.st_mode & 0777, 0640); /* the mode survives the rename */

  /* reloading gives what memory had */
  char *d1 = dump(c, NULL);
  ASSERT_STR_EQ(d1,
                "[couchdb] max_document_size=8000000\n"
                "[couchdb] new=n\n"
                "[couchdb] uuid=xyz\n"
                "[fresh] empty=\n"
                "[fresh] k=v\n"
                "[httpd] motd=m\n");
  dv_config *r = load_ok(path);
  char *d2 = dump(r, NULL);
  ASSERT_STR_EQ(d2, d1);
  free(d1);
  free(d2);
  config_free(r);

  /* setting a value to what it is rewrites only its own line */
  ASSERT_OK(config_set(c, "couchdb", "max_document_size", "8000000", 1, NULL));
  want = "; local.ini — edited by hand\n"
         "[couchdb]\n"
         "uuid = xyz\n"
         "; the size\n"
         "max_document_size = 8000000\n"
         "new = n\n"
         "\n"
         "[httpd]\n"
         "motd = m\n"
         "\n"
         "# end\n"
         "\n"
         "[fresh]\n"
         "k = v\n"
         "empty =\n";
  ASSERT_FILE(path, want);
  /* a section emptied keeps its header; a key set again goes under it */
  ASSERT_OK(config_delete(c, "httpd", "motd", 1, NULL));
  ASSERT_OK(config_set(c, "httpd", "port", "1", 1, NULL));
  char *text = read_text(path);
  ASSERT(strstr(text, "[httpd]\nport = 1\n\n# end\n") != NULL);
  free(text);
  config_free(c);
}

TEST(config_persist_edges) {
  char path[512];
  tmp_path(path, sizeof path, "edge.ini");

  /* no newline at the end: an insertion adds one, deleting it again gives
   * the original bytes back */
  write_text(path, "[a]\nk = 1");
  dv_config *c = load_ok(path);
  ASSERT_OK(config_set(c, "a", "j", "2", 1, NULL));
  ASSERT_FILE(path, "[a]\nk = 1\nj = 2\n");
  ASSERT_OK(config_delete(c, "a", "j", 1, NULL));
  ASSERT_FILE(path, "[a]\nk = 1");
  ASSERT_OK(config_set(c, "b", "x", "y", 1, NULL));
  ASSERT_FILE(path, "[a]\nk = 1\n\n[b]\nx = y\n");
  config_free(c);

  /* a repeated key: set replaces the last line, delete drops all of them;
   * a repeated section takes new keys in its last block */
  write_text(path, "[a]\nk = 1\nk = 2\n[b]\nk = 3\n[a]\nk = 4\n; tail\n");
  c = load_ok(path);
  ASSERT_GET(c, "a", "k", "4");
  ASSERT_OK(config_set(c, "a", "k", "5", 1, NULL));
  ASSERT_FILE(path, "[a]\nk = 1\nk = 2\n[b]\nk = 3\n[a]\nk = 5\n; tail\n");
  ASSERT_OK(config_delete(c, "a", "k", 1, NULL));
  ASSERT_FILE(path, "[a]\n[b]\nk = 3\n[a]\n; tail\n");
  ASSERT_GET(c, "a", "k", NULL);
  ASSERT_GET(c, "b", "k", "3");
  ASSERT_OK(config_set(c, "a", "n", "6", 1, NULL));
  ASSERT_FILE(path, "[a]\n[b]\nk = 3\n[a]\nn = 6\n; tail\n");
  config_free(c);

  /* CRLF lines stay CRLF; the new line is LF */
  write_text(path, "[a]\r\nk = 1\r\nj = 2\r\n");
  c = load_ok(path);
  ASSERT_OK(config_set(c, "a", "k", "3", 1, NULL));
  ASSERT_FILE(path, "[a]\r\nk = 3\nj = 2\r\n");
  config_free(c);

  /* a new section after a blank line: no second blank line */
  write_text(path, "[a]\nk = 1\n\n");
  c = load_ok(path);
  ASSERT_OK(config_set(c, "z", "k", "1", 1, NULL));
  ASSERT_FILE(path, "[a]\nk = 1\n\n[z]\nk = 1\n");
  config_free(c);

  /* values the format allows at its edges survive the file */
  write_text(path, "");
  c = load_ok(path);
  static const char *odd[][3] = {
      {" s ", "k", "v"},          {"[x", "k]", "[v]"},       {"", "key", "value"},
      {"s", "k\tj", "a\rb"},      {"s", "k", "a = b ; c"},   {"s", "é", "✓"},
      {"s", "e", ""},             {"s;", "k#", "#v"},        {"a=b", "k", "="},
  };
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
    ASSERT_OK(config_set(c, odd[i][0], odd[i][1], odd[i][2], 1, NULL));
  dv_config *r = load_ok(path);
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) ASSERT_GET(r, odd[i][0], odd[i][1], odd[i][2]);
  char *d1 = dump(c, NULL), *d2 = dump(r, NULL);
  ASSERT_STR_EQ(d1, d2);
  free(d1);
  free(d2);
  config_free(r);
  config_free(c);
}

TEST(config_missing_file) {
  char path[512], tmp[600];
  tmp_path(path, sizeof path, "new.ini");
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  dv_config *c = load_ok(path);
  ASSERT_STR_EQ(config_path(c), path);
  char *d = dump(c, NULL);
  ASSERT_STR_EQ(d, "");
  free(d);
  ASSERT(!file_exists(path));
  ASSERT_OK(config_set(c, "s", "k", "v", 0, NULL)); /* an override creates nothing */
  ASSERT(!file_exists(path));
  ASSERT_OK(config_set(c, "s", "p", "1", 1, NULL));
  ASSERT_FILE(path, "[s]\np = 1\n");
  ASSERT(!file_exists(tmp));
  struct stat st;
  ASSERT_OK(stat(path, &st));
  ASSERT_EQ(st.st_mode & 0777, 0600); /* it may hold secrets: owner only */
  config_free(c);

  /* in memory only */
  ASSERT_OK(config_load(NULL, &c, NULL, 0));
  ASSERT(config_path(c) == NULL);
  ASSERT_OK(config_set(c, "s", "k", "v", 1, NULL));
  ASSERT_GET(c, "s", "k", "v");
  config_free(c);
}

TEST(config_io_errors) {
  char path[512], err[600];
  dv_config *c;
  /* a directory is not a file */
  ASSERT_EQ(config_load(test_tmpdir(), &c, err, sizeof err), DV_EIO);
  ASSERT(strstr(err, test_tmpdir()) != NULL);
  ASSERT(strstr(err, strerror(EISDIR)) != NULL);
  /* a missing directory: empty config; a persisted set fails with errno */
  tmp_path(path, sizeof path, "nodir/local.ini");
  c = load_ok(path);
  char *old = (char *)0x1;
  errno = 0;
  ASSERT_EQ(config_set(c, "s", "k", "v", 1, &old), DV_EIO);
  ASSERT_EQ(errno, ENOENT);
  ASSERT(old == (char *)0x1);
  ASSERT_GET(c, "s", "k", NULL); /* nothing changed */
  ASSERT_OK(config_set(c, "s", "k", "v", 0, NULL));
  errno = 0;
  ASSERT_EQ(config_delete(c, "s", "k", 0, NULL), 0);
  config_free(c);
  /* a file that goes away under a loaded config: the write fails, memory
   * and the (new) directory's contents stay as they were */
  char dir[256];
  tmp_path(dir, sizeof dir, "gone");
  ASSERT_OK(mkdir(dir, 0755));
  snprintf(path, sizeof path, "%s/local.ini", dir);
  write_text(path, "[a]\nk = 1\n");
  c = load_ok(path);
  ASSERT_OK(unlink(path));
  ASSERT_OK(rmdir(dir));
  ASSERT_EQ(config_set(c, "a", "k", "2", 1, NULL), DV_EIO);
  ASSERT_EQ(config_delete(c, "a", "k", 1, NULL), DV_EIO);
  ASSERT_GET(c, "a", "k", "1");
  config_free(c);
}

TEST(config_refused) {
  char path[512];
  tmp_path(path, sizeof path, "local.ini");
  const char *base = "[a]\nk = 1\n";
  write_text(path, base);
  dv_config *c = load_ok(path);
  ASSERT_OK(config_set(c, "o", "x", "y", 0, NULL));
  char *before = dump(c, NULL);
  static const char *bad[][3] = {
      {"a", "", "v"},      {"a", "k=j", "v"},   {"a", "[k", "v"},   {"a", ";k", "v"},
      {"a", "#k", "v"},    {"a", " k", "v"},    {"a", "k ", "v"},   {"a", "k\t", "v"},
      {"a", "\rk", "v"},   {"a", "k\nj", "v"},  {"a]", "k", "v"},   {"a\nb", "k", "v"},
      {"]", "k", "v"},     {"a", "k", "1\n2"},  {"a", "k", " v"},   {"a", "k", "v "},
      {"a", "k", "\tv"},   {"a", "k", "v\r"},   {"a", "k", "\n"},   {"a", "k", " "},
      {NULL, "k", "v"},    {"a", NULL, "v"},    {"a", "k", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    for (int persist = 0; persist <= 1; persist++) {
      char *old = (char *)0x1;
      int rc = config_set(c, bad[i][0], bad[i][1], bad[i][2], persist, &old);
      ASSERTF(rc == DV_EINVAL, "case %zu persist %d: rc %d", i, persist, rc);
      ASSERT(old == (char *)0x1);
    }
  }
  ASSERT_EQ(config_set(NULL, "a", "k", "v", 1, NULL), DV_EINVAL);
  ASSERT_EQ(config_delete(c, NULL, "k", 1, NULL), DV_EINVAL);
  ASSERT_EQ(config_delete(c, "a", NULL, 0, NULL), DV_EINVAL);
  ASSERT_EQ(config_delete(c, "a", "nope", 1, NULL), DV_ENOT_FOUND);
  ASSERT_EQ(config_each(c, NULL, NULL, NULL), DV_EINVAL);
  char *after = dump(c, NULL);
  ASSERT_STR_EQ(after, before);
  ASSERT_FILE(path, base);
  free(before);
  free(after);
  config_free(c);
}

/* No size limits: a 1 MiB value and a 10 000-byte key pass through the
 * file unchanged. */
TEST(config_big_value) {
  char path[512];
  tmp_path(path, sizeof path, "big.ini");
  size_t n = 1 << 20;
  char *v = malloc(n + 1), *k = malloc(10001);
  for (size_t i = 0; i < n; i++) v[i] = (char)('a' + i % 26);
  v[n] = 0;
  memset(k, 'k', 10000);
  k[10000] = 0;
  dv_config *c = load_ok(path);
  ASSERT_OK(config_set(c, "big", k, v, 1, NULL));
  config_free(c);
  c = load_ok(path);
  ASSERT_GET(c, "big", k, v);
  config_free(c);
  free(v);
  free(k);
}

/* ---- config_each ---- */

struct collect {
  dv_buf out;        /* "[s] k=v\n" per call */
  int stop_at;       /* return 7 at this call (1-based), 0 never */
  int calls;         /* calls so far */
  dv_config *c;      /* if set, the callback reads and writes c */
};

static int collect_cb(void *arg, const char *s, const char *k, const char *v) {
  struct collect *x = arg;
  x->calls++;
  buf_printf(&x->out, "[%s] %s=%s\n", s, k, v);
  if (x->c) { /* re-entry: the lock is not held during the callback */
    char *g = config_get(x->c, s, k);
    ASSERT(g != NULL);
    dv_free(g);
    ASSERT_OK(config_set(x->c, "zz", k, "seen", 0, NULL));
  }
  return x->calls == x->stop_at ? 7 : 0;
}

TEST(config_each_order) {
  dv_config *c = parse_ok(
      "[b]\nz = 1\na = 2\né = 3\nB = 4\n"
      "[a]\nm = 5\n"
      "[A]\nx = 6\n"
      "[b]\na = 7\n");
  ASSERT_OK(config_set(c, "a", "l", "8", 0, NULL));
  ASSERT_OK(config_set(c, "b", "z", "9", 0, NULL));
  ASSERT_OK(config_set(c, "c", "c", "10", 1, NULL));
  ASSERT_OK(config_delete(c, "b", "B", 0, NULL));
  struct collect x = {DV_BUF_INIT, 0, 0, NULL};
  ASSERT_OK(config_each(c, NULL, collect_cb, &x));
  ASSERT_STR_EQ((char *)x.out.p,
                "[A] x=6\n"
                "[a] l=8\n"
                "[a] m=5\n"
                "[b] a=7\n"
                "[b] z=9\n"
                "[b] é=3\n"
                "[c] c=10\n");
  buf_reset(&x.out);
  x.calls = 0;
  ASSERT_OK(config_each(c, "b", collect_cb, &x));
  ASSERT_STR_EQ((char *)x.out.p, "[b] a=7\n[b] z=9\n[b] é=3\n");
  buf_reset(&x.out);
  x.calls = 0;
  ASSERT_OK(config_each(c, "none", collect_cb, &x));
  ASSERT_EQ(x.calls, 0);
  /* a nonzero return stops the walk and is returned */
  x.calls = 0;
  x.stop_at = 2;
  ASSERT_EQ(config_each(c, NULL, collect_cb, &x), 7);
  ASSERT_EQ(x.calls, 2);
  /* the callback may use the config: it walks a snapshot */
  x.calls = 0;
  x.stop_at = 0;
  x.c = c;
  ASSERT_OK(config_each(c, "b", collect_cb, &x));
  ASSERT_EQ(x.calls, 3);
  ASSERT_GET(c, "zz", "a", "seen");
  buf_free(&x.out);
  config_free(c);
}

/* ---- threads ---- */

#define NTHREADS 4

struct worker {
  dv_config *c;      /* shared */
  int id;            /* 0..NTHREADS-1 */
  double until;      /* monotonic deadline */
  long ops;          /* operations done */
  char last_p[32];   /* last persisted value of p<id> */
};

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct order_check {
  char prev[128];    /* "section\x01key" of the last call */
  int n;             /* calls */
};

static int order_cb(void *arg, const char *s, const char *k, const char *v) {
  struct order_check *o = arg;
  char cur[128];
  snprintf(cur, sizeof cur, "%s\x01%s", s, k);
  ASSERTF(o->n == 0 || strcmp(o->prev, cur) < 0, "out of order: %s after %s", cur, o->prev);
  ASSERTF(v[0] == 'v' && strchr(v, '-') != NULL, "corrupt value %s", v);
  strcpy(o->prev, cur);
  o->n++;
  return 0;
}

#define MIN_OPS 10

static void *worker_main(void *arg) {
  struct worker *w = arg;
  char pk[16], ok[16], dk[16], val[32];
  snprintf(pk, sizeof pk, "p%d", w->id);
  snprintf(ok, sizeof ok, "o%d", w->id);
  snprintf(dk, sizeof dk, "d%d", w->id);
  /* until the deadline, and at least MIN_OPS rounds each however loaded the
   * machine (a persisted set fsyncs: a slow disk must not fail the test) */
  for (long i = 0; mono() < w->until || i < MIN_OPS; i++, w->ops++) {
    snprintf(val, sizeof val, "v%d-%ld", w->id, i);
    switch (i % 5) {
    case 0:
      ASSERT_OK(config_set(w->c, "shared", pk, val, 1, NULL));
      strcpy(w->last_p, val);
      ASSERT_GET(w->c, "shared", pk, val);
      break;
    case 1:
      ASSERT_OK(config_set(w->c, "shared", ok, val, 0, NULL));
      ASSERT_GET(w->c, "shared", ok, val);
      break;
    case 2: {
      ASSERT_OK(config_set(w->c, "mine", dk, val, 0, NULL));
      char *old = NULL;
      ASSERT_OK(config_delete(w->c, "mine", dk, 0, &old));
      ASSERT_STR_EQ(old, val);
      dv_free(old);
      ASSERT_GET(w->c, "mine", dk, NULL);
      break;
    }
    default: {
      struct order_check o = {"", 0};
      ASSERT_OK(config_each(w->c, NULL, order_cb, &o));
      ASSERT(o.n >= 1);
      if (w->last_p[0]) ASSERT_GET(w->c, "shared", pk, w->last_p);
      break;
    }
    }
  }
  return NULL;
}

TEST(config_threads) {
  char path[512];
  tmp_path(path, sizeof path, "threads.ini");
  write_text(path, "; shared by threads\n[shared]\nbase = v0-0\n");
  dv_config *c = load_ok(path);
  pthread_t th[NTHREADS];
  struct worker w[NTHREADS];
  double until = mono() + 0.5;
  for (int i = 0; i < NTHREADS; i++) {
    w[i] = (struct worker){c, i, until, 0, ""};
    ASSERT_OK(pthread_create(&th[i], NULL, worker_main, &w[i]));
  }
  long ops = 0;
  for (int i = 0; i < NTHREADS; i++) {
    ASSERT_OK(pthread_join(th[i], NULL));
    ops += w[i].ops;
  }
  printf("%ld operations in 0.5 s (at least %d per thread)\n", ops, MIN_OPS);
  /* the file holds every thread's last persisted value and no override */
  dv_config *r = load_ok(path);
  for (int i = 0; i < NTHREADS; i++) {
    char k[16];
    snprintf(k, sizeof k, "p%d", i);
    ASSERT(w[i].ops >= MIN_OPS);
    ASSERT_GET(r, "shared", k, w[i].last_p);
    snprintf(k, sizeof k, "o%d", i);
    ASSERT_GET(r, "shared", k, NULL);
  }
  ASSERT_GET(r, "shared", "base", "v0-0");
  char *text = read_text(path);
  ASSERT(strncmp(text, "; shared by threads\n[shared]\nbase = v0-0\n", 41) == 0);
  free(text);
  config_free(r);
  config_free(c);
}

/* ---- allocation failure ---- */

/* One step of the scenario below; every step either succeeds or fails
 * with DV_ENOMEM, changing nothing. */
static int step(dv_config *c, int op, char **old) {
  switch (op) {
  case 0: return config_set(c, "couchdb", "uuid", "new", 1, old);    /* in place */
  case 1: return config_set(c, "couchdb", "added", "1", 1, old);     /* insert */
  case 2: return config_set(c, "brand", "new", "1", 1, old);         /* new section */
  case 3: return config_set(c, "httpd", "port", "1", 0, old);        /* new override */
  case 4: return config_set(c, "httpd", "port", "2", 0, old);        /* replace it */
  case 5: return config_delete(c, "httpd", "port", 0, old);          /* deletion override */
  case 6: return config_delete(c, "couchdb", "uuid", 1, old);        /* file lines */
  case 7: return config_delete(c, "httpd", "port", 1, old);          /* file and override */
  case 8: {
    struct collect x = {DV_BUF_INIT, 0, 0, NULL};
    int rc = config_each(c, NULL, collect_cb, &x);
    buf_free(&x.out);
    return rc;
  }
  default: {
    char *v = config_get(c, "couchdb", "max_document_size");
    int rc = v ? 0 : DV_ENOMEM;
    dv_free(v);
    return rc;
  }
  }
}
#define NSTEPS 10

TEST(config_alloc_fail) {
  char path[512], err[600];
  tmp_path(path, sizeof path, "local.ini");
  const char *base =
      "; hand-written\n[couchdb]\nuuid = abc\nmax_document_size = 100\n  continued\n\n"
      "[httpd]\nport = 5984\n";
  int failed[NSTEPS] = {0}, passed[NSTEPS] = {0}, load_failed = 0, parse_failed = 0;
  for (long k = 0; k < 120; k++) {
    write_text(path, base);
    dv_config *c = NULL;
    dv_alloc_fail_after(k);
    int rc = config_load(path, &c, err, sizeof err);
    dv_alloc_fail_after(-1);
    if (rc) {
      ASSERT_EQ(rc, DV_ENOMEM);
      ASSERT_STR_EQ(err, "out of memory");
      load_failed++;
      c = load_ok(path);
    }
    dv_alloc_fail_after(k);
    dv_config *p = NULL;
    rc = config_parse(base, strlen(base), &p, err, sizeof err);
    dv_alloc_fail_after(-1);
    if (rc) {
      ASSERT_EQ(rc, DV_ENOMEM);
      parse_failed++;
    }
    config_free(p);
    for (int op = 0; op < NSTEPS; op++) {
      char *before = dump(c, NULL), *file = read_text(path), *old = (char *)0x1;
      dv_alloc_fail_after(k);
      rc = step(c, op, &old);
      dv_alloc_fail_after(-1);
      if (rc == DV_ENOMEM) {
        failed[op]++;
        ASSERT(old == (char *)0x1);
        char *after = dump(c, NULL), *file2 = read_text(path);
        ASSERTF(!strcmp(before, after), "step %d k %ld changed memory", op, k);
        ASSERTF(!strcmp(file, file2), "step %d k %ld changed the file", op, k);
        free(after);
        free(file2);
      } else {
        ASSERTF(rc == 0, "step %d k %ld: %d", op, k, rc);
        passed[op]++;
        if (op < 8) dv_free(old);
      }
      free(before);
      free(file);
    }
    config_free(c);
  }
  ASSERT(load_failed > 3 && parse_failed > 3);
  for (int op = 0; op < NSTEPS; op++)
    ASSERTF(failed[op] > 0 && passed[op] > 0, "step %d: %d failed, %d passed", op, failed[op], passed[op]);
  LEAK_CHECK();
}

/* The parser under libFuzzer for 20 s (make fuzz runs it longer). */
TEST(config_fuzz_smoke) { test_fuzz_smoke("fuzz_config"); }

/* ---- the shared layer ---- */

typedef struct hook_log {
  char last[256];     /* "section/key=value" or "section/key deleted" */
  int calls;
  int fail;           /* the next write fails with this */
} hook_log;

static int only_s(const char *section, const char *key) {
  (void)key;
  return !strcmp(section, "s");
}

static int hook_write(void *arg, const char *section, const char *key, const char *value) {
  hook_log *h = arg;
  h->calls++;
  if (h->fail) return h->fail;
  if (value) snprintf(h->last, sizeof h->last, "%s/%s=%s", section, key, value);
  else snprintf(h->last, sizeof h->last, "%s/%s deleted", section, key);
  return 0;
}

/* override > shared > file; a persisted write of a shared key goes to the
 * hook first, then to the shared layer and the file; a failed hook changes
 * nothing; config_each_file sees the file alone. */
TEST(config_shared_layer) {
  char path[512];
  tmp_path(path, sizeof path, "local.ini");
  write_text(path, "[s]\na = file\nb = file\n[l]\nk = file\n");
  dv_config *c = load_ok(path);
  int changed = -1;
  config_row rows[] = {{"s", "a", "shared"}, {"s", "b", NULL}, {"s", "new", "n"}};
  ASSERT_OK(config_shared_replace(c, rows, 3, &changed));
  ASSERT_EQ(changed, 1);
  ASSERT_GET(c, "s", "a", "shared");
  ASSERT_GET(c, "s", "b", NULL); /* a shared deletion hides the file value */
  ASSERT_GET(c, "s", "new", "n");
  ASSERT_OK(config_shared_replace(c, rows, 3, &changed));
  ASSERT_EQ(changed, 0);
  char *d = dump(c, NULL);
  ASSERT_STR_EQ(d, "[l] k=file\n[s] a=shared\n[s] new=n\n");
  free(d);
  dv_buf b = DV_BUF_INIT;
  ASSERT_OK(config_each_file(c, dump_cb, &b));
  ASSERT_STR_EQ((char *)b.p, "[l] k=file\n[s] a=file\n[s] b=file\n");
  buf_free(&b);
  ASSERT_OK(config_set(c, "s", "new", "ovr", 0, NULL));
  ASSERT_GET(c, "s", "new", "ovr");
  ASSERT_OK(config_delete(c, "s", "new", 0, NULL));
  ASSERT_GET(c, "s", "new", "n"); /* the override gone, the shared value again */

  hook_log h = {0};
  config_set_shared_hook(c, &(config_shared_hook){.scope = only_s, .write = hook_write, .arg = &h});
  ASSERT_EQ(config_shared_key(c, "s", "x"), 1);
  ASSERT_EQ(config_shared_key(c, "l", "k"), 0);
  char *old = NULL;
  ASSERT_OK(config_set(c, "s", "a", "put", 1, &old));
  ASSERT_STR_EQ(old, "shared");
  dv_free(old);
  ASSERT_STR_EQ(h.last, "s/a=put");
  ASSERT_GET(c, "s", "a", "put");
  ASSERT_FILE(path, "[s]\na = put\nb = file\n[l]\nk = file\n");
  ASSERT_OK(config_set(c, "l", "k", "local", 1, NULL)); /* not shared: the file only */
  ASSERT_EQ(h.calls, 1);
  ASSERT_OK(config_delete(c, "s", "new", 1, &old)); /* in the shared layer only */
  ASSERT_STR_EQ(old, "n");
  dv_free(old);
  ASSERT_STR_EQ(h.last, "s/new deleted");
  ASSERT_GET(c, "s", "new", NULL);
  ASSERT_EQ(config_delete(c, "s", "nothing", 1, NULL), DV_ENOT_FOUND);
  ASSERT_EQ(h.calls, 2);
  h.fail = DV_ECONFLICT;
  ASSERT_EQ(config_set(c, "s", "a", "refused", 1, NULL), DV_ECONFLICT);
  ASSERT_GET(c, "s", "a", "put");
  ASSERT_FILE(path, "[s]\na = put\nb = file\n[l]\nk = local\n");
  config_set_shared_hook(c, NULL);
  ASSERT_OK(config_set(c, "s", "z", "1", 1, NULL));
  ASSERT_EQ(h.calls, 3);
  config_free(c);
}
