#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/torch_stop.sh: stopping a PyTorch program early with
# dlpar's module (python/dlpar/stop.py, dlpar.torch.Stop), through
# contrib/pytorch/ddp_requeue.py (DDP, gloo) under dlpar-run -n 4 on a 2x2
# grid, Debian's torch for /usr/bin/python3:
#  - SIGTERM to one rank (2): every rank logs the same stop step k, rank 0's
#    checkpoint says k+1 and no temporary file is left, exit 85 (stopped
#    early, more to do); the steps up to k have the uninterrupted run's
#    losses;
#  - SIGTERM while that checkpoint is rewritten (DLPAR_FAULT=checkpoint-write:
#    SIGKILL halfway through the write): exit 137, the checkpoint is the
#    last complete one byte for byte; the restart from it (DLPAR_RESTART=1,
#    DLPAR_CHECKPOINT) resumes at k+1 with the uninterrupted run's losses to
#    fp32 tolerance, and ends 0;
#  - a second signal (SIGUSR1 after SIGTERM, to one rank): that rank ends at
#    once, killed by it (exit 128 + 10 = 138), the checkpoint untouched;
#  - SIGUSR1 during start-up (after the module's handlers are in, before
#    torch is loaded and the first step): every rank stops at the first
#    agreed step, 1 (the agreement is read one step after it is posted),
#    exit 85, the checkpoint says 2;
#  - DLPAR_SIGNALS=keep: SIGTERM keeps its default (killed, 143).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
  skip "no PyTorch for /usr/bin/python3 (apt-get install python3-torch)"
export PYTHONPATH=$DLPAR_SRCDIR/python DLPAR_LIBRARY=$B/libdlpar/.libs/libdlpar.so
example=$DLPAR_SRCDIR/contrib/pytorch/ddp_requeue.py
ckpt=$TEST_TMP/last.pt

# start_run NAME [VAR=VALUE...] -- [ARGS...]: the example under dlpar-run in
# the background, its output in $TEST_TMP/NAME.out; run_pid is dlpar-run's
start_run() {
  local name=$1 vars=()
  shift
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  env "${vars[@]}" "$B/tools/dlpar-run" -n 4 --dl-parallel=2x2 -- /usr/bin/python3 "$example" "$@" \
    >"$TEST_TMP/$name.out" 2>&1 &
  run_pid=$!
}
# rank_pid R: the pid of rank R of the run started last (dlpar-run's child)
rank_pid() {
  local child
  for child in $(pgrep -P "$run_pid"); do
    tr '\0' '\n' <"/proc/$child/environ" 2>/dev/null | grep -qx "DLPAR_RANK=$1" && { echo "$child"; return; }
  done
}
# wait_for NAME TEXT: until the run's output has TEXT (120 s at most)
wait_for() {
  local i
  for i in $(seq 1200); do grep -q -- "$2" "$TEST_TMP/$1.out" && return 0; sleep 0.1; done
  fail "$1: no '$2' in 120 s: $(tail -5 "$TEST_TMP/$1.out")"
}
# finish_run NAME: waits for the run; rc is dlpar-run's exit status
finish_run() { wait "$run_pid"; rc=$?; }
# stop_steps NAME: the stop step each rank logged, "rank step" sorted
stop_steps() { sed -n 's/^dlpar: rank \([0-9]\): stop agreed at step \([0-9]*\) .*/\1 \2/p' "$TEST_TMP/$1.out" | sort; }
# losses NAME: "step loss" per line of rank 0
losses() { sed -n 's/^ddp_requeue: step \([0-9]*\) loss \(.*\)/\1 \2/p' "$TEST_TMP/$1.out"; }
ckpt_step() { /usr/bin/python3 -c 'import sys, torch; print(torch.load(sys.argv[1])["step"])' "$1" 2>&1; }

# SIGTERM to rank 2 once the run is past step 20
start_run stopped -- --steps=100000 --checkpoint="$ckpt"
wait_for stopped "step 20 loss"
kill -TERM "$(rank_pid 2)"
finish_run stopped
expect_rc "SIGTERM to rank 2: stopped early, more to do" $rc 85
k=$(stop_steps stopped | awk 'NR == 1 { print $2 }')
expect_eq "SIGTERM to rank 2: every rank logs the same stop step" "$(stop_steps stopped)" \
  "$(printf '%s\n' "0 $k" "1 $k" "2 $k" "3 $k")"
expect_contains "SIGTERM to rank 2: its line" "$(cat "$TEST_TMP/stopped.out")" \
  "dlpar: rank 2: SIGTERM received: stopping at the next agreed step"
expect_eq "SIGTERM to rank 2: the checkpoint's next step" "$(ckpt_step "$ckpt")" $((k + 1))
expect_eq "SIGTERM to rank 2: no temporary file left" "$(ls -A "$TEST_TMP" | grep -c '\.tmp$')" 0
expect_eq "SIGTERM to rank 2: the last step run is k" "$(losses stopped | tail -n 1 | cut -d' ' -f1)" "$k"
cp "$ckpt" "$TEST_TMP/complete.pt"

# The uninterrupted run, to k + 6
start_run whole -- --steps=$((k + 6)) --checkpoint="$TEST_TMP/whole.pt"
finish_run whole
expect_rc "uninterrupted run" $rc 0
read -r rel shared <<<"$(max_rel "$(losses stopped)" "$(losses whole)")"
expect_eq "the stopped run's steps 0..k: the uninterrupted run's losses (max rel $rel)" \
  "$shared $(awk -v r="$rel" 'BEGIN { print (r <= 1e-6) ? "within" : "beyond" }')" "$((k + 1)) within"

# Resumed from that checkpoint, stopped again, killed halfway through the
# new checkpoint's write: the complete one stays
start_run killed DLPAR_RESTART=1 DLPAR_CHECKPOINT="$ckpt" DLPAR_FAULT=checkpoint-write -- \
  --steps=100000 --checkpoint="$ckpt"
wait_for killed "step $((k + 3)) loss"
kill -TERM "$(rank_pid 1)"
finish_run killed
expect_rc "killed while writing the checkpoint: rank 0's SIGKILL" $rc 137
expect_contains "killed while writing the checkpoint: the hook ran" "$(cat "$TEST_TMP/killed.out")" \
  "dlpar: DLPAR_FAULT=checkpoint-write: killing myself in the middle of a checkpoint"
TEST_CHECKS=$((TEST_CHECKS + 1))
cmp -s "$ckpt" "$TEST_TMP/complete.pt" && pass "killed while writing: the last complete checkpoint, byte for byte" ||
  fail "killed while writing: $ckpt changed"
TEST_CHECKS=$((TEST_CHECKS + 1))
[ -s "$TEST_TMP/.last.pt.tmp" ] && pass "killed while writing: the half-written temporary file is beside it" ||
  fail "killed while writing: no half-written $TEST_TMP/.last.pt.tmp (was the write interrupted?)"

# The restart from the last complete checkpoint: at k+1, the uninterrupted losses
start_run resumed DLPAR_RESTART=1 DLPAR_CHECKPOINT="$ckpt" -- --steps=$((k + 6)) --checkpoint="$ckpt"
finish_run resumed
expect_rc "restarted run" $rc 0
expect_eq "restarted run: every rank resumed at k+1" \
  "$(grep -c "^ddp_requeue: rank [0-3]: resumed at step $((k + 1))\$" "$TEST_TMP/resumed.out")" 4
expect_eq "restarted run: its first step is k+1" "$(losses resumed | head -n 1 | cut -d' ' -f1)" $((k + 1))
read -r rel shared <<<"$(max_rel "$(losses resumed)" "$(losses whole)")"
expect_eq "restarted run: steps k+1..k+5, the uninterrupted run's losses (max rel $rel)" \
  "$shared $(awk -v r="$rel" 'BEGIN { print (r <= 1e-6) ? "within" : "beyond" }')" "5 within"
expect_contains "restarted run: done" "$(cat "$TEST_TMP/resumed.out")" "ddp_requeue: done on 4 ranks"

# A signal twice to rank 1: the second ends it at once
cp "$TEST_TMP/complete.pt" "$ckpt"
start_run twice -- --steps=100000 --checkpoint="$ckpt"
wait_for twice "step 5 loss"
pid=$(rank_pid 1)
kill -TERM "$pid"
wait_for twice "dlpar: rank 1: SIGTERM received"
kill -USR1 "$pid"
finish_run twice
expect_rc "a signal twice: rank 1 killed by the second (128 + SIGUSR1)" $rc 138
expect_contains "a signal twice: dlpar-run names it" "$(cat "$TEST_TMP/twice.out")" \
  "dlpar-run: rank 1 killed by User defined signal 1"
TEST_CHECKS=$((TEST_CHECKS + 1))
# The other ranks may have stopped at the agreed step, and rank 0 written
# its checkpoint, before the second signal came: the checkpoint is then
# the whole newer one. What may never be there is a half-written one.
if cmp -s "$ckpt" "$TEST_TMP/complete.pt"; then
  pass "a signal twice: the checkpoint untouched"
elif /usr/bin/python3 -c 'import sys, torch; torch.load(sys.argv[1])' "$ckpt" 2>/dev/null; then
  pass "a signal twice: the checkpoint a whole newer one (rank 0 wrote it before the second signal)"
else
  fail "a signal twice: $ckpt neither the last complete checkpoint nor a whole newer one"
fi

# SIGUSR1 during start-up: once rank 3 catches it (dlpar.stop.install, the
# example's first lines), before any step
rm -f "$ckpt"
start_run startup -- --steps=100000 --checkpoint="$ckpt"
for i in $(seq 600); do
  pid=$(rank_pid 3)
  [ -n "$pid" ] && (( 0x$(sed -n 's/^SigCgt:\t//p' "/proc/$pid/status" 2>/dev/null || echo 0) >> 9 & 1 )) && break
  sleep 0.05
done
kill -USR1 "$pid"
TEST_CHECKS=$((TEST_CHECKS + 1))
grep -q "step 0 loss" "$TEST_TMP/startup.out" && fail "start-up: the signal came after step 0 (the machine too slow?)" ||
  pass "start-up: the signal came before the first step"
finish_run startup
expect_rc "SIGUSR1 during start-up: stopped early" $rc 85
expect_eq "SIGUSR1 during start-up: every rank stops at step 1" "$(stop_steps startup)" \
  "$(printf '%s\n' "0 1" "1 1" "2 1" "3 1")"
expect_eq "SIGUSR1 during start-up: the checkpoint's next step" "$(ckpt_step "$ckpt")" 2

# DLPAR_SIGNALS=keep: the module leaves SIGTERM alone
start_run keep DLPAR_SIGNALS=keep -- --steps=100000 --checkpoint="$TEST_TMP/keep.pt"
wait_for keep "step 5 loss"
kill -TERM "$(rank_pid 0)"
finish_run keep
expect_rc "DLPAR_SIGNALS=keep: killed by SIGTERM" $rc 143
expect_eq "DLPAR_SIGNALS=keep: no stop" "$(grep -c 'stop agreed' "$TEST_TMP/keep.out")" 0
finish
