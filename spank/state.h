/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/state.h: the plugin's state and its error reporting. SPANK
 * callbacks take no context pointer, so the state is one global (the only
 * global mutable state in dlpar: SPANK forces it), owned by state.c: the
 * option callbacks (options.c) fill it, srun.c and stepd.c read it. */
#ifndef DLPAR_SPANK_STATE_H
#define DLPAR_SPANK_STATE_H

#include <slurm/spank.h>
#include <stdbool.h>

#include "common/grid.h"
#include "common/status.h"
#include "common/profile.h"
#include "common/topo.h"
#include "spank/admin.h"
#include "spank/plugstack.h"
#include "spank/request.h"

#define DLPAR_PLUGIN "dlpar"

typedef struct {
  dlpar_admin_config admin;
  dlpar_error config_error; /* a bad plugstack.conf line: the parser's error (text "" for a good one) */
  char config_where[DLPAR_ERRLEN]; /* ... and where it is (dlpar_plugstack_where) */
  struct spank_option spank_options[DLPAR_OPTION_COUNT]; /* the option table as SPANK registers it */
  dlpar_user_options options; /* the options' raw text */
  dlpar_request request;      /* ... parsed in this context (dlpar_request_parse) */
  /* slurmstepd: the node's topology (read once, in user_init) and the
   * step's GPUs on the node (task_init_privileged: task_init sees only the
   * task's own GPU under --gpus-per-task) */
  dlpar_topology topology;
  int step_gpus[DLPAR_MAX_GPUS];
  int nstep_gpus;
  dlpar_error topology_error; /* status DLPAR_OK: the topology is loaded */
  /* slurmstepd, user_init: the step's torch rendezvous (spank/master.c) */
  char master_addr[256];
  char master_node[256]; /* world rank 0's node (elsewhere than on it: the step's first node) */
  int master_port;
  char gloo_ifname[32];
  dlpar_error master_error;          /* status DLPAR_OK, or the error task_init raises */
  dlpar_error master_warning;        /* why there is no MASTER_ADDR, said by rank 0's task */
  char port_warning[DLPAR_ERRLEN];   /* a busy derived MASTER_PORT under the default --dl-env, said by rank 0's task */
  bool master_said;                  /* master_error was said in user_init already (rank 0's node) */
  bool master_wait;                  /* a node without rank 0: its tasks wait for rank 0's node's (spank/master.c) */
  bool master_hold;                  /* rank 0's node of several: its first task waits until the others saw it */
  bool task_ended;                   /* a task of this node has ended (task_exit, in slurmstepd) */
  /* slurmstepd, user_init: the site's network settings for this node (admin.net) */
  dlpar_net_config node_net;
  dlpar_error net_error;             /* status DLPAR_OK, or a class conflict or missing interface, said once */
} dlpar_spank_state;

extern dlpar_spank_state dlpar_spank;

/* A fresh state with the plugstack.conf arguments parsed. A bad line takes
 * no daemon down: it is kept, slurmd says so when it starts, and every
 * --dl-* option is refused with it (dlpar_spank_config_refusal). */
void dlpar_spank_state_init(int ac, char **av);
/* Under a bad plugstack.conf line: true, and the refusal where reader reads
 * it in out (node: this node's name, for the remote readers). */
bool dlpar_spank_config_refusal(dlpar_config_reader reader, const char *node, char *out, size_t len);
/* The user gave a --dl-* option (nothing happens otherwise). */
bool dlpar_spank_requested(void);
/* ... and this is slurmstepd (the remote context), under a good
 * plugstack.conf line. */
bool dlpar_spank_requested_in_stepd(void);
/* slurmstepd's task_init under a bad line: -1 for every task of a --dl-*
 * step (the batch step's too), the node's first task saying why and, where
 * srun accepted the step (DLPAR_SRUN_STEP), that srun reads the line otherwise;
 * else 0. */
int dlpar_spank_refuse_bad_config(spank_t sp);

/* Prints "dlpar: <message>" through Slurm's log (srun shows it). */
void dlpar_spank_error(const char *message);

#endif
