/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/bootstrap/pmix_waiter.c: waiting for PMIx's callbacks with a
 * deadline, and a rank's pmix_proc_t. The PMIx exchange in pmixboot.c, the
 * rendezvous diagnosis in rendezvous_diagnosis.c and the MPI_Init guard in
 * mpi_init_guard.c all wait so. This file calls nothing else of libdlpar,
 * so none of them has to call another for it. */
#include "config.h"

#include <pmix.h>
#include <pthread.h>
#include <time.h>

#include "libdlpar/internal.h"
#include "libdlpar/bootstrap/pmix_internal.h"

pmix_proc_t dlpar_pmix_proc(const dlpar_ctx *ctx, pmix_rank_t rank)
{
  pmix_proc_t proc;
  PMIX_PROC_LOAD(&proc, ctx->nspace, rank);
  return proc;
}

void dlpar_waiter_init(dlpar_waiter *w, int pending)
{
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->done_cond, NULL);
  w->pending = pending;
  w->status = PMIX_SUCCESS;
  w->per_rank = NULL;
}

int dlpar_waiter_wait(dlpar_waiter *w, double seconds)
{
  struct timespec deadline;
  int all_done;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += (time_t)seconds;
  deadline.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&w->lock);
  while (w->pending > 0 && pthread_cond_timedwait(&w->done_cond, &w->lock, &deadline) == 0)
    ;
  all_done = w->pending == 0;
  pthread_mutex_unlock(&w->lock);
  return all_done;
}

void dlpar_waiter_done(pmix_status_t status, void *cbdata)
{
  dlpar_waiter *w = cbdata;
  pthread_mutex_lock(&w->lock);
  w->status = status;
  w->pending--;
  pthread_cond_signal(&w->done_cond);
  pthread_mutex_unlock(&w->lock);
}
