/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/attention_mma.cu: fp32 flash attention on tensor cores, the
 * dl_attention_tc_* functions, in 3xTF32, which is fp32-accurate, or in
 * plain TF32. It sits beside attention.cu's fp32 FMA kernels. It holds the
 * kernels and launches around attention_mma_tiles.cuh's block code, and
 * that code's context on the GPU: the inline PTX of mma.sync m16n8k8 TF32,
 * cvt.rna.tf32.f32 and cp.async, the quad shuffle, and dq's turns. It
 * needs sm_80 or later. Heads go up to 128 dims, padded as at_padded_head.
 * A block takes up to 224.5 KB of shared memory, for the backward at 128
 * dims. The forward takes 192 there, and at 48 dims they take 112.5 and
 * 72, as dl_attention_tc_shared_bytes says. sm_90 allows 227 and an A100
 * 163, so an A100 serves up to 64 dims. The forward's blocks are 64 query
 * rows, or 128 at 128 dims, as am_sizes' FWD_ROWS says. The backward is
 * one kernel and deterministic, because dq is summed in a fixed order by
 * the turns in dl_attention_tc_scratch_bytes. */
#include "config.h"

#include <initializer_list>

#include "kernels/cuda/attention_mma_tiles.cuh"

/* The block code's context on the GPU: common.cuh's, which gives the
 * thread, the barrier and the shuffle, and the tensor cores' own. The host
 * bodies are never run, because the kernels are the only callers. */
struct am_device_ctx : gpu_block_ctx {
  /* round to TF32: nearest, ties away from zero, the low 13 bits zero */
  __host__ __device__ float tf32(float x) const
  {
#ifdef __CUDA_ARCH__
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
#else
    return x;
#endif
  }
  /* d += a b: one warp-wide 16 x 8 x 8 TF32 MMA, fp32 accumulators */
  __host__ __device__ void mma(float (&d)[4], const float (&a)[4], const float (&b)[2]) const
  {
#ifdef __CUDA_ARCH__
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "r"(__float_as_uint(b[0])), "r"(__float_as_uint(b[1])));
#else
    (void)d, (void)a, (void)b;
#endif
  }
  /* W floats, 4 or 1, from global to shared memory, asynchronously until
   * wait_copies. Where !inside it writes zeros and does not read src. */
  template <int W> __host__ __device__ void copy(float *dst, const float *src, bool inside) const
  {
#ifdef __CUDA_ARCH__
    const unsigned to = (unsigned)__cvta_generic_to_shared(dst);
    if constexpr (W == 4)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(to), "l"(src), "r"(inside ? 16 : 0)
                   : "memory");
    else
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(to), "l"(src), "r"(inside ? 4 : 0)
                   : "memory");
#else
    (void)dst, (void)src, (void)inside;
#endif
  }
  /* this thread's copies have landed, and the block's after a sync */
  __host__ __device__ void wait_copies() const
  {
#ifdef __CUDA_ARCH__
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
  }
  /* the block waits until *turn == value, with acquire semantics */
  __host__ __device__ void wait_turn(const int *turn, int value) const
  {
#ifdef __CUDA_ARCH__
    if (tid == 0) {
      int now;
      for (;;) {
        asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(now) : "l"(turn) : "memory");
        if (now == value)
          break;
        __nanosleep(64);
      }
    }
    __syncthreads();
#else
    (void)turn, (void)value;
#endif
  }
  /* after the block's stores and adds, *turn = value with release semantics */
  __host__ __device__ void pass_turn(int *turn, int value) const
  {
#ifdef __CUDA_ARCH__
    __syncthreads();
    if (tid == 0) {
      __threadfence();
      asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(turn), "r"(value) : "memory");
    }
#else
    (void)turn, (void)value;
#endif
  }
  __host__ __device__ void store(float *p, float v) const { *p = v; }
  __host__ __device__ void add(float *p, float v) const
  {
#ifdef __CUDA_ARCH__
    atomicAdd(p, v); /* the result unused: a reduction in L2, ordered by the turns */
#else
    *p += v;
#endif
  }
};

template <int HDP, int PASSES>
__global__ void __launch_bounds__(am_sizes<HDP, PASSES>::FWD_THREADS, HDP <= 48 ? 3 : HDP <= 64 ? 2 : 1)
    attention_tc_fwd_kernel(float *o, float *lse, const float *q, const float *k, const float *v, am_shape a)
{
  extern __shared__ float4 am_smem[];
  am_forward_block<HDP, PASSES>(am_device_ctx{{(int)threadIdx.x}}, (float *)am_smem,
                                (int)blockIdx.x * am_sizes<HDP, PASSES>::FWD_ROWS, (int)blockIdx.y, o, lse, q, k, v, a);
}

template <int HDP, int PASSES>
__global__ void __launch_bounds__(am_sizes<HDP, PASSES>::BWD_THREADS, am_sizes<HDP, PASSES>::ROLES == 1 ? 2 : 1)
    attention_tc_bwd_kernel(float *dq, float *dk, float *dv, const float *q, const float *k, const float *v,
                            const float *dout, const float *lse, const float *delta, int *turns, am_shape a)
{
  extern __shared__ float4 am_smem[];
  am_backward_block<HDP, PASSES>(am_device_ctx{{(int)threadIdx.x}}, (float *)am_smem, (int)blockIdx.x,
                                 (int)blockIdx.y, dq, dk, dv, q, k, v, dout, lse, delta, turns, a, 0, 1);
}

/* Launches kernel on a grid of row blocks of `rows` each by heads, in
 * blocks of `threads` with `floats` of shared memory. The memory is
 * allowed above the default 48 KB through a function attribute, which is
 * not a stream operation and so is allowed while a graph is captured. */
template <typename Kernel, typename... Args>
static int launch(Kernel kernel, int threads, int floats, int rows, int B, const am_shape &a, cudaStream_t s,
                  Args... args)
{
  const dim3 grid((unsigned)((a.N + rows - 1) / rows), (unsigned)(B * a.NH));
  DL_TRY_CUDA(cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   floats * (int)sizeof(float)));
  kernel<<<grid, threads, floats * sizeof(float), s>>>(args...);
  DL_TRY_LAUNCH();
  return 0;
}

template <int HDP>
static int forward_at(float *o, float *lse, const float *q, const float *k, const float *v, int B, const am_shape &a,
                      int passes, cudaStream_t s)
{
  typedef am_sizes<HDP, 3> S3;
  typedef am_sizes<HDP, 1> S1;
  if (passes == 3)
    return launch(attention_tc_fwd_kernel<HDP, 3>, S3::FWD_THREADS, S3::FWD, S3::FWD_ROWS, B, a, s, o, lse, q, k, v, a);
  return launch(attention_tc_fwd_kernel<HDP, 1>, S1::FWD_THREADS, S1::FWD, S1::FWD_ROWS, B, a, s, o, lse, q, k, v, a);
}

/* The shape, or a refusal: heads of 1..128 dims, 1 or 3 passes. */
static int shape_of(am_shape *a, int B, int N, int NH, int HD, float scale, int passes,
                    std::initializer_list<const void *> tensors)
{
  if (B < 1 || N < 1 || NH < 1 || !at_padded_head(HD) || (passes != 1 && passes != 3))
    return (int)cudaErrorInvalidValue;
  *a = {{N, NH, HD, scale}, true};
  for (const void *p : tensors)
    a->vec = a->vec && am_rows_aligned(p, HD);
  return 0;
}

extern "C" int dl_attention_tc_fwd(float *o, float *lse, const float *q, const float *k, const float *v, int B, int N,
                                   int NH, int HD, float scale, int passes, cudaStream_t s)
{
  am_shape a;
  DL_TRY(shape_of(&a, B, N, NH, HD, scale, passes, {q, k, v}));
  switch (at_padded_head(HD)) {
  case 16: return forward_at<16>(o, lse, q, k, v, B, a, passes, s);
  case 32: return forward_at<32>(o, lse, q, k, v, B, a, passes, s);
  case 48: return forward_at<48>(o, lse, q, k, v, B, a, passes, s);
  case 64: return forward_at<64>(o, lse, q, k, v, B, a, passes, s);
  default: return forward_at<128>(o, lse, q, k, v, B, a, passes, s);
  }
}

template <int HDP>
static int backward_at(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                       const float *v, const float *lse, const float *delta, int *turns, int B, const am_shape &a,
                       int passes, cudaStream_t s)
{
  typedef am_sizes<HDP, 3> S3;
  typedef am_sizes<HDP, 1> S1;
  if (passes == 3)
    return launch(attention_tc_bwd_kernel<HDP, 3>, S3::BWD_THREADS, S3::BWD, AM_ROWS, B, a, s, dq, dk, dv, q, k, v,
                  dout, lse, delta, turns, a);
  return launch(attention_tc_bwd_kernel<HDP, 1>, S1::BWD_THREADS, S1::BWD, AM_ROWS, B, a, s, dq, dk, dv, q, k, v,
                dout, lse, delta, turns, a);
}

extern "C" size_t dl_attention_tc_scratch_bytes(int B, int N, int NH, int HD)
{
  (void)HD; /* a step is 64 query rows at every head size */
  return (size_t)B * NH * ((N + AM_ROWS - 1) / AM_ROWS) * sizeof(int);
}

extern "C" int dl_attention_tc_bwd(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                                   const float *v, const float *o, const float *lse, float *delta, void *scratch,
                                   int B, int N, int NH, int HD, float scale, int passes, cudaStream_t s)
{
  am_shape a;
  int *turns = (int *)scratch;
  DL_TRY(shape_of(&a, B, N, NH, HD, scale, passes, {dout, q, k, v}));
  delta_kernel<float><<<dl_blocks((size_t)B * NH * N, 256), 256, 0, s>>>(delta, dout, o, B, a);
  DL_TRY_LAUNCH();
  DL_TRY_CUDA(cudaMemsetAsync(turns, 0, dl_attention_tc_scratch_bytes(B, N, NH, HD), s));
  switch (at_padded_head(HD)) {
  case 16: return backward_at<16>(dq, dk, dv, dout, q, k, v, lse, delta, turns, B, a, passes, s);
  case 32: return backward_at<32>(dq, dk, dv, dout, q, k, v, lse, delta, turns, B, a, passes, s);
  case 48: return backward_at<48>(dq, dk, dv, dout, q, k, v, lse, delta, turns, B, a, passes, s);
  case 64: return backward_at<64>(dq, dk, dv, dout, q, k, v, lse, delta, turns, B, a, passes, s);
  default: return backward_at<128>(dq, dk, dv, dout, q, k, v, lse, delta, turns, B, a, passes, s);
  }
}

extern "C" int dl_attention_tc_shared_bytes(int HD, size_t *bytes)
{
  if (!at_padded_head(HD))
    return (int)cudaErrorInvalidValue;
  const int hdp = at_padded_head(HD), fwd = am_forward_floats(hdp, 3), bwd = am_backward_floats(hdp, 3);
  *bytes = (size_t)(fwd > bwd ? fwd : bwd) * sizeof(float); /* 3xTF32's, the larger */
  return 0;
}
