/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/model_cpu.c: the CPU reference model that model.h describes.
 * It runs in fp32 with the ops of kernels/cpu, and its tensor-parallel
 * allreduces and data-parallel gradient buckets go through libdlpar over
 * MPI. Every activation backward needs is kept, but attention keeps only
 * its output and row log-sum-exp, memory linear in N rather than
 * quadratic. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/ops.h"
#include "trainer/model/model.h"

typedef struct {
  float *x_in, *ln1, *ln1_mean, *ln1_rstd, *q, *k, *v, *att, *lse, *x_mid, *ln2, *ln2_mean, *ln2_rstd, *fc1, *gelu;
} block_acts;

typedef struct {
  model base;
  float *params, *grads, *adam_m, *adam_v;
  float *patches, *x_final, *lnf, *lnf_mean, *lnf_rstd, *head, *pred, *lat_w;
  block_acts *blocks;
  /* backward */
  float *dx, *dln, *datt, *dq, *dk, *dv, *dfc1, *dgelu, *dhead, *dpred;
  grad_buckets buckets;
  model_metrics metrics;            /* local sums of the open window */
  model_metrics posted;             /* the last posted window, over dp */
  const float *last_inp, *last_tgt; /* for forward_backward with NULL input and target */
  size_t bytes;
} model_cpu;

static const float LN_EPS = 1e-6f;

static float *param(model_cpu *m, int i)
{
  return m->params + m->base.table.p[i].offset;
}

static float *grad(model_cpu *m, int i)
{
  return m->grads + m->base.table.p[i].offset;
}

/* Sums a partial activation over the tensor-parallel group, as row-parallel
 * layers do in forward and "copy to parallel region" does in backward. */
static int tp_sum(model_cpu *m, float *buf, size_t n)
{
  if (m->base.table.tp == 1)
    return DLPAR_OK;
  if (dlpar_allreduce(m->base.comm, DLPAR_TP, buf, n, DLPAR_FLOAT32, DLPAR_SUM, NULL) != 0)
    return dlpar_fail(&m->base, DLPAR_ERR_MPI, "tensor-parallel allreduce: %s", dlpar_last_error(m->base.comm));
  return DLPAR_OK;
}

static void add_bias_and_residual(float *out, const float *bias, const float *residual, long BT, int C)
{
#pragma omp parallel for
  for (long i = 0; i < BT; i++)
    for (int c = 0; c < C; c++)
      out[i * C + c] += bias[c] + residual[i * C + c];
}

/* ------------------------------------------------------------ forward */

static int block_forward(model_cpu *m, int l, float *x_out)
{
  const vit_dims *d = &m->base.dims;
  const block_params *p = &m->base.table.blocks[l];
  block_acts *a = &m->blocks[l];
  const long BT = d->BT;
  layernorm_fwd_f32(a->ln1, a->ln1_mean, a->ln1_rstd, a->x_in, param(m, p->norm1_w), param(m, p->norm1_b), (int)BT,
                    d->D, LN_EPS);
  matmul_fwd_f32(a->q, a->ln1, param(m, p->q_w), param(m, p->q_b), (int)BT, d->D, d->Dl);
  matmul_fwd_f32(a->k, a->ln1, param(m, p->k_w), param(m, p->k_b), (int)BT, d->D, d->Dl);
  matmul_fwd_f32(a->v, a->ln1, param(m, p->v_w), param(m, p->v_b), (int)BT, d->D, d->Dl);
  attention_fwd_f32(a->att, a->lse, a->q, a->k, a->v, d->B, d->N, d->heads, d->HD, 1.0f / sqrtf((float)d->HD));
  matmul_fwd_f32(a->x_mid, a->att, param(m, p->proj_w), NULL, (int)BT, d->Dl, d->D);
  DLPAR_TRY(tp_sum(m, a->x_mid, (size_t)BT * d->D));
  add_bias_and_residual(a->x_mid, param(m, p->proj_b), a->x_in, BT, d->D);
  layernorm_fwd_f32(a->ln2, a->ln2_mean, a->ln2_rstd, a->x_mid, param(m, p->norm2_w), param(m, p->norm2_b), (int)BT,
                    d->D, LN_EPS);
  matmul_fwd_f32(a->fc1, a->ln2, param(m, p->fc1_w), param(m, p->fc1_b), (int)BT, d->D, d->Fl);
  gelu_fwd_f32(a->gelu, a->fc1, (size_t)BT * d->Fl);
  matmul_fwd_f32(x_out, a->gelu, param(m, p->fc2_w), NULL, (int)BT, d->Fl, d->D);
  DLPAR_TRY(tp_sum(m, x_out, (size_t)BT * d->D));
  add_bias_and_residual(x_out, param(m, p->fc2_b), a->x_mid, BT, d->D);
  return DLPAR_OK;
}

static int forward(model_cpu *m, const float *inp)
{
  const vit_dims *d = &m->base.dims;
  const param_table *t = &m->base.table;
  const float *pos = param(m, t->pos_embed);
  float *x0 = m->blocks[0].x_in;
  patchify_f32(m->patches, inp, d->B, d->Cin, d->H, d->W, d->P);
  matmul_fwd_f32(x0, m->patches, param(m, t->patch_w), param(m, t->patch_b), (int)d->BT, d->Cin * d->P * d->P, d->D);
#pragma omp parallel for
  for (long i = 0; i < d->BT; i++)
    for (int c = 0; c < d->D; c++)
      x0[i * d->D + c] += pos[(i % d->N) * d->D + c];
  for (int l = 0; l < d->depth; l++) {
    DLPAR_TRY(block_forward(m, l, l + 1 < d->depth ? m->blocks[l + 1].x_in : m->x_final));
  }
  layernorm_fwd_f32(m->lnf, m->lnf_mean, m->lnf_rstd, m->x_final, param(m, t->norm_w), param(m, t->norm_b),
                    (int)d->BT, d->D, LN_EPS);
  matmul_fwd_f32(m->head, m->lnf, param(m, t->head_w), NULL, (int)d->BT, d->D, d->P * d->P * d->Cout);
  unpatchify_f32(m->pred, m->head, d->B, d->Cout, d->H, d->W, d->P);
  return DLPAR_OK;
}

/* ------------------------------------------------------------ backward */

/* dx: the gradient of the block's output in, of its input out. */
static int block_backward(model_cpu *m, int l)
{
  const vit_dims *d = &m->base.dims;
  const block_params *p = &m->base.table.blocks[l];
  block_acts *a = &m->blocks[l];
  const long BT = d->BT;
  const size_t nD = (size_t)BT * d->D;
  /* MLP branch */
  memset(m->dgelu, 0, sizeof(float) * (size_t)BT * d->Fl);
  matmul_bwd_f32(m->dgelu, grad(m, p->fc2_w), grad(m, p->fc2_b), m->dx, a->gelu, param(m, p->fc2_w), (int)BT, d->Fl,
                 d->D);
  gelu_bwd_f32(m->dfc1, a->fc1, m->dgelu, (size_t)BT * d->Fl);
  memset(m->dln, 0, sizeof(float) * nD);
  matmul_bwd_f32(m->dln, grad(m, p->fc1_w), grad(m, p->fc1_b), m->dfc1, a->ln2, param(m, p->fc1_w), (int)BT, d->D,
                 d->Fl);
  DLPAR_TRY(tp_sum(m, m->dln, nD));
  layernorm_bwd_f32(m->dx, grad(m, p->norm2_w), grad(m, p->norm2_b), m->dln, a->x_mid, param(m, p->norm2_w),
                    a->ln2_mean, a->ln2_rstd, (int)BT, d->D);
  /* attention branch */
  memset(m->datt, 0, sizeof(float) * (size_t)BT * d->Dl);
  matmul_bwd_f32(m->datt, grad(m, p->proj_w), grad(m, p->proj_b), m->dx, a->att, param(m, p->proj_w), (int)BT,
                 d->Dl, d->D);
  attention_bwd_f32(m->dq, m->dk, m->dv, m->datt, a->q, a->k, a->v, a->att, a->lse, d->B, d->N, d->heads, d->HD,
                    1.0f / sqrtf((float)d->HD));
  memset(m->dln, 0, sizeof(float) * nD);
  matmul_bwd_f32(m->dln, grad(m, p->q_w), grad(m, p->q_b), m->dq, a->ln1, param(m, p->q_w), (int)BT, d->D, d->Dl);
  matmul_bwd_f32(m->dln, grad(m, p->k_w), grad(m, p->k_b), m->dk, a->ln1, param(m, p->k_w), (int)BT, d->D, d->Dl);
  matmul_bwd_f32(m->dln, grad(m, p->v_w), grad(m, p->v_b), m->dv, a->ln1, param(m, p->v_w), (int)BT, d->D, d->Dl);
  DLPAR_TRY(tp_sum(m, m->dln, nD));
  layernorm_bwd_f32(m->dx, grad(m, p->norm1_w), grad(m, p->norm1_b), m->dln, a->x_in, param(m, p->norm1_w),
                    a->ln1_mean, a->ln1_rstd, (int)BT, d->D);
  return DLPAR_OK;
}

static int buckets_ready(model_cpu *m, int first_done)
{
  if (grad_buckets_ready(&m->buckets, m->base.comm, m->grads, first_done, NULL) != 0)
    return dlpar_fail(&m->base, DLPAR_ERR_MPI, "data-parallel allreduce: %s", dlpar_last_error(m->base.comm));
  return DLPAR_OK;
}

static int backward(model_cpu *m, const float *tgt)
{
  const vit_dims *d = &m->base.dims;
  const param_table *t = &m->base.table;
  float *dpos = grad(m, t->pos_embed);
  l2_loss_bwd_f32(m->dpred, m->pred, tgt, d->B, (size_t)d->Cout * d->H * d->W, 1.0f);
  unpatchify_bwd_f32(m->dhead, m->dpred, d->B, d->Cout, d->H, d->W, d->P);
  memset(m->dln, 0, sizeof(float) * (size_t)d->BT * d->D);
  matmul_bwd_f32(m->dln, grad(m, t->head_w), NULL, m->dhead, m->lnf, param(m, t->head_w), (int)d->BT, d->D,
                 d->P * d->P * d->Cout);
  memset(m->dx, 0, sizeof(float) * (size_t)d->BT * d->D);
  layernorm_bwd_f32(m->dx, grad(m, t->norm_w), grad(m, t->norm_b), m->dln, m->x_final, param(m, t->norm_w),
                    m->lnf_mean, m->lnf_rstd, (int)d->BT, d->D);
  DLPAR_TRY(buckets_ready(m, t->norm_w));
  for (int l = d->depth - 1; l >= 0; l--) {
    DLPAR_TRY(block_backward(m, l));
    DLPAR_TRY(buckets_ready(m, t->blocks[l].norm1_w));
  }
#pragma omp parallel for
  for (long n = 0; n < d->N; n++)
    for (int b = 0; b < d->B; b++)
      for (int c = 0; c < d->D; c++)
        dpos[n * d->D + c] += m->dx[((long)b * d->N + n) * d->D + c];
  matmul_bwd_f32(NULL, grad(m, t->patch_w), grad(m, t->patch_b), m->dx, m->patches, param(m, t->patch_w), (int)d->BT,
                 d->Cin * d->P * d->P, d->D);
  return buckets_ready(m, 0);
}

/* ------------------------------------------------------------ operations */

static int cpu_forward_backward(model *base, const float *inp, const float *tgt)
{
  model_cpu *m = (model_cpu *)base;
  const vit_dims *d = &m->base.dims;
  if (!inp) {
    inp = m->last_inp;
    tgt = m->last_tgt;
  }
  m->last_inp = inp;
  m->last_tgt = tgt;
  memset(m->grads, 0, sizeof(float) * base->table.total);
  grad_buckets_reset(&m->buckets);
  DLPAR_TRY(forward(m, inp));
  m->metrics.train_loss_sum += l2_loss_fwd_f32(NULL, m->pred, tgt, d->B, (size_t)d->Cout * d->H * d->W);
  m->metrics.train_steps++;
  return backward(m, tgt);
}

/* Whether any rank of the tp group holds a non-finite gradient. The dp
 * ranks hold the same averaged ones. */
static int grads_nonfinite(model_cpu *m, double *found)
{
  *found = 0;
  for (size_t i = 0; i < m->base.table.total && !*found; i++)
    *found = !isfinite(m->grads[i]);
  if (dlpar_allreduce_host(m->base.comm, DLPAR_TP, found, 1, DLPAR_FLOAT64, DLPAR_MAX) != 0)
    return dlpar_fail(&m->base, DLPAR_ERR_MPI, "tensor-parallel allreduce: %s", dlpar_last_error(m->base.comm));
  return DLPAR_OK;
}

static int cpu_optimizer_step(model *base, double lr, long t)
{
  model_cpu *m = (model_cpu *)base;
  double nonfinite;
  DLPAR_TRY(grads_nonfinite(m, &nonfinite));
  if (nonfinite > 0)
    m->metrics.skipped_steps++;
  else
    adam_update_f32(m->params, m->adam_m, m->adam_v, m->grads, base->table.total, (float)lr, 0.9f, 0.95f, 1e-8f, t);
  return DLPAR_OK;
}

static int cpu_evaluate(model *base, const float *inp, const float *tgt)
{
  model_cpu *m = (model_cpu *)base;
  const vit_dims *d = &m->base.dims;
  DLPAR_TRY(forward(m, inp));
  m->metrics.val_loss_sum += (double)l2_loss_fwd_f32(NULL, m->pred, tgt, d->B, (size_t)d->Cout * d->H * d->W) * d->B;
  m->metrics.val_rmse_sum += weighted_rmse_f32(m->pred, tgt, m->lat_w, d->B, d->Cout, d->H, d->W, 0);
  m->metrics.val_samples += d->B;
  return DLPAR_OK;
}

static int cpu_post_metrics(model *base)
{
  model_cpu *m = (model_cpu *)base;
  const model_metrics *local = &m->metrics;
  double sums[6] = {local->train_loss_sum, (double)local->train_steps, (double)local->skipped_steps,
                    local->val_loss_sum, local->val_rmse_sum, (double)local->val_samples};
  if (dlpar_allreduce_host(base->comm, DLPAR_DP, sums, 6, DLPAR_FLOAT64, DLPAR_SUM) != 0)
    return dlpar_fail(base, DLPAR_ERR_MPI, "data-parallel allreduce: %s", dlpar_last_error(base->comm));
  m->posted = (model_metrics){.train_loss_sum = sums[0], .train_steps = (long)sums[1], .skipped_steps = (long)sums[2],
                              .val_loss_sum = sums[3], .val_rmse_sum = sums[4], .val_samples = (long)sums[5]};
  memset(&m->metrics, 0, sizeof(m->metrics));
  return DLPAR_OK;
}

static int cpu_take_metrics(model *base, model_metrics *out)
{
  model_cpu *m = (model_cpu *)base;
  *out = m->posted;
  memset(&m->posted, 0, sizeof(m->posted));
  return DLPAR_OK;
}

static float *tensor_of(model_cpu *m, model_tensor which)
{
  return which == TENSOR_PARAMS ? m->params : which == TENSOR_GRADS ? m->grads : which == TENSOR_ADAM_M ? m->adam_m
                                                                                                        : m->adam_v;
}

static int cpu_read_tensor(model *base, model_tensor which, float *host)
{
  memcpy(host, tensor_of((model_cpu *)base, which), sizeof(float) * base->table.total);
  return DLPAR_OK;
}

static int cpu_write_tensor(model *base, model_tensor which, const float *host)
{
  memcpy(tensor_of((model_cpu *)base, which), host, sizeof(float) * base->table.total);
  return DLPAR_OK;
}

static size_t cpu_peak_memory(const model *base)
{
  return ((const model_cpu *)base)->bytes;
}

static size_t cpu_device_memory(const model *base)
{
  (void)base;
  return 0;
}

/* ------------------------------------------------------------ memory */

typedef struct {
  float **slot;
  size_t count;
} allocation;

static int allocate_all(model_cpu *m, allocation *list, int n)
{
  for (int i = 0; i < n; i++) {
    *list[i].slot = calloc(list[i].count ? list[i].count : 1, sizeof(float));
    if (!*list[i].slot)
      return DLPAR_ERR_SYSTEM;
    m->bytes += list[i].count * sizeof(float);
  }
  return DLPAR_OK;
}

static int allocate(model_cpu *m)
{
  const vit_dims *d = &m->base.dims;
  const size_t BT = (size_t)d->BT, D = (size_t)d->D, Dl = (size_t)d->Dl, Fl = (size_t)d->Fl;
  const size_t heads_rows = (size_t)d->B * d->heads * d->N, total = m->base.table.total;
  const size_t img_out = (size_t)d->B * d->Cout * d->H * d->W, head = BT * d->P * d->P * d->Cout;
  allocation model_list[] = {
      {&m->params, total}, {&m->grads, total}, {&m->adam_m, total}, {&m->adam_v, total},
      {&m->patches, BT * d->Cin * d->P * d->P}, {&m->x_final, BT * D}, {&m->lnf, BT * D}, {&m->lnf_mean, BT},
      {&m->lnf_rstd, BT}, {&m->head, head}, {&m->pred, img_out}, {&m->lat_w, (size_t)d->H},
      {&m->dx, BT * D}, {&m->dln, BT * D}, {&m->datt, BT * Dl}, {&m->dq, BT * Dl}, {&m->dk, BT * Dl},
      {&m->dv, BT * Dl}, {&m->dfc1, BT * Fl}, {&m->dgelu, BT * Fl}, {&m->dhead, head}, {&m->dpred, img_out}};
  int rc = allocate_all(m, model_list, (int)(sizeof(model_list) / sizeof(model_list[0])));
  m->blocks = calloc((size_t)d->depth, sizeof(block_acts));
  if (rc != DLPAR_OK || !m->blocks)
    return DLPAR_ERR_SYSTEM;
  for (int l = 0; l < d->depth; l++) {
    block_acts *a = &m->blocks[l];
    allocation block_list[] = {{&a->x_in, BT * D}, {&a->ln1, BT * D}, {&a->ln1_mean, BT}, {&a->ln1_rstd, BT},
                               {&a->q, BT * Dl}, {&a->k, BT * Dl}, {&a->v, BT * Dl}, {&a->att, BT * Dl},
                               {&a->lse, heads_rows}, {&a->x_mid, BT * D}, {&a->ln2, BT * D}, {&a->ln2_mean, BT},
                               {&a->ln2_rstd, BT}, {&a->fc1, BT * Fl}, {&a->gelu, BT * Fl}};
    DLPAR_TRY(allocate_all(m, block_list, (int)(sizeof(block_list) / sizeof(block_list[0]))));
  }
  return DLPAR_OK;
}

static void cpu_destroy(model *base)
{
  model_cpu *m = (model_cpu *)base;
  const vit_dims *d = &m->base.dims;
  float **model_bufs[] = {&m->params, &m->grads, &m->adam_m, &m->adam_v, &m->patches, &m->x_final, &m->lnf,
                          &m->lnf_mean, &m->lnf_rstd, &m->head, &m->pred, &m->lat_w, &m->dx, &m->dln, &m->datt,
                          &m->dq, &m->dk, &m->dv, &m->dfc1, &m->dgelu, &m->dhead, &m->dpred};
  if (!m)
    return;
  for (size_t i = 0; i < sizeof(model_bufs) / sizeof(model_bufs[0]); i++)
    free(*model_bufs[i]);
  for (int l = 0; m->blocks && l < d->depth; l++) {
    block_acts *a = &m->blocks[l];
    float *block_bufs[] = {a->x_in, a->ln1, a->ln1_mean, a->ln1_rstd, a->q, a->k, a->v, a->att, a->lse,
                           a->x_mid, a->ln2, a->ln2_mean, a->ln2_rstd, a->fc1, a->gelu};
    for (size_t i = 0; i < sizeof(block_bufs) / sizeof(block_bufs[0]); i++)
      free(block_bufs[i]);
  }
  free(m->blocks);
  grad_buckets_free(&m->buckets);
  params_free(&m->base.table);
  free(m);
}

static const model_ops cpu_ops = {
    .forward_backward = cpu_forward_backward,
    .optimizer_step = cpu_optimizer_step,
    .evaluate = cpu_evaluate,
    .post_metrics = cpu_post_metrics,
    .take_metrics = cpu_take_metrics,
    .read_tensor = cpu_read_tensor,
    .write_tensor = cpu_write_tensor,
    .peak_memory = cpu_peak_memory,
    .device_memory = cpu_device_memory,
    .destroy = cpu_destroy,
};

/* The parameter table, every buffer, the initial weights and the gradient
 * buckets: DLPAR_OK, or a status for out of memory. */
static int build(model_cpu *m, const train_config *cfg, int tp_rank)
{
  DLPAR_TRY(params_build(&m->base.table, &m->base.dims, tp_rank));
  DLPAR_TRY(allocate(m));
  DLPAR_TRY(params_init(&m->base.table, cfg->seed, m->params));
  return grad_buckets_plan(&m->buckets, &m->base.table, cfg->bucket_mb);
}

int model_create_cpu(model **out, const train_config *cfg, dlpar_ctx *comm, int local_batch, dlpar_error *err)
{
  const dlpar_info *info = dlpar_get_info(comm);
  model_cpu *m = calloc(1, sizeof(*m));
  *out = &m->base;
  if (!m)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory");
  m->base.ops = &cpu_ops;
  m->base.cfg = *cfg;
  m->base.comm = comm;
  vit_dims_fill(&m->base.dims, cfg, info->tp_size, local_batch);
  if (build(m, cfg, info->tp_rank) != DLPAR_OK)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory for the model (%.1f GB so far; lower "
                           "global_batch_size or img_size, or use more ranks)", (double)m->bytes / 1e9);
  lat_weights_f32(m->lat_w, m->base.dims.H);
  return DLPAR_OK;
}
