/* SPDX-License-Identifier: BSD-3-Clause */
/* common/grid.h: the M x D grid of a step. Parses --dl-parallel, checks it
 * against the step (task count, tensor-parallel groups inside one node),
 * and gives coordinates and group membership:
 *   rank = tp_rank + M * dp_rank
 *   tensor-parallel group g = ranks [g*M, g*M + M)
 *   data-parallel group t   = { t, t + M, t + 2M, ... }
 * Shared by spank/ (srun, slurmstepd), libdlpar/ and tools/ (dlpar-run),
 * so they can never disagree. No Slurm or PMIx types in here. */
#ifndef DLPAR_GRID_H
#define DLPAR_GRID_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

#define DLPAR_GRID_MAX 1048576 /* largest M, D and M*D accepted */

typedef struct {
  int tp;             /* M */
  int dp;             /* D, or 0 when --dl-parallel=M (D = tasks / M) */
  char text[64];      /* the option value as given, quoted for messages */
} dlpar_grid_request;

typedef struct {
  int tp; /* M: tensor/model-parallel size */
  int dp; /* D: data-parallel size */
} dlpar_grid;

typedef enum { DLPAR_GROUP_WORLD = 0, DLPAR_GROUP_TP = 1, DLPAR_GROUP_DP = 2 } dlpar_group;

/* What to do when a tensor-parallel group would straddle two nodes. */
typedef enum { DLPAR_SPAN_ERROR = 0, DLPAR_SPAN_WARN, DLPAR_SPAN_ALLOW } dlpar_span_policy;

/* Syntax only: "M" or "MxD" with whole numbers >= 1. */
int dlpar_grid_parse(const char *text, dlpar_grid_request *req, dlpar_error *err);

/* Against a step of ntasks tasks: M*D == ntasks (or D = ntasks / M). */
int dlpar_grid_resolve(const dlpar_grid_request *req, int ntasks, dlpar_grid *grid, dlpar_error *err);

void dlpar_grid_coords(const dlpar_grid *grid, int rank, int *tp_rank, int *dp_rank);

/* The ranks of rank's group, in group-rank order; returns how many. */
int dlpar_grid_members(const dlpar_grid *grid, dlpar_group group, int rank, int *ranks);

/* rank_node[r]: the node index of rank r (names[] for messages, or NULL).
 * DLPAR_OK, DLPAR_WARN (err holds the warning) or DLPAR_ERR_INPUT; where a
 * group spans nodes, *first_rank (if not NULL) is that group's first rank. */
int dlpar_grid_check_span(const dlpar_grid *grid, const int *rank_node,
                          const char *const *node_names, dlpar_span_policy policy,
                          int *first_rank, dlpar_error *err);

/* Slurm's block distribution: ranks fill node 0, then node 1, ... */
void dlpar_grid_block_nodes(const int *tasks_per_node, int nnodes, int *rank_node);

int dlpar_span_policy_parse(const char *text, dlpar_span_policy *policy);
const char *dlpar_span_policy_name(dlpar_span_policy policy);
const char *dlpar_group_name(dlpar_group group);

#endif
