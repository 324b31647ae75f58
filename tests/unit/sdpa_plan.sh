#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/sdpa_plan.sh: runs test_sdpa_plan (the cuDNN attention's plans
# for an H100, compiled without a GPU) with CUDA's libcuda stub as the
# driver: a directory holding libcuda.so.1 -> stubs/libcuda.so, first on
# LD_LIBRARY_PATH. SKIP where dlpar was built without cuDNN or the stub is
# missing.
. "$DLPAR_SRCDIR/tests/lib/common.sh"

prog=$DLPAR_BUILDDIR/tests/unit/test_sdpa_plan
[ -x "$prog" ] || skip "built without cuDNN (configure found no cuDNN >= 9.13.1): no cuDNN attention to check"
cudnn=$(ldd "$prog" | awk '/libcudnn\.so/ { print $3; exit }')
[ -n "$cudnn" ] || skip "test_sdpa_plan finds no libcudnn.so at run time (ldd $prog)"
stub=$(dirname "$cudnn")/stubs/libcuda.so
[ -e "$stub" ] || skip "no libcuda stub at $stub (the CUDA toolkit's lib/stubs): cuDNN cannot compile plans without a driver"
mkdir "$TEST_TMP/driver"
ln -s "$stub" "$TEST_TMP/driver/libcuda.so.1"

LD_LIBRARY_PATH=$TEST_TMP/driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$prog" >"$TEST_TMP/out" 2>&1
rc=$?
cat "$TEST_TMP/out"
expect_rc "test_sdpa_plan" "$rc" 0
expect_contains "the base shape's backward" "$(cat "$TEST_TMP/out")" "S 4050 D 48 bf16 backward"
expect_contains "the base shape's deterministic backward" "$(cat "$TEST_TMP/out")" "S 4050 D 48 bf16 deterministic backward"
finish
