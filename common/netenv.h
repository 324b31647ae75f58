/* SPDX-License-Identifier: BSD-3-Clause */
/* common/netenv.h: the site's network settings, written once per node
 * class. The plugstack.conf keys env.VAR=VALUE, for every node, and
 * env.VAR@NODES=VALUE, for a Slurm host list such as gpu[01-16],login1,
 * set NCCL_*, UCX_* and GLOO_SOCKET_IFNAME. The plugin exports them to
 * every task of a node, and a user's own export wins. An NCCL name that
 * NCCL itself does not read is refused, because NCCL would silently ignore
 * such a misspelling. So is a node in two classes of one variable, and, on
 * the node, an interface it does not have. This is plain C, unit-tested
 * without Slurm. */
#ifndef DLPAR_COMMON_NETENV_H
#define DLPAR_COMMON_NETENV_H

#include <stdbool.h>

#include "common/status.h"

#define DLPAR_NET_MAX 32

typedef struct {
  char var[64];     /* NCCL_SOCKET_IFNAME */
  char nodes[256];  /* the class, a host list; "": every node */
  char value[256];
} dlpar_net_setting;

typedef struct {
  int count;
  dlpar_net_setting setting[DLPAR_NET_MAX];
} dlpar_net_config;

/* Whether a plugstack.conf key, the text before '=', is a network setting's, starting env. */
bool dlpar_net_is_key(const char *key);
/* Adds key=value, where key is env.VAR or env.VAR@NODES. It refuses a
 * variable that is not a network setting, an NCCL name NCCL does not read,
 * naming the nearest one it does, an empty host list or value, and more
 * than DLPAR_NET_MAX settings. */
int dlpar_net_add(dlpar_net_config *config, const char *key, const char *value, dlpar_error *err);
/* A host-list parser's membership test. It returns DLPAR_OK with *has
 * saying whether host is in list, or DLPAR_ERR_INPUT where the parser
 * refuses list. The plugin and dlpar-check-config pass Slurm's own, from
 * spank/hostlist.h, so a class means the nodes Slurm would expand it to.
 * common/, which libdlpar links, takes it as a pointer and needs no
 * libslurm. */
typedef int (*dlpar_hostlist_has_fn)(const char *list, const char *host, bool *has);
/* The settings that hold on node, one per variable, its class's over the
 * every-node one. has tells whether node is in a class. A node in two
 * classes of one variable is refused, naming both, and so is a class the
 * parser refuses. */
int dlpar_net_for_node(const dlpar_net_config *config, const char *node, dlpar_hostlist_has_fn has,
                       dlpar_net_config *out, dlpar_error *err);
/* The interfaces node's settings name must exist here, else they are
 * refused, naming the setting and the node. NCCL_SOCKET_IFNAME and
 * NCCL_OOB_NET_IFNAME hold a list of prefixes or =exact names, where ^
 * excludes. GLOO_SOCKET_IFNAME holds exact names. */
int dlpar_net_check_interfaces(const dlpar_net_config *node_settings, const char *node, dlpar_error *err);
/* The setting of var in a node's settings, or NULL. */
const dlpar_net_setting *dlpar_net_find(const dlpar_net_config *node_settings, const char *var);
/* DLPAR_OK when list is written in Slurm's host-list grammar, as in
 * "n[1-3,7],rack[1-2]-gpu[01-16],login1". Names are of letters, digits,
 * '-', '_' and '.', with brackets closed and not nested that hold numbers
 * and rising LO-HI ranges, and no name is empty. Otherwise it returns
 * DLPAR_ERR_INPUT naming key and what is wrong, for example in "n[1-3" or
 * "n[3-1]", which Slurm's parser takes, or refuses with a log line only.
 * dlpar_net_add checks every class so. */
int dlpar_hostlist_syntax(const char *key, const char *list, dlpar_error *err);

#endif
