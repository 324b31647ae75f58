/* SPDX-License-Identifier: BSD-3-Clause */
/* common/clock.c: monotonic seconds (see clock.h). */
#include "config.h"

#include "common/clock.h"

#include <time.h>

double dlpar_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
