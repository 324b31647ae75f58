/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/backends/backend_nccl.c: the GPU backend. Each group, tp and dp,
 * and the world only when used, gets one NCCL communicator from the ids
 * exchanged over PMIx. It is initialised after cudaSetDevice with
 * ncclCommInitRankConfig, or in a bigger group with
 * ncclCommInitRankScalable from one bootstrap root per ranks_per_root
 * ranks. With DLPAR_NCCL_GROUPS=split, tp and dp are instead split from an
 * eager world, for comparison in bench/nccl-groups. Communicators are
 * non-blocking, so that set-up is bounded. A call answers ncclInProgress,
 * and ncclCommGetAsyncError is polled until it is done. A set-up that is
 * not done within the rendezvous timeout is aborted and names what this
 * node knows: a group member here that exited or is stopped, else the
 * members on other hosts. The world communicator is built at the first
 * device collective on the world group, its ids exchanged then, or at init
 * with DLPAR_NCCL_WORLD=eager. The stop agreement, the step-time gather
 * and, without a world communicator, the host and barrier world
 * collectives run over tp then dp, in collectives.c's composition, so
 * training never needs it. Host-memory
 * collectives go through a device staging buffer of the backend's, grown
 * on demand up to STAGING_MAX_BYTES, in chunks beyond that. Collectives
 * enqueue on the caller's stream, with stream semantics. The watchdog polls
 * ncclCommGetAsyncError and an event recorded after the last collective of
 * each group: an error or a collective that does not complete within the
 * timeout aborts the communicators and ends the step with a message naming
 * the group. A group of one rank has no communicator: its allreduce and
 * broadcast are no-ops, and its allgather and reduce-scatter a copy. With
 * DLPAR_NCCL_ONE_RANK=comm it has one, of one rank, from an id it made
 * itself, so that one GPU runs every path of this file: the non-blocking
 * set-up, each collective, graph capture and the watchdog's abort.
 *
 * For collectives captured in a CUDA graph, the watchdog events are
 * recorded as graph nodes with cudaEventRecordExternal, so every replay
 * records them again, and dlpar_graph_launched restarts their clocks at
 * each launch. */
#include "config.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "libdlpar/backends/backends.h"
#include "libdlpar/bootstrap/bootstrap.h"
#include "libdlpar/ending/ending.h"
#include "libdlpar/telemetry/telemetry.h"
#include "common/text.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "dlpar needs NCCL 2.14 or newer (non-blocking communicators)"
#endif

typedef struct {
  cudaEvent_t event;
  double since;
  const char *op;
  bool pending;
  bool in_graph;               /* one was captured in a graph: each launch restarts the clock */
} last_collective;

typedef struct {
  ncclComm_t comm[3];          /* indexed by dlpar_group */
  last_collective last[3];
  pthread_mutex_t lock;        /* guards last[] against the watchdog */
  cudaStream_t barrier_stream;
  int *device_ints;            /* [0] barrier, [1] stop agreement */
  int *stop_host;              /* pinned: [0] this rank's flag, [1] the world's max */
  cudaEvent_t stop_done;       /* recorded after the stop agreement's copy back */
  double *times_device;        /* the step-time gather: [0] this rank's, [1..size] everyone's, then the tp row */
  double *times_host;          /* pinned: [0] this rank's, [1..size] everyone's */
  cudaEvent_t times_done;      /* recorded after the gather's copy back */
  unsigned char *staging;      /* host collectives' device buffer, NULL until the first */
  size_t staging_bytes;
} nccl_state;

/* The host collectives' staging buffer never grows past this: bigger
 * buffers go in chunks. */
#define STAGING_MAX_BYTES ((size_t)16 << 20)

static nccl_state *state_of(dlpar_ctx *ctx)
{
  return ctx->backend_state;
}

/* The NIC the user pointed NCCL at, for messages, escaped because it is input. */
static dlpar_shown nic_hint(void)
{
  const char *hca = getenv("NCCL_IB_HCA"), *ifname = getenv("NCCL_SOCKET_IFNAME");
  return dlpar_show(hca ? hca : ifname ? ifname : "none exported (NCCL chooses)");
}

/* On a CUDA error, dlpar_fail records file:line, the call and
 * cudaGetErrorString in ctx, and the function returns its status. */
#define CUDA_TRY(call, ctx)                                                                    \
  do {                                                                                         \
    cudaError_t rc_ = (call);                                                                  \
    if (rc_ != cudaSuccess)                                                                    \
      return dlpar_fail((ctx), DLPAR_ERR_CUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call,     \
                        cudaGetErrorString(rc_));                                              \
  } while (0)

/* A call on a non-blocking communicator comm, waited for by nccl_wait_done.
 * On an error, file:line, the call and NCCL's words are recorded in ctx. */
#define NCCL_TRY(call, comm, ctx)                                                              \
  do {                                                                                         \
    ncclResult_t rc_ = nccl_wait_done((comm), (call), (ctx)->collective_timeout);              \
    if (rc_ != ncclSuccess)                                                                    \
      return dlpar_fail((ctx), DLPAR_ERR_NCCL, "%s:%d: %s: %s: %s (NIC hint: %s; NCCL_DEBUG=INFO "  \
                        "says more)", __FILE__, __LINE__, #call, ncclGetErrorString(rc_),      \
                        ncclGetLastError(NULL), nic_hint().text);                              \
  } while (0)

/* Every communicator of this backend: non-blocking. */
static ncclConfig_t comm_config(void)
{
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

/* A non-blocking call's outcome: `rc`, or while that is ncclInProgress, the
 * communicator's state, polled until it is settled. When `seconds` pass
 * first, it is ncclInProgress. */
static ncclResult_t nccl_wait_done(ncclComm_t comm, ncclResult_t rc, double seconds)
{
  const double deadline = dlpar_now() + seconds;
  long pause_us = 20;
  while (rc == ncclInProgress && dlpar_now() < deadline) {
    usleep((useconds_t)pause_us);
    pause_us = pause_us < 10000 ? 2 * pause_us : pause_us;
    if (ncclCommGetAsyncError(comm, &rc) != ncclSuccess)
      return ncclInternalError;
  }
  return rc;
}

static ncclDataType_t nccl_type(dlpar_dtype dtype)
{
  switch (dtype) {
  case DLPAR_FLOAT64: return ncclFloat64;
  case DLPAR_INT32: return ncclInt32;
  case DLPAR_INT64: return ncclInt64;
  case DLPAR_BFLOAT16: return ncclBfloat16;
  case DLPAR_FLOAT16: return ncclFloat16;
  default: return ncclFloat32;
  }
}

static ncclRedOp_t nccl_op(dlpar_op op)
{
  switch (op) {
  case DLPAR_AVG: return ncclAvg;
  case DLPAR_MAX: return ncclMax;
  case DLPAR_MIN: return ncclMin;
  default: return ncclSum;
  }
}

/* ncclCommInitRank from the group's one id, or ncclCommInitRankScalable
 * from several, one per bootstrap root. With DLPAR_NCCL_GROUPS=split, tp
 * and dp instead take ncclCommSplit of the world's, where `color`, the
 * other coordinate, names the group and `rank` orders it. */
static ncclResult_t make_comm(dlpar_ctx *ctx, dlpar_group group, int rank, int color, ncclComm_t *comm,
                              const char **how)
{
  const dlpar_group_ids *ids = &ctx->nccl_ids.group[group];
  const int size = dlpar_group_size(ctx, group);
  ncclConfig_t config = comm_config();
  ncclUniqueId unique;
  if (ctx->nccl_split && group != DLPAR_GROUP_WORLD) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
    *how = "ncclCommSplit";
    return ncclCommSplit(state_of(ctx)->comm[DLPAR_GROUP_WORLD], color, rank, comm, &config);
#else
    (void)color;
    *how = "ncclCommSplit (NCCL 2.18+; unset DLPAR_NCCL_GROUPS)";
    return ncclInvalidUsage;
#endif
  }
  if (ids->count > 1) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 23, 0)
    *how = "ncclCommInitRankScalable";
    return ncclCommInitRankScalable(comm, size, rank, ids->count, (ncclUniqueId *)ids->ids, &config);
#endif
  }
  *how = "ncclCommInitRankConfig";
  if (ids->count < 1)
    return ncclInvalidUsage; /* no id exchanged: a bug */
  memcpy(&unique, ids->ids[0], sizeof(unique));
  return ncclCommInitRankConfig(comm, size, unique, rank, &config);
}

/* A set-up past the rendezvous timeout: aborted, and what this node knows. */
static int setup_timed_out(dlpar_ctx *ctx, dlpar_group group, ncclComm_t comm, const char *how)
{
  char name[128], suspects[256];
  ncclCommAbort(comm);
  dlpar_describe_group(ctx, group, name, sizeof(name));
  dlpar_watchdog_suspects(ctx, group, suspects, sizeof(suspects));
  return dlpar_fail(ctx, DLPAR_ERR_TIMEOUT, "rank %d on %s: %s for the %s did not finish within %.0f s: %s (see that "
                    "rank's output; NIC hint: %s; raise DLPAR_RENDEZVOUS_TIMEOUT if set-up is just slow)",
                    ctx->info.rank, ctx->info.host, how, name, ctx->rendezvous_timeout, suspects, nic_hint().text);
}

/* The group's communicator. A group of one rank has none, unless
 * DLPAR_NCCL_ONE_RANK=comm. */
static int init_comm(dlpar_ctx *ctx, dlpar_group group, int rank, int color)
{
  nccl_state *st = state_of(ctx);
  ncclComm_t comm = NULL;
  const char *how = "ncclCommInitRankConfig";
  char name[128];
  ncclResult_t rc;
  if (dlpar_group_size(ctx, group) == 1 && !ctx->one_rank_comms)
    return DLPAR_OK;
  rc = make_comm(ctx, group, rank, color, &comm, &how);
  if (comm && (rc == ncclSuccess || rc == ncclInProgress))
    rc = nccl_wait_done(comm, ncclInProgress, ctx->rendezvous_timeout);
  if (rc == ncclInProgress)
    return setup_timed_out(ctx, group, comm, how);
  if (rc != ncclSuccess) {
    if (comm)
      ncclCommAbort(comm);
    dlpar_describe_group(ctx, group, name, sizeof(name));
    return dlpar_fail(ctx, DLPAR_ERR_NCCL, "%s for the %s on device %d: %s: %s (NIC hint: %s; NCCL_DEBUG=INFO "
                      "says more)", how, name, ctx->info.device, ncclGetErrorString(rc), ncclGetLastError(NULL),
                      nic_hint().text);
  }
  CUDA_TRY(cudaEventCreateWithFlags(&st->last[group].event, cudaEventDisableTiming), ctx);
  dlpar_phase_mark(ctx, group == DLPAR_GROUP_WORLD ? DLPAR_PHASE_WORLD
                        : group == DLPAR_GROUP_TP  ? DLPAR_PHASE_TP
                                                   : DLPAR_PHASE_DP);
  pthread_mutex_lock(&st->lock); /* the watchdog polls the communicators */
  st->comm[group] = comm;
  pthread_mutex_unlock(&st->lock);
  return DLPAR_OK;
}

/* The group's communicator for a collective. The world's is built at its
 * first use, outside graph capture, and every rank calls it, as for any
 * collective. */
static int comm_of(dlpar_ctx *ctx, dlpar_group group, void *stream, ncclComm_t *comm)
{
  nccl_state *st = state_of(ctx);
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  *comm = st->comm[group];
  if (*comm || group != DLPAR_GROUP_WORLD || ctx->info.size == 1)
    return DLPAR_OK;
  CUDA_TRY(cudaStreamIsCapturing((cudaStream_t)stream, &capture), ctx);
  if (capture != cudaStreamCaptureStatusNone)
    return dlpar_fail(ctx, DLPAR_ERR_STATE, "the first collective on the world group is inside a CUDA graph capture: "
                      "run one world collective before capturing, or set DLPAR_NCCL_WORLD=eager");
  DLPAR_TRY(dlpar_pmix_world_ids(ctx));
  DLPAR_TRY(init_comm(ctx, DLPAR_GROUP_WORLD, ctx->info.rank, 0));
  *comm = st->comm[group];
  return DLPAR_OK;
}

static int nccl_init(dlpar_ctx *ctx)
{
  nccl_state *st = calloc(1, sizeof(*st));
  int rc;
  if (!st)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  ctx->backend_state = st;
  pthread_mutex_init(&st->lock, NULL);
  if (!ctx->nccl_ids.valid)
    return dlpar_fail(ctx, DLPAR_ERR_STATE, "NCCL ids were not exchanged");
  if ((dlpar_group_ids_at_init(ctx, DLPAR_GROUP_WORLD) && (rc = init_comm(ctx, DLPAR_GROUP_WORLD, ctx->info.rank, 0))) ||
      (rc = init_comm(ctx, DLPAR_GROUP_TP, ctx->info.tp_rank, ctx->info.dp_rank)) ||
      (rc = init_comm(ctx, DLPAR_GROUP_DP, ctx->info.dp_rank, ctx->info.tp_rank)))
    return rc;
  CUDA_TRY(cudaStreamCreateWithFlags(&st->barrier_stream, cudaStreamNonBlocking), ctx);
  CUDA_TRY(cudaMalloc((void **)&st->device_ints, 2 * sizeof(int)), ctx);
  CUDA_TRY(cudaHostAlloc((void **)&st->stop_host, 2 * sizeof(int), cudaHostAllocDefault), ctx);
  CUDA_TRY(cudaEventCreateWithFlags(&st->stop_done, cudaEventDisableTiming), ctx);
  CUDA_TRY(cudaMalloc((void **)&st->times_device, sizeof(double) * (size_t)(ctx->info.size + 1 + ctx->grid.tp)), ctx);
  CUDA_TRY(cudaHostAlloc((void **)&st->times_host, sizeof(double) * (size_t)(ctx->info.size + 1),
                         cudaHostAllocDefault), ctx);
  CUDA_TRY(cudaEventCreateWithFlags(&st->times_done, cudaEventDisableTiming), ctx);
  return DLPAR_OK;
}

static void nccl_finalize(dlpar_ctx *ctx)
{
  nccl_state *st = state_of(ctx);
  if (!st)
    return;
  for (int g = 0; g < 3; g++) {
    if (st->comm[g]) { /* finalize flushes this rank's operations: bounded like a collective */
      if (nccl_wait_done(st->comm[g], ncclCommFinalize(st->comm[g]), ctx->collective_timeout) == ncclSuccess)
        ncclCommDestroy(st->comm[g]);
      else
        ncclCommAbort(st->comm[g]);
    }
    if (st->last[g].event)
      cudaEventDestroy(st->last[g].event);
  }
  if (st->stop_done)
    cudaEventDestroy(st->stop_done);
  if (st->times_done)
    cudaEventDestroy(st->times_done);
  cudaFreeHost(st->times_host);
  cudaFree(st->times_device);
  cudaFree(st->staging);
  if (st->stop_host)
    cudaFreeHost(st->stop_host);
  if (st->device_ints)
    cudaFree(st->device_ints);
  if (st->barrier_stream)
    cudaStreamDestroy(st->barrier_stream);
  pthread_mutex_destroy(&st->lock);
  free(st);
  ctx->backend_state = NULL;
}

/* After enqueueing, remember when, so the watchdog can time it. Inside a
 * graph capture the event record becomes a node of the graph, re-recorded
 * by every replay, and the clock starts at dlpar_graph_launched. */
static int track(dlpar_ctx *ctx, dlpar_group group, const char *op, void *stream)
{
  nccl_state *st = state_of(ctx);
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t rc = cudaStreamIsCapturing((cudaStream_t)stream, &capture);
  const bool captured = capture == cudaStreamCaptureStatusActive;
  pthread_mutex_lock(&st->lock);
  if (rc == cudaSuccess)
    rc = cudaEventRecordWithFlags(st->last[group].event, (cudaStream_t)stream,
                                  captured ? cudaEventRecordExternal : cudaEventRecordDefault);
  st->last[group].since = dlpar_now();
  st->last[group].op = op;
  st->last[group].in_graph |= captured;
  st->last[group].pending = rc == cudaSuccess && !captured;
  pthread_mutex_unlock(&st->lock);
  CUDA_TRY(rc, ctx);
  return DLPAR_OK;
}

/* A graph holding captured collectives was launched: time them from now. */
static void nccl_graph_launched(dlpar_ctx *ctx)
{
  nccl_state *st = state_of(ctx);
  const double now = dlpar_now();
  pthread_mutex_lock(&st->lock);
  for (int g = 0; g < 3; g++) {
    if (st->last[g].in_graph) {
      st->last[g].since = now;
      st->last[g].pending = true;
    }
  }
  pthread_mutex_unlock(&st->lock);
}

/* In a 1-rank group the result is the input, copied when out of place. */
static int local_copy(dlpar_ctx *ctx, const void *send, void *recv, size_t count, dlpar_dtype dtype, void *stream)
{
  if (send != recv)
    CUDA_TRY(cudaMemcpyAsync(recv, send, count * dlpar_dtype_size(dtype), cudaMemcpyDeviceToDevice,
                             (cudaStream_t)stream), ctx);
  return DLPAR_OK;
}

static int nccl_allreduce(dlpar_ctx *ctx, dlpar_group group, void *buf, size_t count, dlpar_dtype dtype,
                          dlpar_op op, void *stream)
{
  ncclComm_t comm;
  int rc = comm_of(ctx, group, stream, &comm);
  if (rc != DLPAR_OK || !comm)
    return rc;
  NCCL_TRY(ncclAllReduce(buf, buf, count, nccl_type(dtype), nccl_op(op), comm, (cudaStream_t)stream), comm, ctx);
  return track(ctx, group, "allreduce", stream);
}

static int nccl_allgather(dlpar_ctx *ctx, dlpar_group group, const void *send, void *recv, size_t count,
                          dlpar_dtype dtype, void *stream)
{
  ncclComm_t comm;
  int rc = comm_of(ctx, group, stream, &comm);
  if (rc != DLPAR_OK || !comm)
    return rc != DLPAR_OK ? rc : local_copy(ctx, send, recv, count, dtype, stream);
  NCCL_TRY(ncclAllGather(send, recv, count, nccl_type(dtype), comm, (cudaStream_t)stream), comm, ctx);
  return track(ctx, group, "allgather", stream);
}

static int nccl_reduce_scatter(dlpar_ctx *ctx, dlpar_group group, const void *send, void *recv,
                               size_t count, dlpar_dtype dtype, dlpar_op op, void *stream)
{
  ncclComm_t comm;
  int rc = comm_of(ctx, group, stream, &comm);
  if (rc != DLPAR_OK || !comm)
    return rc != DLPAR_OK ? rc : local_copy(ctx, send, recv, count, dtype, stream);
  NCCL_TRY(ncclReduceScatter(send, recv, count, nccl_type(dtype), nccl_op(op), comm, (cudaStream_t)stream), comm, ctx);
  return track(ctx, group, "reduce_scatter", stream);
}

static int nccl_broadcast(dlpar_ctx *ctx, dlpar_group group, void *buf, size_t count, dlpar_dtype dtype,
                          int root, void *stream)
{
  ncclComm_t comm;
  int rc = comm_of(ctx, group, stream, &comm);
  if (rc != DLPAR_OK || !comm)
    return rc;
  NCCL_TRY(ncclBroadcast(buf, buf, count, nccl_type(dtype), root, comm, (cudaStream_t)stream), comm, ctx);
  return track(ctx, group, "broadcast", stream);
}

/* A barrier: a one-int allreduce on the backend's own stream, waited for. */
static int nccl_barrier(dlpar_ctx *ctx, dlpar_group group)
{
  nccl_state *st = state_of(ctx);
  DLPAR_TRY(nccl_allreduce(ctx, group, &st->device_ints[0], 1, DLPAR_INT32, DLPAR_SUM, st->barrier_stream));
  CUDA_TRY(cudaStreamSynchronize(st->barrier_stream), ctx);
  return DLPAR_OK;
}

/* This runs in the caller's stream, behind the step's work, because one
 * stream keeps every rank's NCCL calls in one order. The flag goes in, the
 * max is taken over tp then over dp, which is the world's max without a
 * world communicator, and the result goes out to pinned memory. Then
 * comes an event that stop_wait waits for. The pinned ints are rewritten
 * only after that wait. */
static int nccl_stop_post(dlpar_ctx *ctx, int local, void *stream)
{
  nccl_state *st = state_of(ctx);
  st->stop_host[0] = local;
  CUDA_TRY(cudaMemcpyAsync(&st->device_ints[1], &st->stop_host[0], sizeof(int), cudaMemcpyHostToDevice,
                           (cudaStream_t)stream), ctx);
  DLPAR_TRY(dlpar_world_allreduce_by_groups(ctx, nccl_allreduce, &st->device_ints[1], 1, DLPAR_INT32, DLPAR_MAX,
                                            stream));
  CUDA_TRY(cudaMemcpyAsync(&st->stop_host[1], &st->device_ints[1], sizeof(int), cudaMemcpyDeviceToHost,
                           (cudaStream_t)stream), ctx);
  CUDA_TRY(cudaEventRecord(st->stop_done, (cudaStream_t)stream), ctx);
  return DLPAR_OK;
}

/* A peer that never posts leaves the allreduce pending: the watchdog times it. */
static int nccl_stop_wait(dlpar_ctx *ctx, int *global)
{
  nccl_state *st = state_of(ctx);
  CUDA_TRY(cudaEventSynchronize(st->stop_done), ctx);
  *global = st->stop_host[1];
  return DLPAR_OK;
}

/* As the stop agreement, this runs in the caller's stream behind the step's
 * work, over tp then dp without a world communicator. The copy goes back
 * to pinned memory, then comes an event that times_wait waits for. */
static int nccl_times_post(dlpar_ctx *ctx, double local, void *stream)
{
  nccl_state *st = state_of(ctx);
  st->times_host[0] = local;
  CUDA_TRY(cudaMemcpyAsync(st->times_device, st->times_host, sizeof(double), cudaMemcpyHostToDevice,
                           (cudaStream_t)stream), ctx);
  DLPAR_TRY(dlpar_world_allgather_by_groups(ctx, nccl_allgather, st->times_device,
                                            st->times_device + 1 + ctx->info.size, st->times_device + 1, 1,
                                            DLPAR_FLOAT64, stream));
  CUDA_TRY(cudaMemcpyAsync(st->times_host + 1, st->times_device + 1,
                           sizeof(double) * (size_t)ctx->info.size,
                           cudaMemcpyDeviceToHost, (cudaStream_t)stream), ctx);
  CUDA_TRY(cudaEventRecord(st->times_done, (cudaStream_t)stream), ctx);
  return DLPAR_OK;
}

static int nccl_times_wait(dlpar_ctx *ctx, double *all)
{
  nccl_state *st = state_of(ctx);
  CUDA_TRY(cudaEventSynchronize(st->times_done), ctx);
  memcpy(all, st->times_host + 1, sizeof(double) * (size_t)ctx->info.size);
  return DLPAR_OK;
}

/* The staging buffer of at least `bytes`, where at most STAGING_MAX_BYTES is asked for. */
static int staging_reserve(dlpar_ctx *ctx, size_t bytes)
{
  nccl_state *st = state_of(ctx);
  if (bytes <= st->staging_bytes)
    return DLPAR_OK;
  CUDA_TRY(cudaFree(st->staging), ctx);
  st->staging = NULL;
  st->staging_bytes = 0;
  CUDA_TRY(cudaMalloc((void **)&st->staging, bytes), ctx);
  st->staging_bytes = bytes;
  return DLPAR_OK;
}

/* Host collectives start once the device has finished what the program
 * queued, because their values may come from it and one communicator's
 * collectives must not overlap. They run on the backend's own stream. */
static int host_collective_start(dlpar_ctx *ctx, size_t bytes)
{
  CUDA_TRY(cudaDeviceSynchronize(), ctx);
  return staging_reserve(ctx, bytes);
}

/* Chunks of at most STAGING_MAX_BYTES: in, allreduce in place, out. */
static int nccl_host_allreduce(dlpar_ctx *ctx, dlpar_group group, void *buf, size_t count, dlpar_dtype dtype,
                               dlpar_op op, void *stream)
{
  nccl_state *st = state_of(ctx);
  const size_t elem = dlpar_dtype_size(dtype), chunk = STAGING_MAX_BYTES / elem;
  (void)stream;
  DLPAR_TRY(host_collective_start(ctx, (count < chunk ? count : chunk) * elem));
  for (size_t done = 0; done < count; done += chunk) {
    const size_t n = count - done < chunk ? count - done : chunk;
    unsigned char *host = (unsigned char *)buf + done * elem;
    CUDA_TRY(cudaMemcpyAsync(st->staging, host, n * elem, cudaMemcpyHostToDevice, st->barrier_stream), ctx);
    DLPAR_TRY(nccl_allreduce(ctx, group, st->staging, n, dtype, op, st->barrier_stream));
    CUDA_TRY(cudaMemcpyAsync(host, st->staging, n * elem, cudaMemcpyDeviceToHost, st->barrier_stream), ctx);
    CUDA_TRY(cudaStreamSynchronize(st->barrier_stream), ctx);
  }
  return DLPAR_OK;
}

/* Chunks of `chunk` elements per rank: this rank's in, the group's
 * gathered after it, each rank's piece out to its place in recv. */
static int nccl_host_allgather(dlpar_ctx *ctx, dlpar_group group, const void *send, void *recv, size_t count,
                               dlpar_dtype dtype, void *stream)
{
  nccl_state *st = state_of(ctx);
  const size_t elem = dlpar_dtype_size(dtype), ranks = (size_t)dlpar_group_size(ctx, group);
  const size_t fit = STAGING_MAX_BYTES / ((ranks + 1) * elem), chunk = fit < 1 ? 1 : fit;
  (void)stream;
  DLPAR_TRY(host_collective_start(ctx, (ranks + 1) * (count < chunk ? count : chunk) * elem));
  for (size_t done = 0; done < count; done += chunk) {
    const size_t n = count - done < chunk ? count - done : chunk, piece = n * elem;
    unsigned char *gathered = st->staging + piece;
    CUDA_TRY(cudaMemcpyAsync(st->staging, (const unsigned char *)send + done * elem, piece,
                             cudaMemcpyHostToDevice, st->barrier_stream), ctx);
    DLPAR_TRY(nccl_allgather(ctx, group, st->staging, gathered, n, dtype, st->barrier_stream));
    const size_t copies = n == count ? 1 : ranks, copy_bytes = n == count ? ranks * piece : piece; /* one chunk: in place */
    for (size_t r = 0; r < copies; r++)
      CUDA_TRY(cudaMemcpyAsync((unsigned char *)recv + (r * count + done) * elem, gathered + r * piece,
                               copy_bytes, cudaMemcpyDeviceToHost, st->barrier_stream), ctx);
    CUDA_TRY(cudaStreamSynchronize(st->barrier_stream), ctx);
  }
  return DLPAR_OK;
}

static bool nccl_has_world(const dlpar_ctx *ctx)
{
  return ctx->info.size == 1 || ((const nccl_state *)ctx->backend_state)->comm[DLPAR_GROUP_WORLD] != NULL;
}

/* Runs on the watchdog thread, which may query events while the trainer
 * captures a CUDA graph in global mode, with `cuda_graph: true`. In relaxed
 * mode this thread's queries leave that capture valid. PyTorch's NCCL
 * watchdog broke captures so, in pytorch#104555 and #148594. */
static int nccl_poll(dlpar_ctx *ctx, double now, dlpar_error *err)
{
  nccl_state *st = state_of(ctx);
  enum cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
  char group[128];
  (void)cudaThreadExchangeStreamCaptureMode(&relaxed); /* this thread's mode only; nothing to do if it fails */
  for (int g = 0; g < 3; g++) {
    ncclResult_t async = ncclSuccess;
    double waited = 0;
    const char *op = NULL;
    ncclComm_t comm;
    pthread_mutex_lock(&st->lock); /* the world's may be being built */
    comm = st->comm[g];
    pthread_mutex_unlock(&st->lock);
    if (comm && ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess &&
        async != ncclInProgress) {
      dlpar_describe_group(ctx, (dlpar_group)g, group, sizeof(group));
      return dlpar_error_set(err, DLPAR_ERR_NCCL, "rank %d on %s: NCCL error on the %s: %s: %s (NIC hint: %s)",
                             ctx->info.rank, ctx->info.host, group, ncclGetErrorString(async), ncclGetLastError(comm),
                             nic_hint().text);
    }
    pthread_mutex_lock(&st->lock);
    if (st->last[g].pending) {
      if (cudaEventQuery(st->last[g].event) != cudaErrorNotReady)
        st->last[g].pending = false;
      else if (now - st->last[g].since > ctx->collective_timeout) {
        waited = now - st->last[g].since;
        op = st->last[g].op;
      }
    }
    pthread_mutex_unlock(&st->lock);
    if (op) {
      dlpar_timeout_message(ctx, (dlpar_group)g, op, waited, err);
      return DLPAR_ERR_TIMEOUT;
    }
  }
  return DLPAR_OK;
}

static void nccl_abort_comms(dlpar_ctx *ctx)
{
  nccl_state *st = state_of(ctx);
  for (int g = 0; st && g < 3; g++) {
    if (st->comm[g])
      ncclCommAbort(st->comm[g]);
    st->comm[g] = NULL;
  }
}

const dlpar_backend_ops dlpar_backend_nccl = {
    .id = DLPAR_BACKEND_NCCL,
    .init = nccl_init,
    .finalize = nccl_finalize,
    .allreduce = nccl_allreduce,
    .allgather = nccl_allgather,
    .reduce_scatter = nccl_reduce_scatter,
    .broadcast = nccl_broadcast,
    .barrier = nccl_barrier,
    .poll = nccl_poll,
    .abort_comms = nccl_abort_comms,
    .stop_post = nccl_stop_post,
    .stop_wait = nccl_stop_wait,
    .times_post = nccl_times_post,
    .times_wait = nccl_times_wait,
    .graph_launched = nccl_graph_launched,
    .host_allreduce = nccl_host_allreduce,
    .host_allgather = nccl_host_allgather,
    .has_world = nccl_has_world,
};
