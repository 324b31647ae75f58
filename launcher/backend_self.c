/* launcher/backend_self.c: the collectives of a world of one rank (a plain
 * run outside any launcher, or a 1x1 grid): copies and no-ops. */
#include "config.h"

#include <string.h>

#include "launcher/internal.h"

static int self_init(dlpar_ctx *ctx)
{
  (void)ctx;
  return DLPAR_OK;
}

static void self_finalize(dlpar_ctx *ctx)
{
  (void)ctx;
}

static int self_allreduce(dlpar_ctx *ctx, dlpar_group group, void *buf, size_t count,
                          dlpar_dtype dtype, dlpar_op op, void *stream)
{
  (void)ctx, (void)group, (void)buf, (void)count, (void)dtype, (void)op, (void)stream;
  return DLPAR_OK;
}

static int self_allgather(dlpar_ctx *ctx, dlpar_group group, const void *send, void *recv,
                          size_t count, dlpar_dtype dtype, void *stream)
{
  (void)ctx, (void)group, (void)stream;
  if (send != recv)
    memmove(recv, send, count * dlpar_dtype_size(dtype));
  return DLPAR_OK;
}

static int self_reduce_scatter(dlpar_ctx *ctx, dlpar_group group, const void *send, void *recv,
                               size_t count, dlpar_dtype dtype, dlpar_op op, void *stream)
{
  (void)op;
  return self_allgather(ctx, group, send, recv, count, dtype, stream);
}

static int self_broadcast(dlpar_ctx *ctx, dlpar_group group, void *buf, size_t count,
                          dlpar_dtype dtype, int root, void *stream)
{
  (void)ctx, (void)group, (void)buf, (void)count, (void)dtype, (void)root, (void)stream;
  return DLPAR_OK;
}

static int self_barrier(dlpar_ctx *ctx, dlpar_group group)
{
  (void)ctx, (void)group;
  return DLPAR_OK;
}

static int self_poll(dlpar_ctx *ctx, double now, char *err, size_t errlen)
{
  (void)ctx, (void)now, (void)err, (void)errlen;
  return DLPAR_OK;
}

static int self_agree_max(dlpar_ctx *ctx, int local, int *global)
{
  (void)ctx;
  *global = local;
  return DLPAR_OK;
}

const dlpar_backend_ops dlpar_backend_self = {
    .id = DLPAR_BACKEND_SELF,
    .init = self_init,
    .finalize = self_finalize,
    .allreduce = self_allreduce,
    .allgather = self_allgather,
    .reduce_scatter = self_reduce_scatter,
    .broadcast = self_broadcast,
    .barrier = self_barrier,
    .poll = self_poll,
    .abort_comms = NULL,
    .agree_max = self_agree_max,
};
