/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/options.c: the --dl-* options of the option table
 * (common/options.h) registered as srun/sbatch/salloc's, and their callback,
 * which only keeps the raw text: parsing happens in each context
 * (request.c), the same way everywhere. */
#include "config.h"

#include <slurm/spank.h>
#include <string.h>

#include "common/status.h"
#include "spank/plugin.h"

/* A bare --dl-check given to sbatch/salloc reaches the job's steps through
 * the environment as the text "(null)" (Slurm 22.05 prints the option's NULL
 * argument there): the bare option again. */
static const char *optional_argument(const char *optarg)
{
  return optarg && strcmp(optarg, "(null)") == 0 ? NULL : optarg;
}

/* val: the option's entry in the option table. */
static int store_option(int val, const char *optarg, int remote UNUSED)
{
  if (val < 0 || val >= DLPAR_OPTION_COUNT)
    return -1;
  if (dlpar_option_table[val].arg == DLPAR_OPT_OPTIONAL_VALUE)
    optarg = optional_argument(optarg);
  dlpar_user_value_store(&dlpar_spank.options.value[val], optarg);
  return 0;
}

/* SPANK's entry for the table's entry i, kept in the plugin's state (SPANK
 * wants its options in memory that stays). */
static struct spank_option *spank_entry(int i)
{
  const dlpar_option_spec *spec = &dlpar_option_table[i];
  struct spank_option *opt = &dlpar_spank.spank_options[i];
  opt->name = (char *)spec->name;
  opt->arginfo = (char *)spec->arginfo;
  opt->usage = (char *)spec->help;
  opt->has_arg = (int)spec->arg;
  opt->val = i;
  opt->cb = store_option;
  return opt;
}

int dlpar_spank_register_options(spank_t sp)
{
  for (int i = 0; i < DLPAR_OPTION_COUNT; i++) {
    struct spank_option *opt = spank_entry(i);
    if (spank_option_register(sp, opt) != ESPANK_SUCCESS) {
      slurm_error("%s: cannot register --%s", DLPAR_PLUGIN, opt->name);
      return -1;
    }
  }
  return 0;
}

int dlpar_spank_parse_request(void)
{
  dlpar_error err = {0};
  if (dlpar_spank_config_refusal(DLPAR_READER_CLIENT, NULL, err.text, sizeof(err.text)) ||
      dlpar_request_parse(&dlpar_spank.options, &dlpar_spank.request, &err) != DLPAR_OK) {
    dlpar_spank_error(err.text);
    return -1;
  }
  return 0;
}
