/* SPDX-License-Identifier: BSD-3-Clause */
/* common/status.h: the status codes every dlpar function returns (their
 * one home is the installed libdlpar/dlpar_status.h, so a program built
 * against the library sees the same), and the one-line error buffer convention (messages name the
 * problem and the fix, without the "dlpar: " prefix, which the printing
 * caller adds). */
#ifndef DLPAR_STATUS_H
#define DLPAR_STATUS_H

#include <stddef.h>

#include "libdlpar/dlpar_status.h"

/* Passing a status up, one call per statement (a debugger and a reader
 * see which call failed): DLPAR_TRY returns the call's status when it is
 * not DLPAR_OK; DLPAR_TRY_GOTO keeps it in rc and goes to the function's
 * one cleanup label. */
#define DLPAR_TRY(call)                                                                        \
  do {                                                                                         \
    const int try_rc_ = (call);                                                                \
    if (try_rc_ != DLPAR_OK)                                                                   \
      return try_rc_;                                                                          \
  } while (0)
#define DLPAR_TRY_GOTO(rc, call, label)                                                        \
  do {                                                                                         \
    if (((rc) = (call)) != DLPAR_OK)                                                           \
      goto label;                                                                              \
  } while (0)

/* One error message: fixed size, always NUL-terminated. */
#define DLPAR_ERRLEN 512

#endif
