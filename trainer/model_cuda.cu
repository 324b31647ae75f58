/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model_cuda.cu: the model on one GPU per rank (see model.h), the
 * CUDA twin of model_cpu.c with the same data flow:
 *  - precision (the tutorial's amp_mode): none = fp32 (TF32 if tf32: true),
 *    bf16 / fp16 = activations and GEMM inputs in 16 bits, fp32
 *    accumulation, fp32 master weights, gradients and Adam state, and,
 *    as PyTorch's autocast keeps them, an fp32 residual stream (the
 *    embedding's output, each block's input and middle), its gradient,
 *    LayerNorm's input-gradient sums and the q/k/v input gradient's sum
 *    over its three GEMMs; fp16 with
 *    dynamic loss scaling (2^16, x2 after 2000 clean steps, /2 and skip on
 *    inf/NaN);
 *  - memory: one arena allocated at creation; nothing is allocated in a step
 *    (model_cuda_arena_bytes gives its size for a config, without a GPU).
 *    One batch slot, refilled once read (the input after the patch
 *    embedding, the target after the loss's backward); block l's backward
 *    scratch lives in block l's own activations that are dead by then
 *    (dfc1 in GELU's output, datt in ln2, dq/dk/dv in fc1, the q/k/v input
 *    gradient's fp32 sum in x_mid); the head's gradient in the head's
 *    output, the prediction's in the prediction; with recompute: gelu (the
 *    default) GELU's output is one buffer for all blocks, recomputed from
 *    fc1 before fc2's backward;
 *  - streams: compute (forward, backward, tensor-parallel allreduces, Adam),
 *    copy (host->device batches from pinned memory, and Adam's lr and step
 *    once the previous Adam is done), and dp
 *    (data-parallel gradient buckets, each started by an event recorded
 *    when backward finishes its tensors, overlapping the rest of backward);
 *    no host synchronisation inside a step;
 *  - ONE COLLECTIVE ORDER on every rank, whatever the streams do: the
 *    collectives run on the GPU in the order the host enqueues them. tp
 *    allreduces (compute) and dp buckets (dp) are on two streams, so each
 *    tp allreduce first waits for the dp buckets enqueued before it (the
 *    event dp_enqueued); buckets overlap the compute between them and the
 *    next tp allreduce (all of backward when tp = 1). The metrics', stop and
 *    host collectives follow on compute, after backward joined dp. Without
 *    this, two ranks could run a tp and a dp collective in opposite orders
 *    and wait for each other for ever;
 *  - optionally each step's forward/backward and Adam captured as CUDA
 *    graphs and replayed (cuda_graph: true): each runs eagerly once first
 *    (warm-up: algorithm choice, lazy loading, the kernels' stack), then is
 *    captured; the events the copy stream waits on inside a step (input
 *    read, target read) are external event nodes, recorded by every replay;
 *    the others (Adam done) are recorded outside the graphs; libdlpar times
 *    the captured collectives from each launch (dlpar_graph_launched).
 * Every CUDA/cuBLAS/NCCL failure names the call, file:line and the
 * library's own error string. */
#include "config.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "trainer/model.h"
}

#define MODEL_TRY(m, call)                                                                               \
  do {                                                                                                   \
    int rc_ = (call);                                                                                    \
    if (rc_ != 0)                                                                                        \
      return model_fail(&(m)->base, DLPAR_ERR_CUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call,          \
                        dl_status_string(rc_));                                                          \
  } while (0)

#define MODEL_TRY_COMM(m, call)                                                                          \
  do {                                                                                                   \
    if ((call) != 0)                                                                                     \
      return model_fail(&(m)->base, DLPAR_ERR_NCCL, "%s:%d: %s: %s", __FILE__, __LINE__, #call,          \
                        dlpar_last_error((m)->base.comm));                                               \
  } while (0)

/* x_in, x_mid: the residual stream, fp32 in every precision (as PyTorch's
 * autocast keeps it); the rest in the activations' type. gelu: the block's
 * own, or (recompute: gelu) the buffer all blocks share. The backward's
 * scratch of the block, in its buffers that are dead by then: dfc1 in
 * gelu, datt in ln2, dq/dk/dv in fc1, dqkv_sum in x_mid. */
typedef struct {
  float *x_in, *x_mid;
  void *ln1, *q, *k, *v, *att, *ln2, *fc1, *gelu;
  float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd, *lse;
  void *dfc1, *datt, *dq, *dk, *dv;
  float *dqkv_sum;
} block_acts;

typedef struct {
  cudaGraphExec_t exec;
  bool warmed_up; /* ran eagerly once: the next call captures */
} captured_work;

typedef struct {
  model base;
  dl_dtype act;
  size_t act_bytes;
  cudaStream_t compute, copy, dp;
  dl_blas *blas;
  int gelu_fused; /* the MLP's GELU in the GEMMs' epilogues (dl_gelu_epilogue) */
  bool recompute_gelu; /* recompute: gelu */
  attention_choice attention; /* which attention kernels (attention_resolve) */
  dl_sdpa *sdpa; /* cuDNN's attention (ATTENTION_CUDNN); NULL: dlpar's kernels */
  void *sdpa_ws;
  size_t sdpa_ws_bytes;
  void *tc_scratch; /* the tensor-core attention's backward scratch (ATTENTION_TENSOR_CORES) */
  char *arena;
  size_t arena_bytes, arena_used;
  /* parameters, gradients, Adam (fp32 flat) and the act copy of the weights */
  float *params, *grads, *adam_m, *adam_v;
  void *params_act;
  /* scalars on the device; metric_sums: the open window's sums (SUM_*);
   * rmse_per_sample: B floats of the RMSE's scratch, apart from the sums */
  float *lr_t, *loss_scale, *metric_sums, *rmse_per_sample, *loss_sums;
  int *found_inf, *clean_steps;
  float *host_scalars; /* pinned: lr, t */
  /* the posted window: sums over dp in pinned memory once metrics_posted
   * has fired, and its step and sample counts (host counted) */
  float *posted_sums;
  cudaEvent_t metrics_posted;
  bool metrics_pending;
  long posted_train_steps, posted_val_samples;
  /* the batch: one device slot, filled on the copy stream once the step
   * before has read it (inp_read, tgt_read: external events of the graphs) */
  float *inp, *tgt;
  cudaEvent_t copied, inp_read, tgt_read, scalars_copied, adam_done;
  /* activations */
  void *patches, *lnf, *head;
  float *x_final, *lnf_mean, *lnf_rstd, *pred, *lat_w;
  block_acts *blocks;
  /* backward: dx, the residual stream's gradient, fp32; dx_act its copy in
   * the activations' type for the GEMMs (dx itself in fp32); dln: a GEMM's
   * [BT, D] output (also the forward's); dhead in head, dpred in pred
   * (each dead once read); the blocks' scratch in block_acts */
  float *dx;
  void *dx_act, *dln, *dhead;
  float *dpred, *delta;
  float *reduce_ws; /* the LayerNorm gradients' column-sum partials */
  cudaEvent_t *grads_ready; /* per block, and the head */
  cudaEvent_t dp_done, dp_enqueued;
  bool dp_unordered;        /* dp buckets were enqueued since the last tp allreduce */
  grad_buckets buckets;
  long train_steps, val_samples;
  /* CUDA graphs: forward/backward, and Adam */
  captured_work graph_step, graph_adam;
} model_cuda;

enum { SUM_TRAIN_LOSS = 0, SUM_VAL_LOSS, SUM_VAL_RMSE, SUM_SKIPPED, SUM_OVERFLOW, N_SUMS };

static const float LN_EPS = 1e-6f;
static const float FP16_INITIAL_SCALE = 65536.0f;
static const int FP16_SCALE_INTERVAL = 2000;
/* the scale's bounds: below 1 the loss scaling only loses precision, so
 * an overflow there is the gradients' own (a skipped step); 2^24 keeps
 * scaled losses far from fp32's range */
static const float FP16_MIN_SCALE = 1.0f, FP16_MAX_SCALE = 16777216.0f;

/* ------------------------------------------------------------ parameters */

static float *param(model_cuda *m, int i)
{
  return m->params + m->base.table.p[i].offset;
}

/* The weight as GEMMs read it: the act copy (the fp32 master in fp32 mode). */
static void *weight(model_cuda *m, int i)
{
  return (char *)m->params_act + m->base.table.p[i].offset * m->act_bytes;
}

static float *grad(model_cuda *m, int i)
{
  return m->grads + m->base.table.p[i].offset;
}

static dlpar_dtype comm_type(dl_dtype act)
{
  return act == DL_BF16 ? DLPAR_BFLOAT16 : act == DL_F16 ? DLPAR_FLOAT16 : DLPAR_FLOAT32;
}

/* A tp allreduce, after the dp buckets enqueued before it (one collective
 * order: see the top of the file). */
static int tp_sum(model_cuda *m, void *buf, size_t n)
{
  if (m->base.table.tp == 1)
    return DLPAR_OK;
  if (m->dp_unordered)
    MODEL_TRY(m, cudaStreamWaitEvent(m->compute, m->dp_enqueued, 0));
  m->dp_unordered = false;
  MODEL_TRY_COMM(m, dlpar_allreduce(m->base.comm, DLPAR_TP, buf, n, comm_type(m->act), DLPAR_SUM, m->compute));
  return DLPAR_OK;
}

/* ------------------------------------------------------------ attention */

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

/* The attention attention_resolve chose. cuDNN's: its plans for this
 * shape, built once here (their workspace goes into the arena). A shape
 * cuDNN has no plan for is an error naming `attention: reference` (the
 * reference kernels are far slower: never taken silently), but with
 * deterministic: true, where the reference kernels are the deterministic
 * choice left: taken, and said. Any other cuDNN failure (driver, runtime,
 * libraries) is an error in cuDNN's words. */
static int plan_attention(model_cuda *m, const dlpar_info *info)
{
  const vit_dims *d = &m->base.dims;
#ifdef HAVE_CUDNN
  int rc;
  if (m->attention.kernels != ATTENTION_CUDNN)
    return DLPAR_OK;
  MODEL_TRY(m, dl_sdpa_create(&m->sdpa));
  dl_sdpa_set_deterministic(m->sdpa, m->attention.deterministic);
  rc = dl_sdpa_plan(m->sdpa, d->B, d->N, d->heads, d->HD, m->act, &m->sdpa_ws_bytes);
  if (rc == 0)
    return DLPAR_OK;
  if (!dl_sdpa_unsupported(rc))
    return model_fail(&m->base, DLPAR_ERR_CUDA, "%s:%d: dl_sdpa_plan: %s (the line above has cuDNN's words: "
                      "check the driver and that libcudnn, libnvrtc and libcuda.so.1 load)", __FILE__, __LINE__,
                      dl_status_string(rc));
  if (!m->attention.deterministic)
    return model_fail(&m->base, DLPAR_ERR_INPUT, "attention: cudnn: no cuDNN plan for %d heads of size %d over %d "
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
static int check_attention_fits(model_cuda *m, const dlpar_info *info)
{
  const vit_dims *d = &m->base.dims;
  size_t needed = 0;
  int allowed = 0;
  if (m->sdpa)
    return DLPAR_OK;
  if (m->attention.kernels == ATTENTION_TENSOR_CORES)
    MODEL_TRY(m, dl_attention_tc_shared_bytes(d->HD, &needed));
  else
    MODEL_TRY(m, dl_attention_shared_bytes(d->HD, &needed));
  MODEL_TRY(m, cudaDeviceGetAttribute(&allowed, cudaDevAttrMaxSharedMemoryPerBlockOptin, info->device));
  if (needed > (size_t)allowed)
    return model_fail(&m->base, DLPAR_ERR_INPUT, "attention: dlpar's kernels need %zu KB of shared memory per block "
                      "for heads of %d dims; this GPU allows %d KB (use amp_mode bf16 for cuDNN's attention, or "
                      "smaller heads: more num_heads)", needed / 1024, d->HD, allowed / 1024);
  return DLPAR_OK;
}

/* The MLP's GELU in cuBLASLt's epilogues where it can (16-bit
 * activations; dl_gelu_epilogue), else the exact kernels with one notice. */
static int plan_gelu(model_cuda *m, const dlpar_info *info)
{
  const vit_dims *d = &m->base.dims;
  MODEL_TRY(m, dl_gelu_epilogue(m->blas, (int)d->BT, d->D, d->Fl, d->D, m->act, &m->gelu_fused));
  if (!m->gelu_fused && info->rank == 0)
    printf("dlpar-train: GELU: separate exact-GELU kernels, not the GEMM epilogues (%s)\n",
           m->act == DL_F32 ? "amp_mode none: cuBLASLt's GELU is the tanh approximation"
                            : "cuBLASLt has no GELU epilogue for this shape");
  fflush(stdout);
  return DLPAR_OK;
}

/* ------------------------------------------------------------ forward */

/* Records ev on the compute stream for the copy stream to wait on: while
 * a CUDA graph is captured, as an external event node (every replay
 * records it again; cudaEventRecordExternal is refused outside a capture),
 * else as a plain record. */
static int record_for_copy(model_cuda *m, cudaEvent_t ev)
{
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  MODEL_TRY(m, cudaStreamIsCapturing(m->compute, &capture));
  MODEL_TRY(m, cudaEventRecordWithFlags(ev, m->compute,
                                        capture == cudaStreamCaptureStatusActive ? cudaEventRecordExternal
                                                                                 : cudaEventRecordDefault));
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
  int rc;
  /* q, k, v in one GEMM: the fused [3 Dl x D] weight and [3 Dl] bias (params.h) into the q, k, v planes */
  MODEL_TRY(m, dl_matmul_fwd_planes(m->blas, a->q, a->ln1, weight(m, p->q_w), weight(m, p->q_b), 3, BT, d->D, d->Dl,
                                   m->act, m->compute));
  MODEL_TRY(m, attention_fwd(m, a));
  /* row-parallel proj: partial sums, reduced over tp, then bias + residual + norm2 */
  MODEL_TRY(m, dl_matmul_fwd(m->blas, m->dln, a->att, weight(m, p->proj_w), NULL, BT, d->Dl, d->D, m->act, m->compute));
  if ((rc = tp_sum(m, m->dln, (size_t)BT * d->D)) != DLPAR_OK)
    return rc;
  MODEL_TRY(m, dl_residual_layernorm_fwd(a->x_mid, a->ln2, a->ln2_mean, a->ln2_rstd, a->x_in, m->dln, param(m, p->proj_b),
                                        param(m, p->norm2_w), param(m, p->norm2_b), BT, d->D, LN_EPS, m->act, m->compute));
  MODEL_TRY(m, dl_matmul_gelu_fwd(m->blas, m->gelu_fused, a->gelu, a->fc1, a->ln2, weight(m, p->fc1_w),
                                 weight(m, p->fc1_b), BT, d->D, d->Fl, m->act, m->compute));
  MODEL_TRY(m, dl_matmul_fwd(m->blas, m->dln, a->gelu, weight(m, p->fc2_w), NULL, BT, d->Fl, d->D, m->act, m->compute));
  if ((rc = tp_sum(m, m->dln, (size_t)BT * d->D)) != DLPAR_OK)
    return rc;
  MODEL_TRY(m, dl_residual_layernorm_fwd(x_out, ln_next, mean_next, rstd_next, a->x_mid, m->dln, param(m, p->fc2_b),
                                        param(m, norm_w), param(m, norm_b), BT, d->D, LN_EPS, m->act, m->compute));
  return DLPAR_OK;
}

static int forward(model_cuda *m, const float *inp)
{
  const vit_dims *d = &m->base.dims;
  const param_table *t = &m->base.table;
  block_acts *first = &m->blocks[0];
  int rc;
  MODEL_TRY(m, dl_patchify(m->patches, inp, d->B, d->Cin, d->H, d->W, d->P, m->act, m->compute));
  DLPAR_TRY(record_for_copy(m, m->inp_read)); /* the slot's input may be refilled */
  /* the tokens (act, in dln) + the position embedding: the fp32 residual stream */
  MODEL_TRY(m, dl_matmul_fwd(m->blas, m->dln, m->patches, weight(m, t->patch_w), weight(m, t->patch_b), (int)d->BT,
                            d->Cin * d->P * d->P, d->D, m->act, m->compute));
  MODEL_TRY(m, dl_embed_tokens(first->x_in, m->dln, param(m, t->pos_embed), d->B, d->N, d->D, m->act, m->compute));
  MODEL_TRY(m, dl_layernorm_fwd(first->ln1, first->ln1_mean, first->ln1_rstd, first->x_in, param(m, t->blocks[0].norm1_w),
                               param(m, t->blocks[0].norm1_b), (int)d->BT, d->D, LN_EPS, m->act, m->compute));
  for (int l = 0; l < d->depth; l++) {
    if ((rc = block_forward(m, l)) != DLPAR_OK)
      return rc;
  }
  MODEL_TRY(m, dl_matmul_fwd(m->blas, m->head, m->lnf, weight(m, t->head_w), NULL, (int)d->BT, d->D,
                            d->P * d->P * d->Cout, m->act, m->compute));
  MODEL_TRY(m, dl_unpatchify(m->pred, m->head, d->B, d->Cout, d->H, d->W, d->P, m->act, m->compute));
  return DLPAR_OK;
}

/* ------------------------------------------------------------ backward */

/* Where a LayerNorm backward copies the stream's gradient for the GEMMs:
 * nowhere in fp32 (dx_act is dx). */
static void *dx_copy(model_cuda *m)
{
  return m->act == DL_F32 ? NULL : m->dx_act;
}

/* Tensors from `first_done` on are final: let the dp stream reduce them. */
static int grads_ready(model_cuda *m, int event, int first_done)
{
  MODEL_TRY(m, cudaEventRecord(m->grads_ready[event], m->compute));
  MODEL_TRY(m, cudaStreamWaitEvent(m->dp, m->grads_ready[event], 0));
  MODEL_TRY_COMM(m, grad_buckets_ready(&m->buckets, m->base.comm, m->grads, first_done, m->dp));
  MODEL_TRY(m, cudaEventRecord(m->dp_enqueued, m->dp));
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
  int rc;
  /* MLP branch; dx holds the gradient of the block's output */
  if (m->recompute_gelu)
    MODEL_TRY(m, dl_gelu_recompute(m->gelu_fused, a->gelu, a->fc1, (size_t)BT * d->Fl, m->act, m->compute));
  MODEL_TRY(m, dl_matmul_bwd_gelu(m->blas, m->gelu_fused, a->dfc1, a->fc1, grad(m, p->fc2_w),
                                 grad(m, p->fc2_b), m->dx_act, a->gelu, weight(m, p->fc2_w), BT, d->Fl, d->D, m->act,
                                 m->compute));
  MODEL_TRY(m, dl_matmul_bwd(m->blas, m->dln, 0, grad(m, p->fc1_w), grad(m, p->fc1_b), a->dfc1, a->ln2, weight(m, p->fc1_w),
                            BT, d->D, d->Fl, m->act, m->compute));
  if ((rc = tp_sum(m, m->dln, nD)) != DLPAR_OK)
    return rc;
  MODEL_TRY(m, dl_layernorm_bwd(m->dx, dx_copy(m), grad(m, p->norm2_w), grad(m, p->norm2_b), m->dln, a->x_mid,
                               param(m, p->norm2_w), a->ln2_mean, a->ln2_rstd, BT, d->D, m->reduce_ws, m->act,
                               m->compute));
  /* attention branch */
  MODEL_TRY(m, dl_matmul_bwd(m->blas, a->datt, 0, grad(m, p->proj_w), grad(m, p->proj_b), m->dx_act, a->att,
                            weight(m, p->proj_w), BT, d->Dl, d->D, m->act, m->compute));
  MODEL_TRY(m, attention_bwd(m, a));
  MODEL_TRY(m, dl_matmul_bwd_planes(m->blas, m->dln, a->dqkv_sum, 0, grad(m, p->q_w), grad(m, p->q_b), a->dq, a->ln1,
                                   weight(m, p->q_w), 3, BT, d->D, d->Dl, m->act, m->compute));
  if ((rc = tp_sum(m, m->dln, nD)) != DLPAR_OK)
    return rc;
  MODEL_TRY(m, dl_layernorm_bwd(m->dx, dx_copy(m), grad(m, p->norm1_w), grad(m, p->norm1_b), m->dln, a->x_in,
                               param(m, p->norm1_w), a->ln1_mean, a->ln1_rstd, BT, d->D, m->reduce_ws, m->act,
                               m->compute));
  return DLPAR_OK;
}

static int backward(model_cuda *m, const float *tgt)
{
  const vit_dims *d = &m->base.dims;
  const param_table *t = &m->base.table;
  const size_t img = (size_t)d->Cout * d->H * d->W;
  int rc;
  /* dloss is the loss scale (1 but in fp16): gradients come out scaled, Adam unscales */
  MODEL_TRY(m, dl_l2_loss_bwd(m->dpred, m->loss_sums, m->pred, tgt, d->B, img, m->loss_scale, m->compute));
  DLPAR_TRY(record_for_copy(m, m->tgt_read)); /* the slot's target may be refilled */
  MODEL_TRY(m, dl_unpatchify_bwd(m->dhead, m->dpred, d->B, d->Cout, d->H, d->W, d->P, m->act, m->compute));
  MODEL_TRY(m, dl_matmul_bwd(m->blas, m->dln, 0, grad(m, t->head_w), NULL, m->dhead, m->lnf, weight(m, t->head_w),
                            (int)d->BT, d->D, d->P * d->P * d->Cout, m->act, m->compute));
  MODEL_TRY(m, cudaMemsetAsync(m->dx, 0, sizeof(float) * d->BT * d->D, m->compute));
  MODEL_TRY(m, dl_layernorm_bwd(m->dx, dx_copy(m), grad(m, t->norm_w), grad(m, t->norm_b), m->dln, m->x_final,
                               param(m, t->norm_w), m->lnf_mean, m->lnf_rstd, (int)d->BT, d->D, m->reduce_ws, m->act,
                               m->compute));
  if ((rc = grads_ready(m, d->depth, t->norm_w)) != DLPAR_OK)
    return rc;
  for (int l = d->depth - 1; l >= 0; l--) {
    DLPAR_TRY(block_backward(m, l));
    DLPAR_TRY(grads_ready(m, l, t->blocks[l].norm1_w));
  }
  MODEL_TRY(m, dl_pos_embed_bwd(grad(m, t->pos_embed), m->dx, d->B, d->N, d->D, m->compute));
  MODEL_TRY(m, dl_matmul_bwd(m->blas, NULL, 0, grad(m, t->patch_w), grad(m, t->patch_b), m->dx_act, m->patches,
                            weight(m, t->patch_w), (int)d->BT, d->Cin * d->P * d->P, d->D, m->act, m->compute));
  if ((rc = grads_ready(m, d->depth + 1, 0)) != DLPAR_OK)
    return rc;
  /* the optimizer (compute stream) waits for the last bucket */
  MODEL_TRY(m, cudaEventRecord(m->dp_done, m->dp));
  MODEL_TRY(m, cudaStreamWaitEvent(m->compute, m->dp_done, 0));
  m->dp_unordered = false; /* compute has joined dp */
  return DLPAR_OK;
}

/* ------------------------------------------------------------ steps */

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
  MODEL_TRY(m, cudaStreamWaitEvent(m->copy, m->inp_read, 0));
  MODEL_TRY(m, cudaMemcpyAsync(m->inp, inp, in_bytes, cudaMemcpyHostToDevice, m->copy));
  MODEL_TRY(m, cudaStreamWaitEvent(m->copy, m->tgt_read, 0));
  MODEL_TRY(m, cudaMemcpyAsync(m->tgt, tgt, out_bytes, cudaMemcpyHostToDevice, m->copy));
  MODEL_TRY(m, cudaEventRecord(m->copied, m->copy));
  MODEL_TRY(m, cudaStreamWaitEvent(m->compute, m->copied, 0));
  MODEL_TRY(m, cudaEventSynchronize(m->copied)); /* the loader may refill the host buffer now */
  return DLPAR_OK;
}

static int step_body(model_cuda *m, int unused)
{
  const vit_dims *d = &m->base.dims;
  int rc;
  (void)unused;
  MODEL_TRY(m, cudaMemsetAsync(m->grads, 0, sizeof(float) * m->base.table.total, m->compute));
  if ((rc = forward(m, m->inp)) != DLPAR_OK)
    return rc;
  MODEL_TRY(m, dl_l2_loss_fwd(m->metric_sums + SUM_TRAIN_LOSS, m->loss_sums, m->pred, m->tgt, d->B,
                             (size_t)d->Cout * d->H * d->W, m->compute));
  return backward(m, m->tgt);
}

/* Runs body eagerly (always without cuda_graph; else the first time, as a
 * warm-up), or captures it into work->exec on the second call, then replays
 * it. Events the host or the copy stream wait on are recorded by the
 * callers, outside: a record inside a capture is not repeated by replays. */
static int run_captured(model_cuda *m, captured_work *work, int (*body)(model_cuda *, int), int arg)
{
  cudaGraph_t captured;
  int rc;
  if (!m->base.cfg.cuda_graph || !work->warmed_up) {
    work->warmed_up = true;
    return body(m, arg);
  }
  if (!work->exec) {
    MODEL_TRY(m, cudaStreamBeginCapture(m->compute, cudaStreamCaptureModeGlobal));
    rc = body(m, arg);
    MODEL_TRY(m, cudaStreamEndCapture(m->compute, &captured));
    if (rc != DLPAR_OK)
      return rc;
    rc = cudaGraphInstantiate(&work->exec, captured, 0);
    cudaGraphDestroy(captured);
    MODEL_TRY(m, rc);
  }
  MODEL_TRY(m, cudaGraphLaunch(work->exec, m->compute));
  dlpar_graph_launched(m->base.comm);
  return DLPAR_OK;
}

static int cuda_forward_backward(model *base, const float *inp, const float *tgt)
{
  model_cuda *m = (model_cuda *)base;
  int rc;
  grad_buckets_reset(&m->buckets);
  if (inp && (rc = stage_batch(m, inp, tgt)) != DLPAR_OK) /* no batch given: the last one, still on the device */
    return rc;
  m->train_steps++;
  return run_captured(m, &m->graph_step, step_body, 0);
}

static int adam_body(model_cuda *m, int unused)
{
  const bool fp16 = m->act == DL_F16;
  (void)unused;
  /* non-finite gradients anywhere in the tp group: no update (under fp16 the
   * loss scale's overflow steps, counted apart; skipped_steps otherwise) */
  MODEL_TRY(m, dl_check_finite(m->found_inf, m->grads, m->base.table.total, m->compute));
  if (dlpar_get_info(m->base.comm)->tp_size > 1)
    MODEL_TRY_COMM(m, dlpar_allreduce(m->base.comm, DLPAR_TP, m->found_inf, 1, DLPAR_INT32, DLPAR_MAX, m->compute));
  MODEL_TRY(m, dl_adam(m->params, m->act == DL_F32 ? NULL : m->params_act, m->act, m->adam_m, m->adam_v, m->grads,
                      m->base.table.total, m->lr_t, 0.9f, 0.95f, 1e-8f, m->loss_scale, m->found_inf, m->compute));
  if (fp16)
    MODEL_TRY(m, dl_update_loss_scale(m->loss_scale, m->clean_steps, m->found_inf, FP16_SCALE_INTERVAL, FP16_MIN_SCALE,
                                     FP16_MAX_SCALE, m->metric_sums + SUM_OVERFLOW, m->metric_sums + SUM_SKIPPED,
                                     m->compute));
  else
    MODEL_TRY(m, dl_count_flag(m->metric_sums + SUM_SKIPPED, m->found_inf, m->compute));
  return DLPAR_OK;
}

static int cuda_optimizer_step(model *base, double lr, long t)
{
  model_cuda *m = (model_cuda *)base;
  int rc;
  /* lr and step travel through pinned memory (so a captured Adam stays
   * valid) once the previous copy is done with it, and reach the device
   * once the previous Adam is done reading them */
  MODEL_TRY(m, cudaStreamSynchronize(m->copy));
  m->host_scalars[0] = (float)lr;
  m->host_scalars[1] = (float)t;
  MODEL_TRY(m, cudaStreamWaitEvent(m->copy, m->adam_done, 0));
  MODEL_TRY(m, cudaMemcpyAsync(m->lr_t, m->host_scalars, 2 * sizeof(float), cudaMemcpyHostToDevice, m->copy));
  MODEL_TRY(m, cudaEventRecord(m->scalars_copied, m->copy));
  MODEL_TRY(m, cudaStreamWaitEvent(m->compute, m->scalars_copied, 0));
  if ((rc = run_captured(m, &m->graph_adam, adam_body, 0)) != DLPAR_OK)
    return rc;
  MODEL_TRY(m, cudaEventRecord(m->adam_done, m->compute));
  return DLPAR_OK;
}

static int cuda_evaluate(model *base, const float *inp, const float *tgt)
{
  model_cuda *m = (model_cuda *)base;
  const vit_dims *d = &m->base.dims;
  DLPAR_TRY(stage_batch(m, inp, tgt));
  DLPAR_TRY(forward(m, m->inp));
  MODEL_TRY(m, dl_l2_loss_fwd(m->metric_sums + SUM_VAL_LOSS, m->loss_sums, m->pred, m->tgt, d->B,
                             (size_t)d->Cout * d->H * d->W, m->compute));
  MODEL_TRY(m, dl_weighted_rmse(m->metric_sums + SUM_VAL_RMSE, m->rmse_per_sample, m->pred, m->tgt, m->lat_w, d->B,
                               d->Cout, d->H, d->W, 0, m->compute));
  MODEL_TRY(m, cudaEventRecord(m->tgt_read, m->compute));
  m->val_samples += d->B;
  return DLPAR_OK;
}

/* In the compute stream, behind the step: the sums allreduced over dp, copied
 * to pinned memory and zeroed, then an event for take_metrics. Every dp rank
 * runs the same steps and validation batches, so the counts scale by D. */
static int cuda_post_metrics(model *base)
{
  model_cuda *m = (model_cuda *)base;
  const long dp = dlpar_get_info(base->comm)->dp_size;
  MODEL_TRY_COMM(m, dlpar_allreduce(base->comm, DLPAR_DP, m->metric_sums, N_SUMS, DLPAR_FLOAT32, DLPAR_SUM, m->compute));
  MODEL_TRY(m, cudaMemcpyAsync(m->posted_sums, m->metric_sums, N_SUMS * sizeof(float), cudaMemcpyDeviceToHost,
                              m->compute));
  MODEL_TRY(m, cudaMemsetAsync(m->metric_sums, 0, N_SUMS * sizeof(float), m->compute));
  MODEL_TRY(m, cudaEventRecord(m->metrics_posted, m->compute));
  m->posted_train_steps = m->train_steps * dp;
  m->posted_val_samples = m->val_samples * dp;
  m->train_steps = m->val_samples = 0;
  m->metrics_pending = true;
  return DLPAR_OK;
}

static int cuda_take_metrics(model *base, model_metrics *out)
{
  model_cuda *m = (model_cuda *)base;
  const vit_dims *d = &m->base.dims;
  memset(out, 0, sizeof(*out));
  if (!m->metrics_pending)
    return DLPAR_OK;
  MODEL_TRY(m, cudaEventSynchronize(m->metrics_posted));
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

static float *tensor_of(model_cuda *m, model_tensor which)
{
  return which == TENSOR_PARAMS ? m->params : which == TENSOR_GRADS ? m->grads : which == TENSOR_ADAM_M ? m->adam_m
                                                                                                        : m->adam_v;
}

static int cuda_read_tensor(model *base, model_tensor which, float *host)
{
  model_cuda *m = (model_cuda *)base;
  MODEL_TRY(m, cudaStreamSynchronize(m->compute));
  MODEL_TRY(m, cudaMemcpy(host, tensor_of(m, which), sizeof(float) * base->table.total, cudaMemcpyDeviceToHost));
  return DLPAR_OK;
}

/* host -> device on the compute stream, done when it returns (host may be
 * freed then). A plain cudaMemcpy from pageable memory runs on the legacy
 * stream, which the non-blocking compute stream does not wait for, and may
 * return before its DMA has landed: kernels queued on compute could read
 * the old bytes. */
static int upload(model_cuda *m, void *device, const void *host, size_t bytes)
{
  MODEL_TRY(m, cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, m->compute));
  MODEL_TRY(m, cudaStreamSynchronize(m->compute));
  return DLPAR_OK;
}

static int cuda_write_tensor(model *base, model_tensor which, const float *host)
{
  model_cuda *m = (model_cuda *)base;
  int rc = upload(m, tensor_of(m, which), host, sizeof(float) * base->table.total);
  if (rc != DLPAR_OK)
    return rc;
  if (which == TENSOR_PARAMS && m->act != DL_F32)
    MODEL_TRY(m, dl_cast(m->params_act, m->act, m->params, DL_F32, base->table.total, m->compute));
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

/* ------------------------------------------------------------ memory */

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
static void layout(model_cuda *m)
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

static int create_device_state(model_cuda *m)
{
  const vit_dims *d = &m->base.dims;
  float *host_params = (float *)malloc(sizeof(float) * m->base.table.total);
  float *lat_w = (float *)malloc(sizeof(float) * (size_t)d->H);
  const float one = 1.0f, fp16_scale = FP16_INITIAL_SCALE;
  int rc = !host_params || !lat_w ? DLPAR_ERR_SYSTEM : params_init(&m->base.table, m->base.cfg.seed, host_params);
  if (rc != DLPAR_OK) {
    free(host_params);
    free(lat_w);
    return model_fail(&m->base, DLPAR_ERR_SYSTEM, "out of host memory for the initial weights");
  }
  lat_weights_f32(lat_w, d->H);
  rc = m->base.ops->write_tensor(&m->base, TENSOR_PARAMS, host_params);
  if (rc == DLPAR_OK)
    rc = upload(m, m->lat_w, lat_w, sizeof(float) * (size_t)d->H);
  free(host_params);
  free(lat_w);
  if (rc != DLPAR_OK)
    return rc;
  return upload(m, m->loss_scale, m->act == DL_F16 ? &fp16_scale : &one, sizeof(float));
}

static int create_streams(model_cuda *m)
{
  const vit_dims *d = &m->base.dims;
  MODEL_TRY(m, cudaStreamCreateWithFlags(&m->compute, cudaStreamNonBlocking));
  MODEL_TRY(m, cudaStreamCreateWithFlags(&m->copy, cudaStreamNonBlocking));
  MODEL_TRY(m, cudaStreamCreateWithFlags(&m->dp, cudaStreamNonBlocking));
  MODEL_TRY(m, cudaEventCreateWithFlags(&m->copied, cudaEventDisableTiming));
  MODEL_TRY(m, cudaEventCreateWithFlags(&m->inp_read, cudaEventDisableTiming));
  MODEL_TRY(m, cudaEventCreateWithFlags(&m->tgt_read, cudaEventDisableTiming));
  MODEL_TRY(m, cudaEventRecord(m->inp_read, m->compute));
  MODEL_TRY(m, cudaEventRecord(m->tgt_read, m->compute));
  for (int e = 0; e < d->depth + 2; e++)
    MODEL_TRY(m, cudaEventCreateWithFlags(&m->grads_ready[e], cudaEventDisableTiming));
  MODEL_TRY(m, cudaEventCreateWithFlags(&m->dp_done, cudaEventDisableTiming));
  MODEL_TRY(m, cudaEventCreateWithFlags(&m->dp_enqueued, cudaEventDisableTiming));
  MODEL_TRY(m, cudaEventCreateWithFlags(&m->scalars_copied, cudaEventDisableTiming));
  MODEL_TRY(m, cudaEventCreateWithFlags(&m->adam_done, cudaEventDisableTiming));
  MODEL_TRY(m, cudaEventRecord(m->adam_done, m->compute));
  MODEL_TRY(m, cudaEventCreateWithFlags(&m->metrics_posted, cudaEventDisableTiming));
  MODEL_TRY(m, cudaHostAlloc((void **)&m->host_scalars, 2 * sizeof(float), cudaHostAllocDefault));
  MODEL_TRY(m, cudaHostAlloc((void **)&m->posted_sums, N_SUMS * sizeof(float), cudaHostAllocDefault));
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
  MODEL_TRY(m, dl_attention_stack_bytes(&needed));
  MODEL_TRY(m, cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  if (stack < needed)
    MODEL_TRY(m, cudaDeviceSetLimit(cudaLimitStackSize, needed));
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
  MODEL_TRY(m, cudaGetDeviceProperties(&prop, info->device));
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

/* What the arena's layout depends on, all from the config (no GPU): the
 * activations' type, the attention asked for, GELU's recomputation, the
 * blocks, the parameters. */
static int prepare_layout(model_cuda *m, const train_config *cfg, int tp_rank)
{
  const vit_dims *d = &m->base.dims;
  m->attention = attention_resolve(cfg);
  m->act = cfg->amp == AMP_BF16 ? DL_BF16 : cfg->amp == AMP_FP16 ? DL_F16 : DL_F32;
  m->act_bytes = dl_dtype_bytes(m->act);
  m->recompute_gelu = strcmp(cfg->recompute, "gelu") == 0;
  m->blocks = (block_acts *)calloc((size_t)d->depth, sizeof(block_acts));
  if (!m->blocks || params_build(&m->base.table, d, tp_rank) != DLPAR_OK)
    return model_fail(&m->base, DLPAR_ERR_SYSTEM, "out of host memory for the model");
  return DLPAR_OK;
}

static int create(model_cuda *m, const train_config *cfg, const dlpar_info *info)
{
  const vit_dims *d = &m->base.dims;
  DLPAR_TRY(prepare_layout(m, cfg, info->tp_rank));
  m->grads_ready = (cudaEvent_t *)calloc((size_t)d->depth + 2, sizeof(cudaEvent_t));
  if (!m->grads_ready || grad_buckets_plan(&m->buckets, &m->base.table, cfg->bucket_mb) != DLPAR_OK)
    return model_fail(&m->base, DLPAR_ERR_SYSTEM, "out of host memory for the model");
  if (d->HD > 128)
    return model_fail(&m->base, DLPAR_ERR_INPUT, "head size %d: the CUDA attention takes at most 128 (raise num_heads)",
                      d->HD);
  DLPAR_TRY(create_streams(m));
  DLPAR_TRY(reserve_kernel_stack(m));
  MODEL_TRY(m, dl_blas_create(&m->blas, 32u << 20, cfg->tf32));
  DLPAR_TRY(plan_attention(m, info));
  DLPAR_TRY(check_attention_fits(m, info));
  DLPAR_TRY(plan_gelu(m, info));
  DLPAR_TRY(report_choices(m, cfg, info));
  layout(m); /* measure */
  m->arena_bytes = m->arena_used;
  if (cudaMalloc((void **)&m->arena, m->arena_bytes) != cudaSuccess)
    return model_fail(&m->base, DLPAR_ERR_CUDA, "cannot allocate %.2f GB on device %d (lower global_batch_size, use "
                      "bf16, or more tensor-parallel ranks)", (double)m->arena_bytes / 1e9, info->device);
  MODEL_TRY(m, cudaMemset(m->arena, 0, m->arena_bytes));
  layout(m); /* place */
  return create_device_state(m);
}

extern "C" int model_cuda_arena_bytes(const train_config *cfg, int tp, int local_batch, size_t attention_workspace,
                                      size_t *bytes)
{
  model_cuda *m = (model_cuda *)calloc(1, sizeof(model_cuda));
  int rc;
  if (!m)
    return DLPAR_ERR_SYSTEM;
  vit_dims_fill(&m->base.dims, cfg, tp, local_batch);
  rc = prepare_layout(m, cfg, 0);
  if (rc == DLPAR_OK) {
    m->sdpa_ws_bytes = attention_workspace;
    layout(m); /* measure: no arena */
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
