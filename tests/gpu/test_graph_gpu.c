/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/test_graph_gpu.c: CUDA-graph replay equals eager execution.
 * Two CUDA models from the same weights train 30 steps on the same batches
 * with a changing learning rate, one eager, one with cuda_graph: true (a
 * warm-up step, then captured graphs replayed); the summed loss of the 30
 * steps and every weight after them within 1e-6 relative. No device-wide
 * synchronisation between steps (the host reads the loss once, at the end),
 * so a batch slot refilled too early, an lr copied over the running Adam or
 * an event that replays do not record shows as a difference. bf16 and fp16
 * at the `test` shape, bf16 at the `base` shape (4050 tokens, head 48;
 * depth 1, batch 2). Skips without a GPU. */
#include "config.h"

#include "tests/gpu/model_check.h"

enum { STEPS = 30 };

static double train(model *m, const float *inp, const float *tgt, size_t in, size_t out)
{
  for (int t = 1; t <= STEPS; t++)
    model_step(m, inp + in * (size_t)(t % 4), tgt + out * (size_t)(t % 4), 1e-3 * (1.0 - t / (2.0 * STEPS)), t);
  return window_loss(m);
}

static void compare(dlpar_ctx *ctx, const char *section, const char *amp, char *const *extra, int nextra)
{
  config_set set;
  char amp_arg[32], what[128];
  char *overrides[8] = {amp_arg};
  model *eager, *graph;
  double loss_eager, loss_graph;
  snprintf(amp_arg, sizeof(amp_arg), "--amp_mode=%s", amp);
  for (int i = 0; i < nextra && i < 6; i++)
    overrides[1 + i] = extra[i];
  load_config(&set, section, overrides, 1 + nextra);
  set.cfg.cuda_graph = false;
  eager = make_model(ctx, &set.cfg, 1);
  set.cfg.cuda_graph = true;
  graph = make_model(ctx, &set.cfg, 1);
  {
    const size_t in = image_floats(&set.cfg, set.cfg.n_in_channels), out = image_floats(&set.cfg, set.cfg.n_out_channels);
    float *inp = host_random(in * 4, 1), *tgt = host_random(out * 4, 1);
    loss_eager = train(eager, inp, tgt, in, out);
    loss_graph = train(graph, inp, tgt, in, out);
    free(inp);
    free(tgt);
  }
  snprintf(what, sizeof(what), "%s %s: summed loss of %d steps, graphs vs eager", section, amp, STEPS);
  check_value(what, loss_graph, loss_eager, 1e-6);
  snprintf(what, sizeof(what), "%s %s: weights after %d steps, graphs vs eager", section, amp, STEPS);
  check_tensors(what, graph, eager, TENSOR_PARAMS, 1e-6);
  eager->ops->destroy(eager);
  graph->ops->destroy(graph);
}

int main(void)
{
  char *base[2] = {"--depth=1", "--global_batch_size=2"};
  dlpar_ctx *ctx;
  require_gpu();
  ctx = gpu_context();
  compare(ctx, "test", "bf16", NULL, 0);
  compare(ctx, "test", "fp16", NULL, 0);
  compare(ctx, "base", "bf16", base, 2);
  dlpar_finalize(ctx);
  return check_report("test_graph_gpu");
}
