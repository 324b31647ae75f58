/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/test_step_gpu.c: the CUDA model against the CPU reference model
 * on the `test` config of etc/vit.yaml, one rank, the same initial weights:
 *  - one training step in fp32 (TF32 off): the loss within 1e-5 and every
 *    parameter gradient within 1e-4 relative;
 *  - 20 Adam steps in bf16 on the GPU beside fp32 on the CPU, on the same
 *    batches: every step's loss within 2e-2 relative.
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
    fprintf(stderr, "test_step_gpu: %s %s\n", p->cpu->error, p->gpu->error);
    exit(1);
  }
  check_tensors("fp32 step: gradients", p->gpu, p->cpu, TENSOR_GRADS, 1e-4);
  check_value("fp32 step: loss", window_loss(p->gpu), window_loss(p->cpu), 1e-5);
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
    make_pair(&bf16, ctx, "bf16");
    for (int s = 0; s < 20; s++) {
      char what[64];
      model_step(bf16.cpu, inp + image * s, tgt + image * s, 1e-3, s + 1);
      model_step(bf16.gpu, inp + image * s, tgt + image * s, 1e-3, s + 1);
      snprintf(what, sizeof(what), "bf16 GPU vs fp32 CPU: step %d loss", s + 1);
      check_value(what, window_loss(bf16.gpu), window_loss(bf16.cpu), 2e-2);
    }
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
