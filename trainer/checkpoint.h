/* trainer/checkpoint.h: checkpoints as one HDF5 file of full tensors
 * (params, Adam's m and v, by their PyTorch names), the position (step,
 * epoch, step in epoch), the seed and the resolved config. Written by world
 * rank 0 after the tensor-parallel pieces are gathered, atomically (temp,
 * fsync, rename); read by every rank, which takes its own piece, so a run
 * may resume on another grid. */
#ifndef DLPAR_CHECKPOINT_H
#define DLPAR_CHECKPOINT_H

#include <stddef.h>

#include "trainer/model.h"

typedef struct {
  long step;          /* optimizer steps done */
  long epoch, step_in_epoch;
  long seed;
} checkpoint_position;

/* Collective over the world. */
int checkpoint_save(model *m, const checkpoint_position *pos, const char *config_yaml, const char *path, char *err,
                    size_t errlen);
int checkpoint_load(model *m, checkpoint_position *pos, const char *path, char *err, size_t errlen);

#endif
