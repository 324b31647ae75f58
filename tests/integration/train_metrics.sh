#!/bin/bash
# tests/integration/train_metrics.sh: where users look at a run. The
# TensorBoard event file decodes (with an independent reader) into the
# tutorial's tags, each epoch's values equal to metrics.jsonl's; the epoch
# lines are the tutorial's; contrib/dlpar-plot draws a PNG of the run.
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
for tag in "Loss/train" "Loss/valid" "RMSE(u10m)/valid" "Learning Rate" "Avg samples per sec"; do
  expect_eq "tag $tag at epochs 1 and 2" "$(grep -c " $tag " <<<"$decoded")" 2
done
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
out=$("$DLPAR_SRCDIR/contrib/dlpar-plot" "$run" "$TEST_TMP/run.png" 2>&1)
expect_rc "dlpar-plot" $? 0
expect_eq "dlpar-plot: a PNG" "$(head -c 8 "$TEST_TMP/run.png" | od -An -tx1 | tr -d ' \n')" "89504e470d0a1a0a"
TEST_CHECKS=$((TEST_CHECKS + 1))
[ "$(stat -c %s "$TEST_TMP/run.png")" -gt 10000 ] || fail "dlpar-plot: the PNG is suspiciously small"
finish
