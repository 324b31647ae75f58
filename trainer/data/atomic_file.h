/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/atomic_file.h: files that are either complete or absent: written
 * to PATH.tmp.<pid>, flushed and fsync'ed, then renamed over PATH (and the
 * directory fsync'ed). A crash at any point leaves the previous PATH. */
#ifndef DLPAR_ATOMIC_FILE_H
#define DLPAR_ATOMIC_FILE_H

#include <limits.h>
#include <stdio.h>

#include "common/status.h"

typedef struct {
  char path[PATH_MAX], temp[PATH_MAX + 32];
  FILE *stream; /* NULL when the caller writes temp itself (HDF5) */
} atomic_file;

/* Opens the temp file as a stdio stream. */
int atomic_file_open(atomic_file *f, const char *path, dlpar_error *err);
/* Names the temp file only (the caller creates and closes it). */
void atomic_file_prepare(atomic_file *f, const char *path);
/* Flush, fsync, rename, fsync the directory. On error the temp is removed. */
int atomic_file_commit(atomic_file *f, dlpar_error *err);
void atomic_file_abandon(atomic_file *f);

#endif
