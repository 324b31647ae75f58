/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/ending/fatal.c: what a context keeps of a condition that will end the
 * step, when the step does not end at once, as in NCCL's asynchronous-error
 * model. It keeps the first condition, its line, and whether the program
 * has taken it. A context that keeps one is spent: its collectives and
 * dlpar_share_from_root refuse, and dlpar_finalize ends the step. This
 * file only keeps and tells. The watchdog, during its grace, and init.c,
 * for a bootstrap rendezvous that timed out, decide what is kept. */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>

#include "libdlpar/internal.h"
#include "libdlpar/ending/ending.h"

bool dlpar_fatal_keep(dlpar_ctx *ctx, int status, const char *line, bool taken)
{
  int none = 0;
  if (!atomic_compare_exchange_strong(&ctx->fatal_claimed, &none, 1))
    return false;
  snprintf(ctx->fatal_line, sizeof(ctx->fatal_line), "%s", line);
  ctx->fatal_at = dlpar_now();
  atomic_store(&ctx->fatal_taken, taken);
  atomic_store(&ctx->fatal_status, status); /* last: a reader that sees it sees the line */
  return true;
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
