#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/launcher_host_collectives.sh: dlpar_allreduce_host (sum,
# max, min, avg), dlpar_allgather_host (float64, float32) and dlpar_barrier
# on the tp, dp and world groups, values checked exactly
# (tests/integration/host_collectives.c), on 1, 2 and 4 ranks with grids
# 1x1, 2x1, 1x2 and 2x2 under dlpar-run: on MPI with the world
# communicator, and on the default backend with DLPAR_WORLD_VIA_GROUPS=1
# (the world collectives composed from the tp and dp groups, behind a guard
# that fails any use of the world communicator; on NCCL, where there are
# GPUs, they are so anyway); one 2x2 across the bed's 2 nodes under srun,
# and a plain run (one rank, the self backend).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed
prog=$B/tests/integration/host_collectives

# expect_ranks WHAT OUTPUT RANKS MODE("by groups"|direct)
expect_ranks() {
  local r
  for ((r = 0; r < $3; r++)); do
    expect_contains "$1 rank $r" "$2" "host_collectives: rank $r world $4: ok"
  done
  # reports counted, not lines: ranks' output may share a line under Open MPI 5
  expect_eq "$1: ranks reporting" "$(grep -o 'host_collectives: rank [0-9]* world' <<<"$2" | wc -l)" "$3"
}

for grid in 1x1 2x1 1x2 2x2; do
  m=${grid%x*} d=${grid#*x} n=$(( ${grid%x*} * ${grid#*x} ))
  out=$(DLPAR_BACKEND=mpi "$B/tools/dlpar-run" -n $n --dl-parallel=$grid -- "$prog" 2>&1)
  expect_rc "dlpar-run $grid" $? 0
  expect_ranks "dlpar-run $grid" "$out" $n direct
  out=$(DLPAR_WORLD_VIA_GROUPS=1 "$B/tools/dlpar-run" -n $n --dl-parallel=$grid -- "$prog" 2>&1)
  expect_rc "dlpar-run $grid, world via groups" $? 0
  expect_ranks "dlpar-run $grid, world via groups" "$out" $n "by groups"
  [ $n -gt 1 ] && expect_contains "dlpar-run $grid, world via groups: start-up line" "$out" \
    "dlpar: start-up of $n ranks"
done

out=$(DLPAR_WORLD_VIA_GROUPS=1 srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "$prog" 2>&1)
expect_rc "srun -N2 2x2, world via groups" $? 0
expect_ranks "srun -N2 2x2, world via groups" "$out" 4 "by groups"

out=$(env -u PMIX_NAMESPACE DLPAR_WORLD_VIA_GROUPS=1 "$prog" 2>&1)
expect_rc "plain run" $? 0
expect_ranks "plain run" "$out" 1 "by groups"

# The guard is real: world collectives through the world communicator fail behind it.
out=$(DLPAR_BACKEND=mpi "$B/tools/dlpar-run" -n 2 -- "$prog" --guard 2>&1)
expect_rc "--guard, world direct" $? 1
expect_contains "--guard, world direct" "$out" \
  "allreduce sum: allreduce on the world communicator, which the composition must not use"
expect_contains "--guard, world direct" "$out" "host_collectives: rank 1 world direct: FAILED"

# A misspelt switch is one line naming the fix.
out=$(DLPAR_WORLD_VIA_GROUPS=yes "$B/tools/dlpar-run" -n 2 -- "$prog" 2>&1)
expect_rc "DLPAR_WORLD_VIA_GROUPS=yes" $? 1
expect_contains "DLPAR_WORLD_VIA_GROUPS=yes" "$out" "DLPAR_WORLD_VIA_GROUPS=yes: unknown (use 0 or 1, or unset it)"
finish
