/* SPDX-License-Identifier: BSD-3-Clause */
/* tools/bench_comm.c: dlpar-bench-comm, collective bandwidth on the tp,
 * dp and world groups in the style of nccl-tests (same size, time, algbw and
 * busbw columns and definitions):
 *   algbw = size / time
 *   allreduce:                busbw = algbw * 2(n-1)/n
 *   allgather, reduce_scatter: busbw = algbw * (n-1)/n
 * where n is the group size and size the operation's total data (for
 * allgather the gathered output, for reduce_scatter the full input). Time is
 * the mean over --iters, the maximum over the group's ranks. NCCL on GPUs,
 * MPI on CPUs. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "tools/devbuf.h"
#include "include/dlpar/dlpar.h"
#include "common/text.h"

typedef enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCE_SCATTER } bench_op;

static const char *const op_names[] = {"allreduce", "allgather", "reduce_scatter"};
static const char *const group_names[] = {"world", "tp", "dp"};

typedef struct {
  size_t min_bytes, max_bytes;
  int iters, warmup;
} bench_args;

static double busbw_factor(bench_op op, int n)
{
  return op == OP_ALLREDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
}

static int run_op(dlpar_ctx *ctx, const dlpar_devbuf_ctx *dev, bench_op op, dlpar_group_id group, void *send,
                  void *recv, size_t count)
{
  switch (op) {
  case OP_ALLREDUCE: return dlpar_allreduce(ctx, group, send, count, DLPAR_FLOAT32, DLPAR_SUM, dev->stream);
  case OP_ALLGATHER: return dlpar_allgather(ctx, group, send, recv, count, DLPAR_FLOAT32, dev->stream);
  default: return dlpar_reduce_scatter(ctx, group, send, recv, count, DLPAR_FLOAT32, DLPAR_SUM, dev->stream);
  }
}

/* Says which step failed and why, on stderr; returns 1. */
static int failed(const char *step, const char *why)
{
  fprintf(stderr, "dlpar-bench-comm: %s: %s\n", step, why);
  return 1;
}

/* The maximum of a host double over the group, through a buffer where the
 * backend wants it; each step that fails says so. */
static int group_max(dlpar_ctx *ctx, const dlpar_devbuf_ctx *dev, dlpar_group_id group, double *value)
{
  double *scratch = dlpar_devbuf_alloc(dev, sizeof(double));
  int rc = 0;
  if (!scratch)
    return failed("the time's maximum", "cannot allocate its buffer");
  if (dlpar_devbuf_put(dev, scratch, value, sizeof(double)) != 0)
    rc = failed("the time's maximum", "cannot copy the time into its buffer");
  else if (dlpar_allreduce(ctx, group, scratch, 1, DLPAR_FLOAT64, DLPAR_MAX, dev->stream) != DLPAR_OK)
    rc = failed("the time's maximum", dlpar_last_error(ctx));
  else if (dlpar_devbuf_get(dev, value, scratch, sizeof(double)) != 0)
    rc = failed("the time's maximum", "cannot copy the maximum out of its buffer");
  else if (dlpar_devbuf_sync(dev) != 0)
    rc = failed("the time's maximum", "the device reported an error while waiting for it");
  dlpar_devbuf_free(dev, scratch);
  return rc;
}

/* Mean seconds per call, the maximum over the group. */
static int time_op(dlpar_ctx *ctx, const dlpar_devbuf_ctx *dev, const bench_args *a, bench_op op,
                   dlpar_group_id group, void *send, void *recv, size_t count, double *mean)
{
  double start = 0, elapsed;
  for (int i = 0; i < a->warmup + a->iters; i++) {
    if (i == a->warmup) {
      if (dlpar_devbuf_sync(dev) != 0)
        return failed("the warm-up", "the device reported an error while waiting for it");
      if (dlpar_barrier(ctx, group) != DLPAR_OK)
        return failed("the barrier before the timed calls", dlpar_last_error(ctx));
      start = dlpar_now();
    }
    if (run_op(ctx, dev, op, group, send, recv, count) != DLPAR_OK)
      return failed(op_names[op], dlpar_last_error(ctx));
  }
  if (dlpar_devbuf_sync(dev) != 0)
    return failed(op_names[op], "the device reported an error while waiting for the timed calls");
  elapsed = (dlpar_now() - start) / a->iters;
  if (group_max(ctx, dev, group, &elapsed) != 0)
    return 1;
  *mean = elapsed;
  return 0;
}

static int bench_group(dlpar_ctx *ctx, const dlpar_devbuf_ctx *dev, const bench_args *a, dlpar_group_id group,
                       int n, void *send, void *recv)
{
  const dlpar_info *info = dlpar_get_info(ctx);
  for (int op = 0; op < 3; op++) {
    for (size_t bytes = a->min_bytes; bytes <= a->max_bytes; bytes *= 2) {
      /* count per rank: allreduce reduces `bytes`; allgather gathers `bytes` in all */
      const size_t count = op == OP_ALLREDUCE ? bytes / 4 : bytes / 4 / (size_t)n;
      double t = 0, algbw;
      if (count == 0)
        continue;
      if (time_op(ctx, dev, a, (bench_op)op, group, send, recv, count, &t) != 0)
        return 1; /* time_op said why */
      algbw = (double)(op == OP_ALLREDUCE ? count : count * (size_t)n) * 4 / t / 1e9;
      if (info->rank == 0)
        printf("%7s %6d %-15s %12zu %10zu %10.1f %11.3f %11.3f\n", group_names[group], n, op_names[op],
               (op == OP_ALLREDUCE ? count : count * (size_t)n) * 4, count, t * 1e6, algbw,
               algbw * busbw_factor((bench_op)op, n));
    }
  }
  return 0;
}

/* A size in bytes with an optional K, M or G suffix. */
static int parse_size(const char *text, size_t *out)
{
  char *end;
  unsigned long long value = strtoull(text, &end, 10);
  const unsigned long long unit = *end == 'K' ? 1ULL << 10 : *end == 'M' ? 1ULL << 20 : *end == 'G' ? 1ULL << 30 : 1;
  if (end == text || (unit > 1 && end[1] != '\0') || (unit == 1 && *end != '\0') || value == 0)
    return -1;
  *out = (size_t)(value * unit);
  return 0;
}

static int parse_args(int argc, char **argv, bench_args *a)
{
  *a = (bench_args){8, 64 << 20, 20, 5};
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--min=", 6) == 0 && parse_size(argv[i] + 6, &a->min_bytes) == 0)
      continue;
    if (strncmp(argv[i], "--max=", 6) == 0 && parse_size(argv[i] + 6, &a->max_bytes) == 0)
      continue;
    if (sscanf(argv[i], "--iters=%d", &a->iters) == 1 && a->iters > 0)
      continue;
    if (sscanf(argv[i], "--warmup=%d", &a->warmup) == 1 && a->warmup >= 0)
      continue;
    fprintf(stderr, "usage: dlpar-bench-comm [--min=8] [--max=64M] [--iters=20] [--warmup=5]\n");
    return -1;
  }
  return a->min_bytes <= a->max_bytes ? 0 : -1;
}

int main(int argc, char **argv)
{
  bench_args a;
  dlpar_ctx *ctx;
  dlpar_devbuf_ctx dev;
  const dlpar_info *info;
  void *send, *recv;
  int rc = 0, exit_code;
  if (parse_args(argc, argv, &a) != 0)
    return 2;
  rc = dlpar_init(argc, argv, NULL, &ctx);
  if ((exit_code = dlpar_check_ended(rc, ctx)) >= 0)
    return exit_code;
  if (rc != DLPAR_OK) {
    fprintf(stderr, "dlpar-bench-comm: %s\n", dlpar_last_error(ctx));
    return 1;
  }
  info = dlpar_get_info(ctx);
  if (dlpar_devbuf_setup(&dev, info->backend == DLPAR_BACKEND_NCCL) != 0)
    return failed("set-up", "no CUDA stream for the NCCL backend (a build without CUDA, or a GPU that nvidia-smi "
                  "shows unusable)");
  if (!(send = dlpar_devbuf_alloc(&dev, a.max_bytes)) || !(recv = dlpar_devbuf_alloc(&dev, a.max_bytes)))
    return failed("set-up", "cannot allocate the two buffers of --max bytes (use a smaller --max)");
  if (info->rank == 0) {
    printf("# dlpar-bench-comm: %d %s on %d %s, grid %dx%d, backend %s, float32, %d iters\n", info->size,
           dlpar_plural(info->size, "rank", "ranks"), info->nnodes, dlpar_plural(info->nnodes, "node", "nodes"), info->tp_size, info->dp_size, dlpar_backend_name(info->backend), a.iters);
    printf("# busbw = algbw * 2(n-1)/n (allreduce), algbw * (n-1)/n (allgather, reduce_scatter)\n");
    printf("#%6s %6s %-15s %12s %10s %10s %11s %11s\n", "group", "n", "op", "size(B)", "count", "time(us)",
           "algbw(GB/s)", "busbw(GB/s)");
  }
  rc = bench_group(ctx, &dev, &a, DLPAR_TP, info->tp_size, send, recv);
  if (rc == 0)
    rc = bench_group(ctx, &dev, &a, DLPAR_DP, info->dp_size, send, recv);
  if (rc == 0)
    rc = bench_group(ctx, &dev, &a, DLPAR_WORLD, info->size, send, recv);
  dlpar_devbuf_free(&dev, send);
  dlpar_devbuf_free(&dev, recv);
  dlpar_devbuf_teardown(&dev);
  dlpar_finalize(ctx);
  return rc;
}
