/* err.h — divan's one error table.
 *
 * Every function that can fail returns an int: 0 is success, a negative
 * value is one of the codes below (libuv's UV_E* style). The table maps each
 * code once to its HTTP status and CouchDB {"error","reason"} pair, so the
 * HTTP layer never invents a status of its own: every error answer a client
 * can get is a row here (http.h's hres_err/hres_errw/hres_errwf take a code,
 * never a status and an error name; test_tree.c's tree_one_error_table
 * keeps it so). A caller may give its own reason; the status and the error
 * name always come from the row. Add a row for a new (status, error) pair.
 *
 * KV errors carry FoundationDB's own numbers, negated (not_committed is
 * FDB error 1020, so DV_ENOT_COMMITTED is -1020): the fdb backend maps
 * libfdb_c errors onto them without a lookup table, and logs read the same
 * on both backends. Divan's own codes live from -3000 down (general,
 * codecs) and from -4000 down (CouchDB semantics: -40xx the store's,
 * -41xx requests, -42xx Mango selectors, -43xx the replicator, -44xx
 * query servers, -45xx views), away from FDB's ranges. Codes and names are unique (test/util's err_table).
 *
 * This file is not a logging facility and holds no state.
 */
#ifndef DV_ERR_H
#define DV_ERR_H

/*  X(NAME, code, http, couch_error, reason, class)
 *  class: 0 = plain error, 1 = retryable (kv_on_error retries it),
 *         2 = retryable and "maybe committed" (commit_unknown_result). */
#define DV_ERR_MAP(X)                                                          \
  /* general */                                                                \
  X(NOMEM,        -3001, 500, "internal_server_error", "Out of memory.", 0)   \
  X(INVAL,        -3002, 400, "bad_request", "Invalid argument.", 0)          \
  X(IO,           -3003, 500, "internal_server_error", "I/O error.", 0)       \
  X(RANGE,        -3004, 400, "bad_request", "Value out of range.", 0)        \
  X(CORRUPT,      -3005, 500, "internal_server_error", "Stored data is corrupt.", 0) \
  X(LOCKED,       -3006, 500, "internal_server_error", "Data directory is in use by another process.", 0) \
  X(INTERNAL,     -3007, 500, "internal_server_error", "Internal error.", 0)  \
  X(EOF_,         -3008, 400, "bad_request", "Unexpected end of input.", 0)   \
  X(NOTSUP,       -3009, 501, "not_implemented", "Not implemented.", 0)       \
  X(NOSPC,        -3010, 507, "insufficient_storage", "Insufficient storage: the data directory's filesystem is full.", 0) \
  X(OVERLOADED,   -3011, 503, "service_unavailable", "The server is at its limit ([divan] memory_limit or [chttpd] max_connections); retry after a moment.", 0) \
  /* a write that could not be made durable (a failed fsync or another I/O
   * error of the store's): CouchDB's couch_file stops on a failed fsync
   * and the write gets a 500; divan's store then refuses every write until
   * a restart, as the kernel may have dropped the unsynced pages */ \
  X(READ_ONLY,    -3012, 500, "read_only", "The store could not make a write durable (a failed sync or I/O error) and accepts no writes until the server restarts.", 0) \
  /* HTTP request framing (http/hwire.h) */                                    \
  X(HTTP_FOLD,    -3301, 400, "bad_request", "Obsolete line folding in a request header is not accepted.", 0) \
  X(HTTP_HEADER,  -3302, 400, "bad_request", "Malformed request header.", 0)  \
  X(HTTP_LENGTH,  -3303, 400, "bad_request", "Invalid or conflicting Content-Length.", 0) \
  X(HTTP_SMUGGLE, -3304, 400, "bad_request", "Content-Length and Transfer-Encoding in one request.", 0) \
  X(HTTP_TE,      -3305, 400, "bad_request", "Malformed Transfer-Encoding: only a single \"chunked\" is accepted.", 0) \
  X(HTTP_CODING,  -3306, 501, "not_implemented", "Unsupported Transfer-Encoding: only chunked is implemented.", 0) \
  X(HTTP_CHUNK,   -3307, 400, "bad_request", "Malformed chunked request body.", 0) \
  X(HTTP_CHUNK_LINE, -3308, 400, "bad_request", "Chunk size line (extensions included) too long.", 0) \
  X(HTTP_HEAD_LARGE, -3309, 431, "request_header_fields_too_large", "Request header fields too large.", 0) \
  X(HTTP_URI_LONG, -3310, 414, "uri_too_long", "Request line too long.", 0)  \
  X(HTTP_HEAD_TIMEOUT, -3311, 408, "request_timeout", "The request head did not arrive in time.", 0) \
  X(HTTP_BODY_TIMEOUT, -3313, 408, "request_timeout", "The request body did not arrive in time.", 0) \
  X(HTTP_BUSY,    -3312, 503, "service_unavailable", "The server is out of file descriptors; retry after a moment.", 0) \
  /* codecs */                                                                 \
  X(TUPLE,        -3101, 500, "internal_server_error", "Malformed tuple encoding.", 0) \
  X(JSON,         -3201, 400, "bad_request", "invalid UTF-8 JSON", 0)        \
  X(JSON_DEPTH,   -3202, 400, "bad_request", "JSON nesting too deep.", 0)     \
  X(JSON_SIZE,    -3203, 413, "too_large", "JSON value too large.", 0)        \
  /* kv: FoundationDB's numbers, negated */                                    \
  X(TXN_TOO_OLD,        -1007, 503, "service_unavailable", "Transaction too old.", 1) \
  X(FUTURE_VERSION,     -1009, 503, "service_unavailable", "Future version.", 1) \
  X(NOT_COMMITTED,      -1020, 409, "conflict", "Transaction not committed due to conflict.", 1) \
  X(COMMIT_UNKNOWN,     -1021, 503, "service_unavailable", "Commit result unknown.", 2) \
  X(CANCELLED,          -1025, 500, "internal_server_error", "Operation cancelled.", 0) \
  X(TIMED_OUT,          -1031, 503, "timeout", "Operation timed out.", 0) \
  X(ACCESSED_UNREADABLE,-1036, 500, "internal_server_error", "Read of a versionstamped key inside its own transaction.", 0) \
  X(USED_DURING_COMMIT, -2017, 500, "internal_server_error", "Transaction used during commit.", 0) \
  X(KEY_OUTSIDE_LEGAL,  -2004, 500, "internal_server_error", "Key outside legal range.", 0) \
  X(INVERTED_RANGE,     -2005, 500, "internal_server_error", "Range begin is after its end.", 0) \
  X(INVALID_MUTATION,   -2018, 500, "internal_server_error", "Invalid mutation type.", 0) \
  X(TXN_TOO_LARGE,      -2101, 413, "too_large", "Transaction exceeds byte limit.", 0) \
  X(KEY_TOO_LARGE,      -2102, 413, "too_large", "Key length exceeds limit.", 0) \
  X(VALUE_TOO_LARGE,    -2103, 413, "too_large", "Value length exceeds limit.", 0) \
  /* CouchDB semantics (store and above) */                                   \
  X(NOT_FOUND,     -4001, 404, "not_found", "missing", 0)                       \
  X(DELETED,       -4002, 404, "not_found", "deleted", 0)                       \
  X(NO_DB,         -4003, 404, "not_found", "Database does not exist.", 0)      \
  X(CONFLICT,      -4004, 409, "conflict", "Document update conflict.", 0)      \
  X(DB_EXISTS,     -4005, 412, "file_exists", "The database could not be created, the file already exists.", 0) \
  X(BAD_DB_NAME,   -4006, 400, "illegal_database_name", "Name: Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter.", 0) \
  X(BAD_DOCID,     -4007, 400, "illegal_docid", "Only reserved document ids may start with underscore.", 0) \
  X(BAD_REV,       -4008, 400, "bad_request", "Invalid rev format", 0)          \
  X(DOC_TOO_LARGE, -4009, 413, "document_too_large", "Document exceeds the maximum document size.", 0) \
  X(PATH_TOO_LONG, -4010, 413, "document_too_large", "A path inside the document is longer than 10000 bytes.", 0) \
  X(NOT_OBJECT,    -4011, 400, "bad_request", "Document must be a JSON object", 0) \
  X(DOC_FIELD,     -4012, 400, "doc_validation", "Bad special document member", 0) \
  X(BAD_REVS_LIMIT,-4013, 400, "bad_request", "_revs_limit must be a positive integer no larger than 4000", 0) \
  X(BAD_SEQ,       -4014, 400, "bad_request", "Malformed sequence supplied in 'since' parameter.", 0) \
  X(MISSING_STUB,  -4015, 412, "missing_stub", "Invalid attachment stub.", 0)    \
  X(ATT_TOO_LARGE, -4016, 413, "attachment_too_large", "Attachment exceeds the maximum attachment size.", 0) \
  X(BAD_ATT,       -4017, 400, "bad_request", "Invalid attachment.", 0)          \
  X(ATT_GONE,      -4018, 409, "conflict", "The attachment's revision was replaced while it was read.", 0) \
  /* a write hook's refusal (store/hooks.h): the edit's why is the reason */ \
  X(FORBIDDEN,     -4019, 403, "forbidden", "Forbidden.", 0)                      \
  X(UNAUTHORIZED,  -4020, 401, "unauthorized", "Unauthorized.", 0)                \
  X(VDU_TYPEERROR, -4021, 500, "TypeError", "The validation function failed.", 0) \
  X(VDU_UNKNOWN,   -4022, 500, "unknown_error", "function_clause", 0)  \
  /* a validate_doc_update that threw an Error (index/jsddoc.c): its name */ \
  X(VDU_ERROR,     -4023, 500, "Error", "The validation function failed.", 0) \
  X(VDU_REFERENCEERROR, -4024, 500, "ReferenceError", "The validation function failed.", 0) \
  X(VDU_SYNTAXERROR, -4025, 500, "SyntaxError", "The validation function failed.", 0) \
  X(VDU_RANGEERROR, -4026, 500, "RangeError", "The validation function failed.", 0) \
  X(VDU_INTERNALERROR, -4027, 500, "InternalError", "The validation function failed.", 0) \
  X(VDU_EVALERROR, -4028, 500, "EvalError", "The validation function failed.", 0) \
  X(VDU_URIERROR,  -4029, 500, "URIError", "The validation function failed.", 0) \
  /* a write to a database in a move's read-only round (store/move.c) */ \
  X(DB_MOVING,     -4030, 503, "service_unavailable", "The database is being moved to another store (divan move) and accepts no writes until the move ends.", 0) \
  /* HTTP requests (api/, http/): the reason is usually the request's own */ \
  X(BAD_REQUEST,   -4101, 400, "bad_request", "Bad request.", 0)                \
  X(BAD_CREDENTIAL,-4102, 400, "bad_request", "Malformed credentials.", 0)      \
  X(BAD_CONTENT_TYPE, -4103, 415, "bad_content_type", "Content-Type must be application/json", 0) \
  X(METHOD,        -4104, 405, "method_not_allowed", "Only these methods are allowed.", 0) \
  X(BODY_TOO_LARGE,-4105, 413, "too_large", "the request entity is too large", 0) \
  X(EXPECTATION,   -4106, 417, "expectation_failed", "Only Expect: 100-continue is supported.", 0) \
  X(QUERY_PARSE,   -4107, 400, "query_parse_error", "Invalid query parameter.", 0) \
  X(NO_RESPONSE,   -4108, 500, "internal_server_error", "No response.", 0)    \
  X(MISSING_REV,   -4109, 409, "not_found", "missing_rev", 0)                   \
  X(CONTENT_MD5,   -4110, 400, "content_md5_mismatch", "Possible message corruption.", 0) \
  X(RANGE_UNSATISFIABLE, -4111, 416, "requested_range_not_satisfiable", "Requested range not satisfiable", 0) \
  X(BULK_DOCS_COUNT, -4112, 413, "max_bulk_docs_count_exceeded", "Too many documents in one _bulk_docs request.", 0) \
  X(BULK_GET_COUNT, -4113, 413, "max_bulk_get_count_exceeded", "Too many documents in one _bulk_get request.", 0) \
  X(NOT_ACCEPTABLE, -4114, 406, "not_acceptable", "No content type the request accepts.", 0) \
  /* Mango selectors (index/mango.h): CouchDB's mango_error names */         \
  X(MANGO_OPERATOR, -4201, 400, "invalid_operator", "Invalid operator.", 0)    \
  X(MANGO_NOT_SUPPORTED, -4202, 400, "not_supported", "Unsupported operator.", 0) \
  X(MANGO_BAD_ARG, -4203, 400, "bad_arg", "Bad argument for an operator.", 0)  \
  X(MANGO_SELECTOR, -4204, 400, "invalid_selector", "Invalid selector.", 0)    \
  X(MANGO_SELECTOR_JSON, -4205, 400, "invalid_selector_json", "Selector must be a JSON object.", 0) \
  X(MANGO_BAD_FIELD, -4206, 400, "bad_field", "Invalid field.", 0)             \
  X(MANGO_FIELD_NAME, -4207, 400, "invalid_field_name", "Invalid field name.", 0) \
  /* Mango's requests (index/mqidx.c, index/mquery.c, api/mango.c): mango_error's names */ \
  X(MQ_MISSING_KEY, -4240, 400, "missing_required_key", "Missing required key.", 0) \
  X(MQ_INVALID_KEY, -4241, 400, "invalid_key", "Invalid key for this request.", 0) \
  X(MQ_STRING, -4242, 400, "invalid_string", "Invalid string.", 0)             \
  X(MQ_POS_INTEGER, -4243, 400, "invalid_pos_integer", "Not an integer greater than zero.", 0) \
  X(MQ_PARTITIONED_VALUE, -4244, 400, "invalid_partitioned_value", "Invalid value for partitioned.", 0) \
  X(MQ_INDEX, -4245, 400, "invalid_index", "Invalid index.", 0)                \
  X(MQ_SERVICE, -4246, 503, "required index service unavailable", "The index service is not available.", 0) \
  X(MQ_SORT_JSON, -4247, 400, "invalid_sort_json", "Sort must be an array of sort specs.", 0) \
  X(MQ_SORT_FIELD, -4248, 400, "invalid_sort_field", "Invalid sort field.", 0) \
  X(MQ_MIXED_SORT, -4249, 400, "unsupported_mixed_sort", "Sorts currently only support a single direction for all fields.", 0) \
  X(MQ_DDOC_LANG, -4250, 400, "invalid_ddoc_lang", "Existing design doc has an invalid language.", 0) \
  X(MQ_PARTITIONED_OPTION, -4251, 400, "invalid_partitioned_option", "Requested partitioned option does not match the design document.", 0) \
  X(MQ_SAVING, -4252, 500, "error_saving_ddoc", "Unknown error while saving the design document.", 0) \
  X(MQ_LIST_PARAMS, -4253, 500, "invalid_list_index_params", "Index parameter ranges: limit > 1, skip > 0", 0) \
  X(MQ_BULK_DOCS, -4254, 400, "invalid_bulk_docs", "Bulk Delete requires an array of non-null docids.", 0) \
  X(MQ_INDEX_NAME, -4255, 400, "invalid_index_name", "Invalid index name.", 0) \
  X(MQ_DESIGN_DOC, -4256, 400, "invalid_design_doc", "Invalid design document.", 0) \
  X(MQ_UNKNOWN, -4257, 500, "unknown_error", "Unknown Error.", 0)              \
  X(MQ_NON_NEG_INTEGER, -4213, 400, "invalid_non_neg_integer", "Not an integer greater than or equal to zero.", 0) \
  X(MQ_FIELDS, -4218, 400, "invalid_fields", "Fields must be an array of strings.", 0) \
  X(MQ_FIELD, -4219, 400, "invalid_field", "Invalid JSON for field spec.", 0) \
  X(MQ_BOOLEAN, -4220, 400, "invalid_boolean", "Invalid boolean value.", 0)    \
  X(MQ_STALE, -4221, 400, "invalid_ok_or_false_value", "Invalid value for stale.", 0) \
  X(MQ_PARTITION, -4222, 400, "illegal_partition", "Invalid partition.", 0)    \
  X(MQ_BOOKMARK, -4223, 400, "invalid_bookmark", "Invalid bookmark value.", 0) \
  X(MQ_NO_INDEX, -4224, 400, "no_usable_index", "No index exists for this sort, try indexing by the sort fields.", 0) \
  /* the replicator (repl/): what a replication that failed answers */       \
  X(REPL_FAILED,   -4301, 500, "replication_failed", "The replication failed.", 0) \
  X(REPL_CANCELLED,-4302, 500, "cancelled", "The replication was cancelled.", 0) \
  X(DB_NOT_FOUND,  -4303, 404, "db_not_found", "Could not open the database.", 0) \
  X(REPL_UNREACHABLE, -4304, 500, "db_not_found", "Could not reach the database.", 0) \
  X(REPL_FILTER_FETCH, -4305, 500, "filter_fetch_error", "Couldn't fetch the filter.", 0) \
  X(REPL_CHECKPOINT, -4306, 500, "checkpoint_commit_failure", "Could not write the checkpoint.", 0) \
  /* query servers and design-document functions (index/qs.h, index/jsddoc.h);
   * a design document refused on write is MQ_DESIGN_DOC's invalid_design_doc */ \
  X(QS,            -4401, 500, "unknown_error", "The query server failed.", 0) \
  X(QS_COMPILE,    -4402, 500, "compilation_error", "The function could not be compiled.", 0) \
  X(QS_PROCESS,    -4403, 500, "os_process_error", "OS process timed out.", 0) \
  X(QS_RENDER,     -4404, 500, "render_error", "The function did not render a response.", 0) \
  X(QS_LANG,       -4405, 500, "unknown_query_language", "No query server for this language.", 0) \
  /* views (index/view.h, vreduce.h, vtree.h) */                             \
  X(VIEW_BUILTIN,  -4501, 500, "builtin_reduce_error", "A built-in reduce could not reduce the values.", 0) \
  X(VIEW_COMPILE,  -4502, 400, "compilation_error", "A view's function does not compile.", 0) \
  X(GONE_TEMP_VIEW,-4503, 410, "gone", "Temporary views are not supported in CouchDB", 0)

enum {
#define DV_ERR_ENUM(name, code, http, err, reason, cls) DV_E##name = (code),
  DV_ERR_MAP(DV_ERR_ENUM)
#undef DV_ERR_ENUM
};

/* Name of a code ("NOT_COMMITTED"), or "UNKNOWN". Never NULL. */
const char *dv_err_name(int rc);
/* Human reason text for a code. Never NULL. */
const char *dv_strerror(int rc);
/* HTTP status for a code (500 for an unknown one). */
int dv_err_http(int rc);
/* CouchDB "error" member for a code. Never NULL. */
const char *dv_err_couch(int rc);
/* 1 if a KV layer should retry after this error (FDB's on_error). */
int dv_err_retryable(int rc);
/* 1 if the error leaves it unknown whether the commit happened. */
int dv_err_maybe_committed(int rc);

#define DV_MUST_CHECK __attribute__((warn_unused_result))

#endif
