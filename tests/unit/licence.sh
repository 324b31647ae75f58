#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/licence.sh: LICENSE is there and names BSD-3-Clause, and every
# source file of the tree (git's list: code, scripts, build files, configs,
# manual pages, Debian packaging) carries the SPDX line in its first three
# lines. Left out: what is not ours (the tutorials' verbatim configs,
# etc/tutorial), data (fuzz seeds, .npy, hwloc XML), prose (.md) and the
# Debian files whose formats have no comments (debian/copyright says the
# licence there).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
cd "$DLPAR_SRCDIR" || exit 99
command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  skip "not a git checkout (the file list is git's)"
expect_eq "LICENSE is the BSD 3-Clause text" "$(head -1 LICENSE 2>/dev/null)" "BSD 3-Clause License"
missing=
while IFS= read -r file; do
  case $file in
    tests/fuzz/seeds/* | etc/tutorial/* | *.md | *.npy | *.xml | .gitignore | LICENSE) continue ;;
    debian/changelog | debian/copyright | debian/source/format) continue ;; # formats without comments
  esac
  [ -f "$file" ] || continue
  head -3 "$file" | grep -q 'SPDX-License-Identifier: BSD-3-Clause' || missing="$missing $file"
done < <(git ls-files --cached)
expect_eq "source files without the SPDX line" "${missing# }" ""
finish
