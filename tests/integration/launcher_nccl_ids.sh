#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/launcher_nccl_ids.sh: real NCCL unique ids (made by
# ncclGetUniqueId, which needs no GPU) travel over PMIx put/commit/fence/get
# to every member of every group, under srun on 2 nodes and under dlpar-run:
# members of a group hold the same id, different groups different ids, and
# a 1-rank group none; the world's only when asked for (lazily, or
# DLPAR_NCCL_WORLD=eager); each rank gets from PMIx only its groups' roots'
# ids (direct modex: counted bytes), a big group's from several roots.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
grep -q '^#define HAVE_CUDA 1' "$B/config.h" || skip "built without CUDA (no NCCL)"
use_bed
probe=$B/tests/integration/rank_probe

check_ids() {
  local what=$1 out=$2 m=2 r field digest
  declare -A tp dp
  for r in 0 1 2 3; do
    set -- $(grep "rank $r ids" <<<"$out")
    # rank_probe: rank R ids tp X dp Y world Z
    [ $# -eq 10 ] || { fail "$what: no ids from rank $r"; return; }
    tp[$r]=$6 dp[$r]=$8 world[$r]=${10}
  done
  expect_eq "$what: tp group [0,1]" "${tp[0]}" "${tp[1]}"
  expect_eq "$what: tp group [2,3]" "${tp[2]}" "${tp[3]}"
  expect_eq "$what: dp group [0,2]" "${dp[0]}" "${dp[2]}"
  expect_eq "$what: dp group [1,3]" "${dp[1]}" "${dp[3]}"
  TEST_CHECKS=$((TEST_CHECKS + 2))
  [ "${tp[0]}" != "${tp[2]}" ] || fail "$what: two tp groups share an id"
  [ "${dp[0]}" != "${dp[1]}" ] || fail "$what: two dp groups share an id"
  expect_eq "$what: no world id unless asked" "$(printf '%s\n' "${world[@]}" | sort -u)" "-"
}

# got FIELD RANK OUT: rank_probe's "pmix ... FIELD N" count for RANK
got() { sed -n "s/^rank_probe: rank $2 pmix .* $1 \([0-9]*\).*/\1/p" <<<"$3"; }

out=$(srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "$probe" --nccl-ids 2>&1)
expect_rc "srun --nccl-ids" $? 0
check_ids "srun" "$out"
# 2x2 on two nodes, 2 ranks each: tp groups inside a node, dp groups across;
# ranks 2 and 3 fetch their dp root's id (rank 0, 1 on n1) from the other
# node, 128 bytes, and nothing else crosses nodes; ranks 0 and 1 are their
# own dp roots.
for r in 0 1 2 3; do
  expect_eq "srun: rank $r bytes from other nodes" "$(got got_remote $r "$out")" $(( r >= 2 ? 128 : 0 ))
done
out=$(DLPAR_MODEX=collect srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "$probe" --nccl-ids 2>&1)
expect_rc "srun --nccl-ids, DLPAR_MODEX=collect" $? 0
check_ids "srun, collecting fence" "$out"
# world_ids OUT: the distinct world id digests
world_ids() { sed -n 's/.* ids .* world \([0-9a-f]*\)$/\1/p' <<<"$1" | sort -u; }
# The world's ids at its first use: every rank the same, from 4 roots with
# 1 rank per root; every group's from as many roots as it has ranks.
out=$(DLPAR_NCCL_RANKS_PER_ROOT=1 srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "$probe" --nccl-ids --world-ids 2>&1)
expect_rc "srun --world-ids, 1 rank per root" $? 0
expect_eq "srun: one world id set" "$(world_ids "$out" | wc -l)" 1
expect_eq "srun: roots per group" "$(sed -n 's/.* roots \(.*\)$/\1/p' <<<"$out" | sort -u)" "tp 2 dp 2 world 4"
expect_eq "srun: two dp id sets" "$(sed -n 's/.* ids .* dp \([0-9a-f]*\) world .*/\1/p' <<<"$out" | sort -u | wc -l)" 2
out=$(DLPAR_NCCL_WORLD=eager "$B/tools/dlpar-run" -n 4 --dl-parallel=2x2 -- "$probe" --nccl-ids 2>&1)
expect_rc "dlpar-run --nccl-ids, eager world" $? 0
expect_eq "eager world: one world id at init" "$(world_ids "$out" | wc -l)" 1
out=$("$B/tools/dlpar-run" -n 4 --dl-parallel=2x2 -- "$probe" --nccl-ids 2>&1)
expect_rc "dlpar-run --nccl-ids" $? 0
check_ids "dlpar-run" "$out"
# A 1-rank group gets no id (it has no communicator); every multi-rank group
# its own: one id serves one ncclCommInitRank, so a shared one fails on a GPU.
ids_of() { sed -n 's/.* ids tp \([-0-9a-f]*\) dp \([-0-9a-f]*\) world \([-0-9a-f]*\)$/\1 \2 \3/p' <<<"$1" | sort -u; }
out=$(env -u PMIX_NAMESPACE "$probe" --nccl-ids 2>&1)
expect_rc "one rank, no launcher, --nccl-ids" $? 0
expect_eq "one rank: no group has an id" "$(ids_of "$out")" "- - -"
# one_group GRID FIELD_WITH_ID FIELD_WITHOUT NAME: a 2-rank run where one
# group spans both ranks (an id, not the world's, which is asked for) and
# the other has one rank
one_group() {
  local out ids
  out=$("$B/tools/dlpar-run" -n 2 --dl-parallel=$1 -- "$probe" --nccl-ids --world-ids 2>&1)
  expect_rc "dlpar-run $1 --nccl-ids" $? 0
  ids=($(ids_of "$out"))
  expect_eq "$1: one id set for both ranks" "${#ids[@]}" 3
  expect_eq "$1: the 1-rank groups have no id" "${ids[$3]}" "-"
  TEST_CHECKS=$((TEST_CHECKS + 1))
  [ "${ids[$2]}" != "-" ] && [ "${ids[2]}" != "-" ] && [ "${ids[$2]}" != "${ids[2]}" ] ||
    fail "$1: the $4 group and the world (asked for: --world-ids) need distinct ids: ${ids[*]}"
}
one_group 2x1 0 1 tp
one_group 1x2 1 0 dp
# DLPAR_NCCL_GROUPS=split: tp and dp come from ncclCommSplit, so only the
# world's id is made and travels (the tp and dp ids stay unset, all zeros).
out=$(DLPAR_NCCL_GROUPS=split "$B/tools/dlpar-run" -n 4 --dl-parallel=2x2 -- "$probe" --nccl-ids 2>&1)
expect_rc "dlpar-run --nccl-ids, split" $? 0
expect_eq "split: one world id" "$(world_ids "$out" | wc -l)" 1
expect_eq "split: no tp or dp ids" "$(sed -n 's/.* ids tp \([-0-9a-f]*\) dp \([-0-9a-f]*\) .*/\1\n\2/p' <<<"$out" | sort -u)" "-"
finish
