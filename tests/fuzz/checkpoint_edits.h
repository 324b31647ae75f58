/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/fuzz/checkpoint_edits.h: a checkpoint of the layout checkpoint_save
 * writes (attributes step, epoch, step_in_epoch, seed, tp as scalar longs;
 * groups params, adam_m, adam_v of float32 tensors by the table's names and
 * shapes), with edits read from bytes. The empty input is the valid file
 * (step 7 = epoch 1, step 2 of 5). One byte per attribute (mod 8): 3 drops
 * it, 4 sets the next 8 bytes as its value, 5 gives it an odd shape (rank
 * byte % 7, then a byte per dimension, % 4 + 1), 6 makes it a double, 7 a
 * short; one per group (mod 8): 6 drops it, 7 puts a dataset in its place;
 * one per tensor (mod 16): 1 puts a NaN or inf at the next byte's index,
 * 10 drops it, 11 gives it an odd shape, 12 grows one dimension, 13 makes
 * it ints, 14 doubles, 15 strings of an odd shape; anything else keeps. */
#ifndef DLPAR_CHECKPOINT_EDITS_H
#define DLPAR_CHECKPOINT_EDITS_H

#include <stddef.h>
#include <stdint.h>

#include "trainer/model/params.h"

typedef struct {
  const uint8_t *p;
  size_t n;
} checkpoint_edits;

/* The tiny model's table (embed 8, depth 1, 8x8 images, patch 4, 2
 * channels) of tensor-parallel rank tp_rank of tp. */
int checkpoint_edits_table(param_table *t, int tp, int tp_rank);
/* values: room for the table's largest tensor (scratch, 4096 floats do). */
void checkpoint_edits_write(const char *path, const param_table *t, float *values, checkpoint_edits *e);
/* The next 8 bytes, little-endian (0 past the end). */
long checkpoint_edits_long(checkpoint_edits *e);

#endif
