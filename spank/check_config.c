/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/check_config.c: dlpar-check-config [FILE]: dlpar's plugstack.conf
 * line checked as srun and the daemons will take it, before any of them
 * reads it (spank/plugstack.h does the work). FILE: the file about to be put
 * in place; without it, Slurm's plugstack.conf (PlugStackConfig of
 * $SLURM_CONF, else of /etc/slurm/slurm.conf) and the files it includes.
 * Then the node classes of its env.VAR@NODES keys through Slurm's own
 * host-list parser, against each other and against the cluster's nodes
 * (from slurmctld; where it does not answer, the ok line says the classes
 * were not matched against them). A class that holds no node is refused,
 * not warned about: its settings would be dropped silently on every node,
 * a typo and a class for nodes not yet in slurm.conf alike.
 * One line: "...: ok: ..." and 0, or what is wrong and the fix, and 1. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "common/status.h"
#include "common/text.h"
#include "spank/admin.h"
#include "spank/hostlist.h"
#include "spank/plugstack.h"

#define PROGRAM "dlpar-check-config"

/* The cluster's nodes as one host list into *nodes (to free), from
 * slurmctld; DLPAR_ERR_SYSTEM and why in err where it does not answer. */
static int cluster_nodes(char **nodes, dlpar_error *err)
{
  node_info_msg_t *info = NULL;
  __typeof__(slurm_hostlist_create("")) list = NULL;
  int rc = DLPAR_OK;
  int loaded, error;
  const int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  *nodes = NULL;
  /* libslurm logs its own failures on stderr: this program says one line */
  if (null >= 0 && dup2(null, STDERR_FILENO) >= 0)
    close(null);
  slurm_init(NULL);
  loaded = slurm_load_node(0, &info, SHOW_ALL);
  error = errno;
  if (saved >= 0 && dup2(saved, STDERR_FILENO) >= 0)
    close(saved);
  if (loaded != SLURM_SUCCESS || !info)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "slurmctld: %s", slurm_strerror(error));
  if (!(list = slurm_hostlist_create(NULL)))
    rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory");
  for (uint32_t i = 0; rc == DLPAR_OK && i < info->record_count; i++)
    if (info->node_array[i].name)
      slurm_hostlist_push_host(list, info->node_array[i].name);
  if (rc == DLPAR_OK && !(*nodes = slurm_hostlist_ranged_string_malloc(list)))
    rc = dlpar_error_set(err, DLPAR_ERR_SYSTEM, "out of memory");
  if (list)
    slurm_hostlist_destroy(list);
  slurm_free_node_info_msg(info);
  return rc;
}

/* The node classes of path's dlpar line (its keys already good): DLPAR_OK
 * and a note in note when they were not matched against the cluster's
 * nodes; else the refusal, "FILE:LINE: ...", in msg. */
static int check_classes(const char *path, char *msg, size_t len, char *note, size_t note_len)
{
  dlpar_plugstack_entry entry;
  dlpar_admin_config config;
  dlpar_error err = {0}, nodes_err = {0};
  char *nodes = NULL;
  int rc;
  note[0] = '\0';
  if (dlpar_plugstack_read(path, &entry, &err) != DLPAR_OK ||
      dlpar_admin_config_parse(entry.argc, entry.argv, &config, &err) != DLPAR_OK) {
    snprintf(msg, len, "%s", err.text);
    return DLPAR_ERR_INPUT;
  }
  if (cluster_nodes(&nodes, &nodes_err) != DLPAR_OK)
    snprintf(note, note_len, " (node classes not matched against the cluster's nodes: %s)", nodes_err.text);
  rc = dlpar_slurm_net_classes_check(&config.net, nodes, &err);
  if (rc != DLPAR_OK)
    snprintf(msg, len, "%s:%d: %s", dlpar_show(entry.file).text, entry.line, err.text);
  free(nodes);
  return rc;
}

int main(int argc, char **argv)
{
  const char *slurm_conf = getenv("SLURM_CONF");
  char path[4096], msg[8192], note[512];
  dlpar_error err = {0};
  if (argc == 2 && strcmp(argv[1], "--help") == 0) {
    printf("usage: " PROGRAM " [FILE]\n"
           "Checks dlpar's line (the one loading " DLPAR_PLUGIN_FILE ") as srun, sbatch, salloc, slurmstepd and\n"
           "slurmd will read it: one line, required, the plugin file there, every key known, valid and given\n"
           "once. FILE: a plugstack.conf file (the copy to put in place); default: Slurm's plugstack.conf\n"
           "(PlugStackConfig in $SLURM_CONF, else in " DLPAR_SLURM_CONF_DEFAULT ") and the files it includes.\n"
           "Exit 0 when good, 1 otherwise (spank_dlpar(8), dlpar-check-config(8)).\n");
    return 0;
  }
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    fprintf(stderr, PROGRAM ": usage: " PROGRAM " [FILE] (a plugstack.conf file; default: Slurm's)\n");
    return 1;
  }
  if (argc == 2)
    snprintf(path, sizeof(path), "%s", argv[1]);
  else if (dlpar_plugstack_path(slurm_conf ? slurm_conf : DLPAR_SLURM_CONF_DEFAULT, path, sizeof(path), &err) !=
           DLPAR_OK) {
    fprintf(stderr, PROGRAM ": %s\n", err.text);
    return 1;
  }
  if (dlpar_plugstack_check(path, msg, sizeof(msg)) != DLPAR_OK ||
      check_classes(path, msg, sizeof(msg), note, sizeof(note)) != DLPAR_OK) {
    fprintf(stderr, PROGRAM ": %s\n", msg);
    return 1;
  }
  printf(PROGRAM ": %s%s\n", msg, note);
  return 0;
}
