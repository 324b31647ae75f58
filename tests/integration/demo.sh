#!/bin/bash
# tests/integration/demo.sh: the README's main job (make demo): a real 2x2
# training with dlpar-run on a generated dataset, whose loss falls.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
out=$(OMP_NUM_THREADS=1 "$DLPAR_SRCDIR/contrib/demo" "$B" "$TEST_TMP/demo" 2>&1)
expect_rc "contrib/demo" $? 0
expect_contains "demo" "$out" "dlpar-train: grid 2x2 (tensor x data parallel)"
expect_contains "demo" "$out" "demo: average train loss fell from"
finish
