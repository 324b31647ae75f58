/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/master.c: slurmstepd (remote context), once per node (user_init):
 * the step's rendezvous point for PyTorch's env:// contract
 * (common/torchenv.h). MASTER_ADDR is the NodeAddr, from the node table
 * slurmstepd holds, of world rank 0's node: on that node itself, and
 * elsewhere the step's first node, rank 0's under the block, cyclic and
 * plane distributions (srun refuses -m arbitrary under --dl-env=torch; the
 * node holding rank 0 refuses too if rank 0 is not on the first node). An
 * address, not a host name, and never loopback on a step of several nodes
 * (a name that resolves to 127.0.1.1 in /etc/hosts hangs them). MASTER_PORT
 * is the step's first reserved port (srun --resv-ports=1,
 * MpiParams=ports=LO-HI), else one derived from job and step in the
 * admin's torch_ports range; the node holding rank 0 checks that it is
 * free (dlpar_busy_port_verdict: a busy reserved port, or a busy derived
 * one under an explicit --dl-env=torch, ends the step; else a warning).
 * GLOO_SOCKET_IFNAME: this node's interface towards MASTER_ADDR. The
 * address is exported as DLPAR_MASTER_ADDR under --dl-env=none too. A
 * failure is kept for task_init, which reports it and ends the whole step
 * (dlpar_master_end_step: a refusal on rank 0's node alone left the other
 * nodes' ranks running towards that port); an address that cannot be
 * found is a warning (no MASTER_ADDR), not a failure of programs that do
 * not need it. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "common/clock.h"
#include "common/status.h"
#include "common/text.h"
#include "common/torchenv.h"
#include "spank/plugin.h"

/* node's address (NodeAddr) as slurmstepd itself reaches other nodes:
 * Slurm's slurm_conf_get_addr (a slurm_addr_t, struct sockaddr_storage
 * since 20.11), found at run time (it is in no public header; where it is
 * missing or fails, the node's name, which the caller resolves). No RPC:
 * slurm_load_node_single from user_init deadlocks slurmstepd 24.11 on its
 * auth lock ("auth_g_create: pthread_rwlock_rdlock(): Resource deadlock
 * avoided"), and one per node per step would load slurmctld. */
static void node_address(const char *node, char *addr, size_t len)
{
  int (*get_addr)(const char *node_name, struct sockaddr_storage *address, uint16_t flags) = NULL;
  struct sockaddr_storage found;
  memset(&found, 0, sizeof(found));
  *(void **)&get_addr = dlsym(RTLD_DEFAULT, "slurm_conf_get_addr");
  if (!get_addr || get_addr(node, &found, 0) != 0 ||
      getnameinfo((struct sockaddr *)&found, sizeof(found), addr, (socklen_t)len, NULL, 0, NI_NUMERICHOST) != 0)
    snprintf(addr, len, "%s", node);
}

/* The step's node list (SLURM_STEP_NODELIST, compressed) into *nodes, to
 * free. */
static int step_nodelist(spank_t sp, char **nodes, dlpar_error *err)
{
  enum { NODES_MAX = 1 << 20 }; /* the compressed node list of the largest step */
  if ((*nodes = malloc(NODES_MAX)) && spank_getenv(sp, "SLURM_STEP_NODELIST", *nodes, NODES_MAX) == ESPANK_SUCCESS)
    return DLPAR_OK;
  free(*nodes);
  *nodes = NULL;
  return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "cannot read the step's node list (SLURM_STEP_NODELIST)");
}

/* The index-th host of the step's node list (S_JOB_NODEID's numbering)
 * into node. */
static int step_node(spank_t sp, uint32_t index, char *node, size_t len, dlpar_error *err)
{
  /* hostlist_t is a pointer type up to Slurm 23.02 and a struct (used by
   * pointer) from 23.11 on: the list takes whatever the call returns */
  __typeof__(slurm_hostlist_create("")) list = NULL;
  char *nodes, *host = NULL;
  DLPAR_TRY(step_nodelist(sp, &nodes, err));
  list = slurm_hostlist_create(nodes);
  free(nodes);
  for (uint32_t i = 0; list && i <= index; i++) {
    free(host);
    if (!(host = slurm_hostlist_shift(list)))
      break;
  }
  if (list)
    slurm_hostlist_destroy(list);
  if (!host)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "the step's node list has no node %u: no MASTER_ADDR", index);
  snprintf(node, len, "%s", host);
  free(host);
  return DLPAR_OK;
}

int dlpar_master_this_node(spank_t sp, char *node, size_t len, dlpar_error *err)
{
  uint32_t node_id = 0;
  if (spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "cannot read this node's index in the step from slurmstepd");
  return step_node(sp, node_id, node, len, err);
}

/* World rank 0's node (this one where rank 0 runs here, else the step's
 * first node) into dlpar_spank.master_node and its address into addr; a
 * warning in err where there is none to export. */
static int master_address(spank_t sp, bool rank0_here, char *addr, size_t len, dlpar_error *err)
{
  char *node = dlpar_spank.master_node;
  uint32_t nnodes = 1, node_id = 0;
  if (rank0_here)
    spank_get_item(sp, S_JOB_NODEID, &node_id);
  DLPAR_TRY(step_node(sp, node_id, node, sizeof(dlpar_spank.master_node), err));
  node_address(node, addr, len);
  if (dlpar_numeric_address(addr, addr, len) != DLPAR_OK)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "MASTER_ADDR: node %s's address %s does not resolve (set NodeAddr in "
                           "slurm.conf, or --dl-env=none and your own MASTER_ADDR)", dlpar_show(node).text,
                           dlpar_show(addr).text);
  spank_get_item(sp, S_JOB_NNODES, &nnodes);
  return dlpar_master_addr_warning(node, addr, nnodes, err) == DLPAR_OK ? DLPAR_OK : DLPAR_ERR_SYSTEM;
}

/* The step's reserved port, else the derived one; on rank 0's node,
 * checked free: DLPAR_OK, DLPAR_WARN (a busy derived port under the
 * default --dl-env) or DLPAR_ERR_INPUT (the step must end), err saying
 * why. Rank 0 must be on the step's first node (MASTER_ADDR's elsewhere). */
static int choose_port(spank_t sp, bool rank0_here, dlpar_error *err)
{
  char reserved[256], user_port[DLPAR_TEXT_MAX + 2];
  uint32_t job = 0, step = 0, node_id = 0;
  const int reserved_port =
      spank_getenv(sp, "SLURM_STEP_RESV_PORTS", reserved, sizeof(reserved)) == ESPANK_SUCCESS
          ? dlpar_resv_ports_first(reserved)
          : 0;
  spank_err_t user_set;
  spank_get_item(sp, S_JOB_ID, &job);
  spank_get_item(sp, S_JOB_STEPID, &step);
  spank_get_item(sp, S_JOB_NODEID, &node_id);
  if (rank0_here && node_id != 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "rank 0 runs on %s, not on the step's first node (an arbitrary "
                           "distribution?), so the other nodes' MASTER_ADDR would be wrong: use a block, cyclic or "
                           "plane distribution, or --dl-env=none and your own MASTER_ADDR",
                           dlpar_show(dlpar_spank.master_node).text);
  dlpar_spank.master_port = reserved_port ? reserved_port
                                          : dlpar_torch_port_derive(job, step, dlpar_spank.admin.torch_port_lo,
                                                                    dlpar_spank.admin.torch_port_hi);
  user_set = spank_getenv(sp, "MASTER_PORT", user_port, sizeof(user_port));
  if (!rank0_here || user_set == ESPANK_SUCCESS || user_set == ESPANK_NOSPACE ||
      dlpar_port_free(dlpar_spank.master_port))
    return DLPAR_OK;
  return dlpar_busy_port_verdict(dlpar_spank.master_port, reserved_port != 0, dlpar_spank.options.env.given,
                                 dlpar_spank.master_node, err);
}

int dlpar_master_prepare(spank_t sp, bool torch_env)
{
  uint32_t local;
  const bool rank0_here = spank_get_item(sp, S_JOB_GLOBAL_TO_LOCAL_ID, 0u, &local) == ESPANK_SUCCESS;
  int rc;
  /* No address: no MASTER_ADDR, and rank 0's task says why (programs that
   * do not read it, dlpar-train among them, run on). */
  dlpar_spank.master_warning.text[0] = dlpar_spank.port_warning[0] = dlpar_spank.gloo_ifname[0] = '\0';
  if (master_address(sp, rank0_here, dlpar_spank.master_addr, sizeof(dlpar_spank.master_addr),
                     &dlpar_spank.master_warning) != DLPAR_OK)
    dlpar_spank.master_addr[0] = '\0';
  if (!torch_env)
    return dlpar_spank.master_error.status = DLPAR_OK;
  rc = choose_port(sp, rank0_here, &dlpar_spank.master_error);
  if (rc == DLPAR_WARN)
    snprintf(dlpar_spank.port_warning, sizeof(dlpar_spank.port_warning), "%s", dlpar_spank.master_error.text);
  dlpar_spank.master_error.status = rc == DLPAR_WARN ? DLPAR_OK : rc;
  if (dlpar_spank.master_addr[0] &&
      dlpar_route_interface(dlpar_spank.master_addr, dlpar_spank.gloo_ifname, sizeof(dlpar_spank.gloo_ifname)) !=
          DLPAR_OK)
    dlpar_spank.gloo_ifname[0] = '\0'; /* no route found: gloo chooses */
  return dlpar_spank.master_error.status;
}

/* Whether every node of the step but this one (me) has all its tasks
 * now: it answers for the step's pids with at least its count of tasks
 * (tasks[i], in node list order). */
static bool tasks_elsewhere(slurm_step_id_t *id, char *nodes, const int *tasks, uint32_t nnodes, uint32_t me)
{
  __typeof__(slurm_hostlist_create("")) list = slurm_hostlist_create(nodes);
  job_step_pids_response_msg_t *pids = NULL;
  uint32_t ready = 0;
  if (list && slurm_job_step_get_pids(id, nodes, &pids) == SLURM_SUCCESS && pids) {
    __typeof__(slurm_list_iterator_create(pids->pid_list)) next = slurm_list_iterator_create(pids->pid_list);
    for (const job_step_pids_t *node; (node = slurm_list_next(next));) {
      const int i = slurm_hostlist_find(list, node->node_name);
      ready += i >= 0 && (uint32_t)i < nnodes && (uint32_t)i != me && node->pid_cnt >= (uint32_t)tasks[i];
    }
    slurm_list_iterator_destroy(next);
  }
  if (pids)
    slurm_job_step_pids_response_msg_free(pids);
  if (list)
    slurm_hostlist_destroy(list);
  return ready + 1 >= nnodes;
}

enum { KILL_SETTLE_US = 200000 }; /* KILL_SETTLE below */

/* Another job's TCPStore has no authentication: the other nodes' ranks must
 * not run towards a MASTER_ADDR:MASTER_PORT that another process holds.
 * Slurm drops a step signal that reaches a node before its tasks exist
 * (22.05: the other node's tasks then ran and joined the other store, in 4
 * of 6 tries on the bed), so the kill waits, up to 10 s, until every other
 * node has its tasks, and KILL_SETTLE more (a kill sent the moment they
 * appeared was still lost once in about 50 tries, as if it overtook their
 * node's report that they started): they die as they start. From
 * task_init, where slurmstepd holds no auth lock (an RPC from user_init
 * deadlocks 24.11's); once per step: only rank 0's node refuses so. */
int dlpar_master_end_step(spank_t sp, dlpar_error *err)
{
  uint32_t job = 0, step = 0, nnodes = 1, me = 0;
  slurm_step_id_t id;
  char *nodes = NULL, per_node[4096]; /* SLURM_STEP_TASKS_PER_NODE, compressed */
  int *tasks = NULL, rc;
  spank_get_item(sp, S_JOB_ID, &job);
  spank_get_item(sp, S_JOB_STEPID, &step);
  spank_get_item(sp, S_JOB_NNODES, &nnodes);
  spank_get_item(sp, S_JOB_NODEID, &me);
  memset(&id, 0, sizeof(id));
  id.job_id = job;
  id.step_id = step;
  id.step_het_comp = NO_VAL;
  /* without the layout, the kill goes at once */
  if (step_nodelist(sp, &nodes, err) == DLPAR_OK && (tasks = calloc(nnodes, sizeof(int))) &&
      spank_getenv(sp, "SLURM_STEP_TASKS_PER_NODE", per_node, sizeof(per_node)) == ESPANK_SUCCESS &&
      dlpar_parse_tasks_per_node(per_node, tasks, (int)nnodes) == (int)nnodes) {
    for (const double end = dlpar_now() + 10; !tasks_elsewhere(&id, nodes, tasks, nnodes, me) && dlpar_now() < end;)
      usleep(20000);
    usleep(KILL_SETTLE_US);
  }
  free(tasks);
  free(nodes);
  err->text[0] = '\0';
#if HAVE_SLURM_KILL_JOB_STEP_ID
  rc = slurm_kill_job_step(&id, SIGKILL, 0);
#elif HAVE_SLURM_KILL_JOB_STEP_FLAGS
  rc = slurm_kill_job_step(job, step, SIGKILL, 0);
#else
  rc = slurm_kill_job_step(job, step, SIGKILL);
#endif
  if (rc == SLURM_SUCCESS)
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "cannot end step %u.%u after the refusal above (%s): its other nodes' "
                         "tasks run on (scancel %u.%u)", job, step, slurm_strerror(errno), job, step);
}
