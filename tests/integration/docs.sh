#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/docs.sh: the guides and the manual pages. Every command
# of doc/admin.md and doc/user.md (the "$ " lines of their sh blocks) runs on
# the 2-node test bed from a directory with the source's etc/ and contrib/
# and the build tree as build/; it must succeed, or fail where the guide
# says "# => fails"; those that run python3 (PyTorch's) are
# docs_torch.sh's. The manual pages format without a warning (groff -ww).
# The plugin's admin keys are the same four times: the parser's, the
# shipped plugstack line's comments, admin.md's table and spank_dlpar(8)'s.
# nsys is the STAND-IN of tests/stand-ins (it cannot be installed here).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
command -v groff >/dev/null || skip "groff not installed (apt-get install groff)"
for page in "$DLPAR_SRCDIR"/doc/man/*.[18]; do
  warnings=$(groff -ww -man -Tutf8 "$page" 2>&1 >/dev/null)
  expect_eq "$(basename "$page") formats without warnings" "$warnings" ""
done

echo "required /nonexistent/spank_dlpar.so no_such_key=1" >"$TEST_TMP/keys.conf"
keys=$("$B/spank/dlpar-check-config" "$TEST_TMP/keys.conf" 2>&1 | sed -n 's/.*(known: \(.*\))$/\1/p' | tr -d ' ' | tr , '\n' | sort | paste -sd ' ')
expect_eq "the parser knows the admin keys (dlpar-check-config says which)" "$(wc -w <<<"$keys")" 7
expect_eq "the shipped plugstack line's keys are the parser's" \
  "$(sed -n 's/^#   \([][a-zA-Z_.@]*\)=.*/\1/p' "$DLPAR_SRCDIR/etc/plugstack.conf.d/dlpar.conf.in" | sort | paste -sd ' ')" "$keys"
expect_eq "admin.md's keys are the parser's" \
  "$(sed -n 's/^| `\([][a-zA-Z_.@]*\)` | .* | .* | .* |$/\1/p' "$DLPAR_SRCDIR/doc/admin.md" | sort | paste -sd ' ')" "$keys"
expect_eq "spank_dlpar(8)'s keys are the parser's" \
  "$(sed -n 's/^\.B[RI] \([][a-zA-Z_.@]*\)= .*/\1/p' "$DLPAR_SRCDIR/doc/man/spank_dlpar.8" | sort | paste -sd ' ')" "$keys"

use_bed
guide_workdir
run_guide_commands plain
expect_eq "user.md: resumed run reached step 48" "$(grep -c '"step": 48,' logs/tiny/2x2/first/metrics.jsonl)" 2
finish
