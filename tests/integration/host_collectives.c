/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/integration/host_collectives.c: libdlpar's host-memory collectives
 * (dlpar_allreduce_host, dlpar_allgather_host, dlpar_barrier) on the tp, dp
 * and world groups, every result checked exactly against values computed
 * from the group's members. White-box: where the world collectives are to
 * be composed from the tp and dp groups' (DLPAR_WORLD_VIA_GROUPS=1, or a
 * backend without a world communicator), it puts a guard in front of the
 * real backend that fails any collective on the world group, so a result
 * that came through the world communicator cannot pass (on NCCL, whose
 * host collectives stage through the device by themselves, it checks that
 * no world communicator was built). The start-up report (one world
 * allgather) runs behind the guard too. --guard puts the guard there
 * whatever the mode (the world collectives must then fail: the guard works).
 * Prints "host_collectives: rank R world by groups|direct: ok" (or FAILED). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libdlpar/internal.h"

#define VALUES 3
#define GATHERED 5

/* The real backend's operations, world collectives refused. */
typedef struct {
  dlpar_backend_ops ops; /* first: ctx->backend points here */
  const dlpar_backend_ops *real;
} guarded_backend;

static const dlpar_backend_ops *real_of(const dlpar_ctx *ctx)
{
  return ((const guarded_backend *)ctx->backend)->real;
}

static int refuse_world(dlpar_ctx *ctx, const char *op)
{
  return dlpar_fail(ctx, DLPAR_ERR_STATE, "%s on the world communicator, which the composition must not use", op);
}

static int guard_allreduce(dlpar_ctx *ctx, dlpar_group group, void *buf, size_t count, dlpar_dtype dtype, dlpar_op op,
                           void *stream)
{
  return group == DLPAR_GROUP_WORLD ? refuse_world(ctx, "allreduce")
                                    : real_of(ctx)->allreduce(ctx, group, buf, count, dtype, op, stream);
}

static int guard_allgather(dlpar_ctx *ctx, dlpar_group group, const void *send, void *recv, size_t count,
                           dlpar_dtype dtype, void *stream)
{
  return group == DLPAR_GROUP_WORLD ? refuse_world(ctx, "allgather")
                                    : real_of(ctx)->allgather(ctx, group, send, recv, count, dtype, stream);
}

static int guard_barrier(dlpar_ctx *ctx, dlpar_group group)
{
  return group == DLPAR_GROUP_WORLD ? refuse_world(ctx, "barrier") : real_of(ctx)->barrier(ctx, group);
}

static void guard_world(dlpar_ctx *ctx, guarded_backend *guard)
{
  guard->real = ctx->backend;
  guard->ops = *ctx->backend;
  guard->ops.allreduce = guard_allreduce;
  guard->ops.allgather = guard_allgather;
  guard->ops.barrier = guard_barrier;
  ctx->backend = &guard->ops;
}

typedef struct {
  dlpar_ctx *ctx;
  int failures;
} checker;

static void expect(checker *c, const char *what, const char *group, size_t index, double got, double want)
{
  if (got == want)
    return;
  fprintf(stderr, "host_collectives: rank %d: %s on %s [%zu] gave %.17g, expected %.17g\n",
          dlpar_get_info(c->ctx)->rank, what, group, index, got, want);
  c->failures++;
}

static void expect_ok(checker *c, int rc, const char *what)
{
  if (rc == DLPAR_OK)
    return;
  fprintf(stderr, "host_collectives: rank %d: %s: %s\n", dlpar_get_info(c->ctx)->rank, what,
          dlpar_last_error(c->ctx));
  c->failures++;
}

/* What rank r contributes to the allreduces. */
static void values_of(int rank, double v[VALUES])
{
  v[0] = rank + 1;
  v[1] = 1000 - 3 * rank;
  v[2] = 4.0 * (rank % 3);
}

static double reduce(dlpar_op op, double a, double b)
{
  return op == DLPAR_MAX ? (a > b ? a : b) : op == DLPAR_MIN ? (a < b ? a : b) : a + b;
}

static void check_allreduce(checker *c, dlpar_group_id group, const char *name, const int *members, int n,
                            dlpar_op op, const char *what)
{
  double mine[VALUES], want[VALUES], theirs[VALUES];
  values_of(dlpar_get_info(c->ctx)->rank, mine);
  values_of(members[0], want);
  for (int i = 1; i < n; i++) {
    values_of(members[i], theirs);
    for (int k = 0; k < VALUES; k++)
      want[k] = reduce(op, want[k], theirs[k]);
  }
  for (int k = 0; op == DLPAR_AVG && k < VALUES; k++)
    want[k] /= n; /* exact: n is 1, 2 or 4 */
  expect_ok(c, dlpar_allreduce_host(c->ctx, group, mine, VALUES, DLPAR_FLOAT64, op), what);
  for (int k = 0; k < VALUES; k++)
    expect(c, what, name, (size_t)k, mine[k], want[k]);
}

/* Doubles (the start-up report's kind) and floats (checkpoint pieces). */
static void check_allgather(checker *c, dlpar_group_id group, const char *name, const int *members, int n)
{
  const int rank = dlpar_get_info(c->ctx)->rank;
  double send[VALUES], *recv = malloc(sizeof(double) * VALUES * (size_t)n);
  float pieces[GATHERED], *all = malloc(sizeof(float) * GATHERED * (size_t)n);
  if (!recv || !all) {
    fprintf(stderr, "host_collectives: out of memory\n");
    exit(1);
  }
  for (int k = 0; k < VALUES; k++)
    send[k] = 10.0 * rank + k;
  for (int k = 0; k < GATHERED; k++)
    pieces[k] = -100.0f * (float)rank - (float)k;
  expect_ok(c, dlpar_allgather_host(c->ctx, group, send, recv, VALUES, DLPAR_FLOAT64), "allgather float64");
  expect_ok(c, dlpar_allgather_host(c->ctx, group, pieces, all, GATHERED, DLPAR_FLOAT32), "allgather float32");
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < VALUES; k++)
      expect(c, "allgather float64", name, (size_t)(i * VALUES + k), recv[i * VALUES + k], 10.0 * members[i] + k);
    for (int k = 0; k < GATHERED; k++)
      expect(c, "allgather float32", name, (size_t)(i * GATHERED + k), all[i * GATHERED + k],
             -100.0f * (float)members[i] - (float)k);
  }
  free(recv);
  free(all);
}

static void check_group(checker *c, dlpar_group_id group, const char *name)
{
  int *members = malloc(sizeof(int) * (size_t)dlpar_get_info(c->ctx)->size), n;
  if (!members) {
    fprintf(stderr, "host_collectives: out of memory\n");
    exit(1);
  }
  n = dlpar_group_members(c->ctx, group, members);
  check_allreduce(c, group, name, members, n, DLPAR_SUM, "allreduce sum");
  check_allreduce(c, group, name, members, n, DLPAR_MAX, "allreduce max");
  check_allreduce(c, group, name, members, n, DLPAR_MIN, "allreduce min");
  check_allreduce(c, group, name, members, n, DLPAR_AVG, "allreduce avg");
  check_allgather(c, group, name, members, n);
  expect_ok(c, dlpar_barrier(c->ctx, group), "barrier");
  free(members);
}

int main(int argc, char **argv)
{
  dlpar_ctx *ctx;
  guarded_backend guard;
  checker c = {0};
  double value = 1;
  bool by_groups, guarded;
  if (argc > 2 || (argc == 2 && strcmp(argv[1], "--guard") != 0)) {
    fprintf(stderr, "usage: host_collectives [--guard]\n");
    return 2;
  }
  if (dlpar_init(argc, argv, NULL, &ctx) != DLPAR_OK) {
    fprintf(stderr, "host_collectives: %s\n", dlpar_last_error(ctx));
    return 1;
  }
  c.ctx = ctx;
  by_groups = dlpar_world_by_groups(ctx);
  guarded = by_groups || argc == 2;
  if (guarded)
    guard_world(ctx, &guard);
  check_group(&c, DLPAR_TP, "tp");
  check_group(&c, DLPAR_DP, "dp");
  check_group(&c, DLPAR_WORLD, "world");
  expect_ok(&c, dlpar_startup_done(ctx, NULL), "start-up report");
  if (dlpar_allreduce_host(ctx, (dlpar_group_id)7, &value, 1, DLPAR_FLOAT64, DLPAR_SUM) == DLPAR_OK) {
    fprintf(stderr, "host_collectives: rank %d: group 7 accepted\n", ctx->info.rank);
    c.failures++;
  }
  if (guarded)
    ctx->backend = guard.real;
  if (by_groups && ctx->backend->has_world && ctx->backend->has_world(ctx)) {
    fprintf(stderr, "host_collectives: rank %d: a world communicator was built\n", ctx->info.rank);
    c.failures++;
  }
  printf("host_collectives: rank %d world %s: %s\n", ctx->info.rank, by_groups ? "by groups" : "direct",
         c.failures ? "FAILED" : "ok");
  fflush(stdout);
  dlpar_finalize(ctx);
  return c.failures ? 1 : 0;
}
