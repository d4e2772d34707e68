/* deadline.h — "ms from now" as the absolute time pthread_cond_timedwait
 * takes, on the clock its condition variable waits on (CLOCK_REALTIME
 * unless the condition was made with another). */
#ifndef DV_DEADLINE_H
#define DV_DEADLINE_H

#include <time.h>

static inline struct timespec dv_deadline_ms(clockid_t clk, long ms) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
  return ts;
}

#endif
