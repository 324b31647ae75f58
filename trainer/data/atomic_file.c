/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/data/atomic_file.c: write temp, fsync, rename (see atomic_file.h). */
#include "config.h"

#include "trainer/data/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <unistd.h>

#include "common/status.h"
#include "common/text.h"

void atomic_file_prepare(atomic_file *f, const char *path)
{
  snprintf(f->path, sizeof(f->path), "%s", path);
  snprintf(f->temp, sizeof(f->temp), "%s.tmp.%ld", path, (long)getpid());
  f->stream = NULL;
}

int atomic_file_open(atomic_file *f, const char *path, dlpar_error *err)
{
  atomic_file_prepare(f, path);
  f->stream = fopen(f->temp, "wb");
  if (!f->stream)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: cannot create: %s (check the directory and its permissions)",
                           dlpar_show(f->temp).text, strerror(errno));
  return DLPAR_OK;
}

static int fsync_path(const char *path, int flags)
{
  int fd = open(path, flags), rc;
  if (fd < 0)
    return -1;
  rc = fsync(fd);
  close(fd);
  return rc;
}

int atomic_file_commit(atomic_file *f, dlpar_error *err)
{
  char dir[PATH_MAX];
  int failed = 0;
  if (f->stream) {
    failed = fflush(f->stream) != 0 || ferror(f->stream) || fsync(fileno(f->stream)) != 0;
    failed |= fclose(f->stream) != 0;
    f->stream = NULL;
  } else {
    failed = fsync_path(f->temp, O_RDONLY) != 0;
  }
  if (failed || rename(f->temp, f->path) != 0) {
    dlpar_error_set(err, DLPAR_ERR_SYSTEM, "%s: cannot write: %s (disk full or read-only? the previous file is kept)",
                    dlpar_show(f->path).text, strerror(errno));
    unlink(f->temp);
    return DLPAR_ERR_SYSTEM;
  }
  snprintf(dir, sizeof(dir), "%s", f->path);
  fsync_path(dirname(dir), O_RDONLY | O_DIRECTORY);
  return DLPAR_OK;
}

void atomic_file_abandon(atomic_file *f)
{
  if (f->stream)
    fclose(f->stream);
  f->stream = NULL;
  unlink(f->temp);
}
