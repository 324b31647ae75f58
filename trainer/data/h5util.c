/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/h5util.c: opening input files, HDF5 error strings and closing any
 * object (see h5util.h). */
#include "config.h"

#include "trainer/data/h5util.h"

#include <stdio.h>

#include "common/status.h"
#include "trainer/config/input_file.h"
#include "common/text.h"

void h5_quiet(void)
{
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

typedef struct {
  char text[256];
  int found;
} innermost_error;

static herr_t take_innermost(unsigned n, const H5E_error2_t *e, void *data)
{
  innermost_error *inner = data;
  (void)n;
  if (!inner->found) { /* walking upward, the first entry is the innermost */
    snprintf(inner->text, sizeof(inner->text), "%s", e->desc ? e->desc : "unknown HDF5 error");
    inner->found = 1;
  }
  return 0;
}

const char *h5_error_string(char *buf, size_t len)
{
  innermost_error inner = {"unknown HDF5 error", 0};
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &inner);
  return dlpar_quote(inner.text, buf, len); /* HDF5 quotes names the user gave */
}

void h5_close(hid_t id)
{
  if (id < 0)
    return;
  switch (H5Iget_type(id)) {
  case H5I_FILE:
    H5Fclose(id);
    break;
  case H5I_GROUP:
    H5Gclose(id);
    break;
  case H5I_DATASET:
    H5Dclose(id);
    break;
  case H5I_DATASPACE:
    H5Sclose(id);
    break;
  case H5I_DATATYPE:
    H5Tclose(id);
    break;
  case H5I_ATTR:
    H5Aclose(id);
    break;
  case H5I_GENPROP_LST:
    H5Pclose(id);
    break;
  default:
    break;
  }
}

int h5_open_read(const char *path, const char *cannot_open, hid_t *file, dlpar_error *err)
{
  int rc = DLPAR_OK;
  *file = -1;
  DLPAR_TRY(input_file_check(path, cannot_open, err));
  H5_TRY_GOTO(*file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), path, err, rc, out);
out:
  return rc;
}
