/* rjob.c — what a replication job shows of itself: its state, its event
 * history and its sequences, under the manager's lock. The job thread
 * (job.c) writes them as it runs, the manager (mgr.c) as it schedules, and
 * /_scheduler and /_active_tasks read them (mgr.c): this file is the one
 * both write through, so job.c and mgr.c do not call each other — mgr.c
 * calls job_run, job.c calls only here.
 *
 * Not here: the job's work (job.c), scheduling and listing (mgr.c).
 */
#include <string.h>
#include <time.h>

#include "repl/repl_int.h"
#include "util/alloc.h"

int64_t rjob_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rjob_event(rjob *j, int state, const char *event) {
  pthread_mutex_lock(&j->m->mu);
  j->state = state;
  j->last_update_ms = rjob_now_ms();
  if (state == RJ_RUNNING) j->started_on_ms = j->last_update_ms;
  if (event) {
    if (j->nhist == RJ_HISTORY) memmove(j->hist + 1, j->hist, (RJ_HISTORY - 1) * sizeof j->hist[0]);
    else memmove(j->hist + 1, j->hist, (size_t)j->nhist * sizeof j->hist[0]), j->nhist++;
    j->hist[0].ms = j->last_update_ms;
    j->hist[0].type = event;
  }
  pthread_mutex_unlock(&j->m->mu);
}

static void set_str(char **p, const char *v) {
  if (!v) return;
  dv_free(*p);
  *p = dv_strndup(v, strlen(v));
}

void rjob_seqs(rjob *j, const char *source_seq, const char *through_seq, const char *checkpointed) {
  pthread_mutex_lock(&j->m->mu);
  set_str(&j->source_seq, source_seq);
  set_str(&j->through_seq, through_seq);
  set_str(&j->checkpointed_seq, checkpointed);
  if (through_seq) j->error_count = 0; /* progress: the job is healthy again */
  j->last_update_ms = rjob_now_ms();
  pthread_mutex_unlock(&j->m->mu);
}
