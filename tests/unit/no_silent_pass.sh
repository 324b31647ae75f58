#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/no_silent_pass.sh: no shell test says that it left a check out
# and then passes. A branch that cannot check here must SKIP (tests/lib's
# skip: exit 77 with the reason), in a test of its own where the rest of
# the test checks something; a line of a test that echoes "not run", "not
# checked", "not tested", "left out", "skipped" or "skipping" without
# skipping is named here, with its file and line.
set -u
src=${DLPAR_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
self=tests/unit/no_silent_pass.sh
found=$(cd "$src" && grep -rnIiE --include='*.sh' \
          'echo[^|;]*(not run|not checked|not tested|left out|skipped|skipping)' tests |
        grep -vE "^$self:" | grep -vE '(^|[^a-z_])skip |exit 77|FAILED')
checked=$(cd "$src" && find tests -name '*.sh' | wc -l)
if [ -n "$found" ]; then
  echo "FAILED: a test says it left a check out and passes (make the branch a SKIP, exit 77 with the reason, in a test of its own):" >&2
  echo "$found" | sed 's/^/  /' >&2
  exit 1
fi
echo "ok: $checked shell tests, none leaves a check out and passes"
