/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/telemetry/telemetry.h: the start-up phases and the step-time
 * gathers of telemetry.c, and the profiling request of profiling.c. */
#ifndef DLPAR_LIBDLPAR_TELEMETRY_H
#define DLPAR_LIBDLPAR_TELEMETRY_H

#include "libdlpar/internal.h"

/* telemetry/profiling.c */
int dlpar_profiling_reexec(dlpar_ctx *ctx, int argc, char **argv);
void dlpar_profiling_setup(dlpar_ctx *ctx);
void dlpar_profiling_finish(dlpar_ctx *ctx);

/* telemetry/telemetry.c */
/* Records that this rank reached `phase` now. */
void dlpar_phase_mark(dlpar_ctx *ctx, dlpar_phase phase);
/* When this process started, on dlpar_now()'s clock, from /proc, else now. */
double dlpar_process_start(void);
/* Waits for a posted step-time gather, before finalize. */
int dlpar_times_drain(dlpar_ctx *ctx);

#endif
