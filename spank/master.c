/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/master.c: slurmstepd (remote context), once per node (user_init):
 * the step's rendezvous point for PyTorch's env:// contract
 * (common/torchenv.h). MASTER_ADDR is the NodeAddr, from the node table
 * slurmstepd holds, of the step's first node: world rank 0's node under the block,
 * cyclic and plane distributions, and an address, not a host name that may
 * resolve to loopback. MASTER_PORT is the step's first reserved port (srun
 * --resv-ports, MpiParams=ports=LO-HI), else one derived from job and step
 * in the admin's torch_ports range, different for the concurrent steps of
 * a job; the node holding rank 0 checks that it is free before any task
 * starts. GLOO_SOCKET_IFNAME: this node's interface towards MASTER_ADDR.
 * The address is exported as DLPAR_MASTER_ADDR under --dl-env=none too.
 * A failure is kept for task_init, which reports it (user_init's errors
 * never reach srun); an address that cannot be found is a warning (no
 * MASTER_ADDR), not a failure of programs that do not need it. */
#include "config.h"

#include <dlfcn.h>
#include <netdb.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

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

/* The first host of the step's node list, by its address. */
static int first_node_address(spank_t sp, char *addr, size_t len, char *err, size_t errlen)
{
  enum { NODES_MAX = 1 << 20 }; /* the compressed node list of the largest step */
  char *nodes = malloc(NODES_MAX);
  /* hostlist_t is a pointer type up to Slurm 23.02 and a struct (used by
   * pointer) from 23.11 on: the list takes whatever the call returns */
  __typeof__(slurm_hostlist_create("")) list = NULL;
  char *first;
  int rc = DLPAR_OK;
  if (!nodes || spank_getenv(sp, "SLURM_STEP_NODELIST", nodes, NODES_MAX) != ESPANK_SUCCESS ||
      !(list = slurm_hostlist_create(nodes))) {
    snprintf(err, errlen, "cannot read the step's node list (SLURM_STEP_NODELIST) for MASTER_ADDR");
    free(nodes);
    return DLPAR_ERR_SYSTEM;
  }
  free(nodes);
  first = slurm_hostlist_shift(list);
  slurm_hostlist_destroy(list);
  if (!first) {
    snprintf(err, errlen, "the step's node list is empty: no MASTER_ADDR");
    return DLPAR_ERR_SYSTEM;
  }
  snprintf(dlpar_spank.master_node, sizeof(dlpar_spank.master_node), "%s", first);
  node_address(first, addr, len);
  if (dlpar_numeric_address(addr, addr, len) != DLPAR_OK) {
    snprintf(err, errlen, "MASTER_ADDR: node %s's address %s does not resolve (set NodeAddr in slurm.conf, or "
             "--dl-env=none and your own MASTER_ADDR)", dlpar_show(first).text, dlpar_show(addr).text);
    rc = DLPAR_ERR_SYSTEM;
  }
  free(first);
  return rc;
}

/* The step's reserved port, else the derived one; on rank 0's node, free.
 * Rank 0 must be on the step's first node (MASTER_ADDR's). */
static int choose_port(spank_t sp, char *err, size_t errlen)
{
  char reserved[256], user_port[16];
  uint32_t job = 0, step = 0, local, node_id = 0;
  const bool rank0_here = spank_get_item(sp, S_JOB_GLOBAL_TO_LOCAL_ID, 0u, &local) == ESPANK_SUCCESS;
  const int reserved_port =
      spank_getenv(sp, "SLURM_STEP_RESV_PORTS", reserved, sizeof(reserved)) == ESPANK_SUCCESS
          ? dlpar_resv_ports_first(reserved)
          : 0;
  spank_get_item(sp, S_JOB_ID, &job);
  spank_get_item(sp, S_JOB_STEPID, &step);
  spank_get_item(sp, S_JOB_NODEID, &node_id);
  if (rank0_here && node_id != 0) {
    snprintf(err, errlen, "rank 0 is not on the step's first node %s (an arbitrary distribution?), so MASTER_ADDR "
             "would be wrong: use a block, cyclic or plane distribution, or --dl-env=none and your own MASTER_ADDR",
             dlpar_show(dlpar_spank.master_node).text);
    return DLPAR_ERR_INPUT;
  }
  dlpar_spank.master_port = reserved_port ? reserved_port
                                          : dlpar_torch_port_derive(job, step, dlpar_spank.admin.torch_port_lo,
                                                                    dlpar_spank.admin.torch_port_hi);
  if (!rank0_here || spank_getenv(sp, "MASTER_PORT", user_port, sizeof(user_port)) == ESPANK_SUCCESS ||
      dlpar_port_free(dlpar_spank.master_port))
    return DLPAR_OK;
  snprintf(err, errlen, "MASTER_PORT %d is in use on %s, where rank 0 runs (run srun with --resv-ports so Slurm "
           "reserves a port per step, or export MASTER_PORT)", dlpar_spank.master_port,
           dlpar_show(dlpar_spank.master_node).text);
  return DLPAR_ERR_INPUT;
}

int dlpar_master_prepare(spank_t sp, bool torch_env)
{
  /* No address: no MASTER_ADDR, and rank 0's task says why (programs that
   * do not read it, dlpar-train among them, run on). */
  dlpar_spank.master_warning[0] = dlpar_spank.gloo_ifname[0] = '\0';
  if (first_node_address(sp, dlpar_spank.master_addr, sizeof(dlpar_spank.master_addr), dlpar_spank.master_warning,
                         sizeof(dlpar_spank.master_warning)) != DLPAR_OK)
    dlpar_spank.master_addr[0] = '\0';
  dlpar_spank.master_status =
      torch_env ? choose_port(sp, dlpar_spank.master_error, sizeof(dlpar_spank.master_error)) : DLPAR_OK;
  if (torch_env && dlpar_spank.master_addr[0] &&
      dlpar_route_ifname(dlpar_spank.master_addr, dlpar_spank.gloo_ifname, sizeof(dlpar_spank.gloo_ifname)) !=
          DLPAR_OK)
    dlpar_spank.gloo_ifname[0] = '\0'; /* no route found: gloo chooses */
  return dlpar_spank.master_status;
}
