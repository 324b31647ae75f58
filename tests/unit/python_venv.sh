#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/python_venv.sh: the dlpar module where PyTorch users live, a
# virtual environment (python3 -m venv --system-site-packages, so that
# Debian's torch is there), installed by pip from the source tree with no
# network (python/pyproject.toml: pip install --no-build-isolation
# --no-index), at configure.ac's version, imported from the venv; the
# wheel make install puts in share/dlpar (the .deb's /usr/share/dlpar),
# installed by pip into a second venv; then
# libdlpar found without DLPAR_LIBRARY: on LD_LIBRARY_PATH (ctypes'
# find_library), through a relocated install's dlpar.pc on PKG_CONFIG_PATH,
# and beside the dlpar-run on PATH; nowhere: one line naming every place
# tried and the fix. Then the module's programs from the venv under
# dlpar-run, the library found by LD_LIBRARY_PATH alone: the groups
# (tests/integration/torch/module_program.py) and a stop (SIGTERM to rank
# 1 of contrib/pytorch/ddp_requeue.py: both ranks at one step, exit 85).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
/usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null ||
  skip "no venv module with ensurepip for /usr/bin/python3 (apt-get install python3-venv)"
/usr/bin/python3 -c 'import setuptools, wheel' 2>/dev/null ||
  skip "no setuptools and wheel for /usr/bin/python3 to build the module with (apt-get install python3-setuptools python3-wheel)"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
  skip "no PyTorch for /usr/bin/python3, which the venv's module programs need (apt-get install python3-torch)"
unset DLPAR_LIBRARY PYTHONPATH
venv=$TEST_TMP/venv
libs=$B/libdlpar/.libs

# The source tree copied first: pip builds in place (build/, *.egg-info)
cp -r "$DLPAR_SRCDIR/python" "$TEST_TMP/src"
chmod -R u+w "$TEST_TMP/src"
/usr/bin/python3 -m venv --system-site-packages "$venv"
expect_rc "python3 -m venv --system-site-packages" $? 0
out=$("$venv/bin/pip" install --no-build-isolation --no-index "$TEST_TMP/src" 2>&1)
expect_rc "pip install --no-build-isolation --no-index python/" $? 0
expect_contains "pip install: the module installed" "$out" "Successfully installed dlpar-"
want=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$B/config.h")
expect_eq "the installed version is configure.ac's" \
  "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("dlpar"))' 2>&1)" "$want"
where=$(cd / && "$venv/bin/python" -c 'import dlpar, dlpar.stop, dlpar.torch; print(dlpar.__file__)' 2>&1)
TEST_CHECKS=$((TEST_CHECKS + 1))
case $where in
  "$venv"/lib/python3*/site-packages/dlpar/__init__.py) pass "imported from the venv: $where" ;;
  *) fail "the module's place: '$where', expected the venv's site-packages" ;;
esac

# loaded_from ENV...: the path the installed module loads libdlpar from
loaded_from() { (cd / && env "$@" "$venv/bin/python" -c 'from dlpar import _find; print(_find.load()[1])' 2>&1); }
expect_eq "found on LD_LIBRARY_PATH (find_library): the first place listed" \
  "$(cd / && LD_LIBRARY_PATH="$libs" "$venv/bin/python" -m dlpar 2>&1 | head -n 1)" \
  "ldconfig or LD_LIBRARY_PATH: libdlpar.so.0"
expect_eq "found on LD_LIBRARY_PATH (find_library): loaded" "$(loaded_from LD_LIBRARY_PATH="$libs")" libdlpar.so.0
# A relocated install (libdir and bindir of a prefix under TEST_TMP), its dlpar.pc saying so
stage=$TEST_TMP/stage
make -s -C "$B" install-libLTLIBRARIES install-binPROGRAMS install-pkgconfigDATA install-dlparwheelDATA \
  DESTDIR="$stage" >/dev/null 2>&1
expect_rc "make install of libdlpar, dlpar-run, dlpar.pc and the module's wheel into a stage" $? 0
# The installed wheel (what the .deb ships in /usr/share/dlpar), into a venv of its own
wheel=$(find "$stage" -name "dlpar-$want-py3-none-any.whl" | head -1)
TEST_CHECKS=$((TEST_CHECKS + 1))
case $wheel in
  "$stage"*/share/dlpar/dlpar-*.whl) pass "the wheel installed in the package's data directory: ${wheel#"$stage"}" ;;
  *) fail "no dlpar-$want-py3-none-any.whl in the stage's share/dlpar: '$wheel'" ;;
esac
/usr/bin/python3 -m venv --system-site-packages "$TEST_TMP/venv2" &&
  out=$("$TEST_TMP/venv2/bin/pip" install --no-index "$wheel" 2>&1)
expect_rc "pip install --no-index the installed wheel" $? 0
expect_eq "the wheel's module: importable from its venv, at configure.ac's version" \
  "$(cd / && "$TEST_TMP/venv2/bin/python" -c 'import importlib.metadata as m, dlpar.stop; print(m.version("dlpar"), dlpar.stop.EXIT_STOPPED)' 2>&1)" \
  "$want 85"
pc=$(find "$stage" -name dlpar.pc | head -1)
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed -i "s|^prefix=.*|prefix=$stage$prefix|" "$pc"
lib=$(dirname "$(find "$stage" -name libdlpar.so.0 | head -1)")
# places ENV...: what python3 -m dlpar lists
places() { (cd / && env "$@" "$venv/bin/python" -m dlpar 2>&1); }
bindir=$(dirname "$(find "$stage" -name dlpar-run | head -1)")
expect_contains "dlpar.pc's libdir listed (PKG_CONFIG_PATH)" "$(places PKG_CONFIG_PATH="$(dirname "$pc")")" \
  "dlpar.pc's libdir: $lib/libdlpar.so.0"
expect_contains "the lib directory beside dlpar-run listed (PATH)" "$(places PATH="$bindir:$PATH")" \
  "beside dlpar-run: $lib/libdlpar.so.0"
# Loaded from there where no libdlpar is installed system-wide (ldconfig's would come first)
if ! /sbin/ldconfig -p 2>/dev/null | grep -q 'libdlpar\.so\.0 '; then
  expect_eq "loaded by dlpar.pc's libdir" "$(loaded_from PKG_CONFIG_PATH="$(dirname "$pc")")" "$lib/libdlpar.so.0"
  expect_eq "loaded from beside dlpar-run" "$(loaded_from PATH="$bindir:$PATH")" "$lib/libdlpar.so.0"
  out=$(cd / && PATH=/usr/bin:/bin "$venv/bin/python" -c 'import dlpar; dlpar.bootstrap()' 2>&1)
  expect_rc "nowhere: a DlparError" $? 1
  expect_contains "nowhere: one line naming the places tried and the fix" "$(tail -n 1 <<<"$out")" \
    "dlpar.DlparError: cannot load libdlpar: tried libdlpar.so.0 (the dynamic linker's search path): libdlpar.so.0: cannot open shared object file: No such file or directory (set DLPAR_LIBRARY to libdlpar.so's path, or put its directory on LD_LIBRARY_PATH or its dlpar.pc on PKG_CONFIG_PATH)"
fi

# The module's programs from the venv under dlpar-run: no PYTHONPATH, no DLPAR_LIBRARY
run=(env LD_LIBRARY_PATH="$libs" "$B/tools/dlpar-run" -n 2 --dl-parallel=1x2 -- "$venv/bin/python")
out=$("${run[@]}" "$DLPAR_SRCDIR/tests/integration/torch/module_program.py" 2>&1)
expect_rc "the venv's module: groups under dlpar-run" $? 0
# Checks per rank: the grid, three allreduces; with a DeviceMesh (torch 2.4+) its shape and two more.
checks=4
"$venv/bin/python" -c 'from torch.distributed.device_mesh import DeviceMesh; assert hasattr(DeviceMesh, "from_group")' \
  2>/dev/null && checks=7
expect_eq "the venv's module: every check of both ranks" "$(grep -c '^rank [01]: .* ok' <<<"$out")" $((2 * checks))
expect_eq "the venv's module: no check failed" "$(grep -c FAILED <<<"$out")" 0
"${run[@]}" "$DLPAR_SRCDIR/contrib/pytorch/ddp_requeue.py" --steps=100000 --checkpoint="$TEST_TMP/last.pt" \
  >"$TEST_TMP/stop.out" 2>&1 &
run_pid=$!
for i in $(seq 1200); do grep -q 'step 5 loss' "$TEST_TMP/stop.out" && break; sleep 0.1; done
for child in $(pgrep -P $run_pid); do
  tr '\0' '\n' <"/proc/$child/environ" | grep -qx DLPAR_RANK=1 && kill -TERM "$child"
done
wait $run_pid
expect_rc "the venv's module: SIGTERM to rank 1, stopped early" $? 85
expect_eq "the venv's module: both ranks stop at one step" \
  "$(sed -n 's/^dlpar: rank [01]: stop agreed at step \([0-9]*\) .*/\1/p' "$TEST_TMP/stop.out" | sort | uniq -c | awk '{ print $1 }')" 2
TEST_CHECKS=$((TEST_CHECKS + 1))
[ -s "$TEST_TMP/last.pt" ] && pass "the venv's module: the checkpoint written" || fail "the venv's module: no checkpoint"
finish
