/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/stepd.c: slurmstepd (remote context). Once per node (user_init, as
 * root) the node's topology is loaded; then per task (task_init, in the
 * task's process, as the user, before exec) the grid is checked again for
 * this node, the task is bound to its GPU, CPUs and NIC, the profiling
 * request is prepared, and the DLPAR_* contract is exported. Errors are
 * raised from task_init, except a refused rendezvous point on rank 0's
 * node, raised in user_init so that node forks no task (spank/master.c);
 * both reach the user's srun. As the tasks end (task_exit, in slurmstepd),
 * the node's first task that a signal ended is named. Nothing the user
 * typed is executed or used as a path here. */
#include "config.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "common/status.h"
#include "common/taskenv.h"
#include "common/topo.h"
#include "common/torchenv.h"
#include "spank/hostlist.h"
#include "spank/plugin.h"

typedef struct {
  uint32_t ntasks, rank, local_count, job_id, step_id;
  int local_rank;
  char node[64];
} task_facts;

/* One of slurmstepd's items about the task; a failure names the item. */
static int read_task_item(spank_t sp, spank_item_t item, const char *name, void *out, dlpar_error *err)
{
  const spank_err_t rc = spank_get_item(sp, item, out);
  if (rc != ESPANK_SUCCESS)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "cannot read the task's %s from slurmstepd: %s", name,
                           spank_strerror(rc));
  return DLPAR_OK;
}

static int read_task_facts(spank_t sp, task_facts *facts, dlpar_error *err)
{
  memset(facts, 0, sizeof(*facts));
  DLPAR_TRY(read_task_item(sp, S_JOB_TOTAL_TASK_COUNT, "step size (S_JOB_TOTAL_TASK_COUNT)", &facts->ntasks, err));
  DLPAR_TRY(read_task_item(sp, S_TASK_GLOBAL_ID, "rank (S_TASK_GLOBAL_ID)", &facts->rank, err));
  DLPAR_TRY(read_task_item(sp, S_TASK_ID, "local rank (S_TASK_ID)", &facts->local_rank, err));
  DLPAR_TRY(read_task_item(sp, S_JOB_LOCAL_TASK_COUNT, "tasks on this node (S_JOB_LOCAL_TASK_COUNT)",
                           &facts->local_count, err));
  DLPAR_TRY(read_task_item(sp, S_JOB_ID, "job id (S_JOB_ID)", &facts->job_id, err));
  DLPAR_TRY(read_task_item(sp, S_JOB_STEPID, "step id (S_JOB_STEPID)", &facts->step_id, err));
  if (spank_getenv(sp, "SLURMD_NODENAME", facts->node, sizeof(facts->node)) != ESPANK_SUCCESS)
    snprintf(facts->node, sizeof(facts->node), "?");
  return DLPAR_OK;
}

/* Whether the task's environment has name; its value, cut to len - 1
 * bytes where longer, in value. */
static bool task_env(spank_t sp, const char *name, char *value, int len)
{
  const spank_err_t rc = spank_getenv(sp, name, value, len);
  return rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE;
}

/* PMIx must be the step's MPI plugin: libdlpar bootstraps from it. (A
 * value cut to the buffer is longer than dlpar_show shows: it ends "...".) */
static int check_pmix(spank_t sp, dlpar_error *err)
{
  char mpi[DLPAR_TEXT_MAX + 2];
  if (task_env(sp, "PMIX_RANK", mpi, sizeof(mpi)))
    return DLPAR_OK;
  if (!task_env(sp, "SLURM_MPI_TYPE", mpi, sizeof(mpi)))
    snprintf(mpi, sizeof(mpi), "none");
  return dlpar_pmix_refusal(mpi, err);
}

/* A heterogeneous step: SLURM_STEP_NUM_TASKS counts every component's tasks
 * (one PMIx namespace); S_JOB_TOTAL_TASK_COUNT, this component's (22.05 and
 * 24.11 alike). Every task of every component refuses, so the step ends at
 * once. */
static int check_not_heterogeneous(spank_t sp, const task_facts *facts, dlpar_error *err)
{
  char components[DLPAR_TEXT_MAX + 2], step_tasks[16];
  if (!task_env(sp, "SLURM_HET_SIZE", components, sizeof(components)) ||
      spank_getenv(sp, "SLURM_STEP_NUM_TASKS", step_tasks, sizeof(step_tasks)) != ESPANK_SUCCESS)
    return DLPAR_OK;
  return dlpar_het_refusal(components, step_tasks, (long)facts->ntasks, err);
}

/* Every tensor-parallel group with a rank on this node must be whole on
 * this node, whatever srun predicted: ranks elsewhere count as "another node".
 * Under tp_span=warn, DLPAR_WARN only on the node of the first spanning
 * group's first rank, so the step prints the warning once. */
static int check_groups_local(spank_t sp, const dlpar_grid *grid, const task_facts *facts, dlpar_error *err)
{
  const char *names[2] = {facts->node, "another node"};
  int *rank_node = malloc(sizeof(int) * facts->ntasks);
  int rc, first = 0;
  if (!rank_node)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory");
  for (uint32_t rank = 0; rank < facts->ntasks; rank++) {
    uint32_t local_id;
    rank_node[rank] = spank_get_item(sp, S_JOB_GLOBAL_TO_LOCAL_ID, rank, &local_id) != ESPANK_SUCCESS;
  }
  rc = dlpar_grid_check_span(grid, rank_node, names, dlpar_spank.admin.tp_span, &first, err);
  if (rc == DLPAR_WARN && rank_node[first] != 0)
    rc = DLPAR_OK;
  free(rank_node);
  return rc;
}

/* The step's GPUs on this node, as task_init_privileged sees them (before
 * Slurm narrows each task's view under --gpus-per-task); none: all of the
 * node's. */
static int read_step_gpus(spank_t sp, int *gpus)
{
  char text[DLPAR_LIST_LEN];
  int n;
  if (spank_getenv(sp, "SLURM_STEP_GPUS", text, sizeof(text)) != ESPANK_SUCCESS &&
      spank_getenv(sp, "CUDA_VISIBLE_DEVICES", text, sizeof(text)) != ESPANK_SUCCESS)
    return 0;
  n = dlpar_parse_id_list(text, gpus, DLPAR_MAX_GPUS);
  return n > 0 ? n : 0;
}

/* Bind to the GPU's CPUs, unless the admin or the user (--cpu-bind) chose
 * otherwise. CPUs the step may not use are dropped; none left: no binding. */
static void bind_cpus(spank_t sp, dlpar_binding *binding)
{
  char user_bind[64];
  if (!dlpar_spank.admin.bind_cpus ||
      spank_getenv(sp, "SLURM_CPU_BIND_TYPE", user_bind, sizeof(user_bind)) == ESPANK_SUCCESS ||
      dlpar_bind_cpus(binding->cpus) == 0)
    binding->cpus[0] = '\0';
}

static int prepare_profile(spank_t sp, const task_facts *facts, dlpar_task_env *env, dlpar_error *err)
{
  char job[16], step[16], path[4096], nsys[4096], whose[128];
  const char *dir = dlpar_spank.admin.profile_dir[0] ? dlpar_spank.admin.profile_dir : ".";
  env->profile = dlpar_spank.request.profile.tool;
  env->profile_first_step = dlpar_spank.request.profile.first_step;
  env->profile_last_step = dlpar_spank.request.profile.last_step;
  env->profile_this_rank = dlpar_profile_selects(&dlpar_spank.request.profile, (int)facts->rank);
  snprintf(job, sizeof(job), "%u", facts->job_id);
  snprintf(step, sizeof(step), "%u", facts->step_id);
  dlpar_profile_output_name(dir, job, step, (int)facts->rank, env->profile_output,
                            sizeof(env->profile_output));
  if (env->profile != DLPAR_PROFILE_NSYS || !env->profile_this_rank)
    return DLPAR_OK;
  snprintf(whose, sizeof(whose), "rank %u on %s", facts->rank, facts->node);
  if (dlpar_nsys_find(spank_getenv(sp, "PATH", path, sizeof(path)) == ESPANK_SUCCESS ? path : NULL, whose, nsys,
                      sizeof(nsys), err) != DLPAR_OK)
    return DLPAR_ERR_INPUT;
#if HAVE_DECL_SPANK_PREPEND_TASK_ARGV
  {
    const char *argv[DLPAR_NSYS_ARGC];
    dlpar_nsys_argv(env->profile_output, argv);
    if (spank_prepend_task_argv(sp, DLPAR_NSYS_ARGC, argv) != ESPANK_SUCCESS)
      return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "--dl-profile=nsys: cannot prepend nsys to the task's command");
    spank_setenv(sp, "DLPAR_PROFILE_WRAPPED", "1", 1);
  }
#endif
  return DLPAR_OK;
}

/* The env:// contract: the node's rank among the step's nodes and the
 * rendezvous point dlpar_master_prepare chose for the node. */
static void set_torch_env(spank_t sp, dlpar_task_env *env)
{
  uint32_t node_id = 0;
  spank_get_item(sp, S_JOB_NODEID, &node_id);
  env->node_rank = (int)node_id;
  snprintf(env->master_addr, sizeof(env->master_addr), "%s", dlpar_spank.master_addr);
  env->master_port = dlpar_spank.master_port;
  snprintf(env->gloo_ifname, sizeof(env->gloo_ifname), "%s", dlpar_spank.gloo_ifname);
}

static int set_task_env(spank_t sp, const char *name, const char *value, int overwrite)
{
  const spank_err_t rc = spank_setenv(sp, name, value, overwrite);
  return rc == ESPANK_SUCCESS || (rc == ESPANK_ENV_EXISTS && !overwrite) ? 0 : -1;
}

/* The site's network settings for the node first, then the task's own:
 * a value the user exported stays where dlpar_env_keeps_user_value says
 * so, and for the site's names; a name the site sets keeps the site's (the NIC
 * binding's NCCL_IB_HCA, UCX_NET_DEVICES; the derived interfaces). */
static int export_env(spank_t sp, const dlpar_task_env *env)
{
  dlpar_env_list list;
  for (int i = 0; i < dlpar_spank.node_net.count; i++)
    if (set_task_env(sp, dlpar_spank.node_net.setting[i].var, dlpar_spank.node_net.setting[i].value, 0) != 0)
      return -1;
  dlpar_task_env_export(env, &list);
  for (int i = 0; i < list.count; i++) {
    const char *name = list.var[i].name;
    const int overwrite = !dlpar_env_keeps_user_value(name);
    if (!dlpar_net_find(&dlpar_spank.node_net, name) && set_task_env(sp, name, list.var[i].value, overwrite) != 0)
      return -1;
  }
  return 0;
}

/* The batch script, the extern and the interactive step are not the user's
 * parallel program: dlpar leaves them alone (their srun steps get the grid). */
static bool is_parallel_step(spank_t sp)
{
  uint32_t step_id;
  return spank_get_item(sp, S_JOB_STEPID, &step_id) == ESPANK_SUCCESS &&
         step_id < SLURM_INTERACTIVE_STEP;
}

int dlpar_stepd_task_init_privileged(spank_t sp)
{
  if (is_parallel_step(sp))
    dlpar_spank.nstep_gpus = read_step_gpus(sp, dlpar_spank.step_gpus);
  return 0;
}

/* The site's network settings that hold on this node, their interfaces
 * checked here: once per node (user_init); a failure is said by the
 * node's first task, every task refuses. */
static void node_network(spank_t sp)
{
  char node[256];
  dlpar_error *err = &dlpar_spank.net_error;
  err->status = DLPAR_OK;
  dlpar_spank.node_net.count = 0;
  if (dlpar_master_this_node(sp, node, sizeof(node), err) == DLPAR_OK &&
      dlpar_net_for_node(&dlpar_spank.admin.net, node, dlpar_slurm_hostlist_has, &dlpar_spank.node_net, err) == DLPAR_OK)
    (void)dlpar_net_check_interfaces(&dlpar_spank.node_net, node, err);
}

int dlpar_stepd_user_init(spank_t sp)
{
  if (!is_parallel_step(sp))
    return 0;
  const char *xml = dlpar_spank.admin.topology_xml[0] ? dlpar_spank.admin.topology_xml : NULL;
  dlpar_error parse_err;
  dlpar_spank.topology_error.status = dlpar_topology_load(xml, &dlpar_spank.topology, &dlpar_spank.topology_error);
  dlpar_spank.master_error.status = DLPAR_OK;
  node_network(sp);
  if (dlpar_request_parse(&dlpar_spank.options, &dlpar_spank.request, &parse_err) != DLPAR_OK ||
      dlpar_master_prepare(sp, dlpar_spank.request.torch_env) == DLPAR_OK)
    return 0; /* the other errors found here: task_init raises them */
  /* Rank 0's node refuses its rendezvous point before it forks any task
   * (slurmstepd copies this line to srun by now, and a required plugin's
   * failure here starts no task on the node; the other nodes' tasks wait
   * for this node's, dlpar_master_wait_rank0). Under an optional plugin
   * Slurm ignores the failure: task_init then ends the step. */
  dlpar_spank_error(dlpar_spank.master_error.text);
  dlpar_spank.master_said = true;
  sleep(DLPAR_MASTER_REFUSAL_LINGER_S); /* the other nodes' tasks see this slurmstepd end without tasks */
  return -1;
}

static int setup_task(spank_t sp, dlpar_error *err)
{
  task_facts facts;
  dlpar_task_env env;
  int rc;
  memset(&env, 0, sizeof(env));
  DLPAR_TRY(read_task_facts(sp, &facts, err));
  DLPAR_TRY(check_not_heterogeneous(sp, &facts, err));
  DLPAR_TRY(dlpar_request_parse(&dlpar_spank.options, &dlpar_spank.request, err));
  DLPAR_TRY(dlpar_grid_resolve(&dlpar_spank.request.grid, (int)facts.ntasks, &env.grid, err));
  DLPAR_TRY(dlpar_profile_check(&dlpar_spank.request.profile, (int)facts.ntasks, err));
  DLPAR_TRY(check_pmix(sp, err));
  rc = check_groups_local(sp, &env.grid, &facts, err);
  if (rc == DLPAR_ERR_INPUT)
    return rc;
  if (rc == DLPAR_WARN && facts.local_rank == 0)
    dlpar_spank_error(err->text);
  if (dlpar_spank.topology_error.status != DLPAR_OK) {
    *err = dlpar_spank.topology_error;
    return err->status;
  }
  if (dlpar_spank.net_error.status != DLPAR_OK) { /* said by the node's first task */
    dlpar_error_set(err, dlpar_spank.net_error.status, "%s", facts.local_rank == 0 ? dlpar_spank.net_error.text : "");
    return err->status;
  }
  if (dlpar_spank.request.torch_env && dlpar_spank.master_error.status != DLPAR_OK) {
    /* the node's problem (only rank 0's node has it), said by its first
     * task, which then ends the step on every node */
    err->text[0] = '\0';
    if (facts.local_rank == 0) {
      if (!dlpar_spank.master_said)
        dlpar_spank_error(dlpar_spank.master_error.text);
      (void)dlpar_master_end_step(sp, err); /* its failure is said in err */
    }
    return dlpar_spank.master_error.status;
  }
  if (dlpar_spank.request.torch_env && dlpar_spank.master_wait)
    DLPAR_TRY(dlpar_master_wait_rank0(sp, facts.local_rank == 0, err));
  if (dlpar_spank.request.torch_env && dlpar_spank.master_hold && facts.local_rank == 0)
    DLPAR_TRY(dlpar_master_hold(sp));
  rc = dlpar_map_task(&dlpar_spank.topology, dlpar_spank.step_gpus, dlpar_spank.nstep_gpus, facts.local_rank,
                      (int)facts.local_count, &env.binding, err);
  if (rc < 0)
    return rc;
  if (rc == DLPAR_WARN && facts.local_rank == 0)
    dlpar_spank_error(err->text);
  bind_cpus(sp, &env.binding);
  if (!dlpar_spank.admin.bind_nic)
    env.binding.nic[0] = env.binding.node_nics[0] = '\0';
  env.rank = (int)facts.rank;
  env.local_rank = facts.local_rank;
  env.local_size = (int)facts.local_count;
  env.span = dlpar_spank.admin.tp_span;
  env.options = dlpar_spank.request;
  set_torch_env(sp, &env);
  if (env.options.torch_env && !env.master_addr[0] && facts.rank == 0)
    dlpar_spank_error(dlpar_spank.master_warning.text);
  if (env.options.torch_env && dlpar_spank.port_warning[0] && facts.rank == 0)
    dlpar_spank_error(dlpar_spank.port_warning);
  DLPAR_TRY(prepare_profile(sp, &facts, &env, err));
  if (export_env(sp, &env) != 0)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "cannot set the task's DLPAR_* environment");
  if (env.options.verbose) {
    char line[DLPAR_ERRLEN];
    dlpar_task_env_describe(&env, facts.node, line, sizeof(line));
    fprintf(stderr, "%s: %s\n", DLPAR_PLUGIN, line);
  }
  return DLPAR_OK;
}

int dlpar_stepd_task_init(spank_t sp)
{
  dlpar_error err = {0};
  if (!is_parallel_step(sp))
    return 0;
  if (setup_task(sp, &err) != DLPAR_OK) {
    if (err.text[0]) /* empty: another task of the node said it */
      dlpar_spank_error(err.text);
    return -1;
  }
  return 0;
}

/* The node's first task to end, where a signal ended it, is named in one
 * line that reaches srun. Slurm writes a step's cancellation ("CANCELLED
 * AT", from the step's first node) before it kills the step's tasks, so a
 * SIGKILL line with no cancellation before it is a task killed from
 * outside the step, as the OOM killer kills. contrib/dlpar-restart leaves
 * its node out, where srun's own lines may list that task with those the
 * cancellation killed (Slurm 24.11). Only the first task of a node is
 * named, so a cancelled step prints one line per node at most. */
int dlpar_stepd_task_exit(spank_t sp)
{
  int status = 0;
  uint32_t rank = 0;
  pid_t pid = 0;
  char node[64], line[DLPAR_ERRLEN];
  dlpar_error err = {0};
  if (!is_parallel_step(sp) || dlpar_spank.task_ended)
    return 0;
  dlpar_spank.task_ended = true;
  if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS || !WIFSIGNALED(status) ||
      spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS ||
      dlpar_master_this_node(sp, node, sizeof(node), &err) != DLPAR_OK)
    return 0;
  if (WTERMSIG(status) == SIGKILL)
    snprintf(line, sizeof(line), "rank %u (pid %ld) on %s was killed by SIGKILL before any other task of its node "
             "ended: the OOM killer or kill -9, unless the step's cancellation came first", rank, (long)pid, node);
  else
    snprintf(line, sizeof(line), "rank %u (pid %ld) on %s was ended by signal %d (%s) before any other task of its "
             "node ended", rank, (long)pid, node, WTERMSIG(status), strsignal(WTERMSIG(status)));
  dlpar_spank_error(line);
  return 0;
}
