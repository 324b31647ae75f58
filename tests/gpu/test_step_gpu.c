/* tests/gpu/test_step_gpu.c: the CUDA model against the CPU reference model
 * on the `test` config of etc/vit.yaml, one rank, the same initial weights:
 *  - one training step in fp32 (TF32 off): the loss within 1e-5 and every
 *    parameter gradient within 1e-4 relative;
 *  - 20 Adam steps in bf16 on the GPU beside fp32 on the CPU, on the same
 *    batches: every step's loss within 2e-2 relative.
 * Skips without a GPU. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "launcher/dlpar.h"
#include "tests/gpu/gpu_check.h"
#include "trainer/model.h"

typedef struct {
  model *cpu, *gpu;
} pair;

static void make_pair(pair *p, dlpar_ctx *ctx, const char *yaml, const char *amp)
{
  config_set set;
  char err[DLPAR_ERRLEN], amp_arg[32];
  char *overrides[2] = {amp_arg, "--tf32=false"};
  snprintf(amp_arg, sizeof(amp_arg), "--amp_mode=%s", amp);
  if (config_load(&set, yaml, "test", overrides, 2, err, sizeof(err)) != DLPAR_OK ||
      model_create_cpu(&p->cpu, &set.cfg, ctx, set.cfg.global_batch_size, err, sizeof(err)) != DLPAR_OK ||
      model_create_cuda(&p->gpu, &set.cfg, ctx, set.cfg.global_batch_size, err, sizeof(err)) != DLPAR_OK) {
    fprintf(stderr, "test_step_gpu: %s\n", err);
    exit(1);
  }
}

static double take_loss(model *m)
{
  model_metrics metrics;
  if (m->ops->post_metrics(m) != DLPAR_OK || m->ops->take_metrics(m, &metrics) != DLPAR_OK) {
    fprintf(stderr, "test_step_gpu: %s\n", m->error);
    exit(1);
  }
  return metrics.train_loss_sum;
}

static void step(model *m, const float *inp, const float *tgt, long t)
{
  if (m->ops->forward_backward(m, inp, tgt) != DLPAR_OK || m->ops->optimizer_step(m, 1e-3, t) != DLPAR_OK) {
    fprintf(stderr, "test_step_gpu: %s\n", m->error);
    exit(1);
  }
}

static void compare_gradients(pair *p, const float *inp, const float *tgt)
{
  const param_table *t = &p->cpu->table;
  float *g_cpu = malloc(sizeof(float) * t->total), *g_gpu = malloc(sizeof(float) * t->total);
  float loss_cpu, loss_gpu;
  if (p->cpu->ops->forward_backward(p->cpu, inp, tgt) || p->gpu->ops->forward_backward(p->gpu, inp, tgt) ||
      p->cpu->ops->read_tensor(p->cpu, TENSOR_GRADS, g_cpu) || p->gpu->ops->read_tensor(p->gpu, TENSOR_GRADS, g_gpu)) {
    fprintf(stderr, "test_step_gpu: %s %s\n", p->cpu->error, p->gpu->error);
    exit(1);
  }
  loss_cpu = (float)take_loss(p->cpu);
  loss_gpu = (float)take_loss(p->gpu);
  CHECK_CLOSE("fp32 step: loss", DL_F32, &loss_gpu, &loss_cpu, 1);
  for (int i = 0; i < t->n; i++) {
    const param_info *pi = &t->p[i];
    double e;
    if (strstr(pi->name, "attn.k.bias")) /* zero in exact arithmetic: rounding noise on both sides */
      continue;
    e = rel_error(g_gpu + pi->offset, g_cpu + pi->offset, pi->count);
    check_count++;
    if (!(e < 1e-4)) {
      check_failures++;
      fprintf(stderr, "FAILED: fp32 step: gradient of %s: relative error %.3g (bound 1e-4)\n", pi->name, e);
    }
  }
  free(g_cpu);
  free(g_gpu);
}

int main(void)
{
  dlpar_ctx *ctx;
  dlpar_options options = {.backend = DLPAR_BACKEND_NCCL};
  const char *srcdir = getenv("DLPAR_SRCDIR");
  char yaml[4096];
  pair fp32, bf16;
  require_gpu();
  snprintf(yaml, sizeof(yaml), "%s/etc/vit.yaml", srcdir ? srcdir : ".");
  if (dlpar_init(0, NULL, &options, &ctx) != 0) {
    fprintf(stderr, "test_step_gpu: %s\n", dlpar_last_error(ctx));
    return 1;
  }
  make_pair(&fp32, ctx, yaml, "none");
  {
    const int B = fp32.cpu->batch;
    const size_t image = (size_t)fp32.cpu->cfg.n_in_channels * fp32.cpu->cfg.img_size[0] * fp32.cpu->cfg.img_size[1];
    float *inp = host_random(image * B * 20, 1), *tgt = host_random(image * B * 20, 1);
    compare_gradients(&fp32, inp, tgt);
    make_pair(&bf16, ctx, yaml, "bf16");
    for (int s = 0; s < 20; s++) {
      float loss_cpu, loss_gpu;
      char what[64];
      step(bf16.cpu, inp + image * B * s, tgt + image * B * s, s + 1);
      step(bf16.gpu, inp + image * B * s, tgt + image * B * s, s + 1);
      loss_cpu = (float)take_loss(bf16.cpu);
      loss_gpu = (float)take_loss(bf16.gpu);
      snprintf(what, sizeof(what), "bf16 GPU vs fp32 CPU: step %d loss", s + 1);
      CHECK_CLOSE(what, DL_BF16, &loss_gpu, &loss_cpu, 1);
    }
  }
  fp32.cpu->ops->destroy(fp32.cpu);
  fp32.gpu->ops->destroy(fp32.gpu);
  bf16.cpu->ops->destroy(bf16.cpu);
  bf16.gpu->ops->destroy(bf16.gpu);
  dlpar_finalize(ctx);
  return check_report("test_step_gpu");
}
