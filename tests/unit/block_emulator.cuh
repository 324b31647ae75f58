/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/block_emulator.cuh: the one runner of the GPU stand-ins
 * (attention_emulator.cu, attention_mma_emulator.cu, layernorm_emulator.cu),
 * which run kernels' own block code on the CPU. A block is a fiber
 * (tests/unit/fibers.h) per CUDA thread, switched at every barrier and warp
 * collective; a barrier completes when all of the block's threads have
 * arrived, a collective (a shuffle, or an emulator's own kind such as an
 * MMA) when all 32 lanes of the warp have. Shared memory is poisoned with
 * NaN before each block, and blocks run one after another on one set of
 * stacks. An emulator's context derives from emu_ctx and adds the
 * operations of its block code; what it keeps per block it points to from
 * its context. Host code only: the device bodies are never run. */
#ifndef DLPAR_TEST_BLOCK_EMULATOR_CUH
#define DLPAR_TEST_BLOCK_EMULATOR_CUH

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <functional>
#include <memory>
#include <vector>

#include "tests/unit/fibers.h"

/* A lane's operands of a warp collective and its result: a shuffle's v
 * and mask (the result in d[0]), an MMA's fragments a, b, c (d). */
struct emu_lane {
  float a[4], b[2], c[4], d[4], v;
  int mask;
};

/* The collectives every emulator knows; an emulator's own kinds follow. */
enum { EMU_SHUFFLE, EMU_FIRST_OWN_KIND };

struct emu_warp {
  int arrived, kind;
  emu_lane lane[32];
};

/* One emulated block: its fibers, barrier, warps and shared memory. */
struct emu_block {
  const char *emulator; /* the name its messages start with */
  int threads, arrived_at_barrier, finished;
  fiber scheduler;
  std::vector<fiber> fibers;
  std::vector<char> ready;
  std::vector<emu_warp> warps;
  std::vector<float4> smem;
};

/* Ends the test program with a line naming the emulator and what went wrong. */
static inline void emu_die(const char *emulator, const char *what)
{
  fprintf(stderr, "%s: %s\n", emulator, what);
  exit(1);
}

/* Completes a warp's collective once its 32 lanes have arrived. */
typedef void (*emu_complete)(emu_warp &w, const char *emulator);

static inline void emu_complete_shuffle(emu_warp &w, const char *emulator)
{
  for (int l = 0; l < 32; l++) {
    if (w.lane[l].mask != w.lane[0].mask)
      emu_die(emulator, "a shuffle's lanes disagree on the lane mask");
    w.lane[l].d[0] = w.lane[l ^ w.lane[l].mask].v;
  }
}

/* The part of a block code's context that every emulator shares. */
struct emu_ctx {
  int tid;
  emu_block *b;
#ifndef __CUDA_ARCH__
  void yield() const { fiber_switch(&b->fibers[tid], &b->scheduler); }
  emu_lane &my_lane() const { return b->warps[tid / 32].lane[tid % 32]; }
  /* This lane's arrival at its warp's collective of `kind`: the last lane
   * to arrive completes it and makes the warp ready again. */
  void arrive(int kind, emu_complete complete) const
  {
    emu_warp &w = b->warps[tid / 32];
    if (w.arrived == 0)
      w.kind = kind;
    else if (w.kind != kind)
      emu_die(b->emulator, "the lanes of a warp reached different collectives");
    b->ready[tid] = 0;
    if (++w.arrived == 32) {
      complete(w, b->emulator);
      w.arrived = 0;
      for (int l = 0; l < 32; l++)
        b->ready[tid / 32 * 32 + l] = 1;
    }
    yield();
  }
#endif
  __host__ __device__ void sync() const
  {
#ifndef __CUDA_ARCH__
    fiber_arrive_at_barrier(b->ready.data(), &b->arrived_at_barrier, b->threads, tid);
    yield();
#endif
  }
  __host__ __device__ float shfl_xor(float v, int mask) const
  {
#ifndef __CUDA_ARCH__
    emu_lane &x = my_lane();
    x.v = v, x.mask = mask;
    arrive(EMU_SHUFFLE, emu_complete_shuffle);
    return x.d[0];
#else
    (void)mask;
    return v;
#endif
  }
};

template <typename Ctx> struct emu_fiber_arg {
  emu_block *b;
  Ctx ctx;
  const std::function<void(const Ctx &, float *)> *body;
};

template <typename Ctx> static void emu_run_thread(void *arg)
{
  const emu_fiber_arg<Ctx> *f = (const emu_fiber_arg<Ctx> *)arg;
  (*f->body)(f->ctx, (float *)f->b->smem.data());
  f->b->finished++;
  f->b->ready[f->ctx.tid] = 0;
  fiber_switch(&f->b->fibers[f->ctx.tid], &f->b->scheduler); /* never resumed */
}

/* Runs blocks of up to max_threads threads in turn on one set of fibers
 * and stacks of stack_bytes each; schedule is fiber_run_block's: the order
 * the threads run in between barriers and collectives. */
template <typename Ctx> struct emu_runner {
  typedef std::function<void(const Ctx &, float *)> body_fn;
  const char *emulator;
  int max_threads;
  size_t stack_bytes;
  int schedule = 0;
  std::unique_ptr<char[]> stacks{new char[(size_t)max_threads * stack_bytes]};

  emu_runner(const char *name, int threads, size_t stack) : emulator(name), max_threads(threads), stack_bytes(stack) {}

  /* One block of `threads` (a multiple of 32) with `floats` of shared
   * memory: body(ctx, smem) on each thread, ctx a copy of `context` with
   * the thread's index and the block filled in. */
  void run(int threads, int floats, const Ctx &context, const body_fn &body)
  {
    if (threads < 32 || threads > max_threads || threads % 32 != 0)
      emu_die(emulator, "a block's threads are not a multiple of 32 within the runner's stacks");
    emu_block b;
    std::vector<emu_fiber_arg<Ctx>> args(threads, emu_fiber_arg<Ctx>{&b, context, &body});
    b.emulator = emulator;
    b.threads = threads, b.arrived_at_barrier = 0, b.finished = 0;
    b.fibers.resize(threads), b.ready.assign(threads, 1), b.warps.assign(threads / 32, emu_warp{});
    b.smem.assign(((size_t)floats + 3) / 4, make_float4(NAN, NAN, NAN, NAN));
    for (int t = 0; t < threads; t++) {
      args[t].ctx.tid = t, args[t].ctx.b = &b;
      fiber_start(&b.fibers[t], stacks.get() + (size_t)t * stack_bytes, stack_bytes, emu_run_thread<Ctx>, &args[t]);
    }
    if (fiber_run_block(&b.scheduler, b.fibers.data(), b.ready.data(), &b.finished, threads, schedule) != 0)
      emu_die(emulator, "the block's threads wait for each other (a barrier or a collective some never reach)");
  }
};

#endif
