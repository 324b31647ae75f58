/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/benchy.c: dlpar-train --benchy, the SC22 tutorial's benchmark:
 * the loader alone (IO), compute on one batch kept where the model
 * computes (SYNTHETIC), and both (FULL), each in samples/s of the global
 * batch, with the training loop's own steps (train.h). */
#include "config.h"

#include <sys/resource.h>

#include "common/clock.h"
#include "common/text.h"
#include "trainer/benchy.h"
#include "trainer/train.h"

/* Waits for this rank's device (a host allreduce waits for it), then for
 * every rank; returns the mean of `seconds`. */
static double synchronize(trainer *t, double seconds)
{
  if (dlpar_allreduce_host(t->comm, DLPAR_WORLD, &seconds, 1, DLPAR_FLOAT64, DLPAR_AVG) != 0)
    train_die(t, true, "benchy: %s", dlpar_last_error(t->comm));
  return seconds;
}

/* Each of the three after a few warm-up steps; one line. */
void benchy(trainer *t)
{
  const train_config *c = &t->config.cfg;
  const long warmup = 5, steps = c->num_iters < 100 ? c->num_iters : 100;
  const double samples = (double)steps * c->global_batch_size;
  const float *inp, *tgt;
  char err[DLPAR_ERRLEN];
  double start = 0, io, synthetic, full;
  model_metrics synthetic_sums;
  struct rusage usage;
  epoch_progress e = {.start = 0};
  loader_start(t->train, 0, 0, -1);
  for (long i = 0; i < warmup + steps; i++) {
    if (i == warmup)
      start = dlpar_now();
    if (loader_next(t->train, &inp, &tgt, err, sizeof(err)) != DLPAR_OK)
      train_die(t, true, "%s", err);
    if (i + 1 < warmup + steps)
      loader_release(t->train);
  }
  io = synchronize(t, dlpar_now() - start);
  train_check(t, t->net->ops->forward_backward(t->net, inp, tgt), "forward/backward"); /* stage it */
  loader_release(t->train);
  for (long i = 0; i < warmup + steps; i++) {
    if (i == warmup)
      synchronize(t, 0), start = dlpar_now();
    train_check(t, t->net->ops->forward_backward(t->net, NULL, NULL), "forward/backward");
    train_check(t, t->net->ops->optimizer_step(t->net, c->lr, i + 1), "optimizer");
  }
  synthetic = synchronize(t, dlpar_now() - start);
  metrics_now(t, &synthetic_sums); /* dropped: SYNTHETIC's sums stay out of FULL's lines */
  loader_start(t->train, 0, 0, warmup + steps);
  t->pos.step = t->pos.step_in_epoch = 0;
  step_skew_start(t);
  for (long i = 0; i < warmup + steps; i++) {
    if (i == warmup)
      synchronize(t, 0), start = dlpar_now();
    train_step(t, &e);
  }
  full = synchronize(t, dlpar_now() - start);
  flush_windows(t, &e);
  getrusage(RUSAGE_SELF, &usage);
  train_say(t, "benchy: %ld %s of %d %s after %ld warm-up: IO %.2f samples/s, SYNTHETIC %.2f samples/s, FULL %.2f "
      "samples/s, FULL/SYNTHETIC %.3f, model memory %.3f GB/rank, device memory %.3f GB/rank, peak RSS %.1f MB\n",
      steps,
      dlpar_plural(steps, "step", "steps"), c->global_batch_size, dlpar_plural(c->global_batch_size, "sample", "samples"),
      warmup, samples / io, samples / synthetic, samples / full, synthetic / full,
      (double)t->net->ops->peak_memory(t->net) / 1e9, (double)t->net->ops->device_memory(t->net) / 1e9,
      usage.ru_maxrss / 1024.0);
}
