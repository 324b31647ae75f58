#!/bin/bash
# tests/fuzz/yaml.sh: the YAML tree (trainer/yamltree.c) under the fuzzer (see tests/fuzz/run.sh).
. "$DLPAR_SRCDIR/tests/fuzz/run.sh" yaml
