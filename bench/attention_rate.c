/* SPDX-License-Identifier: BSD-3-Clause */
/* bench/attention_rate.c: the attention kernels' rate on this GPU, the
 * dlpar side of bench/attention-vs-torch (PyTorch's scaled_dot_product_attention
 * at the same shape is the anchor). Random q, k, v, dout; the mean over the
 * timed calls after warm-up, CUDA events; FLOPs as FlashAttention counts
 * them: forward 4 B NH N^2 HD (two products), backward 2.5 x that (five).
 *   dlpar-attention-rate reference|cudnn|tc|tf32 fp32|bf16|fp16 B N NH HD [repeats]
 * (tc: dl_attention_tc_* in 3xTF32, tf32: in plain TF32; fp32 only) prints
 * one line: "IMPL TYPE B N NH HD: forward MS ms, backward MS ms,
 * forward+backward TFLOP/s"; in fp32 a second: o's and dq's relative
 * error against float64, computed on the host for 32 rows of the first
 * head ("IMPL TYPE B N NH HD: error against float64 (32 rows): o E, dq E"). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "kernels/cuda/ops.h"

/* On a failed call: file:line, the call and the status's words on stderr, exit 1. */
#define RATE_OR_EXIT(call)                                                                                   \
  do {                                                                                                       \
    const int rc_ = (int)(call);                                                                             \
    if (rc_ != 0) {                                                                                          \
      fprintf(stderr, "dlpar-attention-rate: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,                    \
              dl_status_string(rc_));                                                                        \
      exit(1);                                                                                               \
    }                                                                                                        \
  } while (0)

typedef enum { RATE_REFERENCE, RATE_CUDNN, RATE_TC, RATE_TF32 } rate_impl;

typedef struct {
  int B, N, NH, HD, repeats;
  rate_impl impl;
  dl_dtype type;
} rate_args;

typedef struct {
  void *q, *k, *v, *o, *dout, *dq, *dk, *dv, *workspace;
  float *lse, *delta;
  float *host[4]; /* fp32: q, k, v, dout as the GPU has them */
#ifdef HAVE_CUDNN
  dl_sdpa *sdpa;
#endif
} rate_buffers;

static int parse(int argc, char **argv, rate_args *a)
{
  static const char *const impls[] = {"reference", "cudnn", "tc", "tf32"};
  if (argc < 7 || argc > 8)
    return -1;
  a->impl = (rate_impl)-1;
  for (int i = 0; i < 4; i++)
    if (strcmp(argv[1], impls[i]) == 0)
      a->impl = (rate_impl)i;
  if (a->impl == (rate_impl)-1)
    return -1;
  if (strcmp(argv[2], "fp32") == 0)
    a->type = DL_F32;
  else if (strcmp(argv[2], "bf16") == 0)
    a->type = DL_BF16;
  else if (strcmp(argv[2], "fp16") == 0)
    a->type = DL_F16;
  else
    return -1;
  a->B = atoi(argv[3]), a->N = atoi(argv[4]), a->NH = atoi(argv[5]), a->HD = atoi(argv[6]);
  a->repeats = argc == 8 ? atoi(argv[7]) : 10;
  if ((a->impl == RATE_TC || a->impl == RATE_TF32) && a->type != DL_F32)
    return -1;
  return a->B > 0 && a->N > 0 && a->NH > 0 && a->HD > 0 && a->repeats > 0 ? 0 : -1;
}

/* n values of type t uniform in [-1, 1) on the device (seeded per buffer);
 * *kept (if not NULL): the fp32 host values. */
static void *device_random(size_t n, dl_dtype t, unsigned seed, float **kept)
{
  float *host = malloc(n * sizeof(float)), *f32 = NULL;
  void *out = NULL;
  if (!host) {
    fprintf(stderr, "dlpar-attention-rate: out of host memory for %zu values\n", n);
    exit(1);
  }
  srand(seed);
  for (size_t i = 0; i < n; i++)
    host[i] = (float)rand() / ((float)RAND_MAX + 1.0f) * 2.0f - 1.0f;
  RATE_OR_EXIT(cudaMalloc((void **)&f32, n * sizeof(float)));
  RATE_OR_EXIT(cudaMalloc(&out, n * dl_dtype_bytes(t)));
  RATE_OR_EXIT(cudaMemcpy(f32, host, n * sizeof(float), cudaMemcpyHostToDevice));
  RATE_OR_EXIT(dl_cast(out, t, f32, DL_F32, n, 0));
  RATE_OR_EXIT(cudaDeviceSynchronize());
  cudaFree(f32);
  if (kept)
    *kept = host;
  else
    free(host);
  return out;
}

static void *device_alloc(size_t bytes)
{
  void *p = NULL;
  RATE_OR_EXIT(cudaMalloc(&p, bytes ? bytes : 1));
  return p;
}

static void setup(const rate_args *a, rate_buffers *b)
{
  const size_t n = (size_t)a->B * a->N * a->NH * a->HD, rows = (size_t)a->B * a->NH * a->N;
  size_t workspace = 0;
  memset(b, 0, sizeof(*b));
  const int fp32 = a->type == DL_F32;
  b->q = device_random(n, a->type, 1, fp32 ? &b->host[0] : NULL);
  b->k = device_random(n, a->type, 2, fp32 ? &b->host[1] : NULL);
  b->v = device_random(n, a->type, 3, fp32 ? &b->host[2] : NULL);
  b->dout = device_random(n, a->type, 4, fp32 ? &b->host[3] : NULL);
  b->o = device_alloc(n * dl_dtype_bytes(a->type)), b->dq = device_alloc(n * dl_dtype_bytes(a->type));
  b->dk = device_alloc(n * dl_dtype_bytes(a->type)), b->dv = device_alloc(n * dl_dtype_bytes(a->type));
  b->lse = device_alloc(rows * sizeof(float)), b->delta = device_alloc(rows * sizeof(float));
#ifdef HAVE_CUDNN
  if (a->impl == RATE_CUDNN) {
    RATE_OR_EXIT(dl_sdpa_create(&b->sdpa));
    RATE_OR_EXIT(dl_sdpa_plan(b->sdpa, a->B, a->N, a->NH, a->HD, a->type, &workspace));
  }
#endif
  if (a->impl == RATE_TC || a->impl == RATE_TF32) /* the backward's dq turns */
    workspace = dl_attention_tc_scratch_bytes(a->B, a->N, a->NH, a->HD);
  b->workspace = device_alloc(workspace);
}

static void forward(const rate_args *a, const rate_buffers *b, float scale)
{
  if (a->impl == RATE_TC || a->impl == RATE_TF32) {
    RATE_OR_EXIT(dl_attention_tc_fwd(b->o, b->lse, b->q, b->k, b->v, a->B, a->N, a->NH, a->HD, scale,
                                     a->impl == RATE_TC ? 3 : 1, 0));
    return;
  }
#ifdef HAVE_CUDNN
  if (a->impl == RATE_CUDNN) {
    RATE_OR_EXIT(dl_sdpa_fwd(b->sdpa, b->workspace, b->o, b->lse, b->q, b->k, b->v, a->B, a->N, a->NH, a->HD, scale,
                             a->type, 0));
    return;
  }
#endif
  RATE_OR_EXIT(dl_attention_fwd(b->o, b->lse, b->q, b->k, b->v, a->B, a->N, a->NH, a->HD, scale, a->type, 0));
}

static void backward(const rate_args *a, const rate_buffers *b, float scale)
{
  if (a->impl == RATE_TC || a->impl == RATE_TF32) {
    RATE_OR_EXIT(dl_attention_tc_bwd(b->dq, b->dk, b->dv, b->dout, b->q, b->k, b->v, b->o, b->lse, b->delta,
                                     b->workspace, a->B, a->N, a->NH, a->HD, scale, a->impl == RATE_TC ? 3 : 1, 0));
    return;
  }
#ifdef HAVE_CUDNN
  if (a->impl == RATE_CUDNN) {
    RATE_OR_EXIT(dl_sdpa_bwd(b->sdpa, b->workspace, b->dq, b->dk, b->dv, b->dout, b->q, b->k, b->v, b->o, b->lse,
                             a->B, a->N, a->NH, a->HD, scale, a->type, 0));
    return;
  }
#endif
  RATE_OR_EXIT(dl_attention_bwd(b->dq, b->dk, b->dv, b->dout, b->q, b->k, b->v, b->o, b->lse, b->delta, a->B, a->N,
                                a->NH, a->HD, scale, a->type, 0));
}

/* Mean milliseconds of `repeats` calls of one direction after two warm-up calls. */
static float time_ms(const rate_args *a, const rate_buffers *b, void (*direction)(const rate_args *,
                                                                               const rate_buffers *, float))
{
  const float scale = 1.0f / sqrtf((float)a->HD);
  cudaEvent_t start, stop;
  float ms = 0;
  for (int i = 0; i < 2; i++)
    direction(a, b, scale);
  RATE_OR_EXIT(cudaEventCreate(&start));
  RATE_OR_EXIT(cudaEventCreate(&stop));
  RATE_OR_EXIT(cudaEventRecord(start, 0));
  for (int i = 0; i < a->repeats; i++)
    direction(a, b, scale);
  RATE_OR_EXIT(cudaEventRecord(stop, 0));
  RATE_OR_EXIT(cudaEventSynchronize(stop));
  RATE_OR_EXIT(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / (float)a->repeats;
}

/* o's and dq's relative error against float64 over `rows` rows of head
 * (0, 0) spread over N (the first and the last among them): each row's
 * softmax, output, delta and dq computed in double from the fp32 inputs. */
static void error_vs_f64(const rate_args *a, const rate_buffers *b, int rows, double *o_error, double *dq_error)
{
  const size_t n = (size_t)a->B * a->N * a->NH * a->HD, ld = (size_t)a->NH * a->HD;
  const double scale = 1.0 / sqrt((double)a->HD);
  const float *q = b->host[0], *k = b->host[1], *v = b->host[2], *dout = b->host[3];
  float *o = malloc(n * sizeof(float)), *dq = malloc(n * sizeof(float));
  double *p = malloc(a->N * sizeof(double)), *ro = malloc(a->HD * sizeof(double));
  double sums[4] = {0, 0, 0, 0}; /* o's error^2, o^2, dq's error^2, dq^2 */
  RATE_OR_EXIT(cudaMemcpy(o, b->o, n * sizeof(float), cudaMemcpyDeviceToHost));
  RATE_OR_EXIT(cudaMemcpy(dq, b->dq, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < rows; r++) {
    const size_t i = rows > 1 ? (size_t)r * (a->N - 1) / (rows - 1) : 0, at = i * ld;
    double max = -INFINITY, sum = 0, delta = 0;
    for (int j = 0; j < a->N; j++) {
      double s = 0;
      for (int d = 0; d < a->HD; d++)
        s += (double)q[at + d] * k[j * ld + d];
      p[j] = s * scale;
      max = p[j] > max ? p[j] : max;
    }
    for (int j = 0; j < a->N; j++)
      sum += exp(p[j] - max);
    for (int d = 0; d < a->HD; d++)
      ro[d] = 0;
    for (int j = 0; j < a->N; j++) {
      p[j] = exp(p[j] - max) / sum;
      for (int d = 0; d < a->HD; d++)
        ro[d] += p[j] * v[j * ld + d];
    }
    for (int d = 0; d < a->HD; d++) {
      sums[0] += (o[at + d] - ro[d]) * (o[at + d] - ro[d]), sums[1] += ro[d] * ro[d];
      delta += dout[at + d] * ro[d];
    }
    for (int d = 0; d < a->HD; d++)
      ro[d] = 0; /* now dq */
    for (int j = 0; j < a->N; j++) {
      double dp = 0;
      for (int d = 0; d < a->HD; d++)
        dp += (double)dout[at + d] * v[j * ld + d];
      for (int d = 0; d < a->HD; d++)
        ro[d] += p[j] * (dp - delta) * scale * k[j * ld + d];
    }
    for (int d = 0; d < a->HD; d++)
      sums[2] += (dq[at + d] - ro[d]) * (dq[at + d] - ro[d]), sums[3] += ro[d] * ro[d];
  }
  *o_error = sqrt(sums[0] / sums[1]);
  *dq_error = sqrt(sums[2] / sums[3]);
  free(o), free(dq), free(p), free(ro);
}

int main(int argc, char **argv)
{
  rate_args a;
  rate_buffers b;
  double forward_flops;
  float fwd_ms, bwd_ms;
  if (parse(argc, argv, &a) != 0) {
    fprintf(stderr, "usage: dlpar-attention-rate reference|cudnn|tc|tf32 fp32|bf16|fp16 B N NH HD [repeats] (tc, tf32: "
                    "fp32 only)\n");
    return 2;
  }
#ifndef HAVE_CUDNN
  if (a.impl == RATE_CUDNN) {
    fprintf(stderr, "dlpar-attention-rate: built without cuDNN: only 'reference' (configure with cuDNN for 'cudnn')\n");
    return 2;
  }
#endif
  setup(&a, &b);
  fwd_ms = time_ms(&a, &b, forward);
  bwd_ms = time_ms(&a, &b, backward);
  forward_flops = 4.0 * a.B * a.NH * (double)a.N * a.N * a.HD;
  printf("%s %s %d %d %d %d: forward %.3f ms, backward %.3f ms, %.2f TFLOP/s\n", argv[1], argv[2], a.B, a.N, a.NH,
         a.HD, fwd_ms, bwd_ms, 3.5 * forward_flops / ((fwd_ms + bwd_ms) * 1e-3) / 1e12);
  if (a.type == DL_F32) {
    double o_error, dq_error;
    RATE_OR_EXIT(cudaDeviceSynchronize());
    error_vs_f64(&a, &b, 32, &o_error, &dq_error);
    printf("%s %s %d %d %d %d: error against float64 (32 rows): o %.2e, dq %.2e\n", argv[1], argv[2], a.B, a.N, a.NH,
           a.HD, o_error, dq_error);
  }
  return 0;
}
