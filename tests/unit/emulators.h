/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/emulators.h: the GPU stand-ins' C interface, for the C tests.
 * Each runs kernels' own block code on the CPU through the one block runner
 * of block_emulator.cuh. attention_emulator.cu runs the FMA attention
 * kernels of kernels/cuda/attention_tiles.cuh, attention_mma_emulator.cu
 * the tensor-core attention of attention_mma_tiles.cuh, and
 * layernorm_emulator.cu LayerNorm's backward and the column sums of
 * layernorm_rows.cuh and reduce.cuh. */
#ifndef DLPAR_TEST_EMULATORS_H
#define DLPAR_TEST_EMULATORS_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/cuda/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An attention's arrays and shape, all fp32 on the host. q, k, v and dout
 * of [B, N, NH, HD] go in, and o, dq, dk and dv of the same shape and lse
 * of [B, NH, N] come out. bf16 picks the kernels' bf16 instantiation, with
 * inputs rounded to bf16 and outputs from bf16. */
typedef struct {
  const float *q, *k, *v, *dout;
  float *o, *lse, *dq, *dk, *dv;
  int B, N, NH, HD;
  float scale;
  bool bf16;
} at_emulation;

/* The FMA kernels' forward, delta and backward as the GPU runs them.
 * Returns 0, or -1 for HD outside 1..128. */
int at_emulate(const at_emulation *e);

/* The tensor-core attention on io, in fp32 only, so io.bf16 is false. Its
 * backward reads o and lse, and with edges it reads what the caller put
 * there outside the emulated rows. */
typedef struct {
  at_emulation io;
  /* N each, set here: the token rows of every head that the emulation wrote
   * into o and lse, dq, and dk and dv */
  bool *o_rows, *dq_rows, *dkv_rows;
  int passes; /* 3 for 3xTF32 or 1 for TF32 */
  /* Only the first and last 64-row tile of each: the forward's query
   * blocks, the backward's key blocks for dk and dv, and every key block's
   * steps over those query rows for dq. Otherwise the whole grids run. */
  bool edges;
  /* cp.async copies land at the issuing thread's wait, else at the issue */
  bool copies_at_wait;
  /* The order the threads run in between barriers. With 0, every thread
   * runs to its next barrier or collective in turn, the warps in lockstep.
   * With 1, warps run one by one in ascending order, each as far as it
   * gets, and with -1 in descending order, so a barrier missing between
   * warps shows. */
  int schedule;
} am_emulation;

/* Forward, delta and backward as the GPU runs them, with blocks in index
 * order and dq's turns checked. Returns 0, or -1 with the reason on stderr. */
int am_emulate(const am_emulation *e);

/* The dynamic shared memory in bytes and the threads of a block of the
 * kernels for heads of HD dims, the forward's with backward 0, else the
 * backward's. They are 0 for a head or passes the kernels refuse. */
int am_block_bytes(int HD, int passes, int backward);
int am_block_threads(int HD, int passes, int backward);

/* The block code's fragment accesses of shared memory at heads of HD dims,
 * checked at 16, 48, 64 and 128 with 3 passes and at 16, 48 and 128 with
 * 1 pass. It writes into report the most wavefronts a warp access of each
 * kind takes, where 1 means no bank conflict, and returns the number of
 * kinds over their bound, or -1. */
int am_bank_check(int HD, int passes, char *report, size_t size);

/* The emulation's cvt.rna.tf32.f32, the block code's tf32 rounding. */
float am_tf32_rna(float x);

/* dl_layernorm_bwd's arguments, all fp32 on the host. dout is rounded to
 * act inside, and dinp_act is read back from the act buffer. */
typedef struct {
  const float *dout, *inp, *w, *mean, *rstd;
  float *dinp, *dw, *db; /* added to */
  float *dinp_act;       /* NULL: no act copy; else the copy, as fp32 */
  int BT, C;
  dl_dtype act;
  /* dout one value past 16-byte alignment, so the kernels must not load it
   * 4 values at a time */
  bool dout_unaligned;
  /* the order the threads run in between barriers, as am_emulation's */
  int schedule;
  /* Set here: the path dl_layernorm_bwd takes, as ln_bwd_plan chooses it.
   * That is the fused block's groups, where 0 means the rows kernel and
   * column_reduce, and the rows kernel's values a load. */
  int groups, vec;
} ln_emulation;

/* LayerNorm's backward as the GPU runs it; 0, or -1 with the reason on stderr. */
int ln_emulate_bwd(ln_emulation *e);

/* dl_column_sum: sum = or += the column sums of x, rows x cols, with x rounded to act. */
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

/* x[i] rounded to act and back, as a device_from/host_from round trip. */
void ln_round_to_act(float *x, size_t n, dl_dtype act);

#ifdef __cplusplus
}
#endif

#endif
