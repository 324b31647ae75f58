/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/end_step.c: the one place libdlpar ends the step or the process.
 * dlpar_end_step ends the whole step from any rank (the communicators
 * aborted, for at most ABORT_COMMS_SECONDS, then PMIx_Abort, then this
 * process's exit); dlpar_end_process ends this process alone, when the
 * launcher is ending the step already. Every condition that reaches them
 * is listed in dlpar.h. Also the fatal errors an embedding host takes
 * first (NCCL's async-error model): with a grace (dlpar_options.
 * fatal_grace_s, DLPAR_FATAL_GRACE) a condition the watchdog finds is
 * recorded, the communicators are aborted so that what waits on them
 * returns, and the host takes it with dlpar_fatal_error and ends the step
 * itself; untaken past the grace, the step ends here. The program's own
 * endings: dlpar_abort, and dlpar_abort_shared (rank 0 prints a line every
 * rank found alike, the others wait for the launcher's signal). */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "common/text.h"

/* How long ranks other than 0 wait for rank 0 to report an error they all found. */
#define SHARED_ERROR_GRACE_SECONDS 10.0
/* How long the communicators' abort may take before the step ends without
 * it: NCCL's waits for its streams, which a kernel queued before the stuck
 * collective can hold for ever (a GPU that hangs; tests/gpu/test_nccl_gpu). */
#define ABORT_COMMS_SECONDS 5.0

static void *abort_comms_main(void *arg)
{
  dlpar_ctx *ctx = arg;
  ctx->backend->abort_comms(ctx);
  atomic_store(&ctx->comms_aborted, 1);
  return NULL;
}

/* The backend's abort_comms on a thread of its own, waited for at most
 * ABORT_COMMS_SECONDS (then left running: the step is ending). Once per
 * context. */
static void abort_comms_bounded(dlpar_ctx *ctx)
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
    abort_comms_bounded(ctx);
  dlpar_pmix_abort(ctx, status, line ? line : "aborted by the program");
  dlpar_end_process(status);
}

/* The first fatal error is kept (status last, so a reader that sees it
 * sees the line); later ones add nothing. */
static bool record_fatal(dlpar_ctx *ctx, int status, const char *line, bool taken)
{
  int none = 0;
  if (!atomic_compare_exchange_strong(&ctx->fatal_claimed, &none, 1))
    return false;
  snprintf(ctx->fatal_line, sizeof(ctx->fatal_line), "%s", line);
  ctx->fatal_at = dlpar_now();
  atomic_store(&ctx->fatal_taken, taken);
  atomic_store(&ctx->fatal_status, status);
  return true;
}

/* The step ends on what the watchdog found: its line, then, for a hang,
 * every rank's stack and the summary (stacks.c), then the end. */
static void end_on_watchdog(dlpar_ctx *ctx, int status, const char *line)
{
  dlpar_eprintf("dlpar: %s\n", line);
  if (status == DLPAR_ERR_TIMEOUT)
    dlpar_stacks_request(ctx);
  dlpar_end_step(ctx, 1, line, DLPAR_LINE_PRINTED);
}

void dlpar_fatal(dlpar_ctx *ctx, int status, const char *line)
{
  if (ctx->fatal_grace <= 0)
    end_on_watchdog(ctx, status, line);
  if (record_fatal(ctx, status, line, false))
    abort_comms_bounded(ctx);
}

void dlpar_fatal_returned(dlpar_ctx *ctx, int status, const char *line)
{
  record_fatal(ctx, status, line, true);
}

void dlpar_fatal_deadline(dlpar_ctx *ctx)
{
  if (atomic_load(&ctx->fatal_status) && !atomic_load(&ctx->fatal_taken) &&
      dlpar_now() - ctx->fatal_at > ctx->fatal_grace)
    end_on_watchdog(ctx, atomic_load(&ctx->fatal_status), ctx->fatal_line);
}

int dlpar_spent(dlpar_ctx *ctx, const char *call)
{
  if (!atomic_load(&ctx->fatal_status))
    return DLPAR_OK;
  return dlpar_fail(ctx, DLPAR_ERR_STATE, "%s: this context is spent (%s); dlpar_finalize ends the step", call,
                    ctx->fatal_line);
}

DLPAR_API int dlpar_fatal_error(dlpar_ctx *ctx, char *line, size_t len)
{
  const int status = ctx ? atomic_load(&ctx->fatal_status) : DLPAR_OK;
  if (status == DLPAR_OK)
    return DLPAR_OK;
  atomic_store(&ctx->fatal_taken, 1);
  if (line && len)
    snprintf(line, len, "%s", ctx->fatal_line);
  return status;
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
