#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/docs_torch.sh: the commands of doc/admin.md and
# doc/user.md that run python3 (the PyTorch example, as written and with
# dlpar's module), on the 2-node test bed from the guides' directory
# (tests/lib/common.sh guide_workdir) with the system's python3 and
# Debian's torch; each must succeed, or fail where the guide says
# "# => fails". SKIPs where /usr/bin/python3 has no torch (the Debian 13
# root leaves it out); docs.sh runs the guides' other commands.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
  skip "no torch for /usr/bin/python3 (apt-get install python3-torch): the guides' PyTorch commands cannot run"
use_bed
torch_env_without_libuv
guide_workdir
run_guide_commands torch
TEST_CHECKS=$((TEST_CHECKS + 1))
[ "$GUIDE_COMMANDS" -gt 0 ] || fail "the guides have no command that runs python3 (this test would check nothing)"
finish
