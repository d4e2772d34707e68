/* runner.c — runs the tests of test/list.h, each in its own process.
 *
 *   build/.../test_runner [-j N] [-l] [-v] [NAME_SUBSTRING …]
 *
 * Each test is forked into its own process group with a fresh temporary
 * directory (test_tmpdir()) and its output captured to a log; the log is
 * shown when the test fails (or always with -v). A test that overruns its
 * timeout is killed with its whole process group (servers and node clients
 * it started go with it). Up to N tests run at once (default: the number of
 * online CPUs). The last line is `N passed, N failed`, which CI reads.
 *
 * It is not a benchmark harness: timings are printed for orientation only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "list.h"
#include "test.h"

#define X_DECL(name, timeout) void test_##name(void);
TEST_LIST(X_DECL)
#undef X_DECL

struct test_def {
  const char *name;   /* test name as registered */
  void (*fn)(void);   /* body */
  int timeout;        /* seconds */
};

static const struct test_def tests[] = {
#define X_ROW(name, timeout) {#name, test_##name, timeout},
    TEST_LIST(X_ROW)
#undef X_ROW
};
#define NTESTS (sizeof tests / sizeof tests[0])

struct running {
  pid_t pid;          /* child, also its process group id */
  size_t idx;         /* index into tests[] */
  double start;       /* monotonic seconds */
  int killed;         /* 1 if we killed it for its timeout */
  char dir[64];       /* its temporary directory */
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- helpers available to tests ---- */

const char *test_tmpdir(void) {
  const char *d = getenv("DV_TEST_TMPDIR");
  return d ? d : "/tmp";
}

const char *test_hex(const void *p, size_t n) {
  static char out[4096];
  size_t o = 0;
  const unsigned char *s = p;
  for (size_t i = 0; i < n && o + 4 < sizeof out; i++)
    o += (size_t)snprintf(out + o, sizeof out - o, "%02x", s[i]);
  if (o + 4 >= sizeof out) strcpy(out + sizeof out - 4, "...");
  out[o < sizeof out ? o : sizeof out - 1] = 0;
  return out;
}

int test_sh(const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fflush(stderr);
  int st = system(cmd);
  if (st == -1 || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

void test_fuzz_smoke(const char *name) {
  const char *dir = getenv("DV_FUZZ_DIR");
  if (!dir) /* a smoke test that did not run is a failure, not a pass */
    test_fail_(__FILE__, __LINE__, "DV_FUZZ_DIR is not set (make test sets it): %s did not run", name);
  /* An input slower than 10 s fails as a timeout with its artifact (a
   * hang would show only as this test's own timeout). New corpus entries
   * and crash files go to this test's temporary directory, never into the
   * repository's seeds. */
  char corpus[512];
  snprintf(corpus, sizeof corpus, "%s/corpus", test_tmpdir());
  ASSERT_OK(mkdir(corpus, 0755));
  int rc = test_sh("%s/%s -max_total_time=20 -timeout=10 -print_final_stats=1 -artifact_prefix=%s/ "
                   "%s test/fuzz/seeds/%s >%s/fuzz.log 2>&1; rc=$?; "
                   "tail -n 30 %s/fuzz.log; exit $rc",
                   dir, name, test_tmpdir(), corpus, name, test_tmpdir(), test_tmpdir());
  ASSERT_EQ(rc, 0);
}

void test_fail_(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  abort();
}

/* ---- the runner ---- */

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb; (void)flag; (void)f;
  return remove(path);
}

static void show_log(const char *dir, const char *prefix) {
  char path[128];
  snprintf(path, sizeof path, "%s.log", dir);
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    if (++n > 400) { printf("%s... (log truncated)\n", prefix); break; }
    printf("%s%s", prefix, line);
    if (!strchr(line, '\n')) putchar('\n');
  }
  fclose(f);
}

static pid_t start(struct running *r, size_t idx) {
  strcpy(r->dir, "/tmp/divan-test-XXXXXX");
  if (!mkdtemp(r->dir)) { perror("mkdtemp"); exit(2); }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); exit(2); }
  if (pid == 0) {
    setpgid(0, 0);
    char path[128];
    snprintf(path, sizeof path, "%s.log", r->dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); close(fd); }
    setvbuf(stdout, NULL, _IOLBF, 0);
    setenv("DV_TEST_TMPDIR", r->dir, 1);
    srand((unsigned)getpid());
    tests[idx].fn();
    fflush(stdout);
    fflush(stderr);
    _exit(0);
  }
  setpgid(pid, pid);
  r->pid = pid;
  r->idx = idx;
  r->start = now();
  r->killed = 0;
  return pid;
}

static int selected(const char *name, int argc, char **argv, int first) {
  if (first >= argc) return 1;
  for (int i = first; i < argc; i++)
    if (strstr(name, argv[i])) return 1;
  return 0;
}

int main(int argc, char **argv) {
  int jobs = (int)sysconf(_SC_NPROCESSORS_ONLN), verbose = 0, first = 1;
  /* The black-box suites hold thousands of sockets (slowloris.test.js):
   * the soft fd limit goes up to the hard one for every test. */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (jobs < 1) jobs = 1;
  while (first < argc && argv[first][0] == '-') {
    if (!strcmp(argv[first], "-j") && first + 1 < argc) { jobs = atoi(argv[first + 1]); first += 2; }
    else if (!strcmp(argv[first], "-v")) { verbose = 1; first++; }
    else if (!strcmp(argv[first], "-l")) {
      for (size_t i = 0; i < NTESTS; i++) printf("%s\n", tests[i].name);
      return 0;
    } else { fprintf(stderr, "usage: %s [-j N] [-l] [-v] [NAME …]\n", argv[0]); return 2; }
  }
  if (jobs < 1) jobs = 1;
  signal(SIGPIPE, SIG_IGN);

  struct running *run = calloc((size_t)jobs, sizeof *run);
  int passed = 0, failed = 0, active = 0;
  size_t next = 0;
  char failures[8192] = "";
  double t0 = now();

  for (;;) {
    while (active < jobs) {
      while (next < NTESTS && !selected(tests[next].name, argc, argv, first)) next++;
      if (next >= NTESTS) break;
      for (int s = 0; s < jobs; s++)
        if (!run[s].pid) { start(&run[s], next++); active++; break; }
    }
    if (!active) break;

    int st;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid <= 0) {
      double t = now();
      for (int s = 0; s < jobs; s++) {
        struct running *r = &run[s];
        if (r->pid && !r->killed && t - r->start > tests[r->idx].timeout) {
          kill(-r->pid, SIGKILL);
          r->killed = 1;
        }
      }
      usleep(5000);
      continue;
    }
    for (int s = 0; s < jobs; s++) {
      struct running *r = &run[s];
      if (r->pid != pid) continue;
      kill(-r->pid, SIGKILL); /* reap anything the test left running */
      const char *name = tests[r->idx].name;
      double secs = now() - r->start;
      int ok = !r->killed && WIFEXITED(st) && WEXITSTATUS(st) == 0;
      if (ok) {
        passed++;
        printf("ok   %-40s %7.2fs\n", name, secs);
        if (verbose) show_log(r->dir, "     | ");
      } else {
        failed++;
        if (r->killed) printf("FAIL %-40s timeout after %ds\n", name, tests[r->idx].timeout);
        else if (WIFSIGNALED(st)) printf("FAIL %-40s signal %d\n", name, WTERMSIG(st));
        else printf("FAIL %-40s exit %d\n", name, WEXITSTATUS(st));
        show_log(r->dir, "     | ");
        size_t fl = strlen(failures);
        snprintf(failures + fl, sizeof failures - fl, " %s", name);
      }
      if (!getenv("DV_TEST_KEEP")) {
        nftw(r->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        char path[128];
        snprintf(path, sizeof path, "%s.log", r->dir);
        unlink(path);
      }
      r->pid = 0;
      active--;
    }
  }
  if (failed) printf("failed:%s\n", failures);
  printf("(%.1fs)\n", now() - t0);
  printf("%d passed, %d failed\n", passed, failed);
  free(run);
  return failed ? 1 : 0;
}
