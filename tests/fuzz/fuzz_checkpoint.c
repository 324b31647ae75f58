/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/fuzz/fuzz_checkpoint.c: the checkpoint reader (trainer/run/checkpoint.c)
 * on any content: the input is a list of edits to a valid checkpoint of a
 * tiny model (checkpoint_edits.h), written with HDF5 and read back; the
 * position is then checked against the run as --resume does. The bytes of
 * the HDF5 format itself are HDF5's to parse and are not fuzzed here. */
#include "config.h"

#include <math.h>

#include "tests/fuzz/checkpoint_edits.h"
#include "tests/fuzz/fuzz.h"
#include "trainer/run/checkpoint.h"
#include "trainer/data/h5util.h"

static int take_finite(void *ctx, model_tensor which, const float *host, dlpar_error *err)
{
  const param_table *t = ctx;
  (void)which;
  (void)err;
  for (size_t i = 0; i < t->total; i++) {
    if (!isfinite(host[i]))
      abort(); /* the reader passed on a value it should have refused */
  }
  return DLPAR_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static param_table table;
  static float *values;
  checkpoint_edits e = {data, size};
  checkpoint_position pos;
  dlpar_error err = {0};
  const char *path = fuzz_temp_path();
  int rc;
  if (!values) {
    h5_quiet();
    if (checkpoint_edits_table(&table, 1, 0) != DLPAR_OK || !(values = calloc(4096, sizeof(float))))
      abort();
  }
  checkpoint_edits_write(path, &table, values, &e);
  rc = checkpoint_read(&table, path, &pos, take_finite, &table, &err);
  fuzz_expect_one_line(rc, err.text);
  if (rc == DLPAR_OK) {
    const long total = checkpoint_edits_long(&e), per_epoch = checkpoint_edits_long(&e);
    rc = checkpoint_check_position(&pos, total ? total : 100, per_epoch ? per_epoch : 5, path, &err);
    fuzz_expect_one_line(rc, err.text);
  }
  return 0;
}
