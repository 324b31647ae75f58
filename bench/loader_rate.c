/* SPDX-License-Identifier: BSD-3-Clause */
/* bench/loader_rate.c: dlpar's loader alone (trainer/data/data.c), the dlpar
 * side of bench/loader-vs-torch (a PyTorch DataLoader over h5py reading the
 * same files, bench/torch_loader.py, is the anchor):
 *   dlpar-loader-rate DIR CHANNELS HEIGHT WIDTH BATCH DEPTH WARMUP BATCHES
 * reads DIR/train's files (DIR/stats' means and stds) as dlpar-train does:
 * CHANNELS in and out, HEIGHT x WIDTH, dt 1, shuffled batches of BATCH
 * samples, DEPTH batches ahead (num_data_workers), the reader threads
 * DLPAR_DATA_READERS or the default; WARMUP batches, then BATCHES timed.
 * One line of key=value: readers, depth, samples, seconds, samples/s, GB/s
 * (input and target as the model takes them), CPU seconds a sample (every
 * thread of the process) and the readers' summed read, normalise and idle
 * seconds over the timed batches. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "common/clock.h"
#include "common/status.h"
#include "common/text.h"
#include "trainer/data/data.h"
#include "trainer/data/h5util.h"

typedef struct {
  const char *dir;
  long channels, height, width, batch, depth, warmup, batches;
} rate_args;

static int parse(int argc, char **argv, rate_args *a)
{
  long *const values[7] = {&a->channels, &a->height, &a->width, &a->batch, &a->depth, &a->warmup, &a->batches};
  static const long low[7] = {1, 1, 1, 1, 0, 0, 1};
  if (argc != 9)
    return DLPAR_ERR_INPUT;
  a->dir = argv[1];
  for (int i = 0; i < 7; i++)
    if (dlpar_parse_int(argv[i + 2], low[i], 1L << 20, values[i]) != 0)
      return DLPAR_ERR_INPUT;
  return DLPAR_OK;
}

static double cpu_seconds(void)
{
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return (double)usage.ru_utime.tv_sec + (double)usage.ru_stime.tv_sec +
         1e-6 * (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

/* WARMUP batches, then BATCHES timed; the line. */
static int measure(loader *l, const era5_data *data, const rate_args *a, dlpar_error *err)
{
  const double sample_bytes = (double)sizeof(float) * 2.0 * (double)(a->channels * a->height * a->width);
  const float *inp, *tgt;
  loader_stats before = {0}, after;
  double start = 0, cpu = 0, seconds;
  int rc = DLPAR_OK;
  loader_start(l, 0, 0, -1);
  for (long i = 0; i < a->warmup + a->batches && rc == DLPAR_OK; i++) {
    if (i == a->warmup) {
      loader_get_stats(l, &before);
      cpu = cpu_seconds();
      start = dlpar_now();
    }
    rc = loader_next(l, &inp, &tgt, err);
    loader_release(l);
  }
  if (rc != DLPAR_OK)
    return rc;
  seconds = dlpar_now() - start;
  cpu = cpu_seconds() - cpu;
  loader_get_stats(l, &after);
  printf("dlpar-loader-rate: files=%d readers=%d depth=%d samples=%ld seconds=%.4f samples_per_s=%.3f "
         "gb_per_s=%.4f cpu_s_per_sample=%.5f read_s=%.3f normalise_s=%.3f idle_s=%.3f\n", data->nfiles,
         after.readers, after.depth, a->batches * a->batch, seconds, (double)(a->batches * a->batch) / seconds,
         (double)(a->batches * a->batch) * sample_bytes / seconds / 1e9, cpu / (double)(a->batches * a->batch),
         after.seconds.read - before.seconds.read, after.seconds.normalise - before.seconds.normalise,
         after.idle_seconds - before.idle_seconds);
  return DLPAR_OK;
}

int main(int argc, char **argv)
{
  pthread_mutex_t hdf5_lock = PTHREAD_MUTEX_INITIALIZER;
  char path[4096];
  dlpar_error err = {0};
  float *means = NULL, *stds = NULL;
  train_config cfg = {0};
  era5_data data = {0};
  loader *l = NULL;
  rate_args a;
  int rc;
  h5_quiet();
  if (parse(argc, argv, &a) != DLPAR_OK) {
    fprintf(stderr, "usage: dlpar-loader-rate DIR CHANNELS HEIGHT WIDTH BATCH DEPTH WARMUP BATCHES (whole numbers; "
            "DIR has train/ and stats/ as dlpar-gen-data writes them)\n");
    return 2;
  }
  cfg.n_in_channels = cfg.n_out_channels = (int)a.channels;
  cfg.img_size[0] = (int)a.height;
  cfg.img_size[1] = (int)a.width;
  cfg.dt = 1;
  snprintf(path, sizeof(path), "%s/stats/global_means.npy", a.dir);
  if ((rc = era5_load_stats(path, (int)a.channels, &means, &err)) == DLPAR_OK) {
    snprintf(path, sizeof(path), "%s/stats/global_stds.npy", a.dir);
    rc = era5_load_stats(path, (int)a.channels, &stds, &err);
  }
  snprintf(path, sizeof(path), "%s/train", a.dir);
  if (rc == DLPAR_OK && (rc = era5_open(&data, path, &cfg, -1, means, stds, &hdf5_lock, &err)) == DLPAR_OK &&
      (rc = loader_create(&l, &data, (int)a.batch, 0, 1, true, 0, (int)a.depth, NULL, &err)) == DLPAR_OK)
    rc = measure(l, &data, &a, &err);
  if (rc != DLPAR_OK)
    fprintf(stderr, "dlpar-loader-rate: %s\n", err.text);
  loader_destroy(l);
  if (data.files)
    era5_close(&data);
  free(means);
  free(stds);
  return rc == DLPAR_OK ? 0 : 1;
}
