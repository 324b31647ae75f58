#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/bounds.sh: tests/lib/bounded, the harness's LOG_COMPILER that
# gives each GPU test its own time bound and every other test the default:
#  - a test past its bound (1 s around a 30 s sleep) is ended, with the
#    wrapper's line naming it and its bound, and exit 1: a FAIL, not a SKIP;
#  - one that ignores SIGTERM is killed 5 s later, with the same line;
#  - within its bound, its output and exit status pass through (3; 77
#    stays a SKIP), and a GPU test runs with DLPAR_SIGNALS=keep;
#  - a test without a bound of its own runs under the default bound with
#    its environment as it is (no DLPAR_SIGNALS), and is ended past it
#    with a line naming the default; with no default it runs as it is;
#    .sh tests go through SH_LOG_COMPILER's `bash` the same way.
# tests/unit/gpu_bound.sh checks this build's GPU bounds.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
bounded=$DLPAR_SRCDIR/tests/lib/bounded
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
expect_rc "no bound at all: its exit status" $? 3
expect_eq "no bound at all: run as it is" "$out" "signals: unset"

out=$(bash "$bounded" sleeper=60 default=60 -- "$TEST_TMP/quick" 2>/dev/null)
expect_rc "under the default bound: its exit status" $? 3
expect_eq "under the default bound: its environment as it is" "$out" "signals: unset"
out=$(bash "$bounded" quick=60 default=1 -- "$TEST_TMP/sleeper" 2>&1)
expect_rc "past the default bound: a FAIL" $? 1
expect_contains "past the default bound: the wrapper's line" "$out" "FAILED: sleeper: still running after the default bound of 1 s"

finish
