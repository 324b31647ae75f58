/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/bootstrap/bootstrap.h: what the rest of libdlpar asks of the
 * bootstrap. That is PMIx in pmixboot.c, the bounds on Open MPI's MPI_Init
 * in mpi_init_guard.c, and NCCL ids in ncclid.c. These functions return
 * statuses and end nothing. A rank missing past the rendezvous timeout is
 * returned as DLPAR_ERR_TIMEOUT, and the caller decides. */
#ifndef DLPAR_LIBDLPAR_BOOTSTRAP_H
#define DLPAR_LIBDLPAR_BOOTSTRAP_H

#include "libdlpar/internal.h"

/* bootstrap/pmixboot.c */
int dlpar_pmix_init(dlpar_ctx *ctx);
/* The one rendezvous puts this rank's host and pid, and the NCCL ids of the
 * groups that need one at init. Then each rank gets only its groups' ids.
 * A rank missing past the rendezvous timeout gives DLPAR_ERR_TIMEOUT, with
 * the line naming it in ctx->error, as dlpar_pmix_share does. The caller
 * decides. */
int dlpar_pmix_rendezvous(dlpar_ctx *ctx, bool exchange_nccl_ids);
/* At the first world collective on NCCL, this gets the world group's ids,
 * which its roots put at the rendezvous. */
int dlpar_pmix_world_ids(dlpar_ctx *ctx);
/* Whether the group gets NCCL ids at the rendezvous. */
bool dlpar_group_ids_at_init(const dlpar_ctx *ctx, dlpar_group group);
/* A fence without data, which says every rank got to `where`, such as "the
 * end of MPI_Init". Past the rendezvous timeout it returns
 * DLPAR_ERR_TIMEOUT, with a line naming where. */
int dlpar_pmix_barrier(dlpar_ctx *ctx, const char *where);
/* dlpar_share_from_root's exchange, as dlpar.h describes it. */
int dlpar_pmix_share(dlpar_ctx *ctx, const char *key, const char *text, char *out, size_t len);
/* After the rendezvous, the pid of every rank on this node but this one goes into ctx->peer_pid. */
int dlpar_pmix_peer_pids(dlpar_ctx *ctx);
/* bootstrap/mpi_init_guard.c bounds Open MPI 5's MPI_Init, called between
 * start and stop, by the rendezvous timeout. Past it, the ranks of this node
 * that never started are named and the step ends. stop returns the
 * dlpar_now() time when PMIx was up inside MPI_Init, or 0 if that was not
 * seen. */
typedef struct dlpar_init_guard dlpar_init_guard;
int dlpar_pmix_guard_start(dlpar_ctx *ctx, dlpar_init_guard **out);
double dlpar_pmix_guard_stop(dlpar_init_guard *guard);
/* Every rank out of MPI_Init before any MPI message: a fence, and the step
 * ends when a rank is not out within the rendezvous timeout. */
int dlpar_mpi_init_barrier(dlpar_ctx *ctx);
/* PMIx_Abort of the whole step. It does nothing outside PMIx or with ctx
 * NULL. Only end_step.c calls it, and then ends the process. */
void dlpar_pmix_abort(dlpar_ctx *ctx, int code, const char *message);
void dlpar_pmix_finalize(dlpar_ctx *ctx);
/* A text key published after the rendezvous with a put and a commit but no
 * fence, and read from a rank within `timeout` whole seconds, at least 1.
 * Neither records an error in ctx, because the watchdog's thread calls them. */
int dlpar_pmix_put_text(dlpar_ctx *ctx, const char *key, const char *text);
int dlpar_pmix_get_text(dlpar_ctx *ctx, int rank, const char *key, double timeout, char *out, size_t len);

/* bootstrap/ncclid.c: NCCL ids for the exchange. ncclGetUniqueId works without a GPU. */
int dlpar_nccl_make_id(dlpar_ctx *ctx, unsigned char id[DLPAR_NCCL_ID_BYTES]);
/* A group of `size` ranks has one bootstrap root, or one per ranks_per_root
 * where NCCL 2.23 or later has ncclCommInitRankScalable. */
int dlpar_nccl_roots(const dlpar_ctx *ctx, int size);
/* The group rank of root `index` of `roots`, spread as NCCL recommends. */
int dlpar_nccl_root_rank(int size, int roots, int index);
/* The one id of a group of one rank under DLPAR_NCCL_ONE_RANK=comm. Its
 * member is its root and exchanges the id with nobody. */
int dlpar_nccl_own_id(dlpar_ctx *ctx, dlpar_group_ids *ids);
void dlpar_nccl_ids_free(dlpar_nccl_ids *ids);

#endif
