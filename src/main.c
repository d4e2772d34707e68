/* main.c — the `divan` command line: serve, and tools.
 *
 *   divan serve [--data DIR] [--bind ADDR] [--port N] [--threads N] ...
 *   divan inspect [--data DIR] [--db NAME]
 *   divan check [--data DIR | --fdb [CLUSTER_FILE]] [--db NAME]
 *   divan dump [--data DIR | --fdb [CLUSTER_FILE]] [-o FILE] DB
 *   divan load [--data DIR | --fdb [CLUSTER_FILE]] [-i FILE] DB
 *   divan move [--then keep|rename|delete] SRC DB DST [NEWNAME]
 *   divan --help | --version | COMMAND --help
 *
 * Commands and their flags are tables ("the command line" below), read
 * by the parser and by --help alike.
 * This file parses arguments and hands off to the layers; it holds no
 * database logic of its own.
 */
#include <errno.h>
#include <malloc.h>
#include <execinfo.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "cli/check.h"
#include "cli/dump.h"
#include "cli/inspect.h"
#include "api/api.h"
#include "auth/auth.h"
#include "auth/crypto.h"
#include "http/http.h"
#include "index/jsddoc.h"
#include "index/mindex.h"
#include "index/view.h"
#include "store/clustercfg.h"
#include "store/dump.h"
#include "index/qs.h"
#include "kv/kv.h"
#include "repl/repl.h"
#include "store/store.h"
#include "util/alloc.h"
#include "util/config.h"
#include "util/log.h"

#define DIVAN_VERSION "0.1.0"

/* ---- the command line -----------------------------------------------------------
 *
 * Every command and every flag is declared once, in the tables below
 * (serve_flags, inspect_flags, main_flags, commands): the parser
 * (parse_flags) and --help (print_command) both read them, so a flag
 * cannot be accepted without being listed, nor listed without being
 * accepted; test/cli/test_cli.c holds every "--flag" written in this
 * file against both. A value is checked here, before anything starts: an
 * unknown flag, a missing value or a bad one is one line on stderr
 * ("divan: …; see divan CMD --help") and exit status 2. A value follows
 * its flag (--port 5984) or is joined to it (--port=5984). */

struct serve_opts {
  const char *data;    /* data directory */
  const char *bind;    /* listen address */
  int port;            /* listen port (0: any free port) */
  const char *config;  /* ini file, or NULL */
  int threads;         /* HTTP pool threads, 0 = default */
  size_t max_body;     /* max_http_request_size, 0 = default */
  size_t max_doc;      /* max_document_size, 0 = default */
  int idle_timeout;    /* seconds before an idle connection is closed, 0 = default */
  int head_timeout;    /* seconds a request head may take, 0 = default */
  int body_timeout;    /* [chttpd] request_body_timeout: seconds of grace for a body, 0 = default */
  int body_min_rate;   /* [chttpd] request_body_min_rate: bytes/s a body must keep up past it, 0 = default */
  int send_timeout;    /* [chttpd] send_timeout: seconds a response may wait for its reader, 0 = default */
  int max_conns;       /* client connections, 0 = default */
  int max_conns_ip;    /* client connections from one address, 0 = default, -1 = no limit */
  int64_t reserve_mb;  /* [rocksdb] free_space_reserve_mb: 0 = default, -1 = none */
  size_t memory_mb;    /* [divan] memory_limit, in MiB: 0 = KV_ROCKS_MEMORY_MB */
  int given;           /* GIVEN_*: set on the command line */
  int fdb;             /* 1: run on FoundationDB (--fdb or [fdb] cluster_file) */
  const char *cluster_file; /* --fdb's cluster file, NULL = FDB's default */
  const char *fdb_library;  /* libfdb_c to load, NULL = "libfdb_c.so" */
};

struct inspect_opts {
  const char *data; /* data directory */
  const char *db;   /* only this database's keys, or NULL */
};

struct check_opts {
  const char *data;         /* data directory */
  const char *db;           /* only this database, or NULL */
  const char *cluster_file; /* --fdb's cluster file, NULL = FDB's default */
  const char *fdb_library;  /* libfdb_c to load, NULL = the default */
};

struct dump_opts {
  const char *data;         /* data directory */
  const char *db;           /* the database (--db, or the last argument) */
  const char *file;         /* -o / -i FILE, NULL = stdout / stdin */
  const char *cluster_file; /* --fdb's cluster file, NULL = FDB's default */
  const char *fdb_library;  /* libfdb_c to load, NULL = the default */
};

struct move_opts {
  const char *then;         /* keep | rename | delete */
  const char *fdb_library;  /* libfdb_c to load, NULL = the default */
};

enum { GIVEN_BIND = 1, GIVEN_PORT = 2, GIVEN_FDB_LIB = 4, GIVEN_FDB = 8, GIVEN_CONNS_IP = 16, GIVEN_RESUME = 32 };

enum flag_kind {
  FLAG_HELP,    /* print the command's help and exit 0 */
  FLAG_VERSION, /* print the version and exit 0 */
  FLAG_STR,     /* a non-empty string, stored as const char * */
  FLAG_OPT_STR, /* the same, but it may be left out (--fdb [FILE]) */
  FLAG_INT,     /* a decimal integer in lo..hi, stored as int */
  FLAG_SIZE,    /* a decimal integer in lo..hi, stored as size_t */
  FLAG_SWITCH,  /* no value: only its GIVEN_* bit */
};

typedef struct cli_flag {
  const char *name;  /* "--port"; NULL ends a table */
  const char *alias; /* another spelling ("-h"), or NULL */
  const char *value; /* the value's name in --help ("N"), NULL when it takes none */
  int kind;          /* FLAG_* */
  long long lo, hi;  /* a number's range, both ends allowed */
  size_t off;        /* where the value goes in the command's options */
  int given;         /* GIVEN_* bit set when the flag is on the command line */
  const char *help;  /* what it does, for --help (one line) */
} cli_flag;

typedef struct cli_cmd cli_cmd;
struct cli_cmd {
  const char *name;      /* "serve"; NULL ends the table */
  const char *summary;   /* one line, for --help */
  const char *notes;     /* more, for --help, or NULL */
  const cli_flag *flags; /* its flags */
  int (*run)(const cli_cmd *cmd, int argc, char **argv); /* exit status */
};

#define SERVE(f) offsetof(struct serve_opts, f)
#define INSPECT(f) offsetof(struct inspect_opts, f)
#define CHECK(f) offsetof(struct check_opts, f)
#define DUMP(f) offsetof(struct dump_opts, f)
#define MOVE(f) offsetof(struct move_opts, f)
#define HELP_FLAG {"--help", "-h", NULL, FLAG_HELP, 0, 0, 0, 0, "this text"}

static const cli_flag serve_flags[] = {
    {"--data", NULL, "DIR", FLAG_STR, 0, 0, SERVE(data), 0,
     "data directory: the embedded store, and local.ini without --config (default ./data)"},
    {"--config", NULL, "FILE", FLAG_STR, 0, 0, SERVE(config), 0,
     "the ini file (default DATA/local.ini, created on its first write)"},
    {"--bind", NULL, "ADDR", FLAG_STR, 0, 0, SERVE(bind), GIVEN_BIND,
     "listen address (default 127.0.0.1; ini [chttpd] bind_address)"},
    {"--port", NULL, "N", FLAG_INT, 0, 65535, SERVE(port), GIVEN_PORT,
     "listen port; 0 takes a free one, named on stdout (default 5984; [chttpd] port)"},
    {"--threads", NULL, "N", FLAG_INT, 1, 1024, SERVE(threads), 0,
     "HTTP pool threads (default 4 per core; [chttpd] server_threads)"},
    {"--max-request-size", NULL, "BYTES", FLAG_SIZE, 1, (long long)1 << 40, SERVE(max_body), 0,
     "bigger bodies get 413 (default 67108864; [chttpd] max_http_request_size)"},
    {"--max-document-size", NULL, "BYTES", FLAG_SIZE, 1, (long long)1 << 40, SERVE(max_doc), 0,
     "bigger documents get 413 (default 1000000; [couchdb] max_document_size)"},
    {"--idle-timeout", NULL, "SECONDS", FLAG_INT, 1, 86400, SERVE(idle_timeout), 0,
     "an idle connection is closed after it (default 300; [chttpd] idle_timeout)"},
    {"--request-head-timeout", NULL, "SECONDS", FLAG_INT, 1, 86400, SERVE(head_timeout), 0,
     "time for a request head, then 408 (default 30; [chttpd] request_head_timeout)"},
    {"--max-connections", NULL, "N", FLAG_INT, 1, 1000000, SERVE(max_conns), 0,
     "open client connections (default 10000; [chttpd] max_connections)"},
    {"--max-connections-per-client", NULL, "N", FLAG_INT, 0, 1000000, SERVE(max_conns_ip), GIVEN_CONNS_IP,
     "connections from one address; 0: no limit (default 1000; [chttpd] max_connections_per_client)"},
    {"--fdb", NULL, "[CLUSTER_FILE]", FLAG_OPT_STR, 0, 0, SERVE(cluster_file), GIVEN_FDB,
     "run on a FoundationDB cluster (default: FDB's own cluster file; [fdb] cluster_file)"},
    {"--fdb-library", NULL, "PATH", FLAG_STR, 0, 0, SERVE(fdb_library), GIVEN_FDB_LIB,
     "the libfdb_c to load (default libfdb_c.so; [fdb] library)"},
    HELP_FLAG,
    {NULL, NULL, NULL, 0, 0, 0, 0, 0, NULL},
};

static const cli_flag inspect_flags[] = {
    {"--data", NULL, "DIR", FLAG_STR, 0, 0, INSPECT(data), 0, "data directory (default ./data)"},
    {"--db", NULL, "NAME", FLAG_STR, 0, 0, INSPECT(db), 0, "only this database's keys"},
    HELP_FLAG,
    {NULL, NULL, NULL, 0, 0, 0, 0, 0, NULL},
};

static const cli_flag check_flags[] = {
    {"--data", NULL, "DIR", FLAG_STR, 0, 0, CHECK(data), 0, "data directory (default ./data)"},
    {"--db", NULL, "NAME", FLAG_STR, 0, 0, CHECK(db), 0, "only this database (and its indexes)"},
    {"--fdb", NULL, "[CLUSTER_FILE]", FLAG_OPT_STR, 0, 0, CHECK(cluster_file), GIVEN_FDB,
     "check a FoundationDB cluster's store (default: FDB's own cluster file)"},
    {"--fdb-library", NULL, "PATH", FLAG_STR, 0, 0, CHECK(fdb_library), GIVEN_FDB_LIB,
     "the libfdb_c to load (default libfdb_c.so)"},
    HELP_FLAG,
    {NULL, NULL, NULL, 0, 0, 0, 0, 0, NULL},
};

static const cli_flag dump_flags[] = {
    {"--data", NULL, "DIR", FLAG_STR, 0, 0, DUMP(data), 0, "data directory (default ./data)"},
    {"--db", NULL, "NAME", FLAG_STR, 0, 0, DUMP(db), 0, "the database (or give it as the last argument)"},
    {"--output", "-o", "FILE", FLAG_STR, 0, 0, DUMP(file), 0, "write the dump to FILE (default stdout)"},
    {"--resume", NULL, NULL, FLAG_SWITCH, 0, 0, 0, GIVEN_RESUME,
     "go on with the interrupted dump in -o FILE from its last checkpoint"},
    {"--fdb", NULL, "[CLUSTER_FILE]", FLAG_OPT_STR, 0, 0, DUMP(cluster_file), GIVEN_FDB,
     "dump from a FoundationDB cluster's store (default: FDB's own cluster file)"},
    {"--fdb-library", NULL, "PATH", FLAG_STR, 0, 0, DUMP(fdb_library), GIVEN_FDB_LIB,
     "the libfdb_c to load (default libfdb_c.so)"},
    HELP_FLAG,
    {NULL, NULL, NULL, 0, 0, 0, 0, 0, NULL},
};

static const cli_flag load_flags[] = {
    {"--data", NULL, "DIR", FLAG_STR, 0, 0, DUMP(data), 0, "data directory, created if missing (default ./data)"},
    {"--db", NULL, "NAME", FLAG_STR, 0, 0, DUMP(db), 0, "the new database (or give it as the last argument)"},
    {"--input", "-i", "FILE", FLAG_STR, 0, 0, DUMP(file), 0, "read the dump from FILE (default stdin)"},
    {"--resume", NULL, NULL, FLAG_SWITCH, 0, 0, 0, GIVEN_RESUME,
     "go on with the interrupted load of DB from this dump: what it wrote is read, not written again"},
    {"--fdb", NULL, "[CLUSTER_FILE]", FLAG_OPT_STR, 0, 0, DUMP(cluster_file), GIVEN_FDB,
     "load into a FoundationDB cluster's store (default: FDB's own cluster file)"},
    {"--fdb-library", NULL, "PATH", FLAG_STR, 0, 0, DUMP(fdb_library), GIVEN_FDB_LIB,
     "the libfdb_c to load (default libfdb_c.so)"},
    HELP_FLAG,
    {NULL, NULL, NULL, 0, 0, 0, 0, 0, NULL},
};

static const cli_flag move_flags[] = {
    {"--then", NULL, "keep|rename|delete", FLAG_STR, 0, 0, MOVE(then), 0,
     "what becomes of the source once the target has it (default keep)"},
    {"--fdb-library", NULL, "PATH", FLAG_STR, 0, 0, MOVE(fdb_library), GIVEN_FDB_LIB,
     "the libfdb_c to load for an fdb: store (default libfdb_c.so)"},
    {"--resume", NULL, NULL, FLAG_SWITCH, 0, 0, 0, GIVEN_RESUME,
     "go on with an interrupted move into NEWNAME from its last checkpoint"},
    HELP_FLAG,
    {NULL, NULL, NULL, 0, 0, 0, 0, 0, NULL},
};

/* divan's own flags, before any command */
static const cli_flag main_flags[] = {
    {"--help", "-h", NULL, FLAG_HELP, 0, 0, 0, 0, "this text; divan COMMAND --help: one command's"},
    {"--version", NULL, NULL, FLAG_VERSION, 0, 0, 0, 0, "print the version"},
    {NULL, NULL, NULL, 0, 0, 0, 0, 0, NULL},
};

static void print_flags(FILE *out, const cli_flag *f) {
  for (; f->name; f++) {
    char head[96];
    int n = snprintf(head, sizeof head, "  %s%s%s%s%s", f->alias ? f->alias : "", f->alias ? ", " : "", f->name,
                     f->value ? " " : "", f->value ? f->value : "");
    if (f->kind == FLAG_INT || f->kind == FLAG_SIZE)
      snprintf(head + n, sizeof head - (size_t)n, "  (%lld..%lld)", f->lo, f->hi);
    fprintf(out, "%s\n      %s\n", head, f->help);
  }
}

static void print_command(FILE *out, const cli_cmd *c) {
  fprintf(out, "usage: divan %s [OPTION]...\n  %s\n", c->name, c->summary);
  if (c->notes) fprintf(out, "%s", c->notes);
  fprintf(out, "options:\n");
  print_flags(out, c->flags);
}

static int parse_num(const char *s, long long lo, long long hi, long long *out) {
  char *end;
  if (*s < '0' || *s > '9') return -1; /* no sign, no space */
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

enum { PARSED = -1 }; /* parse_flags: run the command */

/* Reads ARGV into OPTS by CMD's flags (the main_flags when CMD is NULL).
 * Returns PARSED, or the exit status: 0 once --help or --version has
 * printed, 2 after one line on stderr. */
static int parse_flags(const cli_cmd *cmd, const cli_flag *flags, int argc, char **argv, void *opts,
                       int *given);

static int cmd_serve(const cli_cmd *cmd, int argc, char **argv);
static int cmd_inspect(const cli_cmd *cmd, int argc, char **argv);
static int cmd_check(const cli_cmd *cmd, int argc, char **argv);
static int cmd_dump(const cli_cmd *cmd, int argc, char **argv);
static int cmd_load(const cli_cmd *cmd, int argc, char **argv);
static int cmd_move(const cli_cmd *cmd, int argc, char **argv);

static const cli_cmd commands[] = {
    {"serve", "start the server: CouchDB's HTTP API over the store in --data or a FoundationDB cluster",
     "  The ini file is --config FILE or DATA/local.ini; a flag wins over it for the run.\n"
     "  DIVAN_ADMIN=name:password adds a server admin for this run; with no admin at\n"
     "  all, one is created and its password printed once. The line \"divan: listening\n"
     "  on http://HOST:PORT/\" on stdout says where it listens; SIGINT and SIGTERM stop it.\n",
     serve_flags, cmd_serve},
    {"inspect", "print every key and value of the store decoded as tuples",
     "  One line per key, in key order; the server must not be running.\n", inspect_flags, cmd_inspect},
    {"check", "verify every invariant of the store's key layout and its indexes",
     "  One line per problem, then what was checked; exit status 0 when clean, 1 when a\n"
     "  problem was found, 2 when the store cannot be opened. The server must not be\n"
     "  running on --data (a running server answers GET /_node/_local/_check).\n",
     check_flags, cmd_check},
    {"dump", "write one database to a dump file: every key, revision, attachment and changes row",
     "  divan dump --data DIR|--fdb [CLUSTER_FILE] DB > FILE. The file is versioned,\n"
     "  checksummed and compressed (README \"Dump and load\"); the database may take writes\n"
     "  meanwhile (FoundationDB): they are caught up. divan dump --resume -o FILE DB goes on\n"
     "  with a dump to FILE that was cut (killed, a full disk) from its last checkpoint.\n"
     "  Exit status 0 done, 1 the database kept changing or FILE cannot be resumed, 2 usage,\n"
     "  open errors or no such database.\n",
     dump_flags, cmd_dump},
    {"load", "load a dump file as a new database, keeping its sequences",
     "  divan load --data DIR|--fdb [CLUSTER_FILE] DB < FILE. DB must not exist; nothing is\n"
     "  visible until the whole file is in. A load killed midway goes on with\n"
     "  divan load --resume -i FILE DB (the same file). Exit status 0 done, 1 the file was\n"
     "  refused (damaged, truncated, a newer format, another dump than the one resumed) or\n"
     "  DB exists, 2 usage or open errors.\n",
     load_flags, cmd_load},
    {"move", "move a database to another store (or name) without a file, keeping its sequences",
     "  divan move SRC DB DST [NEWNAME], a store being data:DIR or fdb:[CLUSTER_FILE]. The\n"
     "  source stays writable while it is copied, then refuses writes (503) during a short\n"
     "  last catch-up; once the target has it the source is kept (writable again: a copy),\n"
     "  renamed to DB_moved_<unix seconds> or deleted (--then). NEWNAME must not exist.\n"
     "  A move whose source side failed, or that was killed, keeps what it copied: the\n"
     "  same command with --resume goes on from there.\n"
     "  Exit status 0 done, 1 refused (the target exists, the database kept changing),\n"
     "  2 usage, open errors or no such database.\n",
     move_flags, cmd_move},
    {NULL, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out) {
  fprintf(out, "divan %s — a CouchDB-compatible document database\n\n", DIVAN_VERSION);
  fprintf(out, "usage: divan COMMAND [OPTION]...\n       divan [OPTION]\n\ncommands:\n");
  for (const cli_cmd *c = commands; c->name; c++) fprintf(out, "  %-8s %s\n", c->name, c->summary);
  fprintf(out, "options:\n");
  print_flags(out, main_flags);
  for (const cli_cmd *c = commands; c->name; c++) {
    fputc('\n', out);
    print_command(out, c);
  }
}

/* "see divan serve --help" */
static const char *hint(const cli_cmd *cmd) {
  static char b[64];
  snprintf(b, sizeof b, "see divan%s%s --help", cmd ? " " : "", cmd ? cmd->name : "");
  return b;
}

static int parse_flags(const cli_cmd *cmd, const cli_flag *flags, int argc, char **argv, void *opts,
                       int *given) {
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *eq = strncmp(a, "--", 2) ? NULL : strchr(a, '=');
    size_t alen = eq ? (size_t)(eq - a) : strlen(a);
    const cli_flag *f = flags;
    while (f->name && !((strlen(f->name) == alen && !strncmp(a, f->name, alen)) ||
                        (f->alias && !eq && !strcmp(a, f->alias))))
      f++;
    if (!f->name) {
      fprintf(stderr, "divan: unknown option '%.*s'; %s\n", (int)alen, a, hint(cmd));
      return 2;
    }
    if (!f->value && eq) {
      fprintf(stderr, "divan: %s takes no value; %s\n", f->name, hint(cmd));
      return 2;
    }
    if (f->kind == FLAG_HELP) {
      if (cmd) print_command(stdout, cmd);
      else usage(stdout);
      return 0;
    }
    if (f->kind == FLAG_VERSION) {
      printf("divan %s\n", DIVAN_VERSION);
      return 0;
    }
    *given |= f->given;
    if (f->kind == FLAG_SWITCH) continue;
    const char *v = eq ? eq + 1 : NULL;
    if (!v && i + 1 < argc && strncmp(argv[i + 1], "--", 2)) v = argv[++i];
    if (!v && f->kind == FLAG_OPT_STR) continue;
    if (!v) {
      fprintf(stderr, "divan: %s needs a value (%s); %s\n", f->name, f->value, hint(cmd));
      return 2;
    }
    long long n = 0;
    int bad = f->kind == FLAG_INT || f->kind == FLAG_SIZE ? parse_num(v, f->lo, f->hi, &n) : !*v;
    if (bad) {
      if (f->kind == FLAG_INT || f->kind == FLAG_SIZE)
        fprintf(stderr, "divan: bad %s '%s': an integer from %lld to %lld; %s\n", f->name, v, f->lo, f->hi,
                hint(cmd));
      else fprintf(stderr, "divan: bad %s '': it must not be empty; %s\n", f->name, hint(cmd));
      return 2;
    }
    char *at = (char *)opts + f->off; /* opts is NULL only for main_flags, which take no value */
    if (f->kind == FLAG_INT) *(int *)(void *)at = (int)n;
    else if (f->kind == FLAG_SIZE) *(size_t *)(void *)at = (size_t)n;
    else *(const char **)(void *)at = v;
  }
  return PARSED;
}

/* ---- configuration ------------------------------------------------------------
 *
 * The ini file is --config FILE or DATA/local.ini (created when something
 * is first written to it). Command-line flags win over it, then it wins
 * over the defaults; DIVAN_ADMIN=name:password adds a server admin for
 * this run only (kept in memory, hashed). Settings read here:
 *
 *   [chttpd] bind_address, port, max_http_request_size, server_threads,
 *            idle_timeout, request_head_timeout, request_body_timeout,
 *            request_body_min_rate, send_timeout, max_connections,
 *            max_connections_per_client (0: no limit)
 *   [couchdb] max_document_size
 *   [rocksdb] free_space_reserve_mb (0: no reserve)
 *   [divan] memory_limit (bytes, or with a K, M or G suffix: KiB, MiB, GiB)
 * (the rest are read where they are used: auth.c, server.c's CORS). */

/* A flag given on the command line becomes an in-memory override, so
 * /_config shows what runs; otherwise the file's value is used. */
static int opt_str(dv_config *c, const char *sec, const char *key, const char **io, int given) {
  if (given) return config_set(c, sec, key, *io, 0, NULL);
  char *v = config_get(c, sec, key);
  if (v) *io = v; /* kept for the process's life */
  return 0;
}

static int opt_num(dv_config *c, const char *sec, const char *key, long long *io, int given, long long lo,
                   long long hi) {
  char b[32];
  if (given) {
    snprintf(b, sizeof b, "%lld", *io);
    return config_set(c, sec, key, b, 0, NULL);
  }
  long long v = config_get_int(c, sec, key, -1);
  if (v == -1) return 0;
  if (v < lo || v > hi) {
    fprintf(stderr, "divan: [%s] %s = %lld is out of range (%lld..%lld)\n", sec, key, v, lo, hi);
    return DV_EINVAL;
  }
  *io = v;
  return 0;
}

/* [divan] memory_limit: bytes, or a number with K, M or G (powers of 1024),
 * from KV_ROCKS_MEMORY_MIN_MB up; whole MiB (rounded down). */
static int opt_memory(dv_config *c, size_t *mb) {
  char *v = config_get(c, "divan", "memory_limit");
  if (!v || !*v) {
    dv_free(v);
    return 0;
  }
  char *end;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  int shift = 0;
  if (*end == 'k' || *end == 'K') shift = 10, end++;
  else if (*end == 'm' || *end == 'M') shift = 20, end++;
  else if (*end == 'g' || *end == 'G') shift = 30, end++;
  if (*end == 'i' && shift) end++;
  if ((*end == 'b' || *end == 'B') && shift) end++;
  int bad = errno || end == v || *end || v[0] == '-' || n > (1ull << 50) >> shift;
  unsigned long long bytes = bad ? 0 : n << shift;
  if (bad || bytes < ((unsigned long long)KV_ROCKS_MEMORY_MIN_MB << 20)) {
    fprintf(stderr, "divan: [divan] memory_limit = %s: give bytes, or a number with K, M or G, at least %dM\n", v,
            KV_ROCKS_MEMORY_MIN_MB);
    dv_free(v);
    return DV_EINVAL;
  }
  dv_free(v);
  *mb = (size_t)(bytes >> 20);
  return 0;
}

/* The settings main.c reads once, from c as it stands: at start from the
 * file and the flags, and again once the cluster-wide settings are in c
 * (cmd_serve). o holds the flags as parsed: a flag given is an override. */
static int read_opts(struct serve_opts *o, dv_config *c) {
  int rc;
  long long port = o->port, threads = o->threads, body = (long long)o->max_body, doc = (long long)o->max_doc,
            idle = o->idle_timeout, head = o->head_timeout, conns = o->max_conns,
            per_ip = o->max_conns_ip < 0 ? 0 : o->max_conns_ip ? o->max_conns_ip : -1; /* -1: not set */
  rc = opt_str(c, "chttpd", "bind_address", &o->bind, o->given & GIVEN_BIND);
  if (!rc) rc = opt_num(c, "chttpd", "port", &port, o->given & GIVEN_PORT, 0, 65535);
  if (!rc) rc = opt_num(c, "chttpd", "server_threads", &threads, o->threads != 0, 1, 1024);
  if (!rc) rc = opt_num(c, "chttpd", "max_http_request_size", &body, o->max_body != 0, 1, (long long)1 << 40);
  if (!rc) rc = opt_num(c, "couchdb", "max_document_size", &doc, o->max_doc != 0, 1, (long long)1 << 40);
  if (!rc) rc = opt_num(c, "chttpd", "idle_timeout", &idle, o->idle_timeout != 0, 1, 86400);
  if (!rc) rc = opt_num(c, "chttpd", "request_head_timeout", &head, o->head_timeout != 0, 1, 86400);
  long long body_to = 0, body_rate = 0, send_to = 0;
  if (!rc) rc = opt_num(c, "chttpd", "request_body_timeout", &body_to, 0, 1, 86400);
  if (!rc) rc = opt_num(c, "chttpd", "request_body_min_rate", &body_rate, 0, 1, 1LL << 30);
  if (!rc) rc = opt_num(c, "chttpd", "send_timeout", &send_to, 0, 1, 86400);
  o->body_timeout = (int)body_to;
  o->body_min_rate = (int)body_rate;
  o->send_timeout = (int)send_to;
  if (!rc) rc = opt_num(c, "chttpd", "max_connections", &conns, o->max_conns != 0, 1, 1000000);
  if (!rc) rc = opt_num(c, "chttpd", "max_connections_per_client", &per_ip, o->max_conns_ip != 0, 0, 1000000);
  long long reserve = -1;
  if (!rc) rc = opt_num(c, "rocksdb", "free_space_reserve_mb", &reserve, 0, 0, (long long)1 << 30);
  o->reserve_mb = reserve < 0 ? 0 : reserve == 0 ? -1 : reserve;
  if (!rc) rc = opt_memory(c, &o->memory_mb);
  if (!rc) rc = opt_str(c, "fdb", "library", &o->fdb_library, (o->given & GIVEN_FDB_LIB) != 0);
  if (!rc && !o->fdb) { /* [fdb] cluster_file = PATH, or "default" for FDB's own */
    char *cf = config_get(c, "fdb", "cluster_file");
    if (cf && *cf) {
      o->fdb = 1;
      o->cluster_file = strcmp(cf, "default") ? cf : NULL;
    }
  }
  o->port = (int)port;
  o->threads = (int)threads;
  o->max_body = (size_t)body;
  o->max_doc = (size_t)doc;
  o->idle_timeout = (int)idle;
  o->head_timeout = (int)head;
  o->max_conns = (int)conns;
  o->max_conns_ip = per_ip < 0 ? 0 : per_ip == 0 ? -1 : (int)per_ip; /* http_opts: 0 default, -1 no limit */
  return rc;
}

static int load_config(struct serve_opts *o, dv_config **out) {
  char path[4096];
  if (o->config) snprintf(path, sizeof path, "%s", o->config);
  else snprintf(path, sizeof path, "%s/local.ini", o->data);
  char err[256] = "";
  dv_config *c;
  int rc = config_load(path, &c, err, sizeof err);
  if (rc) {
    fprintf(stderr, "divan: cannot read %s: %s\n", path, err[0] ? err : dv_strerror(rc));
    return rc;
  }
  rc = read_opts(o, c);
  const char *env = getenv("DIVAN_ADMIN");
  if (!rc && env && *env) {
    const char *colon = strchr(env, ':');
    if (!colon || colon == env || !colon[1]) {
      fprintf(stderr, "divan: DIVAN_ADMIN must be name:password\n");
      rc = DV_EINVAL;
    } else {
      char name[256], *hash = NULL;
      snprintf(name, sizeof name, "%.*s", (int)(colon - env), env);
      /* an override: hashed here, kept in memory, never written */
      rc = auth_admin_hash(c, colon + 1, &hash);
      if (!rc) rc = config_set(c, "admins", name, hash, 0, NULL);
      dv_free(hash);
    }
  }
  if (rc) {
    if (rc != DV_EINVAL) fprintf(stderr, "divan: configuration: %s\n", dv_strerror(rc));
    config_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

static int any_admin(void *arg, const char *section, const char *key, const char *value) {
  (void)section, (void)key, (void)value;
  *(int *)arg = 1;
  return 1;
}

/* The cluster-wide settings changed (another process wrote them): the
 * cached password checks go, as after a write through /_config. */
static void cfg_changed(void *arg) {
  (void)arg;
  auth_cache_clear();
}

/* No server admin anywhere: make one, so that the server is never open to
 * everyone. Its password is printed once; only its hash is kept. */
static int first_admin(dv_config *c) {
  int have = 0;
  int rc = config_each(c, "admins", any_admin, &have);
  if (rc < 0) return rc;
  if (have) return 0;
  uint8_t b[12];
  char pw[17];
  if (cr_random(b, sizeof b)) return DV_EIO;
  cr_b64_encode(b, sizeof b, 1, pw);
  char *hash;
  rc = auth_admin_hash(c, pw, &hash);
  if (rc) return rc;
  rc = config_set(c, "admins", "admin", hash, config_path(c) != NULL, NULL);
  dv_free(hash);
  if (rc) return rc;
  printf("divan: created server admin \"admin\" with password \"%s\" (only its hash is kept, in %s)\n", pw,
         config_path(c) ? config_path(c) : "memory");
  fflush(stdout);
  return 0;
}

/* The replicator (src/repl), beside the API: it reaches local databases
 * through this server's port, identified by the API's loopback token. A
 * failure leaves replication unavailable; the rest serves. */
static void repl_start(api_srv *as, const struct serve_opts *o, int port) {
  /* _replicator exists from the first start, as in CouchDB (like _users,
   * which auth_setup creates); a failure here only delays it to the first
   * document written there. */
  (void)!store_db_create(as->st, "_replicator");
  char base[128];
  const char *host = o->bind;
  if (!strcmp(host, "0.0.0.0")) host = "127.0.0.1";
  if (!strcmp(host, "::")) host = "::1";
  snprintf(base, sizeof base, strchr(host, ':') ? "http://[%s]:%d/" : "http://%s:%d/", host, port);
  char ident[512], hostname[256] = "";
  if (gethostname(hostname, sizeof hostname - 1)) hostname[0] = 0;
  snprintf(ident, sizeof ident, "%s|%s|%d", hostname, o->data ? o->data : "", o->port);
  dv_config *c = as->config;
  repl_opts ro = {.local_base = base, .identity = ident, .internal_header = HTTP_REPL_HEADER,
                  .internal_token = as->repl_token, .local_rev_header = HTTP_LOCAL_REV_HEADER,
                  .server_uuid = as->uuid,
                  .retry_initial_ms = (int)config_get_int(c, "replicator", "retry_initial_ms", 1000),
                  .retry_max_ms = (int)config_get_int(c, "replicator", "retry_max_ms", 60000),
                  .lease_ms = (int)config_get_int(c, "replicator", "lease_ms", 30000)};
  if (repl_mgr_start(&ro, &as->repl)) as->repl = NULL;
}

/* The store's one hooks provider (store/hooks.h): every layer that runs
 * code in a document's edit transaction fills its part of a database's
 * table — auth/ the users database's validator, index/ the design
 * documents' validators and field checks and the Mango index rows. */
typedef struct hooks_arg {
  dv_config *cfg; /* auth_hooks_load's configuration */
  store *st;      /* mindex_hooks_load's store */
} hooks_arg;

static int hooks_load(void *arg, const char *name, size_t len, store_hooks *out) {
  hooks_arg *h = arg;
  int rc = auth_hooks_load(h->cfg, name, len, out); /* _users rules first, as CouchDB */
  if (!rc) rc = jsddoc_hooks_load(h->st, name, len, out);
  if (!rc) rc = mindex_hooks_load(h->st, name, len, out);
  return rc;
}

static void hooks_unload(void *arg, store_hooks *h) {
  (void)arg;
  jsddoc_hooks_unload(h);
  mindex_hooks_unload(h);
}

/* A fatal signal writes its number and the stack (addresses as
 * binary(+offset), for addr2line) to the log's descriptor (stderr or the
 * log file: log_fd), before the default
 * action ends the process (and dumps core where that is on): a crash in a
 * test or a service leaves its cause behind. Only async-signal-safe calls;
 * backtrace() is called once here first, as it loads libgcc on first use.
 * A sanitizer build keeps the sanitizer's own report. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DV_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DV_SANITIZED 1
#endif
#endif

#ifndef DV_SANITIZED
static void on_crash(int sig) {
  char msg[64];
  int n = snprintf(msg, sizeof msg, "divan: fatal signal %d; stack:\n", sig);
  log__crash_flush(); /* the lines queued for the writer thread, then the stack */
  int fd = log_fd();
  if (n > 0 && write(fd, msg, (size_t)n) < 0) { /* nothing left to tell */ }
  void *frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), fd);
  raise(sig); /* SA_RESETHAND: the default action now */
}
#endif

static void crash_handlers(void) {
#ifndef DV_SANITIZED
  void *warm[1];
  (void)backtrace(warm, 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaction(sigs[i], &sa, NULL);
#endif
}

/* The allocator, for a server that must stay within [divan] memory_limit.
 *
 * Two heaps for all threads, one below the default memory_limit: with
 * glibc's default of one per thread (up to 8 per core), each heap grows to
 * its own thread's peak and keeps it — after a mixed load under
 * memory_limit = 64M, 45 of the 52 MB the heaps held were free, spread over
 * 10 heaps, and the peak RSS was 84 MiB (2 heaps: 70; 1: 62). One heap
 * costs throughput where threads allocate at once: GET of a random
 * document 17.7k/s with 8 heaps, 15.0k with 2, 8.0k with 1 (bench.js, 5 s
 * runs, one machine). Small blocks come from each thread's cache (tcache)
 * without a lock either way.
 * glibc's default raises its mmap threshold each time a large block is
 * freed (up to 32 MB), after which a _bulk_docs' buffers, write sets and
 * RocksDB's memtable blocks come from the per-thread heaps, which keep what
 * was freed: loading 100,000 documents through 4 connections left 102 MB
 * free inside the heaps against 12 MB in use, and a peak RSS of 133–146
 * MiB. A fixed threshold (blocks of 128 KB and more are mapped and given
 * back when freed) and trimming the heaps past 1 MB of free top: 100 MiB,
 * and 217 → (see the README's memory table) over the HTTP bench. The
 * environment's MALLOC_* settings still win. */
static void malloc_tune(size_t limit_mb) {
  if (!getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 128 << 10);
  if (!getenv("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, 1 << 20);
  if (!getenv("MALLOC_ARENA_MAX")) mallopt(M_ARENA_MAX, limit_mb >= KV_ROCKS_MEMORY_MB ? 2 : 1);
}

/* This process's resident set now, in MiB (rounded up); 0 if unknown. */
static __attribute__((unused)) size_t rss_mib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  size_t kb = 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) kb = (size_t)strtoull(line + 6, NULL, 10);
  fclose(f);
  return (kb + 1023) / 1024;
}

static int cmd_serve(const cli_cmd *cmd, int argc, char **argv) {
  struct serve_opts o = {.data = "./data", .bind = "127.0.0.1", .port = 5984};
  int rc = parse_flags(cmd, cmd->flags, argc, argv, &o, &o.given);
  if (rc != PARSED) return rc;
  o.fdb = (o.given & GIVEN_FDB) != 0;
  if ((o.given & GIVEN_CONNS_IP) && !o.max_conns_ip) o.max_conns_ip = -1; /* 0: no limit */
  const struct serve_opts flags = o; /* read_opts again once the cluster-wide settings are in */

  crash_handlers();

  /* Block the stop signals and SIGHUP in every thread; this one waits for
   * them (SIGHUP: reopen the log, after a rotation). */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  signal(SIGPIPE, SIG_IGN);

  kv_db *kv = NULL;
  store *st = NULL;
  http_server *h = NULL;
  dv_config *cfg = NULL;
  rc = load_config(&o, &cfg);
  if (rc) return 1;
  /* The log: [log] of the ini, the file by default in the data directory. */
  char log_file[4096], why[512];
  snprintf(log_file, sizeof log_file, "%s/divan.log", o.data);
  log_set_node(API_NODE_NAME);
  if (log_config_apply(cfg, log_file, why, sizeof why)) {
    fprintf(stderr, "divan: %s\n", why);
    config_free(cfg);
    return 1;
  }
  /* [divan] memory_limit: what the process is before it holds any data
   * (its code and libraries: ~31 MiB of mapped files, most of it shared
   * with other processes but counted in RSS) comes off first; the engine
   * takes its shares of the rest (kv.h), requests a quarter (the body
   * budget), and the remainder is the process's own working memory. */
  size_t limit_mb = o.memory_mb ? o.memory_mb : KV_ROCKS_MEMORY_MB;
  malloc_tune(limit_mb);
#ifdef DV_SANITIZED /* AddressSanitizer's shadow memory (~480 MiB at start) is not the server's */
  size_t base_mb = 32;
#else
  size_t base_mb = rss_mib() + 10; /* +10: library pages first touched when serving (22 → 31 MiB) */
#endif
  size_t avail_mb = limit_mb > base_mb ? limit_mb - base_mb : 0;
  if (avail_mb < KV_ROCKS_MEMORY_MIN_MB) {
    fprintf(stderr, "divan: [divan] memory_limit = %zuM leaves %zuM beside the %zuM the process takes at start; give at least %zuM\n",
            limit_mb, avail_mb, base_mb, base_mb + KV_ROCKS_MEMORY_MIN_MB);
    config_free(cfg);
    return 1;
  }
  log_info("memory_limit %zuM: %zuM taken at start, %zuM for the store's caches, memtables and history, "
           "requests and working memory", limit_mb, base_mb, avail_mb);
  if (o.fdb) {
    kv_fdb_opts fo = {.library = o.fdb_library};
    rc = kv_open_fdb(o.cluster_file, &fo, &kv);
    if (rc) {
      fprintf(stderr, "divan: cannot open FoundationDB (cluster file %s): %s\n",
              o.cluster_file ? o.cluster_file : "default", dv_strerror(rc));
      config_free(cfg);
      return 1;
    }
  } else {
    kv_rocks_opts ko = {.create_if_missing = 1, .reserve_mb = o.reserve_mb, .memory_mb = avail_mb};
    rc = kv_open_rocks(o.data, &ko, &kv);
    if (rc) {
      fprintf(stderr, "divan: cannot open data directory %s: %s\n", o.data, dv_strerror(rc));
      config_free(cfg);
      return 1;
    }
  }
  store_opts so = {.max_document_size = o.max_doc, .background = 1};
  rc = store_open(kv, &so, &st);
  if (rc) {
    fprintf(stderr, "divan: cannot open the store in %s: %s\n", o.data, dv_strerror(rc));
    config_free(cfg);
    kv_close(kv);
    return 1;
  }
  hooks_arg ha = {.cfg = cfg, .st = st};
  store_set_hooks(st, &(store_hooks_provider){.load = hooks_load, .unload = hooks_unload, .arg = &ha});
  /* The cluster-wide settings (store/clustercfg.h): the file's plaintext
   * admins hashed first, so that only hashes reach the store; then the
   * store's settings are in force, and read_opts reads them. */
  store_cfg *scfg = NULL;
  rc = auth_hash_admins(cfg);
  if (!rc) rc = store_cfg_attach(st, cfg, cfg_changed, NULL, &scfg);
  if (rc) {
    fprintf(stderr, "divan: cannot read the cluster-wide settings: %s\n", dv_strerror(rc));
    store_close(st);
    config_free(cfg);
    kv_close(kv);
    return 1;
  }
  struct serve_opts now = flags;
  rc = read_opts(&now, cfg);
  if (rc) {
    store_cfg_detach(scfg);
    store_close(st);
    config_free(cfg);
    kv_close(kv);
    return 1;
  }
  o.max_body = now.max_body;
  o.max_doc = now.max_doc;
  o.idle_timeout = now.idle_timeout;
  o.head_timeout = now.head_timeout;
  o.body_timeout = now.body_timeout;
  o.body_min_rate = now.body_min_rate;
  o.send_timeout = now.send_timeout;
  o.max_conns_ip = now.max_conns_ip;
  store_set_max_document_size(st, o.max_doc);
  rc = first_admin(cfg);
  if (!rc) rc = auth_setup(st, cfg);
  if (rc) {
    fprintf(stderr, "divan: cannot set up authentication: %s\n", dv_strerror(rc));
    store_cfg_detach(scfg);
    store_close(st);
    config_free(cfg);
    kv_close(kv);
    return 1;
  }
  rc = qs_start(cfg); /* the query servers: the JavaScript engine and [query_servers] */
  if (rc) {
    fprintf(stderr, "divan: cannot start the query servers: %s\n", dv_strerror(rc));
    store_cfg_detach(scfg);
    store_close(st);
    config_free(cfg);
    kv_close(kv);
    return 1;
  }
  rc = mindex_start(st); /* the Mango index builder: resumes unfinished builds */
  if (!rc) rc = vw_start(st); /* the view builder: background refreshes */
  if (rc) {
    fprintf(stderr, "divan: cannot start the index builder: %s\n", dv_strerror(rc));
    store_cfg_detach(scfg);
    store_close(st);
    config_free(cfg);
    kv_close(kv);
    return 1;
  }
  api_srv as = {.st = st, .config = cfg, .version = DIVAN_VERSION, .data_dir = o.data, .max_document_size = o.max_doc};
  http_app app;
  char server[96];
  snprintf(server, sizeof server, "divan/%s (CouchDB/3.3.3 compatible)", DIVAN_VERSION);
  http_opts ho = {.bind = o.bind, .port = o.port, .threads = o.threads, .max_body = o.max_body,
                  .timeout_s = o.idle_timeout, .head_timeout_s = o.head_timeout, .max_conns = o.max_conns,
                  .body_timeout_s = o.body_timeout, .body_min_rate = o.body_min_rate, .send_timeout_s = o.send_timeout,
                  .max_conns_per_client = o.max_conns_ip, .server = server, .config = cfg,
                  .body_budget = (avail_mb << 20) / 4}; /* requests' share of memory_limit */
  rc = api_app(&as, &app);
  if (!rc) rc = http_start(&app, &ho, &h);
  if (rc) {
    fprintf(stderr, "divan: cannot listen on %s:%d: %s\n", o.bind, o.port, dv_strerror(rc));
    vw_stop();
    mindex_stop();
    store_cfg_detach(scfg);
    store_close(st);
    config_free(cfg);
    kv_close(kv);
    return 1;
  }
  as.max_body = http_options(h)->max_body;
  repl_start(&as, &o, http_port(h));
  char port_s[16];
  snprintf(port_s, sizeof port_s, "%d", http_port(h));
  if (config_set(cfg, "chttpd", "port", port_s, 0, NULL)) log_warning("/_config shows the configured port, not %s", port_s);
  int v6 = strchr(o.bind, ':') != NULL;
  if (o.fdb)
    printf("divan: listening on http://%s%s%s:%d/ (FoundationDB, cluster file %s)\n", v6 ? "[" : "", o.bind,
           v6 ? "]" : "", http_port(h), o.cluster_file ? o.cluster_file : "default");
  else
    printf("divan: listening on http://%s%s%s:%d/ (data %s)\n", v6 ? "[" : "", o.bind, v6 ? "]" : "",
           http_port(h), o.data);
  fflush(stdout);
  log_info("divan %s has started on http://%s%s%s:%d/", DIVAN_VERSION, v6 ? "[" : "", o.bind, v6 ? "]" : "",
           http_port(h));
  int sig = 0;
  for (;;) {
    /* every second: give the heaps' free pages back (malloc_tune: a
     * heap keeps what a burst freed — 10,000 feeds streaming left 130 MB
     * free in it — and trimming returns only its top on its own) */
    struct timespec sec = {1, 0};
    sig = sigtimedwait(&stop, NULL, &sec);
    if (sig < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        malloc_trim(0);
        continue;
      }
      break;
    }
    if (sig != SIGHUP) break;
    /* logrotate moved the file: a new one, [log] read again */
    if (log_config_apply(cfg, NULL, why, sizeof why)) log_error("SIGHUP: %s; the log is unchanged", why);
    else log_info("SIGHUP: the log is open again");
  }
  log_info("stopping (signal %d)", sig);
  /* The replicator first: its one-shot jobs answer their waiting requests. */
  repl_mgr_stop(as.repl);
  as.repl = NULL;
  http_stop(h);
  vw_stop();     /* before the store and the query servers: it builds through both */
  mindex_stop(); /* before the store: the builder writes through it */
  qs_stop();
  store_cfg_detach(scfg);
  store_close(st);
  config_free(cfg);
  kv_close(kv);
  log_close();
  return 0;
}

static int cmd_inspect(const cli_cmd *cmd, int argc, char **argv) {
  struct inspect_opts o = {.data = "./data"};
  int given = 0;
  int rc = parse_flags(cmd, cmd->flags, argc, argv, &o, &given);
  return rc != PARSED ? rc : cli_inspect_run(o.data, o.db);
}

static int cmd_check(const cli_cmd *cmd, int argc, char **argv) {
  struct check_opts o = {.data = "./data"};
  int given = 0;
  int rc = parse_flags(cmd, cmd->flags, argc, argv, &o, &given);
  if (rc != PARSED) return rc;
  cli_check_opts co = {.data = o.data, .db = o.db, .fdb = (given & GIVEN_FDB) != 0, .cluster_file = o.cluster_file,
                       .fdb_library = o.fdb_library};
  return cli_check_run(&co);
}

/* dump and load: the database may come last, after the flags. */
static int cmd_dump_load(const cli_cmd *cmd, int argc, char **argv, int load) {
  struct dump_opts o = {.data = "./data"};
  int given = 0;
  /* the database: the last argument that is no flag and no flag's value
   * (--fdb's optional value only when something follows it) */
  const char *pos = NULL;
  char *rest[64];
  int n = 0;
  for (int i = argc - 1; i >= 0 && !pos; i--) {
    if (argv[i][0] == '-') continue;
    const cli_flag *f = NULL;
    if (i > 0 && argv[i - 1][0] == '-' && !strchr(argv[i - 1], '='))
      for (f = cmd->flags; f->name && strcmp(argv[i - 1], f->name) && !(f->alias && !strcmp(argv[i - 1], f->alias));)
        f++;
    if (f && f->name && f->value && (f->kind != FLAG_OPT_STR || i < argc - 1)) continue;
    pos = argv[i];
    for (int j = 0; j < argc && n < 64; j++)
      if (j != i) rest[n++] = argv[j];
  }
  if (argc > 64) {
    fprintf(stderr, "divan: too many arguments; %s\n", hint(cmd));
    return 2;
  }
  if (!pos) {
    for (int j = 0; j < argc; j++) rest[n++] = argv[j];
  }
  int rc = parse_flags(cmd, cmd->flags, n, rest, &o, &given);
  if (rc != PARSED) return rc;
  if (pos && o.db) {
    fprintf(stderr, "divan: two databases ('%s' and --db %s); %s\n", pos, o.db, hint(cmd));
    return 2;
  }
  if (pos) o.db = pos;
  if (!o.db) {
    fprintf(stderr, "divan: which database? give its name last; %s\n", hint(cmd));
    return 2;
  }
  cli_dump_opts co = {.data = o.data, .db = o.db, .file = o.file, .fdb = (given & GIVEN_FDB) != 0,
                      .cluster_file = o.cluster_file, .fdb_library = o.fdb_library,
                      .resume = (given & GIVEN_RESUME) != 0};
  return load ? cli_load_run(&co) : cli_dump_run(&co);
}

static int cmd_dump(const cli_cmd *cmd, int argc, char **argv) { return cmd_dump_load(cmd, argc, argv, 0); }
static int cmd_load(const cli_cmd *cmd, int argc, char **argv) { return cmd_dump_load(cmd, argc, argv, 1); }

static int cmd_move(const cli_cmd *cmd, int argc, char **argv) {
  struct move_opts o = {.then = "keep"};
  char *flags[64], *pos[8];
  int nf = 0, np = 0;
  if (argc > 64) {
    fprintf(stderr, "divan: too many arguments; %s\n", hint(cmd));
    return 2;
  }
  for (int i = 0; i < argc; i++) {
    if (argv[i][0] != '-') {
      if (np == 8) {
        fprintf(stderr, "divan: too many arguments; %s\n", hint(cmd));
        return 2;
      }
      pos[np++] = argv[i];
      continue;
    }
    flags[nf++] = argv[i];
    const cli_flag *f = cmd->flags;
    while (f->name && strcmp(argv[i], f->name)) f++;
    if (f->name && f->value && i + 1 < argc) flags[nf++] = argv[++i];
  }
  int given = 0, rc = parse_flags(cmd, cmd->flags, nf, flags, &o, &given);
  if (rc != PARSED) return rc;
  if (np < 3 || np > 4) {
    if (np) fprintf(stderr, "divan: move takes SRC DB DST [NEWNAME], not %d arguments ('%s'…); %s\n", np, pos[0], hint(cmd));
    else fprintf(stderr, "divan: move takes SRC DB DST [NEWNAME]; %s\n", hint(cmd));
    return 2;
  }
  int then = !strcmp(o.then, "keep")     ? STORE_MOVE_KEEP
             : !strcmp(o.then, "rename") ? STORE_MOVE_RENAME
             : !strcmp(o.then, "delete") ? STORE_MOVE_DELETE
                                         : -1;
  if (then < 0) {
    fprintf(stderr, "divan: --then takes keep, rename or delete, not '%s'; %s\n", o.then, hint(cmd));
    return 2;
  }
  cli_move_opts mo = {.src = pos[0], .db = pos[1], .dst = pos[2], .newname = np == 4 ? pos[3] : NULL,
                      .then = then, .fdb_library = o.fdb_library, .resume = (given & GIVEN_RESUME) != 0};
  return cli_move_run(&mo);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stdout);
    return 0;
  }
  if (argv[1][0] == '-') { /* --help, --version */
    int given = 0, rc = parse_flags(NULL, main_flags, argc - 1, argv + 1, NULL, &given);
    return rc == PARSED ? 0 : rc;
  }
  for (const cli_cmd *c = commands; c->name; c++)
    if (!strcmp(argv[1], c->name)) return c->run(c, argc - 2, argv + 2);
  fprintf(stderr, "divan: unknown command '%s'; %s\n", argv[1], hint(NULL));
  return 2;
}
