/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/npy.h: NumPy .npy files (little-endian float32/float64, C order),
 * read and written directly: the tutorial's global_means/global_stds. */
#ifndef DLPAR_NPY_H
#define DLPAR_NPY_H

#include <stddef.h>
#include <stdio.h>

#include "common/status.h"

#define NPY_MAX_DIMS 8

typedef struct {
  int ndim;
  long shape[NPY_MAX_DIMS];
  long count;
  float *data; /* converted to float */
} npy_array;

/* A regular file only; every header field and the data's length checked. */
int npy_read(const char *path, npy_array *out, dlpar_error *err);
/* The same from an open stream of size bytes (path names it in messages). */
int npy_read_stream(FILE *f, long size, const char *path, npy_array *out, dlpar_error *err);
/* Writes float32 data of the given shape atomically (temp, fsync, rename). */
int npy_write(const char *path, const float *data, const long *shape, int ndim, dlpar_error *err);
void npy_free(npy_array *a);

#endif
