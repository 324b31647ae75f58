#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/spank_config_hello.sh: a node without dlpar's
# plugstack.conf line under an srun that has it (a login node whose
# plugstack.conf differs), on a 2-node bed of this test's own whose nodes'
# plugstack.conf is empty: dlpar-hello, a program of dlpar's, refuses in
# one line per rank naming the node and the fix. SKIPs in a build without
# libdlpar (no dlpar-hello), and on a Slurm without mpi/pmix (use_bed:
# srun then refuses --dl-* steps itself).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
hello=$B/tools/dlpar-hello
[ -x "$hello" ] || skip "no $hello in this build (configure builds libdlpar and its programs only where it finds PMIx)"
: >"$TEST_TMP/nodes.conf"
use_bed plugstack="$TEST_TMP/nodes.conf"
mkdir -p "$TEST_TMP/login"
sed "s|^PlugStackConfig=.*|PlugStackConfig=$TEST_TMP/login/plugstack.conf|" "$SLURM_CONF" >"$TEST_TMP/login/slurm.conf"
echo "required $B/spank/.libs/spank_dlpar.so $BED_TOPOLOGY" >"$TEST_TMP/login/plugstack.conf"

out=$(cd "$TEST_TMP" && SLURM_CONF=$TEST_TMP/login/slurm.conf srun -N2 --ntasks-per-node=1 --dl-parallel=1x2 "$hello" 2>&1)
expect_rc "a node without dlpar's line: dlpar-hello" $? nonzero
for node in n1 n2; do
  expect_eq "a node without dlpar's line: dlpar-hello on $node says why, once" \
    "$(grep "^dlpar-hello: srun accepted --dl-\* options for step [0-9]*\.0, but dlpar's plugin did not run on $node: its plugstack.conf has no spank_dlpar.so line, and Slurm needs the same plugstack.conf on every node (ask the admin)$" <<<"$out" | wc -l)" 1
done
"$DLPAR_SRCDIR/tests/testbed/dlpar-bed" stop --state "$TEST_TMP/bed" >/dev/null
finish
