/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/step.c: one optimizer step of dlpar-train and its bookkeeping,
 * which the training loop in train.c and --benchy in benchy.c both run.
 * That is the batch, forward/backward, Adam at the cosine schedule's rate,
 * the loss windows and their lines, the step-time skew, stop requests and
 * checkpoints. train_die and train_say say how the run ends or speaks. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/status.h"
#include "common/text.h"
#include "include/dlpar/dlpar.h"
#include "trainer/run/checkpoint.h"
#include "trainer/run/metrics.h"
#include "trainer/model/model.h"
#include "trainer/run/progress.h"
#include "trainer/run/step.h"
#include "trainer/run/train.h"

void train_die(trainer *t, bool every_rank, const char *fmt, ...)
{
  char message[2 * DLPAR_ERRLEN], line[2 * DLPAR_ERRLEN + 64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof(message), fmt, ap);
  va_end(ap);
  dlpar_one_line(message);
  if (every_rank && t->info->size > 1)
    snprintf(line, sizeof(line), "dlpar-train: rank %d: %s", t->info->rank, message);
  else
    snprintf(line, sizeof(line), "dlpar-train: %s", message);
  progress_break(t->progress);
  if (every_rank) {
    dlpar_eprintf("%s\n", line);
    dlpar_abort(t->comm, 1, NULL);
  }
  dlpar_abort_shared(t->comm, 1, line);
}

void train_say(const trainer *t, const char *fmt, ...)
{
  va_list ap;
  if (t->info->rank != 0)
    return;
  progress_break(t->progress);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

/* ------------------------------------------------------------ set-up */

/* The tutorial's schedule: the rate of step i, counted from 0, over schedule_steps. */
double train_learning_rate(const trainer *t, long i)
{
  const train_config *c = &t->config.cfg;
  const double cosine = 0.5 * (1.0 + cos(M_PI * (double)i / t->schedule_steps));
  if (strcmp(c->lr_schedule, "cosine") != 0)
    return c->lr;
  if (c->warmup > 0)
    return c->lr * fmin((double)(i + 1) / c->warmup, cosine);
  return c->lr * cosine;
}

void train_check(trainer *t, int rc, const char *what)
{
  if (rc != DLPAR_OK)
    train_die(t, true, "%s: %s", what, t->net->error.text);
}

void train_save_checkpoint(trainer *t)
{
  char path[PATH_MAX + 16];
  dlpar_error err = {0};
  checkpoint_position pos = t->pos; /* at an epoch's last step: the next epoch's first, as the loader counts */
  snprintf(path, sizeof(path), "%s/checkpoint.h5", t->run_dir);
  loader_position(t->train, &pos.epoch, &pos.step_in_epoch, NULL);
  if (checkpoint_save(t->net, &pos, t->config_yaml, path, &err) != DLPAR_OK)
    train_die(t, true, "checkpoint: %s", err.text);
  t->saved_step = t->pos.step;
  train_say(t, "  Saved checkpoint at step %ld: %s\n", t->pos.step, dlpar_show(path).text);
}

void metrics_now(trainer *t, model_metrics *m)
{
  train_check(t, t->net->ops->post_metrics(t->net), "metrics");
  train_check(t, t->net->ops->take_metrics(t->net, m), "metrics");
}

static void post_window(trainer *t, epoch_progress *e)
{
  train_check(t, t->net->ops->post_metrics(t->net), "metrics");
  e->posted_step = t->pos.step;
}

/* A window with a non-finite loss or skipped updates. Every rank sees the
 * same, because its sums are over dp, the loss is the tp group's, and the
 * skips are agreed over tp. Within max_skipped_steps it gives a line, else
 * the end of the run, with the last checkpoint left as it is. Nothing is
 * saved after this window. */
static bool nonfinite_window(trainer *t, const epoch_progress *e, const model_metrics *m)
{
  const train_config *c = &t->config.cfg;
  const long skipped = m->skipped_steps / t->info->dp_size, steps = m->train_steps / t->info->dp_size;
  char steps_text[64], last_good[PATH_MAX + 64];
  double loss;
  if (isfinite(m->train_loss_sum) && skipped == 0)
    return false;
  t->skipped_steps += skipped > 0 ? skipped : 1;
  if (steps > 1)
    snprintf(steps_text, sizeof(steps_text), "in steps %ld-%ld", e->posted_step - steps + 1, e->posted_step);
  else
    snprintf(steps_text, sizeof(steps_text), "at step %ld", e->posted_step);
  if (t->skipped_steps <= c->max_skipped_steps) {
    train_say(t, "dlpar-train: non-finite loss or gradients %s: update skipped (%ld of max_skipped_steps=%d)\n",
              steps_text, t->skipped_steps, c->max_skipped_steps);
    return true;
  }
  if (t->saved_step >= 0)
    snprintf(last_good, sizeof(last_good), "%s/checkpoint.h5 (step %ld) is the last good checkpoint",
             dlpar_show(t->run_dir).text,
             t->saved_step);
  else
    snprintf(last_good, sizeof(last_good), "no checkpoint was written");
  loss = m->train_loss_sum / (double)(steps > 0 ? steps : 1);
  train_die(t, false, "the run diverged: loss %g, non-finite loss or gradients %s; stopping, %s (lower lr or raise "
            "warmup; max_skipped_steps=N skips up to N such steps)", isnan(loss) ? NAN : loss, steps_text, last_good);
}

/* The posted window, if any, goes into the epoch's sums and gets its step
 * line, with the loss averaged over the window's steps and over dp. */
static void log_window(trainer *t, epoch_progress *e)
{
  model_metrics m;
  if (!e->posted_step)
    return;
  train_check(t, t->net->ops->take_metrics(t->net, &m), "metrics");
  if (nonfinite_window(t, e, &m)) {
    e->posted_step = 0;
    return;
  }
  e->loss_sum += m.train_loss_sum;
  e->steps += m.train_steps;
  t->overflow_steps += m.overflow_steps / t->info->dp_size;
  if (t->metrics && m.train_steps > 0 &&
      metrics_step(t->metrics, e->posted_step, m.train_loss_sum / (double)m.train_steps,
                   train_learning_rate(t, e->posted_step - 1)) != 0)
    train_die(t, false, "%s: cannot append to metrics.jsonl (disk full?)", dlpar_show(t->run_dir).text);
  e->posted_step = 0;
}

void flush_windows(trainer *t, epoch_progress *e)
{
  log_window(t, e);
  post_window(t, e);
  log_window(t, e);
}

/* Rank 0: the gathered interval's slowest, fastest and median rank, a line
 * and TensorBoard; a rank over straggler_threshold x the median is named. */
static void report_skew(trainer *t, long step, const double *times)
{
  const int size = t->info->size;
  double *sorted = t->skew.times + size, median, ratio;
  int slowest = 0, fastest = 0;
  char straggler[DLPAR_ERRLEN] = "";
  for (int rank = 0; rank < size; rank++) {
    sorted[rank] = times[rank];
    slowest = times[rank] > times[slowest] ? rank : slowest;
    fastest = times[rank] < times[fastest] ? rank : fastest;
  }
  median = dlpar_median_sorting(sorted, size);
  ratio = median > 0 ? times[slowest] / median : 1;
  if (ratio > t->config.cfg.straggler_threshold)
    snprintf(straggler, sizeof(straggler), "; straggler: rank %d on %s at %.2fx the median (straggler_threshold %g)",
             slowest, dlpar_rank_host(t->comm, slowest), ratio, t->config.cfg.straggler_threshold);
  train_say(t, "dlpar-train: step time at step %ld (host, ms): slowest rank %d on %s %.2f, fastest rank %d on %s %.2f, "
      "median %.2f%s\n", step, slowest, dlpar_rank_host(t->comm, slowest), 1e3 * times[slowest], fastest,
      dlpar_rank_host(t->comm, fastest), 1e3 * times[fastest], 1e3 * median, straggler);
  if (t->metrics && metrics_skew(t->metrics, step, times[slowest], times[fastest], median) != DLPAR_OK)
    train_die(t, false, "%s: cannot write the metrics (disk full?)", dlpar_show(t->run_dir).text);
}

void step_skew_start(trainer *t)
{
  t->skew.start = dlpar_now();
  t->skew.waited = dlpar_wait_seconds(t->comm);
}

/* Every skew_every steps: post this interval's busy time per step, report the last one's. */
static void step_skew_tick(trainer *t)
{
  step_skew *k = &t->skew;
  const double now = dlpar_now(), waited = dlpar_wait_seconds(t->comm);
  const long posted_step = k->posted_step;
  int ready = 0;
  if (t->steps_this_run % t->config.cfg.skew_every != 0)
    return;
  if (!k->times && !(k->times = malloc(2 * sizeof(double) * (size_t)t->info->size)))
    train_die(t, true, "out of memory for the step times");
  if (dlpar_step_times(t->comm, (now - k->start - (waited - k->waited)) / t->config.cfg.skew_every, t->net->stream,
                       k->times, &ready) != DLPAR_OK)
    train_die(t, true, "step times: %s", dlpar_last_error(t->comm));
  k->start = now;
  k->waited = waited;
  k->posted_step = t->pos.step;
  if (ready && t->info->rank == 0)
    report_skew(t, posted_step, k->times);
}

int train_step(trainer *t, epoch_progress *e)
{
  const train_config *c = &t->config.cfg;
  const float *inp, *tgt;
  dlpar_error err = {0};
  int stop = 0;
  dlpar_profile_step(t->comm, t->pos.step);
  dlpar_range_push(t->comm, "step");
  dlpar_range_push(t->comm, "data");
  if (loader_next(t->train, &inp, &tgt, &err) != DLPAR_OK)
    train_die(t, true, "%s", err.text);
  dlpar_range_pop(t->comm);
  dlpar_range_push(t->comm, "forward_backward");
  train_check(t, t->net->ops->forward_backward(t->net, inp, tgt), "forward/backward");
  dlpar_range_pop(t->comm);
  loader_release(t->train);
  dlpar_range_push(t->comm, "optimizer");
  train_check(t, t->net->ops->optimizer_step(t->net, train_learning_rate(t, t->pos.step), t->pos.step + 1), "optimizer");
  dlpar_range_pop(t->comm);
  dlpar_range_pop(t->comm);
  t->pos.step++;
  t->pos.step_in_epoch++;
  t->steps_this_run++;
  if (t->steps_this_run == 1 && dlpar_startup_done(t->comm, t->net->stream) != DLPAR_OK)
    train_die(t, true, "start-up telemetry: %s", dlpar_last_error(t->comm));
  step_skew_tick(t);
  log_window(t, e); /* the last step's: done on the device while this one was queued */
  progress_step(t->progress, dlpar_now(),
                &(progress_point){.epoch = t->pos.epoch + 1, .step = t->pos.step_in_epoch,
                                  .steps = loader_steps_per_epoch(t->train), .samples_per_step = c->global_batch_size,
                                  .loss = e->steps ? e->loss_sum / (double)e->steps : NAN});
  if (t->pos.step % c->log_every == 0)
    post_window(t, e);
  if (dlpar_stop_requested(t->comm, t->net->stream, &stop) != 0)
    train_die(t, true, "stop agreement: %s", dlpar_last_error(t->comm));
  if (stop) {
    t->stopped_by_signal = true;
    train_say(t, "dlpar-train: stop agreed (a rank got SIGTERM, SIGUSR1 or SIGINT): checkpointing at step %ld\n",
              t->pos.step);
  }
  if (c->stop_after_iters > 0 && t->steps_this_run >= c->stop_after_iters)
    stop = 1;
  if (stop || (c->checkpoint_every > 0 && t->pos.step % c->checkpoint_every == 0)) {
    flush_windows(t, e); /* the metrics reach the checkpoint's step */
    train_save_checkpoint(t);
  }
  return stop;
}
