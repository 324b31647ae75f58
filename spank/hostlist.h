/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/hostlist.h: plugstack.conf's node classes (env.VAR@NODES) read by
 * Slurm's own host-list parser (libslurm's slurm_hostlist_*), so a class
 * holds exactly the nodes Slurm expands it to: "rack[1-2]-n[1-2]",
 * "x[0-2]y[0-1]". The plugin (inside srun and slurmstepd, which carry
 * libslurm) and dlpar-check-config (linked with it) use it; common/, which
 * libdlpar links too, takes the membership test as a pointer. */
#ifndef DLPAR_SPANK_HOSTLIST_H
#define DLPAR_SPANK_HOSTLIST_H

#include <stdbool.h>

#include "common/netenv.h"
#include "common/status.h"

/* dlpar_hostlist_has_fn by Slurm's parser: DLPAR_OK and *has, or
 * DLPAR_ERR_INPUT where Slurm refuses list. */
int dlpar_slurm_hostlist_has(const char *list, const char *host, bool *has);

/* The node classes of config against each other and the cluster: a class
 * Slurm's parser refuses, two classes of one variable sharing a node
 * (the shared node fails every step there), and, where cluster (the
 * cluster's nodes, a host list) is not NULL, a class that holds none of
 * them (its settings would never apply). DLPAR_OK, or DLPAR_ERR_INPUT and
 * one line naming the keys and the fix. */
int dlpar_slurm_net_classes_check(const dlpar_net_config *config, const char *cluster, dlpar_error *err);

/* libslurm logs its own failures (a refused host list, a failed RPC) on
 * stderr. dlpar_slurm_quiet_stderr points stderr at /dev/null and returns
 * the real one (-1 where it could not be saved, and stderr is then left
 * as it was); dlpar_slurm_restore_stderr puts it back. */
int dlpar_slurm_quiet_stderr(void);
void dlpar_slurm_restore_stderr(int saved);

#endif
