/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/bootstrap/rendezvous_diagnosis.c: after a PMIx fence that timed
 * out, which ranks never arrived, and on which hosts. Each node's lowest
 * arrived rank asks its own node's server for its node-mates' keys and
 * names the missing ones in one line. It returns that line with
 * DLPAR_ERR_TIMEOUT and ends nothing. The caller of the fence, init.c or
 * mpi_init_guard.c, decides. */
#include "config.h"

#include <pmix.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "libdlpar/bootstrap/pmix_internal.h"
#include "common/text.h"

typedef struct {
  dlpar_waiter *w;
  int rank;
} probe;

static void probe_done(pmix_status_t status, pmix_value_t *value, void *cbdata)
{
  probe *p = cbdata;
  pthread_mutex_lock(&p->w->lock);
  p->w->per_rank[p->rank] = status;
  p->w->pending--;
  pthread_cond_signal(&p->w->done_cond);
  pthread_mutex_unlock(&p->w->lock);
  if (value)
    PMIX_VALUE_RELEASE(value);
}

/* After a timed-out fence, this finds which ranks of this node never put
 * their data. Their keys are local, so this node's server answers at once.
 * A get of a remote rank's key would be a request to its node, held there
 * while the rank is missing, which at scale makes N probes per rank. The
 * lowest arrived rank of each node names its node's missing ranks in one
 * line. Rank 0, when its node is complete, says the missing ranks are
 * elsewhere. The others stay quiet. Each returns only after the probe
 * window, so that the lines get out before a caller ends the step. */
#define PROBE_SECONDS 3.0

/* A probe asks for dlpar.host, which each rank puts at the rendezvous.
 * From inside Open MPI 5's MPI_Init, where no rank has put that yet, it
 * asks for dlpar.started, which each rank's init guard puts as soon as PMIx
 * is up in there. A rank that has it has started and is held in MPI_Init
 * as well, so it is not missing. PMIx servers do not all tell apart a rank
 * that committed no such key from one that never connected. With every
 * rank local, as under dlpar-run, both time out. */
static const char *probe_key(bool in_mpi_init)
{
  return in_mpi_init ? "dlpar.started" : "dlpar.host";
}

static bool probe_arrived(pmix_status_t status)
{
  return status == PMIX_SUCCESS;
}

int dlpar_pmix_diagnose(dlpar_ctx *ctx, double waited, bool in_mpi_init, dlpar_error *err)
{
  char *const message = err->text;
  const size_t len = sizeof(err->text);
  const int size = ctx->info.size, me = ctx->info.rank;
  /* The probes' callbacks may come after their window, so what they touch
   * stays allocated. The step ends after a timed-out rendezvous anyway. */
  dlpar_waiter *w = malloc(sizeof(*w));
  probe *probes = calloc((size_t)size, sizeof(probe));
  size_t used = 0;
  int missing = 0, local = 0;
  bool reporter = true;
  const double return_at = dlpar_now() + PROBE_SECONDS + 0.5;
  for (int rank = 0; rank < size; rank++)
    local += rank != me && ctx->rank_node[rank] == ctx->info.node;
  if (w) {
    dlpar_waiter_init(w, local);
    w->per_rank = calloc((size_t)size, sizeof(pmix_status_t));
  }
  if (!probes || !w || !w->per_rank) {
    snprintf(message, len, "rank %d on %s: rendezvous timed out after %.0f s (and no memory to say which ranks are "
             "missing)", me, ctx->info.host, waited);
    dlpar_eprintf("dlpar: %s\n", message);
    return err->status = DLPAR_ERR_TIMEOUT;
  }
  for (int rank = 0; rank < size; rank++) {
    int timeout = 2;
    pmix_info_t info;
    pmix_proc_t proc = dlpar_pmix_proc(ctx, (pmix_rank_t)rank);
    w->per_rank[rank] = PMIX_ERR_TIMEOUT;
    if (rank == me || ctx->rank_node[rank] != ctx->info.node)
      continue;
    probes[rank] = (probe){w, rank};
    PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &timeout, PMIX_INT);
    if (PMIx_Get_nb(&proc, probe_key(in_mpi_init), &info, 1, probe_done, &probes[rank]) != PMIX_SUCCESS)
      probe_done(PMIX_ERR_NOT_FOUND, NULL, &probes[rank]);
  }
  dlpar_waiter_wait(w, PROBE_SECONDS);
  used = (size_t)snprintf(message, len, "rank %d on %s: rendezvous timed out after %.0f s: ", me, ctx->info.host,
                          waited);
  pthread_mutex_lock(&w->lock);
  for (int rank = 0; rank < size && used + 64 < len; rank++) {
    if (rank == me || ctx->rank_node[rank] != ctx->info.node || probe_arrived(w->per_rank[rank]))
      continue;
    used += (size_t)snprintf(message + used, len - used, "%s%d (%s)", missing ? ", " : "rank ", rank,
                             ctx->hosts[rank]);
    missing++;
  }
  for (int rank = 0; rank < me; rank++) /* a lower arrived rank of this node reports */
    reporter &= ctx->rank_node[rank] != ctx->info.node || !probe_arrived(w->per_rank[rank]);
  pthread_mutex_unlock(&w->lock);
  if (used < len)
    snprintf(message + used, len - used, "%s",
             missing ? " did not arrive (crashed, stuck before dlpar_init, or slow to start: see their "
                       "output; raise DLPAR_RENDEZVOUS_TIMEOUT if startup is just slow)"
                     : "every rank of this node arrived: the missing ranks are on other nodes, named by those "
                       "nodes' ranks (a node none of whose ranks arrived: see the launcher's output)");
  if (reporter && (missing || me == 0)) {
    dlpar_eprintf("dlpar: %s\n", message);
    fflush(stderr);
  }
  while (dlpar_now() < return_at)
    usleep(100000);
  return err->status = DLPAR_ERR_TIMEOUT;
}
