#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/loader.sh: the loader's open and read of HDF5 files (trainer/data/data.c): its fuzz corpus replayed (see tests/fuzz/run.sh).
. "$DLPAR_SRCDIR/tests/fuzz/run.sh" loader
