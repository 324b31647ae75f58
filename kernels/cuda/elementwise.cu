/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/elementwise.cu: the pointwise and data-movement ops. They are
 * casts, the residual stream's start as tokens plus position embedding,
 * the embedding's gradient, bias planes as the GEMMs' fallback, exact
 * GELU, column sums for bias gradients, and patchify and unpatchify. The
 * loops are grid-stride, over elements, or over rows where an element's
 * row would cost a 64-bit division. Casts and GELU take 4 values a thread
 * through map_values where the pointers allow, which is 16 bytes of fp32
 * or 8 of 16-bit values. The column sums are deterministic, through
 * reduce.cuh's two stages in a fixed order. */
#include "config.h"

#include "kernels/cuda/reduce.cuh"

/* out[i] = f(a[i]), or f(a[i], b[i]), for i < n in fp32. A thread takes V
 * values at a time through load_vec, then the tail of n % V one at a time. */
template <int V, typename TO, typename TA, typename TB, typename F>
__device__ void map_values(TO *out, const TA *a, const TB *b, size_t n, F f)
{
  const size_t first = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  for (size_t g = first; g < n / V; g += stride) {
    float x[V], y[V] = {};
    load_vec<V>(x, a + g * V);
    if (b)
      load_vec<V>(y, b + g * V);
    for (int i = 0; i < V; i++)
      x[i] = f(x[i], y[i]);
    store_vec<V>(out + g * V, x);
  }
  for (size_t i = n / V * V + first; i < n; i += stride)
    out[i] = from_float<TO>(f(to_float(a[i]), b ? to_float(b[i]) : 0.0f));
}

/* 4 values a thread where every pointer allows, else 1. */
template <typename TO, typename TA, typename TB> static int map_width(const TO *out, const TA *a, const TB *b)
{
  return vec_aligned<4>(out) && vec_aligned<4>(a) && vec_aligned<4>(b) ? 4 : 1;
}

struct identity_op {
  __device__ float operator()(float x, float) const { return x; }
};

template <int V, typename D, typename S> __global__ void cast_kernel(D *dst, const S *src, size_t n)
{
  map_values<V>(dst, src, (const S *)NULL, n, identity_op());
}

template <typename D, typename S> static int cast_as(D *dst, const S *src, size_t n, cudaStream_t s)
{
  const int width = map_width(dst, src, src);
  const auto kernel = width == 4 ? cast_kernel<4, D, S> : cast_kernel<1, D, S>;
  kernel<<<dl_blocks(n / width, 256), 256, 0, s>>>(dst, src, n);
  DL_TRY_LAUNCH();
  return 0;
}

template <typename D> static int cast_from(D *dst, const void *src, dl_dtype src_type, size_t n, cudaStream_t s)
{
  if (src_type == DL_F32)
    return cast_as(dst, (const float *)src, n, s);
  if (src_type == DL_BF16)
    return cast_as(dst, (const __nv_bfloat16 *)src, n, s);
  return cast_as(dst, (const __half *)src, n, s);
}

extern "C" int dl_cast(void *dst, dl_dtype dst_type, const void *src, dl_dtype src_type, size_t n, cudaStream_t s)
{
  if (dst_type == DL_F32)
    return cast_from((float *)dst, src, src_type, n, s);
  if (dst_type == DL_BF16)
    return cast_from((__nv_bfloat16 *)dst, src, src_type, n, s);
  return cast_from((__half *)dst, src, src_type, n, s);
}

/* Blocks for a kernel that gives each block whole rows, grid-stride over
 * rows. A row's index math, 64-bit where a count of rows may pass 2^31, is
 * done once a row. */
static unsigned row_blocks(size_t rows)
{
  return (unsigned)(rows < 65535u * 16u ? (rows > 0 ? rows : 1) : 65535u * 16u);
}

/* A block per token row computes the row's position, a 64-bit offset, once,
 * and the threads take the columns. */
template <typename T> __global__ void embed_tokens_kernel(float *x, const T *tokens, const float *pos, int rows, int N,
                                                          int D)
{
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const size_t base = (size_t)r * D;
    const float *pos_row = pos + (size_t)(r % N) * D;
    for (int c = threadIdx.x; c < D; c += blockDim.x)
      x[base + c] = to_float(tokens[base + c]) + pos_row[c];
  }
}

template <typename T>
static int embed_tokens(float *x, const void *tokens, const float *pos, int B, int N, int D, cudaStream_t s)
{
  embed_tokens_kernel<T><<<row_blocks(B * N), 128, 0, s>>>(x, (const T *)tokens, pos, B * N, N, D);
  DL_TRY_LAUNCH();
  return 0;
}

extern "C" int dl_embed_tokens(float *x, const void *tokens, const float *pos, int B, int N, int D, dl_dtype act,
                               cudaStream_t s)
{
  return DL_DISPATCH(act, embed_tokens, x, tokens, pos, B, N, D, s);
}

/* Plane p of out, rows x cols, += bias_p in each row, with a block per row
 * of all the planes' rows. */
template <typename T> __global__ void add_bias_planes_kernel(T *out, const T *bias, int planes, int rows, int cols)
{
  for (size_t r = blockIdx.x; r < (size_t)planes * rows; r += gridDim.x) {
    T *row = out + (size_t)r * cols;
    const T *plane_bias = bias + (size_t)(r / rows) * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
      row[c] = from_float<T>(to_float(row[c]) + to_float(plane_bias[c]));
  }
}

template <typename T>
static int add_bias_planes(void *out, const void *bias, int planes, int rows, int cols, cudaStream_t s)
{
  add_bias_planes_kernel<T><<<row_blocks((size_t)planes * rows), 128, 0, s>>>((T *)out, (const T *)bias, planes, rows, cols);
  DL_TRY_LAUNCH();
  return 0;
}

extern "C" int dl_add_bias_planes(void *out, const void *bias, int planes, int rows, int cols, dl_dtype act,
                                  cudaStream_t s)
{
  return DL_DISPATCH(act, add_bias_planes, out, bias, planes, rows, cols, s);
}

__global__ void pos_grad_kernel(float *dpos, const float *dx, int B, int N, int D)
{
  const size_t n = (size_t)N * D;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float sum = 0;
    for (int b = 0; b < B; b++)
      sum += dx[(size_t)b * n + i];
    dpos[i] += sum;
  }
}

extern "C" int dl_pos_embed_bwd(float *dpos, const float *dx, int B, int N, int D, cudaStream_t s)
{
  pos_grad_kernel<<<dl_blocks((size_t)N * D, 256), 256, 0, s>>>(dpos, dx, B, N, D);
  DL_TRY_LAUNCH();
  return 0;
}

/* exact GELU: x/2 (1 + erf(x / sqrt 2)) */
struct gelu_op {
  __device__ float operator()(float x, float) const { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
};

/* GELU's tanh approximation, cuBLASLt's epilogue's:
 * x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
struct gelu_tanh_op {
  __device__ float operator()(float x, float) const
  {
    return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  }
};

/* dout * GELU'(x) */
struct gelu_grad_op {
  __device__ float operator()(float x, float dout) const
  {
    const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
    return dout * (cdf + x * pdf);
  }
};

template <int V, typename T, typename F> __global__ void gelu_kernel(T *out, const T *inp, const T *dout, size_t n)
{
  map_values<V>(out, inp, dout, n, F());
}

template <typename T, typename F> static int gelu_map(T *out, const T *inp, const T *dout, size_t n, cudaStream_t s)
{
  const int width = map_width(out, inp, dout);
  const auto kernel = width == 4 ? gelu_kernel<4, T, F> : gelu_kernel<1, T, F>;
  kernel<<<dl_blocks(n / width, 256), 256, 0, s>>>(out, inp, dout, n);
  DL_TRY_LAUNCH();
  return 0;
}

template <typename T> static int gelu_fwd(void *out, const void *inp, size_t n, cudaStream_t s)
{
  return gelu_map<T, gelu_op>((T *)out, (const T *)inp, (const T *)NULL, n, s);
}

template <typename T> static int gelu_tanh_fwd(void *out, const void *inp, size_t n, cudaStream_t s)
{
  return gelu_map<T, gelu_tanh_op>((T *)out, (const T *)inp, (const T *)NULL, n, s);
}

template <typename T> static int gelu_bwd(void *dinp, const void *inp, const void *dout, size_t n, cudaStream_t s)
{
  return gelu_map<T, gelu_grad_op>((T *)dinp, (const T *)inp, (const T *)dout, n, s);
}

extern "C" int dl_gelu_fwd(void *out, const void *inp, size_t n, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, gelu_fwd, out, inp, n, s);
}

extern "C" int dl_gelu_tanh_fwd(void *out, const void *inp, size_t n, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, gelu_tanh_fwd, out, inp, n, s);
}

extern "C" int dl_gelu_bwd(void *dinp, const void *inp, const void *dout, size_t n, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, gelu_bwd, dinp, inp, dout, n, s);
}

/* Column sums for bias gradients, through the two-stage reduction of reduce.cuh. */
template <typename T>
static int column_sum(float *sum, int accumulate, const void *x, int rows, int cols, float *partials, cudaStream_t s)
{
  const column_value_term<T> term = {(const T *)x, cols};
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

/* The image kernels take a pixel row b, c, y per block. The row's 64-bit
 * offsets are computed once, and the threads take its W pixels with 32-bit
 * arithmetic. */
struct pixel_row {
  int b, c, y;
  __device__ pixel_row(size_t r, int C, int H) : b((int)(r / ((size_t)H * C))), c((int)(r / H % C)), y((int)(r % H)) {}
};

/* patches[(b, i, j), (c, a, e)] = img[b, c, i*P + a, j*P + e] */
template <typename T> __global__ void patchify_kernel(T *patches, const float *img, int B, int C, int H, int W, int P)
{
  const int hp = H / P, wp = W / P, K = C * P * P;
  for (size_t r = blockIdx.x; r < (size_t)B * C * H; r += gridDim.x) {
    const pixel_row px(r, C, H);
    const float *src = img + (size_t)r * W;
    T *dst = patches + ((size_t)px.b * hp + px.y / P) * wp * K + px.c * P * P + px.y % P * P;
    for (int x = threadIdx.x; x < W; x += blockDim.x)
      dst[(size_t)(x / P) * K + x % P] = from_float<T>(src[x]);
  }
}

template <typename T> static int patchify(void *patches, const float *img, int B, int C, int H, int W, int P,
                                          cudaStream_t s)
{
  patchify_kernel<T><<<row_blocks((size_t)B * C * H), 256, 0, s>>>((T *)patches, img, B, C, H, W, P);
  DL_TRY_LAUNCH();
  return 0;
}

extern "C" int dl_patchify(void *patches, const float *img, int B, int C, int H, int W, int P, dl_dtype act,
                           cudaStream_t s)
{
  return DL_DISPATCH(act, patchify, patches, img, B, C, H, W, P, s);
}

/* pixel (b, c, y, x) <-> token (b, y/P, x/P), entry ((y%P)*P + x%P)*C + c:
 * the offset of row px's first pixel; pixel x adds head_column(x). */
__device__ __forceinline__ size_t head_row(const pixel_row &px, int C, int H, int W, int P)
{
  const int hp = H / P, wp = W / P;
  return ((size_t)px.b * hp + px.y / P) * wp * ((size_t)P * P * C) + (size_t)(px.y % P) * P * C + px.c;
}

__device__ __forceinline__ size_t head_column(int x, int C, int P)
{
  return (size_t)(x / P) * P * P * C + x % P * C;
}

template <typename T> __global__ void unpatchify_kernel(float *img, const T *tokens, int B, int C, int H, int W, int P)
{
  for (size_t r = blockIdx.x; r < (size_t)B * C * H; r += gridDim.x) {
    const pixel_row px(r, C, H);
    const T *src = tokens + head_row(px, C, H, W, P);
    float *dst = img + (size_t)r * W;
    for (int x = threadIdx.x; x < W; x += blockDim.x)
      dst[x] = to_float(src[head_column(x, C, P)]);
  }
}

template <typename T> __global__ void unpatchify_bwd_kernel(T *dtokens, const float *dimg, int B, int C, int H, int W,
                                                            int P)
{
  for (size_t r = blockIdx.x; r < (size_t)B * C * H; r += gridDim.x) {
    const pixel_row px(r, C, H);
    T *dst = dtokens + head_row(px, C, H, W, P);
    const float *src = dimg + (size_t)r * W;
    for (int x = threadIdx.x; x < W; x += blockDim.x)
      dst[head_column(x, C, P)] = from_float<T>(src[x]);
  }
}

template <typename T> static int unpatchify(float *img, const void *tokens, int B, int C, int H, int W, int P,
                                            cudaStream_t s)
{
  unpatchify_kernel<T><<<row_blocks((size_t)B * C * H), 256, 0, s>>>(img, (const T *)tokens, B, C, H, W, P);
  DL_TRY_LAUNCH();
  return 0;
}

template <typename T> static int unpatchify_bwd(void *dtokens, const float *dimg, int B, int C, int H, int W, int P,
                                                cudaStream_t s)
{
  unpatchify_bwd_kernel<T><<<row_blocks((size_t)B * C * H), 256, 0, s>>>((T *)dtokens, dimg, B, C, H, W, P);
  DL_TRY_LAUNCH();
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
