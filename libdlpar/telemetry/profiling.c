/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/telemetry/profiling.c: the profiling request from the launcher
 * (DLPAR_PROFILE*). nsys on Slurm 22.05: the selected ranks re-execute
 * themselves under `nsys profile ... -c cudaProfilerApi` before any CUDA
 * call (newer Slurm prepends nsys in the plugin and sets
 * DLPAR_PROFILE_WRAPPED). Then NVTX ranges and the CUDA profiler range,
 * opened and closed at the requested training steps. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_CUDA
#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExt.h>
#endif

#include "libdlpar/internal.h"
#include "libdlpar/telemetry/telemetry.h"
#include "common/profile.h"

static bool env_is(const char *name, const char *value)
{
  const char *text = getenv(name);
  return text && strcmp(text, value) == 0;
}

int dlpar_profiling_reexec(dlpar_ctx *ctx, int argc, char **argv)
{
  const char *nsys_argv[DLPAR_NSYS_ARGC];
  char nsys[PATH_MAX], exe[PATH_MAX];
  const char *output = getenv("DLPAR_PROFILE_OUTPUT");
  char **args;
  ssize_t len;
  if (!env_is("DLPAR_PROFILE", "nsys") || !env_is("DLPAR_PROFILE_RANK", "1") ||
      getenv("DLPAR_PROFILE_WRAPPED"))
    return DLPAR_OK;
  if (!argv || argc < 1)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "--dl-profile=nsys: pass argc/argv to dlpar_init so the "
                      "program can re-execute itself under nsys");
  if (dlpar_find_on_path("nsys", getenv("PATH"), nsys, sizeof(nsys)) != DLPAR_OK)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "--dl-profile=nsys: nsys is not on the PATH (load Nsight "
                      "Systems, e.g. module load nsight-systems, or use --dl-profile=nvtx)");
  len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  args = calloc((size_t)argc + DLPAR_NSYS_ARGC + 1, sizeof(char *));
  if (len <= 0 || !args)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "--dl-profile=nsys: cannot find this program's path");
  exe[len] = '\0';
  dlpar_nsys_argv(output && *output ? output : "dlpar-profile", nsys_argv);
  memcpy(args, nsys_argv, sizeof(nsys_argv));
  args[DLPAR_NSYS_ARGC] = exe;
  for (int i = 1; i < argc; i++)
    args[DLPAR_NSYS_ARGC + i] = argv[i];
  setenv("DLPAR_PROFILE_WRAPPED", "1", 1);
  fflush(NULL);
  execv(nsys, args);
  free(args);
  return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "--dl-profile=nsys: cannot run %s: %s", nsys, strerror(errno));
}

void dlpar_profiling_setup(dlpar_ctx *ctx)
{
  ctx->profiling = ctx->env.profile != DLPAR_PROFILE_OFF && ctx->env.profile_this_rank;
}

DLPAR_API int dlpar_profile_window(dlpar_ctx *ctx, long first_step, long last_step)
{
  if (ctx->env.profile != DLPAR_PROFILE_OFF)
    return 0;
  ctx->profiling = true;
  ctx->env.profile_first_step = first_step;
  ctx->env.profile_last_step = last_step;
  return 1;
}

/* The profiler range, and an NVTX range over it naming the profiled steps
 * (on a timeline, and on a CPU run the window's only trace). */
static void profiler(dlpar_ctx *ctx, bool on)
{
#ifdef HAVE_CUDA
  char name[64] = "profiled steps (all)";
  if (on && ctx->env.profile_first_step >= 0)
    snprintf(name, sizeof(name), "profiled steps %ld-%ld", ctx->env.profile_first_step,
             ctx->env.profile_last_step);
  if (ctx->info.backend == DLPAR_BACKEND_NCCL)
    (void)(on ? cudaProfilerStart() : cudaProfilerStop());
  if (on)
    ctx->profiler_range = nvtxRangeStartA(name);
  else
    nvtxRangeEnd(ctx->profiler_range);
#endif
  ctx->profiler_on = on;
  ctx->profiler_done = !on;
}

DLPAR_API int dlpar_profile_step(dlpar_ctx *ctx, long step)
{
  const long first = ctx->env.profile_first_step, last = ctx->env.profile_last_step;
  if (!ctx->profiling)
    return DLPAR_OK;
  if (!ctx->profiler_on && !ctx->profiler_done && (first < 0 || step == first))
    profiler(ctx, true);
  else if (ctx->profiler_on && first >= 0 && step == last + 1)
    profiler(ctx, false);
  return DLPAR_OK;
}

void dlpar_profiling_finish(dlpar_ctx *ctx)
{
  if (ctx->profiler_on)
    profiler(ctx, false);
}

DLPAR_API void dlpar_range_push(const dlpar_ctx *ctx, const char *name)
{
#ifdef HAVE_CUDA
  if (ctx->profiling)
    nvtxRangePushA(name);
#else
  (void)ctx;
  (void)name;
#endif
}

DLPAR_API void dlpar_range_pop(const dlpar_ctx *ctx)
{
#ifdef HAVE_CUDA
  if (ctx->profiling)
    nvtxRangePop();
#else
  (void)ctx;
#endif
}
