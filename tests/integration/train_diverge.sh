#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_diverge.sh: a diverging run (lr 1e20: the weights
# overflow the forward after one step) stops instead of training on NaN:
#  - one line naming the step and the last good checkpoint, a non-zero exit,
#    and that checkpoint untouched (its step, readable, no NaN in it: the
#    step's update was skipped, nothing was saved after it);
#  - max_skipped_steps=N: N such steps skipped with a line each, then the stop;
# on a 2x2 grid under dlpar-run (the CPU path; the CUDA model's skip, on
# found_inf, runs only on a GPU).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
make_data
export OMP_NUM_THREADS=1
run() { "$B/tools/dlpar-run" -n 4 --dl-parallel=2x2 -- "$B/trainer/dlpar-train" --config=test \
          "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) --num_iters=20 --checkpoint_every=1 "$@"; }
dir=$TEST_TMP/runs/test/2x2
ckpt_step() { h5dump -a step "$dir/$1/checkpoint.h5" 2>/dev/null | sed -n 's/^ *(0): \([0-9]*\)/\1/p'; }

out=$(run --run=diverge --lr=1e20 2>&1)
expect_rc "diverging run" $? 1
expect_eq "one divergence line" "$(grep -c 'diverged' <<<"$out")" 1
expect_contains "divergence line" "$out" "dlpar-train: the run diverged: loss "
expect_contains "divergence line names the step and the checkpoint" "$out" \
  "non-finite loss or gradients at step 2; stopping, $dir/diverge/checkpoint.h5 (step 1) is the last good checkpoint (lower lr or raise warmup; max_skipped_steps=N skips up to N such steps)"
expect_eq "no step line for the diverged step" "$(step_losses "$dir/diverge/metrics.jsonl" | cut -d' ' -f1)" 1
expect_eq "last good checkpoint kept" "$(ckpt_step diverge)" 1
out=$(h5dump "$dir/diverge/checkpoint.h5" 2>&1)
expect_rc "last good checkpoint readable (h5dump)" $? 0
expect_eq "last good checkpoint: no NaN in it" "$(grep -ci nan <<<"$out")" 0
expect_eq "no temporary file left" "$(ls "$dir/diverge" | grep -c tmp)" 0

out=$(run --run=skip --lr=1e20 --max_skipped_steps=2 2>&1)
expect_rc "skipping, then diverged" $? 1
expect_contains "first skip" "$out" "dlpar-train: non-finite loss or gradients at step 2: update skipped (1 of max_skipped_steps=2)"
expect_contains "second skip" "$out" "dlpar-train: non-finite loss or gradients at step 3: update skipped (2 of max_skipped_steps=2)"
expect_contains "stop after the skips" "$out" "non-finite loss or gradients at step 4; stopping, $dir/skip/checkpoint.h5 (step 3)"
finish
