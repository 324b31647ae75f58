# SPDX-License-Identifier: BSD-3-Clause
"""dlpar._find: the places libdlpar.so may be, in the order they are
tried: DLPAR_LIBRARY; the path `make install` wrote into _library.py
(absolute there; the bare soname in a source tree or a pip install);
ctypes.util.find_library (ldconfig's cache, LD_LIBRARY_PATH); dlpar.pc's
libdir (pkg-config, PKG_CONFIG_PATH); LIBDIR beside the dlpar-run on PATH
(PREFIX/bin/dlpar-run: PREFIX/lib, PREFIX/lib64 and the multiarch lib
directory). A pip-installed module thus finds the library wherever
`make install` or the .deb put it, without DLPAR_LIBRARY."""
import ctypes.util
import os
import shutil
import subprocess
import sysconfig

from . import _library

SONAME = "libdlpar.so.0"


def _pkg_config_libdir():
    """dlpar.pc's libdir, or None (no pkg-config, no dlpar.pc)."""
    if not shutil.which("pkg-config"):
        return None
    try:
        done = subprocess.run(["pkg-config", "--variable=libdir", "dlpar"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _beside_dlpar_run():
    """The lib directories of the prefix whose bin/ holds the dlpar-run on PATH."""
    tool = shutil.which("dlpar-run")
    if not tool:
        return []
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(tool)))
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    names = ["lib", "lib64"] + ([os.path.join("lib", multiarch)] if multiarch else [])
    return [os.path.join(prefix, name) for name in names]


def candidates():
    """(path, where it came from) for each place to try, in order."""
    found = []
    if os.environ.get("DLPAR_LIBRARY"):
        return [(os.environ["DLPAR_LIBRARY"], "DLPAR_LIBRARY")]
    if os.path.isabs(_library.PATH):
        found.append((_library.PATH, "make install's path"))
    by_ldconfig = ctypes.util.find_library("dlpar")
    if by_ldconfig:
        found.append((by_ldconfig, "ldconfig or LD_LIBRARY_PATH"))
    libdir = _pkg_config_libdir()
    if libdir:
        found.append((os.path.join(libdir, SONAME), "dlpar.pc's libdir"))
    found += [(os.path.join(d, SONAME), "beside dlpar-run") for d in _beside_dlpar_run()]
    found.append((SONAME, "the dynamic linker's search path"))
    return found


def load():
    """The first candidate that loads: (ctypes.CDLL, path); else OSError
    naming every place tried and the fix."""
    tried = []
    for path, source in candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as error:
            tried.append(f"{path} ({source}): {error}")
    raise OSError(f"cannot load libdlpar: tried {'; '.join(tried)} (set DLPAR_LIBRARY to libdlpar.so's path, "
                  f"or put its directory on LD_LIBRARY_PATH or its dlpar.pc on PKG_CONFIG_PATH)")

