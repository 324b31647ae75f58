#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/launcher_startup.sh: start-up telemetry. Every run's rank
# 0 prints one line with the time from process start to PMIx ready, ids
# exchanged, each communicator ready and the first step, each with its
# slowest rank and host. A rank made to start late (tests/lib/slow_rank:
# it sleeps before the program starts) must be named for PMIx ready, under
# srun on the 2-node bed and under dlpar-run.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed
hello=$B/tools/dlpar-hello
slow=$DLPAR_SRCDIR/tests/lib/slow_rank
delay=3

# startup_phase OUTPUT PHASE: "SECONDS RANK HOST" of that phase on the start-up line
startup_phase() {
  sed -n "s/.*dlpar: start-up of .*[:,] $2 \([0-9.]*\) (rank \([0-9]*\) on \([^)]*\)).*/\1 \2 \3/p" <<<"$1"
}

# expect_startup WHAT OUTPUT RANKS SLOW_RANK SLOW_HOST
expect_startup() {
  local what=$1 out=$2 ranks=$3 rank=$4 host=$5 seconds phase
  expect_eq "$what: start-up lines" "$(grep -c '^dlpar: start-up of ' <<<"$out")" 1
  expect_contains "$what" "$out" "dlpar: start-up of $ranks ranks (s since process start, slowest rank): PMIx ready"
  for phase in "ids exchanged" "world ready" "tp ready" "dp ready" "first step"; do
    [ -n "$(startup_phase "$out" "$phase")" ] || fail "$what: no '$phase' on the start-up line: $out"
  done
  read -r seconds got_rank got_host <<<"$(startup_phase "$out" "PMIx ready")"
  expect_eq "$what: slowest rank to PMIx" "$got_rank on $got_host" "$rank on $host"
  awk -v s="$seconds" -v d="$delay" 'BEGIN { exit !(s >= d) }' ||
    fail "$what: PMIx ready at $seconds s, before the ${delay} s the slow rank slept"
}

out=$(DLPAR_TEST_SLOW_RANK=3 DLPAR_TEST_SLOW_START=$delay \
      srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "$slow" "$hello" 2>&1)
expect_rc "srun 2x2, rank 3 slow" $? 0
expect_startup "srun 2x2, rank 3 slow" "$out" 4 3 n2

out=$(DLPAR_TEST_SLOW_RANK=1 DLPAR_TEST_SLOW_START=$delay \
      "$B/tools/dlpar-run" -n 4 --dl-parallel=2x2 -- "$slow" "$hello" 2>&1)
expect_rc "dlpar-run 2x2, rank 1 slow" $? 0
expect_startup "dlpar-run 2x2, rank 1 slow" "$out" 4 1 "$(hostname)"
finish
