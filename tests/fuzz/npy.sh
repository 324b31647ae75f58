#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/npy.sh: the .npy reader (trainer/data/npy.c): its fuzz corpus replayed (see tests/fuzz/run.sh).
. "$DLPAR_SRCDIR/tests/fuzz/run.sh" npy
