/* SPDX-License-Identifier: BSD-3-Clause */
/* libdlpar/procstat.c: /proc/PID/stat read once for every caller. The
 * watchdog asks whether a node-mate is stopped, and telemetry asks when
 * this process started. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "libdlpar/internal.h"

const char *dlpar_proc_stat_fields(long pid, char *buf, size_t len)
{
  char path[64];
  const char *after_name;
  FILE *f;
  size_t n;
  if (pid > 0)
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
  else
    snprintf(path, sizeof(path), "/proc/self/stat");
  if (len == 0 || !(f = fopen(path, "r")))
    return NULL;
  n = fread(buf, 1, len - 1, f);
  fclose(f);
  buf[n] = '\0';
  after_name = strrchr(buf, ')'); /* "pid (comm) S ...": comm may hold anything */
  return after_name && after_name[1] == ' ' ? after_name + 2 : NULL;
}
