/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/ending/stacks.c: the stacks of a hung step. A stack request is
 * SIGURG, which is ignored by default, so a program without libdlpar loses
 * nothing. The watchdog sends it to every rank before it ends the step on
 * a hang, such as a collective past its timeout or a stopped rank. Anyone
 * can send it at any time with `scancel --signal=URG JOB.STEP`. Each rank
 * then writes its main thread's C stack to stderr, one block headed by
 * rank and host. A Python rank's stacks follow, because the Python module
 * registers faulthandler for SIGURG before libdlpar and this handler
 * chains to it. With a watchdog, each rank also publishes its stack's
 * signature through PMIx, which is where it waits and its frames'
 * functions. The rank that asked then prints one summary line. It names
 * the rank whose stack differs from the rest, which is the usual culprit,
 * and the ranks that gave none because they are stopped, dead or
 * unreached. A signal handler talks through one static mailbox. That is
 * libdlpar's second global beside watchdog.c's stray signal, for the same
 * reason. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "libdlpar/bootstrap/bootstrap.h"
#include "libdlpar/ending/ending.h"
#include "common/text.h"

/* A dump is one write(2) of at most PIPE_BUF bytes, which is atomic on a
 * pipe, so the blocks of ranks sharing one stderr do not interleave. It
 * holds the header and this many frames, and the rest is cut. */
#define STACK_FRAMES 32
#define STACK_BLOCK_BYTES 4096
/* A rank writes its stack at most once in this many seconds: several ranks
 * that time out together each ask. */
#define STACK_REPEAT_SECONDS 5.0
/* How long the asking rank waits for the others' signatures. Those not
 * read by then count as none. */
#define STACKS_WAIT_SECONDS 4.0
/* How long the asking rank lets the others write and publish before it
 * reads their signatures: PMIx caches a remote rank's keys at the first
 * read, so a read before the rank published would miss it for good. */
#define PUBLISH_WAIT_SECONDS 1.0
/* How long the ranks that asked but do not print the summary let the one that does. */
#define SUMMARY_GRACE_SECONDS 3.0
#define SIGNATURE_KEY "dlpar.stack"

static struct {
  atomic_int armed;
  pthread_t main_thread;
  char header[320];
  size_t header_len;
  struct sigaction previous;
  void *frames[STACK_FRAMES];
  int scratch_fd;              /* a memfd the frames are formatted into */
  char block[STACK_BLOCK_BYTES];
  atomic_int frame_count;      /* of the last dump; -1 while one is written */
  atomic_int fresh;            /* a dump the watchdog has not published */
  _Atomic double last_dump;
} mailbox;

static void chain_previous(int sig, siginfo_t *info, void *uctx)
{
  if ((mailbox.previous.sa_flags & SA_SIGINFO) && mailbox.previous.sa_sigaction)
    mailbox.previous.sa_sigaction(sig, info, uctx);
  else if (mailbox.previous.sa_handler != SIG_DFL && mailbox.previous.sa_handler != SIG_IGN)
    mailbox.previous.sa_handler(sig);
}

/* The header and the frames from the interrupted one on, past this handler
 * and the signal's trampoline, are formatted through the memfd and then
 * written at once. Async-signal-safe. */
static void write_block(int n)
{
  ssize_t got;
  if (ftruncate(mailbox.scratch_fd, 0) != 0 || lseek(mailbox.scratch_fd, 0, SEEK_SET) != 0)
    return;
  (void)!write(mailbox.scratch_fd, mailbox.header, mailbox.header_len);
  if (n > 2)
    backtrace_symbols_fd(mailbox.frames + 2, n - 2, mailbox.scratch_fd);
  if (lseek(mailbox.scratch_fd, 0, SEEK_SET) != 0)
    return;
  got = read(mailbox.scratch_fd, mailbox.block, sizeof(mailbox.block));
  if (got == (ssize_t)sizeof(mailbox.block)) /* cut at the last whole line */
    while (got > 0 && mailbox.block[got - 1] != '\n')
      got--;
  if (got > 0)
    (void)!write(STDERR_FILENO, mailbox.block, (size_t)got);
}

/* Async-signal-safe but for backtrace, which dlpar_stacks_arm loaded
 * first, because its lazy libgcc load is what is unsafe. */
static void on_stack_request(int sig, siginfo_t *info, void *uctx)
{
  const double now = dlpar_now(); /* clock_gettime: async-signal-safe */
  int n;
  if (!pthread_equal(pthread_self(), mailbox.main_thread)) {
    pthread_kill(mailbox.main_thread, sig); /* the main thread's stack is the one that tells */
    return;
  }
  if (now - atomic_load(&mailbox.last_dump) < STACK_REPEAT_SECONDS)
    return;
  atomic_store(&mailbox.last_dump, now);
  atomic_store(&mailbox.frame_count, -1);
  n = backtrace(mailbox.frames, STACK_FRAMES);
  write_block(n);
  atomic_store(&mailbox.frame_count, n);
  atomic_store(&mailbox.fresh, 1);
  chain_previous(sig, info, uctx);
}

int dlpar_stacks_arm(dlpar_ctx *ctx)
{
  struct sigaction request;
  void *warm[2];
  if (atomic_exchange(&mailbox.armed, 1))
    return DLPAR_OK; /* one context per process answers */
  backtrace(warm, 2);
  mailbox.scratch_fd = memfd_create("dlpar-stack", MFD_CLOEXEC);
  if (mailbox.scratch_fd < 0)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "memfd_create for the stack dumps: %s", strerror(errno));
  mailbox.main_thread = pthread_self();
  snprintf(mailbox.header, sizeof(mailbox.header), "dlpar: stack of rank %d on %s (pid %ld), main thread:\n",
           ctx->info.rank, ctx->info.host, (long)getpid());
  mailbox.header_len = strlen(mailbox.header);
  atomic_store(&mailbox.last_dump, -STACK_REPEAT_SECONDS);
  memset(&request, 0, sizeof(request));
  request.sa_sigaction = on_stack_request;
  request.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&request.sa_mask);
  if (sigaction(SIGURG, &request, &mailbox.previous) != 0)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "sigaction(SIGURG) for the stack requests failed");
  ctx->stacks_armed = true;
  return DLPAR_OK;
}

/* A frame's function, or its object's name where it has no symbol, and
 * whether it is in the program itself. */
static const char *frame_name(void *pc, const void *program, bool *in_program)
{
  Dl_info where;
  const char *slash;
  *in_program = false;
  if (!dladdr(pc, &where))
    return "?";
  *in_program = where.dli_fbase == program;
  if (where.dli_sname)
    return where.dli_sname;
  slash = where.dli_fname ? strrchr(where.dli_fname, '/') : NULL;
  return slash ? slash + 1 : where.dli_fname ? where.dli_fname : "?";
}

/* The program's frames from main inwards, main being the first of its
 * frames that the C library's start-up called. They run up to and include
 * the first call out of the program or into libdlpar's API. That says
 * where the program is, without the libraries' own waiting loops, which
 * differ by the instant of the dump. */
static void program_frames(int count, char *out, size_t len, size_t used)
{
  const char *names[STACK_FRAMES];
  bool in_program[STACK_FRAMES];
  Dl_info self;
  const void *program = dladdr((void *)getauxval(AT_PHDR), &self) ? self.dli_fbase : NULL;
  int start = count - 1;
  for (int i = 2; i < count; i++) /* as the dump: past the handler and the trampoline */
    names[i] = frame_name(mailbox.frames[i], program, &in_program[i]);
  for (int i = count - 2; i >= 2; i--)
    if (in_program[i] && !in_program[i + 1]) {
      start = i;
      break;
    }
  for (int i = start; i >= 2 && used < len; i--) {
    used += (size_t)snprintf(out + used, len - used, " %s", names[i]);
    if (!in_program[i] || strncmp(names[i], "dlpar_", 6) == 0)
      break;
  }
}

/* The signature reads "where | fn fn fn". First comes the collective this
 * rank waits in, on MPI only, since on NCCL the host does not wait in
 * them. Then come the program's frames, with addresses left out so that
 * ranks waiting in the same place read alike. */
static void signature(dlpar_ctx *ctx, int count, char *out, size_t len)
{
  size_t used = (size_t)snprintf(out, len, "not in a libdlpar collective |");
  for (int g = 0; g < 3; g++) {
    if (atomic_load(&ctx->inflight[g].active)) {
      char group[128];
      dlpar_describe_group(ctx, (dlpar_group)g, group, sizeof(group));
      used = (size_t)snprintf(out, len, "in %s on the %s |", ctx->inflight[g].op, group);
      break;
    }
  }
  if (used < len)
    program_frames(count, out, len, used);
}

/* Publishes the last dump's signature, marked A when this rank asked for
 * the stacks, else -. The lowest rank that asked prints the summary. */
static void publish(dlpar_ctx *ctx, bool asked)
{
  char sig[DLPAR_ERRLEN];
  const int count = atomic_load(&mailbox.frame_count);
  if (count <= 0)
    return;
  sig[0] = asked ? 'A' : '-';
  signature(ctx, count, sig + 1, sizeof(sig) - 1);
  if (dlpar_pmix_put_text(ctx, SIGNATURE_KEY, sig) != DLPAR_OK)
    dlpar_eprintf("dlpar: rank %d: PMIx refused its stack's signature: no summary will count it\n", ctx->info.rank);
}

void dlpar_stacks_publish(dlpar_ctx *ctx)
{
  if (ctx->stacks_armed && ctx->pmix && atomic_exchange(&mailbox.fresh, 0))
    publish(ctx, false);
}

/* Sends SIGURG to every rank of the step, or to this node's. In a Slurm
 * step, `scancel --signal=URG` reaches every task, this one's too.
 * Elsewhere, as under dlpar-run on one node, each rank of this node gets
 * it by its pid. */
static bool send_requests(dlpar_ctx *ctx)
{
  const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
  char target[64];
  int status = 1;
  pid_t pid;
  if (job && step && snprintf(target, sizeof(target), "%s.%s", job, step) < (int)sizeof(target)) {
    char *argv[] = {"scancel", "--quiet", "--signal=URG", target, NULL};
    if (posix_spawnp(&pid, "scancel", NULL, NULL, argv, environ) == 0 && waitpid(pid, &status, 0) == pid &&
        WIFEXITED(status) && WEXITSTATUS(status) == 0)
      return true;
  }
  kill(getpid(), SIGURG);
  for (int rank = 0; ctx->peer_pid && rank < ctx->info.size; rank++)
    if (ctx->peer_pid[rank])
      kill((pid_t)ctx->peer_pid[rank], SIGURG);
  return false;
}

/* The signatures' verdict names the one rank whose stack differs from all
 * the others, when those agree, and the ranks without one. */
static void summarise(dlpar_ctx *ctx, char (*sigs)[DLPAR_ERRLEN], const bool *have, char *line, size_t len)
{
  int odd = -1, majority = -1, majority_count = 0, present = 0;
  size_t used;
  for (int r = 0; r < ctx->info.size; r++) {
    int alike = 0;
    if (!have[r])
      continue;
    present++;
    for (int s = 0; s < ctx->info.size; s++)
      alike += have[s] && strcmp(sigs[r] + 1, sigs[s] + 1) == 0; /* past the mark */
    if (alike > majority_count)
      majority = r, majority_count = alike;
  }
  for (int r = 0; r < ctx->info.size && majority >= 0; r++)
    if (have[r] && strcmp(sigs[r] + 1, sigs[majority] + 1) != 0)
      odd = odd == -1 ? r : -2;
  if (odd >= 0 && majority_count == present - 1)
    used = (size_t)snprintf(line, len, "stacks: rank %d (%s) differs from the other %d (%s): look there first",
                            odd, ctx->hosts[odd], majority_count, sigs[odd] + 1);
  else
    used = (size_t)snprintf(line, len, "stacks: %d of %d ranks wrote one, %s", present, ctx->info.size,
                            odd == -1 ? "all alike" : "no single rank differs");
  if (present < ctx->info.size && used < len) {
    used += (size_t)snprintf(line + used, len - used, "; none from");
    for (int r = 0, listed = 0; r < ctx->info.size && used < len && listed < 8; r++)
      if (!have[r])
        used += (size_t)snprintf(line + used, len - used, "%s rank %d (%s)", listed++ ? "," : "", r, ctx->hosts[r]);
    if (used < len)
      snprintf(line + used, len - used, " (stopped, dead or not reached: see the lines above)");
  }
}

/* Several ranks time out together and each asks. The lowest of those that
 * asked prints the summary, and the others leave it the time. A lower rank
 * that asks later may print a second one. */
static bool prints_summary(dlpar_ctx *ctx, char (*sigs)[DLPAR_ERRLEN], const bool *have)
{
  for (int rank = 0; rank < ctx->info.rank; rank++)
    if (have[rank] && sigs[rank][0] == 'A')
      return false;
  return true;
}

/* This rank's stack was written, now or within the repeat window. */
static bool own_dump_done(void)
{
  return atomic_load(&mailbox.frame_count) > 0 &&
         dlpar_now() - atomic_load(&mailbox.last_dump) < STACK_REPEAT_SECONDS;
}

void dlpar_stacks_request(dlpar_ctx *ctx)
{
  const double deadline = dlpar_now() + STACKS_WAIT_SECONDS;
  const struct timespec pause = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
  char (*sigs)[DLPAR_ERRLEN] = NULL;
  bool *have = NULL, whole_step;
  char line[DLPAR_ERRLEN];
  if (!ctx->stacks_armed)
    return;
  whole_step = send_requests(ctx);
  while (!own_dump_done() && dlpar_now() < deadline)
    nanosleep(&pause, NULL);
  atomic_store(&mailbox.fresh, 0);
  if (ctx->pmix)
    publish(ctx, true);
  nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = (long)(PUBLISH_WAIT_SECONDS * 1e9)}, NULL);
  sigs = calloc((size_t)ctx->info.size, sizeof(*sigs));
  have = calloc((size_t)ctx->info.size, sizeof(*have));
  if (!sigs || !have || !ctx->pmix)
    goto out;
  for (int missing = ctx->info.size; missing > 0 && dlpar_now() < deadline; nanosleep(&pause, NULL)) {
    missing = 0;
    for (int rank = 0; rank < ctx->info.size && dlpar_now() < deadline; rank++) {
      if (have[rank] || (!whole_step && ctx->rank_node[rank] != ctx->info.node))
        continue;
      have[rank] = dlpar_pmix_get_text(ctx, rank, SIGNATURE_KEY, 1, sigs[rank], sizeof(sigs[rank])) == DLPAR_OK;
      missing += !have[rank];
    }
  }
  summarise(ctx, sigs, have, line, sizeof(line));
  if (prints_summary(ctx, sigs, have))
    dlpar_eprintf("dlpar: %s\n", line);
  else
    nanosleep(&(struct timespec){.tv_sec = (time_t)SUMMARY_GRACE_SECONDS}, NULL);
out:
  free(sigs);
  free(have);
}
