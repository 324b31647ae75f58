/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/loss.cu: the tutorial's relative L2 loss and the
 * latitude-weighted RMSE, accumulated into device sums the host reads
 * rarely. The loss runs every step. L2_CHUNKS blocks take each sample's
 * sums, and the chunks are then added in a fixed order, so the whole GPU
 * reads the prediction and the result is deterministic. The RMSE serves
 * validation, with a block per sample. */
#include "config.h"

#include <math.h>

#include "kernels/cuda/common.cuh"

/* Blocks per sample. B x 64 blocks, with 16 samples a rank, fill an H100's
 * 132 SMs several times over, where a block per sample used 16 of them. */
enum { L2_CHUNKS = 64, L2_THREADS = 512 };

extern "C" size_t dl_l2_loss_scratch_floats(int B)
{
  return 2 * (size_t)B * (L2_CHUNKS + 1);
}

/* partials[2 (b CHUNKS + c)] = ||p - t||^2, [.. + 1] = ||t||^2 over chunk c (blockIdx.x) of sample b (blockIdx.y) */
__global__ void l2_partials_kernel(float *partials, const float *pred, const float *target, size_t n)
{
  __shared__ float shared[32];
  const size_t chunk = (n + L2_CHUNKS - 1) / L2_CHUNKS, lo = blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
  const float *p = pred + (size_t)blockIdx.y * n, *t = target + (size_t)blockIdx.y * n;
  float diff2 = 0, norm2 = 0;
  for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    const float d = p[i] - t[i];
    diff2 += d * d;
    norm2 += t[i] * t[i];
  }
  diff2 = block_sum(diff2, shared);
  norm2 = block_sum(norm2, shared);
  if (threadIdx.x == 0) {
    const size_t at = 2 * ((size_t)blockIdx.y * L2_CHUNKS + blockIdx.x);
    partials[at] = diff2;
    partials[at + 1] = norm2;
  }
}

/* sums[2b], sums[2b+1]: sample b's chunks in order; loss_sum += the mean over b of sqrt(diff2 / norm2) */
__global__ void l2_finish_kernel(float *loss_sum, float *sums, const float *partials, int B)
{
  float total = 0;
  for (int b = 0; b < B; b++) {
    float diff2 = 0, norm2 = 0;
    for (int c = 0; c < L2_CHUNKS; c++) {
      diff2 += partials[2 * (b * L2_CHUNKS + c)];
      norm2 += partials[2 * (b * L2_CHUNKS + c) + 1];
    }
    sums[2 * b] = diff2;
    sums[2 * b + 1] = norm2;
    total += sqrtf(diff2) / sqrtf(norm2);
  }
  *loss_sum += total / B;
}

extern "C" int dl_l2_loss_fwd(float *loss_sum, float *sums, const float *pred, const float *target, int B, size_t n,
                              cudaStream_t s)
{
  float *partials = sums + 2 * (size_t)B;
  l2_partials_kernel<<<dim3(L2_CHUNKS, B), L2_THREADS, 0, s>>>(partials, pred, target, n);
  DL_TRY_LAUNCH();
  l2_finish_kernel<<<1, 1, 0, s>>>(loss_sum, sums, partials, B);
  DL_TRY_LAUNCH();
  return 0;
}

__global__ void l2_loss_bwd_kernel(float *dpred, const float *sums, const float *pred, const float *target, int B,
                                   size_t n, const float *dloss_scale)
{
  const size_t total = (size_t)B * n;
  const float dloss = dloss_scale ? *dloss_scale : 1.0f;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
    const size_t b = i / n;
    const float diff2 = sums[2 * b], norm2 = sums[2 * b + 1];
    const float coef = diff2 > 0 ? dloss / (sqrtf(diff2) * sqrtf(norm2) * B) : 0.0f;
    dpred[i] = coef * (pred[i] - target[i]);
  }
}

extern "C" int dl_l2_loss_bwd(float *dpred, const float *sums, const float *pred, const float *target, int B, size_t n,
                              const float *dloss, cudaStream_t s)
{
  l2_loss_bwd_kernel<<<dl_blocks((size_t)B * n, 256), 256, 0, s>>>(dpred, sums, pred, target, B, n, dloss);
  DL_TRY_LAUNCH();
  return 0;
}

/* one block per sample: sqrt(mean over y, x of w_y (p - t)^2) of channel c */
__global__ void weighted_rmse_kernel(float *per_sample, const float *pred, const float *target, const float *lat_w,
                                     int C, int H, int W, int c)
{
  __shared__ float shared[32];
  const size_t base = ((size_t)blockIdx.x * C + c) * H * W;
  float sum = 0;
  for (size_t i = threadIdx.x; i < (size_t)H * W; i += blockDim.x) {
    const float d = pred[base + i] - target[base + i];
    sum += lat_w[i / W] * d * d;
  }
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0)
    per_sample[blockIdx.x] = sqrtf(sum / ((float)H * W));
}

__global__ void add_samples_kernel(float *total, const float *per_sample, int B)
{
  float sum = 0;
  for (int b = 0; b < B; b++)
    sum += per_sample[b];
  *total += sum;
}

extern "C" int dl_weighted_rmse(float *rmse_sum, float *per_sample, const float *pred, const float *target,
                                const float *lat_w, int B, int C, int H, int W, int c, cudaStream_t s)
{
  weighted_rmse_kernel<<<B, 1024, 0, s>>>(per_sample, pred, target, lat_w, C, H, W, c);
  DL_TRY_LAUNCH();
  add_samples_kernel<<<1, 1, 0, s>>>(rmse_sum, per_sample, B);
  DL_TRY_LAUNCH();
  return 0;
}
