/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/state.c: the plugin's one global state (spank/state.h says why it
 * is global), its start from plugstack.conf's arguments, and the plugin's
 * error line. */
#include "config.h"

#include "spank/state.h"

#include <slurm/spank.h>
#include <stdio.h>
#include <string.h>

#include "common/status.h"
#include "common/text.h"

dlpar_spank_state dlpar_spank;

void dlpar_spank_error(const char *message)
{
  char line[DLPAR_ERRLEN];
  snprintf(line, sizeof(line), "%s", message);
  slurm_error("%s: %s", DLPAR_PLUGIN, dlpar_one_line(line));
}

int dlpar_spank_state_init(int ac, char **av)
{
  char err[DLPAR_ERRLEN];
  memset(&dlpar_spank, 0, sizeof(dlpar_spank));
  if (dlpar_admin_config_parse(ac, av, &dlpar_spank.admin, err, sizeof(err)) != DLPAR_OK) {
    dlpar_spank_error(err);
    return DLPAR_ERR_INPUT;
  }
  return DLPAR_OK;
}

bool dlpar_spank_requested(void)
{
  return dlpar_user_options_active(&dlpar_spank.options);
}

bool dlpar_spank_requested_in_stepd(void)
{
  return dlpar_spank_requested() && spank_context() == S_CTX_REMOTE;
}
