/* SPDX-License-Identifier: BSD-3-Clause */
/* bench/attention_rate.c: the attention kernels' rate on this GPU, the
 * dlpar side of bench/attention-vs-torch (PyTorch's scaled_dot_product_attention
 * at the same shape is the anchor). Random q, k, v, dout; the mean over the
 * timed calls after warm-up, CUDA events; FLOPs as FlashAttention counts
 * them: forward 4 B NH N^2 HD (two products), backward 2.5 x that (five).
 *   dlpar-attention-rate reference|cudnn fp32|bf16|fp16 B N NH HD [repeats]
 * prints one line: "IMPL TYPE B N NH HD: forward MS ms, backward MS ms,
 * forward+backward TFLOP/s". */
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

typedef struct {
  int cudnn, B, N, NH, HD, repeats;
  dl_dtype type;
} rate_args;

typedef struct {
  void *q, *k, *v, *o, *dout, *dq, *dk, *dv, *workspace;
  float *lse, *delta;
#ifdef HAVE_CUDNN
  dl_sdpa *sdpa;
#endif
} rate_buffers;

static int parse(int argc, char **argv, rate_args *a)
{
  if (argc < 7 || argc > 8 || (strcmp(argv[1], "reference") != 0 && strcmp(argv[1], "cudnn") != 0))
    return -1;
  a->cudnn = strcmp(argv[1], "cudnn") == 0;
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
  return a->B > 0 && a->N > 0 && a->NH > 0 && a->HD > 0 && a->repeats > 0 ? 0 : -1;
}

/* n values of type t uniform in [-1, 1) on the device (seeded per buffer). */
static void *device_random(size_t n, dl_dtype t, unsigned seed)
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
  b->q = device_random(n, a->type, 1), b->k = device_random(n, a->type, 2), b->v = device_random(n, a->type, 3);
  b->dout = device_random(n, a->type, 4);
  b->o = device_alloc(n * dl_dtype_bytes(a->type)), b->dq = device_alloc(n * dl_dtype_bytes(a->type));
  b->dk = device_alloc(n * dl_dtype_bytes(a->type)), b->dv = device_alloc(n * dl_dtype_bytes(a->type));
  b->lse = device_alloc(rows * sizeof(float)), b->delta = device_alloc(rows * sizeof(float));
#ifdef HAVE_CUDNN
  if (a->cudnn) {
    RATE_OR_EXIT(dl_sdpa_create(&b->sdpa));
    RATE_OR_EXIT(dl_sdpa_plan(b->sdpa, a->B, a->N, a->NH, a->HD, a->type, &workspace));
  }
#endif
  b->workspace = device_alloc(workspace);
}

static void forward(const rate_args *a, const rate_buffers *b, float scale)
{
#ifdef HAVE_CUDNN
  if (a->cudnn) {
    RATE_OR_EXIT(dl_sdpa_fwd(b->sdpa, b->workspace, b->o, b->lse, b->q, b->k, b->v, a->B, a->N, a->NH, a->HD, scale,
                             a->type, 0));
    return;
  }
#endif
  RATE_OR_EXIT(dl_attention_fwd(b->o, b->lse, b->q, b->k, b->v, a->B, a->N, a->NH, a->HD, scale, a->type, 0));
}

static void backward(const rate_args *a, const rate_buffers *b, float scale)
{
#ifdef HAVE_CUDNN
  if (a->cudnn) {
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

int main(int argc, char **argv)
{
  rate_args a;
  rate_buffers b;
  double forward_flops;
  float fwd_ms, bwd_ms;
  if (parse(argc, argv, &a) != 0) {
    fprintf(stderr, "usage: dlpar-attention-rate reference|cudnn fp32|bf16|fp16 B N NH HD [repeats]\n");
    return 2;
  }
#ifndef HAVE_CUDNN
  if (a.cudnn) {
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
  return 0;
}
