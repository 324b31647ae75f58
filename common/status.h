/* SPDX-License-Identifier: BSD-3-Clause */
/* common/status.h: the status codes every dlpar function returns (their
 * one home is include/dlpar/dlpar_status.h, the bottom floor every
 * directory includes and libdlpar installs, so a program built against the
 * library sees the same), and the error that carries a status with its
 * one-line message (messages name the problem and the fix, without the
 * "dlpar: " prefix, which the printing caller adds). */
#ifndef DLPAR_STATUS_H
#define DLPAR_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#include "include/dlpar/dlpar_status.h"

/* The mark of a definition libdlpar.so exports (a function dlpar.h
 * declares). libdlpar/ and common/ are compiled with -fvisibility=hidden,
 * so the marked definitions are the export list, written once;
 * libdlpar.map gives them the version node (tests/unit/exports.sh checks
 * that they are dlpar.h's functions). */
#define DLPAR_API __attribute__((visibility("default")))

/* Passing a status up, one call per statement (a debugger and a reader
 * see which call failed): DLPAR_TRY returns the call's status when it is
 * not DLPAR_OK; DLPAR_TRY_GOTO(call, rc, label) keeps it in rc and goes to
 * the function's cleanup label. Every check macro of the code base takes
 * its arguments in one order, NCCL's: the call first, then what reading
 * its status needs (an NCCL communicator, the loaded cuBLAS), then where
 * the error goes (a context, a model, an err), then, for the GOTO twin,
 * the status variable and the label. Nothing is implied by a local name.
 *   X_TRY(call, ..., where)
 *                    on failure, return the status (a library's own status
 *                    translated, its words and file:line recorded in
 *                    `where` when there is one): MPI_TRY(call, ctx),
 *                    PMIX_TRY(call, ctx), CUDA_TRY(call, ctx),
 *                    NCCL_TRY(call, comm, ctx) (libdlpar),
 *                    MODEL_TRY(call, m), MODEL_TRY_COMM(call, m) (the CUDA
 *                    model), DL_TRY(call), DL_TRY_CUDA(call),
 *                    DL_TRY_CUBLAS(call), DL_TRY_CUDNN(call) (the kernels,
 *                    whose status carries no message);
 *   X_TRY_GOTO(call, ..., where, rc, label)
 *                    on failure, keep the status in rc and go to label:
 *                    DLPAR_TRY_GOTO(call, rc, label),
 *                    DL_TRY_GOTO(call, rc, label),
 *                    DL_TRY_CUBLAS_GOTO(call, rc, label) (the kernels),
 *                    CUBLAS_TRY_GOTO(call, calls, ctx, rc, label) (libdlpar),
 *                    H5_TRY_GOTO(call, context, err, rc, label) (the trainer);
 *   X_OR_EXIT(...)   tests and bench programs only: print, exit 1;
 *   CHECK*(...)      tests only: an assertion, counted.
 * A macro is written where a status only travels up; a hand-written `if`
 * only where the status is read, changed or has its own message. */
#define DLPAR_TRY(call)                                                                        \
  do {                                                                                         \
    const int try_rc_ = (call);                                                                \
    if (try_rc_ != DLPAR_OK)                                                                   \
      return try_rc_;                                                                          \
  } while (0)
#define DLPAR_TRY_GOTO(call, rc, label)                                                        \
  do {                                                                                         \
    if (((rc) = (call)) != DLPAR_OK)                                                           \
      goto label;                                                                              \
  } while (0)

/* One error message: fixed size, always NUL-terminated. */
#define DLPAR_ERRLEN 512

/* A failure as one value: its status and its one-line message.
 *
 * Where an error travels, the rule for its carrier:
 *  - A function that owns no long-lived state takes a `dlpar_error *err`
 *    argument (the plugin, common/, the trainer's config and data) and
 *    fills it with dlpar_error_set; its caller prints err->text or passes
 *    err up unchanged.
 *  - A function of an object that outlives the call (libdlpar's context,
 *    the trainer's model) records the failure in that object's `error`
 *    member with dlpar_fail, because its callers, the program and the
 *    other threads, ask the object afterwards (dlpar_last_error,
 *    m->error.text).
 *  - The status is always the return value too, so every caller can
 *    DLPAR_TRY without reading the message.
 * The message is written once, where the failure is first seen; the
 * callers above add nothing but, at the top, the program's prefix. */
typedef struct dlpar_error {
  int status;
  char text[DLPAR_ERRLEN];
} dlpar_error;

/* Records status and the formatted message, made one line (see
 * dlpar_one_line), in err (NULL: nowhere, the caller wants the status
 * only); returns status, so a failure reads
 *   return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: ...", ...); */
int dlpar_error_set(dlpar_error *err, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int dlpar_error_vset(dlpar_error *err, int status, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* The one setter for an object that carries its error in an `error`
 * member (libdlpar's dlpar_ctx, the trainer's model): records status and
 * the message in (holder)->error and returns status, so a failure reads
 *   return dlpar_fail(ctx, DLPAR_ERR_PMIX, "PMIx_Get(%s): %s", ...); */
#define dlpar_fail(holder, status, ...) dlpar_error_set(&(holder)->error, (status), __VA_ARGS__)

#endif
