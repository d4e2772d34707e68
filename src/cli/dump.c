/* dump.c — `divan dump` / `divan load` (dump.h): open the store, stream
 * store_dump into a file or store_load out of one, report on stderr. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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

static int out_fn(void *arg, const uint8_t *p, size_t n) {
  return fwrite(p, 1, n, arg) == n ? 0 : DV_EIO;
}

static long in_fn(void *arg, uint8_t *p, size_t n) {
  size_t k = fread(p, 1, n, arg);
  if (k == 0 && ferror(arg)) return DV_EIO;
  return (long)k;
}

int cli_dump_run(const cli_dump_opts *o) {
  FILE *f = stdout;
  if (o->file && !(f = fopen(o->file, "wb"))) {
    fprintf(stderr, "divan dump: cannot create %s: %s\n", o->file, strerror(errno));
    return 2;
  }
  kv_db *kv;
  store *s;
  int st = open_store(o, "dump", 0, &kv, &s);
  if (st) {
    if (o->file) fclose(f);
    return st;
  }
  store_dump_stats ds;
  const char *why = NULL;
  double t0 = now_s();
  int rc = store_dump(s, o->db, NULL, out_fn, f, &ds, &why);
  if (!rc && fflush(f)) rc = DV_EIO, why = "the dump could not be written";
  double dt = now_s() - t0;
  store_close(s);
  kv_close(kv);
  if (o->file && fclose(f) && !rc) rc = DV_EIO, why = "the dump could not be written";
  if (rc) {
    fprintf(stderr, "divan dump: %s: %s\n", o->db, why ? why : dv_strerror(rc));
    return rc == DV_ENO_DB || rc == DV_EIO ? 2 : 1;
  }
  fprintf(stderr, "divan dump: %s: %llu keys, %llu caught-up documents, %llu bytes in %.2f s (%d catch-up rounds)\n",
          o->db, (unsigned long long)ds.kvs, (unsigned long long)ds.docs, (unsigned long long)ds.bytes, dt, ds.rounds);
  return 0;
}

int cli_load_run(const cli_dump_opts *o) {
  FILE *f = stdin;
  if (o->file && !(f = fopen(o->file, "rb"))) {
    fprintf(stderr, "divan load: cannot open %s: %s\n", o->file, strerror(errno));
    return 2;
  }
  kv_db *kv;
  store *s;
  int st = open_store(o, "load", 1, &kv, &s);
  if (st) {
    if (o->file) fclose(f);
    return st;
  }
  store_dump_stats ds;
  const char *why = NULL;
  double t0 = now_s();
  int rc = store_load(s, o->db, in_fn, f, &ds, &why);
  double dt = now_s() - t0;
  store_close(s);
  kv_close(kv);
  if (o->file) fclose(f);
  if (rc) {
    fprintf(stderr, "divan load: %s: %s; nothing was loaded\n", o->db, why ? why : dv_strerror(rc));
    return rc == DV_ECORRUPT || rc == DV_ENOTSUP || rc == DV_EDB_EXISTS || rc == DV_EBAD_DB_NAME ? 1 : 2;
  }
  fprintf(stderr, "divan load: %s: %llu keys, %llu caught-up documents, %llu bytes in %.2f s (incarnation %lld)\n",
          o->db, (unsigned long long)ds.kvs, (unsigned long long)ds.docs, (unsigned long long)ds.bytes, dt,
          (long long)ds.inc);
  return 0;
}
