/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/admin.h: the admin's settings, given as key=value arguments on the
 * plugin's line in plugstack.conf. Plain C, unit-tested without Slurm. */
#ifndef DLPAR_SPANK_ADMIN_H
#define DLPAR_SPANK_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "common/grid.h"
#include "common/netenv.h"
#include "common/status.h"
#include "common/torchenv.h"

typedef struct {
  dlpar_span_policy tp_span; /* tp_span=error|warn|allow, error by default */
  char topology_xml[4096];   /* topology_xml=PATH: hwloc XML instead of this node's topology */
  char profile_dir[4096];    /* profile_dir=DIR: where profiles go, by default the task's cwd */
  bool bind_cpus;            /* bind_cpus=yes|no, yes by default */
  bool bind_nic;             /* bind_nic=yes|no, yes by default */
  int torch_port_lo, torch_port_hi; /* torch_ports=LO-HI: MASTER_PORT's range without reserved ports,
                                     * from 1024 up, outside the node's ephemeral ports */
  dlpar_net_config net;      /* env.VAR[@NODES]=VALUE: the site's NCCL_*, UCX_*, GLOO_SOCKET_IFNAME per node
                              * class, as common/netenv.h describes */
} dlpar_admin_config;

/* Parses argv, the plugstack.conf arguments. Unknown keys, a key given
 * twice and bad values are errors naming the key. So is a torch_ports
 * range, the default one too, that overlaps this node's ephemeral ports of
 * ip_local_port_range. */
int dlpar_admin_config_parse(int argc, char **argv, dlpar_admin_config *config, dlpar_error *err);

#endif
