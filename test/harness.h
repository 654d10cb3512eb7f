/*
 * harness.h - the unit-test harness. A test file defines test functions
 * with TEST(name), lists them in a TEST_LIST and ends with TEST_MAIN().
 * The binary runs every test (or those whose name contains argv[1]) and
 * ends with the line "N passed, N failed"; its exit status is 1 if any
 * failed.
 *
 *   TEST(parses_minutes) { int64_t ms; CHECK_OK(duration_parse("15m", &ms));
 *                          CHECK_INT(ms, 900000); }
 *   TEST_LIST = { T(parses_minutes), {0} };
 *   TEST_MAIN()
 *
 * A failed CHECK prints file:line and what differed, and ends that test.
 */
#ifndef SC_TEST_HARNESS_H
#define SC_TEST_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct test_case {
  const char *name;
  void (*fn)(int *failed);
};

#define TEST(name) static void test_##name(int *test_failed_)
#define T(name) {#name, test_##name}
#define TEST_LIST static const struct test_case test_cases_[]

#define TEST_FAIL_(...)                                                     \
  do {                                                                      \
    fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                       \
    fprintf(stderr, __VA_ARGS__);                                           \
    fputc('\n', stderr);                                                    \
    *test_failed_ = 1;                                                      \
    return;                                                                 \
  } while(0)

#define CHECK(cond)                                                         \
  do {                                                                      \
    if(!(cond))                                                             \
      TEST_FAIL_("CHECK(%s) failed", #cond);                                \
  } while(0)

#define CHECK_MSG(cond, ...)                                                \
  do {                                                                      \
    if(!(cond))                                                             \
      TEST_FAIL_(__VA_ARGS__);                                              \
  } while(0)

#define CHECK_INT(a, b)                                                     \
  do {                                                                      \
    long long a_ = (long long)(a), b_ = (long long)(b);                     \
    if(a_ != b_)                                                            \
      TEST_FAIL_("%s == %lld, expected %s == %lld", #a, a_, #b, b_);        \
  } while(0)

#define CHECK_STR(a, b)                                                     \
  do {                                                                      \
    const char *a_ = (a), *b_ = (b);                                        \
    if(!a_ || !b_ || strcmp(a_, b_))                                        \
      TEST_FAIL_("%s == \"%s\", expected \"%s\"", #a, a_ ? a_ : "(null)",   \
                 b_ ? b_ : "(null)");                                       \
  } while(0)

#define CHECK_OK(expr)                                                      \
  do {                                                                      \
    int e_ = (int)(expr);                                                   \
    if(e_)                                                                  \
      TEST_FAIL_("%s returned %d, expected 0", #expr, e_);                  \
  } while(0)

#define TEST_MAIN()                                                         \
  int main(int argc, char **argv)                                           \
  {                                                                         \
    int passed = 0, failed = 0;                                             \
    size_t i;                                                               \
    for(i = 0; test_cases_[i].name; i++) {                                  \
      int f = 0;                                                            \
      if(argc > 1 && !strstr(test_cases_[i].name, argv[1]))                 \
        continue;                                                           \
      test_cases_[i].fn(&f);                                                \
      if(f) {                                                               \
        failed++;                                                           \
        fprintf(stderr, "FAIL %s\n", test_cases_[i].name);                  \
      }                                                                     \
      else {                                                                \
        passed++;                                                           \
        if(getenv("TEST_VERBOSE"))                                          \
          fprintf(stderr, "ok   %s\n", test_cases_[i].name);                \
      }                                                                     \
    }                                                                       \
    printf("%d passed, %d failed\n", passed, failed);                       \
    return failed ? 1 : 0;                                                  \
  }

#endif
