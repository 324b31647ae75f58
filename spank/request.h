/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/request.h: what the user asked for with the --dl-* options, as raw
 * text, and its parsing into a grid and a profiling request; the step's
 * refusals of what Slurm gave it (no PMIx, a heterogeneous step, -m
 * arbitrary under env://, a busy MASTER_PORT, a loopback MASTER_ADDR), as
 * plain rules and one-line messages; also Slurm's tasks-per-node text
 * ("2(x3),1"). Plain C, unit-tested without Slurm. */
#ifndef DLPAR_SPANK_REQUEST_H
#define DLPAR_SPANK_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/grid.h"
#include "common/options.h"
#include "common/profile.h"
#include "common/status.h"
#include "common/taskenv.h"
#include "common/text.h"

/* Each value is kept up to DLPAR_TEXT_MAX + 1 bytes: longer ones stay
 * detectably too long without keeping a user's huge string. */
typedef struct {
  char text[DLPAR_TEXT_MAX + 2];
  bool given;
} dlpar_user_value;

/* One value per entry of the option table (common/options.h). */
typedef struct {
  dlpar_user_value value[DLPAR_OPTION_COUNT];
} dlpar_user_options;

void dlpar_user_value_store(dlpar_user_value *slot, const char *value);
bool dlpar_user_options_active(const dlpar_user_options *options);

/* Syntax of every option given, by its parser in the option table, in the
 * table's order, into req; an option not given keeps dlpar_request_init's
 * value (a 1xD grid, D = tasks; no checks; the torch names exported). */
int dlpar_request_parse(const dlpar_user_options *options, dlpar_request *req, dlpar_error *err);

/* --dl-profile=nsys: nsys on `path` (the PATH the tasks get) into nsys; else
 * DLPAR_ERR_INPUT, err naming `whose` PATH ("srun's", "rank 3 on n1"). */
int dlpar_nsys_find(const char *path, const char *whose, char *nsys, size_t len, dlpar_error *err);

/* The refusal of a step whose MPI plugin (SLURM_MPI_TYPE, "none" when
 * unset) is not PMIx: libdlpar bootstraps from PMIx. Returns
 * DLPAR_ERR_INPUT. */
int dlpar_pmix_refusal(const char *mpi, dlpar_error *err);
/* A heterogeneous step (srun A : B, --het-group=0,1): SPANK's task count
 * (S_JOB_TOTAL_TASK_COUNT) is one component's, while Slurm's environment
 * counts every component's tasks (step_tasks; components: SLURM_HET_SIZE,
 * NULL outside a heterogeneous job). A one-component step of a
 * heterogeneous job inherits SLURM_HET_SIZE but its counts agree.
 * DLPAR_ERR_INPUT with the message when they differ. */
int dlpar_het_refusal(const char *components, const char *step_tasks, long spank_tasks, dlpar_error *err);

/* srun's SLURM_DISTRIBUTION under the env:// contract (torch_env): an
 * arbitrary distribution may put rank 0 off the step's first node, whose
 * address MASTER_ADDR is, so it is refused (DLPAR_ERR_INPUT and the message). */
int dlpar_distribution_refusal(const char *distribution, bool torch_env, dlpar_error *err);

/* addr, the address of world rank 0's node (node), on a step of nnodes
 * nodes: DLPAR_OK, or DLPAR_WARN and the message where it is a loopback
 * address (127.0.0.0/8, ::1) on a step of several nodes, which they cannot
 * reach: it is then no MASTER_ADDR. */
int dlpar_master_addr_warning(const char *node, const char *addr, uint32_t nnodes, dlpar_error *err);

/* MASTER_PORT is busy on rank 0's node (node), where holder (the uid of
 * its listener, -1: none found) listens; user: the job's uid. A port
 * Slurm reserved for the step (reserved) ends the step; so does a derived
 * one held by anyone but the user (another user's process, or one this
 * check cannot name), whatever --dl-env says: that listener would get the
 * ranks' connections. A derived one the user holds ends the step under an
 * explicit --dl-env=torch and is a warning (DLPAR_WARN) under the default,
 * so programs that never open env://'s store (and a user holding ports in
 * the range) cannot fail a step. A refusal is DLPAR_ERR_INPUT. err: one
 * line naming the port, the node and the fix. */
int dlpar_busy_port_verdict(int port, bool reserved, bool torch_explicit, long holder, long user, const char *node,
                            dlpar_error *err);

/* Slurm's compressed tasks-per-node list, e.g. "2(x3),1" -> 2,2,2,1.
 * Returns the node count, or -1. */
int dlpar_parse_tasks_per_node(const char *text, int *counts, int max_nodes);

#endif
