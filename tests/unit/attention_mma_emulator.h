/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/attention_mma_emulator.h: the tensor-core attention's block
 * code run on the CPU (attention_mma_emulator.cu), for a C test. */
#ifndef DLPAR_TEST_ATTENTION_MMA_EMULATOR_H
#define DLPAR_TEST_ATTENTION_MMA_EMULATOR_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* q, k, v, dout (B, N, NH, HD) in; o, dq, dk, dv (same) and lse (B, NH, N)
 * out, all fp32 on the host. The backward reads o and lse: with edges,
 * what the caller put there outside the emulated rows. */
typedef struct {
  const float *q, *k, *v, *dout;
  float *o, *lse, *dq, *dk, *dv;
  /* N each, set here: the token rows (of every head) the emulation wrote
   * into o and lse, dq, and dk and dv */
  bool *o_rows, *dq_rows, *dkv_rows;
  int B, N, NH, HD;
  float scale;
  int passes; /* 3 (3xTF32) or 1 (TF32) */
  /* only the first and last 64-row tile of each: the forward's query
   * blocks, the backward's key blocks (dk, dv), and every key block's
   * steps over those query rows (dq); else the whole grids */
  bool edges;
  /* cp.async copies land at the issuing thread's wait (else at the issue) */
  bool copies_at_wait;
  /* the order the threads run in between barriers: 0, every thread to its
   * next barrier or collective in turn (the warps in lockstep); 1 (-1),
   * warp by warp in ascending (descending) order, each as far as it gets
   * (a barrier missing between warps shows) */
  int schedule;
} am_emulation;

/* Forward, delta and backward as the GPU runs them (blocks in index
 * order, dq's turns checked); 0, or -1 with the reason on stderr. */
int am_emulate(const am_emulation *e);

/* The dynamic shared memory (bytes) and threads of a block of the
 * kernels for heads of HD dims: the forward's (backward 0) or the
 * backward's; 0 for a head or passes the kernels refuse. */
int am_block_bytes(int HD, int passes, int backward);
int am_block_threads(int HD, int passes, int backward);

/* The block code's fragment accesses of shared memory at heads of HD
 * dims (16, 48, 64, 128; 3 passes; 1 pass at 16, 48, 128): the most
 * wavefronts a warp access of each kind takes (1: no bank conflict),
 * into report; the number of kinds over their bound, or -1. */
int am_bank_check(int HD, int passes, char *report, size_t size);

/* The emulation's cvt.rna.tf32.f32 (the block code's tf32 rounding). */
float am_tf32_rna(float x);

#ifdef __cplusplus
}
#endif

#endif
