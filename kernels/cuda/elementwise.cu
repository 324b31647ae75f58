/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/elementwise.cu: the pointwise and data-movement ops: casts,
 * position embedding and its gradient, bias planes (the GEMMs' fallback),
 * exact GELU, column
 * sums (bias gradients), patchify / unpatchify. Grid-stride loops; the
 * column sums are deterministic (reduce.cuh's two stages, fixed order). */
#include "config.h"

#include "kernels/cuda/reduce.cuh"

template <typename D, typename S> __global__ void cast_kernel(D *dst, const S *src, size_t n)
{
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = from_float<D>(to_float(src[i]));
}

template <typename D> static int cast_from(D *dst, const void *src, dl_dtype src_type, size_t n, cudaStream_t s)
{
  if (src_type == DL_F32)
    cast_kernel<D, float><<<dl_blocks(n, 256), 256, 0, s>>>(dst, (const float *)src, n);
  else if (src_type == DL_BF16)
    cast_kernel<D, __nv_bfloat16><<<dl_blocks(n, 256), 256, 0, s>>>(dst, (const __nv_bfloat16 *)src, n);
  else
    cast_kernel<D, __half><<<dl_blocks(n, 256), 256, 0, s>>>(dst, (const __half *)src, n);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}

extern "C" int dl_cast(void *dst, dl_dtype dst_type, const void *src, dl_dtype src_type, size_t n, cudaStream_t s)
{
  if (dst_type == DL_F32)
    return cast_from((float *)dst, src, src_type, n, s);
  if (dst_type == DL_BF16)
    return cast_from((__nv_bfloat16 *)dst, src, src_type, n, s);
  return cast_from((__half *)dst, src, src_type, n, s);
}

template <typename T> __global__ void add_pos_kernel(T *x, const float *pos, size_t rows, int N, int D)
{
  const size_t n = rows * D;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const size_t token = (i / D) % N;
    x[i] = from_float<T>(to_float(x[i]) + pos[token * D + i % D]);
  }
}

template <typename T> static int add_pos(void *x, const float *pos, int B, int N, int D, cudaStream_t s)
{
  const size_t n = (size_t)B * N * D;
  add_pos_kernel<T><<<dl_blocks(n, 256), 256, 0, s>>>((T *)x, pos, (size_t)B * N, N, D);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}

extern "C" int dl_add_pos_embed(void *x, const float *pos, int B, int N, int D, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, add_pos, x, pos, B, N, D, s);
}

/* plane p of out (rows x cols) += bias_p in each row */
template <typename T> __global__ void add_bias_planes_kernel(T *out, const T *bias, size_t planes, int rows, int cols)
{
  const size_t n = planes * rows * cols;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const size_t p = i / ((size_t)rows * cols);
    out[i] = from_float<T>(to_float(out[i]) + to_float(bias[p * cols + i % cols]));
  }
}

template <typename T>
static int add_bias_planes(void *out, const void *bias, int planes, int rows, int cols, cudaStream_t s)
{
  const size_t n = (size_t)planes * rows * cols;
  add_bias_planes_kernel<T><<<dl_blocks(n, 256), 256, 0, s>>>((T *)out, (const T *)bias, (size_t)planes, rows, cols);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}

extern "C" int dl_add_bias_planes(void *out, const void *bias, int planes, int rows, int cols, dl_dtype act,
                                  cudaStream_t s)
{
  return DL_DISPATCH(act, add_bias_planes, out, bias, planes, rows, cols, s);
}

template <typename T> __global__ void pos_grad_kernel(float *dpos, const T *dx, int B, int N, int D)
{
  const size_t n = (size_t)N * D;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float sum = 0;
    for (int b = 0; b < B; b++)
      sum += to_float(dx[(size_t)b * n + i]);
    dpos[i] += sum;
  }
}

template <typename T> static int pos_grad(float *dpos, const void *dx, int B, int N, int D, cudaStream_t s)
{
  pos_grad_kernel<T><<<dl_blocks((size_t)N * D, 256), 256, 0, s>>>(dpos, (const T *)dx, B, N, D);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}

extern "C" int dl_pos_embed_bwd(float *dpos, const void *dx, int B, int N, int D, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, pos_grad, dpos, dx, B, N, D, s);
}

/* exact GELU: x/2 (1 + erf(x / sqrt 2)) */
template <typename T> __global__ void gelu_fwd_kernel(T *out, const T *inp, size_t n)
{
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float x = to_float(inp[i]);
    out[i] = from_float<T>(0.5f * x * (1.0f + erff(x * 0.70710678118654752f)));
  }
}

template <typename T> __global__ void gelu_bwd_kernel(T *dinp, const T *inp, const T *dout, size_t n)
{
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float x = to_float(inp[i]);
    const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
    dinp[i] = from_float<T>(to_float(dout[i]) * (cdf + x * pdf));
  }
}

template <typename T> static int gelu_fwd(void *out, const void *inp, size_t n, cudaStream_t s)
{
  gelu_fwd_kernel<T><<<dl_blocks(n, 256), 256, 0, s>>>((T *)out, (const T *)inp, n);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}

template <typename T> static int gelu_bwd(void *dinp, const void *inp, const void *dout, size_t n, cudaStream_t s)
{
  gelu_bwd_kernel<T><<<dl_blocks(n, 256), 256, 0, s>>>((T *)dinp, (const T *)inp, (const T *)dout, n);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}

extern "C" int dl_gelu_fwd(void *out, const void *inp, size_t n, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, gelu_fwd, out, inp, n, s);
}

extern "C" int dl_gelu_bwd(void *dinp, const void *inp, const void *dout, size_t n, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, gelu_bwd, dinp, inp, dout, n, s);
}

/* Column sums (bias gradients) through the two-stage reduction of reduce.cuh. */
template <typename T> struct column_term {
  const T *x;
  int cols;
  __device__ void add(float *acc, int row, int col) const { acc[0] += to_float(x[(size_t)row * cols + col]); }
};

template <typename T>
static int column_sum(float *sum, int accumulate, const void *x, int rows, int cols, float *partials, cudaStream_t s)
{
  const column_term<T> term = {(const T *)x, cols};
  return column_reduce<1>(&sum, accumulate, term, rows, cols, partials, s);
}

extern "C" size_t dl_column_partials_bytes(int rows, int cols)
{
  return sizeof(float) * (size_t)reduce_chunks(rows) * (size_t)cols;
}

extern "C" int dl_column_sum(float *sum, int accumulate, const void *x, int rows, int cols, float *partials,
                             dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, column_sum, sum, accumulate, x, rows, cols, partials, s);
}

/* patches[(b, i, j), (c, a, e)] = img[b, c, i*P + a, j*P + e] */
template <typename T> __global__ void patchify_kernel(T *patches, const float *img, int B, int C, int H, int W, int P)
{
  const int hp = H / P, wp = W / P, K = C * P * P;
  const size_t n = (size_t)B * hp * wp * K;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const int entry = (int)(i % K), e = entry % P, a = (entry / P) % P, c = entry / (P * P);
    const size_t token = i / K;
    const int j = (int)(token % wp), ti = (int)((token / wp) % hp), b = (int)(token / ((size_t)wp * hp));
    patches[i] = from_float<T>(img[(((size_t)b * C + c) * H + (size_t)ti * P + a) * W + (size_t)j * P + e]);
  }
}

template <typename T> static int patchify(void *patches, const float *img, int B, int C, int H, int W, int P,
                                          cudaStream_t s)
{
  patchify_kernel<T><<<dl_blocks((size_t)B * C * H * W, 256), 256, 0, s>>>((T *)patches, img, B, C, H, W, P);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}

extern "C" int dl_patchify(void *patches, const float *img, int B, int C, int H, int W, int P, dl_dtype act,
                           cudaStream_t s)
{
  return DL_DISPATCH(act, patchify, patches, img, B, C, H, W, P, s);
}

/* pixel (b, c, y, x) <-> token (b, y/P, x/P), entry ((y%P)*P + x%P)*C + c */
__device__ __forceinline__ size_t token_entry(size_t pixel, int C, int H, int W, int P)
{
  const int x = (int)(pixel % W), y = (int)((pixel / W) % H), c = (int)((pixel / ((size_t)W * H)) % C);
  const size_t b = pixel / ((size_t)W * H * C);
  const int hp = H / P, wp = W / P;
  return (b * hp * wp + (size_t)(y / P) * wp + x / P) * ((size_t)P * P * C) + ((size_t)(y % P) * P + x % P) * C + c;
}

template <typename T> __global__ void unpatchify_kernel(float *img, const T *tokens, int B, int C, int H, int W, int P)
{
  const size_t n = (size_t)B * C * H * W;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    img[i] = to_float(tokens[token_entry(i, C, H, W, P)]);
}

template <typename T> __global__ void unpatchify_bwd_kernel(T *dtokens, const float *dimg, int B, int C, int H, int W,
                                                            int P)
{
  const size_t n = (size_t)B * C * H * W;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dtokens[token_entry(i, C, H, W, P)] = from_float<T>(dimg[i]);
}

template <typename T> static int unpatchify(float *img, const void *tokens, int B, int C, int H, int W, int P,
                                            cudaStream_t s)
{
  unpatchify_kernel<T><<<dl_blocks((size_t)B * C * H * W, 256), 256, 0, s>>>(img, (const T *)tokens, B, C, H, W, P);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}

template <typename T> static int unpatchify_bwd(void *dtokens, const float *dimg, int B, int C, int H, int W, int P,
                                                cudaStream_t s)
{
  unpatchify_bwd_kernel<T><<<dl_blocks((size_t)B * C * H * W, 256), 256, 0, s>>>((T *)dtokens, dimg, B, C, H, W, P);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}

extern "C" int dl_unpatchify(float *img, const void *tokens, int B, int C, int H, int W, int P, dl_dtype act,
                             cudaStream_t s)
{
  return DL_DISPATCH(act, unpatchify, img, tokens, B, C, H, W, P, s);
}

extern "C" int dl_unpatchify_bwd(void *dtokens, const float *dimg, int B, int C, int H, int W, int P, dl_dtype act,
                                 cudaStream_t s)
{
  return DL_DISPATCH(act, unpatchify_bwd, dtokens, dimg, B, C, H, W, P, s);
}
