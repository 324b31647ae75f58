/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/progress.h: the progress line of a training epoch on rank 0.
 * It gives step of steps, samples/s, the epoch's loss so far and the time
 * left in the epoch. On a terminal it is one line rewritten in place with
 * \r every couple of seconds, and in a log file a plain line every half
 * minute. The caller passes
 * the clock, so the module holds no time of its own and tests drive it. */
#ifndef DLPAR_TRAINER_PROGRESS_H
#define DLPAR_TRAINER_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/status.h"

/* Seconds between lines when none are given: on a terminal, in a log. */
#define PROGRESS_TERMINAL_SECONDS 2.0
#define PROGRESS_LOG_SECONDS 30.0

typedef struct progress progress;

/* Where a step left the epoch. loss: the epoch's mean train loss so far, NAN if none yet. */
typedef struct {
  long epoch;           /* 1-based */
  long step;            /* steps of the epoch done, 1..steps */
  long steps;           /* steps per epoch */
  long samples_per_step; /* the global batch */
  double loss;
} progress_point;

/* --progress=off|on|SECONDS: *seconds < 0 for off, 0 for the default
 * interval, else the interval. DLPAR_OK or DLPAR_ERR_INPUT with one line in err. */
int progress_parse(const char *text, double *seconds, dlpar_error *err);

/* A progress line on stream, a terminal or not, written at most every
 * `seconds`, where 0 means the default for the kind of stream. *out is
 * NULL when seconds < 0, and every function below takes NULL as "no
 * progress line". */
int progress_create(progress **out, FILE *stream, bool terminal, double seconds, dlpar_error *err);

/* Called after each step, at time now in seconds from any monotonic origin.
 * Writes a line when the interval has passed since the last one, and on a
 * terminal also at the epoch's last step. Output errors are ignored,
 * because the line is advice. */
void progress_step(progress *p, double now, const progress_point *at);

/* Before other output: ends a line left open on a terminal. */
void progress_break(progress *p);

void progress_destroy(progress *p);

#endif
