/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/internal.h: libdlpar's context, and the functions its parts
 * call in each other, grouped by the folder that defines them.
 * The top of libdlpar/ holds the API: init.c, which sets the order of
 * things, collectives.c, and the two leaves every part uses, context.c
 * and procstat.c.
 * bootstrap/ holds PMIx, in pmixboot.c, pmix_waiter.c,
 * rendezvous_diagnosis.c and mpi_init_guard.c, with pmix_internal.h
 * between them, and ncclid.c.
 * backends/ holds the collectives on MPI, NCCL or one rank.
 * ending/ holds end_step.c, the one path every ending takes, fatal.c, a
 * condition kept for the host, watchdog.c and stacks.c.
 * preflight/ holds --dl-check, with preflight.h and links.h of its own.
 * telemetry/ holds telemetry.c and profiling.c.
 * Dependencies run one way, with no circle, as tests/unit/module_graph.sh
 * checks: context.c calls nothing of libdlpar, the transports in
 * bootstrap/ end nothing, and init.c calls all. */
#ifndef DLPAR_INTERNAL_H
#define DLPAR_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h"
#include "include/dlpar/dlpar.h"
#include "common/grid.h"
#include "common/status.h"
#include "common/taskenv.h"

#define DLPAR_NCCL_ID_BYTES 128 /* sizeof(ncclUniqueId) */
/* A group of more than this many ranks bootstraps NCCL with
 * ncclCommInitRankScalable, from one root per this many ranks. That is
 * PyTorch's default too, TORCH_NCCL_RANKS_PER_ROOT=128. The environment's
 * DLPAR_NCCL_RANKS_PER_ROOT overrides it. */
#define DLPAR_NCCL_RANKS_PER_ROOT 128
/* Default timeouts grow with the job, as a base plus a per-rank term; see doc/scaling.md. */
#define DLPAR_RENDEZVOUS_TIMEOUT_BASE 120.0
#define DLPAR_RENDEZVOUS_TIMEOUT_PER_RANK 0.002
#define DLPAR_COLLECTIVE_TIMEOUT_BASE 300.0
#define DLPAR_COLLECTIVE_TIMEOUT_PER_RANK 0.002

typedef unsigned char dlpar_nccl_id[DLPAR_NCCL_ID_BYTES];

/* One group's NCCL ids, one per bootstrap root. A count of 0 means no communicator. */
typedef struct {
  dlpar_nccl_id *ids;
  int count;
} dlpar_group_ids;

typedef struct {
  dlpar_group_ids group[3];    /* indexed by dlpar_group */
  bool valid;
} dlpar_nccl_ids;

/* What this rank moved through PMIx's key-value store: its own keys put,
 * and other ranks' keys got, on this node and from other nodes. */
typedef struct {
  size_t put, got_local, got_remote;
  int keys_got;
} dlpar_pmix_traffic;

typedef struct dlpar_backend_ops dlpar_backend_ops;

/* A group's allreduce and allgather, as the backends implement them. The
 * world compositions in collectives.c take either kind. */
typedef int (*dlpar_allreduce_fn)(dlpar_ctx *ctx, dlpar_group group, void *buf, size_t count, dlpar_dtype dtype,
                                  dlpar_op op, void *stream);
typedef int (*dlpar_allgather_fn)(dlpar_ctx *ctx, dlpar_group group, const void *send, void *recv, size_t count,
                                  dlpar_dtype dtype, void *stream);

/* Start-up phases for telemetry.c, in the order they happen. */
typedef enum {
  DLPAR_PHASE_PMIX = 0,  /* PMIx ready: rank, size, hosts known */
  DLPAR_PHASE_IDS,       /* the rendezvous of NCCL ids done */
  DLPAR_PHASE_WORLD,     /* a group's communicator ready (dlpar_group order) */
  DLPAR_PHASE_TP,
  DLPAR_PHASE_DP,
  DLPAR_PHASE_FIRST_STEP, /* the program's dlpar_startup_done */
  DLPAR_PHASES
} dlpar_phase;

/* What the watchdog watches: the collective in flight on each group. */
typedef struct {
  atomic_int active;           /* 1 while a blocking MPI collective runs */
  _Atomic double since;        /* when it started, in monotonic seconds */
  const char *op;              /* "allreduce" and so on, static strings */
} dlpar_inflight;

struct dlpar_ctx {
  dlpar_info info;
  dlpar_grid grid;
  dlpar_task_env env;          /* the launcher's contract, or a 1xN default */
  bool launched;               /* DLPAR_* came from a launcher */
  bool bootstrap_only;         /* dlpar_init_bootstrap: PMIx, no backend */
  bool pmix;                   /* PMIx_Init succeeded */
  char nspace[256];            /* PMIx namespace, of PMIX_MAX_NSLEN + 1 bytes */
  char (*hosts)[256];          /* host of every world rank */
  int *rank_node;              /* node index of every world rank */
  double rendezvous_timeout, collective_timeout;
  double stopped_timeout;      /* a rank of this node stopped this long ends the step */
  long *peer_pid;              /* pid of every world rank on this node, 0 for this rank and ranks elsewhere */
  int *peer_stopped_polls;     /* consecutive watchdog polls that found that rank stopped */
  dlpar_nccl_ids nccl_ids;     /* tp and dp ids; the world's in split mode, eager or of one rank, else lazily */
  bool nccl_split;             /* DLPAR_NCCL_GROUPS=split: tp and dp come from ncclCommSplit of the world */
  bool eager_world;            /* DLPAR_NCCL_WORLD=eager: the world communicator at init */
  bool collect_modex;          /* DLPAR_MODEX=collect: the fence hands every rank's keys to every node */
  bool world_via_groups;       /* DLPAR_WORLD_VIA_GROUPS=1: host world collectives from tp and dp, whatever the backend */
  bool one_rank_comms;         /* DLPAR_NCCL_ONE_RANK=comm: a group of one rank gets an NCCL communicator too */
  int ranks_per_root;          /* NCCL bootstrap roots: one per this many ranks of a group */
  dlpar_pmix_traffic traffic;
  const dlpar_backend_ops *backend;
  void *backend_state;
  dlpar_inflight inflight[3];  /* per group */
  /* watchdog thread */
  pthread_t watchdog;
  bool watchdog_running;
  atomic_int watchdog_stop;
  atomic_int stop_signals;     /* SIGTERM/SIGINT/SIGUSR1 received */
  atomic_int quiet_exit_code;  /* set while this rank ends the step: a stop signal exits with it, silently */
  atomic_int comms_abort_started, comms_aborted; /* dlpar_abort_comms, once */
  bool keep_signals;           /* the program keeps its signals, by DLPAR_SIGNALS=keep or its options */
  bool stacks_armed;           /* SIGURG asks this rank for its stack, through stacks.c */
  /* The first condition that ends the step, kept for the host by fatal.c.
   * fatal_status, 0 for none, is stored last. fatal_taken is set once the
   * host has it, through dlpar_fatal_error or a call that returned it. A
   * context with one is spent, and dlpar_finalize ends the step.
   * fatal_grace is how long the host has to take what the watchdog found,
   * where 0 ends the step at once. */
  double fatal_grace;
  atomic_int fatal_claimed, fatal_status, fatal_taken;
  double fatal_at;
  char fatal_line[DLPAR_ERRLEN];
  bool stop_posted;            /* a stop agreement is posted, not yet waited for */
  int signal_fd;
  /* profiling */
  bool profiling;              /* this rank emits ranges / drives the profiler */
  bool profiler_on, profiler_done;
  uint64_t profiler_range;     /* the NVTX range over the profiled steps */
  /* telemetry */
  double process_start;        /* dlpar_now() at this process's start, else at dlpar_init */
  double phase_at[DLPAR_PHASES]; /* dlpar_now() at each start-up phase, or 0 when not reached */
  bool startup_reported;
  double wait_seconds;         /* blocked in collectives on MPI, the host's waits */
  bool skew_posted;            /* a step-time gather is posted, not yet waited for */
  /* dlpar_share_from_root runs one call at a time, in the order they came,
   * with a ticket each. */
  pthread_mutex_t share_lock;
  pthread_cond_t share_turn;
  unsigned long share_next, share_serving;
  dlpar_error error;
};

struct dlpar_backend_ops {
  dlpar_backend id;
  int (*init)(dlpar_ctx *ctx);
  void (*finalize)(dlpar_ctx *ctx);
  dlpar_allreduce_fn allreduce;
  dlpar_allgather_fn allgather;
  int (*reduce_scatter)(dlpar_ctx *ctx, dlpar_group group, const void *send, void *recv,
                        size_t count, dlpar_dtype dtype, dlpar_op op, void *stream);
  int (*broadcast)(dlpar_ctx *ctx, dlpar_group group, void *buf, size_t count, dlpar_dtype dtype,
                   int root, void *stream);
  int (*barrier)(dlpar_ctx *ctx, dlpar_group group);
  /* For the watchdog: DLPAR_OK, or an error in err for an asynchronous failure or a timeout. */
  int (*poll)(dlpar_ctx *ctx, double now, dlpar_error *err);
  /* Tear communicators down without waiting, before aborting the step. */
  void (*abort_comms)(dlpar_ctx *ctx);
  /* The stop agreement of dlpar_stop_requested: post the maximum of `local`
   * over the world group, on `stream` as the collectives take it, then
   * wait for it. */
  int (*stop_post)(dlpar_ctx *ctx, int local, void *stream);
  int (*stop_wait)(dlpar_ctx *ctx, int *global);
  /* A graph with captured collectives was launched. NULL when there is nothing to do. */
  void (*graph_launched)(dlpar_ctx *ctx);
  /* Step-time skew: post a nonblocking allgather of one double over the
   * world group, on `stream` as the collectives take it, then wait for it
   * into `all`. */
  int (*times_post)(dlpar_ctx *ctx, double local, void *stream);
  int (*times_wait)(dlpar_ctx *ctx, double *all);
  /* Blocking collectives on host memory for dlpar_*_host, with stream
   * unused. NULL where allreduce and allgather take host memory, as on MPI
   * and for one rank. */
  dlpar_allreduce_fn host_allreduce;
  dlpar_allgather_fn host_allgather;
  /* Whether the world group has a communicator now. NULL means always. */
  bool (*has_world)(const dlpar_ctx *ctx);
};

/* context.c */
/* A failure is recorded in ctx->error with dlpar_fail, as common/status.h says. */
/* Numbers from the environment, one checked reader per kind: unset or
 * empty leaves *out as it is; a bad value is DLPAR_ERR_INPUT naming the
 * variable, what it takes, and `example` as the fix. */
int dlpar_env_seconds(dlpar_ctx *ctx, const char *name, double example, double *out);
/* A decimal number in (0, max], such as a ratio or a rate. `what` says
 * which, as in "a ratio", and the message names it rather than max. */
int dlpar_env_positive(dlpar_ctx *ctx, const char *name, const char *what, double max, double example, double *out);
/* A whole number in [lo, hi]. */
int dlpar_env_count(dlpar_ctx *ctx, const char *name, long lo, long hi, long example, long *out);
size_t dlpar_dtype_size(dlpar_dtype dtype);
/* Ranks in the group: grid.tp, grid.dp or the world's size. */
int dlpar_group_size(const dlpar_ctx *ctx, dlpar_group group);
/* "tp group (ranks 4-7)" for messages. */
void dlpar_describe_group(const dlpar_ctx *ctx, dlpar_group group, char *out, size_t len);

/* collectives.c: world collectives composed from the tp and dp groups', with
 * rank = tp_rank + M * dp_rank, for a backend without a world
 * communicator. That is NCCL unless one was asked for, or any backend with
 * DLPAR_WORLD_VIA_GROUPS=1. `allreduce` or `allgather` is the group
 * collective to compose, on device or host memory as that function takes
 * it. `row` holds M * count elements of the same memory, for the tp
 * group's gather. */
int dlpar_world_allreduce_by_groups(dlpar_ctx *ctx, dlpar_allreduce_fn allreduce, void *buf, size_t count,
                                    dlpar_dtype dtype, dlpar_op op, void *stream);
int dlpar_world_allgather_by_groups(dlpar_ctx *ctx, dlpar_allgather_fn allgather, const void *send, void *row,
                                    void *recv, size_t count, dlpar_dtype dtype, void *stream);
/* Whether this context's host world collectives are composed so. */
bool dlpar_world_by_groups(const dlpar_ctx *ctx);

/* procstat.c: the fields of /proc/PID/stat after the command name, from the
 * state on, in buf, or NULL. pid 0 means this process. */
const char *dlpar_proc_stat_fields(long pid, char *buf, size_t len);

#endif
