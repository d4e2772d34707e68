/* move.c — `divan move` and the HTTP forms of dump and load (dump.h): a
 * bounded pipe between a dump and a load, each side on a thread of its own
 * when the caller cannot block (HTTP), and store_move.
 *
 * store_move:
 *   dump thread: store_dump(src) ─▶ dump_pipe (STORE_MOVE_PIPE bytes at
 *                most; the writer waits for room)
 *   caller:      store_load(dst) ◀─ dump_pipe
 *   the dump's last catch-up round runs with the source marked read-only
 *   (store_db_set_moving, through store_dump_opts.freeze): every write
 *   there gets DV_EDB_MOVING, so the round that finds the database still
 *   is its last state, and the load that ends with it is the whole source.
 *   load committed ─▶ retire the source: keep (lift the mark), rename
 *   (Name_moved_<unix seconds>: lower case, digits and '_' keep the name
 *   legal), or delete.
 *   a failure ─▶ the reader closes the pipe (the dump stops at its next
 *   write), the read-only mark is lifted. The load's own failure clears
 *   its prefix (store_load); the dump's (the source side: an input error
 *   to the load) keeps what was loaded and the load's mark, with its last
 *   checkpoint (dump.c), and says so.
 *   resume (store_move_opts.resume) ─▶ the target's newest mark of
 *   newname: the dump starts at its checkpoint (with its dump id, refused
 *   when the source's DbUUID is not the mark's) and the load writes on
 *   into its prefix (STORE_LOAD_RESUME_STREAM); then as above.
 * Memory: the pipe, one dump block and one load batch (dump.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "store/dump.h"
#include "util/alloc.h"
#include "util/thread.h"

/* ---- the pipe -------------------------------------------------------------------- */

struct dump_pipe {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint8_t *buf;
  size_t cap, head, len;  /* a ring: len bytes from head */
  int wclosed, wrc, rclosed, refs;
  void (*wake)(void *arg);
  void *wake_arg;
};

dump_pipe *dump_pipe_new(size_t cap) {
  dump_pipe *p = dv_calloc(1, sizeof *p);
  if (!p) return NULL;
  p->buf = dv_malloc(cap);
  if (!p->buf) {
    dv_free(p);
    return NULL;
  }
  p->cap = cap;
  p->refs = 1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  return p;
}

void dump_pipe_ref(dump_pipe *p) {
  pthread_mutex_lock(&p->mu);
  p->refs++;
  pthread_mutex_unlock(&p->mu);
}

void dump_pipe_unref(dump_pipe *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  int last = --p->refs == 0;
  pthread_mutex_unlock(&p->mu);
  if (!last) return;
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  dv_free(p->buf);
  dv_free(p);
}

void dump_pipe_on_data(dump_pipe *p, void (*fn)(void *arg), void *arg) {
  pthread_mutex_lock(&p->mu);
  p->wake = fn;
  p->wake_arg = arg;
  pthread_mutex_unlock(&p->mu);
}

static void wake(dump_pipe *p) {
  pthread_mutex_lock(&p->mu);
  void (*fn)(void *) = p->wake;
  void *arg = p->wake_arg;
  pthread_mutex_unlock(&p->mu);
  if (fn) fn(arg);
}

int dump_pipe_write(void *arg, const uint8_t *b, size_t n) {
  dump_pipe *p = arg;
  while (n) {
    pthread_mutex_lock(&p->mu);
    while (!p->rclosed && p->len == p->cap) pthread_cond_wait(&p->cv, &p->mu);
    if (p->rclosed) {
      pthread_mutex_unlock(&p->mu);
      return DV_ECANCELLED;
    }
    size_t tail = (p->head + p->len) % p->cap;
    size_t k = p->cap - p->len;
    if (k > p->cap - tail) k = p->cap - tail;
    if (k > n) k = n;
    memcpy(p->buf + tail, b, k);
    p->len += k;
    b += k, n -= k;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    wake(p);
  }
  return 0;
}

/* Up to n bytes out of the ring (under mu). */
static size_t take_locked(dump_pipe *p, uint8_t *b, size_t n) {
  size_t got = 0;
  while (got < n && p->len) {
    size_t k = p->cap - p->head;
    if (k > p->len) k = p->len;
    if (k > n - got) k = n - got;
    memcpy(b + got, p->buf + p->head, k);
    p->head = (p->head + k) % p->cap;
    p->len -= k;
    got += k;
  }
  if (got) pthread_cond_broadcast(&p->cv);
  return got;
}

long dump_pipe_read(void *arg, uint8_t *b, size_t n) {
  dump_pipe *p = arg;
  pthread_mutex_lock(&p->mu);
  size_t got = 0;
  while (got < n) {
    got += take_locked(p, b + got, n - got);
    if (got == n || p->wclosed) break;
    pthread_cond_wait(&p->cv, &p->mu);
  }
  long r = got < n && p->wclosed && p->wrc ? p->wrc : (long)got;
  pthread_mutex_unlock(&p->mu);
  return r;
}

int dump_pipe_take(dump_pipe *p, dv_buf *out, size_t max) {
  pthread_mutex_lock(&p->mu);
  size_t n = p->len < max ? p->len : max;
  int r;
  uint8_t *d = n ? buf_extend(out, n) : NULL;
  if (n && !d) r = DV_ENOMEM;
  else if (n) r = (take_locked(p, d, n), 1);
  else if (!p->wclosed) r = 0;
  else r = p->wrc ? p->wrc : DUMP_PIPE_END;
  pthread_mutex_unlock(&p->mu);
  return r;
}

void dump_pipe_close_w(dump_pipe *p, int rc) {
  pthread_mutex_lock(&p->mu);
  p->wclosed = 1;
  p->wrc = rc;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  wake(p);
}

void dump_pipe_close_r(dump_pipe *p) {
  pthread_mutex_lock(&p->mu);
  p->rclosed = 1;
  p->wake = NULL;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

/* ---- a dump or a load on its own thread ---------------------------------------- */

/* store_dump_job and store_load_job (dump.h) are both this: one thread
 * running a dump into the pipe or a load out of it. */
struct store_pipe_job {
  pthread_t th;
  store *s;
  char *name;
  dump_pipe *p;
  store_dump_opts o;
  int has_o;
  int load; /* 1: a load reading the pipe; 0: a dump writing it */
  int rc;
  const char *why;
  store_dump_stats st;
};

static void *job_main(void *arg) {
  dv_thread_name("dv-move");
  store_pipe_job *j = arg;
  if (j->load) {
    j->rc = store_load(j->s, j->name, NULL, dump_pipe_read, j->p, &j->st, &j->why);
    dump_pipe_close_r(j->p); /* a failed load stops its writer */
  } else {
    j->rc = store_dump(j->s, j->name, j->has_o ? &j->o : NULL, dump_pipe_write, j->p, &j->st, &j->why);
    dump_pipe_close_w(j->p, j->rc);
  }
  return NULL;
}

static int job_start(store *s, const char *name, const store_dump_opts *o, int load, dump_pipe *p,
                     store_pipe_job **out) {
  store_pipe_job *j = dv_calloc(1, sizeof *j);
  if (!j || !(j->name = dv_strndup(name, strlen(name)))) {
    dv_free(j);
    return DV_ENOMEM;
  }
  j->s = s;
  j->p = p;
  j->load = load;
  if (o) j->o = *o, j->has_o = 1;
  dump_pipe_ref(p);
  if (pthread_create(&j->th, NULL, job_main, j)) {
    dump_pipe_unref(p);
    dv_free(j->name);
    dv_free(j);
    return DV_ENOMEM;
  }
  *out = j;
  return 0;
}

static int job_join(store_pipe_job *j, store_dump_stats *st, const char **why) {
  pthread_join(j->th, NULL);
  int rc = j->rc;
  if (st) *st = j->st;
  if (why) *why = j->why;
  dump_pipe_unref(j->p);
  dv_free(j->name);
  dv_free(j);
  return rc;
}

int store_dump_start(store *s, const char *name, dump_pipe *p, store_dump_job **out) {
  return job_start(s, name, NULL, 0, p, out);
}

int store_dump_join(store_dump_job *j, store_dump_stats *st, const char **why) { return job_join(j, st, why); }

int store_load_start(store *s, const char *name, dump_pipe *p, store_load_job **out) {
  return job_start(s, name, NULL, 1, p, out);
}

int store_load_join(store_load_job *j, store_dump_stats *st, const char **why) { return job_join(j, st, why); }

/* ---- move ---------------------------------------------------------------------- */

typedef struct mctx {
  store *src;
  const char *name;
  int frozen;
  const store_move_opts *o;
} mctx;

static int freeze(void *arg) {
  mctx *m = arg;
  int rc = store_db_set_moving(m->src, m->name, 1);
  if (!rc) m->frozen = 1;
  return rc;
}

static void after_full_hook(void *arg) {
  mctx *m = arg;
  m->o->dump.after_full(m->o->dump.arg);
}

static void each_txn_hook(void *arg) {
  mctx *m = arg;
  m->o->dump.each_txn(m->o->dump.arg);
}

static int each_ckpt_hook(void *arg, const dump_ckpt *ck) {
  mctx *m = arg;
  return m->o->dump.each_ckpt(m->o->dump.arg, ck);
}

static void frozen_hook(void *arg) {
  mctx *m = arg;
  if (m->o && m->o->dump.frozen) m->o->dump.frozen(m->o->dump.arg);
}

int store_move(store *src, const char *name, store *dst, const char *newname, const store_move_opts *o,
               store_move_stats *st, const char **why) {
  static __thread char why_buf[256];
  store_move_stats local;
  if (!st) st = &local;
  memset(st, 0, sizeof *st);
  if (!newname) newname = name;
  const char *w = NULL;
  int then = o ? o->then : STORE_MOVE_KEEP;
  int rc = store_db_name_check(newname, strlen(newname));
  if (rc) w = "the target name is not a legal database name";
  if (!rc && then == STORE_MOVE_RENAME) {
    if (o->rename_to) snprintf(st->retired, sizeof st->retired, "%s", o->rename_to);
    else snprintf(st->retired, sizeof st->retired, "%s_moved_%lld", name, (long long)time(NULL));
    store_db *x;
    if (store_db_name_check(st->retired, strlen(st->retired))) {
      rc = DV_EBAD_DB_NAME;
      w = "the source's new name (the rename) is not a legal database name";
    } else if (!store_db_open(src, st->retired, &x)) {
      store_db_close(x);
      rc = DV_EDB_EXISTS;
      w = "a database already has the source's new name (the rename)";
    }
  }
  store_db *sdb = NULL;
  if (!rc && (rc = store_db_open(src, name, &sdb))) w = "no such database";
  store_db_close(sdb);
  if (!rc && !store_db_open(dst, newname, &sdb)) { /* refused before anything is read (the load checks again) */
    store_db_close(sdb);
    rc = DV_EDB_EXISTS;
    w = "the database exists";
  }
  if (rc) {
    if (why) *why = w;
    return rc;
  }

  store_load_mark mk = {0};
  if (o && o->resume) { /* where the target's unfinished load stopped */
    rc = store_load_mark_find(dst, newname, NULL, &mk);
    if (rc) {
      store_load_mark_free(&mk);
      if (why) *why = rc == DV_ENOT_FOUND ? "no unfinished move or load of this name on the target to resume" : dv_strerror(rc);
      return rc;
    }
  }
  mctx m = {.src = src, .name = name, .o = o};
  store_dump_opts d = {0};
  if (o) d = o->dump;
  if (o && o->resume) d.resume = &mk.c, d.append = 0;
  d.freeze = freeze;
  d.frozen = frozen_hook;
  d.arg = &m;
  d.after_full = o && o->dump.after_full ? after_full_hook : NULL;
  d.each_txn = o && o->dump.each_txn ? each_txn_hook : NULL;
  d.each_ckpt = o && o->dump.each_ckpt ? each_ckpt_hook : NULL;

  dump_pipe *p = dump_pipe_new(STORE_MOVE_PIPE);
  store_dump_job *j;
  rc = p ? job_start(src, name, &d, 0, p, &j) : DV_ENOMEM;
  if (rc) {
    dump_pipe_unref(p);
    store_load_mark_free(&mk);
    return rc;
  }
  const char *lwhy = NULL, *dwhy = NULL;
  /* the source side failing (an input error here) keeps what was loaded */
  store_load_opts lo = {0};
  if (o) lo = o->load;
  lo.resume = o && o->resume ? STORE_LOAD_RESUME_STREAM : 0;
  lo.keep_on_input_error = 1;
  int lrc = store_load(dst, newname, &lo, dump_pipe_read, p, &st->load, &lwhy);
  dump_pipe_close_r(p);
  int drc = store_dump_join(j, &st->dump, &dwhy);
  dump_pipe_unref(p);
  store_load_mark_free(&mk);
  if (drc || lrc) {
    rc = drc ? drc : lrc;
    w = drc ? dwhy : lwhy;
    if (drc && (lrc == DV_EDB_EXISTS || (drc == DV_ECANCELLED && lrc))) rc = lrc, w = lwhy; /* the load stopped first */
    if (m.frozen && store_db_set_moving(src, name, 0)) w = "the move failed and the source is still read-only";
    else if (st->load.kept) {
      snprintf(why_buf, sizeof why_buf, "%s; the part copied stays on the target for a resume", w ? w : dv_strerror(rc));
      w = why_buf;
    }
    if (why) *why = w;
    return rc;
  }
  switch (then) {
  case STORE_MOVE_RENAME:
    rc = store_db_rename(src, name, st->retired);
    break;
  case STORE_MOVE_DELETE:
    rc = store_db_delete(src, name);
    break;
  default:
    rc = store_db_set_moving(src, name, 0);
    break;
  }
  if (rc) {
    int urc = store_db_set_moving(src, name, 0);
    snprintf(why_buf, sizeof why_buf, "the database was copied but the source could not be retired: %s%s",
             dv_strerror(rc), urc ? " (and it is still read-only)" : "");
    if (why) *why = why_buf;
  }
  return rc;
}
