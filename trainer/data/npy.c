/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/npy.c: .npy files (see npy.h). Format: magic "\x93NUMPY", version
 * 1.0/2.0/3.0, header length, a Python dict literal with descr,
 * fortran_order and shape, padded so the data starts 64-byte aligned. */
#include "config.h"

#include "trainer/data/npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/status.h"
#include "trainer/data/atomic_file.h"
#include "trainer/config/input_file.h"
#include "common/text.h"

static int parse_shape(const char *header, npy_array *a)
{
  const char *p = strstr(header, "'shape'");
  if (!p || !(p = strchr(p, '(')))
    return -1;
  a->ndim = 0;
  a->count = 1;
  for (p++; *p && *p != ')';) {
    char *end;
    long dim = strtol(p, &end, 10);
    if (end == p) {
      p++;
      continue;
    }
    if (a->ndim == NPY_MAX_DIMS || dim < 0 || __builtin_mul_overflow(a->count, dim, &a->count))
      return -1;
    a->shape[a->ndim++] = dim;
    p = end;
  }
  return *p == ')' ? 0 : -1;
}

static int read_header(FILE *f, const char *path, char *header, size_t cap, dlpar_error *err)
{
  unsigned char magic[8], len_bytes[4];
  size_t len;
  if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0 || magic[6] < 1 || magic[6] > 3)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: not a NumPy .npy file (write it with numpy.save, or give an HDF5 "
                           "file)", dlpar_show(path).text);
  if (magic[6] == 1) {
    if (fread(len_bytes, 1, 2, f) != 2)
      goto truncated;
    len = (size_t)len_bytes[0] | (size_t)len_bytes[1] << 8;
  } else {
    if (fread(len_bytes, 1, 4, f) != 4)
      goto truncated;
    len = (size_t)len_bytes[0] | (size_t)len_bytes[1] << 8 | (size_t)len_bytes[2] << 16 | (size_t)len_bytes[3] << 24;
  }
  if (len >= cap || fread(header, 1, len, f) != len)
    goto truncated;
  header[len] = '\0';
  return DLPAR_OK;
truncated:
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: truncated .npy header (regenerate the file)",
                         dlpar_show(path).text);
}

int npy_read_stream(FILE *f, long size, const char *path, npy_array *a, dlpar_error *err)
{
  char header[4096];
  long values_in_file;
  int is_f8, rc;
  memset(a, 0, sizeof(*a));
  DLPAR_TRY_GOTO(read_header(f, path, header, sizeof(header), err), rc, out);
  rc = DLPAR_ERR_INPUT;
  is_f8 = strstr(header, "'<f8'") != NULL;
  if ((!is_f8 && !strstr(header, "'<f4'")) || strstr(header, "'fortran_order': True") || parse_shape(header, a)) {
    dlpar_error_set(err, rc, "%s: expected a C-ordered little-endian float32 or float64 array, header %s",
                    dlpar_show(path).text, dlpar_show(header).text);
    goto out;
  }
  values_in_file = (size - ftell(f)) / (is_f8 ? 8 : 4);
  if (a->count > values_in_file) {
    dlpar_error_set(err, rc, "%s: the header says %ld values, the file holds %ld (regenerate it)",
                    dlpar_show(path).text, a->count, values_in_file);
    goto out;
  }
  if (!(a->data = malloc(sizeof(float) * (size_t)(a->count ? a->count : 1)))) {
    rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: out of memory for %ld values", dlpar_show(path).text, a->count);
    goto out;
  }
  for (long i = 0; i < a->count; i++) {
    double d;
    float s;
    if ((is_f8 ? fread(&d, 8, 1, f) : fread(&s, 4, 1, f)) != 1) {
      dlpar_error_set(err, rc, "%s: file ends after %ld of %ld values (regenerate it)", dlpar_show(path).text, i,
                      a->count);
      goto out;
    }
    a->data[i] = is_f8 ? (float)d : s;
  }
  rc = DLPAR_OK;
out:
  if (rc != DLPAR_OK)
    npy_free(a);
  return rc;
}

int npy_read(const char *path, npy_array *a, dlpar_error *err)
{
  off_t size;
  FILE *f = NULL;
  int fd, rc;
  memset(a, 0, sizeof(*a));
  DLPAR_TRY(input_file_open(path, "cannot open (check the stats path in the config)", &fd, &size, err));
  if (!(f = fdopen(fd, "rb"))) {
    close(fd);
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: cannot open (check the stats path in the config)",
                           dlpar_show(path).text);
  }
  rc = npy_read_stream(f, (long)size, path, a, err);
  fclose(f);
  return rc;
}

int npy_write(const char *path, const float *data, const long *shape, int ndim, dlpar_error *err)
{
  char header[256], dims[128] = "";
  size_t used = 0, total;
  long count = 1;
  atomic_file file;
  for (int i = 0; i < ndim; i++) {
    used += (size_t)snprintf(dims + used, sizeof(dims) - used, "%ld,%s", shape[i], ndim > 1 && i < ndim - 1 ? " " : "");
    count *= shape[i];
  }
  used = (size_t)snprintf(header, sizeof(header), "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", dims);
  total = (10 + used + 1 + 63) / 64 * 64; /* magic+version+len, header, '\n', padded */
  memset(header + used, ' ', total - 10 - used - 1);
  header[total - 10 - 1] = '\n';
  DLPAR_TRY(atomic_file_open(&file, path, err));
  {
    const unsigned char prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)((total - 10) & 0xff),
                                      (unsigned char)((total - 10) >> 8)};
    fwrite(prefix, 1, 10, file.stream);
    fwrite(header, 1, total - 10, file.stream);
    fwrite(data, sizeof(float), (size_t)count, file.stream);
  }
  return atomic_file_commit(&file, err);
}

void npy_free(npy_array *a)
{
  free(a->data);
  a->data = NULL;
}
