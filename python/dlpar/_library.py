# SPDX-License-Identifier: BSD-3-Clause
"""Where libdlpar.so is: `make install` writes the installed path here;
DLPAR_LIBRARY overrides it (tests use the build tree's)."""
PATH = "libdlpar.so.0"
