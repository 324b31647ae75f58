/* SPDX-License-Identifier: BSD-3-Clause */
/* common/options.c: the table of the --dl-* options and their parsers (see
 * options.h). */
#include "config.h"

#include "options.h"

#include <stdio.h>
#include <string.h>

#include "text.h"
#include "torchenv.h"

int dlpar_check_mode_parse(const char *text, dlpar_check_mode *mode, dlpar_error *err)
{
  char quoted[64];
  if (!text || !*text || strcmp(text, "on") == 0)
    *mode = DLPAR_CHECK_ON;
  else if (strcmp(text, "only") == 0)
    *mode = DLPAR_CHECK_ONLY;
  else if (strcmp(text, "off") == 0)
    *mode = DLPAR_CHECK_OFF;
  else {
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-check=%s: expected nothing (check, then run), 'only' (check and "
                           "stop) or 'off'", dlpar_quote(text, quoted, sizeof(quoted)));
  }
  return DLPAR_OK;
}

static int parse_parallel(const char *value, dlpar_request *req, dlpar_error *err)
{
  return dlpar_grid_parse(value, &req->grid, err);
}

static int parse_profile(const char *value, dlpar_request *req, dlpar_error *err)
{
  return dlpar_profile_parse_tool(value, &req->profile, err);
}

static int parse_profile_steps(const char *value, dlpar_request *req, dlpar_error *err)
{
  return dlpar_profile_parse_steps(value, &req->profile, err);
}

static int parse_profile_ranks(const char *value, dlpar_request *req, dlpar_error *err)
{
  return dlpar_profile_parse_ranks(value, &req->profile, err);
}

static int parse_check(const char *value, dlpar_request *req, dlpar_error *err)
{
  return dlpar_check_mode_parse(value, &req->check, err);
}

static void show_check(const dlpar_request *req, char *out, size_t len)
{
  snprintf(out, len, "%s", req->check == DLPAR_CHECK_ONLY ? "only" : req->check == DLPAR_CHECK_ON ? "on" : "off");
}

static int parse_env(const char *value, dlpar_request *req, dlpar_error *err)
{
  return dlpar_env_mode_parse(value, &req->torch_env, err);
}

/* The bare option, or the variable's "1". */
static int parse_verbose(const char *value, dlpar_request *req, dlpar_error *err)
{
  (void)err;
  req->verbose = !value || strcmp(value, "1") == 0;
  return DLPAR_OK;
}

static void show_verbose(const dlpar_request *req, char *out, size_t len)
{
  snprintf(out, len, "%d", req->verbose ? 1 : 0);
}

const dlpar_option_spec dlpar_option_table[DLPAR_OPTION_COUNT] = {
    [DLPAR_OPT_PARALLEL] = {"dl-parallel", "MxD", DLPAR_OPT_VALUE,
                            "[dlpar] Tensor-parallel size M x data-parallel size D (M*D = tasks; 'M' alone: D = "
                            "tasks/M). Binds each task to its GPU, CPUs and NIC and exports the grid (DLPAR_*).",
                            NULL, parse_parallel, NULL},
    [DLPAR_OPT_PROFILE] = {"dl-profile", "nsys|nvtx|off", DLPAR_OPT_VALUE,
                           "[dlpar] Profile the selected ranks: nsys runs them under Nsight Systems, nvtx only marks "
                           "ranges.",
                           NULL, parse_profile, NULL},
    [DLPAR_OPT_PROFILE_STEPS] = {"dl-profile-steps", "A-B", DLPAR_OPT_VALUE,
                                 "[dlpar] Capture training steps A to B (default: the whole run).", NULL,
                                 parse_profile_steps, NULL},
    [DLPAR_OPT_PROFILE_RANKS] = {"dl-profile-ranks", "LIST", DLPAR_OPT_VALUE,
                                 "[dlpar] Ranks to profile, e.g. 0,4-7 or all (default: 0).", NULL,
                                 parse_profile_ranks, NULL},
    [DLPAR_OPT_CHECK] = {"dl-check", "[only]", DLPAR_OPT_OPTIONAL_VALUE,
                         "[dlpar] Before the program: every rank checks its binding, NCCL settings, an allreduce per "
                         "group and a GEMM; one table, stragglers named with an --exclude list, non-zero exit on a "
                         "failure. =only: check and stop.",
                         "DLPAR_CHECK", parse_check, show_check},
    [DLPAR_OPT_ENV] = {"dl-env", "torch|none", DLPAR_OPT_VALUE,
                       "[dlpar] torch (default): export PyTorch's env:// variables (MASTER_ADDR, MASTER_PORT, RANK, "
                       "LOCAL_RANK, WORLD_SIZE...; a value you exported wins); none: export none of them.",
                       NULL, parse_env, NULL},
    [DLPAR_OPT_VERBOSE] = {"dl-verbose", NULL, DLPAR_OPT_FLAG,
                           "[dlpar] Print each task's rank, grid coordinates, GPU, CPUs and NIC.", "DLPAR_VERBOSE",
                           parse_verbose, show_verbose},
};

void dlpar_request_init(dlpar_request *req)
{
  memset(req, 0, sizeof(*req));
  req->grid.tp = 1;
  snprintf(req->grid.text, sizeof(req->grid.text), "1");
  dlpar_profile_init(&req->profile);
  req->check = DLPAR_CHECK_OFF;
  req->torch_env = true;
}

int dlpar_option_find(const char *name, size_t len)
{
  for (int i = 0; i < DLPAR_OPTION_COUNT; i++)
    if (strlen(dlpar_option_table[i].name) == len && strncmp(dlpar_option_table[i].name, name, len) == 0)
      return i;
  return -1;
}
