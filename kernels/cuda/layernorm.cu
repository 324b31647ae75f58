/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/layernorm.cu: LayerNorm with fp32 statistics, one warp per
 * row, over the fp32 residual stream; the residual add that ends a branch
 * fused with the next norm; the backward as llm.c's (row terms per warp),
 * accumulating the stream's fp32 gradient, the weight and bias gradients
 * as deterministic two-stage column sums over the whole GPU (reduce.cuh). */
#include "config.h"

#include "kernels/cuda/reduce.cuh"

/* x_out = x + y + bias (when y), out = LN(x_out or x). The residual stream
 * (x, x_out) is fp32 in every precision, as PyTorch's autocast keeps it;
 * the branch's output y and the normalised out have the activations' type. */
template <typename T>
__global__ void layernorm_fwd_kernel(float *x_out, T *out, float *mean, float *rstd, const float *x, const T *y,
                                     const float *bias, const float *w, const float *b, int BT, int C, float eps)
{
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= BT)
    return;
  const size_t base = (size_t)row * C;
  const float *normed = y ? x_out + base : x + base; /* the row the norm reads */
  float sum = 0, sum2 = 0, m, s;
  for (int c = lane; c < C; c += 32) {
    float v = x[base + c];
    if (y) {
      v += to_float(y[base + c]) + (bias ? bias[c] : 0.0f);
      x_out[base + c] = v;
    }
    sum += v;
  }
  m = warp_sum(sum) / C;
  for (int c = lane; c < C; c += 32) {
    const float v = normed[c] - m;
    sum2 += v * v;
  }
  s = rsqrtf(warp_sum(sum2) / C + eps);
  for (int c = lane; c < C; c += 32)
    out[base + c] = from_float<T>((normed[c] - m) * s * w[c] + b[c]);
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

template <typename T>
static int layernorm_fwd(float *x_out, void *out, float *mean, float *rstd, const float *x, const void *y,
                         const float *bias, const float *w, const float *b, int BT, int C, float eps, cudaStream_t s)
{
  layernorm_fwd_kernel<T><<<(BT + 7) / 8, 256, 0, s>>>(x_out, (T *)out, mean, rstd, x, (const T *)y, bias, w, b, BT,
                                                        C, eps);
  DL_TRY_LAUNCH();
  return 0;
}

extern "C" int dl_layernorm_fwd(void *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                                int BT, int C, float eps, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, layernorm_fwd, (float *)NULL, out, mean, rstd, inp, (const void *)NULL, (const float *)NULL,
                     w, b, BT, C, eps, s);
}

extern "C" int dl_residual_layernorm_fwd(float *x_out, void *out, float *mean, float *rstd, const float *x,
                                         const void *y, const float *bias, const float *w, const float *b, int BT,
                                         int C, float eps, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, layernorm_fwd, x_out, out, mean, rstd, x, y, bias, w, b, BT, C, eps, s);
}

/* dinp += the norm's input gradient, in fp32 (the residual stream's
 * gradient); dinp_act (when not NULL) gets the sum in the activations' type,
 * for the GEMMs that read it. */
template <typename T>
__global__ void layernorm_bwd_rows_kernel(float *dinp, T *dinp_act, const T *dout, const float *inp, const float *w,
                                          const float *mean, const float *rstd, int BT, int C)
{
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= BT)
    return;
  const size_t base = (size_t)row * C;
  float dnorm_mean = 0, dnorm_norm_mean = 0;
  for (int c = lane; c < C; c += 32) {
    const float norm = (inp[base + c] - mean[row]) * rstd[row];
    const float dnorm = to_float(dout[base + c]) * w[c];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * norm;
  }
  dnorm_mean = warp_sum(dnorm_mean) / C;
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / C;
  for (int c = lane; c < C; c += 32) {
    const float norm = (inp[base + c] - mean[row]) * rstd[row];
    const float dnorm = to_float(dout[base + c]) * w[c];
    const float sum = dinp[base + c] + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[row];
    dinp[base + c] = sum;
    if (dinp_act)
      dinp_act[base + c] = from_float<T>(sum);
  }
}

/* dw[c] += sum_r dout * norm, db[c] += sum_r dout: reduce.cuh's two stages */
template <typename T> struct ln_param_term {
  const T *dout;
  const float *inp;
  const float *mean, *rstd;
  int cols;
  __device__ void add(float *acc, int row, int col) const
  {
    const size_t at = (size_t)row * cols + col;
    const float d = to_float(dout[at]);
    acc[0] += d * (inp[at] - mean[row]) * rstd[row];
    acc[1] += d;
  }
};

template <typename T>
static int layernorm_bwd(float *dinp, void *dinp_act, float *dw, float *db, const void *dout, const float *inp,
                         const float *w, const float *mean, const float *rstd, int BT, int C, float *partials,
                         cudaStream_t s)
{
  const ln_param_term<T> term = {(const T *)dout, inp, mean, rstd, C};
  float *const grads[2] = {dw, db};
  layernorm_bwd_rows_kernel<T><<<(BT + 7) / 8, 256, 0, s>>>(dinp, (T *)dinp_act, (const T *)dout, inp, w, mean, rstd,
                                                             BT, C);
  DL_TRY_LAUNCH();
  return column_reduce<2>(grads, 1, term, BT, C, partials, s);
}

extern "C" int dl_layernorm_bwd(float *dinp, void *dinp_act, float *dw, float *db, const void *dout,
                                const float *inp, const float *w, const float *mean, const float *rstd, int BT, int C,
                                float *partials, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, layernorm_bwd, dinp, dinp_act, dw, db, dout, inp, w, mean, rstd, BT, C, partials, s);
}
