/* common/status.h: the status codes every dlpar function returns, and the
 * one-line error buffer convention (messages name the problem and the fix,
 * without the "dlpar: " prefix, which the printing caller adds). */
#ifndef DLPAR_STATUS_H
#define DLPAR_STATUS_H

#include <stddef.h>

typedef enum {
  DLPAR_OK = 0,
  DLPAR_WARN = 1,         /* accepted, but err holds a warning to print */
  DLPAR_ERR_INPUT = -1,   /* bad user or admin input */
  DLPAR_ERR_SYSTEM = -2,  /* a system call failed */
  DLPAR_ERR_PMIX = -3,
  DLPAR_ERR_MPI = -4,
  DLPAR_ERR_NCCL = -5,
  DLPAR_ERR_CUDA = -6,
  DLPAR_ERR_TIMEOUT = -7,
  DLPAR_ERR_STATE = -9,   /* called in the wrong state (a bug in the caller) */
} dlpar_status;

/* One error message: fixed size, always NUL-terminated. */
#define DLPAR_ERRLEN 512

#endif
