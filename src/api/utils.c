/* utils.c — /_utils: Fauxton, CouchDB's dashboard, served as static files
 * from a document root, as CouchDB's chttpd_misc:handle_utils_dir_req serves
 * it through mochiweb's serve_file. Not here: what Fauxton then calls
 * (/_session, /_all_dbs, … are the other api/ files); installing Fauxton
 * (scripts/deps.sh puts the npm package's release build in share/fauxton/,
 * `make install` copies it to PREFIX/share/divan/www).
 *
 * Data flow of GET /_utils/{rest} (and HEAD):
 *
 *   route.c: "/_utils" or "/_utils/{rest}" (flags 0: anyone may load the
 *     page, as in CouchDB; Fauxton logs in through /_session itself)
 *   ─▶ "/_utils" without its slash ─▶ 301 Location /_utils/ (send_redirect)
 *   ─▶ the relative path from r->seg[1..]: a segment that is empty, starts
 *      with '.' ("." "..", dot files) or holds '/', '\\' or NUL (decoded
 *      from %2F, %5C, %00) ─▶ 404 not_found; nothing is normalised, so no
 *      path can leave the document root
 *   ─▶ utils_docroot(): [chttpd] docroot, else $COUCHDB_FAUXTON_DOCROOT
 *      (CouchDB's variable), else the first UT_ROOTS entry next to the
 *      running binary that holds index.html ─▶ none: 404 with a reason that
 *      says where it looked
 *   ─▶ open + fstat: a directory ─▶ its index.html when the URL ends in
 *      '/', else 301 to the URL plus '/'; not a regular file ─▶ 404
 *   ─▶ the validators: ETag "INO-SIZE-MTIME" (hex; "…-gz" for the gzip
 *      form), Last-Modified; If-None-Match naming either form (or "*")
 *      ─▶ 304; without If-None-Match, If-Modified-Since equal to
 *      Last-Modified (mochiweb compares the strings) ─▶ 304
 *   ─▶ a compressible type (ut_types[].gz), at most UT_GZ_MAX bytes, and
 *      Accept-Encoding takes gzip ─▶ the gzip bytes from the cache (a miss
 *      reads and compresses the file once, kept while the cache has room:
 *      UT_CACHE_BYTES in UT_CACHE_N entries, an entry replaced when its
 *      file changes), Content-Encoding: gzip, sent whole
 *   ─▶ else the file itself, streamed from the descriptor (hres_stream:
 *      pread in the engine's pieces; HEAD reads nothing)
 *
 * Every answer carries Cache-Control "private, must-revalidate" and
 * CouchDB's Content-Security-Policy ([csp] utils_enable, utils_header_value,
 * and the legacy enable/header_value); compressible types carry Vary:
 * Accept-Encoding. A missing file is 404 not_found "missing" from err.h's
 * table (mochiweb answers a text/plain "Not found.").
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "util/alloc.h"
#include "util/gz.h"

#define UT_GZ_MAX (8u << 20)        /* largest file sent gzip'd (bigger ones go as they are) */
#define UT_CACHE_BYTES (16u << 20)  /* gzip'd bytes the cache keeps */
#define UT_CACHE_N 128              /* files the cache keeps */
#define UT_GZ_LEVEL 6               /* zlib's default: most of level 9's gain, far faster */

/* CouchDB's default [csp] utils_header_value (chttpd_misc). */
#define UT_CSP                                                                                                   \
  "child-src 'self' data: blob:; default-src 'self'; img-src 'self' data:; font-src 'self'; script-src 'self' " \
  "'unsafe-eval'; style-src 'self' 'unsafe-inline';"

/* Where Fauxton's files may be, relative to the running binary's
 * directory, in order. */
static const char *const ut_roots[] = {
    "../share/divan/www",                                    /* make install: PREFIX/bin/divan */
    "share/fauxton/node_modules/fauxton/dist/release",       /* ./divan in the source tree */
    "../../share/fauxton/node_modules/fauxton/dist/release", /* build/TAG/divan in the tree */
};

/* ---- content types ------------------------------------------------------------ */

/* Extension → Content-Type, and whether gzip helps (text, and fonts and
 * icons that are not compressed already). Types as mochiweb_mime names
 * them, IANA's where mochiweb has an x- name (fonts). Anything else is
 * application/octet-stream. */
static const struct ut_type {
  const char *ext;   /* lower case, without the dot */
  const char *type;  /* Content-Type */
  int gz;            /* compressible */
} ut_types[] = {
    {"html", "text/html", 1},
    {"htm", "text/html", 1},
    {"css", "text/css", 1},
    {"js", "application/javascript", 1},
    {"mjs", "application/javascript", 1},
    {"json", "application/json", 1},
    {"map", "application/json", 1},
    {"txt", "text/plain", 1},
    {"md", "text/markdown", 1},
    {"csv", "text/csv", 1},
    {"xml", "application/xml", 1},
    {"svg", "image/svg+xml", 1},
    {"ico", "image/x-icon", 1},
    {"png", "image/png", 0},
    {"gif", "image/gif", 0},
    {"jpg", "image/jpeg", 0},
    {"jpeg", "image/jpeg", 0},
    {"webp", "image/webp", 0},
    {"woff", "font/woff", 0},
    {"woff2", "font/woff2", 0},
    {"ttf", "font/ttf", 1},
    {"otf", "font/otf", 1},
    {"eot", "application/vnd.ms-fontobject", 1},
    {"wasm", "application/wasm", 1},
    {"pdf", "application/pdf", 0},
    {"zip", "application/zip", 0},
    {"gz", "application/gzip", 0},
};

static const struct ut_type ut_other = {"", "application/octet-stream", 0};

/* The type of a file name (its last extension, case ignored). */
static const struct ut_type *type_of(const char *name) {
  const char *dot = strrchr(name, '.'), *slash = strrchr(name, '/');
  if (!dot || (slash && dot < slash)) return &ut_other;
  for (size_t i = 0; i < sizeof ut_types / sizeof *ut_types; i++)
    if (!strcasecmp(dot + 1, ut_types[i].ext)) return &ut_types[i];
  return &ut_other;
}

/* ---- the document root -------------------------------------------------------- */

static char ut_bindir[PATH_MAX];   /* the running binary's directory, or "" */
static pthread_once_t ut_bindir_once = PTHREAD_ONCE_INIT;

static void find_bindir(void) {
  ssize_t n = readlink("/proc/self/exe", ut_bindir, sizeof ut_bindir - 1);
  if (n <= 0) n = 0;
  ut_bindir[n] = 0;
  char *slash = strrchr(ut_bindir, '/');
  if (slash) *slash = 0;
  else ut_bindir[0] = 0;
}

static int has_index(const char *dir) {
  char p[PATH_MAX];
  struct stat st;
  if (snprintf(p, sizeof p, "%s/index.html", dir) >= (int)sizeof p) return 0;
  return !stat(p, &st) && S_ISREG(st.st_mode);
}

static int is_dir(const char *dir, int *err) {
  struct stat st;
  if (stat(dir, &st)) {
    *err = errno;
    return 0;
  }
  *err = ENOTDIR;
  return S_ISDIR(st.st_mode);
}

int api_utils_docroot(dv_config *c, char **out, char **why) {
  *out = NULL;
  if (why) *why = NULL;
  dv_buf b;
  buf_init(&b);
  int err = 0;
  char *conf = c ? config_get(c, "chttpd", "docroot") : NULL;
  if (conf && *conf) {
    if (is_dir(conf, &err)) {
      *out = conf;
      return 0;
    }
    buf_printf(&b, "[chttpd] docroot \"%s\": %s.", conf, strerror(err));
    goto fail;
  }
  const char *env = getenv("COUCHDB_FAUXTON_DOCROOT");
  if (env && *env) {
    if (is_dir(env, &err)) {
      dv_free(conf);
      *out = dv_strndup(env, strlen(env));
      return *out ? 0 : DV_ENOMEM;
    }
    buf_printf(&b, "COUCHDB_FAUXTON_DOCROOT \"%s\": %s.", env, strerror(err));
    goto fail;
  }
  pthread_once(&ut_bindir_once, find_bindir);
  buf_puts(&b, "Fauxton is not installed: no index.html in");
  for (size_t i = 0; i < sizeof ut_roots / sizeof *ut_roots; i++) {
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", ut_bindir, ut_roots[i]) >= (int)sizeof p) continue;
    if (ut_bindir[0] && has_index(p)) {
      dv_free(conf);
      buf_free(&b);
      *out = dv_strndup(p, strlen(p));
      return *out ? 0 : DV_ENOMEM;
    }
    buf_printf(&b, "%s %s", i ? "," : "", p);
  }
  buf_puts(&b, "; run scripts/deps.sh, or set [chttpd] docroot.");
fail:
  dv_free(conf);
  if (why && !buf_error(&b)) *why = dv_strndup((const char *)b.p, b.len);
  buf_free(&b);
  return DV_ENOT_FOUND;
}

/* ---- the gzip cache ------------------------------------------------------------- */

/* One file's gzip'd bytes, valid while the file has this identity. */
typedef struct ut_gz {
  char *path;            /* full path (owned) */
  dev_t dev;             /* the file's identity when it was read */
  ino_t ino;
  off_t size;
  struct timespec mtime;
  uint8_t *gz;           /* its gzip bytes (owned) */
  size_t n;
} ut_gz;

static struct {
  pthread_mutex_t mu;
  ut_gz e[UT_CACHE_N];
  size_t n;              /* entries in use */
  size_t bytes;          /* gzip bytes held */
} ut_cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int same_file(const ut_gz *g, const struct stat *st) {
  return g->dev == st->st_dev && g->ino == st->st_ino && g->size == st->st_size &&
         g->mtime.tv_sec == st->st_mtim.tv_sec && g->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* Copy the cached gzip form of path (identity st) into out: 1 when found. */
static int cache_get(const char *path, const struct stat *st, dv_buf *out) {
  int found = 0;
  pthread_mutex_lock(&ut_cache.mu);
  for (size_t i = 0; i < ut_cache.n; i++) {
    ut_gz *g = &ut_cache.e[i];
    if (strcmp(g->path, path) || !same_file(g, st)) continue;
    buf_append(out, g->gz, g->n);
    found = 1;
    break;
  }
  pthread_mutex_unlock(&ut_cache.mu);
  return found;
}

/* Keep a copy of gz as path's gzip form, in place of an older one of the
 * same path, while there is room; otherwise keep nothing. */
static void cache_put(const char *path, const struct stat *st, const uint8_t *gz, size_t n) {
  pthread_mutex_lock(&ut_cache.mu);
  size_t i = 0;
  while (i < ut_cache.n && strcmp(ut_cache.e[i].path, path)) i++;
  size_t old = i < ut_cache.n ? ut_cache.e[i].n : 0;
  if ((i == ut_cache.n && i == UT_CACHE_N) || ut_cache.bytes - old + n > UT_CACHE_BYTES) goto out;
  uint8_t *copy = dv_malloc(n ? n : 1);
  char *p = i == ut_cache.n ? dv_strndup(path, strlen(path)) : ut_cache.e[i].path;
  if (!copy || !p) {
    dv_free(copy);
    if (i == ut_cache.n) dv_free(p);
    goto out;
  }
  memcpy(copy, gz, n);
  if (i == ut_cache.n) ut_cache.n++;
  else dv_free(ut_cache.e[i].gz);
  ut_cache.e[i] = (ut_gz){p, st->st_dev, st->st_ino, st->st_size, st->st_mtim, copy, n};
  ut_cache.bytes = ut_cache.bytes - old + n;
out:
  pthread_mutex_unlock(&ut_cache.mu);
}

/* The whole file (size bytes) from fd, gzip'd into out. */
static int gzip_file(int fd, size_t size, dv_buf *out) {
  uint8_t *p = dv_malloc(size ? size : 1);
  if (!p) return DV_ENOMEM;
  size_t got = 0;
  while (got < size) {
    ssize_t k = pread(fd, p + got, size - got, (off_t)got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      dv_free(p);
      return DV_EIO;
    }
    got += (size_t)k;
  }
  int rc = dv_gz_encode(p, size, UT_GZ_LEVEL, out);
  dv_free(p);
  return rc;
}

/* ---- streaming a file ------------------------------------------------------------- */

typedef struct ut_file {
  int fd;        /* open, owned */
  off_t off;     /* next byte to send */
} ut_file;

static int64_t file_read(void *arg, uint8_t *out, size_t max) {
  ut_file *f = arg;
  ssize_t k;
  do k = pread(f->fd, out, max, f->off);
  while (k < 0 && errno == EINTR);
  if (k <= 0) return -1; /* the file shrank under us: cut the body */
  f->off += k;
  return k;
}

static void file_done(void *arg) {
  ut_file *f = arg;
  close(f->fd);
  dv_free(f);
}

static const hstream_ops ut_file_ops = {file_read, file_done};

/* ---- the answers ---------------------------------------------------------------- */

/* The headers of every /_utils answer (chttpd_misc's CachingHeaders and
 * chttpd_util:maybe_add_csp_header("utils", …)). */
static void common_headers(hreq *r) {
  dv_config *c = api_config(r);
  hres_header(r, "Cache-Control", "private, must-revalidate");
  char *v = NULL;
  if (!c || config_get_bool(c, "csp", "utils_enable", 1)) v = c ? config_get(c, "csp", "utils_header_value") : NULL;
  else if (config_get_bool(c, "csp", "enable", 1)) v = config_get(c, "csp", "header_value");
  else return;
  hres_header(r, "Content-Security-Policy", v ? v : UT_CSP);
  dv_free(v);
}

/* 301 to the request's own path with a '/' added (chttpd:send_redirect:
 * an absolute URL, an empty body). */
static void redirect_slash(hreq *r) {
  const char *seg[HREQ_MAX_SEG + 1];
  size_t len[HREQ_MAX_SEG + 1];
  for (int i = 0; i < r->nseg; i++) seg[i] = r->seg[i], len[i] = r->seg_len[i];
  seg[r->nseg] = "";
  len[r->nseg] = 0;
  hres_location(r, seg, len, r->nseg + 1);
  hres_raw(r, 301, "text/plain", "", 0);
}

/* May this decoded path segment name a file under the document root? */
static int seg_ok(const char *s, size_t n) {
  if (!n || s[0] == '.') return 0; /* "", ".", "..", dot files */
  for (size_t i = 0; i < n; i++)
    if (s[i] == '/' || s[i] == '\\' || s[i] == 0) return 0;
  return 1;
}

static void set_validators(hreq *r, const struct stat *st, int gz, char *etag, size_t etag_size) {
  snprintf(etag, etag_size, "\"%llx-%llx-%llx%s\"", (unsigned long long)st->st_ino, (unsigned long long)st->st_size,
           (unsigned long long)st->st_mtim.tv_sec * 1000000000ull + (unsigned long long)st->st_mtim.tv_nsec,
           gz ? "-gz" : "");
  hres_header(r, "ETag", etag);
}

/* Serve the regular file open on fd (path for the cache, name for its
 * type). Takes fd. */
static void send_file(hreq *r, int fd, const char *path, const struct stat *st) {
  const struct ut_type *t = type_of(path);
  int gz = t->gz && st->st_size <= (off_t)UT_GZ_MAX && api_accepts_gzip(r);
  char etag[96], other[96], lm[64];
  struct tm tm;
  lm[0] = 0;
  if (gmtime_r(&st->st_mtim.tv_sec, &tm)) strftime(lm, sizeof lm, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  set_validators(r, st, gz, etag, sizeof etag);
  snprintf(other, sizeof other, "%.*s%s\"", (int)strlen(etag) - (gz ? 4 : 1), etag, gz ? "" : "-gz");
  if (lm[0]) hres_header(r, "Last-Modified", lm);
  if (t->gz) hres_header(r, "Vary", "Accept-Encoding");
  const char *inm = hreq_hdr(r, "If-None-Match"), *ims = hreq_hdr(r, "If-Modified-Since");
  if (inm ? (hreq_etag_match(r, etag) || hreq_etag_match(r, other) || !strcmp(inm, "*"))
          : (ims && lm[0] && !strcmp(ims, lm))) {
    close(fd);
    hres_raw(r, 304, t->type, "", 0);
    return;
  }
  if (gz) {
    dv_buf b;
    buf_init(&b);
    int rc = 0;
    if (!cache_get(path, st, &b)) {
      rc = gzip_file(fd, (size_t)st->st_size, &b);
      if (!rc && !buf_error(&b)) cache_put(path, st, b.p, b.len);
    }
    close(fd);
    if (!rc && buf_error(&b)) rc = DV_ENOMEM;
    if (rc) hres_err(r, rc);
    else {
      hres_header(r, "Content-Encoding", "gzip");
      hres_raw(r, 200, t->type, b.p, b.len);
    }
    buf_free(&b);
    return;
  }
  ut_file *f = dv_malloc(sizeof *f);
  if (!f) {
    close(fd);
    hres_err(r, DV_ENOMEM);
    return;
  }
  *f = (ut_file){fd, 0};
  hres_stream(r, 200, t->type, (uint64_t)st->st_size, &ut_file_ops, f);
}

/* GET /_utils and /_utils/{rest}. */
static void utils_get(hreq *r) {
  size_t plen = strlen(r->path);
  int slash = plen && r->path[plen - 1] == '/';
  if (r->nseg == 1 && !slash) {
    redirect_slash(r); /* GET /_utils */
    return;
  }
  common_headers(r);
  char *root = NULL, *why = NULL;
  int rc = api_utils_docroot(api_config(r), &root, &why);
  if (rc) {
    hres_errw(r, rc, why);
    dv_free(why);
    return;
  }
  dv_buf p;
  buf_init(&p);
  buf_puts(&p, root);
  dv_free(root);
  for (int i = 1; i < r->nseg; i++) {
    if (!seg_ok(r->seg[i], r->seg_len[i])) {
      buf_free(&p);
      hres_err(r, DV_ENOT_FOUND);
      return;
    }
    buf_putc(&p, '/');
    buf_append(&p, r->seg[i], r->seg_len[i]);
  }
  if (buf_error(&p) || p.len >= PATH_MAX) {
    buf_free(&p);
    hres_err(r, buf_error(&p) ? DV_ENOMEM : DV_ENOT_FOUND);
    return;
  }
  struct stat st;
  /* O_NONBLOCK: opening a FIFO someone left in the tree must not wait */
  int fd = open((const char *)p.p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0 && !fstat(fd, &st) && S_ISDIR(st.st_mode)) {
    close(fd);
    fd = -1;
    if (!slash) {
      buf_free(&p);
      redirect_slash(r);
      return;
    }
    buf_puts(&p, "/index.html");
    if (!buf_error(&p)) fd = open((const char *)p.p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } else if (fd >= 0 && slash && r->nseg > 1) { /* "file/" names no file, as a file system says */
    close(fd);
    fd = -1;
  }
  if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    if (fd >= 0) close(fd);
    buf_free(&p);
    hres_err(r, DV_ENOT_FOUND);
    return;
  }
  send_file(r, fd, (const char *)p.p, &st);
  buf_free(&p);
}

/* ---- routes ------------------------------------------------------------------------ */

static const http_route routes[] = {
    /* Fauxton: anyone may load it (CouchDB's /_utils needs no login) */
    {GET_HEAD, "/_utils", 0, utils_get},
    {GET_HEAD, "/_utils/{rest}", 0, utils_get},
};
const api_routes api_utils_routes = API_TABLE(routes);
