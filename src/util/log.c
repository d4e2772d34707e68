/* log.c — the log's writers and its line format (log.h says what a line
 * is and what it costs).
 *
 * State: the level, the writer, the message cap and the descriptor are
 * words read with relaxed atomic loads by every writer and stored under
 * `mu` by log_open; the queue of lines for the writer thread is described
 * where it is defined. The log file has one
 * descriptor number for the life of the process (`own`): a reopen opens
 * the new file and dup3()s it over that number, a switch to stderr dup3()s
 * fd 2 over it, so a writer that loaded the number just before a switch
 * writes one line to the old target, never to a descriptor reused by a
 * socket.
 *
 * Not here: reading [log] (logcfg.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/deadline.h"
#include "util/err.h"
#include "util/log.h"
#include "util/thread.h"

int log__level = DV_LOG_INFO;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* log_open, log_close, log_set_node */
static int cur_fd = 2;                                 /* where lines go (atomic) */
static int cur_writer = LOG_W_STDERR;                  /* LOG_W_* (atomic) */
static size_t cur_max = LOG_MAX_MESSAGE;               /* max_message_size (atomic) */
static int own = -1;                                   /* the log file's descriptor number, once opened */
static char node[LOG_NODE_MAX] = "nonode@nohost";      /* set before other threads log */
static size_t node_len = 13;

static const char *const names[] = {"?", "debug", "info", "notice", "warning", "error",
                                    "critical", "alert", "emergency", "none"};

const char *log_level_name(int level) { return level >= DV_LOG_DEBUG && level <= DV_LOG_NONE ? names[level] : "?"; }

int log_level_parse(const char *s) {
  static const struct {
    const char *name;
    int level;
  } alias[] = {{"warn", DV_LOG_WARNING}, {"err", DV_LOG_ERROR}, {"crit", DV_LOG_CRITICAL}, {"emerg", DV_LOG_EMERGENCY}};
  if (!s) return -1;
  if (s[0] >= '1' && s[0] <= '9' && !s[1]) return s[0] - '0';
  for (int l = DV_LOG_DEBUG; l <= DV_LOG_NONE; l++)
    if (!strcmp(s, names[l])) return l;
  for (size_t i = 0; i < sizeof alias / sizeof *alias; i++)
    if (!strcmp(s, alias[i].name)) return alias[i].level;
  return -1;
}

int log_level(void) { return __atomic_load_n(&log__level, __ATOMIC_RELAXED); }

void log_set_level(int level) {
  if (level < DV_LOG_DEBUG) level = DV_LOG_DEBUG;
  if (level > DV_LOG_NONE) level = DV_LOG_NONE;
  __atomic_store_n(&log__level, level, __ATOMIC_RELAXED);
}

int log_fd(void) { return __atomic_load_n(&cur_fd, __ATOMIC_RELAXED); }

void log_set_node(const char *n) {
  pthread_mutex_lock(&mu);
  snprintf(node, sizeof node, "%s", n ? n : "nonode@nohost");
  node_len = strlen(node);
  pthread_mutex_unlock(&mu);
}

/* ---- formatting ------------------------------------------------------------------ */

/* n as decimal digits, at least width of them (zero-padded). */
static char *put_num(char *o, unsigned long long n, int width) {
  char t[24];
  int k = 0;
  do t[k++] = (char)('0' + n % 10), n /= 10;
  while (n);
  while (k < width) t[k++] = '0';
  while (k) *o++ = t[--k];
  return o;
}

/* "YYYY-MM-DDTHH:MM:SS" of a unix second, remembered per thread: lines
 * come many to a second, gmtime_r once. */
static void sec_text(int64_t sec, char out[20]) {
  static __thread int64_t last = -1;
  static __thread char txt[20];
  if (sec != last) {
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    char *o = txt;
    o = put_num(o, (unsigned long long)tm.tm_year + 1900, 4);
    *o++ = '-';
    o = put_num(o, (unsigned)tm.tm_mon + 1, 2);
    *o++ = '-';
    o = put_num(o, (unsigned)tm.tm_mday, 2);
    *o++ = 'T';
    o = put_num(o, (unsigned)tm.tm_hour, 2);
    *o++ = ':';
    o = put_num(o, (unsigned)tm.tm_min, 2);
    *o++ = ':';
    o = put_num(o, (unsigned)tm.tm_sec, 2);
    last = sec;
  }
  memcpy(out, txt, 19);
}

static int is_ctl(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }

/* Copy msg with control bytes escaped, at most max bytes; a message that
 * does not fit (or `more`: msg was already cut) ends in "..." after the
 * last whole escape within max-3 bytes. Plain runs go in one memcpy each.
 * Returns the bytes written. */
static size_t put_msg(char *o, const char *msg, size_t len, size_t max, int more) {
  static const char hex[] = "0123456789abcdef";
  size_t w = 0, mark = 0, lim = max - 3, i = 0; /* mark: the last boundary within lim */
  while (i < len) {
    size_t j = i;
    while (j < len && !is_ctl((unsigned char)msg[j])) j++;
    size_t run = j - i;
    if (w + run > max) { /* the cut falls in this run: keep up to lim */
      if (w < lim) memcpy(o + w, msg + i, lim - w), mark = lim;
      goto cut;
    }
    memcpy(o + w, msg + i, run);
    if (w + run <= lim) mark = w + run;
    else if (w <= lim) mark = lim;
    w += run;
    if ((i = j) == len) break;
    unsigned char c = (unsigned char)msg[i++];
    char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
    size_t k = 4;
    if (c == '\n') e[1] = 'n', k = 2;
    else if (c == '\r') e[1] = 'r', k = 2;
    if (w + k > max) goto cut;
    memcpy(o + w, e, k);
    w += k;
    if (w <= lim) mark = w;
  }
  if (!more) return w;
cut:
  memcpy(o + mark, "...", 3);
  return mark + 3;
}

/* sd-daemon(3)'s priority of a level, as couch_log_writer_journald. */
static int sd_prio(int level) {
  static const int p[] = {6, 7, 6, 5, 4, 3, 2, 1, 0, 6};
  return level >= 0 && level <= DV_LOG_NONE ? p[level] : 6;
}

static size_t format(char *out, int writer, int level, const char *id, int64_t unix_us, long tid, const char *msg,
                     size_t len, size_t max, int more) {
  char *o = out;
  if (!max || max > LOG_MAX_MESSAGE) max = LOG_MAX_MESSAGE;
  if (max < 16) max = 16;
  if (writer == LOG_W_JOURNALD) {
    *o++ = '<';
    o = put_num(o, (unsigned)sd_prio(level), 1);
    *o++ = '>';
  } else {
    const char *name = log_level_name(level);
    size_t nl = strlen(name);
    *o++ = '[';
    memcpy(o, name, nl);
    o += nl;
    *o++ = ']';
    *o++ = ' ';
    int64_t sec = unix_us / 1000000, us = unix_us % 1000000;
    if (us < 0) us += 1000000, sec--;
    sec_text(sec, o);
    o += 19;
    *o++ = '.';
    o = put_num(o, (unsigned long long)us, 6);
    *o++ = 'Z';
    *o++ = ' ';
  }
  memcpy(o, node, node_len);
  o += node_len;
  memcpy(o, " <0.", 4);
  o += 4;
  o = put_num(o, (unsigned long long)(tid < 0 ? 0 : tid), 1);
  memcpy(o, ".0> ", 4);
  o += 4;
  if (!id || !*id) id = LOG_NO_ID;
  size_t il = strnlen(id, 64);
  memcpy(o, id, il);
  o += il;
  *o++ = ' ';
  o += put_msg(o, msg, len, max, more);
  *o++ = '\n';
  return (size_t)(o - out);
}

size_t log__format(char *out, int writer, int level, const char *id, int64_t unix_us, long tid, const char *msg,
                   size_t len, size_t max) {
  return format(out, writer, level, id, unix_us, tid, msg, len, max, 0);
}

/* ---- writing ----------------------------------------------------------------------- */

static long thread_id(void) {
  static __thread long tid;
  if (!tid) tid = (long)syscall(SYS_gettid);
  return tid;
}

static void write_all(int fd, const char *p, size_t n) {
  while (n) { /* one write(2) unless the kernel takes less (a full disk, a pipe past PIPE_BUF) */
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return; /* nowhere to say it */
    p += k;
    n -= (size_t)k;
  }
}

/* ---- the queue: whole lines handed to one writer thread ----------------------------
 *
 * A write(2) per line costs a system call (about 1 µs here, even to
 * /dev/null) and, for a pipe, a wakeup of its reader: at tens of thousands
 * of requests a second that is a tenth of the server's time. So while the
 * writer thread runs (from the first log_open), a line is formatted on the
 * caller's stack as before and copied into a slot of a bounded lock-free
 * queue (Vyukov's: a slot's sequence number says whose turn it is; a
 * thread takes a slot with one compare-and-swap, publishes it with one
 * release store); the writer thread wakes every LOG_FLUSH_MS, or when the
 * log is opened again or closed, and writes every published line, in
 * order, whole, in as few write(2)s as its buffer allows. A thread that
 * finds the queue full writes it out itself (under the writer's mutex:
 * this is the one path of a line that can wait for a lock, and it means
 * QN lines came faster than LOG_FLUSH_MS); a line longer than a slot is
 * written after the queue the same way. So nothing is dropped and one
 * thread's lines keep their order. */

#define QN 2048          /* slots */
#define QSLOT 512        /* bytes of a slot, its line at most QSLOT - 16 */
#define LOG_FLUSH_MS 10  /* the writer thread's period */

typedef struct qslot {
  uint64_t seq;                /* == pos: free for the line at pos; == pos+1: that line is in (atomic) */
  uint32_t len;                /* bytes of b */
  char b[QSLOT - 12];          /* the line */
} qslot;

static qslot q[QN];
static uint64_t q_tail;                                      /* the next position to take (atomic) */
static uint64_t q_head;                                      /* the next to write: flush_mu's */
static int q_on;                                             /* the writer thread runs (atomic) */
static pthread_mutex_t flush_mu = PTHREAD_MUTEX_INITIALIZER; /* q_head, drain_buf, the writer thread's state */
static pthread_cond_t flush_cv;                              /* wakes the writer thread to stop */
static int w_stop;                                           /* it should end (flush_mu) */
static pthread_t w_th;
static char drain_buf[64 << 10];                             /* lines gathered for one write(2) (flush_mu) */

static void q_init(void) {
  for (uint64_t i = 0; i < QN; i++) __atomic_store_n(&q[i].seq, i, __ATOMIC_RELAXED);
}

/* 1 if the line is queued; 0: the queue is full. */
static int enqueue(const char *line, size_t n) {
  uint64_t pos = __atomic_load_n(&q_tail, __ATOMIC_RELAXED);
  qslot *s;
  for (;;) {
    s = &q[pos % QN];
    uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    int64_t d = (int64_t)(seq - pos);
    if (d == 0) {
      if (__atomic_compare_exchange_n(&q_tail, &pos, pos + 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) break;
    } else if (d < 0) {
      return 0; /* full: the writer is behind by QN lines */
    } else {
      pos = __atomic_load_n(&q_tail, __ATOMIC_RELAXED);
    }
  }
  memcpy(s->b, line, n);
  s->len = (uint32_t)n;
  __atomic_store_n(&s->seq, pos + 1, __ATOMIC_RELEASE);
  return 1;
}

/* Write every published line, in order (flush_mu held). A taken slot not
 * yet published stops it: the rest waits for the next drain. */
static void drain(void) {
  int fd = log_fd();
  size_t o = 0;
  uint64_t h = __atomic_load_n(&q_head, __ATOMIC_RELAXED);
  for (;; h++) {
    qslot *s = &q[h % QN];
    if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != h + 1) break;
    if (o + s->len > sizeof drain_buf) {
      write_all(fd, drain_buf, o);
      o = 0;
    }
    memcpy(drain_buf + o, s->b, s->len);
    o += s->len;
    __atomic_store_n(&s->seq, h + QN, __ATOMIC_RELEASE);
    __atomic_store_n(&q_head, h + 1, __ATOMIC_RELAXED);
  }
  if (o) write_all(fd, drain_buf, o);
}

static void *writer_main(void *arg) {
  dv_thread_name("dv-log");
  (void)arg;
  pthread_mutex_lock(&flush_mu);
  while (!w_stop) {
    struct timespec t = dv_deadline_ms(CLOCK_MONOTONIC, LOG_FLUSH_MS);
    pthread_cond_timedwait(&flush_cv, &flush_mu, &t);
    drain();
  }
  pthread_mutex_unlock(&flush_mu);
  return NULL;
}

void log_flush(void) {
  pthread_mutex_lock(&flush_mu);
  drain();
  pthread_mutex_unlock(&flush_mu);
}

void log__crash_flush(void) {
  int fd = log_fd();
  uint64_t h = __atomic_load_n(&q_head, __ATOMIC_RELAXED); /* racing the writer thread: a line twice at worst */
  for (int i = 0; i < QN; i++, h++) {
    qslot *s = &q[h % QN];
    if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != h + 1) break;
    write_all(fd, s->b, s->len);
  }
}

/* Start the writer thread (mu held). Without it lines are written at once. */
static void writer_start(void) {
  if (__atomic_load_n(&q_on, __ATOMIC_RELAXED)) return;
  static int once;
  if (!once) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&flush_cv, &ca);
    pthread_condattr_destroy(&ca);
    q_init();
    atexit(log_flush); /* divan serve's early exits: what was logged is written */
    once = 1;
  }
  w_stop = 0;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old); /* the thread takes no signal */
  int rc = pthread_create(&w_th, NULL, writer_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!rc) __atomic_store_n(&q_on, 1, __ATOMIC_RELEASE);
}

/* Stop it (mu held): the queue is written out first. */
static void writer_stop(void) {
  if (!__atomic_load_n(&q_on, __ATOMIC_RELAXED)) return;
  __atomic_store_n(&q_on, 0, __ATOMIC_RELEASE);
  pthread_mutex_lock(&flush_mu);
  w_stop = 1;
  pthread_cond_signal(&flush_cv);
  pthread_mutex_unlock(&flush_mu);
  pthread_join(w_th, NULL);
  /* the lines of threads that took a slot before q_on went 0 */
  for (int i = 0; i < 1000; i++) {
    log_flush();
    if (__atomic_load_n(&q_head, __ATOMIC_RELAXED) == __atomic_load_n(&q_tail, __ATOMIC_RELAXED)) break;
    usleep(100);
  }
}

static void emit(int level, const char *id, const char *msg, size_t len, int more) {
  char line[LOG_LINE_MAX];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int writer = __atomic_load_n(&cur_writer, __ATOMIC_RELAXED);
  size_t max = __atomic_load_n(&cur_max, __ATOMIC_RELAXED);
  size_t n = format(line, writer, level, id, (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, thread_id(), msg, len,
                    max, more);
  if (__atomic_load_n(&q_on, __ATOMIC_ACQUIRE) && n <= sizeof q[0].b) {
    for (int tries = 0; !enqueue(line, n); tries++) { /* full: make room */
      if (tries) sched_yield(); /* a slot taken but not yet filled holds the writer up */
      log_flush();
      if (!__atomic_load_n(&q_on, __ATOMIC_ACQUIRE)) goto direct; /* log_close */
    }
    return;
  }
direct:
  if (__atomic_load_n(&q_on, __ATOMIC_ACQUIRE)) { /* too long for a slot: after what is queued */
    pthread_mutex_lock(&flush_mu);
    drain();
    write_all(log_fd(), line, n);
    pthread_mutex_unlock(&flush_mu);
  } else {
    write_all(log_fd(), line, n);
  }
}

void log_write(int level, const char *id, const char *msg, size_t len) {
  if (!log_enabled(level) || level >= DV_LOG_NONE) return;
  emit(level, id, msg, len, 0);
}

void log_msg(int level, const char *id, const char *fmt, ...) {
  if (!log_enabled(level) || level >= DV_LOG_NONE) return;
  char msg[LOG_MAX_MESSAGE + 1];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  int more = (size_t)n >= sizeof msg;
  emit(level, id, msg, more ? sizeof msg - 1 : (size_t)n, more);
}

/* ---- opening --------------------------------------------------------------------- */

/* mkdir -p of path's directory part (as couch_log_writer_file's
 * filelib:ensure_dir). */
static void ensure_dir(const char *path) {
  char d[4096];
  size_t n = strlen(path);
  if (n >= sizeof d) return;
  memcpy(d, path, n + 1);
  for (char *p = d + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    (void)mkdir(d, 0755);
    *p = '/';
  }
}

int log_open(const log_opts *o, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (!o || o->writer < LOG_W_STDERR || o->writer > LOG_W_JOURNALD || (o->writer == LOG_W_FILE && (!o->file || !*o->file))) {
    if (err) snprintf(err, errlen, "no log writer or file");
    return DV_EINVAL;
  }
  pthread_mutex_lock(&mu);
  int fd = 2;
  writer_start();
  if (o->writer == LOG_W_FILE) {
    ensure_dir(o->file);
    int n = open(o->file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (n >= 0 && n <= 2) { /* stdio was closed: keep the log off 0..2 */
      int m = fcntl(n, F_DUPFD_CLOEXEC, 3);
      close(n);
      n = m;
    }
    if (n < 0) {
      int e = errno;
      pthread_mutex_unlock(&mu);
      if (err) snprintf(err, errlen, "cannot open the log file %s: %s", o->file, strerror(e));
      return DV_EIO;
    }
    pthread_mutex_lock(&flush_mu); /* what is queued goes where it was logged to */
    drain();
    if (own < 0) {
      own = n;
    } else {
      (void)dup3(n, own, O_CLOEXEC); /* cannot fail for two open descriptors (else: the old file stays) */
      close(n);
    }
    fd = own;
  } else {
    pthread_mutex_lock(&flush_mu);
    drain();
    if (own >= 0) (void)dup3(2, own, O_CLOEXEC); /* let go of the file; a writer that loaded own writes to stderr */
  }
  size_t max = o->max_message;
  if (!max || max > LOG_MAX_MESSAGE) max = LOG_MAX_MESSAGE;
  if (max < 16) max = 16;
  __atomic_store_n(&cur_max, max, __ATOMIC_RELAXED);
  __atomic_store_n(&cur_writer, o->writer, __ATOMIC_RELAXED);
  __atomic_store_n(&cur_fd, fd, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&flush_mu);
  log_set_level(o->level);
  pthread_mutex_unlock(&mu);
  return 0;
}

void log_close(void) {
  pthread_mutex_lock(&mu);
  writer_stop();
  __atomic_store_n(&cur_fd, 2, __ATOMIC_RELAXED);
  __atomic_store_n(&cur_writer, LOG_W_STDERR, __ATOMIC_RELAXED);
  __atomic_store_n(&cur_max, (size_t)LOG_MAX_MESSAGE, __ATOMIC_RELAXED);
  log_set_level(DV_LOG_INFO);
  if (own >= 0) close(own);
  own = -1;
  pthread_mutex_unlock(&mu);
}
