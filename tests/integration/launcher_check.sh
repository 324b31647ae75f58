#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/launcher_check.sh: the pre-flight checks on the CPU path.
# srun --dl-check=only (2-node bed) and dlpar-run --check=only print one
# table (a row per rank: host, device, NIC, CPUs, binding, GPU and peer
# SKIP, settings, tp/dp allreduce busbw, GEMM rate, tp/dp link and the
# source of its figure) and stop; --dl-check
# then runs the program. Injected faults (tests/lib/slow_rank) are named:
# a rank with a different NCCL setting, a throttled rank as a straggler
# with a ready --exclude= list, an allreduce under its expected busbw; each
# ends the step with exit status 1 before the program runs. The throttled
# rank runs 1/11 of the time (SIGSTOP/SIGCONT), its start-up too: ~20 s.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed
hello=$B/tools/dlpar-hello
slow=$DLPAR_SRCDIR/tests/lib/slow_rank
export DLPAR_STOPPED_TIMEOUT=600 # the throttled rank is stopped often, briefly

# expect_table WHAT OUTPUT RANKS HOST_OF_RANK...: one row per rank, in order
expect_table() {
  local what=$1 out=$2 ranks=$3 r
  shift 3
  expect_contains "$what" "$out" "rank  host         device   NIC      cpus       binding gpu   peer  settings tp busbw"
  for ((r = 0; r < ranks; r++)); do
    grep -Eq "^$r +$1 +cpu +[^ ]+ +[^ ]+ +(ok|SKIP) +SKIP +SKIP " <<<"$out" ||
      fail "$what: no row for rank $r on $1 (cpu, binding ok, gpu and peer SKIP): $out"
    TEST_CHECKS=$((TEST_CHECKS + 1))
    shift
  done
}

# Healthy grids pass; =only stops before the program, --dl-check runs it after.
out=$(env $CHECK_ANY_SPEED srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 --dl-check=only "$hello" 2>&1)
expect_rc "srun --dl-check=only" $? 0
expect_table "srun --dl-check=only" "$out" 4 n1 n1 n2 n2
expect_contains "srun --dl-check=only" "$out" "dlpar-check: all checks passed in "
expect_eq "srun --dl-check=only: the program did not run" "$(grep -c 'collectives ok' <<<"$out")" 0
# Each group's link and its source: shared memory inside a node (hwloc's
# memory bandwidth, else the default), the NIC between nodes: the bed's
# veth, whose driver says 10000 Mb/s (the ethtool ioctl in the node's own
# network namespace).
for r in 0 1 2 3; do
  grep -Eq "^$r .* [0-9.]+ memory (hwloc|default) +1\.25 eth0 ethtool$" <<<"$out" ||
    fail "srun --dl-check=only: rank $r's links are not shared memory (tp) and eth0 at 1.25 GB/s (dp): $out"
  TEST_CHECKS=$((TEST_CHECKS + 1))
done
# Exit codes as the manual pages promise: a failed check 1 (dlpar_init's
# DLPAR_ERR_CHECK; srun and dlpar-run pass the ranks' code on), bad
# arguments to dlpar-run 2.
# The pass mark follows the link: 1000 x eth0's 1.25 GB/s fails every dp allreduce.
out=$(DLPAR_CHECK_BUSBW_FRACTION=1000 srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 --dl-check=only "$hello" 2>&1)
expect_rc "DLPAR_CHECK_BUSBW_FRACTION=1000" $? 1
expect_contains "DLPAR_CHECK_BUSBW_FRACTION=1000" "$out" ", 1250 dp (DLPAR_CHECK_BUSBW_FRACTION x the group's link"
[ "$(grep -Ec "^[0-3] .* [0-9.]+ (ok|FAIL) +[0-9.]+ FAIL " <<<"$out")" = 4 ] ||
  fail "DLPAR_CHECK_BUSBW_FRACTION=1000: not every rank's dp allreduce FAILs: $out"
out=$(env $CHECK_ANY_SPEED "$B/tools/dlpar-run" -n 4 --dl-parallel=1x4 --check -- "$hello" 2>&1)
expect_rc "dlpar-run --check" $? 0
expect_table "dlpar-run --check" "$out" 4 "$(hostname)" "$(hostname)" "$(hostname)" "$(hostname)"
expect_contains "dlpar-run --check" "$out" "; running the program"
expect_eq "dlpar-run --check: the program ran" "$(grep -c 'collectives ok' <<<"$out")" 4
expect_contains "dlpar-run --check: tp groups of one have no allreduce" "$out" "ok       -              "

# Rank 3 with its own NCCL_SOCKET_IFNAME (the others have the plugin's, the
# interface towards rank 0), rank 1 throttled: both named, nothing runs.
out=$(DLPAR_TEST_SLOW_RANK=3 DLPAR_TEST_RANK_ENV=NCCL_SOCKET_IFNAME=eth9 \
      srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 --dl-check "$slow" "$hello" 2>&1)
expect_rc "srun --dl-check, rank 3's NCCL setting" $? 1
expect_contains "srun --dl-check, rank 3's NCCL setting" "$out" \
  "dlpar-check: rank 3 on n2: NCCL settings differ from rank 0's (and the ranks like it): NCCL_SOCKET_IFNAME=eth9 here, NCCL_SOCKET_IFNAME=eth0 there"
expect_contains "srun --dl-check, rank 3's NCCL setting" "$out" "dlpar-check: FAILED in "
grep -Eq "^3 .* 12\.5 NIC default$" <<<"$out" ||
  fail "rank 3's NCCL_SOCKET_IFNAME=eth9 (no such interface): its dp link is not the NIC default: $out"
expect_eq "srun --dl-check, failed: the program did not run" "$(grep -c 'collectives ok' <<<"$out")" 0
out=$(DLPAR_TEST_SLOW_RANK=1 DLPAR_TEST_THROTTLE=0.2:0.02 \
      srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 --dl-check=only "$slow" "$hello" 2>&1)
expect_rc "srun --dl-check=only, rank 1 throttled" $? 1
expect_contains "srun --dl-check=only, rank 1 throttled" "$out" "dlpar-check: stragglers (GEMM under 0.5 x the median "
expect_contains "srun --dl-check=only, rank 1 throttled" "$out" "): rank 1 on n1 ("
expect_contains "srun --dl-check=only, rank 1 throttled" "$out" "; to leave their nodes out: --exclude=n1"
out=$(DLPAR_TEST_SLOW_RANK=2 DLPAR_TEST_RANK_ENV=UCX_TLS=tcp \
      "$B/tools/dlpar-run" -n 4 --dl-parallel=2x2 --check=only -- "$slow" "$hello" 2>&1)
expect_rc "dlpar-run --check=only, rank 2's UCX setting" $? 1
expect_contains "dlpar-run --check=only, rank 2's UCX setting" "$out" "dlpar-check: rank 2 on $(hostname): NCCL settings differ"
out=$(DLPAR_CHECK_MIN_BUSBW=1000 "$B/tools/dlpar-run" -n 2 --check=only -- "$hello" 2>&1)
expect_rc "an allreduce under 1000 GB/s" $? 1
expect_contains "an allreduce under 1000 GB/s" "$out" "expected >= 1000 tp, 1000 dp"
grep -Eq "^0 .* - +[0-9.]+ FAIL " <<<"$out" || fail "an allreduce under 1000 GB/s: no FAIL in dp busbw: $out"

# A value that is not one is refused before anything starts.
out=$(srun -N1 -n1 --dl-check=sometimes true 2>&1)
expect_rc "srun --dl-check=sometimes" $? 1
expect_contains "srun --dl-check=sometimes" "$out" \
  "--dl-check=sometimes: expected nothing (check, then run), 'only' (check and stop) or 'off'"
out=$("$B/tools/dlpar-run" -n 1 --check=sometimes -- true 2>&1)
expect_rc "dlpar-run --check=sometimes" $? 2
expect_contains "dlpar-run --check=sometimes" "$out" "'only' (check and stop) or 'off'"
out=$(DLPAR_CHECK_STRAGGLER=half "$B/tools/dlpar-run" -n 2 --check -- "$hello" 2>&1)
expect_rc "DLPAR_CHECK_STRAGGLER=half" $? 1
expect_contains "DLPAR_CHECK_STRAGGLER=half" "$out" "DLPAR_CHECK_STRAGGLER=half: not a ratio (use e.g. 0.5, or unset it)"
finish
