#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/nccl_one_rank.sh: DLPAR_NCCL_ONE_RANK as dlpar_init reads it,
# in a plain run (no PMIx: one rank, grid 1x1, no GPU needed; rank_probe
# --nccl-ids makes and prints the NCCL ids the backend would use):
#  - local (the default) and unset: the groups of one rank get no id (no
#    communicator: their collectives are copies or nothing);
#  - comm: each group (tp, dp, world) one id of its own, made by the rank
#    itself (nothing through PMIx), the three pairwise distinct (an id's
#    bootstrap root serves one communicator); tests/gpu/test_nccl_gpu
#    builds the communicators from them on a GPU;
#  - under dlpar-run's PMIx (2 ranks, grid 1x2): each rank's tp group (of
#    one rank) its own id, exchanged with nobody (PMIx moves the same bytes
#    as without the setting), the dp group's shared as without it;
#  - another value fails dlpar_init with one line naming the setting and its
#    values, exit 1.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
probe=$B/tests/integration/rank_probe
plain=(env -u PMIX_NAMESPACE -u DLPAR_VERSION -u DLPAR_NCCL_ONE_RANK)

out=$("${plain[@]}" DLPAR_NCCL_ONE_RANK=all "$probe" 2>&1)
expect_rc "DLPAR_NCCL_ONE_RANK=all: refused" $? 1
expect_eq "DLPAR_NCCL_ONE_RANK=all: one line naming the setting and its values" "$out" \
  "rank_probe: DLPAR_NCCL_ONE_RANK=all: unknown (use local or comm, or unset it)"

if ! grep -q '^#define HAVE_CUDA 1' "$B/config.h"; then
  [ "$TEST_FAILURES" = 0 ] && skip "built without CUDA, so no NCCL ids to make (the refusal above passed)"
  finish
fi
for setting in unset local; do
  if [ $setting = unset ]; then out=$("${plain[@]}" "$probe" --nccl-ids 2>&1); else
    out=$("${plain[@]}" DLPAR_NCCL_ONE_RANK=$setting "$probe" --nccl-ids 2>&1); fi
  expect_rc "$setting: dlpar_init" $? 0
  expect_contains "$setting: no ids for the groups of one rank" "$out" "rank_probe: rank 0 ids tp - dp - world -"
done

out=$("${plain[@]}" DLPAR_NCCL_ONE_RANK=comm "$probe" --nccl-ids 2>&1)
expect_rc "comm: dlpar_init" $? 0
expect_contains "comm: one id (root) per group" "$out" "rank_probe: rank 0 roots tp 1 dp 1 world 1"
expect_contains "comm: made here, nothing through PMIx" "$out" "rank_probe: rank 0 pmix put 0 got_local 0 got_remote 0 keys 0"
read -r tp dp world < <(sed -n 's/^rank_probe: rank 0 ids tp \([0-9a-f]\{8\}\) dp \([0-9a-f]\{8\}\) world \([0-9a-f]\{8\}\)$/\1 \2 \3/p' <<<"$out")
expect_eq "comm: three ids, pairwise distinct" "$(printf '%s\n' "${tp:-}" "${dp:-}" "${world:-}" | grep . | sort -u | wc -l)" 3

# Two ranks under dlpar-run's PMIx, grid 1x2: the tp groups are of one rank
# (each rank makes its own id, which goes through nobody: PMIx moves the
# same bytes as without the setting), the dp group of two gets its root's
# id over PMIx, the world's stays lazy.
ids() { sed -n "s/^rank_probe: rank $1 ids tp \([^ ]*\) dp \([^ ]*\) world \([^ ]*\)$/\1 \2 \3/p" <<<"$2"; }
run=("$B/tools/dlpar-run" -n 2 --dl-parallel=1x2 --)
local_out=$("${plain[@]}" "${run[@]}" "$probe" --nccl-ids 2>&1)
expect_rc "dlpar-run 1x2, local: dlpar_init" $? 0
out=$("${plain[@]}" DLPAR_NCCL_ONE_RANK=comm "${run[@]}" "$probe" --nccl-ids 2>&1)
expect_rc "dlpar-run 1x2, comm: dlpar_init" $? 0
read -r tp0 dp0 world0 < <(ids 0 "$out")
read -r tp1 dp1 world1 < <(ids 1 "$out")
expect_eq "dlpar-run 1x2, local: no tp id" "$(ids 0 "$local_out" | cut -d' ' -f1) $(ids 1 "$local_out" | cut -d' ' -f1)" "- -"
TEST_CHECKS=$((TEST_CHECKS + 1))
[[ ${tp0:-} =~ ^[0-9a-f]{8}$ && ${tp1:-} =~ ^[0-9a-f]{8}$ && $tp0 != "$tp1" && $tp0 != "${dp0:-}" ]] &&
  pass "dlpar-run 1x2, comm: each rank's tp group its own id" ||
  fail "dlpar-run 1x2, comm: each rank's tp group its own id: $out"
TEST_CHECKS=$((TEST_CHECKS + 1))
[[ ${dp0:-} =~ ^[0-9a-f]{8}$ && $dp0 == "${dp1:-}" && ${world0:-}${world1:-} == -- ]] &&
  pass "dlpar-run 1x2, comm: the dp group's id shared over PMIx, the world's lazy" ||
  fail "dlpar-run 1x2, comm: the dp group's id shared over PMIx, the world's lazy: $out"
expect_eq "dlpar-run 1x2, comm: the own ids go through nobody (PMIx traffic as without)" \
  "$(grep 'pmix put' <<<"$out" | sort)" "$(grep 'pmix put' <<<"$local_out" | sort)"
finish
