/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/preflight/preflight.h: what the pre-flight's three parts share: each
 * rank's report (preflight_measure.c fills it), the verdict over every
 * rank's (preflight_judge.c reaches it and rank 0 prints it), and the entry
 * that runs them in turn (preflight.c), which init.c calls. */
#ifndef DLPAR_PREFLIGHT_H
#define DLPAR_PREFLIGHT_H

#include "libdlpar/internal.h"

/* preflight/preflight.c: the --dl-check checks (env.check), after the
 * groups are ready. Returns DLPAR_OK to run the program, DLPAR_ERR_CHECK
 * when a check failed, DLPAR_DONE after --dl-check=only; it ends nothing:
 * the program's dlpar_check_ended finalizes and gives the exit status. */
int dlpar_preflight(dlpar_ctx *ctx);

#define SETTINGS_LEN 2048

enum { CHECK_SKIP = -1, CHECK_FAIL = 0, CHECK_OK = 1 };

/* What one rank found; gathered as doubles (the texts ride along as bytes). */
typedef struct {
  double binding, gpu, peer;   /* CHECK_* */
  double busbw[2];             /* GB/s on tp, dp; -1: a group of one */
  double busbw_expected[2];    /* the figure that passes */
  double gemm;                 /* GFLOP/s */
  char cpus[64], nic[64], device[64];
  char link[2][48];            /* "1.25 eth0 ethtool": the group's link (GB/s) and its source */
  char settings[SETTINGS_LEN]; /* "K=V\n" lines, sorted */
} rank_report;
_Static_assert(sizeof(rank_report) % sizeof(double) == 0, "rank_report must be whole doubles");

typedef struct {
  const rank_report *all;
  int size;
  int reference;        /* a rank whose settings most ranks share */
  double gemm_median, straggler_ratio;
  int failures;
} verdict;

/* This rank's checks and measurements (binding, GPU, settings, the tp and
 * dp allreduces' bus bandwidth, a GEMM). */
int dlpar_preflight_measure(dlpar_ctx *ctx, rank_report *report);
/* The verdict over v->all (v->size reports): the settings most ranks
 * share, the GEMM median, every failed check counted in v->failures. */
int dlpar_preflight_judge(verdict *v);
/* Rank 0's table, the ranks whose settings differ, the stragglers. */
void dlpar_preflight_print(const dlpar_ctx *ctx, const verdict *v);

#endif
