/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/preflight/preflight_judge.c: the pre-flight's judging and reporting parts:
 * over every rank's report, the settings most ranks share (a rank with
 * others fails), each allreduce against its expected figure, the GEMM
 * rates against DLPAR_CHECK_STRAGGLER x their median; then rank 0's table,
 * the ranks whose settings differ (the first difference shown), and the
 * stragglers with a ready --exclude= list. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libdlpar/preflight/preflight.h"
#include "common/text.h"

/* ------------------------------------------------------------ verdict */


static void find_reference(verdict *v)
{
  int best = 0;
  v->reference = 0;
  for (int r = 0; r < v->size; r++) {
    int same = 0;
    for (int q = 0; q < v->size; q++)
      same += strcmp(v->all[r].settings, v->all[q].settings) == 0;
    if (same > best) {
      best = same;
      v->reference = r;
    }
  }
}

static int gemm_median(verdict *v)
{
  double *rates = malloc(sizeof(double) * (size_t)v->size);
  if (!rates)
    return DLPAR_ERR_SYSTEM;
  for (int r = 0; r < v->size; r++)
    rates[r] = v->all[r].gemm;
  v->gemm_median = dlpar_median_sorting(rates, v->size);
  free(rates);
  return DLPAR_OK;
}

static bool settings_ok(const verdict *v, int r)
{
  return strcmp(v->all[r].settings, v->all[v->reference].settings) == 0;
}

static bool busbw_ok(const rank_report *r, int g)
{
  return r->busbw[g] < 0 || r->busbw[g] >= r->busbw_expected[g];
}

static bool gemm_ok(const verdict *v, int r)
{
  return v->all[r].gemm >= v->straggler_ratio * v->gemm_median;
}

static int rank_failures(const verdict *v, int r)
{
  const rank_report *rep = &v->all[r];
  return (rep->binding == CHECK_FAIL) + (rep->gpu == CHECK_FAIL) + (rep->peer == CHECK_FAIL) + !settings_ok(v, r) +
         !busbw_ok(rep, 0) + !busbw_ok(rep, 1) + !gemm_ok(v, r);
}

/* ------------------------------------------------------------ the table (rank 0) */

static const char *status_text(double status)
{
  return status == CHECK_OK ? "ok" : status == CHECK_SKIP ? "SKIP" : "FAIL";
}

static void busbw_cell(const rank_report *r, int g, char *out, size_t len)
{
  if (r->busbw[g] < 0)
    snprintf(out, len, "-");
  else
    snprintf(out, len, "%.3f %s", r->busbw[g], busbw_ok(r, g) ? "ok" : "FAIL");
}

static void print_table(const dlpar_ctx *ctx, const verdict *v)
{
  dlpar_eprintf("dlpar-check: %d ranks, grid %dx%d, backend %s; allreduce busbw (GB/s) expected >= %g tp, %g dp "
                "(DLPAR_CHECK_BUSBW_FRACTION x the group's link, or DLPAR_CHECK_MIN_BUSBW); links: GB/s one way and "
                "their source; GEMM straggler under %g x the median %.2f GFLOP/s\n", v->size, ctx->grid.tp, ctx->grid.dp,
                dlpar_backend_name(ctx->info.backend), v->all[0].busbw_expected[0], v->all[0].busbw_expected[1],
                v->straggler_ratio, v->gemm_median);
  dlpar_eprintf("%-5s %-12s %-8s %-8s %-10s %-7s %-5s %-5s %-8s %-14s %-14s %-14s %-22s %s\n", "rank", "host",
                "device", "NIC", "cpus", "binding", "gpu", "peer", "settings", "tp busbw", "dp busbw", "GEMM GFLOP/s",
                "tp link", "dp link");
  for (int r = 0; r < v->size; r++) {
    const rank_report *rep = &v->all[r];
    char tp[32], dp[32], gemm[32];
    busbw_cell(rep, 0, tp, sizeof(tp));
    busbw_cell(rep, 1, dp, sizeof(dp));
    snprintf(gemm, sizeof(gemm), "%.2f %s", rep->gemm, gemm_ok(v, r) ? "ok" : "SLOW");
    dlpar_eprintf("%-5d %-12s %-8s %-8s %-10s %-7s %-5s %-5s %-8s %-14s %-14s %-14s %-22s %s\n", r, ctx->hosts[r],
                  rep->device, rep->nic, rep->cpus, status_text(rep->binding), status_text(rep->gpu),
                  status_text(rep->peer), settings_ok(v, r) ? "ok" : "DIFFERS", tp, dp, gemm, rep->link[0], rep->link[1]);
  }
}

/* The first "K=V" line of `mine` that `theirs` lacks, into out. */
static void first_difference(const char *mine, const char *theirs, char *out, size_t len)
{
  char framed[SETTINGS_LEN + 2], needle[SETTINGS_LEN + 2];
  snprintf(framed, sizeof(framed), "\n%s", theirs); /* every line between newlines */
  snprintf(out, len, "nothing");
  for (const char *line = mine; *line;) {
    const char *end = strchr(line, '\n');
    const int n = end ? (int)(end - line) : (int)strlen(line);
    snprintf(needle, sizeof(needle), "\n%.*s\n", n, line);
    if (!strstr(framed, needle)) {
      snprintf(out, len, "%.*s", n, line);
      return;
    }
    line += n + (end ? 1 : 0);
  }
}

static void print_settings(const dlpar_ctx *ctx, const verdict *v)
{
  char mine[256], theirs[256];
  for (int r = 0; r < v->size; r++) {
    if (settings_ok(v, r))
      continue;
    first_difference(v->all[r].settings, v->all[v->reference].settings, mine, sizeof(mine));
    first_difference(v->all[v->reference].settings, v->all[r].settings, theirs, sizeof(theirs));
    dlpar_eprintf("dlpar-check: rank %d on %s: NCCL settings differ from rank %d's (and the ranks like it): "
                  "%s here, %s there (export the same everywhere)\n", r, ctx->hosts[r], v->reference, mine, theirs);
  }
}

/* Whether an earlier straggler is on rank r's host. */
static bool host_listed(const dlpar_ctx *ctx, const verdict *v, int r)
{
  for (int q = 0; q < r; q++)
    if (!gemm_ok(v, q) && strcmp(ctx->hosts[q], ctx->hosts[r]) == 0)
      return true;
  return false;
}

/* "rank 3 on n2 (0.41), ...; --exclude=n2" */
static void print_stragglers(const dlpar_ctx *ctx, const verdict *v)
{
  char ranks[1024] = "", exclude[1024] = "";
  size_t used = 0, excluded = 0;
  for (int r = 0; r < v->size; r++) {
    if (gemm_ok(v, r))
      continue;
    if (used < sizeof(ranks))
      used += (size_t)snprintf(ranks + used, sizeof(ranks) - used, "%srank %d on %s (%.2f)", used ? ", " : "", r,
                               ctx->hosts[r], v->all[r].gemm);
    if (!host_listed(ctx, v, r) && excluded < sizeof(exclude))
      excluded += (size_t)snprintf(exclude + excluded, sizeof(exclude) - excluded, "%s%s", excluded ? "," : "",
                                   ctx->hosts[r]);
  }
  if (used)
    dlpar_eprintf("dlpar-check: stragglers (GEMM under %g x the median %.2f GFLOP/s): %s; to leave their nodes "
                  "out: --exclude=%s\n", v->straggler_ratio, v->gemm_median, ranks, exclude);
}

int dlpar_preflight_judge(verdict *v)
{
  DLPAR_TRY(gemm_median(v));
  find_reference(v);
  for (int r = 0; r < v->size; r++)
    v->failures += rank_failures(v, r);
  return DLPAR_OK;
}

void dlpar_preflight_print(const dlpar_ctx *ctx, const verdict *v)
{
  print_table(ctx, v);
  print_settings(ctx, v);
  print_stragglers(ctx, v);
}
