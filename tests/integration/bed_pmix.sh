#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/bed_pmix.sh: the Slurm test bed runs a PMIx job across
# two emulated nodes: srun -N2 -n4 --ntasks-per-node=2 pmix_client checks
# rank, size, local rank, every peer's node and a fence with collected data;
# and a second PMIx step of one allocation, on other nodes than the first
# (each node's slurmstepd socket in its own spool directory).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed
out=$(srun -N2 -n4 --ntasks-per-node=2 --mpi=pmix "$DLPAR_BUILDDIR/tests/integration/pmix_client" n1,n1,n2,n2 2>&1)
expect_rc "srun pmix_client" $? 0
expect_eq "ranks that passed" "$(grep -c ': ok$' <<<"$out")" 4
for rank in 0 1 2 3; do
  expect_contains "rank $rank line" "$out" "pmix_client rank $rank of 4 on n$((rank / 2 + 1)): ok"
done
echo "$out"
client=$DLPAR_BUILDDIR/tests/integration/pmix_client
out=$(timeout 120 salloc -N2 --ntasks-per-node=2 bash -c "srun -N1 -n2 -w n2 --mpi=pmix $client n2,n2 && srun -N2 -n2 --mpi=pmix $client n1,n2" 2>&1)
expect_rc "salloc: a step on n2, then one on n1 and n2" $? 0
expect_eq "both steps' ranks passed (2 on n2, then 1 on n1 and 1 on n2)" "$(grep -c 'pmix_client rank [01] of 2 on n[12]: ok$' <<<"$out")" 4
echo "$out"
finish
