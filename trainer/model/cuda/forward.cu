/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/cuda/forward.cu: the forward pass, from the patch
 * embedding through the blocks to the prediction; the tp allreduce both
 * passes run; creation's choice of the attention's and GELU's kernels. */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "trainer/model/cuda/model_cuda.h"

static const float LN_EPS = 1e-6f;

static dlpar_dtype comm_type(dl_dtype act)
{
  return act == DL_BF16 ? DLPAR_BFLOAT16 : act == DL_F16 ? DLPAR_FLOAT16 : DLPAR_FLOAT32;
}

/* A tp allreduce, after the dp buckets enqueued before it (one collective
 * order: see model_cuda.h). */
int mc_tp_sum(model_cuda *m, void *buf, size_t n)
{
  if (m->base.table.tp == 1)
    return DLPAR_OK;
  if (m->dp_unordered)
    MODEL_TRY(cudaStreamWaitEvent(m->compute, m->dp_enqueued, 0), m);
  m->dp_unordered = false;
  MODEL_TRY_COMM(dlpar_allreduce(m->base.comm, DLPAR_TP, buf, n, comm_type(m->act), DLPAR_SUM, m->compute), m);
  return DLPAR_OK;
}

static int attention_fwd(model_cuda *m, block_acts *a)
{
  const vit_dims *d = &m->base.dims;
  const float scale = 1.0f / sqrtf((float)d->HD);
#ifdef HAVE_CUDNN
  if (m->sdpa)
    return dl_sdpa_fwd(m->sdpa, m->sdpa_ws, a->att, a->lse, a->q, a->k, a->v, d->B, d->N, d->heads, d->HD, scale,
                       m->act, m->compute);
#endif
  if (m->attention.kernels == ATTENTION_TENSOR_CORES)
    return dl_attention_tc_fwd((float *)a->att, a->lse, (const float *)a->q, (const float *)a->k,
                               (const float *)a->v, d->B, d->N, d->heads, d->HD, scale, m->attention.passes,
                               m->compute);
  return dl_attention_fwd(a->att, a->lse, a->q, a->k, a->v, d->B, d->N, d->heads, d->HD, scale, m->act, m->compute);
}

/* The attention attention_resolve chose. cuDNN's: its plans for this
 * shape, built once here (their workspace goes into the arena). A shape
 * cuDNN has no plan for is an error naming `attention: reference` (the
 * reference kernels are far slower: never taken silently), but with
 * deterministic: true, where the reference kernels are the deterministic
 * choice left: taken, and said. Any other cuDNN failure (driver, runtime,
 * libraries) is an error in cuDNN's words. */
int mc_plan_attention(model_cuda *m, const dlpar_info *info)
{
  const vit_dims *d = &m->base.dims;
#ifdef HAVE_CUDNN
  int rc;
  if (m->attention.kernels != ATTENTION_CUDNN)
    return DLPAR_OK;
  MODEL_TRY(dl_sdpa_create(&m->sdpa), m);
  dl_sdpa_set_deterministic(m->sdpa, m->attention.deterministic);
  rc = dl_sdpa_plan(m->sdpa, d->B, d->N, d->heads, d->HD, m->act, &m->sdpa_ws_bytes);
  if (rc == 0)
    return DLPAR_OK;
  if (!dl_sdpa_unsupported(rc))
    return dlpar_fail(&m->base, DLPAR_ERR_CUDA, "%s:%d: dl_sdpa_plan: %s (the line above has cuDNN's words: "
                      "check the driver and that libcudnn, libnvrtc and libcuda.so.1 load)", __FILE__, __LINE__,
                      dl_status_string(rc));
  if (!m->attention.deterministic)
    return dlpar_fail(&m->base, DLPAR_ERR_INPUT, "attention: cudnn: no cuDNN plan for %d heads of size %d over %d "
                      "tokens in %s (%s): set attention: reference to run the reference kernels (much slower), or "
                      "change num_heads or embed_dim", d->heads, d->HD, d->N, m->act == DL_BF16 ? "bf16" : "fp16",
                      dl_status_string(rc));
  dl_sdpa_destroy(m->sdpa);
  m->sdpa = NULL;
  m->sdpa_ws_bytes = 0;
  m->attention = attention_without_cudnn();
  if (info->rank == 0)
    printf("dlpar-train: deterministic: true: cuDNN has no deterministic attention plan for %d heads of size %d over "
           "%d tokens (%s): using the reference kernels (deterministic, slower)\n", d->heads, d->HD, d->N,
           dl_status_string(rc));
  fflush(stdout);
#else
  (void)d;
  (void)info;
#endif
  return DLPAR_OK;
}

/* dlpar's attention kernels (fp32, attention: reference) hold their tiles
 * in shared memory: refused at start-up, by name, on a GPU with too little. */
int mc_check_attention_fits(model_cuda *m, const dlpar_info *info)
{
  const vit_dims *d = &m->base.dims;
  size_t needed = 0;
  int allowed = 0;
  if (m->sdpa)
    return DLPAR_OK;
  if (m->attention.kernels == ATTENTION_TENSOR_CORES)
    MODEL_TRY(dl_attention_tc_shared_bytes(d->HD, &needed), m);
  else
    MODEL_TRY(dl_attention_shared_bytes(d->HD, &needed), m);
  MODEL_TRY(cudaDeviceGetAttribute(&allowed, cudaDevAttrMaxSharedMemoryPerBlockOptin, info->device), m);
  if (needed > (size_t)allowed)
    return dlpar_fail(&m->base, DLPAR_ERR_INPUT, "attention: dlpar's kernels need %zu KB of shared memory per block "
                      "for heads of %d dims; this GPU allows %d KB (use amp_mode bf16 for cuDNN's attention, or "
                      "smaller heads: more num_heads)", needed / 1024, d->HD, allowed / 1024);
  return DLPAR_OK;
}

/* The MLP's GELU in cuBLASLt's epilogues where it can (16-bit
 * activations; dl_gelu_epilogue), else the exact kernels with one notice. */
int mc_plan_gelu(model_cuda *m, const dlpar_info *info)
{
  const vit_dims *d = &m->base.dims;
  MODEL_TRY(dl_gelu_epilogue(m->blas, (int)d->BT, d->D, d->Fl, d->D, m->act, &m->gelu_fused), m);
  if (!m->gelu_fused && info->rank == 0)
    printf("dlpar-train: GELU: separate exact-GELU kernels, not the GEMM epilogues (%s)\n",
           m->act == DL_F32 ? "amp_mode none: cuBLASLt's GELU is the tanh approximation"
                            : "cuBLASLt has no GELU epilogue for this shape");
  fflush(stdout);
  return DLPAR_OK;
}

/* One block: its input's norm ln1 was made by the previous block's last
 * fused residual-add + norm (block 0: by the embedding). The block ends
 * with the next norm: the next block's ln1, or the final norm. */
static int block_forward(model_cuda *m, int l)
{
  const vit_dims *d = &m->base.dims;
  const block_params *p = &m->base.table.blocks[l];
  block_acts *a = &m->blocks[l];
  const int BT = (int)d->BT;
  const bool last = l + 1 == d->depth;
  const param_table *t = &m->base.table;
  float *x_out = last ? m->x_final : m->blocks[l + 1].x_in;
  void *ln_next = last ? m->lnf : m->blocks[l + 1].ln1;
  float *mean_next = last ? m->lnf_mean : m->blocks[l + 1].ln1_mean;
  float *rstd_next = last ? m->lnf_rstd : m->blocks[l + 1].ln1_rstd;
  const int norm_w = last ? t->norm_w : t->blocks[l + 1].norm1_w, norm_b = last ? t->norm_b : t->blocks[l + 1].norm1_b;
  /* q, k, v in one GEMM: the fused [3 Dl x D] weight and [3 Dl] bias (params.h) into the q, k, v planes */
  MODEL_TRY(dl_matmul_fwd_planes(m->blas, a->q, a->ln1, mc_weight(m, p->q_w), mc_weight(m, p->q_b), 3, BT, d->D,
                                d->Dl, m->act, m->compute), m);
  MODEL_TRY(attention_fwd(m, a), m);
  /* row-parallel proj: partial sums, reduced over tp, then bias + residual + norm2 */
  MODEL_TRY(dl_matmul_fwd(m->blas, m->dln, a->att, mc_weight(m, p->proj_w), NULL, BT, d->Dl, d->D, m->act,
                         m->compute), m);
  DLPAR_TRY(mc_tp_sum(m, m->dln, (size_t)BT * d->D));
  MODEL_TRY(dl_residual_layernorm_fwd(a->x_mid, a->ln2, a->ln2_mean, a->ln2_rstd, a->x_in, m->dln,
                                     mc_param(m, p->proj_b), mc_param(m, p->norm2_w), mc_param(m, p->norm2_b), BT,
                                     d->D, LN_EPS, m->act, m->compute), m);
  MODEL_TRY(dl_matmul_gelu_fwd(m->blas, m->gelu_fused, a->gelu, a->fc1, a->ln2, mc_weight(m, p->fc1_w),
                              mc_weight(m, p->fc1_b), BT, d->D, d->Fl, m->act, m->compute), m);
  MODEL_TRY(dl_matmul_fwd(m->blas, m->dln, a->gelu, mc_weight(m, p->fc2_w), NULL, BT, d->Fl, d->D, m->act,
                         m->compute), m);
  DLPAR_TRY(mc_tp_sum(m, m->dln, (size_t)BT * d->D));
  MODEL_TRY(dl_residual_layernorm_fwd(x_out, ln_next, mean_next, rstd_next, a->x_mid, m->dln, mc_param(m, p->fc2_b),
                                     mc_param(m, norm_w), mc_param(m, norm_b), BT, d->D, LN_EPS, m->act,
                                     m->compute), m);
  return DLPAR_OK;
}

int mc_forward(model_cuda *m, const float *inp)
{
  const vit_dims *d = &m->base.dims;
  const param_table *t = &m->base.table;
  block_acts *first = &m->blocks[0];
  MODEL_TRY(dl_patchify(m->patches, inp, d->B, d->Cin, d->H, d->W, d->P, m->act, m->compute), m);
  DLPAR_TRY(mc_record_for_copy(m, m->inp_read)); /* the slot's input may be refilled */
  /* the tokens (act, in dln) + the position embedding: the fp32 residual stream */
  MODEL_TRY(dl_matmul_fwd(m->blas, m->dln, m->patches, mc_weight(m, t->patch_w), mc_weight(m, t->patch_b),
                         (int)d->BT, d->Cin * d->P * d->P, d->D, m->act, m->compute), m);
  MODEL_TRY(dl_embed_tokens(first->x_in, m->dln, mc_param(m, t->pos_embed), d->B, d->N, d->D, m->act, m->compute), m);
  MODEL_TRY(dl_layernorm_fwd(first->ln1, first->ln1_mean, first->ln1_rstd, first->x_in,
                            mc_param(m, t->blocks[0].norm1_w), mc_param(m, t->blocks[0].norm1_b), (int)d->BT, d->D,
                            LN_EPS, m->act, m->compute), m);
  for (int l = 0; l < d->depth; l++)
    DLPAR_TRY(block_forward(m, l));
  MODEL_TRY(dl_matmul_fwd(m->blas, m->head, m->lnf, mc_weight(m, t->head_w), NULL, (int)d->BT, d->D,
                         d->P * d->P * d->Cout, m->act, m->compute), m);
  MODEL_TRY(dl_unpatchify(m->pred, m->head, d->B, d->Cout, d->H, d->W, d->P, m->act, m->compute), m);
  return DLPAR_OK;
}
