/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/common.cuh: what every CUDA kernel file shares. That is
 * DL_TRY_CUDA, which returns CUDA's status for the caller to print with
 * file:line and dl_status_string, the conversions between fp32 and the
 * activation types, grid sizes, dtype dispatch and block reductions. */
#ifndef DLPAR_KERNELS_CUDA_COMMON_CUH
#define DLPAR_KERNELS_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cuda/ops.h"

/* The kernels' part of the error family of common/status.h. DL_TRY returns
 * a call's non-zero dl status, and DL_TRY_CUDA returns a CUDA error as one,
 * cudaSuccess being 0. DL_TRY_GOTO(call, rc, label) keeps the status in rc
 * and goes to the function's cleanup label. The kernels' status carries no
 * message. The caller, the CUDA model's MODEL_TRY in trainer/model/cuda/,
 * records its file:line, the call and dl_status_string's words. */
#define DL_TRY(call)                                                                          \
  do {                                                                                        \
    const int try_rc_ = (call);                                                               \
    if (try_rc_ != 0)                                                                         \
      return try_rc_;                                                                         \
  } while (0)
#define DL_TRY_GOTO(call, rc, label)                                                          \
  do {                                                                                        \
    if (((rc) = (call)) != 0)                                                                 \
      goto label;                                                                             \
  } while (0)
#define DL_TRY_CUDA(call) DL_TRY((int)(call))

/* After a kernel launch, this returns the launch's own error, such as a bad configuration. */
#define DL_TRY_LAUNCH() DL_TRY_CUDA(cudaGetLastError())

/* On the host too, because attention_tiles.cuh's block code also runs on the CPU in a test. */
__host__ __device__ __forceinline__ float to_float(float x) { return x; }
__host__ __device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__host__ __device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <typename T> __host__ __device__ __forceinline__ T from_float(float x);
template <> __host__ __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __host__ __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x)
{
  return __float2bfloat16(x);
}
template <> __host__ __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half(x); }

static inline unsigned dl_blocks(size_t n, unsigned threads)
{
  const size_t blocks = (n + threads - 1) / threads;
  return (unsigned)(blocks < 65535u * 16u ? (blocks > 0 ? blocks : 1) : 65535u * 16u);
}

/* Calls F<T>(args...) for the activation type `act`. */
#define DL_DISPATCH(act, F, ...)                                                              \
  ((act) == DL_BF16 ? F<__nv_bfloat16>(__VA_ARGS__)                                           \
                    : (act) == DL_F16 ? F<__half>(__VA_ARGS__) : F<float>(__VA_ARGS__))

__device__ __forceinline__ float warp_sum(float v)
{
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/* V consecutive values at p as fp32, and back. With V = 4 this is one load
 * or store of 16 bytes for fp32 or 8 for bf16 and fp16, with p aligned to
 * that. With V = 1 it is one value. */
template <int V, typename T> __device__ __forceinline__ void load_vec(float (&out)[V], const T *p)
{
  if constexpr (V == 4 && sizeof(T) == 4) {
    const float4 v = *(const float4 *)p;
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  } else if constexpr (V == 4) {
    const uint2 raw = *(const uint2 *)p;
    T h[4];
    memcpy(h, &raw, sizeof(raw));
    for (int i = 0; i < 4; i++)
      out[i] = to_float(h[i]);
  } else {
    for (int i = 0; i < V; i++)
      out[i] = to_float(p[i]);
  }
}

template <int V, typename T> __device__ __forceinline__ void store_vec(T *p, const float (&in)[V])
{
  if constexpr (V == 4 && sizeof(T) == 4) {
    *(float4 *)p = make_float4(in[0], in[1], in[2], in[3]);
  } else if constexpr (V == 4) {
    T h[4];
    uint2 raw;
    for (int i = 0; i < 4; i++)
      h[i] = from_float<T>(in[i]);
    memcpy(&raw, h, sizeof(raw));
    *(uint2 *)p = raw;
  } else {
    for (int i = 0; i < V; i++)
      p[i] = from_float<T>(in[i]);
  }
}

/* Whether p may be read V values at a time by load_vec. It holds for NULL too. */
template <int V, typename T> static inline bool vec_aligned(const T *p)
{
  return (uintptr_t)p % (V * sizeof(T)) == 0;
}

/* The block code's context on the GPU. The block code of a kernel that a
 * CPU stand-in, one of the emulators in tests/unit, also runs is
 * __host__ __device__ over a context, and this is the GPU's. Its host
 * bodies are never run, because kernels are the only callers. It gives
 * the thread, the block barrier, the warp's shuffle, a warp's sum in
 * warp_sum, which every lane gets, and V values at p as fp32 and back in
 * load_vec and store_vec, with p aligned to V values. */
struct gpu_block_ctx {
  int tid;
  __host__ __device__ void sync() const
  {
#ifdef __CUDA_ARCH__
    __syncthreads();
#endif
  }
  __host__ __device__ float shfl_xor(float v, int mask) const
  {
#ifdef __CUDA_ARCH__
    return __shfl_xor_sync(0xffffffffu, v, mask);
#else
    (void)mask;
    return v;
#endif
  }
  __host__ __device__ float sum_warp(float v) const
  {
#ifdef __CUDA_ARCH__
    return warp_sum(v);
#else
    return v;
#endif
  }
  template <int V, typename T> __host__ __device__ void load(float (&out)[V], const T *p) const
  {
#ifdef __CUDA_ARCH__
    load_vec<V>(out, p);
#else
    (void)p;
    for (int i = 0; i < V; i++)
      out[i] = 0.0f;
#endif
  }
  template <int V, typename T> __host__ __device__ void store(T *p, const float (&in)[V]) const
  {
#ifdef __CUDA_ARCH__
    store_vec<V>(p, in);
#else
    (void)p, (void)in;
#endif
  }
};

/* Sum over a block whose size is a multiple of 32 and at most 1024. Every thread gets it. */
__device__ __forceinline__ float block_sum(float v, float *shared32)
{
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0)
    shared32[warp] = v;
  __syncthreads();
  v = lane < warps ? shared32[lane] : 0.0f;
  return warp_sum(v);
}

#endif
