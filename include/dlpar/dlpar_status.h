/* SPDX-License-Identifier: BSD-3-Clause */
/* dlpar_status.h: the status codes of every dlpar function, installed
 * beside dlpar.h (which includes it) and shared with the plugin and the
 * tools through common/status.h, so all agree on one set. */
#ifndef DLPAR_STATUS_CODES_H
#define DLPAR_STATUS_CODES_H

/* What every dlpar function returns: 0, or a negative error whose one-line
 * message (the problem and the fix) dlpar_last_error() holds. The plugin
 * and the tools use the same codes. */
typedef enum {
  DLPAR_OK = 0,
  DLPAR_WARN = 1,         /* accepted, but the message holds a warning to print */
  DLPAR_DONE = 2,         /* dlpar_init under --dl-check=only: every check passed and nothing else is to run:
                             dlpar_finalize, then exit 0 */
  DLPAR_ERR_INPUT = -1,   /* bad user or admin input */
  DLPAR_ERR_SYSTEM = -2,  /* a system call failed */
  DLPAR_ERR_PMIX = -3,
  DLPAR_ERR_MPI = -4,
  DLPAR_ERR_NCCL = -5,
  DLPAR_ERR_CUDA = -6,
  DLPAR_ERR_TIMEOUT = -7,
  DLPAR_ERR_CHECK = -8,   /* dlpar_init: a pre-flight check (--dl-check) failed; rank 0 printed the table:
                             dlpar_finalize, then exit 1 */
  DLPAR_ERR_STATE = -9,   /* called in the wrong state (a bug in the caller) */
} dlpar_status;

#endif
