/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/request.c: the user's --dl-* options and their parsing, and the
 * step's refusals as plain rules (see request.h). */
#include "config.h"

#include "spank/request.h"

#include <stdio.h>
#include <string.h>

#include "common/status.h"
#include "common/torchenv.h"

void dlpar_user_value_store(dlpar_user_value *slot, const char *value)
{
  snprintf(slot->text, sizeof(slot->text), "%s", value ? value : "");
  slot->given = true;
}

bool dlpar_user_options_active(const dlpar_user_options *options)
{
  for (int i = 0; i < DLPAR_OPTION_COUNT; i++)
    if (options->value[i].given)
      return true;
  return false;
}

int dlpar_request_parse(const dlpar_user_options *options, dlpar_request *req, dlpar_error *err)
{
  dlpar_request_init(req);
  for (int i = 0; i < DLPAR_OPTION_COUNT; i++) {
    const dlpar_option_spec *spec = &dlpar_option_table[i];
    if (options->value[i].given)
      DLPAR_TRY(spec->parse(spec->arg == DLPAR_OPT_FLAG ? NULL : options->value[i].text, req, err));
  }
  return dlpar_profile_check(&req->profile, 0, err);
}

int dlpar_nsys_find(const char *path, const char *whose, char *nsys, size_t len, dlpar_error *err)
{
  if (path && dlpar_find_on_path("nsys", path, nsys, len) == DLPAR_OK)
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-profile=nsys: nsys is not on the PATH of %s (load Nsight Systems, "
                         "e.g. module load nsight-systems, or use --dl-profile=nvtx)", whose);
}

int dlpar_parse_tasks_per_node(const char *text, int *counts, int max_nodes)
{
  int nodes = 0;
  for (const char *p = text; p && *p;) {
    const char *comma = strchr(p, ',');
    const char *paren = strchr(p, '(');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    long tasks, repeat = 1;
    if (paren && paren < p + len) {
      /* "N(xR)" */
      if (paren[1] != 'x' || p[len - 1] != ')' ||
          dlpar_parse_uint(paren + 2, (size_t)(p + len - 1 - (paren + 2)), 1 << 20, &repeat) != 0)
        return -1;
      len = (size_t)(paren - p);
    }
    if (dlpar_parse_uint(p, len, 1 << 20, &tasks) != 0)
      return -1;
    for (long i = 0; i < repeat; i++) {
      if (nodes == max_nodes)
        return -1;
      counts[nodes++] = (int)tasks;
    }
    p = comma ? comma + 1 : NULL;
  }
  return nodes > 0 ? nodes : -1;
}

int dlpar_pmix_refusal(const char *mpi, dlpar_error *err)
{
  return dlpar_error_set(err, DLPAR_ERR_INPUT,
                         "--dl-parallel needs PMIx but the step uses --mpi=%s (use --mpi=pmix, or ask the admin "
                         "for MpiDefault=pmix)", dlpar_show(mpi).text);
}

int dlpar_het_refusal(const char *components, const char *step_tasks, long spank_tasks, dlpar_error *err)
{
  long all_tasks;
  if (!components || !step_tasks || dlpar_parse_int(step_tasks, 1, 1L << 30, &all_tasks) != 0 ||
      all_tasks == spank_tasks)
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-* options do not support heterogeneous steps (srun A : B, "
                         "--het-group=0,1; here %ld tasks in %s components): run the parallel program as a step of one "
                         "component (srun --het-group=N)", all_tasks, dlpar_show(components).text);
}

int dlpar_distribution_refusal(const char *distribution, bool torch_env, dlpar_error *err)
{
  if (!torch_env || !distribution || strncmp(distribution, "arbitrary", 9) != 0)
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "-m arbitrary may put rank 0 off the step's first node, whose address "
                         "MASTER_ADDR is (--dl-env=torch, the default): use a block, cyclic or plane distribution, or "
                         "--dl-env=none and your own MASTER_ADDR");
}

int dlpar_master_addr_warning(const char *node, const char *addr, uint32_t nnodes, dlpar_error *err)
{
  if (nnodes < 2 || !dlpar_is_loopback(addr))
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_WARN, "MASTER_ADDR: node %s's address %s is loopback, which the other nodes cannot "
                         "reach (its NodeAddr, or its name where NodeAddr is unset, resolves so, e.g. in /etc/hosts): "
                         "set NodeAddr=ADDRESS for %s in slurm.conf, or export your own MASTER_ADDR",
                         dlpar_show(node).text, dlpar_show(addr).text, dlpar_show(node).text);
}

int dlpar_busy_port_verdict(int port, bool reserved, bool torch_explicit, long holder, long user, const char *node,
                            dlpar_error *err)
{
  const dlpar_shown where = dlpar_show(node);
  char who[64];
  if (reserved)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "MASTER_PORT %d, the port Slurm reserved for this step, is in use on "
                           "%s, where rank 0 runs: ending the step (another process took it; run the step again, which "
                           "gets other ports, or export MASTER_PORT)", port, where.text);
  if (holder != user) {
    if (holder < 0)
      snprintf(who, sizeof(who), "a socket whose owner this node does not show");
    else
      snprintf(who, sizeof(who), "another user (uid %ld)", holder);
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "MASTER_PORT %d (derived from job and step) is held on %s, where "
                           "rank 0 runs, by %s: ending the step before any task starts, so no rank connects to it "
                           "(run srun with --resv-ports=1 so Slurm reserves a port per step, which needs "
                           "MpiParams=ports in slurm.conf; or --dl-env=none, with dlpar.torch.init_process_group() for "
                           "torch.distributed, which needs no port)", port, where.text, who);
  }
  if (torch_explicit)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "MASTER_PORT %d (derived from job and step) is in use on %s, where "
                           "rank 0 runs: ending the step (run srun with --resv-ports=1 so Slurm reserves a port per "
                           "step, which needs MpiParams=ports in slurm.conf, or export MASTER_PORT)", port, where.text);
  return dlpar_error_set(err, DLPAR_WARN, "MASTER_PORT %d (derived from job and step) is in use on %s, where rank 0 "
                         "runs: env:// cannot open its store there, programs that do not use it run on (for env://: "
                         "srun --resv-ports=1, which needs MpiParams=ports in slurm.conf, or export MASTER_PORT; "
                         "without env://: --dl-env=none)", port, where.text);
}
