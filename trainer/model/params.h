/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/params.h: the model's parameters. One table holds the
 * tensors, named as in the PyTorch model's state_dict, with their full
 * shapes and how each is split over the tensor-parallel ranks. As in
 * Megatron, q, k, v and fc1 are split by output rows, proj and fc2 by
 * input columns, and the rest is replicated. The table also says where
 * each rank's piece sits in one flat buffer. A block's q, k and v weights
 * sit side by side as one [3 D/tp x D] matrix, then their biases as one
 * [3 D/tp] vector, so that one GEMM serves all three. Checkpoints hold the
 * tensors by name, so the flat order is not in them. Initial values are
 * drawn for the full tensors from streams keyed by seed and stream, a
 * stream per tensor in the PyTorch state_dict's order, and then sliced, so
 * every grid starts from the same model. */
#ifndef DLPAR_PARAMS_H
#define DLPAR_PARAMS_H

#include <stddef.h>

/* The Vision Transformer's sizes as one rank sees them. vit_dims_fill in
 * trainer/model/model_common.c fills them once from the config, the
 * tensor-parallel size and the local batch. The parameter table, both
 * models and the loop read them, and nothing recomputes them. They are
 * declared here, below model.h, because the parameter table is built from
 * them. */
typedef struct {
  int B;         /* local batch, in samples */
  int H, W, P;   /* image height and width, patch size */
  int N;         /* tokens per image: H/P times W/P */
  long BT;       /* tokens of the local batch: B N */
  int Cin, Cout; /* input and output channels */
  int D, depth;  /* embedding width, blocks */
  int HD;        /* head size: D / num_heads */
  int tp;        /* tensor-parallel ranks */
  int Dl;        /* this rank's attention width: D / tp */
  int heads;     /* this rank's heads: num_heads / tp */
  int Fl;        /* this rank's MLP width: 4 D / tp */
} vit_dims;

typedef enum { SPLIT_NONE = 0, SPLIT_ROWS, SPLIT_COLS } param_split;
typedef enum { INIT_TRUNC_NORMAL, INIT_ZEROS, INIT_ONES, INIT_KAIMING_UNIFORM, INIT_FAN_IN_UNIFORM } param_init;

typedef struct {
  char name[64];
  int ndim;
  long shape[4];     /* full shape */
  long rows, cols;   /* the full tensor as a matrix of shape[0] x the rest, with a vector as n x 1 */
  param_split split;
  param_init init;
  long fan_in;       /* for the uniform inits */
  int stream;        /* of its initial values: its place in the state_dict's order */
  size_t offset;     /* of the local piece in the flat buffer */
  size_t count;      /* local elements */
} param_info;

/* Per block, the indices of its tensors in the table. q_w, k_w, v_w, q_b,
 * k_b and v_b are consecutive, so q_w's offset starts the fused qkv weight
 * and q_b's its bias. */
typedef struct {
  int norm1_w, norm1_b, q_w, q_b, k_w, k_b, v_w, v_b, proj_w, proj_b, norm2_w, norm2_b, fc1_w, fc1_b, fc2_w, fc2_b;
} block_params;

typedef struct {
  param_info *p;
  int n;
  size_t total;      /* local elements in all */
  int tp, tp_rank;
  int patch_w, patch_b, pos_embed, norm_w, norm_b, head_w;
  block_params *blocks;
  int depth;
} param_table;

/* The table of tensor-parallel rank tp_rank of dims->tp. */
int params_build(param_table *t, const vit_dims *dims, int tp_rank);
void params_free(param_table *t);
/* Fills the flat local buffer with the initial values, seeded from the config. */
int params_init(const param_table *t, long seed, float *flat);
/* The local piece of tensor i from its full values, and back. Going back,
 * the full tensor comes from all tp pieces gathered in rank order, where
 * pieces[r] is rank r's local tensor. */
void params_slice(const param_info *p, int tp, int tp_rank, const float *full, float *local);
void params_assemble(const param_info *p, int tp, const float *pieces, float *full);
long params_full_count(const param_info *p);

#endif
