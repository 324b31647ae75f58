#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/gpu_bound.sh: this build's GPU test bounds (GPU_TEST_BOUNDS in
# tests/trainer.mk, applied by tests/lib/bounded, which tests/unit/bounds.sh
# checks): every GPU test has one, no other test does, and together, 4 at a
# time, they stay within the 4 minutes make -j4 check-gpu is promised (a
# test that ignores SIGTERM adds 5 s; DLPAR_SIGNALS=keep keeps libdlpar's
# programs from doing so). SKIPs in a build without CUDA (no GPU tests).
. "$DLPAR_SRCDIR/tests/lib/common.sh"

# This build's harness: the bounds in the Makefile against its GPU tests.
make_value() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$B" -f Makefile -f - value <<<"value: ; @echo \$($1)"; }
bounds=$(make_value GPU_TEST_BOUNDS)
gpu_tests=$(make_value GPU_TESTS; make_value GPU_RUN_TESTS)
[ -n "$gpu_tests" ] || skip "this build has no GPU tests (configured without CUDA)"
expect_eq "every GPU test has a bound, no other test has one" \
  "$(for t in $bounds; do echo "${t%%=*}"; done | sort | tr '\n' ' ')" \
  "$(for t in $gpu_tests; do basename "$t"; done | sort | tr '\n' ' ')"
# make -j4 check-gpu: 4 tests at a time end within sum / 4 + 3/4 x the longest bound
total=0 longest=0
for t in $bounds; do
  total=$((total + ${t#*=}))
  [ "${t#*=}" -gt $longest ] && longest=${t#*=}
done
span=$(( (total + 3 * longest) / 4 ))
TEST_CHECKS=$((TEST_CHECKS + 1))
[ $span -le 240 ] && pass "make -j4 check-gpu ends within $span s ($total s of bounds, the longest $longest s): within 4 minutes" ||
  fail "make -j4 check-gpu could run $span s ($total s of bounds, the longest $longest s): past 4 minutes"
finish
