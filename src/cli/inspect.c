/* inspect.c — `divan inspect` (see inspect.h). */
#include <string.h>

#include "cli/inspect.h"
#include "store/store.h"
#include "tuple/tuple.h"

/* Keys whose values are 8-byte little-endian counters (atomic ADD). */
static int is_counter(const char *key_text) {
  static const char *const ends[] = {"\"doc_count\")", "\"doc_del_count\")", "\"size_active\")",
                                     "\"size_external\")", "\"prefix_counter\")", "\"db_updates_tick\")"};
  size_t kl = strlen(key_text);
  for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
    size_t n = strlen(ends[i]);
    if (kl >= n && !memcmp(key_text + kl - n, ends[i], n)) return 1;
  }
  return 0;
}

static void put_value(dv_buf *b, const uint8_t *v, size_t n, int counter) {
  if (n && !counter && tup_validate(v, n) == 0) {
    tup_format(b, v, n);
    return;
  }
  if (n == 8) {
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u |= (uint64_t)v[i] << (8 * i);
    buf_printf(b, "le64(%lld)", (long long)u);
    return;
  }
  buf_puts(b, "hex(");
  for (size_t i = 0; i < n; i++) buf_printf(b, "%02x", v[i]);
  buf_putc(b, ')');
}

static int dump_range(kv_db *kv, const uint8_t *b0, size_t bl, const uint8_t *e, size_t el, FILE *out) {
  dv_buf begin, line;
  buf_init(&begin);
  buf_init(&line);
  buf_append(&begin, b0, bl);
  int rc = 0, more = 1;
  while (!rc && more) {
    kv_txn *txn;
    rc = kv_txn_begin(kv, &txn);
    if (rc) break;
    kv_pair *p;
    int n = 0;
    rc = kv_get_range(txn, begin.p, begin.len, e, el, 1000, KV_SNAPSHOT, &p, &n, &more);
    for (int i = 0; !rc && i < n; i++) {
      buf_reset(&line);
      if (tup_validate(p[i].key, p[i].key_len) == 0) tup_format(&line, p[i].key, p[i].key_len);
      else put_value(&line, p[i].key, p[i].key_len, 0);
      buf_putc(&line, 0);
      int counter = !buf_error(&line) && is_counter((const char *)line.p);
      line.len--;
      buf_puts(&line, " = ");
      put_value(&line, p[i].val, p[i].val_len, counter && p[i].val_len == 8);
      buf_putc(&line, '\n');
      if (buf_error(&line)) rc = DV_ENOMEM;
      else fwrite(line.p, 1, line.len, out);
      buf_reset(&begin);
      buf_append(&begin, p[i].key, p[i].key_len);
      buf_putc(&begin, 0);
    }
    if (n == 0) more = 0;
    kv_txn_destroy(txn);
  }
  buf_free(&begin);
  buf_free(&line);
  return rc;
}

int cli_inspect(kv_db *kv, const char *db_name, FILE *out) {
  if (!db_name) return dump_range(kv, (const uint8_t *)"", 0, (const uint8_t *)"\xff", 1, out);
  store *s;
  int rc = store_open(kv, NULL, &s);
  if (rc) return rc;
  store_db *db;
  store_db_info in;
  rc = store_db_open(s, db_name, &db);
  if (!rc) {
    rc = store_db_info_get(db, &in);
    store_db_close(db);
  }
  store_close(s);
  if (rc) return rc;
  dv_buf k, e;
  buf_init(&k);
  buf_init(&e);
  tup_w w;
  tup_w_init(&w, &k);
  tup_strz(&w, "divan");
  tup_int(&w, 0);
  tup_strz(&w, "dbs");
  tup_strz(&w, db_name);
  buf_append(&e, k.p, k.len);
  buf_putc(&e, 0);
  rc = buf_error(&k) || buf_error(&e) ? DV_ENOMEM : dump_range(kv, k.p, k.len, e.p, e.len, out);
  buf_reset(&k);
  tup_w_init(&w, &k);
  tup_strz(&w, "divan");
  tup_int(&w, 1);
  tup_int(&w, in.prefix);
  buf_reset(&e);
  buf_append(&e, k.p, k.len);
  buf_putc(&e, 0xff);
  if (!rc) rc = buf_error(&k) || buf_error(&e) ? DV_ENOMEM : dump_range(kv, k.p, k.len, e.p, e.len, out);
  buf_free(&k);
  buf_free(&e);
  return rc;
}

int cli_inspect_run(const char *data, const char *db) {
  kv_rocks_opts o = {.create_if_missing = 0};
  kv_db *kv;
  int rc = kv_open_rocks(data, &o, &kv);
  if (rc) {
    fprintf(stderr, "divan inspect: cannot open %s: %s\n", data, dv_strerror(rc));
    return 1;
  }
  rc = cli_inspect(kv, db, stdout);
  kv_close(kv);
  if (rc) {
    fprintf(stderr, "divan inspect: %s\n", dv_strerror(rc));
    return 1;
  }
  return 0;
}
