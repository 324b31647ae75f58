/* spank/plugin.c: the SPANK entry points. Thin: each one checks whether the
 * user asked for dlpar at all (no --dl-* option: do nothing, cost nothing)
 * and hands over to the file of its context: srun.c (srun), stepd.c
 * (slurmstepd); sbatch/salloc only check the syntax (options.c). */
#include "config.h"

#include <slurm/spank.h>
#include <string.h>

#include "launcher/status.h"
#include "spank/plugin.h"

SPANK_PLUGIN(dlpar, 1)

dlpar_spank_state dlpar_spank;

void dlpar_spank_error(const char *message)
{
  slurm_error("%s: %s", DLPAR_PLUGIN, message);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
  char err[DLPAR_ERRLEN];
  memset(&dlpar_spank, 0, sizeof(dlpar_spank));
  if (dlpar_admin_config_parse(ac, av, &dlpar_spank.admin, err, sizeof(err)) != DLPAR_OK) {
    dlpar_spank_error(err);
    return -1;
  }
  return dlpar_spank_register_options(sp);
}

int slurm_spank_init_post_opt(spank_t sp UNUSED, int ac UNUSED, char **av UNUSED)
{
  if (!dlpar_user_options_active(&dlpar_spank.options))
    return 0;
  switch (spank_context()) {
  case S_CTX_LOCAL:
  case S_CTX_ALLOCATOR: return dlpar_spank_parse_request();
  default: return 0;
  }
}

/* A step that asked for --dl-* options, seen from slurmstepd. */
static bool active_in_stepd(void)
{
  return dlpar_user_options_active(&dlpar_spank.options) && spank_context() == S_CTX_REMOTE;
}

int slurm_spank_local_user_init(spank_t sp, int ac UNUSED, char **av UNUSED)
{
  if (!dlpar_user_options_active(&dlpar_spank.options))
    return 0;
  return dlpar_srun_local_user_init(sp);
}

int slurm_spank_user_init(spank_t sp, int ac UNUSED, char **av UNUSED)
{
  if (!active_in_stepd())
    return 0;
  return dlpar_stepd_user_init(sp);
}

int slurm_spank_task_init_privileged(spank_t sp, int ac UNUSED, char **av UNUSED)
{
  if (!active_in_stepd())
    return 0;
  return dlpar_stepd_task_init_privileged(sp);
}

int slurm_spank_task_init(spank_t sp, int ac UNUSED, char **av UNUSED)
{
  if (!active_in_stepd())
    return 0;
  return dlpar_stepd_task_init(sp);
}
