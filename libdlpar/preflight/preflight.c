/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/preflight/preflight.c: --dl-check (srun) / --check (dlpar-run), run by
 * dlpar_init once the groups are ready, before the program's own work:
 * every rank measures (preflight_measure.c), one allgather brings every
 * rank's report to every rank, every rank reaches the same verdict and
 * rank 0 prints it (preflight_judge.c). A failed check is DLPAR_ERR_CHECK
 * from dlpar_init, --dl-check=only DLPAR_DONE: the program ends. */
#include "config.h"

#include <stdlib.h>

#include "libdlpar/preflight/preflight.h"
#include "common/text.h"

#define DEFAULT_STRAGGLER 0.5

int dlpar_preflight(dlpar_ctx *ctx)
{
  const double start = dlpar_now();
  rank_report mine, *all;
  verdict v = {.size = ctx->info.size, .straggler_ratio = DEFAULT_STRAGGLER};
  int rc;
  if (ctx->env.options.check == DLPAR_CHECK_OFF)
    return DLPAR_OK;
  DLPAR_TRY(dlpar_env_positive(ctx, "DLPAR_CHECK_STRAGGLER", "a ratio", 1, DEFAULT_STRAGGLER, &v.straggler_ratio));
  DLPAR_TRY(dlpar_preflight_measure(ctx, &mine));
  if (!(all = malloc(sizeof(rank_report) * (size_t)v.size)))
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  rc = dlpar_allgather_host(ctx, DLPAR_WORLD, &mine, all, sizeof(rank_report) / sizeof(double), DLPAR_FLOAT64);
  v.all = all;
  if (rc == DLPAR_OK && (rc = dlpar_preflight_judge(&v)) != DLPAR_OK)
    rc = dlpar_fail(ctx, rc, "out of memory");
  if (rc == DLPAR_OK) {
    if (ctx->info.rank == 0) {
      dlpar_preflight_print(ctx, &v);
      dlpar_eprintf("dlpar-check: %s in %.1f s%s\n", v.failures ? "FAILED" : "all checks passed",
                    dlpar_now() - start, v.failures ? "" : ctx->env.options.check == DLPAR_CHECK_ONLY ? "" : "; running the program");
    }
    rc = dlpar_barrier(ctx, DLPAR_WORLD); /* rank 0's table is out before any rank leaves */
  }
  free(all);
  DLPAR_TRY(rc);
  if (v.failures) /* every rank returns it: the verdict is the gathered one */
    return dlpar_fail(ctx, DLPAR_ERR_CHECK, "%d pre-flight check%s failed (rank 0's table above says which)",
                      v.failures, v.failures == 1 ? "" : "s");
  return ctx->env.options.check == DLPAR_CHECK_ONLY ? DLPAR_DONE : DLPAR_OK;
}
