/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/train.h: dlpar-train's state, which the training loop in
 * train.c, the step in step.h and --benchy in benchy.c share. */
#ifndef DLPAR_TRAIN_H
#define DLPAR_TRAIN_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>

#include "trainer/run/checkpoint.h"
#include "trainer/data/data.h"
#include "trainer/run/metrics.h"
#include "trainer/model/model.h"
#include "trainer/run/progress.h"
#include "trainer/config/train_config.h"

/* The ranks' host-side step times, every skew_every steps: each rank posts
 * its mean busy time (wall less the time blocked in collectives) over the
 * interval; the gather is read one interval later (no synchronisation). */
typedef struct {
  double start, waited;  /* dlpar_now() and dlpar_wait_seconds() at the last post */
  long posted_step;      /* the step of the posted interval; 0: none */
  double *times;         /* every rank's, by rank; then the same sorted */
} step_skew;

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
  progress *progress; /* rank 0's progress line; NULL: none */
  checkpoint_position pos;
  long epochs, total_steps;  /* the tutorial's whole epochs, and their steps */
  long schedule_steps;       /* the cosine schedule's length, as the tutorial computes it */
  long steps_this_run;
  long skipped_steps;  /* this run's steps with a non-finite loss or gradients */
  long overflow_steps; /* fp16: this run's steps the loss scale skipped */
  long saved_step;     /* the last checkpoint's step, -1: none yet */
  bool on_gpu;
  bool stopped_by_signal; /* the ranks agreed on a stop request: exit DLPAR_EXIT_STOPPED (dlpar.h) */
  step_skew skew;
} trainer;

/* Train-loss bookkeeping of the current epoch, summed over dp. Every
 * log_every steps the model posts the window since the last one; its line
 * is written a step later, so on a GPU its sums travel while the next step
 * runs and the host never waits for the device it has to keep fed. */
typedef struct {
  double loss_sum;
  long steps;
  double start;
  long posted_step; /* the step whose window is posted, not yet logged; 0: none */
} epoch_progress;

#endif
