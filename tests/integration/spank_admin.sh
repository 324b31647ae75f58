#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/spank_admin.sh: the admin's plugstack.conf keys on a real
# srun, on a 2-node bed of this test's own whose plugstack.conf it rewrites
# between steps (srun and slurmstepd read it afresh for every step):
# tp_span=warn runs 4x1 on 2 nodes x 2 tasks with one warning and the right
# environment, and libdlpar builds its groups; tp_span=allow runs it
# silently; bind_cpus=no and bind_nic=no leave affinity and NCCL_IB_HCA
# alone; a topology whose GPU bus order is not locality order gets
# CUDA_VISIBLE_DEVICES in locality order; torch_ports inside the kernel's
# ephemeral ports or below 1024 refuses every --dl-* step. What any bad line
# does in each context (slurmd, srun, sbatch, salloc, slurmstepd):
# spank_config.sh.
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

# A node whose GPUs' bus order is not their locality order (bed-interleaved.xml:
# GPUs 0,2 on socket 0, 1,3 on socket 1): CUDA_VISIBLE_DEVICES lists them in
# locality order, so cuda:LOCAL_RANK (device = local rank) is the GPU whose
# CPUs and NIC the task is bound to
echo "required $B/spank/.libs/spank_dlpar.so topology_xml=$DLPAR_SRCDIR/tests/topo/bed-interleaved.xml" >"$plugstack"
gpus='echo "$SLURM_PROCID|$LOCAL_RANK|$CUDA_VISIBLE_DEVICES|$DLPAR_DEVICE|$(grep Cpus_allowed_list /proc/self/status | cut -f2)|$UCX_NET_DEVICES"'
out=$(srun -N1 -n4 --dl-parallel=2x2 bash -c "$gpus" 2>&1)
expect_rc "GPUs in locality order" $? 0
for r in 0 1 2 3; do
  expect_eq "GPUs in locality order: rank $r" "$(grep "^$r|" <<<"$out")" "$r|$r|0,2,1,3|$r|$(( r / 2 ))|mlx5_$(( r / 2 )):1"
done

# torch_ports inside the kernel's ephemeral ports (where any outgoing connection
# takes ports): srun --dl-* refused, naming the key, the ranges and the fix
read -r eph_lo eph_hi </proc/sys/net/ipv4/ip_local_port_range
plugin_line torch_ports=$eph_lo-$(( eph_lo + 99 ))
out=$(srun -N1 -n1 --dl-parallel=1x1 true 2>&1)
expect_rc "torch_ports inside the ephemeral ports" $? 1
expect_contains "torch_ports inside the ephemeral ports" "$out" "torch_ports=$eph_lo-$(( eph_lo + 99 )) overlaps the kernel's ephemeral ports $eph_lo-$eph_hi (net.ipv4.ip_local_port_range), which any outgoing connection may take: set torch_ports=LO-HI outside them (LO at least 1024)"
plugin_line torch_ports=1000-2000
out=$(srun -N1 -n1 --dl-parallel=1x1 true 2>&1)
expect_rc "torch_ports below 1024" $? 1
expect_contains "torch_ports below 1024" "$out" "torch_ports=1000-2000: expected a port range LO-HI within 1024-65535"

"$DLPAR_SRCDIR/tests/testbed/dlpar-bed" stop --state "$TEST_TMP/bed" >/dev/null
finish
