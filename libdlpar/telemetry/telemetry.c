/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/telemetry/telemetry.c: where the time goes, attributed to ranks and hosts.
 * Start-up: each rank marks when it reached PMIx, the exchanged ids, each
 * group's communicator and the program's first step (seconds since its own
 * process started, so no clocks need to agree); one allgather after the
 * first step and rank 0 prints one line with the slowest rank of each.
 * Step-time skew: the program's host-side step times, gathered with a
 * nonblocking allgather completed at the next call. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "libdlpar/internal.h"
#include "libdlpar/telemetry/telemetry.h"
#include "common/text.h"

static const char *const phase_names[DLPAR_PHASES] = {
    [DLPAR_PHASE_PMIX] = "PMIx ready", [DLPAR_PHASE_IDS] = "ids exchanged", [DLPAR_PHASE_WORLD] = "world ready",
    [DLPAR_PHASE_TP] = "tp ready",     [DLPAR_PHASE_DP] = "dp ready",      [DLPAR_PHASE_FIRST_STEP] = "first step"};

void dlpar_phase_mark(dlpar_ctx *ctx, dlpar_phase phase)
{
  ctx->phase_at[phase] = dlpar_now();
}

/* Field 22 of /proc/self/stat: the start in clock ticks since boot. */
static int process_start_ticks(unsigned long long *ticks)
{
  char stat[1024];
  const char *fields = dlpar_proc_stat_fields(0, stat, sizeof(stat));
  /* field 22, starttime; fields holds field 3 (state) on */
  if (!fields || sscanf(fields, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                        ticks) != 1)
    return -1;
  return 0;
}

double dlpar_process_start(void)
{
  const double now = dlpar_now();
  const long hz = sysconf(_SC_CLK_TCK);
  unsigned long long ticks;
  struct timespec boot;
  double age;
  if (hz <= 0 || process_start_ticks(&ticks) != 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
    return now;
  age = (double)boot.tv_sec + 1e-9 * (double)boot.tv_nsec - (double)ticks / (double)hz;
  return age >= 0 ? now - age : now;
}

/* The program's step was queued on `stream`: done when the device is. */
static int wait_stream(dlpar_ctx *ctx, void *stream)
{
#ifdef HAVE_CUDA
  if (ctx->info.backend == DLPAR_BACKEND_NCCL) {
    cudaError_t err = cudaStreamSynchronize((cudaStream_t)stream);
    if (err != cudaSuccess)
      return dlpar_fail(ctx, DLPAR_ERR_CUDA, "%s:%d: cudaStreamSynchronize: %s", __FILE__, __LINE__,
                        cudaGetErrorString(err));
  }
#else
  (void)ctx;
  (void)stream;
#endif
  return DLPAR_OK;
}

/* "PMIx ready 0.31 s (rank 3 on n2), ..." from every rank's phases. */
static void startup_line(const dlpar_ctx *ctx, const double *all, char *out, size_t len)
{
  size_t used = (size_t)snprintf(out, len, "dlpar: start-up of %d %s (s since process start, slowest rank):",
                                 ctx->info.size, ctx->info.size == 1 ? "rank" : "ranks");
  for (int phase = 0; phase < DLPAR_PHASES && used < len; phase++) {
    int slowest = -1;
    for (int rank = 0; rank < ctx->info.size; rank++) {
      const double t = all[rank * DLPAR_PHASES + phase];
      if (t >= 0 && (slowest < 0 || t > all[slowest * DLPAR_PHASES + phase]))
        slowest = rank;
    }
    if (slowest < 0)
      continue; /* no rank has that communicator (a group of one) */
    used += (size_t)snprintf(out + used, len - used, "%s %s %.2f (rank %d on %s)", phase ? "," : "",
                             phase_names[phase], all[slowest * DLPAR_PHASES + phase], slowest, ctx->hosts[slowest]);
  }
}

DLPAR_API int dlpar_startup_done(dlpar_ctx *ctx, void *stream)
{
  double mine[DLPAR_PHASES], *all;
  char line[1024];
  int rc;
  if (ctx->startup_reported)
    return DLPAR_OK;
  ctx->startup_reported = true;
  DLPAR_TRY(wait_stream(ctx, stream));
  dlpar_phase_mark(ctx, DLPAR_PHASE_FIRST_STEP);
  for (int phase = 0; phase < DLPAR_PHASES; phase++)
    mine[phase] = ctx->phase_at[phase] > 0 ? ctx->phase_at[phase] - ctx->process_start : -1;
  if (!(all = malloc(sizeof(double) * DLPAR_PHASES * (size_t)ctx->info.size)))
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  rc = dlpar_allgather_host(ctx, DLPAR_WORLD, mine, all, DLPAR_PHASES, DLPAR_FLOAT64);
  if (rc == DLPAR_OK && ctx->info.rank == 0 && ctx->info.size > 1) { /* one rank: nothing to attribute */
    startup_line(ctx, all, line, sizeof(line));
    dlpar_eprintf("%s\n", line);
  }
  free(all);
  return rc;
}

DLPAR_API double dlpar_wait_seconds(const dlpar_ctx *ctx)
{
  return ctx->wait_seconds;
}

DLPAR_API int dlpar_step_times(dlpar_ctx *ctx, double seconds, void *stream, double *times, int *ready)
{
  *ready = 0;
  if (!ctx->backend)
    return dlpar_fail(ctx, DLPAR_ERR_STATE, "step times need dlpar_init's collectives (not dlpar_init_bootstrap)");
  *ready = ctx->skew_posted;
  if (ctx->skew_posted) {
    ctx->skew_posted = false;
    DLPAR_TRY(ctx->backend->times_wait(ctx, times));
  }
  DLPAR_TRY(ctx->backend->times_post(ctx, seconds, stream));
  ctx->skew_posted = true;
  return DLPAR_OK;
}

int dlpar_times_drain(dlpar_ctx *ctx)
{
  double *ignored;
  int rc;
  if (!ctx->skew_posted)
    return DLPAR_OK;
  ctx->skew_posted = false;
  if (!(ignored = malloc(sizeof(double) * (size_t)ctx->info.size)))
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  rc = ctx->backend->times_wait(ctx, ignored);
  free(ignored);
  return rc;
}
