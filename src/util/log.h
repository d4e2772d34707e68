/* log.h — divan's log: CouchDB's couch_log levels and line format, whole
 * lines written by one writer thread.
 *
 * A line, as couch_log_writer_stderr and _file write it:
 *
 *   [notice] 2026-11-24T19:45:00.123456Z divan@127.0.0.1 <0.4711.0> 3f2a9c01be message
 *   └level┘  └UTC time, microseconds┘  └node name┘      └"pid"┘    └msg id┘   └the rest┘
 *
 * The pid field is the writing thread's id (<0.TID.0>); the msg id is the
 * request id (X-Couch-Request-ID) for lines about one request, else
 * "--------" as CouchDB's for a process without a nonce. The journald
 * writer drops the level and the time for sd-daemon's "<N>" prefix, as
 * couch_log_writer_journald: "<5>divan@127.0.0.1 <0.4711.0> -------- msg".
 *
 * Levels, lowest first (couch_log_util:level_to_integer): debug, info,
 * notice, warning, error, critical, alert, emergency; "none" logs nothing.
 * A line is written when its level is at or above the level in force
 * (default info, as CouchDB's default.ini).
 *
 * Control bytes in the message are escaped (\n, \r, \xHH; a tab stays),
 * so one line is always one line and no client-supplied text can forge
 * another. The message, so escaped, is cut at max_message_size bytes
 * (16..16000, default 16000 as CouchDB's): its first max-3 bytes or fewer
 * (an escape is not split), then "...".
 *
 * Cost: log_enabled() is one relaxed atomic load, so a disabled line costs
 * a compare and formats nothing. An enabled line is formatted on the
 * caller's stack (no allocation, no lock) and, once log_open has run,
 * handed whole to a writer thread through a lock-free queue; that thread
 * writes what came every 10 ms in as few write(2)s as it can (a system
 * call per line cost a tenth of the server's time at tens of thousands of
 * requests a second, most of it in waking the reader of a pipe). Lines
 * are never split and never interleaved, and one thread's lines keep
 * their order. Before log_open (and in the tests' own processes that never
 * open it) each line is one write(2) of its own. log_flush() writes out
 * what is queued; log_close() does, and the end of the process (atexit).
 *
 * Reopen: log_open() for writer=file writes out the queue to the old
 * file, opens the path anew and dup3()s the new file over the log's own
 * descriptor, so the descriptor number never changes meaning under a
 * writer that loaded it.
 *
 * Not here: which lines exist (their callers), reading [log] from the
 * configuration (log_config_apply, logcfg.c), the request line
 * (api/reqlog.c).
 */
#ifndef DV_LOG_H
#define DV_LOG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  DV_LOG_DEBUG = 1,
  DV_LOG_INFO = 2,
  DV_LOG_NOTICE = 3,
  DV_LOG_WARNING = 4,
  DV_LOG_ERROR = 5,
  DV_LOG_CRITICAL = 6,
  DV_LOG_ALERT = 7,
  DV_LOG_EMERGENCY = 8,
  DV_LOG_NONE = 9, /* as a level in force: nothing is written */
};

enum {
  LOG_W_STDERR = 0,   /* fd 2, the full line (the default) */
  LOG_W_FILE = 1,     /* a file opened O_APPEND, reopened by log_open */
  LOG_W_JOURNALD = 2, /* fd 2, "<N>" and no level or time: journald adds them */
};

#define LOG_MAX_MESSAGE 16000 /* [log] max_message_size: the default and the most */
#define LOG_NO_ID "--------"  /* the msg id of a line not about one request */
#define LOG_NODE_MAX 128      /* bytes of a node name kept */

typedef struct log_opts {
  int level;          /* DV_LOG_*: lines below it are not written */
  int writer;         /* LOG_W_* */
  const char *file;   /* LOG_W_FILE: the path (relative: to the working directory) */
  size_t max_message; /* bytes of a message kept, 16..LOG_MAX_MESSAGE (0: LOG_MAX_MESSAGE) */
} log_opts;

/* Switch the log to o. For LOG_W_FILE the file is opened (created 0640,
 * with its missing parent directories) before anything changes, so a
 * failure leaves the log as it was. Opening the same path again is the
 * reopen after a rotation (SIGHUP). Thread-safe; writers never wait for
 * it. Returns 0; DV_EINVAL (a bad writer, no file) or DV_EIO (cannot
 * open: err, errlen bytes, says why) with nothing changed. */
int log_open(const log_opts *o, char *err, size_t errlen);
/* Back to the defaults (info on stderr); the file is closed, so not
 * while other threads may log (tests, the end of main). */
void log_close(void);

/* The node name written in every line (default "nonode@nohost", an
 * unnamed Erlang node's). Set it once, before other threads log. */
void log_set_node(const char *node);

/* The level in force, and a change of it alone (takes effect at once). */
int log_level(void);
void log_set_level(int level);
/* A level's name ("warning"), or "?" . */
const char *log_level_name(int level);
/* CouchDB's names and spellings (level_to_integer): debug, info, notice,
 * warning|warn, error|err, critical|crit, alert, emergency|emerg, none,
 * or "1".."9". -1 for anything else. */
int log_level_parse(const char *s);

extern int log__level; /* read through log_enabled only */

/* Would a line at this level be written? One atomic load. */
static inline int log_enabled(int level) { return level >= __atomic_load_n(&log__level, __ATOMIC_RELAXED); }

/* Write one line: level, msg id (a request id, NULL: LOG_NO_ID), then the
 * printf-style message. Checks the level itself. Never fails loudly: a
 * line that cannot be written is dropped. */
void log_msg(int level, const char *id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same with a message already made: len bytes at msg (any bytes). */
void log_write(int level, const char *id, const char *msg, size_t len);

/* The descriptor lines go to now (2 or the log file's), for the fatal
 * signal handler's stack dump: async-signal-safe. */
int log_fd(void);
/* Write out the queued lines now (they go every 10 ms anyway). */
void log_flush(void);
/* The same from a fatal signal's handler (main.c's, before the stack):
 * no lock, async-signal-safe; a line may come out twice. */
void log__crash_flush(void);

/* The usual spellings; the arguments are not evaluated below the level. */
#define log_debug(...) ((void)(log_enabled(DV_LOG_DEBUG) ? log_msg(DV_LOG_DEBUG, NULL, __VA_ARGS__) : (void)0))
#define log_info(...) ((void)(log_enabled(DV_LOG_INFO) ? log_msg(DV_LOG_INFO, NULL, __VA_ARGS__) : (void)0))
#define log_notice(...) ((void)(log_enabled(DV_LOG_NOTICE) ? log_msg(DV_LOG_NOTICE, NULL, __VA_ARGS__) : (void)0))
#define log_warning(...) ((void)(log_enabled(DV_LOG_WARNING) ? log_msg(DV_LOG_WARNING, NULL, __VA_ARGS__) : (void)0))
#define log_error(...) ((void)(log_enabled(DV_LOG_ERROR) ? log_msg(DV_LOG_ERROR, NULL, __VA_ARGS__) : (void)0))
#define log_critical(...) ((void)(log_enabled(DV_LOG_CRITICAL) ? log_msg(DV_LOG_CRITICAL, NULL, __VA_ARGS__) : (void)0))

/* ---- the configuration (logcfg.c) ------------------------------------------ */

struct dv_config;

/* Apply the [log] section of c: level (unknown names: info, as CouchDB,
 * with a warning line), writer (stderr, file, journald), file (default:
 * default_file; NULL keeps the one given last time), max_message_size.
 * Called at start, on SIGHUP (which so reopens the file) and when /_config
 * changes [log]. Returns 0, or log_open's error with err saying why
 * ("[log] writer = syslog: divan writes stderr, file or journald"), the
 * log left as it was. */
int log_config_apply(struct dv_config *c, const char *default_file, char *err, size_t errlen);

/* ---- for tests -------------------------------------------------------------- */

/* Format one line into out (LOG_LINE_MAX bytes) for the writer, as
 * log_write would at unix time unix_us on thread tid, the message cut at
 * max bytes (as max_message); the length written, "\n" included, no NUL. */
#define LOG_LINE_MAX (LOG_MAX_MESSAGE + LOG_NODE_MAX + 128)
size_t log__format(char *out, int writer, int level, const char *id, int64_t unix_us, long tid, const char *msg,
                   size_t len, size_t max);

#ifdef __cplusplus
}
#endif

#endif
