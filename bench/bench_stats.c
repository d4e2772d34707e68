/* bench_stats.c — what counting costs a request, in nanoseconds.
 *
 * Runs the counting a GET of a document does (api_stats_request: the
 * request, its method and status, its time into the request_time
 * histogram; the store's database_reads), with counting on and paused
 * (dv_stats_set(0): every call returns at its first test), on 1 and 2
 * threads at once (each counts into its own shard: the CPU time per
 * request must not grow with threads); CPU time of the counting threads,
 * so other load on the machine moves it little. The clock read that times a request is part
 * of it; the start's clock read is the HTTP engine's, on or off. For
 * orientation: bench/http/bench.js measures the same on a real server
 * (server CPU per request, counting on and off).
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "util/stats.h"

#define N 5000000

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* N counted GETs, as api_stats_request and store_doc_get count them; the
 * thread's CPU seconds into *arg. */
static void *requests(void *arg) {
  double c0 = cpu_now();
  int64_t start = now_us() - 850; /* a request that took 0.85 ms */
  for (int i = 0; i < N; i++) {
    dv_stat_inc(DV_ST_DATABASE_READS);
    if (dv_stats_on()) {
      dv_stat_inc(DV_ST_HTTPD_REQUESTS);
      dv_stat_inc(DV_ST_M_GET);
      dv_stat_inc(DV_ST_S_200);
      dv_stat_hist(DV_SH_REQUEST_TIME, (double)(now_us() - start) / 1000.0);
    }
  }
  *(double *)arg = cpu_now() - c0;
  return NULL;
}

/* CPU ns per request with t threads counting at once. */
static double run(int t) {
  pthread_t th[2];
  double cpu[2] = {0, 0};
  for (int i = 0; i < t; i++) pthread_create(&th[i], NULL, requests, &cpu[i]);
  for (int i = 0; i < t; i++) pthread_join(th[i], NULL);
  return (cpu[0] + cpu[1]) / ((double)N * t) * 1e9;
}

int main(void) {
  if (dv_stats_env_off()) {
    printf("DIVAN_STATS=off: nothing to measure\n");
    return 0;
  }
  printf("%-28s %12s %12s\n", "CPU per counted GET", "1 thread", "2 threads");
  double on1 = run(1), on2 = run(2);
  int64_t gets = dv_stat_value(DV_ST_M_GET); /* before the pause: a resume starts counters from 0 */
  dv_stats_set(0);
  double off1 = run(1), off2 = run(2);
  dv_stats_set(1);
  printf("%-28s %9.1f ns %9.1f ns\n", "on", on1, on2);
  printf("%-28s %9.1f ns %9.1f ns\n", "paused ([stats] enabled)", off1, off2);
  printf("%-28s %9.1f ns %9.1f ns\n", "cost per request", on1 - off1, on2 - off2);
  /* every counted GET of the three runs with counting on, none lost */
  printf("GET counted %lld times of %lld\n", (long long)gets, 3LL * N);
  return gets == 3LL * N ? 0 : 1;
}
