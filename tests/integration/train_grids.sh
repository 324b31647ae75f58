#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_grids.sh: the same training on grids 1x1, 2x1,
# 1x2 and 2x2 (dlpar-run, and srun on the 2-node bed) gives the 1x1 run's
# per-step losses within 1e-5 relative for 24 steps (2 epochs of 12) at the
# same global batch: data and tensor parallelism change the arithmetic's order only.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
make_data
train=$B/trainer/dlpar-train
args="--config=test $DLPAR_SRCDIR/etc/vit.yaml $(data_args) --num_iters=24"

export OMP_NUM_THREADS=1
out=$(env -u PMIX_NAMESPACE $train $args --run=ref 2>&1)
expect_rc "1x1 reference" $? 0
ref=$TEST_TMP/runs/test/1x1/ref/metrics.jsonl
expect_eq "1x1 steps" "$(step_losses "$ref" | wc -l)" 24

compare() {
  local what=$1 file=$2 diff
  diff=$(max_rel_diff "$file" "$ref")
  TEST_CHECKS=$((TEST_CHECKS + 1))
  awk -v d="${diff% *}" -v n="${diff#* }" 'BEGIN { exit !(n == 24 && d < 1e-5) }' ||
    fail "$what: largest relative loss difference to 1x1 over $(echo "$diff" | cut -d' ' -f2) steps: ${diff% *}"
  echo "$what: max relative difference to 1x1: ${diff% *}"
}

for grid in 2x1 1x2 2x2; do
  out=$("$B/tools/dlpar-run" -n $(( ${grid%x*} * ${grid#*x} )) --dl-parallel=$grid -- $train $args --run=run 2>&1)
  expect_rc "dlpar-run $grid" $? 0
  compare "dlpar-run $grid" "$TEST_TMP/runs/test/$grid/run/metrics.jsonl"
done

use_bed
for grid in 2x1 1x2 2x2; do
  case $grid in
    2x1) nodes="-N1 -n2" ;;
    1x2) nodes="-N2 -n2 --ntasks-per-node=1" ;;
    2x2) nodes="-N2 -n4 --ntasks-per-node=2" ;;
  esac
  out=$(srun $nodes --dl-parallel=$grid $train $args --run=srun 2>&1)
  expect_rc "srun $grid" $? 0
  compare "srun $grid" "$TEST_TMP/runs/test/$grid/srun/metrics.jsonl"
done
finish
