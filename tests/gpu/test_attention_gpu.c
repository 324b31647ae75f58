/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/test_attention_gpu.c: the cuDNN attention, dl_sdpa_*, against
 * the reference kernels, dl_attention_*, and the CPU in kernels/cpu, at the
 * ViT's sizes: 4050 tokens, head 48 for base and 128 for mp, bf16 and fp16,
 * and odd token counts. The forward gives output and lse, the backward dq, dk
 * and dv. Outputs are poisoned with NaN bytes first; the relative error must
 * be < 2e-2, and NaN fails. Plans must be cached, giving the same workspace
 * on a second request. A head size cuDNN cannot plan must be reported as
 * unsupported, so that the model falls back.
 * The fp32 attention on tensor cores, dl_attention_tc_*, runs at the same
 * shapes: 3xTF32 within 1e-5 of the CPU, TF32 within 3e-3. Its forward and
 * backward must be bit-identical on a second run and in a CUDA graph. These
 * run even where cuDNN cannot start, which fails the test. cuDNN's
 * deterministic plans, set by deterministic: true, run at the base shape in
 * bf16: within 2e-2 of the CPU and bit-identical on a second run. Whether the
 * default plans repeat their bits is printed, not asserted.
 * Built with cuDNN only; skips without a GPU. */
#include "config.h"

#include <stdbool.h>
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

/* Each output of got against ref, relative error < bound, NaN fails. */
static void check_within(const char *label, const attn_result *got, const attn_result *ref, size_t n, size_t rows,
                         double bound)
{
  const float *const got_fields[5] = {got->o, got->lse, got->dq, got->dk, got->dv};
  const float *const ref_fields[5] = {ref->o, ref->lse, ref->dq, ref->dk, ref->dv};
  const char *const names[5] = {"o", "lse", "dq", "dk", "dv"};
  for (int i = 0; i < 5; i++) {
    const double e = rel_error(got_fields[i], ref_fields[i], i == 1 ? rows : n);
    check_count++;
    if (!(e < bound)) {
      check_failures++;
      fprintf(stderr, "%s:%d: FAILED: %s %s: relative error %.3g, bound %.0e\n", __FILE__, __LINE__, label, names[i], e,
              bound);
    } else {
      printf("ok: %s %s: %.2e (bound %.0e)\n", label, names[i], e, bound);
    }
  }
}

/* Whether two runs' outputs are the same bits. */
static bool same_bits(const attn_result *a, const attn_result *b, size_t n, size_t rows)
{
  return memcmp(a->o, b->o, n * 4) == 0 && memcmp(a->lse, b->lse, rows * 4) == 0 &&
         memcmp(a->dq, b->dq, n * 4) == 0 && memcmp(a->dk, b->dk, n * 4) == 0 && memcmp(a->dv, b->dv, n * 4) == 0;
}

/* dl_attention_tc_* in fp32: 3xTF32 and TF32 against the CPU. The 3xTF32
 * forward and backward run again on the stream and captured in a CUDA graph,
 * outputs poisoned first, and must give the same bits. */
static void test_tc(const float *q, const float *k, const float *v, const float *dout, const attn_result *cpu, int B,
                    int N, int NH, int HD, float scale)
{
  const size_t n = (size_t)B * N * NH * HD, rows = (size_t)B * NH * N;
  float *d_q = device_from(q, n, DL_F32), *d_k = device_from(k, n, DL_F32), *d_v = device_from(v, n, DL_F32);
  float *d_dout = device_from(dout, n, DL_F32), *d_o = device_from(NULL, n, DL_F32);
  float *d_dq = device_from(NULL, n, DL_F32), *d_dk = device_from(NULL, n, DL_F32), *d_dv = device_from(NULL, n, DL_F32);
  float *d_lse = device_from(NULL, rows, DL_F32), *d_delta = device_from(NULL, rows, DL_F32);
  void *scratch = NULL;
  attn_result runs[3];
  cudaStream_t stream;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  char label[96];
  GPU_OR_EXIT(cudaMalloc(&scratch, dl_attention_tc_scratch_bytes(B, N, NH, HD)));
  GPU_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int passes = 1; passes <= 3; passes += 2) {
    for (int run = 0; run < (passes == 3 ? 3 : 1); run++) {
      GPU_OR_EXIT(cudaMemset(d_o, 0xff, n * 4));
      GPU_OR_EXIT(cudaMemset(d_lse, 0xff, rows * 4));
      GPU_OR_EXIT(cudaMemset(d_dq, 0xff, n * 4));
      GPU_OR_EXIT(cudaMemset(d_dk, 0xff, n * 4));
      GPU_OR_EXIT(cudaMemset(d_dv, 0xff, n * 4));
      GPU_OR_EXIT(cudaMemset(scratch, 0xff, dl_attention_tc_scratch_bytes(B, N, NH, HD)));
      if (run == 2) /* in a graph: the backward clears its own turns */
        GPU_OR_EXIT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      GPU_OR_EXIT(dl_attention_tc_fwd(d_o, d_lse, d_q, d_k, d_v, B, N, NH, HD, scale, passes, stream));
      GPU_OR_EXIT(dl_attention_tc_bwd(d_dq, d_dk, d_dv, d_dout, d_q, d_k, d_v, d_o, d_lse, d_delta, scratch, B, N, NH,
                                      HD, scale, passes, stream));
      if (run == 2) {
        GPU_OR_EXIT(cudaStreamEndCapture(stream, &graph));
        GPU_OR_EXIT(cudaGraphInstantiate(&exec, graph, 0));
        GPU_OR_EXIT(cudaGraphLaunch(exec, stream));
      }
      GPU_OR_EXIT(cudaStreamSynchronize(stream));
      runs[run] = fetch(d_o, d_lse, d_dq, d_dk, d_dv, n, rows, DL_F32);
      if (run == 2) {
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
      }
    }
    snprintf(label, sizeof label, "%s vs cpu N=%d HD=%d:", passes == 3 ? "3xTF32" : "TF32", N, HD);
    check_within(label, &runs[0], cpu, n, rows, passes == 3 ? 1e-5 : 3e-3);
    if (passes == 3) {
      printf("3xTF32 N=%d HD=%d: a second run %s, in a graph %s\n", N, HD,
             same_bits(&runs[0], &runs[1], n, rows) ? "bit-identical" : "DIFFERS",
             same_bits(&runs[0], &runs[2], n, rows) ? "bit-identical" : "DIFFERS");
      CHECK(same_bits(&runs[0], &runs[1], n, rows));
      CHECK(same_bits(&runs[0], &runs[2], n, rows));
      free_attn_result(&runs[1]), free_attn_result(&runs[2]);
    }
    free_attn_result(&runs[0]);
  }
  cudaStreamDestroy(stream);
  cudaFree(d_q), cudaFree(d_k), cudaFree(d_v), cudaFree(d_dout), cudaFree(d_o), cudaFree(d_dq), cudaFree(d_dk);
  cudaFree(d_dv), cudaFree(d_lse), cudaFree(d_delta), cudaFree(scratch);
}

/* cuDNN's forward and backward of the inputs, on the device in type t, with
 * outputs poisoned first. The plan is asked for twice; the second comes from
 * the cache, with the same workspace. */
static attn_result run_cudnn(dl_sdpa *sdpa, dl_dtype t, const void *d_q, const void *d_k, const void *d_v,
                             const void *d_dout, int B, int N, int NH, int HD, float scale)
{
  const size_t n = (size_t)B * N * NH * HD, rows = (size_t)B * NH * N;
  void *d_o = device_from(NULL, n, t), *d_dq = device_from(NULL, n, t), *d_dk = device_from(NULL, n, t);
  void *d_dv = device_from(NULL, n, t), *workspace = NULL;
  float *d_lse = device_from(NULL, rows, DL_F32);
  size_t ws_bytes = 0, again = 0;
  attn_result r;
  GPU_OR_EXIT(dl_sdpa_plan(sdpa, B, N, NH, HD, t, &ws_bytes));
  GPU_OR_EXIT(dl_sdpa_plan(sdpa, B, N, NH, HD, t, &again));
  CHECK_INT(again, ws_bytes);
  printf("cuDNN plans B=%d N=%d NH=%d HD=%d: workspace %zu bytes\n", B, N, NH, HD, ws_bytes);
  GPU_OR_EXIT(cudaMalloc(&workspace, ws_bytes ? ws_bytes : 1));
  GPU_OR_EXIT(dl_sdpa_fwd(sdpa, workspace, d_o, d_lse, d_q, d_k, d_v, B, N, NH, HD, scale, t, 0));
  GPU_OR_EXIT(dl_sdpa_bwd(sdpa, workspace, d_dq, d_dk, d_dv, d_dout, d_q, d_k, d_v, d_o, d_lse, B, N, NH, HD, scale, t,
                          0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  r = fetch(d_o, d_lse, d_dq, d_dk, d_dv, n, rows, t);
  cudaFree(d_o), cudaFree(d_dq), cudaFree(d_dk), cudaFree(d_dv), cudaFree(d_lse), cudaFree(workspace);
  return r;
}

/* The tensor-core kernels in fp32 and, in bf16 and fp16, cuDNN's attention
 * and the reference kernels, against the CPU. deterministic is a handle of
 * dl_sdpa_set_deterministic, or NULL to skip: it runs bf16 against the CPU,
 * and two runs must give the same bits. The default plans' two runs are only
 * reported. */
static void test_shape(dl_sdpa *sdpa, dl_sdpa *deterministic, int N, int HD)
{
  static const dl_dtype types[] = {DL_BF16, DL_F16};
  const int B = 2, NH = 2;
  const size_t n = (size_t)B * N * NH * HD, rows = (size_t)B * NH * N;
  const float scale = 1.0f / sqrtf((float)HD);
  float *q = host_random(n, 1.5f), *k = host_random(n, 1.5f), *v = host_random(n, 1), *dout = host_random(n, 1);
  attn_result cpu = {malloc(n * 4), malloc(rows * 4), malloc(n * 4), malloc(n * 4), malloc(n * 4)};
  attention_fwd_f32(cpu.o, cpu.lse, q, k, v, B, N, NH, HD, scale);
  attention_bwd_f32(cpu.dq, cpu.dk, cpu.dv, dout, q, k, v, cpu.o, cpu.lse, B, N, NH, HD, scale);
  test_tc(q, k, v, dout, &cpu, B, N, NH, HD, scale);
  for (size_t i = 0; sdpa && i < sizeof types / sizeof types[0]; i++) {
    const dl_dtype t = types[i];
    void *d_q = device_from(q, n, t), *d_k = device_from(k, n, t), *d_v = device_from(v, n, t);
    void *d_dout = device_from(dout, n, t), *d_o = device_from(NULL, n, t), *d_dq = device_from(NULL, n, t);
    void *d_dk = device_from(NULL, n, t), *d_dv = device_from(NULL, n, t);
    float *d_lse = device_from(NULL, rows, DL_F32), *d_delta = device_from(NULL, rows, DL_F32);
    attn_result reference, cudnn, again;
    GPU_OR_EXIT(dl_attention_fwd(d_o, d_lse, d_q, d_k, d_v, B, N, NH, HD, scale, t, 0));
    GPU_OR_EXIT(dl_attention_bwd(d_dq, d_dk, d_dv, d_dout, d_q, d_k, d_v, d_o, d_lse, d_delta, B, N, NH, HD, scale, t, 0));
    GPU_OR_EXIT(cudaDeviceSynchronize());
    reference = fetch(d_o, d_lse, d_dq, d_dk, d_dv, n, rows, t);
    cudnn = run_cudnn(sdpa, t, d_q, d_k, d_v, d_dout, B, N, NH, HD, scale);
    compare("reference", "cpu", t, N, HD, &reference, &cpu, n, rows);
    compare("cudnn", "cpu", t, N, HD, &cudnn, &cpu, n, rows);
    compare("cudnn", "reference", t, N, HD, &cudnn, &reference, n, rows);
    again = run_cudnn(sdpa, t, d_q, d_k, d_v, d_dout, B, N, NH, HD, scale);
    printf("cudnn N=%d HD=%d %s, default plans: a second run %s\n", N, HD, t == DL_BF16 ? "bf16" : "fp16",
           same_bits(&cudnn, &again, n, rows) ? "bit-identical" : "differs (not deterministic)");
    free_attn_result(&again);
    if (deterministic && t == DL_BF16) {
      attn_result first = run_cudnn(deterministic, t, d_q, d_k, d_v, d_dout, B, N, NH, HD, scale);
      attn_result second = run_cudnn(deterministic, t, d_q, d_k, d_v, d_dout, B, N, NH, HD, scale);
      compare("cudnn deterministic", "cpu", t, N, HD, &first, &cpu, n, rows);
      printf("cudnn N=%d HD=%d bf16, deterministic plans: a second run %s\n", N, HD,
             same_bits(&first, &second, n, rows) ? "bit-identical" : "DIFFERS");
      CHECK(same_bits(&first, &second, n, rows));
      free_attn_result(&first), free_attn_result(&second);
    }
    free_attn_result(&reference), free_attn_result(&cudnn);
    cudaFree(d_q), cudaFree(d_k), cudaFree(d_v), cudaFree(d_dout), cudaFree(d_o), cudaFree(d_dq), cudaFree(d_dk);
    cudaFree(d_dv), cudaFree(d_lse), cudaFree(d_delta);
  }
  free_attn_result(&cpu);
  free(q), free(k), free(v), free(dout);
}

/* A handle of cuDNN's attention, with deterministic plans or not. Where cuDNN
 * cannot start, NULL and a failed check; the fp32 checks still run. */
static dl_sdpa *sdpa_handle(int deterministic)
{
  dl_sdpa *sdpa = NULL;
  const int rc = dl_sdpa_create(&sdpa);
  if (rc != 0) {
    fprintf(stderr, "%s:%d: FAILED: dl_sdpa_create: %s\n", __FILE__, __LINE__, dl_status_string(rc));
    check_count++, check_failures++;
    dl_sdpa_destroy(sdpa);
    return NULL;
  }
  dl_sdpa_set_deterministic(sdpa, deterministic);
  return sdpa;
}

/* --small: two small shapes, no deterministic plans. This is for runs under
 * compute-sanitizer, which runs kernels tens of times slower. */
int main(int argc, char **argv)
{
  const bool small = argc > 1 && strcmp(argv[1], "--small") == 0;
  dl_sdpa *sdpa, *deterministic, *fresh;
  size_t ws = 0;
  int rc;
  require_gpu();
  sdpa = sdpa_handle(0);
  deterministic = small ? NULL : sdpa_handle(1);
  if (small) {
    test_shape(sdpa, NULL, 130, 48);
    test_shape(sdpa, NULL, 70, 128);
  } else {
    test_shape(sdpa, deterministic, 4050, 48); /* base: 4050 tokens, head 48 */
    test_shape(sdpa, NULL, 4050, 128);         /* mp: head 128 */
    test_shape(sdpa, NULL, 4049, 48);          /* odd token counts */
    test_shape(sdpa, NULL, 1013, 128);
  }
  dl_sdpa_destroy(sdpa);
  dl_sdpa_destroy(deterministic);
  if ((fresh = sdpa_handle(0)) != NULL) { /* a handle of its own: an empty plan cache */
    rc = dl_sdpa_plan(fresh, 2, 4050, 2, 44, DL_BF16, &ws); /* head 44: not a multiple of 8 */
    printf("head 44: %s\n", dl_status_string(rc));
    CHECK(rc != 0 && dl_sdpa_unsupported(rc));
    dl_sdpa_destroy(fresh);
  }
  return check_report("test_attention_gpu");
}
