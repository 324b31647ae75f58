#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_inputs.sh: dlpar-train refuses bad input of every
# kind with one line naming the problem (and FILE:LINE for config errors)
# and a non-zero exit: command line, YAML syntax and keys, types, impossible
# combinations for the grid, overrides, data directories and files (wrong
# dataset, too small, NaN), statistics, and --resume without a checkpoint.
# An error every rank finds is reported once, by rank 0. Input built to
# crash or exhaust the trainer gets one line too, at once: YAML
# nested deeper than the limit (file or --key=[[[...), aliases inside their
# own anchor, duplicate keys by the ten thousand, values with newlines, a
# FIFO named like a config, an HDF5 file or statistics, and checkpoints
# edited to lie (negative or huge step, an array for a number, a NaN, a
# position that no longer fits the data or num_iters).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
make_data
train=$B/trainer/dlpar-train
yaml=$DLPAR_SRCDIR/etc/vit.yaml
d=$TEST_TMP/data
mkdir -p "$TEST_TMP/empty" "$TEST_TMP/wrongname" "$TEST_TMP/nan"
/usr/bin/python3 - "$d/train/2016.h5" "$TEST_TMP" <<'PY' || skip "no python3-h5py to write broken HDF5 files"
import sys, h5py, numpy as np
fields = np.array(h5py.File(sys.argv[1], "r")["fields"])
with h5py.File(sys.argv[2] + "/wrongname/2016.h5", "w") as f:
    f["data"] = fields
fields[5, 2, 3, 7] = np.nan
with h5py.File(sys.argv[2] + "/nan/2016.h5", "w") as f:
    f["fields"] = fields
PY
cat >"$TEST_TMP/bad.yaml" <<'EOF2'
base: &base
  embed_dim: 32
  depth: 2
small:
  <<: *base
  embed_dims: 64
typed:
  <<: *base
  lr: fast
pair:
  <<: *base
  img_size: [32]
heads:
  <<: *base
  num_heads: 5
EOF2
printf 'base:\n  embed_dim: 32\norphan:\n  <<: *nowhere\n' >"$TEST_TMP/orphan.yaml"
printf 'base:\n  embed_dim: 32\n   depth: 2\n' >"$TEST_TMP/syntax.yaml"

ok=$(data_args)
# args | exit code (dlpar-train(1): 2 for bad arguments, 1 otherwise) |
# expected line on stderr (after the program name); run outside any launcher
while IFS='|' read -r args code message; do
  [ -n "$args" ] || continue
  out=$(env -u PMIX_NAMESPACE $train $args 2>&1 >/dev/null)
  expect_rc "$args" $? "$code"
  expect_eq "$args" "$out" "dlpar-train: $message"
done <<EOF2
--config=test|2|no config file (e.g. dlpar-train --config=short etc/vit.yaml, or --yaml_config=FILE)
--config=test $yaml --device=tpu $ok|2|--device=tpu: expected --device=cpu, cuda or auto
--config=test /nonexistent.yaml|1|/nonexistent.yaml: cannot open the config file (check the path)
--config=nope $yaml $ok|1|$yaml: no config named 'nope' (give --config=NAME with a top-level mapping of the file)
--config=base $TEST_TMP/syntax.yaml|1|$TEST_TMP/syntax.yaml:3: YAML syntax error: mapping values are not allowed in this context (check indentation and quotes)
--config=small $TEST_TMP/bad.yaml|1|$TEST_TMP/bad.yaml:6: unknown key 'embed_dims' in config 'small' (see dlpar-train(1) for the keys)
--config=typed $TEST_TMP/bad.yaml|1|$TEST_TMP/bad.yaml:9: lr: expected a number, got 'fast'
--config=pair $TEST_TMP/bad.yaml|1|$TEST_TMP/bad.yaml:12: img_size: expected a list of two whole numbers, e.g. [360, 720], got 'a list'
--config=heads $TEST_TMP/bad.yaml|1|$TEST_TMP/bad.yaml:15: embed_dim=32 is not a multiple of num_heads=5 (choose num_heads dividing embed_dim)
--config=orphan $TEST_TMP/orphan.yaml|1|$TEST_TMP/orphan.yaml:4: unknown alias *nowhere (define the &anchor before using it)
--config=test $yaml $ok --lr=abc|1|command line: lr: expected a number, got 'abc'
--config=test $yaml $ok --lrate=1|2|--lrate: unknown flag or config key (see dlpar-train(1) for both)
--config=test $yaml $ok --lr|2|--lr: missing its value (--lr=VALUE or --lr VALUE)
--config=test $yaml $ok --img_size=[30,32]|1|command line: img_size=[30, 32] is not a multiple of patch_size=4 (crop it to a multiple)
--config=test $yaml $ok --dropout=0.1|1|command line: dropout=0.1: dlpar-train has no dropout (set dropout: 0.0)
--config=test $yaml $ok --attention=flash|1|command line: attention=flash: expected cudnn or reference
--config=test $yaml $ok --recompute=all|1|command line: recompute=all: expected gelu (GELU's output recomputed in the backward: less memory) or none (kept from the forward)
--config=test $yaml $ok --deterministic=maybe|1|command line: deterministic: expected true or false, got 'maybe'
--config=test $yaml $ok --train_data_path=/nonexistent|1|/nonexistent: no such directory (fix the data path in the config, or generate data with dlpar-gen-data)
--config=test $yaml $ok --train_data_path=$TEST_TMP/empty|1|$TEST_TMP/empty: no *.h5 files (the ERA5 layout has one file per year, e.g. 2016.h5)
--config=test $yaml $ok --train_data_path=$TEST_TMP/wrongname|1|$TEST_TMP/wrongname/2016.h5: no dataset 'fields' (the ERA5 layout is fields[T, C, H, W])
--config=test $yaml $ok --img_size=[64,128]|1|$d/train/2016.h5: fields [24, 4, 16, 32] is smaller than 4 channels of 64x128 (lower n_in_channels/n_out_channels or img_size)
--config=test $yaml $ok --train_data_path=$TEST_TMP/nan --limit_nsamples=None --num_iters=30|1|$TEST_TMP/nan/2016.h5: fields[5, 2, 3, 7] is NaN (clean the data or regenerate it)
--config=test $yaml $ok --global_stds_path=$TEST_TMP/missing.npy|1|$TEST_TMP/missing.npy: cannot open (check the stats path in the config)
--config=test $yaml $ok --global_means_path=$d/train/2016.h5|1|$d/train/2016.h5: no such dataset '2016' (give a .npy file, or an HDF5 file with a dataset named after it)
--config=test $yaml $ok --resume|1|--resume: $TEST_TMP/runs/test/1x1/00/checkpoint.h5: no checkpoint to resume from (run without --resume first)
EOF2

# input built to crash or exhaust: one line, at once (timeout: a hang fails)
python3 -c "print('base:\n  lr: ' + '['*100000 + ']'*100000)" >"$TEST_TMP/deep.yaml"
printf 'base: &b\n  <<: *b\n  lr: 1\n' >"$TEST_TMP/selfmerge.yaml"
python3 -c "print('base:\n' + ''.join('  k%d: 1\n' % i for i in range(60000)) + '  k7: 2')" >"$TEST_TMP/dup.yaml"
mkdir -p "$TEST_TMP/fifo"
mkfifo "$TEST_TMP/fifo/2016.h5" "$TEST_TMP/fifo.yaml" "$TEST_TMP/fifo/means.h5"
deep=$(printf '[%.0s' $(seq 100))
while IFS='|' read -r args code message; do
  [ -n "$args" ] || continue
  out=$(env -u PMIX_NAMESPACE timeout 60 $train $args 2>&1 >/dev/null)
  rc=$?
  expect_rc "$args" $rc "$code"
  [ $rc = 124 ] && fail "$args: still running after 60 s"
  expect_eq "$args" "$out" "dlpar-train: $message"
done <<EOF2
--config=base $TEST_TMP/deep.yaml|1|$TEST_TMP/deep.yaml:2: nesting deeper than 64 levels (a config is a few levels deep: flatten it)
--config=base $TEST_TMP/selfmerge.yaml|1|$TEST_TMP/selfmerge.yaml:2: alias *b is inside its own anchor (a node cannot contain itself: copy the part you need)
--config=base $TEST_TMP/dup.yaml|1|$TEST_TMP/dup.yaml:60002: duplicate key 'k7' (each key once per mapping)
--config=base $TEST_TMP/fifo.yaml|1|$TEST_TMP/fifo.yaml: a FIFO, not a regular file (put the file itself there)
--config=test $yaml $ok --img_size=$deep|1|--img_size:1: nesting deeper than 64 levels (a config is a few levels deep: flatten it)
--config=test $yaml $ok --train_data_path=$TEST_TMP/fifo|1|$TEST_TMP/fifo/2016.h5: a FIFO, not a regular file (put the file itself there)
--config=test $yaml $ok --global_means_path=$TEST_TMP/fifo/means.h5|1|$TEST_TMP/fifo/means.h5: a FIFO, not a regular file (put the file itself there)
--config=test $yaml $ok --embed_dim=1073741824|1|command line: embed_dim makes tensors beyond 32-bit sizes (img_size=[16, 32], patch_size=4, embed_dim=1073741824, depth=2, 4 samples per rank: lower it)
EOF2
out=$(env -u PMIX_NAMESPACE $train --config=test $yaml $ok '--lr="fast\nslow"' 2>&1 >/dev/null)
expect_eq "a value with a newline" "$out" "dlpar-train: command line: lr: expected a number, got 'fast\nslow'"

# checkpoints are checked, not trusted: one written by a short run, then edited
out=$(env -u PMIX_NAMESPACE $train --config=test $yaml $ok --num_iters=12 --stop_after_iters=4 --run=good 2>&1)
expect_rc "a run to checkpoint" $? 0
runs=$TEST_TMP/runs/test/1x1
# edit NAME PYTHON: a copy of the checkpoint as run NAME, edited by PYTHON on f (h5py.File)
edit() {
  mkdir -p "$runs/$1" && cp "$runs/good/checkpoint.h5" "$runs/$1/" &&
  /usr/bin/python3 -c "import h5py, numpy as np; f = h5py.File('$runs/$1/checkpoint.h5', 'r+'); $2"
}
edit negative "f.attrs['step'] = np.int64(-5)"
edit huge "f.attrs['step'] = np.int64(1 << 62)"
edit array "del f.attrs['step']; f.attrs['step'] = np.arange(3, dtype=np.int64)"
edit nan "f['params/pos_embed'][0, 3, 1] = np.nan"
edit later "f.attrs['step'] = np.int64(24); f.attrs['epoch'] = np.int64(2); f.attrs['step_in_epoch'] = np.int64(0)"
cp -r "$runs/good" "$runs/fewer"
while IFS='|' read -r args message; do
  [ -n "$args" ] || continue
  out=$(env -u PMIX_NAMESPACE timeout 60 $train --config=test $yaml $ok --resume $args 2>&1 >/dev/null)
  expect_rc "--resume $args" $? 1
  expect_contains "--resume $args" "$out" "$message"
  expect_eq "--resume $args: one line" "$(wc -l <<<"$out")" 1
done <<EOF2
--run=negative|--resume: $runs/negative/checkpoint.h5: negative position (step -5, epoch 0, step 4 in it; not written by dlpar-train, or damaged: resume from another checkpoint or start without --resume)
--run=huge|--resume: $runs/huge/checkpoint.h5: step 4611686018427387904 (epoch 0, step 4 in it) does not fit
--run=array|--resume: $runs/array/checkpoint.h5: attribute 'step' is not one whole number
--run=nan|--resume: $runs/nan/checkpoint.h5: pos_embed[97] is nan (a diverged run's checkpoint: resume from an earlier one)
--run=fewer --limit_nsamples=8|--resume: $runs/fewer/checkpoint.h5: step 4 (epoch 0, step 4 in it) does not fit 2 steps per epoch (were limit_nsamples, global_batch_size or the data changed? resume with the checkpoint's)
--run=later --num_iters=12|--resume: $runs/later/checkpoint.h5: written at step 24, past this run's 12 steps (raise num_iters or num_epochs to train on)
EOF2
out=$(env -u PMIX_NAMESPACE $train --config=test $yaml $ok --resume --run=good --num_iters=12 2>&1)
expect_rc "the unedited checkpoint resumes" $? 0
expect_contains "the unedited checkpoint resumes" "$out" "resumed from $runs/good/checkpoint.h5 at step 4"

# the grid: tensor parallelism needs heads to split, data parallelism the batch
out=$("$B/tools/dlpar-run" -n 3 --dl-parallel=3x1 -- $train --config=test $yaml $ok 2>&1)
expect_rc "3x1" $? 1
expect_contains "3x1" "$out" "dlpar-train: $yaml:"
expect_contains "3x1" "$out" ": num_heads=4 cannot be split over 3 tensor-parallel ranks (use --dl-parallel=MxD with M dividing 4)"
# every rank finds it; rank 0 alone reports it and ends the job, the others wait for that and leave silently
expect_eq "3x1: one line from the trainer" "$(grep -c '^dlpar-train:' <<<"$out")" 1
expect_eq "3x1: rank 0 ends the job" "$(grep '^dlpar-run: rank' <<<"$out")" "dlpar-run: rank 0 called PMIx_Abort(1): ending the job"
# a rank that found an error rank 0 did not (here rank 1's own --lr) reports it itself after 10 s
out=$("$B/tools/dlpar-run" -n 2 --dl-parallel=1x2 -- bash -c \
  '[ "$PMIX_RANK" = 0 ] || bad=--lr=abc; exec "$@" $bad' - $train --config=test $yaml $ok --num_iters=100000 2>&1)
expect_rc "rank 1 alone" $? 1
expect_contains "rank 1 alone" "$out" "dlpar-train: command line: lr: expected a number, got 'abc'"
expect_contains "rank 1 alone" "$out" "dlpar-run: rank 1 called PMIx_Abort(1): ending the job"
out=$("$B/tools/dlpar-run" -n 3 --dl-parallel=1x3 -- $train --config=test $yaml $ok 2>&1)
expect_rc "1x3" $? 1
expect_contains "1x3" "$out" ": global_batch_size=4 cannot be split over 3 data-parallel ranks (use a multiple of 3, or another grid)"
finish
