/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/gpu_check.h: what the GPU tests share: skip without a GPU,
 * random host data, device copies in any activation type, outputs poisoned
 * (NaN bytes) before each run, and relative errors against the CPU
 * reference with NaN failing. */
#ifndef DLPAR_TEST_GPU_CHECK_H
#define DLPAR_TEST_GPU_CHECK_H

#include <cuda_runtime_api.h>
#include <math.h>

#include "kernels/cuda/ops.h"
#include "tests/unit/check.h"

/* Exits 77 (SKIP) with the reason when no GPU can run kernels here. */
static inline void require_gpu(void)
{
  int devices = 0;
  cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess || devices == 0)
    SKIP("no usable GPU (%s): the GPU tests run on a machine with one (make check-gpu)",
         rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
}

#define GPU_OR_EXIT(call)                                                                                    \
  do {                                                                                                       \
    int rc_ = (int)(call);                                                                                   \
    if (rc_ != 0) {                                                                                          \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, dl_status_string(rc_));                  \
      exit(1);                                                                                               \
    }                                                                                                        \
  } while (0)

static unsigned long long gpu_rng_state = 20261122ULL;

static inline float gpu_uniform(void) /* [-1, 1) */
{
  unsigned long long z = (gpu_rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static inline float *host_random(size_t n, float scale)
{
  float *x = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++)
    x[i] = gpu_uniform() * scale;
  return x;
}

static inline float *host_zeros(size_t n)
{
  return calloc(n ? n : 1, sizeof(float));
}

/* A device buffer of n values of type t, from fp32 host values (NULL:
 * poisoned), starting `offset` bytes into its allocation (a slice of an
 * arena, as the model's activations and weights are). */
static inline void *device_at(const float *host, size_t n, dl_dtype t, size_t offset)
{
  void *f32 = NULL, *base = NULL, *out;
  GPU_OR_EXIT(cudaMalloc(&base, n * dl_dtype_bytes(t) + 16 + offset));
  out = (char *)base + offset;
  if (!host) {
    GPU_OR_EXIT(cudaMemset(out, 0xff, n * dl_dtype_bytes(t)));
    return out;
  }
  GPU_OR_EXIT(cudaMalloc(&f32, n * sizeof(float)));
  GPU_OR_EXIT(cudaMemcpy(f32, host, n * sizeof(float), cudaMemcpyHostToDevice));
  GPU_OR_EXIT(dl_cast(out, t, f32, DL_F32, n, 0));
  GPU_OR_EXIT(cudaDeviceSynchronize());
  cudaFree(f32);
  return out;
}

static inline void *device_from(const float *host, size_t n, dl_dtype t)
{
  return device_at(host, n, t, 0);
}

/* fp32 host copy of a device buffer of type t */
static inline float *host_from(const void *dev, size_t n, dl_dtype t)
{
  float *host = malloc(n * sizeof(float));
  void *f32 = NULL;
  GPU_OR_EXIT(cudaMalloc(&f32, n * sizeof(float)));
  GPU_OR_EXIT(dl_cast(f32, DL_F32, dev, t, n, 0));
  GPU_OR_EXIT(cudaMemcpy(host, f32, n * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(f32);
  return host;
}

static inline double rel_error(const float *got, const float *ref, size_t n)
{
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(got[i]))
      return NAN;
    num += ((double)got[i] - ref[i]) * ((double)got[i] - ref[i]);
    den += (double)ref[i] * ref[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* fp32 < 1e-5, 16-bit < 2e-2 */
static inline double bound_for(dl_dtype t)
{
  return t == DL_F32 ? 1e-5 : 2e-2;
}

#define CHECK_CLOSE(what, t, got, ref, n)                                                                  \
  do {                                                                                                     \
    const double e_ = rel_error(got, ref, n);                                                              \
    check_count++;                                                                                         \
    if (!(e_ < bound_for(t))) {                                                                            \
      check_failures++;                                                                                    \
      fprintf(stderr, "%s:%d: FAILED: %s (%s): relative error %.3g, bound %.0e\n", __FILE__, __LINE__, what, \
              t == DL_F32 ? "fp32" : t == DL_BF16 ? "bf16" : "fp16", e_, bound_for(t));                    \
    } else {                                                                                               \
      printf("ok: %s (%s): %.2e\n", what, t == DL_F32 ? "fp32" : t == DL_BF16 ? "bf16" : "fp16", e_);     \
    }                                                                                                      \
  } while (0)

/* An attention's outputs, fp32 on the host: o, dq, dk, dv of n values, lse of rows. */
typedef struct {
  float *o, *lse, *dq, *dk, *dv;
} attn_result;

/* Each output of got against ref, named "LABEL FIELD". */
static inline void check_attention_close(const char *label, dl_dtype t, const attn_result *got,
                                         const attn_result *ref, size_t n, size_t rows)
{
  const float *const got_fields[5] = {got->o, got->lse, got->dq, got->dk, got->dv};
  const float *const ref_fields[5] = {ref->o, ref->lse, ref->dq, ref->dk, ref->dv};
  const char *const names[5] = {"o", "lse", "dq", "dk", "dv"};
  char what[128];
  for (int i = 0; i < 5; i++) {
    snprintf(what, sizeof what, "%s %s", label, names[i]);
    CHECK_CLOSE(what, t, got_fields[i], ref_fields[i], i == 1 ? rows : n);
  }
}

static inline void free_attn_result(attn_result *r)
{
  free(r->o), free(r->lse), free(r->dq), free(r->dk), free(r->dv);
}

#endif
