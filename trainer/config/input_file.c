/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/config/input_file.c: regular input files only (see input_file.h). */
#include "config.h"

#include "trainer/config/input_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/status.h"
#include "common/text.h"

int input_file_open(const char *path, const char *cannot_open, int *fd, off_t *size, dlpar_error *err)
{
  struct stat st;
  /* O_NONBLOCK: opening a FIFO without a writer returns at once */
  *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (*fd < 0 || fstat(*fd, &st) != 0) {
    dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: %s", dlpar_show(path).text, cannot_open);
  } else if (!S_ISREG(st.st_mode)) {
    dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: a %s, not a regular file (put the file itself there)",
                    dlpar_show(path).text,
                    S_ISDIR(st.st_mode) ? "directory" : S_ISFIFO(st.st_mode) ? "FIFO" : "device or socket");
  } else {
    *size = st.st_size;
    return DLPAR_OK;
  }
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
  return DLPAR_ERR_INPUT;
}

int input_file_check(const char *path, const char *cannot_open, dlpar_error *err)
{
  off_t size;
  int fd, rc = input_file_open(path, cannot_open, &fd, &size, err);
  if (rc == DLPAR_OK)
    close(fd);
  return rc;
}
