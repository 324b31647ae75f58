/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/cuda/step.cu: a batch onto the device (one slot, refilled
 * on the copy stream) and what a step runs on it: forward, the loss and
 * backward for training, forward and the metrics for validation. */
#include "config.h"

#include "trainer/model/cuda/model_cuda.h"

/* Copies a batch into the device slot on the copy stream, the input once
 * the step before has read its input (the patch embedding), the target
 * once it has read its target (the loss's backward, or validation's
 * metrics), and makes the compute stream wait for both. Returns once the
 * host memory may be reused. */
static int stage_batch(model_cuda *m, const float *inp, const float *tgt)
{
  const vit_dims *d = &m->base.dims;
  const size_t in_bytes = sizeof(float) * (size_t)d->B * d->Cin * d->H * d->W;
  const size_t out_bytes = sizeof(float) * (size_t)d->B * d->Cout * d->H * d->W;
  MODEL_TRY(cudaStreamWaitEvent(m->copy, m->inp_read, 0), m);
  MODEL_TRY(cudaMemcpyAsync(m->inp, inp, in_bytes, cudaMemcpyHostToDevice, m->copy), m);
  MODEL_TRY(cudaStreamWaitEvent(m->copy, m->tgt_read, 0), m);
  MODEL_TRY(cudaMemcpyAsync(m->tgt, tgt, out_bytes, cudaMemcpyHostToDevice, m->copy), m);
  MODEL_TRY(cudaEventRecord(m->copied, m->copy), m);
  MODEL_TRY(cudaStreamWaitEvent(m->compute, m->copied, 0), m);
  MODEL_TRY(cudaEventSynchronize(m->copied), m); /* the loader may refill the host buffer now */
  return DLPAR_OK;
}

static int step_body(model_cuda *m, int unused)
{
  const vit_dims *d = &m->base.dims;
  (void)unused;
  MODEL_TRY(cudaMemsetAsync(m->grads, 0, sizeof(float) * m->base.table.total, m->compute), m);
  DLPAR_TRY(mc_forward(m, m->inp));
  MODEL_TRY(dl_l2_loss_fwd(m->metric_sums + SUM_TRAIN_LOSS, m->loss_sums, m->pred, m->tgt, d->B,
                          (size_t)d->Cout * d->H * d->W, m->compute), m);
  return mc_backward(m, m->tgt);
}

int cuda_forward_backward(model *base, const float *inp, const float *tgt)
{
  model_cuda *m = (model_cuda *)base;
  grad_buckets_reset(&m->buckets);
  if (inp) /* no batch given: the last one, still on the device */
    DLPAR_TRY(stage_batch(m, inp, tgt));
  m->train_steps++;
  return mc_run_captured(m, &m->graph_step, step_body, 0);
}

int cuda_evaluate(model *base, const float *inp, const float *tgt)
{
  model_cuda *m = (model_cuda *)base;
  const vit_dims *d = &m->base.dims;
  DLPAR_TRY(stage_batch(m, inp, tgt));
  DLPAR_TRY(mc_forward(m, m->inp));
  MODEL_TRY(dl_l2_loss_fwd(m->metric_sums + SUM_VAL_LOSS, m->loss_sums, m->pred, m->tgt, d->B,
                          (size_t)d->Cout * d->H * d->W, m->compute), m);
  MODEL_TRY(dl_weighted_rmse(m->metric_sums + SUM_VAL_RMSE, m->rmse_per_sample, m->pred, m->tgt, m->lat_w, d->B,
                            d->Cout, d->H, d->W, 0, m->compute), m);
  MODEL_TRY(cudaEventRecord(m->tgt_read, m->compute), m);
  m->val_samples += d->B;
  return DLPAR_OK;
}
