#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/spank_network.sh: the site's network settings, once,
# in plugstack.conf (env.VAR=VALUE for every node, env.VAR@NODES=VALUE for
# a node class; common/netenv.h), on a 2-node bed of this test's own:
#  - every task of a node gets its class's settings over the every-node
#    ones, and the site's NCCL_IB_HCA over the NIC binding's;
#  - NCCL_SOCKET_IFNAME, where the site sets none, is the interface towards
#    rank 0, as GLOO_SOCKET_IFNAME;
#  - the user's own export wins on every task, said once by srun;
#  - an interface a node lacks refuses the step in one line naming the
#    node (its first task's), and steps elsewhere run;
#  - a misspelled NCCL name is refused before any daemon reads it
#    (dlpar-check-config), with the name NCCL reads;
#  - node classes as Slurm's own host-list parser reads them: a malformed
#    list (n[1-3, n[3-1], n[1-2000000000], which every Slurm refuses), two classes
#    of one variable sharing a node, and a class holding no node of the
#    bed's cluster (rack[1-2]-n[1-2], x[0-2]y[0-1]) are refused by
#    dlpar-check-config in one line naming the key, file and line.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
check_config=$B/spank/dlpar-check-config
site="env.NCCL_SOCKET_IFNAME@n2=lo env.NCCL_IB_HCA@n[1-2]=mlx5_0 env.UCX_TLS=rc,sm"
BED_TOPOLOGY="$BED_TOPOLOGY $site" use_bed private
show='echo "$SLURM_NODEID NCCL_SOCKET_IFNAME=$NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME=$GLOO_SOCKET_IFNAME NCCL_IB_HCA=$NCCL_IB_HCA UCX_TLS=$UCX_TLS"'

out=$(srun -N2 -n2 --dl-parallel=1x2 bash -c "$show" 2>&1 | sort)
expect_rc "srun with the site's settings" "${PIPESTATUS[0]}" 0
gloo() { sed -n "s/^$1 .*GLOO_SOCKET_IFNAME=\([^ ]*\) .*/\1/p" <<<"$out"; }
gloo1=$(gloo 0) gloo2=$(gloo 1)
TEST_CHECKS=$((TEST_CHECKS + 1))
[ -n "$gloo1" ] && [ -n "$gloo2" ] || fail "no GLOO_SOCKET_IFNAME (the interface towards rank 0): $out"
expect_eq "n1: NCCL_SOCKET_IFNAME derived as GLOO_SOCKET_IFNAME; n2: its class's; both: the site's HCA and UCX_TLS" "$out" \
  "$(printf '0 NCCL_SOCKET_IFNAME=%s GLOO_SOCKET_IFNAME=%s NCCL_IB_HCA=mlx5_0 UCX_TLS=rc,sm\n1 NCCL_SOCKET_IFNAME=lo GLOO_SOCKET_IFNAME=%s NCCL_IB_HCA=mlx5_0 UCX_TLS=rc,sm' "$gloo1" "$gloo1" "$gloo2")"

out=$(NCCL_IB_HCA=mine NCCL_SOCKET_IFNAME=myif srun -N2 -n2 --dl-parallel=1x2 bash -c "$show" 2>&1 | sort)
expect_eq "the user's exports win on every task, said once" "$out" \
  "$(printf '0 NCCL_SOCKET_IFNAME=myif GLOO_SOCKET_IFNAME=%s NCCL_IB_HCA=mine UCX_TLS=rc,sm\n1 NCCL_SOCKET_IFNAME=myif GLOO_SOCKET_IFNAME=%s NCCL_IB_HCA=mine UCX_TLS=rc,sm\n%s' "$gloo1" "$gloo2" \
    "srun: dlpar: keeping your exported NCCL_SOCKET_IFNAME=myif, NCCL_IB_HCA=mine for every task over plugstack.conf's env. settings (unset them to get the site's)")"

# an interface n2 lacks: a bed of its own
"$DLPAR_SRCDIR/tests/testbed/dlpar-bed" stop --state "$TEST_TMP/bed" >/dev/null
BED_TOPOLOGY="$BED_TOPOLOGY env.GLOO_SOCKET_IFNAME@n2=nosuch0" use_bed private
out=$(srun -N2 -n4 --dl-parallel=1x4 true 2>&1)
expect_rc "a missing interface on n2" $? 1
expect_eq "a missing interface on n2: one line naming it" "$(grep -c dlpar: <<<"$out")" 1
expect_contains "a missing interface on n2: the line" "$out" \
  "dlpar: plugstack.conf: env.GLOO_SOCKET_IFNAME@n2=nosuch0: n2 has no such interface (\`ip link\` on it lists them): fix the line or the node"
out=$(srun -N1 -n2 -w n1 --dl-parallel=1x2 true 2>&1)
expect_rc "the same line on n1, which is not in the class" $? 0

# a misspelled NCCL name, before any daemon reads it
echo "required $B/spank/.libs/spank_dlpar.so env.NCCL_SOCKET_IFNAM=ib0" >"$TEST_TMP/plugstack.conf"
out=$("$check_config" "$TEST_TMP/plugstack.conf" 2>&1)
expect_rc "dlpar-check-config: a misspelled NCCL name" $? 1
expect_eq "dlpar-check-config: a misspelled NCCL name: one line, the fix" "$out" \
  "dlpar-check-config: $TEST_TMP/plugstack.conf:1: plugstack.conf: env.NCCL_SOCKET_IFNAM: NCCL reads no NCCL_SOCKET_IFNAM (NCCL would ignore it): did you mean NCCL_SOCKET_IFNAME?"

# node classes, by Slurm's own host-list parser, before any daemon reads them
check_line() { # WHAT, EXPECTED RC, EXPECTED OUTPUT, then the line's keys
  local what=$1 rc=$2 expected=$3
  shift 3
  printf '# the site\nrequired %s %s\n' "$B/spank/.libs/spank_dlpar.so" "$*" >"$TEST_TMP/plugstack.conf"
  out=$("$check_config" "$TEST_TMP/plugstack.conf" 2>&1)
  expect_rc "dlpar-check-config: $what" $? "$rc"
  expect_eq "dlpar-check-config: $what: one line" "$out" "$expected"
}
where="dlpar-check-config: $TEST_TMP/plugstack.conf:2"
fix="write it as Slurm does, e.g. gpu[01-16],rack[1-2]-n[1-8],login1"
check_line "a '[' without its ']'" 1 "$where: plugstack.conf: env.NCCL_IB_HCA@n[1-3: the host list n[1-3 is malformed (a '[' without its ']'): $fix" \
  "env.NCCL_IB_HCA@n[1-3=mlx5_0"
check_line "a range that runs backwards" 1 "$where: plugstack.conf: env.NCCL_IB_HCA@n[3-1]: the host list n[3-1] is malformed (the range 3-1 runs backwards): $fix" \
  "env.NCCL_IB_HCA@n[3-1]=mlx5_0"
check_line "a list Slurm's parser refuses" 1 "$where: plugstack.conf: env.NCCL_IB_HCA@n[1-2000000000]: Slurm's host list parser refuses n[1-2000000000]: $fix" \
  "env.NCCL_IB_HCA@n[1-2000000000]=mlx5_0"
check_line "two classes of one variable sharing a node" 1 "$where: plugstack.conf: env.NCCL_IB_HCA@n[1-2] and env.NCCL_IB_HCA@n2 share n2 (and maybe more): a node in two classes of one variable fails every step there; make the classes disjoint" \
  "env.NCCL_IB_HCA@n[1-2]=mlx5_0 env.NCCL_IB_HCA@n2=mlx5_1"
for class in 'rack[1-2]-n[1-2]' 'x[0-2]y[0-1]'; do
  check_line "a class no node of the cluster is in: $class" 1 "$where: plugstack.conf: env.UCX_TLS@$class: no node of the cluster (n[1-2]) is in $class, so this setting would never apply: correct the class, or drop it until its nodes are in slurm.conf" \
    "env.UCX_TLS@$class=rc"
done
check_line "disjoint classes of the cluster's nodes" 0 "$where: ok: required $B/spank/.libs/spank_dlpar.so env.NCCL_IB_HCA@n1=mlx5_0 env.NCCL_IB_HCA@n[2-2]=mlx5_1 env.UCX_TLS@n[1-2]=rc" \
  "env.NCCL_IB_HCA@n1=mlx5_0 env.NCCL_IB_HCA@n[2-2]=mlx5_1 env.UCX_TLS@n[1-2]=rc"
out=$(SLURM_CONF=$TEST_TMP/no-slurm.conf "$check_config" "$TEST_TMP/plugstack.conf" 2>&1)
expect_rc "dlpar-check-config without slurmctld" $? 0
expect_contains "dlpar-check-config without slurmctld: says the classes were not matched" "$out" \
  "env.UCX_TLS@n[1-2]=rc (node classes not matched against the cluster's nodes: slurmctld did not answer)"
finish
