/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/attention_mma_emulator.cu: a stand-in for the GPU, named so,
 * running the tensor-core attention's own block code from
 * kernels/cuda/attention_mma_tiles.cuh on the CPU. It goes through the tests'
 * one block runner in block_emulator.cuh, which runs a fiber per CUDA thread
 * of a block. The fibers switch at every barrier, shuffle and MMA, and these
 * complete when the block's threads or the warp's lanes have all arrived.
 * Host code only: nothing here needs a GPU.
 *  - mma.sync m16n8k8 .tf32: the 16 x 8 A, 8 x 8 B and 16 x 8 C matrices are
 *    assembled from the 32 lanes' a0..a3, b0..b1, c0..c3 by the PTX ISA's
 *    index maps, from "Matrix Fragments for mma.m16n8k8", with
 *    groupID = lane >> 2 and threadID_in_group = lane % 4. Each operand is
 *    read as the tensor core reads it, keeping the top 19 bits and cutting the
 *    low 13. The products and C are summed exactly and rounded toward zero,
 *    because the tensor cores truncate. Measured on an H200, o drifted 3e-5
 *    over 4050 keys of MMAs onto one accumulator, as it does here. Each lane
 *    is handed its d0..d3.
 *  - cvt.rna.tf32.f32 bit for bit: 0x1000 is added to a finite value's bits,
 *    which rounds to nearest with ties away, then the low 13 bits are cleared.
 *  - cp.async: the copy, or the zeros, lands at the issue, or at the issuing
 *    thread's wait when copies_at_wait is set. It is checked for alignment
 *    and bounds.
 *  - The threads run in lockstep, or warp by warp as far as each gets, so
 *    that a missing barrier shows. Shared memory is poisoned with NaN before
 *    each block. Blocks run in index order. dq's turns are checked: a block
 *    finding the wrong count fails.
 * The real kernels run in tests/gpu/test_attention_gpu on a GPU. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/cuda/attention_mma_tiles.cuh"
#include "tests/unit/block_emulator.cuh"
#include "tests/unit/emulators.h"

enum { AM_STACK = 1 << 17, AM_MAX_THREADS = 256 };

enum { AM_MMA = EMU_FIRST_OWN_KIND };

struct am_copy {
  float *dst;
  const float *src;
  int floats;
  bool inside;
};

/* The global arrays a block may copy from: [first, first + count). */
struct am_range {
  const float *first;
  size_t count;
};

/* What a block keeps beside the runner's: its cp.async copies not yet
 * landed, a thread's list each, and whether a dq turn was found wrong. */
struct am_block_state {
  bool copies_at_wait, check_turns, failed;
  std::vector<std::vector<am_copy>> pending;
  const std::vector<am_range> *sources;
};

static void die(const char *what)
{
  emu_die("attention_mma_emulator", what);
}

#ifndef __CUDA_ARCH__ /* the host pass only; the device bodies below never call these */
static uint32_t bits_of(float x)
{
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static float float_of(uint32_t u)
{
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* cvt.rna.tf32.f32 */
static float tf32_rna(float x)
{
  const uint32_t u = bits_of(x);
  return float_of(((isfinite(x) ? u + 0x1000u : u)) & 0xffffe000u);
}

extern "C" float am_tf32_rna(float x)
{
  return tf32_rna(x);
}

/* an fp32 register as the tensor core's TF32 operand */
static float tf32_operand(float x)
{
  return float_of(bits_of(x) & 0xffffe000u);
}

/* x as a float, rounded toward zero: one step down in magnitude where
 * rounding to nearest went up */
static float toward_zero(double x)
{
  const float f = (float)x;
  return fabs((double)f) > fabs(x) ? float_of(bits_of(f) - 1) : f;
}

/* d = c + a b of one m16n8k8 TF32 MMA, from and to the lanes' fragments.
 * The operands are taken as the tensor core reads them, and the exact sum of
 * the products and c is rounded toward zero. The tensor cores truncate, as
 * shown by Fasi et al., "Numerical behavior of NVIDIA tensor cores", 2021.
 * An H200 drifts as this does over a chain of MMAs onto one accumulator. */
static void complete_mma(emu_warp &w, const char *)
{
  float A[16][8], B[8][8], C[16][8];
  for (int l = 0; l < 32; l++) {
    const int g = l >> 2, t = l % 4;
    const emu_lane &x = w.lane[l];
    A[g][t] = tf32_operand(x.a[0]), A[g + 8][t] = tf32_operand(x.a[1]);
    A[g][t + 4] = tf32_operand(x.a[2]), A[g + 8][t + 4] = tf32_operand(x.a[3]);
    B[t][g] = tf32_operand(x.b[0]), B[t + 4][g] = tf32_operand(x.b[1]);
    C[g][2 * t] = x.c[0], C[g][2 * t + 1] = x.c[1], C[g + 8][2 * t] = x.c[2], C[g + 8][2 * t + 1] = x.c[3];
  }
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 8; n++) {
      double d = C[m][n];
      for (int k = 0; k < 8; k++)
        d += (double)A[m][k] * B[k][n];
      C[m][n] = toward_zero(d);
    }
  for (int l = 0; l < 32; l++) {
    const int g = l >> 2, t = l % 4;
    emu_lane &x = w.lane[l];
    x.d[0] = C[g][2 * t], x.d[1] = C[g][2 * t + 1], x.d[2] = C[g + 8][2 * t], x.d[3] = C[g + 8][2 * t + 1];
  }
}

#endif

/* The block code's context in the emulation: the runner's barrier and
 * shuffle, and the tensor cores' MMA, cvt and cp.async. The device bodies
 * are never run. */
struct am_host_ctx : emu_ctx {
  am_block_state *s;
#ifndef __CUDA_ARCH__
  void do_copy(const am_copy &x) const
  {
    if (!x.inside) {
      memset(x.dst, 0, x.floats * sizeof(float));
      return;
    }
    bool known = false;
    for (const am_range &r : *s->sources)
      known = known || (x.src >= r.first && x.src + x.floats <= r.first + r.count);
    if (!known)
      die("a copy reads outside the inputs");
    memcpy(x.dst, x.src, x.floats * sizeof(float));
  }
#endif
  __host__ __device__ float tf32(float x) const
  {
#ifndef __CUDA_ARCH__
    return tf32_rna(x);
#else
    return x;
#endif
  }
  __host__ __device__ void mma(float (&d)[4], const float (&a)[4], const float (&bf)[2]) const
  {
#ifndef __CUDA_ARCH__
    emu_lane &x = my_lane();
    memcpy(x.a, a, sizeof x.a);
    memcpy(x.b, bf, sizeof x.b);
    memcpy(x.c, d, sizeof x.c);
    arrive(AM_MMA, complete_mma);
    memcpy(d, x.d, sizeof x.d);
#else
    (void)d, (void)a, (void)bf;
#endif
  }
  template <int W> __host__ __device__ void copy(float *dst, const float *src, bool inside) const
  {
#ifndef __CUDA_ARCH__
    const float *smem = (const float *)b->smem.data();
    if ((uintptr_t)dst % (4 * W) != 0 || (inside && (uintptr_t)src % (4 * W) != 0))
      die("a copy's addresses are not aligned to its size");
    if (dst < smem || dst + W > smem + 4 * b->smem.size())
      die("a copy writes outside the shared memory");
    if (s->copies_at_wait)
      s->pending[tid].push_back({dst, src, W, inside});
    else
      do_copy({dst, src, W, inside});
#else
    (void)dst, (void)src, (void)inside;
#endif
  }
  __host__ __device__ void wait_copies() const
  {
#ifndef __CUDA_ARCH__
    for (const am_copy &x : s->pending[tid])
      do_copy(x);
    s->pending[tid].clear();
#endif
  }
  __host__ __device__ void wait_turn(const int *turn, int value) const
  {
#ifndef __CUDA_ARCH__
    if (tid == 0 && s->check_turns && *turn != value) {
      fprintf(stderr, "attention_mma_emulator: key block %d found dq's turn at %d\n", value, *turn);
      s->failed = true;
    }
    sync();
#else
    (void)turn, (void)value;
#endif
  }
  __host__ __device__ void pass_turn(int *turn, int value) const
  {
#ifndef __CUDA_ARCH__
    sync();
    if (tid == 0)
      *turn = value;
#else
    (void)turn, (void)value;
#endif
  }
  __host__ __device__ void store(float *p, float v) const { *p = v; }
  __host__ __device__ void add(float *p, float v) const { *p += v; }
};

/* Runs every block's code in turn through the tests' block runner. */
struct am_runner {
  emu_runner<am_host_ctx> blocks{"attention_mma_emulator", AM_MAX_THREADS, AM_STACK};
  bool copies_at_wait = false, failed = false;
  const std::vector<am_range> *sources = nullptr;

  /* One block of `threads` with `floats` of shared memory. failed is set when
   * a turn is found wrong. A thread must have waited for its copies by its end. */
  void run(int threads, int floats, bool check_turns, const emu_runner<am_host_ctx>::body_fn &body)
  {
    am_block_state state = {copies_at_wait, check_turns, false, std::vector<std::vector<am_copy>>(threads), sources};
    am_host_ctx context = {};
    context.s = &state;
    blocks.run(threads, floats, context, [&](const am_host_ctx &c, float *smem) {
      body(c, smem);
      if (!state.pending[c.tid].empty())
        die("a thread ended with copies it never waited for");
    });
    failed = failed || state.failed;
  }
};

static void mark(bool *rows, int r0, int count, int N)
{
  for (int r = r0; r < r0 + count && r < N; r++)
    rows[r] = true;
}

template <int HDP, int PASSES> static int emulate_at(const am_emulation *e, const am_shape &a)
{
  typedef am_sizes<HDP, PASSES> S;
  const int tiles = (e->io.N + AM_ROWS - 1) / AM_ROWS, heads = e->io.B * e->io.NH;
  const size_t n = (size_t)e->io.B * e->io.N * e->io.NH * e->io.HD, rows = (size_t)heads * e->io.N;
  std::vector<float> delta(rows), dq_spare(n), dk_spare(n), dv_spare(n);
  std::vector<int> turns((size_t)heads * tiles);
  const std::vector<am_range> sources = {{e->io.q, n}, {e->io.k, n}, {e->io.v, n}, {e->io.dout, n}, {e->io.lse, rows},
                                         {delta.data(), rows}};
  std::vector<int> picked, picked_fwd; /* the emulated key tiles, forward blocks */
  const int fwd_blocks = (e->io.N + S::FWD_ROWS - 1) / S::FWD_ROWS;
  am_runner runner;
  runner.copies_at_wait = e->copies_at_wait;
  runner.blocks.schedule = e->schedule;
  runner.sources = &sources;
  for (int i = 0; i < tiles; i++)
    if (!e->edges || i == 0 || i == tiles - 1)
      picked.push_back(i);
  for (int i = 0; i < fwd_blocks; i++)
    if (!e->edges || i == 0 || i == fwd_blocks - 1)
      picked_fwd.push_back(i);
  for (int bh = 0; bh < heads; bh++)
    for (int i : picked_fwd)
      runner.run(S::FWD_THREADS, S::FWD, false, [&](const am_host_ctx &c, float *smem) {
        am_forward_block<HDP, PASSES>(c, smem, i * S::FWD_ROWS, bh, e->io.o, e->io.lse, e->io.q, e->io.k, e->io.v, a);
      });
  for (size_t r = 0; r < rows; r++) { /* delta_kernel's rows */
    const at_head hd = at_head_of((int)(r / e->io.N), a);
    const size_t at = hd.base + (r % e->io.N) * hd.ld;
    delta[r] = at_delta_row(e->io.dout + at, e->io.o + at, e->io.HD);
  }
  /* dk, dv of the picked key blocks. Their dq parts go to a spare, since the
   * other key blocks are not run and their turns are not checked. */
  for (int bh = 0; bh < heads; bh++)
    for (int j : picked)
      runner.run(S::BWD_THREADS, S::BWD, !e->edges, [&](const am_host_ctx &c, float *smem) {
        am_backward_block<HDP, PASSES>(c, smem, j, bh, e->edges ? dq_spare.data() : e->io.dq, e->io.dk, e->io.dv, e->io.q, e->io.k,
                                       e->io.v, e->io.dout, e->io.lse, delta.data(), turns.data(), a, 0, 1);
      });
  /* with edges: dq of the picked query rows, every key block in turn over them */
  if (e->edges) {
    std::fill(turns.begin(), turns.end(), 0);
    for (int bh = 0; bh < heads; bh++)
      for (int j = 0; j < tiles; j++)
        runner.run(S::BWD_THREADS, S::BWD, true, [&](const am_host_ctx &c, float *smem) {
          am_backward_block<HDP, PASSES>(c, smem, j, bh, e->io.dq, dk_spare.data(), dv_spare.data(), e->io.q, e->io.k, e->io.v,
                                         e->io.dout, e->io.lse, delta.data(), turns.data(), a, 0,
                                         tiles > 1 ? tiles - 1 : 1);
        });
  }
  for (int i : picked_fwd)
    mark(e->o_rows, i * S::FWD_ROWS, S::FWD_ROWS, e->io.N);
  for (int i : picked) {
    mark(e->dq_rows, i * AM_ROWS, AM_ROWS, e->io.N);
    mark(e->dkv_rows, i * AM_ROWS, AM_ROWS, e->io.N);
  }
  return runner.failed ? -1 : 0;
}

template <int PASSES> static int emulate(const am_emulation *e, const am_shape &a)
{
  switch (at_padded_head(e->io.HD)) {
  case 16: return emulate_at<16, PASSES>(e, a);
  case 32: return emulate_at<32, PASSES>(e, a);
  case 48: return emulate_at<48, PASSES>(e, a);
  case 64: return emulate_at<64, PASSES>(e, a);
  case 128: return emulate_at<128, PASSES>(e, a);
  default: return -1;
  }
}

/* Shared-memory wavefronts of one warp access. Lane l reads `bytes` at
 * float offset at[l], or nothing if that is < 0. 4-byte accesses go 32 lanes
 * a phase, 8-byte 16, and 16-byte 8. A phase takes as many wavefronts as the
 * most distinct words in one bank; the same word is a broadcast. Returns the
 * worst phase's count. */
static int wavefronts(const int (&at)[32], int bytes)
{
  const int lanes = 128 / bytes > 32 ? 32 : 128 / bytes, words = bytes / 4;
  int worst = 0;
  for (int p0 = 0; p0 < 32; p0 += lanes) {
    std::vector<int> seen[32];
    for (int l = p0; l < p0 + lanes; l++)
      for (int w = 0; w < words && at[l] >= 0; w++) {
        const int word = at[l] + w;
        std::vector<int> &bank = seen[word % 32];
        if (std::find(bank.begin(), bank.end(), word) == bank.end())
          bank.push_back(word);
      }
    for (const std::vector<int> &bank : seen)
      worst = std::max(worst, (int)bank.size());
  }
  return worst;
}

/* The block code's fragment accesses of shared memory at one head size.
 * Their offsets come from its own helpers am_chunk_off, am_unit_off, am_ds_at
 * and the swizzles, as am_scores, am_add_product and the dq step compute
 * them. Each warp access is taken over its steps, and the most wavefronts any
 * takes goes by name into `report`; 1 is conflict-free. */
template <int HDP, int PASSES> static int bank_check(char *report, size_t size)
{
  typedef am_sizes<HDP, PASSES> S;
  constexpr int W = S::W, V = 4 / W;
  int worst[7] = {}, at[32];
  const char *const names[7] = {"pair", "raw A", "element", "dS chunk", "dq A", "dq B", "staging"};
  for (int ks = 0; ks < S::NT; ks++) /* am_scores: B pairs with split A rows, raw A rows */
    for (int n = 0; n < 8; n++) {
      for (int l = 0; l < 32; l++) {
        const int g = l / 4, t = l % 4;
        at[l] = (8 * n + g) * S::RF + am_chunk_off<W>(4 * ks + t, am_split_swizzle(W, g));
      }
      worst[0] = std::max(worst[0], wavefronts(at, 8 * W));
      for (int l = 0; l < 32; l++) {
        const int g = l / 4, t = l % 4;
        at[l] = (16 * (n % 4) + g) * S::RAW_LD + am_unit_off(2 * ks + (t >> 1), am_raw_swizzle(g)) + 2 * (t & 1);
      }
      worst[1] = std::max(worst[1], wavefronts(at, 8));
    }
  for (int kk = 0; kk < 8; kk++) /* am_add_product: B elements; the dS chunks, stores and dk's A */
    for (int n = 0; n < S::NT; n++)
      for (int r = 0; r < 2; r++) {
        for (int l = 0; l < 32; l++) {
          const int g = l / 4, t = l % 4, row = 2 * t + r;
          at[l] = row * S::RF + am_chunk_off<W>(4 * (n % V) + (g >> 1), am_split_swizzle(W, row)) + W * (g & 1) +
                  8 * kk * S::RF + 32 * (n / V);
        }
        worst[2] = std::max(worst[2], wavefronts(at, 4 * W));
        for (int p = 0; p < 4; p++) {
          for (int l = 0; l < 32; l++)
            at[l] = am_ds_at<W>(8 * kk + 2 * (l % 4) + r, p, l / 4);
          worst[3] = std::max(worst[3], wavefronts(at, 8 * W));
        }
      }
  for (int kk = 0; kk < 8; kk++) { /* the dq step: A chunks of dS, B elements of the raw k */
    for (int qb = 0; qb < 64; qb += 8) {
      for (int l = 0; l < 32; l++) {
        const int g = l / 4, t = l % 4;
        at[l] = (qb + g) * S::DS_RF + am_chunk_off<W>(8 * (kk / 2) + 4 * (kk % 2) + t, am_split_swizzle(W, g));
      }
      worst[4] = std::max(worst[4], wavefronts(at, 8 * W));
    }
    for (int d0 = 0; d0 < HDP; d0 += 8)
      for (int second = 0; second <= 8; second += 8) {
        for (int l = 0; l < 32; l++) {
          const int g = l / 4, t = l % 4, key = 16 * (kk / 2) + 4 * (kk % 2) + t + second;
          at[l] = key * S::RAW_LD + am_unit_off((d0 + g) >> 2, am_raw_swizzle(t)) + (g & 3);
        }
        worst[5] = std::max(worst[5], wavefronts(at, 4));
      }
  }
  /* am_stage's 16-byte copies into the forward's k and v tiles; am_expand's loads alike */
  for (int w = 0; w < S::FWD_WARPS; w++) {
    typedef am_stage_map<HDP, S::FWD_THREADS, S::KT> M;
    for (int i = 0; i < M::STEPS; i++) {
      for (int l = 0; l < 32; l++) {
        const int tid = 32 * w + l, u = tid % M::UP;
        at[l] = u < M::U ? am_unit_at<HDP, W>(tid / M::UP + M::RP * i, u) : -1;
      }
      worst[6] = std::max(worst[6], wavefronts(at, 16));
    }
  }
  int bad = 0;
  size_t used = 0;
  for (int i = 0; i < 7; i++) {
    used += snprintf(report + used, used < size ? size - used : 0, "%s%s %d", i ? ", " : "", names[i], worst[i]);
    bad += worst[i] > (i == 6 ? 2 : 1); /* the copies: 2, for 16 of each 32 bytes split and 16 dims' padded rows */
  }
  return bad;
}

extern "C" int am_bank_check(int HD, int passes, char *report, size_t size)
{
  switch (at_padded_head(HD) * 4 + passes) {
  case 16 * 4 + 3: return bank_check<16, 3>(report, size);
  case 48 * 4 + 3: return bank_check<48, 3>(report, size);
  case 64 * 4 + 3: return bank_check<64, 3>(report, size);
  case 128 * 4 + 3: return bank_check<128, 3>(report, size);
  case 16 * 4 + 1: return bank_check<16, 1>(report, size);
  case 48 * 4 + 1: return bank_check<48, 1>(report, size);
  case 128 * 4 + 1: return bank_check<128, 1>(report, size);
  default: return -1;
  }
}

/* A block's bytes for what 0 or threads for what 1, forward or backward, from am_sizes. */
template <int HDP, int PASSES> static int block_at(int what, int backward)
{
  typedef am_sizes<HDP, PASSES> S;
  return what == 0 ? 4 * (backward ? S::BWD : S::FWD) : backward ? S::BWD_THREADS : S::FWD_THREADS;
}

template <int PASSES> static int block_of(int HD, int what, int backward)
{
  switch (at_padded_head(HD)) {
  case 16: return block_at<16, PASSES>(what, backward);
  case 32: return block_at<32, PASSES>(what, backward);
  case 48: return block_at<48, PASSES>(what, backward);
  case 64: return block_at<64, PASSES>(what, backward);
  case 128: return block_at<128, PASSES>(what, backward);
  default: return 0;
  }
}

extern "C" int am_block_bytes(int HD, int passes, int backward)
{
  return passes == 3 ? block_of<3>(HD, 0, backward) : passes == 1 ? block_of<1>(HD, 0, backward) : 0;
}

extern "C" int am_block_threads(int HD, int passes, int backward)
{
  return passes == 3 ? block_of<3>(HD, 1, backward) : passes == 1 ? block_of<1>(HD, 1, backward) : 0;
}

extern "C" int am_emulate(const am_emulation *e)
{
  const am_shape a = {{e->io.N, e->io.NH, e->io.HD, e->io.scale}, am_rows_aligned(e->io.q, e->io.HD) && am_rows_aligned(e->io.k, e->io.HD) &&
                                                          am_rows_aligned(e->io.v, e->io.HD) &&
                                                          am_rows_aligned(e->io.dout, e->io.HD)};
  memset(e->o_rows, 0, e->io.N * sizeof(bool));
  memset(e->dq_rows, 0, e->io.N * sizeof(bool));
  memset(e->dkv_rows, 0, e->io.N * sizeof(bool));
  if (e->passes != 1 && e->passes != 3) {
    fprintf(stderr, "attention_mma_emulator: %d passes (1 or 3)\n", e->passes);
    return -1;
  }
  if (!at_padded_head(e->io.HD)) {
    fprintf(stderr, "attention_mma_emulator: a head of %d dims (1 to 128)\n", e->io.HD);
    return -1;
  }
  return e->passes == 3 ? emulate<3>(e, a) : emulate<1>(e, a);
}
