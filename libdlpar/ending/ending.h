/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/ending/ending.h: what watches a running step and what ends it.
 * end_step.c holds the one path every ending takes, fatal.c a condition
 * kept for the host, watchdog.c the watchdog, and stacks.c the stacks of a
 * hung step. */
#ifndef DLPAR_LIBDLPAR_ENDING_H
#define DLPAR_LIBDLPAR_ENDING_H

#include "libdlpar/internal.h"

/* ending/stacks.c: the stacks of a hung step, where SIGURG asks every rank
 * for its stack, as the file explains. arm installs the request's handler
 * after the rendezvous, because the header names rank and host. publish is
 * the watchdog's share of a dump, its signature through PMIx. request asks
 * every rank, waits for their signatures and prints the summary line; the
 * watchdog calls it before the step ends on a hang. */
int dlpar_stacks_arm(dlpar_ctx *ctx);
void dlpar_stacks_publish(dlpar_ctx *ctx);
void dlpar_stacks_request(dlpar_ctx *ctx);

/* ending/end_step.c: how libdlpar ends the step or the process, the one path of
 * every ending. It decides nothing; the callers do, as end_step.c's top
 * comment says, and dlpar.h lists every condition. */
typedef enum { DLPAR_LINE_TO_PRINT, DLPAR_LINE_PRINTED } dlpar_line_printed;
/* Ends the whole step. It prints "dlpar: line" unless it was printed
 * already, aborts the communicators within a bound, calls PMIx_Abort with
 * line, then exits with code, where 0 becomes 1. ctx may be NULL before
 * there is a context. */
void dlpar_end_step(dlpar_ctx *ctx, int code, const char *line, dlpar_line_printed printed)
    __attribute__((noreturn));
/* Ends this process alone, because the launcher is ending the step: a
 * stop signal to a rank that is ending it already. */
void dlpar_end_process(int code) __attribute__((noreturn));
/* Runs the backend's abort_comms once per context, on a thread of its own,
 * so that what waits on the communicators returns. It is waited for at
 * most 5 s and then left running, since the step is ending. */
void dlpar_abort_comms(dlpar_ctx *ctx);

/* ending/fatal.c: a condition kept for the host instead of ending the step now.
 * keep keeps the first one and returns false for a later one. A condition
 * is taken when a call returned it to the program. The context is spent
 * from then on. */
bool dlpar_fatal_keep(dlpar_ctx *ctx, int status, const char *line, bool taken);
/* DLPAR_OK, or DLPAR_ERR_STATE naming call when the context is spent. */
int dlpar_spent(dlpar_ctx *ctx, const char *call);

/* ending/watchdog.c */
int dlpar_watchdog_block_signals(dlpar_ctx *ctx);
/* Gets the pids of this node's other ranks, then starts the thread. It runs
 * after the rendezvous and before the backend's set-up, whose timeout names
 * those ranks too. */
int dlpar_watchdog_peers(dlpar_ctx *ctx);
int dlpar_watchdog_start(dlpar_ctx *ctx);
void dlpar_watchdog_stop(dlpar_ctx *ctx);
void dlpar_inflight_begin(dlpar_ctx *ctx, dlpar_group group, const char *op);
void dlpar_inflight_end(dlpar_ctx *ctx, dlpar_group group);
/* For a stalled collective or set-up of `group`: a rank of this node
 * found exited or stopped, else the group's ranks on other hosts. */
void dlpar_watchdog_suspects(const dlpar_ctx *ctx, dlpar_group group, char *out, size_t len);
/* "rank R on H: OP on the tp group (ranks ...) has not completed after S s: ..." */
void dlpar_timeout_message(const dlpar_ctx *ctx, dlpar_group group, const char *op, double waited, dlpar_error *err);
/* At finalize, waits for a posted stop agreement before the watchdog stops. */
int dlpar_stop_drain(dlpar_ctx *ctx);

#endif
