/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_attention_tiles.c: the GPU attention's block code
 * (kernels/cuda/attention_tiles.cuh: its tiling, masking, online softmax,
 * shuffles and index maps) against the CPU reference (kernels/cpu), run
 * here without a GPU by a stand-in for it, named so (attention_emulator.cu:
 * a thread per CUDA thread). Forward (o, lse) and backward (dq, dk, dv), on
 * fresh random inputs, at token counts that leave partial tiles and at
 * every padded head size (16, 32, 48, 64, 128, and heads between them):
 * fp32 within 1e-5, bf16 within 2e-2, NaN fails. A head over 128 is
 * refused. The GPU runs the same code in test_kernels_gpu and
 * test_attention_gpu. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cpu/ops.h"
#include "tests/gpu/gpu_check.h"
#include "tests/unit/emulators.h"

static void check_shape(int B, int N, int NH, int HD, bool bf16)
{
  const size_t n = (size_t)B * N * NH * HD, rows = (size_t)B * NH * N;
  const dl_dtype t = bf16 ? DL_BF16 : DL_F32;
  float *q = host_random(n, 1), *k = host_random(n, 1), *v = host_random(n, 1), *dout = host_random(n, 1);
  attn_result cpu = {host_zeros(n), host_zeros(rows), host_zeros(n), host_zeros(n), host_zeros(n)};
  attn_result tiles = {host_zeros(n), host_zeros(rows), host_zeros(n), host_zeros(n), host_zeros(n)};
  const float scale = 1.0f / sqrtf((float)HD);
  const at_emulation e = {q, k, v, dout, tiles.o, tiles.lse, tiles.dq, tiles.dk, tiles.dv, B, N, NH, HD, scale, bf16};
  char label[96];
  attention_fwd_f32(cpu.o, cpu.lse, q, k, v, B, N, NH, HD, scale);
  attention_bwd_f32(cpu.dq, cpu.dk, cpu.dv, dout, q, k, v, cpu.o, cpu.lse, B, N, NH, HD, scale);
  CHECK_INT(at_emulate(&e), 0);
  snprintf(label, sizeof label, "tiles vs cpu B=%d N=%d NH=%d HD=%d:", B, N, NH, HD);
  check_attention_close(label, t, &tiles, &cpu, n, rows);
  free(q), free(k), free(v), free(dout);
  free_attn_result(&cpu), free_attn_result(&tiles);
}

int main(void)
{
  float one = 0;
  const at_emulation too_wide = {&one, &one, &one, &one, &one, &one, &one, &one, &one, 1, 1, 1, 129, 1, false};
  check_shape(1, 70, 2, 48, false);  /* base's head; two row blocks, the second partial */
  check_shape(2, 64, 1, 16, false);  /* whole tiles, two samples */
  check_shape(1, 131, 1, 20, false); /* padded to 32; three tiles */
  check_shape(1, 65, 1, 128, false); /* mp's head; one row past a tile */
  check_shape(1, 33, 2, 64, false);
  check_shape(1, 100, 1, 8, false);  /* padded to 16 */
  check_shape(1, 70, 2, 48, true);
  check_shape(1, 65, 1, 128, true);
  CHECK_INT(at_emulate(&too_wide), -1);
  return check_report("test_attention_tiles");
}
