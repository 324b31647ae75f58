/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/model.h: the Vision Transformer weather model of the tutorial
 * (networks/vit.py): patch embedding (Conv2d as a GEMM) + pos_embed, depth
 * pre-norm blocks x = x + proj(attn(LN1 x)), x = x + fc2(GELU(fc1(LN2 x))),
 * final LayerNorm, a bias-free head and unpatchify; the relative L2 loss;
 * Adam. Megatron tensor parallelism inside (q, k, v, fc1 column-parallel,
 * proj and fc2 row-parallel with an allreduce, heads split over the tp
 * group), data-parallel gradient averaging in buckets started as backward
 * completes them. Two implementations behind one table of operations: the
 * CPU reference (model_cpu.c, fp32, MPI) and CUDA (model_cuda, bf16/fp32,
 * NCCL). Communication goes through libdlpar only. */
#ifndef DLPAR_MODEL_H
#define DLPAR_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "include/dlpar/dlpar.h"
#include "common/status.h"
#include "trainer/model/params.h"
#include "trainer/config/train_config.h"

typedef enum { TENSOR_PARAMS = 0, TENSOR_GRADS, TENSOR_ADAM_M, TENSOR_ADAM_V } model_tensor;

/* One window of steps (post_metrics to post_metrics): sums over the
 * data-parallel group. */
typedef struct {
  double train_loss_sum;  /* sum over steps of the step's mean loss */
  long train_steps;
  long skipped_steps;     /* steps whose gradients were not finite: the optimizer left the weights alone */
  long overflow_steps;    /* fp16: steps the loss scale skipped (it halved); not a divergence */
  double val_loss_sum;    /* sum over samples */
  double val_rmse_sum;    /* latitude-weighted RMSE of channel 0, sum over samples */
  long val_samples;
} model_metrics;

typedef struct model model;

typedef struct {
  /* loss and gradients of one local batch; gradients averaged over the dp
   * group. inp and tgt NULL: the previous batch again, where it already is
   * (--benchy's SYNTHETIC: on a GPU the batch stays in device memory) */
  int (*forward_backward)(model *m, const float *inp, const float *tgt);
  /* Adam; a step whose gradients are not finite on any rank of the tp group
   * changes nothing and counts in skipped_steps; on a GPU under fp16, while
   * the loss scale is above its floor, it halves the scale and counts in
   * overflow_steps instead */
  int (*optimizer_step)(model *m, double lr, long t);
  /* validation: loss and weighted RMSE of one local batch */
  int (*evaluate)(model *m, const float *inp, const float *tgt);
  /* Ends the window: the sums since the last post, summed over the dp
   * group, become the next take_metrics' answer, and the sums restart.
   * Queued behind the step on a GPU: nothing waits. Post, take, in turn. */
  int (*post_metrics)(model *m);
  /* The last posted window (zeros if none); waits for it on a GPU. */
  int (*take_metrics)(model *m, model_metrics *out);
  /* the whole local flat buffer (params.h's layout), to and from the host */
  int (*read_tensor)(model *m, model_tensor which, float *host);
  int (*write_tensor)(model *m, model_tensor which, const float *host);
  /* the model's own buffers (the arena on a GPU, every tensor on CPUs) */
  size_t (*peak_memory)(const model *m);
  /* what this process holds on its GPU now, libraries included (the CUDA
   * context, the arena, cuBLASLt's workspace, cuDNN's plans, NCCL's
   * buffers, kernel stacks): the device's used memory, the GPU being this
   * rank's alone as the launcher binds it; 0 on CPUs */
  size_t (*device_memory)(const model *m);
  void (*destroy)(model *m);
} model_ops;

struct model {
  const model_ops *ops;
  param_table table;
  train_config cfg;
  dlpar_ctx *comm;
  void *stream;            /* where the step's work is queued: the CUDA stream, NULL on the CPU */
  vit_dims dims;           /* this rank's sizes (local batch dims.B) */
  dlpar_error error;
};

/* The sizes of the model of cfg on one of tp tensor-parallel ranks with a
 * local batch of local_batch samples; cfg has passed config_check, so every
 * size fits the kernels' int dimensions and divides as it must. */
void vit_dims_fill(vit_dims *dims, const train_config *cfg, int tp, int local_batch);

/* The GPU attention a config asks for (the CPU model has one, fp32):
 * attention: reference: dlpar's FMA kernels in every precision;
 * attention: cudnn: cuDNN's fused attention in 16 bits (its deterministic
 * plans with deterministic: true; where cuDNN has none, the FMA kernels:
 * attention_without_cudnn), dlpar's tensor-core kernels in fp32 (3xTF32,
 * fp32-accurate; one TF32 pass with tf32: true). Every choice but
 * cuDNN's non-deterministic plans is bit-reproducible run to run. */
typedef enum { ATTENTION_CUDNN, ATTENTION_TENSOR_CORES, ATTENTION_FMA } attention_kernels;
typedef struct {
  attention_kernels kernels;
  int passes;         /* tensor cores: 3 (3xTF32) or 1 (TF32) */
  bool deterministic; /* cuDNN: its deterministic plans only */
} attention_choice;
attention_choice attention_resolve(const train_config *cfg);
/* deterministic: true where cuDNN has no deterministic plan for the shape */
attention_choice attention_without_cudnn(void);
/* "cuDNN (deterministic plans)", "dlpar's tensor-core kernels (3xTF32)",
 * "reference kernels" ... (cudnn_version: cuDNN's, or NULL) */
void attention_describe(const attention_choice *c, const char *cudnn_version, char *out, size_t len);

/* A failure is recorded in m->error with dlpar_fail (common/status.h). */

int model_create_cpu(model **out, const train_config *cfg, dlpar_ctx *comm, int local_batch, dlpar_error *err);
#ifdef HAVE_CUDA
int model_create_cuda(model **out, const train_config *cfg, dlpar_ctx *comm, int local_batch, dlpar_error *err);
/* The bytes of the CUDA model's arena (its own device memory: weights,
 * optimizer state, activations, the batch, scratch) for cfg on one of tp
 * ranks with local_batch samples, computed on the host (no GPU needed);
 * attention_workspace: cuDNN's attention workspace (known once its plans
 * are built on a GPU; 0 for dlpar's kernels). The CUDA context, cuBLASLt's
 * workspace and NCCL's buffers come on top (model_ops.device_memory). */
int model_cuda_arena_bytes(const train_config *cfg, int tp, int local_batch, size_t attention_workspace,
                           size_t *bytes);
/* Pinned host memory for the loader's batches (fast, asynchronous copies). */
void *model_cuda_host_alloc(size_t bytes);
void model_cuda_host_free(void *ptr);
#endif

/* Data-parallel gradient buckets over the flat buffer (shared by both
 * implementations): parameters are laid out in forward order, so backward
 * finishes them from the end; a bucket holds whole tensors, at least
 * bucket_mb, and is reduced once backward has finished its first tensor. */
typedef struct {
  size_t offset, count;
  int first_param;
  int launched;
} grad_bucket;

typedef struct {
  grad_bucket *buckets;
  int n;
} grad_buckets;

int grad_buckets_plan(grad_buckets *b, const param_table *t, double bucket_mb);
/* Reduces (average over dp) every bucket whose tensors from `first_done`
 * on are final and that has not been started; stream: NULL on CPU. */
int grad_buckets_ready(grad_buckets *b, dlpar_ctx *comm, float *grads, int first_done, void *stream);
void grad_buckets_reset(grad_buckets *b);
void grad_buckets_free(grad_buckets *b);

#endif
