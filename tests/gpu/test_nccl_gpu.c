/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/test_nccl_gpu.c: libdlpar's NCCL backend on one GPU. Each group
 * of the 1x1 run, that is tp, dp and world, gets an NCCL communicator of one
 * rank through DLPAR_NCCL_ONE_RANK=comm, so that the paths a multi-GPU job
 * takes run here. Each item is a named check:
 *  - dlpar_init on NCCL completes within its rendezvous timeout, every
 *    group with an id of its own, pairwise distinct, and its communicator;
 *  - every device collective on every group, with fresh random data each
 *    time, goes through NCCL, as its COLL log line with [nranks=1] shows, and
 *    gives bit for bit the expected values: allreduce sum/avg/max/min,
 *    allgather, reduce_scatter and broadcast in fp32 and bf16, with the
 *    out-of-place outputs poisoned first; the barrier; the host allreduce
 *    and allgather;
 *  - an allreduce then an allgather are captured in a CUDA graph on a
 *    non-blocking stream, and the graph is replayed 3 times on fresh data,
 *    with dlpar_graph_launched after each launch and the gathered output
 *    poisoned before each replay;
 *  - the watchdog: a child, this program run with --stuck, whose allreduce
 *    waits behind a kernel that does not end, with DLPAR_COLLECTIVE_TIMEOUT=3,
 *    ends on its own within STUCK_BOUND_S with libdlpar's one line naming
 *    the tp group, and exit 1;
 *  - dlpar_finalize finalizes the communicators.
 * The test is white-box, linked with libdlpar_core: the ids and the start-up
 * phases are read from the context. The stop signals keep their defaults
 * through keep_signals, so a time bound's SIGTERM ends the test. Skips
 * without a GPU. */
#include "config.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "tests/gpu/gpu_check.h"
#include "tests/gpu/spin_kernel.h"

extern char **environ;

enum { COUNT = 100003, GRAPH_REPLAYS = 3 };
#define STUCK_TIMEOUT "3"      /* the child's DLPAR_COLLECTIVE_TIMEOUT, s */
#define STUCK_BOUND_S 20.0     /* the child must have ended by then */
#define SPIN_SECONDS 60.0      /* the kernel's own bound: frees the GPU should nothing end the child */

static const dlpar_group_id groups[] = {DLPAR_TP, DLPAR_DP, DLPAR_WORLD};
static const char *const group_names[] = {"world", "tp", "dp"}; /* by dlpar_group_id */

/* NCCL's log, with NCCL_DEBUG=INFO and subsystem COLL, into a file of this
 * test: one "<Op>: opCount ... [nranks=1]" line per collective enqueued. */
typedef struct {
  char path[512];
  FILE *f;
} nccl_log;

typedef enum { NCCL_ALLREDUCE, NCCL_ALLGATHER, NCCL_REDUCE_SCATTER, NCCL_BROADCAST, NCCL_OPS } nccl_op_index;
static const char *const nccl_ops[NCCL_OPS] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast"};

/* The collectives of one rank NCCL logged since the last call, by op. */
static void nccl_logged(nccl_log *log, int calls[NCCL_OPS])
{
  char line[2048], needle[64];
  memset(calls, 0, NCCL_OPS * sizeof(int));
  if (!log->f && !(log->f = fopen(log->path, "r")))
    return;
  while (fgets(line, sizeof(line), log->f)) {
    for (int op = 0; op < NCCL_OPS; op++) {
      snprintf(needle, sizeof(needle), " %s: opCount", nccl_ops[op]);
      calls[op] += strstr(line, needle) && strstr(line, "[nranks=1]");
    }
  }
  clearerr(log->f);
}

/* Forgets what NCCL logged so far. */
static void nccl_log_skip(nccl_log *log)
{
  int ignored[NCCL_OPS];
  nccl_logged(log, ignored);
}

/* Whether NCCL logged `want` calls of each op since the last look. */
static bool nccl_calls_were(nccl_log *log, const int want[NCCL_OPS], char *why, size_t len)
{
  int calls[NCCL_OPS];
  nccl_logged(log, calls);
  for (int op = 0; op < NCCL_OPS; op++) {
    if (calls[op] != want[op]) {
      snprintf(why, len, "NCCL logged %d %s calls of one rank for it, expected %d (NCCL_DEBUG_SUBSYS=COLL)", calls[op],
               nccl_ops[op], want[op]);
      return false;
    }
  }
  return true;
}

static void passed(int ok, const char *what, const char *why)
{
  check_count++;
  if (ok) {
    printf("ok: %s\n", what);
    return;
  }
  check_failures++;
  fprintf(stderr, "FAILED: %s: %s\n", what, why);
}

/* A collective's check: its status, its one NCCL call, its result. */
static void check_collective(dlpar_ctx *ctx, nccl_log *log, const char *what, nccl_op_index op, int rc,
                             const void *got, const void *want, size_t bytes)
{
  int calls[NCCL_OPS] = {0};
  char why[DLPAR_ERRLEN + 128], name[256];
  bool through_nccl;
  calls[op] = 1;
  through_nccl = nccl_calls_were(log, calls, why, sizeof(why));
  snprintf(name, sizeof(name), "%s: through NCCL, exact", what);
  if (rc != DLPAR_OK)
    snprintf(why, sizeof(why), "%s", dlpar_last_error(ctx));
  else if (through_nccl)
    snprintf(why, sizeof(why), "the result differs from the expected values");
  passed(rc == DLPAR_OK && through_nccl && memcmp(got, want, bytes) == 0, name, why);
}

/* n values of dtype as bytes: fp32, or bf16, the top half of an fp32. */
static void *random_values(size_t n, dlpar_dtype dtype)
{
  float *f = host_random(n, 8.0f);
  uint16_t *b;
  if (dtype == DLPAR_FLOAT32)
    return f;
  b = malloc(n * sizeof(uint16_t));
  for (size_t i = 0; i < n; i++) {
    uint32_t bits;
    memcpy(&bits, &f[i], sizeof(bits));
    b[i] = (uint16_t)(bits >> 16);
  }
  free(f);
  return b;
}

static void *device_copy(const void *host, size_t bytes)
{
  void *d = NULL;
  GPU_OR_EXIT(cudaMalloc(&d, bytes));
  GPU_OR_EXIT(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
  return d;
}

static void *device_poisoned(size_t bytes)
{
  void *d = NULL;
  GPU_OR_EXIT(cudaMalloc(&d, bytes));
  GPU_OR_EXIT(cudaMemset(d, 0xff, bytes));
  return d;
}

/* The device's values once `stream` is done, in malloc'd memory. */
static void *host_copy(const void *d, size_t bytes, cudaStream_t stream)
{
  void *h = malloc(bytes);
  GPU_OR_EXIT(cudaStreamSynchronize(stream));
  GPU_OR_EXIT(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
  return h;
}

static void check_init(dlpar_ctx *ctx, int rc)
{
  static const dlpar_phase phase[] = {DLPAR_PHASE_WORLD, DLPAR_PHASE_TP, DLPAR_PHASE_DP};
  const dlpar_group_ids *ids = ctx->nccl_ids.group;
  char why[DLPAR_ERRLEN + 64], what[128];
  passed(rc == DLPAR_OK && ctx->info.backend == DLPAR_BACKEND_NCCL, "dlpar_init on NCCL within its rendezvous timeout",
         rc != DLPAR_OK ? dlpar_last_error(ctx) : "another backend");
  if (rc != DLPAR_OK)
    exit(1);
  printf("dlpar_init: %.2f s, device %d\n", ctx->info.init_seconds, ctx->info.device);
  for (int g = 0; g < 3; g++) {
    snprintf(what, sizeof(what), "the %s group: one id of its own and a communicator", group_names[g]);
    snprintf(why, sizeof(why), "%d ids, communicator %s", ids[g].count, ctx->phase_at[phase[g]] > 0 ? "ready" : "never built");
    passed(ids[g].count == 1 && ctx->phase_at[phase[g]] > 0, what, why);
  }
  passed(ids[0].count == 1 && ids[1].count == 1 && ids[2].count == 1 &&
             memcmp(ids[0].ids[0], ids[1].ids[0], DLPAR_NCCL_ID_BYTES) != 0 &&
             memcmp(ids[0].ids[0], ids[2].ids[0], DLPAR_NCCL_ID_BYTES) != 0 &&
             memcmp(ids[1].ids[0], ids[2].ids[0], DLPAR_NCCL_ID_BYTES) != 0,
         "the three groups' ids are distinct", "two groups share an id (its bootstrap root serves one communicator)");
}

/* allreduce with each op, allgather, reduce_scatter, broadcast of one dtype on one group. */
static void check_device_collectives(dlpar_ctx *ctx, nccl_log *log, dlpar_group_id group, dlpar_dtype dtype,
                                     cudaStream_t stream)
{
  static const dlpar_op ops[] = {DLPAR_SUM, DLPAR_AVG, DLPAR_MAX, DLPAR_MIN};
  static const char *const op_names[] = {"sum", "avg", "max", "min"};
  const char *type = dtype == DLPAR_FLOAT32 ? "fp32" : "bf16";
  const size_t bytes = COUNT * dlpar_dtype_size(dtype);
  char what[160];
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
    void *x = random_values(COUNT, dtype), *d = device_copy(x, bytes), *got;
    nccl_log_skip(log);
    const int rc = dlpar_allreduce(ctx, group, d, COUNT, dtype, ops[i], stream);
    got = host_copy(d, bytes, stream);
    snprintf(what, sizeof(what), "allreduce %s %s on the %s group", op_names[i], type, group_names[group]);
    check_collective(ctx, log, what, NCCL_ALLREDUCE, rc, got, x, bytes);
    free(x), free(got), cudaFree(d);
  }
  {
    void *x = random_values(COUNT, dtype), *send = device_copy(x, bytes), *recv = device_poisoned(bytes), *got;
    nccl_log_skip(log);
    const int rc = dlpar_allgather(ctx, group, send, recv, COUNT, dtype, stream);
    got = host_copy(recv, bytes, stream);
    snprintf(what, sizeof(what), "allgather %s on the %s group", type, group_names[group]);
    check_collective(ctx, log, what, NCCL_ALLGATHER, rc, got, x, bytes);
    free(got);
    GPU_OR_EXIT(cudaMemset(recv, 0xff, bytes));
    nccl_log_skip(log);
    const int rc2 = dlpar_reduce_scatter(ctx, group, send, recv, COUNT, dtype, DLPAR_SUM, stream);
    got = host_copy(recv, bytes, stream);
    snprintf(what, sizeof(what), "reduce_scatter sum %s on the %s group", type, group_names[group]);
    check_collective(ctx, log, what, NCCL_REDUCE_SCATTER, rc2, got, x, bytes);
    free(x), free(got), cudaFree(send), cudaFree(recv);
  }
  {
    void *x = random_values(COUNT, dtype), *d = device_copy(x, bytes), *got;
    nccl_log_skip(log);
    const int rc = dlpar_broadcast(ctx, group, d, COUNT, dtype, 0, stream);
    got = host_copy(d, bytes, stream);
    snprintf(what, sizeof(what), "broadcast %s from rank 0 on the %s group", type, group_names[group]);
    check_collective(ctx, log, what, NCCL_BROADCAST, rc, got, x, bytes);
    free(x), free(got), cudaFree(d);
  }
}

/* The barrier and the host collectives in fp32 of one group. */
static void check_host_collectives(dlpar_ctx *ctx, nccl_log *log, dlpar_group_id group)
{
  const size_t bytes = COUNT * sizeof(float);
  float *x = host_random(COUNT, 8.0f), *buf = malloc(bytes), *recv = malloc(bytes);
  char what[160];
  int rc;
  nccl_log_skip(log);
  rc = dlpar_barrier(ctx, group);
  snprintf(what, sizeof(what), "barrier on the %s group", group_names[group]);
  check_collective(ctx, log, what, NCCL_ALLREDUCE, rc, x, x, bytes);
  memcpy(buf, x, bytes);
  rc = dlpar_allreduce_host(ctx, group, buf, COUNT, DLPAR_FLOAT32, DLPAR_SUM);
  snprintf(what, sizeof(what), "allreduce_host sum fp32 on the %s group", group_names[group]);
  check_collective(ctx, log, what, NCCL_ALLREDUCE, rc, buf, x, bytes);
  memset(recv, 0xff, bytes);
  rc = dlpar_allgather_host(ctx, group, x, recv, COUNT, DLPAR_FLOAT32);
  snprintf(what, sizeof(what), "allgather_host fp32 on the %s group", group_names[group]);
  check_collective(ctx, log, what, NCCL_ALLGATHER, rc, recv, x, bytes);
  free(x), free(buf), free(recv);
}

/* An allreduce in place, then an allgather of its result, captured once and
 * replayed: the gathered values are each replay's fresh input. */
static void check_graph(dlpar_ctx *ctx, nccl_log *log)
{
  const size_t bytes = COUNT * sizeof(float);
  cudaStream_t stream;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  float *buf = device_poisoned(bytes), *gathered = device_poisoned(bytes);
  const int captured[NCCL_OPS] = {[NCCL_ALLREDUCE] = 1, [NCCL_ALLGATHER] = 1};
  int rc_reduce, rc_gather;
  char what[128], why[DLPAR_ERRLEN + 128];
  GPU_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  nccl_log_skip(log);
  GPU_OR_EXIT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  rc_reduce = dlpar_allreduce(ctx, DLPAR_TP, buf, COUNT, DLPAR_FLOAT32, DLPAR_SUM, stream);
  rc_gather = rc_reduce == DLPAR_OK ? dlpar_allgather(ctx, DLPAR_TP, buf, gathered, COUNT, DLPAR_FLOAT32, stream)
                                    : rc_reduce;
  GPU_OR_EXIT(cudaStreamEndCapture(stream, &graph));
  if (rc_gather != DLPAR_OK)
    snprintf(why, sizeof(why), "%s", dlpar_last_error(ctx));
  passed(rc_gather == DLPAR_OK && nccl_calls_were(log, captured, why, sizeof(why)),
         "allreduce and allgather captured in a CUDA graph on the tp group, through NCCL", why);
  GPU_OR_EXIT(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 1; replay <= GRAPH_REPLAYS; replay++) {
    float *x = host_random(COUNT, 8.0f), *got;
    GPU_OR_EXIT(cudaMemcpyAsync(buf, x, bytes, cudaMemcpyHostToDevice, stream));
    GPU_OR_EXIT(cudaMemsetAsync(gathered, 0xff, bytes, stream));
    GPU_OR_EXIT(cudaGraphLaunch(exec, stream));
    dlpar_graph_launched(ctx);
    got = host_copy(gathered, bytes, stream);
    snprintf(what, sizeof(what), "graph replay %d: the gathered allreduce is the fresh input", replay);
    passed(memcmp(got, x, bytes) == 0, what, "the result differs from the expected values");
    free(x), free(got);
  }
  GPU_OR_EXIT(cudaGraphExecDestroy(exec));
  GPU_OR_EXIT(cudaGraphDestroy(graph));
  GPU_OR_EXIT(cudaStreamDestroy(stream));
  cudaFree(buf), cudaFree(gathered);
}

/* The child's CUDA calls: a failure exits 2, never the watchdog's 1. */
static void child_cuda(cudaError_t rc, const char *what)
{
  if (rc != cudaSuccess) {
    fprintf(stderr, "test_nccl_gpu --stuck: %s: %s\n", what, cudaGetErrorString(rc));
    exit(2);
  }
}

/* The child, run with --stuck: an allreduce behind a kernel that does not end;
 * only the watchdog ends this process. */
static int stuck_collective(void)
{
  dlpar_options options = {.backend = DLPAR_BACKEND_NCCL, .keep_signals = 1};
  dlpar_ctx *ctx;
  int *flag = NULL, *flag_device = NULL;
  float *buf = NULL;
  cudaStream_t stream;
  if (dlpar_init(0, NULL, &options, &ctx) != DLPAR_OK) {
    fprintf(stderr, "test_nccl_gpu --stuck: dlpar_init: %s\n", dlpar_last_error(ctx));
    return 2;
  }
  child_cuda(cudaHostAlloc((void **)&flag, sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
  *flag = 0;
  child_cuda(cudaHostGetDevicePointer((void **)&flag_device, flag, 0), "cudaHostGetDevicePointer");
  child_cuda(cudaMalloc((void **)&buf, 1024 * sizeof(float)), "cudaMalloc");
  child_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  child_cuda((cudaError_t)spin_launch(flag_device, SPIN_SECONDS, stream), "the spinning kernel");
  if (dlpar_allreduce(ctx, DLPAR_TP, buf, 1024, DLPAR_FLOAT32, DLPAR_SUM, stream) != DLPAR_OK) {
    fprintf(stderr, "test_nccl_gpu --stuck: dlpar_allreduce: %s\n", dlpar_last_error(ctx));
    return 2;
  }
  fprintf(stderr, "test_nccl_gpu --stuck: an allreduce queued behind a kernel that does not end\n");
  sleep((unsigned)(2 * STUCK_BOUND_S));
  fprintf(stderr, "test_nccl_gpu --stuck: still here: the watchdog did not end this process\n");
  return 3;
}

/* The child's environment: ours without NCCL's log, with the timeout. */
static char **stuck_environment(void)
{
  size_t n = 0, kept = 0;
  char **env;
  while (environ[n])
    n++;
  env = calloc(n + 2, sizeof(char *));
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "NCCL_DEBUG", 10) != 0 && strncmp(environ[i], "DLPAR_COLLECTIVE_TIMEOUT=", 25) != 0)
      env[kept++] = environ[i];
  env[kept] = "DLPAR_COLLECTIVE_TIMEOUT=" STUCK_TIMEOUT;
  return env;
}

/* Runs the child, its stderr read until it ends or STUCK_BOUND_S passes. */
static void check_watchdog(const char *self, const char *host)
{
  char *argv[] = {(char *)self, "--stuck", NULL}, **env = stuck_environment(), out[16384] = "", expected[512], why[128];
  const char *suffix = ": every rank of the group runs on this host and one of them is stuck (see that rank's output; "
                       "raise DLPAR_COLLECTIVE_TIMEOUT if the step is just slow)";
  posix_spawn_file_actions_t actions;
  int pipe_fd[2], status = 0, lines = 0, spawned;
  size_t used = 0;
  pid_t pid, done = 0;
  double start, message_at = -1, ended_at;
  bool eof = false;
  char *line;
  if (pipe(pipe_fd) != 0) {
    passed(0, "the stuck child starts", strerror(errno));
    free(env);
    return;
  }
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fd[0]);
  start = dlpar_now();
  spawned = posix_spawn(&pid, self, &actions, NULL, argv, env);
  posix_spawn_file_actions_destroy(&actions);
  free(env);
  close(pipe_fd[1]);
  if (spawned != 0) {
    passed(0, "the stuck child starts", strerror(spawned));
    close(pipe_fd[0]);
    return;
  }
  while (!done && dlpar_now() - start < STUCK_BOUND_S) {
    struct pollfd p = {.fd = pipe_fd[0], .events = POLLIN};
    if (!eof && poll(&p, 1, 100) > 0) {
      const ssize_t n = read(pipe_fd[0], out + used, sizeof(out) - 1 - used);
      eof = n <= 0;
      used += n > 0 ? (size_t)n : 0;
      out[used] = '\0';
      if (message_at < 0 && strstr(out, "has not completed"))
        message_at = dlpar_now() - start;
    } else if (eof) {
      usleep(100000);
    }
    done = waitpid(pid, &status, WNOHANG);
  }
  ended_at = dlpar_now() - start;
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  for (ssize_t n; used < sizeof(out) - 1 && (n = read(pipe_fd[0], out + used, sizeof(out) - 1 - used)) > 0;)
    used += (size_t)n;
  out[used] = '\0';
  close(pipe_fd[0]);
  printf("the stuck child's output:\n%s", out);
  snprintf(why, sizeof(why), "still running after %.0f s, so it was killed (its output above)", STUCK_BOUND_S);
  passed(done != 0, "the watchdog ends a rank whose allreduce cannot complete, on its own", why);
  if (done)
    printf("the child: the watchdog's line %.1f s, its end %.1f s after it started\n", message_at, ended_at);
  passed(done && WIFEXITED(status) && WEXITSTATUS(status) == 1, "the stuck child exits 1",
         WIFSIGNALED(status) ? "killed by a signal" : "another exit status (its output above)");
  snprintf(expected, sizeof(expected), "dlpar: rank 0 on %s: allreduce on the tp group (ranks 0) has not completed after ",
           host);
  for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    const size_t len = strlen(line), tail = strlen(suffix);
    if (strncmp(line, expected, strlen(expected)) == 0 && len > tail && strcmp(line + len - tail, suffix) == 0)
      lines++;
  }
  passed(lines == 1, "the watchdog's one line names the tp group and what to do", "no such line (its output above)");
}

int main(int argc, char **argv)
{
  dlpar_options options = {.backend = DLPAR_BACKEND_NCCL, .rendezvous_timeout_s = 60, .keep_signals = 1};
  nccl_log log = {.f = NULL};
  dlpar_ctx *ctx;
  cudaStream_t stream;
  char host[256];
  int rc;
  require_gpu();
  setenv("DLPAR_NCCL_ONE_RANK", "comm", 1);
  unsetenv("PMIX_NAMESPACE"); /* a plain run: one rank, grid 1x1 */
  unsetenv("DLPAR_VERSION");
  if (argc == 2 && strcmp(argv[1], "--stuck") == 0)
    return stuck_collective();
  snprintf(log.path, sizeof(log.path), "%s/test_nccl_gpu.%ld.nccl", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (long)getpid());
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "COLL", 1);
  setenv("NCCL_DEBUG_FILE", log.path, 1);
  rc = dlpar_init(0, NULL, &options, &ctx);
  check_init(ctx, rc);
  snprintf(host, sizeof(host), "%s", ctx->info.host);
  GPU_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
    check_device_collectives(ctx, &log, groups[g], DLPAR_FLOAT32, stream);
    check_device_collectives(ctx, &log, groups[g], DLPAR_BFLOAT16, stream);
    check_host_collectives(ctx, &log, groups[g]);
  }
  check_graph(ctx, &log);
  GPU_OR_EXIT(cudaStreamDestroy(stream));
  rc = dlpar_finalize(ctx);
  passed(rc == DLPAR_OK, "dlpar_finalize finalizes the communicators", "it reported an error (above)");
  if (log.f)
    fclose(log.f);
  unlink(log.path);
  check_watchdog(argv[0], host);
  return check_report("test_nccl_gpu");
}
