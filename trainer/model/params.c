/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/params.c: the parameter table that params.h describes. */
#include "config.h"

#include "trainer/model/params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "trainer/data/rng.h"

long params_full_count(const param_info *p)
{
  return p->rows * p->cols;
}

static int add(param_table *t, const char *name, int ndim, const long *shape, param_split split, param_init init,
               long fan_in)
{
  param_info *p = &t->p[t->n];
  snprintf(p->name, sizeof(p->name), "%s", name);
  p->ndim = ndim;
  memcpy(p->shape, shape, sizeof(long) * (size_t)ndim);
  p->rows = shape[0];
  p->cols = 1;
  for (int d = 1; d < ndim; d++)
    p->cols *= shape[d];
  p->split = split;
  p->init = init;
  p->fan_in = fan_in;
  p->stream = t->n;
  p->offset = t->total;
  p->count = (size_t)(params_full_count(p) / (split == SPLIT_NONE ? 1 : t->tp));
  t->total += p->count;
  return t->n++;
}

static int add_vector(param_table *t, const char *name, long n, param_split split, param_init init)
{
  const long shape[1] = {n};
  return add(t, name, 1, shape, split, init, 0);
}

static int add_matrix(param_table *t, const char *name, long rows, long cols, param_split split)
{
  const long shape[2] = {rows, cols};
  return add(t, name, 2, shape, split, INIT_TRUNC_NORMAL, 0);
}

/* A block's q, k and v sit side by side as one [3 D x D] matrix and one
 * [3 D] bias in the flat buffer, so one GEMM makes all three. Each rank
 * holds its [3 D/tp x D]. Their initial values come from the streams in
 * the PyTorch state_dict's order, q.weight, q.bias, k.weight and so on, so
 * at step 0 this is the model of separate q, k and v projections. */
static void add_block(param_table *t, int i, long D)
{
  block_params *b = &t->blocks[i];
  char name[64];
  int qkv_stream;
#define NAME(suffix) (snprintf(name, sizeof(name), "blocks.%d.%s", i, suffix), name)
  b->norm1_w = add_vector(t, NAME("norm1.weight"), D, SPLIT_NONE, INIT_ONES);
  b->norm1_b = add_vector(t, NAME("norm1.bias"), D, SPLIT_NONE, INIT_ZEROS);
  qkv_stream = t->n;
  b->q_w = add_matrix(t, NAME("attn.q.weight"), D, D, SPLIT_ROWS);
  b->k_w = add_matrix(t, NAME("attn.k.weight"), D, D, SPLIT_ROWS);
  b->v_w = add_matrix(t, NAME("attn.v.weight"), D, D, SPLIT_ROWS);
  b->q_b = add_vector(t, NAME("attn.q.bias"), D, SPLIT_ROWS, INIT_ZEROS);
  b->k_b = add_vector(t, NAME("attn.k.bias"), D, SPLIT_ROWS, INIT_ZEROS);
  b->v_b = add_vector(t, NAME("attn.v.bias"), D, SPLIT_ROWS, INIT_ZEROS);
  t->p[b->q_w].stream = qkv_stream;
  t->p[b->q_b].stream = qkv_stream + 1;
  t->p[b->k_w].stream = qkv_stream + 2;
  t->p[b->k_b].stream = qkv_stream + 3;
  t->p[b->v_w].stream = qkv_stream + 4;
  t->p[b->v_b].stream = qkv_stream + 5;
  b->proj_w = add_matrix(t, NAME("attn.proj.weight"), D, D, SPLIT_COLS);
  b->proj_b = add_vector(t, NAME("attn.proj.bias"), D, SPLIT_NONE, INIT_ZEROS);
  b->norm2_w = add_vector(t, NAME("norm2.weight"), D, SPLIT_NONE, INIT_ONES);
  b->norm2_b = add_vector(t, NAME("norm2.bias"), D, SPLIT_NONE, INIT_ZEROS);
  b->fc1_w = add_matrix(t, NAME("mlp.fc1.weight"), 4 * D, D, SPLIT_ROWS);
  b->fc1_b = add_vector(t, NAME("mlp.fc1.bias"), 4 * D, SPLIT_ROWS, INIT_ZEROS);
  b->fc2_w = add_matrix(t, NAME("mlp.fc2.weight"), D, 4 * D, SPLIT_COLS);
  b->fc2_b = add_vector(t, NAME("mlp.fc2.bias"), D, SPLIT_NONE, INIT_ZEROS);
#undef NAME
}

int params_build(param_table *t, const vit_dims *dims, int tp_rank)
{
  const long D = dims->D, C = dims->Cin, P = dims->P;
  const long conv_shape[4] = {D, C, P, P}, conv_bias_shape[1] = {D}, pos_shape[3] = {1, dims->N, D};
  memset(t, 0, sizeof(*t));
  t->tp = dims->tp;
  t->tp_rank = tp_rank;
  t->depth = dims->depth;
  t->p = calloc(6 + 16 * (size_t)dims->depth, sizeof(param_info));
  t->blocks = calloc((size_t)dims->depth, sizeof(block_params));
  if (!t->p || !t->blocks)
    return DLPAR_ERR_SYSTEM;
  t->patch_w = add(t, "patch_embed.proj.weight", 4, conv_shape, SPLIT_NONE, INIT_KAIMING_UNIFORM, C * P * P);
  t->patch_b = add(t, "patch_embed.proj.bias", 1, conv_bias_shape, SPLIT_NONE, INIT_FAN_IN_UNIFORM, C * P * P);
  t->pos_embed = add(t, "pos_embed", 3, pos_shape, SPLIT_NONE, INIT_TRUNC_NORMAL, 0);
  for (int i = 0; i < dims->depth; i++)
    add_block(t, i, D);
  t->norm_w = add_vector(t, "norm.weight", D, SPLIT_NONE, INIT_ONES);
  t->norm_b = add_vector(t, "norm.bias", D, SPLIT_NONE, INIT_ZEROS);
  t->head_w = add_matrix(t, "head.weight", (long)dims->Cout * P * P, D, SPLIT_NONE);
  return DLPAR_OK;
}

void params_free(param_table *t)
{
  free(t->p);
  free(t->blocks);
  memset(t, 0, sizeof(*t));
}

/* The full tensor's initial values. Linear weights and pos_embed take
 * trunc_normal with std 0.02, cut at +-2. The patch embedding takes
 * PyTorch's conv defaults, kaiming_uniform with a = sqrt 5, which is
 * U(+-1/sqrt fan_in), and its bias the same. */
static void init_full(const param_info *p, long seed, float *full)
{
  const long n = params_full_count(p);
  const double bound = p->fan_in > 0 ? 1.0 / sqrt((double)p->fan_in) : 0;
  dlpar_rng rng;
  rng_init(&rng, (uint64_t)seed, (uint64_t)p->stream);
  for (long i = 0; i < n; i++) {
    switch (p->init) {
    case INIT_TRUNC_NORMAL: full[i] = (float)rng_trunc_normal(&rng, 0.02, -2.0, 2.0); break;
    case INIT_ONES: full[i] = 1.0f; break;
    case INIT_ZEROS: full[i] = 0.0f; break;
    default: full[i] = (float)((2.0 * rng_uniform(&rng) - 1.0) * bound); break;
    }
  }
}

void params_slice(const param_info *p, int tp, int tp_rank, const float *full, float *local)
{
  if (p->split == SPLIT_NONE) {
    memcpy(local, full, sizeof(float) * p->count);
  } else if (p->split == SPLIT_ROWS) {
    memcpy(local, full + (size_t)(p->rows / tp) * tp_rank * p->cols, sizeof(float) * p->count);
  } else {
    const long cols = p->cols / tp;
    for (long r = 0; r < p->rows; r++)
      memcpy(local + r * cols, full + r * p->cols + (long)tp_rank * cols, sizeof(float) * (size_t)cols);
  }
}

void params_assemble(const param_info *p, int tp, const float *pieces, float *full)
{
  if (p->split != SPLIT_COLS) {
    memcpy(full, pieces, sizeof(float) * (size_t)params_full_count(p));
    return;
  }
  const long cols = p->cols / tp;
  for (int rank = 0; rank < tp; rank++)
    for (long r = 0; r < p->rows; r++)
      memcpy(full + r * p->cols + (long)rank * cols, pieces + (size_t)rank * p->count + (size_t)(r * cols),
             sizeof(float) * (size_t)cols);
}

int params_init(const param_table *t, long seed, float *flat)
{
  long largest = 0;
  float *full;
  for (int i = 0; i < t->n; i++)
    largest = params_full_count(&t->p[i]) > largest ? params_full_count(&t->p[i]) : largest;
  full = malloc(sizeof(float) * (size_t)largest);
  if (!full)
    return DLPAR_ERR_SYSTEM;
  for (int i = 0; i < t->n; i++) {
    init_full(&t->p[i], seed, full);
    params_slice(&t->p[i], t->tp, t->tp_rank, full, flat + t->p[i].offset);
  }
  free(full);
  return DLPAR_OK;
}
