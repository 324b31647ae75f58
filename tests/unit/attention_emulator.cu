/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/attention_emulator.cu: a stand-in for the GPU (named so): it
 * runs the attention kernels' own block code (kernels/cuda/attention_tiles.cuh)
 * on the CPU, a POSIX thread per CUDA thread of each block, the block
 * barrier a pthread barrier, the half-warp shuffle an exchange through a
 * shared array between two barriers, shared memory a host buffer. Host
 * code only: nothing here needs a GPU. The real kernels run in
 * tests/gpu/test_kernels_gpu and test_attention_gpu on a GPU. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "kernels/cuda/attention_tiles.cuh"
#include "tests/unit/attention_emulator.h"

/* The block code's context in the emulation. The device bodies are never run. */
struct at_host_ctx {
  int tid;
  pthread_barrier_t *barrier;
  float *slots;
  __host__ __device__ void sync() const
  {
#ifndef __CUDA_ARCH__
    pthread_barrier_wait(barrier);
#endif
  }
  __host__ __device__ float shfl_xor(float v, int mask) const
  {
#ifndef __CUDA_ARCH__
    slots[tid] = v;
    sync();
    v = slots[tid ^ mask];
    sync();
#else
    (void)mask;
#endif
    return v;
  }
};

template <typename Body> struct emulated_thread {
  const Body *body;
  at_host_ctx ctx;
  float *smem;
};

template <typename Body> static void *run_thread(void *arg)
{
  const emulated_thread<Body> *t = (const emulated_thread<Body> *)arg;
  (*t->body)(t->ctx, t->smem);
  return NULL;
}

/* Runs body(ctx, smem) as one block of AT_THREADS threads with `floats` of shared memory. */
template <typename Body> static int run_block(int floats, const Body &body)
{
  std::vector<float4> smem((size_t)(floats + 3) / 4);
  std::vector<float> slots(AT_THREADS);
  std::vector<pthread_t> threads(AT_THREADS);
  std::vector<emulated_thread<Body>> args(AT_THREADS);
  pthread_barrier_t barrier;
  pthread_attr_t attr;
  if (pthread_barrier_init(&barrier, NULL, AT_THREADS) != 0 || pthread_attr_init(&attr) != 0 ||
      pthread_attr_setstacksize(&attr, 1 << 20) != 0)
    return -1;
  for (int t = 0; t < AT_THREADS; t++) {
    args[t] = {&body, {t, &barrier, slots.data()}, (float *)smem.data()};
    if (pthread_create(&threads[t], &attr, run_thread<Body>, &args[t]) != 0) {
      /* the threads started wait at a barrier that can no longer fill */
      fprintf(stderr, "attention_emulator: cannot start thread %d of a block (lower the test's shapes)\n", t);
      exit(1);
    }
  }
  for (int t = 0; t < AT_THREADS; t++)
    pthread_join(threads[t], NULL);
  pthread_attr_destroy(&attr);
  pthread_barrier_destroy(&barrier);
  return 0;
}

/* The grid of a kernel: a block per 64 rows of each head. */
template <typename Body> static int run_grid(int floats, int B, const attn_shape &a, const Body &body)
{
  for (int bh = 0; bh < B * a.NH; bh++)
    for (int r0 = 0; r0 < a.N; r0 += AT_ROWS) {
      const auto block = [&](const at_host_ctx &c, float *smem) { body(c, smem, r0, bh); };
      if (run_block(floats, block) != 0)
        return -1;
    }
  return 0;
}

template <typename T> static std::vector<T> to_type(const float *x, size_t n)
{
  std::vector<T> out(n);
  for (size_t i = 0; i < n; i++)
    out[i] = from_float<T>(x[i]);
  return out;
}

template <typename T> static void to_f32(float *out, const std::vector<T> &x)
{
  for (size_t i = 0; i < x.size(); i++)
    out[i] = to_float(x[i]);
}

template <int HDP, typename T>
static int emulate_at(const at_emulation *e, const attn_shape &a)
{
  const size_t n = (size_t)e->B * a.N * a.NH * a.HD;
  const std::vector<T> q = to_type<T>(e->q, n), k = to_type<T>(e->k, n), v = to_type<T>(e->v, n),
                       dout = to_type<T>(e->dout, n);
  std::vector<T> o(n), dq(n), dk(n), dv(n);
  std::vector<float> delta((size_t)e->B * a.NH * a.N);
  T *o_ = o.data(), *dq_ = dq.data(), *dk_ = dk.data(), *dv_ = dv.data();
  const T *q_ = q.data(), *k_ = k.data(), *v_ = v.data(), *do_ = dout.data();
  float *lse = e->lse, *delta_ = delta.data();
  if (run_grid(at_sizes<HDP>::FWD, e->B, a, [&](const at_host_ctx &c, float *smem, int r0, int bh) {
        at_forward_block<HDP>(c, smem, r0, bh, o_, lse, q_, k_, v_, a);
      }) != 0)
    return -1;
  for (size_t r = 0; r < delta.size(); r++) { /* delta_kernel's rows */
    const at_head hd = at_head_of((int)(r / a.N), a);
    const size_t at = hd.base + (r % a.N) * hd.ld;
    delta[r] = at_delta_row(dout.data() + at, o.data() + at, a.HD);
  }
  if (run_grid(at_sizes<HDP>::DKDV, e->B, a, [&](const at_host_ctx &c, float *smem, int r0, int bh) {
        at_dkdv_block<HDP>(c, smem, r0, bh, dk_, dv_, q_, k_, v_, do_, lse, delta_, a);
      }) != 0 ||
      run_grid(at_sizes<HDP>::DQ, e->B, a, [&](const at_host_ctx &c, float *smem, int r0, int bh) {
        at_dq_block<HDP>(c, smem, r0, bh, dq_, q_, k_, v_, do_, lse, delta_, a);
      }) != 0)
    return -1;
  to_f32(e->o, o);
  to_f32(e->dq, dq);
  to_f32(e->dk, dk);
  to_f32(e->dv, dv);
  return 0;
}

template <typename T> static int emulate(const at_emulation *e, const attn_shape &a)
{
  switch (at_padded_head(a.HD)) {
  case 16: return emulate_at<16, T>(e, a);
  case 32: return emulate_at<32, T>(e, a);
  case 48: return emulate_at<48, T>(e, a);
  case 64: return emulate_at<64, T>(e, a);
  case 128: return emulate_at<128, T>(e, a);
  default: return -1;
  }
}

extern "C" int at_emulate(const at_emulation *e)
{
  const attn_shape a = {e->N, e->NH, e->HD, e->scale};
  return e->bf16 ? emulate<__nv_bfloat16>(e, a) : emulate<float>(e, a);
}
