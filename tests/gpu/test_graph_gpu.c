/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/test_graph_gpu.c: CUDA-graph replay equals eager execution.
 *  - Deterministic attention (dlpar's kernels, attention: reference): two
 *    CUDA models from the same weights train 30 steps on the same batches
 *    with a changing learning rate, one eager, one with cuda_graph: true
 *    (a warm-up step, then captured graphs replayed); the summed loss of the
 *    30 steps and every weight after them bit for bit. No device-wide
 *    synchronisation between steps (the host reads the loss once, at the
 *    end), so a batch slot refilled too early, an lr copied over the running
 *    Adam or an event that replays do not record shows as a difference.
 *    bf16 and fp16 at the `test` shape, bf16 at the `base` shape (4050
 *    tokens, head 48; depth 1, batch 2).
 *  - cuDNN's attention, whose backward accumulates dQ in an order that
 *    varies run to run: the noise is measured, not assumed. Two eager models
 *    and one with graphs take 3 steps at learning rate 0 (the weights stay
 *    the initial ones, so only the last step's own noise separates them);
 *    the graph model's gradients of the last (replayed) step must be within
 *    4 x the eager-vs-eager difference (+1e-7 for rounding), at the base
 *    shape in bf16.
 * Skips without a GPU. */
#include "config.h"

#include "tests/gpu/model_check.h"

enum { STEPS = 30, NOISE_STEPS = 3 };

static double train(model *m, const float *inp, const float *tgt, size_t in, size_t out, int steps, double lr0)
{
  for (int t = 1; t <= steps; t++)
    model_step(m, inp + in * (size_t)(t % 4), tgt + out * (size_t)(t % 4), lr0 * (1.0 - t / (2.0 * steps)), t);
  return window_loss(m);
}

/* The config of `section` with amp_mode, attention and the extra overrides. */
static void config_for(config_set *set, const char *section, const char *amp, const char *attention,
                       char *const *extra, int nextra)
{
  char amp_arg[32], attention_arg[32];
  char *overrides[8] = {amp_arg, attention_arg};
  snprintf(amp_arg, sizeof(amp_arg), "--amp_mode=%s", amp);
  snprintf(attention_arg, sizeof(attention_arg), "--attention=%s", attention);
  for (int i = 0; i < nextra && i < 6; i++)
    overrides[2 + i] = extra[i];
  load_config(set, section, overrides, 2 + nextra);
}

/* Deterministic attention: graphs replay eager's results bit for bit. */
static void compare_exact(dlpar_ctx *ctx, const char *section, const char *amp, char *const *extra, int nextra)
{
  config_set set;
  char what[128];
  model *eager, *graph;
  double loss_eager, loss_graph;
  config_for(&set, section, amp, "reference", extra, nextra);
  set.cfg.cuda_graph = false;
  eager = make_model(ctx, &set.cfg, 1);
  set.cfg.cuda_graph = true;
  graph = make_model(ctx, &set.cfg, 1);
  {
    const size_t in = image_floats(&set.cfg, set.cfg.n_in_channels), out = image_floats(&set.cfg, set.cfg.n_out_channels);
    float *inp = host_random(in * 4, 1), *tgt = host_random(out * 4, 1);
    loss_eager = train(eager, inp, tgt, in, out, STEPS, 1e-3);
    loss_graph = train(graph, inp, tgt, in, out, STEPS, 1e-3);
    free(inp);
    free(tgt);
  }
  snprintf(what, sizeof(what), "%s %s, attention: reference: summed loss of %d steps, graphs vs eager", section, amp,
           STEPS);
  check_count++;
  if (loss_graph != loss_eager) {
    check_failures++;
    fprintf(stderr, "FAILED: %s: %.9g vs %.9g (expected bit for bit)\n", what, loss_graph, loss_eager);
  } else {
    printf("ok: %s: %.9g, bit for bit\n", what, loss_graph);
  }
  snprintf(what, sizeof(what), "%s %s, attention: reference: weights after %d steps, graphs vs eager", section, amp,
           STEPS);
  check_tensors(what, graph, eager, TENSOR_PARAMS, 0);
  eager->ops->destroy(eager);
  graph->ops->destroy(graph);
}

/* cuDNN's attention: graphs vs eager within a small multiple of eager vs eager. */
static void compare_calibrated(dlpar_ctx *ctx, const char *section, const char *amp, char *const *extra, int nextra)
{
  config_set set;
  model *eager[2], *graph;
  double noise, graph_error;
  config_for(&set, section, amp, "cudnn", extra, nextra);
  set.cfg.cuda_graph = false;
  eager[0] = make_model(ctx, &set.cfg, 1);
  eager[1] = make_model(ctx, &set.cfg, 1);
  set.cfg.cuda_graph = true;
  graph = make_model(ctx, &set.cfg, 1);
  {
    const size_t in = image_floats(&set.cfg, set.cfg.n_in_channels), out = image_floats(&set.cfg, set.cfg.n_out_channels);
    float *inp = host_random(in * 4, 1), *tgt = host_random(out * 4, 1);
    train(eager[0], inp, tgt, in, out, NOISE_STEPS, 0);
    train(eager[1], inp, tgt, in, out, NOISE_STEPS, 0);
    train(graph, inp, tgt, in, out, NOISE_STEPS, 0);
    free(inp);
    free(tgt);
  }
  noise = max_tensor_error(eager[1], eager[0], TENSOR_GRADS);
  graph_error = max_tensor_error(graph, eager[0], TENSOR_GRADS);
  check_count++;
  if (!(graph_error <= 4 * noise + 1e-7)) {
    check_failures++;
    fprintf(stderr, "FAILED: %s %s, attention: cudnn: gradients of a replayed step, graphs vs eager: %.3g, over 4 x "
            "eager vs eager (%.3g) + 1e-7\n", section, amp, graph_error, noise);
  } else {
    printf("ok: %s %s, attention: cudnn: gradients of a replayed step, graphs vs eager %.3g, eager vs eager %.3g\n",
           section, amp, graph_error, noise);
  }
  eager[0]->ops->destroy(eager[0]);
  eager[1]->ops->destroy(eager[1]);
  graph->ops->destroy(graph);
}

int main(void)
{
  char *base[2] = {"--depth=1", "--global_batch_size=2"};
  dlpar_ctx *ctx;
  require_gpu();
  ctx = gpu_context();
  compare_exact(ctx, "test", "bf16", NULL, 0);
  compare_exact(ctx, "test", "fp16", NULL, 0);
  compare_exact(ctx, "base", "bf16", base, 2);
#ifdef HAVE_CUDNN
  compare_calibrated(ctx, "base", "bf16", base, 2);
#endif
  dlpar_finalize(ctx);
  return check_report("test_graph_gpu");
}
