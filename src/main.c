/* main.c — the `divan` command line: serve, and tools.
 *
 *   divan serve [--data DIR] [--bind ADDR] [--port N] [--threads N] ...
 *   divan --help | --version
 *
 * This file parses arguments and hands off to the layers; it holds no
 * database logic of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <signal.h>

#include "cli/inspect.h"
#include "http/http.h"
#include "kv/kv.h"
#include "store/store.h"

#define DIVAN_VERSION "0.1.0"

static void usage(FILE *out) {
  fprintf(out,
          "divan %s — a CouchDB-compatible document database\n"
          "\n"
          "usage:\n"
          "  divan serve [--data DIR] [--bind ADDR] [--port N] [--threads N]\n"
          "              [--max-request-size BYTES] [--max-document-size BYTES]\n"
          "              [--idle-timeout SECONDS]\n"
          "      start the server (defaults: --data ./data --bind 127.0.0.1 --port 5984;\n"
          "      --port 0 picks a free port; the listening line on stdout names it)\n"
          "  divan inspect [--data DIR] [--db NAME]\n"
          "      print every key and value of the store decoded as tuples\n"
          "  divan --help       this text\n"
          "  divan --version    print the version\n",
          DIVAN_VERSION);
}

struct serve_opts {
  const char *data;    /* data directory */
  const char *bind;    /* listen address */
  int port;            /* listen port (0: any free port) */
  const char *config;  /* ini file, or NULL */
  int threads;         /* HTTP pool threads, 0 = default */
  size_t max_body;     /* max_http_request_size, 0 = default */
  size_t max_doc;      /* max_document_size, 0 = default */
  int idle_timeout;    /* seconds before an idle connection is closed, 0 = default */
};

static int parse_port(const char *s, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < 0 || v > 65535) return -1;
  *out = (int)v;
  return 0;
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || !v || s[0] == '-') return -1;
  *out = (size_t)v;
  return 0;
}

static int cmd_serve(int argc, char **argv) {
  struct serve_opts o = {"./data", "127.0.0.1", 5984, NULL, 0, 0, 0, 0};
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    size_t n;
    if (!strcmp(a, "--data") && v) o.data = v, i++;
    else if (!strcmp(a, "--bind") && v) o.bind = v, i++;
    else if (!strcmp(a, "--config") && v) o.config = v, i++;
    else if (!strcmp(a, "--port") && v) {
      if (parse_port(v, &o.port)) { fprintf(stderr, "divan: bad --port '%s'\n", v); return 2; }
      i++;
    } else if (!strcmp(a, "--threads") && v) {
      if (parse_size(v, &n) || n > 1024) { fprintf(stderr, "divan: bad --threads '%s'\n", v); return 2; }
      o.threads = (int)n, i++;
    } else if (!strcmp(a, "--max-request-size") && v) {
      if (parse_size(v, &o.max_body)) { fprintf(stderr, "divan: bad --max-request-size '%s'\n", v); return 2; }
      i++;
    } else if (!strcmp(a, "--idle-timeout") && v) {
      if (parse_size(v, &n) || n > 86400) { fprintf(stderr, "divan: bad --idle-timeout '%s'\n", v); return 2; }
      o.idle_timeout = (int)n, i++;
    } else if (!strcmp(a, "--max-document-size") && v) {
      if (parse_size(v, &o.max_doc)) { fprintf(stderr, "divan: bad --max-document-size '%s'\n", v); return 2; }
      i++;
    } else {
      fprintf(stderr, "divan: unknown or incomplete option '%s'\n\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (o.config) fprintf(stderr, "divan: note: --config is not read yet (configuration files come later)\n");

  /* Block the stop signals in every thread; this one waits for them. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  signal(SIGPIPE, SIG_IGN);

  kv_db *kv = NULL;
  store *st = NULL;
  http_server *h = NULL;
  kv_rocks_opts ko = {.create_if_missing = 1};
  int rc = kv_open_rocks(o.data, &ko, &kv);
  if (rc) {
    fprintf(stderr, "divan: cannot open data directory %s: %s\n", o.data, dv_strerror(rc));
    return 1;
  }
  store_opts so = {.max_document_size = o.max_doc, .background = 1};
  rc = store_open(kv, &so, &st);
  if (rc) {
    fprintf(stderr, "divan: cannot open the store in %s: %s\n", o.data, dv_strerror(rc));
    kv_close(kv);
    return 1;
  }
  http_opts ho = {.bind = o.bind, .port = o.port, .threads = o.threads, .max_body = o.max_body,
                  .timeout_s = o.idle_timeout, .version = DIVAN_VERSION, .data_dir = o.data, .max_document_size = o.max_doc};
  rc = http_start(st, &ho, &h);
  if (rc) {
    fprintf(stderr, "divan: cannot listen on %s:%d: %s\n", o.bind, o.port, dv_strerror(rc));
    store_close(st);
    kv_close(kv);
    return 1;
  }
  int v6 = strchr(o.bind, ':') != NULL;
  printf("divan: listening on http://%s%s%s:%d/ (data %s)\n", v6 ? "[" : "", o.bind, v6 ? "]" : "",
         http_port(h), o.data);
  fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  fprintf(stderr, "divan: stopping (signal %d)\n", sig);
  http_stop(h);
  store_close(st);
  kv_close(kv);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("divan %s\n", DIVAN_VERSION);
    return 0;
  }
  if (!strcmp(argv[1], "serve")) return cmd_serve(argc - 2, argv + 2);
  if (!strcmp(argv[1], "inspect")) return cli_inspect_main(argc - 2, argv + 2);
  fprintf(stderr, "divan: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
