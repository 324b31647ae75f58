#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/dlpar_run_cli.sh: dlpar-run's command line and its job
# control: bad input gets one line and exit 2 (the grid messages are the
# plugin's); the first failing rank's exit code is returned, and 85 where
# the ranks stopped early at an agreed step and none failed; output lines
# can be tagged with the rank; each rank gets the same DLPAR_* contract as
# under srun; the program's missing binary is named; two runs at once keep
# Open MPI 4's session directories apart, each in its own run directory; a
# rank that never arrives ends the run with exit 1, 30 times over, and no
# run directory is left behind.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
run=$B/tools/dlpar-run

while IFS='|' read -r args message; do
  [ -n "$args" ] || continue
  eval "set -- $args"
  out=$("$run" "$@" 2>&1)
  expect_rc "dlpar-run $args" $? 2
  expect_eq "dlpar-run $args" "$out" "dlpar-run: $message"
done <<EOF2
-- true|how many ranks? give -n N (e.g. -n 4), or --dl-parallel=MxD
-n 0 -- true|-n 0: expected a number of tasks >= 1 (e.g. -n 4)
-n four -- true|-n four: expected a number of tasks >= 1 (e.g. -n 4)
-n 4|no program to run (usage: dlpar-run -n N [--dl-parallel=MxD] -- PROGRAM [ARGS])
-n 8 --dl-parallel=4x3 -- true|--dl-parallel=4x3 needs 12 tasks but the step has 8 (use -n 12 or --dl-parallel=4x2)
-n 4 --dl-parallel=2y2 -- true|--dl-parallel=2y2: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)
-n 4 --dl-profile=perf -- true|--dl-profile=perf: unknown profiler (use nsys, nvtx or off)
-n 4 --dl-profile=nvtx --dl-profile-ranks=9 -- true|--dl-profile-ranks: rank 9 does not exist in a step of 4 tasks (use ranks 0-3)
-n 4 --frobnicate -- true|unknown option '--frobnicate' (see dlpar-run --help)
EOF2

out=$("$run" --dl-parallel=2x2 -- true 2>&1)
expect_rc "-n from the grid" $? 0

out=$("$run" -n 3 -- bash -c 'exit $(( PMIX_RANK == 1 ? 7 : 0 ))' 2>&1)
expect_rc "first failure's exit code" $? 7
expect_contains "first failure named" "$out" "dlpar-run: rank 1 exited with code 7: ending the others"

# Ranks that stop early at an agreed step exit 85 (DLPAR_EXIT_STOPPED):
# "more to do", passed on, with no rank ended for it (rank 1 stops a
# second later and says whether a SIGTERM reached it first).
stopping='trap "echo rank \$PMIX_RANK: ended by dlpar-run" TERM; [ "$PMIX_RANK" = 0 ] || { sleep 1 & wait; }; exit 85'
out=$("$run" -n 2 -- bash -c "$stopping" 2>&1)
expect_rc "every rank stopped early: passed on" $? 85
expect_eq "every rank stopped early: one line, no rank ended" "$out" \
  "dlpar-run: 2 of 2 ranks stopped early at an agreed step (exit 85: run the same command again to resume from its checkpoint, with --resume for dlpar-train)"
out=$("$run" -n 3 -- bash -c 'exit $(( PMIX_RANK == 2 ? 3 : 85 ))' 2>&1)
expect_rc "a rank stopped early, another failed: the failure" $? 3
expect_contains "a rank stopped early, another failed: the failure named" "$out" "dlpar-run: rank 2 exited with code 3"

out=$("$run" -n 2 -- /nonexistent/program 2>&1)
expect_rc "missing program" $? 127
expect_contains "missing program" "$out" "dlpar-run: cannot run /nonexistent/program: No such file or directory"

out=$("$run" -n 2 --tag-output -- bash -c 'echo "hello from $PMIX_RANK"' 2>&1)
expect_contains "--tag-output rank 0" "$out" "[0] hello from 0"
expect_contains "--tag-output rank 1" "$out" "[1] hello from 1"

out=$("$run" -n 4 --dl-parallel=2x2 -- bash -c 'echo "$PMIX_RANK|$DLPAR_VERSION|$DLPAR_TP_SIZE|$DLPAR_DP_SIZE|$DLPAR_TP_RANK|$DLPAR_DP_RANK|$DLPAR_RANK|$DLPAR_LOCAL_RANK|$DLPAR_LOCAL_SIZE|$RANK|$LOCAL_RANK|$WORLD_SIZE|$LOCAL_WORLD_SIZE|$DLPAR_PROFILE"' 2>&1)
for r in 0 1 2 3; do
  expect_eq "contract rank $r" "$(grep "^$r|" <<<"$out")" "$r|1|2|2|$(( r % 2 ))|$(( r / 2 ))|$r|$r|4|$r|$r|4|4|off"
done

session='test -d "$OMPI_MCA_orte_tmpdir_base" && echo "$OMPI_MCA_orte_tmpdir_base"; sleep 1'
"$run" -n 2 -- bash -c "$session" >"$TEST_TMP/run1.out" 2>&1 &
"$run" -n 2 -- bash -c "$session" >"$TEST_TMP/run2.out" 2>&1
wait $!
dirs=$(cat "$TEST_TMP/run1.out" "$TEST_TMP/run2.out" | sort -u)
expect_eq "two runs at once: a session directory each, shared by its ranks" "$(grep -c '/dlpar-run\.' <<<"$dirs")" 2
expect_eq "their ranks' lines" "$(cat "$TEST_TMP/run1.out" "$TEST_TMP/run2.out" | grep -c '/dlpar-run\.')" 4
for dir in $dirs; do
  [ ! -e "$dir" ] || fail "$dir: left behind after its run"
  TEST_CHECKS=$((TEST_CHECKS + 1))
done

# A rank that never arrives, 30 times (5 runs at a time): the others time
# out and abort, dlpar-run ends the job with their status 1 (not 139: its
# PMIx server's teardown crashed in about 5 of 30 such runs) and leaves no
# run directory behind (TMPDIR: a directory of this test's own).
mkdir -p "$TEST_TMP/runs"
# Each run is waited for by its pid: bash's `wait -n` answered 127 (no
# job) once when two runs ended together, and that run's status was lost.
for batch in 1 2 3 4 5 6; do
  pids=()
  for i in 1 2 3 4 5; do
    TMPDIR=$TEST_TMP/runs DLPAR_RENDEZVOUS_TIMEOUT=1 "$run" -n 4 -- "$B/tests/integration/rank_probe" \
      --sleep-rank=3 --sleep=30 >"$TEST_TMP/timeout.$batch.$i" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid"
    echo "exit $?" >>"$TEST_TMP/timeout.codes"
  done
done
expect_eq "a rank timed out, 30 runs: each exit 1" "$(sort "$TEST_TMP/timeout.codes" | uniq -c | sed 's/^ *//')" "30 exit 1"
expect_eq "a rank timed out, 30 runs: each named it" \
  "$(cat "$TEST_TMP"/timeout.* | grep -c 'rendezvous timed out after 1 s: rank 3 (.*) did not arrive')" 30
# (Open MPI 5 and later keep their own per-user session directory,
# ompi.HOST.UID, in TMPDIR: Open MPI's, shared by runs, not dlpar-run's.)
expect_eq "a rank timed out, 30 runs: no run directory left" "$(ls "$TEST_TMP/runs" | grep -v '^ompi\.')" ""
finish
