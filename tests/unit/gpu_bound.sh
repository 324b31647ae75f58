#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/gpu_bound.sh: tests/gpu/bounded, the harness's LOG_COMPILER
# that gives each GPU test its own time bound:
#  - a test past its bound (1 s around a 30 s sleep) is ended, with the
#    wrapper's line naming it and its bound, and exit 1: a FAIL, not a SKIP;
#  - one that ignores SIGTERM is killed 5 s later, with the same line;
#  - within its bound, its output and exit status pass through (3; 77
#    stays a SKIP), and it runs with DLPAR_SIGNALS=keep;
#  - a test without a bound runs as it is (no DLPAR_SIGNALS); .sh tests
#    through SH_LOG_COMPILER's `bash` the same way;
#  - this build's bounds: every GPU test has one, no other test does, and
#    together, 4 at a time, they stay within the 4 minutes make -j4 check-gpu is promised
#    (a test that ignores SIGTERM adds 5 s; DLPAR_SIGNALS=keep keeps
#    libdlpar's programs from doing so).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
bounded=$DLPAR_SRCDIR/tests/gpu/bounded
unset DLPAR_SIGNALS
printf '#!/bin/bash\nsleep 30\n' >"$TEST_TMP/sleeper"
printf '#!/bin/bash\ntrap "" TERM\nsleep 30\n' >"$TEST_TMP/stubborn"
printf '#!/bin/bash\necho "signals: ${DLPAR_SIGNALS:-unset}"\nexit ${1:-3}\n' >"$TEST_TMP/quick"
chmod +x "$TEST_TMP/sleeper" "$TEST_TMP/stubborn" "$TEST_TMP/quick"

out=$(bash "$bounded" other=60 sleeper=1 -- "$TEST_TMP/sleeper" 2>&1)
expect_rc "past its bound: a FAIL" $? 1
expect_contains "past its bound: the wrapper's line" "$out" "FAILED: sleeper: still running after its bound of 1 s"

out=$(bash "$bounded" stubborn=1 -- "$TEST_TMP/stubborn" 2>&1)
expect_rc "ignoring SIGTERM: killed, a FAIL" $? 1
expect_contains "ignoring SIGTERM: the wrapper's line" "$out" "FAILED: stubborn: still running after its bound of 1 s"

out=$(bash "$bounded" quick=60 -- "$TEST_TMP/quick")
expect_rc "within its bound: its exit status" $? 3
expect_eq "within its bound: its output, DLPAR_SIGNALS=keep" "$out" "signals: keep"
bash "$bounded" quick=60 -- bash "$TEST_TMP/quick" 77 >/dev/null
expect_rc "within its bound, through bash (SH_LOG_COMPILER): a SKIP stays a SKIP" $? 77

out=$(bash "$bounded" sleeper=1 -- "$TEST_TMP/quick")
expect_rc "no bound of its own: its exit status" $? 3
expect_eq "no bound of its own: run as it is" "$out" "signals: unset"

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
