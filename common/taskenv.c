/* SPDX-License-Identifier: BSD-3-Clause */
/* common/taskenv.c: the launcher -> library environment contract (see taskenv.h). */
#include "config.h"

#include "taskenv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "text.h"
#include "torchenv.h"

static void add(dlpar_env_list *list, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add(dlpar_env_list *list, const char *name, const char *fmt, ...)
{
  va_list ap;
  if (list->count == DLPAR_ENV_MAX_VARS)
    return;
  list->var[list->count].name = name;
  va_start(ap, fmt);
  vsnprintf(list->var[list->count].value, sizeof(list->var[0].value), fmt, ap);
  va_end(ap);
  list->count++;
}

bool dlpar_env_keeps_user_value(const char *name)
{
  return dlpar_env_is_torch_name(name) || strcmp(name, "NCCL_SOCKET_IFNAME") == 0;
}

/* The variables of the option table (common/options.h) that name one. */
static void export_options(const dlpar_request *options, dlpar_env_list *list)
{
  char value[sizeof(list->var[0].value)];
  for (int i = 0; i < DLPAR_OPTION_COUNT; i++) {
    const dlpar_option_spec *spec = &dlpar_option_table[i];
    if (spec->var) {
      spec->show(options, value, sizeof(value));
      add(list, spec->var, "%s", value);
    }
  }
}

void dlpar_task_env_export(const dlpar_task_env *env, dlpar_env_list *list)
{
  const int size = env->grid.tp * env->grid.dp;
  int tp_rank, dp_rank;
  dlpar_grid_coords(&env->grid, env->rank, &tp_rank, &dp_rank);
  list->count = 0;
  add(list, "DLPAR_VERSION", "%d", DLPAR_ENV_VERSION);
  add(list, "DLPAR_TP_SIZE", "%d", env->grid.tp);
  add(list, "DLPAR_DP_SIZE", "%d", env->grid.dp);
  add(list, "DLPAR_TP_RANK", "%d", tp_rank);
  add(list, "DLPAR_DP_RANK", "%d", dp_rank);
  add(list, "DLPAR_RANK", "%d", env->rank);
  add(list, "DLPAR_LOCAL_RANK", "%d", env->local_rank);
  add(list, "DLPAR_LOCAL_SIZE", "%d", env->local_size);
  add(list, "DLPAR_DEVICE", "%d", env->binding.device);
  add(list, "DLPAR_TP_SPAN", "%s", dlpar_span_policy_name(env->span));
  add(list, "DLPAR_CPUS", "%s", env->binding.cpus);
  add(list, "DLPAR_NIC", "%s", env->binding.nic);
  add(list, "DLPAR_PROFILE", "%s", dlpar_profile_tool_name(env->profile));
  if (env->profile_first_step < 0)
    add(list, "DLPAR_PROFILE_STEPS", "all");
  else
    add(list, "DLPAR_PROFILE_STEPS", "%ld-%ld", env->profile_first_step, env->profile_last_step);
  add(list, "DLPAR_PROFILE_RANK", "%d", env->profile_this_rank ? 1 : 0);
  add(list, "DLPAR_PROFILE_OUTPUT", "%s", env->profile_output);
  export_options(&env->options, list);
  if (env->master_addr[0])
    add(list, "DLPAR_MASTER_ADDR", "%s", env->master_addr);
  if (env->options.torch_env) {
    add(list, "RANK", "%d", env->rank);
    add(list, "LOCAL_RANK", "%d", env->local_rank);
    add(list, "WORLD_SIZE", "%d", size);
    add(list, "LOCAL_WORLD_SIZE", "%d", env->local_size);
    add(list, "GROUP_RANK", "%d", env->node_rank);
    add(list, "NODE_RANK", "%d", env->node_rank);
    if (env->master_addr[0])
      add(list, "MASTER_ADDR", "%s", env->master_addr);
    add(list, "MASTER_PORT", "%d", env->master_port);
    if (env->gloo_ifname[0]) { /* NCCL's sockets too: the interface towards rank 0 */
      add(list, "GLOO_SOCKET_IFNAME", "%s", env->gloo_ifname);
      add(list, "NCCL_SOCKET_IFNAME", "%s", env->gloo_ifname);
    }
  }
  if (env->binding.gpu >= 0) {
    add(list, "CUDA_VISIBLE_DEVICES", "%s", env->binding.visible);
    add(list, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  }
  if (env->binding.node_nics[0])
    add(list, "NCCL_IB_HCA", "=%s", env->binding.node_nics);
  if (env->binding.nic[0])
    add(list, "UCX_NET_DEVICES", "%s:1", env->binding.nic);
}

/* Reads an integer variable in [lo, hi]; names the variable on error. */
static int get_int(const char *name, long lo, long hi, long *out, dlpar_error *err)
{
  const char *text = getenv(name);
  if (!text || dlpar_parse_int(text, lo, hi, out) != 0) {
    char quoted[64];
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "%s=%s is not a whole number in [%ld, %ld] (unset the DLPAR_* "
                           "variables or relaunch with srun --dl-parallel / dlpar-run)", name,
                           text ? dlpar_quote(text, quoted, sizeof(quoted)) : "(unset)", lo, hi);
  }
  return DLPAR_OK;
}

static int import_profile(dlpar_task_env *env, dlpar_error *err)
{
  dlpar_profile_request req;
  const char *tool = getenv("DLPAR_PROFILE"), *steps = getenv("DLPAR_PROFILE_STEPS");
  const char *output = getenv("DLPAR_PROFILE_OUTPUT"), *selected = getenv("DLPAR_PROFILE_RANK");
  dlpar_profile_init(&req);
  if (tool && dlpar_profile_parse_tool(tool, &req, err) != DLPAR_OK)
    return DLPAR_ERR_INPUT;
  if (steps && strcmp(steps, "all") != 0 && dlpar_profile_parse_steps(steps, &req, err) != DLPAR_OK)
    return DLPAR_ERR_INPUT;
  env->profile = req.tool;
  env->profile_first_step = req.first_step;
  env->profile_last_step = req.last_step;
  env->profile_this_rank = selected && strcmp(selected, "1") == 0;
  snprintf(env->profile_output, sizeof(env->profile_output), "%s", output ? output : "");
  return DLPAR_OK;
}

/* The variables of the option table that name one, where they are set.
 * The other options hold dlpar_request_init's value, not the launcher's:
 * what the task needs of them comes in their own variables. */
static int import_options(dlpar_request *options, dlpar_error *err)
{
  dlpar_request_init(options);
  for (int i = 0; i < DLPAR_OPTION_COUNT; i++) {
    const dlpar_option_spec *spec = &dlpar_option_table[i];
    const char *value = spec->var ? getenv(spec->var) : NULL;
    if (value)
      DLPAR_TRY(spec->parse(value, options, err));
  }
  return DLPAR_OK;
}

/* No contract, yet srun accepted --dl-* options for this very step: the
 * node ran no plugin (its plugstack.conf has no dlpar line, srun's has). */
static int srun_without_plugin(dlpar_error *err)
{
  const char *mark = getenv(DLPAR_SRUN_STEP), *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
  const char *node = getenv("SLURMD_NODENAME");
  char this_step[64];
  if (!mark || !job || !step)
    return DLPAR_OK;
  snprintf(this_step, sizeof(this_step), "%s.%s", job, step);
  if (strcmp(mark, this_step) != 0)
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "srun accepted --dl-* options for step %s, but dlpar's plugin did not "
                         "run on %s: its plugstack.conf has no spank_dlpar.so line, and Slurm needs the same "
                         "plugstack.conf on every node (ask the admin)", dlpar_show(this_step).text,
                         node ? dlpar_show(node).text : "this node");
}

int dlpar_task_env_import(dlpar_task_env *env, bool *present, dlpar_error *err)
{
  const char *span = getenv("DLPAR_TP_SPAN");
  long version, tp, dp, rank, local_rank, local_size, device;
  memset(env, 0, sizeof(*env));
  *present = getenv("DLPAR_VERSION") != NULL;
  if (!*present)
    return srun_without_plugin(err);
  DLPAR_TRY(get_int("DLPAR_VERSION", 1, 1000000, &version, err));
  if (version != DLPAR_ENV_VERSION)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "the launcher exported dlpar environment version %ld but this "
                           "libdlpar reads version %d (rebuild the program against the installed libdlpar)", version,
                           DLPAR_ENV_VERSION);
  DLPAR_TRY(get_int("DLPAR_TP_SIZE", 1, DLPAR_GRID_MAX, &tp, err));
  DLPAR_TRY(get_int("DLPAR_DP_SIZE", 1, DLPAR_GRID_MAX, &dp, err));
  DLPAR_TRY(get_int("DLPAR_RANK", 0, tp * dp - 1, &rank, err));
  DLPAR_TRY(get_int("DLPAR_LOCAL_SIZE", 1, DLPAR_GRID_MAX, &local_size, err));
  DLPAR_TRY(get_int("DLPAR_LOCAL_RANK", 0, local_size - 1, &local_rank, err));
  DLPAR_TRY(get_int("DLPAR_DEVICE", -1, DLPAR_MAX_GPUS - 1, &device, err));
  env->grid.tp = (int)tp;
  env->grid.dp = (int)dp;
  env->rank = (int)rank;
  env->local_rank = (int)local_rank;
  env->local_size = (int)local_size;
  env->binding.device = (int)device;
  env->binding.gpu = (int)device;
  if (span && dlpar_span_policy_parse(span, &env->span) != DLPAR_OK)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "DLPAR_TP_SPAN must be error, warn or allow");
  snprintf(env->binding.cpus, sizeof(env->binding.cpus), "%s", getenv("DLPAR_CPUS") ? getenv("DLPAR_CPUS") : "");
  snprintf(env->binding.nic, sizeof(env->binding.nic), "%s", getenv("DLPAR_NIC") ? getenv("DLPAR_NIC") : "");
  DLPAR_TRY(import_options(&env->options, err));
  return import_profile(env, err);
}

void dlpar_task_env_describe(const dlpar_task_env *env, const char *node, char *out, size_t len)
{
  int tp_rank, dp_rank;
  char gpu[16];
  dlpar_grid_coords(&env->grid, env->rank, &tp_rank, &dp_rank);
  if (env->binding.gpu >= 0)
    snprintf(gpu, sizeof(gpu), "%d", env->binding.gpu);
  else
    snprintf(gpu, sizeof(gpu), "none");
  snprintf(out, len, "rank %d node %s local %d/%d tp %d/%d dp %d/%d gpu %s device %d cpus %s nic %s",
           env->rank, node, env->local_rank, env->local_size, tp_rank, env->grid.tp, dp_rank,
           env->grid.dp, gpu, env->binding.device, env->binding.cpus[0] ? env->binding.cpus : "unbound",
           env->binding.nic[0] ? env->binding.nic : "none");
}
