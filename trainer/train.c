/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/train.c: dlpar-train, the training loop.
 *   srun --dl-parallel=MxD dlpar-train --config=NAME FILE.yaml [--key=value ...] [--resume]
 * config -> grid checks -> data (HDF5, prefetch) -> model -> [resume] ->
 * steps: batch -> forward/backward (tp + dp collectives through libdlpar)
 * -> Adam at the cosine schedule's rate -> metrics, stop requests,
 * checkpoints; validation and the tutorial's epoch lines each epoch.
 * --benchy runs these steps in benchy.c instead (state and shared steps:
 * train.h). */
#include "config.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "libdlpar/dlpar.h"
#include "common/status.h"
#include "common/text.h"
#include "trainer/args.h"
#include "trainer/checkpoint.h"
#include "trainer/data.h"
#include "trainer/h5util.h"
#include "trainer/metrics.h"
#include "trainer/model.h"
#include "trainer/progress.h"
#include "trainer/train.h"
#include "trainer/train_config.h"

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

/* OpenMP and OpenBLAS threads: OMP_NUM_THREADS, or this rank's CPUs shared
 * with the other ranks of the node. */
static int choose_threads(const dlpar_info *info)
{
  cpu_set_t set;
  const char *env = getenv("OMP_NUM_THREADS");
  int cpus = 1;
  if (env && atoi(env) > 0)
    return atoi(env);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    cpus = CPU_COUNT(&set);
  if (getenv("DLPAR_CPUS") && *getenv("DLPAR_CPUS"))
    return cpus; /* bound by the launcher: the CPUs near this rank's GPU */
  cpus /= info->local_size;
  return cpus > 0 ? cpus : 1;
}

static int make_dirs(const char *path)
{
  char buf[PATH_MAX];
  snprintf(buf, sizeof(buf), "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static void setup_config(trainer *t, const train_args *a)
{
  const train_config *c = &t->config.cfg;
  char err[DLPAR_ERRLEN];
  if (config_load(&t->config, a->config_file, a->config_name, a->overrides, a->noverrides, err, sizeof(err)) != DLPAR_OK ||
      config_check(&t->config, t->info->tp_size, t->info->dp_size, err, sizeof(err)) != DLPAR_OK ||
      config_to_yaml(c, t->config_yaml, sizeof(t->config_yaml), err, sizeof(err)) != DLPAR_OK)
    train_die(t, false, "%s", err);
  snprintf(t->run_dir, sizeof(t->run_dir), "%s/%s/%dx%d/%s", c->expdir, c->name, t->info->tp_size, t->info->dp_size,
           a->run);
  if (t->info->rank == 0 && make_dirs(t->run_dir) != 0)
    train_die(t, false, "%s: cannot create the run directory: %s (check expdir)", dlpar_show(t->run_dir).text,
              strerror(errno));
}

/* Batches in pinned host memory when the model is on a GPU. */
static loader_memory batch_memory(const trainer *t)
{
#ifdef HAVE_CUDA
  if (t->on_gpu)
    return (loader_memory){model_cuda_host_alloc, model_cuda_host_free};
#else
  (void)t;
#endif
  return (loader_memory){NULL, NULL};
}

static void setup_data(trainer *t)
{
  const train_config *c = &t->config.cfg;
  const int channels = c->n_in_channels > c->n_out_channels ? c->n_in_channels : c->n_out_channels;
  const int B = c->global_batch_size / t->info->dp_size;
  loader_memory memory = batch_memory(t);
  char err[DLPAR_ERRLEN];
  pthread_mutex_init(&t->hdf5_lock, NULL);
  if (era5_load_stats(c->global_means_path, channels, &t->means, err, sizeof(err)) != DLPAR_OK ||
      era5_load_stats(c->global_stds_path, channels, &t->stds, err, sizeof(err)) != DLPAR_OK)
    train_die(t, true, "%s", err);
  for (int ch = 0; ch < channels; ch++) {
    if (t->stds[ch] <= 0)
      train_die(t, true, "%s: the std of channel %d is %g (a constant channel cannot be normalised)",
                dlpar_show(c->global_stds_path).text, ch, t->stds[ch]);
  }
  if (era5_open(&t->train_data, c->train_data_path, c, c->limit_nsamples, t->means, t->stds, &t->hdf5_lock, err,
                sizeof(err)) != DLPAR_OK ||
      era5_open(&t->valid_data, c->valid_data_path, c, c->limit_nsamples_val, t->means, t->stds, &t->hdf5_lock, err,
                sizeof(err)) != DLPAR_OK ||
      loader_create(&t->train, &t->train_data, B, t->info->dp_rank, t->info->dp_size, true, c->seed,
                    c->num_data_workers, memory.alloc ? &memory : NULL, err, sizeof(err)) != DLPAR_OK ||
      loader_create(&t->valid, &t->valid_data, B, t->info->dp_rank, t->info->dp_size, false, c->seed, 2, NULL, err,
                    sizeof(err)) != DLPAR_OK)
    train_die(t, true, "%s", err);
}

static void setup_model(trainer *t)
{
  const train_config *c = &t->config.cfg;
  const int B = c->global_batch_size / t->info->dp_size;
  char err[DLPAR_ERRLEN];
  int rc;
#ifdef HAVE_CUDA
  if (t->on_gpu)
    rc = model_create_cuda(&t->net, c, t->comm, B, err, sizeof(err));
  else
#endif
  {
    if (c->amp != AMP_NONE)
      train_say(t, "dlpar-train: amp_mode applies to --device=cuda; the CPU path computes in fp32\n");
    rc = model_create_cpu(&t->net, c, t->comm, B, err, sizeof(err));
  }
  if (rc != DLPAR_OK)
    train_die(t, true, "%s", err);
}

/* ------------------------------------------------------------ the loop */

/* The tutorial's schedule: the rate of step i (0-based) over schedule_steps. */
static double learning_rate(const trainer *t, long i)
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
    train_die(t, true, "%s: %s", what, t->net->error);
}

static void save_checkpoint(trainer *t)
{
  char path[PATH_MAX + 16], err[DLPAR_ERRLEN];
  checkpoint_position pos = t->pos; /* at an epoch's last step: the next epoch's first, as the loader counts */
  snprintf(path, sizeof(path), "%s/checkpoint.h5", t->run_dir);
  loader_position(t->train, &pos.epoch, &pos.step_in_epoch, NULL, 0);
  if (checkpoint_save(t->net, &pos, t->config_yaml, path, err, sizeof(err)) != DLPAR_OK)
    train_die(t, true, "checkpoint: %s", err);
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

/* A window with a non-finite loss or skipped updates (the same on every
 * rank: its sums are over dp, the loss is the tp group's, the skips agreed
 * over tp): within max_skipped_steps a line, else the end of the run, with
 * the last checkpoint left as it is (nothing is saved after this window). */
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

/* The posted window, if any: into the epoch's sums, and its step line
 * (loss averaged over the window's steps and over dp). */
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
  e->loss_sum += m.train_loss_sum, e->steps += m.train_steps;
  t->overflow_steps += m.overflow_steps / t->info->dp_size;
  if (t->metrics && m.train_steps > 0 &&
      metrics_step(t->metrics, e->posted_step, m.train_loss_sum / (double)m.train_steps,
                   learning_rate(t, e->posted_step - 1)) != 0)
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
  k->start = now, k->waited = waited, k->posted_step = t->pos.step;
  if (ready && t->info->rank == 0)
    report_skew(t, posted_step, k->times);
}

int train_step(trainer *t, epoch_progress *e)
{
  const train_config *c = &t->config.cfg;
  const float *inp, *tgt;
  char err[DLPAR_ERRLEN];
  int stop = 0;
  dlpar_profile_step(t->comm, t->pos.step);
  dlpar_range_push(t->comm, "step");
  dlpar_range_push(t->comm, "data");
  if (loader_next(t->train, &inp, &tgt, err, sizeof(err)) != DLPAR_OK)
    train_die(t, true, "%s", err);
  dlpar_range_pop(t->comm);
  dlpar_range_push(t->comm, "forward_backward");
  train_check(t, t->net->ops->forward_backward(t->net, inp, tgt), "forward/backward");
  dlpar_range_pop(t->comm);
  loader_release(t->train);
  dlpar_range_push(t->comm, "optimizer");
  train_check(t, t->net->ops->optimizer_step(t->net, learning_rate(t, t->pos.step), t->pos.step + 1), "optimizer");
  dlpar_range_pop(t->comm);
  dlpar_range_pop(t->comm);
  t->pos.step++, t->pos.step_in_epoch++, t->steps_this_run++;
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
  if (stop)
    train_say(t, "dlpar-train: stop requested (SIGTERM): checkpointing at step %ld\n", t->pos.step);
  if (c->stop_after_iters > 0 && t->steps_this_run >= c->stop_after_iters)
    stop = 1;
  if (stop || (c->checkpoint_every > 0 && t->pos.step % c->checkpoint_every == 0)) {
    flush_windows(t, e); /* the metrics reach the checkpoint's step */
    save_checkpoint(t);
  }
  return stop;
}

/* Validation over the whole validation set: loss and RMSE(u10m), averaged over dp. */
static void validate(trainer *t, double *val_loss, double *val_rmse)
{
  const long steps = loader_steps_per_epoch(t->valid);
  model_metrics m;
  char err[DLPAR_ERRLEN];
  loader_start(t->valid, 0, 0, steps);
  for (long i = 0; i < steps; i++) {
    const float *inp, *tgt;
    if (loader_next(t->valid, &inp, &tgt, err, sizeof(err)) != DLPAR_OK)
      train_die(t, true, "%s", err);
    train_check(t, t->net->ops->evaluate(t->net, inp, tgt), "validation");
    loader_release(t->valid);
  }
  metrics_now(t, &m);
  *val_loss = m.val_loss_sum / (double)m.val_samples;
  *val_rmse = m.val_rmse_sum / (double)m.val_samples;
}

static void end_epoch(trainer *t, epoch_progress *e, long steps_done)
{
  const train_config *c = &t->config.cfg;
  /* 'Learning Rate' as the tutorial logs it: after the scheduler's step */
  epoch_summary s = {.epoch = t->pos.epoch + 1, .step = t->pos.step, .lr = learning_rate(t, t->pos.step)};
  double val_start;
  flush_windows(t, e); /* the steps since the last line */
  s.epoch_seconds = dlpar_now() - e->start;
  s.train_loss = e->loss_sum / (double)e->steps;
  s.iters_per_sec = (double)steps_done / s.epoch_seconds;
  s.samples_per_sec = s.iters_per_sec * c->global_batch_size;
  s.data_wait_seconds = loader_wait_seconds(t->train);
  s.peak_memory_gb = (double)t->net->ops->peak_memory(t->net) / 1e9;
  val_start = dlpar_now();
  validate(t, &s.val_loss, &s.val_rmse_u10m);
  s.validation_seconds = dlpar_now() - val_start;
  train_say(t, "Time taken for epoch %ld is %f sec, avg %f samples/sec\n", s.epoch, s.epoch_seconds, s.samples_per_sec);
  train_say(t, "  Avg train loss=%f\n", s.train_loss);
  train_say(t, "  Avg val loss=%f\n", s.val_loss);
  train_say(t, "  Avg val RMSE(u10m)=%f\n", s.val_rmse_u10m);
  train_say(t, "  Total validation time: %f sec\n", s.validation_seconds);
  train_say(t, "  Peak memory: %.3f GB/rank\n", s.peak_memory_gb);
  if (t->metrics && metrics_epoch(t->metrics, &s) != 0)
    train_die(t, false, "%s: cannot write the metrics (disk full?)", dlpar_show(t->run_dir).text);
}

/* The tutorial's training length: whole epochs, --num_epochs (SC22) or
 * num_iters // steps per epoch (SC23/SC24: train.py's num_epochs); the
 * cosine schedule runs over num_epochs x steps per epoch (SC22's tot_steps)
 * or num_iters (SC23/SC24's T_max). The PyTorch-only keys get their line. */
static void plan_epochs(trainer *t)
{
  const train_config *c = &t->config.cfg;
  const long steps_per_epoch = loader_steps_per_epoch(t->train);
  const char *notes[16];
  const int nnotes = config_notes(c, notes, 16);
  t->epochs = c->num_epochs > 0 ? c->num_epochs : c->num_iters / steps_per_epoch;
  t->schedule_steps = c->num_epochs > 0 ? c->num_epochs * steps_per_epoch : c->num_iters;
  if (t->epochs == 0) {
    train_say(t, "dlpar-train: num_iters=%d is less than one epoch (%ld steps): training 1 epoch (the tutorial would "
        "train none; give --num_epochs N to choose)\n", c->num_iters, steps_per_epoch);
    t->epochs = 1;
  }
  t->total_steps = t->epochs * steps_per_epoch;
  for (int i = 0; i < nnotes; i++)
    train_say(t, "dlpar-train: %s\n", notes[i]);
}

/* --enable_manual_profiling as in the tutorial: rank 0 opens the CUDA
 * profiler range over the fourth epoch (epoch index 3), with NVTX ranges
 * around each step's phases, for `nsys profile -c cudaProfilerApi`. A
 * launcher --dl-profile request takes precedence. */
static void manual_profiling(trainer *t)
{
  const long steps_per_epoch = loader_steps_per_epoch(t->train);
  const long first = 3 * steps_per_epoch, last = 4 * steps_per_epoch - 1;
  if (t->info->rank == 0 && !dlpar_profile_window(t->comm, first, last)) {
    train_say(t, "dlpar-train: enable_manual_profiling: the launcher's --dl-profile request is used instead\n");
    return;
  }
  if (t->epochs < 4)
    train_say(t, "dlpar-train: enable_manual_profiling: the tutorial profiles epoch 4 (steps %ld-%ld) and this run "
        "trains %ld %s: nothing is profiled (train 4 epochs or more, or use --dl-profile-steps)\n", first, last,
        t->epochs, dlpar_plural(t->epochs, "epoch", "epochs"));
  else
    train_say(t, "dlpar-train: enable_manual_profiling: rank 0 profiles epoch 4 (steps %ld-%ld) as the tutorial does: "
        "run it under nsys profile -c cudaProfilerApi\n", first, last);
}

/* The tutorial's step-0 losses: the model before training on the first
 * training batch and the first validation batch (averaged over dp). */
static void initial_losses(trainer *t)
{
  const float *inp, *tgt;
  char err[DLPAR_ERRLEN];
  model_metrics train_m, valid_m;
  loader *loaders[2] = {t->train, t->valid};
  model_metrics *sums[2] = {&train_m, &valid_m};
  for (int k = 0; k < 2; k++) {
    loader_start(loaders[k], 0, 0, 1);
    if (loader_next(loaders[k], &inp, &tgt, err, sizeof(err)) != DLPAR_OK)
      train_die(t, true, "%s", err);
    train_check(t, t->net->ops->evaluate(t->net, inp, tgt), "step-0 losses");
    loader_release(loaders[k]);
    metrics_now(t, sums[k]);
  }
  if (t->metrics && metrics_initial(t->metrics, train_m.val_loss_sum / (double)train_m.val_samples,
                                    valid_m.val_loss_sum / (double)valid_m.val_samples,
                                    valid_m.val_rmse_sum / (double)valid_m.val_samples) != 0)
    train_die(t, false, "%s: cannot write the metrics (disk full?)", dlpar_show(t->run_dir).text);
}

/* Until the tutorial's whole epochs are done, a stop request or stop_after_iters. */
static void train(trainer *t)
{
  const train_config *c = &t->config.cfg;
  const long steps_per_epoch = loader_steps_per_epoch(t->train);
  bool saved = false;
  loader_start(t->train, t->pos.epoch, t->pos.step_in_epoch, t->total_steps - t->pos.step);
  step_skew_start(t);
  while (t->pos.step < t->total_steps) {
    epoch_progress e = {.start = dlpar_now()};
    const long first = t->pos.step_in_epoch;
    int stop = 0;
    while (!stop && t->pos.step_in_epoch < steps_per_epoch && t->pos.step < t->total_steps)
      stop = train_step(t, &e);
    if (stop) {
      saved = true;
      break;
    }
    end_epoch(t, &e, t->pos.step_in_epoch - first);
    loader_position(t->train, &t->pos.epoch, &t->pos.step_in_epoch, NULL, 0);
  }
  if (!saved && !(c->checkpoint_every > 0 && t->pos.step % c->checkpoint_every == 0))
    save_checkpoint(t);
}

/* ------------------------------------------------------------ main */

static void resume(trainer *t)
{
  char path[PATH_MAX + 16], err[DLPAR_ERRLEN];
  snprintf(path, sizeof(path), "%s/checkpoint.h5", t->run_dir);
  if (checkpoint_load(t->net, &t->pos, path, err, sizeof(err)) != DLPAR_OK)
    train_die(t, true, "--resume: %s", err);
  if (checkpoint_check_position(&t->pos, t->total_steps, loader_steps_per_epoch(t->train), path, err,
                                sizeof(err)) != DLPAR_OK)
    train_die(t, false, "--resume: %s", err);
  if (loader_position(t->train, &t->pos.epoch, &t->pos.step_in_epoch, err, sizeof(err)) != DLPAR_OK)
    train_die(t, false, "--resume: %s: %s (the data or limit_nsamples changed since; resume with the same)",
              dlpar_show(path).text, err);
  if (t->pos.seed != t->config.cfg.seed)
    train_die(t, false, "--resume: %s was written with seed %ld, the config has %ld (resume with the same seed)",
              dlpar_show(path).text,
        t->pos.seed, t->config.cfg.seed);
  t->saved_step = t->pos.step;
  train_say(t, "dlpar-train: resumed from %s at step %ld (epoch %ld, step %ld of it)\n", dlpar_show(path).text,
            t->pos.step,
      t->pos.epoch + 1, t->pos.step_in_epoch);
}

static void banner(const trainer *t)
{
  const train_config *c = &t->config.cfg;
  const int N = t->net->dims.N;
  train_say(t, "dlpar-train: config '%s' of %s: %dx%d images, patch %d (%d %s), embed %d, depth %d, %d %s\n",
            dlpar_show(c->name).text, dlpar_show(c->file).text, c->img_size[0], c->img_size[1], c->patch_size, N,
            dlpar_plural(N, "token", "tokens"), c->embed_dim, c->depth, c->num_heads,
            dlpar_plural(c->num_heads, "head", "heads"));
  train_say(t, "dlpar-train: grid %dx%d (tensor x data parallel) on %d %s, backend %s, global batch %d (%d per rank), "
      "%ld %s of %ld %s (%ld %s), %d %s per rank\n", t->info->tp_size, t->info->dp_size, t->info->nnodes,
      dlpar_plural(t->info->nnodes, "node", "nodes"), dlpar_backend_name(t->info->backend), c->global_batch_size,
      t->net->dims.B, t->epochs, dlpar_plural(t->epochs, "epoch", "epochs"), loader_steps_per_epoch(t->train),
      dlpar_plural(loader_steps_per_epoch(t->train), "step", "steps"), t->total_steps,
      dlpar_plural(t->total_steps, "step", "steps"), omp_get_max_threads(),
      dlpar_plural(omp_get_max_threads(), "thread", "threads"));
  train_say(t, "dlpar-train: writing to %s\n", dlpar_show(t->run_dir).text);
}

static void teardown(trainer *t)
{
  metrics_close(t->metrics);
  progress_destroy(t->progress);
  loader_destroy(t->train);
  loader_destroy(t->valid);
  era5_close(&t->train_data);
  era5_close(&t->valid_data);
  if (t->net)
    t->net->ops->destroy(t->net);
  free(t->means);
  free(t->stds);
  free(t->skew.times);
}

int main(int argc, char **argv)
{
  trainer t;
  train_args args;
  dlpar_options options = {0};
  char err[DLPAR_ERRLEN];
  int threads, rc;
  memset(&t, 0, sizeof(t));
  h5_quiet();
  if (args_parse(argc, argv, &args, err, sizeof(err)) != DLPAR_OK || args.help) {
    if (!args.help)
      dlpar_eprintf("dlpar-train: %s\n", err);
    else
      args_usage();
    args_free(&args);
    return args.help ? 0 : 2;
  }
  options.backend = args.device == DEVICE_CPU ? DLPAR_BACKEND_MPI : args.device == DEVICE_CUDA ? DLPAR_BACKEND_NCCL
                                                                                               : DLPAR_BACKEND_AUTO;
  rc = dlpar_init(argc, argv, &options, &t.comm);
  if (rc == DLPAR_DONE || rc == DLPAR_ERR_CHECK) { /* --dl-check: the checks were the run */
    dlpar_finalize(t.comm);
    return rc == DLPAR_DONE ? 0 : 1;
  }
  if (rc != DLPAR_OK) {
    dlpar_eprintf("dlpar-train: %s\n", dlpar_last_error(t.comm));
    return 1;
  }
  t.info = dlpar_get_info(t.comm);
  t.on_gpu = args.device == DEVICE_CUDA || (args.device == DEVICE_AUTO && t.info->backend == DLPAR_BACKEND_NCCL);
#ifndef HAVE_CUDA
  if (args.device == DEVICE_CUDA)
    train_die(&t, false, "--device=cuda: this dlpar-train was built without CUDA (configure --with-cuda)");
#endif
  threads = choose_threads(t.info);
  omp_set_num_threads(threads);
  openblas_set_num_threads(1); /* the kernels run BLAS inside their own OpenMP threads */
  setup_config(&t, &args);
  setup_data(&t);
  setup_model(&t);
  plan_epochs(&t);
  if (args.manual_profiling)
    manual_profiling(&t);
  t.saved_step = -1;
  if (args.resume)
    resume(&t);
  if (t.info->rank == 0 && metrics_open(&t.metrics, t.run_dir, err, sizeof(err)) != DLPAR_OK)
    train_die(&t, false, "%s", err);
  if (t.info->rank == 0 && progress_create(&t.progress, stdout, isatty(STDOUT_FILENO), args.progress_seconds, err,
                                           sizeof(err)) != DLPAR_OK)
    train_die(&t, false, "%s", err);
  banner(&t);
  if (args.benchy)
    benchy(&t);
  else {
    if (t.pos.step == 0)
      initial_losses(&t);
    train(&t);
  }
  if (t.overflow_steps > 0)
    train_say(&t, "dlpar-train: fp16 loss scaling skipped %ld %s (gradients overflowed; the scale halved)\n",
              t.overflow_steps, dlpar_plural(t.overflow_steps, "step", "steps"));
  train_say(&t, "dlpar-train: done at step %ld\n", t.pos.step);
  teardown(&t);
  args_free(&args);
  return dlpar_finalize(t.comm) == DLPAR_OK ? 0 : 1;
}
