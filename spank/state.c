/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/state.c: the plugin's one global state (spank/state.h says why it
 * is global), its start from plugstack.conf's arguments, and the plugin's
 * error line. */
#include "config.h"

#include "spank/state.h"

#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "common/taskenv.h"
#include "common/text.h"

dlpar_spank_state dlpar_spank;

void dlpar_spank_error(const char *message)
{
  char line[DLPAR_ERRLEN];
  snprintf(line, sizeof(line), "%s", message);
  slurm_error("%s: %s", DLPAR_PLUGIN, dlpar_one_line(line));
}

void dlpar_spank_state_init(int ac, char **av)
{
  const char *slurm_conf = getenv("SLURM_CONF"); /* the process's own: srun's user, or the daemon's */
  char line[DLPAR_ERRLEN];
  memset(&dlpar_spank, 0, sizeof(dlpar_spank));
  if (dlpar_admin_config_parse(ac, av, &dlpar_spank.admin, &dlpar_spank.config_error) == DLPAR_OK) {
    dlpar_spank.config_error = (dlpar_error){0};
    return;
  }
  dlpar_plugstack_where(slurm_conf ? slurm_conf : DLPAR_SLURM_CONF_DEFAULT, ac, av, dlpar_spank.config_where,
                        sizeof(dlpar_spank.config_where));
  if (spank_context() == S_CTX_SLURMD && dlpar_spank_config_refusal(DLPAR_READER_SLURMD, NULL, line, sizeof(line)))
    dlpar_spank_error(line);
}

bool dlpar_spank_config_refusal(dlpar_config_reader reader, const char *node, char *out, size_t len)
{
  if (!dlpar_spank.config_error.text[0])
    return false;
  dlpar_config_refusal(reader, dlpar_spank.config_error.text, dlpar_spank.config_where, node, out, len);
  return true;
}

bool dlpar_spank_requested(void)
{
  return dlpar_user_options_active(&dlpar_spank.options);
}

bool dlpar_spank_requested_in_stepd(void)
{
  return dlpar_spank_requested() && spank_context() == S_CTX_REMOTE && !dlpar_spank.config_error.text[0];
}

int dlpar_spank_refuse_bad_config(spank_t sp)
{
  uint32_t job, step;
  int local_rank = -1;
  char node[64], srun_step[32], this_step[32], line[DLPAR_ERRLEN];
  dlpar_config_reader reader = DLPAR_READER_NODE;
  if (!dlpar_spank_requested() || spank_context() != S_CTX_REMOTE || !dlpar_spank.config_error.text[0])
    return 0;
  if (spank_get_item(sp, S_TASK_ID, &local_rank) != ESPANK_SUCCESS || local_rank != 0)
    return -1;
  if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof(node)) != ESPANK_SUCCESS)
    snprintf(node, sizeof(node), "this node");
  if (spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS && spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
      spank_getenv(sp, DLPAR_SRUN_STEP, srun_step, sizeof(srun_step)) == ESPANK_SUCCESS) {
    snprintf(this_step, sizeof(this_step), "%u.%u", job, step);
    if (strcmp(srun_step, this_step) == 0)
      reader = DLPAR_READER_NODE_BEHIND;
  }
  dlpar_spank_config_refusal(reader, dlpar_show(node).text, line, sizeof(line));
  dlpar_spank_error(line);
  return -1;
}
