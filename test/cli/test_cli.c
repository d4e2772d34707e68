/* test_cli.c — the `divan` command line (src/main.c), run as a program
 * ($DIVAN_BIN): every "--flag" written in main.c is accepted by divan or
 * one of its commands and listed by that command's --help and by
 * divan --help; every flag a --help lists is accepted; a missing value,
 * a bad one (each number at its limits and past them) and an unknown flag
 * exit 2 with one line on stderr ("divan: …") and nothing on stdout;
 * --version prints the version of the source.
 *
 * The flags are read from the source and from --help, never written here
 * again, so a new flag is checked without a change to this file: it must
 * be declared in main.c's tables to be accepted and listed both. */
#include <ctype.h>
#include <stdarg.h>

#include "test.h"

#define NO_SUCH "--zz-no-such-flag"

typedef struct run_out {
  int status;       /* exit status, -1 if it did not exit */
  char out[32768];  /* stdout */
  char err[4096];   /* stderr */
} run_out;

static void slurp(const char *path, char *b, size_t cap) {
  FILE *f = fopen(path, "r");
  ASSERT(f != NULL);
  size_t n = fread(b, 1, cap - 1, f);
  b[n] = 0;
  fclose(f);
}

/* divan ARG... (NULL-terminated), each argument quoted for the shell */
static void divan(run_out *r, ...) {
  const char *bin = getenv("DIVAN_BIN");
  ASSERTF(bin != NULL, "DIVAN_BIN is not set (make test sets it)");
  /* in the test's directory, for 20 s at most: a flag taken by mistake
   * may start a server, which must neither run on nor write ./data here */
  char cmd[4096];
  size_t n = (size_t)snprintf(cmd, sizeof cmd, "cd '%s' && timeout -k 2 20 '%s'", test_tmpdir(), bin);
  va_list ap;
  va_start(ap, r);
  for (const char *a; (a = va_arg(ap, const char *));) {
    ASSERT(!strchr(a, '\''));
    n += (size_t)snprintf(cmd + n, sizeof cmd - n, " '%s'", a);
  }
  va_end(ap);
  ASSERT(n < sizeof cmd - 256);
  snprintf(cmd + n, sizeof cmd - n, " >out 2>err </dev/null");
  r->status = test_sh("%s", cmd);
  char p[512];
  snprintf(p, sizeof p, "%s/out", test_tmpdir());
  slurp(p, r->out, sizeof r->out);
  snprintf(p, sizeof p, "%s/err", test_tmpdir());
  slurp(p, r->err, sizeof r->err);
}

static int lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* exit 2, nothing on stdout, exactly one line "divan: …" on stderr that
 * contains WANT */
static void one_line_error(const run_out *r, const char *want, const char *what) {
  ASSERTF(r->status == 2, "%s: exit %d, not 2 (stderr: %s)", what, r->status, r->err);
  ASSERTF(!r->out[0], "%s: stdout is not empty: %s", what, r->out);
  ASSERTF(lines(r->err) == 1 && !strncmp(r->err, "divan: ", 7), "%s: not one line 'divan: …': %s", what, r->err);
  ASSERTF(strstr(r->err, want) != NULL, "%s: '%s' is not in: %s", what, want, r->err);
}

/* FLAG appears as a flag in TEXT: after a space, before a space, '=' or
 * the end of the line */
static int lists(const char *text, const char *flag) {
  size_t n = strlen(flag);
  for (const char *p = text; (p = strstr(p, flag)); p += n)
    if (p > text && p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n' || p[n] == '=' || !p[n])) return 1;
  return 0;
}

/* Accepted: the parser knew FLAG (it went on to the unknown flag after it,
 * asked for FLAG's value, or printed and exited 0). CMD NULL: divan's own
 * flags. */
static int accepts(const char *cmd, const char *flag) {
  run_out r;
  if (cmd) divan(&r, cmd, flag, NO_SUCH, NULL);
  else divan(&r, flag, NO_SUCH, NULL);
  char unknown[128];
  snprintf(unknown, sizeof unknown, "unknown option '%s'", flag);
  ASSERTF(r.status == 0 || r.status == 2, "divan %s %s: exit %d", cmd ? cmd : "", flag, r.status);
  return !strstr(r.err, unknown);
}

#define MAX_NAMES 64

/* every string literal of src/main.c that is a flag ("--name"), outside
 * comments and character constants */
static int source_flags(char names[][64]) {
  static char src[262144];
  slurp("src/main.c", src, sizeof src);
  int n = 0;
  for (const char *p = src; *p; p++) {
    if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      ASSERT(e != NULL);
      p = e + 1;
    } else if (p[0] == '/' && p[1] == '/') {
      p += strcspn(p, "\n");
      if (!*p) break;
    } else if (*p == '\'') {
      for (p++; *p && *p != '\''; p++) p += *p == '\\';
      if (!*p) break;
    } else if (*p == '"') {
      const char *q = p + 1;
      for (; *q && *q != '"'; q++) q += *q == '\\';
      size_t len = (size_t)(q - p - 1), k = 2;
      while (k < len && (islower((unsigned char)p[1 + k]) || isdigit((unsigned char)p[1 + k]) || p[1 + k] == '-')) k++;
      if (len > 2 && len < 64 && k == len && !strncmp(p + 1, "--", 2)) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)len, p + 1);
        int seen = 0;
        for (int i = 0; i < n; i++) seen |= !strcmp(names[i], name);
        if (!seen) {
          ASSERT(n < MAX_NAMES);
          strcpy(names[n++], name);
        }
      }
      p = q;
      if (!*p) break;
    }
  }
  return n;
}

/* the command names of divan --help: the lines of its "commands:" part */
static int help_commands(char names[][64]) {
  run_out r;
  divan(&r, "--help", NULL);
  ASSERT_EQ(r.status, 0);
  const char *p = strstr(r.out, "\ncommands:\n");
  ASSERTF(p != NULL, "no commands: in divan --help:\n%s", r.out);
  int n = 0;
  for (p += 11; !strncmp(p, "  ", 2) && isalpha((unsigned char)p[2]); p = strchr(p, '\n') + 1) {
    ASSERT(n < MAX_NAMES);
    sscanf(p + 2, "%63[a-z]", names[n++]);
  }
  ASSERT(n > 0);
  return n;
}

TEST(cli_help_lists_every_flag) {
  static char flags[MAX_NAMES][64], cmds[MAX_NAMES][64];
  static run_out help[MAX_NAMES + 1]; /* [0]: divan --help, [1 + c]: divan CMD --help */
  int nf = source_flags(flags), nc = help_commands(cmds);
  int saw_port = 0, saw_version = 0;
  for (int i = 0; i < nf; i++) saw_port |= !strcmp(flags[i], "--port"), saw_version |= !strcmp(flags[i], "--version");
  ASSERTF(saw_port && saw_version, "the scan of src/main.c found %d flags, not --port and --version", nf);
  for (int c = -1; c < nc; c++) {
    run_out *h = &help[c + 1];
    if (c < 0) divan(h, "--help", NULL);
    else divan(h, cmds[c], "--help", NULL);
    ASSERT_EQ(h->status, 0);
    ASSERTF(!h->err[0], "divan %s --help wrote to stderr: %s", c < 0 ? "" : cmds[c], h->err);
  }

  /* accepted[f][1 + c]: flag f by command c (0: divan's own) */
  static signed char accepted[MAX_NAMES][MAX_NAMES + 1];
  for (int i = 0; i < nf; i++) {
    const char *f = flags[i];
    ASSERTF(lists(help[0].out, f), "%s (in src/main.c) is not in divan --help", f);
    int any = 0;
    for (int c = -1; c < nc; c++) {
      accepted[i][c + 1] = (signed char)accepts(c < 0 ? NULL : cmds[c], f);
      if (!accepted[i][c + 1]) continue;
      any = 1;
      ASSERTF(lists(help[c + 1].out, f), "divan %s accepts %s, but its --help does not list it:\n%s",
              c < 0 ? "" : cmds[c], f, help[c + 1].out);
    }
    ASSERTF(any, "%s is in src/main.c but neither divan nor a command accepts it", f);
  }

  /* and the other way: what a --help lists, its command accepts */
  for (int c = -1; c < nc; c++) {
    const char *opts = strstr(help[c + 1].out, "options:\n");
    ASSERT(opts != NULL);
    const char *end = strstr(opts, "\n\n"); /* divan --help: the commands' parts follow */
    for (const char *p = opts; (p = strstr(p, "\n  ")) && (!end || p < end); p++) {
      char f[64];
      if (sscanf(p + 3, "-h, %63[a-z-]", f) != 1 && sscanf(p + 3, "%63[a-z-]", f) != 1) continue;
      if (strncmp(f, "--", 2)) continue;
      int i = 0;
      while (i < nf && strcmp(flags[i], f)) i++;
      ASSERTF(i < nf, "divan %s --help lists %s, which is not in src/main.c", c < 0 ? "" : cmds[c], f);
      ASSERTF(accepted[i][c + 1], "divan %s --help lists %s, which it does not accept", c < 0 ? "" : cmds[c], f);
    }
  }
}

/* divan CMD FLAG VALUE is refused with one line naming FLAG; JOINED:
 * given as FLAG=VALUE */
static void refused(const char *cmd, const char *flag, const char *value, int joined) {
  run_out r;
  char what[256], arg[160];
  snprintf(what, sizeof what, "divan %.63s %.63s '%.63s'", cmd, flag, value);
  snprintf(arg, sizeof arg, "%.63s=%.63s", flag, value);
  if (joined) divan(&r, cmd, arg, NO_SUCH, NULL); /* NO_SUCH: if it were taken, no server starts */
  else divan(&r, cmd, flag, value, NO_SUCH, NULL);
  one_line_error(&r, flag, what);
  snprintf(arg, sizeof arg, "'%.63s'", value);
  ASSERTF(strstr(r.err, arg) != NULL, "%s: the value is not in: %s", what, r.err);
}

/* divan CMD FLAG VALUE is accepted: the parser goes on to the next flag */
static void taken(const char *cmd, const char *flag, const char *value) {
  run_out r;
  char what[256];
  snprintf(what, sizeof what, "divan %.63s %.63s '%.63s'", cmd, flag, value);
  divan(&r, cmd, flag, value, NO_SUCH, NULL);
  one_line_error(&r, NO_SUCH, what);
}

/* Each command's flags as its --help lists them ("  --NAME VALUE  (LO..HI)"):
 * each number is taken at both ends of its range and refused past them.
 * What every flag's value goes through (the number parser, an empty or a
 * missing value, a missing value before another flag) is tried on the
 * first flag of its kind, as every run of divan costs ~50 ms of loading
 * its libraries (0.2 s under ASan). */
TEST(cli_bad_values) {
  static char cmds[MAX_NAMES][64];
  int nc = help_commands(cmds), numbers = 0, valued = 0;
  run_out r, help;
  for (int c = 0; c < nc; c++) {
    const char *cmd = cmds[c];
    char hint[96];
    snprintf(hint, sizeof hint, "see divan %.63s --help", cmd);
    divan(&r, cmd, NO_SUCH, NULL);
    one_line_error(&r, hint, "an unknown flag");
    /* dump and load take one database name after their flags: a second is stray */
    int takes_db = !strcmp(cmd, "dump") || !strcmp(cmd, "load");
    divan(&r, cmd, "stray", takes_db ? "db" : NULL, NULL);
    one_line_error(&r, "'stray'", "an argument that is no flag");
    divan(&r, cmd, "--help=1", NULL);
    one_line_error(&r, "--help", "a value to a flag that takes none");

    divan(&help, cmd, "--help", NULL);
    ASSERT_EQ(help.status, 0);
    int first = 1, empty[2] = {0, 0}; /* an empty string, an empty number tried */
    for (const char *p = strstr(help.out, "\n  --"); p; p = strstr(p + 1, "\n  --")) {
      char flag[64], value[64] = "";
      long long lo, hi;
      int got = sscanf(p + 3, "%63s %63s (%lld..%lld)", flag, value, &lo, &hi);
      if (got < 2 || value[0] == '(') continue; /* takes no value */
      valued++;
      if (!empty[got == 4]++ || value[0] == '[') { /* the optional one is a case of its own */
        char joined[80];
        snprintf(joined, sizeof joined, "%s=", flag);
        divan(&r, cmd, joined, NO_SUCH, NULL);
        one_line_error(&r, flag, "an empty value");
      }
      if (value[0] != '[' && first) { /* a value that may not be left out */
        first = 0;
        divan(&r, cmd, flag, NULL);
        one_line_error(&r, "needs a value", flag);
        divan(&r, cmd, flag, NO_SUCH, NULL);
        one_line_error(&r, "needs a value", flag);
      }
      if (got != 4) continue;
      if (!numbers++) {
        static const char *const bad[] = {"abc", "12x", "x12", "+1", " 1", "1.5", "1e3", "0x10",
                                          "99999999999999999999999"};
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) refused(cmd, flag, bad[i], i == 0);
      }
      char num[32];
      snprintf(num, sizeof num, "%lld", lo); /* at the limits */
      taken(cmd, flag, num);
      snprintf(num, sizeof num, "%lld", hi);
      taken(cmd, flag, num);
      snprintf(num, sizeof num, "%lld", lo - 1); /* and past them */
      refused(cmd, flag, num, 0);
      snprintf(num, sizeof num, "%lld", hi + 1);
      refused(cmd, flag, num, 1);
    }
  }
  ASSERTF(numbers >= 1 && valued > numbers, "%d flags with values, %d numbers in the --help texts", valued, numbers);

  divan(&r, NO_SUCH, NULL);
  one_line_error(&r, "see divan --help", "an unknown flag of divan");
  divan(&r, "zz-no-such-command", NULL);
  one_line_error(&r, "see divan --help", "an unknown command");
}

TEST(cli_version_and_help) {
  static char src[262144];
  slurp("src/main.c", src, sizeof src);
  const char *d = strstr(src, "#define DIVAN_VERSION \"");
  ASSERT(d != NULL);
  char want[96];
  snprintf(want, sizeof want, "divan %.*s\n", (int)strcspn(d + 23, "\""), d + 23);

  run_out r;
  divan(&r, "--version", NULL);
  ASSERT_EQ(r.status, 0);
  ASSERT_STR_EQ(r.out, want);
  ASSERT_STR_EQ(r.err, "");

  static char cmds[MAX_NAMES][64];
  int nc = help_commands(cmds);
  for (int c = -1; c < nc; c++) { /* help goes to stdout, exit 0, both spellings */
    if (c < 0) divan(&r, "-h", NULL);
    else divan(&r, cmds[c], "-h", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_STR_EQ(r.err, "");
    ASSERT(strstr(r.out, "usage: divan") != NULL);
  }
  divan(&r, NULL);
  ASSERT_EQ(r.status, 0);
  ASSERT(!strncmp(r.out, want, strlen(want) - 1)); /* "divan 0.1.0 — …" */

  /* inspect runs once its flags are read: a missing store is exit 1 */
  char dir[512];
  snprintf(dir, sizeof dir, "%s/no-store", test_tmpdir());
  divan(&r, "inspect", "--data", dir, NULL);
  ASSERT_EQ(r.status, 1);
  ASSERT(strstr(r.err, "cannot open") != NULL);
}
