#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/layernorm_build.sh: LayerNorm's backward as nvcc compiled it
# here, without a GPU: ptxas's report kept beside its object
# (kernels/cuda/layernorm.ptxas, kernels/local.mk) shows every kernel of
# layernorm.cu without spills, the fused backward's 8 widths (up to 8
# column groups a lane, C = 1024, in registers) for each of the 3 types
# among them (their registers printed). SKIPs in a build without CUDA.
set -euo pipefail
build=${DLPAR_BUILDDIR:-.}
report=$build/kernels/cuda/layernorm.ptxas
if [ ! -f "$report" ]; then
  echo "SKIP: no CUDA build here ($report)"
  exit 77
fi
failed=0
# kernel registers spill-stores spill-loads, one line a kernel
table=$(awk '/Compiling entry function/ { split($0, q, "'\''"); name = q[2] }
             /bytes spill stores/ { stores = $5; loads = $9 }
             /Used [0-9]+ registers/ { if (name != "") print name, $5, stores, loads; name = "" }' "$report")
fused=$(grep -c 'layernorm_bwd_fused_kernel' <<<"$table" || true)
if [ "$fused" -ne 24 ]; then
  echo "FAILED: $fused layernorm_bwd_fused_kernel instances in $report (8 widths x 3 types: 24)"
  failed=1
fi
while read -r name registers stores loads; do
  echo "$name: $registers registers, spills $stores bytes stored, $loads loaded"
  if [ "$stores" != 0 ] || [ "$loads" != 0 ]; then
    echo "FAILED: $name spills registers"
    failed=1
  fi
done <<<"$table"
echo "layernorm_build: $(wc -l <<<"$table") kernels, $([ "$failed" = 0 ] && echo ok || echo FAILED)"
exit "$failed"
