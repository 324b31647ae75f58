#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/contrib_sbatch.sh: the batch templates of contrib/sbatch.
# Each one's grid must fit its #SBATCH lines (M*D = nodes x tasks per node,
# M divides tasks per node, one GPU per task), and each is submitted with
# sbatch to the 2-node test bed, scaled down on the command line (2 nodes x
# 2 tasks) with the tiny `test` config: the job must run dlpar-train with
# the grid it asked for (the profile template under the STAND-IN nsys of
# tests/stand-ins: nsys cannot be installed here). The restart template
# trains on all nodes but a spare, through dlpar-restart. The PyTorch
# template runs in contrib_sbatch_torch.sh (it needs torch).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
make_data
use_bed
export PATH=$B/trainer:$B/tools:$DLPAR_SRCDIR/tests/stand-ins:$PATH
export DLPAR_NSYS_RECORD=$TEST_TMP/nsys.record OMP_NUM_THREADS=1
cd "$TEST_TMP"

sbatch_value() { sed -n "s/^#SBATCH .*--$2=\([^ ]*\).*/\1/p" "$1" | head -n 1; }

for template in "$DLPAR_SRCDIR"/contrib/sbatch/*.sbatch; do
  name=$(basename "$template" .sbatch)
  [ "$name" = pytorch ] || [ "$name" = restart ] || [ "$name" = long ] && continue # below
  nodes=$(sbatch_value "$template" nodes) tasks=$(sbatch_value "$template" ntasks-per-node)
  gpus=$(sbatch_value "$template" gpus-per-node) grid=$(sbatch_value "$template" dl-parallel)
  m=${grid%x*} d=${grid#*x}
  expect_eq "$name: M*D = nodes x tasks" "$(( m * d ))" "$(( nodes * tasks ))"
  expect_eq "$name: M divides tasks per node" "$(( tasks % m ))" 0
  expect_eq "$name: one GPU per task" "$gpus" "$tasks"
  bash -n "$template"
  expect_rc "$name: shell syntax" $? 0

  # on the bed: 2 nodes x 2 tasks (short: as written), the test config
  scaled="-N2 --ntasks-per-node=2 --gpus-per-node=2 --dl-parallel=$(( m > 2 ? 2 : m ))x$(( 4 / (m > 2 ? 2 : m) ))"
  [ "$name" = short ] && scaled=
  out=$(sbatch -W $scaled -o "$TEST_TMP/$name.out" \
          --export=ALL,CONFIG=test,CONFIG_FILE=$DLPAR_SRCDIR/etc/vit.yaml,DATA=$TEST_TMP/data,EXTRA="--expdir=$TEST_TMP/runs --num_iters=12 --run=$name" \
          "$template" 2>&1)
  expect_rc "$name: sbatch -W" $? 0
  log=$(cat "$TEST_TMP/$name.out" 2>/dev/null)
  if [ "$name" = short ]; then want=1x1; else want=$(( m > 2 ? 2 : m ))x$(( 4 / (m > 2 ? 2 : m) )); fi
  expect_contains "$name: grid" "$log" "dlpar-train: grid $want (tensor x data parallel)"
  if [ "$name" = benchy ]; then
    expect_contains "$name: benchy" "$log" "benchy: "
  else
    expect_contains "$name: ran" "$log" "dlpar-train: done at step 12"
  fi
done
# The restart template: the step on all nodes but the spare (here 1 of 2
# nodes, 2 tasks: grid 2x1), through dlpar-restart, with --dl-check
template=$DLPAR_SRCDIR/contrib/sbatch/restart.sbatch
bash -n "$template"
expect_rc "restart: shell syntax" $? 0
out=$(env $CHECK_ANY_SPEED PATH="$DLPAR_SRCDIR/contrib:$PATH" sbatch -W -N2 --ntasks-per-node=2 --gpus-per-node=2 \
        -o "$TEST_TMP/restart.out" \
        --export=ALL,CONFIG=test,CONFIG_FILE=$DLPAR_SRCDIR/etc/vit.yaml,DATA=$TEST_TMP/data,EXTRA="--expdir=$TEST_TMP/runs --num_iters=12 --run=restart" \
        "$template" 2>&1)
expect_rc "restart: sbatch -W" $? 0
log=$(cat "$TEST_TMP/restart.out" 2>/dev/null)
expect_contains "restart: grid on the nodes but the spare" "$log" "dlpar-train: grid 2x1 (tensor x data parallel) on 1 node"
expect_contains "restart: ran" "$log" "dlpar-train: done at step 12"

# The long-run template: the step through dlpar-restart (exec'd: the batch
# shell), a run that ends before the warning: done, not requeued
# (tests/integration/timelimit.sh has the warning, a preemption, scancel -b)
template=$DLPAR_SRCDIR/contrib/sbatch/long.sbatch
expect_eq "long: grid fits" "$(( $(sbatch_value "$template" nodes) * $(sbatch_value "$template" ntasks-per-node) ))" 8
out=$(PATH="$DLPAR_SRCDIR/contrib:$PATH" sbatch -W -N2 --ntasks-per-node=2 --gpus-per-node=2 --dl-parallel=2x2 \
        -o "$TEST_TMP/long.out" \
        --export=ALL,CONFIG=test,CONFIG_FILE=$DLPAR_SRCDIR/etc/vit.yaml,DATA=$TEST_TMP/data,EXTRA="--expdir=$TEST_TMP/runs --num_iters=12 --run=long" \
        "$template" 2>&1)
expect_rc "long: sbatch -W" $? 0
log=$(cat "$TEST_TMP/long.out" 2>/dev/null)
expect_contains "long: ran" "$log" "dlpar-train: done at step 12"
expect_eq "long: nothing of dlpar-restart's (not requeued)" "$(grep -c '^dlpar-restart: ' <<<"$log")" 0

# The PyTorch template's grid (its runs: contrib_sbatch_torch.sh)
expect_eq "pytorch: grid fits" "$(sbatch_value "$DLPAR_SRCDIR/contrib/sbatch/pytorch.sbatch" dl-parallel)" 2x2
expect_eq "profile: nsys wrapped rank 0 only" "$(grep -c 'rank0 ' "$DLPAR_NSYS_RECORD" 2>/dev/null)" 1
expect_contains "profile: steps" "$(grep -h 'Saved\|done' "$TEST_TMP/profile.out")" "done"
finish
