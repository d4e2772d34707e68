/* test_pkg.c — divan as an installed service (packaging/): the Debian
 * package packaging/mkdeb.sh builds from this build's binary ($DIVAN_BIN),
 * read back with dpkg-deb (files, fields, Depends against the libraries
 * the binary links, conffiles, maintainer scripts), its unit checked by
 * systemd-analyze verify; `make install DESTDIR=… PREFIX=…` and
 * `make uninstall` laid out in a temporary directory; the shipped
 * /etc/divan/local.ini read and written by a real `divan serve`.
 *
 * Nothing here needs root or touches the system: every path is under the
 * test's temporary directory. */
#include <stdarg.h>
#include <sys/stat.h>

#include "test.h"

/* Runs a shell command from the repository root; its stdout (at most
 * CAP - 1 bytes, trailing newlines cut) goes to OUT, its stderr to the
 * test's log. Returns the exit status, -1 if it did not exit. */
static int capture(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int capture(char *out, size_t cap, const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  fflush(stdout);
  FILE *p = popen(cmd, "r");
  ASSERT(p != NULL);
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = 0;
  while (n && out[n - 1] == '\n') out[--n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void source_version(char *out, size_t cap) {
  ASSERT_EQ(capture(out, cap, "sed -n 's/^#define DIVAN_VERSION \"\\(.*\\)\"$/\\1/p' src/main.c"), 0);
  ASSERT(out[0]);
}

static const char *bin(void) {
  const char *b = getenv("DIVAN_BIN");
  ASSERTF(b != NULL, "DIVAN_BIN is not set (make test sets it)");
  return b;
}

/* LINE is one of the lines of TEXT */
static int has_line(const char *text, const char *line) {
  size_t n = strlen(line);
  for (const char *p = text; (p = strstr(p, line)); p += n)
    if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n])) return 1;
  return 0;
}

/* DEPS (a Depends field) names package NAME, with or without a version */
static int depends_on(const char *deps, const char *name) {
  size_t n = strlen(name);
  for (const char *p = deps; (p = strstr(p, name)); p += n)
    if ((p == deps || p[-1] == ' ') && (!p[n] || p[n] == ',' || p[n] == ' ')) return 1;
  return 0;
}

/* The package, built once per test that needs it; its path in DEB. */
static void build_deb(char *deb, size_t cap) {
  char log[8192];
  int rc = capture(log, sizeof log, "sh packaging/mkdeb.sh '%s' '%s/deb' 2>&1", bin(), test_tmpdir());
  ASSERTF(rc == 0, "mkdeb.sh failed (%d):\n%s", rc, log);
  const char *last = strrchr(log, '\n');
  const char *path = last ? last + 1 : log;
  ASSERT(strlen(path) < cap);
  memcpy(deb, path, strlen(path) + 1);
  char v[64], arch[64], want[512];
  source_version(v, sizeof v);
  ASSERT_EQ(capture(arch, sizeof arch, "dpkg --print-architecture"), 0);
  snprintf(want, sizeof want, "%s/deb/divan_%s_%s.deb", test_tmpdir(), v, arch);
  ASSERT_STR_EQ(deb, want);
}

static void check_unit(const char *x);

TEST(pkg_deb) {
  static char deb[1024], text[65536], want[4096];
  build_deb(deb, sizeof deb);

  /* the files, root's, with their modes */
  ASSERT_EQ(capture(text, sizeof text, "dpkg-deb -c '%s' | awk '{print $1, $2, $6}'", deb), 0);
  static const char *const files[] = {
      "-rwxr-xr-x root/root ./usr/bin/divan",
      "-rw-r--r-- root/root ./usr/lib/systemd/system/divan.service",
      "-rw-r----- root/root ./etc/divan/local.ini",
      "-rw-r--r-- root/root ./usr/share/doc/divan/README.md",
  };
  for (size_t i = 0; i < sizeof files / sizeof *files; i++)
    ASSERTF(has_line(text, files[i]), "'%s' is not in dpkg-deb -c:\n%s", files[i], text);

  /* the fields: version from the source, this machine's architecture */
  char v[64], arch[64];
  source_version(v, sizeof v);
  ASSERT_EQ(capture(arch, sizeof arch, "dpkg --print-architecture"), 0);
  ASSERT_EQ(capture(text, sizeof text, "dpkg-deb -f '%s' Package Version Architecture Maintainer", deb), 0);
  snprintf(want, sizeof want, "Package: divan\nVersion: %s\nArchitecture: %s\nMaintainer: ", v, arch);
  ASSERTF(!strncmp(text, want, strlen(want)), "dpkg-deb -f gave:\n%s", text);

  /* Depends names the package of every library the binary links (read
   * from the binary: its NEEDED entries, where ldd finds them, whose
   * package dpkg -S names, under /lib or /usr/lib), and procps (/bin/kill) */
  static char deps[4096], pkgs[4096];
  ASSERT_EQ(capture(deps, sizeof deps, "dpkg-deb -f '%s' Depends", deb), 0);
  ASSERT_EQ(capture(pkgs, sizeof pkgs,
                    "b='%s'; found=$(ldd \"$b\"); paths=; for l in $(objdump -p \"$b\" | awk '/NEEDED/{print $2}'); do "
                    "p=$(echo \"$found\" | awk -v l=\"$l\" '$1==l{print $3}'); [ -n \"$p\" ] || { echo \"no $l\" >&2; exit 1; }; "
                    "paths=\"$paths $p /usr${p#/usr}\"; [ \"${p#/usr/}\" = \"$p\" ] || paths=\"$paths ${p#/usr}\"; done; "
                    "dpkg -S $paths 2>/dev/null | cut -d: -f1 | sort -u",
                    bin()),
            0);
  int n = 0;
  for (char *save, *p = strtok_r(pkgs, "\n", &save); p; p = strtok_r(NULL, "\n", &save), n++)
    ASSERTF(depends_on(deps, p), "Depends lacks %s (the binary links a library of it):\n%s", p, deps);
  static const char *const named[] = {"librocksdb", "libmicrohttpd", "libmozjs-102", "libssl3", "libcurl",
                                      "libicu", "zlib1g", "procps"};
  for (size_t i = 0; i < sizeof named / sizeof *named; i++)
    ASSERTF(strstr(deps, named[i]) != NULL, "Depends lacks %s:\n%s", named[i], deps);
  ASSERT(depends_on(deps, "procps"));

  /* conffiles and the maintainer scripts */
  char ctl[512];
  snprintf(ctl, sizeof ctl, "%s/control", test_tmpdir());
  ASSERT_EQ(test_sh("dpkg-deb -e '%s' '%s'", deb, ctl), 0);
  ASSERT_EQ(capture(text, sizeof text, "cat '%s/conffiles'", ctl), 0);
  ASSERT_STR_EQ(text, "/etc/divan/local.ini");
  static const char *const scripts[] = {"postinst", "prerm", "postrm"};
  for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", ctl, scripts[i]);
    struct stat st;
    ASSERT_OK(stat(p, &st));
    ASSERTF((st.st_mode & 0777) == 0755, "%s is mode %o", scripts[i], st.st_mode & 0777);
    ASSERT_EQ(capture(text, sizeof text, "head -n 1 '%s'", p), 0);
    ASSERT_STR_EQ(text, "#!/bin/sh");
    ASSERTF(test_sh("sh -n '%s'", p) == 0, "%s: sh -n fails", scripts[i]);
  }
  ASSERT_EQ(capture(text, sizeof text, "cat '%s/postinst'", ctl), 0);
  ASSERT(strstr(text, "useradd --system") && strstr(text, "own /var/lib/divan 0750"));
  ASSERT_EQ(capture(text, sizeof text, "cat '%s/postrm'", ctl), 0);
  ASSERT(strstr(text, "purge)") && strstr(text, "rm -rf /var/lib/divan /etc/divan"));

  /* the packaged binary runs and is this version */
  char x[512];
  snprintf(x, sizeof x, "%s/x", test_tmpdir());
  ASSERT_EQ(test_sh("dpkg-deb -x '%s' '%s'", deb, x), 0);
  ASSERT_EQ(capture(text, sizeof text, "'%s/usr/bin/divan' --version", x), 0);
  snprintf(want, sizeof want, "divan %s", v);
  ASSERT_STR_EQ(text, want);
  check_unit(x);
}

/* The unit as the package ships it (extracted in X): what it runs, how, and under which
 * limits; the flags of ExecStart are the binary's; systemd-analyze verify
 * finds nothing to say (its only change: ExecStart's binary is the
 * extracted one, as /usr/bin/divan is not on this machine). */
static void check_unit(const char *x) {
  static char unit[8192], text[8192];
  ASSERT_EQ(capture(unit, sizeof unit, "cat '%s/usr/lib/systemd/system/divan.service'", x), 0);
  static const char *const lines[] = {
      "Type=simple",
      "User=divan",
      "Group=divan",
      "ExecStart=/usr/bin/divan serve --data /var/lib/divan --config /etc/divan/local.ini",
      "ExecReload=/bin/kill -HUP $MAINPID",
      "Restart=on-failure",
      "NoNewPrivileges=yes",
      "ProtectSystem=strict",
      "ReadWritePaths=/var/lib/divan /etc/divan",
      "PrivateTmp=yes",
      "ProtectHome=yes",
      "LimitNOFILE=65536",
      "WantedBy=multi-user.target",
  };
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
    ASSERTF(has_line(unit, lines[i]), "the unit lacks '%s':\n%s", lines[i], unit);

  /* ExecStart's flags: the parser takes them and stops at the next one */
  ASSERT_EQ(capture(text, sizeof text,
                    "'%s/usr/bin/divan' serve --data /var/lib/divan --config /etc/divan/local.ini --zz-no-such-flag "
                    "2>&1; echo \"exit $?\"", x),
            0);
  ASSERT_STR_EQ(text, "divan: unknown option '--zz-no-such-flag'; see divan serve --help\nexit 2");

  ASSERTF(test_sh("command -v systemd-analyze >/dev/null") == 0,
          "systemd-analyze is not installed (Debian package systemd): the unit was not verified");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/unit", test_tmpdir());
  ASSERT_OK(mkdir(dir, 0755));
  ASSERT_EQ(test_sh("sed 's|^ExecStart=/usr/bin/divan |ExecStart=%s/usr/bin/divan |' "
                    "'%s/usr/lib/systemd/system/divan.service' >'%s/divan.service'",
                    x, x, dir),
            0);
  int rc = capture(text, sizeof text, "SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no '%s/divan.service' 2>&1", dir);
  ASSERTF(rc == 0 && !text[0], "systemd-analyze verify (exit %d):\n%s", rc, text);
  /* verify catches what it should: an unknown key */
  ASSERT_EQ(test_sh("printf 'NoSuchKey=1\\n' >>'%s/divan.service'", dir), 0);
  capture(text, sizeof text, "SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no '%s/divan.service' 2>&1", dir);
  ASSERTF(strstr(text, "NoSuchKey") != NULL, "systemd-analyze verify did not see a bad key: %s", text);
}

/* make install and make uninstall under DESTDIR, both prefixes; the
 * binary is not rebuilt (make -o: this build's, as make test made it). */
static int make(char *out, size_t cap, const char *args) {
  const char *build = getenv("DV_BUILD");
  ASSERTF(build != NULL, "DV_BUILD is not set (make test sets it)");
  return capture(out, cap, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -o '%s/divan' BUILD='%s' %s 2>&1", build,
                 build, args);
}

static void layout(const char *root, const char *want) {
  static char text[8192];
  ASSERT_EQ(capture(text, sizeof text, "cd '%s' && find . -type f -printf '%%m %%p\\n' | sort", root), 0);
  ASSERT_STR_EQ(text, want);
}

TEST(pkg_make_install) {
  static char out[8192], text[8192];
  char d[512], cmd[1024];
  snprintf(d, sizeof d, "%s/usr", test_tmpdir());
  snprintf(cmd, sizeof cmd, "install DESTDIR='%s' PREFIX=/usr FAUXTON='%s/no-fauxton'", d, test_tmpdir());
  ASSERTF(make(out, sizeof out, cmd) == 0, "make %s:\n%s", cmd, out);
  ASSERTF(strstr(out, "no Fauxton build at") != NULL, "no word of the missing Fauxton:\n%s", out);
  layout(d, "640 ./etc/divan/local.ini\n"
            "644 ./usr/lib/systemd/system/divan.service\n"
            "644 ./usr/share/doc/divan/README.md\n"
            "755 ./usr/bin/divan");
  ASSERT_EQ(test_sh("cmp '%s' '%s/usr/bin/divan'", bin(), d), 0);
  ASSERT_EQ(test_sh("cmp packaging/local.ini '%s/etc/divan/local.ini'", d), 0);
  ASSERT_EQ(capture(text, sizeof text, "grep '^ExecStart=' '%s/usr/lib/systemd/system/divan.service'", d), 0);
  ASSERT_STR_EQ(text, "ExecStart=/usr/bin/divan serve --data /var/lib/divan --config /etc/divan/local.ini");

  /* again, over an edited config, with a Fauxton build: the config is kept */
  ASSERT_EQ(test_sh("echo '; mine' >>'%s/etc/divan/local.ini' && mkdir -p '%s/fx/js' && echo '<html>' >'%s/fx/index.html' "
                    "&& echo 'x' >'%s/fx/js/app.js'",
                    d, test_tmpdir(), test_tmpdir(), test_tmpdir()),
            0);
  snprintf(cmd, sizeof cmd, "install DESTDIR='%s' PREFIX=/usr FAUXTON='%s/fx'", d, test_tmpdir());
  ASSERTF(make(out, sizeof out, cmd) == 0, "make %s:\n%s", cmd, out);
  ASSERTF(strstr(out, "kept") != NULL, "no word of the kept config:\n%s", out);
  ASSERT_EQ(capture(text, sizeof text, "tail -n 1 '%s/etc/divan/local.ini'", d), 0);
  ASSERT_STR_EQ(text, "; mine");
  layout(d, "640 ./etc/divan/local.ini\n"
            "644 ./usr/lib/systemd/system/divan.service\n"
            "644 ./usr/share/divan/www/index.html\n"
            "644 ./usr/share/divan/www/js/app.js\n"
            "644 ./usr/share/doc/divan/README.md\n"
            "755 ./usr/bin/divan");

  /* uninstall: the config stays */
  snprintf(cmd, sizeof cmd, "uninstall DESTDIR='%s' PREFIX=/usr", d);
  ASSERTF(make(out, sizeof out, cmd) == 0, "make %s:\n%s", cmd, out);
  layout(d, "640 ./etc/divan/local.ini");

  /* the default prefix: /usr/local, the config still in /etc */
  snprintf(d, sizeof d, "%s/local", test_tmpdir());
  snprintf(cmd, sizeof cmd, "install DESTDIR='%s' FAUXTON='%s/no-fauxton'", d, test_tmpdir());
  ASSERTF(make(out, sizeof out, cmd) == 0, "make %s:\n%s", cmd, out);
  layout(d, "640 ./etc/divan/local.ini\n"
            "644 ./usr/local/lib/systemd/system/divan.service\n"
            "644 ./usr/local/share/doc/divan/README.md\n"
            "755 ./usr/local/bin/divan");
  ASSERT_EQ(capture(text, sizeof text, "grep '^ExecStart=' '%s/usr/local/lib/systemd/system/divan.service'", d), 0);
  ASSERT_STR_EQ(text, "ExecStart=/usr/local/bin/divan serve --data /var/lib/divan --config /etc/divan/local.ini");
}

/* The shipped local.ini as the service uses it: divan serve starts on it,
 * writes the admin it creates and the cookie secret into it, and keeps
 * its comments. */
TEST(pkg_default_config) {
  static char text[16384];
  const char *t = test_tmpdir();
  ASSERT_EQ(test_sh("mkdir -p '%s/etc' && cp packaging/local.ini '%s/etc/local.ini'", t, t), 0);
  int rc = capture(text, sizeof text,
                   "cd '%s' && { '%s' serve --data data --config etc/local.ini --port 0 >out 2>err & pid=$!; "
                   "i=0; until grep -q 'listening on' out; do i=$((i+1)); "
                   "if [ $i -gt 300 ] || ! kill -0 $pid 2>/dev/null; then cat out err; exit 1; fi; sleep 0.1; done; "
                   "kill -TERM $pid; wait $pid; echo \"exit $?\"; }",
                   t, bin());
  ASSERTF(rc == 0, "divan serve on the shipped local.ini (%d):\n%s", rc, text);
  ASSERT_STR_EQ(text, "exit 0");
  ASSERT_EQ(capture(text, sizeof text, "cat '%s/out'", t), 0);
  ASSERTF(strstr(text, "created server admin \"admin\"") && strstr(text, "etc/local.ini"), "%s", text);
  ASSERT_EQ(capture(text, sizeof text, "cat '%s/etc/local.ini'", t), 0);
  ASSERTF(strstr(text, "\nadmin = -pbkdf2") != NULL, "no admin hash in local.ini:\n%s", text);
  ASSERTF(strstr(text, "[chttpd_auth]") && strstr(text, "secret = "), "no cookie secret in local.ini:\n%s", text);
  ASSERTF(strstr(text, ";admin = a long password") != NULL, "the comments are gone:\n%s", text);
}
