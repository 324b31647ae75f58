/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/bootstrap/pmixboot.c: the PMIx exchange, everything libdlpar asks of PMIx.
 * First come init and the job's shape: its size, the local rank and size,
 * and every rank's host, all job-level data the server already holds. Then
 * comes the one rendezvous. Each rank puts its host and pid, and an NCCL
 * id if it is a bootstrap root of a group. It commits and joins one fence
 * that carries no data, which is PMIx's direct modex. Afterwards each rank
 * gets only the keys it needs, which are its groups' roots' ids and its own
 * node's pids. So a node receives bytes in proportion to its ranks' groups'
 * roots, not to the job's size. The world's roots put its ids too, but
 * those are got only at its first collective, unless asked for at init.
 * This file is a transport: it returns statuses and never ends anything.
 * A fence that does not complete within the rendezvous timeout returns
 * DLPAR_ERR_TIMEOUT with the line that rendezvous_diagnosis.c wrote, naming
 * the ranks that never arrived. The caller decides what that ends: init.c
 * does for dlpar_init and dlpar_share_from_root, and mpi_init_guard.c for
 * the fence at the end of MPI_Init. */
#include "config.h"

#include <pmix.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "libdlpar/bootstrap/bootstrap.h"
#include "libdlpar/bootstrap/pmix_internal.h"
#include "common/text.h"

/* On a PMIx error, dlpar_fail records file:line, the call and PMIx's words
 * in ctx, and the function returns its status. */
#define PMIX_TRY(call, ctx)                                                                    \
  do {                                                                                         \
    pmix_status_t rc_ = (call);                                                                \
    if (rc_ != PMIX_SUCCESS)                                                                   \
      return dlpar_fail((ctx), DLPAR_ERR_PMIX, "%s:%d: %s: %s", __FILE__, __LINE__, #call,     \
                        PMIx_Error_string(rc_));                                               \
  } while (0)

/* PMIx_Get that checks the status and the type before touching the value. */
static int get_value(dlpar_ctx *ctx, pmix_rank_t rank, const char *key, pmix_data_type_t type,
                     pmix_value_t **value)
{
  const pmix_proc_t proc = dlpar_pmix_proc(ctx, rank);
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
 * differ for emulated nodes or NodeHostname aliases. So under Slurm the own
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
    DLPAR_TRY(get_value(ctx, (pmix_rank_t)rank, PMIX_HOSTNAME, PMIX_STRING, &value));
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
  if (!getenv("PMIX_NAMESPACE")) { /* a plain run: one rank */
    ctx->info.size = ctx->info.local_size = ctx->info.nnodes = 1;
    DLPAR_TRY(alloc_ranks(ctx));
    gethostname(ctx->hosts[0], sizeof(ctx->hosts[0]) - 1);
    snprintf(ctx->info.host, sizeof(ctx->info.host), "%s", ctx->hosts[0]);
    return DLPAR_OK;
  }
  PMIX_TRY(PMIx_Init(&me, NULL, 0), ctx);
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

static int put_bytes(dlpar_ctx *ctx, const char *key, const void *bytes, size_t len)
{
  pmix_value_t value;
  pmix_byte_object_t object = {(char *)bytes, len};
  PMIX_VALUE_LOAD(&value, &object, PMIX_BYTE_OBJECT);
  PMIX_TRY(PMIx_Put(PMIX_GLOBAL, key, &value), ctx);
  PMIX_VALUE_DESTRUCT(&value);
  ctx->traffic.put += len;
  return DLPAR_OK;
}

/* A rank's key, of exactly len bytes when `exact` is set and of at most len
 * otherwise. This rank's own key is not counted as traffic. */
static int get_bytes(dlpar_ctx *ctx, int rank, const char *key, void *bytes, size_t len, bool exact)
{
  pmix_value_t *value = NULL;
  int rc = DLPAR_OK;
  DLPAR_TRY(get_value(ctx, (pmix_rank_t)rank, key, PMIX_BYTE_OBJECT, &value));
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

/* One fence over every rank. It carries no data, unless DLPAR_MODEX=collect
 * makes it hand every rank's keys to every node. Each PMIx_Get afterwards
 * fetches one key from its rank's node, which is PMIx's direct modex. Past
 * the rendezvous timeout the ranks that never arrived are named and the fence
 * returns DLPAR_ERR_TIMEOUT with that line in ctx->error; the waiter stays
 * allocated, because PMIx may still call back into it. */
static int rendezvous_fence(dlpar_ctx *ctx)
{
  dlpar_waiter *w = malloc(sizeof(*w));
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
  dlpar_waiter_init(w, 1);
  if ((status = PMIx_Fence_nb(NULL, 0, ninfo ? &info : NULL, ninfo, dlpar_waiter_done, w)) == PMIX_SUCCESS &&
      !dlpar_waiter_wait(w, ctx->rendezvous_timeout))
    return dlpar_pmix_diagnose(ctx, dlpar_now() - start, false, &ctx->error);
  status = status == PMIX_SUCCESS ? w->status : status;
  free(w);
  if (status != PMIX_SUCCESS)
    return dlpar_fail(ctx, DLPAR_ERR_PMIX, "PMIx_Fence: %s (a rank failed during the rendezvous)",
                      PMIx_Error_string(status));
  return DLPAR_OK;
}

/* The groups that get NCCL ids at the rendezvous are those of more than one
 * rank. A group of one rank has no communicator, and its collectives are
 * no-ops or copies. With DLPAR_NCCL_ONE_RANK=comm, groups of one rank get
 * ids too, each making its own with dlpar_nccl_own_id. tp and dp get ids
 * unless they are split from the world's communicator. The world gets its
 * ids here only when they are asked for at init, which split mode,
 * DLPAR_NCCL_WORLD=eager and a world of one rank do, since such a world is
 * never built later. Otherwise dlpar_pmix_world_ids gets them at its first
 * device collective. Every group gets its own ids, because an id's
 * bootstrap root serves one communicator. */
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

/* A root of the group makes an id and puts it under the group's key. There
 * is one root per ranks_per_root ranks, in NCCL's spread. */
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

/* Puts the ids of the groups in `put`, commits, fences, and gets those of
 * the groups in `get`. Both hold a bit per dlpar_group. */
static int exchange_ids(dlpar_ctx *ctx, unsigned put, unsigned get)
{
  for (int g = 0; g < 3; g++)
    if (put & (1u << g))
      DLPAR_TRY(put_group_ids(ctx, (dlpar_group)g));
  PMIX_TRY(PMIx_Commit(), ctx);
  DLPAR_TRY(rendezvous_fence(ctx));
  for (int g = 0; g < 3; g++)
    if (get & (1u << g))
      DLPAR_TRY(get_group_ids(ctx, (dlpar_group)g));
  return DLPAR_OK;
}

/* dlpar.host holds "HOST:PID". It says this rank arrived, which is what the
 * rendezvous timeout's diagnosis probes for, and gives its pid to
 * dlpar_pmix_peer_pids. */
static int put_host_pid(dlpar_ctx *ctx)
{
  char host_pid[320];
  snprintf(host_pid, sizeof(host_pid), "%s:%ld", ctx->info.host, (long)getpid());
  return put_bytes(ctx, "dlpar.host", host_pid, strlen(host_pid) + 1);
}

/* The world's roots put its ids now, in the one commit. Under Slurm's PMIx,
 * a key put after a fence is not seen by a rank that already got its
 * owner's keys. Nobody gets them unless the world communicator is built. */
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

/* Every rank puts dlpar.host, so that the rendezvous timeout can name the
 * ranks that did not, and rank 0 also puts the text. After one fence,
 * every rank gets rank 0's text. */
int dlpar_pmix_share(dlpar_ctx *ctx, const char *key, const char *text, char *out, size_t len)
{
  const char *shared = text ? text : "";
  int rc;
  if (!ctx->pmix) { /* one rank */
    snprintf(out, len, "%s", shared);
    return DLPAR_OK;
  }
  DLPAR_TRY(put_host_pid(ctx));
  if (ctx->info.rank == 0)
    DLPAR_TRY(put_bytes(ctx, key, shared, strlen(shared) + 1));
  PMIX_TRY(PMIx_Commit(), ctx);
  DLPAR_TRY(rendezvous_fence(ctx));
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
    if (rank == me || ctx->rank_node[rank] != ctx->rank_node[me])
      continue;
    DLPAR_TRY(get_bytes(ctx, rank, "dlpar.host", host_pid, sizeof(host_pid) - 1, false));
    colon = strrchr(host_pid, ':');
    ctx->peer_pid[rank] = colon ? strtol(colon + 1, NULL, 10) : 0;
  }
  return DLPAR_OK;
}

int dlpar_pmix_put_text(dlpar_ctx *ctx, const char *key, const char *text)
{
  pmix_value_t value;
  pmix_status_t rc;
  if (!ctx->pmix)
    return DLPAR_ERR_STATE;
  PMIX_VALUE_LOAD(&value, text, PMIX_STRING);
  rc = PMIx_Put(PMIX_GLOBAL, key, &value);
  PMIX_VALUE_DESTRUCT(&value);
  if (rc == PMIX_SUCCESS)
    rc = PMIx_Commit();
  return rc == PMIX_SUCCESS ? DLPAR_OK : DLPAR_ERR_PMIX;
}

int dlpar_pmix_get_text(dlpar_ctx *ctx, int rank, const char *key, double timeout, char *out, size_t len)
{
  const pmix_proc_t proc = dlpar_pmix_proc(ctx, (pmix_rank_t)rank);
  int seconds = timeout < 1 ? 1 : (int)timeout;
  pmix_info_t info;
  pmix_value_t *value = NULL;
  pmix_status_t rc;
  PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &seconds, PMIX_INT);
  rc = PMIx_Get(&proc, key, &info, 1, &value);
  PMIX_INFO_DESTRUCT(&info);
  if (rc == PMIX_SUCCESS && value && value->type == PMIX_STRING)
    snprintf(out, len, "%s", value->data.string);
  else if (rc == PMIX_SUCCESS)
    rc = PMIX_ERR_TYPE_MISMATCH;
  if (value)
    PMIX_VALUE_RELEASE(value);
  return rc == PMIX_SUCCESS ? DLPAR_OK : DLPAR_ERR_PMIX;
}

int dlpar_pmix_barrier(dlpar_ctx *ctx, const char *where)
{
  dlpar_waiter *w = malloc(sizeof(*w));
  pmix_status_t status;
  if (!ctx->pmix) {
    free(w);
    return DLPAR_OK;
  }
  if (!w)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  dlpar_waiter_init(w, 1);
  if ((status = PMIx_Fence_nb(NULL, 0, NULL, 0, dlpar_waiter_done, w)) != PMIX_SUCCESS) {
    free(w);
    return dlpar_fail(ctx, DLPAR_ERR_PMIX, "PMIx_Fence at %s: %s", where, PMIx_Error_string(status));
  }
  if (!dlpar_waiter_wait(w, ctx->rendezvous_timeout)) /* w stays allocated: PMIx may still call back */
    return dlpar_fail(ctx, DLPAR_ERR_TIMEOUT, "rank %d on %s: not every rank reached %s within %.0f s (one died or "
                      "is stuck: see its output; raise DLPAR_RENDEZVOUS_TIMEOUT if startup is just slow)",
                      ctx->info.rank, ctx->info.host, where, ctx->rendezvous_timeout);
  status = w->status;
  free(w);
  if (status != PMIX_SUCCESS)
    return dlpar_fail(ctx, DLPAR_ERR_PMIX, "PMIx_Fence at %s: %s (a rank failed)", where, PMIx_Error_string(status));
  return DLPAR_OK;
}

void dlpar_pmix_abort(dlpar_ctx *ctx, int code, const char *message)
{
  fflush(NULL);
  if (ctx && ctx->pmix)
    PMIx_Abort(code, message, NULL, 0);
}

void dlpar_pmix_finalize(dlpar_ctx *ctx)
{
  if (ctx->pmix)
    PMIx_Finalize(NULL, 0);
  ctx->pmix = false;
}
