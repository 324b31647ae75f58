#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/threads.sh: libdlpar's and the trainer's threads under
# ThreadSanitizer, in a build configured --enable-sanitizers=thread (make
# check-threads; it SKIPs in any other build), all under dlpar-run:
#  - dlpar-hello's collectives on a 2x2 grid (the MPI_Init guard thread,
#    the watchdog of every collective);
#  - a rank that stalls (SIGSTOP): the watchdog names it and ends the run;
#  - a rank that never arrives: the rendezvous names it;
#  - dlpar-train on a 1x2 grid: the loader's reader threads, validation, a
#    checkpoint.
# Each run exits as it does uninstrumented and TSan reports nothing;
# tests/tsan.supp holds the reports inside Open MPI and OpenPMIx (not
# instrumented), none of dlpar's own code.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
grep -q -- '-fsanitize=thread' "$B/Makefile" ||
  skip "not a ThreadSanitizer build (configure --enable-sanitizers=thread, then make check-threads)"
export TSAN_OPTIONS="suppressions=$DLPAR_SRCDIR/tests/tsan.supp halt_on_error=0 exitcode=66 second_deadlock_stack=1"
export OMP_NUM_THREADS=1
run=$B/tools/dlpar-run
probe=$B/tests/integration/rank_probe

# tsan_run WHAT EXIT CMD...: CMD exits EXIT and TSan reports nothing
tsan_run() {
  local what=$1 want=$2 out rc
  shift 2
  out=$(timeout 120 "$@" 2>&1)
  rc=$?
  expect_rc "$what" $rc "$want"
  expect_eq "$what: ThreadSanitizer reports" "$(grep -c 'WARNING: ThreadSanitizer' <<<"$out")" 0
  [ "$rc" = "$want" ] || tail -n 60 <<<"$out" >&2
}

tsan_run "dlpar-hello on 2x2" 0 "$run" -n 4 --dl-parallel=2x2 -- "$B/tools/dlpar-hello"
DLPAR_COLLECTIVE_TIMEOUT=3 tsan_run "a stalled rank" 1 "$run" -n 4 -- "$probe" --stall-rank=2
DLPAR_RENDEZVOUS_TIMEOUT=3 tsan_run "a rank that never arrives" 1 "$run" -n 4 -- "$probe" --exit-rank=3
make_data
tsan_run "dlpar-train on 1x2" 0 "$run" -n 2 --dl-parallel=1x2 -- "$B/trainer/dlpar-train" --config=test \
  "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) --num_iters=24
finish
