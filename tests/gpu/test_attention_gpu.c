/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/test_attention_gpu.c: the cuDNN attention (dl_sdpa_*) against
 * the reference kernels (dl_attention_*) and the CPU (kernels/cpu) at the
 * ViT's sizes: 4050 tokens, head 48 (base) and 128 (mp), bf16 and fp16, and
 * odd token counts; forward (output, lse) and backward (dq, dk, dv), outputs
 * poisoned with NaN bytes first, relative error < 2e-2, NaN fails. Also:
 * plans are cached (same workspace on a second request), and a head size
 * cuDNN cannot plan is reported as unsupported (the model's fallback).
 * Built with cuDNN only; skips without a GPU. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/ops.h"
#include "tests/gpu/gpu_check.h"

/* the device results of one implementation, as fp32 host copies */
static attn_result fetch(void *o, float *lse, void *dq, void *dk, void *dv, size_t n, size_t rows, dl_dtype t)
{
  attn_result r = {host_from(o, n, t), host_from(lse, rows, DL_F32), host_from(dq, n, t), host_from(dk, n, t),
                   host_from(dv, n, t)};
  return r;
}

static void compare(const char *who, const char *against, dl_dtype t, int N, int HD, const attn_result *got,
                    const attn_result *ref, size_t n, size_t rows)
{
  char label[96];
  snprintf(label, sizeof label, "%s vs %s N=%d HD=%d:", who, against, N, HD);
  check_attention_close(label, t, got, ref, n, rows);
}

static void test_shape(dl_sdpa *sdpa, int N, int HD)
{
  static const dl_dtype types[] = {DL_BF16, DL_F16};
  const int B = 2, NH = 2;
  const size_t n = (size_t)B * N * NH * HD, rows = (size_t)B * NH * N;
  const float scale = 1.0f / sqrtf((float)HD);
  float *q = host_random(n, 1.5f), *k = host_random(n, 1.5f), *v = host_random(n, 1), *dout = host_random(n, 1);
  attn_result cpu = {malloc(n * 4), malloc(rows * 4), malloc(n * 4), malloc(n * 4), malloc(n * 4)};
  attention_fwd_f32(cpu.o, cpu.lse, q, k, v, B, N, NH, HD, scale);
  attention_bwd_f32(cpu.dq, cpu.dk, cpu.dv, dout, q, k, v, cpu.o, cpu.lse, B, N, NH, HD, scale);
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    const dl_dtype t = types[i];
    void *d_q = device_from(q, n, t), *d_k = device_from(k, n, t), *d_v = device_from(v, n, t);
    void *d_dout = device_from(dout, n, t), *d_o = device_from(NULL, n, t), *d_dq = device_from(NULL, n, t);
    void *d_dk = device_from(NULL, n, t), *d_dv = device_from(NULL, n, t), *workspace = NULL;
    float *d_lse = device_from(NULL, rows, DL_F32), *d_delta = device_from(NULL, rows, DL_F32);
    size_t ws_bytes = 0, again = 0;
    attn_result reference, cudnn;
    GPU_OR_EXIT(dl_attention_fwd(d_o, d_lse, d_q, d_k, d_v, B, N, NH, HD, scale, t, 0));
    GPU_OR_EXIT(dl_attention_bwd(d_dq, d_dk, d_dv, d_dout, d_q, d_k, d_v, d_o, d_lse, d_delta, B, N, NH, HD, scale, t, 0));
    GPU_OR_EXIT(cudaDeviceSynchronize());
    reference = fetch(d_o, d_lse, d_dq, d_dk, d_dv, n, rows, t);
    GPU_OR_EXIT(dl_sdpa_plan(sdpa, B, N, NH, HD, t, &ws_bytes));
    GPU_OR_EXIT(dl_sdpa_plan(sdpa, B, N, NH, HD, t, &again));
    CHECK_INT(again, ws_bytes);
    printf("cuDNN plans B=%d N=%d NH=%d HD=%d: workspace %zu bytes\n", B, N, NH, HD, ws_bytes);
    GPU_OR_EXIT(cudaMalloc(&workspace, ws_bytes ? ws_bytes : 1));
    GPU_OR_EXIT(cudaMemset(d_o, 0xff, n * dl_dtype_bytes(t)));
    GPU_OR_EXIT(cudaMemset(d_lse, 0xff, rows * 4));
    GPU_OR_EXIT(cudaMemset(d_dq, 0xff, n * dl_dtype_bytes(t)));
    GPU_OR_EXIT(cudaMemset(d_dk, 0xff, n * dl_dtype_bytes(t)));
    GPU_OR_EXIT(cudaMemset(d_dv, 0xff, n * dl_dtype_bytes(t)));
    GPU_OR_EXIT(dl_sdpa_fwd(sdpa, workspace, d_o, d_lse, d_q, d_k, d_v, B, N, NH, HD, scale, t, 0));
    GPU_OR_EXIT(dl_sdpa_bwd(sdpa, workspace, d_dq, d_dk, d_dv, d_dout, d_q, d_k, d_v, d_o, d_lse, B, N, NH, HD, scale, t,
                          0));
    GPU_OR_EXIT(cudaDeviceSynchronize());
    cudnn = fetch(d_o, d_lse, d_dq, d_dk, d_dv, n, rows, t);
    compare("reference", "cpu", t, N, HD, &reference, &cpu, n, rows);
    compare("cudnn", "cpu", t, N, HD, &cudnn, &cpu, n, rows);
    compare("cudnn", "reference", t, N, HD, &cudnn, &reference, n, rows);
    free_attn_result(&reference), free_attn_result(&cudnn);
    cudaFree(d_q), cudaFree(d_k), cudaFree(d_v), cudaFree(d_dout), cudaFree(d_o), cudaFree(d_dq), cudaFree(d_dk);
    cudaFree(d_dv), cudaFree(d_lse), cudaFree(d_delta), cudaFree(workspace);
  }
  free_attn_result(&cpu);
  free(q), free(k), free(v), free(dout);
}

int main(void)
{
  dl_sdpa *sdpa = NULL;
  size_t ws = 0;
  int rc;
  require_gpu();
  GPU_OR_EXIT(dl_sdpa_create(&sdpa));
  test_shape(sdpa, 4050, 48);  /* base: 4050 tokens, head 48 */
  test_shape(sdpa, 4050, 128); /* mp: head 128 */
  test_shape(sdpa, 4049, 48);  /* odd token counts */
  test_shape(sdpa, 1013, 128);
  rc = dl_sdpa_plan(sdpa, 2, 4050, 2, 44, DL_BF16, &ws); /* head 44: not a multiple of 8 */
  printf("head 44: %s\n", dl_status_string(rc));
  CHECK(rc != 0 && dl_sdpa_unsupported(rc));
  dl_sdpa_destroy(sdpa);
  return check_report("test_attention_gpu");
}
