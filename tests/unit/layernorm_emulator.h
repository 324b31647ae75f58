/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/layernorm_emulator.h: LayerNorm's backward and the column
 * sums as the GPU runs them (kernels/cuda/layernorm_rows.cuh,
 * kernels/cuda/reduce.cuh), run on the CPU by layernorm_emulator.cu, for
 * a C test. */
#ifndef DLPAR_TEST_LAYERNORM_EMULATOR_H
#define DLPAR_TEST_LAYERNORM_EMULATOR_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/cuda/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dl_layernorm_bwd's arguments, all fp32 on the host; dout is rounded to
 * act (and dinp_act comes back from it) inside. */
typedef struct {
  const float *dout, *inp, *w, *mean, *rstd;
  float *dinp, *dw, *db; /* added to */
  float *dinp_act;       /* NULL: no act copy; else the copy, as fp32 */
  int BT, C;
  dl_dtype act;
  /* dout one value past 16-byte alignment (the kernels must not load it
   * 4 values at a time) */
  bool dout_unaligned;
  /* the order the threads run in between barriers: 0, every thread to its
   * next barrier or shuffle in turn; 1 (-1), warp by warp in ascending
   * (descending) order, each as far as it gets */
  int schedule;
  /* set here: the path dl_layernorm_bwd takes (ln_bwd_plan): the fused
   * block's groups (0: the rows kernel and column_reduce), and the rows
   * kernel's values a load */
  int groups, vec;
} ln_emulation;

/* 0, or -1 with the reason on stderr. */
int ln_emulate_bwd(ln_emulation *e);

/* dl_column_sum: sum (+)= the column sums of x (rows, cols), x rounded to act. */
typedef struct {
  const float *x;
  float *sum;
  int rows, cols, accumulate;
  dl_dtype act;
  bool x_unaligned; /* x one value past 16-byte alignment: one value a load */
  int schedule;
  int vec; /* set here: stage 1's values a load */
} ln_column_emulation;

int ln_emulate_column_sum(ln_column_emulation *e);

/* x[i] rounded to act and back (as a device_from/host_from round trip). */
void ln_round_to_act(float *x, size_t n, dl_dtype act);

#ifdef __cplusplus
}
#endif

#endif
