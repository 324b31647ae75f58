/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/cuda/arena.cu: the one device allocation and where every
 * tensor lives in it (measured from the config alone for
 * model_cuda_arena_bytes, then placed), its first contents (the initial
 * weights, the latitude weights, the loss scale), and the pinned host
 * memory the loader fills. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "trainer/model/cuda/model_cuda.h"

static const float FP16_INITIAL_SCALE = 65536.0f;

static void *take(model_cuda *m, size_t bytes)
{
  void *p = m->arena ? m->arena + m->arena_used : NULL;
  m->arena_used += (bytes + 255) & ~(size_t)255;
  return p;
}

/* Plane i of planes of `bytes` each from `first` on (q, k, v and their
 * gradients: the planes of one fused GEMM). */
static void *plane(void *first, int i, size_t bytes)
{
  return first ? (char *)first + (size_t)i * bytes : NULL;
}

/* Lays the arena out (a first pass with no arena measures it). */
void mc_layout(model_cuda *m)
{
  const vit_dims *d = &m->base.dims;
  const size_t BT = (size_t)d->BT, D = (size_t)d->D, Dl = (size_t)d->Dl, Fl = (size_t)d->Fl, a = m->act_bytes;
  const size_t total = m->base.table.total, img_in = (size_t)d->B * d->Cin * d->H * d->W;
  const size_t img_out = (size_t)d->B * d->Cout * d->H * d->W, head = BT * d->P * d->P * d->Cout;
  const size_t rows = (size_t)d->B * d->heads * d->N;
  void *shared_gelu;
  m->arena_used = 0;
  m->params = (float *)take(m, 4 * total);
  m->grads = (float *)take(m, 4 * total);
  m->adam_m = (float *)take(m, 4 * total);
  m->adam_v = (float *)take(m, 4 * total);
  m->params_act = m->act == DL_F32 ? m->params : take(m, a * total);
  m->lr_t = (float *)take(m, 8);
  m->loss_scale = (float *)take(m, 4);
  m->metric_sums = (float *)take(m, 4 * (size_t)N_SUMS);
  m->rmse_per_sample = (float *)take(m, 4 * (size_t)d->B);
  m->loss_sums = (float *)take(m, sizeof(float) * dl_l2_loss_scratch_floats((int)d->B));
  m->found_inf = (int *)take(m, 4);
  m->clean_steps = (int *)take(m, 4);
  m->inp = (float *)take(m, 4 * img_in);
  m->tgt = (float *)take(m, 4 * img_out);
  m->patches = take(m, a * BT * d->Cin * d->P * d->P);
  m->x_final = (float *)take(m, 4 * BT * D);
  m->lnf = take(m, a * BT * D);
  m->head = take(m, a * head);
  m->lnf_mean = (float *)take(m, 4 * BT);
  m->lnf_rstd = (float *)take(m, 4 * BT);
  m->pred = (float *)take(m, 4 * img_out);
  m->lat_w = (float *)take(m, 4 * (size_t)d->H);
  shared_gelu = m->recompute_gelu ? take(m, a * BT * Fl) : NULL;
  for (int l = 0; l < d->depth; l++) {
    block_acts *b = &m->blocks[l];
    b->x_in = (float *)take(m, 4 * BT * D);
    b->ln1 = take(m, a * BT * D);
    b->q = take(m, 3 * a * BT * Dl);
    b->k = plane(b->q, 1, a * BT * Dl);
    b->v = plane(b->q, 2, a * BT * Dl);
    b->att = take(m, a * BT * Dl);
    b->x_mid = (float *)take(m, 4 * BT * D);
    b->ln2 = take(m, a * BT * D);
    b->fc1 = take(m, a * BT * Fl);
    b->gelu = m->recompute_gelu ? shared_gelu : take(m, a * BT * Fl);
    b->ln1_mean = (float *)take(m, 4 * BT);
    b->ln1_rstd = (float *)take(m, 4 * BT);
    b->ln2_mean = (float *)take(m, 4 * BT);
    b->ln2_rstd = (float *)take(m, 4 * BT);
    b->lse = (float *)take(m, 4 * rows);
    /* the backward's scratch in the block's dead buffers: fc1 (Fl = 4 Dl
     * wide) holds dq, dk, dv; ln2 (D >= Dl) datt; x_mid (fp32, D) the
     * fp32 sum of the q/k/v input gradients (16 bits only); gelu dfc1
     * (dl_matmul_bwd_gelu reads GELU's output before writing dfc1) */
    b->dfc1 = b->gelu;
    b->datt = b->ln2;
    b->dq = b->fc1;
    b->dk = plane(b->dq, 1, a * BT * Dl);
    b->dv = plane(b->dq, 2, a * BT * Dl);
    b->dqkv_sum = m->act == DL_F32 ? NULL : b->x_mid;
  }
  m->dx = (float *)take(m, 4 * BT * D);
  m->dx_act = m->act == DL_F32 ? m->dx : take(m, a * BT * D);
  m->dln = take(m, a * BT * D);
  m->dhead = m->head;   /* the head's output is dead once unpatchified */
  m->dpred = m->pred;   /* dl_l2_loss_bwd reads and writes one element per thread */
  m->delta = (float *)take(m, 4 * rows);
  m->sdpa_ws = m->sdpa_ws_bytes ? take(m, m->sdpa_ws_bytes) : NULL;
  m->tc_scratch = m->attention.kernels == ATTENTION_TENSOR_CORES
                      ? take(m, dl_attention_tc_scratch_bytes((int)d->B, d->N, d->heads, d->HD))
                      : NULL;
  m->reduce_ws = (float *)take(m, dl_column_partials_bytes((int)BT, 2 * d->D));
}

/* What the arena's layout depends on, all from the config (no GPU): the
 * activations' type, the attention asked for, GELU's recomputation, the
 * blocks, the parameters. */
int mc_prepare_layout(model_cuda *m, const train_config *cfg, int tp_rank)
{
  const vit_dims *d = &m->base.dims;
  m->attention = attention_resolve(cfg);
  m->act = cfg->amp == AMP_BF16 ? DL_BF16 : cfg->amp == AMP_FP16 ? DL_F16 : DL_F32;
  m->act_bytes = dl_dtype_bytes(m->act);
  m->recompute_gelu = strcmp(cfg->recompute, "gelu") == 0;
  m->blocks = (block_acts *)calloc((size_t)d->depth, sizeof(block_acts));
  if (!m->blocks)
    return dlpar_fail(&m->base, DLPAR_ERR_SYSTEM, "out of host memory for the model");
  if (params_build(&m->base.table, d, tp_rank) != DLPAR_OK)
    return dlpar_fail(&m->base, DLPAR_ERR_SYSTEM, "out of host memory for the model");
  return DLPAR_OK;
}

/* host -> device on the compute stream, done when it returns (host may be
 * freed then). A plain cudaMemcpy from pageable memory runs on the legacy
 * stream, which the non-blocking compute stream does not wait for, and may
 * return before its DMA has landed: kernels queued on compute could read
 * the old bytes. */
int mc_upload(model_cuda *m, void *device, const void *host, size_t bytes)
{
  MODEL_TRY(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, m->compute), m);
  MODEL_TRY(cudaStreamSynchronize(m->compute), m);
  return DLPAR_OK;
}

int mc_create_device_state(model_cuda *m)
{
  const vit_dims *d = &m->base.dims;
  float *host_params = (float *)malloc(sizeof(float) * m->base.table.total);
  float *lat_w = (float *)malloc(sizeof(float) * (size_t)d->H);
  const float one = 1.0f, fp16_scale = FP16_INITIAL_SCALE;
  int rc = !host_params || !lat_w ? DLPAR_ERR_SYSTEM : params_init(&m->base.table, m->base.cfg.seed, host_params);
  if (rc != DLPAR_OK) {
    free(host_params);
    free(lat_w);
    return dlpar_fail(&m->base, DLPAR_ERR_SYSTEM, "out of host memory for the initial weights");
  }
  lat_weights_f32(lat_w, d->H);
  rc = m->base.ops->write_tensor(&m->base, TENSOR_PARAMS, host_params);
  if (rc == DLPAR_OK)
    rc = mc_upload(m, m->lat_w, lat_w, sizeof(float) * (size_t)d->H);
  free(host_params);
  free(lat_w);
  DLPAR_TRY(rc);
  return mc_upload(m, m->loss_scale, m->act == DL_F16 ? &fp16_scale : &one, sizeof(float));
}

extern "C" int model_cuda_arena_bytes(const train_config *cfg, int tp, int local_batch, size_t attention_workspace,
                                      size_t *bytes)
{
  model_cuda *m = (model_cuda *)calloc(1, sizeof(model_cuda));
  int rc;
  if (!m)
    return DLPAR_ERR_SYSTEM;
  vit_dims_fill(&m->base.dims, cfg, tp, local_batch);
  rc = mc_prepare_layout(m, cfg, 0);
  if (rc == DLPAR_OK) {
    m->sdpa_ws_bytes = attention_workspace;
    mc_layout(m); /* measure: no arena */
    *bytes = m->arena_used;
  }
  free(m->blocks);
  params_free(&m->base.table);
  free(m);
  return rc;
}

extern "C" void *model_cuda_host_alloc(size_t bytes)
{
  void *ptr = NULL;
  return cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault) == cudaSuccess ? ptr : NULL;
}

extern "C" void model_cuda_host_free(void *ptr)
{
  cudaFreeHost(ptr);
}
