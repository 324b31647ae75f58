/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/layernorm.cu: LayerNorm with fp32 statistics, one warp per
 * row, over the fp32 residual stream; the residual add that ends a branch,
 * fused with the next norm; and the backward, whose block code is in
 * layernorm_rows.cuh. The backward accumulates the stream's fp32 gradient.
 * Where the width is a multiple of 4 up to 1024, it also writes, in the
 * same pass, the weight and bias gradients' stage-1 partials of
 * reduce.cuh's deterministic two-stage column sums. Rows are read 16 bytes
 * of fp32 or 8 of 16-bit values a lane at a time, through common.cuh's
 * load_vec, where the width and the pointers allow. */
#include "config.h"

#include "kernels/cuda/layernorm_rows.cuh"

/* x_out = x + y + bias when there is a y, and out = LN(x_out), or LN(x)
 * without y. The residual stream, x and x_out, is fp32 in every precision,
 * as PyTorch's autocast keeps it. The branch's output y and the normalised
 * out have the activations' type. A lane takes V consecutive columns at a
 * time. V = 4 gives 16-byte loads of fp32 or 8-byte loads of 16-bit
 * values, and V = 1 serves where C or a pointer does not allow that. */
template <typename T, int V>
__global__ void layernorm_fwd_kernel(float *x_out, T *out, float *mean, float *rstd, const float *x, const T *y,
                                     const float *bias, const float *w, const float *b, int BT, int C, float eps)
{
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= BT)
    return;
  const size_t base = (size_t)row * C;
  const float *normed = y ? x_out + base : x + base; /* the row the norm reads */
  float sum = 0, sum2 = 0, m, s;
  for (int c = lane * V; c < C; c += 32 * V) {
    float v[V], add[V], bias_v[V] = {};
    load_vec<V>(v, x + base + c);
    if (y) {
      load_vec<V>(add, y + base + c);
      if (bias)
        load_vec<V>(bias_v, bias + c);
      for (int i = 0; i < V; i++)
        v[i] += add[i] + bias_v[i];
      store_vec<V>(x_out + base + c, v);
    }
    for (int i = 0; i < V; i++)
      sum += v[i];
  }
  m = warp_sum(sum) / C;
  for (int c = lane * V; c < C; c += 32 * V) {
    float v[V];
    load_vec<V>(v, normed + c);
    for (int i = 0; i < V; i++)
      sum2 += (v[i] - m) * (v[i] - m);
  }
  s = rsqrtf(warp_sum(sum2) / C + eps);
  for (int c = lane * V; c < C; c += 32 * V) {
    float v[V], w_v[V], b_v[V];
    load_vec<V>(v, normed + c);
    load_vec<V>(w_v, w + c);
    load_vec<V>(b_v, b + c);
    for (int i = 0; i < V; i++)
      v[i] = (v[i] - m) * s * w_v[i] + b_v[i];
    store_vec<V>(out + base + c, v);
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

template <typename T>
static int layernorm_fwd(float *x_out, void *out, float *mean, float *rstd, const float *x, const void *y,
                         const float *bias, const float *w, const float *b, int BT, int C, float eps, cudaStream_t s)
{
  const bool by4 = C % 4 == 0 && vec_aligned<4>(x_out) && vec_aligned<4>((const T *)out) && vec_aligned<4>(x) &&
                   vec_aligned<4>((const T *)y) && vec_aligned<4>(bias) && vec_aligned<4>(w) && vec_aligned<4>(b);
  const auto kernel = by4 ? layernorm_fwd_kernel<T, 4> : layernorm_fwd_kernel<T, 1>;
  kernel<<<(BT + 7) / 8, 256, 0, s>>>(x_out, (T *)out, mean, rstd, x, (const T *)y, bias, w, b, BT, C, eps);
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

/* The backward, with layernorm_rows.cuh's block code. dinp, the residual
 * stream's gradient, += the norm's input gradient in fp32. dinp_act, when
 * not NULL, gets the sum in the activations' type, for the GEMMs that read
 * it. dw and db += the parameter gradients. Fused, it runs a block per
 * 256-row chunk that writes its stage-1 partials, then reduce.cuh's
 * stage 2. */
template <typename T, int G>
__global__ void __launch_bounds__(LN_THREADS, G <= 4 ? 2 : 1) layernorm_bwd_fused_kernel(ln_bwd_args<T> a)
{
  __shared__ float4 sums[ln_fused_shared_floats<G>() / 4];
  ln_bwd_fused_block<T, G>(gpu_block_ctx{(int)threadIdx.x}, (float *)sums, (int)blockIdx.x, a);
}

/* The other widths: a warp per row, then column_reduce for dw, db. */
template <typename T, int V>
__global__ void __launch_bounds__(LN_THREADS) layernorm_bwd_rows_kernel(ln_bwd_args<T> a)
{
  ln_bwd_rows_block<T, V>(gpu_block_ctx{(int)threadIdx.x}, (int)blockIdx.x, a);
}

template <typename T>
static int layernorm_bwd(float *dinp, void *dinp_act, float *dw, float *db, const void *dout, const float *inp,
                         const float *w, const float *mean, const float *rstd, int BT, int C, float *partials,
                         cudaStream_t s)
{
  const ln_bwd_args<T> a = {dinp, (T *)dinp_act, (const T *)dout, inp, w, mean, rstd, partials, BT, C,
                            reduce_chunks(BT)};
  const ln_bwd_plan plan = ln_bwd_plan_of(a);
  float *const grads[2] = {dw, db};
  if (BT < 1 || C < 1 || a.chunks > REDUCE_MAX_CHUNKS || !partials)
    return (int)cudaErrorInvalidValue;
  if (plan.groups == 0) {
    const ln_param_term<T> term = {a.dout, inp, mean, rstd, C};
    const auto kernel = plan.vec == 4 ? layernorm_bwd_rows_kernel<T, 4> : layernorm_bwd_rows_kernel<T, 1>;
    kernel<<<(BT + LN_WARPS - 1) / LN_WARPS, LN_THREADS, 0, s>>>(a);
    DL_TRY_LAUNCH();
    return column_reduce<2>(grads, 1, term, BT, C, partials, s);
  }
  ln_with_groups(plan.groups, [&](auto groups) {
    layernorm_bwd_fused_kernel<T, decltype(groups)::value><<<a.chunks, LN_THREADS, 0, s>>>(a);
  });
  DL_TRY_LAUNCH();
  return column_reduce_partials<2>(grads, 1, partials, a.chunks, C, s);
}

extern "C" int dl_layernorm_bwd(float *dinp, void *dinp_act, float *dw, float *db, const void *dout,
                                const float *inp, const float *w, const float *mean, const float *rstd, int BT, int C,
                                float *partials, dl_dtype act, cudaStream_t s)
{
  return DL_DISPATCH(act, layernorm_bwd, dinp, dinp_act, dw, db, dout, inp, w, mean, rstd, BT, C, partials, s);
}
