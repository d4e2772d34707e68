/* tests.h — the auth layer's tests: crypto.c (test_crypto.c), the header
 * parsers' fuzz smoke (authparse.c), users.c's _users rules (test_users.c),
 * cluster-wide settings shared by two stores (test_cluster.c).
 * X(name, timeout_seconds). */
#define AUTH_TESTS(X) \
  X(crypto_b64_fuzz_smoke, 60) \
  X(auth_parse_fuzz_smoke, 60) \
  X(crypto_names, 5) \
  X(crypto_hash_vectors, 10) \
  X(crypto_hmac_vectors, 5) \
  X(crypto_pbkdf2_vectors, 30) \
  X(crypto_pbkdf2_long, 180) \
  X(crypto_iteration_limits, 5) \
  X(crypto_random, 5) \
  X(crypto_ct_eq, 5) \
  X(crypto_hex, 5) \
  X(crypto_b64_vectors, 5) \
  X(crypto_b64_roundtrip, 10) \
  X(crypto_b64_strict, 5) \
  X(crypto_admin_verify, 30) \
  X(crypto_admin_malformed, 5) \
  X(crypto_admin_is_hashed, 5) \
  X(crypto_admin_hash, 30) \
  X(crypto_admin_alloc_fail, 5) \
  X(crypto_user_verify, 30) \
  X(crypto_user_hash, 30) \
  X(users_refusal_rows, 5) \
  X(users_name_of, 5) \
  X(users_signup_anonymous, 5) \
  X(users_write_own_doc, 5) \
  X(users_write_other_doc, 5) \
  X(users_write_admin, 5) \
  X(users_validate_reasons, 5) \
  X(users_validate_js_semantics, 5) \
  X(users_password_hashed, 10) \
  X(users_password_left_alone, 5) \
  X(users_password_refused, 5) \
  X(users_password_salt, 10) \
  X(users_design_docs, 5) \
  X(users_local_docs, 5) \
  X(users_read, 5) \
  X(users_alloc_fail, 60) \
  X(cluster_config_two_stores, 60) \
  X(cluster_config_embedded, 30) \
  X(cluster_config_no_writes, 30) \
  X(cluster_config_renewal, 30)
