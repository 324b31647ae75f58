# tests/lib/common.sh: sourced by the shell tests. Assertions that print
# what failed and count it, SKIP (exit 77) with a reason, and the shared
# Slurm test bed (started once per `make check`, stopped when it ends).
# Environment (set by tests/local.mk): DLPAR_SRCDIR, DLPAR_BUILDDIR,
# DLPAR_CHECK_OWNER (the make process that owns the bed).
set -u
: "${DLPAR_SRCDIR:?run through make check}" "${DLPAR_BUILDDIR:?run through make check}"
TEST_NAME=$(basename "$0")
TEST_FAILURES=0
TEST_CHECKS=0
TEST_TMP=$(mktemp -d "$DLPAR_BUILDDIR/tests/tmp.$TEST_NAME.XXXXXX")
trap 'rm -rf "$TEST_TMP"' EXIT

fail() { TEST_FAILURES=$((TEST_FAILURES + 1)); echo "FAILED: $*" >&2; }
skip() { echo "SKIP: $*"; exit 77; }

# expect_eq WHAT GOT WANT
expect_eq() {
  TEST_CHECKS=$((TEST_CHECKS + 1))
  [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
}

# expect_contains WHAT TEXT NEEDLE
expect_contains() {
  TEST_CHECKS=$((TEST_CHECKS + 1))
  case $2 in *"$3"*) ;; *) fail "$1: expected to contain '$3', got: $2" ;; esac
}

# expect_rc WHAT GOT-RC WANT ('nonzero' for any failure)
expect_rc() {
  TEST_CHECKS=$((TEST_CHECKS + 1))
  if [ "$3" = nonzero ]; then [ "$2" != 0 ] || fail "$1: exit 0, expected a failure"
  else [ "$2" = "$3" ] || fail "$1: exit $2, expected $3"; fi
}

finish() {
  echo "$TEST_NAME: $TEST_CHECKS checks, $TEST_FAILURES failed"
  [ "$TEST_FAILURES" = 0 ]
  exit $?
}

# The shared bed: 2 emulated nodes, the freshly built plugin (required), the
# bed's synthetic topology (2 sockets x 1 core, 2 GPUs + 1 HCA each).
use_bed() {
  local out rc
  out=$("$DLPAR_SRCDIR/tests/testbed/dlpar-bed" ensure --state "$DLPAR_BUILDDIR/tests/.bed" \
        --owner "${DLPAR_CHECK_OWNER:-$PPID}" \
        --plugin "$DLPAR_BUILDDIR/spank/.libs/spank_dlpar.so" \
        --plugin-args "topology_xml=$DLPAR_SRCDIR/tests/topo/bed-node.xml" \
        --share "$DLPAR_BUILDDIR" --share "$DLPAR_SRCDIR" 2>"$TEST_TMP/bed.err")
  rc=$?
  [ $rc = 77 ] && skip "$(cat "$TEST_TMP/bed.err")"
  [ $rc = 0 ] || { cat "$TEST_TMP/bed.err" >&2; echo "FAILED: the Slurm test bed did not start" >&2; exit 99; }
  eval "$out"
  export SLURM_CONF
}

# Grid membership as dlpar-hello prints it: tp_members M R, dp_members M D R
tp_members() {
  local m=$1 r=$2 first i out=
  first=$(( r / m * m ))
  for ((i = first; i < first + m; i++)); do out="$out${out:+,}$i"; done
  echo "[$out]"
}
dp_members() {
  local m=$1 d=$2 r=$3 i out=
  for ((i = 0; i < d; i++)); do out="$out${out:+,}$(( r % m + i * m ))"; done
  echo "[$out]"
}

# elapsed_since START (from `date +%s.%N`) in whole seconds, rounded up
elapsed_since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { d = e - s; printf "%d", (d == int(d)) ? d : int(d) + 1 }'; }

B=$DLPAR_BUILDDIR
