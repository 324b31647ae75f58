#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/gpu/train_gpu.sh: whole dlpar-train --device=cuda runs, one GPU, the
# real loader threads reading generated HDF5 files:
#  - bf16 at the `medium` shape (512 tokens, head 32): cuDNN's attention
#    chosen (the start-up line), every epoch's validation finite, the loss
#    falling; fp16 the same;
#  - strict fp32 (TF32 off): every step's loss and every epoch's validation
#    loss and RMSE within 1e-4 of the CPU run's (24 Adam steps carry the
#    rounding forward; test_fp32_gpu holds one step to 1e-5); with
#    cuda_graph: true the same losses as eager within 1e-6;
#  - a checkpoint written on the GPU and --resume: the uninterrupted run's
#    losses bit for bit in fp32 (dlpar's tensor-core attention), in bf16
#    with attention: reference and in bf16 with deterministic: true (cuDNN's
#    deterministic plans, or the reference kernels where it has none: the
#    start-up line says which); with cuDNN's default attention, whose
#    backward is not bit-reproducible run to run (as PyTorch says of it),
#    within 2e-2;
#  - the tutorial's mp (embed 1024, head 128, 4050 tokens) and mp_patch4
#    (16200 tokens) shapes end to end at depth 2, cuDNN's attention chosen;
#  - the base model at its full depth (12 blocks, 4050 tokens), batch 2, 48
#    steps (6 epochs of 8): bf16's losses track fp32's, every 10-step mean
#    within 2e-2
#    (bf16 keeps the residual stream and its gradient in fp32).
# (Built without cuDNN, the reference attention is expected instead.)
# Skips without a GPU.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
# skips exactly when the C GPU tests do (what the CUDA runtime sees)
reason=$("$B/tests/gpu/gpu_usable")
[ $? = 77 ] && skip "${reason#SKIP: }"
make_data --height=64 --width=128
# the attention a 16-bit run chooses: cuDNN's where the build has it
grep -q '^#define HAVE_CUDNN 1' "$B/config.h" && attention="attention: cuDNN" || attention="attention: reference kernels"

# train DEVICE NAME ARGS: the medium config, 4 epochs of 6 steps, into runs/medium/1x1/NAME
train() {
  local device=$1 name=$2
  shift 2
  "$B/trainer/dlpar-train" --config=medium "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) --num_iters=24 \
    --device="$device" --run="$name" "$@" 2>&1
}
metrics() { echo "$TEST_TMP/runs/${2:-medium}/1x1/$1/metrics.jsonl"; }
losses() { step_losses "$(metrics "$@")" | sort -n | uniq; }
# epoch_values NAME KEY [CONFIG]: "epoch value" per epoch line
epoch_values() { sed -n "s/^{\"epoch\": \([0-9]*\),.*\"$2\": \([^,}]*\).*/\1 \2/p" "$(metrics "$1" "${3:-medium}")"; }
# all_finite TEXT [COUNT]: every second field a finite number (and COUNT lines)
all_finite() {
  awk -v want="${2:-}" 'NF < 2 || $2 !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ { bad = 1 }
                        END { exit bad || NR == 0 || (want != "" && NR != want) }' <<<"$1"
}
# expect_below WHAT "VALUE COUNT" BOUND COUNT
expect_below() {
  TEST_CHECKS=$((TEST_CHECKS + 1))
  read -r value count <<<"$2"
  awk -v v="$value" -v b="$3" 'BEGIN { exit !(v < b) }' && [ "$count" = "$4" ] ||
    fail "$1: largest relative difference $value over $count values (expected < $3 over $4)"
}
# expect_falls WHAT NAME: the last step's loss below the first's
expect_falls() {
  local l
  l=$(losses "$2")
  TEST_CHECKS=$((TEST_CHECKS + 1))
  awk 'NR == 1 { first = $2 } { last = $2 } END { exit !(last < first) }' <<<"$l" ||
    fail "$1: the loss did not fall: $(head -n 1 <<<"$l" | cut -d' ' -f2) -> $(tail -n 1 <<<"$l" | cut -d' ' -f2)"
}

for amp in bf16 fp16; do
  out=$(train cuda $amp --amp_mode=$amp)
  expect_rc "$amp run" $? 0
  expect_contains "$amp: the attention" "$out" "$attention"
  expect_contains "$amp: done" "$out" "done at step 24"
  expect_eq "$amp: finite validation losses of 4 epochs" "$(all_finite "$(epoch_values $amp val_loss)" 4 && echo yes)" yes
  expect_eq "$amp: finite validation RMSEs of 4 epochs" "$(all_finite "$(epoch_values $amp val_rmse_u10m)" 4 && echo yes)" yes
  expect_falls "$amp" $amp
done

fp32=(--amp_mode=none --tf32=false)
out=$(train cuda fp32 "${fp32[@]}")
expect_rc "fp32 run" $? 0
expect_contains "fp32: strict fp32" "$out" "fp32 activations"
out=$(OMP_NUM_THREADS=$(nproc) train cpu cpu "${fp32[@]}")
expect_rc "fp32 CPU run" $? 0
expect_below "fp32 GPU vs CPU: step losses" "$(max_rel "$(losses fp32)" "$(losses cpu)")" 1e-4 24
for key in val_loss val_rmse_u10m; do
  expect_below "fp32 GPU vs CPU: $key" "$(max_rel "$(epoch_values fp32 $key)" "$(epoch_values cpu $key)")" 1e-4 4
done
out=$(train cuda fp32graph "${fp32[@]}" --cuda_graph=true)
expect_rc "fp32 with cuda_graph" $? 0
expect_contains "fp32: graphs on" "$out" "CUDA graphs: on"
expect_below "fp32 graphs vs eager: step losses" "$(max_rel "$(losses fp32graph)" "$(losses fp32)")" 1e-6 24

# resume NAME ARGS: the run NAME stopped after 10 steps, then resumed
resume() {
  local name=$1
  shift
  out=$(train cuda "$name" --stop_after_iters=10 "$@")
  expect_rc "$name: first 10 steps" $? 0
  out=$(train cuda "$name" --resume "$@")
  expect_rc "$name: resumed" $? 0
  expect_contains "$name: resumed" "$out" "resumed from"
}
resume fp32split "${fp32[@]}"
expect_eq "fp32: resumed losses bit for bit" "$(losses fp32split)" "$(losses fp32)"
out=$(train cuda bf16ref --amp_mode=bf16 --attention=reference)
expect_rc "bf16 with the reference attention" $? 0
resume bf16refsplit --amp_mode=bf16 --attention=reference
expect_eq "bf16, reference attention: resumed losses bit for bit" "$(losses bf16refsplit)" "$(losses bf16ref)"
out=$(train cuda bf16det --amp_mode=bf16 --deterministic=true)
expect_rc "bf16, deterministic: true" $? 0
expect_contains "bf16, deterministic: true: the start-up line" "$out" ", deterministic"
grep -o 'attention: [^,]*' <<<"$out" | head -n 1 | sed 's/^/bf16, deterministic: true: /'
resume bf16detsplit --amp_mode=bf16 --deterministic=true
expect_eq "bf16, deterministic: true: resumed losses bit for bit" "$(losses bf16detsplit)" "$(losses bf16det)"
resume bf16split --amp_mode=bf16
expect_below "bf16, cuDNN: resumed losses" "$(max_rel "$(losses bf16split)" "$(losses bf16)")" 2e-2 24
[ "$(losses bf16split)" = "$(losses bf16)" ] && echo "bf16, cuDNN: the resumed run's losses are bit for bit" ||
  echo "bf16, cuDNN: the resumed run's losses differ in their last bits (cuDNN's backward is not deterministic)"

# the tutorial's shapes, 20 channels of 360 x 720: model-parallel ones at depth 2, base at depth 12
"$B/trainer/dlpar-gen-data" --dir="$TEST_TMP/big" --channels=20 --height=360 --width=720 --steps=16 --years=1 \
  >/dev/null || { echo "FAILED: dlpar-gen-data" >&2; exit 99; }
# big CONFIG RUN ARGS: a run on the 360 x 720 data, batch 2
big() {
  local config=$1 name=$2 d=$TEST_TMP/big
  shift 2
  "$B/trainer/dlpar-train" --config=$config "$DLPAR_SRCDIR/etc/vit.yaml" --train_data_path=$d/train \
    --valid_data_path=$d/valid --global_means_path=$d/stats/global_means.npy \
    --global_stds_path=$d/stats/global_stds.npy --expdir="$TEST_TMP/runs" --device=cuda --global_batch_size=2 \
    --run=$name "$@" 2>&1
}
for config in mp mp_patch4; do
  out=$(big $config $config --depth=2 --num_iters=8)
  expect_rc "$config run" $? 0
  expect_contains "$config: the attention" "$out" "$attention"
  expect_eq "$config: finite losses" "$(all_finite "$(losses $config $config)" && echo yes)" yes
  expect_eq "$config: finite validation" "$(all_finite "$(epoch_values $config val_loss $config)" && echo yes)" yes
done
# window_means NAME: "window mean" over 10-step windows of the base run NAME
window_means() {
  losses "$1" base | awk '{ w = int(($1 - 1) / 10); s[w] += $2; n[w]++ } END { for (w in s) print w, s[w] / n[w] }'
}
out=$(big base fp32 --amp_mode=none --num_iters=48)
expect_rc "base fp32, 48 steps" $? 0
out=$(big base bf16 --amp_mode=bf16 --num_iters=48)
expect_rc "base bf16, 48 steps" $? 0
expect_below "base, bf16 vs fp32: 10-step mean losses" "$(max_rel "$(window_means bf16)" "$(window_means fp32)")" 2e-2 5
finish
