/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/bootstrap/pmix_internal.h: what the PMIx exchange (pmixboot.c), the
 * rendezvous diagnosis (rendezvous_diagnosis.c) and Open MPI 5's MPI_Init
 * guard (mpi_init_guard.c) share: a wait for PMIx's callbacks with a
 * deadline and a rank's pmix_proc_t (pmix_waiter.c), and the diagnosis
 * itself. */
#ifndef DLPAR_LIBDLPAR_PMIX_INTERNAL_H
#define DLPAR_LIBDLPAR_PMIX_INTERNAL_H

#include <pmix.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "libdlpar/internal.h"

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t done_cond;
  int pending;                 /* callbacks still to come */
  pmix_status_t status;
  pmix_status_t *per_rank;     /* diagnosis: one status per rank */
} dlpar_waiter;

/* pmix_waiter.c */
void dlpar_waiter_init(dlpar_waiter *w, int pending);
/* Waits until no callback is pending or `seconds` pass; 1 if all arrived. */
int dlpar_waiter_wait(dlpar_waiter *w, double seconds);
/* A PMIx callback (fence, or a pending count to end): one less pending. */
void dlpar_waiter_done(pmix_status_t status, void *cbdata);

pmix_proc_t dlpar_pmix_proc(const dlpar_ctx *ctx, pmix_rank_t rank);

/* rendezvous_diagnosis.c: after a fence that timed out `waited` seconds,
 * the line naming this node's missing ranks (printed by the node's lowest
 * arrived rank) in err; returns DLPAR_ERR_TIMEOUT after the probes'
 * window, and ends nothing. in_mpi_init: probing from inside Open MPI's
 * MPI_Init (dlpar.started, not dlpar.host). */
int dlpar_pmix_diagnose(dlpar_ctx *ctx, double waited, bool in_mpi_init, dlpar_error *err);

#endif
