/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/step.h: one optimizer step of dlpar-train and its bookkeeping,
 * in step.c. The training loop in train.c and --benchy in benchy.c both
 * run it, reporting errors and lines the same way. */
#ifndef DLPAR_TRAINER_STEP_H
#define DLPAR_TRAINER_STEP_H

#include <stdbool.h>

#include "trainer/model/model.h"
#include "trainer/run/train.h"

/* Ends the run after dlpar_init with one line. An error every rank finds
 * alike is printed by rank 0 alone, through dlpar_abort_shared. One that
 * may be this rank's alone, marked every_rank, is printed by each rank
 * that finds it, with its rank. */
void train_die(trainer *t, bool every_rank, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
/* A line on rank 0's stdout, after the progress line if there is one. */
void train_say(const trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* rc from the model: anything but DLPAR_OK ends the run, `what` and the model's error. */
void train_check(trainer *t, int rc, const char *what);

/* One optimizer step. It returns 1 when the run should end after it, on a
 * stop request agreed by all ranks or at stop_after_iters. */
int train_step(trainer *t, epoch_progress *e);
/* The sums since the last post, over dp, now. This waits for the device. */
void metrics_now(trainer *t, model_metrics *m);
/* Every step so far logged: before validation, a checkpoint or the end. */
void flush_windows(trainer *t, epoch_progress *e);
/* The step-time skew's first interval starts now. */
void step_skew_start(trainer *t);

/* The cosine schedule's learning rate at step i, counted from 0. */
double train_learning_rate(const trainer *t, long i);
/* A checkpoint of this step, in which every rank takes part. */
void train_save_checkpoint(trainer *t);

#endif
