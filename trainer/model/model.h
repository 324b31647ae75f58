/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/model.h: the Vision Transformer weather model of the
 * tutorial's networks/vit.py. It has a patch embedding, a Conv2d done as a
 * GEMM, plus pos_embed; depth pre-norm blocks x = x + proj(attn(LN1 x)),
 * x = x + fc2(GELU(fc1(LN2 x))); a final LayerNorm, a bias-free head and
 * unpatchify; the relative L2 loss; and Adam. Megatron tensor parallelism
 * works inside: q, k, v and fc1 are column-parallel, proj and fc2
 * row-parallel with an allreduce, and the heads are split over the tp
 * group. Data-parallel gradients are averaged in buckets started as
 * backward completes them. Two implementations sit behind one table of
 * operations: the CPU reference in model_cpu.c, fp32 over MPI, and CUDA in
 * model_cuda, bf16 or fp32 over NCCL. Communication goes through libdlpar
 * only. */
#ifndef DLPAR_MODEL_H
#define DLPAR_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "include/dlpar/dlpar.h"
#include "common/status.h"
#include "trainer/model/params.h"
#include "trainer/config/train_config.h"

typedef enum { TENSOR_PARAMS = 0, TENSOR_GRADS, TENSOR_ADAM_M, TENSOR_ADAM_V } model_tensor;

/* One window of steps, from one post_metrics to the next, summed over the
 * data-parallel group. */
typedef struct {
  double train_loss_sum;  /* sum over steps of the step's mean loss */
  long train_steps;
  long skipped_steps;     /* steps whose gradients were not finite: the optimizer left the weights alone */
  long overflow_steps;    /* In fp16, the steps the loss scale skipped as it halved. They are not a divergence. */
  double val_loss_sum;    /* sum over samples */
  double val_rmse_sum;    /* latitude-weighted RMSE of channel 0, sum over samples */
  long val_samples;
} model_metrics;

typedef struct model model;

typedef struct {
  /* Loss and gradients of one local batch, the gradients averaged over the
   * dp group. With inp and tgt NULL it takes the previous batch again,
   * where it already is. --benchy's SYNTHETIC does so, and on a GPU the
   * batch then stays in device memory. */
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
  /* The last posted window, or zeros if none. On a GPU it waits for it. */
  int (*take_metrics)(model *m, model_metrics *out);
  /* the whole local flat buffer in params.h's layout, to and from the host */
  int (*read_tensor)(model *m, model_tensor which, float *host);
  int (*write_tensor)(model *m, model_tensor which, const float *host);
  /* the model's own buffers: the arena on a GPU, every tensor on CPUs */
  size_t (*peak_memory)(const model *m);
  /* What this process holds on its GPU now, libraries included. That covers
   * the CUDA context, the arena, cuBLASLt's workspace, cuDNN's plans,
   * NCCL's buffers and kernel stacks. It is the device's used memory,
   * since the launcher binds the GPU to this rank alone. It is 0 on CPUs. */
  size_t (*device_memory)(const model *m);
  void (*destroy)(model *m);
} model_ops;

struct model {
  const model_ops *ops;
  param_table table;
  train_config cfg;
  dlpar_ctx *comm;
  void *stream;            /* where the step's work is queued: the CUDA stream, NULL on the CPU */
  vit_dims dims;           /* this rank's sizes, the local batch being dims.B */
  dlpar_error error;
};

/* The sizes of the model of cfg on one of tp tensor-parallel ranks with a
 * local batch of local_batch samples; cfg has passed config_check, so every
 * size fits the kernels' int dimensions and divides as it must. */
void vit_dims_fill(vit_dims *dims, const train_config *cfg, int tp, int local_batch);

/* The GPU attention a config asks for. The CPU model has one, in fp32.
 * `attention: reference` runs dlpar's FMA kernels in every precision.
 * `attention: cudnn` runs cuDNN's fused attention in 16 bits, with its
 * deterministic plans under `deterministic: true`. Where cuDNN has none,
 * it runs the FMA kernels, as attention_without_cudnn says. In fp32 it
 * runs dlpar's tensor-core kernels, 3xTF32 and fp32-accurate, or one TF32
 * pass with `tf32: true`. Every choice but cuDNN's non-deterministic plans
 * is bit-reproducible run to run. */
typedef enum { ATTENTION_CUDNN, ATTENTION_TENSOR_CORES, ATTENTION_FMA } attention_kernels;
typedef struct {
  attention_kernels kernels;
  int passes;         /* tensor-core passes: 3 for 3xTF32, or 1 for TF32 */
  bool deterministic; /* cuDNN: its deterministic plans only */
} attention_choice;
attention_choice attention_resolve(const train_config *cfg);
/* deterministic: true where cuDNN has no deterministic plan for the shape */
attention_choice attention_without_cudnn(void);
/* A name such as "cuDNN (deterministic plans)", "dlpar's tensor-core
 * kernels (3xTF32)" or "reference kernels". cudnn_version is cuDNN's, or
 * NULL. */
void attention_describe(const attention_choice *c, const char *cudnn_version, char *out, size_t len);

/* A failure is recorded in m->error with dlpar_fail, as common/status.h says. */

int model_create_cpu(model **out, const train_config *cfg, dlpar_ctx *comm, int local_batch, dlpar_error *err);
#ifdef HAVE_CUDA
int model_create_cuda(model **out, const train_config *cfg, dlpar_ctx *comm, int local_batch, dlpar_error *err);
/* The bytes of the CUDA model's arena for cfg on one of tp ranks with
 * local_batch samples, computed on the host without a GPU. The arena is
 * the model's own device memory: weights, optimizer state, activations,
 * the batch and scratch. attention_workspace is cuDNN's attention
 * workspace, known once its plans are built on a GPU, and 0 for dlpar's
 * kernels. The CUDA context, cuBLASLt's workspace and NCCL's buffers come
 * on top, as model_ops.device_memory counts them. */
int model_cuda_arena_bytes(const train_config *cfg, int tp, int local_batch, size_t attention_workspace,
                           size_t *bytes);
/* Pinned host memory for the loader's batches, for fast asynchronous copies. */
void *model_cuda_host_alloc(size_t bytes);
void model_cuda_host_free(void *ptr);
#endif

/* Data-parallel gradient buckets over the flat buffer, shared by both
 * implementations. Parameters are laid out in forward order, so backward
 * finishes them from the end. A bucket holds whole tensors, at least
 * bucket_mb megabytes of them, and is reduced once backward has finished
 * its first tensor. */
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
/* Averages over dp every bucket that has not been started and whose
 * tensors from `first_done` on are final. stream is NULL on CPU. */
int grad_buckets_ready(grad_buckets *b, dlpar_ctx *comm, float *grads, int first_done, void *stream);
void grad_buckets_reset(grad_buckets *b);
void grad_buckets_free(grad_buckets *b);

#endif
