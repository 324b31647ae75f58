/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/master.c: in slurmstepd's remote context, once per node in
 * user_init, the step's rendezvous point for PyTorch's env:// contract of
 * common/torchenv.h. MASTER_ADDR is the NodeAddr of world rank 0's node,
 * from the node table slurmstepd holds. On rank 0's node it is that node
 * itself. Elsewhere it is the step's first node, which holds rank 0 under
 * the block, cyclic and plane distributions. srun refuses -m arbitrary under
 * --dl-env=torch, and the node holding rank 0 refuses too if rank 0 is
 * not on the first node. MASTER_ADDR is an address, not a host name, and
 * never loopback on a step of several nodes, because a name that resolves
 * to 127.0.1.1 in /etc/hosts hangs them. MASTER_PORT is the step's first
 * reserved port, from srun --resv-ports=1 and MpiParams=ports=LO-HI, else
 * one derived from job and step in the admin's torch_ports range. The node
 * holding rank 0 checks that it is free, and who listens on it where it is
 * not, in dlpar_busy_port_verdict. A busy reserved port, a derived one
 * another user's process holds, or a busy derived one under an explicit
 * --dl-env=torch ends the step; anything else busy is a warning.
 * GLOO_SOCKET_IFNAME is this node's interface towards MASTER_ADDR. The
 * address is exported as DLPAR_MASTER_ADDR under --dl-env=none too.
 * A refusal on rank 0's node is said and raised in user_init, before that
 * node forks a task. The other nodes' tasks wait in task_init, in
 * dlpar_master_wait_rank0, until rank 0's node has tasks, and that node
 * holds its tasks in dlpar_master_hold until the others saw them. So no
 * task anywhere runs towards a refused port. Under an optional plugin
 * Slurm ignores the user_init failure, and task_init ends the whole step
 * in dlpar_master_end_step. An address that cannot be found is a warning,
 * and MASTER_ADDR is then not set, rather than a failure of programs that
 * do not need it. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sys/prctl.h>
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
#include "spank/hostlist.h"
#include "spank/plugin.h"

/* node's address, its NodeAddr, as slurmstepd itself reaches other nodes.
 * It comes from Slurm's slurm_conf_get_addr, whose slurm_addr_t is a
 * struct sockaddr_storage since 20.11. That function is in no public
 * header, so it is found at run time. Where it is missing or fails, this
 * gives the node's name, which the caller resolves. It makes no RPC:
 * slurm_load_node_single from user_init deadlocks slurmstepd 24.11 on its
 * auth lock with "auth_g_create: pthread_rwlock_rdlock(): Resource
 * deadlock avoided", and one per node per step would load slurmctld. */
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

/* The step's compressed node list, SLURM_STEP_NODELIST, into *nodes, for
 * the caller to free. */
static int step_nodelist(spank_t sp, char **nodes, dlpar_error *err)
{
  enum { NODES_MAX = 1 << 20 }; /* the compressed node list of the largest step */
  if ((*nodes = malloc(NODES_MAX)) && spank_getenv(sp, "SLURM_STEP_NODELIST", *nodes, NODES_MAX) == ESPANK_SUCCESS)
    return DLPAR_OK;
  free(*nodes);
  *nodes = NULL;
  return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "cannot read the step's node list (SLURM_STEP_NODELIST)");
}

/* The index-th host of the step's node list, numbered as S_JOB_NODEID is,
 * into node. */
static int step_node(spank_t sp, uint32_t index, char *node, size_t len, dlpar_error *err)
{
  /* hostlist_t is a pointer type up to Slurm 23.02 and a struct, used by
   * pointer, from 23.11 on, so the list takes whatever the call returns. */
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

/* World rank 0's node into dlpar_spank.master_node, and its address into
 * addr. It is this node where rank 0 runs here, else the step's first
 * node. err gets a warning where there is no address to export. */
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

/* The step's reserved port, else the derived one. On rank 0's node it is
 * checked free, giving DLPAR_OK, DLPAR_WARN for a busy derived port under
 * the default --dl-env, or DLPAR_ERR_INPUT when the step must end, with
 * err saying why. Rank 0 must be on the step's first node, which the
 * other nodes give as MASTER_ADDR. */
static int choose_port(spank_t sp, bool rank0_here, dlpar_error *err)
{
  char reserved[256], user_port[DLPAR_TEXT_MAX + 2];
  uint32_t job = 0, step = 0, node_id = 0, nnodes = 1;
  uid_t user = 0;
  long holder = -1;
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
  if (user_set == ESPANK_SUCCESS || user_set == ESPANK_NOSPACE)
    return DLPAR_OK;
  spank_get_item(sp, S_JOB_NNODES, &nnodes);
  dlpar_spank.master_wait = !rank0_here;
  dlpar_spank.master_hold = rank0_here && nnodes > 1;
  if (!rank0_here || dlpar_port_free(dlpar_spank.master_port))
    return DLPAR_OK;
  spank_get_item(sp, S_JOB_UID, &user);
  if (!reserved_port)
    (void)dlpar_port_listener(dlpar_spank.master_port, (long)user, &holder); /* unreadable: -1, a stranger's */
  return dlpar_busy_port_verdict(dlpar_spank.master_port, reserved_port != 0,
                                 dlpar_spank.options.value[DLPAR_OPT_ENV].given, holder, (long)user,
                                 dlpar_spank.master_node, err);
}

int dlpar_master_prepare(spank_t sp, bool torch_env)
{
  uint32_t local;
  const bool rank0_here = spank_get_item(sp, S_JOB_GLOBAL_TO_LOCAL_ID, 0u, &local) == ESPANK_SUCCESS;
  int rc;
  /* Without an address there is no MASTER_ADDR, and rank 0's task says why.
   * Programs that do not read it, dlpar-train among them, run on. */
  dlpar_spank.master_warning.text[0] = dlpar_spank.port_warning[0] = dlpar_spank.gloo_ifname[0] = '\0';
  dlpar_spank.master_said = dlpar_spank.master_wait = dlpar_spank.master_hold = false;
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

/* The step's id, as libslurm's RPCs name it. */
static void this_step(spank_t sp, slurm_step_id_t *id)
{
  uint32_t job = 0, step = 0;
  spank_get_item(sp, S_JOB_ID, &job);
  spank_get_item(sp, S_JOB_STEPID, &step);
  memset(id, 0, sizeof(*id));
  id->job_id = job;
  id->step_id = step;
  id->step_het_comp = NO_VAL;
}

/* For dlpar_master_wait_rank0 and dlpar_master_hold: how long a node waits
 * for rank 0's at most, how often it asks, and how long rank 0's node
 * keeps its first task once every node has its tasks, so that they see
 * it. They ask every 10 ms. */
enum { MASTER_WAIT_S = 300, POLL_US = 10000, HOLD_SETTLE_US = 250000 };

/* A task waiting in task_init is still named "slurmstepd", and Slurm's
 * proctrack/linuxproc leaves processes of that name out of a step's pid
 * list, taking them for slurmstepd itself. Under another name, the other
 * nodes see this task while it waits. exec renames it again. */
static void show_waiting(const char *name)
{
  (void)prctl(PR_SET_NAME, name, 0, 0, 0);
}

/* What node says of step id. 1 means it has tasks. 0 means its slurmstepd
 * answers without any, not forked yet or all ended. -1 means no answer. */
static int node_tasks_state(slurm_step_id_t *id, char *node)
{
  job_step_pids_response_msg_t *pids = NULL;
  int state = -1;
  /* libslurm logs each failed RPC on stderr, which is the user's srun here:
   * a poll that fails until a node's slurmstepd exists would fill it. */
  const int saved = dlpar_slurm_quiet_stderr();
  if (slurm_job_step_get_pids(id, node, &pids) == SLURM_SUCCESS && pids) {
    __typeof__(slurm_list_iterator_create(pids->pid_list)) next = slurm_list_iterator_create(pids->pid_list);
    state = 0;
    for (const job_step_pids_t *answer; (answer = slurm_list_next(next));)
      state = state == 1 || answer->pid_cnt > 0 ? 1 : 0;
    slurm_list_iterator_destroy(next);
  }
  dlpar_slurm_restore_stderr(saved);
  if (pids)
    slurm_job_step_pids_response_msg_free(pids);
  return state;
}

/* Slurm starts each node's tasks on its own, so a refusal on rank 0's node,
 * in user_init before it forks any task, cannot stop the other nodes'
 * tasks once they run. So they wait here, in task_init, before the program
 * is executed, until rank 0's node has tasks. That node forks them only
 * once its user_init accepted the port, and holds them in
 * dlpar_master_hold until the others saw them. If its slurmstepd is gone
 * without tasks after it answered once, it refused, and these tasks end
 * too. It stays DLPAR_MASTER_REFUSAL_LINGER_S seconds for this, since srun
 * does not end the step for that. One that never answers, because slurmd's
 * prolog there may still run, ends these tasks after 300 s. */
int dlpar_master_wait_rank0(spank_t sp, bool say, dlpar_error *err)
{
  slurm_step_id_t id;
  bool answered = false;
  const double start = dlpar_now();
  this_step(sp, &id);
  err->text[0] = '\0';
  show_waiting("dlpar-wait");
  for (int state; (state = node_tasks_state(&id, dlpar_spank.master_node)) != 1; usleep(POLL_US)) {
    const double waited = dlpar_now() - start;
    answered = answered || state == 0;
    if (state == -1 && answered) {
      err->status = DLPAR_ERR_INPUT; /* its slurmstepd ended without tasks: it refused, and said why */
      return err->status;
    }
    if (waited > MASTER_WAIT_S && !say)
      return err->status = DLPAR_ERR_SYSTEM;
    if (waited > MASTER_WAIT_S)
      return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "rank 0's node %s started no task of step %u.%u within %d s: "
                             "this node's tasks do not start either", dlpar_show(dlpar_spank.master_node).text,
                             id.job_id, id.step_id, (int)MASTER_WAIT_S);
  }
  return DLPAR_OK;
}

/* Whether every node of the step but this one, me, has had all its tasks.
 * A node has them when it answers for the step's pids with at least its
 * count of tasks, tasks[i] in node list order, now or at an earlier call.
 * tasks[i] is then 0, so a node whose tasks ended at once is not waited
 * for again. */
static bool tasks_elsewhere(slurm_step_id_t *id, char *nodes, int *tasks, uint32_t nnodes, uint32_t me)
{
  __typeof__(slurm_hostlist_create("")) list = slurm_hostlist_create(nodes);
  job_step_pids_response_msg_t *pids = NULL;
  uint32_t ready = 0;
  const int saved = dlpar_slurm_quiet_stderr();
  if (list && slurm_job_step_get_pids(id, nodes, &pids) == SLURM_SUCCESS && pids) {
    __typeof__(slurm_list_iterator_create(pids->pid_list)) next = slurm_list_iterator_create(pids->pid_list);
    for (const job_step_pids_t *node; (node = slurm_list_next(next));) {
      const int i = slurm_hostlist_find(list, node->node_name);
      if (i >= 0 && (uint32_t)i < nnodes && node->pid_cnt >= (uint32_t)tasks[i])
        tasks[i] = 0;
    }
    slurm_list_iterator_destroy(next);
  }
  for (uint32_t i = 0; list && i < nnodes; i++)
    ready += i != me && tasks[i] == 0;
  dlpar_slurm_restore_stderr(saved);
  if (pids)
    slurm_job_step_pids_response_msg_free(pids);
  if (list)
    slurm_hostlist_destroy(list);
  return ready + 1 >= nnodes;
}

/* Waits, up to 10 s, until every other node of the step has its tasks,
 * then settle_us more. Without the step's layout it does not wait. */
static void wait_other_nodes(spank_t sp, slurm_step_id_t *id, useconds_t settle_us)
{
  uint32_t nnodes = 1, me = 0;
  char *nodes = NULL, per_node[4096]; /* SLURM_STEP_TASKS_PER_NODE, compressed */
  int *tasks = NULL;
  dlpar_error ignored;
  spank_get_item(sp, S_JOB_NNODES, &nnodes);
  spank_get_item(sp, S_JOB_NODEID, &me);
  if (step_nodelist(sp, &nodes, &ignored) == DLPAR_OK && (tasks = calloc(nnodes, sizeof(int))) &&
      spank_getenv(sp, "SLURM_STEP_TASKS_PER_NODE", per_node, sizeof(per_node)) == ESPANK_SUCCESS &&
      dlpar_parse_tasks_per_node(per_node, tasks, (int)nnodes) == (int)nnodes) {
    for (const double end = dlpar_now() + 10; !tasks_elsewhere(id, nodes, tasks, nnodes, me) && dlpar_now() < end;)
      usleep(20000);
    usleep(settle_us);
  }
  free(tasks);
  free(nodes);
}

int dlpar_master_hold(spank_t sp)
{
  slurm_step_id_t id;
  this_step(sp, &id);
  show_waiting("dlpar-hold");
  wait_other_nodes(sp, &id, HOLD_SETTLE_US);
  return DLPAR_OK;
}

enum { KILL_SETTLE_US = 200000 }; /* KILL_SETTLE below */

/* Another job's TCPStore has no authentication, so the other nodes' ranks
 * must not run towards a MASTER_ADDR:MASTER_PORT that another process
 * holds. Slurm drops a step signal that reaches a node before its tasks
 * exist. Under 22.05 the other node's tasks then ran and joined the other
 * store, in 4 of 6 tries on the bed. So the kill waits, up to 10 s, until
 * every other node has its tasks, and KILL_SETTLE more, and they die as
 * they start. A kill sent the moment they appeared was still lost once in
 * about 50 tries, as if it overtook their node's report that they started.
 * This runs from task_init, where slurmstepd holds no auth lock, since an
 * RPC from user_init deadlocks 24.11's. It runs once per step, because
 * only rank 0's node refuses so. */
int dlpar_master_end_step(spank_t sp, dlpar_error *err)
{
  slurm_step_id_t id;
  int rc;
  this_step(sp, &id);
  wait_other_nodes(sp, &id, KILL_SETTLE_US);
  err->text[0] = '\0';
#if HAVE_SLURM_KILL_JOB_STEP_ID
  rc = slurm_kill_job_step(&id, SIGKILL, 0);
#elif HAVE_SLURM_KILL_JOB_STEP_FLAGS
  rc = slurm_kill_job_step(id.job_id, id.step_id, SIGKILL, 0);
#else
  rc = slurm_kill_job_step(id.job_id, id.step_id, SIGKILL);
#endif
  if (rc == SLURM_SUCCESS)
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "cannot end step %u.%u after the refusal above (%s): its other nodes' "
                         "tasks run on (scancel %u.%u)", id.job_id, id.step_id, slurm_strerror(errno), id.job_id,
                         id.step_id);
}
