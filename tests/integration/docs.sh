#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/docs.sh: the guides and the manual pages. Every command
# of doc/admin.md and doc/user.md (the "$ " lines of their sh blocks) runs on
# the 2-node test bed from a directory with the source's etc/ and contrib/
# and the build tree as build/; it must succeed, or fail where the guide
# says "# => fails". The manual pages format without a warning (groff -ww).
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
work=$TEST_TMP/work
mkdir -p "$work"
ln -s "$DLPAR_SRCDIR/etc" "$work/etc"
ln -s "$DLPAR_SRCDIR/contrib" "$work/contrib"
ln -s "$DLPAR_SRCDIR/quickstart" "$work/quickstart"
ln -s "$B" "$work/build"
export BUILD=$B OMP_NUM_THREADS=1
# python3: the system's, which has Debian's torch; dlpar's module from the source and build trees
mkdir -p "$TEST_TMP/bin" && ln -s /usr/bin/python3 "$TEST_TMP/bin/python3"
export PATH=$TEST_TMP/bin:$B/trainer:$B/tools:$DLPAR_SRCDIR/contrib:$DLPAR_SRCDIR/tests/stand-ins:$PATH
export PYTHONPATH=$DLPAR_SRCDIR/python DLPAR_LIBRARY=$B/libdlpar/.libs/libdlpar.so
have_torch=no
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null && have_torch=yes && torch_env_without_libuv
cd "$work"

for guide in admin user; do
  while IFS= read -r command; do
    want=0
    case $command in *"# => fails") want=nonzero ;; esac
    case $have_torch$command in no*python3*) echo "not run (no torch for /usr/bin/python3): $command"; continue ;; esac
    out=$(bash -c "$command" 2>&1 </dev/null)
    rc=$?
    expect_rc "$guide.md: $command" $rc $want
    [ "$rc" = 0 ] || [ "$want" != 0 ] || echo "$out" | tail -n 5 >&2
  done < <(guide_commands "$DLPAR_SRCDIR/doc/$guide.md") # its sh blocks: "sh build" and "sh node" are trixie deb-check's
done
expect_eq "user.md: resumed run reached step 48" "$(grep -c '"step": 48,' logs/tiny/2x2/first/metrics.jsonl)" 2
finish
