/* check.c — `divan check` (see check.h): open the store read-only, start
 * the query servers (the view indexes are compared with a rebuild that
 * maps the documents again, as `divan serve` starts them: the embedded
 * JavaScript engine at its defaults), run icheck_run, print each finding
 * and the summary. */
#include <string.h>

#include "cli/check.h"
#include "index/icheck.h"
#include "index/qs.h"
#include "kv/kv.h"

static void put_str(FILE *out, const char *s, size_t n) {
  fputc('"', out);
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\') fprintf(out, "\\%c", ch);
    else if (ch < 0x20 || ch == 0x7f) fprintf(out, "\\x%02x", ch);
    else fputc(ch, out);
  }
  fputc('"', out);
}

void cli_check_line(FILE *out, const store_check_item *it) {
  fputs(it->note ? "note:" : "problem:", out);
  if (it->db) {
    fputs(" db ", out);
    put_str(out, it->db, strlen(it->db));
  }
  if (it->id) {
    fputs(" doc ", out);
    put_str(out, it->id, it->id_len);
  }
  fprintf(out, "%s %s", it->db || it->id ? ":" : "", it->what);
  if (it->expected) fprintf(out, "; expected %s", it->expected);
  fputc('\n', out);
}

void cli_check_summary(FILE *out, const store_check_counts *c) {
  fprintf(out,
          "checked: %lld databases, %lld documents, %lld revisions, %lld changes rows, %lld bodies, "
          "%lld attachments, %lld local documents, %lld purge infos, %lld index rows, %lld _db_updates rows; "
          "%lld problems, %lld notes\n",
          (long long)c->databases, (long long)c->documents, (long long)c->revisions, (long long)c->changes,
          (long long)c->bodies, (long long)c->attachments, (long long)c->local_docs, (long long)c->purge_infos,
          (long long)c->index_rows, (long long)c->db_updates, (long long)c->problems, (long long)c->notes);
}

static int print_cb(void *arg, const store_check_item *it) {
  cli_check_line(arg, it);
  return 0;
}

int cli_check_run(const cli_check_opts *o) {
  kv_db *kv = NULL;
  store *s = NULL;
  int rc;
  if (o->fdb) {
    kv_fdb_opts fo = {.library = o->fdb_library};
    rc = kv_open_fdb(o->cluster_file, &fo, &kv);
    if (rc) {
      fprintf(stderr, "divan check: cannot open FoundationDB (cluster file %s): %s\n",
              o->cluster_file ? o->cluster_file : "default", dv_strerror(rc));
      return 2;
    }
  } else {
    kv_rocks_opts ko = {.create_if_missing = 0};
    rc = kv_open_rocks(o->data, &ko, &kv);
    if (rc) {
      fprintf(stderr, "divan check: cannot open %s: %s\n", o->data, dv_strerror(rc));
      return 2;
    }
  }
  rc = store_open(kv, NULL, &s);
  if (rc) {
    fprintf(stderr, "divan check: cannot open the store: %s\n", dv_strerror(rc));
    kv_close(kv);
    return 2;
  }
  rc = qs_start(NULL);
  if (rc) {
    fprintf(stderr, "divan check: cannot start the query servers: %s\n", dv_strerror(rc));
    store_close(s);
    kv_close(kv);
    return 2;
  }
  store_check_out out = {.cb = print_cb, .arg = stdout};
  rc = icheck_run(s, o->db, &out);
  qs_stop();
  store_close(s);
  kv_close(kv);
  if (rc == DV_ENO_DB) {
    fprintf(stderr, "divan check: no database %s\n", o->db);
    return 2;
  }
  if (rc) {
    cli_check_summary(stdout, &out.counts);
    fprintf(stderr, "divan check: the check stopped: %s\n", dv_strerror(rc));
    return 2;
  }
  cli_check_summary(stdout, &out.counts);
  return out.counts.problems ? 1 : 0;
}
