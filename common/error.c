/* SPDX-License-Identifier: BSD-3-Clause */
/* common/error.c: recording a failure, its status and its one-line message,
 * in a dlpar_error (see status.h). */
#include "config.h"

#include "status.h"

#include <stdio.h>

#include "text.h"

int dlpar_error_vset(dlpar_error *err, int status, const char *fmt, va_list ap)
{
  if (!err)
    return status;
  vsnprintf(err->text, sizeof(err->text), fmt, ap);
  dlpar_one_line(err->text);
  err->status = status;
  return status;
}

int dlpar_error_set(dlpar_error *err, int status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  dlpar_error_vset(err, status, fmt, ap);
  va_end(ap);
  return status;
}
