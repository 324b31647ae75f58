#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/torch_stop_bed.sh: contrib/pytorch/ddp_requeue.py (dlpar's
# stop agreement, gloo) under srun --dl-parallel=2x2 on the 2-node bed,
# stopped by Slurm's own signals:
#  - scancel --signal=USR1 JOBID (every task of the job's steps): every rank
#    logs the same stop step k, srun exits 85, the checkpoint says k+1; the
#    restart (DLPAR_RESTART=1, DLPAR_CHECKPOINT) resumes at k+1 with the
#    uninterrupted run's losses to fp32 tolerance;
#  - the time limit's warning, srun -t 2 --signal=USR1@110: every rank at
#    one step, exit 85, long before the limit (no SIGKILL). slurmctld
#    sends the warning at its periodic check, every 30 s or later under
#    load: a limit of 2 minutes leaves it three checks or more to come
#    within, where one of 1 minute (@50) saw none in a loaded CI run.
# tests/integration/torch_requeue.sh runs it in a batch job through
# dlpar-restart, requeued; tests/integration/torch_stop.sh has the rest under dlpar-run: a signal to
# one rank, twice, during start-up, during the checkpoint's write.
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
out=$(DLPAR_RESTART=1 DLPAR_CHECKPOINT=$ckpt srun "${step[@]}" /usr/bin/python3 "$example" --steps=$((k + 6)) \
      --checkpoint="$ckpt" 2>&1)
expect_rc "restarted run" $? 0
echo "$out" >"$TEST_TMP/resumed.out"
expect_eq "restarted run: every rank resumed at k+1" "$(grep -c "^ddp_requeue: rank [0-3]: resumed at step $((k + 1))\$" <<<"$out")" 4
read -r rel shared <<<"$(max_rel "$(losses "$TEST_TMP/resumed.out")" "$(losses "$TEST_TMP/whole.out")")"
expect_eq "restarted run: steps k+1..k+5, the uninterrupted run's losses (max rel $rel)" \
  "$shared $(awk -v r="$rel" 'BEGIN { print (r <= 1e-6) ? "within" : "beyond" }')" "5 within"
read -r rel shared <<<"$(max_rel "$(losses "$TEST_TMP/user.out")" "$(losses "$TEST_TMP/whole.out")")"
expect_eq "the stopped run's steps 0..k: the uninterrupted run's losses (max rel $rel)" \
  "$shared $(awk -v r="$rel" 'BEGIN { print (r <= 1e-6) ? "within" : "beyond" }')" "$((k + 1)) within"

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
finish
