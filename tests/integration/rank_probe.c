/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/integration/rank_probe.c: libdlpar under faults, for the launcher
 * tests (white-box: it reads the exchanged NCCL ids from the context).
 *   --sleep-rank=R --sleep=S   rank R sleeps S s before dlpar_init (rendezvous timeout)
 *   --kill-rank=R              rank R SIGKILLs itself after init; the rest allreduce
 *   --stall-rank=R             rank R SIGSTOPs itself after init (stuck, not dead: the watchdog)
 *   --exit-rank=R              rank R exits (status 0) before dlpar_init: it never arrives
 *   --busy-rank=R              rank R stays in its own code (stuck_in_user_code) instead of the allreduce
 *   --nccl-ids                 exchange real NCCL ids over PMIx; print a digest per group (- for none),
 *                              the roots (ids) per group, and the bytes this rank moved through PMIx
 *   --world-ids                then exchange the world's ids too, as the first world collective on NCCL does
 *   --wait-stop                loop until dlpar_stop_requested (SIGTERM from Slurm/dlpar-run)
 *   --keep-signals             dlpar_options.keep_signals: the stop signals keep their dispositions
 *   --take-fatal               dlpar_options.fatal_grace_s = 30: a thread takes what the watchdog finds
 *                              (dlpar_fatal_error), prints it and ends the step with status 3
 * Prints "rank_probe: rank R ..." lines the shell tests check. */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "libdlpar/bootstrap/bootstrap.h"

typedef struct {
  int sleep_rank, kill_rank, stall_rank, exit_rank, busy_rank;
  double sleep_seconds;
  int nccl_ids, world_ids, wait_stop, keep_signals, take_fatal;
} probe_args;

static uint32_t digest(const unsigned char *bytes, size_t len)
{
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < len; i++)
    h = (h ^ bytes[i]) * 16777619u;
  return h;
}

/* The digest of the group's ids (all its roots'), or "-" for none (a 1-rank
 * group has no communicator). */
static const char *id_text(const dlpar_group_ids *ids, char out[9])
{
  if (ids->count == 0)
    snprintf(out, 9, "-");
  else
    snprintf(out, 9, "%08x", digest((const unsigned char *)ids->ids, (size_t)ids->count * DLPAR_NCCL_ID_BYTES));
  return out;
}

static void print_ids(const dlpar_ctx *ctx)
{
  char tp[9], dp[9], world[9];
  const dlpar_group_ids *ids = ctx->nccl_ids.group;
  printf("rank_probe: rank %d ids tp %s dp %s world %s\n", ctx->info.rank, id_text(&ids[DLPAR_GROUP_TP], tp),
         id_text(&ids[DLPAR_GROUP_DP], dp), id_text(&ids[DLPAR_GROUP_WORLD], world));
  printf("rank_probe: rank %d roots tp %d dp %d world %d\n", ctx->info.rank, ids[DLPAR_GROUP_TP].count,
         ids[DLPAR_GROUP_DP].count, ids[DLPAR_GROUP_WORLD].count);
  printf("rank_probe: rank %d pmix put %zu got_local %zu got_remote %zu keys %d\n", ctx->info.rank, ctx->traffic.put,
         ctx->traffic.got_local, ctx->traffic.got_remote, ctx->traffic.keys_got);
}

static int parse(int argc, char **argv, probe_args *a)
{
  *a = (probe_args){-1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0};
  for (int i = 1; i < argc; i++) {
    if (sscanf(argv[i], "--sleep-rank=%d", &a->sleep_rank) == 1 || sscanf(argv[i], "--sleep=%lf", &a->sleep_seconds) == 1 ||
        sscanf(argv[i], "--kill-rank=%d", &a->kill_rank) == 1 || sscanf(argv[i], "--stall-rank=%d", &a->stall_rank) == 1 ||
        sscanf(argv[i], "--exit-rank=%d", &a->exit_rank) == 1 || sscanf(argv[i], "--busy-rank=%d", &a->busy_rank) == 1)
      continue;
    if (strcmp(argv[i], "--nccl-ids") == 0)
      a->nccl_ids = 1;
    else if (strcmp(argv[i], "--world-ids") == 0)
      a->world_ids = 1;
    else if (strcmp(argv[i], "--wait-stop") == 0)
      a->wait_stop = 1;
    else if (strcmp(argv[i], "--keep-signals") == 0)
      a->keep_signals = 1;
    else if (strcmp(argv[i], "--take-fatal") == 0)
      a->take_fatal = 1;
    else
      return -1;
  }
  return 0;
}

static int wait_for_stop(dlpar_ctx *ctx)
{
  for (long iteration = 0; iteration < 600; iteration++) {
    int stop = 0;
    if (dlpar_stop_requested(ctx, NULL, &stop) != DLPAR_OK)
      return 1;
    if (stop) {
      /* flushed now: a second SIGTERM (Slurm may send one) ends the rank
       * at once, before exit would flush it */
      printf("rank_probe: rank %d stopping at iteration %ld\n", ctx->info.rank, iteration);
      fflush(stdout);
      return 0;
    }
    if (iteration == 0)
      printf("rank_probe: rank %d (pid %ld) waiting for a stop signal\n", ctx->info.rank, (long)getpid());
    fflush(stdout);
    usleep(100000);
  }
  return 1;
}

/* A rank stuck in the program's own code, which its stack must show (the
 * probe is linked -export-dynamic, so the name is in its symbol table). */
__attribute__((noinline)) void stuck_in_user_code(void);
__attribute__((noinline)) void stuck_in_user_code(void)
{
  for (int i = 0; i < 6000; i++)
    usleep(100000);
}

/* The embedding host's side of NCCL's async-error model: poll, take, end the step its own way. */
static void *take_fatal_main(void *arg)
{
  dlpar_ctx *ctx = arg;
  char line[DLPAR_ERRLEN];
  int status;
  while ((status = dlpar_fatal_error(ctx, line, sizeof(line))) == DLPAR_OK)
    usleep(50000);
  printf("rank_probe: rank %d took the error first (status %d): %s\n", ctx->info.rank, status, line);
  dlpar_abort(ctx, 3, NULL);
}

int main(int argc, char **argv)
{
  probe_args a;
  dlpar_options options = {0};
  dlpar_ctx *ctx;
  const char *rank_text = getenv("PMIX_RANK");
  int32_t value = 1;
  if (parse(argc, argv, &a) != 0) {
    fprintf(stderr, "usage: rank_probe [--sleep-rank=R --sleep=S] [--kill-rank=R] [--stall-rank=R] [--exit-rank=R] [--busy-rank=R] [--nccl-ids] "
                    "[--world-ids] [--wait-stop] [--keep-signals] [--take-fatal]\n");
    return 2;
  }
  if (rank_text && atoi(rank_text) == a.sleep_rank)
    usleep((useconds_t)(a.sleep_seconds * 1e6));
  if (rank_text && atoi(rank_text) == a.exit_rank)
    return 0;
  options.exchange_nccl_ids = a.nccl_ids;
  options.keep_signals = a.keep_signals;
  options.fatal_grace_s = a.take_fatal ? 30 : 0;
  if (dlpar_init(argc, argv, &options, &ctx) != DLPAR_OK) {
    fprintf(stderr, "rank_probe: %s\n", dlpar_last_error(ctx));
    return 1;
  }
  if (a.world_ids && dlpar_pmix_world_ids(ctx) != DLPAR_OK) {
    fprintf(stderr, "rank_probe: %s\n", dlpar_last_error(ctx));
    return 1;
  }
  if (a.nccl_ids)
    print_ids(ctx);
  printf("rank_probe: rank %d initialised\n", ctx->info.rank);
  fflush(stdout);
  if (a.take_fatal) {
    pthread_t taker;
    if (pthread_create(&taker, NULL, take_fatal_main, ctx) != 0)
      return 1;
    pthread_detach(taker);
  }
  if (ctx->info.rank == a.kill_rank)
    raise(SIGKILL);
  if (ctx->info.rank == a.stall_rank)
    raise(SIGSTOP);
  if (ctx->info.rank == a.busy_rank)
    stuck_in_user_code();
  if (a.wait_stop) {
    int rc = wait_for_stop(ctx);
    dlpar_finalize(ctx); /* before exit: Open MPI 5 ends the node-mates of a rank that exits without it */
    return rc;
  }
  if (dlpar_allreduce(ctx, DLPAR_WORLD, &value, 1, DLPAR_INT32, DLPAR_SUM, NULL) != DLPAR_OK) {
    fprintf(stderr, "rank_probe: %s\n", dlpar_last_error(ctx));
    return 1;
  }
  printf("rank_probe: rank %d allreduce %d\n", ctx->info.rank, value);
  dlpar_finalize(ctx);
  return 0;
}
