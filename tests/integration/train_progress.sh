#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_progress.sh: the progress line of dlpar-train
# (trainer/run/progress.c) in a real 1x2 run under dlpar-run: on a terminal (a
# pty from script(1)) one line rewritten in place with \r, ending on the
# epoch's last step; in a log (a pipe) plain lines; from rank 0 alone;
# --progress=off silences it and a bad value is one line and a failure.
# The banner's counts agree with their nouns ("1 thread per rank").
. "$DLPAR_SRCDIR/tests/lib/common.sh"
command -v script >/dev/null || skip "script not installed (apt-get install bsdutils)"
make_data
export OMP_NUM_THREADS=1
train="$B/tools/dlpar-run -n 2 --dl-parallel=1x2 -- $B/trainer/dlpar-train --config=test $DLPAR_SRCDIR/etc/vit.yaml $(data_args) --num_iters=24"

# a log: every step after the first of an epoch is due (an interval of 1 ns, whatever the machine's speed)
out=$($train --run=log --progress=0.000000001 2>&1)
expect_rc "training into a log" $? 0
expect_eq "log: one plain line for step 2 (rank 0 alone)" "$(grep -c '^  step 2/12 of epoch 1: [0-9.]* samples/s, loss so far ' <<<"$out")" 1
expect_eq "log: lines up to the epoch's last step" "$(grep -c '^  step 12/12 of epoch 2: .* left in the epoch$' <<<"$out")" 1
expect_eq "log: no carriage return" "$(grep -c $'\r' <<<"$out")" 0
expect_contains "banner" "$out" "on 1 node, "
expect_contains "banner" "$out" ", 1 thread per rank"

# a terminal: in place, the epoch's last step always shown, then a newline before the epoch line
script -q -e -c "$train --run=tty" "$TEST_TMP/typescript" >/dev/null 2>&1
expect_rc "training on a terminal" $? 0
tty=$(tr -d '\n' <"$TEST_TMP/typescript")
expect_contains "terminal: in place" "$tty" $'\r  step 12/12 of epoch 1: '
expect_contains "terminal: a newline before the epoch line" "$tty" $' left in the epoch\rTime taken for epoch 1 is'

out=$($train --run=off --progress=off 2>&1)
expect_rc "training with --progress=off" $? 0
expect_eq "off: no progress line" "$(grep -c ' of epoch [0-9]*: ' <<<"$out")" 0

out=$(env -u PMIX_NAMESPACE "$B/trainer/dlpar-train" --config=test "$DLPAR_SRCDIR/etc/vit.yaml" --progress=sometimes 2>&1)
expect_rc "--progress=sometimes" $? 2
expect_eq "--progress=sometimes: one line" "$out" \
  "dlpar-train: --progress=sometimes: expected off, on or the seconds between lines (e.g. --progress=10)"
finish
