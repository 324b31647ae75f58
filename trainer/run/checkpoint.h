/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/checkpoint.h: checkpoints as one HDF5 file. It holds the full
 * tensors, params and Adam's m and v, by their PyTorch names; the
 * position, which is the step, the epoch and the step in the epoch; the
 * seed; and the resolved config. World rank 0 writes it after the
 * tensor-parallel pieces are gathered, atomically through a temporary
 * file, fsync and rename. Every rank reads it and takes its own piece, so
 * a run may resume on another grid. */
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

/* The reader under checkpoint_load, without a model. Every attribute, group
 * and tensor is checked before it is used. An attribute must be one whole
 * number, and a tensor must have the table's rank, shape and float type,
 * and finite values. take() receives the local pieces of each group,
 * params, adam_m and adam_v, in the table's flat layout. */
typedef int (*checkpoint_take)(void *ctx, model_tensor which, const float *host, dlpar_error *err);
int checkpoint_read(const param_table *t, const char *path, checkpoint_position *pos, checkpoint_take take,
                    void *ctx, dlpar_error *err);

/* A loaded position is checked against the run. It must not be negative,
 * must be consistent with steps_per_epoch, so that
 * epoch * steps_per_epoch + step_in_epoch == step with the epoch's end
 * included, and must not be past total_steps. */
int checkpoint_check_position(const checkpoint_position *pos, long total_steps, long steps_per_epoch,
                              const char *path, dlpar_error *err);

#endif
