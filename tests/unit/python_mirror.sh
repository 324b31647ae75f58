#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/python_mirror.sh: the Python module's ctypes mirrors of
# dlpar.h's structs (python/dlpar/__init__.py: Info, _Options) hold the C
# structs' fields at the C offsets, in the C sizes (tests/unit/struct_layout
# prints them); and, under dlpar-run, dlpar_info's effective rendezvous
# timeout is what the environment set (the module's torch store and
# process group wait that long), else the default for the job's size.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
export PYTHONPATH=$DLPAR_SRCDIR/python DLPAR_LIBRARY=$B/libdlpar/.libs/libdlpar.so
c_side=$("$B/tests/unit/struct_layout")
expect_rc "struct_layout" $? 0
py_side=$(/usr/bin/python3 - <<'PY'
import ctypes, dlpar
for name, cls in (("dlpar_info", dlpar.Info), ("dlpar_options", dlpar._Options)):
    for field, _ in cls._fields_:
        print(f"{name}.{field.lstrip('_')} {getattr(cls, field).offset}")
    print(f"{name} {ctypes.sizeof(cls)}")
PY
)
expect_eq "the ctypes mirrors: each field at the C offset, each struct the C size" "$py_side" "$c_side"

probe() {
  "$B/tools/dlpar-run" -n 2 -- /usr/bin/python3 -c '
import sys, dlpar
info = dlpar.bootstrap().info
sys.stdout.write(f"{info.rank} {info.rendezvous_timeout_s} {info.collective_timeout_s}\n")  # one write a rank
sys.stdout.flush()' 2>&1 | sort
}
expect_eq "DLPAR_RENDEZVOUS_TIMEOUT=7, DLPAR_COLLECTIVE_TIMEOUT=9: in dlpar_info on each rank" \
  "$(DLPAR_RENDEZVOUS_TIMEOUT=7 DLPAR_COLLECTIVE_TIMEOUT=9 probe)" "$(printf '0 7.0 9.0\n1 7.0 9.0')"
expect_eq "unset: 120 s and 300 s + 2 ms per rank" "$(unset DLPAR_RENDEZVOUS_TIMEOUT DLPAR_COLLECTIVE_TIMEOUT; probe)" \
  "$(printf '0 120.004 300.004\n1 120.004 300.004')"
finish
