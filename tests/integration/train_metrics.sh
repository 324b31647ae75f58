#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_metrics.sh: where users look at a run. The
# TensorBoard event file decodes (with an independent reader) into the
# tutorial's tags (the losses also at step 0, 'Learning Rate' after the
# scheduler's step), each epoch's values equal to metrics.jsonl's; the epoch
# lines are the tutorial's; num_iters gives whole epochs (train.py's
# num_iters // steps per epoch); contrib/dlpar-plot draws a PNG of the run.
# Step lines are written a step late (the window's sums travel while the
# next step runs): every window still gets exactly one line, in order, the
# epoch ends and a stop flush theirs, and each epoch's train loss is the
# step-weighted mean of its windows.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
make_data
export OMP_NUM_THREADS=1
out=$(env -u PMIX_NAMESPACE "$B/trainer/dlpar-train" --config=test "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) \
        --num_iters=24 --run=m 2>&1)
expect_rc "training" $? 0
for line in "Time taken for epoch 2 is" "  Avg train loss=" "  Avg val loss=" "  Total validation time:"; do
  expect_contains "tutorial's epoch lines" "$out" "$line"
done
run=$TEST_TMP/runs/test/1x1/m
events=$(ls "$run"/logs/events.out.tfevents.* 2>/dev/null | head -n 1)
decoded=$(/usr/bin/python3 "$DLPAR_SRCDIR/tests/numerics/read_tfevents.py" "$events" 2>&1)
expect_rc "event file decodes" $? 0
expect_contains "event file" "$decoded" "version brain.Event:2"
for tag in "Loss/train" "Loss/valid" "RMSE(u10m)/valid"; do
  expect_eq "tag $tag at step 0 and epochs 1 and 2" "$(grep -c " $tag " <<<"$decoded")" 3
  expect_eq "tag $tag at step 0" "$(grep -c "^0 $tag " <<<"$decoded")" 1
done
for tag in "Learning Rate" "Avg iters per sec" "Avg samples per sec"; do
  expect_eq "tag $tag at epochs 1 and 2" "$(grep -c " $tag " <<<"$decoded")" 2
done
# after the scheduler's step: epoch 1 ends at step 12 of a 24-step cosine, the rate 1e-3 x 0.5 x (1 + cos(pi/2))
expect_eq "Learning Rate after epoch 1" "$(grep "^12 Learning Rate " <<<"$decoded" | cut -d' ' -f4)" 0.000500000024
expect_eq "Learning Rate after the last epoch" "$(grep "^24 Learning Rate " <<<"$decoded" | cut -d' ' -f4)" 0
# epoch 2 (step 24): the event values are metrics.jsonl's, as float32
json=$(grep '"epoch": 2,' "$run/metrics.jsonl")
for pair in "Loss/train train_loss" "Loss/valid val_loss" "RMSE(u10m)/valid val_rmse_u10m"; do
  set -- $pair
  from_json=$(sed -n "s/.*\"$2\": \([^,}]*\).*/\1/p" <<<"$json")
  from_events=$(grep "^24 $1 " <<<"$decoded" | cut -d' ' -f3)
  TEST_CHECKS=$((TEST_CHECKS + 1))
  awk -v a="$from_json" -v b="$from_events" 'BEGIN { d = (a - b) / a; exit !(d < 1e-6 && d > -1e-6) }' ||
    fail "$1: events $from_events, metrics.jsonl $from_json"
done

# epoch_check FILE EPOCH: the epoch's train_loss against its windows' lines
# (each window's steps: from the previous line's step to its own)
epoch_check() {
  awk -v want="$2" '
    /"step":/ && !/"epoch":/ { s = $2 + 0; l = $4 + 0; sum += (s - last) * l; n += s - last; last = s }
    /"epoch":/ { e = $2 + 0; if (e == want) { split($0, a, "\"train_loss\": "); t = a[2] + 0;
                 d = (sum / n - t) / t; exit !(d < 1e-6 && d > -1e-6) } sum = 0; n = 0 }' FS='[ ,]+' "$1"
}
expect_eq "log_every 1: a line per step, in order" "$(step_losses "$run/metrics.jsonl" | cut -d' ' -f1 | tr '\n' ' ')" \
  "$(seq -s ' ' 1 24) "
TEST_CHECKS=$((TEST_CHECKS + 1))
epoch_check "$run/metrics.jsonl" 2 || fail "log_every 1: epoch 2's train_loss is not the mean of its step lines"
out=$("$B/tools/dlpar-run" -n 4 --dl-parallel=2x2 -- "$B/trainer/dlpar-train" --config=test \
        "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) --num_iters=30 --log_every=5 --run=w 2>&1)
expect_rc "2x2, log_every 5" $? 0
jsonl=$TEST_TMP/runs/test/2x2/w/metrics.jsonl
expect_eq "log_every 5, num_iters 30: 2 whole epochs, windows and epoch ends" \
  "$(step_losses "$jsonl" | cut -d' ' -f1 | tr '\n' ' ')" "5 10 12 15 20 24 "
expect_contains "num_iters 30: 2 epochs of 12 steps" "$out" "2 epochs of 12 steps (24 steps)"
for epoch in 1 2; do
  TEST_CHECKS=$((TEST_CHECKS + 1))
  epoch_check "$jsonl" $epoch || fail "log_every 5: epoch $epoch's train_loss is not its windows' weighted mean"
done
out=$("$B/tools/dlpar-run" -n 2 --dl-parallel=1x2 -- "$B/trainer/dlpar-train" --config=test \
        "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) --num_iters=30 --stop_after_iters=7 --run=s 2>&1)
expect_rc "stop_after_iters 7" $? 0
expect_eq "stopped run: its last step has its line" \
  "$(step_losses "$TEST_TMP/runs/test/1x2/s/metrics.jsonl" | tail -n 1 | cut -d' ' -f1)" 7

out=$("$DLPAR_SRCDIR/contrib/dlpar-plot" "$run" "$TEST_TMP/run.png" 2>&1)
expect_rc "dlpar-plot" $? 0
expect_eq "dlpar-plot: a PNG" "$(head -c 8 "$TEST_TMP/run.png" | od -An -tx1 | tr -d ' \n')" "89504e470d0a1a0a"
TEST_CHECKS=$((TEST_CHECKS + 1))
[ "$(stat -c %s "$TEST_TMP/run.png")" -gt 10000 ] || fail "dlpar-plot: the PNG is suspiciously small"
finish
