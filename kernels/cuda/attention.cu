/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/attention.cu: flash attention, forward and backward, never
 * holding an N x N matrix in memory; the base config has N = 4050 tokens.
 * These are the kernels and their launches around attention_tiles.cuh's
 * block code of register-blocked tiles of fp32 FMAs, which is
 * deterministic. It is the attention of fp32 runs, since cuDNN's fused
 * attention takes only bf16 and fp16, and of `attention: reference`.
 * 16-bit runs use cuDNN's, in attention_cudnn.cu. Heads go up to 128
 * dims, padded to 16, 32, 48, 64 or 128 with zeros in the padding's dims.
 * Shared memory is dynamic, up to 175 KB a block for dk/dv at 128 dims.
 * The H100 allows 227 KB, an A100 163 and sm_86/89 99, and
 * dl_attention_shared_bytes says what a head size needs. */
#include "config.h"

#include "kernels/cuda/attention_tiles.cuh"

template <int HDP, typename T>
__global__ void __launch_bounds__(AT_THREADS)
    flash_fwd_kernel(T *o, float *lse, const T *q, const T *k, const T *v, attn_shape a)
{
  extern __shared__ float4 at_smem[];
  at_forward_block<HDP>(gpu_block_ctx{(int)threadIdx.x}, (float *)at_smem, (int)blockIdx.x * AT_ROWS,
                        (int)blockIdx.y, o, lse, q, k, v, a);
}

template <int HDP, typename T>
__global__ void __launch_bounds__(AT_THREADS) flash_dkdv_kernel(T *dk, T *dv, const T *q, const T *k, const T *v,
                                                                const T *dout, const float *lse, const float *delta,
                                                                attn_shape a)
{
  extern __shared__ float4 at_smem[];
  at_dkdv_block<HDP>(gpu_block_ctx{(int)threadIdx.x}, (float *)at_smem, (int)blockIdx.x * AT_ROWS, (int)blockIdx.y,
                     dk, dv, q, k, v, dout, lse, delta, a);
}

template <int HDP, typename T>
__global__ void __launch_bounds__(AT_THREADS) flash_dq_kernel(T *dq, const T *q, const T *k, const T *v,
                                                              const T *dout, const float *lse, const float *delta,
                                                              attn_shape a)
{
  extern __shared__ float4 at_smem[];
  at_dq_block<HDP>(gpu_block_ctx{(int)threadIdx.x}, (float *)at_smem, (int)blockIdx.x * AT_ROWS, (int)blockIdx.y, dq,
                   q, k, v, dout, lse, delta, a);
}

/* A kernel's grid, a block per 64 rows of each head, and its shared memory.
 * The memory is allowed above the default 48 KB through a function
 * attribute, which is not a stream operation and so is allowed while a
 * graph is captured. */
template <typename Kernel> static int prepare(Kernel kernel, int floats, int B, const attn_shape &a, dim3 *grid)
{
  DL_TRY_CUDA(cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   floats * (int)sizeof(float)));
  *grid = dim3((unsigned)((a.N + AT_ROWS - 1) / AT_ROWS), (unsigned)(B * a.NH));
  return 0;
}

template <int HDP, typename T>
static int forward_at(T *o, float *lse, const T *q, const T *k, const T *v, int B, const attn_shape &a, cudaStream_t s)
{
  const int floats = at_sizes<HDP>::FWD;
  dim3 grid;
  DL_TRY((prepare(flash_fwd_kernel<HDP, T>, floats, B, a, &grid)));
  flash_fwd_kernel<HDP, T><<<grid, AT_THREADS, floats * sizeof(float), s>>>(o, lse, q, k, v, a);
  DL_TRY_LAUNCH();
  return 0;
}

template <typename T>
static int attention_fwd(void *o, float *lse, const void *q, const void *k, const void *v, int B, const attn_shape &a,
                         cudaStream_t s)
{
  T *o_ = (T *)o;
  const T *q_ = (const T *)q, *k_ = (const T *)k, *v_ = (const T *)v;
  switch (at_padded_head(a.HD)) {
  case 16: return forward_at<16>(o_, lse, q_, k_, v_, B, a, s);
  case 32: return forward_at<32>(o_, lse, q_, k_, v_, B, a, s);
  case 48: return forward_at<48>(o_, lse, q_, k_, v_, B, a, s);
  case 64: return forward_at<64>(o_, lse, q_, k_, v_, B, a, s);
  default: return forward_at<128>(o_, lse, q_, k_, v_, B, a, s);
  }
}

extern "C" int dl_attention_fwd(void *o, float *lse, const void *q, const void *k, const void *v, int B, int N, int NH,
                                int HD, float scale, dl_dtype act, cudaStream_t s)
{
  const attn_shape a = {N, NH, HD, scale};
  if (!at_padded_head(HD))
    return (int)cudaErrorInvalidValue;
  return DL_DISPATCH(act, attention_fwd, o, lse, q, k, v, B, a, s);
}

template <int HDP, typename T>
static int backward_at(T *dq, T *dk, T *dv, const T *dout, const T *q, const T *k, const T *v, const float *lse,
                       const float *delta, int B, const attn_shape &a, cudaStream_t s)
{
  const int dkdv_floats = at_sizes<HDP>::DKDV, dq_floats = at_sizes<HDP>::DQ;
  dim3 grid;
  DL_TRY((prepare(flash_dkdv_kernel<HDP, T>, dkdv_floats, B, a, &grid)));
  flash_dkdv_kernel<HDP, T><<<grid, AT_THREADS, dkdv_floats * sizeof(float), s>>>(dk, dv, q, k, v, dout, lse, delta, a);
  DL_TRY_LAUNCH();
  DL_TRY((prepare(flash_dq_kernel<HDP, T>, dq_floats, B, a, &grid)));
  flash_dq_kernel<HDP, T><<<grid, AT_THREADS, dq_floats * sizeof(float), s>>>(dq, q, k, v, dout, lse, delta, a);
  DL_TRY_LAUNCH();
  return 0;
}

template <typename T>
static int attention_bwd(void *dq, void *dk, void *dv, const void *dout, const void *q, const void *k, const void *v,
                         const void *o, const float *lse, float *delta, int B, const attn_shape &a, cudaStream_t s)
{
  T *dq_ = (T *)dq, *dk_ = (T *)dk, *dv_ = (T *)dv;
  const T *do_ = (const T *)dout, *q_ = (const T *)q, *k_ = (const T *)k, *v_ = (const T *)v;
  delta_kernel<T><<<dl_blocks((size_t)B * a.NH * a.N, 256), 256, 0, s>>>(delta, do_, (const T *)o, B, a);
  DL_TRY_LAUNCH();
  switch (at_padded_head(a.HD)) {
  case 16: return backward_at<16>(dq_, dk_, dv_, do_, q_, k_, v_, lse, delta, B, a, s);
  case 32: return backward_at<32>(dq_, dk_, dv_, do_, q_, k_, v_, lse, delta, B, a, s);
  case 48: return backward_at<48>(dq_, dk_, dv_, do_, q_, k_, v_, lse, delta, B, a, s);
  case 64: return backward_at<64>(dq_, dk_, dv_, do_, q_, k_, v_, lse, delta, B, a, s);
  default: return backward_at<128>(dq_, dk_, dv_, do_, q_, k_, v_, lse, delta, B, a, s);
  }
}

extern "C" int dl_attention_bwd(void *dq, void *dk, void *dv, const void *dout, const void *q, const void *k,
                                const void *v, const void *o, const float *lse, float *delta, int B, int N, int NH,
                                int HD, float scale, dl_dtype act, cudaStream_t s)
{
  const attn_shape a = {N, NH, HD, scale};
  if (!at_padded_head(HD))
    return (int)cudaErrorInvalidValue;
  return DL_DISPATCH(act, attention_bwd, dq, dk, dv, dout, q, k, v, o, lse, delta, B, a, s);
}

extern "C" int dl_attention_shared_bytes(int HD, size_t *bytes)
{
  if (!at_padded_head(HD))
    return (int)cudaErrorInvalidValue;
  *bytes = (size_t)at_dkdv_floats(at_padded_head(HD)) * sizeof(float); /* dk/dv's block holds the most */
  return 0;
}

/* The largest per-thread local memory of the kernels, for frames and spills. */
static int add_stack_of(const void *kernel, size_t *bytes)
{
  cudaFuncAttributes attributes;
  DL_TRY_CUDA(cudaFuncGetAttributes(&attributes, kernel));
  *bytes = attributes.localSizeBytes > *bytes ? attributes.localSizeBytes : *bytes;
  return 0;
}

template <int HDP, typename T> static int stack_bytes_at(size_t *bytes)
{
  DL_TRY((add_stack_of((const void *)flash_fwd_kernel<HDP, T>, bytes)));
  DL_TRY((add_stack_of((const void *)flash_dkdv_kernel<HDP, T>, bytes)));
  return add_stack_of((const void *)flash_dq_kernel<HDP, T>, bytes);
}

template <typename T> static int stack_bytes_of(size_t *bytes)
{
  DL_TRY((stack_bytes_at<16, T>(bytes)));
  DL_TRY((stack_bytes_at<32, T>(bytes)));
  DL_TRY((stack_bytes_at<48, T>(bytes)));
  DL_TRY((stack_bytes_at<64, T>(bytes)));
  return stack_bytes_at<128, T>(bytes);
}

extern "C" int dl_attention_stack_bytes(size_t *bytes)
{
  *bytes = 0;
  DL_TRY(stack_bytes_of<float>(bytes));
  DL_TRY(stack_bytes_of<__nv_bfloat16>(bytes));
  return stack_bytes_of<__half>(bytes);
}
