/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/attention.cu: flash attention, forward and backward, never
 * an N x N matrix in memory (the base config has N = 4050 tokens).
 * The readable version: one thread per query (or key) row, key/value (or
 * query) tiles staged in shared memory in fp32, an online softmax in fp32.
 *  forward: o_i = sum_j softmax_j(q_i.k_j s) v_j, lse_i = log sum_j exp(q_i.k_j s)
 *  backward (recomputing p_ij = exp(q_i.k_j s - lse_i), delta_i = do_i.o_i):
 *    dv_j = sum_i p_ij do_i          dk_j = s sum_i ds_ij q_i
 *    dq_i = s sum_j ds_ij k_j        ds_ij = p_ij (do_i.v_j - delta_i)
 * dk/dv and dq are separate kernels, so no atomics and the result is
 * deterministic. No tensor cores: the GPU's attention is cuDNN's
 * (attention_cudnn.cu); this is its reference and fallback. */
#include "config.h"

#include <math.h>

#include "kernels/cuda/common.cuh"

enum { HD_MAX = 128, ROWS = 64, TILE = 32 };

typedef struct {
  int N, NH, HD;
  float scale;
} attn_shape;

/* Stages rows [r0, r0 + TILE) of x and of y (one head) as fp32 in shared
 * memory; rows >= N as 0. */
template <typename T>
__device__ void stage_tiles(float (*x_tile)[HD_MAX], const T *x, float (*y_tile)[HD_MAX], const T *y, size_t base,
                            size_t ld, int r0, const attn_shape &a)
{
  for (int e = threadIdx.x; e < TILE * a.HD; e += blockDim.x) {
    const int r = e / a.HD, d = e % a.HD;
    const bool inside = r0 + r < a.N;
    const size_t at = base + (size_t)(r0 + r) * ld + d;
    x_tile[r][d] = inside ? to_float(x[at]) : 0.0f;
    y_tile[r][d] = inside ? to_float(y[at]) : 0.0f;
  }
}

template <typename T>
__global__ void flash_fwd_kernel(T *o, float *lse, const T *q, const T *k, const T *v, attn_shape a)
{
  __shared__ float ks[TILE][HD_MAX], vs[TILE][HD_MAX];
  const int bh = blockIdx.y, b = bh / a.NH, h = bh % a.NH, i = blockIdx.x * ROWS + threadIdx.x;
  const size_t ld = (size_t)a.NH * a.HD, base = (size_t)b * a.N * ld + (size_t)h * a.HD;
  const bool active = i < a.N;
  float qi[HD_MAX], acc[HD_MAX], row_max = -INFINITY, row_sum = 0;
  for (int d = 0; d < a.HD; d++) {
    qi[d] = active ? to_float(q[base + (size_t)i * ld + d]) * a.scale : 0.0f;
    acc[d] = 0;
  }
  for (int j0 = 0; j0 < a.N; j0 += TILE) {
    const int count = a.N - j0 < TILE ? a.N - j0 : TILE;
    float scores[TILE], tile_max = -INFINITY;
    __syncthreads();
    stage_tiles(ks, k, vs, v, base, ld, j0, a);
    __syncthreads();
    if (!active)
      continue;
    for (int j = 0; j < count; j++) {
      float s = 0;
      for (int d = 0; d < a.HD; d++)
        s += qi[d] * ks[j][d];
      scores[j] = s;
      tile_max = fmaxf(tile_max, s);
    }
    const float new_max = fmaxf(row_max, tile_max), correction = expf(row_max - new_max);
    row_sum *= correction;
    for (int d = 0; d < a.HD; d++)
      acc[d] *= correction;
    for (int j = 0; j < count; j++) {
      const float p = expf(scores[j] - new_max);
      row_sum += p;
      for (int d = 0; d < a.HD; d++)
        acc[d] += p * vs[j][d];
    }
    row_max = new_max;
  }
  if (active) {
    for (int d = 0; d < a.HD; d++)
      o[base + (size_t)i * ld + d] = from_float<T>(acc[d] / row_sum);
    lse[(size_t)bh * a.N + i] = row_max + logf(row_sum);
  }
}

template <typename T>
static int attention_fwd(void *o, float *lse, const void *q, const void *k, const void *v, int B, const attn_shape &a,
                         cudaStream_t s)
{
  flash_fwd_kernel<T><<<dim3((a.N + ROWS - 1) / ROWS, B * a.NH), ROWS, 0, s>>>((T *)o, lse, (const T *)q, (const T *)k,
                                                                              (const T *)v, a);
  DL_TRY_LAUNCH();
  return 0;
}

extern "C" int dl_attention_fwd(void *o, float *lse, const void *q, const void *k, const void *v, int B, int N, int NH,
                                int HD, float scale, dl_dtype act, cudaStream_t s)
{
  const attn_shape a = {N, NH, HD, scale};
  if (HD > HD_MAX || HD < 1)
    return (int)cudaErrorInvalidValue;
  return DL_DISPATCH(act, attention_fwd, o, lse, q, k, v, B, a, s);
}

/* delta_i = do_i . o_i */
template <typename T> __global__ void delta_kernel(float *delta, const T *dout, const T *o, int B, attn_shape a)
{
  const size_t rows = (size_t)B * a.NH * a.N, ld = (size_t)a.NH * a.HD;
  for (size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < rows; r += (size_t)gridDim.x * blockDim.x) {
    const size_t i = r % a.N, bh = r / a.N, b = bh / a.NH, h = bh % a.NH;
    const size_t at = b * a.N * ld + i * ld + h * a.HD;
    float sum = 0;
    for (int d = 0; d < a.HD; d++)
      sum += to_float(dout[at + d]) * to_float(o[at + d]);
    delta[r] = sum;
  }
}

/* One thread per key row j: dk_j, dv_j over all query tiles. */
template <typename T>
__global__ void flash_dkdv_kernel(T *dk, T *dv, const T *q, const T *k, const T *v, const T *dout, const float *lse,
                                  const float *delta, attn_shape a)
{
  __shared__ float qs[TILE][HD_MAX], dos[TILE][HD_MAX], lse_s[TILE], delta_s[TILE];
  const int bh = blockIdx.y, b = bh / a.NH, h = bh % a.NH, j = blockIdx.x * ROWS + threadIdx.x;
  const size_t ld = (size_t)a.NH * a.HD, base = (size_t)b * a.N * ld + (size_t)h * a.HD;
  const bool active = j < a.N;
  float kj[HD_MAX], vj[HD_MAX], dkj[HD_MAX], dvj[HD_MAX];
  for (int d = 0; d < a.HD; d++) {
    kj[d] = active ? to_float(k[base + (size_t)j * ld + d]) : 0.0f;
    vj[d] = active ? to_float(v[base + (size_t)j * ld + d]) : 0.0f;
    dkj[d] = dvj[d] = 0;
  }
  for (int i0 = 0; i0 < a.N; i0 += TILE) {
    const int count = a.N - i0 < TILE ? a.N - i0 : TILE;
    __syncthreads();
    stage_tiles(qs, q, dos, dout, base, ld, i0, a);
    for (int e = threadIdx.x; e < TILE; e += blockDim.x) {
      lse_s[e] = i0 + e < a.N ? lse[(size_t)bh * a.N + i0 + e] : 0.0f;
      delta_s[e] = i0 + e < a.N ? delta[(size_t)bh * a.N + i0 + e] : 0.0f;
    }
    __syncthreads();
    if (!active)
      continue;
    for (int i = 0; i < count; i++) {
      float s = 0, dp = 0;
      for (int d = 0; d < a.HD; d++) {
        s += qs[i][d] * kj[d];
        dp += dos[i][d] * vj[d];
      }
      const float p = expf(s * a.scale - lse_s[i]), ds = p * (dp - delta_s[i]);
      for (int d = 0; d < a.HD; d++) {
        dvj[d] += p * dos[i][d];
        dkj[d] += ds * qs[i][d] * a.scale;
      }
    }
  }
  if (active)
    for (int d = 0; d < a.HD; d++) {
      dk[base + (size_t)j * ld + d] = from_float<T>(dkj[d]);
      dv[base + (size_t)j * ld + d] = from_float<T>(dvj[d]);
    }
}

/* One thread per query row i: dq_i over all key tiles. */
template <typename T>
__global__ void flash_dq_kernel(T *dq, const T *q, const T *k, const T *v, const T *dout, const float *lse,
                                const float *delta, attn_shape a)
{
  __shared__ float ks[TILE][HD_MAX], vs[TILE][HD_MAX];
  const int bh = blockIdx.y, b = bh / a.NH, h = bh % a.NH, i = blockIdx.x * ROWS + threadIdx.x;
  const size_t ld = (size_t)a.NH * a.HD, base = (size_t)b * a.N * ld + (size_t)h * a.HD;
  const bool active = i < a.N;
  const float lse_i = active ? lse[(size_t)bh * a.N + i] : 0.0f, delta_i = active ? delta[(size_t)bh * a.N + i] : 0.0f;
  float qi[HD_MAX], doi[HD_MAX], dqi[HD_MAX];
  for (int d = 0; d < a.HD; d++) {
    qi[d] = active ? to_float(q[base + (size_t)i * ld + d]) : 0.0f;
    doi[d] = active ? to_float(dout[base + (size_t)i * ld + d]) : 0.0f;
    dqi[d] = 0;
  }
  for (int j0 = 0; j0 < a.N; j0 += TILE) {
    const int count = a.N - j0 < TILE ? a.N - j0 : TILE;
    __syncthreads();
    stage_tiles(ks, k, vs, v, base, ld, j0, a);
    __syncthreads();
    if (!active)
      continue;
    for (int j = 0; j < count; j++) {
      float s = 0, dp = 0;
      for (int d = 0; d < a.HD; d++) {
        s += qi[d] * ks[j][d];
        dp += doi[d] * vs[j][d];
      }
      const float ds = expf(s * a.scale - lse_i) * (dp - delta_i);
      for (int d = 0; d < a.HD; d++)
        dqi[d] += ds * ks[j][d] * a.scale;
    }
  }
  if (active)
    for (int d = 0; d < a.HD; d++)
      dq[base + (size_t)i * ld + d] = from_float<T>(dqi[d]);
}

template <typename T>
static int attention_bwd(void *dq, void *dk, void *dv, const void *dout, const void *q, const void *k, const void *v,
                         const void *o, const float *lse, float *delta, int B, const attn_shape &a, cudaStream_t s)
{
  const dim3 grid((a.N + ROWS - 1) / ROWS, B * a.NH);
  delta_kernel<T><<<dl_blocks((size_t)B * a.NH * a.N, 256), 256, 0, s>>>(delta, (const T *)dout, (const T *)o, B, a);
  DL_TRY_LAUNCH();
  flash_dkdv_kernel<T><<<grid, ROWS, 0, s>>>((T *)dk, (T *)dv, (const T *)q, (const T *)k, (const T *)v,
                                             (const T *)dout, lse, delta, a);
  DL_TRY_LAUNCH();
  flash_dq_kernel<T><<<grid, ROWS, 0, s>>>((T *)dq, (const T *)q, (const T *)k, (const T *)v, (const T *)dout, lse,
                                           delta, a);
  DL_TRY_LAUNCH();
  return 0;
}

extern "C" int dl_attention_bwd(void *dq, void *dk, void *dv, const void *dout, const void *q, const void *k,
                                const void *v, const void *o, const float *lse, float *delta, int B, int N, int NH,
                                int HD, float scale, dl_dtype act, cudaStream_t s)
{
  const attn_shape a = {N, NH, HD, scale};
  if (HD > HD_MAX || HD < 1)
    return (int)cudaErrorInvalidValue;
  return DL_DISPATCH(act, attention_bwd, dq, dk, dv, dout, q, k, v, o, lse, delta, B, a, s);
}

/* The largest per-thread local memory (frames, spills) of one dtype's kernels. */
template <typename T> static int stack_bytes_of(size_t *bytes)
{
  const void *kernels[3] = {(const void *)flash_fwd_kernel<T>, (const void *)flash_dkdv_kernel<T>,
                            (const void *)flash_dq_kernel<T>};
  for (int i = 0; i < 3; i++) {
    cudaFuncAttributes attributes;
    DL_TRY_CUDA(cudaFuncGetAttributes(&attributes, kernels[i]));
    *bytes = attributes.localSizeBytes > *bytes ? attributes.localSizeBytes : *bytes;
  }
  return 0;
}

extern "C" int dl_attention_stack_bytes(size_t *bytes)
{
  int rc;
  *bytes = 0;
  if ((rc = stack_bytes_of<float>(bytes)) != 0 || (rc = stack_bytes_of<__nv_bfloat16>(bytes)) != 0)
    return rc;
  return stack_bytes_of<__half>(bytes);
}
