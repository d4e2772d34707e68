/* test.h — the unit-test frame (libuv's TEST_IMPL and test-list.h).
 *
 * A test is `TEST(name) { … }` in a test/LAYER/test_NAME.c file and one line
 * X(name, timeout_seconds) in that layer's tests.h list. The runner
 * (test/runner.c) forks each test, so a crash or an assertion only fails
 * that one test, and ends with the line `N passed, N failed`.
 *
 * Assertions print file:line and the values, then abort the child.
 * test_tmpdir() is a fresh directory for this test, removed afterwards.
 * LEAK_CHECK() asks LeakSanitizer for leaks now, in a sanitized build (the
 * runner's children end with _exit, which skips the exit-time check).
 */
#ifndef DV_TEST_H
#define DV_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST(name) void test_##name(void)

const char *test_tmpdir(void);
/* Hex dump helper for messages; returns a static buffer (one per call site
 * is not needed: the message is printed before the next call). */
const char *test_hex(const void *p, size_t n);
/* Run a shell command from the repository root; returns its exit status
 * (or -1), with its output passed through to the test's log. */
int test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Run libFuzzer target `name` (built in $DV_FUZZ_DIR) for 20 s over its
 * seeds in test/fuzz/seeds/<name>; new corpus entries and crash files go
 * to the test's temporary directory. Fails the test if the fuzzer finds
 * anything, and when DV_FUZZ_DIR is not set (it did not run). */
void test_fuzz_smoke(const char *name);

void test_fail_(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

#define ASSERT(c)                                                             \
  do {                                                                        \
    if (!(c)) test_fail_(__FILE__, __LINE__, "assertion failed: %s", #c);     \
  } while (0)

#define ASSERTF(c, ...)                                                       \
  do {                                                                        \
    if (!(c)) test_fail_(__FILE__, __LINE__, __VA_ARGS__);                    \
  } while (0)

#define ASSERT_EQ(a, b)                                                       \
  do {                                                                        \
    long long a_ = (long long)(a), b_ = (long long)(b);                       \
    if (a_ != b_)                                                             \
      test_fail_(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); \
  } while (0)

#define ASSERT_OK(rc)                                                         \
  do {                                                                        \
    long long r_ = (long long)(rc);                                           \
    if (r_ != 0) test_fail_(__FILE__, __LINE__, "%s returned %lld", #rc, r_);  \
  } while (0)

#define ASSERT_STR_EQ(a, b)                                                   \
  do {                                                                        \
    const char *a_ = (a), *b_ = (b);                                          \
    if (strcmp(a_, b_) != 0)                                                  \
      test_fail_(__FILE__, __LINE__, "%s == %s:\n  \"%s\"\n  \"%s\"", #a, #b, a_, b_); \
  } while (0)

#define ASSERT_MEM_EQ(a, an, b, bn)                                           \
  do {                                                                        \
    const void *a_ = (a), *b_ = (b);                                          \
    size_t an_ = (an), bn_ = (bn);                                            \
    if (an_ != bn_ || (an_ && memcmp(a_, b_, an_) != 0)) {                    \
      char *ha_ = strdup(test_hex(a_, an_));                                  \
      test_fail_(__FILE__, __LINE__, "%s == %s:\n  %s\n  %s", #a, #b, ha_,    \
                 test_hex(b_, bn_));                                          \
    }                                                                         \
  } while (0)

#if defined(__SANITIZE_ADDRESS__)
#define DV_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DV_HAVE_LSAN 1
#endif
#endif
#ifdef DV_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#define LEAK_CHECK() ASSERT_EQ(__lsan_do_recoverable_leak_check(), 0)
#else
#define LEAK_CHECK() ((void)0)
#endif

#endif
