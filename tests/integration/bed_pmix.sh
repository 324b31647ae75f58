#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/bed_pmix.sh: the Slurm test bed runs a PMIx job across
# two emulated nodes: srun -N2 -n4 --ntasks-per-node=2 pmix_client checks
# rank, size, local rank, every peer's node and a fence with collected data.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed
out=$(srun -N2 -n4 --ntasks-per-node=2 --mpi=pmix "$DLPAR_BUILDDIR/tests/integration/pmix_client" n1,n1,n2,n2 2>&1)
expect_rc "srun pmix_client" $? 0
expect_eq "ranks that passed" "$(grep -c ': ok$' <<<"$out")" 4
for rank in 0 1 2 3; do
  expect_contains "rank $rank line" "$out" "pmix_client rank $rank of 4 on n$((rank / 2 + 1)): ok"
done
echo "$out"
finish
