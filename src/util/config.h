/* config.h — CouchDB-style ini configuration (the local.ini of divan).
 *
 * A dv_config holds the key/value pairs of one ini file, in sections, plus
 * in-memory overrides (command-line flags, environment variables). It reads
 * and rewrites the file so that a hand-edited file keeps its comments, order
 * and blank lines: a change touches only the line of the key it changes.
 *
 * It is not a schema: it does not know CouchDB's sections or keys, checks no
 * values and holds no defaults — those live with the code that reads them
 * (config_get_int(c, "httpd", "port", 5984)). It does not watch the file for
 * outside edits, and it supports one dv_config per file at a time.
 *
 * The file format, as CouchDB reads it:
 *
 *   ; a comment (so is a line starting with '#')
 *   [couchdb]                    a section header; text after ']' must be a
 *                                comment or nothing
 *   uuid = 0f3a…                 key = value; spaces and tabs around '=' and
 *   max_document_size=8000000    at the ends of the line are trimmed, the
 *                                value keeps its inner spaces
 *   motd = first part            a value continues on the following lines
 *     and the second part        that start with a space or a tab, hold no
 *                                '=' and are not a comment or a header; they
 *                                are joined with one space
 *
 * A key is everything before the first '=' (trimmed); it is not empty and
 * cannot start with '[', ';' or '#'. Section names and keys are
 * case-sensitive. When a key appears twice in a section (or the section
 * appears twice) the last line wins. A key before the first section header,
 * a line without '=', an unterminated header and a NUL byte are errors. Line
 * ends may be "\n" or "\r\n".
 *
 * Three layers. File values are what the file says (persist=1 changes them
 * and the file). Overrides are kept in memory only (persist=0): a value, or a
 * deletion that hides the file value. An override wins over the file value
 * of its key until a persisted delete removes both; a persisted set changes
 * the file value and leaves an override of that key in force.
 *
 * Between them, shared values: settings held outside the process (the
 * store's cluster-wide config, store/config.c), each a value or a deletion,
 * replaced as a whole by config_shared_replace. Effective value: override,
 * else shared, else file. With a shared hook installed, a persisted write of
 * a key the hook's scope claims goes to the hook first (without the mutex);
 * once the hook has made it, the shared layer holds it at once and the file
 * gets the same change, as this process's copy.
 *
 * Every function is thread-safe: a mutex inside the dv_config guards it, and
 * every value handed out is the caller's own copy (free it with dv_free).
 */
#ifndef DV_CONFIG_H
#define DV_CONFIG_H

#include <stddef.h>

#include "util/err.h"

typedef struct dv_config dv_config;

/* Load the ini file at path into a new config (*out, freed with
 * config_free). A missing file is an empty config; path is kept, so the
 * first persisted config_set creates the file. path may be NULL: a config
 * in memory only. Errors: DV_EIO (the file exists but cannot be read),
 * DV_EINVAL (a parse error), DV_ENOMEM. On error *out is untouched and, if
 * err is not NULL, err (errlen bytes, always NUL-terminated) says why:
 * "PATH: line 3: expected key = value". */
int config_load(const char *path, dv_config **out, char *err, size_t errlen) DV_MUST_CHECK;

/* Parse len bytes of ini text into a new config without a path (for tests
 * and the fuzzer). Errors: DV_EINVAL with err set to "line N: reason",
 * DV_ENOMEM with "out of memory". */
int config_parse(const char *text, size_t len, dv_config **out, char *err, size_t errlen) DV_MUST_CHECK;

/* Free a config and everything in it. NULL is fine. Not to be called while
 * another thread still uses c. */
void config_free(dv_config *c);

/* The path given to config_load (NULL for none), borrowed for c's life. */
const char *config_path(const dv_config *c);

/* The effective value of section/key (an override, else the file value) as
 * a NUL-terminated copy the caller frees with dv_free; NULL if the key has
 * no value or on allocation failure. */
char *config_get(dv_config *c, const char *section, const char *key);

/* The value as a decimal integer (an optional sign, then digits only,
 * within long long); dflt if absent or not such an integer. */
long long config_get_int(dv_config *c, const char *section, const char *key, long long dflt);

/* 1 for "true", 0 for "false" (any case); dflt if absent or anything else. */
int config_get_bool(dv_config *c, const char *section, const char *key, int dflt);

/* Set section/key to value.
 *
 * persist=1 changes the file value and, if c has a path, rewrites the file
 * atomically (PATH.tmp is written and fsynced, renamed over PATH, and the
 * directory fsynced; a new file gets mode 0600, an existing one keeps its
 * mode). Every other line stays as it was, byte for byte: the key's line is
 * replaced in place (with its continuation lines; the last one if the key is
 * repeated), or the key is appended after the last key of its section (its
 * last header if the section is repeated), or "[section]" and the key are
 * appended at the end of the file (after a blank line unless the file is
 * empty or already ends with one). The key's line is written
 * "key = value".
 *
 * persist=0 sets an override: memory only, never written, winning over the
 * file value.
 *
 * Only what can be written back and read again unchanged is accepted, for
 * both layers: a section without '\n' or ']'; a non-empty key without '\n'
 * or '=' that does not start with '[', ';' or '#'; a value without '\n';
 * neither key nor value starting or ending with a space, tab or '\r'.
 *
 * If out_old is not NULL, on success *out_old is a copy (dv_free) of the
 * previous effective value, or NULL if there was none.
 *
 * Returns 0; DV_EINVAL for a section, key or value refused above (or NULL);
 * DV_ENOMEM; DV_EIO if the file could not be rewritten, with errno saying
 * why. On any error nothing changed, in memory or on disk — except when
 * only the directory fsync after the rename failed: then the change is
 * made (memory matches the new file) but may not survive a crash, and
 * DV_EIO is returned all the same. */
int config_set(dv_config *c, const char *section, const char *key, const char *value, int persist,
               char **out_old) DV_MUST_CHECK;

/* Delete section/key. persist=1 removes every file line of the key (the
 * file is rewritten as by config_set) and any override of it. persist=0
 * touches memory only: it removes the key's override and, if the file has a
 * value for it, hides that value with a deletion override. *out_old (if
 * out_old is not NULL) as for config_set.
 *
 * Returns 0; DV_ENOT_FOUND if there was nothing to delete (persist=1: no
 * file line and no override; persist=0: no effective value); DV_EINVAL for
 * a NULL section or key; DV_ENOMEM; DV_EIO as for config_set (nothing
 * changed on error, with the same exception). */
int config_delete(dv_config *c, const char *section, const char *key, int persist,
                  char **out_old) DV_MUST_CHECK;

/* Call cb for every effective (section, key, value): sections sorted by
 * name, keys sorted within them (byte order, as strcmp). section NULL
 * means every section, else only that one. The strings are valid during
 * the call only. cb runs without the lock held (it works on a snapshot), so
 * it may call config_get or config_set. A nonzero return of cb stops the
 * walk and is returned; otherwise 0, DV_ENOMEM before any call, or
 * DV_EINVAL for a NULL c or cb. */
typedef int (*config_cb)(void *arg, const char *section, const char *key, const char *value);
int config_each(dv_config *c, const char *section, config_cb cb, void *arg);

/* ---- the shared layer -------------------------------------------------------- */

typedef struct config_row {
  const char *section, *key;
  const char *value;                 /* NULL: deleted (hides the file value) */
} config_row;

typedef struct config_shared_hook {
  /* 1 if section/key is shared (NULL: every key is) */
  int (*scope)(const char *section, const char *key);
  /* make the write where the shared values live (value NULL: a delete);
   * 0 or a DV_E* code, which config_set/config_delete return unchanged */
  int (*write)(void *arg, const char *section, const char *key, const char *value);
  void *arg;
} config_shared_hook;

/* Install h (copied; NULL removes it). From then on config_set and
 * config_delete with persist=1 of a key h->scope claims call h->write;
 * DV_ENOT_FOUND for a delete when the key has no effective value, no
 * override and no file line. */
void config_set_shared_hook(dv_config *c, const config_shared_hook *h);

/* 1 if a persisted write of section/key goes to the shared hook. */
int config_shared_key(dv_config *c, const char *section, const char *key);

/* Make rows (n of them; a (section, key) given twice: the last wins) the
 * whole shared layer. *changed (may be NULL) = 1 if the effective shared
 * rows differ from before. 0 or DV_ENOMEM (nothing changed). */
int config_shared_replace(dv_config *c, const config_row *rows, size_t n, int *changed) DV_MUST_CHECK;

/* config_each over the file layer only (what the file says, ignoring shared
 * values and overrides): what a process would seed a shared store with. */
int config_each_file(dv_config *c, config_cb cb, void *arg);

#endif
