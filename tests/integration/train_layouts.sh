#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_layouts.sh: dlpar-gen-data's layouts (--layout=)
# and dlpar-train on each:
#  - every layout holds the fields of the default one, value for value
#    (h5diff; how each is stored, as h5py would: train_layouts_h5py.sh);
#  - a CPU training run (one process) on each gives the default layout's
#    losses bit for bit;
#  - an unknown layout is refused in one line; --help lists the layouts.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
export OMP_NUM_THREADS=1
gen=$B/trainer/dlpar-gen-data
layouts="steps contiguous chunked gzip shuffle-gzip"
for layout in $layouts; do
  "$gen" --dir="$TEST_TMP/$layout" --channels=4 --height=16 --width=32 --steps=24 --years=2 --layout=$layout >/dev/null
  expect_rc "dlpar-gen-data --layout=$layout" $? 0
done
for layout in $layouts; do
  for f in train/2016.h5 train/2017.h5 valid/2018.h5; do
    out=$(h5diff "$TEST_TMP/steps/$f" "$TEST_TMP/$layout/$f" fields 2>&1)
    expect_rc "$layout: $f holds the default layout's fields (h5diff)" $? 0
  done
done
for layout in $layouts; do
  d=$TEST_TMP/$layout
  out=$(env -u PMIX_NAMESPACE "$B/trainer/dlpar-train" --config=test "$DLPAR_SRCDIR/etc/vit.yaml" \
          --train_data_path=$d/train --valid_data_path=$d/valid --global_means_path=$d/stats/global_means.npy \
          --global_stds_path=$d/stats/global_stds.npy --expdir="$TEST_TMP/runs" --num_iters=6 --run=$layout 2>&1)
  expect_rc "$layout: dlpar-train" $? 0
done
want=$(step_losses "$TEST_TMP/runs/test/1x1/steps/metrics.jsonl")
# one epoch: 2 years x 24 steps / batch 4 (the test config ends at an epoch's end)
expect_eq "the default layout's run has an epoch's 12 losses" "$(wc -l <<<"$want")" 12
for layout in $layouts; do
  expect_eq "$layout: the default layout's losses bit for bit" "$(step_losses "$TEST_TMP/runs/test/1x1/$layout/metrics.jsonl")" "$want"
done

out=$("$gen" --dir="$TEST_TMP/x" --layout=zip 2>&1)
expect_rc "--layout=zip refused" $? 2
expect_eq "--layout=zip: one line" "$out" "dlpar-gen-data: --layout=zip: expected steps, contiguous, chunked, gzip or shuffle-gzip"
expect_contains "--help lists the layouts" "$("$gen" --help)" "--layout=steps|contiguous|chunked|gzip|shuffle-gzip"
finish
