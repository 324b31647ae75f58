/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_checkpoint.c: the checkpoint reader (trainer/run/checkpoint.c)
 * never trusts the file: every attribute one whole number, every tensor the
 * table's rank (checked before its dimensions are read), shape and float
 * type with finite values, the groups present, and the position consistent
 * with the run (not negative, on the data's epochs, not past the run's steps);
 * tensors land by name in the flat layout (q, k, v side by side).
 * Files are the checkpoint layout with edits (tests/fuzz/checkpoint_edits.h). */
#include "config.h"

#include <unistd.h>

#include "common/status.h"
#include "tests/fuzz/checkpoint_edits.h"
#include "tests/unit/check.h"
#include "trainer/run/checkpoint.h"
#include "trainer/data/h5util.h"

static char path[64];
static dlpar_error err;
static param_table table;
static float scratch[4096];

static int count_groups(void *ctx, model_tensor which, const float *host, dlpar_error *e)
{
  (void)which;
  (void)host;
  (void)e;
  ++*(int *)ctx;
  return DLPAR_OK;
}

/* Writes the edited checkpoint, reads it: the status, err one line. */
static int read_edited(const char *bytes, size_t n, checkpoint_position *pos)
{
  checkpoint_edits e = {(const uint8_t *)bytes, n};
  int groups = 0, rc;
  checkpoint_edits_write(path, &table, scratch, &e);
  err.text[0] = '\0';
  rc = checkpoint_read(&table, path, pos, count_groups, &groups, &err);
  CHECK(rc == DLPAR_OK ? groups == 3 : err.text[0] && !strchr(err.text, '\n'));
  return rc;
}

static void expect_refused(const char *bytes, size_t n, const char *message)
{
  checkpoint_position pos;
  CHECK_INT(read_edited(bytes, n, &pos), DLPAR_ERR_INPUT);
  if (!strstr(err.text, message))
    fprintf(stderr, "expected '%s' in '%s'\n", message, err.text);
  CHECK(strstr(err.text, message) != NULL);
}

static void test_reader(void)
{
  checkpoint_position pos;
  CHECK_INT(read_edited("", 0, &pos), DLPAR_OK);
  CHECK_INT(pos.step * 100 + pos.epoch * 10 + pos.step_in_epoch, 712);
  expect_refused("\x05\x01\x01", 3, "attribute 'step' is not one whole number (not written by dlpar-train, or damaged");
  expect_refused("\x00\x06", 2, "attribute 'epoch' is not one whole number");
  expect_refused("\x00\x00\x03", 3, "no attribute 'step_in_epoch'");
  expect_refused("\x00\x00\x00\x00\x00\x06", 6, "no group 'params'");
  /* attributes kept, group kept, first tensor (patch_embed.proj.weight, rank 4) of rank 6 */
  expect_refused("\x00\x00\x00\x00\x00\x00\x0b\x06\x01\x01\x01\x01\x01\x01", 14,
                 "patch_embed.proj.weight is floats with 6 dimensions, the config makes floats with 4");
  expect_refused("\x00\x00\x00\x00\x00\x00\x0c\x02\x01", 9,
                 "patch_embed.proj.weight has another shape than the config makes (dimension 2: 6 vs 4");
  expect_refused("\x00\x00\x00\x00\x00\x00\x0d", 7, "patch_embed.proj.weight is not floats with 4 dimensions");
  expect_refused("\x00\x00\x00\x00\x00\x00\x01\x05\x01", 9, "patch_embed.proj.weight[5] is nan (a diverged run's");
  expect_refused("\x00\x00\x00\x00\x00\x00\x0a", 7, "no tensor patch_embed.proj.weight");
}

static void test_position(void)
{
  const checkpoint_position ok = {7, 1, 2, 0}, end = {10, 1, 5, 0}, negative = {-3, 0, -3, 0};
  const checkpoint_position huge = {1L << 62, 0, 1L << 62, 0}, moved = {7, 0, 7, 0};
  CHECK_INT(checkpoint_check_position(&ok, 20, 5, "c.h5", &err), DLPAR_OK);
  CHECK_INT(checkpoint_check_position(&end, 20, 5, "c.h5", &err), DLPAR_OK); /* an epoch's last step */
  CHECK_INT(checkpoint_check_position(&negative, 20, 5, "c.h5", &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "c.h5: negative position (step -3, epoch 0, step -3 in it; not written by dlpar-train, or "
                      "damaged: resume from another checkpoint or start without --resume)");
  CHECK_INT(checkpoint_check_position(&huge, 20, 5, "c.h5", &err), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "does not fit 5 steps per epoch") != NULL);
  CHECK_INT(checkpoint_check_position(&moved, 20, 5, "c.h5", &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "c.h5: step 7 (epoch 0, step 7 in it) does not fit 5 steps per epoch (were limit_nsamples, "
                      "global_batch_size or the data changed? resume with the checkpoint's)");
  CHECK_INT(checkpoint_check_position(&ok, 6, 5, "c.h5", &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "c.h5: written at step 7, past this run's 6 steps (raise num_iters or num_epochs to train on)");
}

/* Checkpoints hold full tensors by name, so one written before q, k and v
 * sat side by side in the flat buffer loads into the fused layout: every
 * tensor (values stream * 1000 + index, as distinct as their names) lands
 * as its tp slice at its offset, here on rank 1 of 2. */
static float params_read[4096];

static int keep_params(void *ctx, model_tensor which, const float *host, dlpar_error *e)
{
  const param_table *t = ctx;
  (void)e;
  if (which == TENSOR_PARAMS)
    memcpy(params_read, host, sizeof(float) * t->total);
  return DLPAR_OK;
}

static void test_fused_layout(void)
{
  checkpoint_edits none = {NULL, 0};
  checkpoint_position pos;
  param_table half;
  float full[4096], want[4096];
  hid_t file, group;
  checkpoint_edits_write(path, &table, scratch, &none);
  file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  group = H5Gopen2(file, "params", H5P_DEFAULT);
  for (int i = 0; i < table.n; i++) {
    hid_t dset = H5Dopen2(group, table.p[i].name, H5P_DEFAULT);
    for (long j = 0; j < params_full_count(&table.p[i]); j++)
      full[j] = (float)(table.p[i].stream * 1000 + j);
    CHECK(H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, full) >= 0);
    H5Dclose(dset);
  }
  H5Gclose(group);
  H5Fclose(file);
  CHECK_INT(checkpoint_edits_table(&half, 2, 1), DLPAR_OK);
  CHECK_INT(checkpoint_read(&half, path, &pos, keep_params, &half, &err), DLPAR_OK);
  for (int i = 0; i < half.n; i++) {
    const param_info *p = &half.p[i];
    for (long j = 0; j < params_full_count(p); j++)
      full[j] = (float)(p->stream * 1000 + j);
    params_slice(p, 2, 1, full, want);
    if (memcmp(want, params_read + p->offset, sizeof(float) * p->count) != 0)
      fprintf(stderr, "%s: not its rank-1 slice at offset %zu\n", p->name, p->offset);
    CHECK(memcmp(want, params_read + p->offset, sizeof(float) * p->count) == 0);
  }
  CHECK(params_read[half.p[half.blocks[0].k_w].offset] == 1000.0f * half.p[half.blocks[0].k_w].stream + 32);
  params_free(&half);
}

int main(void)
{
  int fd;
  h5_quiet();
  snprintf(path, sizeof(path), "/tmp/test_checkpoint.XXXXXX");
  if ((fd = mkstemp(path)) < 0 || checkpoint_edits_table(&table, 1, 0) != DLPAR_OK)
    SKIP("no temporary file or no memory");
  close(fd);
  test_reader();
  test_position();
  test_fused_layout();
  unlink(path);
  params_free(&table);
  return check_report("test_checkpoint");
}
