/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/cuda/model.cu: the CUDA model's model_ops (model.h) and
 * its creation: streams and events, kernel choices, the arena; reading
 * and writing the flat tensors; destruction. The design is in
 * model_cuda.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/model/cuda/model_cuda.h"

static float *tensor_of(model_cuda *m, model_tensor which)
{
  return which == TENSOR_PARAMS ? m->params : which == TENSOR_GRADS ? m->grads : which == TENSOR_ADAM_M ? m->adam_m
                                                                                                        : m->adam_v;
}

static int cuda_read_tensor(model *base, model_tensor which, float *host)
{
  model_cuda *m = (model_cuda *)base;
  MODEL_TRY(cudaStreamSynchronize(m->compute), m);
  MODEL_TRY(cudaMemcpy(host, tensor_of(m, which), sizeof(float) * base->table.total, cudaMemcpyDeviceToHost), m);
  return DLPAR_OK;
}

static int cuda_write_tensor(model *base, model_tensor which, const float *host)
{
  model_cuda *m = (model_cuda *)base;
  DLPAR_TRY(mc_upload(m, tensor_of(m, which), host, sizeof(float) * base->table.total));
  if (which == TENSOR_PARAMS && m->act != DL_F32)
    MODEL_TRY(dl_cast(m->params_act, m->act, m->params, DL_F32, base->table.total, m->compute), m);
  return DLPAR_OK;
}

static size_t cuda_peak_memory(const model *base)
{
  return ((const model_cuda *)base)->arena_bytes;
}

static size_t cuda_device_memory(const model *base)
{
  size_t free_bytes = 0, total_bytes = 0;
  (void)base;
  return cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess ? total_bytes - free_bytes : 0;
}

static int create_streams(model_cuda *m)
{
  const vit_dims *d = &m->base.dims;
  MODEL_TRY(cudaStreamCreateWithFlags(&m->compute, cudaStreamNonBlocking), m);
  MODEL_TRY(cudaStreamCreateWithFlags(&m->copy, cudaStreamNonBlocking), m);
  MODEL_TRY(cudaStreamCreateWithFlags(&m->dp, cudaStreamNonBlocking), m);
  MODEL_TRY(cudaEventCreateWithFlags(&m->copied, cudaEventDisableTiming), m);
  MODEL_TRY(cudaEventCreateWithFlags(&m->inp_read, cudaEventDisableTiming), m);
  MODEL_TRY(cudaEventCreateWithFlags(&m->tgt_read, cudaEventDisableTiming), m);
  MODEL_TRY(cudaEventRecord(m->inp_read, m->compute), m);
  MODEL_TRY(cudaEventRecord(m->tgt_read, m->compute), m);
  for (int e = 0; e < d->depth + 2; e++)
    MODEL_TRY(cudaEventCreateWithFlags(&m->grads_ready[e], cudaEventDisableTiming), m);
  MODEL_TRY(cudaEventCreateWithFlags(&m->dp_done, cudaEventDisableTiming), m);
  MODEL_TRY(cudaEventCreateWithFlags(&m->dp_enqueued, cudaEventDisableTiming), m);
  MODEL_TRY(cudaEventCreateWithFlags(&m->scalars_copied, cudaEventDisableTiming), m);
  MODEL_TRY(cudaEventCreateWithFlags(&m->adam_done, cudaEventDisableTiming), m);
  MODEL_TRY(cudaEventRecord(m->adam_done, m->compute), m);
  MODEL_TRY(cudaEventCreateWithFlags(&m->metrics_posted, cudaEventDisableTiming), m);
  MODEL_TRY(cudaHostAlloc((void **)&m->host_scalars, 2 * sizeof(float), cudaHostAllocDefault), m);
  MODEL_TRY(cudaHostAlloc((void **)&m->posted_sums, N_SUMS * sizeof(float), cudaHostAllocDefault), m);
  m->base.stream = m->compute;
  return DLPAR_OK;
}

static void cuda_destroy(model *base)
{
  model_cuda *m = (model_cuda *)base;
  const vit_dims *d = &m->base.dims;
  if (!m)
    return;
  if (m->compute)
    cudaStreamSynchronize(m->compute);
  if (m->graph_step.exec)
    cudaGraphExecDestroy(m->graph_step.exec);
  cudaEventDestroy(m->copied);
  cudaEventDestroy(m->inp_read);
  cudaEventDestroy(m->tgt_read);
  if (m->graph_adam.exec)
    cudaGraphExecDestroy(m->graph_adam.exec);
  for (int e = 0; m->grads_ready && e < d->depth + 2; e++)
    cudaEventDestroy(m->grads_ready[e]);
  cudaEventDestroy(m->dp_done);
  cudaEventDestroy(m->dp_enqueued);
  cudaEventDestroy(m->scalars_copied);
  cudaEventDestroy(m->adam_done);
  cudaEventDestroy(m->metrics_posted);
  cudaFree(m->arena);
  cudaFreeHost(m->host_scalars);
  cudaFreeHost(m->posted_sums);
  dl_blas_destroy(m->blas);
#ifdef HAVE_CUDNN
  dl_sdpa_destroy(m->sdpa);
#endif
  cudaStreamDestroy(m->compute);
  cudaStreamDestroy(m->copy);
  cudaStreamDestroy(m->dp);
  free(m->blocks);
  free(m->grads_ready);
  grad_buckets_free(&m->buckets);
  params_free(&m->base.table);
  free(m);
}

static const model_ops cuda_ops = {
    cuda_forward_backward, cuda_optimizer_step, cuda_evaluate,          cuda_post_metrics, cuda_take_metrics,
    cuda_read_tensor,      cuda_write_tensor,   cuda_peak_memory,       cuda_device_memory,
    cuda_destroy,
};

/* The per-thread stack the attention kernels need, set before any graph
 * capture: growing it later would be a device-wide operation, which a
 * capture forbids. */
static int reserve_kernel_stack(model_cuda *m)
{
  size_t stack = 0, needed = 0;
  MODEL_TRY(dl_attention_stack_bytes(&needed), m);
  MODEL_TRY(cudaDeviceGetLimit(&stack, cudaLimitStackSize), m);
  if (stack < needed)
    MODEL_TRY(cudaDeviceSetLimit(cudaLimitStackSize, needed), m);
  return DLPAR_OK;
}

/* One line on rank 0 naming what this run chose on the GPU: the device,
 * the activations' type, the attention, the GELU, CUDA graphs (the GPU
 * tests and bench/gpu-round read it). */
static int report_choices(model_cuda *m, const train_config *cfg, const dlpar_info *info)
{
  cudaDeviceProp prop;
  char attention[96], version[32] = "";
  if (info->rank != 0)
    return DLPAR_OK;
  MODEL_TRY(cudaGetDeviceProperties(&prop, info->device), m);
#ifdef HAVE_CUDNN
  dl_sdpa_version(version, sizeof version);
#endif
  attention_describe(&m->attention, version, attention, sizeof attention);
  printf("dlpar-train: cuda: %s, %s activations, attention: %s, GELU: %s%s, CUDA graphs: %s%s\n", prop.name,
         m->act == DL_BF16 ? "bf16" : m->act == DL_F16 ? "fp16" : cfg->tf32 ? "fp32 (TF32 GEMMs)" : "fp32",
         attention, m->gelu_fused ? "cuBLASLt epilogues" : "exact kernels",
         m->recompute_gelu ? " (recomputed in the backward)" : "", cfg->cuda_graph ? "on" : "off",
         cfg->deterministic ? ", deterministic" : "");
  fflush(stdout);
  return DLPAR_OK;
}

static int create(model_cuda *m, const train_config *cfg, const dlpar_info *info)
{
  const vit_dims *d = &m->base.dims;
  DLPAR_TRY(mc_prepare_layout(m, cfg, info->tp_rank));
  m->grads_ready = (cudaEvent_t *)calloc((size_t)d->depth + 2, sizeof(cudaEvent_t));
  if (!m->grads_ready)
    return dlpar_fail(&m->base, DLPAR_ERR_SYSTEM, "out of host memory for the model");
  if (grad_buckets_plan(&m->buckets, &m->base.table, cfg->bucket_mb) != DLPAR_OK)
    return dlpar_fail(&m->base, DLPAR_ERR_SYSTEM, "out of host memory for the model");
  if (d->HD > 128)
    return dlpar_fail(&m->base, DLPAR_ERR_INPUT, "head size %d: the CUDA attention takes at most 128 (raise num_heads)",
                      d->HD);
  DLPAR_TRY(create_streams(m));
  DLPAR_TRY(reserve_kernel_stack(m));
  MODEL_TRY(dl_blas_create(&m->blas, 32u << 20, cfg->tf32), m);
  DLPAR_TRY(mc_plan_attention(m, info));
  DLPAR_TRY(mc_check_attention_fits(m, info));
  DLPAR_TRY(mc_plan_gelu(m, info));
  DLPAR_TRY(report_choices(m, cfg, info));
  mc_layout(m); /* measure */
  m->arena_bytes = m->arena_used;
  if (cudaMalloc((void **)&m->arena, m->arena_bytes) != cudaSuccess)
    return dlpar_fail(&m->base, DLPAR_ERR_CUDA, "cannot allocate %.2f GB on device %d (lower global_batch_size, use "
                      "bf16, or more tensor-parallel ranks)", (double)m->arena_bytes / 1e9, info->device);
  MODEL_TRY(cudaMemset(m->arena, 0, m->arena_bytes), m);
  mc_layout(m); /* place */
  return mc_create_device_state(m);
}

extern "C" int model_create_cuda(model **out, const train_config *cfg, dlpar_ctx *comm, int local_batch,
                                 dlpar_error *err)
{
  model_cuda *m = (model_cuda *)calloc(1, sizeof(model_cuda));
  int rc;
  *out = &m->base;
  if (!m)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory");
  m->base.ops = &cuda_ops;
  m->base.cfg = *cfg;
  m->base.comm = comm;
  vit_dims_fill(&m->base.dims, cfg, dlpar_get_info(comm)->tp_size, local_batch);
  rc = create(m, cfg, dlpar_get_info(comm));
  if (rc != DLPAR_OK)
    dlpar_error_set(err, rc, "%s", m->base.error.text);
  return rc;
}
