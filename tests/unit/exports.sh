#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/exports.sh: what the built libraries show the world. libdlpar.so
# exports exactly the functions dlpar.h declares, which are the definitions
# marked DLPAR_API (libdlpar.map only names the version node), nothing of
# internal.h or common/; the plugin exports only the
# slurm_spank_* callbacks and spank.h's SPANK_PLUGIN symbols; dlpar.h
# compiles on its own; an installed libdlpar (make install DESTDIR=...)
# builds and runs a program through its dlpar.pc.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
lib=$DLPAR_BUILDDIR/libdlpar/.libs/libdlpar.so
plugin=$DLPAR_BUILDDIR/spank/.libs/spank_dlpar.so
[ -e "$plugin" ] || { echo "FAILED: $plugin not built" >&2; exit 99; }

others=$(nm -D --defined-only "$plugin" | awk '{ print $3 }' | grep -v '^slurm_spank_' | sort | paste -sd ' ')
expect_eq "the plugin's exports besides slurm_spank_*" "$others" "plugin_name plugin_type plugin_version spank_plugin_version"
if [ ! -e "$lib" ]; then
  echo "note: libdlpar is not built here (configure found no PMIx): the plugin alone is checked"
  finish
fi

declared=$(sed -n 's/^[a-z][a-z_ ]*[ *]\(dlpar_[a-z_0-9]*\)(.*/\1/p' "$DLPAR_SRCDIR/include/dlpar/dlpar.h" | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort -u)
marked=$(cat "$DLPAR_SRCDIR"/libdlpar/*.c "$DLPAR_SRCDIR"/libdlpar/*/*.c "$DLPAR_SRCDIR"/common/*.c |
         sed -n 's/^DLPAR_API [a-z][a-z_ ]*[ *]\(dlpar_[a-z_0-9]*\)(.*/\1/p' | sort -u)
expect_eq "libdlpar.so's exported functions are dlpar.h's" "$exported" "$declared"
expect_eq "the definitions marked DLPAR_API are dlpar.h's functions" "$marked" "$declared"
expect_eq "each in libdlpar.map's version node" \
  "$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 !~ /@@DLPAR_0$/' )" ""
expect_eq "dlpar.h declares functions (the sed above still reads it)" "$( [ "$(wc -l <<<"$declared")" -ge 20 ] && echo yes)" yes
expect_eq "libdlpar.so exports no data" "$(nm -D --defined-only "$lib" | awk '$2 ~ /^[BDGRS]$/' | grep -v ' _' )" ""

# dlpar.h alone, as C11 and as C++
printf '#include "dlpar.h"\nint main(void) { return DLPAR_OK; }\n' >"$TEST_TMP/alone.c"
${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$DLPAR_SRCDIR/include/dlpar" -c "$TEST_TMP/alone.c" -o "$TEST_TMP/alone.o" 2>"$TEST_TMP/cc.err"
rc=$?
expect_rc "dlpar.h compiles alone (C11): $(head -c 300 "$TEST_TMP/cc.err")" $rc 0
if command -v c++ >/dev/null; then
  c++ -Wall -Wextra -Werror -I"$DLPAR_SRCDIR/include/dlpar" -x c++ -c "$TEST_TMP/alone.c" -o "$TEST_TMP/alone++.o" 2>"$TEST_TMP/cxx.err"
  rc=$?
  expect_rc "dlpar.h compiles alone (C++): $(head -c 300 "$TEST_TMP/cxx.err")" $rc 0
fi

# The installed library through pkg-config, in a staging root
command -v pkg-config >/dev/null || skip "no pkg-config (apt-get install pkg-config) for the dlpar.pc check"
stage=$TEST_TMP/stage
make -s -C "$DLPAR_BUILDDIR" install-libLTLIBRARIES install-includeHEADERS install-pkgconfigDATA DESTDIR="$stage" \
  >"$TEST_TMP/install.out" 2>&1
rc=$?
expect_rc "make install of libdlpar, its headers and dlpar.pc: $(tail -c 300 "$TEST_TMP/install.out")" $rc 0
pc=$(find "$stage" -name dlpar.pc | head -1)
prefix=$(sed -n 's/^prefix=//p' "$pc")
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --define-variable=prefix="$stage$prefix" --cflags --libs dlpar)
expect_rc "pkg-config dlpar" $? 0
cat >"$TEST_TMP/user.c" <<'C'
#include <dlpar.h>
#include <stdio.h>
int main(void)
{
  printf("%s %s\n", dlpar_backend_name(DLPAR_BACKEND_NCCL), dlpar_backend_name(DLPAR_BACKEND_MPI));
  return DLPAR_OK;
}
C
# shellcheck disable=SC2086
${CC:-cc} -std=c11 -Wall -Werror "$TEST_TMP/user.c" -o "$TEST_TMP/user" $flags 2>"$TEST_TMP/user.err"
rc=$?
expect_rc "a program built with pkg-config's flags: $(head -c 300 "$TEST_TMP/user.err")" $rc 0
libdir=$(pkg-config --define-variable=prefix="$stage$prefix" --variable=libdir dlpar)
expect_eq "it runs against the installed libdlpar" "$(LD_LIBRARY_PATH=$libdir "$TEST_TMP/user" 2>&1)" "nccl mpi"
finish
