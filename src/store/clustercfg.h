/* clustercfg.h — cluster-wide settings in the key space, so that several
 * divan processes on one FoundationDB cluster share them (the embedded
 * store keeps the same keys): server admins, the cookie secret and every
 * ini section that must agree between processes. clustercfg.c's header has
 * the keys and the data flow.
 *
 * Which settings are per process (stay in the ini file only): the [log],
 * [divan], [fdb], [rocksdb], [ssl] and [stats] sections, and [chttpd]
 * bind_address, port, server_threads, max_connections and docroot;
 * [httpd] bind_address and port; [couchdb] database_dir and view_index_dir.
 * Every other setting is cluster-wide.
 */
#ifndef DV_STORE_CLUSTERCFG_H
#define DV_STORE_CLUSTERCFG_H

#include "store/store.h"
#include "util/config.h"

typedef struct store_cfg store_cfg;

/* 1 if section/key is a cluster-wide setting (above). */
int store_cfg_shared(const char *section, const char *key);

/* Join c to s's cluster-wide settings:
 *   1. seed: every cluster-wide value of c's file that the store has no
 *      row for (not even a deletion) is written to the store, in one
 *      transaction — the first process to start brings its ini file's
 *      settings; later ones find them there and their own file's values
 *      for those keys are hidden (a store that takes no writes now, a full
 *      disk: a warning, and the file's new values wait for a later start);
 *   2. the store's rows become c's shared layer (config_shared_replace);
 *   3. c's persisted writes of cluster-wide keys go to the store
 *      (config_set_shared_hook), and this process's file keeps a copy;
 *   4. a thread watches the settings' version key and reloads the rows
 *      when any process changed them (within a second: the watch fires at
 *      the commit), then calls changed(arg) if they differ (changed may be
 *      NULL; it runs on the watching thread).
 * 0 and *out, or kv errors / DV_ENOMEM (nothing attached). */
int store_cfg_attach(store *s, dv_config *c, void (*changed)(void *arg), void *arg,
                     store_cfg **out) DV_MUST_CHECK;

/* Stop watching and remove the hook (c keeps the last rows it read).
 * NULL is fine. Before store_close and config_free. */
void store_cfg_detach(store_cfg *x);

/* Renew the watch every ms without a fire (default 30 s; <= 0 the
 * default), starting with a renewal now (tests). */
void store_cfg_set_renew_ms(store_cfg *x, int ms);

/* How many times the watching thread has reloaded the rows (tests). */
long store_cfg_reloads(store_cfg *x);

#endif
