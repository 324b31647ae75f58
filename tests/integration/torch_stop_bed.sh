#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/torch_stop_bed.sh: contrib/pytorch/ddp_requeue.py (dlpar's
# stop agreement, gloo) under srun --dl-parallel=2x2 on the 2-node bed,
# stopped by Slurm's own signals (scancel --signal=USR1 to the job's tasks);
# the restarts set DLPAR_RESTART=1 and DLPAR_CHECKPOINT; losses to fp32
# tolerance (relative error 1e-5 at most):
#  - scancel --signal=USR1 JOBID (every task of the job's steps): every rank
#    logs the same stop step k, srun exits 85, the checkpoint says k+1; the
#    restart (DLPAR_RESTART=1, DLPAR_CHECKPOINT) resumes at k+1 with the
#    uninterrupted run's losses to fp32 tolerance;
#  - the time limit's warning, srun -t 2 --signal=USR1@110: every rank at
#    one step, exit 85, long before the limit (no SIGKILL). slurmctld
#    sends the warning at its periodic check, every 30 s or later under
#    load: a limit of 2 minutes leaves it three checks or more to come
#    within, where one of 1 minute (@50) saw none in a loaded CI run;
#  - a signal twice, the stop's checkpoint held by DLPAR_FAULT=checkpoint-slow
#    (rank 0 pauses 4 s halfway through the temporary file) and the second
#    scancel sent while rank 0 is paused in it: srun exits 138 (128 +
#    SIGUSR1) within seconds, rank 0 killed by SIGUSR1 (a rank that got the
#    first signal while waiting in a collective has not run Python's handler
#    yet, merges the two and is ended by Slurm with the step), the checkpoint
#    the last complete one byte for byte, and the restart from it resumes at
#    its step with the uninterrupted run's losses;
#  - a signal during start-up, as soon as the step's four tasks exist, with
#    SLURM_KILL_BAD_EXIT=1 (srun -K: without it, a task killed before it
#    joined PMIx leaves the others waiting for the rendezvous's timeout,
#    120 s): either every rank stops at the first agreement, step 1, exit
#    85, the checkpoint says 2, or a task that did not yet catch SIGUSR1
#    dies of it and -K ends the others (138, or 143 where srun reports
#    their SIGTERM; no checkpoint); the test says which, and that no
#    temporary file is left;
#  - a signal while a periodic checkpoint is written (--checkpoint-every=4,
#    DLPAR_FAULT=checkpoint-slow): once, the write completes and every rank
#    stops two steps later, at 5, exit 85, the checkpoint says 6; twice (the
#    second once rank 0 took the first): srun exits 138 within seconds, rank
#    0 killed in the middle of the write, the previous checkpoint stays byte
#    for byte, the half-written temporary file beside it is never read: the
#    restart resumes at 6 with the uninterrupted run's losses.
# tests/integration/torch_requeue.sh runs it in a batch job through
# dlpar-restart, requeued; tests/integration/torch_stop.sh has the same
# cases under dlpar-run, a signal to one rank.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
  skip "no PyTorch for /usr/bin/python3 (apt-get install python3-torch)"
use_bed
export PYTHONPATH=$DLPAR_SRCDIR/python DLPAR_LIBRARY=$B/libdlpar/.libs/libdlpar.so
example=$DLPAR_SRCDIR/contrib/pytorch/ddp_requeue.py
step=(-N2 --ntasks-per-node=2 --dl-parallel=2x2)
ckpt=$TEST_TMP/last.pt

wait_for() { # FILE TEXT: until FILE has TEXT (120 s at most)
  local i
  for i in $(seq 1200); do grep -q -- "$2" "$1" && return 0; sleep 0.1; done
  fail "no '$2' in $1 in 120 s: $(tail -5 "$1")"
}
stop_steps() { sed -n 's/^dlpar: rank \([0-9]\): stop agreed at step \([0-9]*\) .*/\1 \2/p' "$1" | sort; }
losses() { sed -n 's/^ddp_requeue: step \([0-9]*\) loss \(.*\)/\1 \2/p' "$1"; }
ckpt_step() { /usr/bin/python3 -c 'import sys, torch; print(torch.load(sys.argv[1])["step"])' "$1" 2>&1; }
first_step() { stop_steps "$1" | awk 'NR == 1 { print $2 }'; }
same_step() { # WHAT FILE K: every rank logged the stop step K
  expect_eq "$1: every rank logs the same stop step" "$(stop_steps "$2")" "$(printf '%s\n' "0 $3" "1 $3" "2 $3" "3 $3")"
}
# start NAME [VAR=VALUE...] -- [ARGS...]: the example under srun as job
# dlpar-torch-NAME-PID, in the background, its output in $TEST_TMP/NAME.out;
# run_pid is srun's
start() {
  local name=$1 vars=()
  shift
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  env "${vars[@]}" srun "${step[@]}" --job-name="dlpar-torch-$name-$$" /usr/bin/python3 "$example" "$@" \
    >"$TEST_TMP/$name.out" 2>&1 &
  run_pid=$!
}
signal() { scancel --signal=USR1 --name="dlpar-torch-$1-$$"; }
# ended NAME: srun's exit status in rc, within 120 s (then the job is cancelled: a hang)
ended() {
  local i
  for i in $(seq 1200); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$run_pid" 2>/dev/null && { fail "$1: srun still running after 120 s: a hang"; scancel --name="dlpar-torch-$1-$$"; }
  wait "$run_pid"
  rc=$?
}
# count NAME TEXT: the lines of NAME's output with TEXT
count() { grep -c -- "$2" "$TEST_TMP/$1.out"; }
# killed_ranks NAME: the ranks srun names as killed by SIGUSR1 ("tasks 0-1", "task 3"), as "0 1 2 3"
killed_ranks() {
  sed -n 's/.*: tasks\{0,1\} \([0-9,-]*\): User defined signal 1$/\1/p' "$TEST_TMP/$1.out" | tr ',' '\n' |
    awk -F- 'NF { for (r = $1; r <= (NF > 1 ? $2 : $1); r++) print r }' | sort -u | paste -sd ' '
}
# ended_after WHAT SINCE: the step ended within 10 s of SINCE (a date +%s), not by a timeout
ended_after() {
  TEST_CHECKS=$((TEST_CHECKS + 1))
  [ $(($(date +%s) - $2)) -le 10 ] && pass "$1: every rank ended at once after the second signal" ||
    fail "$1: the step ended $(($(date +%s) - $2)) s after the second signal"
}
temps() { ls -A "$TEST_TMP" | grep -c '\.tmp$'; }
within() { awk -v r="$1" 'BEGIN { print (r <= 1e-5) ? "within" : "beyond" }'; }

# scancel --signal=USR1: the job's tasks, all of them
name=dlpar-torch-stop-$$
srun "${step[@]}" --job-name=$name /usr/bin/python3 "$example" --steps=100000 --checkpoint="$ckpt" \
  >"$TEST_TMP/user.out" 2>&1 &
srun_pid=$!
wait_for "$TEST_TMP/user.out" "step 20 loss"
scancel --signal=USR1 --name=$name
wait $srun_pid
expect_rc "scancel --signal=USR1: srun's exit (stopped early, more to do)" $? 85
k=$(first_step "$TEST_TMP/user.out")
same_step "scancel --signal=USR1" "$TEST_TMP/user.out" "$k"
expect_eq "scancel --signal=USR1: the checkpoint's next step" "$(ckpt_step "$ckpt")" $((k + 1))
expect_eq "scancel --signal=USR1: each rank's line" "$(grep -c '^dlpar: rank [0-3]: SIGUSR1 received' "$TEST_TMP/user.out")" 4

out=$(srun "${step[@]}" /usr/bin/python3 "$example" --steps=$((k + 6)) --checkpoint="$TEST_TMP/whole.pt" 2>&1)
expect_rc "uninterrupted run" $? 0
echo "$out" >"$TEST_TMP/whole.out"
# A signal twice: resumed from that checkpoint, the stop's checkpoint held
# by DLPAR_FAULT=checkpoint-slow; the second scancel comes while rank 0 is
# paused in it. Rank 0 took the first (its handler gave SIGUSR1 back its
# default) and dies of the second; a rank that got the first while waiting
# in a collective has not run Python's handler yet and merges the two, and
# Slurm ends it with the step.
cp "$ckpt" "$TEST_TMP/complete.pt"
start twice DLPAR_RESTART=1 DLPAR_CHECKPOINT="$ckpt" DLPAR_FAULT=checkpoint-slow -- --steps=100000 --checkpoint="$ckpt"
wait_for "$TEST_TMP/twice.out" "step $((k + 3)) loss"
signal twice
wait_for "$TEST_TMP/twice.out" "DLPAR_FAULT=checkpoint-slow: pausing"
wait_for "$TEST_TMP/twice.out" "rank 0: SIGUSR1 received"
signal twice
second=$(date +%s)
ended twice
expect_rc "twice: killed by the second signal (128 + SIGUSR1)" $rc 138
ended_after "twice" "$second"
expect_eq "twice: srun names rank 0 killed by SIGUSR1" "$(killed_ranks twice | cut -d' ' -f1)" 0
echo "twice: ranks '$(killed_ranks twice)' killed by SIGUSR1, the others by the step's end"
TEST_CHECKS=$((TEST_CHECKS + 1))
if cmp -s "$ckpt" "$TEST_TMP/complete.pt"; then
  pass "twice: the checkpoint is the last complete one, byte for byte"
else
  fail "twice: the checkpoint changed (step $(ckpt_step "$ckpt")), though rank 0 was paused in the stop's write"
fi

out=$(DLPAR_RESTART=1 DLPAR_CHECKPOINT=$ckpt srun "${step[@]}" /usr/bin/python3 "$example" --steps=$((k + 6)) \
      --checkpoint="$ckpt" 2>&1)
expect_rc "restarted run (after the signal twice too)" $? 0
echo "$out" >"$TEST_TMP/resumed.out"
expect_eq "restarted run: every rank resumed at k+1" "$(grep -c "^ddp_requeue: rank [0-3]: resumed at step $((k + 1))\$" <<<"$out")" 4
read -r rel shared <<<"$(max_rel "$(losses "$TEST_TMP/resumed.out")" "$(losses "$TEST_TMP/whole.out")")"
expect_eq "restarted run: steps k+1..k+5, the uninterrupted run's losses (max rel $rel)" \
  "$shared $(within "$rel")" "5 within"
read -r rel shared <<<"$(max_rel "$(losses "$TEST_TMP/user.out")" "$(losses "$TEST_TMP/whole.out")")"
expect_eq "the stopped run's steps 0..k: the uninterrupted run's losses (max rel $rel)" \
  "$shared $(within "$rel")" "$((k + 1)) within"

# The time limit's warning: USR1 50 s before a 1-minute limit (Slurm sends it up to 60 s early,
# at its periodic check), then the run stops by itself: no SIGKILL at the limit
rm -f "$ckpt"
start=$(date +%s)
srun "${step[@]}" -t 2 --signal=USR1@110 /usr/bin/python3 "$example" --steps=100000000 --checkpoint="$ckpt" \
  >"$TEST_TMP/limit.out" 2>&1
expect_rc "srun -t 2 --signal=USR1@110: stopped early at the warning" $? 85
seconds=$(($(date +%s) - start))
same_step "--signal=USR1@110" "$TEST_TMP/limit.out" "$(first_step "$TEST_TMP/limit.out")"
TEST_CHECKS=$((TEST_CHECKS + 1))
[ "$seconds" -lt 120 ] && pass "--signal=USR1@110: ended after $seconds s, before the limit" ||
  fail "--signal=USR1@110: ended after $seconds s (the limit is 120 s)"
TEST_CHECKS=$((TEST_CHECKS + 1))
[ -s "$ckpt" ] && pass "--signal=USR1@110: the checkpoint written" || fail "--signal=USR1@110: no checkpoint"

# A signal during start-up, as soon as the step's four tasks exist: a task
# that already runs dlpar.stop.install (the example's first lines) takes it
# as a stop request, one that does not yet dies of it
rm -f "$ckpt"
start startup SLURM_KILL_BAD_EXIT=1 -- --steps=100000 --checkpoint="$ckpt"
for _ in $(seq 1000); do
  pids=$(pgrep -f "^/usr/bin/python3 $example --steps=100000 --checkpoint=$ckpt\$")
  [ "$(wc -w <<<"$pids")" = 4 ] && break
  sleep 0.01
done
caught=0
for pid in $pids; do
  (( 0x$(sed -n 's/^SigCgt:\t//p' "/proc/$pid/status" 2>/dev/null || echo 0) >> 9 & 1 )) && caught=$((caught + 1))
done
# whether a rank had logged a step when the signal was sent: read before
# scancel, as the output after the run holds step 0 in either outcome
before=$(count startup 'step 0 loss')
signal startup
ended startup
expect_eq "start-up: the signal sent before the first step's loss" "$before" 0
echo "start-up: $(wc -w <<<"$pids") tasks seen, $caught catching SIGUSR1 before the signal, exit $rc"
if [ "$rc" = 85 ]; then
  same_step "start-up: stopped at the first agreement" "$TEST_TMP/startup.out" 1
  expect_eq "start-up: the checkpoint's next step" "$(ckpt_step "$ckpt")" 2
else
  # srun's status is 138 or, where it counts the others ended by -K's SIGTERM last, 143
  expect_eq "start-up: ended by SIGUSR1's default action, srun -K ending the others (exit $rc)" \
    "$(case $rc in 138 | 143) echo ended ;; *) echo "exit $rc" ;; esac)" ended
  expect_eq "start-up: srun names the tasks killed by SIGUSR1 (without dlpar's handler yet)" \
    "$(killed_ranks startup | grep -c .)" 1
  expect_eq "start-up: no checkpoint" "$(ls "$ckpt" 2>/dev/null)" ""
fi
expect_eq "start-up: no temporary file" "$(temps)" 0

# A signal while a periodic checkpoint is written (DLPAR_FAULT=checkpoint-slow:
# rank 0 pauses 4 s halfway through the temporary file, after step 3)
slow=$TEST_TMP/slow.pt
start once DLPAR_FAULT=checkpoint-slow -- --steps=100000 --checkpoint="$slow" --checkpoint-every=4
wait_for "$TEST_TMP/once.out" "DLPAR_FAULT=checkpoint-slow: pausing"
signal once
ended once
expect_rc "once in a checkpoint: stopped early" $rc 85
same_step "once in a checkpoint: the write completed, then stopped (step 4 posts, step 5 agrees)" "$TEST_TMP/once.out" 5
expect_eq "once in a checkpoint: the checkpoint's next step" "$(ckpt_step "$slow")" 6
expect_eq "once in a checkpoint: no temporary file" "$(temps)" 0

# Twice while the checkpoint after step 7 is written: rank 0 takes the first
# in its pause (the other ranks wait in step 8's all-reduce), the second ends it
cp "$slow" "$TEST_TMP/slow-complete.pt"
start slow DLPAR_RESTART=1 DLPAR_CHECKPOINT="$slow" DLPAR_FAULT=checkpoint-slow -- --steps=100000 \
  --checkpoint="$slow" --checkpoint-every=4
wait_for "$TEST_TMP/slow.out" "DLPAR_FAULT=checkpoint-slow: pausing"
signal slow
wait_for "$TEST_TMP/slow.out" "rank 0: SIGUSR1 received"
signal slow
second=$(date +%s)
ended slow
expect_rc "twice in a checkpoint: killed by the second signal" $rc 138
ended_after "twice in a checkpoint" "$second"
expect_eq "twice in a checkpoint: srun names rank 0 killed by SIGUSR1" "$(killed_ranks slow | cut -d' ' -f1)" 0
expect_eq "twice in a checkpoint: resumed at step 6 first" "$(count slow 'resumed at step 6$')" 4
TEST_CHECKS=$((TEST_CHECKS + 1))
cmp -s "$slow" "$TEST_TMP/slow-complete.pt" && pass "twice in a checkpoint: the last complete checkpoint, byte for byte" ||
  fail "twice in a checkpoint: the checkpoint changed (step $(ckpt_step "$slow"))"
expect_eq "twice in a checkpoint: the half-written temporary file beside it" "$(temps)" 1
out=$(DLPAR_RESTART=1 DLPAR_CHECKPOINT=$slow srun "${step[@]}" /usr/bin/python3 "$example" --steps=9 --checkpoint="$slow" 2>&1)
expect_rc "twice in a checkpoint: the restart" $? 0
expect_eq "twice in a checkpoint: the restart resumed at step 6, not from the temporary file" \
  "$(grep -c '^ddp_requeue: rank [0-3]: resumed at step 6$' <<<"$out")" 4
read -r rel shared <<<"$(max_rel "$(losses <(echo "$out"))" "$(losses "$TEST_TMP/whole.out")")"
expect_eq "twice in a checkpoint: the restart's steps 6..8, the uninterrupted run's losses (max rel $rel)" \
  "$shared $(within "$rel")" "3 within"
finish
