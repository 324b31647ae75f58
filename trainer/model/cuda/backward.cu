/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/cuda/backward.cu: the backward pass, from the loss's
 * gradient back to the patch embedding, each block's tensors handed to the
 * dp stream's gradient buckets as soon as they are final. */
#include "config.h"

#include <math.h>

#include "trainer/model/cuda/model_cuda.h"

static int attention_bwd(model_cuda *m, block_acts *a)
{
  const vit_dims *d = &m->base.dims;
  const float scale = 1.0f / sqrtf((float)d->HD);
#ifdef HAVE_CUDNN
  if (m->sdpa)
    return dl_sdpa_bwd(m->sdpa, m->sdpa_ws, a->dq, a->dk, a->dv, a->datt, a->q, a->k, a->v, a->att, a->lse, d->B, d->N,
                       d->heads, d->HD, scale, m->act, m->compute);
#endif
  if (m->attention.kernels == ATTENTION_TENSOR_CORES)
    return dl_attention_tc_bwd((float *)a->dq, (float *)a->dk, (float *)a->dv, (const float *)a->datt,
                               (const float *)a->q, (const float *)a->k, (const float *)a->v, (const float *)a->att,
                               a->lse, m->delta, m->tc_scratch, d->B, d->N, d->heads, d->HD, scale,
                               m->attention.passes, m->compute);
  return dl_attention_bwd(a->dq, a->dk, a->dv, a->datt, a->q, a->k, a->v, a->att, a->lse, m->delta, d->B, d->N,
                          d->heads, d->HD, scale, m->act, m->compute);
}

/* Where a LayerNorm backward copies the stream's gradient for the GEMMs:
 * nowhere in fp32 (dx_act is dx). */
static void *dx_copy(model_cuda *m)
{
  return m->act == DL_F32 ? NULL : m->dx_act;
}

/* Tensors from `first_done` on are final: let the dp stream reduce them. */
static int grads_ready(model_cuda *m, int event, int first_done)
{
  MODEL_TRY(cudaEventRecord(m->grads_ready[event], m->compute), m);
  MODEL_TRY(cudaStreamWaitEvent(m->dp, m->grads_ready[event], 0), m);
  MODEL_TRY_COMM(grad_buckets_ready(&m->buckets, m->base.comm, m->grads, first_done, m->dp), m);
  MODEL_TRY(cudaEventRecord(m->dp_enqueued, m->dp), m);
  m->dp_unordered = true;
  return DLPAR_OK;
}

static int block_backward(model_cuda *m, int l)
{
  const vit_dims *d = &m->base.dims;
  const block_params *p = &m->base.table.blocks[l];
  block_acts *a = &m->blocks[l];
  const int BT = (int)d->BT;
  const size_t nD = (size_t)BT * d->D;
  /* MLP branch; dx holds the gradient of the block's output */
  if (m->recompute_gelu)
    MODEL_TRY(dl_gelu_recompute(m->gelu_fused, a->gelu, a->fc1, (size_t)BT * d->Fl, m->act, m->compute), m);
  MODEL_TRY(dl_matmul_bwd_gelu(m->blas, m->gelu_fused, a->dfc1, a->fc1, mc_grad(m, p->fc2_w), mc_grad(m, p->fc2_b),
                              m->dx_act, a->gelu, mc_weight(m, p->fc2_w), BT, d->Fl, d->D, m->act, m->compute), m);
  MODEL_TRY(dl_matmul_bwd(m->blas, m->dln, 0, mc_grad(m, p->fc1_w), mc_grad(m, p->fc1_b), a->dfc1, a->ln2,
                         mc_weight(m, p->fc1_w), BT, d->D, d->Fl, m->act, m->compute), m);
  DLPAR_TRY(mc_tp_sum(m, m->dln, nD));
  MODEL_TRY(dl_layernorm_bwd(m->dx, dx_copy(m), mc_grad(m, p->norm2_w), mc_grad(m, p->norm2_b), m->dln, a->x_mid,
                            mc_param(m, p->norm2_w), a->ln2_mean, a->ln2_rstd, BT, d->D, m->reduce_ws, m->act,
                            m->compute), m);
  /* attention branch */
  MODEL_TRY(dl_matmul_bwd(m->blas, a->datt, 0, mc_grad(m, p->proj_w), mc_grad(m, p->proj_b), m->dx_act, a->att,
                         mc_weight(m, p->proj_w), BT, d->Dl, d->D, m->act, m->compute), m);
  MODEL_TRY(attention_bwd(m, a), m);
  MODEL_TRY(dl_matmul_bwd_planes(m->blas, m->dln, a->dqkv_sum, 0, mc_grad(m, p->q_w), mc_grad(m, p->q_b), a->dq,
                                a->ln1, mc_weight(m, p->q_w), 3, BT, d->D, d->Dl, m->act, m->compute), m);
  DLPAR_TRY(mc_tp_sum(m, m->dln, nD));
  MODEL_TRY(dl_layernorm_bwd(m->dx, dx_copy(m), mc_grad(m, p->norm1_w), mc_grad(m, p->norm1_b), m->dln, a->x_in,
                            mc_param(m, p->norm1_w), a->ln1_mean, a->ln1_rstd, BT, d->D, m->reduce_ws, m->act,
                            m->compute), m);
  return DLPAR_OK;
}

int mc_backward(model_cuda *m, const float *tgt)
{
  const vit_dims *d = &m->base.dims;
  const param_table *t = &m->base.table;
  const size_t img = (size_t)d->Cout * d->H * d->W;
  /* dloss is the loss scale (1 but in fp16): gradients come out scaled, Adam unscales */
  MODEL_TRY(dl_l2_loss_bwd(m->dpred, m->loss_sums, m->pred, tgt, d->B, img, m->loss_scale, m->compute), m);
  DLPAR_TRY(mc_record_for_copy(m, m->tgt_read)); /* the slot's target may be refilled */
  MODEL_TRY(dl_unpatchify_bwd(m->dhead, m->dpred, d->B, d->Cout, d->H, d->W, d->P, m->act, m->compute), m);
  MODEL_TRY(dl_matmul_bwd(m->blas, m->dln, 0, mc_grad(m, t->head_w), NULL, m->dhead, m->lnf, mc_weight(m, t->head_w),
                         (int)d->BT, d->D, d->P * d->P * d->Cout, m->act, m->compute), m);
  MODEL_TRY(cudaMemsetAsync(m->dx, 0, sizeof(float) * d->BT * d->D, m->compute), m);
  MODEL_TRY(dl_layernorm_bwd(m->dx, dx_copy(m), mc_grad(m, t->norm_w), mc_grad(m, t->norm_b), m->dln, m->x_final,
                            mc_param(m, t->norm_w), m->lnf_mean, m->lnf_rstd, (int)d->BT, d->D, m->reduce_ws, m->act,
                            m->compute), m);
  DLPAR_TRY(grads_ready(m, d->depth, t->norm_w));
  for (int l = d->depth - 1; l >= 0; l--) {
    DLPAR_TRY(block_backward(m, l));
    DLPAR_TRY(grads_ready(m, l, t->blocks[l].norm1_w));
  }
  MODEL_TRY(dl_pos_embed_bwd(mc_grad(m, t->pos_embed), m->dx, d->B, d->N, d->D, m->compute), m);
  MODEL_TRY(dl_matmul_bwd(m->blas, NULL, 0, mc_grad(m, t->patch_w), mc_grad(m, t->patch_b), m->dx_act, m->patches,
                         mc_weight(m, t->patch_w), (int)d->BT, d->Cin * d->P * d->P, d->D, m->act, m->compute), m);
  DLPAR_TRY(grads_ready(m, d->depth + 1, 0));
  /* the optimizer (compute stream) waits for the last bucket */
  MODEL_TRY(cudaEventRecord(m->dp_done, m->dp), m);
  MODEL_TRY(cudaStreamWaitEvent(m->compute, m->dp_done, 0), m);
  m->dp_unordered = false; /* compute has joined dp */
  return DLPAR_OK;
}
