# SPDX-License-Identifier: BSD-3-Clause
"""python3 -m dlpar: where this module looks for libdlpar.so, in order
(dlpar/_find.py), and the one it loads: for a venv or a container that
cannot find the library."""
import sys

from . import _find


def main():
    for path, source in _find.candidates():
        sys.stdout.write(f"{source}: {path}\n")
    try:
        _, path = _find.load()
    except OSError as error:
        sys.stdout.write(f"loads: none: {error}\n")
        return 1
    sys.stdout.write(f"loads: {path}\n")
    return 0


sys.exit(main())
