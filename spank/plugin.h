/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/plugin.h: the entry points of each SPANK context, which plugin.c's
 * callbacks dispatch to. options.c serves every context, srun.c serves
 * srun, and stepd.c and master.c serve slurmstepd. spank/state.h holds the
 * state they share. */
#ifndef DLPAR_SPANK_PLUGIN_H
#define DLPAR_SPANK_PLUGIN_H

#include <slurm/spank.h>

#include "common/status.h"
#include "spank/state.h"

#define UNUSED __attribute__((unused)) /* SPANK fixes the callbacks' signatures */

/* Registers the --dl-* options, in spank/options.c. */
int dlpar_spank_register_options(spank_t sp);

/* Refuses the options under a bad plugstack.conf line, else parses their
 * syntax into dlpar_spank.request (spank/options.c). All that
 * sbatch and salloc check: the values reach the
 * job's steps through Slurm's SPANK option environment, and srun and
 * slurmstepd check them again against the step. */
int dlpar_spank_parse_request(void);

/* srun, in spank/srun.c */
int dlpar_srun_local_user_init(spank_t sp);

/* slurmstepd: the step's torch rendezvous point, once per node, in
 * spank/master.c, and the rest, in spank/stepd.c */
int dlpar_master_prepare(spank_t sp, bool torch_env);
/* From task_init of rank 0's node when dlpar_master_prepare failed: ends
 * the whole step, every node's tasks; DLPAR_OK, or the error in err. */
int dlpar_master_end_step(spank_t sp, dlpar_error *err);
/* Called from task_init on a node without rank 0, under
 * dlpar_spank.master_wait. It waits until rank 0's node has started its
 * tasks, which it does only once its user_init accepted MASTER_PORT, so no
 * task here runs towards a port that node refused. It returns
 * DLPAR_ERR_INPUT, with err empty because rank 0's node said why, when
 * that node's slurmstepd ends without tasks. It returns DLPAR_ERR_SYSTEM,
 * with err said where `say` is set, when that node has none after 300 s. */
/* How long rank 0's node keeps its slurmstepd after it refused the step
 * in user_init, for the other nodes' tasks to see it end without tasks. */
#define DLPAR_MASTER_REFUSAL_LINGER_S 3
int dlpar_master_wait_rank0(spank_t sp, bool say, dlpar_error *err);
/* Called from task_init of rank 0's node's first task, under
 * dlpar_spank.master_hold. It waits, up to 10 s, until every other node has its tasks, and 0.25 s
 * more, so that theirs see this node's tasks even where these end at
 * once. DLPAR_OK. */
int dlpar_master_hold(spank_t sp);
/* This node's name in the step's node list, which is what plugstack.conf's host lists name. */
int dlpar_master_this_node(spank_t sp, char *node, size_t len, dlpar_error *err);
int dlpar_stepd_user_init(spank_t sp);
int dlpar_stepd_task_init_privileged(spank_t sp);
int dlpar_stepd_task_init(spank_t sp);
/* After each task of the node ends, in slurmstepd: names the node's first
 * task to end where a signal ended it. */
int dlpar_stepd_task_exit(spank_t sp);

#endif
