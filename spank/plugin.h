/* spank/plugin.h: the plugin's state and its per-context entry points.
 * SPANK callbacks take no context pointer, so the state is one global
 * (the only global mutable state in dlpar: SPANK forces it). */
#ifndef DLPAR_SPANK_PLUGIN_H
#define DLPAR_SPANK_PLUGIN_H

#include <slurm/spank.h>

#include "launcher/grid.h"
#include "launcher/profile.h"
#include "launcher/topo.h"
#include "spank/admin.h"
#include "spank/request.h"

#define DLPAR_PLUGIN "dlpar"
#define UNUSED __attribute__((unused)) /* SPANK fixes the callbacks' signatures */

typedef struct {
  dlpar_admin_config admin;
  dlpar_user_options options;
  dlpar_grid_request grid_request;
  dlpar_profile_request profile;
  dlpar_check_mode check;
  /* slurmstepd: the node's topology (read once, in user_init) and the
   * step's GPUs on the node (task_init_privileged: task_init sees only the
   * task's own GPU under --gpus-per-task) */
  dlpar_topology topology;
  int step_gpus[DLPAR_MAX_GPUS];
  int nstep_gpus;
  int topology_status;
  char topology_error[DLPAR_ERRLEN];
} dlpar_spank_state;

extern dlpar_spank_state dlpar_spank;

/* Registers the --dl-* options (spank/options.c). */
int dlpar_spank_register_options(spank_t sp);

/* Parses the options' syntax into dlpar_spank.grid_request/.profile
 * (spank/options.c). All that sbatch and salloc check: the values reach the
 * job's steps through Slurm's SPANK option environment, and srun and
 * slurmstepd check them again against the step. */
int dlpar_spank_parse_request(void);

/* srun (spank/srun.c) */
int dlpar_srun_local_user_init(spank_t sp);

/* slurmstepd (spank/stepd.c) */
int dlpar_stepd_user_init(spank_t sp);
int dlpar_stepd_task_init_privileged(spank_t sp);
int dlpar_stepd_task_init(spank_t sp);

/* Prints "dlpar: <message>" through Slurm's log (srun shows it). */
void dlpar_spank_error(const char *message);

#endif
