/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/fuzz/fuzz.h: what every fuzz target shares. A target is
 * LLVMFuzzerTestOneInput over one reader of user input; built with clang's
 * libFuzzer (-fsanitize=fuzzer,address,undefined) or with driver.c, the
 * seeded mutation driver used where clang is missing. Besides not crashing,
 * hanging or growing without bound, every refusal must be one line. */
#ifndef DLPAR_FUZZ_H
#define DLPAR_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A refusal is one non-empty line; anything else is a bug: abort, so the
 * fuzzer keeps the input. */
static inline void fuzz_expect_one_line(int rc, const char *err)
{
  if (rc == DLPAR_OK)
    return;
  if (!*err || strchr(err, '\n')) {
    fprintf(stderr, "fuzz: a refusal that is not one line: \"%s\"\n", err);
    abort();
  }
}

/* The input as a NUL-terminated string (the readers take C strings). */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
  char *text = malloc(size + 1);
  if (!text)
    abort();
  memcpy(text, data, size);
  text[size] = '\0';
  return text;
}

/* A file of this process for readers that open by name, removed at exit. */
const char *fuzz_temp_path(void);

#endif
