#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/checkpoint.sh: the checkpoint reader (trainer/run/checkpoint.c): its fuzz corpus replayed (see tests/fuzz/run.sh).
. "$DLPAR_SRCDIR/tests/fuzz/run.sh" checkpoint
