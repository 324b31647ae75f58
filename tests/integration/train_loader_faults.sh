#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_loader_faults.sh: a training file truncated under
# a running dlpar-train (the CPU path, one process), read by steps (the
# default layout) and by gzip'ed chunks (h5py's chunks=True,
# compression="gzip"):
#  - one line naming the file, the sample and the time step, and a non-zero
#    exit, within the steps the readers were ahead;
#  - nothing half-written: the last checkpoint readable (h5dump) and at a
#    step the run reached, no temporary file beside it, every metrics line
#    whole JSON.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
export OMP_NUM_THREADS=1
d=$TEST_TMP/data
line_re="^dlpar-train: $d/train/201[67]\.h5: sample [0-9]+, fields\[[0-9]+\]: the file shrank to [0-9]+ bytes from [0-9]+ since the run began \(it was truncated or rewritten in place: restore it, then resume from the last checkpoint\)$"

for layout in steps gzip; do
  rm -rf "$d"
  make_data --layout=$layout
  dir=$TEST_TMP/runs/test/1x1/$layout
  # A run that never stops is ended by timeout after 120 s (exit 124).
  timeout 120 env -u PMIX_NAMESPACE "$B/trainer/dlpar-train" --config=test "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) \
    --num_iters=1000000 --checkpoint_every=3 --progress=off --run=$layout >"$TEST_TMP/$layout.out" 2>"$TEST_TMP/$layout.err" &
  pid=$!
  # truncate once a checkpoint is there (a few steps in): both training years, to half
  for i in $(seq 1 600); do
    [ -f "$dir/checkpoint.h5" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  expect_eq "$layout: a checkpoint before the truncation" "$(test -f "$dir/checkpoint.h5" && echo yes)" yes
  for f in "$d"/train/*.h5; do truncate -s $(( $(stat -c %s "$f") / 2 )) "$f"; done
  wait $pid
  expect_rc "$layout: the run stops" $? 1
  err=$(cat "$TEST_TMP/$layout.err")
  expect_eq "$layout: one line on stderr" "$(wc -l <"$TEST_TMP/$layout.err")" 1
  expect_eq "$layout: it names the file, the sample and the step" "$(grep -cE "$line_re" <<<"$err")" 1
  out=$(h5dump -a step "$dir/checkpoint.h5" 2>&1)
  expect_rc "$layout: the last checkpoint readable (h5dump)" $? 0
  ckpt=$(sed -n 's/^ *(0): \([0-9]*\)/\1/p' <<<"$out")
  last=$(step_losses "$dir/metrics.jsonl" | tail -n 1 | cut -d' ' -f1)
  expect_eq "$layout: the checkpoint at a step the run reached" "$([ -n "$ckpt" ] && [ "$ckpt" -le "${last:-0}" ] && echo yes)" yes
  expect_eq "$layout: no temporary file left" "$(ls -a "$dir" | grep -c tmp)" 0
  expect_eq "$layout: every metrics line whole JSON" "$(/usr/bin/python3 -c '
import json, sys
text = open(sys.argv[1]).read()
print(text.endswith("\n") and all(isinstance(json.loads(l), dict) for l in text.splitlines()))' "$dir/metrics.jsonl" 2>&1)" True
done
finish
