/* SPDX-License-Identifier: BSD-3-Clause */
/* kernels/cuda/adam.cu: Adam over the whole flat parameter buffer in one
 * launch. This is the "multi-tensor" form, where every tensor of the model
 * is a slice of the buffer. It uses torch.optim.Adam's arithmetic and fp32
 * state, and writes the activation-type copy of the weights in the same
 * pass. lr and step are read from device memory, so that a captured CUDA
 * graph stays valid. fp16's dynamic loss scaling divides the grads by the
 * scale and skips the step on inf or NaN. */
#include "config.h"

#include <math.h>

#include "kernels/cuda/common.cuh"

template <typename T>
__global__ void adam_kernel(float *params, T *params_act, float *m, float *v, const float *grads, size_t n,
                            const float *lr_t, float beta1, float beta2, float eps, const float *loss_scale,
                            const int *found_inf)
{
  if (found_inf && *found_inf)
    return;
  const float lr = lr_t[0], t = lr_t[1], inv_scale = loss_scale ? 1.0f / *loss_scale : 1.0f;
  const float step = lr / (1.0f - powf(beta1, t)), bc2_sqrt = sqrtf(1.0f - powf(beta2, t));
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float g = grads[i] * inv_scale;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g, vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    const float p = params[i] - step * mi / (sqrtf(vi) / bc2_sqrt + eps);
    m[i] = mi;
    v[i] = vi;
    params[i] = p;
    if (params_act)
      params_act[i] = from_float<T>(p);
  }
}

template <typename T>
static int adam(float *params, void *params_act, float *m, float *v, const float *grads, size_t n, const float *lr_t,
                float beta1, float beta2, float eps, const float *loss_scale, const int *found_inf, cudaStream_t s)
{
  adam_kernel<T><<<dl_blocks(n, 256), 256, 0, s>>>(params, (T *)params_act, m, v, grads, n, lr_t, beta1, beta2, eps,
                                                   loss_scale, found_inf);
  DL_TRY_LAUNCH();
  return 0;
}

extern "C" int dl_adam(float *params, void *params_act, dl_dtype act, float *m, float *v, const float *grads, size_t n,
                       const float *lr_t, float beta1, float beta2, float eps, const float *loss_scale,
                       const int *found_inf, cudaStream_t s)
{
  return DL_DISPATCH(act, adam, params, params_act, m, v, grads, n, lr_t, beta1, beta2, eps, loss_scale, found_inf, s);
}

__global__ void check_finite_kernel(int *found_inf, const float *x, size_t n)
{
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    if (!isfinite(x[i]))
      *found_inf = 1; /* any writer wins: all write the same value */
}

extern "C" int dl_check_finite(int *found_inf, const float *x, size_t n, cudaStream_t s)
{
  DL_TRY_CUDA(cudaMemsetAsync(found_inf, 0, sizeof(int), s));
  check_finite_kernel<<<dl_blocks(n, 256), 256, 0, s>>>(found_inf, x, n);
  DL_TRY_LAUNCH();
  return 0;
}

/* Non-finite gradients halve the scale, not below min_scale, and count as
 * an overflow step; at min_scale they are not the scale's doing and count
 * as a skipped step. interval clean steps in a row double it, not above
 * max_scale. */
__global__ void update_loss_scale_kernel(float *scale, int *clean_steps, const int *found_inf, int interval,
                                         float min_scale, float max_scale, float *overflow_steps, float *skipped_steps)
{
  if (*found_inf) {
    *clean_steps = 0;
    if (*scale > min_scale) {
      *scale = fmaxf(*scale * 0.5f, min_scale);
      *overflow_steps += 1.0f;
    } else {
      *skipped_steps += 1.0f;
    }
  } else if (++*clean_steps >= interval) {
    *scale = fminf(*scale * 2.0f, max_scale);
    *clean_steps = 0;
  }
}

__global__ void count_flag_kernel(float *count, const int *flag)
{
  *count += (float)*flag;
}

extern "C" int dl_count_flag(float *count, const int *flag, cudaStream_t s)
{
  count_flag_kernel<<<1, 1, 0, s>>>(count, flag);
  DL_TRY_LAUNCH();
  return 0;
}

extern "C" int dl_update_loss_scale(float *scale, int *clean_steps, const int *found_inf, int interval,
                                    float min_scale, float max_scale, float *overflow_steps, float *skipped_steps,
                                    cudaStream_t s)
{
  update_loss_scale_kernel<<<1, 1, 0, s>>>(scale, clean_steps, found_inf, interval, min_scale, max_scale,
                                           overflow_steps, skipped_steps);
  DL_TRY_LAUNCH();
  return 0;
}
