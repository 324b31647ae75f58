#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_torch.sh: dlpar's CPU model against PyTorch
# (Debian's python3-torch through /usr/bin/python3) on the `test` config of
# etc/vit.yaml: the first loss and every parameter gradient, then ten Adam
# steps, all within 1e-4 relative (see tests/numerics/torch_reference.py).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch, h5py' 2>/dev/null ||
  skip "no PyTorch for /usr/bin/python3 (apt-get install python3-torch python3-h5py)"
out=$(env -u PMIX_NAMESPACE "$B/tests/numerics/vit_dump" "$DLPAR_SRCDIR/etc/vit.yaml" test "$TEST_TMP/dump.h5" 10 2>&1)
expect_rc "vit_dump" $? 0
out=$(/usr/bin/python3 "$DLPAR_SRCDIR/tests/numerics/torch_reference.py" "$TEST_TMP/dump.h5" 2>&1)
expect_rc "torch_reference" $? 0
expect_contains "torch_reference" "$out" "49 checks, 0 failed"
echo "$out"
finish
