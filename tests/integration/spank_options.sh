#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/spank_options.sh: the plugin's options through a real
# srun/sbatch on the 2-node bed: srun --help lists them, and every bad
# input is refused with its exact one-line message and a non-zero exit
# (srun: before launch; slurmstepd: per task; sbatch: at submission),
# heterogeneous steps by name.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed

help=$(srun --help 2>&1)
for opt in "--dl-parallel=MxD" "--dl-profile=nsys|nvtx|off" "--dl-profile-steps=A-B" "--dl-profile-ranks=LIST" "--dl-verbose"; do
  expect_contains "srun --help" "$help" "$opt"
done

long=$(printf '1%.0s' $(seq 300))
shown=$(printf '1%.0s' $(seq 60))... # --dl-parallel's value is shown up to 60 bytes, then ...
# args | expected message (after "dlpar: ")
while IFS='|' read -r args message; do
  [ -n "$args" ] || continue
  eval "set -- $args"
  out=$(PATH=/usr/bin:/bin srun "$@" true 2>&1)
  rc=$?
  expect_rc "srun $args" $rc 1
  expect_contains "srun $args" "$out" "dlpar: $message"
done <<EOF2
-n4 --dl-parallel=|--dl-parallel needs a value MxD (e.g. --dl-parallel=4x2)
-n4 --dl-parallel=abc|--dl-parallel=abc: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)
-n4 --dl-parallel=0x4|--dl-parallel=0x4: M must be at least 1 (e.g. --dl-parallel=1x4)
-n4 --dl-parallel=4x0|--dl-parallel=4x0: D must be at least 1 (e.g. --dl-parallel=4x1)
-n4 --dl-parallel=2x|--dl-parallel=2x: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)
-n4 --dl-parallel=x2|--dl-parallel=x2: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)
-n4 --dl-parallel=2x2x1|--dl-parallel=2x2x1: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)
-n4 --dl-parallel=-2x2|--dl-parallel=-2x2: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)
-n4 --dl-parallel=2.0x2|--dl-parallel=2.0x2: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)
-n4 "--dl-parallel=2 x2"|--dl-parallel=2 x2: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)
-n4 --dl-parallel=99999999999x1|--dl-parallel=99999999999x1: M is too large (at most 1048576)
-n4 --dl-parallel=2×2|--dl-parallel=2×2: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)
-n4 --dl-parallel=$long|--dl-parallel=$shown: value too long (expected MxD, e.g. --dl-parallel=4x2)
-n8 --dl-parallel=4x3|--dl-parallel=4x3 needs 12 tasks but the step has 8 (use -n 12 or --dl-parallel=4x2)
-n3 --dl-parallel=2x2|--dl-parallel=2x2 needs 4 tasks but the step has 3 (use -n 4)
-n6 --dl-parallel=4|--dl-parallel=4: 6 tasks cannot form groups of 4 (use a task count that is a multiple of 4, or --dl-parallel=M with M dividing 6)
-N2 -n6 --ntasks-per-node=3 --dl-parallel=2x3|--dl-parallel=2x3: tensor-parallel group 1 (ranks 2-3) spans node 0 and node 1 (give every node a multiple of 2 tasks, e.g. --ntasks-per-node=2, or ask the admin for tp_span=warn)
-N2 -n4 --ntasks-per-node=2 --dl-parallel=4x1|--dl-parallel=4x1: tensor-parallel group 0 (ranks 0-3) spans node 0 and node 1 (give every node a multiple of 4 tasks, e.g. --ntasks-per-node=4, or ask the admin for tp_span=warn)
-n4 --dl-parallel=2x2 --mpi=none|--dl-parallel needs PMIx but the step uses --mpi=none (use --mpi=pmix, or ask the admin for MpiDefault=pmix)
-n4 --dl-profile=perf|--dl-profile=perf: unknown profiler (use nsys, nvtx or off)
-n4 --dl-profile=nsys --dl-profile-steps=40-30|--dl-profile-steps=40-30: the range is empty (use A-B with A <= B, e.g. 30-40)
-n4 --dl-profile=nsys --dl-profile-steps=abc|--dl-profile-steps=abc: expected a step range A-B (e.g. --dl-profile-steps=30-40)
-n4 --dl-profile=nsys --dl-profile-steps=-5|--dl-profile-steps=-5: expected a step range A-B (e.g. --dl-profile-steps=30-40)
-n4 --dl-profile=nvtx --dl-profile-ranks=x|--dl-profile-ranks=x: expected ranks like 0,2,4-7 or all (e.g. --dl-profile-ranks=0)
-n4 --dl-profile=nvtx --dl-profile-ranks=4|--dl-profile-ranks: rank 4 does not exist in a step of 4 tasks (use ranks 0-3)
-n4 --dl-profile-steps=1-2|--dl-profile-steps needs a profiler (add --dl-profile=nsys or --dl-profile=nvtx)
-n4 --dl-profile-ranks=0|--dl-profile-ranks needs a profiler (add --dl-profile=nsys or --dl-profile=nvtx)
-N1 -n2 --dl-parallel=1x2 --dl-profile=nsys|--dl-profile=nsys: nsys is not on the PATH of srun (load Nsight Systems, e.g. module load nsight-systems, or use --dl-profile=nvtx)
-n2 --dl-parallel=2x1 true : -n1|--dl-* options do not support heterogeneous steps (srun A : B, --het-group=0,1; here 3 tasks in 2 components): run the parallel program as a step of one component (srun --het-group=N)
-n1 --dl-verbose true : -n1|--dl-* options do not support heterogeneous steps (srun A : B, --het-group=0,1; here 2 tasks in 2 components): run the parallel program as a step of one component (srun --het-group=N)
EOF2

# --export narrows the tasks' PATH: srun cannot tell, each task checks its own
out=$(PATH=/usr/bin:/bin SLURM_EXPORT_ENV=NONE srun -N1 -n2 --dl-parallel=1x2 --dl-profile=nsys /bin/true 2>&1)
expect_rc "nsys missing, --export=NONE" $? 1
expect_contains "nsys missing, --export=NONE" "$out" "dlpar: --dl-profile=nsys: nsys is not on the PATH of rank 0 on n1 (load"

# a one-component step of a heterogeneous job is an ordinary step
out=$(salloc -n1 : -n1 srun -n1 --dl-parallel=1 printenv DLPAR_TP_SIZE 2>&1)
expect_rc "one component of a heterogeneous job" $? 0
expect_eq "one component of a heterogeneous job" "$(grep -v '^salloc:' <<<"$out")" 1

# sbatch checks the syntax at submission and refuses a bad grid
out=$(sbatch --wrap=true --dl-parallel=2y 2>&1)
expect_rc "sbatch --dl-parallel=2y" $? 1
expect_contains "sbatch --dl-parallel=2y" "$out" "sbatch: error: dlpar: --dl-parallel=2y: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)"
out=$(sbatch --wrap=true --dl-profile=gprof 2>&1)
expect_rc "sbatch --dl-profile=gprof" $? 1
expect_contains "sbatch --dl-profile=gprof" "$out" "dlpar: --dl-profile=gprof: unknown profiler (use nsys, nvtx or off)"
finish
