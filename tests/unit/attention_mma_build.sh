#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/attention_mma_build.sh: the tensor-core attention as nvcc
# compiled it here, without a GPU: ptxas's report kept beside its object
# (kernels/cuda/attention_mma.ptxas, kernels/local.mk) shows every kernel
# without spills and without a stack frame (a register array indexed at run
# time lives in local memory without counting as a spill; its registers
# printed), and the object's PTX holds the TF32 mma.sync, cvt.rna.tf32.f32
# and cp.async. SKIPs in a build without CUDA.
set -euo pipefail
build=${DLPAR_BUILDDIR:-.}
object=$build/kernels/cuda/attention_mma.o
report=$build/kernels/cuda/attention_mma.ptxas
if [ ! -f "$object" ] || [ ! -f "$report" ]; then
  echo "SKIP: no CUDA build here ($object, $report)"
  exit 77
fi
failed=0
# kernel registers spill-stores spill-loads stack-frame, one line a kernel
table=$(awk '/Compiling entry function/ { split($0, q, "'\''"); name = q[2] }
             /bytes spill stores/ { frame = $1; stores = $5; loads = $9 }
             /Used [0-9]+ registers/ { if (name != "") print name, $5, stores, loads, frame; name = "" }' "$report")
kernels=$(grep -c 'attention_tc_' <<<"$table" || true)
if [ "$kernels" -eq 0 ]; then
  echo "FAILED: no attention_tc_ kernel in $report"
  failed=1
fi
while read -r name registers stores loads frame; do
  echo "$name: $registers registers, spills $stores bytes stored, $loads loaded, $frame bytes of stack frame"
  if [ "$stores" != 0 ] || [ "$loads" != 0 ]; then
    echo "FAILED: $name spills registers"
    failed=1
  fi
  if [ "$frame" != 0 ]; then
    echo "FAILED: $name has a stack frame (local memory)"
    failed=1
  fi
done <<<"$table"
for instruction in 'mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32' 'cvt.rna.tf32.f32' 'cp.async.cg.shared.global'; do
  if grep -aqF "$instruction" "$object"; then
    echo "ok: the PTX in $object has $instruction"
  else
    echo "FAILED: no $instruction in the PTX of $object"
    failed=1
  fi
done
echo "attention_mma_build: $kernels kernels, $([ "$failed" = 0 ] && echo ok || echo FAILED)"
exit "$failed"
