#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/contrib_sbatch_torch.sh: contrib/sbatch's PyTorch
# template submitted with sbatch to the 2-node test bed, as written (the
# example script on env://) and with dlpar's module (--dlpar): the job must
# run the example on 4 ranks. SKIPs where /usr/bin/python3 has no torch
# (the Debian 13 root leaves it out); contrib_sbatch.sh checks the
# template's grid and the other templates.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
  skip "no torch for /usr/bin/python3 (apt-get install python3-torch): the PyTorch template cannot run"
use_bed
torch_env_without_libuv # Debian 13's torch (tests/lib/common.sh); sbatch passes it on (--export=ALL)
cd "$TEST_TMP"
template=$DLPAR_SRCDIR/contrib/sbatch/pytorch.sbatch
for args in "" --dlpar; do
  out=$(sbatch -W -o "$TEST_TMP/pytorch.out" --export=ALL,PYTHON=/usr/bin/python3,SCRIPT=$DLPAR_SRCDIR/contrib/pytorch/ddp_example.py,ARGS=$args,PYTHONPATH=$DLPAR_SRCDIR/python,DLPAR_LIBRARY=$B/libdlpar/.libs/libdlpar.so \
          "$template" 2>&1)
  expect_rc "pytorch ${args:-env://}: sbatch -W" $? 0
  expect_contains "pytorch ${args:-env://}: ran" "$(cat "$TEST_TMP/pytorch.out" 2>/dev/null)" "ddp_example: done on 4 ranks"
done
finish
