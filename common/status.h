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

/* One error message: fixed size, always NUL-terminated. */
#define DLPAR_ERRLEN 512

#endif
