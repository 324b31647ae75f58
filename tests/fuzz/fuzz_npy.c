/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/fuzz/fuzz_npy.c: the .npy reader (trainer/data/npy.c) on any bytes, from
 * memory through the stream it reads files with. */
#include "config.h"

#include "tests/fuzz/fuzz.h"
#include "trainer/data/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  dlpar_error err = {0};
  npy_array array;
  FILE *f = fmemopen(size ? (void *)data : (void *)"", size ? size : 1, "rb");
  int rc;
  if (!f)
    abort();
  rc = npy_read_stream(f, size ? (long)size : 0, "fuzz.npy", &array, &err);
  fuzz_expect_one_line(rc, err.text);
  if (rc == DLPAR_OK) {
    float sum = 0; /* every value read: the sanitizers see an array shorter than its count */
    for (long i = 0; i < array.count; i++)
      sum += array.data[i];
    if (array.count == 0 && sum != 0) /* never: it keeps the reads */
      abort();
    npy_free(&array);
  }
  fclose(f);
  return 0;
}
