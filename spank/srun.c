/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/srun.c: srun (local context). After the allocation and before the
 * launch, the step's shape is known: refuse a grid that does not fit it
 * (or, under --dl-env=torch, a distribution that may put rank 0 off the
 * first node), with one line naming the problem and the fix. (A refusal only stops the
 * launch when the plugin is `required` in plugstack.conf.) */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "common/taskenv.h"
#include "common/text.h"
#include "common/torchenv.h"
#include "spank/plugin.h"

/* Where each rank runs, from Slurm's tasks-per-node and distribution; 0 when
 * the distribution cannot be predicted here (slurmstepd checks it anyway). */
static int predict_rank_nodes(int ntasks, int nnodes, int *rank_node)
{
  const char *per_node = getenv("SLURM_STEP_TASKS_PER_NODE");
  const char *distribution = getenv("SLURM_DISTRIBUTION");
  int *counts = calloc((size_t)nnodes, sizeof(int));
  int found = 0, sum = 0;
  if (!counts)
    return 0;
  if (!per_node)
    per_node = getenv("SLURM_TASKS_PER_NODE");
  if (distribution && strncmp(distribution, "cyclic", 6) == 0) {
    for (int r = 0; r < ntasks; r++)
      rank_node[r] = r % nnodes;
    found = 1;
  } else if ((!distribution || strncmp(distribution, "block", 5) == 0) && per_node &&
             dlpar_parse_tasks_per_node(per_node, counts, nnodes) == nnodes) {
    for (int i = 0; i < nnodes; i++)
      sum += counts[i];
    if (sum == ntasks) {
      dlpar_grid_block_nodes(counts, nnodes, rank_node);
      found = 1;
    }
  }
  free(counts);
  return found;
}

static int check_span(const dlpar_grid *grid, int ntasks, int nnodes)
{
  dlpar_error err = {0};
  int *rank_node = calloc((size_t)ntasks, sizeof(int));
  int rc = DLPAR_OK;
  if (!rank_node)
    return DLPAR_OK;
  if (predict_rank_nodes(ntasks, nnodes, rank_node)) {
    /* a refusal stops the step here; a warning comes once from the node
     * side, which sees the real layout */
    rc = dlpar_grid_check_span(grid, rank_node, NULL, dlpar_spank.admin.tp_span, NULL, &err);
    if (rc == DLPAR_ERR_INPUT)
      dlpar_spank_error(err.text);
  }
  free(rank_node);
  return rc == DLPAR_ERR_INPUT ? -1 : 0;
}

static int check_mpi(void)
{
  const char *mpi = getenv("SLURM_MPI_TYPE");
  dlpar_error err = {0};
  if (!mpi || strncmp(mpi, "pmix", 4) == 0)
    return 0;
  dlpar_pmix_refusal(mpi, &err);
  dlpar_spank_error(err.text);
  return -1;
}

/* --dl-profile=nsys: nsys must be on the tasks' PATH, which is srun's own
 * unless --export narrows it (then slurmstepd checks each task). Checked
 * here, the whole step fails at once; on the nodes, the ranks that lack it
 * fail and the others wait out the PMIx rendezvous. */
static int check_nsys(void)
{
  const char *export = getenv("SLURM_EXPORT_ENV");
  char nsys[4096];
  dlpar_error err = {0};
  if (dlpar_spank.request.profile.tool != DLPAR_PROFILE_NSYS || (export && strncmp(export, "ALL", 3) != 0))
    return 0;
  if (dlpar_nsys_find(getenv("PATH"), "srun", nsys, sizeof(nsys), &err) == DLPAR_OK)
    return 0;
  dlpar_spank_error(err.text);
  return -1;
}

/* A torch name the user exported wins on every task (common/torchenv.h):
 * said once per step, here. */
static void report_kept_torch_names(void)
{
  char line[DLPAR_ERRLEN];
  if (dlpar_spank.request.torch_env && dlpar_torch_names_set(line, sizeof(line)))
    slurm_info("%s: keeping your exported %s for every task (unset them to get the step's; --dl-env=none "
               "exports none)", DLPAR_PLUGIN, line);
}

/* Whether var was named by an earlier setting than the i-th. */
static bool named_before(const dlpar_net_config *net, int i)
{
  for (int j = 0; j < i; j++)
    if (strcmp(net->setting[j].var, net->setting[i].var) == 0)
      return true;
  return false;
}

/* A name the site sets (plugstack.conf's env.) that the user exported wins
 * on every task: said once per step, here. */
static void report_kept_site_names(void)
{
  const dlpar_net_config *net = &dlpar_spank.admin.net;
  char line[DLPAR_ERRLEN];
  size_t used = 0;
  for (int i = 0; i < net->count && used < sizeof(line); i++) {
    const char *value = getenv(net->setting[i].var);
    if (value && !named_before(net, i))
      used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s=%s", used ? ", " : "", net->setting[i].var,
                               dlpar_show(value).text);
  }
  if (used)
    slurm_info("%s: keeping your exported %s for every task over plugstack.conf's env. settings (unset them to "
               "get the site's)", DLPAR_PLUGIN, line);
}

/* DLPAR_SRUN_STEP=JOB.STEP in the tasks' environment (common/taskenv.h): a
 * node that read another plugstack.conf then says so. Set in srun's own
 * environment, which becomes the step's (spank_setenv here does not reach
 * the tasks); --export=NONE drops it, and with it only that message. */
static void mark_step(spank_t sp)
{
  uint32_t job, step;
  char text[32];
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
    return;
  snprintf(text, sizeof(text), "%u.%u", job, step);
  setenv(DLPAR_SRUN_STEP, text, 1);
}

/* The step srun is about to launch, refused where the plugin cannot serve
 * it (a heterogeneous step, a grid that does not fit its tasks, a profile
 * of ranks it lacks, a distribution MASTER_ADDR cannot follow). */
static int check_step(uint32_t ntasks, dlpar_grid *grid, dlpar_error *err)
{
  /* srun's own SLURM_NTASKS is the whole step's; the task count SPANK gives
   * is one component's (24.11: the last one's, so the grid's task count would
   * be refused instead of the heterogeneous step). */
  DLPAR_TRY(dlpar_het_refusal(getenv("SLURM_HET_SIZE"), getenv("SLURM_NTASKS"), (long)ntasks, err));
  DLPAR_TRY(dlpar_grid_resolve(&dlpar_spank.request.grid, (int)ntasks, grid, err));
  DLPAR_TRY(dlpar_profile_check(&dlpar_spank.request.profile, (int)ntasks, err));
  return dlpar_distribution_refusal(getenv("SLURM_DISTRIBUTION"), dlpar_spank.request.torch_env, err);
}

int dlpar_srun_local_user_init(spank_t sp)
{
  dlpar_error err = {0};
  uint32_t ntasks = 0, nnodes = 0;
  dlpar_grid grid;
  if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS || ntasks == 0) {
    dlpar_spank_error("cannot read the step's task count (S_JOB_TOTAL_TASK_COUNT) from srun");
    return -1;
  }
  if (spank_get_item(sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS || nnodes == 0) {
    dlpar_spank_error("cannot read the step's node count (S_JOB_NNODES) from srun");
    return -1;
  }
  if (check_step(ntasks, &grid, &err) != DLPAR_OK) {
    dlpar_spank_error(err.text);
    return -1;
  }
  if (check_mpi() != 0 || check_nsys() != 0)
    return -1;
  report_kept_torch_names();
  report_kept_site_names();
  if (check_span(&grid, (int)ntasks, (int)nnodes) != 0)
    return -1;
  mark_step(sp);
  return 0;
}
