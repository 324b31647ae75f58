#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/config.sh: config files and --key=value overrides (trainer/config/train_config.c): its fuzz corpus replayed (see tests/fuzz/run.sh).
. "$DLPAR_SRCDIR/tests/fuzz/run.sh" config
