/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/cuda/metrics.cu: the loss and skip sums the steps add up
 * on the device, posted over dp behind the step and taken a step later. */
#include "config.h"

#include <string.h>

#include "trainer/model/cuda/model_cuda.h"

/* In the compute stream, behind the step: the sums allreduced over dp, copied
 * to pinned memory and zeroed, then an event for take_metrics. Every dp rank
 * runs the same steps and validation batches, so the counts scale by D. */
int cuda_post_metrics(model *base)
{
  model_cuda *m = (model_cuda *)base;
  const long dp = dlpar_get_info(base->comm)->dp_size;
  MODEL_TRY_COMM(dlpar_allreduce(base->comm, DLPAR_DP, m->metric_sums, N_SUMS, DLPAR_FLOAT32, DLPAR_SUM, m->compute), m);
  MODEL_TRY(cudaMemcpyAsync(m->posted_sums, m->metric_sums, N_SUMS * sizeof(float), cudaMemcpyDeviceToHost,
                           m->compute), m);
  MODEL_TRY(cudaMemsetAsync(m->metric_sums, 0, N_SUMS * sizeof(float), m->compute), m);
  MODEL_TRY(cudaEventRecord(m->metrics_posted, m->compute), m);
  m->posted_train_steps = m->train_steps * dp;
  m->posted_val_samples = m->val_samples * dp;
  m->train_steps = m->val_samples = 0;
  m->metrics_pending = true;
  return DLPAR_OK;
}

int cuda_take_metrics(model *base, model_metrics *out)
{
  model_cuda *m = (model_cuda *)base;
  const vit_dims *d = &m->base.dims;
  memset(out, 0, sizeof(*out));
  if (!m->metrics_pending)
    return DLPAR_OK;
  MODEL_TRY(cudaEventSynchronize(m->metrics_posted), m);
  out->train_loss_sum = m->posted_sums[SUM_TRAIN_LOSS];
  out->train_steps = m->posted_train_steps;
  out->skipped_steps = (long)m->posted_sums[SUM_SKIPPED];
  out->overflow_steps = (long)m->posted_sums[SUM_OVERFLOW];
  out->val_loss_sum = (double)m->posted_sums[SUM_VAL_LOSS] * d->B; /* the kernel adds batch means */
  out->val_rmse_sum = m->posted_sums[SUM_VAL_RMSE];
  out->val_samples = m->posted_val_samples;
  m->metrics_pending = false;
  return DLPAR_OK;
}
