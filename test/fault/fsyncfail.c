/* fsyncfail.c — an LD_PRELOAD shim that makes every sync call of the
 * process fail with EIO from the moment a trigger file exists, so a test
 * decides when a disk "fails" (http_fsyncfail, test/node/http/fsyncfail.test.js).
 *
 *   DV_FSYNCFAIL_TRIGGER=/path/to/trigger LD_PRELOAD=build/cc/libfsyncfail.so divan serve …
 *
 * While the trigger file exists, fsync, fdatasync, syncfs, sync_file_range
 * and msync(MS_SYNC) return -1 with errno EIO without syncing (Debian's
 * librocksdb 7.8 syncs its WAL and tables with fdatasync and directories
 * with fsync: strace -f -e trace=%file,fsync,fdatasync,sync_file_range).
 * Each failure adds a line to the file named by DV_FSYNCFAIL_LOG (when
 * set), so a test can tell that the shim fired. Without the trigger every
 * call is passed to libc. Not linked into anything: the Makefile builds it
 * as build/<tag>/libfsyncfail.so beside the test runner.
 *
 * What it cannot imitate: after a real failed writeback the kernel may drop
 * the dirty pages, so data written but never synced can vanish; here they
 * stay in the page cache. The server must not acknowledge either way.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* 1 while the trigger file exists (errno kept for the caller). */
static int armed(const char *call) {
  const char *t = getenv("DV_FSYNCFAIL_TRIGGER");
  if (!t || !*t) return 0;
  int e = errno;
  int on = access(t, F_OK) == 0;
  if (on) {
    const char *log = getenv("DV_FSYNCFAIL_LOG");
    int fd = log && *log ? open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    if (fd >= 0) {
      char line[64];
      int n = snprintf(line, sizeof line, "%s EIO\n", call);
      if (n > 0) (void)!write(fd, line, (size_t)n);
      close(fd);
    }
  }
  errno = e;
  return on;
}

/* libc's own function, looked up once (a race only looks it up twice). */
#define REAL(name) static __typeof__(&name) real; if (!real) real = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

int fsync(int fd) {
  REAL(fsync);
  if (armed("fsync")) return errno = EIO, -1;
  return real(fd);
}

int fdatasync(int fd) {
  REAL(fdatasync);
  if (armed("fdatasync")) return errno = EIO, -1;
  return real(fd);
}

int syncfs(int fd) {
  REAL(syncfs);
  if (armed("syncfs")) return errno = EIO, -1;
  return real(fd);
}

int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags) {
  REAL(sync_file_range);
  if (armed("sync_file_range")) return errno = EIO, -1;
  return real(fd, off, n, flags);
}

int msync(void *addr, size_t len, int flags) {
  REAL(msync);
  if ((flags & MS_SYNC) && armed("msync")) return errno = EIO, -1;
  return real(addr, len, flags);
}
