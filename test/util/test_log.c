/* test_log.c — the log (src/util/log.h): the line format byte for byte,
 * the levels and their spellings, the message cap at and past its limit,
 * escapes, the file writer and its reopen after a rename, many threads
 * writing while the file is reopened under them (every line whole, none
 * lost), and [log] read from a configuration.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "util/config.h"
#include "util/log.h"

#define T0 1795549500123456LL /* 2026-11-24T19:45:00.123456Z */

static char *fmt(int writer, int level, const char *id, const char *msg, size_t len, size_t max) {
  static char line[LOG_LINE_MAX + 1];
  size_t n = log__format(line, writer, level, id, T0, 4711, msg, len, max);
  ASSERT(n <= LOG_LINE_MAX);
  line[n] = 0;
  return line;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0, k;
  char *s = malloc(cap + 1);
  while ((k = fread(s + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) s = realloc(s, (cap *= 2) + 1);
  }
  fclose(f);
  s[n] = 0;
  if (len) *len = n;
  return s;
}

static size_t count_lines(const char *s) {
  size_t n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

TEST(log_format) {
  log_set_node("divan@127.0.0.1");
  ASSERT_STR_EQ(fmt(LOG_W_STDERR, DV_LOG_NOTICE, "3f2a9c01be", "hello", 5, 0),
                "[notice] 2026-11-24T19:45:00.123456Z divan@127.0.0.1 <0.4711.0> 3f2a9c01be hello\n");
  /* no id: CouchDB's "--------"; each level's name as CouchDB writes it */
  static const char *const names[] = {"", "debug", "info", "notice", "warning", "error", "critical", "alert",
                                      "emergency"};
  for (int l = DV_LOG_DEBUG; l <= DV_LOG_EMERGENCY; l++) {
    char want[256];
    snprintf(want, sizeof want, "[%s] 2026-11-24T19:45:00.123456Z divan@127.0.0.1 <0.4711.0> -------- m\n", names[l]);
    ASSERT_STR_EQ(fmt(LOG_W_FILE, l, NULL, "m", 1, 0), want);
  }
  /* the file writer's line is the stderr writer's */
  ASSERT_STR_EQ(fmt(LOG_W_FILE, DV_LOG_ERROR, "", "x", 1, 0),
                "[error] 2026-11-24T19:45:00.123456Z divan@127.0.0.1 <0.4711.0> -------- x\n");
  /* journald: sd-daemon's priority, no level and no time */
  ASSERT_STR_EQ(fmt(LOG_W_JOURNALD, DV_LOG_NOTICE, "abc", "hi", 2, 0), "<5>divan@127.0.0.1 <0.4711.0> abc hi\n");
  ASSERT_STR_EQ(fmt(LOG_W_JOURNALD, DV_LOG_DEBUG, NULL, "", 0, 0), "<7>divan@127.0.0.1 <0.4711.0> -------- \n");
  ASSERT_STR_EQ(fmt(LOG_W_JOURNALD, DV_LOG_EMERGENCY, NULL, "e", 1, 0), "<0>divan@127.0.0.1 <0.4711.0> -------- e\n");
  /* the clock's edges: zero microseconds, the end of a year, the epoch */
  char line[LOG_LINE_MAX];
  size_t n = log__format(line, LOG_W_STDERR, DV_LOG_INFO, NULL, 1798761599999999LL, 1, "y", 1, 0);
  ASSERT_MEM_EQ(line, n, "[info] 2026-12-31T23:59:59.999999Z divan@127.0.0.1 <0.1.0> -------- y\n",
                strlen("[info] 2026-12-31T23:59:59.999999Z divan@127.0.0.1 <0.1.0> -------- y\n"));
  n = log__format(line, LOG_W_STDERR, DV_LOG_INFO, NULL, 0, 1, "y", 1, 0);
  ASSERT_MEM_EQ(line, n, "[info] 1970-01-01T00:00:00.000000Z divan@127.0.0.1 <0.1.0> -------- y\n",
                strlen("[info] 1970-01-01T00:00:00.000000Z divan@127.0.0.1 <0.1.0> -------- y\n"));
  log_set_node(NULL);
  ASSERT_STR_EQ(fmt(LOG_W_JOURNALD, DV_LOG_INFO, NULL, "n", 1, 0), "<6>nonode@nohost <0.4711.0> -------- n\n");
}

TEST(log_escapes) {
  log_set_node("n@h");
  /* a message cannot make a second line, nor hide bytes */
  const char m[] = "a\nb\r\tc\x01\x7f\xc3\xa9";
  ASSERT_STR_EQ(fmt(LOG_W_STDERR, DV_LOG_INFO, NULL, m, sizeof m - 1, 0),
                "[info] 2026-11-24T19:45:00.123456Z n@h <0.4711.0> -------- a\\nb\\r\tc\\x01\\x7f\xc3\xa9\n");
  /* a NUL is a byte like the others */
  ASSERT_STR_EQ(fmt(LOG_W_JOURNALD, DV_LOG_INFO, NULL, "a\0b", 3, 0), "<6>n@h <0.4711.0> -------- a\\x00b\n");
  log_set_node(NULL);
}

/* The message after the fixed part of a journald line "<6>n@h <0.4711.0> -------- ". */
static const char *msg_of(const char *line) { return line + strlen("<6>n@h <0.4711.0> -------- "); }

TEST(log_message_limit) {
  log_set_node("n@h");
  static char big[LOG_MAX_MESSAGE + 100];
  memset(big, 'a', sizeof big);
  /* at the limit: whole */
  const char *l = msg_of(fmt(LOG_W_JOURNALD, DV_LOG_INFO, NULL, big, LOG_MAX_MESSAGE, 0));
  ASSERT_EQ(strlen(l), LOG_MAX_MESSAGE + 1); /* + "\n" */
  ASSERT(l[LOG_MAX_MESSAGE - 1] == 'a');
  /* one past it: max-3 bytes and "..." */
  l = msg_of(fmt(LOG_W_JOURNALD, DV_LOG_INFO, NULL, big, LOG_MAX_MESSAGE + 1, 0));
  ASSERT_EQ(strlen(l), LOG_MAX_MESSAGE + 1);
  ASSERT(!strcmp(l + LOG_MAX_MESSAGE - 3, "...\n"));
  ASSERT(l[LOG_MAX_MESSAGE - 4] == 'a');
  /* a smaller cap (max_message_size = 20), at and past it */
  ASSERT_STR_EQ(msg_of(fmt(LOG_W_JOURNALD, DV_LOG_INFO, NULL, "0123456789abcdefghij", 20, 20)),
                "0123456789abcdefghij\n");
  ASSERT_STR_EQ(msg_of(fmt(LOG_W_JOURNALD, DV_LOG_INFO, NULL, "0123456789abcdefghijk", 21, 20)),
                "0123456789abcdefg...\n");
  /* an escape is not split by the cut: 16 bytes, then "\\n" would end at 18 > 17 */
  ASSERT_STR_EQ(msg_of(fmt(LOG_W_JOURNALD, DV_LOG_INFO, NULL, "0123456789abcdef\nxyz", 20, 20)),
                "0123456789abcdef...\n");
  ASSERT_STR_EQ(msg_of(fmt(LOG_W_JOURNALD, DV_LOG_INFO, NULL, "0123456789abcd\x01xyzzzzz", 22, 20)),
                "0123456789abcd...\n");
  /* caps below 16 are 16, above LOG_MAX_MESSAGE are LOG_MAX_MESSAGE */
  ASSERT_STR_EQ(msg_of(fmt(LOG_W_JOURNALD, DV_LOG_INFO, NULL, "0123456789abcdefg", 17, 1)),
                "0123456789abc...\n");
  l = msg_of(fmt(LOG_W_JOURNALD, DV_LOG_INFO, NULL, big, sizeof big, LOG_MAX_MESSAGE * 2));
  ASSERT_EQ(strlen(l), LOG_MAX_MESSAGE + 1);
  log_set_node(NULL);
}

TEST(log_levels) {
  static const struct {
    const char *s;
    int l;
  } t[] = {{"debug", 1},     {"info", 2},      {"notice", 3}, {"warning", 4}, {"warn", 4},  {"error", 5},
           {"err", 5},       {"critical", 6},  {"crit", 6},   {"alert", 7},   {"emergency", 8}, {"emerg", 8},
           {"none", 9},      {"1", 1},         {"9", 9},      {"0", -1},      {"10", -1},   {"Info", -1},
           {"", -1},         {"verbose", -1},  {"info ", -1}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) ASSERTF(log_level_parse(t[i].s) == t[i].l, "%s", t[i].s);
  ASSERT_EQ(log_level_parse(NULL), -1);
  ASSERT_STR_EQ(log_level_name(DV_LOG_WARNING), "warning");
  ASSERT_STR_EQ(log_level_name(0), "?");
  /* the default is info, as CouchDB's default.ini */
  ASSERT_EQ(log_level(), DV_LOG_INFO);
  ASSERT(!log_enabled(DV_LOG_DEBUG) && log_enabled(DV_LOG_INFO) && log_enabled(DV_LOG_EMERGENCY));
  log_set_level(DV_LOG_ERROR);
  ASSERT(!log_enabled(DV_LOG_WARNING) && log_enabled(DV_LOG_ERROR));
  log_set_level(DV_LOG_NONE);
  for (int l = DV_LOG_DEBUG; l <= DV_LOG_EMERGENCY; l++) ASSERT(!log_enabled(l));
  log_set_level(DV_LOG_INFO);
}

/* What reaches a file at each level in force: exactly the lines at or
 * above it; "none" writes nothing at all. */
TEST(log_file_levels) {
  char path[512], err[256];
  snprintf(path, sizeof path, "%s/sub/dir/divan.log", test_tmpdir()); /* parents are made */
  for (int lv = DV_LOG_DEBUG; lv <= DV_LOG_NONE; lv++) {
    ASSERT_OK(log_open(&(log_opts){.level = lv, .writer = LOG_W_FILE, .file = path}, err, sizeof err));
    for (int l = DV_LOG_DEBUG; l <= DV_LOG_EMERGENCY; l++) log_msg(l, NULL, "lv%d l%d", lv, l);
    log_debug("lv%d debug macro", lv);
    log_error("lv%d error macro", lv);
  }
  log_close();
  char *s = read_file(path, NULL);
  ASSERT(s != NULL);
  for (int lv = DV_LOG_DEBUG; lv <= DV_LOG_NONE; lv++)
    for (int l = DV_LOG_DEBUG; l <= DV_LOG_EMERGENCY; l++) {
      char want[64];
      snprintf(want, sizeof want, " lv%d l%d\n", lv, l);
      ASSERTF((strstr(s, want) != NULL) == (l >= lv), "level %d, line %d:\n%s", lv, l, s);
    }
  ASSERT(strstr(s, " lv1 debug macro\n") && !strstr(s, " lv2 debug macro\n"));
  ASSERT(strstr(s, " lv5 error macro\n") && !strstr(s, " lv6 error macro\n"));
  ASSERT(!strstr(s, "lv9"));
  /* log_msg's lines at or above each level, the debug macro's at debug, the error macro's up to error */
  size_t want = 0;
  for (int lv = DV_LOG_DEBUG; lv <= DV_LOG_NONE; lv++) want += (size_t)(lv <= 8 ? 9 - lv : 0) + (lv == 1) + (lv <= 5);
  ASSERT_EQ(count_lines(s), want);
  ASSERT(!strncmp(s, "[debug] ", 8));
  free(s);
  /* log_msg cuts a long message too */
  ASSERT_OK(log_open(&(log_opts){.level = DV_LOG_INFO, .writer = LOG_W_FILE, .file = path, .max_message = 40}, err,
                     sizeof err));
  ASSERT_OK(truncate(path, 0));
  log_info("%s", "0123456789012345678901234567890123456789-and-more");
  log_close();
  s = read_file(path, NULL);
  ASSERT(strstr(s, "-------- 0123456789012345678901234567890123456...\n") != NULL);
  free(s);
}

TEST(log_open_errors) {
  char err[256], path[512];
  /* a file that cannot be opened changes nothing: lines go on to the old file */
  snprintf(path, sizeof path, "%s/a.log", test_tmpdir());
  ASSERT_OK(log_open(&(log_opts){.level = DV_LOG_INFO, .writer = LOG_W_FILE, .file = path}, err, sizeof err));
  int fd = log_fd();
  ASSERT(fd > 2);
  char bad[600];
  snprintf(bad, sizeof bad, "%s/a.log/under-a-file.log", test_tmpdir());
  ASSERT_EQ(log_open(&(log_opts){.level = DV_LOG_DEBUG, .writer = LOG_W_FILE, .file = bad}, err, sizeof err), DV_EIO);
  ASSERTF(strstr(err, "cannot open the log file") && strstr(err, "under-a-file.log"), "%s", err);
  ASSERT_EQ(log_fd(), fd);
  ASSERT_EQ(log_level(), DV_LOG_INFO);
  log_info("still here");
  ASSERT_EQ(log_open(&(log_opts){.writer = LOG_W_FILE, .file = ""}, err, sizeof err), DV_EINVAL);
  ASSERT_EQ(log_open(&(log_opts){.writer = 7}, err, sizeof err), DV_EINVAL);
  ASSERT_EQ(log_open(NULL, err, sizeof err), DV_EINVAL);
  ASSERT_EQ(log_fd(), fd);
  /* to stderr: the file is let go (its descriptor now names stderr) */
  ASSERT_OK(log_open(&(log_opts){.level = DV_LOG_INFO, .writer = LOG_W_STDERR}, err, sizeof err));
  ASSERT_EQ(log_fd(), 2);
  struct stat a, b;
  ASSERT_OK(fstat(fd, &a));
  ASSERT_OK(fstat(2, &b));
  ASSERT(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
  /* and back to a file: the same descriptor number */
  ASSERT_OK(log_open(&(log_opts){.level = DV_LOG_INFO, .writer = LOG_W_FILE, .file = path}, err, sizeof err));
  ASSERT_EQ(log_fd(), fd);
  log_info("back");
  log_close();
  char *s = read_file(path, NULL);
  ASSERT(strstr(s, " still here\n") && strstr(s, " back\n"));
  ASSERT_EQ(count_lines(s), 2);
  free(s);
}

/* logrotate's move, then the reopen SIGHUP asks for: the old file stops
 * growing, the new one gets the lines. */
TEST(log_reopen) {
  char path[512], old[512], err[256];
  snprintf(path, sizeof path, "%s/divan.log", test_tmpdir());
  snprintf(old, sizeof old, "%s/divan.log.1", test_tmpdir());
  log_opts o = {.level = DV_LOG_INFO, .writer = LOG_W_FILE, .file = path};
  ASSERT_OK(log_open(&o, err, sizeof err));
  log_info("before");
  ASSERT_OK(rename(path, old));
  log_info("moved, not yet reopened"); /* still the old file, as with CouchDB until its check */
  ASSERT_OK(log_open(&o, err, sizeof err));
  log_info("after");
  log_close();
  char *a = read_file(old, NULL), *b = read_file(path, NULL);
  ASSERT(a && b);
  ASSERT(strstr(a, " before\n") && strstr(a, " moved, not yet reopened\n") && !strstr(a, " after\n"));
  ASSERT(strstr(b, " after\n") && count_lines(b) == 1);
  free(a);
  free(b);
}

/* ---- many threads while the file is rotated under them ---- */

#define NTH 8
#define PER 3000

static atomic_int go;

static void *writer_main(void *arg) {
  long id = (long)(intptr_t)arg;
  while (!atomic_load(&go)) {}
  for (int i = 0; i < PER; i++) log_msg(DV_LOG_NOTICE, "0123456789", "thread %ld line %d %s", id, i, "payload-payload-payload");
  return NULL;
}

TEST(log_threads_rotate) {
  char path[512], err[256];
  snprintf(path, sizeof path, "%s/t.log", test_tmpdir());
  log_set_node("divan@127.0.0.1");
  log_opts o = {.level = DV_LOG_INFO, .writer = LOG_W_FILE, .file = path};
  ASSERT_OK(log_open(&o, err, sizeof err));
  pthread_t th[NTH];
  for (long i = 0; i < NTH; i++) ASSERT_OK(pthread_create(&th[i], NULL, writer_main, (void *)(intptr_t)i));
  atomic_store(&go, 1);
  int rotations = 0;
  for (; rotations < 20; rotations++) { /* rename and reopen while they write */
    char to[600];
    snprintf(to, sizeof to, "%s.%d", path, rotations);
    ASSERT_OK(rename(path, to));
    ASSERT_OK(log_open(&o, err, sizeof err));
    usleep(1000);
  }
  for (int i = 0; i < NTH; i++) ASSERT_OK(pthread_join(th[i], NULL));
  log_close();
  log_set_node(NULL);
  /* every line of every file is whole, each thread's lines are all there,
   * once, and in the order it wrote them (the files in rotation order) */
  static unsigned char seen[NTH][PER];
  int last[NTH];
  memset(seen, 0, sizeof seen);
  for (int t = 0; t < NTH; t++) last[t] = -1;
  size_t total = 0;
  for (int f = 0; f <= rotations; f++) {
    char p[600];
    if (f < rotations) snprintf(p, sizeof p, "%s.%d", path, f);
    else snprintf(p, sizeof p, "%s", path);
    char *s = read_file(p, NULL);
    ASSERT(s != NULL);
    for (char *l = s, *e; *l; l = e + 1) {
      e = strchr(l, '\n');
      ASSERTF(e != NULL, "a line without its end in %s", p);
      *e = 0;
      long t;
      int i, k = 0;
      ASSERTF(!strncmp(l, "[notice] 20", 11), "%s", l);
      const char *m = strstr(l, "Z divan@127.0.0.1 <0.");
      m = m ? strstr(m, ".0> 0123456789 thread ") : NULL;
      ASSERTF(m && sscanf(m + 22, "%ld line %d payload-payload-payload%n", &t, &i, &k) == 2 && !m[22 + k], "%s", l);
      ASSERT(t >= 0 && t < NTH && i >= 0 && i < PER);
      ASSERTF(!seen[t][i], "thread %ld line %d twice", t, i);
      ASSERTF(i > last[t], "thread %ld: line %d after line %d", t, i, last[t]);
      seen[t][i] = 1;
      last[t] = i;
      total++;
    }
    free(s);
  }
  ASSERT_EQ(total, (size_t)NTH * PER);
}

/* ---- [log] from the configuration ---- */

static dv_config *parse(const char *text) {
  dv_config *c;
  char err[128];
  ASSERT_OK(config_parse(text, strlen(text), &c, err, sizeof err));
  return c;
}

TEST(log_config) {
  char err[256], dflt[512], other[512], text[1200];
  snprintf(dflt, sizeof dflt, "%s/data/divan.log", test_tmpdir());
  snprintf(other, sizeof other, "%s/other.log", test_tmpdir());
  /* nothing set: info on stderr */
  dv_config *c = parse("");
  ASSERT_OK(log_config_apply(c, dflt, err, sizeof err));
  ASSERT_EQ(log_level(), DV_LOG_INFO);
  ASSERT_EQ(log_fd(), 2);
  config_free(c);
  /* writer = file without a file: the default one, made with its directory */
  c = parse("[log]\nwriter = file\nlevel = warn\n");
  ASSERT_OK(log_config_apply(c, dflt, err, sizeof err));
  ASSERT_EQ(log_level(), DV_LOG_WARNING);
  log_warning("to the default file");
  log_notice("below the level");
  /* an unknown level is info, as CouchDB's level_to_atom, and says so */
  ASSERT_OK(config_set(c, "log", "level", "loud", 0, NULL));
  ASSERT_OK(log_config_apply(c, NULL, err, sizeof err));
  ASSERT_EQ(log_level(), DV_LOG_INFO);
  /* a writer divan does not have: refused, the log as it was */
  ASSERT_OK(config_set(c, "log", "writer", "syslog", 0, NULL));
  ASSERT_OK(config_set(c, "log", "level", "debug", 0, NULL));
  ASSERT_EQ(log_config_apply(c, NULL, err, sizeof err), DV_EINVAL);
  ASSERTF(!strcmp(err, "[log] writer = syslog: divan writes its log to stderr, file or journald (not syslog)"), "%s", err);
  ASSERT_EQ(log_level(), DV_LOG_INFO);
  ASSERT(log_fd() > 2);
  ASSERT_OK(config_set(c, "log", "writer", "File", 0, NULL));
  ASSERT_EQ(log_config_apply(c, NULL, err, sizeof err), DV_EINVAL);
  config_free(c);
  /* a file of its own, a small cap */
  snprintf(text, sizeof text, "[log]\nwriter = file\nfile = %s\nlevel = 1\nmax_message_size = 30\n", other);
  c = parse(text);
  ASSERT_OK(log_config_apply(c, NULL, err, sizeof err));
  ASSERT_EQ(log_level(), DV_LOG_DEBUG);
  log_debug("%s", "abcdefghijklmnopqrstuvwxyz0123456789");
  config_free(c);
  /* journald */
  c = parse("[log]\nwriter = journald\n");
  ASSERT_OK(log_config_apply(c, NULL, err, sizeof err));
  ASSERT_EQ(log_fd(), 2);
  config_free(c);
  log_close();
  char *s = read_file(dflt, NULL);
  ASSERT(s != NULL);
  ASSERTF(strstr(s, "[warning] ") && strstr(s, " to the default file\n") && !strstr(s, "below the level"), "%s", s);
  ASSERTF(strstr(s, "[warning] ") && strstr(s, " [log] level = loud is not a level; info is used\n"), "%s", s);
  ASSERT_EQ(count_lines(s), 2);
  free(s);
  s = read_file(other, NULL);
  ASSERTF(s && strstr(s, "[debug] ") && strstr(s, " abcdefghijklmnopqrstuvwxyz0...\n"), "%s", s);
  free(s);
}

/* The writer thread: lines reach the file within its period without a
 * close; one longer than a queue slot keeps its place; what is queued
 * when the process exits is written (atexit). */
TEST(log_queue) {
  char path[512], err[256];
  snprintf(path, sizeof path, "%s/q.log", test_tmpdir());
  pid_t pid = fork();
  if (!pid) { /* a process that ends without log_close */
    if (log_open(&(log_opts){.level = DV_LOG_INFO, .writer = LOG_W_FILE, .file = path}, err, sizeof err)) _exit(3);
    for (int i = 0; i < 100; i++) log_info("child %d", i);
    exit(0);
  }
  int st;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  char *s = read_file(path, NULL);
  ASSERTF(s && count_lines(s) == 100 && strstr(s, " child 99\n"), "%s", s ? s : "(no file)");
  free(s);
  s = NULL;
  ASSERT_OK(unlink(path));
  ASSERT_OK(log_open(&(log_opts){.level = DV_LOG_INFO, .writer = LOG_W_FILE, .file = path}, err, sizeof err));
  log_info("first");
  static char big[2000];
  memset(big, 'b', sizeof big - 1);
  log_info("%s", big); /* longer than a slot: written after what is queued */
  log_info("last");
  size_t n = 0;
  for (int i = 0; i < 200 && n < 3; i++) { /* no close: the thread writes them */
    usleep(5000);
    free(s);
    s = read_file(path, NULL);
    n = s ? count_lines(s) : 0;
  }
  ASSERT_EQ(n, 3);
  char *a = strstr(s, " first\n"), *b = strstr(s, " bbbb"), *c = strstr(s, " last\n");
  ASSERT(a && b && c && a < b && b < c);
  free(s);
  log_close();
}

TEST(log_fuzz_smoke) { test_fuzz_smoke("fuzz_log"); }
