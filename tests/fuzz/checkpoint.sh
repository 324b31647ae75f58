#!/bin/bash
# tests/fuzz/checkpoint.sh: the checkpoint reader (trainer/checkpoint.c) under the fuzzer (see tests/fuzz/run.sh).
. "$DLPAR_SRCDIR/tests/fuzz/run.sh" checkpoint
