/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/attention_mma_tiles.cuh: the block code of the fp32 flash
 * attention on tensor cores. attention_mma.cu's kernels run it, and
 * tests/unit/attention_mma_emulator.cu runs it on the CPU. It has the same
 * math and layouts as attention_tiles.cuh's FMA kernels, but the tile
 * products are warp-level mma.sync m16n8k8 TF32 MMAs with fp32
 * accumulators.
 *  - 3xTF32, with PASSES 3, is fp32-accurate. Every operand x is split
 *    into big = tf32(x) and small = tf32(x - big), where tf32 rounds to
 *    nearest with ties away and zeroes the low 13 bits, as
 *    cvt.rna.tf32.f32 does. A product then sums
 *    a_small b_big + a_big b_small + a_big b_big, dropping small x small.
 *    PASSES 1 takes a_big b_big alone, which is plain TF32 as PyTorch's
 *    allow_tf32 gives.
 *  - An operand is split once, where it is staged. A tile that several
 *    warps read is held in shared memory as its TF32 terms, each element's
 *    big and small side by side, or big alone with PASSES 1. Such tiles are
 *    the forward's q up to 64 dims, k and v, and the backward's q, do and
 *    dS. So a fragment is loaded, not computed. An element pair along a
 *    row, k index t and t+4 being elements 2t and 2t+1, is one 16-byte load
 *    in am_pair, and an element one 8-byte load in am_elem. The tile's rows
 *    are copied by cp.async, 16 bytes a unit of 4 elements, into the first
 *    of the unit's two chunks. After its wait, the thread that copied a
 *    unit splits it in place in am_expand. No other thread touches the
 *    unit, so this needs no extra barrier. Operands are split on the fly
 *    only in three cases. The first is A fragments taken from C fragments,
 *    p and P^T, which are a warp's own registers. The second is those of
 *    the operands held raw for room, the backward's k and v and the
 *    forward's q at 128 dims, once per 8-dim step for 8 n-groups. The third
 *    is the backward's dq B fragments, from raw k.
 *  - There are no long sums on the tensor cores. They truncate their fp32
 *    sums toward zero, and thousands of MMAs onto one accumulator drift: o
 *    was off by 3e-5 at 4050 keys on an H200. o, dk and dv add each tile's
 *    product, summed by MMAs from zero, in fp32 in am_add_product. dq's
 *    per-block parts are added in global memory.
 *  - The code uses mma.sync, not Hopper's wgmma, because mma.sync's
 *    per-lane fragment layouts are documented in the PTX ISA, under
 *    "Matrix Fragments for mma.m16n8k8" for .tf32, so a test emulates them
 *    exactly on the CPU. With lane = 4 g + t, where g is the groupID and t
 *    the threadID_in_group, a 16 x 8 A fragment is a0 (g, t), a1 (g+8, t),
 *    a2 (g, t+4), a3 (g+8, t+4); an 8 x 8 B fragment is b0 (t, g),
 *    b1 (t+4, g); the 16 x 8 C/D fragment is c0 (g, 2t), c1 (g, 2t+1),
 *    c2 (g+8, 2t), c3 (g+8, 2t+1). The order of a reduction is free. So k
 *    index t of an 8-step is its element 2t, and k index t+4 its element
 *    2t+1, both for an A fragment taken from a C fragment and for a pair
 *    along a staged row. For P V, P^T dO and dS^T Q, c0 and c1 are then a0
 *    and a2, with no shuffles. dq's k index t is key 4h+t of a 16-key
 *    group, and k index t+4 is key 4h+t+8, the pairs in which dS is
 *    stored.
 *  - Against bank conflicts, a split row is a whole number of 128-byte
 *    lines, and its 2-element chunks are XOR-swizzled by row in
 *    am_split_swizzle. A raw row's 4-element units are swizzled alike in
 *    am_raw_swizzle. So the pair loads of a quarter warp, rows g and g+1
 *    by 4 chunks, the element loads of a half warp, rows 2t by 4 dims or
 *    for the raw k rows t by 8 dims, and the dS stores all hit 32 banks.
 * The partitioning is FlashAttention-2's. Warps take 16 rows each, and row
 * statistics are taken over the 4 lanes of a quad by shuffles. Heads are
 * padded as at_padded_head, the padding's dims being zeros. Keys past N
 * are masked, and rows past N are never written.
 *  The forward runs a block of 64 query rows in 4 warps over tiles of 64
 *    keys. At 128 dims it runs 128 rows in 8 warps, so that twice the warps
 *    share the split k and v tiles of 64 KB each. k of the next tile loads
 *    during P V, and v during Q K^T, with one buffer each.
 *  The backward is ONE kernel, a block per 64 keys over steps of 64 query
 *    rows, with the five products of FlashAttention-2: s^T = K Q^T,
 *    dp^T = V dO^T, dv += P^T dO, dk += dS^T Q with dS scaled, and
 *    dq += dS K. Up to 48 dims a warp has 16 keys and does all five, and
 *    dq for 16 of the step's query rows. From 64 dims, with ROLES 2, the
 *    block has 8 warps, two for each 16 keys. Warp p computes s^T, P^T and
 *    dv over all dims, and warp p + 4 computes dp^T, dS^T and dk. P^T goes
 *    from the one to the other through shared memory, in the dS tile's
 *    chunks, which the second then overwrites with dS lane for lane. So
 *    nothing is computed twice and a warp keeps one 16 x HD accumulator.
 *    dq is 32 rows x HD/4 dims a warp, which is 32 dims at 128 and 16 at
 *    64. dq is accumulated in
 *    global memory in a fixed order, so it is deterministic. A step's rows
 *    take key block 0's part as a store, then blocks 1, 2 and on as adds,
 *    each block waiting for its turn on a per-step counter, as in
 *    FlashAttention-3's deterministic mode. Block j waits only for block
 *    j-1 of its head, which has the lower index. The GPU dispatches blocks
 *    in index order, so the block waited for is running or done, and there
 *    is no deadlock. The emulator runs blocks in order. This was chosen
 *    over a dk/dv kernel plus a dq kernel, with 7 products as the FMA path
 *    has, for its 5 products. It needs the counters as scratch.
 * Shared memory at 3xTF32 is given by am_sizes. The forward takes 72 KB at
 * 48 dims, for 3 blocks an SM, and 192 KB at 128, for 1 block of 8 warps.
 * The backward takes 112.5 KB at 48, for 2 blocks, and 224.5 KB at 128,
 * for 1 block of 8 warps. sm_90 allows 227 KB a block and an A100 163, so
 * 128 dims need an H100 or later.
 *
 * The cost is predicted from instruction counts, and
 * bench/attention-vs-torch measures it. A B fragment is one or two loads
 * per 3 MMAs. It is split once per staged element, where a 16-byte unit
 * costs 1 cp.async, 1 load, 12 ALU and 2 stores for the 4 or 8 warps that
 * read it, and on the fly as listed above. Each key group computes s^T
 * and dp^T once, in 5 products. Counted in the PTX as loop bodies times
 * trip counts per warp, the instructions per unit of work, and the
 * cvt.rna or MMAs among them, are:
 *   forward 48 dims, a 64-key tile:    ~2200, cvt ~190
 *   forward 128 dims, a 64-key tile:   ~3430, cvt ~320
 *   backward 48 dims, a step:          ~5100, 720 MMAs
 *   backward 128 dims, a step:         ~4700, 960 MMAs
 * On an H200, at B4 N4050 NH8 in 3xTF32, forward and backward take in ms:
 * base ~2.1 / ~6.7 and mp ~4.2 / ~13, against PyTorch SDPA's 4.06 / 9.81
 * and 6.03 / 18.66, as bench/RESULTS.md records. They are issue-bound at
 * ~0.3-0.4 IPC a scheduler, but no lower than the mma.sync tensor-core
 * bound of ~0.5 MMA a clock an SM at 1.8 GHz, which is 3.4 ms forward and
 * 8.5 ms backward at 128 dims. Still uncertain are cvt.rna's cost in SASS,
 * which is not visible here, and the backward's dq turns and barrier
 * stalls with one block of 8 warps an SM at 128 dims.
 *
 * The code is __host__ __device__ over a context c giving the thread's
 * index, the block barrier, the quad shuffle, tf32 rounding, the MMA,
 * cp.async copies and their wait, and dq's turns, stores and adds. Every
 * thread reaches every barrier, and every lane of a warp every MMA and
 * shuffle. */
#ifndef DLPAR_KERNELS_CUDA_ATTENTION_MMA_TILES_CUH
#define DLPAR_KERNELS_CUDA_ATTENTION_MMA_TILES_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cuda/attention_tiles.cuh"

enum {
  AM_ROWS = 64,    /* query rows of a forward block, keys of a backward block, query rows of its step */
  AM_THREADS = 128 /* 4 warps: a forward block's, a backward block's up to 48 dims */
};

/* The shape, and whether 16-byte copies may stage the rows, as am_rows_aligned tells. */
struct am_shape : attn_shape {
  bool vec;
};

/* Whether the rows of a [B, N, NH, HD] fp32 tensor at p all start on 16 bytes. */
static inline bool am_rows_aligned(const void *p, int HD)
{
  return HD % 4 == 0 && (uintptr_t)p % 16 == 0;
}

/* The floats of a row of C elements, in whole 128-byte lines. Split, each
 * element takes W floats: big and small with W 2, big alone with W 1. Raw,
 * with W 0, each takes one float. */
__host__ __device__ constexpr int am_row_floats(int C, int W)
{
  return ((W == 0 ? C : W * C) + 31) / 32 * 32;
}

/* Row r's XOR on the 2-element chunk index of a split row. With W 2, chunks
 * of 16 bytes, 8 a line, take 0 4 2 6 4 0 6 2 by r % 8. With W 1, chunks
 * of 8 bytes, 16 a line, take 4 x {0 1 2 3 1 0 3 2}. The XOR is even, so a
 * unit's two chunks stay together. */
__host__ __device__ constexpr int am_split_swizzle(int W, int r)
{
  return W == 2 ? ((r >> 1 & 3) << 1 ^ (r & 1) << 2) : 4 * ((r & 3) ^ (r >> 2 & 1));
}

/* Row r's XOR on the 4-element unit index of a raw row: 0 2 4 6 by r % 4. */
__host__ __device__ constexpr int am_raw_swizzle(int r)
{
  return 2 * (r & 3);
}

/* The shared memory in floats of a block. The forward holds 64 query rows
 * up to 64 dims, or 128 at 128 dims, split, or raw at 128 dims, and split k
 * and v tiles of 64 keys. The backward holds split q and do, raw k and v,
 * a split 64 x 64 dS, lse and delta. */
__host__ __device__ constexpr int am_forward_floats(int hdp, int passes)
{
  return (hdp <= 64 ? AM_ROWS * am_row_floats(hdp, passes == 3 ? 2 : 1) : 2 * AM_ROWS * am_row_floats(hdp, 0)) +
         2 * AM_ROWS * am_row_floats(hdp, passes == 3 ? 2 : 1);
}

__host__ __device__ constexpr int am_backward_floats(int hdp, int passes)
{
  return AM_ROWS * (2 * am_row_floats(hdp, passes == 3 ? 2 : 1) + 2 * am_row_floats(hdp, 0) +
                    am_row_floats(AM_ROWS, passes == 3 ? 2 : 1) + 2);
}

template <int HDP, int PASSES> struct am_sizes {
  static constexpr int W = PASSES == 3 ? 2 : 1; /* floats of a split element */
  static constexpr int NT = HDP / 8;            /* 8-dim groups of a padded head */
  static constexpr int RF = am_row_floats(HDP, W), RAW_LD = am_row_floats(HDP, 0), DS_RF = am_row_floats(AM_ROWS, W);
  /* The forward has FWD_WARPS warps of 16 query rows and KT keys a tile. q
   * is split up to 64 dims, or raw at 128 for room, the k and v tiles then
   * shared by 8 warps. */
  static constexpr bool FWD_Q_SPLIT = HDP <= 64;
  static constexpr int FWD_WARPS = HDP <= 64 ? 4 : 8, FWD_ROWS = 16 * FWD_WARPS, FWD_THREADS = 32 * FWD_WARPS;
  static constexpr int KT = AM_ROWS, FWD_Q = FWD_ROWS * (FWD_Q_SPLIT ? RF : RAW_LD);
  static constexpr int FWD = FWD_Q + 2 * KT * RF;
  /* The backward has 1 warp for each 16 keys with ROLES 1, or 2. dq per
   * warp is DQ_M 16-row tiles x DQ_N 8-dim groups. */
  static constexpr int ROLES = HDP >= 64 ? 2 : 1, BWD_THREADS = AM_THREADS * ROLES;
  static constexpr int DQ_M = ROLES == 2 ? 2 : 1, DQ_N = ROLES == 2 ? NT / 4 : NT;
  static constexpr int BWD = 2 * AM_ROWS * RF + 2 * AM_ROWS * RAW_LD + AM_ROWS * DS_RF + 2 * AM_ROWS;
  /* the 8-dim groups of o, dk and dv that am_add_product sums apart from the accumulator at once: all */
  static constexpr int CH = NT;
  static_assert(HDP % 16 == 0 && HDP <= 128, "heads are padded as at_padded_head");
  static_assert(FWD == am_forward_floats(HDP, PASSES) && BWD == am_backward_floats(HDP, PASSES),
                "am_forward_floats and am_backward_floats follow this layout");
  static_assert(ROLES == 1 || DQ_N * 4 == NT, "dq split evenly over 8 warps");
  static_assert(4 * FWD <= 232448 && 4 * BWD <= 232448, "a block's tiles exceed sm_90's shared memory");
};

/* Vector accesses of shared memory. On the host, in the emulation, they are
 * checked for the alignment the GPU needs, and done element by element. */
__host__ __device__ inline void am_aligned(const float *p, int bytes)
{
#ifndef __CUDA_ARCH__
  if ((uintptr_t)p % bytes != 0) {
    fprintf(stderr, "attention_mma_tiles: a %d-byte shared access at %p\n", bytes, (const void *)p);
    abort();
  }
#else
  (void)p, (void)bytes;
#endif
}

__host__ __device__ inline float2 am_load2(const float *p)
{
#ifdef __CUDA_ARCH__
  return *(const float2 *)p;
#else
  am_aligned(p, 8);
  return make_float2(p[0], p[1]);
#endif
}

__host__ __device__ inline void am_store2(float *p, float a, float b)
{
#ifdef __CUDA_ARCH__
  *(float2 *)p = make_float2(a, b);
#else
  am_aligned(p, 8);
  p[0] = a, p[1] = b;
#endif
}

__host__ __device__ inline float4 am_load4(const float *p)
{
  am_aligned(p, 16);
  return at_load4(p);
}

__host__ __device__ inline void am_store4(float *p, float a, float b, float c, float d)
{
  am_aligned(p, 16);
  at_store4(p, a, b, c, d);
}

/* Offsets, in floats, are a row's start plus an in-row offset, the row's
 * swizzle depending on the row modulo 8 only, so that a thread computes
 * its few bases once and unrolled indices become immediates. */

/* In-row offset of chunk q, elements 2q and 2q+1, of a split row whose swizzle is f. */
template <int W> __host__ __device__ inline int am_chunk_off(int q, int f)
{
  constexpr int CL = 16 / W; /* chunks a 128-byte line */
  return 32 * (q / CL) + 2 * W * ((q % CL) ^ f);
}

/* Offset of chunk q of row r of a split tile, rows rf apart. */
template <int W> __host__ __device__ inline int am_chunk_at(int r, int q, int rf)
{
  return r * rf + am_chunk_off<W>(q, am_split_swizzle(W, r));
}

/* In-row offset of unit u, elements 4u..4u+3, of a raw row whose swizzle is s. */
__host__ __device__ inline int am_unit_off(int u, int s)
{
  return 32 * (u / 8) + 4 * ((u % 8) ^ s);
}

/* Offset of 4-element unit u of row r, in a raw tile with W 0, or at a
 * split tile's first chunk, where the unit's raw 16 bytes sit before
 * am_expand. */
template <int HDP, int W> __host__ __device__ inline int am_unit_at(int r, int u)
{
  if constexpr (W == 0)
    return r * am_row_floats(HDP, 0) + am_unit_off(u, am_raw_swizzle(r));
  else
    return am_chunk_at<W>(r, 2 * u, am_row_floats(HDP, W));
}

/* A chunk's two elements: big[i] and small[i], which is 0 for W 1. */
template <int W> __host__ __device__ inline void am_pair(const float *p, float (&big)[2], float (&small)[2])
{
  if constexpr (W == 2) {
    const float4 x = am_load4(p);
    big[0] = x.x, small[0] = x.y, big[1] = x.z, small[1] = x.w;
  } else {
    const float2 x = am_load2(p);
    big[0] = x.x, big[1] = x.y, small[0] = small[1] = 0;
  }
}

/* One element's terms: big, then small for W 2. */
template <int W> __host__ __device__ inline void am_elem(const float *p, float &big, float &small)
{
  if constexpr (W == 2) {
    const float2 x = am_load2(p);
    big = x.x, small = x.y;
  } else {
    big = *p, small = 0;
  }
}

/* x's TF32 terms: big = tf32(x), and small = tf32(x - big) for PASSES 3, else 0. */
template <int PASSES, typename Ctx> __host__ __device__ inline void am_split(const Ctx &c, float x, float &big, float &small)
{
  big = c.tf32(x);
  small = PASSES == 3 ? c.tf32(x - big) : 0.0f;
}

/* d += a b from split fragments, by 3xTF32 with the small terms first, or by plain TF32. */
template <int PASSES, typename Ctx>
__host__ __device__ inline void am_mma(const Ctx &c, float (&d)[4], const float (&a_big)[4], const float (&a_small)[4],
                                       const float (&b_big)[2], const float (&b_small)[2])
{
  if constexpr (PASSES == 3) {
    c.mma(d, a_small, b_big);
    c.mma(d, a_big, b_small);
  }
  c.mma(d, a_big, b_big);
}

/* The staging map of a tile of ROWS rows by THREADS threads. A row's HDP / 4
 * units are padded to UP slots, a power of two. Slot e = tid + THREADS i
 * is row e / UP, unit e % UP, and idle past HDP / 4. A thread keeps its
 * unit and steps RP rows, a multiple of 8, so its rows share one swizzle
 * and its offsets are one base and immediates. A warp reads whole 16-byte
 * runs of rows. */
template <int HDP, int THREADS, int ROWS> struct am_stage_map {
  static constexpr int U = HDP / 4, UP = U <= 4 ? 4 : U <= 8 ? 8 : U <= 16 ? 16 : 32, RP = THREADS / UP,
                       STEPS = ROWS / RP;
  static_assert(THREADS % UP == 0 && ROWS % RP == 0 && RP % 8 == 0, "rows split evenly over the threads");
};

/* A block of THREADS copies ROWS rows from r0 of one head into a tile of
 * HDP dims, rows < N and dims < HD, with zeros outside. The tile is raw
 * with W 0. With W 1 or 2 it is split, and each unit's raw 16 bytes land
 * where am_expand splits them. */
template <int HDP, int THREADS, int ROWS, int W, typename Ctx>
__host__ __device__ void am_stage(const Ctx &c, float *dst, const float *src, at_head hd, int r0, const am_shape &a)
{
  typedef am_stage_map<HDP, THREADS, ROWS> M;
  constexpr int RF = am_row_floats(HDP, W);
  const int rt = c.tid / M::UP, u = c.tid % M::UP;
  if (u >= M::U)
    return;
  float *to = dst + am_unit_at<HDP, W>(rt, u); /* then RP rows on */
  size_t from = hd.base + (size_t)(r0 + rt) * hd.ld + 4 * u; /* src + from: read only inside */
#ifdef __CUDA_ARCH__
#pragma unroll 2
#endif
  for (int i = 0; i < M::STEPS; i++, to += M::RP * RF) {
    const int r = rt + M::RP * i;
    if (a.vec) {
      const bool inside = r0 + r < a.N && 4 * u < a.HD; /* HD % 4 == 0 */
      c.template copy<4>(to, inside ? src + from : src, inside);
    } else {
      AT_UNROLL
      for (int j = 0; j < 4; j++) {
        const bool inside = r0 + r < a.N && 4 * u + j < a.HD;
        c.template copy<1>(to + j, inside ? src + from + j : src, inside);
      }
    }
    from += (size_t)M::RP * hd.ld;
  }
}

/* The units this thread copied into a split tile by am_stage are split in
 * place, once they have landed after its wait_copies. Raw x0..x3 at the
 * unit's first chunk become the chunks b0 s0 b1 s1 | b2 s2 b3 s3 with W 2,
 * or b0 b1 b2 b3 with W 1. */
template <int HDP, int THREADS, int ROWS, int PASSES, typename Ctx>
__host__ __device__ void am_expand(const Ctx &c, float *dst)
{
  typedef am_stage_map<HDP, THREADS, ROWS> M;
  constexpr int W = am_sizes<HDP, PASSES>::W;
  constexpr int RF = am_row_floats(HDP, W);
  const int rt = c.tid / M::UP, u = c.tid % M::UP;
  if (u >= M::U)
    return;
  float *const first = dst + am_unit_at<HDP, W>(rt, u);
  AT_UNROLL
  for (int i = 0; i < M::STEPS; i++) {
    float *at = first + i * M::RP * RF;
    const float4 x4 = am_load4(at);
    const float x[4] = {x4.x, x4.y, x4.z, x4.w};
    float big[4], small[4];
    AT_UNROLL
    for (int j = 0; j < 4; j++)
      am_split<PASSES>(c, x[j], big[j], small[j]);
    if constexpr (W == 2) {
      am_store4(at, big[0], small[0], big[1], small[1]);
      am_store4(at + 4, big[2], small[2], big[3], small[3]);
    } else {
      am_store4(at, big[0], big[1], big[2], big[3]);
    }
  }
}

/* acc[n] += X Y_n^T over the HDP dims, for q k^T, k q^T and v do^T. The
 * warp's 16 rows of X start at row m0, a multiple of 16. X is split, or
 * raw with A_W 0 and then split here. They meet rows 8n.. of the split
 * tile Y, for n < KN. Step ks pairs elements 8ks + 2t and 8ks + 2t + 1 as
 * k index t and t+4. A thread's offsets of step ks in its rows repeat
 * every 4 steps, a 128-byte line's worth or two, in which they advance by
 * 32 floats per line. So a turn takes two steps, with offsets from a table
 * of 4. */
template <int HDP, int PASSES, int A_W, int KN, typename Ctx>
__host__ __device__ void am_scores(const Ctx &c, float (&acc)[KN][4], const float *X, const float *Y, int m0, int g,
                                   int t)
{
  typedef am_sizes<HDP, PASSES> S;
  constexpr int XLD = am_row_floats(HDP, A_W), V = 4 / S::W, XV = A_W == 0 ? 4 : 4 / (A_W == 0 ? 1 : A_W);
  static_assert(S::NT % 2 == 0, "two steps a turn");
  const int f = am_split_swizzle(S::W, g), xf = A_W == 0 ? am_raw_swizzle(g) : am_split_swizzle(A_W, g);
  const float *x = X + (m0 + g) * XLD, *y = Y + g * S::RF;
  /* step ks % 4's offsets within the lines of its group of 4 steps (steps of a line: V, XV) */
  auto y_at = [&](int v) { return am_chunk_off<S::W>(4 * (v % V) + t, f) + 32 * (v / V); };
  auto x_at = [&](int v) {
    return (A_W == 0 ? am_unit_off(2 * (v % XV) + (t >> 1), xf) + 2 * (t & 1)
                     : am_chunk_off<A_W == 0 ? 1 : A_W>(4 * (v % XV) + t, xf)) +
           32 * (v / XV);
  };
  const int y0 = y_at(0), y1 = y_at(1), y2 = y_at(2), y3 = y_at(3), x0 = x_at(0), x1 = x_at(1), x2 = x_at(2),
            x3 = x_at(3);
#ifdef __CUDA_ARCH__
#pragma unroll 1
#endif
  for (int ks0 = 0; ks0 < S::NT; ks0 += 2) {
    const bool odd = ks0 & 2; /* ks0 % 4 == 2 */
    const float *xl = x + 32 * (ks0 / 4 * 4 / XV), *yl = y + 32 * (ks0 / 4 * 4 / V);
    AT_UNROLL
    for (int v = 0; v < 2; v++) {
      const float *xk = xl + (odd ? (v ? x3 : x2) : (v ? x1 : x0)), *yk = yl + (odd ? (v ? y3 : y2) : (v ? y1 : y0));
      float a_big[4], a_small[4];
      if constexpr (A_W == 0) {
        const float2 lo = am_load2(xk), hi = am_load2(xk + 8 * XLD);
        const float w[4] = {lo.x, hi.x, lo.y, hi.y};
        AT_UNROLL
        for (int i = 0; i < 4; i++)
          am_split<PASSES>(c, w[i], a_big[i], a_small[i]);
      } else {
        float lo_big[2], lo_small[2], hi_big[2], hi_small[2];
        am_pair<A_W>(xk, lo_big, lo_small);
        am_pair<A_W>(xk + 8 * XLD, hi_big, hi_small);
        a_big[0] = lo_big[0], a_big[1] = hi_big[0], a_big[2] = lo_big[1], a_big[3] = hi_big[1];
        a_small[0] = lo_small[0], a_small[1] = hi_small[0], a_small[2] = lo_small[1], a_small[3] = hi_small[1];
      }
      AT_UNROLL
      for (int n = 0; n < KN; n++) {
        float b_big[2], b_small[2];
        am_pair<S::W>(yk + 8 * n * S::RF, b_big, b_small);
        am_mma<PASSES>(c, acc[n], a_big, a_small, b_big, b_small);
      }
    }
  }
}

/* The split A fragment of 8 columns of a C fragment, as the next product's
 * k step in pi order. c0 (g, 2t) is a0 (g, k = t), c1 (g, 2t+1) is a2, c2
 * is a1, and c3 is a3. */
template <int PASSES, typename Ctx>
__host__ __device__ inline void am_split_c(const Ctx &c, const float (&cf)[4], float (&big)[4], float (&small)[4])
{
  const float a[4] = {cf[0], cf[2], cf[1], cf[3]};
  AT_UNROLL
  for (int i = 0; i < 4; i++)
    am_split<PASSES>(c, a[i], big[i], small[i]);
}

/* In the split dS tile of 64 query rows x 64 keys, the offset of the chunk
 * of query row i that holds keys 16p + j and 16p + j + 8, for j < 8. A
 * warp's C fragment rows g and g+8 take one chunk a column. */
template <int W> __host__ __device__ inline int am_ds_at(int i, int p, int j)
{
  return am_chunk_at<W>(i, 8 * p + j, am_row_floats(AM_ROWS, W));
}

/* acc[n] += P Y over KT 8-row steps, with Y a split tile. P's A fragments
 * come from the C fragments cf, split here. With DS they come instead from
 * the chunks of key group p of the dS tile ds that this thread stored.
 * There query 8kk + 2t holds a0 for key g and a1 for key g+8, and
 * 8kk + 2t + 1 holds a2 and a3. Each chunk of CH 8-dim groups is summed by
 * the MMAs from zero, then added to acc in fp32. The tensor cores truncate
 * their sums toward zero, so a chain of thousands of MMAs onto one
 * accumulator, as with every key into o, drifts. It drifted by 3e-5 at
 * 4050 keys on an H200, as in the emulation. KT steps do not drift. */
template <int HDP, int PASSES, int CH, bool DS, int KT, int NT, typename Ctx>
__host__ __device__ void am_add_product(const Ctx &c, float (&acc)[NT][4], const float (&cf)[KT][4], const float *ds,
                                        int p, const float *Y, int g, int t)
{
  typedef am_sizes<HDP, PASSES> S;
  constexpr int W = S::W, V = 4 / W; /* V: 8-dim groups a 128-byte line */
  static_assert(NT % CH == 0, "chunks of CH 8-dim groups");
  /* element 8n + g of row 8kk + 2t + r: yb[r][n % V] + 8kk RF + 32 (n / V);
   * dS chunk of query 8kk + 2t + r: db[r] + 8kk DS_RF */
  int yb[2][V], db[2];
  AT_UNROLL
  for (int r = 0; r < 2; r++) {
    const int row = 2 * t + r;
    AT_UNROLL
    for (int v = 0; v < V; v++)
      yb[r][v] = row * S::RF + am_chunk_off<W>(4 * v + (g >> 1), am_split_swizzle(W, row)) + W * (g & 1);
    db[r] = am_ds_at<W>(row, p, g);
  }
  AT_UNROLL
  for (int n0 = 0; n0 < NT; n0 += CH) {
    float part[CH][4] = {};
    AT_UNROLL
    for (int kk = 0; kk < KT; kk++) {
      float a_big[4], a_small[4];
      if constexpr (DS) {
        float lo_big[2], lo_small[2], hi_big[2], hi_small[2];
        am_pair<W>(ds + db[0] + 8 * kk * S::DS_RF, lo_big, lo_small);
        am_pair<W>(ds + db[1] + 8 * kk * S::DS_RF, hi_big, hi_small);
        a_big[0] = lo_big[0], a_big[1] = lo_big[1], a_big[2] = hi_big[0], a_big[3] = hi_big[1];
        a_small[0] = lo_small[0], a_small[1] = lo_small[1], a_small[2] = hi_small[0], a_small[3] = hi_small[1];
      } else {
        am_split_c<PASSES>(c, cf[kk], a_big, a_small);
      }
      AT_UNROLL
      for (int n = 0; n < CH; n++) {
        const int imm = 8 * kk * S::RF + 32 * ((n0 + n) / V);
        float b_big[2], b_small[2];
        am_elem<W>(Y + yb[0][(n0 + n) % V] + imm, b_big[0], b_small[0]);
        am_elem<W>(Y + yb[1][(n0 + n) % V] + imm, b_big[1], b_small[1]);
        am_mma<PASSES>(c, part[n], a_big, a_small, b_big, b_small);
      }
    }
    AT_UNROLL
    for (int n = 0; n < CH; n++)
      AT_UNROLL
      for (int e = 0; e < 4; e++)
        acc[n0 + n][e] += part[n][e];
  }
}

/* The running softmax of rows g and g+8, elements 2r and 2r+1 of each C
 * fragment of s, over one more tile of KN 8-key groups. The tile is scaled
 * here, and columns >= count are masked. s becomes the tile's p against
 * the new maxima, and acc and the sums are rescaled to them. The rows'
 * statistics are the quad's. */
template <int KN, int NT, typename Ctx>
__host__ __device__ void am_online_softmax(const Ctx &c, float (&s)[KN][4], float (&acc)[NT][4], float (&row_max)[2],
                                           float (&row_sum)[2], int count, float scale, int t)
{
  AT_UNROLL
  for (int r = 0; r < 2; r++) {
    float tile_max = -INFINITY, tile_sum = 0;
    AT_UNROLL
    for (int n = 0; n < KN; n++)
      AT_UNROLL
      for (int e = 0; e < 2; e++) {
        float &x = s[n][2 * r + e];
        x = 8 * n + 2 * t + e < count ? x * scale : -INFINITY;
        tile_max = fmaxf(tile_max, x);
      }
    tile_max = fmaxf(tile_max, c.shfl_xor(tile_max, 1));
    tile_max = fmaxf(tile_max, c.shfl_xor(tile_max, 2));
    const float new_max = fmaxf(row_max[r], tile_max), correction = expf(row_max[r] - new_max);
    AT_UNROLL
    for (int n = 0; n < KN; n++)
      AT_UNROLL
      for (int e = 0; e < 2; e++) {
        float &x = s[n][2 * r + e];
        x = expf(x - new_max);
        tile_sum += x;
      }
    tile_sum += c.shfl_xor(tile_sum, 1);
    tile_sum += c.shfl_xor(tile_sum, 2);
    row_sum[r] = row_sum[r] * correction + tile_sum;
    row_max[r] = new_max;
    AT_UNROLL
    for (int n = 0; n < NT; n++)
      acc[n][2 * r] *= correction, acc[n][2 * r + 1] *= correction;
  }
}

/* out = acc * factor[r] for rows r0 + g and r0 + g + 8 of one head, those
 * < N, at dims d0 + 8n + 2t + e, those < HD. */
template <int NT>
__host__ __device__ void am_write_rows(float *out, const float (&acc)[NT][4], const float (&factor)[2], at_head hd,
                                       int r0, int d0, int g, int t, const attn_shape &a)
{
  AT_UNROLL
  for (int r = 0; r < 2; r++) {
    const int row = r0 + g + 8 * r;
    AT_UNROLL
    for (int n = 0; n < NT; n++)
      AT_UNROLL
      for (int e = 0; e < 2; e++) {
        const int d = d0 + 8 * n + 2 * t + e;
        if (row < a.N && d < a.HD)
          out[hd.base + (size_t)row * hd.ld + d] = acc[n][2 * r + e] * factor[r];
      }
  }
}

/* Forward for the query rows [i0, i0 + FWD_ROWS) of head bh, by a block of FWD_THREADS. */
template <int HDP, int PASSES, typename Ctx>
__host__ __device__ void am_forward_block(const Ctx &c, float *smem, int i0, int bh, float *o, float *lse,
                                          const float *q, const float *k, const float *v, const am_shape &a)
{
  typedef am_sizes<HDP, PASSES> S;
  constexpr int W = S::W, KT = S::KT, KN = KT / 8, QW = S::FWD_Q_SPLIT ? W : 0, THREADS = S::FWD_THREADS;
  const int warp = c.tid / 32, g = c.tid % 32 / 4, t = c.tid % 4, m0 = 16 * warp;
  const at_head hd = at_head_of(bh, a);
  float *qs = smem, *ks = qs + S::FWD_Q, *vs = ks + KT * S::RF;
  float acc[S::NT][4] = {}, row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0, 0}, inv_sum[2];
  am_stage<HDP, THREADS, S::FWD_ROWS, QW>(c, qs, q, hd, i0, a);
  am_stage<HDP, THREADS, KT, W>(c, ks, k, hd, 0, a);
  for (int j0 = 0; j0 < a.N; j0 += KT) {
    float s[KN][4] = {};
    c.wait_copies();
    if (QW != 0 && j0 == 0)
      am_expand<HDP, THREADS, S::FWD_ROWS, PASSES>(c, qs);
    am_expand<HDP, THREADS, KT, PASSES>(c, ks);
    c.sync(); /* k and q are split, and every warp is done with the previous v */
    am_stage<HDP, THREADS, KT, W>(c, vs, v, hd, j0, a);
    am_scores<HDP, PASSES, QW>(c, s, qs, ks, m0, g, t);
    am_online_softmax(c, s, acc, row_max, row_sum, a.N - j0, a.scale, t);
    c.wait_copies();
    am_expand<HDP, THREADS, KT, PASSES>(c, vs);
    c.sync(); /* v split; every warp is done with k */
    if (j0 + KT < a.N)
      am_stage<HDP, THREADS, KT, W>(c, ks, k, hd, j0 + KT, a);
    am_add_product<HDP, PASSES, S::CH, false>(c, acc, s, nullptr, 0, vs, g, t);
  }
  AT_UNROLL
  for (int r = 0; r < 2; r++) {
    const int i = i0 + m0 + g + 8 * r;
    inv_sum[r] = 1.0f / row_sum[r];
    if (t == 0 && i < a.N)
      lse[(size_t)bh * a.N + i] = row_max[r] + logf(row_sum[r]);
  }
  am_write_rows(o, acc, inv_sum, hd, i0 + m0, 0, g, t, a);
}

/* One backward step's q and do rows [i0, i0 + 64) as split tiles, and their lse and delta. */
template <int HDP, int PASSES, typename Ctx>
__host__ __device__ void am_stage_step(const Ctx &c, float *qs, float *dos, float *lse_s, float *delta_s,
                                       const float *q, const float *dout, const float *lse, const float *delta,
                                       at_head hd, int bh, int i0, const am_shape &a)
{
  typedef am_sizes<HDP, PASSES> S;
  am_stage<HDP, S::BWD_THREADS, AM_ROWS, S::W>(c, qs, q, hd, i0, a);
  am_stage<HDP, S::BWD_THREADS, AM_ROWS, S::W>(c, dos, dout, hd, i0, a);
  for (int e = c.tid; e < AM_ROWS; e += S::BWD_THREADS) {
    const bool inside = i0 + e < a.N;
    const size_t at = (size_t)bh * a.N + (inside ? i0 + e : 0);
    c.template copy<1>(lse_s + e, lse + at, inside);
    c.template copy<1>(delta_s + e, delta + at, inside);
  }
}

/* Backward for the keys [jt * 64, jt * 64 + 64) of head bh, by a block of
 * am_sizes<HDP, PASSES>::BWD_THREADS. It computes dk and dv of those rows,
 * and key block jt's turn of dq on every step. turns holds the head's
 * per-step counters, zero before key block 0. The steps run are
 * first_step, first_step + step_stride and on. The kernel runs them all,
 * and the emulator may pick. */
template <int HDP, int PASSES, typename Ctx>
__host__ __device__ void am_backward_block(const Ctx &c, float *smem, int jt, int bh, float *dq, float *dk, float *dv,
                                           const float *q, const float *k, const float *v, const float *dout,
                                           const float *lse, const float *delta, int *turns, const am_shape &a,
                                           int first_step, int step_stride)
{
  typedef am_sizes<HDP, PASSES> S;
  constexpr int W = S::W, ROLES = S::ROLES, THREADS = S::BWD_THREADS, QT = AM_ROWS / 8;
  const int warp = c.tid / 32, g = c.tid % 32 / 4, t = c.tid % 4, j0 = jt * AM_ROWS,
            steps = (a.N + AM_ROWS - 1) / AM_ROWS;
  /* The warp's 16 keys, group p, and its role. Role 0 does all five
   * products with ROLES 1, else s^T, P^T and dv. Role 1 does dp^T, dS^T
   * and dk. Then its dq rows and dims. */
  const int p = warp % 4, role = warp / 4, m0 = 16 * p;
  const int qb = ROLES == 2 ? 32 * (warp % 2) : 16 * warp, d0 = ROLES == 2 ? 8 * S::DQ_N * (warp / 2) : 0;
  const bool scores = ROLES == 1 || role == 0, grads = ROLES == 1 || role == 1;
  const at_head hd = at_head_of(bh, a);
  /* dS chunk (query 8n + 2t + r, keys m0 + g, + 8): dsb[r] + 8n DS_RF; the
   * dq A chunks of row g: + row DS_RF; the dq B units of k: row LD + kb[n] */
  const int dsb[2] = {am_ds_at<W>(2 * t, p, g), am_ds_at<W>(2 * t + 1, p, g)}, dqf = am_split_swizzle(W, g);
  int kb[S::DQ_N];
  AT_UNROLL
  for (int n = 0; n < S::DQ_N; n++)
    kb[n] = am_unit_off((d0 + 8 * n + g) >> 2, am_raw_swizzle(t)) + (g & 3);
  float *qs = smem, *dos = qs + AM_ROWS * S::RF, *ks = dos + AM_ROWS * S::RF, *vs = ks + AM_ROWS * S::RAW_LD;
  float *dss = vs + AM_ROWS * S::RAW_LD, *lse_s = dss + AM_ROWS * S::DS_RF, *delta_s = lse_s + AM_ROWS;
  /* ROLES 1: dv, dk; ROLES 2: role 0's dv or role 1's dk */
  float kv[ROLES == 1 ? 2 : 1][S::NT][4] = {};
  const float one[2] = {1, 1};
  am_stage<HDP, THREADS, AM_ROWS, 0>(c, ks, k, hd, j0, a);
  am_stage<HDP, THREADS, AM_ROWS, 0>(c, vs, v, hd, j0, a);
  am_stage_step<HDP, PASSES>(c, qs, dos, lse_s, delta_s, q, dout, lse, delta, hd, bh, first_step * AM_ROWS, a);
  for (int step = first_step; step < steps; step += step_stride) {
    const int i0 = step * AM_ROWS;
    /* With ROLES 1, one accumulator holds s^T, then P^T, and the other dp^T, then dS^T.
     * With ROLES 2, one holds the role's. */
    float sc[ROLES == 1 ? 2 : 1][QT][4] = {}, dq_acc[S::DQ_M][S::DQ_N][4] = {};
    float(&st)[QT][4] = sc[0];
    float(&dpt)[QT][4] = sc[ROLES == 1 ? 1 : 0];
    c.wait_copies();
    am_expand<HDP, THREADS, AM_ROWS, PASSES>(c, qs);
    am_expand<HDP, THREADS, AM_ROWS, PASSES>(c, dos);
    c.sync(); /* the step's rows are in */
    if (scores) { /* s^T of the warp's keys, then P^T (key m0 + g + 8 (e / 2), query 8n + 2t + e % 2) */
      am_scores<HDP, PASSES, 0>(c, st, ks, qs, m0, g, t);
      AT_UNROLL
      for (int n = 0; n < QT; n++)
        AT_UNROLL
        for (int e = 0; e < 4; e++) {
          const int col = 8 * n + 2 * t + e % 2;
          float unused = 0;
          at_prob_grad(st[n][e], unused, lse_s[col], 0.0f, i0 + col < a.N && j0 + m0 + g + 8 * (e / 2) < a.N,
                       a.scale);
        }
    }
    if (grads)
      am_scores<HDP, PASSES, 0>(c, dpt, vs, dos, m0, g, t);
    if constexpr (ROLES == 2) { /* P^T to the key group's other warp, in the chunks it then fills with dS */
      if (role == 0)
        AT_UNROLL
        for (int n = 0; n < QT; n++)
          AT_UNROLL
          for (int e = 0; e < 2; e++)
            am_store2(dss + dsb[e] + 8 * n * S::DS_RF, st[n][e], st[n][2 + e]);
      c.sync(); /* P^T is across */
    }
    if (grads) { /* dS^T = P^T (dp^T - delta), as at_prob_grad has it, scaled and split into dss; dk += dS^T q */
      AT_UNROLL
      for (int n = 0; n < QT; n++)
        AT_UNROLL
        for (int e = 0; e < 2; e++) {
          const int col = 8 * n + 2 * t + e;
          float *at = dss + dsb[e] + 8 * n * S::DS_RF;
          float prob[2] = {st[n][e], st[n][2 + e]}, big[2], small[2];
          if constexpr (ROLES == 2) {
            const float2 x = am_load2(at);
            prob[0] = x.x, prob[1] = x.y;
          }
          AT_UNROLL
          for (int r = 0; r < 2; r++) {
            const float x = prob[r] * (dpt[n][2 * r + e] - delta_s[col]) * a.scale; /* dk and dq need no more */
            am_split<PASSES>(c, x, big[r], small[r]);
          }
          if constexpr (W == 2)
            am_store4(at, big[0], small[0], big[1], small[1]);
          else
            am_store2(at, big[0], big[1]);
        }
      am_add_product<HDP, PASSES, S::CH, true>(c, kv[ROLES == 1 ? 1 : 0], dpt, dss, p, qs, g, t);
    }
    if (scores) /* dv += P^T do */
      am_add_product<HDP, PASSES, S::CH, false>(c, kv[0], st, nullptr, 0, dos, g, t);
    c.sync(); /* dS is whole; every warp is done with q, do, lse and delta */
    if (step + step_stride < steps)
      am_stage_step<HDP, PASSES>(c, qs, dos, lse_s, delta_s, q, dout, lse, delta, hd, bh, i0 + step_stride * AM_ROWS,
                                 a);
    /* dq of query rows qb.. (DQ_M tiles), dims d0.. (DQ_N groups) += dS k:
     * k step kk over keys 16 (kk / 2) + 4 (kk % 2) + t (k index t), + 8 (t + 4) */
    for (int kk = 0; kk < QT; kk++) {
      const int key = 16 * (kk / 2) + 4 * (kk % 2) + t, ao = am_chunk_off<W>(8 * (kk / 2) + 4 * (kk % 2) + t, dqf);
      const float *x = dss + (qb + g) * S::DS_RF + ao, *y = ks + key * S::RAW_LD;
      float a_big[S::DQ_M][4], a_small[S::DQ_M][4];
      AT_UNROLL
      for (int mi = 0; mi < S::DQ_M; mi++) {
        float lo_big[2], lo_small[2], hi_big[2], hi_small[2];
        am_pair<W>(x + 16 * mi * S::DS_RF, lo_big, lo_small);
        am_pair<W>(x + (16 * mi + 8) * S::DS_RF, hi_big, hi_small);
        a_big[mi][0] = lo_big[0], a_big[mi][1] = hi_big[0], a_big[mi][2] = lo_big[1], a_big[mi][3] = hi_big[1];
        a_small[mi][0] = lo_small[0], a_small[mi][1] = hi_small[0];
        a_small[mi][2] = lo_small[1], a_small[mi][3] = hi_small[1];
      }
      AT_UNROLL
      for (int n = 0; n < S::DQ_N; n++) {
        float b_big[2], b_small[2];
        am_split<PASSES>(c, y[kb[n]], b_big[0], b_small[0]);
        am_split<PASSES>(c, y[8 * S::RAW_LD + kb[n]], b_big[1], b_small[1]);
        AT_UNROLL
        for (int mi = 0; mi < S::DQ_M; mi++)
          am_mma<PASSES>(c, dq_acc[mi][n], a_big[mi], a_small[mi], b_big, b_small);
      }
    }
    c.wait_turn(turns + (size_t)bh * steps + step, jt); /* key blocks 0 .. jt-1 have added theirs */
    AT_UNROLL
    for (int mi = 0; mi < S::DQ_M; mi++)
      AT_UNROLL
      for (int r = 0; r < 2; r++) {
        const int row = i0 + qb + 16 * mi + g + 8 * r;
        AT_UNROLL
        for (int n = 0; n < S::DQ_N; n++)
          AT_UNROLL
          for (int e = 0; e < 2; e++) {
            const int d = d0 + 8 * n + 2 * t + e;
            float *at = dq + hd.base + (size_t)row * hd.ld + d;
            if (row < a.N && d < a.HD) {
              if (jt == 0)
                c.store(at, dq_acc[mi][n][2 * r + e]);
              else
                c.add(at, dq_acc[mi][n][2 * r + e]);
            }
          }
      }
    c.pass_turn(turns + (size_t)bh * steps + step, jt + 1);
  }
  if constexpr (ROLES == 1) {
    am_write_rows(dv, kv[0], one, hd, j0 + m0, 0, g, t, a);
    am_write_rows(dk, kv[1], one, hd, j0 + m0, 0, g, t, a);
  } else {
    am_write_rows(role == 0 ? dv : dk, kv[0], one, hd, j0 + m0, 0, g, t, a);
  }
}

#endif
