/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/test_fp32_gpu.c: strict fp32 (amp_mode: none, tf32: false) on
 * the GPU equals the CPU reference, one rank, the same initial weights and
 * batches: the first step's loss within 1e-5 and every weight after 5 Adam
 * steps within 1e-4 relative, at the `medium` shape (512 tokens, head 32)
 * and at the `base` shape (4050 tokens, head 48; depth 2 and batch 1, so
 * the CPU side stays short). Skips without a GPU. */
#include "config.h"

#include "tests/gpu/model_check.h"

enum { ADAM_STEPS = 5 };

static void compare(dlpar_ctx *ctx, const char *section, char *const *overrides, int n)
{
  config_set set;
  model *cpu, *gpu;
  char what[128];
  load_config(&set, section, overrides, n);
  cpu = make_model(ctx, &set.cfg, 0);
  gpu = make_model(ctx, &set.cfg, 1);
  {
    const size_t in = image_floats(&set.cfg, set.cfg.n_in_channels), out = image_floats(&set.cfg, set.cfg.n_out_channels);
    float *inp = malloc(sizeof(float) * in), *tgt = malloc(sizeof(float) * out);
    for (int t = 1; t <= ADAM_STEPS; t++) {
      for (size_t i = 0; i < in; i++)
        inp[i] = gpu_uniform();
      for (size_t i = 0; i < out; i++)
        tgt[i] = gpu_uniform();
      model_step(cpu, inp, tgt, 5e-4, t);
      model_step(gpu, inp, tgt, 5e-4, t);
      if (t == 1) {
        snprintf(what, sizeof(what), "%s fp32: first-step loss", section);
        check_value(what, window_loss(gpu), window_loss(cpu), 1e-5);
      }
    }
    free(inp);
    free(tgt);
  }
  snprintf(what, sizeof(what), "%s fp32: weights after %d Adam steps", section, ADAM_STEPS);
  check_tensors(what, gpu, cpu, TENSOR_PARAMS, 1e-4);
  cpu->ops->destroy(cpu);
  gpu->ops->destroy(gpu);
}

int main(void)
{
  char *medium[2] = {"--amp_mode=none", "--tf32=false"};
  char *base[4] = {"--amp_mode=none", "--tf32=false", "--depth=2", "--global_batch_size=1"};
  dlpar_ctx *ctx;
  require_gpu();
  ctx = gpu_context();
  compare(ctx, "medium", medium, 2);
  compare(ctx, "base", base, 4);
  dlpar_finalize(ctx);
  return check_report("test_fp32_gpu");
}
