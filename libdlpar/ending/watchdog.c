/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/ending/watchdog.c: a thread that keeps a step from hanging. Every
 * 100 ms it asks the backend for asynchronous errors and for collectives
 * that exceeded the timeout, and then the step ends with a message naming
 * the group. It also receives the stop signals. SIGTERM, SIGINT and SIGUSR1
 * are blocked in every thread, before PMIx, MPI or CUDA start theirs, and
 * read from a signalfd here. Threads that libraries started before
 * dlpar_init do not block them; OpenBLAS, for one, starts its pool when it
 * is loaded. So a handler catches the signals those threads get and leaves
 * them in `stray_signal`, which the watchdog reads too. That is the one
 * global in libdlpar, because a signal handler can only talk through one.
 * The first signal asks the program to stop through dlpar_stop_requested,
 * and a second one ends it at once. A program that keeps its signals,
 * through dlpar_options.keep_signals or DLPAR_SIGNALS=keep, has none of
 * this: no mask, no handler and no signalfd. A rank that is ending the
 * step with dlpar_abort or dlpar_abort_shared exits at the first signal,
 * silently. Once a second the watchdog also looks at the other ranks of
 * its node in /proc, and one that stays stopped ends the step, by name.
 * This file owns the policy of what it finds, and decides there, once per
 * condition. on_stop_signal decides for the signals, and this process
 * ends. on_finding decides for a collective past its timeout, an
 * asynchronous error or a rank stopped too long. The step then ends now,
 * after every rank's stack on a hang. With the host's grace, the condition
 * is instead kept in fatal.c, and the step ends here only when the grace
 * passes untaken. Both end through end_step.c. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "libdlpar/bootstrap/bootstrap.h"
#include "libdlpar/ending/ending.h"
#include "common/text.h"

/* Groups up to this size get their suspects listed by rank. */
#define DLPAR_SUSPECTS_MAX 16

static volatile sig_atomic_t stray_signal;

static void catch_stray_signal(int sig)
{
  stray_signal = sig;
}

static sigset_t stop_signal_set(void)
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  return set;
}

int dlpar_watchdog_block_signals(dlpar_ctx *ctx)
{
  sigset_t set = stop_signal_set();
  struct sigaction catcher;
  memset(&catcher, 0, sizeof(catcher));
  catcher.sa_handler = catch_stray_signal;
  catcher.sa_flags = SA_RESTART;
  sigemptyset(&catcher.sa_mask);
  sigaction(SIGTERM, &catcher, NULL);
  sigaction(SIGINT, &catcher, NULL);
  sigaction(SIGUSR1, &catcher, NULL);
  if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "cannot block the stop signals");
  ctx->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (ctx->signal_fd < 0)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "signalfd: %s", strerror(errno));
  return DLPAR_OK;
}

/* The one decision on a stop signal. The first asks the program to stop.
 * A second one ends the whole step now: a launcher may have merged the two
 * signals into one at other ranks, which would otherwise wait for this one
 * at the stop's agreement until the collective timeout. Any signal while
 * this rank is ending the step already ends this process alone. */
static void on_stop_signal(dlpar_ctx *ctx, int sig)
{
  const int exit_code = atomic_load(&ctx->quiet_exit_code);
  if (exit_code)
    dlpar_end_process(exit_code);
  if (atomic_fetch_add(&ctx->stop_signals, 1) > 0) {
    dlpar_eprintf("dlpar: rank %d: second %s: ending the step now\n", ctx->info.rank, strsignal(sig));
    dlpar_end_step(ctx, 128 + sig, NULL, DLPAR_LINE_PRINTED);
  }
  dlpar_eprintf("dlpar: rank %d: %s received: stopping at the next step boundary (again to end the step now)\n",
                ctx->info.rank, strsignal(sig));
}

static void read_signals(dlpar_ctx *ctx)
{
  struct signalfd_siginfo info;
  const int stray = stray_signal;
  while (ctx->signal_fd >= 0 && read(ctx->signal_fd, &info, sizeof(info)) == (ssize_t)sizeof(info))
    on_stop_signal(ctx, (int)info.ssi_signo);
  if (stray) {
    stray_signal = 0;
    on_stop_signal(ctx, stray);
  }
}

/* Process pid's state letter in /proc, or 'X' when it is gone. T means
 * stopped by SIGSTOP or SIGTSTP, and Z or X exited but not yet reaped. */
static char process_state(long pid)
{
  char stat[512];
  const char *fields = dlpar_proc_stat_fields(pid, stat, sizeof(stat));
  return fields ? fields[0] : 'X';
}

/* Once a second, this looks for ranks of this node stopped by SIGSTOP or
 * SIGTSTP, though not by a debugger's ptrace stop. One that stays stopped
 * past stopped_timeout ends the step. The lowest running rank of the node
 * names them, so one line tells which. Polls are counted rather than wall
 * time, so when scontrol suspends the whole node this thread is stopped
 * too and counts nothing. Stopped ranks elsewhere, as on a hung node, are
 * found by the collective timeout. */
static int check_stopped_peers(dlpar_ctx *ctx, dlpar_error *err)
{
  int reporter = ctx->info.rank, culprit = -1;
  for (int rank = 0; rank < ctx->info.size; rank++) {
    if (!ctx->peer_pid[rank])
      continue;
    ctx->peer_stopped_polls[rank] = process_state(ctx->peer_pid[rank]) == 'T' ? ctx->peer_stopped_polls[rank] + 1 : 0;
    if (ctx->peer_stopped_polls[rank] == 0 && rank < reporter)
      reporter = rank;
    if (culprit < 0 && ctx->peer_stopped_polls[rank] > ctx->stopped_timeout)
      culprit = rank;
  }
  if (culprit < 0 || reporter != ctx->info.rank)
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_ERR_TIMEOUT, "rank %d (pid %ld) on %s has been stopped for %d s (SIGSTOP, "
                         "SIGTSTP): ending the step (send it SIGCONT sooner; DLPAR_STOPPED_TIMEOUT=%g s)", culprit,
                         ctx->peer_pid[culprit], ctx->info.host, ctx->peer_stopped_polls[culprit] - 1,
                         ctx->stopped_timeout);
}

void dlpar_watchdog_suspects(const dlpar_ctx *ctx, dlpar_group group, char *out, size_t len)
{
  const int me = ctx->info.rank;
  const int n = group == DLPAR_GROUP_TP ? ctx->grid.tp : group == DLPAR_GROUP_DP ? ctx->grid.dp : ctx->info.size;
  int ranks[DLPAR_SUSPECTS_MAX], remote = 0;
  size_t used;
  if (n > DLPAR_SUSPECTS_MAX || !ctx->peer_pid) {
    snprintf(out, len, "a rank of the group died or is stuck");
    return;
  }
  dlpar_grid_members(&ctx->grid, group, me, ranks);
  for (int i = 0; i < n; i++) {
    /* Read now as well as at the polls. Before the watchdog thread runs, as
     * when an NCCL set-up timed out, no poll has counted yet. */
    const char state = ctx->peer_pid[ranks[i]] ? process_state(ctx->peer_pid[ranks[i]]) : 'R';
    if (state == 'Z' || state == 'X') {
      snprintf(out, len, "rank %d (pid %ld) on this host has exited", ranks[i], ctx->peer_pid[ranks[i]]);
      return;
    }
    if (ctx->peer_stopped_polls[ranks[i]] > 0 || state == 'T') {
      snprintf(out, len, "rank %d (pid %ld) on this host is stopped", ranks[i], ctx->peer_pid[ranks[i]]);
      return;
    }
  }
  used = (size_t)snprintf(out, len, "the group's ranks on this host are running; look at");
  for (int i = 0; i < n && used < len; i++) {
    if (ctx->rank_node[ranks[i]] != ctx->rank_node[me])
      used += (size_t)snprintf(out + used, len - used, "%s rank %d (%s)", remote++ ? "," : "", ranks[i],
                               ctx->hosts[ranks[i]]);
  }
  if (!remote)
    snprintf(out, len, "every rank of the group runs on this host and one of them is stuck");
}

void dlpar_timeout_message(const dlpar_ctx *ctx, dlpar_group group, const char *op, double waited, dlpar_error *err)
{
  char name[128], suspects[256];
  dlpar_describe_group(ctx, group, name, sizeof(name));
  dlpar_watchdog_suspects(ctx, group, suspects, sizeof(suspects));
  dlpar_error_set(err, DLPAR_ERR_TIMEOUT,
                  "rank %d on %s: %s on the %s has not completed after %.0f s: %s (see that rank's output; raise "
                  "DLPAR_COLLECTIVE_TIMEOUT if the step is just slow)", ctx->info.rank, ctx->info.host, op, name,
                  waited, suspects);
}

/* The step ends on what the watchdog found. Its line is printed, then, for
 * a hang, every rank's stack and the summary from stacks.c, then the end. */
static void end_on_finding(dlpar_ctx *ctx, int status, const char *line)
{
  dlpar_eprintf("dlpar: %s\n", line);
  if (status == DLPAR_ERR_TIMEOUT)
    dlpar_stacks_request(ctx);
  dlpar_end_step(ctx, 1, line, DLPAR_LINE_PRINTED);
}

/* The one decision on what the watchdog finds: without a grace the step
 * ends now; with one, the first condition is kept for the host and the
 * communicators are aborted, so that what waits on them returns. */
static void on_finding(dlpar_ctx *ctx, int status, const char *line)
{
  if (ctx->fatal_grace <= 0)
    end_on_finding(ctx, status, line);
  if (dlpar_fatal_keep(ctx, status, line, false))
    dlpar_abort_comms(ctx);
}

/* A kept condition the host has not taken within the grace ends the step
 * as it would have without one. */
static void on_grace_passed(dlpar_ctx *ctx)
{
  if (!atomic_load(&ctx->fatal_taken) && dlpar_now() - ctx->fatal_at > ctx->fatal_grace)
    end_on_finding(ctx, atomic_load(&ctx->fatal_status), ctx->fatal_line);
}

static void *watchdog_main(void *arg)
{
  dlpar_ctx *ctx = arg;
  dlpar_error err = {0};
  struct pollfd fd = {.fd = ctx->signal_fd, .events = POLLIN};
  int rc;
  for (long polls = 1; !atomic_load(&ctx->watchdog_stop); polls++) {
    poll(&fd, 1, 100);
    read_signals(ctx);
    dlpar_stacks_publish(ctx);
    if (atomic_load(&ctx->fatal_status)) { /* kept for the host: only its grace is watched */
      on_grace_passed(ctx);
      continue;
    }
    rc = ctx->backend->poll(ctx, dlpar_now(), &err);
    if (rc == DLPAR_OK && polls % 10 == 0)
      rc = check_stopped_peers(ctx, &err);
    if (rc != DLPAR_OK)
      on_finding(ctx, rc, err.text);
  }
  return NULL;
}

int dlpar_watchdog_peers(dlpar_ctx *ctx)
{
  ctx->peer_pid = calloc((size_t)ctx->info.size, sizeof(long));
  ctx->peer_stopped_polls = calloc((size_t)ctx->info.size, sizeof(int));
  if (!ctx->peer_pid || !ctx->peer_stopped_polls)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "out of memory for the watchdog");
  return dlpar_pmix_peer_pids(ctx) != DLPAR_OK ? DLPAR_ERR_PMIX : DLPAR_OK;
}

int dlpar_watchdog_start(dlpar_ctx *ctx)
{
  if (pthread_create(&ctx->watchdog, NULL, watchdog_main, ctx) != 0)
    return dlpar_fail(ctx, DLPAR_ERR_SYSTEM, "cannot start the watchdog thread");
  ctx->watchdog_running = true;
  return DLPAR_OK;
}

void dlpar_watchdog_stop(dlpar_ctx *ctx)
{
  if (ctx->watchdog_running) {
    atomic_store(&ctx->watchdog_stop, 1);
    pthread_join(ctx->watchdog, NULL);
    ctx->watchdog_running = false;
  }
  if (ctx->signal_fd >= 0)
    close(ctx->signal_fd);
  ctx->signal_fd = -1;
  free(ctx->peer_pid);
  free(ctx->peer_stopped_polls);
  ctx->peer_pid = NULL;
  ctx->peer_stopped_polls = NULL;
}

void dlpar_inflight_begin(dlpar_ctx *ctx, dlpar_group group, const char *op)
{
  ctx->inflight[group].op = op;
  atomic_store(&ctx->inflight[group].since, dlpar_now());
  atomic_store(&ctx->inflight[group].active, 1);
}

void dlpar_inflight_end(dlpar_ctx *ctx, dlpar_group group)
{
  atomic_store(&ctx->inflight[group].active, 0);
  ctx->wait_seconds += dlpar_now() - atomic_load(&ctx->inflight[group].since);
}

/* The posted agreement's answer, or 0 when none is posted. */
static int wait_posted_stop(dlpar_ctx *ctx, int *stop)
{
  *stop = 0;
  if (!ctx->stop_posted)
    return DLPAR_OK;
  ctx->stop_posted = false;
  return ctx->backend->stop_wait(ctx, stop);
}

DLPAR_API int dlpar_stop_requested(dlpar_ctx *ctx, void *stream, int *stop)
{
  *stop = 0;
  if (!ctx->backend)
    return dlpar_fail(ctx, DLPAR_ERR_STATE, "a stop agreement needs dlpar_init's collectives (not "
                      "dlpar_init_bootstrap)");
  DLPAR_TRY(wait_posted_stop(ctx, stop));
  if (*stop)
    return DLPAR_OK;
  DLPAR_TRY(ctx->backend->stop_post(ctx, atomic_load(&ctx->stop_signals) > 0, stream));
  ctx->stop_posted = true;
  return DLPAR_OK;
}

int dlpar_stop_drain(dlpar_ctx *ctx)
{
  int ignored;
  return wait_posted_stop(ctx, &ignored);
}
