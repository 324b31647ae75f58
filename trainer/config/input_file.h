/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/config/input_file.h: what every reader of user input shares: opening a
 * file the user named (config, statistics, data, checkpoint) only if it is a
 * regular file, without blocking (a FIFO, a directory or a device named like
 * one gets one line instead of a hang in open() or in the library that reads
 * it); messages quote the path with common/text.h's dlpar_show. */
#ifndef DLPAR_INPUT_FILE_H
#define DLPAR_INPUT_FILE_H

#include <stddef.h>
#include <sys/types.h>

#include "common/status.h"

/* A read-only descriptor of path and its size. On failure err holds
 * "PATH: CANNOT_OPEN" (the caller's words for a missing file) or
 * "PATH: not a regular file (...)". */
int input_file_open(const char *path, const char *cannot_open, int *fd, off_t *size, dlpar_error *err);
/* The same check alone, for libraries that open by name (HDF5). */
int input_file_check(const char *path, const char *cannot_open, dlpar_error *err);

#endif
