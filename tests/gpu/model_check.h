/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/model_check.h: what the model-level GPU tests share: etc/vit.yaml
 * found from any directory (DLPAR_SRCDIR, else the source tree configure
 * saw), models made from a config section with overrides, a training step,
 * the loss of a window, and the weights compared tensor by tensor. */
#ifndef DLPAR_TEST_GPU_MODEL_CHECK_H
#define DLPAR_TEST_GPU_MODEL_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/dlpar/dlpar.h"
#include "tests/gpu/gpu_check.h"
#include "trainer/model/model.h"

/* The config with `overrides` ("--key=value"), or exit 1 naming the problem. */
static inline void load_config(config_set *set, const char *section, char *const *overrides, int n)
{
  const char *srcdir = getenv("DLPAR_SRCDIR");
  char yaml[4096];
  dlpar_error err = {0};
  snprintf(yaml, sizeof(yaml), "%s/etc/vit.yaml", srcdir && *srcdir ? srcdir : DLPAR_TEST_SRCDIR);
  if (config_load(set, yaml, section, overrides, n, &err) != DLPAR_OK) {
    fprintf(stderr, "%s\n", err.text);
    exit(1);
  }
}

static inline model *make_model(dlpar_ctx *ctx, const train_config *cfg, int cuda)
{
  model *m = NULL;
  dlpar_error err = {0};
  int rc = cuda ? model_create_cuda(&m, cfg, ctx, cfg->global_batch_size, &err)
                : model_create_cpu(&m, cfg, ctx, cfg->global_batch_size, &err);
  if (rc != DLPAR_OK) {
    fprintf(stderr, "%s model: %s\n", cuda ? "CUDA" : "CPU", err.text);
    exit(1);
  }
  return m;
}

static inline void model_step(model *m, const float *inp, const float *tgt, double lr, long t)
{
  if (m->ops->forward_backward(m, inp, tgt) != DLPAR_OK || m->ops->optimizer_step(m, lr, t) != DLPAR_OK) {
    fprintf(stderr, "step %ld: %s\n", t, m->error.text);
    exit(1);
  }
}

/* The metrics of the window since the last call. */
static inline model_metrics window_metrics(model *m)
{
  model_metrics metrics;
  if (m->ops->post_metrics(m) != DLPAR_OK || m->ops->take_metrics(m, &metrics) != DLPAR_OK) {
    fprintf(stderr, "metrics: %s\n", m->error.text);
    exit(1);
  }
  return metrics;
}

/* The summed loss of the steps since the last call. */
static inline double window_loss(model *m)
{
  return window_metrics(m).train_loss_sum;
}

static inline float *model_tensor_copy(model *m, model_tensor which)
{
  float *host = malloc(sizeof(float) * m->table.total);
  if (!host || m->ops->read_tensor(m, which, host) != DLPAR_OK) {
    fprintf(stderr, "read_tensor: %s\n", m->error.text);
    exit(1);
  }
  return host;
}

/* Every tensor of `which` within `bound` relative, or (bound 0) bit for
 * bit. Within a bound, the attention's key bias is skipped (its gradient is
 * zero in exact arithmetic: rounding noise on both sides, which Adam turns
 * into steps of either sign); bit for bit, nothing is. */
static inline void check_tensors(const char *what, model *got, model *ref, model_tensor which, double bound)
{
  const param_table *t = &ref->table;
  float *g = model_tensor_copy(got, which), *r = model_tensor_copy(ref, which);
  int failed = 0;
  for (int i = 0; i < t->n; i++) {
    const param_info *pi = &t->p[i];
    const float *gi = g + pi->offset, *ri = r + pi->offset;
    double e;
    if (bound > 0 && strstr(pi->name, "attn.k.bias"))
      continue;
    e = rel_error(gi, ri, pi->count);
    check_count++;
    if (bound > 0 ? !(e < bound) : memcmp(gi, ri, sizeof(float) * pi->count) != 0) {
      check_failures++;
      failed++;
      fprintf(stderr, "FAILED: %s: %s: relative error %.3g (%s)\n", what, pi->name, e,
              bound > 0 ? "over the bound" : "expected bit for bit");
    }
  }
  if (!failed && bound > 0)
    printf("ok: %s: %d tensors within %.0e\n", what, t->n, bound);
  else if (!failed)
    printf("ok: %s: %d tensors bit for bit\n", what, t->n);
  free(g);
  free(r);
}

/* The largest relative difference of any tensor of `which` (NaN: one was not finite). */
static inline double max_tensor_error(model *got, model *ref, model_tensor which)
{
  const param_table *t = &ref->table;
  float *g = model_tensor_copy(got, which), *r = model_tensor_copy(ref, which);
  double worst = 0;
  for (int i = 0; i < t->n && !isnan(worst); i++) {
    const double e = rel_error(g + t->p[i].offset, r + t->p[i].offset, t->p[i].count);
    worst = isnan(e) || e > worst ? e : worst;
  }
  free(g);
  free(r);
  return worst;
}

static inline void check_value(const char *what, double got, double ref, double bound)
{
  const double e = fabs(got - ref) / fabs(ref);
  check_count++;
  if (!(e < bound)) {
    check_failures++;
    fprintf(stderr, "FAILED: %s: %.9g vs %.9g, relative error %.3g (bound %.0e)\n", what, got, ref, e, bound);
  } else {
    printf("ok: %s: %.9g vs %.9g (%.2e)\n", what, got, ref, e);
  }
}

static inline size_t image_floats(const train_config *cfg, int channels)
{
  return (size_t)cfg->global_batch_size * channels * cfg->img_size[0] * cfg->img_size[1];
}

static inline dlpar_ctx *gpu_context(void)
{
  dlpar_ctx *ctx;
  dlpar_options options = {.backend = DLPAR_BACKEND_NCCL, .keep_signals = 1}; /* `timeout` ends a test */
  if (dlpar_init(0, NULL, &options, &ctx) != DLPAR_OK) {
    fprintf(stderr, "dlpar_init: %s\n", dlpar_last_error(ctx));
    exit(1);
  }
  return ctx;
}

#endif
