/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/bootstrap/mpi_init_guard.c: Open MPI's MPI_Init, bounded by the
 * rendezvous timeout at both ends. At its start, a thread bounds Open MPI
 * 5's MPI_Init, which waits without a limit for ranks that never start, and
 * names the missing ranks as the rendezvous does. At its end, the fence in
 * dlpar_mpi_init_barrier holds every rank until all are out of it. This
 * file owns the policy of both conditions and decides each in one
 * function, guard_main and dlpar_mpi_init_barrier. In both the step ends
 * through end_step.c. */
#include "config.h"

#include <pmix.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "libdlpar/bootstrap/bootstrap.h"
#include "libdlpar/ending/ending.h"
#include "libdlpar/bootstrap/pmix_internal.h"
#include "common/text.h"

/* Open MPI 5's MPI_Init comes before libdlpar's PMIx_Init there, as
 * backend_mpi.c explains, and waits without a limit. It waits for the keys
 * of each rank of its node, and for every rank at its closing barrier. A
 * rank that never starts holds the whole step in it. The guard bounds that
 * wait by the rendezvous timeout. When that is unset, it uses the default
 * for the job's size, learnt from PMIx, which Open MPI has initialised by
 * then. It then diagnoses as the rendezvous does. The ranks of this node
 * that never started are named, while those held in MPI_Init like this one
 * are not. */
struct dlpar_init_guard {
  dlpar_waiter w;
  pthread_t thread;
  double timeout, start;
  double pmix_ready_at; /* when Open MPI's PMIx_Init had returned; 0: not seen */
};

#define GUARD_POLL_SECONDS 0.002

/* Waits for PMIx to be up inside MPI_Init. PMIx_Initialized waits while
 * Open MPI's PMIx_Init runs. This gives the start-up line's "PMIx ready"
 * under Open MPI 5, where the end of MPI_Init also counts the wait for
 * other ranks. Returns false if MPI_Init returned first or the limit
 * passed. */
static bool guard_see_pmix(dlpar_init_guard *guard, double limit)
{
  while (dlpar_now() - guard->start < limit) {
    if (PMIx_Initialized()) {
      guard->pmix_ready_at = dlpar_now();
      return true;
    }
    if (dlpar_waiter_wait(&guard->w, GUARD_POLL_SECONDS))
      return false;
  }
  return true;
}

/* The guard is done with its own PMIx context, which it used to name missing ranks. */
static void free_probe_context(dlpar_ctx *ctx)
{
  free(ctx->hosts);
  free(ctx->rank_node);
  dlpar_pmix_finalize(ctx);
  free(ctx);
}

/* dlpar.started is for the node-mates' probes in dlpar_pmix_diagnose. It is
 * put as soon as PMIx is up in MPI_Init and committed by Open MPI's own
 * commit. A commit of ours before Open MPI's would answer the other nodes'
 * requests for this rank's data without Open MPI's keys; under Slurm 24.11
 * MPI_Init failed so, with exit 14. The guard commits it only at the
 * timeout, in case Open MPI committed before the put. */
static void put_started(void)
{
  pmix_value_t value;
  bool started = true;
  pmix_status_t rc;
  PMIX_VALUE_LOAD(&value, &started, PMIX_BOOL);
  if ((rc = PMIx_Put(PMIX_GLOBAL, "dlpar.started", &value)) != PMIX_SUCCESS)
    dlpar_eprintf("dlpar: PMIx_Put(dlpar.started): %s: a rendezvous timeout may name this rank as "
                  "missing\n", PMIx_Error_string(rc));
}

/* Past the first limit, the guard opens its own PMIx context to learn the
 * job's size and name the missing ranks. It returns DLPAR_OK when MPI_Init
 * returned within the limit for that size, so there is nothing to end.
 * Otherwise it returns DLPAR_ERR_TIMEOUT with the line in err, printed, and
 * the context in *out. */
static int diagnose_held_init(dlpar_init_guard *guard, double limit, dlpar_ctx **out, dlpar_error *err)
{
  dlpar_ctx *probe_ctx = calloc(1, sizeof(*probe_ctx));
  double left;
  pmix_status_t status;
  *out = probe_ctx;
  if (!probe_ctx || dlpar_pmix_init(probe_ctx) != DLPAR_OK) {
    dlpar_error_set(err, DLPAR_ERR_TIMEOUT, "MPI_Init has not returned after %.0f s, and PMIx cannot tell which "
                    "ranks are missing (%s)", dlpar_now() - guard->start,
                    probe_ctx ? probe_ctx->error.text : "out of memory");
    dlpar_eprintf("dlpar: %s\n", err->text);
    return err->status;
  }
  if (guard->timeout <= 0)
    limit = DLPAR_RENDEZVOUS_TIMEOUT_BASE + DLPAR_RENDEZVOUS_TIMEOUT_PER_RANK * probe_ctx->info.size;
  left = limit - (dlpar_now() - guard->start);
  if (dlpar_waiter_wait(&guard->w, left > 0 ? left : 0)) {
    free_probe_context(probe_ctx);
    *out = NULL;
    return DLPAR_OK;
  }
  if ((status = PMIx_Commit()) != PMIX_SUCCESS) /* dlpar.started, if Open MPI committed before it was put */
    dlpar_eprintf("dlpar: PMIx_Commit(dlpar.started): %s: node-mates may name this rank as missing\n",
                  PMIx_Error_string(status));
  return dlpar_pmix_diagnose(probe_ctx, dlpar_now() - guard->start, true, err);
}

/* The one decision on an MPI_Init held past the rendezvous timeout: the
 * step ends, with the line that names the missing ranks. */
static void *guard_main(void *arg)
{
  dlpar_init_guard *guard = arg;
  dlpar_ctx *probe_ctx = NULL;
  dlpar_error err = {0};
  double limit = guard->timeout > 0 ? guard->timeout : DLPAR_RENDEZVOUS_TIMEOUT_BASE, left;
  if (!guard_see_pmix(guard, limit))
    return NULL;
  if (guard->pmix_ready_at > 0)
    put_started();
  left = limit - (dlpar_now() - guard->start);
  if (dlpar_waiter_wait(&guard->w, left > 0 ? left : 0))
    return NULL;
  if (diagnose_held_init(guard, limit, &probe_ctx, &err) != DLPAR_OK)
    dlpar_end_step(probe_ctx, 1, err.text, DLPAR_LINE_PRINTED);
  return NULL;
}

int dlpar_pmix_guard_start(dlpar_ctx *ctx, dlpar_init_guard **out)
{
  dlpar_init_guard *guard = calloc(1, sizeof(*guard));
  *out = NULL;
  if (!guard)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  dlpar_waiter_init(&guard->w, 1);
  guard->timeout = ctx->rendezvous_timeout;
  guard->start = dlpar_now();
  if (pthread_create(&guard->thread, NULL, guard_main, guard) != 0) {
    free(guard);
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "cannot start a thread to bound MPI_Init");
  }
  *out = guard;
  return DLPAR_OK;
}

double dlpar_pmix_guard_stop(dlpar_init_guard *guard)
{
  double pmix_ready_at;
  if (!guard)
    return 0;
  dlpar_waiter_done(PMIX_SUCCESS, &guard->w); /* MPI_Init returned: the guard's wait ends */
  pthread_join(guard->thread, NULL);
  pmix_ready_at = guard->pmix_ready_at;
  free(guard);
  return pmix_ready_at;
}

int dlpar_mpi_init_barrier(dlpar_ctx *ctx)
{
  const int rc = dlpar_pmix_barrier(ctx, "the end of MPI_Init");
  if (rc == DLPAR_ERR_TIMEOUT)
    dlpar_end_step(ctx, 1, ctx->error.text, DLPAR_LINE_TO_PRINT);
  return rc;
}
