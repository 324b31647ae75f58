/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/options.c: the --dl-* options as srun/sbatch/salloc show them in
 * --help, and their callbacks, which only keep the raw text: parsing happens
 * in each context (request.c), the same way everywhere. */
#include "config.h"

#include <slurm/spank.h>
#include <string.h>

#include "common/status.h"
#include "spank/plugin.h"

enum { OPT_PARALLEL, OPT_PROFILE, OPT_PROFILE_STEPS, OPT_PROFILE_RANKS, OPT_VERBOSE, OPT_CHECK, OPT_ENV };

/* A bare --dl-check given to sbatch/salloc reaches the job's steps through
 * the environment as the text "(null)" (Slurm 22.05 prints the option's NULL
 * argument there): the bare option again. */
static const char *optional_argument(const char *optarg)
{
  return optarg && strcmp(optarg, "(null)") == 0 ? NULL : optarg;
}

static int store_option(int val, const char *optarg, int remote UNUSED)
{
  dlpar_user_options *options = &dlpar_spank.options;
  switch (val) {
  case OPT_PARALLEL: dlpar_user_value_store(&options->parallel, optarg); break;
  case OPT_PROFILE: dlpar_user_value_store(&options->profile, optarg); break;
  case OPT_PROFILE_STEPS: dlpar_user_value_store(&options->profile_steps, optarg); break;
  case OPT_PROFILE_RANKS: dlpar_user_value_store(&options->profile_ranks, optarg); break;
  case OPT_VERBOSE: options->verbose = true; break;
  case OPT_CHECK: dlpar_user_value_store(&options->check, optional_argument(optarg)); break;
  case OPT_ENV: dlpar_user_value_store(&options->env, optarg); break;
  default: return -1;
  }
  return 0;
}

static struct spank_option dlpar_options[] = {
    {"dl-parallel", "MxD",
     "[dlpar] Tensor-parallel size M x data-parallel size D (M*D = tasks; 'M' alone: D = tasks/M). "
     "Binds each task to its GPU, CPUs and NIC and exports the grid (DLPAR_*).",
     1, OPT_PARALLEL, store_option},
    {"dl-profile", "nsys|nvtx|off",
     "[dlpar] Profile the selected ranks: nsys runs them under Nsight Systems, nvtx only marks ranges.",
     1, OPT_PROFILE, store_option},
    {"dl-profile-steps", "A-B", "[dlpar] Capture training steps A to B (default: the whole run).",
     1, OPT_PROFILE_STEPS, store_option},
    {"dl-profile-ranks", "LIST", "[dlpar] Ranks to profile, e.g. 0,4-7 or all (default: 0).",
     1, OPT_PROFILE_RANKS, store_option},
    {"dl-check", "[only]",
     "[dlpar] Before the program: every rank checks its binding, NCCL settings, an allreduce per group and a "
     "GEMM; one table, stragglers named with an --exclude list, non-zero exit on a failure. =only: check and stop.",
     2, OPT_CHECK, store_option},
    {"dl-env", "torch|none",
     "[dlpar] torch (default): export PyTorch's env:// variables (MASTER_ADDR, MASTER_PORT, RANK, LOCAL_RANK, "
     "WORLD_SIZE...; a value you exported wins); none: export none of them.",
     1, OPT_ENV, store_option},
    {"dl-verbose", NULL, "[dlpar] Print each task's rank, grid coordinates, GPU, CPUs and NIC.",
     0, OPT_VERBOSE, store_option},
    SPANK_OPTIONS_TABLE_END};

int dlpar_spank_register_options(spank_t sp)
{
  for (struct spank_option *opt = dlpar_options; opt->name; opt++) {
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
      dlpar_request_parse(&dlpar_spank.options, &dlpar_spank.grid_request, &dlpar_spank.profile, &dlpar_spank.check,
                          &dlpar_spank.torch_env, &err) != DLPAR_OK) {
    dlpar_spank_error(err.text);
    return -1;
  }
  return 0;
}
