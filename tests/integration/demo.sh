#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/demo.sh: the README's main job and its "try srun" block.
# As root, contrib/demo (make demo) starts a real 2-node Slurm cluster with
# the plugin, trains 2x2 with srun --dl-parallel on a generated dataset, the
# loss falls, it draws the plot, stops the cluster and prints the commands it
# ran; without root (and with DLPAR_DEMO_LAUNCHER=dlpar-run) it trains with
# dlpar-run and says why. Then README.md's "Try srun on this machine" block
# runs as written, from a directory laid out like the checkout.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
export OMP_NUM_THREADS=1
src=$(cd "$DLPAR_SRCDIR" && pwd) # as contrib/demo prints it
demo=$src/contrib/demo
# beds on this machine, less the shared one of this make check (other tests
# may start it while the demo runs)
cluster_beds() {
  local dir
  for dir in /var/tmp/dlpar-bed.*; do
    [ -d "$dir" ] && [ "$(cat "$dir/owner" 2>/dev/null)" != "${DLPAR_CHECK_OWNER:-}" ] && echo "$dir"
  done | sort
}

# (a Slurm without mpi/pmix cannot start the training under srun: the demo
# says so and uses dlpar-run, checked below)
if [ "$(id -u)" = 0 ] && [ -f "$B/spank/.libs/spank_dlpar.so" ] && command -v srun >/dev/null &&
   "$DLPAR_SRCDIR/tests/testbed/dlpar-bed" has-pmix; then
  before=$(cluster_beds)
  out=$("$demo" "$B" "$TEST_TMP/demo" 2>&1)
  rc=$?
  expect_rc "contrib/demo (root)" $rc 0
  [ $rc = 0 ] || echo "$out" | tail -n 20 >&2
  case $out in *"cannot start a test bed here"*) skip "no local Slurm cluster here: $out" ;; esac
  expect_contains "demo: srun" "$out" "demo\$ srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 $B/trainer/dlpar-train --config=tiny"
  expect_contains "demo: on the cluster" "$out" "dlpar-train: grid 2x2 (tensor x data parallel) on 2 nodes,"
  expect_contains "demo: progress" "$out" " of epoch 1: "
  expect_contains "demo: loss" "$out" "demo: average train loss fell from"
  expect_contains "demo: text plot" "$out" "train (per step)"
  expect_contains "demo: PNG" "$out" "dlpar-plot: $TEST_TMP/demo/logs/tiny/2x2/demo/metrics.png"
  expect_contains "demo: commands to repeat" "$out" "demo: to do it again yourself:"
  expect_contains "demo: repeat the cluster" "$out" "  eval \"\$($src/tests/testbed/dlpar-bed start --plugin"
  expect_eq "demo: PNG written" "$(head -c 4 "$TEST_TMP/demo/logs/tiny/2x2/demo/metrics.png" | tail -c 3)" "PNG"
  expect_eq "demo: the cluster is stopped" "$(cluster_beds | comm -13 <(echo "$before") -)" ""

  # README.md's block, as written, in a directory laid out like the checkout
  work=$TEST_TMP/checkout
  mkdir -p "$work/build/demo"
  ln -s "$DLPAR_SRCDIR/etc" "$work/etc"
  ln -s "$DLPAR_SRCDIR/tests" "$work/tests"
  ln -s "$B/spank" "$work/build/spank"
  ln -s "$B/trainer" "$work/build/trainer"
  ln -s "$TEST_TMP/demo/data" "$work/build/demo/data"
  block=$(awk '/^### Try srun on this machine/ { found = 1 } found && /^```sh/ { inside = 1; next }
               inside && /^```/ { exit } inside' "$DLPAR_SRCDIR/README.md")
  expect_eq "README: a block of two commands" "$(grep -c . <<<"$block")" 2
  out=$(cd "$work" && bash -ec "$block" 2>&1 </dev/null)
  rc=$?
  expect_rc "README's try-srun block" $rc 0
  [ $rc = 0 ] || echo "$out" | tail -n 20 >&2
  expect_contains "README: on the cluster" "$out" "dlpar-train: grid 2x2 (tensor x data parallel) on 2 nodes,"
  expect_contains "README: trained" "$out" "dlpar-train: done at step 64"
fi

# without root, or told to: dlpar-run, and why
out=$(DLPAR_DEMO_LAUNCHER=dlpar-run "$demo" "$B" "$TEST_TMP/demo-run" 2>&1)
expect_rc "contrib/demo (dlpar-run)" $? 0
expect_contains "demo: why" "$out" "demo: no local Slurm cluster: DLPAR_DEMO_LAUNCHER=dlpar-run; training with dlpar-run"
expect_contains "demo: dlpar-run" "$out" "demo\$ $B/tools/dlpar-run -n 4 --dl-parallel=2x2 -- $B/trainer/dlpar-train"
expect_contains "demo: grid" "$out" "dlpar-train: grid 2x2 (tensor x data parallel)"
expect_contains "demo: loss" "$out" "demo: average train loss fell from"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  chmod 755 "$TEST_TMP" && mkdir -m 1777 "$TEST_TMP/nobody"
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$demo" "$B" "$TEST_TMP/nobody/demo" 2>&1)
  rc=$?
  expect_rc "contrib/demo (as nobody)" $rc 0
  [ $rc = 0 ] || echo "$out" | tail -n 20 >&2
  expect_contains "demo: why (nobody)" "$out" "demo: no local Slurm cluster: not root"
fi
finish
