#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_stop_bed.sh: dlpar-train (CPU) under srun
# --dl-parallel=2x2 on the shared 2-node bed, stopped by Slurm's own
# signals (scancel --signal=USR1 to the job's tasks) in the three cases
# that train_resume.sh and timelimit.sh leave out:
#  - two signals at n2's ranks alone (as if merged into one at n1's): they
#    end the whole step at once, where n1's would wait at the agreement;
#  - a signal twice: two scancels, the second once every rank said it got
#    the first (two at once can merge into one at a task, as standard
#    signals do, and then that node's ranks waited for the others at the
#    agreement), the stop's checkpoint held by DLPAR_FAULT=checkpoint-slow
#    so that the second surely comes before the run ends: the run ends at
#    once by it (srun's 138 on Slurm 22.05, 14 on 24.11; there one node's
#    ranks once ended with the step instead), the checkpoint is the last
#    complete one, byte for byte, and the run resumed from it (--resume)
#    starts at its step + 1 with the uninterrupted run's losses bit for bit;
#  - a signal during start-up, as soon as the step's four tasks exist:
#    libdlpar takes the signals early in dlpar_init, so a task that
#    already catches SIGUSR1 stops at the first agreement, step 2 (posted
#    after step 1, read after step 2): exit 85, the checkpoint of step 2, no
#    temporary file; a task that did not yet catch it dies of it (138), with
#    no checkpoint and no temporary file. The test says which it saw; the
#    rerun starts cleanly from what is there, the losses bit for bit;
#    and that default made certain, rank 3 keeping its signals
#    (DLPAR_SIGNALS=keep) as a task still being loaded would: it dies of
#    the signal (other tasks may too) and the step ends, nothing written.
#    Both start-up runs use srun -K (SLURM_KILL_BAD_EXIT=1), as a training
#    step should: Slurm then ends the step once a task is killed (138 or
#    143; 1 from Slurm 24.11's srun where several tasks died). Without it,
#    Slurm 24.11 left the ranks that took the signal as a stop request
#    waiting for the dead one past 120 s, and Slurm 22.05 once did too;
#    the rendezvous timeout (30 s here) ends ranks that never met it;
#  - a signal while a checkpoint is written (DLPAR_FAULT=checkpoint-slow:
#    rank 0 pauses 4 s halfway through the temporary file): once, the
#    write completes, the stop is agreed two steps later, exit 85, the
#    resumed run bit for bit; twice, every rank exits 138 at once, rank 0
#    in the middle of the write: the previous checkpoint stays byte for
#    byte, the half-written checkpoint.h5.tmp.PID stays beside it, never
#    read: the resumed run starts from the complete one and its next
#    checkpoint removes the temporary file.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed
make_data
export OMP_NUM_THREADS=1 DLPAR_RENDEZVOUS_TIMEOUT=30
run_dir=$TEST_TMP/runs/test/2x2

# train NAME [ARGS...]: dlpar-train (or $program) on the bed, run NAME, the
# whole output in TEST_TMP/NAME.out (appended to), in the background:
# train_pid is srun's
train() {
  local name=$1
  shift
  srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 --job-name="stop-$name-$$" "${program:-$B/trainer/dlpar-train}" \
    --config=test "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) --num_iters=100000 --run="$name" "$@" \
    >>"$TEST_TMP/$name.out" 2>&1 &
  train_pid=$!
}
# ended: srun's exit status, in rc, within 120 s (then the step is cancelled)
ended() {
  local i
  for i in $(seq 1200); do kill -0 "$train_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$train_pid" 2>/dev/null && { fail "srun still running after 120 s: a hang"; scancel --name="stop-$1-$$"; }
  wait "$train_pid"
  rc=$?
}
signal() { scancel --signal=USR1 --name="stop-$1-$$"; }
# tasks NAME: the pids of run NAME's four dlpar-train processes, once all exist (10 s at most)
tasks() {
  local pids
  for _ in $(seq 1000); do
    pids=$(pgrep -f "^[^ ]*/dlpar-train .*--run=$1( |\$)")
    [ "$(wc -w <<<"$pids")" = 4 ] && break
    sleep 0.01
  done
  echo $pids
}
# wait_text NAME TEXT [COUNT]: until NAME's output has TEXT on COUNT lines (60 s at most)
wait_text() {
  local i
  for i in $(seq 600); do [ "$(grep -c -- "$2" "$TEST_TMP/$1.out" 2>/dev/null)" -ge "${3:-1}" ] 2>/dev/null && return 0; sleep 0.1; done
  fail "$1: no '$2' in its output in 60 s: $(tail -n 3 "$TEST_TMP/$1.out")"
}
# losses NAME [LINES]: "step loss" of the run's metrics.jsonl, after its first LINES lines
losses() { step_losses <(tail -n +$((${2:-0} + 1)) "$run_dir/$1/metrics.jsonl") | sort -n | uniq; }
ckpt_step() { h5dump -a step "$run_dir/$1/checkpoint.h5" 2>/dev/null | sed -n 's/^ *(0): \([0-9]*\)/\1/p'; }
temps() { ls -A "$run_dir/$1" 2>/dev/null | grep -c '\.tmp\.'; }
# resumed NAME FROM STEPS: the run resumed at FROM, its steps FROM+1.. FROM+STEPS the uninterrupted run's
resumed() {
  local name=$1 from=$2 steps=$3 before
  before=$(wc -l <"$run_dir/$name/metrics.jsonl")
  : >"$TEST_TMP/$name.out"
  train "$name" --resume --stop_after_iters="$steps"
  ended "$name"
  expect_rc "$name: resumed" $rc 0
  expect_contains "$name: resumed from step $from" "$(cat "$TEST_TMP/$name.out")" \
    "dlpar-train: resumed from $run_dir/$name/checkpoint.h5 at step $from "
  expect_eq "$name: steps $((from + 1)) to $((from + steps)), the uninterrupted run's losses bit for bit" \
    "$(losses "$name" "$before")" "$(losses whole | awk -v k="$from" -v n="$steps" '$1 > k && $1 <= k + n')"
  expect_eq "$name: no temporary file left after the resumed run's checkpoint" "$(temps "$name")" 0
}
# ended_by_second NAME WHAT: run NAME ended by the second signal, within
# ended's 120 s: not stopped early (85) nor finished (0), and the ranks that
# got both signals said so as they exited. On Slurm 22.05 every rank and
# srun exit 138. Slurm 24.11's srun exited 14 where every rank exited 138,
# and in one run only one node's ranks said the second signal ended them
# (the others ended with the step), so the test asks for one rank's line,
# not all four.
ended_by_second() {
  TEST_CHECKS=$((TEST_CHECKS + 1))
  local ranks
  ranks=$(every_rank "$1" "second User defined signal 1: ending the step now")
  if [ "$rc" != 0 ] && [ "$rc" != 85 ] && [ -n "$ranks" ]; then
    pass "$2: ended by the second signal (exit $rc; ranks $ranks said it ended them)"
  else
    fail "$2: exit $rc, ranks '$ranks' said the second signal ended them: expected an end by it"
  fi
}
# every_rank NAME TEXT: the ranks that logged "dlpar: rank R: TEXT", as "0 1 2 3"
every_rank() { sed -n "s/^dlpar: rank \([0-3]\): $2.*/\1/p" "$TEST_TMP/$1.out" | sort -u | paste -sd ' '; }

# The uninterrupted run, the losses of steps 1 to 14
train whole --stop_after_iters=14
ended whole
expect_rc "the uninterrupted run" $rc 0

# (1a) Two signals at n2's ranks alone, as a launcher that merged two into
# one at n1 leaves it: USR1 and TERM pending together at each of n2's
# tasks (sent while they are stopped), none at n1's. n2's ranks end the
# whole step, where n1's would wait for them at the stop's agreement until
# the collective timeout (300 s): ended within ended's 120 s, by SIGTERM
# (signalfd reads the pending signals lowest first, USR1 then TERM).
train alone
for _ in $(seq 600); do grep -q '"step": 3,' "$run_dir/alone/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
on_n2=$(for pid in $(tasks alone); do tr '\0' '\n' <"/proc/$pid/environ" | grep -qx SLURM_NODEID=1 && echo "$pid"; done)
expect_eq "alone: n2's two tasks found" "$(wc -w <<<"$on_n2")" 2
merged_stop_signals $on_n2
ended alone
TEST_CHECKS=$((TEST_CHECKS + 1))
[ "$rc" != 0 ] && [ "$rc" != 85 ] && pass "alone: the step ended (exit $rc)" || fail "alone: exit $rc, expected a failure"
expect_contains "alone: a rank of n2 said the second signal ended the step" "$(cat "$TEST_TMP/alone.out")" \
  ": second Terminated: ending the step now"

# (1) A signal twice: the checkpoint of step 3, then a run resumed from it
# gets two scancels at step 5 or later, the second once every rank got the first
train twice --stop_after_iters=3
ended twice
expect_rc "twice: the first 3 steps" $rc 0
cp "$run_dir/twice/checkpoint.h5" "$TEST_TMP/twice.h5"
DLPAR_FAULT=checkpoint-slow train twice --resume
for _ in $(seq 600); do grep -q '"step": 5,' "$run_dir/twice/metrics.jsonl" && break; sleep 0.1; done
signal twice
wait_text twice "User defined signal 1 received" 4
signal twice
ended twice
ended_by_second twice "twice"
echo "twice: the second signal came $(grep -q 'checkpoint-slow: pausing' "$TEST_TMP/twice.out" &&
  echo "during the stop's checkpoint" || echo "before the stop was agreed")"
TEST_CHECKS=$((TEST_CHECKS + 1))
if cmp -s "$run_dir/twice/checkpoint.h5" "$TEST_TMP/twice.h5"; then
  pass "twice: the checkpoint is the last complete one, byte for byte"
else
  fail "twice: the checkpoint changed (step $(ckpt_step twice)), though rank 0 was paused in the stop's write"
fi
resumed twice 3 5

# died_of_signal NAME WHAT: run NAME ended because tasks died of SIGUSR1,
# and nothing hung: srun exits 138, or 143 (srun -K's SIGTERM to the others
# counted last), or 1 (Slurm 24.11's srun where several tasks died; or the
# ranks left ending at the rendezvous timeout), or 14 (Slurm 24.11's srun
# once, where rank 3 died of the signal and -K ended the others), and the
# output names the tasks killed by the signal (srun's "task 3" or "tasks
# 2-3") or the ranks that did not arrive
died_of_signal() {
  TEST_CHECKS=$((TEST_CHECKS + 1))
  if [ "$rc" != 138 ] && [ "$rc" != 143 ] && [ "$rc" != 1 ] && [ "$rc" != 14 ]; then
    fail "$2: exit $rc, expected 138, 143, 1 or 14"
  elif grep -qE 'tasks? [0-9][0-9,-]*: User defined signal 1|rendezvous timed out after .* did not arrive' "$TEST_TMP/$1.out"; then
    pass "$2: exit $rc, the tasks killed by it named"
  else
    fail "$2: exit $rc, but nothing names the tasks killed by SIGUSR1: $(tail -n 3 "$TEST_TMP/$1.out")"
  fi
}

# startup_rerun: after a start-up killed by the signal, the run from scratch is clean
startup_rerun() {
  expect_eq "start-up: no checkpoint, no temporary file" "$(ls -A "$run_dir/startup" 2>/dev/null | grep -c checkpoint)" 0
  : >"$TEST_TMP/startup.out"
  train startup --stop_after_iters=4
  ended startup
  expect_rc "start-up: the rerun" $rc 0
  expect_eq "start-up: the rerun's steps 1 to 4, the uninterrupted run's losses bit for bit" "$(losses startup)" \
    "$(losses whole | head -n 4)"
}

# (2) A signal during start-up, as soon as the four tasks exist (srun -K:
# a task killed by it ends the step)
SLURM_KILL_BAD_EXIT=1 train startup
pids=$(tasks startup)
caught=0
for pid in $pids; do
  (( 0x$(sed -n 's/^SigCgt:\t//p' "/proc/$pid/status" 2>/dev/null || echo 0) >> 9 & 1 )) && caught=$((caught + 1))
done
early=$(grep -c '"step": [1-9]' "$run_dir/startup/metrics.jsonl" 2>/dev/null)
signal startup
ended startup
expect_eq "start-up: the signal came before the first step" "${early:-0}" 0
echo "start-up: $(wc -w <<<"$pids") tasks seen, $caught catching SIGUSR1 (libdlpar's handler) before the signal, exit $rc"
if [ "$rc" = 85 ]; then
  expect_contains "start-up: stopped at the first agreement, step 2" "$(cat "$TEST_TMP/startup.out")" \
    "dlpar-train: stopped at step 2, more to do (exit 85)"
  expect_eq "start-up: each rank's stop request" "$(every_rank startup "User defined signal 1 received")" "0 1 2 3"
  expect_eq "start-up: the checkpoint of step 2" "$(ckpt_step startup)" 2
  expect_eq "start-up: no temporary file" "$(temps startup)" 0
  resumed startup 2 4
else
  died_of_signal startup "start-up: a task without libdlpar's handler yet killed by SIGUSR1's default action"
  TEST_CHECKS=$((TEST_CHECKS + 1))
  [ "$caught" -lt 4 ] && pass "start-up: not every task caught SIGUSR1 yet when it was sent" ||
    fail "start-up: every task caught SIGUSR1 before it was sent, yet exit $rc"
  startup_rerun
fi

# (2') The default action, made certain: rank 3 keeps its signals
# (DLPAR_SIGNALS=keep), as a task still being loaded would. It dies of the
# signal during start-up; Slurm's PMIx plugin then ends the step.
cat >"$TEST_TMP/keep3" <<SH
#!/bin/bash
[ "\$SLURM_PROCID" = 3 ] && export DLPAR_SIGNALS=keep
exec "$B/trainer/dlpar-train" "\$@"
SH
chmod +x "$TEST_TMP/keep3"
SLURM_KILL_BAD_EXIT=1 program=$TEST_TMP/keep3 train keep3
tasks keep3 >/dev/null
signal keep3
ended keep3
died_of_signal keep3 "start-up, rank 3 without the handler: killed by SIGUSR1's default action"
expect_eq "start-up, rank 3 without the handler: no checkpoint, no temporary file" \
  "$(ls -A "$run_dir/keep3" 2>/dev/null | grep -c checkpoint)" 0

# (3) A signal while a checkpoint is written: once, then twice
DLPAR_FAULT=checkpoint-slow train slow --checkpoint_every=4
wait_text slow "DLPAR_FAULT=checkpoint-slow: pausing"
signal slow
ended slow
expect_rc "once in a checkpoint: stopped early" $rc 85
expect_contains "once in a checkpoint: the write of step 4 completed" "$(cat "$TEST_TMP/slow.out")" "Saved checkpoint at step 4:"
expect_contains "once in a checkpoint: stopped two steps later (step 5 posts it, step 6 agrees)" \
  "$(cat "$TEST_TMP/slow.out")" "dlpar-train: stopped at step 6, more to do (exit 85)"
expect_eq "once in a checkpoint: the checkpoint of step 6" "$(ckpt_step slow)" 6
expect_eq "once in a checkpoint: no temporary file" "$(temps slow)" 0
resumed slow 6 3

cp "$run_dir/slow/checkpoint.h5" "$TEST_TMP/slow.h5"
: >"$TEST_TMP/slow.out"
DLPAR_FAULT=checkpoint-slow train slow --resume --checkpoint_every=4
wait_text slow "DLPAR_FAULT=checkpoint-slow: pausing"
signal slow
wait_text slow "User defined signal 1 received" 4
signal slow
ended slow
ended_by_second slow "twice in a checkpoint"
expect_eq "twice in a checkpoint: the write of step 12 never completed" "$(grep -c 'Saved checkpoint at step 12' "$TEST_TMP/slow.out")" 0
TEST_CHECKS=$((TEST_CHECKS + 1))
cmp -s "$run_dir/slow/checkpoint.h5" "$TEST_TMP/slow.h5" && pass "twice in a checkpoint: the last complete checkpoint, byte for byte" ||
  fail "twice in a checkpoint: the checkpoint changed (step $(ckpt_step slow))"
expect_eq "twice in a checkpoint: the half-written temporary file beside it" "$(temps slow)" 1
resumed slow 9 3
finish
