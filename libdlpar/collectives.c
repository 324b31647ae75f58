/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/collectives.c: the public collective calls. They check the
 * arguments and the state once, then hand over to the backend (NCCL, MPI
 * or a single rank); the backend reports failures with their library's
 * error string. Also the world collectives composed from the tp and dp
 * groups', for backends without a world communicator (NCCL unless one was
 * asked for) or when DLPAR_WORLD_VIA_GROUPS=1 asks for them: the one place
 * that knows how the grid's groups tile the world. */
#include "config.h"

#include <stdlib.h>

#include "libdlpar/internal.h"
#include "libdlpar/ending/ending.h"

static int check(dlpar_ctx *ctx, dlpar_group_id group, dlpar_dtype dtype)
{
  if (ctx && ctx->bootstrap_only)
    return dlpar_fail(ctx, DLPAR_ERR_STATE, "no collectives after dlpar_init_bootstrap (PMIx only): use dlpar_init, "
                      "or the program's own library");
  if (!ctx || !ctx->backend)
    return ctx ? dlpar_fail(ctx, DLPAR_ERR_STATE, "collective before dlpar_init succeeded") : DLPAR_ERR_STATE;
  DLPAR_TRY(dlpar_spent(ctx, "collective"));
  if (group < DLPAR_WORLD || group > DLPAR_DP)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "unknown group %d (use DLPAR_WORLD, DLPAR_TP or DLPAR_DP)", (int)group);
  if (dtype < DLPAR_FLOAT32 || dtype > DLPAR_FLOAT16)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "unknown data type %d", (int)dtype);
  return DLPAR_OK;
}

DLPAR_API int dlpar_allreduce(dlpar_ctx *ctx, dlpar_group_id group, void *buf, size_t count, dlpar_dtype dtype,
                    dlpar_op op, void *stream)
{
  int rc = check(ctx, group, dtype);
  return rc ? rc : ctx->backend->allreduce(ctx, (dlpar_group)group, buf, count, dtype, op, stream);
}

DLPAR_API int dlpar_allgather(dlpar_ctx *ctx, dlpar_group_id group, const void *send, void *recv, size_t count,
                    dlpar_dtype dtype, void *stream)
{
  int rc = check(ctx, group, dtype);
  return rc ? rc : ctx->backend->allgather(ctx, (dlpar_group)group, send, recv, count, dtype, stream);
}

DLPAR_API int dlpar_reduce_scatter(dlpar_ctx *ctx, dlpar_group_id group, const void *send, void *recv, size_t count,
                         dlpar_dtype dtype, dlpar_op op, void *stream)
{
  int rc = check(ctx, group, dtype);
  return rc ? rc : ctx->backend->reduce_scatter(ctx, (dlpar_group)group, send, recv, count, dtype, op, stream);
}

DLPAR_API int dlpar_broadcast(dlpar_ctx *ctx, dlpar_group_id group, void *buf, size_t count, dlpar_dtype dtype,
                    int root, void *stream)
{
  int rc = check(ctx, group, dtype);
  return rc ? rc : ctx->backend->broadcast(ctx, (dlpar_group)group, buf, count, dtype, root, stream);
}

bool dlpar_world_by_groups(const dlpar_ctx *ctx)
{
  return ctx->world_via_groups || (ctx->backend->has_world && !ctx->backend->has_world(ctx));
}

/* Every tp group meets every dp group: an op over the tp group, then over
 * the dp group, covers the world. AVG twice is the world's average (the tp
 * groups are all of one size). */
int dlpar_world_allreduce_by_groups(dlpar_ctx *ctx, dlpar_allreduce_fn allreduce, void *buf, size_t count,
                                    dlpar_dtype dtype, dlpar_op op, void *stream)
{
  int rc = allreduce(ctx, DLPAR_GROUP_TP, buf, count, dtype, op, stream);
  return rc ? rc : allreduce(ctx, DLPAR_GROUP_DP, buf, count, dtype, op, stream);
}

/* World rank tp_rank + M * dp_rank: the tp group's gather is the row of M
 * pieces at dp_rank's place, and the dp group's gather of the rows lays
 * them out in world order. */
int dlpar_world_allgather_by_groups(dlpar_ctx *ctx, dlpar_allgather_fn allgather, const void *send, void *row,
                                    void *recv, size_t count, dlpar_dtype dtype, void *stream)
{
  int rc = allgather(ctx, DLPAR_GROUP_TP, send, row, count, dtype, stream);
  return rc ? rc : allgather(ctx, DLPAR_GROUP_DP, row, recv, count * (size_t)ctx->grid.tp, dtype, stream);
}

static int world_barrier_by_groups(dlpar_ctx *ctx)
{
  int rc = ctx->backend->barrier(ctx, DLPAR_GROUP_TP);
  return rc ? rc : ctx->backend->barrier(ctx, DLPAR_GROUP_DP);
}

DLPAR_API int dlpar_barrier(dlpar_ctx *ctx, dlpar_group_id group)
{
  DLPAR_TRY(check(ctx, group, DLPAR_FLOAT32));
  if (group == DLPAR_WORLD && dlpar_world_by_groups(ctx))
    return world_barrier_by_groups(ctx);
  return ctx->backend->barrier(ctx, (dlpar_group)group);
}

DLPAR_API int dlpar_allreduce_host(dlpar_ctx *ctx, dlpar_group_id group, void *buf, size_t count, dlpar_dtype dtype,
                         dlpar_op op)
{
  dlpar_allreduce_fn allreduce;
  DLPAR_TRY(check(ctx, group, dtype));
  allreduce = ctx->backend->host_allreduce ? ctx->backend->host_allreduce : ctx->backend->allreduce;
  if (group == DLPAR_WORLD && dlpar_world_by_groups(ctx))
    return dlpar_world_allreduce_by_groups(ctx, allreduce, buf, count, dtype, op, NULL);
  return allreduce(ctx, (dlpar_group)group, buf, count, dtype, op, NULL);
}

DLPAR_API int dlpar_allgather_host(dlpar_ctx *ctx, dlpar_group_id group, const void *send, void *recv, size_t count,
                         dlpar_dtype dtype)
{
  dlpar_allgather_fn allgather;
  void *row;
  int rc;
  DLPAR_TRY(check(ctx, group, dtype));
  allgather = ctx->backend->host_allgather ? ctx->backend->host_allgather : ctx->backend->allgather;
  if (group != DLPAR_WORLD || !dlpar_world_by_groups(ctx))
    return allgather(ctx, (dlpar_group)group, send, recv, count, dtype, NULL);
  if (!(row = malloc(count * dlpar_dtype_size(dtype) * (size_t)ctx->grid.tp + 1))) /* + 1: never malloc(0) */
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory for a host allgather of %zu elements", count);
  rc = dlpar_world_allgather_by_groups(ctx, allgather, send, row, recv, count, dtype, NULL);
  free(row);
  return rc;
}
