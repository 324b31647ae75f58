#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/slurm_steps.sh: the behaviours of Slurm's steps that
# dlpar builds on, checked on every bed, with mpi/pmix or without (the
# steps run --mpi=none programs):
#  - the default task distribution is block: with 2 tasks on each of 2
#    nodes, ranks 0-1 share the first node and 2-3 the second (the
#    tensor-parallel groups of M consecutive ranks stay inside a node);
#  - a task that exits non-zero leaves the others running unless the step
#    asks for --kill-on-bad-exit, which terminates them at once: libdlpar's
#    fail-fast ends the step itself (PMIx_Abort), relying on no srun option;
#  - a cancelled job (scancel, the time limit) gets SIGTERM in every task,
#    then SIGKILL KillWait later (5 s on the bed): the window in which
#    dlpar-train checkpoints.
# It prints srun's exit codes and the times it saw, the versions' behaviour
# doc/admin.md records. A bed of its own: its times must not include
# waiting for another test's steps.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed private any
steps=(-N2 -n4 --ntasks-per-node=2 --mpi=none)
echo "slurm_steps: $(srun --version 2>&1)"

# (srun's own lines, such as "job N queued and waiting for resources", stay out)
layout=$(srun "${steps[@]}" bash -c 'echo $SLURM_PROCID $SLURMD_NODENAME' 2>"$TEST_TMP/layout.err" |
         sort -n | awk '/^[0-9]+ / { print $2 }' | paste -sd ' ')
echo "slurm_steps: default distribution, ranks 0-3 on: $layout"
read -r node0 node1 node2 node3 <<<"$layout"
expect_eq "default distribution: rank 1 beside rank 0" "$node1" "$node0"
expect_eq "default distribution: rank 3 beside rank 2" "$node3" "$node2"
TEST_CHECKS=$((TEST_CHECKS + 1))
[ -n "$node0" ] && [ "$node0" != "$node2" ] || fail "default distribution: ranks 0 and 2 on one node ($layout)"

# run_timed ARGS: srun ARGS, then "EXIT-CODE SECONDS"
run_timed() {
  local start rc
  start=$(date +%s.%N)
  srun "$@" >"$TEST_TMP/srun.out" 2>&1
  rc=$?
  echo "$rc $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')"
}
exits_3='if [ $SLURM_PROCID = 1 ]; then exit 3; fi; sleep '
read -r rc seconds <<<"$(run_timed "${steps[@]}" bash -c "${exits_3}3")"
echo "slurm_steps: a task exits 3, the others sleep 3 s: srun exit $rc after $seconds s"
expect_rc "a task exits 3, no --kill-on-bad-exit: srun's exit" "$rc" 3
TEST_CHECKS=$((TEST_CHECKS + 1))
awk -v t="$seconds" 'BEGIN { exit !(t >= 2.5) }' || fail "a task exits 3: the others were ended after $seconds s (expected them to finish their 3 s)"

read -r rc seconds <<<"$(run_timed "${steps[@]}" --kill-on-bad-exit=1 bash -c "${exits_3}60")"
echo "slurm_steps: a task exits 3 under --kill-on-bad-exit, the others sleep 60 s: srun exit $rc after $seconds s"
expect_rc "a task exits 3 under --kill-on-bad-exit: srun's exit (128 + SIGTERM)" "$rc" 143
TEST_CHECKS=$((TEST_CHECKS + 1))
awk -v t="$seconds" 'BEGIN { exit !(t < 15) }' || fail "--kill-on-bad-exit: the step ran $seconds s (expected the others terminated at once)"
expect_contains "--kill-on-bad-exit: srun names the task" "$(cat "$TEST_TMP/srun.out")" "task 1: Exited with exit code 3"

# A cancelled job: every task traps SIGTERM (records it) and sleeps on.
name=dlpar-steps-$$
srun "${steps[@]}" --job-name=$name bash -c \
  "trap 'echo \$SLURM_PROCID >>$TEST_TMP/term.\$SLURM_PROCID' TERM; touch $TEST_TMP/up.\$SLURM_PROCID; for i in \$(seq 60); do sleep 1; done" \
  >"$TEST_TMP/cancel.out" 2>&1 &
srun_pid=$!
for i in $(seq 300); do [ "$(ls "$TEST_TMP"/up.* 2>/dev/null | wc -l)" = 4 ] && break; sleep 0.1; done
start=$(date +%s.%N)
scancel --name=$name
wait $srun_pid
rc=$?
seconds=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "slurm_steps: job cancelled, tasks trap SIGTERM: $(cat "$TEST_TMP"/term.* 2>/dev/null | wc -l) of 4 saw it, srun exit $rc after $seconds s"
expect_eq "cancelled job: SIGTERM reaches every task" "$(cat "$TEST_TMP"/term.* 2>/dev/null | sort -n | paste -sd ' ')" "0 1 2 3"
TEST_CHECKS=$((TEST_CHECKS + 1))
awk -v t="$seconds" 'BEGIN { exit !(t >= 3 && t < 15) }' ||
  fail "cancelled job: SIGKILL came $seconds s after SIGTERM (expected KillWait, 5 s)"
expect_rc "cancelled job: srun's exit (128 + SIGKILL)" "$rc" 137
finish
