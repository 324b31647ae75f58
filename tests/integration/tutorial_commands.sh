#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/tutorial_commands.sh: the SC23/SC24 tutorials' README
# commands (the train.py / train_mp.py arguments their submit_pm*.sh pass
# on), typed unchanged at dlpar-train, from a directory holding the
# tutorials' verbatim config/ViT.yaml (etc/tutorial), shrunk for CI by
# overrides only ($shrink: img_size, embed_dim, depth, the data and log
# directories; the data-parallel ones also --local_batch_size, --num_epochs).
# Checked: they run; whole epochs as train.py counts them (num_iters //
# steps per epoch, or --num_epochs) and its LR schedule; each PyTorch-only
# flag answered by its one line; the step-0 losses and the tutorial's tags;
# --run_num's directory; --local_batch_size and --row_parallel_size /
# --tensor_parallel against the grid; what dlpar cannot run (context
# parallelism) refused with one line.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
make_data --channels=20
export OMP_NUM_THREADS=1
train=$B/trainer/dlpar-train
shrink="--img_size=[16,32] --embed_dim=32 --depth=1 --data=$TEST_TMP/data --expdir=$TEST_TMP/runs"
for sc in sc23 sc24; do
  mkdir -p "$TEST_TMP/$sc/config" && cp "$DLPAR_SRCDIR/etc/tutorial/$sc/ViT.yaml" "$TEST_TMP/$sc/config/" || exit 99
done
# one SC ARGS...: train.py's command line on one rank, in the tutorial's directory
one() { local sc=$1; shift; (cd "$TEST_TMP/$sc" && env -u PMIX_NAMESPACE "$train" --yaml_config=./config/ViT.yaml "$@" $shrink 2>&1); }
# ranks SC GRID ARGS...: the same under dlpar-run on an MxD grid
ranks() {
  local sc=$1 grid=$2; shift 2
  (cd "$TEST_TMP/$sc" && "$B/tools/dlpar-run" -n $(( ${grid%x*} * ${grid#*x} )) --dl-parallel=$grid -- \
     "$train" --yaml_config=./config/ViT.yaml "$@" $shrink 2>&1)
}
# epochs OUT: "EPOCHS STEPS_PER_EPOCH" from the banner
epochs() { sed -n 's/.* \([0-9]*\) epochs\{0,1\} of \([0-9]*\) steps\{0,1\} (.*/\1 \2/p' <<<"$1"; }
# note WHAT OUT TEXT: TEXT printed exactly once
note() { expect_eq "$1: once: $3" "$(grep -cF -- "$3" <<<"$2")" 1; }
# tag RUN_DIR STEP TAG: the TensorBoard value
tag() { /usr/bin/python3 "$DLPAR_SRCDIR/tests/numerics/read_tfevents.py" "$1"/logs/events.out.tfevents.* |
          awk -v s="$2" -v t="$3" '{ v = $NF; $NF = ""; sub(/ $/, "") } $1 == s && substr($0, length(s) + 2) == t { print v }'; }
# near A B: |A - B| <= 1e-6 |B| + 1e-12
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; d = d < 0 ? -d : d; m = b < 0 ? -b : b; exit !(a != "" && d <= 1e-6 * m + 1e-12) }'; }

# --- single GPU: the README's sequence (SC24; SC23's is the same) --------
flags=""
for add in "" "--num_data_workers 8" "--data_loader_config=dali" "--amp_mode=fp16" "--amp_mode=bf16" \
           "--enable_fused" "--enable_jit"; do
  case $add in --amp_mode=bf16) flags=${flags/--amp_mode=fp16/} ;; esac
  flags="$flags $add"
  out=$(one sc24 --config=short $flags --run_num "r${add//[^a-z0-9]/}")
  expect_rc "sc24 --config=short$flags" $? 0
  set -- $(epochs "$out")
  # short: num_iters 128 -> train.py's num_epochs = 128 // steps per epoch
  expect_eq "--config=short$flags: whole epochs" "$1" $(( 128 / $2 ))
  expect_contains "--config=short$flags: last epoch" "$out" "Time taken for epoch $1 is"
  expect_eq "--config=short$flags: no epoch after" "$(grep -c "Time taken for epoch $(( $1 + 1 )) " <<<"$out")" 0
  expect_contains "--config=short$flags: steps" "$out" "dlpar-train: done at step $(( $1 * $2 ))"
done
note "dali" "$out" "data_loader_config=dali: dlpar reads the HDF5 files with its own prefetching loader"
note "amp" "$out" "amp_mode applies to --device=cuda"
note "--enable_fused" "$out" "enable_fused: dlpar's Adam is always fused"
note "--enable_jit" "$out" "enable_jit: dlpar's kernels are compiled ahead of time"
run=$TEST_TMP/runs/short/1x1/r
expect_rc "--run_num r: the run's directory" "$(test -d "$run/logs"; echo $?)" 0
for t in "Loss/train" "Loss/valid" "RMSE(u10m)/valid"; do
  TEST_CHECKS=$((TEST_CHECKS + 1))
  [ -n "$(tag "$run" 0 "$t")" ] || fail "step-0 $t missing"
done
# the LR schedule over num_iters (CosineAnnealingLR's T_max), logged after the scheduler's step
last=$(( 128 / $2 * $2 ))
want=$(awk -v s=$last 'BEGIN { printf "%.9g", 5e-4 * 0.5 * (1 + cos(3.141592653589793 * s / 128)) }')
TEST_CHECKS=$((TEST_CHECKS + 1))
near "$(tag "$run" $last "Learning Rate")" "$want" || fail "Learning Rate at step $last: $(tag "$run" $last "Learning Rate"), want $want"

# --- SC22's --num_epochs command, the schedule over its steps ------------
out=$(one sc23 --config=short --num_epochs 4 --num_data_workers 8 --amp_mode=fp16 --enable_apex --enable_jit \
        --run_num=e4)
expect_rc "SC22's --num_epochs command" $? 0
set -- $(epochs "$out")
expect_eq "--num_epochs 4" "$1" 4
expect_contains "--num_epochs 4: steps" "$out" "dlpar-train: done at step $(( 4 * $2 ))"
note "--enable_apex" "$out" "enable_apex: dlpar's Adam is already one fused pass"
run=$TEST_TMP/runs/short/1x1/e4
TEST_CHECKS=$((TEST_CHECKS + 2))
near "$(tag "$run" $(( 2 * $2 )) "Learning Rate")" 0.00025 || fail "--num_epochs 4: half-way LR $(tag "$run" $(( 2 * $2 )) "Learning Rate")"
[ "$(tag "$run" $(( 4 * $2 )) "Learning Rate")" = 0 ] || fail "--num_epochs 4: the schedule does not end at the last step"

# --- SC22's tools: benchy, the manual profiling window -----------------
out=$(one sc23 --config=short --enable_benchy --run_num=b)
expect_rc "--enable_benchy" $? 0
expect_contains "--enable_benchy" "$out" "benchy: 100 steps of 16 samples"
out=$(one sc23 --config=short --num_epochs 1 --enable_manual_profiling --run_num=p1)
expect_rc "--enable_manual_profiling, 1 epoch" $? 0
set -- $(epochs "$out")
note "--enable_manual_profiling, 1 epoch" "$out" "the tutorial profiles epoch 4 (steps $(( 3 * $2 ))-$(( 4 * $2 - 1 ))) and this run trains 1 epoch: nothing is profiled"
# (5 epochs, the profiler window over epoch 4: tutorial_profiler.sh)

# --- data parallel: sbatch -N 1 submit_pm_dp.sh --config=bs64_opt (4 GPUs)
# SC23's opt configs carry enable_apex; SC22's DDP flags ride along
out=$(ranks sc23 1x4 --config=bs64_opt --local_batch_size 4 --num_epochs 1 --bucket_cap_mb 100 \
        --disable_broadcast_buffers --noddp --run_num=dp)
expect_rc "bs64_opt on 1x4" $? 0
expect_contains "--local_batch_size 4 on 4 ranks" "$out" "global batch 16 (4 per rank)"
note "bs64_opt's enable_apex" "$out" "enable_apex: dlpar's Adam"
note "--disable_broadcast_buffers" "$out" "disable_broadcast_buffers: dlpar's ViT has no buffers"
note "--noddp" "$out" "noddp: dlpar always all-reduces"

# --- model parallel: SC23's --row_parallel_size, SC24's --tensor_parallel -
out=$(ranks sc23 1x4 --config=mp --row_parallel_size=1 --local_batch_size 4 --num_epochs 1 --run_num=mp1)
expect_rc "sc23 mp --row_parallel_size=1 on 1x4" $? 0
out=$(ranks sc23 4x1 --config=mp --row_parallel_size=4 --local_batch_size 4 --num_epochs 1 --run_num=mp4)
expect_rc "sc23 mp --row_parallel_size=4 on 4x1" $? 0
expect_contains "--row_parallel_size=4" "$out" "dlpar-train: grid 4x1"
out=$(ranks sc24 4x1 --config=mp --tensor_parallel=4 --local_batch_size 4 --num_epochs 1 --run_num=tp4)
expect_rc "sc24 mp --tensor_parallel=4 on 4x1" $? 0
out=$(ranks sc23 2x2 --config=mp --row_parallel_size=4 --run_num=bad)
expect_rc "--row_parallel_size=4 on a 2x2 grid" $? 1
expect_eq "--row_parallel_size=4 on 2x2: one line" \
  "$(grep -c "row_parallel_size=4, but the grid has 2 tensor-parallel rank(s) (launch with --dl-parallel=4xD" <<<"$out")" 1
out=$(ranks sc24 1x4 --config=mp --tensor_parallel=1 --context_parallel=4 --parallel_order=cp-tp-dp --run_num=cp)
expect_rc "--context_parallel=4" $? 1
expect_eq "--context_parallel=4: one line" "$(grep -c "context_parallel=4: dlpar-train has no context parallelism" <<<"$out")" 1
finish
