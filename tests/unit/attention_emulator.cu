/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/attention_emulator.cu: a stand-in for the GPU (named so): it
 * runs the attention kernels' own block code (kernels/cuda/attention_tiles.cuh)
 * on the CPU through the tests' one block runner (block_emulator.cuh: a
 * fiber per CUDA thread, the block barrier and the half-warp shuffle
 * completing when every thread or lane has arrived, shared memory a host
 * buffer poisoned with NaN). Host code only: nothing here needs a GPU. The
 * real kernels run in tests/gpu/test_kernels_gpu and test_attention_gpu on
 * a GPU. */
#include "config.h"

#include <vector>

#include "kernels/cuda/attention_tiles.cuh"
#include "tests/unit/block_emulator.cuh"
#include "tests/unit/emulators.h"

enum { AT_STACK = 1 << 17 };

/* The block code's context in the emulation: the runner's barrier and shuffle. */
typedef emu_ctx at_host_ctx;

typedef emu_runner<at_host_ctx> at_runner;

/* The grid of a kernel: a block per 64 rows of each head. */
template <typename Body>
static void run_grid(at_runner &runner, int floats, int B, const attn_shape &a, const Body &body)
{
  for (int bh = 0; bh < B * a.NH; bh++)
    for (int r0 = 0; r0 < a.N; r0 += AT_ROWS)
      runner.run(AT_THREADS, floats, at_host_ctx{}, [&](const at_host_ctx &c, float *smem) { body(c, smem, r0, bh); });
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
  at_runner runner("attention_emulator", AT_THREADS, AT_STACK);
  run_grid(runner, at_sizes<HDP>::FWD, e->B, a, [&](const at_host_ctx &c, float *smem, int r0, int bh) {
    at_forward_block<HDP>(c, smem, r0, bh, o_, lse, q_, k_, v_, a);
  });
  for (size_t r = 0; r < delta.size(); r++) { /* delta_kernel's rows */
    const at_head hd = at_head_of((int)(r / a.N), a);
    const size_t at = hd.base + (r % a.N) * hd.ld;
    delta[r] = at_delta_row(dout.data() + at, o.data() + at, a.HD);
  }
  run_grid(runner, at_sizes<HDP>::DKDV, e->B, a, [&](const at_host_ctx &c, float *smem, int r0, int bh) {
    at_dkdv_block<HDP>(c, smem, r0, bh, dk_, dv_, q_, k_, v_, do_, lse, delta_, a);
  });
  run_grid(runner, at_sizes<HDP>::DQ, e->B, a, [&](const at_host_ctx &c, float *smem, int r0, int bh) {
    at_dq_block<HDP>(c, smem, r0, bh, dq_, q_, k_, v_, do_, lse, delta_, a);
  });
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
