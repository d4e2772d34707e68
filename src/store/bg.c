/* bg.c — the store's background thread: the one file of store/ that calls
 * the others from above, on a timer. Each round it runs the _db_updates
 * queue consumer (dbupd.c) until the queue is drained, and once a minute
 * the TxId bucket cleanup (store.c) and the sweeper of attachment uploads
 * never linked (att.c). Each of those is also callable alone (tests run
 * them directly); none of them knows this thread exists.
 *
 * Started by store_open when store_opts.background is set, stopped by
 * store_close before the handle cache is freed. It sleeps 100 ms between
 * rounds that found nothing to consume, and BG_PACE_MS after one that
 * consumed: every consumption is a transaction of its own, so back to back
 * it ran once per group commit under a write load (~400 a second), each
 * paying its read of the queue, its commit and a wake of every _db_updates
 * follower; paced, one round takes what ~20 group commits queued. A
 * _db_updates row comes at most that much later.
 */
#include <time.h>

#include "store/store_int.h"
#include "util/deadline.h"
#include "util/thread.h"

#define BG_PACE_MS 50

static void *bg_main(void *arg) {
  dv_thread_name("dv-store-bg");
  store *s = arg;
  pthread_mutex_lock(&s->bg_mu);
  while (!s->bg_stop) {
    pthread_mutex_unlock(&s->bg_mu);
    int n = store_db_updates_consume(s);
    int64_t minute = st_now_ms() / 60000;
    if (minute != s->last_cleanup) {
      if (!st_txid_cleanup(s) && st_att_sweep(s, st_now_ms()) >= 0) s->last_cleanup = minute;
    }
    pthread_mutex_lock(&s->bg_mu);
    if (s->bg_stop) break;
    struct timespec ts = dv_deadline_ms(CLOCK_REALTIME, n > 0 ? BG_PACE_MS : 100);
    pthread_cond_timedwait(&s->bg_cv, &s->bg_mu, &ts);
  }
  pthread_mutex_unlock(&s->bg_mu);
  return NULL;
}

int st_bg_start(store *s) {
  pthread_mutex_init(&s->bg_mu, NULL);
  pthread_cond_init(&s->bg_cv, NULL);
  if (pthread_create(&s->bg, NULL, bg_main, s)) {
    pthread_mutex_destroy(&s->bg_mu);
    pthread_cond_destroy(&s->bg_cv);
    return DV_ENOMEM;
  }
  s->bg_started = 1;
  return 0;
}

void st_bg_stop(store *s) {
  if (!s->bg_started) return;
  pthread_mutex_lock(&s->bg_mu);
  s->bg_stop = 1;
  pthread_cond_signal(&s->bg_cv);
  pthread_mutex_unlock(&s->bg_mu);
  pthread_join(s->bg, NULL);
  s->bg_started = 0;
  pthread_mutex_destroy(&s->bg_mu);
  pthread_cond_destroy(&s->bg_cv);
}
