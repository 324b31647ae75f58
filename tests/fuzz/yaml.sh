#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/yaml.sh: the YAML tree (trainer/config/yamltree.c): its fuzz corpus replayed (see tests/fuzz/run.sh).
. "$DLPAR_SRCDIR/tests/fuzz/run.sh" yaml
