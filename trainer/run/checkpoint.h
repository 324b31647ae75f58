/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/checkpoint.h: checkpoints as one HDF5 file of full tensors
 * (params, Adam's m and v, by their PyTorch names), the position (step,
 * epoch, step in epoch), the seed and the resolved config. Written by world
 * rank 0 after the tensor-parallel pieces are gathered, atomically (temp,
 * fsync, rename); read by every rank, which takes its own piece, so a run
 * may resume on another grid. */
#ifndef DLPAR_CHECKPOINT_H
#define DLPAR_CHECKPOINT_H

#include <stddef.h>

#include "common/status.h"
#include "trainer/model/model.h"

typedef struct {
  long step;          /* optimizer steps done */
  long epoch, step_in_epoch;
  long seed;
} checkpoint_position;

/* Collective over the world. */
int checkpoint_save(model *m, const checkpoint_position *pos, const char *config_yaml, const char *path,
                    dlpar_error *err);
int checkpoint_load(model *m, checkpoint_position *pos, const char *path, dlpar_error *err);

/* The reader under checkpoint_load, without a model: every attribute,
 * group and tensor is checked (one whole number; rank, shape and float type
 * the table's; finite values) before it is used. take() receives each
 * group's (params, adam_m, adam_v) local pieces in the table's flat layout. */
typedef int (*checkpoint_take)(void *ctx, model_tensor which, const float *host, dlpar_error *err);
int checkpoint_read(const param_table *t, const char *path, checkpoint_position *pos, checkpoint_take take,
                    void *ctx, dlpar_error *err);

/* A loaded position against the run: not negative, consistent with
 * steps_per_epoch (epoch * steps_per_epoch + step_in_epoch == step, the
 * epoch's end included) and not past total_steps. */
int checkpoint_check_position(const checkpoint_position *pos, long total_steps, long steps_per_epoch,
                              const char *path, dlpar_error *err);

#endif
