/* SPDX-License-Identifier: BSD-3-Clause */
/* bench/rendezvous_probe.c: one rank of bench/rendezvous. Prints, in
 * seconds since this process was created (its start time in
 * /proc/self/stat): when main() began, when libdlpar's PMIx rendezvous was
 * done (hosts and real NCCL ids exchanged: what replaces MASTER_ADDR and
 * a TCPStore), and when all groups (world, tp, dp) were ready; and the
 * bytes this rank put into PMIx and got from ranks on other nodes (white-box:
 * libdlpar's counters, for bench/startup-scaling). */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libdlpar/internal.h"

/* Seconds since this process was created. */
static double since_process_start(void)
{
  char stat[1024], *after_name;
  unsigned long long start_ticks = 0;
  struct timespec boot;
  FILE *f = fopen("/proc/self/stat", "r");
  size_t n = f ? fread(stat, 1, sizeof(stat) - 1, f) : 0;
  if (f)
    fclose(f);
  stat[n] = '\0';
  after_name = strrchr(stat, ')');
  /* field 22 (starttime) is the 20th after the name */
  if (!after_name || sscanf(after_name + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                                             "%*d %*d %*d %llu", &start_ticks) != 1)
    return -1;
  clock_gettime(CLOCK_BOOTTIME, &boot);
  return (double)boot.tv_sec + 1e-9 * (double)boot.tv_nsec - (double)start_ticks / (double)sysconf(_SC_CLK_TCK);
}

int main(int argc, char **argv)
{
  const double at_main = since_process_start();
  dlpar_options options = {.exchange_nccl_ids = 1};
  dlpar_ctx *ctx;
  const dlpar_info *info;
  double at_ready;
  if (dlpar_init(argc, argv, &options, &ctx) != 0) {
    fprintf(stderr, "rendezvous_probe: %s\n", dlpar_last_error(ctx));
    return 1;
  }
  at_ready = since_process_start();
  info = dlpar_get_info(ctx);
  printf("rendezvous_probe rank %d size %d main %.4f rendezvous %.4f ready %.4f backend %s node %d put %zu "
         "got_remote %zu\n", info->rank, info->size, at_main, at_ready - info->init_seconds + info->rendezvous_seconds,
         at_ready, dlpar_backend_name(info->backend), info->node, ctx->traffic.put, ctx->traffic.got_remote);
  dlpar_finalize(ctx);
  return 0;
}
