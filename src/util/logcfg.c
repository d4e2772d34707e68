/* logcfg.c — the [log] section of the configuration, applied to the log
 * (log.h). A file of its own so that log.c needs nothing but libc: the
 * libfdb_c test double links log.c without the configuration.
 *
 *   [log]
 *   level = info              debug info notice warning error critical
 *                             alert emergency none (and CouchDB's other
 *                             spellings); anything else: info, as CouchDB
 *   writer = stderr           stderr, file or journald (CouchDB's syslog
 *                             writer is not divan's: refused)
 *   file = DATA/divan.log     writer = file: the path (CouchDB's default is
 *                             ./couch.log; divan's sits in the data
 *                             directory)
 *   max_message_size = 16000  bytes of a message kept (16..16000)
 */
#include <stdio.h>
#include <pthread.h>
#include <string.h>

#include "util/alloc.h"
#include "util/config.h"
#include "util/log.h"

static pthread_mutex_t cfg_mu = PTHREAD_MUTEX_INITIALIZER; /* dflt, and one apply at a time */
static char *dflt;                                          /* the default file, kept from the first call */

int log_config_apply(dv_config *c, const char *default_file, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  pthread_mutex_lock(&cfg_mu);
  if (default_file) {
    char *d = dv_strndup(default_file, strlen(default_file));
    if (d) dv_free(dflt), dflt = d;
  }
  char *level = config_get(c, "log", "level"), *writer = config_get(c, "log", "writer"),
       *file = config_get(c, "log", "file");
  long long max = config_get_int(c, "log", "max_message_size", LOG_MAX_MESSAGE);
  int lv = level ? log_level_parse(level) : DV_LOG_INFO;
  log_opts o = {.level = lv < 0 ? DV_LOG_INFO : lv,
                .file = file && *file ? file : dflt ? dflt : "divan.log",
                .max_message = max < 16 ? 16 : max > LOG_MAX_MESSAGE ? LOG_MAX_MESSAGE : (size_t)max};
  int rc = 0;
  if (!writer || !strcmp(writer, "stderr")) {
    o.writer = LOG_W_STDERR;
  } else if (!strcmp(writer, "file")) {
    o.writer = LOG_W_FILE;
  } else if (!strcmp(writer, "journald")) {
    o.writer = LOG_W_JOURNALD;
  } else {
    if (err)
      snprintf(err, errlen, "[log] writer = %s: divan writes its log to stderr, file or journald%s", writer,
               !strcmp(writer, "syslog") ? " (not syslog)" : "");
    rc = DV_EINVAL;
  }
  if (!rc) rc = log_open(&o, err, errlen);
  if (!rc && lv < 0) log_warning("[log] level = %s is not a level; info is used", level);
  pthread_mutex_unlock(&cfg_mu);
  dv_free(level);
  dv_free(writer);
  dv_free(file);
  return rc;
}
