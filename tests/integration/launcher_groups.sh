#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/launcher_groups.sh: libdlpar's groups and collectives
# through dlpar-hello, under srun on the 2-node bed and under dlpar-run,
# for grids 1x4, 2x2 and 4x1: every rank's host, node, local rank, grid
# coordinates, exact tp/dp membership, device, and exact integer results of
# allreduce, allgather, reduce-scatter and broadcast on every group. Also a
# plain run outside PMIx (one rank, 1x1).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed
hello=$B/tools/dlpar-hello

# expect_hello WHAT OUTPUT M D PER_NODE HOST_PATTERN DEVICE_MODE(local|none)
expect_hello() {
  local what=$1 out=$2 m=$3 d=$4 per_node=$5 hosts=$6 devices=$7 r host node device line
  for ((r = 0; r < m * d; r++)); do
    node=$(( r / per_node ))
    if [ "$hosts" = nodes ]; then host=n$(( node + 1 )); else host=$hosts; fi
    device=-1; [ "$devices" = local ] && device=$(( r % per_node ))
    line="rank $r/$(( m * d )) host $host node $node local $(( r % per_node ))/$per_node tp $(( r % m ))/$m $(tp_members "$m" "$r") dp $(( r / m ))/$d $(dp_members "$m" "$d" "$r") device $device backend mpi"
    expect_contains "$what rank $r" "$out" "$line"
  done
  expect_eq "$what: ranks with collectives ok" "$(grep -c 'collectives ok' <<<"$out")" $(( m * d ))
}

for grid in 1x4 2x2; do
  m=${grid%x*} d=${grid#*x}
  out=$(srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=$grid "$hello" 2>&1)
  expect_rc "srun $grid" $? 0
  expect_hello "srun -N2 $grid" "$out" "$m" "$d" 2 nodes local
done
out=$(srun -N1 -n4 --dl-parallel=4x1 "$hello" 2>&1)
expect_rc "srun 4x1" $? 0
expect_hello "srun -N1 4x1" "$out" 4 1 4 nodes local

here=$(hostname)
for grid in 1x4 2x2 4x1; do
  m=${grid%x*} d=${grid#*x}
  out=$("$B/tools/dlpar-run" -n 4 --dl-parallel=$grid -- "$hello" 2>&1)
  expect_rc "dlpar-run $grid" $? 0
  expect_hello "dlpar-run $grid" "$out" "$m" "$d" 4 "$here" none
done

out=$(env -u PMIX_NAMESPACE "$hello" 2>&1)
expect_rc "plain run" $? 0
expect_contains "plain run" "$out" "rank 0/1 host $here node 0 local 0/1 tp 0/1 [0] dp 0/1 [0] device -1 backend self"
expect_contains "plain run" "$out" "collectives ok"

# A misspelt backend choice or timeout is an error that names the fix, not a silent default.
out=$(env -u PMIX_NAMESPACE DLPAR_BACKEND=ncl "$hello" 2>&1)
expect_rc "DLPAR_BACKEND=ncl" $? 1
expect_contains "DLPAR_BACKEND=ncl" "$out" "DLPAR_BACKEND=ncl: unknown backend (use nccl or mpi, or unset it)"
out=$(DLPAR_NCCL_GROUPS=splt "$B/tools/dlpar-run" -n 2 -- "$hello" 2>&1)
expect_rc "DLPAR_NCCL_GROUPS=splt" $? 1
expect_contains "DLPAR_NCCL_GROUPS=splt" "$out" "DLPAR_NCCL_GROUPS=splt: unknown (use initrank or split, or unset it)"
# A value holding a newline and an escape byte is shown escaped: the refusal stays one line.
out=$(env -u PMIX_NAMESPACE DLPAR_BACKEND=$'x\n\e[2J' "$hello" 2>&1)
expect_rc "DLPAR_BACKEND with a newline" $? 1
expect_eq "DLPAR_BACKEND with a newline: one line" "$(printf '%s\n' "$out" | wc -l)" 1
expect_contains "DLPAR_BACKEND with a newline" "$out" 'DLPAR_BACKEND=x\n\x1b[2J: unknown backend'
out=$(DLPAR_MODEX=$'x\n\e[2J' "$B/tools/dlpar-run" -n 2 -- "$hello" 2>&1)
expect_rc "DLPAR_MODEX with a newline" $? 1
expect_contains "DLPAR_MODEX with a newline" "$out" 'DLPAR_MODEX=x\n\x1b[2J: unknown (use direct or collect, or unset it)'
out=$(env -u PMIX_NAMESPACE DLPAR_RENDEZVOUS_TIMEOUT=2min "$hello" 2>&1)
expect_rc "DLPAR_RENDEZVOUS_TIMEOUT=2min" $? 1
expect_contains "DLPAR_RENDEZVOUS_TIMEOUT=2min" "$out" \
  "DLPAR_RENDEZVOUS_TIMEOUT=2min: not a number of seconds (use e.g. 120, or unset it)"
finish
