/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/fuzz/fuzz_common.c: the temporary file of a fuzz target (see fuzz.h). */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include <unistd.h>

static char temp_path[64];

static void remove_temp(void)
{
  unlink(temp_path);
}

const char *fuzz_temp_path(void)
{
  if (!temp_path[0]) {
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    int fd;
    snprintf(temp_path, sizeof(temp_path), "%s/dlpar-fuzz.XXXXXX", dir);
    if ((fd = mkstemp(temp_path)) < 0) {
      perror("fuzz: mkstemp");
      abort();
    }
    close(fd);
    atexit(remove_temp);
  }
  return temp_path;
}
