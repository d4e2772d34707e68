/* work.c — the store's workers: a timed queue of continuations and the
 * few threads that run them.
 *
 * An asynchronous write (st_run_async, store_update_async) runs its first
 * attempt on the caller's thread and then waits for nothing: its commit
 * completes on the kv backend's thread, where nothing may block or sleep.
 * What must happen after that and may block — the next attempt after a
 * retryable error (once its backoff has passed), the next group of a
 * large update, a finish that runs a transaction — is a task handed to
 * st_defer, and one of ST_WORKERS threads runs it when it is due. So a
 * backoff holds no thread at all, and a thousand writes in flight hold
 * two.
 *
 * The queue is intrusive (the task lives in the operation that defers
 * it), so st_defer never allocates and never fails once the workers run:
 * a ready list (FIFO) and a timed list kept sorted by due time, under one
 * mutex; the workers wait on a CLOCK_MONOTONIC condition variable until
 * the earliest task is due. The threads start with the first asynchronous
 * operation (st_work_start, from the caller's thread), so tools and tests
 * that only use the blocking calls start none, and stop at store_close.
 *
 * Not here: what a task does (store.c, edit.c, read.c), the periodic
 * background work (bg.c).
 */
#include <time.h>

#include "store/store_int.h"
#include "util/thread.h"

static int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The next task that is due, moved off its list; NULL when none is due
 * (then *wait_until is the earliest due time, or 0 when nothing waits). */
static st_task *take_due(store *s, int64_t now, int64_t *wait_until) {
  while (s->work_timed && s->work_timed->due_us <= now) { /* due: to the ready list's tail */
    st_task *t = s->work_timed;
    s->work_timed = t->next;
    t->next = NULL;
    if (s->work_tail) s->work_tail->next = t;
    else s->work_ready = t;
    s->work_tail = t;
  }
  st_task *t = s->work_ready;
  if (t) {
    s->work_ready = t->next;
    if (!s->work_ready) s->work_tail = NULL;
    t->next = NULL;
    return t;
  }
  *wait_until = s->work_timed ? s->work_timed->due_us : 0;
  return NULL;
}

static void *work_main(void *arg) {
  dv_thread_name("dv-store-work");
  store *s = arg;
  pthread_mutex_lock(&s->work_mu);
  while (!s->work_stop) {
    int64_t until;
    st_task *t = take_due(s, mono_us(), &until);
    if (t) {
      pthread_mutex_unlock(&s->work_mu);
      t->fn(t); /* may free t: it belongs to the operation */
      pthread_mutex_lock(&s->work_mu);
    } else if (until) {
      struct timespec ts = {(time_t)(until / 1000000), (long)(until % 1000000) * 1000};
      pthread_cond_timedwait(&s->work_cv, &s->work_mu, &ts);
    } else {
      pthread_cond_wait(&s->work_cv, &s->work_mu);
    }
  }
  pthread_mutex_unlock(&s->work_mu);
  return NULL;
}

void st_work_init(store *s) {
  pthread_mutex_init(&s->work_mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->work_cv, &ca);
  pthread_condattr_destroy(&ca);
}

int st_work_start(store *s) {
  if (__atomic_load_n(&s->work_started, __ATOMIC_ACQUIRE) == ST_WORKERS) return 0;
  int rc = 0;
  pthread_mutex_lock(&s->work_mu);
  while (!rc && s->work_started < ST_WORKERS) {
    if (pthread_create(&s->work_th[s->work_started], NULL, work_main, s)) rc = DV_ENOMEM;
    else __atomic_store_n(&s->work_started, s->work_started + 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&s->work_mu);
  return rc;
}

void st_defer(store *s, st_task *t, int delay_ms) {
  t->next = NULL;
  pthread_mutex_lock(&s->work_mu);
  if (delay_ms <= 0) {
    t->due_us = 0;
    if (s->work_tail) s->work_tail->next = t;
    else s->work_ready = t;
    s->work_tail = t;
  } else { /* sorted by due time; equal times keep their order */
    t->due_us = mono_us() + (int64_t)delay_ms * 1000;
    st_task **p = &s->work_timed;
    while (*p && (*p)->due_us <= t->due_us) p = &(*p)->next;
    t->next = *p;
    *p = t;
  }
  pthread_cond_signal(&s->work_cv);
  pthread_mutex_unlock(&s->work_mu);
}

void st_work_stop(store *s) {
  pthread_mutex_lock(&s->work_mu);
  s->work_stop = 1;
  pthread_cond_broadcast(&s->work_cv);
  int n = s->work_started;
  pthread_mutex_unlock(&s->work_mu);
  for (int i = 0; i < n; i++) pthread_join(s->work_th[i], NULL);
  pthread_mutex_destroy(&s->work_mu);
  pthread_cond_destroy(&s->work_cv);
}
