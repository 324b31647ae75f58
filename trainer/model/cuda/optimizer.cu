/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/cuda/optimizer.cu: the optimizer step: Adam over the flat
 * fp32 parameters, skipped on non-finite gradients anywhere in the tp
 * group, with fp16's dynamic loss scale. */
#include "config.h"

#include "trainer/model/cuda/model_cuda.h"

static const int FP16_SCALE_INTERVAL = 2000;
/* the scale's bounds: below 1 the loss scaling only loses precision, so
 * an overflow there is the gradients' own (a skipped step); 2^24 keeps
 * scaled losses far from fp32's range */
static const float FP16_MIN_SCALE = 1.0f, FP16_MAX_SCALE = 16777216.0f;

static int adam_body(model_cuda *m, int unused)
{
  const bool fp16 = m->act == DL_F16;
  (void)unused;
  /* non-finite gradients anywhere in the tp group: no update (under fp16 the
   * loss scale's overflow steps, counted apart; skipped_steps otherwise) */
  MODEL_TRY(dl_check_finite(m->found_inf, m->grads, m->base.table.total, m->compute), m);
  if (dlpar_get_info(m->base.comm)->tp_size > 1)
    MODEL_TRY_COMM(dlpar_allreduce(m->base.comm, DLPAR_TP, m->found_inf, 1, DLPAR_INT32, DLPAR_MAX, m->compute), m);
  MODEL_TRY(dl_adam(m->params, m->act == DL_F32 ? NULL : m->params_act, m->act, m->adam_m, m->adam_v, m->grads,
                   m->base.table.total, m->lr_t, 0.9f, 0.95f, 1e-8f, m->loss_scale, m->found_inf, m->compute), m);
  if (fp16)
    MODEL_TRY(dl_update_loss_scale(m->loss_scale, m->clean_steps, m->found_inf, FP16_SCALE_INTERVAL, FP16_MIN_SCALE,
                                  FP16_MAX_SCALE, m->metric_sums + SUM_OVERFLOW, m->metric_sums + SUM_SKIPPED,
                                  m->compute), m);
  else
    MODEL_TRY(dl_count_flag(m->metric_sums + SUM_SKIPPED, m->found_inf, m->compute), m);
  return DLPAR_OK;
}

int cuda_optimizer_step(model *base, double lr, long t)
{
  model_cuda *m = (model_cuda *)base;
  /* lr and step travel through pinned memory (so a captured Adam stays
   * valid) once the previous copy is done with it, and reach the device
   * once the previous Adam is done reading them */
  MODEL_TRY(cudaStreamSynchronize(m->copy), m);
  m->host_scalars[0] = (float)lr;
  m->host_scalars[1] = (float)t;
  MODEL_TRY(cudaStreamWaitEvent(m->copy, m->adam_done, 0), m);
  MODEL_TRY(cudaMemcpyAsync(m->lr_t, m->host_scalars, 2 * sizeof(float), cudaMemcpyHostToDevice, m->copy), m);
  MODEL_TRY(cudaEventRecord(m->scalars_copied, m->copy), m);
  MODEL_TRY(cudaStreamWaitEvent(m->compute, m->scalars_copied, 0), m);
  DLPAR_TRY(mc_run_captured(m, &m->graph_adam, adam_body, 0));
  MODEL_TRY(cudaEventRecord(m->adam_done, m->compute), m);
  return DLPAR_OK;
}
