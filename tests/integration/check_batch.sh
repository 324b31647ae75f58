#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/check_batch.sh: --dl-check given to the allocation
# (#SBATCH --dl-check[=only], salloc --dl-check=only) reaches the job's
# steps through Slurm's SPANK option environment: =only checks and stops,
# the bare option checks then runs, a failed check fails the batch job,
# and a step's own --dl-check=off wins over the job's.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed
hello=$B/tools/dlpar-hello
export $CHECK_ANY_SPEED

# batch_job NAME CHECK-LINE STEP-OPTIONS: sbatch -W a 2x2 job; its output in $TEST_TMP/NAME.out
batch_job() {
  cat >"$TEST_TMP/$1.sh" <<JOB
#!/bin/bash
#SBATCH -N2 -n4 --ntasks-per-node=2
#SBATCH $2
srun --dl-parallel=2x2 $3 $hello
JOB
  sbatch -W -o "$TEST_TMP/$1.out" "$TEST_TMP/$1.sh" >/dev/null 2>&1
}

batch_job only "--dl-check=only" ""
expect_rc "#SBATCH --dl-check=only" $? 0
out=$(cat "$TEST_TMP/only.out" 2>/dev/null)
expect_contains "#SBATCH --dl-check=only: the step checked" "$out" "dlpar-check: 4 ranks, grid 2x2"
expect_contains "#SBATCH --dl-check=only: every check passed" "$out" "dlpar-check: all checks passed in "
expect_eq "#SBATCH --dl-check=only: the program did not run" "$(grep -c 'collectives ok' <<<"$out")" 0

batch_job then-run "--dl-check" ""
expect_rc "#SBATCH --dl-check" $? 0
out=$(cat "$TEST_TMP/then-run.out" 2>/dev/null)
expect_contains "#SBATCH --dl-check: checked, then" "$out" "; running the program"
expect_eq "#SBATCH --dl-check: the program ran" "$(grep -c 'collectives ok' <<<"$out")" 4

batch_job step-off "--dl-check=only" "--dl-check=off"
expect_rc "#SBATCH --dl-check=only, srun --dl-check=off" $? 0
out=$(cat "$TEST_TMP/step-off.out" 2>/dev/null)
expect_eq "srun --dl-check=off in the job: no checks" "$(grep -c 'dlpar-check:' <<<"$out")" 0
expect_eq "srun --dl-check=off in the job: the program ran" "$(grep -c 'collectives ok' <<<"$out")" 4

DLPAR_CHECK_MIN_BUSBW=1000 batch_job failing "--dl-check" ""
expect_rc "#SBATCH --dl-check, an allreduce under 1000 GB/s" $? 1
out=$(cat "$TEST_TMP/failing.out" 2>/dev/null)
expect_contains "#SBATCH --dl-check, failed: said so" "$out" "dlpar-check: FAILED in "
expect_eq "#SBATCH --dl-check, failed: the program did not run" "$(grep -c 'collectives ok' <<<"$out")" 0

out=$(salloc -N2 -n4 --ntasks-per-node=2 --dl-check=only srun --dl-parallel=2x2 "$hello" 2>&1)
expect_rc "salloc --dl-check=only" $? 0
expect_contains "salloc --dl-check=only: the step checked" "$out" "dlpar-check: all checks passed in "
expect_eq "salloc --dl-check=only: the program did not run" "$(grep -c 'collectives ok' <<<"$out")" 0
finish
