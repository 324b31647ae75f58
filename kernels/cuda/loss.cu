/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/loss.cu: the tutorial's relative L2 loss and the
 * latitude-weighted RMSE, per sample by one block each (fixed order, so
 * deterministic), accumulated into device sums the host reads rarely. */
#include "config.h"

#include <math.h>

#include "kernels/cuda/common.cuh"

/* sums[2b] = ||p_b - t_b||^2, sums[2b+1] = ||t_b||^2 */
__global__ void l2_sums_kernel(float *sums, const float *pred, const float *target, size_t n)
{
  __shared__ float shared[32];
  const float *p = pred + (size_t)blockIdx.x * n, *t = target + (size_t)blockIdx.x * n;
  float diff2 = 0, norm2 = 0;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float d = p[i] - t[i];
    diff2 += d * d;
    norm2 += t[i] * t[i];
  }
  diff2 = block_sum(diff2, shared);
  norm2 = block_sum(norm2, shared);
  if (threadIdx.x == 0) {
    sums[2 * blockIdx.x] = diff2;
    sums[2 * blockIdx.x + 1] = norm2;
  }
}

__global__ void l2_mean_kernel(float *loss_sum, const float *sums, int B)
{
  float total = 0;
  for (int b = 0; b < B; b++)
    total += sqrtf(sums[2 * b]) / sqrtf(sums[2 * b + 1]);
  *loss_sum += total / B;
}

extern "C" int dl_l2_loss_fwd(float *loss_sum, float *sums, const float *pred, const float *target, int B, size_t n,
                              cudaStream_t s)
{
  l2_sums_kernel<<<B, 1024, 0, s>>>(sums, pred, target, n);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  l2_mean_kernel<<<1, 1, 0, s>>>(loss_sum, sums, B);
  CUDA_RETURN_ON_LAUNCH_ERROR();
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
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}

/* one block per sample: sqrt(mean over (y, x) of w_y (p - t)^2) of channel c */
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
  CUDA_RETURN_ON_LAUNCH_ERROR();
  add_samples_kernel<<<1, 1, 0, s>>>(rmse_sum, per_sample, B);
  CUDA_RETURN_ON_LAUNCH_ERROR();
  return 0;
}
