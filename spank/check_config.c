/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/check_config.c: dlpar-check-config [FILE]: dlpar's plugstack.conf
 * line checked as srun and the daemons will take it, before any of them
 * reads it (spank/plugstack.h does the work). FILE: the file about to be put
 * in place; without it, Slurm's plugstack.conf (PlugStackConfig of
 * $SLURM_CONF, else of /etc/slurm/slurm.conf) and the files it includes.
 * Then the node classes of its env.VAR@NODES keys through Slurm's own
 * host-list parser, against each other and against the cluster's nodes
 * (from slurmctld, asked only where the line has classes; where it does
 * not answer, or there is no slurm.conf, the ok line says the classes were
 * not matched against them). A class that holds no node is refused,
 * not warned about: its settings would be dropped silently on every node,
 * a typo and a class for nodes not yet in slurm.conf alike.
 * One line: "...: ok: ..." and 0, or what is wrong and the fix, and 1. */
#include "config.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "common/status.h"
#include "common/text.h"
#include "spank/admin.h"
#include "spank/hostlist.h"
#include "spank/plugstack.h"

#define PROGRAM "dlpar-check-config"
/* The longest host list of a cluster's nodes this program reads. */
#define CLUSTER_NODES_MAX (1 << 20)

/* In a child (libslurm's slurm_init ends the process, fatal(), without a
 * slurm.conf): the cluster's nodes from slurmctld, one host list written
 * to fd; exit 0, or 1 where slurmctld does not answer. Its stderr is
 * /dev/null: libslurm logs its own failures there, and this program says
 * one line. */
static void cluster_nodes_child(int fd)
{
  node_info_msg_t *info = NULL;
  __typeof__(slurm_hostlist_create("")) list = NULL;
  char *text = NULL;
  const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  size_t len;
  if (null >= 0)
    dup2(null, STDERR_FILENO);
  slurm_init(NULL);
  if (slurm_load_node(0, &info, SHOW_ALL) != SLURM_SUCCESS || !info || !(list = slurm_hostlist_create(NULL)))
    _exit(1);
  for (uint32_t i = 0; i < info->record_count; i++)
    if (info->node_array[i].name)
      slurm_hostlist_push_host(list, info->node_array[i].name);
  /* slurm_hostlist_ranged_string_malloc is gone from Slurm 24.11 and the
   * xmalloc form needs Slurm's xfree: a buffer of cluster_nodes' bound. */
  if (!(text = malloc(CLUSTER_NODES_MAX)) || slurm_hostlist_ranged_string(list, CLUSTER_NODES_MAX, text) < 0)
    _exit(1);
  len = strlen(text);
  _exit(write(fd, text, len) == (ssize_t)len ? 0 : 1);
}

/* The cluster's nodes as one host list into *nodes (to free), from
 * slurmctld; DLPAR_ERR_SYSTEM where it does not answer. */
static int cluster_nodes(char **nodes)
{
  int pipe_fds[2], status = 1;
  size_t got = 0;
  ssize_t n = 0;
  pid_t child;
  *nodes = NULL;
  if (pipe2(pipe_fds, O_CLOEXEC) != 0)
    return DLPAR_ERR_SYSTEM;
  if ((child = fork()) == 0) {
    close(pipe_fds[0]);
    cluster_nodes_child(pipe_fds[1]);
  }
  close(pipe_fds[1]);
  if (child > 0 && (*nodes = malloc(CLUSTER_NODES_MAX)))
    while (got < CLUSTER_NODES_MAX - 1 && (n = read(pipe_fds[0], *nodes + got, CLUSTER_NODES_MAX - 1 - got)) > 0)
      got += (size_t)n;
  close(pipe_fds[0]);
  if (child > 0)
    waitpid(child, &status, 0);
  if (!*nodes || n < 0 || got == 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    free(*nodes);
    *nodes = NULL;
    return DLPAR_ERR_SYSTEM;
  }
  (*nodes)[got] = '\0';
  return DLPAR_OK;
}

/* Whether any env. setting of config has a node class. */
static bool has_classes(const dlpar_net_config *config)
{
  for (int i = 0; i < config->count; i++)
    if (config->setting[i].nodes[0])
      return true;
  return false;
}

/* The node classes of path's dlpar line (its keys already good): DLPAR_OK
 * and a note in note when they were not matched against the cluster's
 * nodes; else the refusal, "FILE:LINE: ...", in msg. */
static int check_classes(const char *path, char *msg, size_t len, char *note, size_t note_len)
{
  dlpar_plugstack_entry entry;
  dlpar_admin_config config;
  dlpar_error err = {0};
  char *nodes = NULL;
  int rc;
  note[0] = '\0';
  if (dlpar_plugstack_read(path, &entry, &err) != DLPAR_OK ||
      dlpar_admin_config_parse(entry.argc, entry.argv, &config, &err) != DLPAR_OK) {
    snprintf(msg, len, "%s", err.text);
    return DLPAR_ERR_INPUT;
  }
  if (has_classes(&config.net) && cluster_nodes(&nodes) != DLPAR_OK)
    snprintf(note, note_len, " (node classes not matched against the cluster's nodes: slurmctld did not answer)");
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
  /* libslurm's parser logs a list it refuses ("error: _parse_single_range:
   * ..."): off stderr while the file is checked, so the refusal is one line. */
  const int real_stderr = dlpar_slurm_quiet_stderr();
  const bool good = dlpar_plugstack_check(path, msg, sizeof(msg)) == DLPAR_OK &&
                    check_classes(path, msg, sizeof(msg), note, sizeof(note)) == DLPAR_OK;
  dlpar_slurm_restore_stderr(real_stderr);
  if (!good) {
    fprintf(stderr, PROGRAM ": %s\n", msg);
    return 1;
  }
  printf(PROGRAM ": %s%s\n", msg, note);
  return 0;
}
