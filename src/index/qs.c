/* qs.c — the query servers of qs.h: one pool of processes per language,
 * each process an embedded JavaScript context (js.h) or a child program
 * over pipes, both behind qs_methods.
 *
 * Pool: a language's processes start lazily, at most `limit` of them
 * ([divan] js_contexts for the embedded engine, default 4;
 * [query_server_config] os_process_limit for external ones, default 100).
 * qs_acquire takes an idle one, starts one, or waits. Each process
 * remembers the design documents it holds (id and rev, at most QS_DDOCS,
 * least recently used forgotten first: the embedded prelude is told to
 * drop it), so a design document is sent once per process and again when
 * its rev changes.
 *
 * An answer line: ["log", msg] lines before it are logged and skipped
 * (external servers; the embedded prelude logs directly); ["error", name,
 * reason] is DV_EQS with the process kept; ["fatal", name, reason], a
 * timeout, a dead process or a line that is not JSON is DV_EQS with the
 * process destroyed.
 */
#define _GNU_SOURCE 1 /* pipe2 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "index/js.h"
#include "index/qs.h"
#include "index/qs_int.h"
#include "util/alloc.h"
#include "util/log.h"

extern char **environ;

#define QS_DDOCS 64         /* design documents a process keeps */
#define QS_MAX_LANGS 16
#define QS_MAX_LINE (64u << 20) /* an answer line longer than this kills the process */

typedef struct qs_lang qs_lang;

/* A kind of process. */
typedef struct qs_methods {
  /* Start p (p->lang set). 0 or DV_EQS_PROCESS with why. */
  int (*start)(qs_proc *p, char *why, size_t whylen);
  /* One line out, the next non-log line back into out. 0; DV_EQS_PROCESS
   * (the process is dead: timed out, exited, out of memory) with why. */
  int (*prompt)(qs_proc *p, const char *line, size_t len, dv_buf *out, const char **why);
  void (*stop)(qs_proc *p);
} qs_methods;

typedef struct qs_loaded {
  char *id, *rev;
  uint64_t used;
} qs_loaded;

struct qs_proc {
  qs_lang *lang;
  qs_proc *next_idle;
  js_ctx *js;              /* embedded */
  pid_t pid;               /* external */
  int in_fd, out_fd;
  dv_buf rbuf;             /* external: bytes read past the last line */
  qs_loaded dd[QS_DDOCS];
  size_t n_dd;
  uint64_t tick;
  int dead;                /* a session's prompt killed it: qs_release destroys it */
};

struct qs_lang {
  char name[64];
  char *cmd;               /* external: the command line; NULL: embedded */
  const qs_methods *m;
  size_t limit, alive;
  qs_proc *idle;
  pthread_cond_t cv;       /* a process became idle or may be started */
  qs_job *jobs, *jobs_tail; /* qs_run's, waiting for a process (embedded only) */
};

static struct {
  pthread_mutex_t mu;
  int started;
  unsigned timeout_ms;
  size_t js_mem;
  qs_reduce_limit reduce_limit;
  qs_lang langs[QS_MAX_LANGS];
  size_t n_langs;
  qs_stats st;
} Q = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int js_inited;

/* The process whose thread runs the current qs_run job: this thread's
 * calls of its language use it directly. */
static __thread qs_proc *tl_proc;

/* ---- the embedded engine ---------------------------------------------------------------- */

static int emb_start(qs_proc *p, char *why, size_t whylen) { return js_new(Q.js_mem, &p->js, why, whylen); }

static int emb_prompt(qs_proc *p, const char *line, size_t len, dv_buf *out, const char **why) {
  int rc = js_prompt(p->js, line, len, Q.timeout_ms, out);
  if (rc == JS_OK) return 0;
  pthread_mutex_lock(&Q.mu);
  if (rc == JS_DEAD_TIMEOUT) Q.st.timeouts++;
  if (rc == JS_DEAD_OOM) Q.st.oom++;
  pthread_mutex_unlock(&Q.mu);
  *why = rc == JS_DEAD_TIMEOUT ? "OS process timed out."
         : rc == JS_DEAD_OOM   ? "The JavaScript context ran out of memory ([query_server_config] js_memory_limit)."
                               : "The JavaScript context failed.";
  return DV_EQS_PROCESS;
}

static void emb_stop(qs_proc *p) {
  js_free(p->js);
  p->js = NULL;
}

static const qs_methods emb_methods = {emb_start, emb_prompt, emb_stop};

/* ---- external processes ----------------------------------------------------------------- */

static int ext_start(qs_proc *p, char *why, size_t whylen) {
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC)) goto fail0;
  if (pipe2(from, O_CLOEXEC)) goto fail1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from[1], 1);
  char *argv[] = {"/bin/sh", "-c", p->lang->cmd, NULL};
  int e = posix_spawn(&p->pid, "/bin/sh", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(to[0]);
  close(from[1]);
  if (e) {
    close(to[1]);
    close(from[0]);
    snprintf(why, whylen, "cannot start %s: %s", p->lang->cmd, strerror(e));
    return DV_EQS_PROCESS;
  }
  p->in_fd = to[1];
  p->out_fd = from[0];
  buf_init(&p->rbuf);
  return 0;
fail1:
  close(to[0]);
  close(to[1]);
fail0:
  snprintf(why, whylen, "pipe: %s", strerror(errno));
  return DV_EQS_PROCESS;
}

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int ext_write(qs_proc *p, const char *s, size_t n, int64_t deadline) {
  while (n) {
    int64_t left = deadline - now_ms();
    if (left <= 0) return -1;
    struct pollfd pf = {.fd = p->in_fd, .events = POLLOUT};
    int r = poll(&pf, 1, (int)left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    ssize_t w = write(p->in_fd, s, n);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w <= 0) return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The next line into out (without its newline). 0; -1 timeout; -2 EOF or error; -3 too long. */
static int ext_readline(qs_proc *p, dv_buf *out, int64_t deadline) {
  for (;;) {
    char *nl = p->rbuf.len ? memchr(p->rbuf.p, '\n', p->rbuf.len) : NULL;
    if (nl) {
      size_t n = (size_t)(nl - (char *)p->rbuf.p);
      buf_append(out, p->rbuf.p, n);
      memmove(p->rbuf.p, nl + 1, p->rbuf.len - n - 1);
      p->rbuf.len -= n + 1;
      return 0;
    }
    if (p->rbuf.len > QS_MAX_LINE) return -3;
    int64_t left = deadline - now_ms();
    if (left <= 0) return -1;
    struct pollfd pf = {.fd = p->out_fd, .events = POLLIN};
    int r = poll(&pf, 1, (int)left);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return -1;
    if (r < 0) return -2;
    if (buf_reserve(&p->rbuf, 65536)) return -2;
    ssize_t got = read(p->out_fd, (char *)p->rbuf.p + p->rbuf.len, 65536);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return -2;
    p->rbuf.len += (size_t)got;
  }
}

static int ext_prompt(qs_proc *p, const char *line, size_t len, dv_buf *out, const char **why) {
  int64_t deadline = now_ms() + Q.timeout_ms;
  if (ext_write(p, line, len, deadline) || ext_write(p, "\n", 1, deadline)) {
    *why = "The query server stopped reading.";
    return DV_EQS_PROCESS;
  }
  size_t base = out->len;
  for (;;) {
    out->len = base;
    int r = ext_readline(p, out, deadline);
    if (r == -1) {
      pthread_mutex_lock(&Q.mu);
      Q.st.timeouts++;
      pthread_mutex_unlock(&Q.mu);
      *why = "OS process timed out.";
      return DV_EQS_PROCESS;
    }
    if (r) {
      *why = r == -3 ? "The query server's answer is too long." : "The query server exited.";
      return DV_EQS_PROCESS;
    }
    if (buf_error(out)) {
      *why = "Out of memory.";
      return DV_EQS_PROCESS;
    }
    if (!qs_is_log_line((char *)out->p + base, out->len - base)) return 0;
    /* ["log", msg]: CouchDB logs it at info and reads on. */
    log_info("query server %s log: %.*s", p->lang->name, (int)(out->len - base), (char *)out->p + base);
    deadline = now_ms() + Q.timeout_ms; /* the timeout is per line read, as couch_os_process */
  }
}

static void ext_stop(qs_proc *p) {
  if (p->in_fd >= 0) close(p->in_fd);
  if (p->out_fd >= 0) close(p->out_fd);
  p->in_fd = p->out_fd = -1;
  if (p->pid > 0) {
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  p->pid = 0;
  buf_free(&p->rbuf);
}

static const qs_methods ext_methods = {ext_start, ext_prompt, ext_stop};

/* ---- languages and the pool ----------------------------------------------------------- */

static qs_lang *lang_add(const char *name, const char *cmd, size_t limit) {
  if (Q.n_langs == QS_MAX_LANGS || strlen(name) >= sizeof Q.langs[0].name) return NULL;
  for (size_t i = 0; i < Q.n_langs; i++)
    if (!strcmp(Q.langs[i].name, name)) {
      qs_lang *l = &Q.langs[i]; /* a later definition wins (env over ini) */
      dv_free(l->cmd);
      l->cmd = cmd ? dv_strndup(cmd, strlen(cmd)) : NULL;
      l->m = cmd ? &ext_methods : &emb_methods;
      l->limit = limit;
      return l;
    }
  qs_lang *l = &Q.langs[Q.n_langs++];
  memset(l, 0, sizeof *l);
  snprintf(l->name, sizeof l->name, "%s", name);
  l->cmd = cmd ? dv_strndup(cmd, strlen(cmd)) : NULL;
  l->m = cmd ? &ext_methods : &emb_methods;
  l->limit = limit ? limit : 1;
  pthread_cond_init(&l->cv, NULL);
  return l;
}

static qs_lang *lang_find(const char *name) {
  if (!name) name = "javascript";
  for (size_t i = 0; i < Q.n_langs; i++)
    if (!strcmp(Q.langs[i].name, name)) return &Q.langs[i];
  return NULL;
}

static int add_ini_lang(void *arg, const char *section, const char *key, const char *value) {
  (void)section;
  size_t limit = *(size_t *)arg;
  char low[64];
  size_t i = 0;
  for (; key[i] && i + 1 < sizeof low; i++) low[i] = (char)tolower((unsigned char)key[i]);
  low[i] = 0;
  if (value && *value) lang_add(low, value, limit);
  return 0;
}

/* At exit: JS_ShutDown, when no context is left (a process that exits
 * without qs_stop skips it rather than tear down contexts in use). */
static void shutdown_engine(void) {
  pthread_mutex_lock(&Q.mu);
  int idle = !Q.st.alive;
  pthread_mutex_unlock(&Q.mu);
  if (idle) js_shutdown();
}

int qs_start(dv_config *cfg) {
  qs_stop();
  if (!js_inited) {
    int rc = js_init();
    if (rc) return rc;
    js_inited = 1;
    atexit(shutdown_engine); /* SpiderMonkey's own statics crash at exit unless it was shut down */
  }
  pthread_mutex_lock(&Q.mu);
  long long t = cfg ? config_get_int(cfg, "couchdb", "os_process_timeout", 5000) : 5000;
  Q.timeout_ms = t < 1 ? 1 : t > 3600000 ? 3600000 : (unsigned)t;
  long long mem = cfg ? config_get_int(cfg, "query_server_config", "js_memory_limit", 64LL << 20) : 64LL << 20;
  Q.js_mem = mem < (8LL << 20) ? (8u << 20) : mem > (4LL << 30) ? (size_t)4 << 30 : (size_t)mem;
  Q.reduce_limit = QS_REDUCE_LIMIT_ON;
  char *rl = cfg ? config_get(cfg, "query_server_config", "reduce_limit") : NULL;
  if (rl && !strcasecmp(rl, "false")) Q.reduce_limit = QS_REDUCE_LIMIT_OFF;
  else if (rl && !strcasecmp(rl, "log")) Q.reduce_limit = QS_REDUCE_LIMIT_LOG;
  dv_free(rl);
  long long nctx = cfg ? config_get_int(cfg, "divan", "js_contexts", 4) : 4;
  long long nproc = cfg ? config_get_int(cfg, "query_server_config", "os_process_limit", 100) : 100;
  size_t emb_limit = nctx < 1 ? 1 : nctx > 256 ? 256 : (size_t)nctx;
  size_t ext_limit = nproc < 1 ? 1 : nproc > 1024 ? 1024 : (size_t)nproc;
  memset(&Q.st, 0, sizeof Q.st);
  Q.n_langs = 0;
  lang_add("javascript", NULL, emb_limit);
  /* [query_servers] (the ini form), then COUCHDB_QUERY_SERVER_<LANG>
   * (CouchDB 3.x's environment form) over it. */
  if (cfg) (void)config_each(cfg, "query_servers", add_ini_lang, &ext_limit);
  for (char **e = environ; e && *e; e++) {
    static const char pre[] = "COUCHDB_QUERY_SERVER_";
    if (strncmp(*e, pre, sizeof pre - 1)) continue;
    const char *eq = strchr(*e, '=');
    if (!eq || !eq[1]) continue;
    char low[64];
    size_t n = (size_t)(eq - *e) - (sizeof pre - 1);
    if (!n || n >= sizeof low) continue;
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)(*e)[sizeof pre - 1 + i]);
    low[n] = 0;
    lang_add(low, eq + 1, ext_limit);
  }
  Q.started = 1;
  pthread_mutex_unlock(&Q.mu);
  return 0;
}

static void proc_destroy(qs_proc *p) {
  p->lang->m->stop(p);
  for (size_t i = 0; i < p->n_dd; i++) {
    dv_free(p->dd[i].id);
    dv_free(p->dd[i].rev);
  }
  dv_free(p);
}

void qs_stop(void) {
  pthread_mutex_lock(&Q.mu);
  if (!Q.started) {
    pthread_mutex_unlock(&Q.mu);
    return;
  }
  Q.started = 0;
  for (size_t i = 0; i < Q.n_langs; i++) {
    qs_lang *l = &Q.langs[i];
    /* Processes in use are destroyed by their qs_release (Q.started is 0). */
    while (l->alive && !l->idle) {
      pthread_cond_broadcast(&l->cv);
      pthread_cond_wait(&l->cv, &Q.mu);
    }
    while (l->idle) {
      qs_proc *p = l->idle;
      l->idle = p->next_idle;
      l->alive--;
      Q.st.alive--;
      pthread_mutex_unlock(&Q.mu);
      proc_destroy(p);
      pthread_mutex_lock(&Q.mu);
    }
    while (l->alive) pthread_cond_wait(&l->cv, &Q.mu);
  }
  for (size_t i = 0; i < Q.n_langs; i++) {
    dv_free(Q.langs[i].cmd);
    Q.langs[i].cmd = NULL;
    pthread_cond_destroy(&Q.langs[i].cv);
  }
  Q.n_langs = 0;
  pthread_mutex_unlock(&Q.mu);
}

qs_reduce_limit qs_get_reduce_limit(void) {
  pthread_mutex_lock(&Q.mu);
  qs_reduce_limit r = Q.started ? Q.reduce_limit : QS_REDUCE_LIMIT_ON;
  pthread_mutex_unlock(&Q.mu);
  return r;
}

int qs_has_lang(const char *lang) {
  pthread_mutex_lock(&Q.mu);
  int ok = Q.started && lang_find(lang) != NULL;
  pthread_mutex_unlock(&Q.mu);
  return ok;
}

static int fail(qs_err *e, int rc, const char *error, const char *reason) {
  if (e) {
    e->error = error;
    e->reason = reason;
  }
  return rc;
}

/* Start a process of l, whose slot the caller counted in l->alive (given
 * back on failure). */
static int proc_new(qs_lang *l, qs_proc **out, qs_err *e) {
  *out = NULL;
  qs_proc *p = dv_calloc(1, sizeof *p);
  char why[256] = "";
  int rc = p ? 0 : DV_ENOMEM;
  if (p) {
    p->lang = l;
    p->in_fd = p->out_fd = -1;
    rc = l->m->start(p, why, sizeof why);
  }
  if (rc) {
    if (p) dv_free(p);
    pthread_mutex_lock(&Q.mu);
    l->alive--;
    Q.st.alive--;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&Q.mu);
    log_error("query server %s: %s", l->name, why);
    return fail(e, rc == DV_ENOMEM ? DV_ENOMEM : DV_EQS_PROCESS, "os_process_error",
                rc == DV_ENOMEM ? "Out of memory." : "The query server could not start.");
  }
  *out = p;
  return 0;
}

int qs_acquire(const char *lang, qs_proc **out, qs_err *e) {
  *out = NULL;
  pthread_mutex_lock(&Q.mu);
  qs_lang *l = Q.started ? lang_find(lang) : NULL;
  if (l && tl_proc && tl_proc->lang == l) { /* a qs_run job: its own process */
    pthread_mutex_unlock(&Q.mu);
    *out = tl_proc;
    return 0;
  }
  if (!l) {
    pthread_mutex_unlock(&Q.mu);
    return fail(e, DV_EQS_LANG, "unknown_query_language", lang ? lang : "javascript");
  }
  for (;;) {
    if (!Q.started) {
      pthread_mutex_unlock(&Q.mu);
      return fail(e, DV_EQS_PROCESS, "os_process_error", "The query servers are stopping.");
    }
    if (l->idle) {
      qs_proc *p = l->idle;
      l->idle = p->next_idle;
      pthread_mutex_unlock(&Q.mu);
      *out = p;
      return 0;
    }
    if (l->alive < l->limit) break;
    pthread_cond_wait(&l->cv, &Q.mu);
  }
  l->alive++;
  Q.st.alive++;
  Q.st.started++;
  pthread_mutex_unlock(&Q.mu);
  return proc_new(l, out, e);
}

/* ---- qs_run: jobs on a process's thread ------------------------------------------------ */

static void run_jobs(void *arg);

/* Under Q.mu: who runs l's queued jobs, if some wait: an idle process
 * (*p), or a new one (*start: its slot is counted). */
static void jobs_runner(qs_lang *l, qs_proc **p, int *start) {
  *p = NULL;
  *start = 0;
  if (!l->jobs) return;
  if (l->idle) {
    *p = l->idle;
    l->idle = (*p)->next_idle;
  } else if (l->alive < l->limit) {
    l->alive++;
    Q.st.alive++;
    Q.st.started++;
    *start = 1;
  }
}

static qs_job *job_pop(qs_lang *l) {
  qs_job *j = l->jobs;
  if (j) {
    l->jobs = j->next;
    if (!l->jobs) l->jobs_tail = NULL;
  }
  return j;
}

/* Outside Q.mu: start what jobs_runner asked for, and hand it the jobs.
 * When no process can start, the jobs waiting run here, on this thread
 * (their calls then start a process or fail): none is left waiting for
 * a process that will not come. */
static void jobs_go(qs_lang *l, qs_proc *p, int start) {
  if (start && proc_new(l, &p, NULL)) {
    pthread_mutex_lock(&Q.mu);
    for (qs_job *j; (j = job_pop(l));) {
      pthread_mutex_unlock(&Q.mu);
      j->fn(j->arg);
      pthread_mutex_lock(&Q.mu);
    }
    pthread_mutex_unlock(&Q.mu);
    return;
  }
  if (p) js_post(p->js, run_jobs, p);
}

/* On p's thread: the queued jobs, until none is left or one killed p. */
static void run_jobs(void *arg) {
  qs_proc *p = arg;
  qs_lang *l = p->lang;
  tl_proc = p;
  pthread_mutex_lock(&Q.mu);
  for (qs_job *j; !p->dead && (j = job_pop(l));) {
    pthread_mutex_unlock(&Q.mu);
    j->fn(j->arg); /* j may be gone once it returns */
    pthread_mutex_lock(&Q.mu);
  }
  pthread_mutex_unlock(&Q.mu);
  tl_proc = NULL;
  qs_release(p, 0);
}

int qs_run(const char *lang, qs_job *job) {
  pthread_mutex_lock(&Q.mu);
  qs_lang *l = Q.started ? lang_find(lang) : NULL;
  if (!l || l->cmd) {
    pthread_mutex_unlock(&Q.mu);
    return l ? DV_ENOTSUP : DV_EQS_LANG;
  }
  job->next = NULL;
  if (l->jobs_tail) l->jobs_tail->next = job;
  else l->jobs = job;
  l->jobs_tail = job;
  qs_proc *p;
  int start;
  jobs_runner(l, &p, &start); /* neither: a busy process takes it when it is released */
  pthread_mutex_unlock(&Q.mu);
  if (!start) {
    if (p) js_post(p->js, run_jobs, p);
    return 0;
  }
  if (!proc_new(l, &p, NULL)) {
    js_post(p->js, run_jobs, p);
    return 0;
  }
  /* no process: take the job back unless a process took it meanwhile */
  pthread_mutex_lock(&Q.mu);
  int found = 0;
  for (qs_job **pp = &l->jobs, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next)
    if (*pp == job) {
      *pp = job->next;
      if (l->jobs_tail == job) l->jobs_tail = prev;
      found = 1;
      break;
    }
  pthread_mutex_unlock(&Q.mu);
  return found ? DV_EQS_PROCESS : 0;
}

void qs_release(qs_proc *p, int broken) {
  if (!p) return;
  if (p == tl_proc) { /* a job's own process: run_jobs gives it back */
    if (broken) p->dead = 1;
    return;
  }
  qs_lang *l = p->lang;
  pthread_mutex_lock(&Q.mu);
  if (!broken && !p->dead && l->jobs) { /* jobs wait: p runs them */
    pthread_mutex_unlock(&Q.mu);
    js_post(p->js, run_jobs, p);
    return;
  }
  if (broken || p->dead || !Q.started) {
    l->alive--;
    Q.st.alive--;
    pthread_cond_broadcast(&l->cv);
    qs_proc *q;
    int start;
    jobs_runner(l, &q, &start); /* p ran or would have run waiting jobs: another does */
    pthread_mutex_unlock(&Q.mu);
    proc_destroy(p);
    jobs_go(l, q, start);
    return;
  }
  p->next_idle = l->idle;
  l->idle = p;
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&Q.mu);
}

/* ---- prompts ------------------------------------------------------------------------ */

/* The process-level prompt: a dead process is destroyed by the caller. */
static int raw_prompt(qs_proc *p, const char *line, size_t len, dv_buf *out, qs_err *e, int *dead) {
  const char *why = NULL;
  int rc = p->lang->m->prompt(p, line, len, out, &why);
  if (rc) {
    *dead = 1;
    return fail(e, DV_EQS_PROCESS, "os_process_error", why ? why : "The query server failed.");
  }
  return 0;
}

int qs_prompt(qs_proc *p, const char *line, size_t len, dv_buf *out, dv_arena *a, qs_err *e) {
  qs_err none;
  if (!e) e = &none;
  int dead = 0;
  size_t base = out->len;
  int rc = raw_prompt(p, line, len, out, e, &dead);
  if (!rc) {
    dv_arena tmp;
    arena_init(&tmp, 0);
    qs_err e2 = {"", ""};
    rc = qs_answer((char *)out->p + base, out->len - base, &tmp, NULL, &e2, &dead);
    if (rc && e) {
      e->error = arena_strndup(a, e2.error, strlen(e2.error));
      e->reason = arena_strndup(a, e2.reason, strlen(e2.reason));
      if (!e->error || !e->reason) e->error = "os_process_error", e->reason = "Out of memory.";
    }
    arena_free(&tmp);
  }
  if (dead) p->dead = 1;
  return dead && !rc ? DV_EQS_PROCESS : rc;
}

static void forget(qs_proc *p, size_t i) {
  dv_free(p->dd[i].id);
  dv_free(p->dd[i].rev);
  p->dd[i] = p->dd[--p->n_dd];
}

/* Load dd into p unless it holds that rev. *dead when p must go. */
static int load(qs_proc *p, const qs_ddoc *dd, dv_arena *a, qs_err *e, int *dead) {
  size_t i;
  for (i = 0; i < p->n_dd; i++)
    if (strlen(p->dd[i].id) == dd->id_len && !memcmp(p->dd[i].id, dd->id, dd->id_len)) break;
  if (i < p->n_dd && !strcmp(p->dd[i].rev, dd->rev ? dd->rev : "")) {
    p->dd[i].used = ++p->tick;
    return 0;
  }
  dv_buf line, out;
  buf_init(&line);
  buf_init(&out);
  json_w w;
  json_w_init(&w, &line);
  if (i == p->n_dd && p->n_dd == QS_DDOCS) {
    size_t old = 0;
    for (size_t j = 1; j < p->n_dd; j++)
      if (p->dd[j].used < p->dd[old].used) old = j;
    if (!p->lang->cmd) { /* the embedded prelude forgets it too */
      json_w_arr_begin(&w);
      json_w_strz(&w, "ddoc");
      json_w_strz(&w, "drop");
      json_w_strz(&w, p->dd[old].id);
      json_w_arr_end(&w);
      int rc = json_w_finish(&w) ? DV_ENOMEM : raw_prompt(p, (char *)line.p, line.len, &out, e, dead);
      buf_reset(&line);
      buf_reset(&out);
      json_w_init(&w, &line);
      if (rc) {
        buf_free(&line);
        buf_free(&out);
        return rc;
      }
    }
    forget(p, old);
    i = p->n_dd;
  }
  json_w_arr_begin(&w);
  json_w_strz(&w, "ddoc");
  json_w_strz(&w, "new");
  json_w_str(&w, dd->id, dd->id_len);
  json_w_raw(&w, dd->json, dd->json_len);
  json_w_arr_end(&w);
  int rc = json_w_finish(&w) || buf_error(&line) ? DV_ENOMEM : raw_prompt(p, (char *)line.p, line.len, &out, e, dead);
  if (!rc) rc = qs_answer((char *)out.p, out.len, a, NULL, e, dead);
  buf_free(&line);
  buf_free(&out);
  if (rc) return rc;
  if (i < p->n_dd) {
    dv_free(p->dd[i].rev);
    p->dd[i].rev = dv_strndup(dd->rev ? dd->rev : "", dd->rev ? strlen(dd->rev) : 0);
  } else {
    p->dd[i].id = dv_malloc(dd->id_len + 1);
    p->dd[i].rev = dv_strndup(dd->rev ? dd->rev : "", dd->rev ? strlen(dd->rev) : 0);
    if (p->dd[i].id) {
      memcpy(p->dd[i].id, dd->id, dd->id_len);
      p->dd[i].id[dd->id_len] = 0;
    }
    p->n_dd++;
  }
  if (!p->dd[i].id || !p->dd[i].rev) {
    forget(p, i);
    *dead = 1; /* it holds a ddoc we cannot track */
    return DV_ENOMEM;
  }
  p->dd[i].used = ++p->tick;
  return 0;
}

int qs_load_ddoc(qs_proc *p, const qs_ddoc *dd, dv_arena *a, qs_err *e) {
  qs_err none;
  if (!e) e = &none;
  int dead = 0;
  int rc = load(p, dd, a, e, &dead);
  if (dead) p->dead = 1;
  return dead && !rc ? DV_EQS_PROCESS : rc;
}

int qs_ddoc_call(const qs_ddoc *dd, const char *path_json, size_t path_len, const char *args_json, size_t args_len,
                 dv_arena *a, json_val **out, qs_err *e) {
  qs_err none;
  if (!e) e = &none;
  qs_proc *p;
  int rc = qs_acquire(dd->lang, &p, e);
  if (rc) return rc;
  int dead = 0;
  rc = load(p, dd, a, e, &dead);
  if (!rc) {
    dv_buf line, ans;
    buf_init(&line);
    buf_init(&ans);
    json_w w;
    json_w_init(&w, &line);
    json_w_arr_begin(&w);
    json_w_strz(&w, "ddoc");
    json_w_str(&w, dd->id, dd->id_len);
    json_w_raw(&w, path_json, path_len);
    json_w_raw(&w, args_json, args_len);
    json_w_arr_end(&w);
    rc = json_w_finish(&w) || buf_error(&line) ? DV_ENOMEM : raw_prompt(p, (char *)line.p, line.len, &ans, e, &dead);
    if (!rc) rc = qs_answer((char *)ans.p, ans.len, a, out, e, &dead);
    buf_free(&line);
    buf_free(&ans);
  }
  qs_release(p, dead);
  return rc;
}

void qs_stats_get(qs_stats *out) {
  pthread_mutex_lock(&Q.mu);
  *out = Q.st;
  pthread_mutex_unlock(&Q.mu);
}
