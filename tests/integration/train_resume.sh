#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_resume.sh: checkpoints.
#  - a run stopped after 10 steps and resumed gives the uninterrupted run's
#    losses bit for bit, and the same final weights (on a 2x2 grid);
#  - a rank killed in the middle of writing a checkpoint leaves the previous
#    checkpoint loadable, and the resumed run still matches;
#  - SIGTERM (Slurm's time limit, scancel) writes a checkpoint and exits 85
#    (stopped early, more to do),
#    with metrics.jsonl's step lines up to the checkpoint's step;
#  - a checkpoint saved at an epoch's last step resumes at the next epoch's
#    first (it crashed the loader once), under dlpar-run and srun on the bed.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
make_data
# run ARGS: a 2x2 training, 2 epochs of 12 steps; in a subshell it becomes dlpar-run (exec), so
# `run ... &` gives dlpar-run's pid
run() { exec "$B/tools/dlpar-run" -n 4 --dl-parallel=2x2 -- "$B/trainer/dlpar-train" --config=test \
          "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) --num_iters=24 "$@"; }
export OMP_NUM_THREADS=1
losses() { step_losses "$TEST_TMP/runs/test/2x2/$1/metrics.jsonl"; }
ckpt_step() { h5dump -a step "$TEST_TMP/runs/test/2x2/$1/checkpoint.h5" 2>/dev/null | sed -n 's/^ *(0): \([0-9]*\)/\1/p'; }

out=$(run --run=whole 2>&1)
expect_rc "uninterrupted run" $? 0
spe=$(sed -n 's/.* epochs\{0,1\} of \([0-9]*\) steps\{0,1\} (.*/\1/p' <<<"$out")

out=$(run --run=split --stop_after_iters=10 2>&1)
expect_rc "first half" $? 0
expect_eq "checkpoint after the first half" "$(ckpt_step split)" 10
out=$(run --run=split --resume 2>&1)
expect_rc "resumed half" $? 0
expect_contains "resumed" "$out" "resumed from"
expect_eq "losses bit for bit" "$(losses split | sort -n | uniq)" "$(losses whole)"
out=$(h5diff "$TEST_TMP/runs/test/2x2/whole/checkpoint.h5" "$TEST_TMP/runs/test/2x2/split/checkpoint.h5" params 2>&1)
expect_rc "final weights identical (h5diff)" $? 0

# saved at the last step of epoch 1: resumes at epoch 2, step 0
expect_eq "steps per epoch of the test data" "$spe" 12
out=$(run --run=epoch --stop_after_iters=$spe 2>&1)
expect_rc "stopped at an epoch's end" $? 0
out=$(run --run=epoch --resume 2>&1)
expect_rc "resumed at an epoch's end" $? 0
expect_contains "resumed at the next epoch" "$out" "at step $spe (epoch 2, step 0 of it)"
expect_eq "losses after an epoch's end" "$(losses epoch | sort -n | uniq)" "$(losses whole)"
use_bed
srun_train() { srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "$B/trainer/dlpar-train" --config=test \
                 "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) --num_iters=24 --run=bed "$@"; }
out=$(srun_train --stop_after_iters=$spe 2>&1)
expect_rc "srun: stopped at an epoch's end" $? 0
out=$(srun_train --resume 2>&1)
expect_rc "srun: resumed at an epoch's end" $? 0
expect_eq "srun: losses after an epoch's end" "$(losses bed | sort -n | uniq)" "$(losses whole)"

# killed while writing the checkpoint of step 15: the one of step 10 stays
out=$(run --run=crash --stop_after_iters=10 2>&1)
out=$(DLPAR_FAULT=checkpoint-write run --run=crash --resume --checkpoint_every=5 2>&1)
expect_rc "killed in a checkpoint" $? 137
expect_contains "killed in a checkpoint" "$out" "DLPAR_FAULT=checkpoint-write"
expect_eq "previous checkpoint intact" "$(ckpt_step crash)" 10
out=$(run --run=crash --resume 2>&1)
expect_rc "resumed after the crash" $? 0
expect_eq "losses after the crash" "$(losses crash | sort -n | uniq)" "$(losses whole)"
expect_eq "no temporary file left" "$(ls "$TEST_TMP/runs/test/2x2/crash/" | grep -c tmp)" 0

# SIGTERM: checkpoint, then exit 85 (stopped early, more to do: doc/user.md)
(run --run=term --num_iters=100000 >"$TEST_TMP/term.out" 2>&1) &
pid=$!
for i in $(seq 100); do grep -q '"step": 3,' "$TEST_TMP/runs/test/2x2/term/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
kill -TERM $pid
wait $pid
expect_rc "SIGTERM: stopped early, more to do" $? 85
expect_contains "SIGTERM" "$(cat "$TEST_TMP/term.out")" "stop agreed (a rank got SIGTERM, SIGUSR1 or SIGINT): checkpointing at step"
expect_contains "SIGTERM: the last line says so" "$(cat "$TEST_TMP/term.out")" "dlpar-train: stopped at step $(ckpt_step term), more to do (exit 85)"
TEST_CHECKS=$((TEST_CHECKS + 1))
[ "$(ckpt_step term)" -ge 3 ] 2>/dev/null || fail "SIGTERM: no checkpoint (step $(ckpt_step term))"
expect_eq "SIGTERM: metrics.jsonl reaches the checkpoint's step" "$(losses term | tail -n 1 | cut -d' ' -f1)" \
  "$(ckpt_step term)"
finish
