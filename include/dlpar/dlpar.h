/* SPDX-License-Identifier: BSD-3-Clause */
/* dlpar.h: libdlpar, the library a distributed training program links.
 *
 * dlpar_init() bootstraps from PMIx, under srun --mpi=pmix, dlpar-run or
 * mpirun. It learns the rank, the size, and the local rank and host of
 * every rank. It reads the M x D grid that the launcher, srun
 * --dl-parallel or dlpar-run, exports, and cross-checks it against PMIx.
 * It exchanges NCCL unique ids with one PMIx fence that carries no data,
 * each rank getting only its groups' ids, with no ports and no
 * MASTER_ADDR. Then it builds the tensor-parallel groups of M consecutive
 * ranks, the data-parallel groups and the world group, on NCCL for GPUs
 * or MPI for CPUs, behind the same calls. On NCCL the world communicator
 * is built at the first device collective on the world group, or at init
 * with DLPAR_NCCL_WORLD=eager. libdlpar's own world collectives and the
 * host ones compose the tp and dp groups' instead, as doc/scaling.md
 * explains. A group of one rank has no communicator, and its collectives
 * are copies or nothing. DLPAR_NCCL_ONE_RANK=comm, against the default
 * local, gives each such group an NCCL communicator of its own, so that
 * one GPU runs every NCCL path, as tests/gpu/test_nccl_gpu does. A plain
 * run outside PMIx is one rank, on a grid of 1x1.
 *
 * It fails fast: a rank missing at the rendezvous, a collective that does
 * not complete, or an NCCL error ends the whole step with one line naming
 * the ranks, hosts and group, instead of a hang.
 *
 * Every function that can fail returns a dlpar_status, where 0 is
 * DLPAR_OK, and dlpar_last_error() holds the one-line message of the
 * context's last failure. There are exceptions. dlpar_check_ended returns
 * an exit status, or -1 when the program goes on. dlpar_fatal_error
 * returns the status of the condition it hands over, or DLPAR_OK for none.
 * The getters dlpar_get_info, dlpar_last_error, dlpar_backend_name,
 * dlpar_rank_host and dlpar_wait_seconds return what they get.
 * dlpar_graph_launched, dlpar_range_push and dlpar_range_pop return
 * nothing. dlpar_abort and dlpar_abort_shared do not return. */
#ifndef DLPAR_H
#define DLPAR_H

#include <stddef.h>

#include "dlpar_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlpar_ctx dlpar_ctx;

/* NONE: dlpar_init_bootstrap's context, which has no collectives. */
typedef enum {
  DLPAR_BACKEND_AUTO = 0,
  DLPAR_BACKEND_MPI,
  DLPAR_BACKEND_NCCL,
  DLPAR_BACKEND_SELF,
  DLPAR_BACKEND_NONE
} dlpar_backend;

/* Same values as common/grid.h's dlpar_group. */
typedef enum { DLPAR_WORLD = 0, DLPAR_TP = 1, DLPAR_DP = 2 } dlpar_group_id;

typedef enum { DLPAR_FLOAT32 = 0, DLPAR_FLOAT64, DLPAR_INT32, DLPAR_INT64, DLPAR_BFLOAT16, DLPAR_FLOAT16 } dlpar_dtype;
typedef enum { DLPAR_SUM = 0, DLPAR_AVG, DLPAR_MAX, DLPAR_MIN } dlpar_op;

typedef struct {
  dlpar_backend backend;       /* AUTO takes env DLPAR_BACKEND, else NCCL when a GPU is there, else MPI */
  double rendezvous_timeout_s; /* 0: env DLPAR_RENDEZVOUS_TIMEOUT, else 120 s + 2 ms per rank */
  double collective_timeout_s; /* 0: env DLPAR_COLLECTIVE_TIMEOUT, else 300 s + 2 ms per rank */
  int exchange_nccl_ids;       /* exchange NCCL ids even on the MPI backend, for tests */
  int keep_signals;            /* With 1, or env DLPAR_SIGNALS=keep, SIGTERM, SIGINT and SIGUSR1 keep the
                                  program's dispositions and mask, which by default end it, instead of
                                  becoming stop requests. This is for tests under `timeout` and programs
                                  that handle them themselves; see dlpar_stop_requested. */
  double fatal_grace_s;        /* 0 takes env DLPAR_FATAL_GRACE, else 0. With 0, what the watchdog finds
                                  ends the step at once. With > 0, the host gets it first through
                                  dlpar_fatal_error and has this long to take it and end the step itself. */
} dlpar_options;

typedef struct {
  int rank, size;              /* in the world group */
  int local_rank, local_size;  /* on this node */
  int node, nnodes;            /* node index, in the order of each node's first rank, and node count */
  int tp_rank, tp_size;        /* tensor-parallel coordinates, the size being M */
  int dp_rank, dp_size;        /* data-parallel coordinates, the size being D */
  int device;                  /* CUDA device index, -1: CPU */
  dlpar_backend backend;       /* the backend in use */
  double rendezvous_seconds;   /* from dlpar_init until the PMIx rendezvous of hosts and NCCL ids was done */
  double init_seconds;         /* wall time spent in dlpar_init until the groups were ready */
  double rendezvous_timeout_s; /* the timeouts in effect: the options', else the environment's, else */
  double collective_timeout_s; /* the defaults for the job's size, so a host waits as long as libdlpar does */
  double fatal_grace_s;        /* the host's grace in effect, or 0 for none */
  char host[256];
} dlpar_info;

/* argc/argv are needed to re-execute the program under nsys when the
 * launcher asked for it, before any CUDA call. They may be NULL otherwise.
 * Under --dl-check it runs the pre-flight checks last. DLPAR_DONE, when
 * --dl-check=only was given and all passed, or DLPAR_ERR_CHECK, when one
 * failed and rank 0 printed the table, asks the program to dlpar_finalize
 * and exit with 0 or 1. dlpar_check_ended does both. libdlpar never exits
 * on its own, except to end the whole step fast when a rank is missing or
 * a collective is stuck. It then prints one line and calls PMIx_Abort. */
int dlpar_init(int argc, char **argv, const dlpar_options *options, dlpar_ctx **ctx);
/* For a program's main, given dlpar_init's status. It returns -1 when the
 * run goes on, on DLPAR_OK or an error the program reports. When
 * --dl-check was the run, giving DLPAR_DONE or DLPAR_ERR_CHECK, it
 * finalizes ctx and returns the exit status the manual pages promise: 0
 * when every check passed, else 1. */
int dlpar_check_ended(int status, dlpar_ctx *ctx);
/* Waits for a posted stop agreement, then tears everything down. Returns
 * DLPAR_OK, or the error of that last wait, which is already printed. On a
 * context whose rendezvous in dlpar_share_from_root timed out, it ends the
 * step and the process instead. */
int dlpar_finalize(dlpar_ctx *ctx);

/* PMIx alone: ranks, hosts and the grid, read and cross-checked as
 * dlpar_init does, but no communication library and no collectives. This
 * serves programs whose collectives belong to another library, such as
 * PyTorch through dlpar's Python module. dlpar_get_info, dlpar_rank_host,
 * dlpar_share_from_root and dlpar_finalize work on it; the collectives
 * refuse. The rendezvous timeout is dlpar_init's. */
int dlpar_init_bootstrap(const dlpar_options *options, dlpar_ctx **ctx);
/* Rank 0's text reaches every rank through PMIx, by put, commit, fence and
 * get, without a port or a communicator. It may be, for example, the
 * address of a server rank 0 opened. key names the exchange, a new one per
 * call. out holds len bytes. On failure it holds the error line, as
 * dlpar_last_error does, which another thread's next call may replace.
 * The exchanges pair across ranks by the order of the calls, not by key,
 * so every rank makes its calls in the same order. Calls from several
 * threads run one at a time, in the order they arrive. Threads that race
 * to call must agree on an order themselves, or leave the calls to one
 * thread.
 * A rank that does not arrive within the rendezvous timeout is named, by
 * rank and host, by the lowest arrived rank of its node. On a dlpar_init
 * context the step then ends with PMIx_Abort, as at dlpar_init. On a
 * dlpar_init_bootstrap context the call fails with DLPAR_ERR_TIMEOUT, so
 * that the program's cleanup can run, and the context is spent. Its later
 * calls fail, and dlpar_finalize ends the step with PMIx_Abort and the
 * process with exit status 1. */
int dlpar_share_from_root(dlpar_ctx *ctx, const char *key, const char *text, char *out, size_t len);

/* The network interface this host would send from to reach addr, a numeric
 * address, for example for GLOO_SOCKET_IFNAME. Returns DLPAR_OK and its
 * name, DLPAR_ERR_SYSTEM where none does, or DLPAR_ERR_INPUT for a NULL or
 * empty argument. There is no context, so nothing goes into
 * dlpar_last_error. */
int dlpar_route_interface(const char *addr, char *ifname, size_t len);

const dlpar_info *dlpar_get_info(const dlpar_ctx *ctx);
const char *dlpar_last_error(const dlpar_ctx *ctx);
const char *dlpar_backend_name(dlpar_backend backend);
/* The world ranks of this rank's group, in group order; returns the count. */
int dlpar_group_members(const dlpar_ctx *ctx, dlpar_group_id group, int *ranks);
/* Host name of a world rank. */
const char *dlpar_rank_host(const dlpar_ctx *ctx, int rank);

/* Collectives on a group. `stream` is a cudaStream_t on NCCL, with stream
 * semantics: the call enqueues and returns. It is NULL on MPI, where the
 * call blocks.
 * count is per rank; allgather receives size*count, reduce_scatter sends
 * size*count and receives count. */
int dlpar_allreduce(dlpar_ctx *ctx, dlpar_group_id group, void *buf, size_t count, dlpar_dtype dtype,
                    dlpar_op op, void *stream);
int dlpar_allgather(dlpar_ctx *ctx, dlpar_group_id group, const void *send, void *recv, size_t count,
                    dlpar_dtype dtype, void *stream);
int dlpar_reduce_scatter(dlpar_ctx *ctx, dlpar_group_id group, const void *send, void *recv, size_t count,
                         dlpar_dtype dtype, dlpar_op op, void *stream);
int dlpar_broadcast(dlpar_ctx *ctx, dlpar_group_id group, void *buf, size_t count, dlpar_dtype dtype,
                    int root, void *stream);
/* Blocks until every rank of the group called it. On NCCL it needs no world
 * communicator, being the tp group's barrier, then the dp group's. */
int dlpar_barrier(dlpar_ctx *ctx, dlpar_group_id group);
/* The allreduce and allgather on host memory, blocking, on every backend,
 * for counters, flags, timings and tables the program keeps on the host.
 * On NCCL they first wait for the device, then go through a device staging
 * buffer of libdlpar's, in chunks of at most 16 MiB. On the world group
 * they are the tp group's then the dp group's collective, so NCCL builds
 * no world communicator for them, as doc/scaling.md explains. */
int dlpar_allreduce_host(dlpar_ctx *ctx, dlpar_group_id group, void *buf, size_t count, dlpar_dtype dtype,
                         dlpar_op op);
int dlpar_allgather_host(dlpar_ctx *ctx, dlpar_group_id group, const void *send, void *recv, size_t count,
                         dlpar_dtype dtype);
/* Call after each launch of a CUDA graph that holds collectives, so that
 * the watchdog times them from this launch. Their completion events are
 * graph nodes, recorded again by every replay. Nothing to do on MPI. */
void dlpar_graph_launched(dlpar_ctx *ctx);

/* Profiling for the launcher's --dl-profile request. Call it at the start
 * of every training step. It opens and closes the CUDA profiler range at the
 * requested steps on the selected ranks. Ranges are NVTX ranges, emitted
 * only when profiling was requested. */
int dlpar_profile_step(dlpar_ctx *ctx, long step);
/* The program's own profiling window, such as the tutorial's
 * --enable_manual_profiling, for when the launcher asked for none. This
 * rank then emits the NVTX ranges, opens the CUDA profiler range at
 * first_step and closes it after last_step. That range is what
 * `nsys profile -c cudaProfilerApi` captures. Returns 1 when the window
 * was taken, 0 when the launcher's --dl-profile request stands instead. */
int dlpar_profile_window(dlpar_ctx *ctx, long first_step, long last_step);
void dlpar_range_push(const dlpar_ctx *ctx, const char *name);
void dlpar_range_pop(const dlpar_ctx *ctx);

/* Start-up telemetry. Call it once, after the program's first step. On NCCL
 * that step's work is queued on `stream`, which this waits for; on MPI
 * stream is NULL. After one allgather over the world group, rank 0 of a
 * run of more than one rank prints one line to stderr. It gives the
 * seconds since each process started until PMIx was ready, the ids were
 * exchanged, each group's communicator was ready and the first step was
 * done, each with its slowest rank and host. Later calls do nothing. */
int dlpar_startup_done(dlpar_ctx *ctx, void *stream);

/* Step-time skew without a synchronisation of its own. Every rank calls it
 * at the same steps with its host-side step time. It posts a nonblocking
 * allgather of `seconds` over the world group, on NCCL into `stream`
 * behind the step's work. It returns in `times`, size values by rank,
 * those the previous call posted, with *ready = 1, or 0 on the first call.
 * The previous gather has had a whole interval to complete. */
int dlpar_step_times(dlpar_ctx *ctx, double seconds, void *stream, double *times, int *ready);
/* Seconds this rank has spent blocked in libdlpar's collectives on MPI. On
 * NCCL the host does not wait in them. A step's time less these is the
 * rank's own work, which a slow peer does not inflate. */
double dlpar_wait_seconds(const dlpar_ctx *ctx);

/* Slurm's SIGTERM, at the time limit or from scancel, or SIGINT or SIGUSR1,
 * agreed over the world group without making the caller wait for its
 * peers. Each call posts whether this rank got a signal, on a GPU into
 * `stream` behind the step's work, or by a nonblocking allreduce on the
 * CPU. It returns in *stop the agreement the previous call posted. Every
 * rank calls it once per step, so
 * all return 1 in the same call, one call after the first rank got the
 * signal: write a checkpoint, then dlpar_finalize and exit. Called after the
 * step's work is queued, it waits on a GPU only for the previous step.
 * A second signal ends the process at once. With keep_signals or
 * DLPAR_SIGNALS=keep, libdlpar leaves the signals alone, so this rank never
 * asks for a stop. It still takes part in the agreement, where *stop is 1
 * when a peer that does take them got one, and reports 0 otherwise. */
int dlpar_stop_requested(dlpar_ctx *ctx, void *stream, int *stop);

/* The exit status of a program stopped early at an agreed step with its
 * checkpoint written: "more to do", apart from a finished run (0), a
 * failure (1, 2, 128 + a signal) and dlpar-restart's own "requeued" (75).
 * dlpar-restart requeues the job on it, dlpar-run passes it on, and the
 * Python module's dlpar.stop.EXIT_STOPPED is the same number. */
#define DLPAR_EXIT_STOPPED 85

/* What ends the step (every rank: PMIx_Abort, then this process's exit
 * with the status given) without the program asking, each with one line
 * naming the rank, the host and the fix (one function of libdlpar's,
 * end_step.c, does it, for all of them):
 *  - a rank missing at the PMIx rendezvous after the rendezvous timeout,
 *    or Open MPI's MPI_Init not returning within it (status 1);
 *  - a device or host collective not complete after the collective
 *    timeout, or NCCL's asynchronous error on a communicator (status 1);
 *  - a rank of this node stopped (SIGSTOP, SIGTSTP) for longer than
 *    DLPAR_STOPPED_TIMEOUT, 10 s by default (status 1);
 *    these three, the watchdog's, go to the program first when it asked
 *    for a grace (dlpar_fatal_error below); on a hang (the first and the
 *    third) every rank first writes its stack, asked with SIGURG, and one
 *    line names the rank whose stack differs (doc/user.md);
 *  - a second stop signal (SIGTERM, SIGINT, SIGUSR1) to a rank that turns
 *    them into stop requests ends that process at once (128 + the signal;
 *    the launcher then ends the step);
 *  - dlpar_finalize on a context whose dlpar_share_from_root timed out
 *    (status 1), and dlpar_abort / dlpar_abort_shared below (the
 *    program's own).
 * The timeouts in effect are in dlpar_info. */

/* NCCL's asynchronous-error model, for a host that ends the step itself,
 * such as the Python module or a PyTorch extension. With a grace, set by
 * dlpar_options.fatal_grace_s or DLPAR_FATAL_GRACE, what the watchdog
 * finds is kept, not printed, and the communicators are aborted, so that a
 * stream or call waiting on them returns. This returns DLPAR_OK while
 * nothing was found, else the condition's status with its line in `line`
 * of len bytes. From then on the host owns the ending. It prints the line,
 * then calls dlpar_abort, or dlpar_finalize, which ends the step with
 * status 1. A condition untaken after the grace ends the step as without
 * one. A context with a condition, or with a bootstrap rendezvous that
 * timed out, is spent: its collectives and dlpar_share_from_root fail with
 * DLPAR_ERR_STATE. Callable from any thread. */
int dlpar_fatal_error(dlpar_ctx *ctx, char *line, size_t len);

/* Ends the whole step on every rank, printing "dlpar: message" unless
 * message is NULL because the caller printed its own. Does not return. */
void dlpar_abort(dlpar_ctx *ctx, int code, const char *message) __attribute__((noreturn));

/* Ends the step for an error every rank finds alike, such as a bad config
 * or a grid the model cannot split. Rank 0 prints `line` as given and ends the
 * step; the other ranks wait for that, so that their exit cannot make the
 * launcher kill rank 0 before its line is out. A waiting rank leaves
 * quietly when the launcher's stop signal comes, and prints `line` itself
 * if rank 0 has not ended the step within 10 s. Does not return. */
void dlpar_abort_shared(dlpar_ctx *ctx, int code, const char *line) __attribute__((noreturn));

#ifdef __cplusplus
}
#endif

#endif
