/* SPDX-License-Identifier: BSD-3-Clause */
/* common/taskenv.h: the environment contract between the launchers (the
 * SPANK plugin, dlpar-run) and the library (libdlpar). The launchers build
 * a dlpar_task_env per task and export it; the library imports it and
 * cross-checks it against PMIx. DLPAR_VERSION marks the contract, so a
 * library that meets a newer launcher says so instead of misreading. */
#ifndef DLPAR_TASKENV_H
#define DLPAR_TASKENV_H

#include <stdbool.h>
#include <stddef.h>

#include "grid.h"
#include "options.h"
#include "profile.h"
#include "status.h"
#include "topo.h"

#define DLPAR_ENV_VERSION 1

/* Set by srun's plugin once it accepted a step's --dl-* options: JOB.STEP.
 * The nodes' side tells by it that srun read another plugstack.conf: a
 * node's plugin with a bad line there (spank/stepd.c), libdlpar where no
 * plugin ran (dlpar_task_env_import). */
#define DLPAR_SRUN_STEP "DLPAR_SRUN_STEP"

typedef struct {
  dlpar_grid grid;
  int rank, local_rank, local_size;
  dlpar_span_policy span;
  dlpar_binding binding;
  dlpar_profile_tool profile;
  bool profile_this_rank;
  long profile_first_step, profile_last_step; /* -1: the whole run */
  char profile_output[512];
  /* The --dl-* options the launcher parsed: each option of the table
   * (common/options.h) that names a variable is exported from here and
   * imported back into here. */
  dlpar_request options;
  /* the PyTorch env:// contract (common/torchenv.h); options.torch_env
   * false (--dl-env=none): none of its names is exported. master_addr, world
   * rank 0's node's address (its own on rank 0's node, the step's first
   * node's elsewhere: the same but under -m arbitrary), is exported as
   * DLPAR_MASTER_ADDR either way (dlpar's Python module's rank 0 publishes
   * its store there). */
  int node_rank;
  char master_addr[256];
  int master_port;
  char gloo_ifname[32]; /* "" : not exported */
} dlpar_task_env;

#define DLPAR_ENV_MAX_VARS 48
typedef struct {
  int count;
  struct {
    const char *name;
    char value[512];
  } var[DLPAR_ENV_MAX_VARS];
} dlpar_env_list;

/* Whether the task keeps a value the user exported for name: the torch
 * names (common/torchenv.h) and NCCL_SOCKET_IFNAME; the launcher's value
 * replaces the rest. */
bool dlpar_env_keeps_user_value(const char *name);

/* The variables to set in the task's environment; those
 * dlpar_env_keeps_user_value names without overwriting. */
void dlpar_task_env_export(const dlpar_task_env *env, dlpar_env_list *list);

/* From the process environment. *present is false when no launcher exported
 * a grid (a plain run): env is then left zeroed and DLPAR_OK returned,
 * unless srun accepted --dl-* options for this step (DLPAR_SRUN_STEP): then
 * its node ran no plugin, and DLPAR_ERR_INPUT says so. */
int dlpar_task_env_import(dlpar_task_env *env, bool *present, dlpar_error *err);

/* One line for --dl-verbose: rank, node, local rank, coordinates, GPU, CPUs, NIC. */
void dlpar_task_env_describe(const dlpar_task_env *env, const char *node, char *out, size_t len);

#endif
