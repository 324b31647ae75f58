/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/check_config.c: dlpar-check-config [FILE]: dlpar's plugstack.conf
 * line checked as srun and the daemons will take it, before any of them
 * reads it (spank/plugstack.h does the work). FILE: the file about to be put
 * in place; without it, Slurm's plugstack.conf (PlugStackConfig of
 * $SLURM_CONF, else of /etc/slurm/slurm.conf) and the files it includes.
 * One line: "...: ok: ..." and 0, or what is wrong and the fix, and 1. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "spank/plugstack.h"

#define PROGRAM "dlpar-check-config"

int main(int argc, char **argv)
{
  const char *slurm_conf = getenv("SLURM_CONF");
  char path[4096], msg[8192];
  dlpar_error err = {0};
  if (argc == 2 && strcmp(argv[1], "--help") == 0) {
    printf("usage: " PROGRAM " [FILE]\n"
           "Checks dlpar's line (the one loading " DLPAR_PLUGIN_FILE ") as srun, sbatch, salloc, slurmstepd and\n"
           "slurmd will read it: one line, required, the plugin file there, every key known, valid and given\n"
           "once. FILE: a plugstack.conf file (the copy to put in place); default: Slurm's plugstack.conf\n"
           "(PlugStackConfig in $SLURM_CONF, else in " DLPAR_SLURM_CONF_DEFAULT ") and the files it includes.\n"
           "Exit 0 when good, 1 otherwise (spank_dlpar(8), dlpar-check-config(8)).\n");
    return 0;
  }
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    fprintf(stderr, PROGRAM ": usage: " PROGRAM " [FILE] (a plugstack.conf file; default: Slurm's)\n");
    return 1;
  }
  if (argc == 2)
    snprintf(path, sizeof(path), "%s", argv[1]);
  else if (dlpar_plugstack_path(slurm_conf ? slurm_conf : DLPAR_SLURM_CONF_DEFAULT, path, sizeof(path), &err) !=
           DLPAR_OK) {
    fprintf(stderr, PROGRAM ": %s\n", err.text);
    return 1;
  }
  if (dlpar_plugstack_check(path, msg, sizeof(msg)) != DLPAR_OK) {
    fprintf(stderr, PROGRAM ": %s\n", msg);
    return 1;
  }
  printf(PROGRAM ": %s\n", msg);
  return 0;
}
