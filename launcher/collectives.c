/* launcher/collectives.c: the public collective calls. They check the
 * arguments and the state once, then hand over to the backend (NCCL, MPI
 * or a single rank); the backend reports failures with their library's
 * error string. */
#include "config.h"

#include "launcher/internal.h"

static int check(dlpar_ctx *ctx, dlpar_group_id group, dlpar_dtype dtype)
{
  if (!ctx || !ctx->backend)
    return ctx ? dlpar_fail(ctx, DLPAR_ERR_STATE, "collective before dlpar_init succeeded") : DLPAR_ERR_STATE;
  if (group < DLPAR_WORLD || group > DLPAR_DP)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "unknown group %d (use DLPAR_WORLD, DLPAR_TP or DLPAR_DP)", (int)group);
  if (dtype < DLPAR_FLOAT32 || dtype > DLPAR_FLOAT16)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "unknown data type %d", (int)dtype);
  return DLPAR_OK;
}

int dlpar_allreduce(dlpar_ctx *ctx, dlpar_group_id group, void *buf, size_t count, dlpar_dtype dtype,
                    dlpar_op op, void *stream)
{
  int rc = check(ctx, group, dtype);
  return rc ? rc : ctx->backend->allreduce(ctx, (dlpar_group)group, buf, count, dtype, op, stream);
}

int dlpar_allgather(dlpar_ctx *ctx, dlpar_group_id group, const void *send, void *recv, size_t count,
                    dlpar_dtype dtype, void *stream)
{
  int rc = check(ctx, group, dtype);
  return rc ? rc : ctx->backend->allgather(ctx, (dlpar_group)group, send, recv, count, dtype, stream);
}

int dlpar_reduce_scatter(dlpar_ctx *ctx, dlpar_group_id group, const void *send, void *recv, size_t count,
                         dlpar_dtype dtype, dlpar_op op, void *stream)
{
  int rc = check(ctx, group, dtype);
  return rc ? rc : ctx->backend->reduce_scatter(ctx, (dlpar_group)group, send, recv, count, dtype, op, stream);
}

int dlpar_broadcast(dlpar_ctx *ctx, dlpar_group_id group, void *buf, size_t count, dlpar_dtype dtype,
                    int root, void *stream)
{
  int rc = check(ctx, group, dtype);
  return rc ? rc : ctx->backend->broadcast(ctx, (dlpar_group)group, buf, count, dtype, root, stream);
}

int dlpar_barrier(dlpar_ctx *ctx, dlpar_group_id group)
{
  int rc = check(ctx, group, DLPAR_FLOAT32);
  return rc ? rc : ctx->backend->barrier(ctx, (dlpar_group)group);
}
