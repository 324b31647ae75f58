/* SPDX-License-Identifier: BSD-3-Clause */
/* common/grid.c: the M x D grid (see grid.h). */
#include "config.h"

#include "grid.h"

#include <stdio.h>
#include <string.h>

#include "status.h"
#include "text.h"

static int parse_size(const char *text, size_t len, const char *what,
                      const dlpar_grid_request *req, int *out, dlpar_error *err)
{
  long value = 0;
  int rc = dlpar_parse_uint(text, len, DLPAR_GRID_MAX, &value);
  if (rc == -2)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-parallel=%s: %s is too large (at most %d)", req->text, what,
                           DLPAR_GRID_MAX);
  if (rc != 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT,
                           "--dl-parallel=%s: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)",
                           req->text);
  if (value < 1)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-parallel=%s: %s must be at least 1 (e.g. --dl-parallel=%s)",
                           req->text, what, what[0] == 'M' ? "1x4" : "4x1");
  *out = (int)value;
  return DLPAR_OK;
}

int dlpar_grid_parse(const char *text, dlpar_grid_request *req, dlpar_error *err)
{
  const char *x;
  size_t len;
  int rc;
  memset(req, 0, sizeof(*req));
  if (!text || !*text)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-parallel needs a value MxD (e.g. --dl-parallel=4x2)");
  dlpar_quote(text, req->text, sizeof(req->text));
  len = strlen(text);
  if (len > DLPAR_TEXT_MAX)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-parallel=%s: value too long (expected MxD, e.g. "
                           "--dl-parallel=4x2)", req->text);
  x = strpbrk(text, "xX");
  rc = parse_size(text, x ? (size_t)(x - text) : len, "M", req, &req->tp, err);
  if (rc != DLPAR_OK || !x)
    return rc;
  return parse_size(x + 1, len - (size_t)(x - text) - 1, "D", req, &req->dp, err);
}

int dlpar_grid_resolve(const dlpar_grid_request *req, int ntasks, dlpar_grid *grid, dlpar_error *err)
{
  const long needed = (long)req->tp * req->dp;
  grid->tp = req->tp;
  if (req->dp == 0) {
    if (ntasks % req->tp != 0)
      return dlpar_error_set(err, DLPAR_ERR_INPUT,
                             "--dl-parallel=%s: %d %s cannot form groups of %d (use a task count that is a "
                             "multiple of %d, or --dl-parallel=M with M dividing %d)",
                             req->text, ntasks, dlpar_plural(ntasks, "task", "tasks"), req->tp, req->tp, ntasks);
    grid->dp = ntasks / req->tp;
    return DLPAR_OK;
  }
  if (needed != ntasks) {
    if (ntasks % req->tp == 0)
      return dlpar_error_set(err, DLPAR_ERR_INPUT,
                             "--dl-parallel=%s needs %ld %s but the step has %d (use -n %ld or --dl-parallel=%dx%d)",
                             req->text, needed, dlpar_plural(needed, "task", "tasks"), ntasks, needed, req->tp,
                             ntasks / req->tp);
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-parallel=%s needs %ld %s but the step has %d (use -n %ld)",
                           req->text, needed, dlpar_plural(needed, "task", "tasks"), ntasks, needed);
  }
  grid->dp = req->dp;
  return DLPAR_OK;
}

void dlpar_grid_coords(const dlpar_grid *grid, int rank, int *tp_rank, int *dp_rank)
{
  *tp_rank = rank % grid->tp;
  *dp_rank = rank / grid->tp;
}

int dlpar_grid_members(const dlpar_grid *grid, dlpar_group group, int rank, int *ranks)
{
  int tp_rank, dp_rank;
  dlpar_grid_coords(grid, rank, &tp_rank, &dp_rank);
  switch (group) {
  case DLPAR_GROUP_TP:
    for (int i = 0; i < grid->tp; i++)
      ranks[i] = dp_rank * grid->tp + i;
    return grid->tp;
  case DLPAR_GROUP_DP:
    for (int i = 0; i < grid->dp; i++)
      ranks[i] = tp_rank + i * grid->tp;
    return grid->dp;
  case DLPAR_GROUP_WORLD:
  default:
    for (int i = 0; i < grid->tp * grid->dp; i++)
      ranks[i] = i;
    return grid->tp * grid->dp;
  }
}

static const char *node_label(const char *const *names, int node, char *buf, size_t len)
{
  if (names && names[node])
    return names[node];
  snprintf(buf, len, "node %d", node);
  return buf;
}

int dlpar_grid_check_span(const dlpar_grid *grid, const int *rank_node,
                          const char *const *node_names, dlpar_span_policy policy,
                          int *first_rank, dlpar_error *err)
{
  char a[32], b[32];
  for (int group = 0; group < grid->dp; group++) {
    const int first = group * grid->tp;
    for (int r = first + 1; r < first + grid->tp; r++) {
      if (rank_node[r] == rank_node[first])
        continue;
      if (first_rank)
        *first_rank = first;
      if (policy == DLPAR_SPAN_ALLOW)
        return DLPAR_OK;
      return dlpar_error_set(err, policy == DLPAR_SPAN_WARN ? DLPAR_WARN : DLPAR_ERR_INPUT,
                             "%s--dl-parallel=%dx%d: tensor-parallel group %d (ranks %d-%d) spans %s and %s (give "
                             "every node a multiple of %d tasks, e.g. --ntasks-per-node=%d%s)",
                             policy == DLPAR_SPAN_WARN ? "warning: " : "", grid->tp, grid->dp, group, first,
                             first + grid->tp - 1, node_label(node_names, rank_node[first], a, sizeof(a)),
                             node_label(node_names, rank_node[r], b, sizeof(b)), grid->tp, grid->tp,
                             policy == DLPAR_SPAN_ERROR ? ", or ask the admin for tp_span=warn" : "");
    }
  }
  return DLPAR_OK;
}

void dlpar_grid_block_nodes(const int *tasks_per_node, int nnodes, int *rank_node)
{
  int rank = 0;
  for (int node = 0; node < nnodes; node++) {
    for (int i = 0; i < tasks_per_node[node]; i++)
      rank_node[rank++] = node;
  }
}

int dlpar_span_policy_parse(const char *text, dlpar_span_policy *policy)
{
  static const char *const names[] = {"error", "warn", "allow"};
  for (int i = 0; i < 3; i++) {
    if (strcmp(text, names[i]) == 0) {
      *policy = (dlpar_span_policy)i;
      return DLPAR_OK;
    }
  }
  return DLPAR_ERR_INPUT;
}

const char *dlpar_span_policy_name(dlpar_span_policy policy)
{
  return policy == DLPAR_SPAN_WARN ? "warn" : policy == DLPAR_SPAN_ALLOW ? "allow" : "error";
}

const char *dlpar_group_name(dlpar_group group)
{
  return group == DLPAR_GROUP_TP ? "tp" : group == DLPAR_GROUP_DP ? "dp" : "world";
}
