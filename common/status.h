/* SPDX-License-Identifier: BSD-3-Clause */
/* common/status.h: the status codes every dlpar function returns, and the
 * error that carries a status with its one-line message. The codes' one
 * home is include/dlpar/dlpar_status.h, the bottom floor that every
 * directory includes and libdlpar installs, so a program built against the
 * library sees the same codes. Messages name the problem and the fix,
 * without the "dlpar: " prefix, which the printing caller adds. */
#ifndef DLPAR_STATUS_H
#define DLPAR_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#include "include/dlpar/dlpar_status.h"

/* The mark of a definition libdlpar.so exports, which is a function that
 * dlpar.h declares. libdlpar/ and common/ are compiled with
 * -fvisibility=hidden, so the marked definitions are the export list,
 * written once. libdlpar.map gives them the version node, and
 * tests/unit/exports.sh checks that they are dlpar.h's functions. */
#define DLPAR_API __attribute__((visibility("default")))

/* Passing a status up takes one call per statement, so that a debugger and
 * a reader see which call failed. DLPAR_TRY returns the call's status when
 * it is not DLPAR_OK. DLPAR_TRY_GOTO(call, rc, label) keeps it in rc and
 * goes to the function's cleanup label. Every check macro of the code base
 * takes its arguments in one order, NCCL's. The call comes first, then
 * what reading its status needs, such as an NCCL communicator or the loaded
 * cuBLAS. Then comes where the error goes, a context, a model or an err,
 * and then, for the GOTO twin, the status variable and the label. Nothing
 * is implied by a local name.
 *   X_TRY(call, ..., where)
 *                    On failure, return the status. A library's own status
 *                    is translated, and its words and file:line are
 *                    recorded in `where` when there is one.
 *                    libdlpar has MPI_TRY(call, ctx), PMIX_TRY(call, ctx),
 *                    CUDA_TRY(call, ctx) and NCCL_TRY(call, comm, ctx).
 *                    The CUDA model has MODEL_TRY(call, m) and
 *                    MODEL_TRY_COMM(call, m). The kernels, whose status
 *                    carries no message, have DL_TRY(call),
 *                    DL_TRY_CUDA(call), DL_TRY_CUBLAS(call) and
 *                    DL_TRY_CUDNN(call).
 *   X_TRY_GOTO(call, ..., where, rc, label)
 *                    On failure, keep the status in rc and go to label.
 *                    There are DLPAR_TRY_GOTO(call, rc, label) and, in the
 *                    kernels, DL_TRY_GOTO(call, rc, label) and
 *                    DL_TRY_CUBLAS_GOTO(call, rc, label). libdlpar has
 *                    CUBLAS_TRY_GOTO(call, calls, ctx, rc, label), and the
 *                    trainer H5_TRY_GOTO(call, context, err, rc, label).
 *   X_OR_EXIT(...)   In tests and bench programs only, print and exit 1.
 *   CHECK*(...)      In tests only, an assertion that is counted.
 * A macro is written where a status only travels up. A hand-written `if`
 * is written only where the status is read, changed or has its own
 * message. */
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
 *    argument and fills it with dlpar_error_set. Its caller prints
 *    err->text or passes err up unchanged. The plugin, common/, and the
 *    trainer's config and data work so.
 *  - A function of an object that outlives the call, such as libdlpar's
 *    context or the trainer's model, records the failure in that object's
 *    `error` member with dlpar_fail. Its callers, the program and the
 *    other threads, ask the object afterwards, through dlpar_last_error or
 *    m->error.text.
 *  - The status is always the return value too, so every caller can
 *    DLPAR_TRY without reading the message.
 * The message is written once, where the failure is first seen; the
 * callers above add nothing but, at the top, the program's prefix. */
typedef struct dlpar_error {
  int status;
  char text[DLPAR_ERRLEN];
} dlpar_error;

/* Records status and the formatted message in err, made one line by
 * dlpar_one_line. With err NULL it records nothing, for a caller that
 * wants the status only. It returns status, so a failure reads
 *   return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: ...", ...); */
int dlpar_error_set(dlpar_error *err, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int dlpar_error_vset(dlpar_error *err, int status, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* The one setter for an object that carries its error in an `error`
 * member, such as libdlpar's dlpar_ctx or the trainer's model. It records
 * status and the message in holder->error and returns status, so a failure reads
 *   return dlpar_fail(ctx, DLPAR_ERR_PMIX, "PMIx_Get(%s): %s", ...); */
#define dlpar_fail(holder, status, ...) dlpar_error_set(&(holder)->error, (status), __VA_ARGS__)

#endif
