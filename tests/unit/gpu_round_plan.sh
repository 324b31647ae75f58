#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/gpu_round_plan.sh: bench/gpu-round without a GPU (a stand-in
# nvidia-smi that fails, named so, first on PATH, so this holds on a GPU
# machine too): exit 77, every step of the round listed with its phase and
# timeout, and the plan within one device call of 9 minutes (540 s): phase
# A's steps side by side, then B's one by one. An unknown step is refused.
. "$DLPAR_SRCDIR/tests/lib/common.sh"

mkdir "$TEST_TMP/bin"
printf '#!/bin/sh\necho "nvidia-smi stand-in: no GPU" >&2\nexit 9\n' >"$TEST_TMP/bin/nvidia-smi"
chmod +x "$TEST_TMP/bin/nvidia-smi"
round() { PATH=$TEST_TMP/bin:$PATH bash "$DLPAR_SRCDIR/bench/gpu-round" "$DLPAR_BUILDDIR" "$TEST_TMP/report" 2>&1; }

out=$(round)
expect_rc "gpu-round without a GPU" $? 77
for step in "check-gpu (phase A" "sanitize (phase A" "python (phase A" "attention (phase B" "ncu (phase B" \
            "bench (phase B" "loader (phase B"; do
  expect_contains "the plan lists $step" "$out" "  $step"
done
total=$(sed -n 's/.*at most \([0-9]*\) s in all.*/\1/p' <<<"$out")
TEST_CHECKS=$((TEST_CHECKS + 1))
if [ -n "$total" ] && [ "$total" -le 540 ]; then
  pass "the round's plan, $total s, fits one device call of 9 minutes"
else
  fail "the round's plan: '$total' s, expected at most 540 (one device call of 9 minutes): $out"
fi
# check-gpu's own bound: make check-gpu within 4 minutes
bound=$(sed -n 's/.*check-gpu (phase A, \([0-9]*\) s).*/\1/p' <<<"$out")
TEST_CHECKS=$((TEST_CHECKS + 1))
[ -n "$bound" ] && [ "$bound" -le 240 ] && pass "check-gpu's bound, $bound s, within 4 minutes" ||
  fail "check-gpu's bound: '$bound' s, expected at most 240"
out=$(STEPS="check-gpu nonsense" round)
expect_rc "an unknown step" $? 2
expect_contains "an unknown step" "$out" "gpu-round: no step 'nonsense'"
expect_eq "nothing written without a GPU" "$(ls "$TEST_TMP/report" 2>/dev/null | wc -l)" 0
finish
