/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/layernorm_emulator.cu: a stand-in for the GPU (named so)
 * running LayerNorm's backward block code (kernels/cuda/layernorm_rows.cuh)
 * and the column reductions' (kernels/cuda/reduce.cuh) on the CPU, on
 * the paths and grids dl_layernorm_bwd and dl_column_sum launch (their
 * own plan functions), through the tests' one block runner
 * (block_emulator.cuh: a fiber per CUDA thread of a block, switched at
 * every barrier and shuffle, which complete when the block's threads or
 * the warp's lanes have all arrived); warp_sum as the
 * GPU's butterfly (v += shfl_xor(v, 16, 8, 4, 2, 1)). Every load and
 * store is checked: inside the call's arrays or the block's shared memory
 * (stores: only into outputs), 4-value accesses on 4 values' alignment, as
 * the GPU's vector loads need. Shared memory is poisoned with NaN before
 * each block; blocks run in index order, the threads in lockstep or warp
 * by warp. Host code only: nothing here needs a GPU. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "kernels/cuda/layernorm_rows.cuh"
#include "tests/unit/block_emulator.cuh"
#include "tests/unit/emulators.h"

enum { LE_STACK = 1 << 16 };

static void die(const char *what)
{
  emu_die("layernorm_emulator", what);
}

/* An array a block may read (and, if writable, write): [first, first + bytes). */
struct le_range {
  const char *first;
  size_t bytes;
  bool writable;
};

/* The block code's context in the emulation: the runner's barrier and
 * shuffle, and every load and store checked against the call's arrays. */
struct le_host_ctx : emu_ctx {
  const std::vector<le_range> *ranges;
#ifndef __CUDA_ARCH__
  /* [p, p + n) of `size`-byte values: in shared memory or an array (for
   * a store, a writable one); 4 values on 4 values' alignment */
  void check(const void *p, int n, size_t size, bool store) const
  {
    const char *first = (const char *)p, *smem = (const char *)b->smem.data();
    const size_t bytes = n * size;
    bool inside = first >= smem && first + bytes <= smem + b->smem.size() * sizeof(float4);
    if (n == 4 && (uintptr_t)p % (4 * size) != 0)
      die("a 4-value access off its alignment");
    for (const le_range &r : *ranges)
      inside = inside || (first >= r.first && first + bytes <= r.first + r.bytes && (r.writable || !store));
    if (!inside)
      die(store ? "a store outside the outputs and the shared memory" : "a load outside the inputs");
  }
#endif
  /* common.cuh's warp_sum */
  __host__ __device__ float sum_warp(float v) const
  {
#ifndef __CUDA_ARCH__
    for (int offset = 16; offset > 0; offset >>= 1)
      v += shfl_xor(v, offset);
#endif
    return v;
  }
  template <int V, typename T> __host__ __device__ void load(float (&out)[V], const T *p) const
  {
#ifndef __CUDA_ARCH__
    check(p, V, sizeof(T), false);
    for (int i = 0; i < V; i++)
      out[i] = to_float(p[i]);
#else
    (void)out, (void)p;
#endif
  }
  template <int V, typename T> __host__ __device__ void store(T *p, const float (&in)[V]) const
  {
#ifndef __CUDA_ARCH__
    check(p, V, sizeof(T), true);
    for (int i = 0; i < V; i++)
      p[i] = from_float<T>(in[i]);
#else
    (void)p, (void)in;
#endif
  }
};

/* Runs blocks of 256 threads in turn through the tests' block runner. */
struct le_runner {
  emu_runner<le_host_ctx> blocks{"layernorm_emulator", LN_THREADS, LE_STACK};
  std::vector<le_range> ranges;

  void run(int floats, const emu_runner<le_host_ctx>::body_fn &body)
  {
    le_host_ctx context = {};
    context.ranges = &ranges;
    blocks.run(LN_THREADS, floats, context, body);
  }

  template <typename X> void allow(const X *p, size_t n, bool writable)
  {
    if (p)
      ranges.push_back({(const char *)p, n * sizeof(X), writable});
  }

  /* reduce.cuh's column_reduce_partials: stage 2 */
  template <int NOUT> void stage2(float *const *out, int accumulate, const float *partials, int chunks, int cols)
  {
    const partial_term<NOUT> term = {partials, chunks, cols};
    const reduce_grid g = reduce_grid_of(chunks, cols, false);
    const reduce_sink<NOUT> sink = reduce_sink_to<NOUT>(out, accumulate);
    for (int tile = 0; tile < g.tiles; tile++)
      run(reduce_shared_floats<NOUT, 1>(), [&](const le_host_ctx &c, float *smem) {
        column_reduce_block<NOUT, 1>(c, smem, sink, term, chunks, cols, chunks, tile, 0);
      });
  }

  /* reduce.cuh's column_reduce: stage 1 at the width its grid picks, then stage 2; the width */
  template <int NOUT, int V, typename Term>
  void stage1_at(const Term &term, int rows, int cols, const reduce_grid &g, float *partials)
  {
    const reduce_sink<NOUT> sink = reduce_sink_partials<NOUT>(partials, g.chunks, cols);
    for (int chunk = 0; chunk < g.chunks; chunk++)
      for (int tile = 0; tile < g.tiles; tile++)
        run(reduce_shared_floats<NOUT, V>(), [&](const le_host_ctx &c, float *smem) {
          column_reduce_block<NOUT, V>(c, smem, sink, term, rows, cols, REDUCE_CHUNK, tile, chunk);
        });
  }

  template <int NOUT, typename Term>
  int column_reduce(float *const *out, int accumulate, const Term &term, int rows, int cols, float *partials)
  {
    const reduce_grid g = reduce_grid_of(rows, cols, term.by4() && vec_aligned<4>(partials));
    if (g.vec == 4)
      stage1_at<NOUT, 4>(term, rows, cols, g, partials);
    else
      stage1_at<NOUT, 1>(term, rows, cols, g, partials);
    stage2<NOUT>(out, accumulate, partials, g.chunks, cols);
    return g.vec;
  }
};

/* An array of n T on 64 bytes (plus `offset` values), from fp32 values or zeros. */
template <typename T> struct le_buffer {
  std::vector<T> storage;
  T *p;
  le_buffer(const float *from, size_t n, int offset = 0) : storage(n + 64 / sizeof(T) + offset)
  {
    const size_t skip = (64 - (uintptr_t)storage.data() % 64) % 64;
    if (skip % sizeof(T) != 0)
      die("a buffer cannot be aligned");
    p = storage.data() + skip / sizeof(T) + offset;
    for (size_t i = 0; i < n; i++)
      p[i] = from_float<T>(from ? from[i] : 0.0f);
  }
};

template <typename T> static void copy_out(float *to, const T *from, size_t n)
{
  for (size_t i = 0; i < n; i++)
    to[i] = to_float(from[i]);
}

template <typename T> static int emulate_bwd(ln_emulation *e)
{
  const size_t n = (size_t)e->BT * e->C;
  const int chunks = reduce_chunks(e->BT);
  le_buffer<T> dout(e->dout, n, e->dout_unaligned ? 1 : 0), act(NULL, n);
  le_buffer<float> inp(e->inp, n), w(e->w, e->C), mean(e->mean, e->BT), rstd(e->rstd, e->BT), dinp(e->dinp, n);
  le_buffer<float> dw(e->dw, e->C), db(e->db, e->C), partials(NULL, (size_t)2 * chunks * e->C);
  const ln_bwd_args<T> a = {dinp.p, e->dinp_act ? act.p : NULL, dout.p, inp.p, w.p, mean.p, rstd.p, partials.p,
                            e->BT, e->C, chunks};
  const ln_bwd_plan plan = ln_bwd_plan_of(a);
  float *const grads[2] = {dw.p, db.p};
  le_runner runner;
  runner.blocks.schedule = e->schedule;
  runner.allow(dout.p, n, false), runner.allow(inp.p, n, false), runner.allow(w.p, e->C, false);
  runner.allow(mean.p, e->BT, false), runner.allow(rstd.p, e->BT, false);
  runner.allow(dinp.p, n, true), runner.allow(a.dinp_act, n, true), runner.allow(dw.p, e->C, true);
  runner.allow(db.p, e->C, true), runner.allow(partials.p, (size_t)2 * chunks * e->C, true);
  for (size_t i = 0; i < (size_t)2 * chunks * e->C; i++)
    partials.p[i] = NAN; /* what stage 1 leaves unwritten shows */
  e->groups = plan.groups, e->vec = plan.vec;
  if (plan.groups == 0) { /* layernorm.cu's rows kernel, then column_reduce */
    const ln_param_term<T> term = {a.dout, a.inp, a.mean, a.rstd, e->C};
    for (int block = 0; block < (e->BT + LN_WARPS - 1) / LN_WARPS; block++)
      runner.run(0, [&](const le_host_ctx &c, float *) {
        if (plan.vec == 4)
          ln_bwd_rows_block<T, 4>(c, block, a);
        else
          ln_bwd_rows_block<T, 1>(c, block, a);
      });
    runner.column_reduce<2>(grads, 1, term, e->BT, e->C, partials.p);
  } else { /* the fused kernel, then stage 2 */
    ln_with_groups(plan.groups, [&](auto groups) {
      constexpr int G = decltype(groups)::value;
      for (int chunk = 0; chunk < chunks; chunk++)
        runner.run(ln_fused_shared_floats<G>(), [&](const le_host_ctx &c, float *smem) {
          ln_bwd_fused_block<T, G>(c, smem, chunk, a);
        });
    });
    runner.stage2<2>(grads, 1, partials.p, chunks, e->C);
  }
  memcpy(e->dinp, dinp.p, n * sizeof(float));
  memcpy(e->dw, dw.p, e->C * sizeof(float));
  memcpy(e->db, db.p, e->C * sizeof(float));
  if (e->dinp_act)
    copy_out(e->dinp_act, act.p, n);
  return 0;
}

extern "C" int ln_emulate_bwd(ln_emulation *e)
{
  if (e->BT < 1 || e->C < 1 || reduce_chunks(e->BT) > REDUCE_MAX_CHUNKS) {
    fprintf(stderr, "layernorm_emulator: BT %d, C %d\n", e->BT, e->C);
    return -1;
  }
  return DL_DISPATCH(e->act, emulate_bwd, e);
}

template <typename T> static int emulate_column_sum(ln_column_emulation *e)
{
  const size_t n = (size_t)e->rows * e->cols;
  const int chunks = reduce_chunks(e->rows);
  le_buffer<T> x(e->x, n, e->x_unaligned ? 1 : 0);
  le_buffer<float> sum(e->sum, e->cols), partials(NULL, (size_t)chunks * e->cols);
  const column_value_term<T> term = {x.p, e->cols};
  float *const out[1] = {sum.p};
  le_runner runner;
  runner.blocks.schedule = e->schedule;
  runner.allow(x.p, n, false), runner.allow(sum.p, e->cols, true);
  runner.allow(partials.p, (size_t)chunks * e->cols, true);
  for (size_t i = 0; i < (size_t)chunks * e->cols; i++)
    partials.p[i] = NAN;
  e->vec = runner.column_reduce<1>(out, e->accumulate, term, e->rows, e->cols, partials.p);
  memcpy(e->sum, sum.p, e->cols * sizeof(float));
  return 0;
}

extern "C" int ln_emulate_column_sum(ln_column_emulation *e)
{
  if (e->rows < 1 || e->cols < 1 || reduce_chunks(e->rows) > REDUCE_MAX_CHUNKS) {
    fprintf(stderr, "layernorm_emulator: rows %d, cols %d\n", e->rows, e->cols);
    return -1;
  }
  return DL_DISPATCH(e->act, emulate_column_sum, e);
}

template <typename T> static int round_to(float *x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    x[i] = to_float(from_float<T>(x[i]));
  return 0;
}

extern "C" void ln_round_to_act(float *x, size_t n, dl_dtype act)
{
  DL_DISPATCH(act, round_to, x, n);
}
