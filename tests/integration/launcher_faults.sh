#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/launcher_faults.sh: libdlpar fails fast instead of
# hanging, under srun (2-node bed) and dlpar-run:
#  - a rank that sleeps past the rendezvous timeout, or exits before
#    dlpar_init: the lowest arrived rank of its node names it and its host,
#    in one line for the whole step, and the whole step ends;
#  - a rank that stalls (SIGSTOP) in a collective: the watchdog names the
#    group and where to look (the stopped rank on its own node, the group's
#    ranks on other hosts elsewhere), and ends the step; with the
#    default collective timeout, the rank's node names the stopped rank and
#    host after DLPAR_STOPPED_TIMEOUT;
#  - a rank killed mid-run: the step ends, no hang;
#  - a tensor-parallel group across two nodes (grid exported by hand):
#    refused by the library, naming both hosts;
#  - SIGTERM: every rank sees dlpar_stop_requested in the same iteration;
#  - two stop signals at one rank only (a launcher merged them into one
#    elsewhere): that rank ends the whole step at once, saying so
#    (train_stop_bed.sh has dlpar-train's case, where the others would
#    otherwise wait at the stop's agreement).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed
probe=$B/tests/integration/rank_probe
run=$B/tools/dlpar-run
here=$(hostname)

# run_ended WHAT CMD...: sets out, rc; checks that the step ended by itself.
# Every fault below leaves a rank that would never finish on its own (asleep
# for 600 s, stopped, killed mid-collective), so a step still running at
# HANG_SECONDS hangs; how long a step that ended took is only logged, as
# load decides it (the timeouts themselves are in the messages checked).
HANG_SECONDS=150
run_ended() {
  local what=$1 start
  shift
  start=$(date +%s.%N)
  out=$(timeout "$HANG_SECONDS" "$@" 2>&1)
  rc=$?
  TEST_CHECKS=$((TEST_CHECKS + 1))
  [ "$rc" != 124 ] || fail "$what: still running after $HANG_SECONDS s (a hang): $out"
  echo "$what: ended in $(elapsed_since "$start") s"
}

# Under Open MPI 5, MPI_Init comes before libdlpar's rendezvous (doc/admin.md,
# Versions): libdlpar bounds it by the rendezvous timeout and names the late
# rank as the rendezvous does.
absent="rendezvous timed out after 3 s: rank 3 ($here) did not arrive"

export DLPAR_RENDEZVOUS_TIMEOUT=3 DLPAR_COLLECTIVE_TIMEOUT=3
run_ended "srun: late rank" srun -N2 -n4 --ntasks-per-node=2 "$probe" --sleep-rank=3 --sleep=600
expect_rc "srun: late rank" $rc 1
expect_eq "srun: one line naming rank 3 on n2" "$(grep -c 'rendezvous timed out after 3 s: rank 3 (n2) did not arrive' <<<"$out")" 1

run_ended "dlpar-run: late rank" "$run" -n 4 -- "$probe" --sleep-rank=3 --sleep=600
expect_rc "dlpar-run: late rank" $rc 1
expect_eq "dlpar-run: one line naming rank 3" "$(grep -c "$absent" <<<"$out")" 1

# A rank that exits before dlpar_init never arrives: named with its host.
run_ended "srun: rank gone before init" srun -N2 -n4 --ntasks-per-node=2 "$probe" --exit-rank=3
expect_rc "srun: rank gone before init" $rc 1
expect_eq "srun: rank gone before init, one line" "$(grep -c 'rendezvous timed out after 3 s: rank 3 (n2) did not arrive' <<<"$out")" 1
run_ended "dlpar-run: rank gone before init" "$run" -n 4 -- "$probe" --exit-rank=3
expect_rc "dlpar-run: rank gone before init" $rc 1
expect_eq "dlpar-run: rank gone before init, one line" "$(grep -c "$absent" <<<"$out")" 1

run_ended "srun: stalled rank" srun -N2 -n4 --ntasks-per-node=2 "$probe" --stall-rank=2
expect_rc "srun: stalled rank" $rc 1
# Whichever rank times out first reports: on n1, the ranks elsewhere to look at; on n2, rank 2 stopped.
expect_contains "srun: stalled rank" "$out" "allreduce on the world group (ranks 0,1,2,3) has not completed after 3 s: "
TEST_CHECKS=$((TEST_CHECKS + 1))
grep -q -e "the group's ranks on this host are running; look at rank 2 (n2), rank 3 (n2) (see that rank's output" \
        -e "rank 2 (pid [0-9]*) on this host is stopped (see that rank's output" <<<"$out" ||
  fail "srun: stalled rank: neither n1's line (look at rank 2 (n2)) nor n2's (rank 2 is stopped): $out"

run_ended "dlpar-run: stalled rank" "$run" -n 4 -- "$probe" --stall-rank=2
expect_rc "dlpar-run: stalled rank" $rc 1
expect_contains "dlpar-run: stalled rank" "$out" "allreduce on the world group (ranks 0,1,2,3) has not completed after 3 s: rank 2 (pid"

# NCCL's async-error model: with a grace, the host takes what the watchdog
# found before libdlpar prints or ends anything, and ends the step itself
# (status 3, its own); untaken, the step ends when the grace has passed.
late_line="allreduce on the world group (ranks 0,1,2,3) has not completed after 3 s: rank 2 (pid"
run_ended "dlpar-run: the host takes the error first" "$run" -n 4 -- "$probe" --stall-rank=2 --take-fatal
expect_rc "dlpar-run: the host takes the error first: its exit status" $rc 3
expect_contains "dlpar-run: the host takes the error first" "$out" "took the error first (status -7): rank "
expect_contains "dlpar-run: the host takes the error first: the line" "$out" "$late_line"
expect_eq "dlpar-run: the host takes the error first: libdlpar printed nothing" \
  "$(grep -c "^dlpar: rank [0-9]* on $here: allreduce" <<<"$out")" 0
start=$(date +%s)
DLPAR_FATAL_GRACE=4 run_ended "dlpar-run: an error nobody takes" "$run" -n 4 -- "$probe" --stall-rank=2
expect_rc "dlpar-run: an error nobody takes" $rc 1
expect_contains "dlpar-run: an error nobody takes: printed by libdlpar" "$out" "dlpar: rank "
expect_contains "dlpar-run: an error nobody takes: the line" "$out" "$late_line"
TEST_CHECKS=$((TEST_CHECKS + 1))
[ $(($(date +%s) - start)) -ge 7 ] || fail "dlpar-run: an error nobody takes: ended before the 3 s timeout + the 4 s grace"

# SIGSTOP under the default collective timeout: the stopped rank's node
# names it within DLPAR_STOPPED_TIMEOUT, in one line
for launcher in srun dlpar-run; do
  if [ $launcher = srun ]; then
    cmd=(srun -N2 -n4 --ntasks-per-node=2 "$probe" --stall-rank=2) host=n2
  else
    cmd=("$run" -n 4 -- "$probe" --stall-rank=2) host=$here
  fi
  DLPAR_COLLECTIVE_TIMEOUT= DLPAR_STOPPED_TIMEOUT=2 run_ended "$launcher: SIGSTOPped rank" "${cmd[@]}"
  expect_rc "$launcher: SIGSTOPped rank" $rc 1
  expect_eq "$launcher: SIGSTOPped rank named once" "$(grep -c "dlpar: rank 2 (pid [0-9]*) on $host has been stopped for 2 s (SIGSTOP, SIGTSTP): ending the step" <<<"$out")" 1
done

run_ended "srun: killed rank" srun -N2 -n4 --ntasks-per-node=2 "$probe" --kill-rank=1
# srun's status for a step whose task was killed differs by version (137
# under 22.05, 14 under 24.11): only that it failed
expect_rc "srun: killed rank" $rc nonzero
run_ended "dlpar-run: killed rank" "$run" -n 4 -- "$probe" --kill-rank=1
expect_eq "dlpar-run: killed rank exit code" "$rc" 137
expect_contains "dlpar-run: killed rank" "$out" "dlpar-run: rank 1 killed by Killed: ending the others"

# A grid exported by hand whose tensor-parallel group spans both nodes.
out=$(srun -N2 -n4 --ntasks-per-node=2 bash -c 'DLPAR_VERSION=1 DLPAR_TP_SIZE=4 DLPAR_DP_SIZE=1 \
  DLPAR_RANK=$SLURM_PROCID DLPAR_LOCAL_RANK=$SLURM_LOCALID DLPAR_LOCAL_SIZE=2 DLPAR_DEVICE=-1 exec '"$B/tools/dlpar-hello" 2>&1)
expect_rc "tp group across nodes" $? 1
expect_contains "tp group across nodes" "$out" "dlpar-hello: --dl-parallel=4x1: tensor-parallel group 0 (ranks 0-3) spans n1 and n2"

# SIGTERM (scancel, time limit, or forwarded by dlpar-run)
"$run" -n 4 --dl-parallel=2x2 -- "$probe" --wait-stop >"$TEST_TMP/stop.out" 2>&1 &
pid=$!
for i in $(seq 300); do [ "$(grep -o waiting "$TEST_TMP/stop.out" | wc -l)" = 4 ] && break; sleep 0.1; done
kill -TERM $pid
wait $pid
expect_rc "dlpar-run: SIGTERM" $? 0
expect_eq "dlpar-run: ranks stopping" "$(grep -o 'stopping at iteration' "$TEST_TMP/stop.out" | wc -l)" 4 ||
  sed 's/^/  dlpar-run output: /' "$TEST_TMP/stop.out" >&2
expect_eq "dlpar-run: same iteration" "$(grep -o 'stopping at iteration [0-9]*' "$TEST_TMP/stop.out" | awk '{print $NF}' | sort -u | wc -l)" 1

srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 -J stoptest "$probe" --wait-stop >"$TEST_TMP/sstop.out" 2>&1 &
pid=$!
for i in $(seq 300); do [ "$(grep -o waiting "$TEST_TMP/sstop.out" | wc -l)" = 4 ] && break; sleep 0.1; done
scancel --signal=TERM --name=stoptest
wait $pid
expect_eq "srun: ranks stopping" "$(grep -o 'stopping at iteration' "$TEST_TMP/sstop.out" | wc -l)" 4 ||
  sed 's/^/  srun output: /' "$TEST_TMP/sstop.out" >&2
expect_eq "srun: same iteration" "$(grep -o 'stopping at iteration [0-9]*' "$TEST_TMP/sstop.out" | awk '{print $NF}' | sort -u | wc -l)" 1

# Two stop signals at rank 1 alone, SIGUSR1 and SIGTERM pending together
# (sent while it is stopped), under a collective timeout of 100 s: the
# step ends within 30 s, ended by rank 1's second signal (SIGTERM, 143:
# signalfd reads pending signals lowest first).
for launcher in dlpar-run srun; do
  case $launcher in
    dlpar-run) cmd=("$run" -n 4 --dl-parallel=2x2 --) ;;
    srun) cmd=(srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2) ;;
  esac
  start=$(date +%s)
  DLPAR_COLLECTIVE_TIMEOUT=100 timeout 150 "${cmd[@]}" "$probe" --wait-stop >"$TEST_TMP/twice.out" 2>&1 &
  pid=$!
  for i in $(seq 300); do [ "$(grep -c waiting "$TEST_TMP/twice.out")" = 4 ] && break; sleep 0.1; done
  rank1=$(sed -n 's/^rank_probe: rank 1 (pid \([0-9]*\)) waiting.*/\1/p' "$TEST_TMP/twice.out")
  merged_stop_signals "$rank1"
  wait $pid
  rc=$?
  took=$(($(date +%s) - start))
  TEST_CHECKS=$((TEST_CHECKS + 1))
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$took" -le 30 ]; then
    pass "$launcher: two signals at rank 1 alone: the step ended in $took s (exit $rc)"
  else
    fail "$launcher: two signals at rank 1 alone: exit $rc after $took s, expected a failure within 30 s: $(cat "$TEST_TMP/twice.out")"
  fi
  expect_contains "$launcher: two signals at rank 1 alone: its line" "$(cat "$TEST_TMP/twice.out")" \
    "dlpar: rank 1: second Terminated: ending the step now"
done
finish
