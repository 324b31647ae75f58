#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/restart_killed.sh: a rank killed by SIGKILL, as the OOM
# killer kills, under contrib/dlpar-restart, on a 3-node bed of this test's
# own, each step on 2 nodes:
#  - with n3 as the spare: dlpar-restart names n2 and why in one line, runs
#    the step again on n1 and n3, dlpar-train resumes from the last
#    checkpoint, and the losses are the uninterrupted run's, bit for bit;
#  - with no spare: the data-parallel size shrinks (2x2 to 2x1 on n1), and
#    dlpar-train resumes the 2x2 run's checkpoint with the same global
#    batch, the losses the uninterrupted run's to fp32 tolerance.
# dlpar-restart names the killed rank's node from the plugin's line
# (spank/stepd.c: each node's first task ended by a signal), which comes
# before the step's cancellation: Slurm 24.11 prints the step's
# cancellation before the killed rank's own srun line, and lists that rank
# with its node-mates, which the cancellation killed, so srun's lines alone
# do not tell its node (Slurm 22.05's first "Killed" line does).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed nodes=3
. "$DLPAR_SRCDIR/tests/lib/restart.sh"
export OMP_NUM_THREADS=1 DLPAR_RENDEZVOUS_TIMEOUT=30
train_whole

# rank 3's process (n2's second) kills itself once the first checkpoint is written
signal_on_n2 "$TEST_TMP/kill_on_n2" KILL 1
out=$(CKPT=$TEST_TMP/runs/test/2x2/killed/checkpoint.h5 timeout 400 salloc -N3 --ntasks-per-node=2 --no-kill "$restart" --max=1 \
      srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "$TEST_TMP/kill_on_n2" "${train[@]}" --run=killed 2>&1)
rc=$?
expect_eq "a rank killed on n2: the plugin names it, before the step's cancellation" \
  "$(awk '/ CANCELLED AT / { exit }
          /^slurmstepd-n2: error: dlpar: rank 3 \(pid [0-9]*\) on n2 was killed by SIGKILL before any other task of its node ended/ {
            print "named"; exit }' <<<"$out")" named
expect_rc "a rank killed on n2: the job ends well" $rc 0
expect_contains "a rank killed on n2: the line" "$out" \
  "dlpar-restart: excluding n2 (a rank was killed (SIGKILL: the OOM killer, or kill -9)): restart 1 of 1 on n1,n3 (DLPAR_RESTART=1)"
expect_eq "a rank killed on n2: losses bit for bit" "$(losses killed)" "$(losses whole)"

# no spare: the data-parallel size shrinks (2x2 on 2 nodes to 2x1 on n1,
# after a rank of n2 is killed), dlpar-train resumes from the 2x2 run's
# checkpoint with the same global batch: the uninterrupted run's losses to
# fp32 tolerance (the gradients' sums in another order)
out=$(CKPT=$TEST_TMP/runs/test/2x2/shrunk/checkpoint.h5 timeout 400 salloc -N2 --ntasks-per-node=2 --no-kill "$restart" --max=1 \
      srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "$TEST_TMP/kill_on_n2" "${train[@]}" --run=shrunk 2>&1)
expect_rc "no spare, 2x2: the job ends well" $? 0
expect_contains "no spare, 2x2: shrunk" "$out" \
  "dlpar-restart: excluding n2 (a rank was killed (SIGKILL: the OOM killer, or kill -9)): 1 node(s) left, the step needs 2: the data-parallel size shrinks, grid 2x1 on n1 (the program keeps the global batch), restart 1 of 1 (DLPAR_RESTART=1)"
expect_contains "no spare, 2x2: resumed from the 2x2 run's checkpoint" "$out" \
  "dlpar-train: resumed from $TEST_TMP/runs/test/2x2/shrunk/checkpoint.h5"
expect_contains "no spare, 2x2: the grid 2x1 with the same global batch" "$out" \
  "dlpar-train: grid 2x1 (tensor x data parallel) on 1 node, backend mpi, global batch 4 (4 per rank)"
shrunk=$(step_losses "$TEST_TMP/runs/test/2x1/shrunk/metrics.jsonl")
read -r rel count <<<"$(max_rel "$shrunk" "$(losses whole)")"
expect_eq "no spare, 2x2: the restart's losses, the uninterrupted run's to 1e-5 ($count steps, largest $rel)" \
  "$(awk -v r="$rel" -v n="$count" 'BEGIN { print (n >= 8 && r == r + 0 && r < 1e-5) ? "yes" : "no" }')" yes
finish
