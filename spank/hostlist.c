/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/hostlist.c: plugstack.conf's node classes through Slurm's own
 * host-list parser (see hostlist.h). */
#include "config.h"

#include "spank/hostlist.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "common/text.h"

/* hostlist_t is a pointer type up to Slurm 23.02 and a struct (used by
 * pointer) from 23.11 on: a list is whatever slurm_hostlist_create returns. */
typedef __typeof__(slurm_hostlist_create("")) slurm_list;

int dlpar_slurm_hostlist_has(const char *list, const char *host, bool *has)
{
  slurm_list hosts = slurm_hostlist_create(list);
  *has = false;
  if (!hosts)
    return DLPAR_ERR_INPUT;
  *has = slurm_hostlist_find(hosts, host) >= 0;
  slurm_hostlist_destroy(hosts);
  return DLPAR_OK;
}

/* The first host of a that b holds too, into shared (to free), or NULL. */
static char *first_shared(slurm_list a, slurm_list b)
{
  for (char *host; (host = slurm_hostlist_shift(a));) {
    if (slurm_hostlist_find(b, host) >= 0)
      return host;
    free(host);
  }
  return NULL;
}

/* Whether class and the cluster's nodes share one. */
static bool class_meets_cluster(const char *class_list, const char *cluster)
{
  slurm_list hosts = slurm_hostlist_create(class_list), nodes = slurm_hostlist_create(cluster);
  char *shared = hosts && nodes ? first_shared(hosts, nodes) : NULL;
  const bool meets = shared != NULL;
  free(shared);
  if (hosts)
    slurm_hostlist_destroy(hosts);
  if (nodes)
    slurm_hostlist_destroy(nodes);
  return meets;
}

/* Settings a and b, classes of one variable, share no node; else err. */
static int classes_apart(const dlpar_net_setting *a, const dlpar_net_setting *b, dlpar_error *err)
{
  slurm_list hosts = slurm_hostlist_create(a->nodes), other = slurm_hostlist_create(b->nodes);
  char *shared = hosts && other ? first_shared(hosts, other) : NULL;
  int rc = DLPAR_OK;
  if (shared)
    rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: env.%s@%s and env.%s@%s share %s (and maybe more): "
                         "a node in two classes of one variable fails every step there; make the classes disjoint",
                         a->var, dlpar_show(a->nodes).text, b->var, dlpar_show(b->nodes).text,
                         dlpar_show(shared).text);
  free(shared);
  if (hosts)
    slurm_hostlist_destroy(hosts);
  if (other)
    slurm_hostlist_destroy(other);
  return rc;
}

int dlpar_slurm_net_classes_check(const dlpar_net_config *config, const char *cluster, dlpar_error *err)
{
  for (int i = 0; i < config->count; i++) {
    const dlpar_net_setting *s = &config->setting[i];
    bool unused;
    if (!s->nodes[0])
      continue;
    if (dlpar_slurm_hostlist_has(s->nodes, "", &unused) != DLPAR_OK)
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: env.%s@%s: Slurm's host list parser refuses %s: "
                             "write it as Slurm does, e.g. gpu[01-16],login1", s->var, dlpar_show(s->nodes).text,
                             dlpar_show(s->nodes).text);
    if (cluster && !class_meets_cluster(s->nodes, cluster))
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: env.%s@%s: no node of the cluster (%s) is in %s, "
                             "so this setting would never apply: correct the class, or drop it until its nodes are "
                             "in slurm.conf", s->var, dlpar_show(s->nodes).text, dlpar_show(cluster).text,
                             dlpar_show(s->nodes).text);
    for (int j = 0; j < i; j++)
      if (config->setting[j].nodes[0] && strcmp(config->setting[j].var, s->var) == 0)
        DLPAR_TRY(classes_apart(&config->setting[j], s, err));
  }
  return DLPAR_OK;
}

int dlpar_slurm_quiet_stderr(void)
{
  const int saved = dup(STDERR_FILENO);
  const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved >= 0 && null >= 0)
    dup2(null, STDERR_FILENO);
  if (null >= 0)
    close(null);
  return saved;
}

void dlpar_slurm_restore_stderr(int saved)
{
  if (saved < 0)
    return;
  dup2(saved, STDERR_FILENO);
  close(saved);
}
