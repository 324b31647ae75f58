/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/backends/backend_self.c: the collectives of a world of one rank (a plain
 * run outside any launcher, or a 1x1 grid): copies and no-ops. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "libdlpar/internal.h"
#include "libdlpar/backends/backends.h"

/* The stop flag and step time posted by the last stop_post and
 * times_post, until their waits. */
typedef struct {
  int posted_stop;
  double posted_time;
} self_state;

static int self_init(dlpar_ctx *ctx)
{
  if (!(ctx->backend_state = calloc(1, sizeof(self_state))))
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory");
  return DLPAR_OK;
}

static void self_finalize(dlpar_ctx *ctx)
{
  free(ctx->backend_state);
  ctx->backend_state = NULL;
}

static int self_allreduce(dlpar_ctx *ctx, dlpar_group group, void *buf, size_t count,
                          dlpar_dtype dtype, dlpar_op op, void *stream)
{
  (void)ctx;
  (void)group;
  (void)buf;
  (void)count;
  (void)dtype;
  (void)op;
  (void)stream;
  return DLPAR_OK;
}

static int self_allgather(dlpar_ctx *ctx, dlpar_group group, const void *send, void *recv,
                          size_t count, dlpar_dtype dtype, void *stream)
{
  (void)ctx;
  (void)group;
  (void)stream;
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
  (void)ctx;
  (void)group;
  (void)buf;
  (void)count;
  (void)dtype;
  (void)root;
  (void)stream;
  return DLPAR_OK;
}

static int self_barrier(dlpar_ctx *ctx, dlpar_group group)
{
  (void)ctx;
  (void)group;
  return DLPAR_OK;
}

static int self_poll(dlpar_ctx *ctx, double now, dlpar_error *err)
{
  (void)ctx;
  (void)now;
  (void)err;
  return DLPAR_OK;
}

static int self_stop_post(dlpar_ctx *ctx, int local, void *stream)
{
  (void)stream;
  ((self_state *)ctx->backend_state)->posted_stop = local;
  return DLPAR_OK;
}

static int self_stop_wait(dlpar_ctx *ctx, int *global)
{
  *global = ((self_state *)ctx->backend_state)->posted_stop;
  return DLPAR_OK;
}

static int self_times_post(dlpar_ctx *ctx, double local, void *stream)
{
  (void)stream;
  ((self_state *)ctx->backend_state)->posted_time = local;
  return DLPAR_OK;
}

static int self_times_wait(dlpar_ctx *ctx, double *all)
{
  all[0] = ((self_state *)ctx->backend_state)->posted_time;
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
    .stop_post = self_stop_post,
    .stop_wait = self_stop_wait,
    .times_post = self_times_post,
    .times_wait = self_times_wait,
};
