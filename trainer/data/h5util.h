/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/h5util.h: HDF5 helpers for opening input files, the library's
 * own error string for messages, with HDF5's automatic stack printing
 * turned off, and the CHECK macro every HDF5 call goes through. */
#ifndef DLPAR_H5UTIL_H
#define DLPAR_H5UTIL_H

#include <hdf5.h>
#include <stddef.h>

#include "common/status.h"
#include "common/text.h"

/* Turns off HDF5's own error printing, once, at start-up. */
void h5_quiet(void);
/* Closes an HDF5 object of any kind: file, group, dataset, dataspace,
 * datatype, attribute or property list. Ids < 0, never opened, are ignored.
 * A file being written closes with H5Fclose, whose result matters. */
void h5_close(hid_t id);
/* H5Fopen read-only of a regular file only, because a FIFO named *.h5
 * would hang HDF5. Returns the status, with "PATH: CANNOT_OPEN",
 * "PATH: not a regular file (...)" or "PATH: HDF5's error" in err. */
int h5_open_read(const char *path, const char *cannot_open, hid_t *file, dlpar_error *err);
/* The innermost description on HDF5's error stack, such as "unable to open
 * file", shown escaped, because HDF5 quotes the names it was given. */
const char *h5_error_string(char *buf, size_t len);

/* For a call returning a negative value on failure, records
 * DLPAR_ERR_SYSTEM and "context: HDF5's error (file:line: call)" in err, a
 * dlpar_error *, keeps the status in rc and goes to label. The context, a
 * path or a dataset name, is shown escaped. */
#define H5_TRY_GOTO(call, context, err, rc, label)                                                    \
  do {                                                                                                \
    if ((call) < 0) {                                                                                 \
      char h5msg_[256];                                                                               \
      (rc) = dlpar_error_set((err), DLPAR_ERR_SYSTEM, "%s: %s (%s:%d: %s)", dlpar_show(context).text, \
                             h5_error_string(h5msg_, sizeof(h5msg_)), __FILE__, __LINE__, #call);     \
      goto label;                                                                                     \
    }                                                                                                 \
  } while (0)

#endif
