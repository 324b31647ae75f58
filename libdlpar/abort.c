/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/abort.c: ending the whole step from any rank (dlpar_abort: the
 * communicators aborted, for at most ABORT_COMMS_SECONDS, then PMIx), and
 * ending it with a line every rank found the same (dlpar_abort_shared: rank
 * 0 prints it, the others wait for the launcher's signal). */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "libdlpar/internal.h"
#include "common/text.h"

/* How long ranks other than 0 wait for rank 0 to report an error they all found. */
#define SHARED_ERROR_GRACE_SECONDS 10.0
/* How long the communicators' abort may take before the step ends without
 * it: NCCL's waits for its streams, which a kernel queued before the stuck
 * collective can hold for ever (a GPU that hangs; tests/gpu/test_nccl_gpu). */
#define ABORT_COMMS_SECONDS 5.0

typedef struct {
  dlpar_ctx *ctx;
  atomic_int done;
} comms_abort;

static void *abort_comms_main(void *arg)
{
  comms_abort *job = arg;
  job->ctx->backend->abort_comms(job->ctx);
  atomic_store(&job->done, 1);
  return NULL;
}

/* The backend's abort_comms on a thread of its own, waited for at most
 * ABORT_COMMS_SECONDS (then left running: the process is about to end).
 * job lives in dlpar_abort's frame, which never returns. */
static void abort_comms_bounded(dlpar_ctx *ctx, comms_abort *job)
{
  const struct timespec pause = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
  const double deadline = dlpar_now() + ABORT_COMMS_SECONDS;
  pthread_t thread;
  job->ctx = ctx;
  atomic_init(&job->done, 0);
  if (!ctx->backend || !ctx->backend->abort_comms)
    return;
  if (pthread_create(&thread, NULL, abort_comms_main, job) != 0)
    abort_comms_main(job); /* no thread to spare: unbounded, the only way left */
  else
    pthread_detach(thread);
  while (!atomic_load(&job->done) && dlpar_now() < deadline)
    nanosleep(&pause, NULL);
}

DLPAR_API void dlpar_abort(dlpar_ctx *ctx, int code, const char *message)
{
  comms_abort job;
  atomic_store(&ctx->quiet_exit_code, code ? code : 1); /* the launcher's signal that ends the step */
  if (message)
    dlpar_eprintf("dlpar: %s\n", message);
  abort_comms_bounded(ctx, &job);
  dlpar_pmix_abort(ctx, code, message ? message : "aborted by the program");
}

DLPAR_API void dlpar_abort_shared(dlpar_ctx *ctx, int code, const char *line)
{
  const double deadline = dlpar_now() + SHARED_ERROR_GRACE_SECONDS;
  const struct timespec poll_interval = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
  const int status = code ? code : 1;
  if (ctx->info.rank != 0) {
    atomic_store(&ctx->quiet_exit_code, status); /* the launcher's signal after rank 0's abort */
    while (dlpar_now() < deadline && atomic_load(&ctx->stop_signals) == 0)
      nanosleep(&poll_interval, NULL);
    if (atomic_load(&ctx->stop_signals) > 0) /* it came before quiet_exit_code was set */
      _exit(status);
  }
  dlpar_eprintf("%s\n", line);
  dlpar_abort(ctx, code, NULL);
}
