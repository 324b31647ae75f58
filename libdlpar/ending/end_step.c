/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/ending/end_step.c: how libdlpar ends the step or the process, the one
 * path every ending takes. It decides nothing. dlpar_end_step ends the
 * whole step from any rank: it aborts the communicators for at most
 * ABORT_COMMS_SECONDS, then calls PMIx_Abort, then exits this process.
 * dlpar_end_process ends this process alone, when the launcher is ending
 * the step already. Each condition is decided by one function, in the file
 * that owns the condition's policy. init.c decides a rank missing at the
 * rendezvous and dlpar_finalize of a spent context. mpi_init_guard.c
 * decides Open MPI's MPI_Init held past the rendezvous timeout, at its
 * start or its end. watchdog.c decides what the watchdog finds, and the
 * stop signals. The program itself decides through the two calls here,
 * dlpar_abort and dlpar_abort_shared. With dlpar_abort_shared, rank 0
 * prints a line every rank found alike and the others wait for the
 * launcher's signal. dlpar.h lists every condition. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "libdlpar/bootstrap/bootstrap.h"
#include "libdlpar/ending/ending.h"
#include "common/text.h"

/* How long ranks other than 0 wait for rank 0 to report an error they all found. */
#define SHARED_ERROR_GRACE_SECONDS 10.0
/* How long the communicators' abort may take before the step ends without
 * it. NCCL's abort waits for its streams, which a kernel queued before the
 * stuck collective can hold for ever on a GPU that hangs, as
 * tests/gpu/test_nccl_gpu shows. */
#define ABORT_COMMS_SECONDS 5.0

static void *abort_comms_main(void *arg)
{
  dlpar_ctx *ctx = arg;
  ctx->backend->abort_comms(ctx);
  atomic_store(&ctx->comms_aborted, 1);
  return NULL;
}

void dlpar_abort_comms(dlpar_ctx *ctx)
{
  const struct timespec pause = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
  const double deadline = dlpar_now() + ABORT_COMMS_SECONDS;
  pthread_t thread;
  if (!ctx->backend || !ctx->backend->abort_comms || atomic_exchange(&ctx->comms_abort_started, 1))
    return;
  if (pthread_create(&thread, NULL, abort_comms_main, ctx) != 0)
    abort_comms_main(ctx); /* no thread to spare: unbounded, the only way left */
  else
    pthread_detach(thread);
  while (!atomic_load(&ctx->comms_aborted) && dlpar_now() < deadline)
    nanosleep(&pause, NULL);
}

void dlpar_end_process(int code)
{
  fflush(NULL);
  _exit(code);
}

void dlpar_end_step(dlpar_ctx *ctx, int code, const char *line, dlpar_line_printed printed)
{
  const int status = code ? code : 1;
  if (ctx)
    atomic_store(&ctx->quiet_exit_code, status); /* the launcher's signal that ends the step */
  if (line && printed == DLPAR_LINE_TO_PRINT)
    dlpar_eprintf("dlpar: %s\n", line);
  if (ctx)
    dlpar_abort_comms(ctx);
  dlpar_pmix_abort(ctx, status, line ? line : "aborted by the program");
  dlpar_end_process(status);
}

DLPAR_API void dlpar_abort(dlpar_ctx *ctx, int code, const char *message)
{
  dlpar_end_step(ctx, code, message, message ? DLPAR_LINE_TO_PRINT : DLPAR_LINE_PRINTED);
}

DLPAR_API void dlpar_abort_shared(dlpar_ctx *ctx, int code, const char *line)
{
  const double deadline = dlpar_now() + SHARED_ERROR_GRACE_SECONDS;
  const struct timespec poll_interval = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
  const int status = code ? code : 1;
  if (ctx->info.rank != 0) {
    atomic_store(&ctx->quiet_exit_code, status); /* the launcher's signal after rank 0's abort */
    while (dlpar_now() < deadline && atomic_load(&ctx->stop_signals) == 0)
      nanosleep(&poll_interval, NULL);
    if (atomic_load(&ctx->stop_signals) > 0) /* it came before quiet_exit_code was set */
      dlpar_end_process(status);
  }
  dlpar_eprintf("%s\n", line);
  dlpar_end_step(ctx, code, NULL, DLPAR_LINE_PRINTED);
}
