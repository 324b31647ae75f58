/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/attention_emulator.h: the attention kernels' block code run on
 * the CPU (attention_emulator.cu), for a C test. */
#ifndef DLPAR_TEST_ATTENTION_EMULATOR_H
#define DLPAR_TEST_ATTENTION_EMULATOR_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* q, k, v, dout (B, N, NH, HD) in; o, dq, dk, dv (same) and lse (B, NH, N)
 * out, all fp32 on the host; bf16: the kernels' bf16 instantiation (inputs
 * rounded to bf16, outputs from bf16). */
typedef struct {
  const float *q, *k, *v, *dout;
  float *o, *lse, *dq, *dk, *dv;
  int B, N, NH, HD;
  float scale;
  bool bf16;
} at_emulation;

/* Forward, delta and backward as the GPU runs them; 0, or -1 (no threads,
 * or HD outside 1..128). */
int at_emulate(const at_emulation *e);

#ifdef __cplusplus
}
#endif

#endif
