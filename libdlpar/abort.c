/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/abort.c: ending the whole step from any rank (dlpar_abort), and
 * ending it with a line every rank found the same (dlpar_abort_shared: rank
 * 0 prints it, the others wait for the launcher's signal). */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "common/text.h"

/* How long ranks other than 0 wait for rank 0 to report an error they all found. */
#define SHARED_ERROR_GRACE_SECONDS 10.0

void dlpar_abort(dlpar_ctx *ctx, int code, const char *message)
{
  atomic_store(&ctx->quiet_exit_code, code ? code : 1); /* the launcher's signal that ends the step */
  if (message)
    dlpar_eprintf("dlpar: %s\n", message);
  if (ctx->backend && ctx->backend->abort_comms)
    ctx->backend->abort_comms(ctx);
  dlpar_pmix_abort(ctx, code, message ? message : "aborted by the program");
}

void dlpar_abort_shared(dlpar_ctx *ctx, int code, const char *line)
{
  const double deadline = dlpar_now() + SHARED_ERROR_GRACE_SECONDS;
  const struct timespec poll_interval = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
  const int status = code ? code : 1;
  if (ctx->info.rank != 0) {
    atomic_store(&ctx->quiet_exit_code, status); /* the launcher's signal after rank 0's abort */
    while (dlpar_now() < deadline && atomic_load(&ctx->stop_signals) == 0)
      nanosleep(&poll_interval, NULL);
    if (atomic_load(&ctx->stop_signals) > 0) /* it came before quiet_exit_code was set */
      _exit(status);
  }
  dlpar_eprintf("%s\n", line);
  dlpar_abort(ctx, code, NULL);
}
