/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/backends/backend_mpi.c: the CPU backend. MPI communicators with exactly
 * the grid's membership (MPI_Comm_split by dp rank for the tensor-parallel
 * groups, by tp rank for the data-parallel groups), blocking collectives
 * watched by the watchdog (a collective that does not finish within the
 * timeout ends the step). */
#include "config.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libdlpar/internal.h"
#include "libdlpar/backends/backends.h"
#include "libdlpar/bootstrap/bootstrap.h"
#include "libdlpar/ending/ending.h"
#include "libdlpar/telemetry/telemetry.h"

typedef struct {
  MPI_Comm comm[3];   /* indexed by dlpar_group */
  bool initialized_here;
  /* the posted stop agreement: a nonblocking allreduce (max) over world */
  MPI_Request stop_request;
  int stop_local, stop_global;
  /* the posted step-time gather: a nonblocking allgather over world */
  MPI_Request times_request;
  double times_local, *times_all;
} mpi_state;

/* On an MPI error: file:line, the call and MPI's words recorded in ctx
 * (dlpar_fail), whose status the function returns. */
#define MPI_TRY(call, ctx)                                                                 \
  do {                                                                                     \
    int rc_ = (call);                                                                      \
    if (rc_ != MPI_SUCCESS) {                                                              \
      char text_[MPI_MAX_ERROR_STRING];                                                    \
      int len_ = 0;                                                                        \
      MPI_Error_string(rc_, text_, &len_);                                                 \
      return dlpar_fail((ctx), DLPAR_ERR_MPI, "%s:%d: %s: %s", __FILE__, __LINE__, #call, text_); \
    }                                                                                      \
  } while (0)

static MPI_Datatype mpi_type(dlpar_dtype dtype)
{
  switch (dtype) {
  case DLPAR_FLOAT32: return MPI_FLOAT;
  case DLPAR_FLOAT64: return MPI_DOUBLE;
  case DLPAR_INT32: return MPI_INT32_T;
  case DLPAR_INT64: return MPI_INT64_T;
  default: return MPI_DATATYPE_NULL; /* bf16/fp16 have no MPI type */
  }
}

static MPI_Op mpi_op(dlpar_op op)
{
  return op == DLPAR_MAX ? MPI_MAX : op == DLPAR_MIN ? MPI_MIN : MPI_SUM;
}

static int check_args(dlpar_ctx *ctx, size_t count, dlpar_dtype dtype, dlpar_op op, void *stream)
{
  if (mpi_type(dtype) == MPI_DATATYPE_NULL)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "the MPI backend has no 16-bit float types (use float32 on CPUs)");
  if (op == DLPAR_AVG && (dtype == DLPAR_INT32 || dtype == DLPAR_INT64))
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "average of integers is not defined (use DLPAR_SUM)");
  if (count > INT_MAX)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "%zu elements exceed MPI's int count (split the buffer)", count);
  if (stream)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "the MPI backend takes no CUDA stream (pass NULL)");
  return DLPAR_OK;
}

static void scale(void *buf, size_t count, dlpar_dtype dtype, int members)
{
  if (dtype == DLPAR_FLOAT32) {
    float *x = buf;
    for (size_t i = 0; i < count; i++)
      x[i] /= (float)members;
  } else if (dtype == DLPAR_FLOAT64) {
    double *x = buf;
    for (size_t i = 0; i < count; i++)
      x[i] /= (double)members;
  }
}

static mpi_state *state_of(dlpar_ctx *ctx)
{
  return ctx->backend_state;
}

/* The state, and MPI itself unless the program started it. */
static int mpi_start(dlpar_ctx *ctx)
{
  mpi_state *st = calloc(1, sizeof(*st));
  int initialized = 0, provided = 0;
  if (!st)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  ctx->backend_state = st;
  for (int g = 0; g < 3; g++)
    st->comm[g] = MPI_COMM_NULL;
  MPI_TRY(MPI_Initialized(&initialized), ctx);
  if (!initialized) {
    MPI_TRY(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided), ctx);
    st->initialized_here = true;
  }
  return DLPAR_OK;
}

/* Open MPI 5's MPI_Init calls PMIx_Init only when PMIx is not initialised
 * yet, and otherwise never learns its own process name: it aborts ("An
 * error occurred in MPI_Init_thread on a NULL communicator", 5.0.7 on the
 * Debian 13 bed). There MPI starts before libdlpar's PMIx_Init, and its
 * modex is a fence that collects every rank's data (unless the user chose
 * otherwise), so no rank asks another node's server for a peer's address
 * later. Slurm 24.11's mpi/pmix_v5 cannot answer such a request on a step
 * that runs on nodes other than the allocation's first ones, and the rank
 * that asked waited without a limit. MPI_Init waits for every rank in
 * that fence: the guard (mpi_init_guard.c) bounds it by the rendezvous
 * timeout and names the ranks that never came, as the rendezvous would.
 * Open MPI 4.1 takes either order and keeps the older one (MPI once the
 * backend is chosen). */
int dlpar_mpi_start_early(dlpar_ctx *ctx)
{
#if OMPI_MAJOR_VERSION >= 5
  int rc;
  if (setenv("OMPI_MCA_pmix_base_async_modex", "0", 0) != 0 ||
      setenv("OMPI_MCA_pmix_base_collect_data", "1", 0) != 0)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "setenv OMPI_MCA_pmix_base_*: out of memory");
  dlpar_init_guard *guard;
  DLPAR_TRY(dlpar_pmix_guard_start(ctx, &guard));
  rc = mpi_start(ctx);
  ctx->phase_at[DLPAR_PHASE_PMIX] = dlpar_pmix_guard_stop(guard);
  ctx->backend = &dlpar_backend_mpi; /* so that dlpar_finalize ends MPI whatever happens next */
  return rc;
#else
  (void)ctx;
  return DLPAR_OK;
#endif
}

static int mpi_init(dlpar_ctx *ctx)
{
  mpi_state *st;
  int rank = -1, size = 0;
  if (!ctx->backend_state)
    DLPAR_TRY(mpi_start(ctx));
  st = state_of(ctx);
  /* No MPI message before every rank is out of MPI_Init: Open MPI 4.1.4's
   * TCP BTL calls a NULL handler (a crash) when a peer's first message
   * reaches a rank still inside it. */
  if (st->initialized_here)
    DLPAR_TRY(dlpar_mpi_init_barrier(ctx));
  MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &rank), ctx);
  MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &size), ctx);
  if (rank != ctx->info.rank || size != ctx->info.size)
    return dlpar_fail(ctx, DLPAR_ERR_MPI, "MPI_COMM_WORLD (rank %d of %d) does not match PMIx (rank %d of "
                      "%d): launch with srun --mpi=pmix or dlpar-run", rank, size, ctx->info.rank,
                      ctx->info.size);
  MPI_TRY(MPI_Comm_dup(MPI_COMM_WORLD, &st->comm[DLPAR_GROUP_WORLD]), ctx);
  MPI_TRY(MPI_Comm_set_errhandler(st->comm[DLPAR_GROUP_WORLD], MPI_ERRORS_RETURN), ctx);
  dlpar_phase_mark(ctx, DLPAR_PHASE_WORLD);
  MPI_TRY(MPI_Comm_split(st->comm[DLPAR_GROUP_WORLD], ctx->info.dp_rank, ctx->info.tp_rank,
                         &st->comm[DLPAR_GROUP_TP]), ctx);
  dlpar_phase_mark(ctx, DLPAR_PHASE_TP);
  MPI_TRY(MPI_Comm_split(st->comm[DLPAR_GROUP_WORLD], ctx->info.tp_rank, ctx->info.dp_rank,
                         &st->comm[DLPAR_GROUP_DP]), ctx);
  dlpar_phase_mark(ctx, DLPAR_PHASE_DP);
  if (!(st->times_all = calloc((size_t)size, sizeof(double))))
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  return DLPAR_OK;
}

static void mpi_finalize(dlpar_ctx *ctx)
{
  mpi_state *st = state_of(ctx);
  if (!st)
    return;
  for (int g = 0; g < 3; g++) {
    if (st->comm[g] != MPI_COMM_NULL)
      MPI_Comm_free(&st->comm[g]);
  }
  if (st->initialized_here)
    MPI_Finalize();
  free(st->times_all);
  free(st);
  ctx->backend_state = NULL;
}

static int mpi_allreduce(dlpar_ctx *ctx, dlpar_group group, void *buf, size_t count, dlpar_dtype dtype,
                         dlpar_op op, void *stream)
{
  int rc;
  DLPAR_TRY(check_args(ctx, count, dtype, op, stream));
  dlpar_inflight_begin(ctx, group, "allreduce");
  rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, mpi_type(dtype), mpi_op(op), state_of(ctx)->comm[group]);
  dlpar_inflight_end(ctx, group);
  MPI_TRY(rc, ctx);
  if (op == DLPAR_AVG)
    scale(buf, count, dtype, dlpar_group_size(ctx, group));
  return DLPAR_OK;
}

static int mpi_allgather(dlpar_ctx *ctx, dlpar_group group, const void *send, void *recv, size_t count,
                         dlpar_dtype dtype, void *stream)
{
  int rc;
  DLPAR_TRY(check_args(ctx, count, dtype, DLPAR_SUM, stream));
  dlpar_inflight_begin(ctx, group, "allgather");
  rc = MPI_Allgather(send, (int)count, mpi_type(dtype), recv, (int)count, mpi_type(dtype),
                     state_of(ctx)->comm[group]);
  dlpar_inflight_end(ctx, group);
  MPI_TRY(rc, ctx);
  return DLPAR_OK;
}

static int mpi_reduce_scatter(dlpar_ctx *ctx, dlpar_group group, const void *send, void *recv, size_t count,
                              dlpar_dtype dtype, dlpar_op op, void *stream)
{
  int rc;
  DLPAR_TRY(check_args(ctx, count, dtype, op, stream));
  dlpar_inflight_begin(ctx, group, "reduce_scatter");
  rc = MPI_Reduce_scatter_block(send, recv, (int)count, mpi_type(dtype), mpi_op(op), state_of(ctx)->comm[group]);
  dlpar_inflight_end(ctx, group);
  MPI_TRY(rc, ctx);
  if (op == DLPAR_AVG)
    scale(recv, count, dtype, dlpar_group_size(ctx, group));
  return DLPAR_OK;
}

static int mpi_broadcast(dlpar_ctx *ctx, dlpar_group group, void *buf, size_t count, dlpar_dtype dtype,
                         int root, void *stream)
{
  int rc;
  DLPAR_TRY(check_args(ctx, count, dtype, DLPAR_SUM, stream));
  dlpar_inflight_begin(ctx, group, "broadcast");
  rc = MPI_Bcast(buf, (int)count, mpi_type(dtype), root, state_of(ctx)->comm[group]);
  dlpar_inflight_end(ctx, group);
  MPI_TRY(rc, ctx);
  return DLPAR_OK;
}

static int mpi_barrier(dlpar_ctx *ctx, dlpar_group group)
{
  int rc;
  dlpar_inflight_begin(ctx, group, "barrier");
  rc = MPI_Barrier(state_of(ctx)->comm[group]);
  dlpar_inflight_end(ctx, group);
  MPI_TRY(rc, ctx);
  return DLPAR_OK;
}

static int mpi_poll(dlpar_ctx *ctx, double now, dlpar_error *err)
{
  for (int g = 0; g < 3; g++) {
    const dlpar_inflight *inflight = &ctx->inflight[g];
    const double waited = now - atomic_load(&inflight->since);
    if (atomic_load(&inflight->active) && waited > ctx->collective_timeout) {
      dlpar_timeout_message(ctx, (dlpar_group)g, inflight->op, waited, err);
      return DLPAR_ERR_TIMEOUT;
    }
  }
  return DLPAR_OK;
}

static int mpi_stop_post(dlpar_ctx *ctx, int local, void *stream)
{
  mpi_state *st = state_of(ctx);
  (void)stream; /* a host int: nothing to order against a device */
  st->stop_local = local;
  MPI_TRY(MPI_Iallreduce(&st->stop_local, &st->stop_global, 1, MPI_INT, MPI_MAX,
                         st->comm[DLPAR_GROUP_WORLD], &st->stop_request), ctx);
  return DLPAR_OK;
}

/* Completes a posted nonblocking collective on the world group, watched as `what`. */
static int wait_world(dlpar_ctx *ctx, MPI_Request *request, const char *what)
{
  int rc;
  dlpar_inflight_begin(ctx, DLPAR_GROUP_WORLD, what);
  rc = MPI_Wait(request, MPI_STATUS_IGNORE);
  dlpar_inflight_end(ctx, DLPAR_GROUP_WORLD);
  MPI_TRY(rc, ctx);
  return DLPAR_OK;
}

static int mpi_stop_wait(dlpar_ctx *ctx, int *global)
{
  mpi_state *st = state_of(ctx);
  int rc = wait_world(ctx, &st->stop_request, "stop agreement (allreduce)");
  if (rc == DLPAR_OK)
    *global = st->stop_global;
  return rc;
}

static int mpi_times_post(dlpar_ctx *ctx, double local, void *stream)
{
  mpi_state *st = state_of(ctx);
  (void)stream; /* host-side times */
  st->times_local = local;
  MPI_TRY(MPI_Iallgather(&st->times_local, 1, MPI_DOUBLE, st->times_all, 1, MPI_DOUBLE,
                         st->comm[DLPAR_GROUP_WORLD], &st->times_request), ctx);
  return DLPAR_OK;
}

static int mpi_times_wait(dlpar_ctx *ctx, double *all)
{
  mpi_state *st = state_of(ctx);
  int rc = wait_world(ctx, &st->times_request, "step-time gather (allgather)");
  if (rc == DLPAR_OK)
    memcpy(all, st->times_all, sizeof(double) * (size_t)ctx->info.size);
  return rc;
}

const dlpar_backend_ops dlpar_backend_mpi = {
    .id = DLPAR_BACKEND_MPI,
    .init = mpi_init,
    .finalize = mpi_finalize,
    .allreduce = mpi_allreduce,
    .allgather = mpi_allgather,
    .reduce_scatter = mpi_reduce_scatter,
    .broadcast = mpi_broadcast,
    .barrier = mpi_barrier,
    .poll = mpi_poll,
    .abort_comms = NULL,
    .stop_post = mpi_stop_post,
    .stop_wait = mpi_stop_wait,
    .times_post = mpi_times_post,
    .times_wait = mpi_times_wait,
};
