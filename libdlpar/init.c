/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/init.c: dlpar_init and dlpar_finalize, the order of things:
 * the nsys re-exec, which comes before any CUDA call; the signals, unless
 * the program keeps them; the launcher's grid; MPI, where Open MPI 5 needs
 * it before PMIx; PMIx, which gives the ranks and hosts; the grid
 * cross-check and tensor-parallel locality; the GPU device; one PMIx
 * rendezvous for the hosts and NCCL ids; the communicators; the watchdog.
 * The context's small helpers are in context.c. This file owns two endings
 * and decides each in one function. A rank missing at a rendezvous is
 * decided in on_missing_rank: dlpar_init ends the step at once, while a
 * bootstrap context's dlpar_share_from_root returns the timeout so that the
 * program's cleanup runs. dlpar_finalize of a spent context is decided in
 * end_spent_context. Both end through end_step.c. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "libdlpar/internal.h"
#include "libdlpar/backends/backends.h"
#include "libdlpar/bootstrap/bootstrap.h"
#include "libdlpar/ending/ending.h"
#include "libdlpar/preflight/preflight.h"
#include "libdlpar/telemetry/telemetry.h"
#include "common/text.h"

/* A timeout is the program's option, else the environment's, else the
 * fallback. A fallback of 0 means default_timeouts sets it once the job's
 * size is known. */
static int option_seconds(dlpar_ctx *ctx, double given, const char *env, double fallback, double example,
                          double *out)
{
  *out = given > 0 ? given : fallback;
  return given > 0 ? DLPAR_OK : dlpar_env_seconds(ctx, env, example, out);
}

/* Each tensor-parallel group must sit on one node, as the launcher's policy says. */
static int check_locality(const dlpar_ctx *ctx, dlpar_error *err)
{
  const char **node_names = calloc((size_t)ctx->info.nnodes, sizeof(char *));
  int rc;
  if (!node_names)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory");
  for (int rank = ctx->info.size - 1; rank >= 0; rank--)
    node_names[ctx->rank_node[rank]] = ctx->hosts[rank];
  rc = dlpar_grid_check_span(&ctx->grid, ctx->rank_node, node_names, ctx->env.span, NULL, err);
  free(node_names);
  return rc;
}

/* The launcher's contract is its DLPAR_* variables, read before PMIx. MPI
 * may have to start first in start_mpi_early, and whether it serves depends
 * on this contract. */
static int import_launcher_env(dlpar_ctx *ctx)
{
  dlpar_error err = {0};
  int rc = dlpar_task_env_import(&ctx->env, &ctx->launched, &err);
  if (rc != DLPAR_OK)
    return dlpar_fail(ctx, rc, "%s", err.text);
  return DLPAR_OK;
}

/* The grid: the launcher's, cross-checked against PMIx; or 1 x size. */
static int settle_grid(dlpar_ctx *ctx)
{
  dlpar_error err = {0};
  int rc;
  if (!ctx->launched) {
    ctx->env.grid = (dlpar_grid){1, ctx->info.size};
    ctx->env.rank = ctx->info.rank;
    ctx->env.binding.device = ctx->env.binding.gpu = -1;
  } else if (ctx->env.grid.tp * ctx->env.grid.dp != ctx->info.size || ctx->env.rank != ctx->info.rank ||
             ctx->env.local_rank != ctx->info.local_rank) {
    return dlpar_fail(ctx, DLPAR_ERR_INPUT,
                      "the launcher's grid (rank %d of %dx%d, local rank %d) does not match PMIx (rank "
                      "%d of %d, local rank %d): launch with srun --dl-parallel or dlpar-run, not both",
                      ctx->env.rank, ctx->env.grid.tp, ctx->env.grid.dp, ctx->env.local_rank,
                      ctx->info.rank, ctx->info.size, ctx->info.local_rank);
  }
  ctx->grid = ctx->env.grid;
  dlpar_grid_coords(&ctx->grid, ctx->info.rank, &ctx->info.tp_rank, &ctx->info.dp_rank);
  ctx->info.tp_size = ctx->grid.tp;
  ctx->info.dp_size = ctx->grid.dp;
  ctx->info.device = ctx->env.binding.device;
  rc = check_locality(ctx, &err);
  if (rc < 0)
    return dlpar_fail(ctx, rc, "%s", err.text);
  return DLPAR_OK; /* With tp_span=warn, the plugin printed the warning once per step. */
}

/* The launcher gave this rank a GPU, so device >= 0, and CUDA sees one. */
static bool rank_has_gpu(int device)
{
#ifdef HAVE_CUDA
  int devices = 0;
  return device >= 0 && cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
#else
  (void)device;
  return false;
#endif
}

/* The backend asked for: the options', else DLPAR_BACKEND's, else auto. */
static int requested_backend(dlpar_ctx *ctx, const dlpar_options *options, dlpar_backend *out)
{
  const char *env = getenv("DLPAR_BACKEND");
  *out = options ? options->backend : DLPAR_BACKEND_AUTO;
  if (*out != DLPAR_BACKEND_AUTO || !env || !*env)
    return DLPAR_OK;
  if (strcmp(env, "nccl") == 0)
    *out = DLPAR_BACKEND_NCCL;
  else if (strcmp(env, "mpi") == 0)
    *out = DLPAR_BACKEND_MPI;
  else
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "DLPAR_BACKEND=%s: unknown backend (use nccl or mpi, or unset it)",
                      dlpar_show(env).text);
  return DLPAR_OK;
}

/* Open MPI 5 must come up before PMIx, as backend_mpi.c explains. It does
 * so when the MPI backend serves this rank as far as can be told before
 * PMIx: the job is a PMIx job, MPI is asked for or no GPU is given, and the
 * grid is not a launcher's one-rank grid. MPI then serves whatever size
 * PMIx reports. */
static int start_mpi_early(dlpar_ctx *ctx, dlpar_backend requested)
{
#ifdef HAVE_MPI
  const int device = ctx->launched ? ctx->env.binding.device : -1;
  if (!getenv("PMIX_NAMESPACE") || requested == DLPAR_BACKEND_NCCL ||
      (requested == DLPAR_BACKEND_AUTO && rank_has_gpu(device)) ||
      (ctx->launched && ctx->env.grid.tp * ctx->env.grid.dp == 1))
    return DLPAR_OK;
  return dlpar_mpi_start_early(ctx);
#else
  (void)ctx; /* no MPI backend built: nothing to start */
  (void)requested;
  return DLPAR_OK;
#endif
}

/* The requested backend, else NCCL when this rank has a GPU; one rank needs
 * no communication library unless NCCL is asked for or MPI already runs. */
static dlpar_backend choose_backend(const dlpar_ctx *ctx, dlpar_backend requested)
{
#ifdef HAVE_MPI
  if (ctx->backend == &dlpar_backend_mpi)
    return DLPAR_BACKEND_MPI;
#endif
  if (ctx->info.size == 1 && requested != DLPAR_BACKEND_NCCL)
    return DLPAR_BACKEND_SELF;
  if (requested == DLPAR_BACKEND_AUTO)
    return rank_has_gpu(ctx->info.device) ? DLPAR_BACKEND_NCCL : DLPAR_BACKEND_MPI;
  return requested;
}

/* A two-way switch from the environment: unset or `first` leaves *on
 * false, `second` sets it. */
static int env_switch(dlpar_ctx *ctx, const char *name, const char *first, const char *second, bool *on)
{
  const char *env = getenv(name);
  *on = false;
  if (!env || !*env || strcmp(env, first) == 0)
    return DLPAR_OK;
  if (strcmp(env, second) != 0)
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "%s=%s: unknown (use %s or %s, or unset it)", name, dlpar_show(env).text,
                      first, second);
  *on = true;
  return DLPAR_OK;
}

/* The program keeps its signals if options->keep_signals is set or
 * DLPAR_SIGNALS is keep. The default, stop, takes them. */
static int read_keep_signals(dlpar_ctx *ctx, const dlpar_options *options)
{
  bool keep = false;
  DLPAR_TRY(env_switch(ctx, "DLPAR_SIGNALS", "stop", "keep", &keep));
  ctx->keep_signals = keep || (options && options->keep_signals);
  return DLPAR_OK;
}

/* The stop signals become stop requests, which the watchdog reads, unless
 * the program keeps them. This runs before anything starts a thread. */
static int take_signals(dlpar_ctx *ctx, const dlpar_options *options)
{
  DLPAR_TRY(read_keep_signals(ctx, options));
  return ctx->keep_signals ? DLPAR_OK : dlpar_watchdog_block_signals(ctx);
}

/* SIGURG asks for this rank's stack, as stacks.c serves it, unless the
 * program keeps its signals. This is armed once rank and host are known. */
static int arm_stacks(dlpar_ctx *ctx)
{
  return ctx->keep_signals ? DLPAR_OK : dlpar_stacks_arm(ctx);
}

/* These variables say how the start-up exchanges and builds things; see
 * doc/scaling.md.
 * DLPAR_NCCL_GROUPS is initrank by default, which builds tp and dp from ids
 * exchanged over PMIx, or split, which uses ncclCommSplit of an eager world
 * communicator.
 * DLPAR_NCCL_WORLD is lazy by default, which builds the world communicator
 * at the first device collective on the world group, or eager.
 * DLPAR_MODEX is direct by default, where the fence carries no data, or
 * collect, which sends every rank's keys to every node at the fence.
 * DLPAR_NCCL_RANKS_PER_ROOT is the number of ranks per NCCL bootstrap root.
 * DLPAR_WORLD_VIA_GROUPS=1 composes host world collectives from tp and dp
 * on every backend. On NCCL they are composed so anyway when there is no
 * world communicator; on MPI this tests the composition.
 * DLPAR_NCCL_ONE_RANK is local by default, where a group of one rank has no
 * communicator and its collectives are copies or nothing, or comm, which
 * gives it an NCCL communicator of one rank so that one GPU runs every NCCL
 * path, as tests/gpu/test_nccl_gpu does. */
static int choose_startup(dlpar_ctx *ctx)
{
  long value = DLPAR_NCCL_RANKS_PER_ROOT;
  DLPAR_TRY(env_switch(ctx, "DLPAR_NCCL_GROUPS", "initrank", "split", &ctx->nccl_split));
  DLPAR_TRY(env_switch(ctx, "DLPAR_NCCL_WORLD", "lazy", "eager", &ctx->eager_world));
  DLPAR_TRY(env_switch(ctx, "DLPAR_NCCL_ONE_RANK", "local", "comm", &ctx->one_rank_comms));
  DLPAR_TRY(env_switch(ctx, "DLPAR_MODEX", "direct", "collect", &ctx->collect_modex));
  DLPAR_TRY(env_switch(ctx, "DLPAR_WORLD_VIA_GROUPS", "0", "1", &ctx->world_via_groups));
  DLPAR_TRY(dlpar_env_count(ctx, "DLPAR_NCCL_RANKS_PER_ROOT", 1, 1000000, DLPAR_NCCL_RANKS_PER_ROOT, &value));
  ctx->ranks_per_root = (int)value;
  return DLPAR_OK;
}

/* Timeouts nobody set grow with the job: base + per-rank term. */
static int default_timeouts(dlpar_ctx *ctx)
{
  if (ctx->rendezvous_timeout <= 0)
    ctx->rendezvous_timeout = DLPAR_RENDEZVOUS_TIMEOUT_BASE + DLPAR_RENDEZVOUS_TIMEOUT_PER_RANK * ctx->info.size;
  if (ctx->collective_timeout <= 0)
    ctx->collective_timeout = DLPAR_COLLECTIVE_TIMEOUT_BASE + DLPAR_COLLECTIVE_TIMEOUT_PER_RANK * ctx->info.size;
  ctx->info.rendezvous_timeout_s = ctx->rendezvous_timeout;
  ctx->info.collective_timeout_s = ctx->collective_timeout;
  return DLPAR_OK;
}

static int select_backend(dlpar_ctx *ctx, dlpar_backend backend)
{
  switch (backend) {
  case DLPAR_BACKEND_SELF: ctx->backend = &dlpar_backend_self; break;
#ifdef HAVE_MPI
  case DLPAR_BACKEND_MPI: ctx->backend = &dlpar_backend_mpi; break;
#endif
#ifdef HAVE_CUDA
  case DLPAR_BACKEND_NCCL: ctx->backend = &dlpar_backend_nccl; break;
#endif
  default:
    return dlpar_fail(ctx, DLPAR_ERR_INPUT, "the %s backend is not built in (%s)", dlpar_backend_name(backend),
                      backend == DLPAR_BACKEND_MPI ? "rebuild with MPI: Debian's libopenmpi-dev"
                                                   : "rebuild with CUDA and NCCL, or set DLPAR_BACKEND=mpi");
  }
  ctx->info.backend = backend;
  return DLPAR_OK;
}

/* The device comes from the launcher's index, set before any NCCL call. */
static int set_device(dlpar_ctx *ctx)
{
#ifdef HAVE_CUDA
  if (ctx->info.backend == DLPAR_BACKEND_NCCL) {
    int device = ctx->info.device >= 0 ? ctx->info.device : ctx->info.local_rank;
    cudaError_t err = cudaSetDevice(device);
    if (err != cudaSuccess)
      return dlpar_fail(ctx, DLPAR_ERR_CUDA, "cudaSetDevice(%d): %s (check CUDA_VISIBLE_DEVICES=%s)",
                        device, cudaGetErrorString(err),
                        getenv("CUDA_VISIBLE_DEVICES") ? dlpar_show(getenv("CUDA_VISIBLE_DEVICES")).text : "(unset)");
    ctx->info.device = device;
  }
#else
  (void)ctx;
#endif
  return DLPAR_OK;
}

/* The one decision on a rank missing at a rendezvous, where the fence
 * returned DLPAR_ERR_TIMEOUT and each node's reporter printed the line
 * naming the missing ranks. On a dlpar_init context the step ends now,
 * because no program goes on without its ranks. On a bootstrap context the
 * call returns the timeout and the context keeps it as taken, so that the
 * program's cleanup runs. The context is then spent, and dlpar_finalize
 * ends the step in end_spent_context. Any other status is passed up
 * unchanged. */
static int on_missing_rank(dlpar_ctx *ctx, int rc)
{
  if (rc != DLPAR_ERR_TIMEOUT)
    return rc;
  if (!ctx->bootstrap_only)
    dlpar_end_step(ctx, 1, ctx->error.text, DLPAR_LINE_PRINTED);
  dlpar_fatal_keep(ctx, rc, ctx->error.text, true);
  return rc;
}

static int init_steps(dlpar_ctx *ctx, int argc, char **argv, const dlpar_options *options, double start)
{
  const bool want_ids = options && options->exchange_nccl_ids;
  dlpar_backend requested = DLPAR_BACKEND_AUTO;
  DLPAR_TRY(dlpar_profiling_reexec(ctx, argc, argv));
  DLPAR_TRY(take_signals(ctx, options));
  DLPAR_TRY(import_launcher_env(ctx));
  DLPAR_TRY(requested_backend(ctx, options, &requested));
  DLPAR_TRY(choose_startup(ctx));
  DLPAR_TRY(start_mpi_early(ctx, requested));
  DLPAR_TRY(dlpar_pmix_init(ctx));
  if (ctx->phase_at[DLPAR_PHASE_PMIX] == 0) /* else seen inside Open MPI 5's MPI_Init */
    dlpar_phase_mark(ctx, DLPAR_PHASE_PMIX);
  DLPAR_TRY(default_timeouts(ctx));
  DLPAR_TRY(settle_grid(ctx));
  DLPAR_TRY(select_backend(ctx, choose_backend(ctx, requested)));
  DLPAR_TRY(set_device(ctx));
  DLPAR_TRY(on_missing_rank(ctx, dlpar_pmix_rendezvous(ctx, want_ids || ctx->info.backend == DLPAR_BACKEND_NCCL)));
  ctx->info.rendezvous_seconds = dlpar_now() - start;
  dlpar_phase_mark(ctx, DLPAR_PHASE_IDS);
  DLPAR_TRY(dlpar_watchdog_peers(ctx));
  DLPAR_TRY(arm_stacks(ctx));
  DLPAR_TRY(ctx->backend->init(ctx));
  DLPAR_TRY(dlpar_watchdog_start(ctx));
  dlpar_profiling_setup(ctx);
  if (ctx->env.options.verbose) {
    char line[DLPAR_ERRLEN];
    dlpar_task_env_describe(&ctx->env, ctx->info.host, line, sizeof(line));
    dlpar_eprintf("dlpar: %s backend %s\n", line, dlpar_backend_name(ctx->info.backend));
  }
  return DLPAR_OK;
}

/* A fresh context in *out, or NULL when out of memory. */
static dlpar_ctx *new_context(dlpar_ctx **out, bool bootstrap_only)
{
  dlpar_ctx *ctx = calloc(1, sizeof(*ctx));
  if (ctx && (pthread_mutex_init(&ctx->share_lock, NULL) != 0 || pthread_cond_init(&ctx->share_turn, NULL) != 0)) {
    free(ctx); /* neither needs destroying: only ENOMEM makes them fail */
    ctx = NULL;
  }
  *out = ctx;
  if (ctx) {
    ctx->signal_fd = -1;
    ctx->info.device = -1;
    ctx->bootstrap_only = bootstrap_only;
    ctx->process_start = dlpar_process_start();
  }
  return ctx;
}

/* The timeouts and the host's grace: the program's options, else the environment's. */
static int read_timeouts(dlpar_ctx *ctx, const dlpar_options *options)
{
  DLPAR_TRY(option_seconds(ctx, options ? options->rendezvous_timeout_s : 0, "DLPAR_RENDEZVOUS_TIMEOUT", 0,
                           DLPAR_RENDEZVOUS_TIMEOUT_BASE, &ctx->rendezvous_timeout));
  DLPAR_TRY(option_seconds(ctx, options ? options->collective_timeout_s : 0, "DLPAR_COLLECTIVE_TIMEOUT", 0,
                           DLPAR_COLLECTIVE_TIMEOUT_BASE, &ctx->collective_timeout));
  DLPAR_TRY(option_seconds(ctx, options ? options->fatal_grace_s : 0, "DLPAR_FATAL_GRACE", 0, 30, &ctx->fatal_grace));
  ctx->info.fatal_grace_s = ctx->fatal_grace;
  return option_seconds(ctx, 0, "DLPAR_STOPPED_TIMEOUT", 10, 10, &ctx->stopped_timeout);
}

DLPAR_API int dlpar_init(int argc, char **argv, const dlpar_options *options, dlpar_ctx **out)
{
  const double start = dlpar_now();
  dlpar_ctx *ctx = new_context(out, false);
  int rc;
  if (!ctx)
    return DLPAR_ERR_SYSTEM;
  rc = read_timeouts(ctx, options);
  if (rc == DLPAR_OK)
    rc = init_steps(ctx, argc, argv, options, start);
  ctx->info.init_seconds = dlpar_now() - start;
  return rc == DLPAR_OK ? dlpar_preflight(ctx) : rc;
}

DLPAR_API int dlpar_check_ended(int status, dlpar_ctx *ctx)
{
  if (status != DLPAR_DONE && status != DLPAR_ERR_CHECK)
    return -1;
  dlpar_finalize(ctx);
  return status == DLPAR_DONE ? 0 : 1;
}

DLPAR_API int dlpar_init_bootstrap(const dlpar_options *options, dlpar_ctx **out)
{
  const double start = dlpar_now();
  dlpar_ctx *ctx = new_context(out, true);
  if (!ctx)
    return DLPAR_ERR_SYSTEM;
  DLPAR_TRY(read_timeouts(ctx, options));
  DLPAR_TRY(read_keep_signals(ctx, options));
  DLPAR_TRY(import_launcher_env(ctx));
  DLPAR_TRY(dlpar_pmix_init(ctx));
  DLPAR_TRY(default_timeouts(ctx));
  DLPAR_TRY(settle_grid(ctx));
  DLPAR_TRY(arm_stacks(ctx));
  ctx->info.backend = DLPAR_BACKEND_NONE;
  ctx->info.init_seconds = ctx->info.rendezvous_seconds = dlpar_now() - start;
  return DLPAR_OK;
}

/* One exchange, in its turn: calls from several threads would interleave
 * their puts, commits and fences, which PMIx pairs across ranks by order. */
static int share_in_turn(dlpar_ctx *ctx, const char *key, const char *text, char *out, size_t len)
{
  unsigned long ticket;
  int rc;
  pthread_mutex_lock(&ctx->share_lock);
  ticket = ctx->share_next++;
  while (ticket != ctx->share_serving)
    pthread_cond_wait(&ctx->share_turn, &ctx->share_lock);
  pthread_mutex_unlock(&ctx->share_lock);
  rc = dlpar_spent(ctx, "dlpar_share_from_root");
  if (rc == DLPAR_OK)
    rc = on_missing_rank(ctx, dlpar_pmix_share(ctx, key, text, out, len));
  if (rc != DLPAR_OK)
    snprintf(out, len, "%s", ctx->error.text); /* this call's, whatever another thread's call writes next */
  pthread_mutex_lock(&ctx->share_lock);
  ctx->share_serving++;
  pthread_cond_broadcast(&ctx->share_turn);
  pthread_mutex_unlock(&ctx->share_lock);
  return rc;
}

DLPAR_API int dlpar_share_from_root(dlpar_ctx *ctx, const char *key, const char *text, char *out, size_t len)
{
  if (!ctx || !key || !out || len == 0)
    return ctx ? dlpar_fail(ctx, DLPAR_ERR_INPUT, "dlpar_share_from_root: a key and an output buffer, please")
               : DLPAR_ERR_STATE;
  if (ctx->info.rank == 0 && (!text || strlen(text) >= len)) {
    dlpar_fail(ctx, DLPAR_ERR_INPUT, "dlpar_share_from_root: rank 0's text for %s is missing or longer than %zu "
               "bytes", dlpar_show(key).text, len - 1);
    snprintf(out, len, "%s", ctx->error.text);
    return DLPAR_ERR_INPUT;
  }
  return share_in_turn(ctx, key, text, out, len);
}

/* Wait for the collectives still posted, such as a stop agreement or a
 * step-time gather, before the watchdog and the communicators go. */
static int drain(dlpar_ctx *ctx)
{
  DLPAR_TRY(dlpar_stop_drain(ctx));
  return dlpar_times_drain(ctx);
}

/* The one decision on a spent context at dlpar_finalize. A context is
 * spent by a rank missing at a bootstrap exchange, or by what the watchdog
 * found during the host's grace. Its program has run its cleanup, so the
 * step ends now, and the kept line is printed unless the program took it. */
static void end_spent_context(dlpar_ctx *ctx)
{
  if (atomic_load(&ctx->fatal_status))
    dlpar_end_step(ctx, 1, ctx->fatal_line, atomic_load(&ctx->fatal_taken) ? DLPAR_LINE_PRINTED : DLPAR_LINE_TO_PRINT);
}

DLPAR_API int dlpar_finalize(dlpar_ctx *ctx)
{
  int rc;
  if (!ctx)
    return DLPAR_OK;
  end_spent_context(ctx);
  dlpar_profiling_finish(ctx);
  if ((rc = drain(ctx)) != DLPAR_OK)
    dlpar_eprintf("dlpar: rank %d: finalize: %s\n", ctx->info.rank, ctx->error.text);
  dlpar_watchdog_stop(ctx);
  if (ctx->backend)
    ctx->backend->finalize(ctx);
  dlpar_pmix_finalize(ctx);
  dlpar_nccl_ids_free(&ctx->nccl_ids);
  free(ctx->hosts);
  free(ctx->rank_node);
  pthread_cond_destroy(&ctx->share_turn);
  pthread_mutex_destroy(&ctx->share_lock);
  free(ctx);
  return rc;
}

DLPAR_API void dlpar_graph_launched(dlpar_ctx *ctx)
{
  if (ctx->backend && ctx->backend->graph_launched)
    ctx->backend->graph_launched(ctx);
}
