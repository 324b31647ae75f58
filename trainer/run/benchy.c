/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/benchy.c: dlpar-train --benchy, the SC22 tutorial's benchmark.
 * IO runs the loader alone, SYNTHETIC computes on one batch kept where the
 * model computes, and FULL runs both. Each is given in samples/s of the
 * global batch, and runs the training loop's own steps from step.h. Then
 * it shows where the loader's time went, its readers' stages in GB/s and
 * host-to-device on a GPU, beside what this node does alone with pread
 * and memcpy. */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "common/clock.h"
#include "common/status.h"
#include "common/text.h"
#include "trainer/run/benchy.h"
#include "trainer/run/step.h"
#include "trainer/run/train.h"

enum { ANCHOR_FILE_BYTES = 1 << 30 }; /* the pread anchor reads at most this much of the file */

/* What the node does alone at start-up, each from one thread, in GB/s.
 * pread reads up to 1 GiB of the first training file in the readers'
 * piece size into one buffer, as they do, and from the page cache if it is
 * warm. memcpy copies a batch-sized buffer. Host-to-device copies one
 * batch from pinned memory, and is 0 without a GPU. */
typedef struct {
  double pread, memcpy, h2d;
} node_rates;

static int pread_rate(const era5_data *d, double *rate, dlpar_error *err)
{
  const size_t piece = sizeof(float) * d->stage_floats;
  char *buf = malloc(piece);
  struct stat st;
  long long done = 0, total;
  double start;
  int fd = open(d->files[0], O_RDONLY | O_CLOEXEC), rc = DLPAR_OK;
  if (!buf || fd < 0 || fstat(fd, &st) != 0) {
    rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "benchy: %s: cannot read it for the pread anchor (check the file)",
                         dlpar_show(d->files[0]).text);
    goto out;
  }
  total = st.st_size < ANCHOR_FILE_BYTES ? (long long)st.st_size : ANCHOR_FILE_BYTES;
  start = dlpar_now();
  while (done < total) {
    const ssize_t got = pread(fd, buf, piece, (off_t)done);
    if (got <= 0) {
      rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "benchy: %s: the pread anchor stopped at byte %lld of %lld (check "
                           "the file)", dlpar_show(d->files[0]).text, done, total);
      goto out;
    }
    done += got;
  }
  *rate = (double)total / (dlpar_now() - start) / 1e9;
out:
  if (fd >= 0)
    close(fd);
  free(buf);
  return rc;
}

/* memcpy of `bytes` between two buffers touched first, mean of 3. */
static int memcpy_rate(size_t bytes, double *rate, dlpar_error *err)
{
  char *src = malloc(bytes), *dst = malloc(bytes);
  double start;
  int rc = DLPAR_OK;
  if (!src || !dst) {
    rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "benchy: out of memory for two batches of %.3f GB (the memcpy anchor)",
                         (double)bytes / 1e9);
    goto out;
  }
  memset(src, 1, bytes);
  memset(dst, 0, bytes);
  start = dlpar_now();
  for (int i = 0; i < 3; i++)
    memcpy(dst, src, bytes);
  *rate = 3.0 * (double)bytes / (dlpar_now() - start) / 1e9;
  if (dst[bytes - 1] != 1) /* the copies happened */
    rc = DLPAR_ERR_SYSTEM;
out:
  free(src);
  free(dst);
  return rc;
}

#ifdef HAVE_CUDA
/* Host-to-device of one batch from pinned memory of the loader's slots'
 * kind, from model_cuda_host_alloc. It is the mean of 3 after one warm-up. */
static int h2d_rate(size_t bytes, double *rate, dlpar_error *err)
{
  void *host = model_cuda_host_alloc(bytes), *dev = NULL;
  cudaError_t e = host ? cudaMalloc(&dev, bytes) : cudaErrorMemoryAllocation;
  double start = 0;
  for (int i = 0; i < 4 && e == cudaSuccess; i++) {
    if (i == 1)
      start = dlpar_now();
    if ((e = cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice)) == cudaSuccess)
      e = cudaDeviceSynchronize();
  }
  if (e == cudaSuccess)
    *rate = 3.0 * (double)bytes / (dlpar_now() - start) / 1e9;
  else
    dlpar_error_set(err, DLPAR_ERR_SYSTEM, "benchy: host-to-device copies of one batch (%.3f GB): %s (free device "
                    "memory, or run without --benchy)", (double)bytes / 1e9, cudaGetErrorString(e));
  cudaFree(dev);
  if (host)
    model_cuda_host_free(host);
  return e == cudaSuccess ? DLPAR_OK : DLPAR_ERR_SYSTEM;
}
#endif

static int measure_node(const trainer *t, node_rates *r, dlpar_error *err)
{
  const era5_data *d = &t->train_data;
  const size_t batch_bytes = sizeof(float) * (size_t)t->net->dims.B * (size_t)(d->in_channels + d->out_channels) *
                             (size_t)d->height * (size_t)d->width;
  r->h2d = 0;
  DLPAR_TRY(pread_rate(d, &r->pread, err));
  DLPAR_TRY(memcpy_rate(batch_bytes, &r->memcpy, err));
#ifdef HAVE_CUDA
  if (t->on_gpu)
    return h2d_rate(batch_bytes, &r->h2d, err);
#endif
  return DLPAR_OK;
}

/* The second line shows this rank's readers over its IO phase beside the
 * node's own rates. The phase read `steps` batches in io_seconds, and the
 * stats are taken before and after it. */
static void say_loader(const trainer *t, const loader_stats *before, const loader_stats *after, long steps,
                       double io_seconds, const node_rates *node)
{
  const era5_data *d = &t->train_data;
  const double sample_bytes = (double)sizeof(float) * (double)(d->in_channels + d->out_channels) * d->height * d->width;
  const double reader_seconds = io_seconds * after->readers, bytes = after->bytes - before->bytes;
  const double read = after->seconds.read - before->seconds.read;
  const double normalise = after->seconds.normalise - before->seconds.normalise;
  const double idle = after->idle_seconds - before->idle_seconds;
  char h2d[64];
  if (node->h2d > 0)
    snprintf(h2d, sizeof(h2d), "%.2f GB/s", node->h2d);
  else
    snprintf(h2d, sizeof(h2d), "none (CPU model)");
  train_say(t, "benchy: loader: %d %s, %d %s ahead: IO %.2f GB/s per rank; per reader: read %.2f GB/s (%.0f%% of its "
      "time), normalise into the batch slot %.2f GB/s (%.0f%%), idle %.0f%%; host-to-device %s; node, one thread: "
      "pread %.2f GB/s, memcpy %.2f GB/s\n", after->readers, dlpar_plural(after->readers, "reader", "readers"),
      after->depth, dlpar_plural(after->depth, "batch", "batches"),
      (double)steps * t->net->dims.B * sample_bytes / io_seconds / 1e9, bytes / read / 1e9, 100 * read / reader_seconds,
      bytes / normalise / 1e9, 100 * normalise / reader_seconds, 100 * idle / reader_seconds, h2d, node->pread,
      node->memcpy);
}

/* Waits for this rank's device, as a host allreduce does, then for every
 * rank, and returns the mean of `seconds`. */
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
  dlpar_error err = {0};
  double start = 0, io_rank, io, synthetic, full;
  model_metrics synthetic_sums;
  struct rusage usage;
  epoch_progress e = {.start = 0};
  node_rates node = {0};
  loader_stats before, after;
  if (measure_node(t, &node, &err) != DLPAR_OK)
    train_die(t, true, "%s", err.text);
  loader_start(t->train, 0, 0, -1);
  for (long i = 0; i < warmup + steps; i++) {
    if (i == warmup) {
      start = dlpar_now();
      loader_get_stats(t->train, &before);
    }
    if (loader_next(t->train, &inp, &tgt, &err) != DLPAR_OK)
      train_die(t, true, "%s", err.text);
    if (i + 1 < warmup + steps)
      loader_release(t->train);
  }
  loader_get_stats(t->train, &after);
  io_rank = dlpar_now() - start;
  io = synchronize(t, io_rank);
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
  say_loader(t, &before, &after, steps, io_rank, &node);
}
