/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/metrics.h: where users look. Rank 0 appends one JSON object per
 * line, for steps and epochs, to <run dir>/metrics.jsonl. It also writes
 * TensorBoard event files, logs/events.out.tfevents.*, with the tutorial's
 * tags: Loss/train, Loss/valid, RMSE(u10m)/valid, also written at step 0
 * before training, Learning Rate, Avg iters per sec, Avg samples per sec,
 * and the ranks' step-time skew as Step time/slowest, fastest and median.
 * Each line and record is flushed as it is written. */
#ifndef DLPAR_METRICS_H
#define DLPAR_METRICS_H

#include <stddef.h>

#include "common/status.h"

typedef struct metrics_writer metrics_writer;

typedef struct {
  long epoch, step;
  double train_loss, val_loss, val_rmse_u10m, lr;
  double epoch_seconds, iters_per_sec, samples_per_sec, data_wait_seconds, validation_seconds;
  double peak_memory_gb;
} epoch_summary;

int metrics_open(metrics_writer **w, const char *run_dir, dlpar_error *err);
int metrics_step(metrics_writer *w, long step, double loss, double lr);
int metrics_epoch(metrics_writer *w, const epoch_summary *s);
/* The tutorial's step-0 values, for TensorBoard only. */
int metrics_initial(metrics_writer *w, double train_loss, double val_loss, double val_rmse_u10m);
/* The ranks' host-side step times at `step`, for TensorBoard only. The
 * tags are "Step time/slowest (ms)", "Step time/fastest (ms)" and
 * "Step time/median (ms)". */
int metrics_skew(metrics_writer *w, long step, double slowest, double fastest, double median);
void metrics_close(metrics_writer *w);

/* TensorBoard's record framing and Event/Summary messages, for tests too. */
unsigned int tfrecord_masked_crc32c(const unsigned char *data, size_t len);
/* Encodes Event{wall_time, step, summary{value{tag, simple_value}}} into out
 * and returns its length. A length over cap means it did not fit, and
 * SIZE_MAX means a tag over about 500 bytes. */
size_t tfevent_encode_scalar(unsigned char *out, size_t cap, double wall_time, long step, const char *tag, float value);

#endif
