/* trainer/train.c: dlpar-train, the training loop.
 *   srun --dl-parallel=MxD dlpar-train --config=NAME FILE.yaml [--key=value ...] [--resume]
 * config -> grid checks -> data (HDF5, prefetch) -> model -> [resume] ->
 * steps: batch -> forward/backward (tp + dp collectives through libdlpar)
 * -> Adam at the cosine schedule's rate -> metrics, stop requests,
 * checkpoints; validation and the tutorial's epoch lines each epoch. */
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
#include <sys/resource.h>
#include <sys/stat.h>

#include "launcher/clock.h"
#include "launcher/dlpar.h"
#include "launcher/status.h"
#include "trainer/checkpoint.h"
#include "trainer/data.h"
#include "trainer/h5util.h"
#include "trainer/metrics.h"
#include "trainer/model.h"
#include "trainer/train_config.h"

typedef enum { DEVICE_AUTO, DEVICE_CPU, DEVICE_CUDA } device_choice;

typedef struct {
  const char *config_name, *config_file, *run;
  char **overrides;
  int noverrides;
  char data_overrides[6][PATH_MAX + 32]; /* --data=DIR, as the keys it stands for */
  bool resume, benchy;
  device_choice device;
} train_args;

typedef struct {
  dlpar_ctx *comm;
  const dlpar_info *info;
  config_set config;
  char config_yaml[16384];
  char run_dir[PATH_MAX];
  float *means, *stds;
  pthread_mutex_t hdf5_lock;
  era5_data train_data, valid_data;
  loader *train, *valid;
  model *net;
  metrics_writer *metrics;
  float *inp_packed, *tgt_packed; /* when a sample holds more channels than in or out */
  checkpoint_position pos;
  long steps_this_run;
  bool on_gpu;
} trainer;

/* Ends the step (after dlpar_init) with one line. An error every rank
 * finds alike is printed by rank 0 alone (dlpar_abort_shared); one that may
 * be this rank's alone (every_rank) by each rank that finds it, with its rank. */
static void __attribute__((noreturn, format(printf, 3, 4))) die(trainer *t, bool every_rank, const char *fmt, ...)
{
  char message[2 * DLPAR_ERRLEN], line[2 * DLPAR_ERRLEN + 64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof(message), fmt, ap);
  va_end(ap);
  if (every_rank && t->info->size > 1)
    snprintf(line, sizeof(line), "dlpar-train: rank %d: %s", t->info->rank, message);
  else
    snprintf(line, sizeof(line), "dlpar-train: %s", message);
  if (every_rank) {
    fprintf(stderr, "%s\n", line);
    dlpar_abort(t->comm, 1, NULL);
  }
  dlpar_abort_shared(t->comm, 1, line);
}

static void say(const trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const trainer *t, const char *fmt, ...)
{
  va_list ap;
  if (t->info->rank != 0)
    return;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

/* ------------------------------------------------------------ arguments */

static void usage(void)
{
  fprintf(stderr, "usage: dlpar-train [--config=NAME] FILE.yaml [--data=DIR] [--KEY=VALUE ...] [--resume]\n"
                  "                   [--run=TAG] [--device=auto|cpu|cuda] [--benchy]\n"
                  "Trains the tutorial's ViT weather model; launch it with srun --dl-parallel=MxD or dlpar-run.\n"
                  "Any config key can be overridden (--lr=1e-3, --img_size=[32,64]); see dlpar-train(1).\n");
}

/* --data=DIR: the tutorial's layout under DIR, as overrides of the path keys. */
static void add_data_overrides(train_args *a, const char *dir)
{
  static const char *const keys[6][2] = {
      {"train_data_path", "train"}, {"valid_data_path", "valid"}, {"inf_data_path", "test"},
      {"global_means_path", "stats/global_means.npy"}, {"global_stds_path", "stats/global_stds.npy"},
      {"time_means_path", "stats/time_means.npy"}};
  for (int k = 0; k < 6; k++) {
    snprintf(a->data_overrides[k], sizeof(a->data_overrides[k]), "--%s=%s/%s", keys[k][0], dir, keys[k][1]);
    a->overrides[a->noverrides++] = a->data_overrides[k];
  }
}

static int parse_args(int argc, char **argv, train_args *a, char *err, size_t errlen)
{
  memset(a, 0, sizeof(*a));
  a->config_name = "base", a->run = "00";
  a->overrides = calloc((size_t)argc + 6, sizeof(char *));
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strncmp(arg, "--data=", 7) == 0 && arg[7])
      add_data_overrides(a, arg + 7);
    else if (strncmp(arg, "--config=", 9) == 0)
      a->config_name = arg + 9;
    else if (strncmp(arg, "--run=", 6) == 0)
      a->run = arg + 6;
    else if (strcmp(arg, "--resume") == 0)
      a->resume = true;
    else if (strcmp(arg, "--benchy") == 0)
      a->benchy = true;
    else if (strcmp(arg, "--device=cpu") == 0)
      a->device = DEVICE_CPU;
    else if (strcmp(arg, "--device=cuda") == 0)
      a->device = DEVICE_CUDA;
    else if (strcmp(arg, "--device=auto") == 0)
      a->device = DEVICE_AUTO;
    else if (strncmp(arg, "--device=", 9) == 0) {
      snprintf(err, errlen, "%s: expected --device=cpu, cuda or auto", arg);
      return DLPAR_ERR_INPUT;
    } else if (strncmp(arg, "--", 2) == 0)
      a->overrides[a->noverrides++] = argv[i];
    else if (!a->config_file)
      a->config_file = arg;
    else {
      snprintf(err, errlen, "%s: one config file only (already %s)", arg, a->config_file);
      return DLPAR_ERR_INPUT;
    }
  }
  if (!a->config_file) {
    snprintf(err, errlen, "no config file (e.g. dlpar-train --config=short etc/vit.yaml)");
    return DLPAR_ERR_INPUT;
  }
  if (!*a->run || strchr(a->run, '/')) {
    snprintf(err, errlen, "--run=%s: a name without '/' (e.g. --run=01)", a->run);
    return DLPAR_ERR_INPUT;
  }
  return DLPAR_OK;
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
      config_to_yaml(c, t->config_yaml, sizeof(t->config_yaml)) != DLPAR_OK)
    die(t, false, "%s", err);
  snprintf(t->run_dir, sizeof(t->run_dir), "%s/%s/%dx%d/%s", c->expdir, c->name, t->info->tp_size, t->info->dp_size,
           a->run);
  if (t->info->rank == 0 && make_dirs(t->run_dir) != 0)
    die(t, false, "%s: cannot create the run directory: %s (check expdir)", t->run_dir, strerror(errno));
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
  const size_t plane = (size_t)c->img_size[0] * c->img_size[1];
  loader_memory memory = batch_memory(t);
  char err[DLPAR_ERRLEN];
  pthread_mutex_init(&t->hdf5_lock, NULL);
  if (era5_load_stats(c->global_means_path, channels, &t->means, err, sizeof(err)) != DLPAR_OK ||
      era5_load_stats(c->global_stds_path, channels, &t->stds, err, sizeof(err)) != DLPAR_OK)
    die(t, true, "%s", err);
  for (int ch = 0; ch < channels; ch++) {
    if (t->stds[ch] <= 0)
      die(t, true, "%s: the std of channel %d is %g (a constant channel cannot be normalised)", c->global_stds_path, ch,
          t->stds[ch]);
  }
  if (era5_open(&t->train_data, c->train_data_path, c, c->limit_nsamples, t->means, t->stds, &t->hdf5_lock, err,
                sizeof(err)) != DLPAR_OK ||
      era5_open(&t->valid_data, c->valid_data_path, c, c->limit_nsamples_val, t->means, t->stds, &t->hdf5_lock, err,
                sizeof(err)) != DLPAR_OK ||
      loader_create(&t->train, &t->train_data, B, t->info->dp_rank, t->info->dp_size, true, c->seed,
                    c->num_data_workers, memory.alloc ? &memory : NULL, err, sizeof(err)) != DLPAR_OK ||
      loader_create(&t->valid, &t->valid_data, B, t->info->dp_rank, t->info->dp_size, false, c->seed, 2, NULL, err,
                    sizeof(err)) != DLPAR_OK)
    die(t, true, "%s", err);
  if (channels != c->n_in_channels || channels != c->n_out_channels) {
    t->inp_packed = malloc(sizeof(float) * (size_t)B * c->n_in_channels * plane);
    t->tgt_packed = malloc(sizeof(float) * (size_t)B * c->n_out_channels * plane);
    if (!t->inp_packed || !t->tgt_packed)
      die(t, true, "out of memory for the batch");
  }
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
      say(t, "dlpar-train: amp_mode applies to --device=cuda; the CPU path computes in fp32\n");
    rc = model_create_cpu(&t->net, c, t->comm, B, err, sizeof(err));
  }
  if (rc != DLPAR_OK)
    die(t, true, "%s", err);
}

/* ------------------------------------------------------------ the loop */

static double learning_rate(const train_config *c, long i)
{
  const double cosine = 0.5 * (1.0 + cos(M_PI * (double)i / c->num_iters));
  if (strcmp(c->lr_schedule, "cosine") != 0)
    return c->lr;
  if (c->warmup > 0)
    return c->lr * fmin((double)(i + 1) / c->warmup, cosine);
  return c->lr * cosine;
}

/* The loader's sample holds max(in, out) channels; the model wants exactly its own. */
static void pack_batch(trainer *t, const float **inp, const float **tgt)
{
  const train_config *c = &t->config.cfg;
  const size_t plane = (size_t)c->img_size[0] * c->img_size[1];
  const int channels = c->n_in_channels > c->n_out_channels ? c->n_in_channels : c->n_out_channels;
  if (!t->inp_packed)
    return;
  for (int b = 0; b < t->net->batch; b++) {
    memcpy(t->inp_packed + (size_t)b * c->n_in_channels * plane, *inp + (size_t)b * channels * plane,
           sizeof(float) * c->n_in_channels * plane);
    memcpy(t->tgt_packed + (size_t)b * c->n_out_channels * plane, *tgt + (size_t)b * channels * plane,
           sizeof(float) * c->n_out_channels * plane);
  }
  *inp = t->inp_packed, *tgt = t->tgt_packed;
}

static void check(trainer *t, int rc, const char *what)
{
  if (rc != DLPAR_OK)
    die(t, true, "%s: %s", what, t->net->error);
}

static void save_checkpoint(trainer *t)
{
  char path[PATH_MAX + 16], err[DLPAR_ERRLEN];
  snprintf(path, sizeof(path), "%s/checkpoint.h5", t->run_dir);
  if (checkpoint_save(t->net, &t->pos, t->config_yaml, path, err, sizeof(err)) != DLPAR_OK)
    die(t, true, "checkpoint: %s", err);
  say(t, "  Saved checkpoint at step %ld: %s\n", t->pos.step, path);
}

/* Train-loss bookkeeping of the current epoch (sums over dp). Every
 * log_every steps the model posts the window since the last one; its line
 * is written a step later, so on a GPU its sums travel while the next step
 * runs and the host never waits for the device it has to keep fed. */
typedef struct {
  double loss_sum;
  long steps;
  double start;
  long posted_step; /* the step whose window is posted, not yet logged; 0: none */
} epoch_progress;

/* The sums since the last post, over dp, now (waits for the device). */
static void metrics_now(trainer *t, model_metrics *m)
{
  check(t, t->net->ops->post_metrics(t->net), "metrics");
  check(t, t->net->ops->take_metrics(t->net, m), "metrics");
}

static void post_window(trainer *t, epoch_progress *e)
{
  check(t, t->net->ops->post_metrics(t->net), "metrics");
  e->posted_step = t->pos.step;
}

/* The posted window, if any: into the epoch's sums, and its step line
 * (loss averaged over the window's steps and over dp). */
static void log_window(trainer *t, epoch_progress *e)
{
  model_metrics m;
  if (!e->posted_step)
    return;
  check(t, t->net->ops->take_metrics(t->net, &m), "metrics");
  e->loss_sum += m.train_loss_sum, e->steps += m.train_steps;
  if (t->metrics && m.train_steps > 0 &&
      metrics_step(t->metrics, e->posted_step, m.train_loss_sum / (double)m.train_steps,
                   learning_rate(&t->config.cfg, e->posted_step - 1)) != 0)
    die(t, false, "%s: cannot append to metrics.jsonl (disk full?)", t->run_dir);
  e->posted_step = 0;
}

/* Every step so far logged: before validation, a checkpoint or the end. */
static void flush_windows(trainer *t, epoch_progress *e)
{
  log_window(t, e);
  post_window(t, e);
  log_window(t, e);
}

/* One optimizer step; returns 1 when the run should end after it (a stop
 * request agreed by all ranks, or stop_after_iters). */
static int train_step(trainer *t, epoch_progress *e)
{
  const train_config *c = &t->config.cfg;
  const float *inp, *tgt;
  char err[DLPAR_ERRLEN];
  int stop = 0;
  dlpar_profile_step(t->comm, t->pos.step);
  dlpar_range_push(t->comm, "step");
  dlpar_range_push(t->comm, "data");
  if (loader_next(t->train, &inp, &tgt, err, sizeof(err)) != DLPAR_OK)
    die(t, true, "%s", err);
  pack_batch(t, &inp, &tgt);
  dlpar_range_pop(t->comm);
  dlpar_range_push(t->comm, "forward_backward");
  check(t, t->net->ops->forward_backward(t->net, inp, tgt), "forward/backward");
  dlpar_range_pop(t->comm);
  loader_release(t->train);
  dlpar_range_push(t->comm, "optimizer");
  check(t, t->net->ops->optimizer_step(t->net, learning_rate(c, t->pos.step), t->pos.step + 1), "optimizer");
  dlpar_range_pop(t->comm);
  dlpar_range_pop(t->comm);
  t->pos.step++, t->pos.step_in_epoch++, t->steps_this_run++;
  log_window(t, e); /* the last step's: done on the device while this one was queued */
  if (t->pos.step % c->log_every == 0)
    post_window(t, e);
  if (dlpar_stop_requested(t->comm, t->net->stream, &stop) != 0)
    die(t, true, "stop agreement: %s", dlpar_last_error(t->comm));
  if (stop)
    say(t, "dlpar-train: stop requested (SIGTERM): checkpointing at step %ld\n", t->pos.step);
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
      die(t, true, "%s", err);
    pack_batch(t, &inp, &tgt);
    check(t, t->net->ops->evaluate(t->net, inp, tgt), "validation");
    loader_release(t->valid);
  }
  metrics_now(t, &m);
  *val_loss = m.val_loss_sum / (double)m.val_samples;
  *val_rmse = m.val_rmse_sum / (double)m.val_samples;
}

static void end_epoch(trainer *t, epoch_progress *e, long steps_done)
{
  const train_config *c = &t->config.cfg;
  epoch_summary s = {.epoch = t->pos.epoch + 1, .step = t->pos.step, .lr = learning_rate(c, t->pos.step - 1)};
  double val_start;
  flush_windows(t, e); /* the steps since the last line */
  s.epoch_seconds = dlpar_now() - e->start;
  s.train_loss = e->loss_sum / (double)e->steps;
  s.samples_per_sec = (double)steps_done * c->global_batch_size / s.epoch_seconds;
  s.data_wait_seconds = loader_wait_seconds(t->train);
  s.peak_memory_gb = (double)t->net->ops->peak_memory(t->net) / 1e9;
  val_start = dlpar_now();
  validate(t, &s.val_loss, &s.val_rmse_u10m);
  s.validation_seconds = dlpar_now() - val_start;
  say(t, "Time taken for epoch %ld is %.3f sec, avg %.2f samples/sec, peak memory %.3f GB/rank\n", s.epoch,
      s.epoch_seconds, s.samples_per_sec, s.peak_memory_gb);
  say(t, "  Avg train loss=%f\n", s.train_loss);
  say(t, "  Avg val loss=%f\n", s.val_loss);
  say(t, "  Avg val RMSE(u10m)=%f\n", s.val_rmse_u10m);
  say(t, "  Total validation time: %.3f sec\n", s.validation_seconds);
  if (t->metrics && metrics_epoch(t->metrics, &s) != 0)
    die(t, false, "%s: cannot write the metrics (disk full?)", t->run_dir);
}

/* Until num_iters steps, a stop request or stop_after_iters. */
static void train(trainer *t)
{
  const train_config *c = &t->config.cfg;
  const long steps_per_epoch = loader_steps_per_epoch(t->train);
  bool saved = false;
  loader_start(t->train, t->pos.epoch, t->pos.step_in_epoch, c->num_iters - t->pos.step);
  while (t->pos.step < c->num_iters) {
    epoch_progress e = {.start = dlpar_now()};
    const long first = t->pos.step_in_epoch;
    int stop = 0;
    while (!stop && t->pos.step_in_epoch < steps_per_epoch && t->pos.step < c->num_iters)
      stop = train_step(t, &e);
    if (stop) {
      saved = true;
      break;
    }
    end_epoch(t, &e, t->pos.step_in_epoch - first);
    if (t->pos.step_in_epoch == steps_per_epoch) {
      t->pos.epoch++;
      t->pos.step_in_epoch = 0;
    }
  }
  if (!saved && !(c->checkpoint_every > 0 && t->pos.step % c->checkpoint_every == 0))
    save_checkpoint(t);
}

/* ------------------------------------------------------------ benchy */

/* Waits for this rank's device (the host allreduce waits for its stream),
 * then for every rank; returns the mean of `seconds`. */
static double synchronize(trainer *t, double seconds)
{
  check(t, t->net->ops->host_allreduce(t->net, DLPAR_WORLD, &seconds, 1), "benchy");
  return seconds / t->info->size;
}

/* The SC22 tutorial's benchy: the loader alone (IO), compute on one batch
 * kept where the model computes (SYNTHETIC), and both (FULL), after a few
 * warm-up steps; samples/s of the global batch. */
static void benchy(trainer *t)
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
      die(t, true, "%s", err);
    if (i + 1 < warmup + steps)
      loader_release(t->train);
  }
  io = synchronize(t, dlpar_now() - start);
  pack_batch(t, &inp, &tgt);
  check(t, t->net->ops->forward_backward(t->net, inp, tgt), "forward/backward"); /* stage it */
  loader_release(t->train);
  for (long i = 0; i < warmup + steps; i++) {
    if (i == warmup)
      synchronize(t, 0), start = dlpar_now();
    check(t, t->net->ops->forward_backward(t->net, NULL, NULL), "forward/backward");
    check(t, t->net->ops->optimizer_step(t->net, c->lr, i + 1), "optimizer");
  }
  synthetic = synchronize(t, dlpar_now() - start);
  metrics_now(t, &synthetic_sums); /* dropped: SYNTHETIC's sums stay out of FULL's lines */
  loader_start(t->train, 0, 0, warmup + steps);
  t->pos.step = t->pos.step_in_epoch = 0;
  for (long i = 0; i < warmup + steps; i++) {
    if (i == warmup)
      synchronize(t, 0), start = dlpar_now();
    train_step(t, &e);
  }
  full = synchronize(t, dlpar_now() - start);
  flush_windows(t, &e);
  getrusage(RUSAGE_SELF, &usage);
  say(t, "benchy: %ld steps of %d samples after %ld warm-up: IO %.2f samples/s, SYNTHETIC %.2f samples/s, FULL %.2f "
      "samples/s, FULL/SYNTHETIC %.3f, model memory %.3f GB/rank, peak RSS %.1f MB\n", steps, c->global_batch_size,
      warmup, samples / io, samples / synthetic, samples / full, synthetic / full,
      (double)t->net->ops->peak_memory(t->net) / 1e9, usage.ru_maxrss / 1024.0);
}

/* ------------------------------------------------------------ main */

static void resume(trainer *t)
{
  char path[PATH_MAX + 16], err[DLPAR_ERRLEN];
  snprintf(path, sizeof(path), "%s/checkpoint.h5", t->run_dir);
  if (checkpoint_load(t->net, &t->pos, path, err, sizeof(err)) != DLPAR_OK)
    die(t, true, "--resume: %s", err);
  if (checkpoint_check_position(&t->pos, t->config.cfg.num_iters, loader_steps_per_epoch(t->train), path, err,
                                sizeof(err)) != DLPAR_OK)
    die(t, false, "--resume: %s", err);
  if (t->pos.seed != t->config.cfg.seed)
    die(t, false, "--resume: %s was written with seed %ld, the config has %ld (resume with the same seed)", path,
        t->pos.seed, t->config.cfg.seed);
  say(t, "dlpar-train: resumed from %s at step %ld (epoch %ld, step %ld of it)\n", path, t->pos.step,
      t->pos.epoch + 1, t->pos.step_in_epoch);
}

static void banner(const trainer *t)
{
  const train_config *c = &t->config.cfg;
  const int N = (c->img_size[0] / c->patch_size) * (c->img_size[1] / c->patch_size);
  say(t, "dlpar-train: config '%s' of %s: %dx%d images, patch %d (%d tokens), embed %d, depth %d, %d heads\n",
      c->name, c->file, c->img_size[0], c->img_size[1], c->patch_size, N, c->embed_dim, c->depth, c->num_heads);
  say(t, "dlpar-train: grid %dx%d (tensor x data parallel) on %d node(s), backend %s, global batch %d (%d per rank), "
      "%ld steps of %ld per epoch, %d threads per rank\n", t->info->tp_size, t->info->dp_size, t->info->nnodes,
      dlpar_backend_name(t->info->backend), c->global_batch_size, t->net->batch, (long)c->num_iters,
      loader_steps_per_epoch(t->train), omp_get_max_threads());
  say(t, "dlpar-train: writing to %s\n", t->run_dir);
}

static void teardown(trainer *t)
{
  metrics_close(t->metrics);
  loader_destroy(t->train);
  loader_destroy(t->valid);
  era5_close(&t->train_data);
  era5_close(&t->valid_data);
  if (t->net)
    t->net->ops->destroy(t->net);
  free(t->means);
  free(t->stds);
  free(t->inp_packed);
  free(t->tgt_packed);
}

int main(int argc, char **argv)
{
  trainer t;
  train_args args;
  dlpar_options options = {0};
  char err[DLPAR_ERRLEN];
  int threads;
  memset(&t, 0, sizeof(t));
  h5_quiet();
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    usage();
    return 0;
  }
  if (parse_args(argc, argv, &args, err, sizeof(err)) != DLPAR_OK) {
    fprintf(stderr, "dlpar-train: %s\n", err);
    return 2;
  }
  options.backend = args.device == DEVICE_CPU ? DLPAR_BACKEND_MPI : args.device == DEVICE_CUDA ? DLPAR_BACKEND_NCCL
                                                                                               : DLPAR_BACKEND_AUTO;
  if (dlpar_init(argc, argv, &options, &t.comm) != 0) {
    fprintf(stderr, "dlpar-train: %s\n", dlpar_last_error(t.comm));
    return 1;
  }
  t.info = dlpar_get_info(t.comm);
  t.on_gpu = args.device == DEVICE_CUDA || (args.device == DEVICE_AUTO && t.info->backend == DLPAR_BACKEND_NCCL);
#ifndef HAVE_CUDA
  if (args.device == DEVICE_CUDA)
    die(&t, false, "--device=cuda: this dlpar-train was built without CUDA (configure --with-cuda)");
#endif
  threads = choose_threads(t.info);
  omp_set_num_threads(threads);
  openblas_set_num_threads(1); /* the kernels run BLAS inside their own OpenMP threads */
  setup_config(&t, &args);
  setup_data(&t);
  setup_model(&t);
  if (args.resume)
    resume(&t);
  if (t.info->rank == 0 && metrics_open(&t.metrics, t.run_dir, err, sizeof(err)) != DLPAR_OK)
    die(&t, false, "%s", err);
  banner(&t);
  if (args.benchy)
    benchy(&t);
  else
    train(&t);
  say(&t, "dlpar-train: done at step %ld\n", t.pos.step);
  teardown(&t);
  free(args.overrides);
  return dlpar_finalize(t.comm) == DLPAR_OK ? 0 : 1;
}
