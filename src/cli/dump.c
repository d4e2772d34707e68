/* dump.c — `divan dump` / `divan load` (dump.h): open the store, stream
 * store_dump into a file or store_load out of one, report on stderr;
 * `divan move`: both stores open, store_move between them. The report's
 * peak RSS is the process's own (getrusage ru_maxrss, every thread), read
 * after the stores are closed: what `make bench` (bench/http/dumpbench.js)
 * shows as the command's bounded memory. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli/dump.h"
#include "kv/kv.h"
#include "store/dump.h"

static int open_store(const cli_dump_opts *o, const char *cmd, int create, kv_db **kv, store **s) {
  int rc;
  if (o->fdb) {
    kv_fdb_opts fo = {.library = o->fdb_library};
    rc = kv_open_fdb(o->cluster_file, &fo, kv);
    if (rc) {
      fprintf(stderr, "divan %s: cannot open FoundationDB (cluster file %s): %s\n", cmd,
              o->cluster_file ? o->cluster_file : "default", dv_strerror(rc));
      return 2;
    }
  } else {
    kv_rocks_opts ko = {.create_if_missing = create};
    rc = kv_open_rocks(o->data, &ko, kv);
    if (rc) {
      fprintf(stderr, "divan %s: cannot open %s: %s\n", cmd, o->data, dv_strerror(rc));
      return 2;
    }
  }
  rc = store_open(*kv, NULL, s);
  if (rc) {
    fprintf(stderr, "divan %s: cannot open the store: %s\n", cmd, dv_strerror(rc));
    kv_close(*kv);
    return 2;
  }
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The process's peak resident set so far in MiB (Linux: ru_maxrss is KiB);
 * 0 when getrusage fails. */
static double peak_rss_mib(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_maxrss / 1024.0;
}

static int out_fn(void *arg, const uint8_t *p, size_t n) {
  return fwrite(p, 1, n, arg) == n ? 0 : DV_EIO;
}

static long in_fn(void *arg, uint8_t *p, size_t n) {
  size_t k = fread(p, 1, n, arg);
  if (k == 0 && ferror(arg)) return DV_EIO;
  return (long)k;
}

/* `divan dump --resume -o FILE`: FILE cut after its last checkpoint's
 * block, and c says how the writer goes on. 0, 1 (nothing to do: FILE is
 * whole), or an exit status with the reason printed. */
static int cut_file(const cli_dump_opts *o, FILE *f, dump_cont *c) {
  const char *why = NULL;
  int rc = dump_scan(in_fn, f, c, &why);
  if (rc) {
    fprintf(stderr, "divan dump: %s: %s cannot be resumed: %s\n", o->db, o->file, why ? why : dv_strerror(rc));
    return rc == DV_EIO || rc == DV_ENOMEM ? 2 : 1;
  }
  if (c->complete) {
    fprintf(stderr, "divan dump: %s: %s is a whole dump (it has its trailer): nothing to resume\n", o->db, o->file);
    return -1;
  }
  if (fflush(f) || ftruncate(fileno(f), (off_t)c->off) || fseeko(f, (off_t)c->off, SEEK_SET)) {
    fprintf(stderr, "divan dump: %s: cannot cut %s: %s\n", o->db, o->file, strerror(errno));
    return 2;
  }
  return 0;
}

/* `divan dump` (load 0) or `divan load` (1): the file, the store, the
 * stream, one line on stderr. */
static int dump_or_load(const cli_dump_opts *o, int load) {
  const char *cmd = load ? "load" : "dump";
  FILE *f = load ? stdin : stdout;
  if (o->resume && !load && !o->file) {
    fprintf(stderr, "divan dump: --resume goes on with a file: give it with -o FILE (stdout cannot be resumed)\n");
    return 2;
  }
  const char *mode = load ? "rb" : o->resume ? "r+b" : "wb";
  if (o->file && !(f = fopen(o->file, mode))) {
    fprintf(stderr, "divan %s: cannot %s %s: %s\n", cmd, load || o->resume ? "open" : "create", o->file,
            strerror(errno));
    return 2;
  }
  dump_cont c = {0};
  buf_init(&c.ck);
  int st = o->resume && !load ? cut_file(o, f, &c) : 0;
  kv_db *kv;
  store *s;
  if (!st) st = open_store(o, cmd, load, &kv, &s);
  if (st) {
    buf_free(&c.ck);
    if (o->file) fclose(f);
    return st < 0 ? 0 : st;
  }
  store_dump_stats ds;
  const char *why = NULL;
  double t0 = now_s();
  store_load_opts lo = {.resume = o->resume ? STORE_LOAD_RESUME_FILE : 0};
  store_dump_opts dopt = {.resume = o->resume ? &c : NULL, .append = 1};
  int rc = load ? store_load(s, o->db, &lo, in_fn, f, &ds, &why) : store_dump(s, o->db, &dopt, out_fn, f, &ds, &why);
  if (!rc && !load && fflush(f)) rc = DV_EIO, why = "the dump could not be written";
  double dt = now_s() - t0;
  store_close(s);
  kv_close(kv);
  buf_free(&c.ck);
  if (o->file && fclose(f) && !rc && !load) rc = DV_EIO, why = "the dump could not be written";
  if (rc) {
    const char *left = !load    ? ""
                       : o->resume && (rc == DV_ENOT_FOUND || rc == DV_ECONFLICT || rc == DV_ENOTSUP ||
                                       rc == DV_EDB_EXISTS || rc == DV_EBAD_DB_NAME)
                           ? "; nothing changed" /* a resume refused */
                       : ds.kept ? "; what it loaded stays for --resume"
                                 : "; nothing was loaded";
    fprintf(stderr, "divan %s: %s: %s%s\n", cmd, o->db, why ? why : dv_strerror(rc), left);
    if (load)
      return rc == DV_ECORRUPT || rc == DV_ENOTSUP || rc == DV_EDB_EXISTS || rc == DV_EBAD_DB_NAME ||
                     rc == DV_ENOT_FOUND || rc == DV_ECONFLICT
                 ? 1
                 : 2;
    return rc == DV_ENO_DB || rc == DV_EIO ? 2 : 1;
  }
  char resumed[96] = "";
  if (load && o->resume)
    snprintf(resumed, sizeof resumed, "; resumed: %llu of %llu records written by this run",
             (unsigned long long)ds.applied, (unsigned long long)ds.records);
  if (load)
    fprintf(stderr,
            "divan load: %s: %llu keys, %llu caught-up documents, %llu bytes in %.2f s (incarnation %lld)%s; "
            "peak RSS %.1f MiB\n",
            o->db, (unsigned long long)ds.kvs, (unsigned long long)ds.docs, (unsigned long long)ds.bytes, dt,
            (long long)ds.inc, resumed, peak_rss_mib());
  else
    fprintf(stderr,
            "divan dump: %s: %llu keys, %llu caught-up documents, %llu bytes in %.2f s (%d catch-up rounds%s); "
            "peak RSS %.1f MiB\n",
            o->db, (unsigned long long)ds.kvs, (unsigned long long)ds.docs, (unsigned long long)ds.bytes, dt,
            ds.rounds, o->resume ? "; resumed from its last checkpoint" : "", peak_rss_mib());
  return 0;
}

int cli_dump_run(const cli_dump_opts *o) { return dump_or_load(o, 0); }
int cli_load_run(const cli_dump_opts *o) { return dump_or_load(o, 1); }

/* "data:DIR" or "fdb:[CLUSTER_FILE]" into o's store fields. */
static int parse_spec(const char *spec, const char *lib, cli_dump_opts *o) {
  memset(o, 0, sizeof *o);
  o->fdb_library = lib;
  if (!strncmp(spec, "data:", 5) && spec[5]) {
    o->data = spec + 5;
    return 0;
  }
  if (!strncmp(spec, "fdb:", 4)) {
    o->fdb = 1;
    o->cluster_file = spec[4] ? spec + 4 : NULL;
    return 0;
  }
  fprintf(stderr, "divan move: '%s' is no store: write data:DIR or fdb:[CLUSTER_FILE]\n", spec);
  return 2;
}

int cli_move_run(const cli_move_opts *o) {
  cli_dump_opts so, dso;
  if (parse_spec(o->src, o->fdb_library, &so) || parse_spec(o->dst, o->fdb_library, &dso)) return 2;
  int same = !strcmp(o->src, o->dst);
  kv_db *skv, *dkv = NULL;
  store *s, *d;
  int st = open_store(&so, "move", 0, &skv, &s);
  if (st) return st;
  if (same) {
    d = s;
  } else if ((st = open_store(&dso, "move", 1, &dkv, &d))) {
    store_close(s);
    kv_close(skv);
    return st;
  }
  const char *to = o->newname ? o->newname : o->db;
  store_move_opts mo = {.then = o->then, .resume = o->resume};
  store_move_stats ms;
  const char *why = NULL;
  double t0 = now_s();
  int rc = store_move(s, o->db, d, to, &mo, &ms, &why);
  double dt = now_s() - t0;
  if (!same) {
    store_close(d);
    kv_close(dkv);
  }
  store_close(s);
  kv_close(skv);
  if (rc) {
    fprintf(stderr, "divan move: %s: %s\n", o->db, why ? why : dv_strerror(rc));
    if (ms.load.kept) /* the source side failed: the target keeps the part copied */
      fprintf(stderr, "divan move: to go on from where it stopped, run: divan move --resume %s %s %s %s\n", o->src,
              o->db, o->dst, to);
    return rc == DV_ENO_DB || rc == DV_EIO ? 2 : 1;
  }
  fprintf(stderr,
          "divan move: %s -> %s: %llu keys, %llu caught-up documents, %llu bytes in %.2f s (%d catch-up rounds, "
          "incarnation %lld%s); the source was %s%s; peak RSS %.1f MiB\n",
          o->db, to, (unsigned long long)ms.load.kvs, (unsigned long long)ms.load.docs,
          (unsigned long long)ms.load.bytes, dt, ms.dump.rounds, (long long)ms.load.inc,
          o->resume ? "; resumed from the target's last checkpoint" : "",
          o->then == STORE_MOVE_DELETE   ? "deleted"
          : o->then == STORE_MOVE_RENAME ? "renamed to "
                                         : "kept (writable again: a copy from now on)",
          o->then == STORE_MOVE_RENAME ? ms.retired : "", peak_rss_mib());
  return 0;
}
