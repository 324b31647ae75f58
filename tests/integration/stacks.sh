#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/stacks.sh: the stacks of a hung step (libdlpar/ending/stacks.c).
# When the watchdog ends a step on a hang, every rank still alive writes its
# main thread's stack, one block headed by rank and host, and one summary
# line names the rank whose stack differs from the rest, or the ranks that
# wrote none:
#  - a rank stuck in its own code while the others wait in an allreduce,
#    under dlpar-run (its node-mates asked by pid) and under srun on the
#    2-node bed, the stuck rank on the other node than the first to time
#    out (asked through `scancel --signal=URG`): its block shows the
#    function it is stuck in, and the summary names it;
#  - a rank stopped (SIGSTOP) inside the collective: no stack from it, and
#    the summary says so;
#  - a Python rank (dlpar's module) asked by hand (SIGURG, as `scancel
#    --signal=URG JOB.STEP` sends it): the block's header, then its Python
#    stack (faulthandler) naming the function it waits in.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed
probe=$B/tests/integration/rank_probe
run=$B/tools/dlpar-run
here=$(hostname)
export DLPAR_RENDEZVOUS_TIMEOUT=20 DLPAR_COLLECTIVE_TIMEOUT=3

# blocks OUTPUT: "RANK HOST" of each block header, sorted, one a line
blocks() { sed -n 's/^\(.*: \)\{0,1\}dlpar: stack of rank \([0-9]*\) on \([^ ]*\) (pid [0-9]*), main thread:$/\2 \3/p' <<<"$1" | sort -u; }
# block_of OUTPUT RANK: that rank's first block (header to the next line that is no frame)
block_of() { awk -v r="$2" '$0 ~ "dlpar: stack of rank " r " on " { on = 1; next } on && !/\[0x[0-9a-f]*\]$/ { exit } on' <<<"$1"; }

out=$(timeout 120 "$run" -n 4 -- "$probe" --busy-rank=2 2>&1)
expect_rc "dlpar-run: a rank stuck in its own code: the step ends" $? 1
expect_eq "dlpar-run: a block from every rank, headed by rank and host" "$(blocks "$out")" \
  "$(printf '0 %s\n1 %s\n2 %s\n3 %s' "$here" "$here" "$here" "$here")"
expect_contains "dlpar-run: rank 2's block shows where it is stuck" "$(block_of "$out" 2)" "(stuck_in_user_code+"
expect_contains "dlpar-run: rank 0's block shows the allreduce it waits in" "$(block_of "$out" 0)" "PMPI_Allreduce"
expect_contains "dlpar-run: the summary names rank 2" "$out" "dlpar: stacks: rank 2 ($here) differs from the other 3 (not in a libdlpar collective | main stuck_in_user_code"
TEST_CHECKS=$((TEST_CHECKS + 1))
[ "$(grep -c "^dlpar: stacks: " <<<"$out")" -le 2 ] || fail "dlpar-run: more than two summaries: $out"

out=$(timeout 120 "$run" -n 4 -- "$probe" --stall-rank=2 2>&1)
expect_rc "dlpar-run: a stopped rank: the step ends" $? 1
expect_eq "dlpar-run: a stopped rank writes no block" "$(blocks "$out" | grep -c '^2 ')" 0
expect_contains "dlpar-run: the summary names the rank without a stack" "$out" \
  "stacks: 3 of 4 ranks wrote one, all alike; none from rank 2 ($here) (stopped, dead or not reached"

out=$(timeout 120 srun -N2 -n4 --ntasks-per-node=2 "$probe" --busy-rank=3 2>&1)
expect_rc "srun: a rank stuck in its own code: the step ends" $? 1
expect_eq "srun: a block from every rank of both nodes" "$(blocks "$out")" "$(printf '0 n1\n1 n1\n2 n2\n3 n2')"
expect_contains "srun: rank 3's block (n2) shows where it is stuck" "$(block_of "$out" 3)" "(stuck_in_user_code+"
expect_contains "srun: the summary names rank 3 on n2" "$out" "dlpar: stacks: rank 3 (n2) differs from the other 3"

# A Python rank: the module's faulthandler after libdlpar's header and C stack.
/usr/bin/python3 -c 'import faulthandler' 2>/dev/null || skip "no python3 for the Python rank's case"
PYTHONPATH=$DLPAR_SRCDIR/python DLPAR_LIBRARY=$B/libdlpar/.libs/libdlpar.so \
  timeout 60 "$run" -n 2 -- /usr/bin/python3 -c '
import os, sys, time, dlpar
ctx = dlpar.bootstrap()
def waiting_here_for_a_peer():
    time.sleep(30)
sys.stdout.write(f"ready {ctx.info.rank} {os.getpid()}\n"); sys.stdout.flush()
waiting_here_for_a_peer()' >"$TEST_TMP/py.out" 2>&1 &
runner=$!
for i in $(seq 200); do [ "$(grep -c '^ready' "$TEST_TMP/py.out")" = 2 ] && break; sleep 0.1; done
for pid in $(awk '/^ready/ { print $3 }' "$TEST_TMP/py.out"); do # one at a time: both write to one pipe here
  kill -URG "$pid"
  sleep 1
done
kill -TERM $runner 2>/dev/null
wait $runner
py=$(cat "$TEST_TMP/py.out")
expect_eq "python: a block from each rank" "$(blocks "$py")" "$(printf '0 %s\n1 %s' "$here" "$here")"
expect_contains "python: the Python stack names the function it waits in" "$py" "in waiting_here_for_a_peer"
finish
