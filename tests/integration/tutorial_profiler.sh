#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/tutorial_profiler.sh: SC22's manual profiling window,
# the tutorial's command as tutorial_commands.sh types it (from a directory
# holding the SC23 tutorial's verbatim config/ViT.yaml, shrunk by overrides
# only) for 5 epochs: rank 0 profiles epoch 4 (index 3) as train.py does,
# seen through tests/lib's NVTX tool that records the ranges (nsys's way
# in, without nsys): the window opened and closed once over that epoch's
# steps, a step range for every step, pushes and pops paired. SKIPs in a
# build without CUDA (no NVTX tool built).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
nvtx=$B/tests/lib/.libs/libnvtx_record.so
[ -e "$nvtx" ] || skip "no NVTX tool in this build ($nvtx: it is built with CUDA)"
make_data --channels=20
export OMP_NUM_THREADS=1
mkdir -p "$TEST_TMP/sc23/config" && cp "$DLPAR_SRCDIR/etc/tutorial/sc23/ViT.yaml" "$TEST_TMP/sc23/config/" || exit 99
out=$(cd "$TEST_TMP/sc23" && NVTX_INJECTION64_PATH=$nvtx DLPAR_NVTX_RECORD=$TEST_TMP/nvtx env -u PMIX_NAMESPACE \
      "$B/trainer/dlpar-train" --yaml_config=./config/ViT.yaml --config=short --num_epochs 5 --enable_manual_profiling \
      --run_num=p5 --img_size=[16,32] --embed_dim=32 --depth=1 --data=$TEST_TMP/data --expdir=$TEST_TMP/runs 2>&1)
expect_rc "--enable_manual_profiling, 5 epochs" $? 0
# steps per epoch, from the banner's "E epochs of S steps (...)"
spe=$(sed -n 's/.* [0-9]* epochs\{0,1\} of \([0-9]*\) steps\{0,1\} (.*/\1/p' <<<"$out")
expect_eq "--enable_manual_profiling, 5 epochs: once: rank 0 profiles epoch 4" \
  "$(grep -cF "rank 0 profiles epoch 4 (steps $(( 3 * spe ))-$(( 4 * spe - 1 ))) as the tutorial does" <<<"$out")" 1
expect_eq "profiler window opened once" "$(grep -c '^start ' "$TEST_TMP/nvtx")" 1
expect_eq "profiler window's range" "$(grep '^start ' "$TEST_TMP/nvtx")" "start profiled steps $(( 3 * spe ))-$(( 4 * spe - 1 ))"
expect_eq "profiler window closed once" "$(grep -c '^end$' "$TEST_TMP/nvtx")" 1
# steps inside the window: the 'push step' lines between start and end
expect_eq "steps profiled" "$(sed -n '/^start /,/^end$/p' "$TEST_TMP/nvtx" | grep -c '^push step$')" "$spe"
expect_eq "NVTX step ranges, every step" "$(grep -c '^push step$' "$TEST_TMP/nvtx")" $(( 5 * spe ))
expect_eq "pushes and pops pair up" "$(grep -c '^push ' "$TEST_TMP/nvtx")" "$(grep -c '^pop$' "$TEST_TMP/nvtx")"
finish
