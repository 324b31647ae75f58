#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/restart_steps.sh: contrib/dlpar-restart follows its own
# step, by the name it gives it, through the real srun and squeue on the
# bed (tests/unit/restart_cases.sh has the cases that need a failing Slurm):
#  - the step's name as Slurm lists it is the one dlpar-restart follows
#    (PROGRAM@restart0.TOKEN);
#  - another step of the job (a monitoring srun --overlap) starting and
#    ending (3 s) while the attempt's srun still waits for its own step (the
#    node's CPUs held by an earlier step) does not get that srun killed:
#    it runs when the CPUs free, and the job ends well.
# --mpi=none steps: no PMIx program (use_bed any). RESTART=PATH runs
# another copy of dlpar-restart (the one before a fix).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed any
restart=${RESTART:-$DLPAR_SRCDIR/contrib/dlpar-restart}
cat >"$TEST_TMP/job" <<SH
#!/bin/bash
# an earlier step holds the node's CPUs for 15 s
srun -n1 -c 8 --mpi=none sleep 15 &
sleep 1
# a monitoring step starts 2 s later and ends 3 s after
(sleep 2; srun --overlap -n1 -c1 --mpi=none sleep 3) &
$restart srun -n1 -c 8 --mpi=none bash -c 'squeue -h -s -j \$SLURM_JOB_ID -o "%i %j"; echo done'
rc=\$?
wait
exit \$rc
SH
chmod +x "$TEST_TMP/job"
start=$(date +%s)
out=$(timeout 150 salloc -N1 -n1 -c 8 "$TEST_TMP/job" 2>&1)
rc=$?
echo "$out" | sed 's/^/  /'
expect_rc "a monitoring step while the srun waits for its own: the job ends well" $rc 0
expect_contains "the step ran once the CPUs were free" "$out" "done"
expect_eq "no line of dlpar-restart's" "$(grep -c '^dlpar-restart: ' <<<"$out")" 0
expect_eq "the step listed by Slurm under the name dlpar-restart follows" \
  "$(grep -cE '^[0-9]+\.[0-9]+ bash@restart0\.[0-9a-f]+$' <<<"$out")" 1
echo "the job took $(($(date +%s) - start)) s (the earlier step 15)"
finish
