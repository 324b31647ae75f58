#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/spank_admin.sh: the admin's plugstack.conf keys on a real
# srun, on a 2-node bed of this test's own whose plugstack.conf it rewrites
# between steps (srun and slurmstepd read it afresh for every step):
# tp_span=warn runs 4x1 on 2 nodes x 2 tasks with one warning and the right
# environment, and libdlpar builds its groups; tp_span=allow runs it
# silently; bind_cpus=no and bind_nic=no leave affinity and NCCL_IB_HCA
# alone; an unknown key fails every srun, with or without --dl-*, naming it.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed private
plugstack=$(dirname "$SLURM_CONF")/plugstack.conf
plugin_line() { echo "required $B/spank/.libs/spank_dlpar.so $BED_TOPOLOGY $*" >"$plugstack"; }
show='echo "$SLURM_PROCID|$DLPAR_TP_SIZE|$DLPAR_DP_SIZE|$DLPAR_TP_RANK|$DLPAR_DP_RANK|$DLPAR_LOCAL_RANK|$DLPAR_DEVICE|$DLPAR_CPUS|$(grep Cpus_allowed_list /proc/self/status | cut -f2)|$DLPAR_NIC|${NCCL_IB_HCA-unset}"'
unbound=$(srun -N1 -n1 grep Cpus_allowed_list /proc/self/status | cut -f2)

plugin_line tp_span=warn bind_cpus=no bind_nic=no
out=$(srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=4x1 bash -c "$show" 2>"$TEST_TMP/err")
expect_rc "tp_span=warn: 4x1 on 2 x 2" $? 0
expect_eq "tp_span=warn: the warning, once" "$(grep dlpar "$TEST_TMP/err")" \
  "slurmstepd-n1: error: dlpar: warning: --dl-parallel=4x1: tensor-parallel group 0 (ranks 0-3) spans n1 and another node (give every node a multiple of 4 tasks, e.g. --ntasks-per-node=4)"
for r in 0 1 2 3; do
  expect_eq "tp_span=warn, bind_*=no: rank $r" "$(grep "^$r|" <<<"$out")" \
    "$r|4|1|$r|0|$(( r % 2 ))|$(( r % 2 ))||$unbound||unset"
done
out=$(srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=4x1 "$B/tools/dlpar-hello" 2>&1)
expect_rc "tp_span=warn: dlpar-hello 4x1 on 2 x 2" $? 0
for r in 0 1 2 3; do
  expect_contains "tp_span=warn: dlpar-hello rank $r" "$out" "rank $r/4 host n$(( r / 2 + 1 )) node $(( r / 2 )) local $(( r % 2 ))/2 tp $r/4 [0,1,2,3] dp 0/1 [$r]"
done
expect_eq "tp_span=warn: dlpar-hello collectives" "$(grep -c 'collectives ok' <<<"$out")" 4

plugin_line tp_span=allow
out=$(srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=4x1 true 2>&1)
expect_rc "tp_span=allow: 4x1 on 2 x 2" $? 0
expect_eq "tp_span=allow: silent" "$out" ""

plugin_line colour=blue
want="dlpar: plugstack.conf: unknown key 'colour' (known: tp_span, topology_xml, profile_dir, bind_cpus, bind_nic, torch_ports)"
for flags in "--dl-parallel=1x1" ""; do
  out=$(srun -N1 -n1 $flags true 2>&1)
  expect_rc "unknown admin key, srun ${flags:-without --dl-*}" $? 1
  expect_contains "unknown admin key, srun ${flags:-without --dl-*}" "$out" "$want"
done

"$DLPAR_SRCDIR/tests/testbed/dlpar-bed" stop --state "$TEST_TMP/bed" >/dev/null
finish
