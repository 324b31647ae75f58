/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/pmixboot.c: everything libdlpar asks of PMIx. Init and the job's
 * shape (size, local rank and size, every rank's host: job-level data the
 * server already holds), then the one rendezvous: each rank puts its host
 * and pid (and, as a bootstrap root of a group, an NCCL id), commits, and
 * joins one fence that carries no data (direct modex): afterwards each rank
 * gets only the keys it needs (its groups' roots' ids; its own node's pids),
 * so a node receives O(its ranks' groups' roots) bytes, not O(job size).
 * The world's roots put its ids too, but they are got only at its first
 * collective (unless asked for at init). A fence that does not complete within the timeout is
 * diagnosed (which ranks never arrived, on which hosts) and ends the step
 * with PMIx_Abort; so is an Open MPI 5 MPI_Init that does not return (the
 * init guard). */
#include "config.h"

#include <pmix.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "common/text.h"

#define PMIX_TRY(ctx, call)                                                                    \
  do {                                                                                         \
    pmix_status_t rc_ = (call);                                                                \
    if (rc_ != PMIX_SUCCESS)                                                                   \
      return dlpar_fail(ctx, DLPAR_ERR_PMIX, "%s:%d: %s: %s", __FILE__, __LINE__, #call,       \
                        PMIx_Error_string(rc_));                                               \
  } while (0)

static pmix_proc_t proc_of(const dlpar_ctx *ctx, pmix_rank_t rank)
{
  pmix_proc_t proc;
  PMIX_PROC_LOAD(&proc, ctx->nspace, rank);
  return proc;
}

/* PMIx_Get that checks the status and the type before touching the value. */
static int get_value(dlpar_ctx *ctx, pmix_rank_t rank, const char *key, pmix_data_type_t type,
                     pmix_value_t **value)
{
  const pmix_proc_t proc = proc_of(ctx, rank);
  pmix_status_t rc = PMIx_Get(&proc, key, NULL, 0, value);
  if (rc != PMIX_SUCCESS || !*value)
    return dlpar_fail(ctx, DLPAR_ERR_PMIX, "PMIx_Get(%s, rank %u): %s (is the PMIx server complete? "
                      "use srun --mpi=pmix or dlpar-run)", key, rank, PMIx_Error_string(rc));
  if ((*value)->type != type) {
    PMIX_VALUE_RELEASE(*value);
    return dlpar_fail(ctx, DLPAR_ERR_PMIX, "PMIx_Get(%s, rank %u): unexpected type %s", key, rank,
                      PMIx_Data_type_string((*value)->type));
  }
  return DLPAR_OK;
}

static int get_u32(dlpar_ctx *ctx, pmix_rank_t rank, const char *key, unsigned *out)
{
  pmix_value_t *value = NULL;
  int rc = get_value(ctx, rank, key, PMIX_UINT32, &value);
  if (rc == DLPAR_OK) {
    *out = value->data.uint32;
    PMIX_VALUE_RELEASE(value);
  }
  return rc;
}

/* A rank's host as PMIx names it. PMIx 5's client answers PMIX_HOSTNAME for
 * its own rank itself, with the machine's host name, while Slurm 24.11's
 * mpi/pmix_v5 server gives every other rank Slurm's node name, which can
 * differ (emulated nodes, NodeHostname aliases); so under Slurm the own
 * rank's host is SLURMD_NODENAME, the name Slurm 22.05 with PMIx 4 gives
 * for every rank. */
static const char *host_name(const dlpar_ctx *ctx, int rank, const char *from_pmix)
{
#if PMIX_VERSION_MAJOR >= 5
  const char *slurm_node = getenv("SLURMD_NODENAME");
  if (rank == ctx->info.rank && slurm_node && *slurm_node)
    return slurm_node;
#else
  (void)ctx;
  (void)rank;
#endif
  return from_pmix;
}

static int read_hosts(dlpar_ctx *ctx)
{
  int nnodes = 0;
  for (int rank = 0; rank < ctx->info.size; rank++) {
    pmix_value_t *value = NULL;
    int rc = get_value(ctx, (pmix_rank_t)rank, PMIX_HOSTNAME, PMIX_STRING, &value);
    if (rc != DLPAR_OK)
      return rc;
    snprintf(ctx->hosts[rank], sizeof(ctx->hosts[rank]), "%s", host_name(ctx, rank, value->data.string));
    PMIX_VALUE_RELEASE(value);
    ctx->rank_node[rank] = nnodes;
    for (int earlier = 0; earlier < rank; earlier++) {
      if (strcmp(ctx->hosts[earlier], ctx->hosts[rank]) == 0) {
        ctx->rank_node[rank] = ctx->rank_node[earlier];
        break;
      }
    }
    nnodes += ctx->rank_node[rank] == nnodes;
  }
  ctx->info.nnodes = nnodes;
  return DLPAR_OK;
}

static int alloc_ranks(dlpar_ctx *ctx)
{
  ctx->hosts = calloc((size_t)ctx->info.size, sizeof(*ctx->hosts));
  ctx->rank_node = calloc((size_t)ctx->info.size, sizeof(int));
  if (!ctx->hosts || !ctx->rank_node)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory for %d %s", ctx->info.size,
                      dlpar_plural(ctx->info.size, "rank", "ranks"));
  return DLPAR_OK;
}

int dlpar_pmix_init(dlpar_ctx *ctx)
{
  pmix_proc_t me;
  unsigned size = 1, local_size = 1;
  pmix_value_t *value = NULL;
  int rc;
  if (!getenv("PMIX_NAMESPACE")) { /* a plain run: one rank */
    ctx->info.size = ctx->info.local_size = ctx->info.nnodes = 1;
    if ((rc = alloc_ranks(ctx)) != DLPAR_OK)
      return rc;
    gethostname(ctx->hosts[0], sizeof(ctx->hosts[0]) - 1);
    snprintf(ctx->info.host, sizeof(ctx->info.host), "%s", ctx->hosts[0]);
    return DLPAR_OK;
  }
  PMIX_TRY(ctx, PMIx_Init(&me, NULL, 0));
  ctx->pmix = true;
  snprintf(ctx->nspace, sizeof(ctx->nspace), "%s", me.nspace);
  ctx->info.rank = (int)me.rank;
  DLPAR_TRY(get_u32(ctx, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &size));
  DLPAR_TRY(get_u32(ctx, PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, &local_size));
  DLPAR_TRY(get_value(ctx, me.rank, PMIX_LOCAL_RANK, PMIX_UINT16, &value));
  ctx->info.local_rank = value->data.uint16;
  PMIX_VALUE_RELEASE(value);
  ctx->info.size = (int)size;
  ctx->info.local_size = (int)local_size;
  DLPAR_TRY(alloc_ranks(ctx));
  DLPAR_TRY(read_hosts(ctx));
  snprintf(ctx->info.host, sizeof(ctx->info.host), "%s", ctx->hosts[ctx->info.rank]);
  ctx->info.node = ctx->rank_node[ctx->info.rank];
  return DLPAR_OK;
}

/* ---------------------------------------------------------------- waiting */

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t done_cond;
  int pending;                 /* callbacks still to come */
  pmix_status_t status;
  pmix_status_t *per_rank;     /* diagnosis: one status per rank */
} waiter;

static void waiter_init(waiter *w, int pending)
{
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->done_cond, NULL);
  w->pending = pending;
  w->status = PMIX_SUCCESS;
  w->per_rank = NULL;
}

/* Waits until no callback is pending or `seconds` pass; 1 if all arrived. */
static int waiter_wait(waiter *w, double seconds)
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

static void fence_done(pmix_status_t status, void *cbdata)
{
  waiter *w = cbdata;
  pthread_mutex_lock(&w->lock);
  w->status = status;
  w->pending--;
  pthread_cond_signal(&w->done_cond);
  pthread_mutex_unlock(&w->lock);
}

typedef struct {
  waiter *w;
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

/* After a timed-out fence: which ranks of this node never put their data?
 * Their keys are local, answered at once by this node's server (a get of
 * a remote rank's key would be a request to its node, held there while the
 * rank is missing: at scale, N probes per rank). The lowest arrived rank of
 * each node names its node's missing ranks in one line; rank 0, when its
 * node is complete, says the missing ranks are elsewhere; the others stay
 * quiet. Each aborts only after the probe window, so the lines get out. */
#define PROBE_SECONDS 3.0

/* The key a probe asks for: dlpar.host, put at the rendezvous; or, from
 * inside Open MPI 5's MPI_Init (where no rank has put that yet),
 * dlpar.started, put by each rank's init guard as soon as PMIx is up in
 * there: a rank that has it started and is held in MPI_Init as well, not
 * missing. (Whether a rank committed no such key, or never connected, PMIx
 * servers do not tell apart the same way: with every rank local, as under
 * dlpar-run, both time out.) */
static const char *probe_key(bool in_mpi_init)
{
  return in_mpi_init ? "dlpar.started" : "dlpar.host";
}

static bool probe_arrived(pmix_status_t status)
{
  return status == PMIX_SUCCESS;
}

static void diagnose(dlpar_ctx *ctx, double waited, bool in_mpi_init, char *message, size_t len)
{
  const int size = ctx->info.size, me = ctx->info.rank;
  /* the probes' callbacks may come after their window: what they touch
   * stays allocated (a timed-out rendezvous ends the process) */
  waiter *w = malloc(sizeof(*w));
  probe *probes = calloc((size_t)size, sizeof(probe));
  size_t used = 0;
  int missing = 0, local = 0;
  bool reporter = true;
  const double abort_at = dlpar_now() + PROBE_SECONDS + 0.5;
  for (int rank = 0; rank < size; rank++)
    local += rank != me && ctx->rank_node[rank] == ctx->info.node;
  if (w) {
    waiter_init(w, local);
    w->per_rank = calloc((size_t)size, sizeof(pmix_status_t));
  }
  if (!probes || !w || !w->per_rank) {
    snprintf(message, len, "rank %d on %s: rendezvous timed out after %.0f s (and no memory to say which ranks are "
             "missing)", me, ctx->info.host, waited);
    dlpar_eprintf("dlpar: %s\n", message);
    return;
  }
  for (int rank = 0; rank < size; rank++) {
    int timeout = 2;
    pmix_info_t info;
    pmix_proc_t proc = proc_of(ctx, (pmix_rank_t)rank);
    w->per_rank[rank] = PMIX_ERR_TIMEOUT;
    if (rank == me || ctx->rank_node[rank] != ctx->info.node)
      continue;
    probes[rank] = (probe){w, rank};
    PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &timeout, PMIX_INT);
    if (PMIx_Get_nb(&proc, probe_key(in_mpi_init), &info, 1, probe_done, &probes[rank]) != PMIX_SUCCESS)
      probe_done(PMIX_ERR_NOT_FOUND, NULL, &probes[rank]);
  }
  waiter_wait(w, PROBE_SECONDS);
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
  while (dlpar_now() < abort_at)
    usleep(100000);
}

__attribute__((noreturn)) static void diagnose_and_abort(dlpar_ctx *ctx, double waited, bool in_mpi_init)
{
  char message[DLPAR_ERRLEN];
  diagnose(ctx, waited, in_mpi_init, message, sizeof(message));
  dlpar_pmix_abort(ctx, 1, message);
}

/* ---------------------------------------------------- Open MPI 5's MPI_Init */

/* Open MPI 5's MPI_Init, which comes before libdlpar's PMIx_Init there
 * (backend_mpi.c), waits without a limit: for each rank of its node (their
 * keys) and for every rank (its closing barrier). A rank that never starts
 * holds the whole step in it. The guard bounds that wait by the rendezvous
 * timeout (unset: its default for the job's size, learnt from PMIx, which
 * Open MPI has initialised by then), then diagnoses as the rendezvous
 * does: the ranks of this node that never started are named, those held
 * in MPI_Init like this one are not. */
struct dlpar_init_guard {
  waiter w;
  pthread_t thread;
  double timeout, start;
  double pmix_ready_at; /* when Open MPI's PMIx_Init had returned; 0: not seen */
};

#define GUARD_POLL_SECONDS 0.002

/* Waits for PMIx to be up inside MPI_Init (PMIx_Initialized waits while
 * Open MPI's PMIx_Init runs): the start-up line's "PMIx ready" under Open
 * MPI 5, where the end of MPI_Init also counts the wait for other ranks.
 * false if MPI_Init returned first or the limit passed. */
static bool guard_see_pmix(dlpar_init_guard *guard, double limit)
{
  while (dlpar_now() - guard->start < limit) {
    if (PMIx_Initialized()) {
      guard->pmix_ready_at = dlpar_now();
      return true;
    }
    if (waiter_wait(&guard->w, GUARD_POLL_SECONDS))
      return false;
  }
  return true;
}

/* The guard's own PMIx context (it names missing ranks), done with. */
static void free_probe_context(dlpar_ctx *ctx)
{
  free(ctx->hosts);
  free(ctx->rank_node);
  dlpar_pmix_finalize(ctx);
  free(ctx);
}

/* dlpar.started, for the node-mates' probes (diagnose_and_abort): put as
 * soon as PMIx is up in MPI_Init, committed by Open MPI's own commit (a
 * commit of ours before it would answer the other nodes' requests for this
 * rank's data without Open MPI's keys: MPI_Init failed so, exit 14, under
 * Slurm 24.11); committed by the guard only at the timeout, in case Open
 * MPI committed before the put. */
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

static void *guard_main(void *arg)
{
  dlpar_init_guard *guard = arg;
  dlpar_ctx *probe_ctx;
  double limit = guard->timeout > 0 ? guard->timeout : DLPAR_RENDEZVOUS_TIMEOUT_BASE, left;
  pmix_status_t status;
  if (!guard_see_pmix(guard, limit))
    return NULL;
  if (guard->pmix_ready_at > 0)
    put_started();
  left = limit - (dlpar_now() - guard->start);
  if (waiter_wait(&guard->w, left > 0 ? left : 0))
    return NULL;
  probe_ctx = calloc(1, sizeof(*probe_ctx));
  if (!probe_ctx || dlpar_pmix_init(probe_ctx) != DLPAR_OK) {
    dlpar_eprintf("dlpar: MPI_Init has not returned after %.0f s, and PMIx cannot tell which ranks are "
                  "missing (%s)\n", dlpar_now() - guard->start, probe_ctx ? probe_ctx->error : "out of memory");
    dlpar_pmix_abort(probe_ctx, 1, "MPI_Init timed out");
  }
  if (guard->timeout <= 0)
    limit = DLPAR_RENDEZVOUS_TIMEOUT_BASE + DLPAR_RENDEZVOUS_TIMEOUT_PER_RANK * probe_ctx->info.size;
  left = limit - (dlpar_now() - guard->start);
  if (waiter_wait(&guard->w, left > 0 ? left : 0)) {
    free_probe_context(probe_ctx);
    return NULL;
  }
  if ((status = PMIx_Commit()) != PMIX_SUCCESS) /* dlpar.started, if Open MPI committed before it was put */
    dlpar_eprintf("dlpar: PMIx_Commit(dlpar.started): %s: node-mates may name this rank as missing\n",
                  PMIx_Error_string(status));
  diagnose_and_abort(probe_ctx, dlpar_now() - guard->start, true);
}

int dlpar_pmix_guard_start(dlpar_ctx *ctx, dlpar_init_guard **out)
{
  dlpar_init_guard *guard = calloc(1, sizeof(*guard));
  *out = NULL;
  if (!guard)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  waiter_init(&guard->w, 1);
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
  fence_done(PMIX_SUCCESS, &guard->w); /* MPI_Init returned: the guard's wait ends */
  pthread_join(guard->thread, NULL);
  pmix_ready_at = guard->pmix_ready_at;
  free(guard);
  return pmix_ready_at;
}

static int put_bytes(dlpar_ctx *ctx, const char *key, const void *bytes, size_t len)
{
  pmix_value_t value;
  pmix_byte_object_t object = {(char *)bytes, len};
  PMIX_VALUE_LOAD(&value, &object, PMIX_BYTE_OBJECT);
  PMIX_TRY(ctx, PMIx_Put(PMIX_GLOBAL, key, &value));
  PMIX_VALUE_DESTRUCT(&value);
  ctx->traffic.put += len;
  return DLPAR_OK;
}

/* A rank's key: exactly len bytes, or at most len unless `exact` (this
 * rank's own key is not counted as traffic). */
static int get_bytes(dlpar_ctx *ctx, int rank, const char *key, void *bytes, size_t len, bool exact)
{
  pmix_value_t *value = NULL;
  int rc = get_value(ctx, (pmix_rank_t)rank, key, PMIX_BYTE_OBJECT, &value);
  if (rc != DLPAR_OK)
    return rc;
  if (value->data.bo.size > len || (exact && value->data.bo.size != len)) {
    rc = dlpar_fail(ctx, DLPAR_ERR_PMIX, "%s from rank %d has %zu bytes, expected %zu", dlpar_show(key).text, rank,
                    value->data.bo.size, len);
  } else {
    memcpy(bytes, value->data.bo.bytes, value->data.bo.size);
    if (rank != ctx->info.rank) {
      *(ctx->rank_node[rank] == ctx->info.node ? &ctx->traffic.got_local : &ctx->traffic.got_remote) +=
          value->data.bo.size;
      ctx->traffic.keys_got++;
    }
  }
  PMIX_VALUE_RELEASE(value);
  return rc;
}

/* One fence over every rank. It carries no data (DLPAR_MODEX=collect: it
 * hands every rank's keys to every node at the fence): each PMIx_Get
 * afterwards fetches one key from its rank's node (direct modex). Past the
 * rendezvous timeout the ranks that never arrived are named and the step
 * ends: at once, or, in a bootstrap context (dlpar_init_bootstrap: the
 * Python module's, whose program can run its cleanup), at dlpar_finalize:
 * the fence fails with DLPAR_ERR_TIMEOUT and the context keeps the line. */
static int rendezvous_fence(dlpar_ctx *ctx)
{
  waiter *w = malloc(sizeof(*w)); /* must outlive its callback: left allocated on a timeout */
  pmix_info_t info;
  pmix_status_t status;
  bool yes = true;
  size_t ninfo = 0;
  const double start = dlpar_now();
  if (!w)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  if (ctx->collect_modex) {
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    ninfo = 1;
  } else {
#ifdef PMIX_COLLECT_GENERATED_JOB_INFO /* job-level keys servers generate, nothing of the ranks' */
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_GENERATED_JOB_INFO, &yes, PMIX_BOOL);
    ninfo = 1;
#endif
  }
  waiter_init(w, 1);
  if ((status = PMIx_Fence_nb(NULL, 0, ninfo ? &info : NULL, ninfo, fence_done, w)) == PMIX_SUCCESS &&
      !waiter_wait(w, ctx->rendezvous_timeout)) {
    if (!ctx->bootstrap_only)
      diagnose_and_abort(ctx, dlpar_now() - start, false);
    diagnose(ctx, dlpar_now() - start, false, ctx->failed_rendezvous, sizeof(ctx->failed_rendezvous));
    return dlpar_fail(ctx, DLPAR_ERR_TIMEOUT, "%s", ctx->failed_rendezvous);
  }
  status = status == PMIX_SUCCESS ? w->status : status;
  free(w);
  if (status != PMIX_SUCCESS)
    return dlpar_fail(ctx, DLPAR_ERR_PMIX, "PMIx_Fence: %s (a rank failed during the rendezvous)",
                      PMIx_Error_string(status));
  return DLPAR_OK;
}

/* The groups that get NCCL ids at the rendezvous: those of more than one
 * rank (a 1-rank group has no communicator: its collectives are no-ops or
 * copies), and those of one rank too with DLPAR_NCCL_ONE_RANK=comm (each
 * makes its own: dlpar_nccl_own_id); tp and dp unless they are split from
 * the world's; the world only when asked for at init (split mode,
 * DLPAR_NCCL_WORLD=eager, or a world of one rank, which is never built
 * later), else at its first device collective (dlpar_pmix_world_ids).
 * Every group gets its own ids: an id's bootstrap root serves one
 * communicator. */
bool dlpar_group_ids_at_init(const dlpar_ctx *ctx, dlpar_group group)
{
  if (dlpar_group_size(ctx, group) == 1 && !ctx->one_rank_comms)
    return false;
  return group == DLPAR_GROUP_WORLD ? ctx->nccl_split || ctx->eager_world || ctx->info.size == 1 : !ctx->nccl_split;
}

static const char *id_key(dlpar_group group)
{
  return group == DLPAR_GROUP_TP ? "dlpar.nccl.tp" : group == DLPAR_GROUP_DP ? "dlpar.nccl.dp" : "dlpar.nccl.world";
}

static int rank_in_group(const dlpar_ctx *ctx, dlpar_group group)
{
  return group == DLPAR_GROUP_TP ? ctx->info.tp_rank : group == DLPAR_GROUP_DP ? ctx->info.dp_rank : ctx->info.rank;
}

/* A root of the group (one per ranks_per_root ranks, NCCL's spread) makes
 * an id and puts it under the group's key. */
static int put_group_ids(dlpar_ctx *ctx, dlpar_group group)
{
  const int size = dlpar_group_size(ctx, group), roots = dlpar_nccl_roots(ctx, size);
  const int me = rank_in_group(ctx, group);
  dlpar_nccl_id id;
  for (int index = 0; index < roots; index++) {
    if (dlpar_nccl_root_rank(size, roots, index) != me)
      continue;
    DLPAR_TRY(dlpar_nccl_make_id(ctx, id));
    DLPAR_TRY(put_bytes(ctx, id_key(group), id, sizeof(id)));
  }
  return DLPAR_OK;
}

/* Every member gets its group's ids from their roots: roots keys, nothing
 * of the other groups. */
static int get_group_ids(dlpar_ctx *ctx, dlpar_group group)
{
  const int size = dlpar_group_size(ctx, group), roots = dlpar_nccl_roots(ctx, size);
  dlpar_group_ids *out = &ctx->nccl_ids.group[group];
  int *members = malloc((size_t)size * sizeof(int));
  int rc = DLPAR_OK;
  out->ids = calloc((size_t)roots, sizeof(dlpar_nccl_id));
  if (!members || !out->ids) {
    free(members);
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory for the %s group's %d NCCL ids", dlpar_group_name(group),
                      roots);
  }
  out->count = roots;
  dlpar_grid_members(&ctx->grid, group, ctx->info.rank, members);
  for (int index = 0; index < roots && rc == DLPAR_OK; index++)
    rc = get_bytes(ctx, members[dlpar_nccl_root_rank(size, roots, index)], id_key(group), out->ids[index],
                   sizeof(dlpar_nccl_id), true);
  free(members);
  return rc;
}

/* Puts the ids of the groups in `put` (a bit per dlpar_group), commits,
 * fences, gets those of the groups in `get`. */
static int exchange_ids(dlpar_ctx *ctx, unsigned put, unsigned get)
{
  int rc;
  for (int g = 0; g < 3; g++)
    if ((put & (1u << g)) && (rc = put_group_ids(ctx, (dlpar_group)g)) != DLPAR_OK)
      return rc;
  PMIX_TRY(ctx, PMIx_Commit());
  if ((rc = rendezvous_fence(ctx)) != DLPAR_OK)
    return rc;
  for (int g = 0; g < 3; g++)
    if ((get & (1u << g)) && (rc = get_group_ids(ctx, (dlpar_group)g)) != DLPAR_OK)
      return rc;
  return DLPAR_OK;
}

/* dlpar.host, "HOST:PID": this rank arrived (what the rendezvous timeout's
 * diagnosis probes for) and its pid (dlpar_pmix_peer_pids). */
static int put_host_pid(dlpar_ctx *ctx)
{
  char host_pid[320];
  snprintf(host_pid, sizeof(host_pid), "%s:%ld", ctx->info.host, (long)getpid());
  return put_bytes(ctx, "dlpar.host", host_pid, strlen(host_pid) + 1);
}

/* The world's roots put its ids now, in the one commit (a key put after a
 * fence is not seen by a rank that already got its owner's keys, under
 * Slurm's PMIx): nobody gets them unless the world communicator is built. */
int dlpar_pmix_rendezvous(dlpar_ctx *ctx, bool exchange_nccl_ids)
{
  unsigned put = 0, get = 0;
  dlpar_nccl_ids_free(&ctx->nccl_ids);
  for (int g = 0; g < 3 && exchange_nccl_ids; g++) {
    if (!dlpar_group_ids_at_init(ctx, (dlpar_group)g))
      continue;
    if (dlpar_group_size(ctx, (dlpar_group)g) > 1)
      get |= 1u << g;
    else
      DLPAR_TRY(dlpar_nccl_own_id(ctx, &ctx->nccl_ids.group[g]));
  }
  if (ctx->pmix) {
    put = get | (exchange_nccl_ids && ctx->info.size > 1 ? 1u << DLPAR_GROUP_WORLD : 0);
    DLPAR_TRY(put_host_pid(ctx));
    DLPAR_TRY(exchange_ids(ctx, put, get));
  } /* else one rank: every group has one rank, so no exchange */
  ctx->nccl_ids.valid = exchange_nccl_ids;
  return DLPAR_OK;
}

/* Every rank puts dlpar.host (the rendezvous timeout names the ranks that
 * did not), rank 0 also the text; one fence; every rank gets rank 0's. */
int dlpar_pmix_share(dlpar_ctx *ctx, const char *key, const char *text, char *out, size_t len)
{
  int rc;
  if (!ctx->pmix) { /* one rank */
    snprintf(out, len, "%s", text ? text : "");
    return DLPAR_OK;
  }
  if ((rc = put_host_pid(ctx)) != DLPAR_OK)
    return rc;
  if (ctx->info.rank == 0 && (rc = put_bytes(ctx, key, text ? text : "", strlen(text ? text : "") + 1)) != DLPAR_OK)
    return rc;
  PMIX_TRY(ctx, PMIx_Commit());
  if ((rc = rendezvous_fence(ctx)) != DLPAR_OK)
    return rc;
  memset(out, 0, len);
  if ((rc = get_bytes(ctx, 0, key, out, len - 1, false)) != DLPAR_OK && ctx->info.rank != 0)
    return dlpar_fail(ctx, rc, "rank 0 (%s) never shared %s: it failed or exited before dlpar_share_from_root "
                      "(its output says why)", ctx->hosts[0], dlpar_show(key).text);
  return rc;
}

int dlpar_pmix_world_ids(dlpar_ctx *ctx)
{
  if (!ctx->pmix || ctx->nccl_ids.group[DLPAR_GROUP_WORLD].count > 0 || ctx->info.size == 1)
    return DLPAR_OK;
  return get_group_ids(ctx, DLPAR_GROUP_WORLD);
}

int dlpar_pmix_peer_pids(dlpar_ctx *ctx)
{
  const int me = ctx->info.rank;
  for (int rank = 0; ctx->pmix && rank < ctx->info.size; rank++) {
    char host_pid[320] = "";
    const char *colon;
    int rc;
    if (rank == me || ctx->rank_node[rank] != ctx->rank_node[me])
      continue;
    if ((rc = get_bytes(ctx, rank, "dlpar.host", host_pid, sizeof(host_pid) - 1, false)) != DLPAR_OK)
      return rc;
    colon = strrchr(host_pid, ':');
    ctx->peer_pid[rank] = colon ? strtol(colon + 1, NULL, 10) : 0;
  }
  return DLPAR_OK;
}

int dlpar_pmix_barrier(dlpar_ctx *ctx, const char *where)
{
  char message[DLPAR_ERRLEN];
  waiter w;
  if (!ctx->pmix)
    return DLPAR_OK;
  waiter_init(&w, 1);
  PMIX_TRY(ctx, PMIx_Fence_nb(NULL, 0, NULL, 0, fence_done, &w));
  if (!waiter_wait(&w, ctx->rendezvous_timeout)) { /* w must outlive its callback: no return */
    snprintf(message, sizeof(message), "rank %d on %s: not every rank reached %s within %.0f s (one died or is "
             "stuck: see its output; raise DLPAR_RENDEZVOUS_TIMEOUT if startup is just slow)", ctx->info.rank,
             ctx->info.host, where, ctx->rendezvous_timeout);
    dlpar_eprintf("dlpar: %s\n", message);
    dlpar_pmix_abort(ctx, 1, message);
  }
  if (w.status != PMIX_SUCCESS)
    return dlpar_fail(ctx, DLPAR_ERR_PMIX, "PMIx_Fence at %s: %s (a rank failed)", where,
                      PMIx_Error_string(w.status));
  return DLPAR_OK;
}

void dlpar_pmix_abort(dlpar_ctx *ctx, int code, const char *message)
{
  fflush(NULL);
  if (ctx && ctx->pmix)
    PMIx_Abort(code, message, NULL, 0);
  _exit(code ? code : 1);
}

void dlpar_pmix_finalize(dlpar_ctx *ctx)
{
  if (ctx->pmix)
    PMIx_Finalize(NULL, 0);
  ctx->pmix = false;
}
