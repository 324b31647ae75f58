#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/spank_config_steps.sh: spank_config.sh's bad
# plugstack.conf line (torch_port) in srun's steps, on a 2-node bed of this
# test's own whose nodes read the bad line while srun reads a good one (a
# login node whose plugstack.conf differs): each node refuses the step,
# once, saying that srun's reading differs, and under --export=NONE with its
# own line; a node without dlpar's line: no DLPAR_* in the tasks; a good
# line's bind_cpus=no bind_nic=yes runs. These need srun to accept --dl-*
# options, which needs mpi/pmix: SKIPs on a Slurm without it (use_bed).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
plugin=$B/spank/.libs/spank_dlpar.so
good="required $plugin $BED_TOPOLOGY"
BED_TOPOLOGY="$BED_TOPOLOGY torch_port=20000-20999" use_bed private
plugstack=$(dirname "$SLURM_CONF")/plugstack.conf
known="(known: tp_span, topology_xml, profile_dir, bind_cpus, bind_nic, torch_ports, env.VAR[@NODES])"
mkdir -p "$TEST_TMP/login"
sed "s|^PlugStackConfig=.*|PlugStackConfig=$TEST_TMP/login/plugstack.conf|" "$SLURM_CONF" >"$TEST_TMP/login/slurm.conf"
echo "$good" >"$TEST_TMP/login/plugstack.conf"
login() { (cd "$TEST_TMP" && SLURM_CONF=$TEST_TMP/login/slurm.conf "$@"); } # srun, on the login node

out=$(login srun -N2 --ntasks-per-node=2 --dl-parallel=2x2 true 2>&1)
expect_rc "a node's bad line, srun's good: the step" $? 1
for node in n1 n2; do
  expect_eq "a node's bad line, srun's good: $node says so once" "$(grep "slurmstepd-$node: error: dlpar:" <<<"$out")" \
    "slurmstepd-$node: error: dlpar: plugstack.conf: unknown key 'torch_port' $known (line 1 of $plugstack on $node): srun accepted the step where it runs, so $node reads the line otherwise (Slurm needs the same plugstack.conf on every node): $node refuses every --dl-* step until the admin corrects it"
done
expect_eq "a node's bad line, srun's good: no other line of dlpar's" "$(grep -c dlpar: <<<"$out")" 2
out=$(login srun -N1 -n1 --export=NONE --dl-parallel=1x1 /bin/true 2>&1)
expect_rc "a node's bad line, srun --export=NONE" $? 1
expect_eq "a node's bad line, srun --export=NONE: the node's own line" "$(grep dlpar: <<<"$out")" \
  "slurmstepd-n1: error: dlpar: plugstack.conf: unknown key 'torch_port' $known (line 1 of $plugstack on n1): n1 refuses every --dl-* step until the admin corrects it (dlpar-check-config checks the file)"

: >"$plugstack"
out=$(login srun -N2 --ntasks-per-node=1 --dl-parallel=1x2 bash -c 'echo "${DLPAR_TP_SIZE-unset}"' 2>&1)
expect_eq "a node without dlpar's line: no DLPAR_* in the tasks" "$out" "unset
unset"

echo "$good bind_cpus=no bind_nic=yes" >"$plugstack"
out=$(cd "$TEST_TMP" && srun -N1 -n1 --dl-parallel=1x1 printenv DLPAR_TP_SIZE 2>&1)
expect_eq "bind_cpus=no bind_nic=yes: runs" "$out" 1
"$DLPAR_SRCDIR/tests/testbed/dlpar-bed" stop --state "$TEST_TMP/bed" >/dev/null
finish
