/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/layernorm_rows.cuh: LayerNorm's backward block code, which
 * layernorm.cu's kernels run on the GPU and tests/unit/layernorm_emulator.cu
 * runs on the CPU, a fiber per CUDA thread. It works over a context like
 * reduce.cuh's gpu_block_ctx, which gives the thread, the block barrier, a
 * warp's sum, and loads and stores of V values. Per row, with
 * norm = (x - mean) rstd and dnorm = dout w:
 *   dinp += (dnorm - mean(dnorm) - norm mean(dnorm norm)) rstd, in fp32,
 *   dinp_act = dinp in the activations' type, when dinp_act is not NULL,
 *   dw += sum over rows of dout norm,  db += sum over rows of dout.
 * The fused block serves C a multiple of 4 and at most 1024, with the
 * pointers on 16 bytes. It runs one block of 8 warps per 256-row chunk of
 * reduce.cuh's stage 1. Warp w takes rows chunk * 256 + w * 32 .. + 31 in
 * order. A lane holds G groups of 4 consecutive columns, group g being
 * columns g * 128 + lane * 4 .., with those >= C masked off. So its part
 * of a row of x in fp32, dout and dinp stays in registers, while w stays
 * in shared memory. All three are loaded before the row's two warp sums,
 * so x, dout and dinp are read once and dinp written once. ptxas for
 * sm_90 spills nothing at C = 1024, with 241 registers. The lane adds
 * dout norm and dout of its columns over the warp's rows in registers.
 * The 8 warps' sums are then added in warp order through shared memory,
 * as ((w0 + w1) + w2) and so on, and the last warp writes them as
 * reduce.cuh's stage-1 partials[o][chunk][column], with o 0 for dw and 1
 * for db. Stage 2, column_reduce_partials, adds the chunks into dw and db.
 * The order is fixed and there are no atomics, so every run and every GPU
 * gives the same bits.
 * Other widths or pointers take a warp per row that reads x, dout and w
 * twice. That is ln_bwd_row, with V = 4 values a lane at a time where the
 * width and the pointers allow, else 1. The parameter terms then go
 * through column_reduce. */
#ifndef DLPAR_KERNELS_CUDA_LAYERNORM_ROWS_CUH
#define DLPAR_KERNELS_CUDA_LAYERNORM_ROWS_CUH

#include <type_traits>

#include "kernels/cuda/reduce.cuh"

enum {
  LN_THREADS = REDUCE_THREADS,              /* a fused block, and a rows block */
  LN_WARPS = LN_THREADS / 32,               /* 8 */
  LN_WARP_ROWS = REDUCE_CHUNK / LN_WARPS,   /* a warp's rows of a chunk: 32 */
  LN_GROUP = 32 * 4,                        /* a group's columns: 4 a lane */
  LN_MAX_GROUPS = 8                         /* C up to 1024 fused */
};

/* One call's tensors are [BT, C] row-major. partials is [2][chunks][C] in
 * fp32, dl_column_partials_bytes(BT, 2 * C) bytes, with
 * chunks = reduce_chunks(BT). */
template <typename T> struct ln_bwd_args {
  float *dinp;
  T *dinp_act;
  const T *dout;
  const float *inp, *w, *mean, *rstd;
  float *partials;
  int BT, C, chunks;
};

/* The path of a call: groups 1..8, the fused block with that many groups
 * a lane; 0, ln_bwd_row with V = vec and column_reduce's two stages. */
struct ln_bwd_plan {
  int groups, vec;
};

template <typename T> static inline ln_bwd_plan ln_bwd_plan_of(const ln_bwd_args<T> &a)
{
  const bool by4 = a.C % 4 == 0 && vec_aligned<4>(a.dinp) && vec_aligned<4>(a.dinp_act) &&
                   vec_aligned<4>(a.dout) && vec_aligned<4>(a.inp) && vec_aligned<4>(a.w);
  const bool fused = by4 && a.C <= LN_MAX_GROUPS * LN_GROUP && vec_aligned<4>(a.partials);
  return {fused ? (a.C + LN_GROUP - 1) / LN_GROUP : 0, by4 ? 4 : 1};
}

/* f(std::integral_constant<int, G>()) for the plan's groups G = 1..8,
 * never more. This instantiates the fused block for the kernels and for
 * the CPU stand-in. */
template <typename F> static inline void ln_with_groups(int groups, F &&f)
{
  switch (groups) {
  case 1: f(std::integral_constant<int, 1>()); break;
  case 2: f(std::integral_constant<int, 2>()); break;
  case 3: f(std::integral_constant<int, 3>()); break;
  case 4: f(std::integral_constant<int, 4>()); break;
  case 5: f(std::integral_constant<int, 5>()); break;
  case 6: f(std::integral_constant<int, 6>()); break;
  case 7: f(std::integral_constant<int, 7>()); break;
  default: f(std::integral_constant<int, 8>()); break;
  }
}

/* The floats of a fused block's shared memory: the running dw and db
 * rows of the warps' turns, and w. */
template <int G> __host__ __device__ constexpr int ln_fused_shared_floats()
{
  return 3 * G * LN_GROUP;
}

/* Runs fn(g, col, w) for each of the lane's G column groups that lies
 * inside the row, col being its first column and w the weights of its 4
 * columns as the block staged them in shared memory at w_row. */
template <int G, typename Ctx, typename Fn>
__host__ __device__ __forceinline__ void ln_each_group(const Ctx &c, const float *w_row, int lane, int C, const Fn &fn)
{
  REDUCE_UNROLL
  for (int g = 0; g < G; g++) {
    const int col = g * LN_GROUP + lane * 4;
    float w[4];
    if (col >= C)
      continue;
    c.load(w, w_row + col);
    fn(g, col, w);
  }
}

/* Chunk `chunk` of the rows, by one block of LN_THREADS, writes dinp,
 * dinp_act and the chunk's stage-1 partials of dw and db. smem holds
 * ln_fused_shared_floats<G> floats on 16 bytes. Every thread reaches every
 * barrier. */
template <typename T, int G, typename Ctx>
__host__ __device__ void ln_bwd_fused_block(const Ctx &c, float *smem, int chunk, const ln_bwd_args<T> &a)
{
  const int warp = c.tid / 32, lane = c.tid % 32, C = a.C;
  const int first = chunk * REDUCE_CHUNK + warp * LN_WARP_ROWS;
  const int rows = a.BT - first < LN_WARP_ROWS ? a.BT - first : LN_WARP_ROWS; /* <= 0 means none, in the last chunk */
  float *const w_row = smem + 2 * G * LN_GROUP; /* w: the registers go to the rows */
  float dw[G][4], db[G][4];
  REDUCE_UNROLL
  for (int g = 0; g < G; g++) {
    const int col = g * LN_GROUP + lane * 4;
    for (int i = 0; i < 4; i++)
      dw[g][i] = db[g][i] = 0.0f;
    if (warp == 0 && col < C) {
      float w[4];
      c.load(w, a.w + col);
      c.store(w_row + col, w);
    }
  }
  c.sync();
  for (int k = 0; k < rows; k++) {
    const int row = first + k;
    const size_t base = (size_t)row * C;
    float x[G][4] = {}, d[G][4] = {}, sum[G][4] = {}, mean[1], rstd[1], dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    c.load(mean, a.mean + row);
    c.load(rstd, a.rstd + row);
    REDUCE_UNROLL
    for (int g = 0; g < G; g++) {
      const int col = g * LN_GROUP + lane * 4;
      if (col < C) {
        c.load(x[g], a.inp + base + col);
        c.load(d[g], a.dout + base + col);
        c.load(sum[g], a.dinp + base + col);
      }
    }
    ln_each_group<G>(c, w_row, lane, C, [&](int g, int, const float(&w)[4]) {
      for (int i = 0; i < 4; i++) {
        const float dnorm = d[g][i] * w[i];
        x[g][i] = (x[g][i] - mean[0]) * rstd[0]; /* x becomes norm */
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * x[g][i];
      }
    });
    dnorm_mean = c.sum_warp(dnorm_mean) / C;
    dnorm_norm_mean = c.sum_warp(dnorm_norm_mean) / C;
    ln_each_group<G>(c, w_row, lane, C, [&](int g, int col, const float(&w)[4]) {
      for (int i = 0; i < 4; i++) {
        sum[g][i] += (d[g][i] * w[i] - dnorm_mean - x[g][i] * dnorm_norm_mean) * rstd[0];
        dw[g][i] += d[g][i] * x[g][i];
        db[g][i] += d[g][i];
      }
      c.store(a.dinp + base + col, sum[g]);
      if (a.dinp_act)
        c.store(a.dinp_act + base + col, sum[g]);
    });
  }
  /* the warps' sums in warp order: warp 0 stores, 1 .. 6 add, 7 adds and
   * writes the partials; a barrier between turns */
  for (int turn = 0; turn < LN_WARPS; turn++) {
    if (warp == turn) {
      REDUCE_UNROLL
      for (int g = 0; g < G; g++) {
        const int col = g * LN_GROUP + lane * 4;
        if (col >= C)
          continue;
        for (int o = 0; o < 2; o++) {
          float sum[4], *const at = smem + o * G * LN_GROUP + col;
          float *const part = a.partials + ((size_t)o * a.chunks + chunk) * C + col;
          const float *acc = o == 0 ? dw[g] : db[g];
          if (turn == 0) {
            for (int i = 0; i < 4; i++)
              sum[i] = acc[i];
          } else {
            c.load(sum, at);
            for (int i = 0; i < 4; i++)
              sum[i] += acc[i];
          }
          c.store(turn < LN_WARPS - 1 ? at : part, sum);
        }
      }
    }
    if (turn < LN_WARPS - 1)
      c.sync();
  }
}

/* One row's dinp and dinp_act by one warp, V values a lane at a time. */
template <typename T, int V, typename Ctx>
__host__ __device__ void ln_bwd_row(const Ctx &c, int row, const ln_bwd_args<T> &a)
{
  const int lane = c.tid % 32;
  const size_t base = (size_t)row * a.C;
  float mean[1], rstd[1], dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  c.load(mean, a.mean + row);
  c.load(rstd, a.rstd + row);
  for (int col = lane * V; col < a.C; col += 32 * V) {
    float x[V], d[V], w[V];
    c.load(x, a.inp + base + col);
    c.load(d, a.dout + base + col);
    c.load(w, a.w + col);
    for (int i = 0; i < V; i++) {
      const float dnorm = d[i] * w[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * (x[i] - mean[0]) * rstd[0];
    }
  }
  dnorm_mean = c.sum_warp(dnorm_mean) / a.C;
  dnorm_norm_mean = c.sum_warp(dnorm_norm_mean) / a.C;
  for (int col = lane * V; col < a.C; col += 32 * V) {
    float x[V], d[V], w[V], sum[V];
    c.load(x, a.inp + base + col);
    c.load(d, a.dout + base + col);
    c.load(w, a.w + col);
    c.load(sum, a.dinp + base + col);
    for (int i = 0; i < V; i++) {
      const float norm = (x[i] - mean[0]) * rstd[0], dnorm = d[i] * w[i];
      sum[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[0];
    }
    c.store(a.dinp + base + col, sum);
    if (a.dinp_act)
      c.store(a.dinp_act + base + col, sum);
  }
}

/* Block `block` of LN_THREADS in the rows path, with a row a warp. */
template <typename T, int V, typename Ctx>
__host__ __device__ void ln_bwd_rows_block(const Ctx &c, int block, const ln_bwd_args<T> &a)
{
  const int row = block * LN_WARPS + c.tid / 32;
  if (row < a.BT)
    ln_bwd_row<T, V>(c, row, a);
}

/* The parameter terms of the rows path for column_reduce: dout norm and dout. */
template <typename T> struct ln_param_term {
  const T *dout;
  const float *inp, *mean, *rstd;
  int cols;
  template <int V, typename Ctx>
  __host__ __device__ void add(const Ctx &c, float (&acc)[2][V], int row, int col) const
  {
    const size_t at = (size_t)row * cols + col;
    float d[V], x[V], mean_r[1], rstd_r[1];
    c.load(d, dout + at);
    c.load(x, inp + at);
    c.load(mean_r, mean + row);
    c.load(rstd_r, rstd + row);
    for (int i = 0; i < V; i++) {
      acc[0][i] += d[i] * (x[i] - mean_r[0]) * rstd_r[0];
      acc[1][i] += d[i];
    }
  }
  bool by4() const { return vec_aligned<4>(dout) && vec_aligned<4>(inp); }
};

#endif
