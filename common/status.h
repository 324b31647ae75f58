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
 * the function's cleanup label. The whole code base names its error
 * macros so:
 *   X_TRY(...)       on failure, return the status (a library's own status
 *                    translated, its words and file:line recorded where the
 *                    macro has a context): MPI_TRY, PMIX_TRY, CUDA_TRY,
 *                    NCCL_TRY (libdlpar), MODEL_TRY, MODEL_TRY_COMM (the
 *                    CUDA model), DL_TRY, DL_TRY_CUDA, DL_TRY_CUBLAS,
 *                    DL_TRY_CUDNN (the kernels);
 *   X_TRY_GOTO(call, ..., rc, label)
 *                    on failure, keep the status in rc and go to label;
 *                    as NCCL's NCCLCHECKGOTO, the status variable, the
 *                    label and (where the macro records a message) the
 *                    error are always arguments, never locals it assumes:
 *                    DLPAR_TRY_GOTO(call, rc, label),
 *                    CUBLAS_TRY_GOTO(call, calls, ctx, rc, label) (libdlpar),
 *                    H5_TRY_GOTO(call, context, err, rc, label) (the trainer);
 *   X_OR_EXIT(...)   tests and bench programs only: print, exit 1;
 *   CHECK*(...)      tests only: an assertion, counted. */
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

/* A failure as one value: its status and its one-line message. It travels
 * down the calls that can fail (a `dlpar_error *err` parameter, libdlpar's
 * ctx->error) and the caller that prints reads err.text. */
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

#endif
