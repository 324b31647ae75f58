/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/test_step_gpu.c: the CUDA model against the CPU reference model
 * on the `test` config of etc/vit.yaml, one rank, the same initial weights:
 *  - one training step in fp32 (TF32 off): the loss within 1e-5 and every
 *    parameter gradient within 1e-4 relative;
 *  - validation in fp32: the loss and the latitude-weighted RMSE within
 *    1e-5, and a window holding a training step and a validation batch
 *    counts no skipped or overflow step (the RMSE's per-sample scratch is
 *    apart from the window's sums);
 *  - 20 Adam steps in bf16 on the GPU beside fp32 on the CPU, on the same
 *    batches: every step's loss within 2e-2 relative;
 *  - write_tensor's weights are the ones the next work on the GPU reads:
 *    two weight sets written alternately from one host buffer, poisoned
 *    (NaN) as soon as each write returns, each followed at once by a
 *    validation batch, give each set's own loss every time;
 *  - recompute: gelu (GELU's output recomputed in the backward) against
 *    none (kept): one step's gradients bit for bit in fp32 (the same exact
 *    kernel twice), within 2e-2 in bf16 (the epilogue's tanh GELU again,
 *    from the pre-activation rounded to bf16).
 * Skips without a GPU. */
#include "config.h"

#include "tests/gpu/model_check.h"

typedef struct {
  model *cpu, *gpu;
} pair;

static void make_pair(pair *p, dlpar_ctx *ctx, const char *amp)
{
  config_set set;
  char amp_arg[32];
  char *overrides[2] = {amp_arg, "--tf32=false"};
  snprintf(amp_arg, sizeof(amp_arg), "--amp_mode=%s", amp);
  load_config(&set, "test", overrides, 2);
  p->cpu = make_model(ctx, &set.cfg, 0);
  p->gpu = make_model(ctx, &set.cfg, 1);
}

static void compare_gradients(pair *p, const float *inp, const float *tgt)
{
  if (p->cpu->ops->forward_backward(p->cpu, inp, tgt) || p->gpu->ops->forward_backward(p->gpu, inp, tgt)) {
    fprintf(stderr, "test_step_gpu: %s %s\n", p->cpu->error.text, p->gpu->error.text);
    exit(1);
  }
  check_tensors("fp32 step: gradients", p->gpu, p->cpu, TENSOR_GRADS, 1e-4);
  check_value("fp32 step: loss", window_loss(p->gpu), window_loss(p->cpu), 1e-5);
}

static void compare_recompute(dlpar_ctx *ctx, const char *amp, double bound, const float *inp, const float *tgt)
{
  config_set set;
  char amp_arg[32], what[96];
  char *overrides[3] = {amp_arg, "--tf32=false", "--recompute=gelu"};
  model *recomputed, *kept;
  snprintf(amp_arg, sizeof(amp_arg), "--amp_mode=%s", amp);
  load_config(&set, "test", overrides, 3);
  recomputed = make_model(ctx, &set.cfg, 1);
  overrides[2] = "--recompute=none";
  load_config(&set, "test", overrides, 3);
  kept = make_model(ctx, &set.cfg, 1);
  if (recomputed->ops->forward_backward(recomputed, inp, tgt) || kept->ops->forward_backward(kept, inp, tgt)) {
    fprintf(stderr, "test_step_gpu: %s %s\n", recomputed->error.text, kept->error.text);
    exit(1);
  }
  snprintf(what, sizeof(what), "%s step: gradients, GELU recomputed vs kept", amp);
  check_tensors(what, recomputed, kept, TENSOR_GRADS, bound);
  recomputed->ops->destroy(recomputed);
  kept->ops->destroy(kept);
}

static void evaluate(model *m, const float *inp, const float *tgt)
{
  if (m->ops->evaluate(m, inp, tgt) != DLPAR_OK) {
    fprintf(stderr, "test_step_gpu: evaluate: %s\n", m->error.text);
    exit(1);
  }
}

static void compare_validation(pair *p, const float *inp, const float *tgt)
{
  model_metrics gpu, cpu;
  model_step(p->gpu, inp, tgt, 1e-3, 1);
  model_step(p->cpu, inp, tgt, 1e-3, 1);
  evaluate(p->gpu, inp, tgt);
  evaluate(p->cpu, inp, tgt);
  gpu = window_metrics(p->gpu);
  cpu = window_metrics(p->cpu);
  check_value("fp32 validation: loss", gpu.val_loss_sum, cpu.val_loss_sum, 1e-5);
  check_value("fp32 validation: weighted RMSE", gpu.val_rmse_sum, cpu.val_rmse_sum, 1e-5);
  check_count++;
  if (gpu.skipped_steps != 0 || gpu.overflow_steps != 0 || gpu.val_samples != cpu.val_samples) {
    check_failures++;
    fprintf(stderr, "FAILED: a window of a step and a validation batch: %ld skipped, %ld overflow steps, %ld samples "
            "(expected 0, 0, %ld)\n", gpu.skipped_steps, gpu.overflow_steps, gpu.val_samples, cpu.val_samples);
  }
}

/* The validation loss with `weights`, written from `staging`, which is
 * poisoned as soon as write_tensor returns. */
static double loss_with(model *m, const float *weights, float *staging, const float *inp, const float *tgt)
{
  const size_t bytes = sizeof(float) * m->table.total;
  memcpy(staging, weights, bytes);
  if (m->ops->write_tensor(m, TENSOR_PARAMS, staging) != DLPAR_OK) {
    fprintf(stderr, "test_step_gpu: write_tensor: %s\n", m->error.text);
    exit(1);
  }
  memset(staging, 0xff, bytes);
  evaluate(m, inp, tgt);
  return window_metrics(m).val_loss_sum;
}

static void check_write_ordering(model *m, const float *inp, const float *tgt)
{
  enum { ROUNDS = 10 };
  const size_t n = m->table.total;
  float *first = model_tensor_copy(m, TENSOR_PARAMS), *second = malloc(sizeof(float) * n);
  float *staging = malloc(sizeof(float) * n);
  double loss[2];
  int wrong = 0;
  if (!second || !staging) {
    fprintf(stderr, "test_step_gpu: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < n; i++)
    second[i] = 0.5f * first[i];
  loss[0] = loss_with(m, first, staging, inp, tgt);
  loss[1] = loss_with(m, second, staging, inp, tgt);
  for (int r = 0; r < 2 * ROUNDS; r++)
    wrong += loss_with(m, r % 2 ? second : first, staging, inp, tgt) != loss[r % 2];
  check_count++;
  if (wrong || loss[0] == loss[1] || !isfinite(loss[0]) || !isfinite(loss[1])) {
    check_failures++;
    fprintf(stderr, "FAILED: write_tensor then validation: %d of %d losses differ from their weights' own (%.9g, "
            "%.9g)\n", wrong, 2 * ROUNDS, loss[0], loss[1]);
  } else {
    printf("ok: write_tensor then validation: %d alternating writes, each set's own loss\n", 2 * ROUNDS);
  }
  free(first);
  free(second);
  free(staging);
}

int main(void)
{
  dlpar_ctx *ctx;
  pair fp32, bf16;
  require_gpu();
  ctx = gpu_context();
  make_pair(&fp32, ctx, "none");
  {
    const size_t image = image_floats(&fp32.cpu->cfg, fp32.cpu->cfg.n_in_channels);
    float *inp = host_random(image * 20, 1), *tgt = host_random(image * 20, 1);
    compare_gradients(&fp32, inp, tgt);
    compare_validation(&fp32, inp, tgt);
    make_pair(&bf16, ctx, "bf16");
    for (int s = 0; s < 20; s++) {
      char what[64];
      model_step(bf16.cpu, inp + image * s, tgt + image * s, 1e-3, s + 1);
      model_step(bf16.gpu, inp + image * s, tgt + image * s, 1e-3, s + 1);
      snprintf(what, sizeof(what), "bf16 GPU vs fp32 CPU: step %d loss", s + 1);
      check_value(what, window_loss(bf16.gpu), window_loss(bf16.cpu), 2e-2);
    }
    check_write_ordering(bf16.gpu, inp, tgt);
    compare_recompute(ctx, "none", 0, inp, tgt);
    compare_recompute(ctx, "bf16", 2e-2, inp, tgt);
    free(inp);
    free(tgt);
  }
  fp32.cpu->ops->destroy(fp32.cpu);
  fp32.gpu->ops->destroy(fp32.gpu);
  bf16.cpu->ops->destroy(bf16.cpu);
  bf16.gpu->ops->destroy(bf16.gpu);
  dlpar_finalize(ctx);
  return check_report("test_step_gpu");
}
