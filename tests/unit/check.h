/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/check.h: the unit tests' whole framework. Each CHECK prints
 * file:line and the failed expression; a test program exits 1 if any check
 * failed, 77 (SKIP) via SKIP(reason), 0 otherwise. */
#ifndef DLPAR_TEST_CHECK_H
#define DLPAR_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                   \
  do {                                                                                \
    check_count++;                                                                    \
    if (!(cond)) {                                                                    \
      check_failures++;                                                               \
      fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond);              \
    }                                                                                 \
  } while (0)

#define CHECK_INT(got, want)                                                          \
  do {                                                                                \
    long long got_ = (long long)(got), want_ = (long long)(want);                     \
    check_count++;                                                                    \
    if (got_ != want_) {                                                              \
      check_failures++;                                                               \
      fprintf(stderr, "%s:%d: FAILED: %s is %lld, expected %lld\n", __FILE__, __LINE__, \
              #got, got_, want_);                                                     \
    }                                                                                 \
  } while (0)

#define CHECK_STR(got, want)                                                          \
  do {                                                                                \
    const char *got_ = (got), *want_ = (want);                                        \
    check_count++;                                                                    \
    if (strcmp(got_, want_) != 0) {                                                   \
      check_failures++;                                                               \
      fprintf(stderr, "%s:%d: FAILED: %s is\n  \"%s\"\n expected\n  \"%s\"\n",       \
              __FILE__, __LINE__, #got, got_, want_);                                 \
    }                                                                                 \
  } while (0)

#define SKIP(...)                                                                     \
  do {                                                                                \
    printf("SKIP: ");                                                                 \
    printf(__VA_ARGS__);                                                              \
    printf("\n");                                                                     \
    exit(77);                                                                         \
  } while (0)

static inline int check_report(const char *name)
{
  printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
  return check_failures ? 1 : 0;
}

#endif
