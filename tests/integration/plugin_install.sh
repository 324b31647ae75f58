#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/plugin_install.sh: the plugin alone, from the source
# tree to a working srun --dl-parallel and back, as doc/admin.md has an admin
# do it, in a prefix of the test's own (this machine's /etc and Slurm stay
# untouched): configure --disable-libdlpar; make install puts the plugin,
# its plugstack line, dlpar-check-config and their two manual pages, and
# nothing else (no model configs, batch templates or dlpar-plot), and
# enables nothing; the line checked, then linked into the plugstack.conf.d
# that the bed's plugstack.conf includes (Debian's layout): srun
# --dl-parallel runs the grid; the link removed, srun no longer knows
# --dl-parallel; make uninstall leaves no file and no directory of dlpar's.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
prefix=$TEST_TMP/prefix
etc=$TEST_TMP/etc/slurm
mkdir -p "$TEST_TMP/build" "$etc/plugstack.conf.d"
echo "include $etc/plugstack.conf.d/*.conf" >"$etc/plugstack.conf"
(cd "$TEST_TMP/build" && "$DLPAR_SRCDIR/configure" --enable-werror --disable-libdlpar --prefix="$prefix" \
   --with-slurm-plugindir="$prefix/lib/slurm" >configure.out 2>&1) ||
  { tail -20 "$TEST_TMP/build/configure.out" >&2; echo "FAILED: configure --disable-libdlpar" >&2; exit 99; }
make -C "$TEST_TMP/build" -j2 install >"$TEST_TMP/install.out" 2>&1 ||
  { tail -20 "$TEST_TMP/install.out" >&2; echo "FAILED: make install" >&2; exit 99; }
expect_eq "make install of the plugin alone: what it installs" "$(cd "$prefix" && find . ! -type d | sort | paste -sd ' ')" \
  "./lib/slurm/spank_dlpar.la ./lib/slurm/spank_dlpar.so ./sbin/dlpar-check-config ./share/dlpar-spank/dlpar.conf ./share/man/man8/dlpar-check-config.8 ./share/man/man8/spank_dlpar.8"
expect_eq "the installed line" "$(grep -v '^#' "$prefix/share/dlpar-spank/dlpar.conf")" "required $prefix/lib/slurm/spank_dlpar.so"
expect_eq "make install enables nothing" "$(ls "$etc/plugstack.conf.d")" ""

use_bed plugstack="$etc/plugstack.conf"

# doc/admin.md, "Enable the plugin": check the shipped line, link it, check Slurm's
line=$(grep -n '^required' "$prefix/share/dlpar-spank/dlpar.conf" | cut -d: -f1)
out=$("$prefix/sbin/dlpar-check-config" "$prefix/share/dlpar-spank/dlpar.conf" 2>&1)
expect_eq "dlpar-check-config on the installed line" "$out" \
  "dlpar-check-config: $prefix/share/dlpar-spank/dlpar.conf:$line: ok: required $prefix/lib/slurm/spank_dlpar.so"
ln -s "$prefix/share/dlpar-spank/dlpar.conf" "$etc/plugstack.conf.d/dlpar.conf"
out=$("$prefix/sbin/dlpar-check-config" 2>&1)
expect_eq "dlpar-check-config on Slurm's plugstack.conf" "$out" \
  "dlpar-check-config: $etc/plugstack.conf.d/dlpar.conf:$line: ok: required $prefix/lib/slurm/spank_dlpar.so"
out=$(cd "$TEST_TMP" && srun -N2 --ntasks-per-node=2 --dl-parallel=2x2 printenv DLPAR_TP_RANK 2>&1 | sort | paste -sd ' ')
expect_eq "srun --dl-parallel=2x2 through the link: each task's tp rank" "$out" "0 0 1 1"

# and back: the link first, then the files
rm "$etc/plugstack.conf.d/dlpar.conf"
out=$(cd "$TEST_TMP" && srun -N1 -n1 --dl-parallel=1x1 true 2>&1)
expect_rc "the link removed: srun --dl-parallel" $? nonzero
expect_contains "the link removed: srun no longer knows --dl-parallel" "$out" "unrecognized option '--dl-parallel=1x1'"
make -C "$TEST_TMP/build" uninstall >"$TEST_TMP/uninstall.out" 2>&1
expect_rc "make uninstall" $? 0
expect_eq "make uninstall: no file left" "$(find "$prefix" ! -type d)" ""
expect_eq "make uninstall: no directory of dlpar's left" "$(find "$prefix" -name '*dlpar*')" ""

"$DLPAR_SRCDIR/tests/testbed/dlpar-bed" stop --state "$TEST_TMP/bed" >/dev/null
finish
