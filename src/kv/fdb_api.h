/* fdb_api.h — the part of libfdb_c's C API (fdb_c.h, API version 710) that
 * divan uses, declared by divan itself: no FoundationDB header is copied or
 * needed to build. Two files include it: kv/fdb.c, which looks every
 * function up with dlsym in a library loaded at run time, and the test
 * double test/fdbsim/, which implements the same functions. Types, option
 * numbers and error numbers are FoundationDB's (fdb_c.h, fdb_c_options.g.h,
 * flow/error_definitions.h); enums are passed as int, which is their ABI.
 *
 * FDB_API_FUNCS(X) lists each function once as X(return type, name,
 * (parameters)); the backend builds its table of pointers from it and the
 * double its prototypes, so the two cannot drift apart.
 *
 * Not here: anything divan does not call (tenants, blob granules, mapped
 * ranges, get_key with other selectors).
 */
#ifndef DV_FDB_API_H
#define DV_FDB_API_H

#include <stdint.h>

#define FDB_DIVAN_API_VERSION 710 /* the version this file describes */
#define FDB_DIVAN_MIN_API_VERSION 620 /* oldest runtime accepted */

typedef struct FDB_future FDBFuture;
typedef struct FDB_database FDBDatabase;
typedef struct FDB_transaction FDBTransaction;
typedef int fdb_error_t;
typedef int fdb_bool_t;
typedef void (*FDBCallback)(FDBFuture *future, void *callback_parameter);

/* One pair of a range read, as libfdb_c lays it out (4-byte packing). */
#pragma pack(push, 4)
typedef struct FDBKeyValue {
  const uint8_t *key; /* owned by the future */
  int key_length;
  const uint8_t *value;
  int value_length;
} FDBKeyValue;
#pragma pack(pop)

/* Transaction options (FDBTransactionOption). */
enum {
  FDB_TR_OPTION_TIMEOUT = 500,     /* int64 ms, 0 = none */
  FDB_TR_OPTION_RETRY_LIMIT = 501, /* int64, -1 = none */
  FDB_TR_OPTION_SIZE_LIMIT = 503,  /* int64 bytes, 32 .. 10,000,000 */
};

/* Streaming modes (FDBStreamingMode). */
enum {
  FDB_STREAMING_MODE_WANT_ALL = -2,
  FDB_STREAMING_MODE_ITERATOR = -1,
  FDB_STREAMING_MODE_EXACT = 0,
  FDB_STREAMING_MODE_SMALL = 1,
  FDB_STREAMING_MODE_MEDIUM = 2,
  FDB_STREAMING_MODE_LARGE = 3,
  FDB_STREAMING_MODE_SERIAL = 4,
};

/* Mutation types (FDBMutationType). Note FDB's BYTE_MIN/BYTE_MAX are 16/17,
 * not kv.h's KV_BYTE_MIN/KV_BYTE_MAX numbers: the backend maps them. */
enum {
  FDB_MUTATION_TYPE_ADD = 2,
  FDB_MUTATION_TYPE_MAX = 12,
  FDB_MUTATION_TYPE_MIN = 13,
  FDB_MUTATION_TYPE_SET_VERSIONSTAMPED_KEY = 14,
  FDB_MUTATION_TYPE_SET_VERSIONSTAMPED_VALUE = 15,
  FDB_MUTATION_TYPE_BYTE_MIN = 16,
  FDB_MUTATION_TYPE_BYTE_MAX = 17,
};

enum { FDB_CONFLICT_RANGE_TYPE_READ = 0, FDB_CONFLICT_RANGE_TYPE_WRITE = 1 };

enum {
  FDB_ERROR_PREDICATE_RETRYABLE = 50000,
  FDB_ERROR_PREDICATE_MAYBE_COMMITTED = 50001,
  FDB_ERROR_PREDICATE_RETRYABLE_NOT_COMMITTED = 50002,
};

/* The error numbers divan meets (flow/error_definitions.h). */
enum {
  FDB_ERR_OPERATION_FAILED = 1000,
  FDB_ERR_TIMED_OUT = 1004,
  FDB_ERR_TRANSACTION_TOO_OLD = 1007,
  FDB_ERR_FUTURE_VERSION = 1009,
  FDB_ERR_NOT_COMMITTED = 1020,
  FDB_ERR_COMMIT_UNKNOWN_RESULT = 1021,
  FDB_ERR_TRANSACTION_CANCELLED = 1025,
  FDB_ERR_TRANSACTION_TIMED_OUT = 1031,
  FDB_ERR_ACCESSED_UNREADABLE = 1036,
  FDB_ERR_PROCESS_BEHIND = 1037,
  FDB_ERR_DATABASE_LOCKED = 1038,
  FDB_ERR_PROXY_MEMORY_LIMIT = 1042,
  FDB_ERR_BATCH_TXN_THROTTLED = 1051,
  FDB_ERR_TAG_THROTTLED = 1213,
  FDB_ERR_OPERATION_CANCELLED = 1101,
  FDB_ERR_CLIENT_INVALID_OPERATION = 2000,
  FDB_ERR_KEY_OUTSIDE_LEGAL_RANGE = 2004,
  FDB_ERR_INVERTED_RANGE = 2005,
  FDB_ERR_INVALID_OPTION_VALUE = 2006,
  FDB_ERR_INVALID_OPTION = 2007,
  FDB_ERR_NETWORK_NOT_SETUP = 2008,
  FDB_ERR_NETWORK_ALREADY_SETUP = 2009,
  FDB_ERR_USED_DURING_COMMIT = 2017,
  FDB_ERR_INVALID_MUTATION_TYPE = 2018,
  FDB_ERR_NO_COMMIT_VERSION = 2021,
  FDB_ERR_TRANSACTION_TOO_LARGE = 2101,
  FDB_ERR_KEY_TOO_LARGE = 2102,
  FDB_ERR_VALUE_TOO_LARGE = 2103,
  FDB_ERR_API_VERSION_UNSUPPORTED = 2203,
  FDB_ERR_API_VERSION_ALREADY_SET = 2201,
  FDB_ERR_INTERNAL = 4100,
};

#define FDB_API_FUNCS(X)                                                                         \
  X(fdb_error_t, fdb_select_api_version_impl, (int runtime_version, int header_version))        \
  X(int, fdb_get_max_api_version, (void))                                                        \
  X(const char *, fdb_get_error, (fdb_error_t code))                                             \
  X(fdb_bool_t, fdb_error_predicate, (int predicate_test, fdb_error_t code))                     \
  X(fdb_error_t, fdb_network_set_option, (int option, const uint8_t *value, int value_length))  \
  X(fdb_error_t, fdb_setup_network, (void))                                                      \
  X(fdb_error_t, fdb_run_network, (void))                                                        \
  X(fdb_error_t, fdb_stop_network, (void))                                                       \
  X(fdb_error_t, fdb_create_database, (const char *cluster_file_path, FDBDatabase **out_database)) \
  X(void, fdb_database_destroy, (FDBDatabase * d))                                               \
  X(fdb_error_t, fdb_database_create_transaction, (FDBDatabase * d, FDBTransaction **out_transaction)) \
  X(void, fdb_transaction_destroy, (FDBTransaction * tr))                                        \
  X(void, fdb_transaction_reset, (FDBTransaction * tr))                                          \
  X(void, fdb_transaction_cancel, (FDBTransaction * tr))                                         \
  X(fdb_error_t, fdb_transaction_set_option,                                                     \
    (FDBTransaction * tr, int option, const uint8_t *value, int value_length))                   \
  X(FDBFuture *, fdb_transaction_get_read_version, (FDBTransaction * tr))                        \
  X(FDBFuture *, fdb_transaction_get,                                                            \
    (FDBTransaction * tr, const uint8_t *key_name, int key_name_length, fdb_bool_t snapshot))    \
  X(FDBFuture *, fdb_transaction_get_range,                                                      \
    (FDBTransaction * tr, const uint8_t *begin_key_name, int begin_key_name_length,              \
     fdb_bool_t begin_or_equal, int begin_offset, const uint8_t *end_key_name,                   \
     int end_key_name_length, fdb_bool_t end_or_equal, int end_offset, int limit,                \
     int target_bytes, int mode, int iteration, fdb_bool_t snapshot, fdb_bool_t reverse))        \
  X(void, fdb_transaction_set,                                                                   \
    (FDBTransaction * tr, const uint8_t *key_name, int key_name_length, const uint8_t *value,    \
     int value_length))                                                                          \
  X(void, fdb_transaction_clear, (FDBTransaction * tr, const uint8_t *key_name, int key_name_length)) \
  X(void, fdb_transaction_clear_range,                                                           \
    (FDBTransaction * tr, const uint8_t *begin_key_name, int begin_key_name_length,              \
     const uint8_t *end_key_name, int end_key_name_length))                                      \
  X(void, fdb_transaction_atomic_op,                                                             \
    (FDBTransaction * tr, const uint8_t *key_name, int key_name_length, const uint8_t *param,    \
     int param_length, int operation_type))                                                      \
  X(FDBFuture *, fdb_transaction_commit, (FDBTransaction * tr))                                  \
  X(fdb_error_t, fdb_transaction_get_committed_version, (FDBTransaction * tr, int64_t *out_version)) \
  X(FDBFuture *, fdb_transaction_get_versionstamp, (FDBTransaction * tr))                        \
  X(FDBFuture *, fdb_transaction_watch, (FDBTransaction * tr, const uint8_t *key_name, int key_name_length)) \
  X(FDBFuture *, fdb_transaction_on_error, (FDBTransaction * tr, fdb_error_t error))             \
  X(fdb_error_t, fdb_transaction_add_conflict_range,                                             \
    (FDBTransaction * tr, const uint8_t *begin_key_name, int begin_key_name_length,              \
     const uint8_t *end_key_name, int end_key_name_length, int type))                            \
  X(void, fdb_future_cancel, (FDBFuture * f))                                                    \
  X(void, fdb_future_destroy, (FDBFuture * f))                                                   \
  X(fdb_error_t, fdb_future_block_until_ready, (FDBFuture * f))                                  \
  X(fdb_bool_t, fdb_future_is_ready, (FDBFuture * f))                                            \
  X(fdb_error_t, fdb_future_set_callback, (FDBFuture * f, FDBCallback callback, void *callback_parameter)) \
  X(fdb_error_t, fdb_future_get_error, (FDBFuture * f))                                          \
  X(fdb_error_t, fdb_future_get_int64, (FDBFuture * f, int64_t *out))                            \
  X(fdb_error_t, fdb_future_get_key, (FDBFuture * f, const uint8_t **out_key, int *out_key_length)) \
  X(fdb_error_t, fdb_future_get_value,                                                           \
    (FDBFuture * f, fdb_bool_t *out_present, const uint8_t **out_value, int *out_value_length))  \
  X(fdb_error_t, fdb_future_get_keyvalue_array,                                                  \
    (FDBFuture * f, const FDBKeyValue **out_kv, int *out_count, fdb_bool_t *out_more))

#endif
