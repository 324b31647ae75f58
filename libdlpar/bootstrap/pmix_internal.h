/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/bootstrap/pmix_internal.h: what the PMIx exchange in pmixboot.c,
 * the rendezvous diagnosis in rendezvous_diagnosis.c and Open MPI 5's
 * MPI_Init guard in mpi_init_guard.c share. That is a wait for PMIx's
 * callbacks with a deadline and a rank's pmix_proc_t, both in
 * pmix_waiter.c, and the diagnosis itself. */
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
/* A PMIx callback, from a fence or one of a pending count, leaves one less pending. */
void dlpar_waiter_done(pmix_status_t status, void *cbdata);

pmix_proc_t dlpar_pmix_proc(const dlpar_ctx *ctx, pmix_rank_t rank);

/* rendezvous_diagnosis.c: after a fence that timed out `waited` seconds,
 * this puts the line naming this node's missing ranks in err. The node's
 * lowest arrived rank prints it. It returns DLPAR_ERR_TIMEOUT after the
 * probes' window, and ends nothing. With in_mpi_init it probes from inside
 * Open MPI's MPI_Init, for dlpar.started rather than dlpar.host. */
int dlpar_pmix_diagnose(dlpar_ctx *ctx, double waited, bool in_mpi_init, dlpar_error *err);

#endif
