/* The json layer's tests: X(name, timeout_seconds). */
#define JSON_TESTS(X) \
  X(json_conformance, 10) \
  X(json_conf_big, 30) \
  X(json_num_classes, 5) \
  X(json_num_integers, 5) \
  X(json_num_shortest, 5) \
  X(json_num_ryu_oracle, 60) \
  X(json_num_text_path, 30) \
  X(json_pull_events, 5) \
  X(json_pull_skip, 5) \
  X(json_errors, 5) \
  X(json_dom_access, 5) \
  X(json_dom_build, 5) \
  X(json_dom_big_object, 20) \
  X(json_escape_output, 5) \
  X(json_stream_writer, 5) \
  X(json_utf8, 5) \
  X(json_alloc_fail, 10) \
  X(json_prop_roundtrip, 60) \
  X(json_fuzz_smoke, 120)
