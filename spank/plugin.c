/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/plugin.c: the SPANK entry points, pure dispatch: each one checks
 * whether the user asked for dlpar at all (no --dl-* option: do nothing,
 * cost nothing) and hands over to the file of its context: srun.c (srun),
 * stepd.c (slurmstepd); sbatch/salloc only check the syntax (options.c).
 * Under a bad plugstack.conf line every one of them refuses --dl-* options
 * and the node's part never runs (state.c). The state they share lives in
 * state.c. */
#include "config.h"

#include <slurm/spank.h>

#include "spank/plugin.h"

SPANK_PLUGIN(dlpar, 1)

int slurm_spank_init(spank_t sp, int ac, char **av)
{
  dlpar_spank_state_init(ac, av); /* a bad plugstack.conf line: refused with --dl-* options only */
  return dlpar_spank_register_options(sp);
}

int slurm_spank_init_post_opt(spank_t sp UNUSED, int ac UNUSED, char **av UNUSED)
{
  if (!dlpar_spank_requested())
    return 0;
  switch (spank_context()) {
  case S_CTX_LOCAL:
  case S_CTX_ALLOCATOR: return dlpar_spank_parse_request();
  default: return 0;
  }
}

int slurm_spank_local_user_init(spank_t sp, int ac UNUSED, char **av UNUSED)
{
  if (!dlpar_spank_requested())
    return 0;
  return dlpar_srun_local_user_init(sp);
}

int slurm_spank_user_init(spank_t sp, int ac UNUSED, char **av UNUSED)
{
  if (!dlpar_spank_requested_in_stepd())
    return 0;
  return dlpar_stepd_user_init(sp);
}

int slurm_spank_task_init_privileged(spank_t sp, int ac UNUSED, char **av UNUSED)
{
  if (!dlpar_spank_requested_in_stepd())
    return 0;
  return dlpar_stepd_task_init_privileged(sp);
}

int slurm_spank_task_init(spank_t sp, int ac UNUSED, char **av UNUSED)
{
  if (dlpar_spank_refuse_bad_config(sp) != 0)
    return -1;
  if (!dlpar_spank_requested_in_stepd())
    return 0;
  return dlpar_stepd_task_init(sp);
}

int slurm_spank_task_exit(spank_t sp, int ac UNUSED, char **av UNUSED)
{
  if (!dlpar_spank_requested_in_stepd())
    return 0;
  return dlpar_stepd_task_exit(sp);
}
