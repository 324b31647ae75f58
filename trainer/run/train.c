/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/train.c: dlpar-train, the training loop.
 *   srun --dl-parallel=MxD dlpar-train --config=NAME FILE.yaml [--key=value ...] [--resume]
 * It runs the config, the grid checks, the data from HDF5 with prefetch,
 * the model, an optional resume, and then the steps. Each step takes a
 * batch, runs forward/backward with tp and dp collectives through
 * libdlpar, Adam at the cosine schedule's rate, and then metrics, stop
 * requests and checkpoints. Each epoch adds validation and the tutorial's
 * epoch lines. The step itself is step.c's, declared in step.h, which
 * --benchy in benchy.c runs too. */
#include "config.h"

#include <dirent.h>
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
#include "include/dlpar/dlpar.h"
#include "common/status.h"
#include "common/text.h"
#include "trainer/config/args.h"
#include "trainer/run/checkpoint.h"
#include "trainer/data/data.h"
#include "trainer/data/h5util.h"
#include "trainer/run/metrics.h"
#include "trainer/model/model.h"
#include "trainer/run/progress.h"
#include "trainer/run/benchy.h"
#include "trainer/run/step.h"
#include "trainer/run/train.h"
#include "trainer/config/train_config.h"

/* OpenMP threads are OMP_NUM_THREADS, a whole number, or else this rank's
 * CPUs shared with the other ranks of the node. They are the kernels' one
 * level of threads; OpenBLAS runs one thread inside them, as kernels/cpu
 * sees to. */
static int choose_threads(trainer *t)
{
  const dlpar_info *info = t->info;
  cpu_set_t set;
  const char *env = getenv("OMP_NUM_THREADS");
  long threads = 0;
  int cpus = 1;
  if (env && *env) {
    if (dlpar_parse_int(env, 1, 4096, &threads) != 0)
      train_die(t, true, "OMP_NUM_THREADS=%s: not a whole number of threads from 1 to 4096 (e.g. 8, or unset it)",
                dlpar_show(env).text);
    return (int)threads;
  }
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

/* The config is loaded, checked against the grid, and kept as YAML for the
 * checkpoints. */
static int load_config(trainer *t, const train_args *a, dlpar_error *err)
{
  DLPAR_TRY(config_load(&t->config, a->config_file, a->config_name, a->overrides, a->noverrides, err));
  DLPAR_TRY(config_check(&t->config, t->info->tp_size, t->info->dp_size, err));
  return config_to_yaml(&t->config.cfg, t->config_yaml, sizeof(t->config_yaml), err);
}

static void setup_config(trainer *t, const train_args *a)
{
  const train_config *c = &t->config.cfg;
  dlpar_error err = {0};
  if (load_config(t, a, &err) != DLPAR_OK)
    train_die(t, false, "%s", err.text);
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

/* The normalisation's means and standard deviations of each channel. */
static int load_stats(trainer *t, int channels, dlpar_error *err)
{
  const train_config *c = &t->config.cfg;
  DLPAR_TRY(era5_load_stats(c->global_means_path, channels, &t->means, err));
  return era5_load_stats(c->global_stds_path, channels, &t->stds, err);
}

/* The training and validation data, each with its loader of B samples a
 * rank. The training batches are allocated as `memory` says. */
static int open_data(trainer *t, int B, const loader_memory *memory, dlpar_error *err)
{
  const train_config *c = &t->config.cfg;
  DLPAR_TRY(era5_open(&t->train_data, c->train_data_path, c, c->limit_nsamples, t->means, t->stds, &t->hdf5_lock,
                      err));
  DLPAR_TRY(era5_open(&t->valid_data, c->valid_data_path, c, c->limit_nsamples_val, t->means, t->stds,
                      &t->hdf5_lock, err));
  DLPAR_TRY(loader_create(&t->train, &t->train_data, B, t->info->dp_rank, t->info->dp_size, true, c->seed,
                          c->num_data_workers, memory->alloc ? memory : NULL, err));
  return loader_create(&t->valid, &t->valid_data, B, t->info->dp_rank, t->info->dp_size, false, c->seed, 2, NULL, err);
}

static void setup_data(trainer *t)
{
  const train_config *c = &t->config.cfg;
  const int channels = c->n_in_channels > c->n_out_channels ? c->n_in_channels : c->n_out_channels;
  const int B = c->global_batch_size / t->info->dp_size;
  loader_memory memory = batch_memory(t);
  dlpar_error err = {0};
  pthread_mutex_init(&t->hdf5_lock, NULL);
  if (load_stats(t, channels, &err) != DLPAR_OK)
    train_die(t, true, "%s", err.text);
  for (int ch = 0; ch < channels; ch++) {
    if (t->stds[ch] <= 0)
      train_die(t, true, "%s: the std of channel %d is %g (a constant channel cannot be normalised)",
                dlpar_show(c->global_stds_path).text, ch, t->stds[ch]);
  }
  if (open_data(t, B, &memory, &err) != DLPAR_OK)
    train_die(t, true, "%s", err.text);
}

static void setup_model(trainer *t)
{
  const train_config *c = &t->config.cfg;
  const int B = c->global_batch_size / t->info->dp_size;
  dlpar_error err = {0};
  int rc;
#ifdef HAVE_CUDA
  if (t->on_gpu)
    rc = model_create_cuda(&t->net, c, t->comm, B, &err);
  else
#endif
  {
    if (c->amp != AMP_NONE)
      train_say(t, "dlpar-train: amp_mode applies to --device=cuda; the CPU path computes in fp32\n");
    rc = model_create_cpu(&t->net, c, t->comm, B, &err);
  }
  if (rc != DLPAR_OK)
    train_die(t, true, "%s", err.text);
}

/* ------------------------------------------------------------ the loop */

/* Validation over the whole validation set: loss and RMSE(u10m), averaged over dp. */
static void validate(trainer *t, double *val_loss, double *val_rmse)
{
  const long steps = loader_steps_per_epoch(t->valid);
  model_metrics m;
  dlpar_error err = {0};
  loader_start(t->valid, 0, 0, steps);
  for (long i = 0; i < steps; i++) {
    const float *inp, *tgt;
    if (loader_next(t->valid, &inp, &tgt, &err) != DLPAR_OK)
      train_die(t, true, "%s", err.text);
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
  epoch_summary s = {.epoch = t->pos.epoch + 1, .step = t->pos.step, .lr = train_learning_rate(t, t->pos.step)};
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

/* The tutorial's training length is whole epochs. SC22 gives them as
 * --num_epochs, and SC23 and SC24 as num_iters // steps per epoch, which is
 * train.py's num_epochs. The cosine schedule runs over num_epochs x steps
 * per epoch, SC22's tot_steps, or over num_iters, SC23's and SC24's T_max.
 * The PyTorch-only keys get their line. */
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

/* --enable_manual_profiling works as in the tutorial: rank 0 opens the CUDA
 * profiler range over the fourth epoch, epoch index 3, with NVTX ranges
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
 * training batch and the first validation batch, averaged over dp. */
static void initial_losses(trainer *t)
{
  const float *inp, *tgt;
  dlpar_error err = {0};
  model_metrics train_m, valid_m;
  loader *loaders[2] = {t->train, t->valid};
  model_metrics *sums[2] = {&train_m, &valid_m};
  for (int k = 0; k < 2; k++) {
    loader_start(loaders[k], 0, 0, 1);
    if (loader_next(loaders[k], &inp, &tgt, &err) != DLPAR_OK)
      train_die(t, true, "%s", err.text);
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
    loader_position(t->train, &t->pos.epoch, &t->pos.step_in_epoch, NULL);
  }
  if (!saved && !(c->checkpoint_every > 0 && t->pos.step % c->checkpoint_every == 0))
    train_save_checkpoint(t);
}

/* ------------------------------------------------------------ main */

static void resume(trainer *t, const char *path)
{
  dlpar_error err = {0};
  if (checkpoint_load(t->net, &t->pos, path, &err) != DLPAR_OK)
    train_die(t, true, "--resume: %s", err.text);
  if (checkpoint_check_position(&t->pos, t->total_steps, loader_steps_per_epoch(t->train), path, &err) != DLPAR_OK)
    train_die(t, false, "--resume: %s", err.text);
  if (loader_position(t->train, &t->pos.epoch, &t->pos.step_in_epoch, &err) != DLPAR_OK)
    train_die(t, false, "--resume: %s: %s (the data or limit_nsamples changed since; resume with the same)",
              dlpar_show(path).text, err.text);
  if (t->pos.seed != t->config.cfg.seed)
    train_die(t, false, "--resume: %s was written with seed %ld, the config has %ld (resume with the same seed)",
              dlpar_show(path).text,
        t->pos.seed, t->config.cfg.seed);
  t->saved_step = t->pos.step;
  train_say(t, "dlpar-train: resumed from %s at step %ld (epoch %ld, step %ld of it)\n", dlpar_show(path).text,
            t->pos.step,
      t->pos.epoch + 1, t->pos.step_in_epoch);
}

/* The run's newest checkpoint at this tensor-parallel size and any
 * data-parallel size, into PATH, which is empty when there is none. */
static void newest_checkpoint(const trainer *t, const char *run, char *path, size_t len)
{
  char dir[PATH_MAX], candidate[2 * PATH_MAX];
  struct timespec newest = {0};
  const struct dirent *grid;
  struct stat st;
  DIR *grids;
  int m, d, end;
  path[0] = '\0';
  snprintf(dir, sizeof(dir), "%s/%s", t->config.cfg.expdir, t->config.cfg.name);
  if (!(grids = opendir(dir)))
    return;
  while ((grid = readdir(grids))) {
    end = 0;
    if (sscanf(grid->d_name, "%dx%d%n", &m, &d, &end) != 2 || grid->d_name[end] != '\0' || m != t->info->tp_size)
      continue;
    snprintf(candidate, sizeof(candidate), "%s/%s/%s/checkpoint.h5", dir, grid->d_name, run);
    if (stat(candidate, &st) != 0 || !S_ISREG(st.st_mode) || access(candidate, R_OK) != 0)
      continue;
    if (path[0] && (st.st_mtim.tv_sec < newest.tv_sec ||
                    (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec <= newest.tv_nsec)))
      continue;
    newest = st.st_mtim;
    snprintf(path, len, "%s", candidate);
  }
  closedir(grids);
}

/* The checkpoint that a step dlpar-restart started again resumes from, into
 * PATH. Such a step has DLPAR_RESTART 1 or more. It is the run's newest
 * checkpoint at this tensor-parallel size and any data-parallel size,
 * because without a spare node dlpar-restart shrinks D. The global batch,
 * and so each step's samples, stay. Each rank looks for itself, since the
 * attempt before wrote the checkpoint and ended before this one began.
 * False when there is none. */
static bool restart_checkpoint(const trainer *t, const char *run, char *path, size_t len)
{
  const char *attempt = getenv("DLPAR_RESTART");
  if (!attempt || atoi(attempt) <= 0)
    return false;
  newest_checkpoint(t, run, path, len);
  return path[0] != '\0';
}

static void banner(const trainer *t)
{
  const train_config *c = &t->config.cfg;
  const int N = t->net->dims.N;
  loader_stats data;
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
  loader_get_stats(t->train, &data);
  train_say(t, "dlpar-train: loader: %d reader %s (DLPAR_DATA_READERS), %d %s ahead (num_data_workers)\n",
            data.readers, dlpar_plural(data.readers, "thread", "threads"), data.depth,
            dlpar_plural(data.depth, "batch", "batches"));
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
  dlpar_error err = {0};
  char checkpoint[2 * PATH_MAX];
  int threads, rc, exit_code;
  memset(&t, 0, sizeof(t));
  h5_quiet();
  if (args_parse(argc, argv, &args, &err) != DLPAR_OK || args.help) {
    if (!args.help)
      dlpar_eprintf("dlpar-train: %s\n", err.text);
    else
      args_usage();
    args_free(&args);
    return args.help ? 0 : 2;
  }
  options.backend = args.device == DEVICE_CPU ? DLPAR_BACKEND_MPI : args.device == DEVICE_CUDA ? DLPAR_BACKEND_NCCL
                                                                                               : DLPAR_BACKEND_AUTO;
  rc = dlpar_init(argc, argv, &options, &t.comm);
  if ((exit_code = dlpar_check_ended(rc, t.comm)) >= 0)
    return exit_code;
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
  threads = choose_threads(&t);
  omp_set_num_threads(threads);
  setup_config(&t, &args);
  setup_data(&t);
  setup_model(&t);
  plan_epochs(&t);
  if (args.manual_profiling)
    manual_profiling(&t);
  t.saved_step = -1;
  if (args.resume) {
    snprintf(checkpoint, sizeof(checkpoint), "%s/checkpoint.h5", t.run_dir);
    resume(&t, checkpoint);
  } else if (restart_checkpoint(&t, args.run, checkpoint, sizeof(checkpoint)))
    resume(&t, checkpoint);
  if (t.info->rank == 0 && metrics_open(&t.metrics, t.run_dir, &err) != DLPAR_OK)
    train_die(&t, false, "%s", err.text);
  if (t.info->rank == 0 &&
      progress_create(&t.progress, stdout, isatty(STDOUT_FILENO), args.progress_seconds, &err) != DLPAR_OK)
    train_die(&t, false, "%s", err.text);
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
  if (t.stopped_by_signal)
    train_say(&t, "dlpar-train: stopped at step %ld, more to do (exit %d)\n", t.pos.step, DLPAR_EXIT_STOPPED);
  else
    train_say(&t, "dlpar-train: done at step %ld\n", t.pos.step);
  teardown(&t);
  args_free(&args);
  if (dlpar_finalize(t.comm) != DLPAR_OK)
    return 1;
  return t.stopped_by_signal ? DLPAR_EXIT_STOPPED : 0;
}
