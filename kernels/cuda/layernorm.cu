/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/layernorm.cu: LayerNorm with fp32 statistics, one warp per
 * row; the residual add that ends a branch fused with the next norm; the
 * backward as llm.c's (row terms per warp), the weight and bias gradients
 * as deterministic two-stage column sums over the whole GPU (reduce.cuh). */
#include "config.h"

#include "kernels/cuda/reduce.cuh"

/* x_out = x + y + bias (when y), out = LN(x_out or x) */
template <typename T>
__global__ void layernorm_fwd_kernel(T *x_out, T *out, float *mean, float *rstd, const T *x, const T *y,
                                     const float *bias, const float *w, const float *b, int BT, int C, float eps)
{
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= BT)
    return;
  const T *xr = x + (size_t)row * C;
  float sum = 0, sum2 = 0, m, s;
  for (int c = lane; c < C; c += 32) {
    float v = to_float(xr[c]);
    if (y) {
      v += to_float(y[(size_t)row * C + c]) + (bias ? bias[c] : 0.0f);
      x_out[(size_t)row * C + c] = from_float<T>(v);
      v = to_float(x_out[(size_t)row * C + c]); /* normalise what is stored */
    }
    sum += v;
  }
  m = warp_sum(sum) / C;
  for (int c = lane; c < C; c += 32) {
    const float v = to_float((y ? x_out : x)[(size_t)row * C + c]) - m;
    sum2 += v * v;
  }
  s = rsqrtf(warp_sum(sum2) / C + eps);
  for (int c = lane; c < C; c += 32) {
    const float v = to_float((y ? x_out : x)[(size_t)row * C + c]);
    out[(size_t)row * C + c] = from_float<T>((v - m) * s * w[c] + b[c]);
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

template <typename T>
static int layernorm_fwd(void *x_out, void *out, float *mean, float *rstd, const void *x, const void *y,
                         const float *bias, const float *w, const float *b, int BT, int C, float eps, cudaStream_t s)
{
  layernorm_fwd_kernel<T><<<(BT + 7) / 8, 256, 0, s>>>((T *)x_out, (T *)out, mean, rstd, (const T *)x, (const T *)y,
                                                        bias, w, b, BT, C, eps);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}

extern "C" int dl_layernorm_fwd(void *out, float *mean, float *rstd, const void *inp, const float *w, const float *b,
                                int BT, int C, float eps, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, layernorm_fwd, (void *)NULL, out, mean, rstd, inp, (const void *)NULL, (const float *)NULL, w,
                     b, BT, C, eps, s);
}

extern "C" int dl_residual_layernorm_fwd(void *x_out, void *out, float *mean, float *rstd, const void *x,
                                         const void *y, const float *bias, const float *w, const float *b, int BT,
                                         int C, float eps, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, layernorm_fwd, x_out, out, mean, rstd, x, y, bias, w, b, BT, C, eps, s);
}

template <typename T>
__global__ void layernorm_bwd_rows_kernel(T *dinp, const T *dout, const T *inp, const float *w, const float *mean,
                                          const float *rstd, int BT, int C)
{
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= BT)
    return;
  const size_t base = (size_t)row * C;
  float dnorm_mean = 0, dnorm_norm_mean = 0;
  for (int c = lane; c < C; c += 32) {
    const float norm = (to_float(inp[base + c]) - mean[row]) * rstd[row];
    const float dnorm = to_float(dout[base + c]) * w[c];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * norm;
  }
  dnorm_mean = warp_sum(dnorm_mean) / C;
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / C;
  for (int c = lane; c < C; c += 32) {
    const float norm = (to_float(inp[base + c]) - mean[row]) * rstd[row];
    const float dnorm = to_float(dout[base + c]) * w[c];
    dinp[base + c] = from_float<T>(to_float(dinp[base + c]) + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[row]);
  }
}

/* dw[c] += sum_r dout * norm, db[c] += sum_r dout: reduce.cuh's two stages */
template <typename T> struct ln_param_term {
  const T *dout, *inp;
  const float *mean, *rstd;
  int cols;
  __device__ void add(float *acc, int row, int col) const
  {
    const size_t at = (size_t)row * cols + col;
    const float d = to_float(dout[at]);
    acc[0] += d * (to_float(inp[at]) - mean[row]) * rstd[row];
    acc[1] += d;
  }
};

template <typename T>
static int layernorm_bwd(void *dinp, float *dw, float *db, const void *dout, const void *inp, const float *w,
                         const float *mean, const float *rstd, int BT, int C, float *partials, cudaStream_t s)
{
  const ln_param_term<T> term = {(const T *)dout, (const T *)inp, mean, rstd, C};
  float *const grads[2] = {dw, db};
  layernorm_bwd_rows_kernel<T><<<(BT + 7) / 8, 256, 0, s>>>((T *)dinp, (const T *)dout, (const T *)inp, w, mean, rstd,
                                                             BT, C);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return column_reduce<2>(grads, 1, term, BT, C, partials, s);
}

extern "C" int dl_layernorm_bwd(void *dinp, float *dw, float *db, const void *dout, const void *inp, const float *w,
                                const float *mean, const float *rstd, int BT, int C, float *partials, dl_dtype act,
                                cudaStream_t s)
{
  return DL_DISPATCH(act, layernorm_bwd, dinp, dw, db, dout, inp, w, mean, rstd, BT, C, partials, s);
}
