#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/restart.sh: a job that survives a bad node
# (contrib/dlpar-restart), on a 3-node bed of this test's own, each step on
# 2 nodes with the third as the spare:
#  - a rank stopped (SIGSTOP) mid-training on n2: its node-mate names it,
#    the step ends, dlpar-restart names n2 and why in one line, runs the
#    step again on n1 and n3 with DLPAR_RESTART=1, dlpar-train resumes from
#    the last checkpoint, and the losses are the uninterrupted run's, bit
#    for bit;
#  - --dl-check failing a rank on n2: n2 excluded at the first attempt; the
#    restart's tasks get DLPAR_CHECKPOINT, the path given to --checkpoint;
#  - a failure that names no node (the program's own): not restarted, its
#    exit status; no spare left in an salloc job: stops, saying what the
#    step needs; in a batch job: requeued without the node, and the
#    requeued job's step passes on the other nodes with DLPAR_RESTART=1;
#  - n2 dies mid-run (every process of it killed, its ranks frozen just
#    before so that the run cannot end first): once Slurm marks it down,
#    dlpar-restart ends the srun left waiting for it, names n2, runs the
#    step on n1 and n3, and the losses are the uninterrupted run's.
# The bed's SlurmdTimeout is 15 s (a dead node is seen within a minute).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed nodes=3 slurmd_timeout=15
. "$DLPAR_SRCDIR/tests/lib/restart.sh"
# A restart is a step of the allocation on other nodes than its first ones.
# Each bed node has its own spool (dlpar-bed), so on Slurm 22.05 every case
# runs. Slurm 24.11's mpi/pmix_v5 cannot answer a rank's request for
# another node's rank's data on such a step ("Cannot send message to
# .../stepd.slurm.pmix.J.S ... hostlist: (null)", as openpmix issue 3559
# reports on a real 24.11 cluster). libdlpar makes Open MPI 5's modex a
# fence, so no such request is made, and the step runs. Where the probe
# still fails, as with a user's own OMPI_MCA_pmix_base_* settings, that
# Slurm's failure is a SKIP. A rank killed by SIGKILL is
# restart_killed.sh's.
probe=$B/tests/integration/rank_probe
out=$(DLPAR_RENDEZVOUS_TIMEOUT=20 timeout 120 salloc -N3 --ntasks-per-node=1 \
      bash -c "srun -N2 -n2 -w n1,n2 $probe && srun -N2 -n2 -w n1,n3 $probe" 2>&1)
pmix_cannot() { skip "a PMIx step on n1 and n3 of a 3-node allocation does not run on this Slurm ($(srun --version)): $(grep -m1 -e 'Cannot send' -e 'timed out' <<<"$out")"; }
[ "$(grep -c 'allreduce 2' <<<"$out")" = 4 ] || pmix_cannot
export OMP_NUM_THREADS=1 DLPAR_STOPPED_TIMEOUT=2 DLPAR_RENDEZVOUS_TIMEOUT=30
train_whole

# rank 2's process (n2's first) stops itself once the first checkpoint is written
signal_on_n2 "$TEST_TMP/stop_on_n2" STOP 0
start=$(date +%s.%N)
out=$(CKPT=$TEST_TMP/runs/test/2x2/restarted/checkpoint.h5 timeout 400 salloc -N3 --ntasks-per-node=2 --no-kill "$restart" --max=1 \
      srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "$TEST_TMP/stop_on_n2" "${train[@]}" --run=restarted 2>&1)
rc=$?
grep -q 'Cannot send message to' <<<"$out" && pmix_cannot
expect_rc "a rank stopped on n2: the job ends well" $rc 0
echo "stopped rank to the job's end: $(elapsed_since "$start") s"
expect_eq "dlpar-restart: one line naming n2 and why" "$(grep -c '^dlpar-restart: ' <<<"$out")" 1
expect_contains "dlpar-restart: the line" "$out" \
  "dlpar-restart: excluding n2 (a rank stopped (SIGSTOP, SIGTSTP)): restart 1 of 1 on n1,n3 (DLPAR_RESTART=1)"
expect_contains "dlpar-train resumed from the checkpoint" "$out" "dlpar-train: resumed from $TEST_TMP/runs/test/2x2/restarted/checkpoint.h5"
expect_eq "losses bit for bit, the restart's and the uninterrupted run's" "$(losses restarted)" "$(losses whole)"

# --dl-check fails a rank on n2 (NCCL settings that differ from rank 0's): excluded at once
hello=$B/tools/dlpar-hello
# (and a PyTorch program's checkpoint, as if the first attempt had written it)
echo weights >"$TEST_TMP/model.pt"
show_restart='echo "attempt $DLPAR_RESTART on $SLURMD_NODENAME: checkpoint ${DLPAR_CHECKPOINT:-none}"'
out=$(cd "$TEST_TMP" && timeout 400 salloc -N3 --ntasks-per-node=2 "$restart" --max=2 --checkpoint=model.pt \
      srun -N2 -n2 --ntasks-per-node=1 --dl-parallel=1x2 --dl-check \
      bash -c "$show_restart"'; [ "$SLURMD_NODENAME" != n2 ] || export NCCL_IB_TIMEOUT=20; exec "$0"' "$hello" 2>&1)
rc=$?
grep -q 'Cannot send message to' <<<"$out" && pmix_cannot
expect_rc "--dl-check failing on n2" $rc 0
expect_contains "--dl-check failing on n2: excluded" "$out" \
  "dlpar-restart: excluding n2 (--dl-check failed there): restart 1 of 2 on n1,n3"
expect_eq "the first attempt: no checkpoint to resume" "$(grep -c '^attempt 0 on n[12]: checkpoint none$' <<<"$out")" 2
expect_eq "the restart: the checkpoint's path" "$(grep -c "^attempt 1 on n[13]: checkpoint $TEST_TMP/model.pt\$" <<<"$out")" 2

# the program's own failure: not restarted; no spare: stopped
out=$(timeout 400 salloc -N2 "$restart" srun -N2 -n2 --dl-parallel=1x2 bash -c 'exit 3' 2>&1)
expect_rc "the program's own failure" $? 3
expect_contains "the program's own failure: not restarted" "$out" \
  "dlpar-restart: the step failed (exit 3) and named no node: the program's own failure, not restarted"
out=$(timeout 400 salloc -N2 "$restart" --no-shrink srun -N2 -n2 --ntasks-per-node=1 --dl-parallel=1x2 --dl-check \
      bash -c '[ "$SLURMD_NODENAME" != n2 ] || export NCCL_IB_TIMEOUT=20; exec "$0"' "$hello" 2>&1)
expect_rc "no spare" $? 1
expect_contains "no spare: what the step needs" "$out" \
  "dlpar-restart: excluding n2 (--dl-check failed there): 1 node(s) left, the step needs 2: no spare to restart on, and no requeue: not a batch job (salloc and srun jobs cannot be requeued: submit it with sbatch) (allocate spares: sbatch -N 3 --no-kill)"

# no spare in a batch job: requeued without n2, then passes on n1 and n3
cat >"$TEST_TMP/requeue.sbatch" <<SH
#!/bin/bash
$restart --max=1 --no-shrink srun -N2 -n2 --ntasks-per-node=1 --dl-parallel=1x2 --dl-check \\
  bash -c '$show_restart; [ "\$SLURMD_NODENAME" != n2 ] || export NCCL_IB_TIMEOUT=20; exec "\$0"' $hello
SH
job=$(cd "$TEST_TMP" && sbatch --parsable -N2 --ntasks-per-node=1 --requeue --open-mode=append -o "$TEST_TMP/requeue.out" "$TEST_TMP/requeue.sbatch")
for _ in $(seq 1 300); do
  [ -z "$(squeue -h -j "$job" -o %T 2>/dev/null)" ] && break
  sleep 1
done
out=$(cat "$TEST_TMP/requeue.out")
expect_contains "no spare in a batch job: requeued without n2" "$out" \
  "dlpar-restart: excluding n2 (--dl-check failed there): 1 node(s) left, the step needs 2: requeued job $job without n2 (restart 1 of 1 once Slurm starts it again, about two minutes)"
expect_eq "the requeued job's step on n1 and n3, DLPAR_RESTART=1" "$(grep -c '^attempt 1 on n[13]: checkpoint none$' <<<"$out")" 2
expect_eq "the requeued job: Slurm's count and exclusion" "$(scontrol show job "$job" | grep -o -e 'JobState=[A-Z]*' -e 'Restarts=[0-9]*' -e 'ExcNodeList=[^ ]*' | paste -sd ' ')" \
  "JobState=COMPLETED Restarts=1 ExcNodeList=n2"

# n2 dies mid-run: its ranks frozen once the first checkpoint is written
# (the run would otherwise end before the node's death), then every process
# of the node killed
cat >"$TEST_TMP/freeze_n2" <<'SH'
#!/bin/bash
if [ "$SLURMD_NODENAME" = n2 ] && [ "$DLPAR_RESTART" = 0 ]; then
  (while [ ! -e "$CKPT" ]; do sleep 0.01; done; kill -STOP $$) &
fi
exec "$@"
SH
chmod +x "$TEST_TMP/freeze_n2"
ckpt=$TEST_TMP/runs/test/2x2/node_death/checkpoint.h5
(while [ ! -e "$ckpt" ]; do sleep 0.05; done; sleep 0.5
 "$DLPAR_SRCDIR/tests/testbed/dlpar-bed" kill-node --dir "$(dirname "$SLURM_CONF")" n2) &
start=$(date +%s.%N)
out=$(CKPT=$ckpt DLPAR_STOPPED_TIMEOUT=600 timeout 400 salloc -N3 --ntasks-per-node=2 --no-kill "$restart" --max=1 \
      srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "$TEST_TMP/freeze_n2" "${train[@]}" --run=node_death 2>&1)
rc=$?
wait
expect_rc "n2 dies: the job ends well" $rc 0
echo "node death to the job's end: $(elapsed_since "$start") s (Slurm's SlurmdTimeout: 15 s)"
expect_eq "n2 dies: one line of dlpar-restart's" "$(grep -c '^dlpar-restart: ' <<<"$out")" 1
expect_contains "n2 dies: the line" "$out" \
  "dlpar-restart: excluding n2 (Slurm marks it down, not responding): restart 1 of 1 on n1,n3 (DLPAR_RESTART=1)"
expect_contains "n2 dies: dlpar-train resumed from the checkpoint" "$out" "dlpar-train: resumed from $ckpt"
expect_eq "n2 dies: losses bit for bit, the restart's and the uninterrupted run's" "$(losses node_death)" "$(losses whole)"
finish
