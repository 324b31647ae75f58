/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/context.c: the leaf every part of libdlpar uses: what the
 * context says about itself
 * (sizes, group names, hosts, the info the program reads). Calls nothing
 * else of libdlpar. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "libdlpar/internal.h"
#include "common/torchenv.h"
#include "common/text.h"

int dlpar_env_positive(dlpar_ctx *ctx, const char *name, const char *what, double max, double example, double *out)
{
  const char *text = getenv(name);
  if (!text || !*text)
    return DLPAR_OK;
  if (dlpar_parse_positive(text, max, out) != 0)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "%s=%s: not %s (use e.g. %g, or unset it)", name, dlpar_show(text).text,
                      what, example);
  return DLPAR_OK;
}

int dlpar_env_seconds(dlpar_ctx *ctx, const char *name, double example, double *out)
{
  return dlpar_env_positive(ctx, name, "a number of seconds", 366 * 86400.0, example, out);
}

int dlpar_env_count(dlpar_ctx *ctx, const char *name, long lo, long hi, long example, long *out)
{
  const char *text = getenv(name);
  if (!text || !*text)
    return DLPAR_OK;
  if (dlpar_parse_int(text, lo, hi, out) != 0)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "%s=%s: not a whole number from %ld to %ld (use e.g. %ld, or unset it)",
                      name, dlpar_show(text).text, lo, hi, example);
  return DLPAR_OK;
}

size_t dlpar_dtype_size(dlpar_dtype dtype)
{
  switch (dtype) {
  case DLPAR_FLOAT64:
  case DLPAR_INT64: return 8;
  case DLPAR_BFLOAT16:
  case DLPAR_FLOAT16: return 2;
  default: return 4;
  }

}

int dlpar_group_size(const dlpar_ctx *ctx, dlpar_group group)
{
  return group == DLPAR_GROUP_TP ? ctx->grid.tp : group == DLPAR_GROUP_DP ? ctx->grid.dp : ctx->info.size;
}

void dlpar_describe_group(const dlpar_ctx *ctx, dlpar_group group, char *out, size_t len)
{
  int ranks[64];
  const int n = dlpar_group_size(ctx, group);
  size_t used = (size_t)snprintf(out, len, "%s group (ranks ", dlpar_group_name(group));
  if (n > 64) {
    snprintf(out + used, len - used, "%d of them)", n);
    return;
  }
  dlpar_grid_members(&ctx->grid, group, ctx->info.rank, ranks);
  for (int i = 0; i < n && used < len; i++)
    used += (size_t)snprintf(out + used, len - used, "%s%d", i ? "," : "", ranks[i]);
  if (used < len)
    snprintf(out + used, len - used, ")");
}

DLPAR_API const char *dlpar_backend_name(dlpar_backend backend)
{
  switch (backend) {
  case DLPAR_BACKEND_MPI: return "mpi";
  case DLPAR_BACKEND_NCCL: return "nccl";
  case DLPAR_BACKEND_SELF: return "self";
  case DLPAR_BACKEND_NONE: return "none";
  default: return "auto";
  }

}

DLPAR_API const dlpar_info *dlpar_get_info(const dlpar_ctx *ctx)
{
  return &ctx->info;
}

DLPAR_API const char *dlpar_last_error(const dlpar_ctx *ctx)
{
  return ctx ? ctx->error.text : "out of memory";
}

DLPAR_API int dlpar_group_members(const dlpar_ctx *ctx, dlpar_group_id group, int *ranks)
{
  return dlpar_grid_members(&ctx->grid, (dlpar_group)group, ctx->info.rank, ranks);
}

DLPAR_API const char *dlpar_rank_host(const dlpar_ctx *ctx, int rank)
{
  return rank >= 0 && rank < ctx->info.size ? ctx->hosts[rank] : "?";
}
