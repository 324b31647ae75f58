/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/cuda/model_cuda.h: the model on one GPU per rank, as model.h
 * describes it, the CUDA twin of model_cpu.c with the same data flow. This
 * is what its files share: the model's state, MODEL_TRY and the mc_
 * functions that one file calls of another. The files, in the order a run
 * takes them:
 *   model.cu      the model_ops table; creation, tensors in and out
 *   arena.cu      where every tensor lives; the first weights
 *   step.cu       a batch onto the device; forward, loss, backward
 *   forward.cu    the forward pass; the attention and GELU kernels chosen
 *   backward.cu   the backward pass; gradients to the dp buckets
 *   graphs.cu     the step and Adam captured as CUDA graphs
 *   optimizer.cu  Adam, fp16's loss scale
 *   metrics.cu    the loss sums, posted over dp
 * The design:
 *  - Precision follows the tutorial's amp_mode. none is fp32, or TF32 with
 *    `tf32: true`. bf16 and fp16 keep activations and GEMM inputs in 16
 *    bits, with fp32 accumulation and fp32 master weights, gradients and
 *    Adam state. As PyTorch's autocast does, they keep in fp32 the residual
 *    stream, which is the embedding's output and each block's input and
 *    middle, its gradient, LayerNorm's input-gradient sums and the q/k/v
 *    input gradient's sum over its three GEMMs. fp16 adds dynamic loss
 *    scaling: the scale starts at 2^16, doubles after 2000 clean steps, and
 *    halves and skips the step on inf or NaN.
 *  - Memory is one arena allocated at creation, and nothing is allocated in
 *    a step. model_cuda_arena_bytes gives its size for a config, without a
 *    GPU. There is one batch slot, refilled once read: the input after the
 *    patch embedding, the target after the loss's backward. Block l's
 *    backward scratch lives in block l's own activations that are dead by
 *    then. dfc1 lives in GELU's output, datt in ln2, dq/dk/dv in fc1, and
 *    the q/k/v input gradient's fp32 sum in x_mid. The head's gradient
 *    lives in the head's output, and the prediction's in the prediction.
 *    With `recompute: gelu`, the default, GELU's output is one buffer for
 *    all blocks, recomputed from fc1 before fc2's backward.
 *  - There are three streams. compute runs forward, backward, the
 *    tensor-parallel allreduces and Adam. copy runs the host-to-device
 *    batches from pinned memory, and Adam's lr and step once the previous
 *    Adam is done. dp runs the data-parallel gradient buckets, each started
 *    by an event recorded when backward finishes its tensors, overlapping
 *    the rest of backward. There is no host synchronisation inside a step.
 *  - ONE COLLECTIVE ORDER holds on every rank, whatever the streams do: the
 *    collectives run on the GPU in the order the host enqueues them. tp
 *    allreduces on compute and dp buckets on dp are on two streams, so each
 *    tp allreduce first waits, through the event dp_enqueued, for the dp
 *    buckets enqueued before it. Buckets overlap the compute between them
 *    and the next tp allreduce, which is all of backward when tp = 1. The
 *    metrics', stop and host collectives follow on compute, after backward
 *    joined dp. Without this, two ranks could run a tp and a dp collective
 *    in opposite orders and wait for each other for ever.
 *  - With `cuda_graph: true`, each step's forward/backward and Adam are
 *    captured as CUDA graphs and replayed. Each runs eagerly once first, as
 *    a warm-up for algorithm choice, lazy loading and the kernels' stack,
 *    and is then captured. The events the copy stream waits on inside a
 *    step, input read and target read, are external event nodes, recorded
 *    by every replay. The others, such as Adam done, are recorded outside
 *    the graphs. libdlpar times the captured collectives from each launch
 *    through dlpar_graph_launched.
 * Every CUDA/cuBLAS/NCCL failure names the call, file:line and the
 * library's own error string. */
#ifndef DLPAR_TRAINER_MODEL_CUDA_H
#define DLPAR_TRAINER_MODEL_CUDA_H

#include <cuda_runtime.h>

extern "C" {
#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "trainer/model/model.h"
}

#define MODEL_TRY(call, m)                                                                               \
  do {                                                                                                   \
    int rc_ = (call);                                                                                    \
    if (rc_ != 0)                                                                                        \
      return dlpar_fail(&(m)->base, DLPAR_ERR_CUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call,          \
                        dl_status_string(rc_));                                                          \
  } while (0)

#define MODEL_TRY_COMM(call, m)                                                                          \
  do {                                                                                                   \
    if ((call) != 0)                                                                                     \
      return dlpar_fail(&(m)->base, DLPAR_ERR_NCCL, "%s:%d: %s: %s", __FILE__, __LINE__, #call,          \
                        dlpar_last_error((m)->base.comm));                                               \
  } while (0)

/* x_in and x_mid are the residual stream, fp32 in every precision as
 * PyTorch's autocast keeps it, and the rest is in the activations' type.
 * gelu is the block's own, or with `recompute: gelu` the buffer all blocks
 * share. The block's backward scratch lives in its buffers that are dead
 * by then: dfc1 in gelu, datt in ln2, dq/dk/dv in fc1, dqkv_sum in x_mid. */
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
  int gelu_fused; /* whether dl_gelu_epilogue puts the MLP's GELU in the GEMMs' epilogues */
  bool recompute_gelu; /* recompute: gelu */
  attention_choice attention; /* which attention kernels attention_resolve chose */
  dl_sdpa *sdpa; /* cuDNN's attention for ATTENTION_CUDNN, or NULL for dlpar's kernels */
  void *sdpa_ws;
  size_t sdpa_ws_bytes;
  void *tc_scratch; /* the tensor-core attention's backward scratch, for ATTENTION_TENSOR_CORES */
  char *arena;
  size_t arena_bytes, arena_used;
  /* parameters, gradients and Adam state in fp32 flat buffers, and the act copy of the weights */
  float *params, *grads, *adam_m, *adam_v;
  void *params_act;
  /* Scalars on the device. metric_sums holds the open window's SUM_* sums.
   * rmse_per_sample is B floats of the RMSE's scratch, apart from the sums. */
  float *lr_t, *loss_scale, *metric_sums, *rmse_per_sample, *loss_sums;
  int *found_inf, *clean_steps;
  float *host_scalars; /* pinned: lr, t */
  /* The posted window: sums over dp in pinned memory once metrics_posted
   * has fired, and its step and sample counts, counted on the host. */
  float *posted_sums;
  cudaEvent_t metrics_posted;
  bool metrics_pending;
  long posted_train_steps, posted_val_samples;
  /* The batch is one device slot, filled on the copy stream once the step
   * before has read it, as the graphs' external events inp_read and
   * tgt_read say. */
  float *inp, *tgt;
  cudaEvent_t copied, inp_read, tgt_read, scalars_copied, adam_done;
  /* activations */
  void *patches, *lnf, *head;
  float *x_final, *lnf_mean, *lnf_rstd, *pred, *lat_w;
  block_acts *blocks;
  /* Backward: dx is the residual stream's gradient in fp32, and dx_act its
   * copy in the activations' type for the GEMMs. dln is a GEMM's [BT, D]
   * output, the forward's too. dhead lives in head and dpred in pred, each
   * dead once read. The blocks' scratch lives in block_acts. */
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

/* Parameter i of param_table in the arena, its fp32 master. */
static inline float *mc_param(model_cuda *m, int i)
{
  return m->params + m->base.table.p[i].offset;
}

/* The weight as GEMMs read it: the act copy, or the fp32 master in fp32 mode. */
static inline void *mc_weight(model_cuda *m, int i)
{
  return (char *)m->params_act + m->base.table.p[i].offset * m->act_bytes;
}

/* Its gradient, in fp32. */
static inline float *mc_grad(model_cuda *m, int i)
{
  return m->grads + m->base.table.p[i].offset;
}

/* step.cu, optimizer.cu, metrics.cu: the model_ops defined there. model.cu
 * has the table. */
int cuda_forward_backward(model *base, const float *inp, const float *tgt);
int cuda_evaluate(model *base, const float *inp, const float *tgt);
int cuda_optimizer_step(model *base, double lr, long t);
int cuda_post_metrics(model *base);
int cuda_take_metrics(model *base, model_metrics *out);

/* arena.cu: the layout's inputs from the config, then the layout, which a
 * pass without an arena measures; a synchronous upload; the first weights */
int mc_prepare_layout(model_cuda *m, const train_config *cfg, int tp_rank);
void mc_layout(model_cuda *m);
int mc_upload(model_cuda *m, void *device, const void *host, size_t bytes);
int mc_create_device_state(model_cuda *m);

/* forward.cu: creation's choices of attention and GELU kernels; a tp
 * allreduce in the one collective order; the forward pass */
int mc_plan_attention(model_cuda *m, const dlpar_info *info);
int mc_check_attention_fits(model_cuda *m, const dlpar_info *info);
int mc_plan_gelu(model_cuda *m, const dlpar_info *info);
int mc_tp_sum(model_cuda *m, void *buf, size_t n);
int mc_forward(model_cuda *m, const float *inp);

/* backward.cu: from the loss's gradient to the last dp bucket */
int mc_backward(model_cuda *m, const float *tgt);

/* graphs.cu: an event for the copy stream, also inside a capture; a body
 * run eagerly, or captured and replayed */
int mc_record_for_copy(model_cuda *m, cudaEvent_t ev);
int mc_run_captured(model_cuda *m, captured_work *work, int (*body)(model_cuda *, int), int arg);

#endif
