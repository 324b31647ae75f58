/* SPDX-License-Identifier: BSD-3-Clause */
/* tools/hello.c: dlpar-hello, the first thing to run on a new cluster:
 *   srun -N2 -n4 --dl-parallel=2x2 dlpar-hello      (or dlpar-run -n 4 ...)
 * Initialises libdlpar, prints one line per rank (rank, host, grid
 * coordinates and groups, device, backend), and runs an allreduce,
 * allgather, reduce-scatter and broadcast of integers on each group,
 * checking every result exactly. Exit 0 only if every check passed. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/devbuf.h"
#include "include/dlpar/dlpar.h"
#include "common/text.h"

#define MAX_GROUP 4096

typedef struct {
  dlpar_ctx *ctx;
  dlpar_devbuf_ctx dev;
  int failures;
} hello;

/* Counts and reports a result that is not the expected one. */
static int check_int(hello *h, const char *what, dlpar_group_id group, int32_t got, int32_t want)
{
  if (got == want)
    return 0;
  fprintf(stderr, "dlpar-hello: rank %d: %s on group %d gave %d, expected %d\n",
          dlpar_get_info(h->ctx)->rank, what, (int)group, got, want);
  h->failures++;
  return 1;
}

static int32_t *roundtrip_alloc(hello *h, size_t n)
{
  return dlpar_devbuf_alloc(&h->dev, n * sizeof(int32_t));
}

static void test_group(hello *h, dlpar_group_id group, const int *members, int n, int group_rank)
{
  const int rank = dlpar_get_info(h->ctx)->rank;
  int32_t host[MAX_GROUP], want_sum = 0;
  int32_t *buf = roundtrip_alloc(h, (size_t)n), *all = roundtrip_alloc(h, (size_t)n);
  for (int i = 0; i < n; i++)
    want_sum += members[i] + 1;
  /* allreduce of rank+1 */
  host[0] = rank + 1;
  dlpar_devbuf_put(&h->dev, buf, host, sizeof(int32_t));
  if (dlpar_allreduce(h->ctx, group, buf, 1, DLPAR_INT32, DLPAR_SUM, h->dev.stream) != 0)
    h->failures++;
  dlpar_devbuf_get(&h->dev, host, buf, sizeof(int32_t));
  dlpar_devbuf_sync(&h->dev);
  check_int(h, "allreduce", group, host[0], want_sum);
  /* allgather of ranks: the members in group order */
  host[0] = rank;
  dlpar_devbuf_put(&h->dev, buf, host, sizeof(int32_t));
  if (dlpar_allgather(h->ctx, group, buf, all, 1, DLPAR_INT32, h->dev.stream) != 0)
    h->failures++;
  dlpar_devbuf_get(&h->dev, host, all, (size_t)n * sizeof(int32_t));
  dlpar_devbuf_sync(&h->dev);
  for (int i = 0; i < n; i++)
    check_int(h, "allgather", group, host[i], members[i]);
  /* reduce-scatter: element i of rank r is 1000*r + i; group rank g gets the sum over members of 1000*m + g */
  for (int i = 0; i < n; i++)
    host[i] = 1000 * rank + i;
  dlpar_devbuf_put(&h->dev, all, host, (size_t)n * sizeof(int32_t));
  if (dlpar_reduce_scatter(h->ctx, group, all, buf, 1, DLPAR_INT32, DLPAR_SUM, h->dev.stream) != 0)
    h->failures++;
  dlpar_devbuf_get(&h->dev, host, buf, sizeof(int32_t));
  dlpar_devbuf_sync(&h->dev);
  check_int(h, "reduce_scatter", group, host[0], 1000 * (want_sum - n) + n * group_rank);
  /* broadcast from group rank 0 */
  host[0] = group_rank == 0 ? 7 * rank + 1 : -1;
  dlpar_devbuf_put(&h->dev, buf, host, sizeof(int32_t));
  if (dlpar_broadcast(h->ctx, group, buf, 1, DLPAR_INT32, 0, h->dev.stream) != 0)
    h->failures++;
  dlpar_devbuf_get(&h->dev, host, buf, sizeof(int32_t));
  dlpar_devbuf_sync(&h->dev);
  check_int(h, "broadcast", group, host[0], 7 * members[0] + 1);
  if (dlpar_barrier(h->ctx, group) != 0)
    h->failures++;
  dlpar_devbuf_free(&h->dev, buf);
  dlpar_devbuf_free(&h->dev, all);
}

static void format_members(const int *members, int n, char *out, size_t len)
{
  size_t used = (size_t)snprintf(out, len, "[");
  for (int i = 0; i < n && used < len; i++)
    used += (size_t)snprintf(out + used, len - used, "%s%d", i ? "," : "", members[i]);
  if (used < len)
    snprintf(out + used, len - used, "]");
}

static int parse_backend(const char *text, dlpar_backend *backend)
{
  if (strcmp(text, "mpi") == 0)
    *backend = DLPAR_BACKEND_MPI;
  else if (strcmp(text, "nccl") == 0)
    *backend = DLPAR_BACKEND_NCCL;
  else if (strcmp(text, "auto") == 0)
    *backend = DLPAR_BACKEND_AUTO;
  else
    return -1;
  return 0;
}

int main(int argc, char **argv)
{
  dlpar_options options = {0};
  hello h = {0};
  const dlpar_info *info;
  int tp[MAX_GROUP], dp[MAX_GROUP], world[MAX_GROUP], rc, exit_code;
  char tp_text[256], dp_text[256];
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--backend=", 10) == 0 && parse_backend(argv[i] + 10, &options.backend) == 0)
      continue;
    fprintf(stderr, "usage: dlpar-hello [--backend=auto|mpi|nccl]  (run it under srun or dlpar-run)\n");
    return 2;
  }
  rc = dlpar_init(argc, argv, &options, &h.ctx);
  if ((exit_code = dlpar_check_ended(rc, h.ctx)) >= 0)
    return exit_code;
  if (rc != DLPAR_OK) {
    fprintf(stderr, "dlpar-hello: %s\n", dlpar_last_error(h.ctx));
    return 1;
  }
  info = dlpar_get_info(h.ctx);
  if (info->size > MAX_GROUP || dlpar_devbuf_setup(&h.dev, info->backend == DLPAR_BACKEND_NCCL) != 0) {
    fprintf(stderr, "dlpar-hello: cannot set up buffers for %d %s\n", info->size,
            dlpar_plural(info->size, "rank", "ranks"));
    return 1;
  }
  dlpar_group_members(h.ctx, DLPAR_TP, tp);
  dlpar_group_members(h.ctx, DLPAR_DP, dp);
  dlpar_group_members(h.ctx, DLPAR_WORLD, world);
  test_group(&h, DLPAR_TP, tp, info->tp_size, info->tp_rank);
  test_group(&h, DLPAR_DP, dp, info->dp_size, info->dp_rank);
  test_group(&h, DLPAR_WORLD, world, info->size, info->rank);
  if (dlpar_startup_done(h.ctx, h.dev.stream) != 0) { /* its collectives are its first step */
    fprintf(stderr, "dlpar-hello: rank %d: %s\n", info->rank, dlpar_last_error(h.ctx));
    h.failures++;
  }
  format_members(tp, info->tp_size, tp_text, sizeof(tp_text));
  format_members(dp, info->dp_size, dp_text, sizeof(dp_text));
  printf("dlpar-hello: rank %d/%d host %s node %d local %d/%d tp %d/%d %s dp %d/%d %s device %d backend %s "
         "init %.3f s: %s\n",
         info->rank, info->size, info->host, info->node, info->local_rank, info->local_size, info->tp_rank,
         info->tp_size, tp_text, info->dp_rank, info->dp_size, dp_text, info->device,
         dlpar_backend_name(info->backend), info->init_seconds, h.failures ? "FAILED" : "collectives ok");
  fflush(stdout);
  dlpar_devbuf_teardown(&h.dev);
  dlpar_finalize(h.ctx);
  return h.failures ? 1 : 0;
}
