/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/attention_tiles.cuh: the flash attention's block code, one
 * 64-row tile per block of 256 threads. It keeps fp32 in shared memory and
 * in registers, uses fp32 FMAs without TF32, and never holds an N x N
 * matrix. It uses no atomics, so it is deterministic.
 *  The forward takes a block of query rows i over key tiles j:
 *    s_ij = q_i.k_j scale, with an online softmax keeping a running max and sum per row,
 *    o_i = sum_j softmax_j(s_ij) v_j,  lse_i = log sum_j exp(s_ij)
 *  The backward recomputes p_ij = exp(q_i.k_j scale - lse_i) and takes delta_i = do_i.o_i.
 *    dk and dv take a block of key rows j over query tiles i:
 *      dv_j = sum_i p_ij do_i,  dk_j = scale sum_i ds_ij q_i,  ds_ij = p_ij (do_i.v_j - delta_i)
 *    dq takes a block of query rows i over key tiles j: dq_i = scale sum_j ds_ij k_j
 * Each tile product is a register-blocked SIMT GEMM. Thread tx, ty of the
 * 16 x 16 grid holds a 4 x 4 piece of a 64 x 64 score tile, rows ty*4..
 * and columns tx*4.., and rows ty*4.. x DPT dims of a 64 x HD output, as
 * at_dim picks them. Operands of a score tile are staged d-major as
 * [d][row], for float4 loads along rows. Those of an output product are
 * staged row-major as [row][d].
 * The code is __host__ __device__ over a context giving the thread's index,
 * the block barrier and the half-warp shuffle, so a test runs these very
 * functions on the CPU, a thread per CUDA thread. That is
 * tests/unit/attention_emulator.cu, for tests/unit/test_attention_tiles.c.
 * attention.cu's kernels run them with threadIdx, __syncthreads and
 * __shfl_xor_sync. Every thread reaches every barrier and shuffle. */
#ifndef DLPAR_KERNELS_CUDA_ATTENTION_TILES_CUH
#define DLPAR_KERNELS_CUDA_ATTENTION_TILES_CUH

#include <math.h>
#include <stddef.h>

#include "kernels/cuda/common.cuh"

/* Loop unrolling, on the GPU only, because the host compiler does not know the pragma. */
#ifdef __CUDA_ARCH__
#define AT_UNROLL _Pragma("unroll")
#define AT_UNROLL_4 _Pragma("unroll 4")
#else
#define AT_UNROLL
#define AT_UNROLL_4
#endif

enum {
  AT_ROWS = 64,    /* rows of a query or key tile */
  AT_THREADS = 256, /* 16 x 16 */
  AT_LD = AT_ROWS + 4 /* a d-major tile's row: float4-aligned, staggered banks */
};

typedef struct {
  int N, NH, HD;
  float scale;
} attn_shape;

/* The padded head dimension the block code is compiled for, or 0 for none when HD > 128. */
__host__ __device__ constexpr int at_padded_head(int HD)
{
  return HD < 1 ? 0 : HD <= 16 ? 16 : HD <= 32 ? 32 : HD <= 48 ? 48 : HD <= 64 ? 64 : HD <= 128 ? 128 : 0;
}

/* HDP is the head dimension padded to a multiple of 16, where dims >= HD are 0. */
/* The shared memory in floats of a dk/dv block, the largest of the three
 * kinds, for heads padded to hdp. It is at_sizes' DKDV, and
 * dl_attention_shared_bytes reports it. */
__host__ __device__ constexpr int at_dkdv_floats(int hdp)
{
  return 2 * hdp * AT_LD + 2 * (hdp * AT_LD > AT_ROWS * (hdp + 4) ? hdp * AT_LD : AT_ROWS * (hdp + 4)) +
         2 * AT_ROWS * AT_LD + 2 * AT_ROWS;
}

template <int HDP> struct at_sizes {
  static constexpr int DPT = HDP / 16;           /* output dims per thread */
  static constexpr int LDR = HDP + 4;            /* a row-major tile's row */
  static constexpr int DMAJOR = HDP * AT_LD;     /* floats of a d-major tile */
  static constexpr int ROWMAJOR = AT_ROWS * LDR; /* floats of a row-major tile */
  static constexpr int EITHER = DMAJOR > ROWMAJOR ? DMAJOR : ROWMAJOR;
  static constexpr int SCORES = AT_ROWS * AT_LD; /* a 64 x 64 tile, k-major */
  /* shared memory in floats of each block kind */
  static constexpr int FWD = 2 * DMAJOR + ROWMAJOR + SCORES;
  static constexpr int DKDV = 2 * DMAJOR + 2 * EITHER + 2 * SCORES + 2 * AT_ROWS;
  static_assert(DKDV == at_dkdv_floats(HDP), "at_dkdv_floats follows this layout");
  static constexpr int DQ = 3 * DMAJOR + EITHER + SCORES;
  /* float4 accesses: every row and every buffer starts on 16 bytes */
  static_assert(AT_LD % 4 == 0 && LDR % 4 == 0 && DMAJOR % 4 == 0 && ROWMAJOR % 4 == 0 && SCORES % 4 == 0,
                "tile rows and buffers must keep float4 alignment");
  static_assert(HDP % 16 == 0 && HDP <= 128, "heads are padded to a multiple of 16, at most 128");
  /* sm_90's opt-in limit of dynamic shared memory per block, 227 KB */
  static_assert(4 * FWD <= 232448 && 4 * DKDV <= 232448 && 4 * DQ <= 232448,
                "a block's tiles exceed sm_90's shared memory");
};

/* The e-th of a thread's DPT output dims. When DPT is a multiple of 4 they
 * are runs of 4 for float4 loads, 64 dims apart, so 16 threads read 16
 * consecutive float4s without a bank conflict. Otherwise they are DPT
 * consecutive dims. */
template <int DPT> __host__ __device__ constexpr int at_dim(int tx, int e)
{
  return DPT % 4 == 0 ? (e / 4) * 64 + tx * 4 + e % 4 : tx * DPT + e;
}

__host__ __device__ inline float4 at_load4(const float *p)
{
#ifdef __CUDA_ARCH__
  return *(const float4 *)p;
#else
  return make_float4(p[0], p[1], p[2], p[3]);
#endif
}

__host__ __device__ inline void at_store4(float *p, float a, float b, float c, float d)
{
#ifdef __CUDA_ARCH__
  *(float4 *)p = make_float4(a, b, c, d);
#else
  p[0] = a, p[1] = b, p[2] = c, p[3] = d;
#endif
}

/* The rows of one head in a [B, N, NH, HD] tensor, row r at base + r * ld. */
struct at_head {
  size_t base, ld;
};

__host__ __device__ inline at_head at_head_of(int bh, const attn_shape &a)
{
  const int b = bh / a.NH, h = bh % a.NH;
  const size_t ld = (size_t)a.NH * a.HD;
  return {(size_t)b * a.N * ld + (size_t)h * a.HD, ld};
}

/* dst[d][r] = scale * src row r0 + r, dim d; 0 outside N x HD. */
template <int HDP, typename T, typename Ctx>
__host__ __device__ void at_stage_dmajor(const Ctx &c, float *dst, const T *src, at_head hd, int r0, float scale,
                                         const attn_shape &a)
{
  /* A warp's 32 elements are 4 rows x 8 dims, so its global reads stay
   * whole sectors and its stores, to bank 4d + r, hit 32 banks. */
  for (int e = c.tid; e < AT_ROWS * HDP; e += AT_THREADS) {
    const int group = e / 32, lane = e % 32, dim_groups = HDP / 8;
    const int r = group / dim_groups * 4 + lane % 4, d = group % dim_groups * 8 + lane / 4;
    const bool inside = r0 + r < a.N && d < a.HD;
    dst[d * AT_LD + r] = inside ? to_float(src[hd.base + (size_t)(r0 + r) * hd.ld + d]) * scale : 0.0f;
  }
}

/* dst[r][d] = src row r0 + r, dim d; 0 outside N x HD. */
template <int HDP, typename T, typename Ctx>
__host__ __device__ void at_stage_rowmajor(const Ctx &c, float *dst, const T *src, at_head hd, int r0,
                                           const attn_shape &a)
{
  for (int e = c.tid; e < AT_ROWS * HDP; e += AT_THREADS) {
    const int r = e / HDP, d = e % HDP;
    const bool inside = r0 + r < a.N && d < a.HD;
    dst[r * at_sizes<HDP>::LDR + d] = inside ? to_float(src[hd.base + (size_t)(r0 + r) * hd.ld + d]) : 0.0f;
  }
}

/* The two d-major tiles of a pair of score products, rows r0.. of x and y. */
template <int HDP, typename T, typename Ctx>
__host__ __device__ void at_stage_pair(const Ctx &c, float *x_tile, const T *x, float *y_tile, const T *y, at_head hd,
                                       int r0, const attn_shape &a)
{
  at_stage_dmajor<HDP>(c, x_tile, x, hd, r0, 1.0f, a);
  at_stage_dmajor<HDP>(c, y_tile, y, hd, r0, 1.0f, a);
}

/* acc[m][n] += sum_d A[d][ty*4+m] B[d][tx*4+n], over two d-major tiles */
template <int HDP>
__host__ __device__ void at_scores(float (&acc)[4][4], const float *A, const float *B, int tx, int ty)
{
  AT_UNROLL_4
  for (int d = 0; d < HDP; d++) {
    const float4 a4 = at_load4(A + d * AT_LD + ty * 4), b4 = at_load4(B + d * AT_LD + tx * 4);
    const float av[4] = {a4.x, a4.y, a4.z, a4.w}, bv[4] = {b4.x, b4.y, b4.z, b4.w};
    AT_UNROLL
    for (int m = 0; m < 4; m++)
      AT_UNROLL
      for (int n = 0; n < 4; n++)
        acc[m][n] = fmaf(av[m], bv[n], acc[m][n]);
  }
}

/* acc[m][e] += sum_k X[k][ty*4+m] Y[k][at_dim(tx, e)], where X is a k-major
 * score tile and Y a row-major tile */
template <int HDP>
__host__ __device__ void at_rows(float (&acc)[4][at_sizes<HDP>::DPT], const float *X, const float *Y, int tx, int ty)
{
  constexpr int DPT = at_sizes<HDP>::DPT, LDR = at_sizes<HDP>::LDR;
  AT_UNROLL_4
  for (int k = 0; k < AT_ROWS; k++) {
    const float4 x4 = at_load4(X + k * AT_LD + ty * 4);
    const float xv[4] = {x4.x, x4.y, x4.z, x4.w};
    float yv[DPT];
    const float *y = Y + k * LDR;
    if constexpr (DPT % 4 == 0) {
      AT_UNROLL
      for (int e = 0; e < DPT; e += 4) {
        const float4 y4 = at_load4(y + at_dim<DPT>(tx, e));
        yv[e] = y4.x, yv[e + 1] = y4.y, yv[e + 2] = y4.z, yv[e + 3] = y4.w;
      }
    } else {
      AT_UNROLL
      for (int e = 0; e < DPT; e++)
        yv[e] = y[at_dim<DPT>(tx, e)];
    }
    AT_UNROLL
    for (int m = 0; m < 4; m++)
      AT_UNROLL
      for (int e = 0; e < DPT; e++)
        acc[m][e] = fmaf(xv[m], yv[e], acc[m][e]);
  }
}

/* X[tx*4+n][ty*4+m] = v[m][n] puts a thread's score piece into a k-major
 * tile. The column index becomes the reduction index of at_rows. */
__host__ __device__ inline void at_store_scores(float *X, const float (&v)[4][4], int tx, int ty)
{
  AT_UNROLL
  for (int n = 0; n < 4; n++)
    at_store4(X + (tx * 4 + n) * AT_LD + ty * 4, v[0][n], v[1][n], v[2][n], v[3][n]);
}

/* Rows ty*4+m, dims at_dim(tx, e) of one head's 64-row block: out = acc * factor[m]. */
template <int HDP, typename T>
__host__ __device__ void at_write_rows(T *out, const float (&acc)[4][at_sizes<HDP>::DPT], const float (&factor)[4],
                                       at_head hd, int r0, int tx, int ty, const attn_shape &a)
{
  constexpr int DPT = at_sizes<HDP>::DPT;
  AT_UNROLL
  for (int m = 0; m < 4; m++) {
    const int r = r0 + ty * 4 + m;
    AT_UNROLL
    for (int e = 0; e < DPT; e++) {
      const int d = at_dim<DPT>(tx, e);
      if (r < a.N && d < a.HD)
        out[hd.base + (size_t)r * hd.ld + d] = from_float<T>(acc[m][e] * factor[m]);
    }
  }
}

/* Max and sum over the 16 threads of a half-warp, which share one ty and so the same rows. */
template <typename Ctx> __host__ __device__ float at_row_max(const Ctx &c, float v)
{
  for (int offset = 8; offset > 0; offset >>= 1)
    v = fmaxf(v, c.shfl_xor(v, offset));
  return v;
}

template <typename Ctx> __host__ __device__ float at_row_sum(const Ctx &c, float v)
{
  for (int offset = 8; offset > 0; offset >>= 1)
    v += c.shfl_xor(v, offset);
  return v;
}

/* The running softmax of rows ty*4+m over one more score tile s, with
 * columns >= count masked. s becomes the tile's p against the new maxima,
 * and acc and the sums are rescaled to the new maxima. */
template <int DPT, typename Ctx>
__host__ __device__ void at_online_softmax(const Ctx &c, float (&s)[4][4], float (&acc)[4][DPT], float (&row_max)[4],
                                           float (&row_sum)[4], int count, int tx)
{
  AT_UNROLL
  for (int m = 0; m < 4; m++) {
    float tile_max = -INFINITY;
    AT_UNROLL
    for (int n = 0; n < 4; n++) {
      if (tx * 4 + n >= count)
        s[m][n] = -INFINITY;
      tile_max = fmaxf(tile_max, s[m][n]);
    }
    const float new_max = fmaxf(row_max[m], at_row_max(c, tile_max)), correction = expf(row_max[m] - new_max);
    float tile_sum = 0;
    AT_UNROLL
    for (int n = 0; n < 4; n++) {
      s[m][n] = expf(s[m][n] - new_max);
      tile_sum += s[m][n];
    }
    row_sum[m] = row_sum[m] * correction + at_row_sum(c, tile_sum);
    row_max[m] = new_max;
    AT_UNROLL
    for (int e = 0; e < DPT; e++)
      acc[m][e] *= correction;
  }
}

/* The backward's recomputed probability and its score gradient for one
 * unscaled score s and do.v. p = exp(s scale - lse), or 0 for a position
 * past N. s becomes p, and dp becomes ds = p (dp - delta). */
__host__ __device__ inline void at_prob_grad(float &s, float &dp, float lse, float delta, bool inside, float scale)
{
  s = inside ? expf(s * scale - lse) : 0.0f;
  dp = s * (dp - delta);
}

/* delta = do.o over one row of HD values: the backward's per-row term. */
template <typename T> __host__ __device__ float at_delta_row(const T *dout, const T *o, int HD)
{
  float sum = 0;
  for (int d = 0; d < HD; d++)
    sum += to_float(dout[d]) * to_float(o[d]);
  return sum;
}

/* delta_i = do_i . o_i for every row of [B, NH, N]. This is the backward's
 * first kernel, in attention.cu and attention_mma.cu alike. */
template <typename T> __global__ void delta_kernel(float *delta, const T *dout, const T *o, int B, attn_shape a)
{
  const size_t rows = (size_t)B * a.NH * a.N, ld = (size_t)a.NH * a.HD;
  for (size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < rows; r += (size_t)gridDim.x * blockDim.x) {
    const size_t i = r % a.N, bh = r / a.N, b = bh / a.NH, h = bh % a.NH;
    const size_t at = b * a.N * ld + i * ld + h * a.HD;
    delta[r] = at_delta_row(dout + at, o + at, a.HD);
  }
}

/* Forward for the query rows [i0, i0 + 64) of head bh. */
template <int HDP, typename T, typename Ctx>
__host__ __device__ void at_forward_block(const Ctx &c, float *smem, int i0, int bh, T *o, float *lse, const T *q,
                                          const T *k, const T *v, const attn_shape &a)
{
  typedef at_sizes<HDP> S;
  const int tx = c.tid % 16, ty = c.tid / 16;
  const at_head hd = at_head_of(bh, a);
  float *qd = smem, *kd = qd + S::DMAJOR, *vr = kd + S::DMAJOR, *pk = vr + S::ROWMAJOR;
  float acc[4][S::DPT] = {}, row_max[4], row_sum[4] = {0, 0, 0, 0}, inv_sum[4];
  AT_UNROLL
  for (int m = 0; m < 4; m++)
    row_max[m] = -INFINITY;
  at_stage_dmajor<HDP>(c, qd, q, hd, i0, a.scale, a);
  for (int j0 = 0; j0 < a.N; j0 += AT_ROWS) {
    float s[4][4] = {};
    c.sync(); /* the previous tile's readers are done */
    at_stage_dmajor<HDP>(c, kd, k, hd, j0, 1.0f, a);
    at_stage_rowmajor<HDP>(c, vr, v, hd, j0, a);
    c.sync();
    at_scores<HDP>(s, qd, kd, tx, ty);
    at_online_softmax<S::DPT>(c, s, acc, row_max, row_sum, a.N - j0, tx);
    at_store_scores(pk, s, tx, ty);
    c.sync();
    at_rows<HDP>(acc, pk, vr, tx, ty);
  }
  AT_UNROLL
  for (int m = 0; m < 4; m++) {
    const int i = i0 + ty * 4 + m;
    inv_sum[m] = 1.0f / row_sum[m];
    if (tx == 0 && i < a.N)
      lse[(size_t)bh * a.N + i] = row_max[m] + logf(row_sum[m]);
  }
  at_write_rows<HDP>(o, acc, inv_sum, hd, i0, tx, ty, a);
}

/* dk, dv for the key rows [j0, j0 + 64) of head bh. */
template <int HDP, typename T, typename Ctx>
__host__ __device__ void at_dkdv_block(const Ctx &c, float *smem, int j0, int bh, T *dk, T *dv, const T *q,
                                       const T *k, const T *v, const T *dout, const float *lse, const float *delta,
                                       const attn_shape &a)
{
  typedef at_sizes<HDP> S;
  const int tx = c.tid % 16, ty = c.tid / 16;
  const at_head hd = at_head_of(bh, a);
  float *kd = smem, *vd = kd + S::DMAJOR, *qbuf = vd + S::DMAJOR, *dobuf = qbuf + S::EITHER;
  float *pk = dobuf + S::EITHER, *dsk = pk + S::SCORES, *lse_s = dsk + S::SCORES, *delta_s = lse_s + AT_ROWS;
  float dk_acc[4][S::DPT] = {}, dv_acc[4][S::DPT] = {};
  const float dk_scale[4] = {a.scale, a.scale, a.scale, a.scale}, one[4] = {1, 1, 1, 1};
  at_stage_pair<HDP>(c, kd, k, vd, v, hd, j0, a);
  for (int i0 = 0; i0 < a.N; i0 += AT_ROWS) {
    float st[4][4] = {}, dpt[4][4] = {};
    c.sync(); /* the previous tile's readers are done */
    at_stage_pair<HDP>(c, qbuf, q, dobuf, dout, hd, i0, a);
    for (int e = c.tid; e < AT_ROWS; e += AT_THREADS) {
      lse_s[e] = i0 + e < a.N ? lse[(size_t)bh * a.N + i0 + e] : 0.0f;
      delta_s[e] = i0 + e < a.N ? delta[(size_t)bh * a.N + i0 + e] : 0.0f;
    }
    c.sync();
    at_scores<HDP>(st, kd, qbuf, tx, ty);  /* s_ij, rows j, columns i */
    at_scores<HDP>(dpt, vd, dobuf, tx, ty); /* do_i.v_j */
    AT_UNROLL
    for (int m = 0; m < 4; m++)
      AT_UNROLL
      for (int n = 0; n < 4; n++) /* rows j, columns i */
        at_prob_grad(st[m][n], dpt[m][n], lse_s[tx * 4 + n], delta_s[tx * 4 + n], i0 + tx * 4 + n < a.N, a.scale);
    at_store_scores(pk, st, tx, ty);
    at_store_scores(dsk, dpt, tx, ty);
    c.sync(); /* the d-major q and do are read: restage them row-major */
    at_stage_rowmajor<HDP>(c, qbuf, q, hd, i0, a);
    at_stage_rowmajor<HDP>(c, dobuf, dout, hd, i0, a);
    c.sync();
    at_rows<HDP>(dv_acc, pk, dobuf, tx, ty);
    at_rows<HDP>(dk_acc, dsk, qbuf, tx, ty);
  }
  at_write_rows<HDP>(dk, dk_acc, dk_scale, hd, j0, tx, ty, a);
  at_write_rows<HDP>(dv, dv_acc, one, hd, j0, tx, ty, a);
}

/* dq for the query rows [i0, i0 + 64) of head bh. */
template <int HDP, typename T, typename Ctx>
__host__ __device__ void at_dq_block(const Ctx &c, float *smem, int i0, int bh, T *dq, const T *q, const T *k,
                                     const T *v, const T *dout, const float *lse, const float *delta,
                                     const attn_shape &a)
{
  typedef at_sizes<HDP> S;
  const int tx = c.tid % 16, ty = c.tid / 16;
  const at_head hd = at_head_of(bh, a);
  float *qd = smem, *dod = qd + S::DMAJOR, *kd = dod + S::DMAJOR, *vbuf = kd + S::DMAJOR, *dsk = vbuf + S::EITHER;
  float dq_acc[4][S::DPT] = {}, lse_r[4], delta_r[4];
  const float dq_scale[4] = {a.scale, a.scale, a.scale, a.scale};
  AT_UNROLL
  for (int m = 0; m < 4; m++) {
    const int i = i0 + ty * 4 + m;
    lse_r[m] = i < a.N ? lse[(size_t)bh * a.N + i] : 0.0f;
    delta_r[m] = i < a.N ? delta[(size_t)bh * a.N + i] : 0.0f;
  }
  at_stage_pair<HDP>(c, qd, q, dod, dout, hd, i0, a);
  for (int j0 = 0; j0 < a.N; j0 += AT_ROWS) {
    float s[4][4] = {}, dp[4][4] = {};
    c.sync(); /* the previous tile's readers are done */
    at_stage_pair<HDP>(c, kd, k, vbuf, v, hd, j0, a);
    c.sync();
    at_scores<HDP>(s, qd, kd, tx, ty);    /* s_ij, rows i, columns j */
    at_scores<HDP>(dp, dod, vbuf, tx, ty); /* do_i.v_j */
    AT_UNROLL
    for (int m = 0; m < 4; m++)
      AT_UNROLL
      for (int n = 0; n < 4; n++) /* rows i, columns j */
        at_prob_grad(s[m][n], dp[m][n], lse_r[m], delta_r[m], j0 + tx * 4 + n < a.N, a.scale);
    at_store_scores(dsk, dp, tx, ty);
    c.sync(); /* v is read: the buffer takes k row-major */
    at_stage_rowmajor<HDP>(c, vbuf, k, hd, j0, a);
    c.sync();
    at_rows<HDP>(dq_acc, dsk, vbuf, tx, ty);
  }
  at_write_rows<HDP>(dq, dq_acc, dq_scale, hd, i0, tx, ty, a);
}

#endif
