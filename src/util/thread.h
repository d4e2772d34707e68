/* thread.h — a name for the calling thread, as top -H, ps -L, perf and
 * gdb show it ("dv-" and at most 12 more characters; Linux keeps 15).
 * Every thread divan starts names itself first thing, so a profile or a
 * stuck process says which part of divan is busy: the committer, a
 * builder, the log writer, a replication job. */
#ifndef DV_THREAD_H
#define DV_THREAD_H

#include <sys/prctl.h>

static inline void dv_thread_name(const char *name) {
  prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

#endif
