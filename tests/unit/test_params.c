/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_params.c: the parameter table (trainer/model/params.c) and the
 * config checks in front of it (trainer/config/train_config.c): the tensors' names,
 * shapes and split, a tensor-parallel slice and assembly round trip, the
 * same initial values on every grid, q, k and v side by side (the fused
 * GEMM's layout) with the initial values of separate q, k and v, and configs whose sizes overflow the
 * kernels' 32-bit dimensions (refused before any size is computed), with
 * input text quoted into one line. */
#include "config.h"

#include <unistd.h>

#include "common/status.h"
#include "tests/unit/check.h"
#include "trainer/model/model.h"
#include "trainer/model/params.h"
#include "trainer/data/rng.h"

static char path[64];
static dlpar_error err;
static config_set set;

static int load(const char *yaml, char *const *overrides, int n)
{
  FILE *f = fopen(path, "w");
  fputs(yaml, f);
  fclose(f);
  err.text[0] = '\0';
  return config_load(&set, path, "base", overrides, n, &err);
}

/* The loaded config's table on tensor-parallel rank tp_rank of tp. */
static int build(param_table *t, int tp, int tp_rank)
{
  vit_dims dims;
  vit_dims_fill(&dims, &set.cfg, tp, 1);
  return params_build(t, &dims, tp_rank);
}

static void test_table(void)
{
  param_table full, half[2];
  const param_info *p;
  float *values, *pieces, *back;
  CHECK_INT(load("base: {embed_dim: 8, depth: 2, num_heads: 2, patch_size: 4, img_size: [8, 16], n_in_channels: 3, "
                 "n_out_channels: 2}\n", NULL, 0), DLPAR_OK);
  CHECK_INT(build(&full, 1, 0), DLPAR_OK);
  CHECK_INT(full.n, 6 + 16 * 2);
  p = &full.p[full.pos_embed];
  CHECK_STR(p->name, "pos_embed");
  CHECK_INT(p->ndim * 1000 + p->shape[1] * 10 + p->shape[2] / 8, 3000 + 80 + 1); /* [1, 8 tokens, 8] */
  CHECK_STR(full.p[full.blocks[1].fc1_w].name, "blocks.1.mlp.fc1.weight");
  CHECK_INT(full.p[full.head_w].rows, 2 * 4 * 4);
  for (int r = 0; r < 2; r++)
    CHECK_INT(build(&half[r], 2, r), DLPAR_OK);
  CHECK_INT(half[0].total * 2 > full.total, 1); /* replicated tensors on both */
  values = malloc(sizeof(float) * full.total);
  pieces = malloc(sizeof(float) * full.total * 2);
  back = malloc(sizeof(float) * full.total);
  CHECK_INT(params_init(&full, 5, values), DLPAR_OK);
  for (int i = 0; i < full.n; i++) { /* slices of every split, put back together */
    const param_info *q = &full.p[i], *local = &half[0].p[i];
    for (int r = 0; r < 2; r++)
      params_slice(q, 2, r, values + q->offset, pieces + (size_t)r * local->count);
    params_assemble(local->split == SPLIT_NONE ? q : local, 2, pieces, back);
    CHECK(memcmp(back, values + q->offset, sizeof(float) * q->count) == 0);
  }
  CHECK_INT(params_init(&half[1], 5, pieces), DLPAR_OK); /* rank 1's initial piece is its slice of the full one */
  params_slice(&full.p[full.blocks[0].q_w], 2, 1, values + full.p[full.blocks[0].q_w].offset, back);
  CHECK(memcmp(back, pieces + half[1].p[half[1].blocks[0].q_w].offset,
               sizeof(float) * half[1].p[half[1].blocks[0].q_w].count) == 0);
  free(values), free(pieces), free(back);
  params_free(&full), params_free(&half[0]), params_free(&half[1]);
}

static void expect_too_large(const char *override, const char *img_size, const char *key)
{
  char *args[2] = {(char *)override, (char *)img_size};
  CHECK_INT(load("base: {embed_dim: 8, num_heads: 2, patch_size: 4, img_size: [8, 16], global_batch_size: 2}\n",
                 args, 2), DLPAR_OK);
  CHECK_INT(config_check(&set, 1, 1, &err), DLPAR_ERR_INPUT);
  if (!strstr(err.text, "makes tensors beyond 32-bit sizes"))
    fprintf(stderr, "%s: %s\n", override, err.text);
  CHECK(strstr(err.text, "makes tensors beyond 32-bit sizes") != NULL);
  CHECK(strncmp(err.text, "command line: ", 14) == 0 && strncmp(err.text + 14, key, strlen(key)) == 0);
}

static void test_sizes(void)
{
  expect_too_large("--embed_dim=1073741824", "--img_size=[8, 16]", "embed_dim");    /* 4 x embed_dim */
  expect_too_large("--patch_size=1", "--img_size=[1048576, 1048576]", "img_size"); /* tokens x batch */
  expect_too_large("--depth=2147483647", "--img_size=[8, 16]", "depth");            /* 16 tensors per block */
  expect_too_large("--patch_size=65536", "--img_size=[65536, 65536]", "patch_size"); /* a patch x channels */
}

static void test_quoting(void)
{
  char *args[1] = {"--lr=\"1\\n2\""};
  CHECK_INT(load("base: {lr: \"fast\\nslow\"}\n", NULL, 0), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, ":1: lr: expected a number, got 'fast\\nslow'") != NULL);
  CHECK_INT(load("base: {embed_dim: 8}\n", args, 1), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "command line: lr: expected a number, got '1\\n2'");
  CHECK_INT(load("base: {\"a\\nb\": 1}\n", NULL, 0), DLPAR_ERR_INPUT);
  CHECK(strstr(err.text, "unknown key 'a\\nb' in config 'base'") != NULL);
}

/* A block's q, k, v weights side by side, then their biases (one
 * [3 D/tp x D] matrix and one [3 D/tp] vector: the GPU's fused GEMM), the
 * flat buffer in table order (the gradient buckets take ranges of it), and
 * every tensor's initial values from its stream in the PyTorch state_dict's
 * order (norm1, q.weight, q.bias, k.weight, ...): the same values a
 * separate q, k and v would draw. */
static void test_fused_qkv(void)
{
  static const int order[6] = {2, 4, 6, 3, 5, 7}; /* q.w, k.w, v.w, q.b, k.b, v.b: state_dict places in a block */
  param_table t;
  float *values;
  dlpar_rng rng;
  CHECK_INT(load("base: {embed_dim: 8, depth: 2, num_heads: 2, patch_size: 4, img_size: [8, 16], n_in_channels: 3, "
                 "n_out_channels: 2}\n", NULL, 0), DLPAR_OK);
  for (int tp = 1; tp <= 2; tp++) {
    CHECK_INT(build(&t, tp, tp - 1), DLPAR_OK);
    for (int i = 0; i < t.n; i++)
      CHECK_INT(t.p[i].offset, i ? t.p[i - 1].offset + t.p[i - 1].count : 0);
    for (int l = 0; l < t.depth; l++) {
      const block_params *b = &t.blocks[l];
      const int fused[6] = {b->q_w, b->k_w, b->v_w, b->q_b, b->k_b, b->v_b};
      for (int j = 0; j < 6; j++) {
        CHECK_INT(fused[j], b->norm1_w + 2 + j);
        CHECK_INT(t.p[fused[j]].stream, t.p[b->norm1_w].stream + order[j]);
      }
      CHECK_INT(t.p[b->q_w].count, 8 / tp * 8);
      CHECK_INT(t.p[b->q_b].count, 8 / tp);
      CHECK_INT(t.p[b->proj_w].stream, t.p[b->norm1_w].stream + 8);
    }
    params_free(&t);
  }
  CHECK_INT(build(&t, 1, 0), DLPAR_OK);
  values = malloc(sizeof(float) * t.total);
  CHECK_INT(params_init(&t, 5, values), DLPAR_OK);
  rng_init(&rng, 5, (uint64_t)(t.p[t.blocks[1].norm1_w].stream + 4)); /* blocks.1.attn.k.weight's stream */
  CHECK(values[t.p[t.blocks[1].k_w].offset] == (float)rng_trunc_normal(&rng, 0.02, -2.0, 2.0));
  CHECK_STR(t.p[t.blocks[1].k_w].name, "blocks.1.attn.k.weight");
  free(values);
  params_free(&t);
}

int main(void)
{
  int fd;
  snprintf(path, sizeof(path), "/tmp/test_params.XXXXXX");
  if ((fd = mkstemp(path)) < 0)
    SKIP("no temporary file");
  close(fd);
  test_table();
  test_fused_qkv();
  test_sizes();
  test_quoting();
  unlink(path);
  return check_report("test_params");
}
