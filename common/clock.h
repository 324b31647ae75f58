/* SPDX-License-Identifier: BSD-3-Clause */
/* common/clock.h: the one clock dlpar times with (monotonic seconds):
 * rendezvous and watchdog deadlines, the launcher's grace periods, the
 * trainer's and the benchmarks' throughput. */
#ifndef DLPAR_CLOCK_H
#define DLPAR_CLOCK_H

/* Seconds on CLOCK_MONOTONIC: for differences only. */
double dlpar_now(void);

#endif
