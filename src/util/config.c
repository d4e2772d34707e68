/* config.c — CouchDB-style ini configuration; see config.h for the format
 * and the rules.
 *
 * The file layer is kept as the file's own lines: each cfg_line holds the
 * bytes it was read as (a key with its continuation lines is one cfg_line)
 * next to what they mean (a header's section, or a key and its value).
 * Writing the file back is concatenating those bytes, which is how comments,
 * order and blank lines survive an edit; an edit replaces, inserts or drops
 * whole cfg_lines. A key's section is the last header above it. Lookups are
 * linear scans: a configuration holds tens to hundreds of keys and is read
 * far more often than it is changed, so there is no index to keep in step.
 *
 * Overrides are a small unordered array beside the lines. One mutex guards
 * both; values leave it only as copies.
 *
 * Not here: what any section or key means, defaults, watching the file.
 */
#include "util/config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/buf.h"

typedef struct cfg_line {
  char *text;     /* its bytes in the file, with '\n' and continuation lines
                     (the file's last line may lack the '\n') */
  size_t len;     /* bytes of text */
  char *section;  /* a header: the section's name; otherwise NULL */
  char *key;      /* a key line: the key; otherwise NULL */
  char *value;    /* a key line: the value, continuations joined */
} cfg_line;

typedef struct cfg_override {
  char *section;  /* section name */
  char *key;      /* key */
  char *value;    /* the value, or NULL: the key is deleted */
} cfg_override;

/* A layer of entries over the file: the overrides, or the shared values. */
typedef struct cfg_layer {
  cfg_override *e;      /* unordered */
  size_t n;
} cfg_layer;

struct dv_config {
  pthread_mutex_t mu;   /* guards everything below but path */
  char *path;           /* the ini file, or NULL; set once at load */
  cfg_line **lines;     /* the file layer, in file order */
  size_t nlines;        /* entries in lines */
  cfg_layer shr;        /* the shared layer (config_shared_replace) */
  cfg_layer ovr;        /* the override layer */
  config_shared_hook hook; /* where shared keys are written; .write NULL: none */
};

/* rewrite()'s result when the new file is in place but the directory
 * fsync after the rename failed: the change is made, and reported as
 * DV_EIO by the public function. */
#define MADE_BUT_EIO 1

/* ---- small helpers ---- */

static int is_ws(char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; }

static char *dup_str(const char *s) { return dv_strndup(s, strlen(s)); }

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

static void line_free(cfg_line *l) {
  if (!l) return;
  dv_free(l->text);
  dv_free(l->section);
  dv_free(l->key);
  dv_free(l->value);
  dv_free(l);
}

/* A line holding a copy of text[0..len) and owning section, key and value
 * (which it frees itself if it cannot be made). NULL on allocation failure. */
static cfg_line *line_new(const char *text, size_t len, char *section, char *key, char *value) {
  cfg_line *l = dv_calloc(1, sizeof *l);
  char *t = dv_strndup(text, len);
  if (!l || !t) {
    dv_free(l);
    dv_free(t);
    dv_free(section);
    dv_free(key);
    dv_free(value);
    return NULL;
  }
  *l = (cfg_line){t, len, section, key, value};
  return l;
}

/* A line made by divan: "[section]\n" if section is set, else "key = value\n"
 * ("key =\n" for an empty value) if key is set, else a blank line; it
 * holds copies of the strings. NULL on allocation failure. */
static cfg_line *line_make(const char *section, const char *key, const char *value) {
  dv_buf b = DV_BUF_INIT;
  if (section) buf_printf(&b, "[%s]\n", section);
  else if (key) buf_printf(&b, "%s =%s%s\n", key, *value ? " " : "", value);
  else buf_putc(&b, '\n');
  char *s = section ? dup_str(section) : NULL;
  char *k = key ? dup_str(key) : NULL;
  char *v = key ? dup_str(value) : NULL;
  cfg_line *l = NULL;
  if (!buf_error(&b) && !!s == !!section && !!k == !!key && !!v == !!key)
    l = line_new((char *)b.p, b.len, s, k, v); /* takes s, k, v either way */
  else {
    dv_free(s);
    dv_free(k);
    dv_free(v);
  }
  buf_free(&b);
  return l;
}

static void override_free(cfg_override *o) {
  dv_free(o->section);
  dv_free(o->key);
  dv_free(o->value);
}

/* ---- lookups (mutex held) ---- */

/* Index of the last file line of section/key, or -1. */
static long find_entry(const dv_config *c, const char *section, const char *key) {
  const char *cur = NULL;
  long found = -1;
  for (size_t i = 0; i < c->nlines; i++) {
    const cfg_line *l = c->lines[i];
    if (l->section) cur = l->section;
    else if (l->key && cur && !strcmp(cur, section) && !strcmp(l->key, key)) found = (long)i;
  }
  return found;
}

/* Index of the last header of section, or -1. */
static long find_header(const dv_config *c, const char *section) {
  long found = -1;
  for (size_t i = 0; i < c->nlines; i++)
    if (c->lines[i]->section && !strcmp(c->lines[i]->section, section)) found = (long)i;
  return found;
}

static cfg_override *find_in(const cfg_layer *l, const char *section, const char *key) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->e[i].section, section) && !strcmp(l->e[i].key, key)) return &l->e[i];
  return NULL;
}

static cfg_override *find_override(const dv_config *c, const char *section, const char *key) {
  return find_in(&c->ovr, section, key);
}

/* The effective value (borrowed, mutex held), or NULL: an override, else a
 * shared value, else the file's. */
static const char *effective(const dv_config *c, const char *section, const char *key) {
  const cfg_override *o = find_override(c, section, key);
  if (!o) o = find_in(&c->shr, section, key);
  if (o) return o->value;
  long i = find_entry(c, section, key);
  return i >= 0 ? c->lines[i]->value : NULL;
}

/* ---- parsing ---- */

/* One physical line of the input. */
typedef struct phys {
  const char *start;  /* first byte */
  const char *tb;     /* first byte after leading whitespace */
  const char *te;     /* end of the text before trailing whitespace */
  const char *next;   /* first byte of the next line (past the '\n') */
} phys;

static phys phys_at(const char *p, const char *end) {
  phys ph = {p, p, p, end};
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  const char *e = nl ? nl : end;
  ph.next = nl ? nl + 1 : end;
  while (ph.tb < e && is_ws(*ph.tb)) ph.tb++;
  ph.te = e;
  while (ph.te > ph.tb && is_ws(ph.te[-1])) ph.te--;
  return ph;
}

/* A continuation of the value above: led by a space or tab, not blank,
 * not a comment or header, without '=' (CouchDB reads such a line as a
 * key of its own). */
static int is_continuation(const phys *ph) {
  if (*ph->start != ' ' && *ph->start != '\t') return 0;
  if (ph->tb == ph->te || strchr(";#[", *ph->tb)) return 0;
  return memchr(ph->tb, '=', (size_t)(ph->te - ph->tb)) == NULL;
}

static int syntax(char *err, size_t errlen, int lineno, const char *why) {
  set_err(err, errlen, "line %d: %s", lineno, why);
  return DV_EINVAL;
}

/* Parse text into c's (empty) line list. */
static int parse(dv_config *c, const char *text, size_t len, char *err, size_t errlen) {
  const char *end = text + len, *p = text;
  const char *nul = memchr(text, 0, len);
  int lineno = 0, in_section = 0, rc = 0;
  size_t cap = 0;
  dv_buf val = DV_BUF_INIT;

  if (nul) {
    for (const char *q = text; q <= nul; q++) lineno += q == text || q[-1] == '\n';
    return syntax(err, errlen, lineno, "NUL byte");
  }
  while (p < end) {
    phys ph = phys_at(p, end);
    size_t n = (size_t)(ph.te - ph.tb);
    char *section = NULL, *key = NULL, *value = NULL;
    lineno++;
    if (n == 0 || *ph.tb == ';' || *ph.tb == '#') {
      /* blank or comment: kept as bytes only */
    } else if (*ph.tb == '[') {
      const char *rb = memchr(ph.tb, ']', n);
      if (!rb) { rc = syntax(err, errlen, lineno, "unterminated section header"); goto fail; }
      const char *q = rb + 1;
      while (q < ph.te && is_ws(*q)) q++;
      if (q < ph.te && *q != ';' && *q != '#') {
        rc = syntax(err, errlen, lineno, "text after section header");
        goto fail;
      }
      if (!(section = dv_strndup(ph.tb + 1, (size_t)(rb - ph.tb - 1)))) goto nomem;
      in_section = 1;
    } else {
      const char *eq = memchr(ph.tb, '=', n), *ke, *vb;
      if (!eq) { rc = syntax(err, errlen, lineno, "expected key = value"); goto fail; }
      if (!in_section) { rc = syntax(err, errlen, lineno, "key outside any section"); goto fail; }
      for (ke = eq; ke > ph.tb && is_ws(ke[-1]); ke--) {}
      if (ke == ph.tb) { rc = syntax(err, errlen, lineno, "empty key"); goto fail; }
      for (vb = eq + 1; vb < ph.te && is_ws(*vb); vb++) {}
      buf_reset(&val);
      buf_append(&val, vb, (size_t)(ph.te - vb));
      while (ph.next < end) { /* swallow continuation lines */
        phys cont = phys_at(ph.next, end);
        if (!is_continuation(&cont)) break;
        lineno++;
        if (val.len) buf_putc(&val, ' ');
        buf_append(&val, cont.tb, (size_t)(cont.te - cont.tb));
        ph.next = cont.next;
      }
      if (buf_error(&val)) goto nomem;
      key = dv_strndup(ph.tb, (size_t)(ke - ph.tb));
      value = dv_strndup(val.len ? (char *)val.p : "", val.len);
      if (!key || !value) {
        dv_free(key);
        dv_free(value);
        goto nomem;
      }
    }
    if (c->nlines == cap) {
      size_t ncap = cap ? 2 * cap : 16;
      cfg_line **nl = dv_realloc(c->lines, ncap * sizeof *nl);
      if (!nl) {
        dv_free(section);
        dv_free(key);
        dv_free(value);
        goto nomem;
      }
      c->lines = nl;
      cap = ncap;
    }
    cfg_line *l = line_new(p, (size_t)(ph.next - p), section, key, value);
    if (!l) goto nomem;
    c->lines[c->nlines++] = l;
    p = ph.next;
  }
  buf_free(&val);
  return 0;

nomem:
  set_err(err, errlen, "out of memory");
  rc = DV_ENOMEM;
fail:
  buf_free(&val);
  return rc;
}

/* ---- writing the file ---- */

/* Write PATH.tmp, fsync it, rename it over PATH, fsync the directory.
 * 0; DV_ENOMEM or DV_EIO with nothing changed (errno says why); or
 * MADE_BUT_EIO when only the directory fsync failed. */
static int write_file(const char *path, const dv_buf *b) {
  size_t plen = strlen(path);
  const char *slash = strrchr(path, '/');
  char *tmp = dv_malloc(plen + 5);
  char *dir = slash ? dv_strndup(path, slash == path ? 1 : (size_t)(slash - path)) : dup_str(".");
  int fd = -1, rc = DV_EIO, e = 0;
  struct stat st;
  mode_t mode = 0600;

  if (!tmp || !dir) { rc = DV_ENOMEM; e = ENOMEM; goto done; }
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, ".tmp", 5);
  if (stat(path, &st) == 0) mode = st.st_mode & 07777;
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || fchmod(fd, mode) != 0) goto io;
  for (size_t off = 0; off < b->len;) {
    ssize_t w = write(fd, b->p + off, b->len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) goto io;
    off += (size_t)w;
  }
  if (fsync(fd) != 0) goto io;
  int cl = close(fd);
  fd = -1;
  if (cl != 0 || rename(tmp, path) != 0) goto io;
  rc = 0;
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || fsync(dfd) != 0) { e = errno; rc = MADE_BUT_EIO; }
  if (dfd >= 0) close(dfd);
  goto done;

io:
  e = errno;
  if (fd >= 0) close(fd);
  unlink(tmp);
done:
  dv_free(tmp);
  dv_free(dir);
  if (rc) errno = e;
  return rc;
}

/* Make nl (nn lines) the file layer: write the file if c has a path, then
 * put nl in place of c->lines. On a negative result nothing changed and nl
 * is still the caller's; otherwise c owns nl, and the caller frees the old
 * array and the lines nl no longer holds. */
static int rewrite(dv_config *c, cfg_line **nl, size_t nn) {
  int rc = 0;
  if (c->path) {
    dv_buf b = DV_BUF_INIT;
    for (size_t i = 0; i < nn; i++) {
      buf_append(&b, nl[i]->text, nl[i]->len);
      if (i + 1 < nn && nl[i]->text[nl[i]->len - 1] != '\n') buf_putc(&b, '\n');
    }
    rc = buf_error(&b);
    if (!rc) rc = write_file(c->path, &b);
    buf_free(&b);
    if (rc < 0) return rc;
  }
  c->lines = nl;
  c->nlines = nn;
  return rc;
}

/* Replace lines [at, at+ndel) with ins[0..nins) in the file layer. On a
 * negative result nothing changed and the ins lines are freed. */
static int splice(dv_config *c, size_t at, size_t ndel, cfg_line **ins, size_t nins) {
  size_t nn = c->nlines - ndel + nins;
  cfg_line **old = c->lines, **nl = dv_malloc(nn * sizeof *nl);
  int rc = DV_ENOMEM;
  if (nl) {
    for (size_t i = 0; i < at; i++) nl[i] = old[i];
    for (size_t i = 0; i < nins; i++) nl[at + i] = ins[i];
    for (size_t i = at + ndel; i < c->nlines; i++) nl[i - ndel + nins] = old[i];
    rc = rewrite(c, nl, nn);
    if (rc >= 0) {
      for (size_t i = at; i < at + ndel; i++) line_free(old[i]);
      dv_free(old);
      return rc;
    }
    dv_free(nl);
  }
  for (size_t i = 0; i < nins; i++) line_free(ins[i]);
  return rc;
}

/* ---- the two layers' edits (mutex held) ---- */

/* Set the file value of section/key (and the file). */
static int set_file(dv_config *c, const char *section, const char *key, const char *value) {
  cfg_line *ins[3] = {NULL, NULL, NULL};
  size_t nins = 0;
  long i = find_entry(c, section, key), h = find_header(c, section);

  if (i >= 0 || h >= 0) {
    if (!(ins[0] = line_make(NULL, key, value))) return DV_ENOMEM;
    if (i >= 0) return splice(c, (size_t)i, 1, ins, 1); /* in place */
    /* after the last key of the section's last block */
    size_t at = (size_t)h + 1;
    for (size_t j = at; j < c->nlines && !c->lines[j]->section; j++)
      if (c->lines[j]->key) at = j + 1;
    return splice(c, at, 0, ins, 1);
  }
  /* a new section at the end, after a blank line unless there is one */
  if (c->nlines) {
    const cfg_line *last = c->lines[c->nlines - 1];
    phys ph = phys_at(last->text, last->text + last->len);
    if (ph.tb != ph.te && !(ins[nins++] = line_make(NULL, NULL, NULL))) goto nomem;
  }
  if (!(ins[nins++] = line_make(section, NULL, NULL))) goto nomem;
  if (!(ins[nins++] = line_make(NULL, key, value))) goto nomem;
  return splice(c, c->nlines, 0, ins, nins);

nomem:
  for (size_t j = 0; j < nins; j++) line_free(ins[j]);
  return DV_ENOMEM;
}

/* Drop every file line of section/key (and rewrite the file). */
static int delete_file(dv_config *c, const char *section, const char *key) {
  cfg_line **old = c->lines, **nl = dv_malloc(c->nlines * sizeof *nl);
  const char *cur = NULL;
  size_t nn = 0, nold = c->nlines;
  if (!nl) return DV_ENOMEM;
  for (size_t i = 0; i < nold; i++) {
    cfg_line *l = old[i];
    if (l->section) cur = l->section;
    if (!(l->key && cur && !strcmp(cur, section) && !strcmp(l->key, key))) nl[nn++] = l;
  }
  int rc = rewrite(c, nl, nn);
  if (rc < 0) {
    dv_free(nl);
    return rc;
  }
  for (size_t i = 0; i < nold; i++) { /* free what was dropped */
    cfg_line *l = old[i];
    if (l->section) cur = l->section;
    if (l->key && cur && !strcmp(cur, section) && !strcmp(l->key, key)) line_free(l);
  }
  dv_free(old);
  return rc;
}

/* Set section/key in layer l to value (NULL: a deletion). */
static int set_in(cfg_layer *l, const char *section, const char *key, const char *value) {
  cfg_override *o = find_in(l, section, key);
  char *v = NULL;
  if (value && !(v = dup_str(value))) return DV_ENOMEM;
  if (o) {
    dv_free(o->value);
    o->value = v;
    return 0;
  }
  cfg_override no = {dup_str(section), dup_str(key), v};
  cfg_override *arr = no.section && no.key ? dv_realloc(l->e, (l->n + 1) * sizeof *arr) : NULL;
  if (!arr) {
    override_free(&no);
    return DV_ENOMEM;
  }
  l->e = arr;
  l->e[l->n++] = no;
  return 0;
}

static int set_override(dv_config *c, const char *section, const char *key, const char *value) {
  return set_in(&c->ovr, section, key, value);
}

static void drop_override(dv_config *c, cfg_override *o) {
  override_free(o);
  *o = c->ovr.e[--c->ovr.n];
}

static void layer_free(cfg_layer *l) {
  for (size_t i = 0; i < l->n; i++) override_free(&l->e[i]);
  dv_free(l->e);
  l->e = NULL;
  l->n = 0;
}

/* ---- the interface ---- */

static dv_config *config_new(void) {
  dv_config *c = dv_calloc(1, sizeof *c);
  if (c && pthread_mutex_init(&c->mu, NULL) != 0) {
    dv_free(c);
    return NULL;
  }
  return c;
}

void config_free(dv_config *c) {
  if (!c) return;
  for (size_t i = 0; i < c->nlines; i++) line_free(c->lines[i]);
  layer_free(&c->ovr);
  layer_free(&c->shr);
  dv_free(c->lines);
  dv_free(c->path);
  pthread_mutex_destroy(&c->mu);
  dv_free(c);
}

int config_parse(const char *text, size_t len, dv_config **out, char *err, size_t errlen) {
  dv_config *c = config_new();
  if (!c) {
    set_err(err, errlen, "out of memory");
    return DV_ENOMEM;
  }
  int rc = parse(c, text ? text : "", text ? len : 0, err, errlen);
  if (rc) {
    config_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

int config_load(const char *path, dv_config **out, char *err, size_t errlen) {
  dv_buf text = DV_BUF_INIT;
  dv_config *c = NULL;
  char msg[128];
  int rc = 0, fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;

  if (path && fd < 0 && errno != ENOENT) goto io;
  while (fd >= 0) {
    if (buf_reserve(&text, 65536)) goto nomem;
    ssize_t n = read(fd, text.p + text.len, text.cap - text.len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) goto io;
    if (n == 0) break;
    text.len += (size_t)n;
  }
  if (!(c = config_new())) goto nomem;
  if (path && !(c->path = dup_str(path))) goto nomem;
  rc = parse(c, text.p ? (char *)text.p : "", text.len, msg, sizeof msg);
  if (rc == DV_ENOMEM) goto nomem;
  if (rc) {
    set_err(err, errlen, "%s: %s", path ? path : "(none)", msg);
    goto done;
  }
  *out = c;
  c = NULL;
  goto done;

io:
  set_err(err, errlen, "%s: %s", path, strerror(errno));
  rc = DV_EIO;
  goto done;
nomem:
  set_err(err, errlen, "out of memory");
  rc = DV_ENOMEM;
done:
  if (fd >= 0) close(fd);
  buf_free(&text);
  config_free(c);
  return rc;
}

const char *config_path(const dv_config *c) { return c ? c->path : NULL; }

char *config_get(dv_config *c, const char *section, const char *key) {
  if (!c || !section || !key) return NULL;
  pthread_mutex_lock(&c->mu);
  const char *v = effective(c, section, key);
  char *copy = v ? dup_str(v) : NULL;
  pthread_mutex_unlock(&c->mu);
  return copy;
}

long long config_get_int(dv_config *c, const char *section, const char *key, long long dflt) {
  if (!c || !section || !key) return dflt;
  long long r = dflt;
  pthread_mutex_lock(&c->mu);
  const char *v = effective(c, section, key);
  if (v) {
    const char *d = v + (*v == '+' || *v == '-');
    char *end;
    int e = errno;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*d >= '0' && *d <= '9' && !*end && errno != ERANGE) r = x;
    errno = e;
  }
  pthread_mutex_unlock(&c->mu);
  return r;
}

int config_get_bool(dv_config *c, const char *section, const char *key, int dflt) {
  if (!c || !section || !key) return dflt;
  int r = dflt;
  pthread_mutex_lock(&c->mu);
  const char *v = effective(c, section, key);
  if (v && !strcasecmp(v, "true")) r = 1;
  else if (v && !strcasecmp(v, "false")) r = 0;
  pthread_mutex_unlock(&c->mu);
  return r;
}

/* 1 if s starts or ends with whitespace the parser would trim. */
static int edge_ws(const char *s) {
  size_t n = strlen(s);
  return n && (is_ws(s[0]) || is_ws(s[n - 1]));
}

/* 1 if section/key/value can be written and read back unchanged. */
static int writable(const char *section, const char *key, const char *value) {
  if (!section || !key || !value) return 0;
  if (strpbrk(section, "\n]")) return 0;
  if (!*key || strchr("[;#", key[0]) || strpbrk(key, "\n=") || edge_ws(key)) return 0;
  return !strchr(value, '\n') && !edge_ws(value);
}

/* Copy the effective value into *old (NULL if none); 0 or DV_ENOMEM. */
static int copy_old(const dv_config *c, const char *section, const char *key, char **old) {
  const char *v = effective(c, section, key);
  *old = NULL;
  if (v && !(*old = dup_str(v))) return DV_ENOMEM;
  return 0;
}

/* The public result: MADE_BUT_EIO becomes DV_EIO; errno survives the
 * unlock and frees. */
static int finish(dv_config *c, int rc, char *old, char **out_old) {
  int e = errno;
  pthread_mutex_unlock(&c->mu);
  if (rc == MADE_BUT_EIO) rc = DV_EIO;
  if (rc || !out_old) dv_free(old);
  else *out_old = old;
  errno = e;
  return rc;
}

/* 1 if a persisted write of section/key goes to the hook (mutex held). */
static int shared_key(const dv_config *c, const char *section, const char *key) {
  return c->hook.write && (!c->hook.scope || c->hook.scope(section, key));
}

/* A persisted write of a shared key: the hook first, without the mutex (it
 * runs a transaction); then, the write made, the file and the shared layer.
 * value NULL: a delete. The mutex is held on entry and on return. */
static int write_shared(dv_config *c, const char *section, const char *key, const char *value) {
  config_shared_hook h = c->hook;
  pthread_mutex_unlock(&c->mu);
  int rc = h.write(h.arg, section, key, value);
  pthread_mutex_lock(&c->mu);
  if (rc) return rc < 0 ? rc : DV_EIO;
  /* in force now: the shared layer at once (read your writes), then this
   * process's copy in its file, as a write without a hook makes it */
  if ((rc = set_in(&c->shr, section, key, value)) != 0) return rc;
  if (value) return set_file(c, section, key, value);
  return find_entry(c, section, key) >= 0 ? delete_file(c, section, key) : 0;
}

int config_set(dv_config *c, const char *section, const char *key, const char *value, int persist,
               char **out_old) {
  char *old = NULL;
  if (!c || !writable(section, key, value)) return DV_EINVAL;
  pthread_mutex_lock(&c->mu);
  int rc = out_old ? copy_old(c, section, key, &old) : 0;
  if (!rc && persist && shared_key(c, section, key)) rc = write_shared(c, section, key, value);
  else if (!rc) rc = persist ? set_file(c, section, key, value) : set_override(c, section, key, value);
  return finish(c, rc, old, out_old);
}

int config_delete(dv_config *c, const char *section, const char *key, int persist, char **out_old) {
  char *old = NULL;
  int rc;
  if (!c || !section || !key) return DV_EINVAL;
  pthread_mutex_lock(&c->mu);
  cfg_override *o = find_override(c, section, key);
  int in_file = find_entry(c, section, key) >= 0;
  int shared = persist && shared_key(c, section, key);
  if (shared ? !effective(c, section, key) && !o && !in_file
             : persist ? !o && !in_file : !effective(c, section, key)) {
    rc = DV_ENOT_FOUND;
  } else if ((rc = out_old ? copy_old(c, section, key, &old) : 0)) {
    /* out of memory */
  } else if (shared) {
    rc = write_shared(c, section, key, NULL);
    if (rc >= 0 && (o = find_override(c, section, key))) drop_override(c, o);
  } else if (!persist) {
    if (in_file) rc = set_override(c, section, key, NULL);
    else drop_override(c, o);
  } else {
    if (in_file) rc = delete_file(c, section, key);
    if (rc >= 0 && o) drop_override(c, o);
  }
  return finish(c, rc, old, out_old);
}

void config_set_shared_hook(dv_config *c, const config_shared_hook *h) {
  pthread_mutex_lock(&c->mu);
  c->hook = h ? *h : (config_shared_hook){0};
  pthread_mutex_unlock(&c->mu);
}

int config_shared_key(dv_config *c, const char *section, const char *key) {
  pthread_mutex_lock(&c->mu);
  int r = shared_key(c, section, key);
  pthread_mutex_unlock(&c->mu);
  return r;
}

int config_shared_replace(dv_config *c, const config_row *rows, size_t n, int *changed) {
  cfg_layer nl = {0};
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) rc = set_in(&nl, rows[i].section, rows[i].key, rows[i].value);
  if (rc) {
    layer_free(&nl);
    return rc;
  }
  pthread_mutex_lock(&c->mu);
  int diff = nl.n != c->shr.n;
  for (size_t i = 0; i < nl.n && !diff; i++) {
    const cfg_override *a = &nl.e[i], *b = find_in(&c->shr, a->section, a->key);
    diff = !b || (!a->value != !b->value) || (a->value && strcmp(a->value, b->value));
  }
  cfg_layer old = c->shr;
  c->shr = nl;
  pthread_mutex_unlock(&c->mu);
  layer_free(&old);
  if (changed) *changed = diff;
  return 0;
}

/* ---- config_each ---- */

typedef struct each_item {
  const char *section;  /* borrowed from the config (mutex held) */
  const char *key;
  const char *value;    /* NULL: deleted by an override */
  size_t rank;          /* later wins: file order, then shared, then overrides */
} each_item;

static int item_cmp(const void *a, const void *b) {
  const each_item *x = a, *y = b;
  int d = strcmp(x->section, y->section);
  if (!d) d = strcmp(x->key, y->key);
  if (!d) d = x->rank < y->rank ? -1 : x->rank > y->rank;
  return d;
}

static int each(dv_config *c, const char *section, int file_only, config_cb cb, void *arg) {
  each_item *items = NULL;
  size_t *offs = NULL, n = 0, nout = 0;
  dv_buf snap = DV_BUF_INIT;
  const char *cur = NULL;
  int rc = 0;

  if (!c || !cb) return DV_EINVAL;
  pthread_mutex_lock(&c->mu);
  size_t cap = c->nlines + c->shr.n + c->ovr.n + 1;
  items = dv_malloc(cap * sizeof *items);
  offs = dv_malloc(cap * 3 * sizeof *offs);
  if (!items || !offs) {
    rc = DV_ENOMEM;
    pthread_mutex_unlock(&c->mu);
    goto done;
  }
  for (size_t i = 0; i < c->nlines; i++) {
    const cfg_line *l = c->lines[i];
    if (l->section) cur = l->section;
    else if (l->key && cur && (!section || !strcmp(cur, section)))
      items[n++] = (each_item){cur, l->key, l->value, i};
  }
  const cfg_layer *layers[2] = {&c->shr, &c->ovr}; /* rank: file, shared, overrides */
  for (int k = 0; k < 2 && !file_only; k++)
    for (size_t i = 0; i < layers[k]->n; i++) {
      const cfg_override *o = &layers[k]->e[i];
      if (!section || !strcmp(o->section, section))
        items[n++] = (each_item){o->section, o->key, o->value, c->nlines + (k ? c->shr.n : 0) + i};
    }
  qsort(items, n, sizeof *items, item_cmp);
  /* the last of each (section, key) run wins; copy it into the snapshot */
  for (size_t i = 0; i < n; i++) {
    const each_item *it = &items[i];
    if (i + 1 < n && !strcmp(it->section, items[i + 1].section) && !strcmp(it->key, items[i + 1].key))
      continue;
    if (!it->value) continue;
    offs[3 * nout] = snap.len;
    buf_append(&snap, it->section, strlen(it->section) + 1);
    offs[3 * nout + 1] = snap.len;
    buf_append(&snap, it->key, strlen(it->key) + 1);
    offs[3 * nout + 2] = snap.len;
    buf_append(&snap, it->value, strlen(it->value) + 1);
    nout++;
  }
  pthread_mutex_unlock(&c->mu);
  if ((rc = buf_error(&snap))) goto done;
  for (size_t i = 0; i < nout && !rc; i++) {
    const char *s = (char *)snap.p;
    rc = cb(arg, s + offs[3 * i], s + offs[3 * i + 1], s + offs[3 * i + 2]);
  }
done:
  dv_free(items);
  dv_free(offs);
  buf_free(&snap);
  return rc;
}

int config_each(dv_config *c, const char *section, config_cb cb, void *arg) {
  return each(c, section, 0, cb, arg);
}

int config_each_file(dv_config *c, config_cb cb, void *arg) { return each(c, NULL, 1, cb, arg); }
