#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/one_ending.sh: one place in libdlpar ends the step or the
# process (libdlpar/ending/end_step.c; dlpar.h lists every condition that gets
# there), read from what the compiled objects of libdlpar.so (libdlpar/ and
# common/) call, not from the text: only end_step.o calls _exit and
# pmixboot.c's dlpar_pmix_abort, only pmixboot.o calls PMIx_Abort, and no
# object calls exit, abort or MPI_Abort. Who decides to end goes through
# end_step.c too, and only the files that own a condition's policy do:
# init.c, mpi_init_guard.c and watchdog.c (and end_step.c's dlpar_abort
# for the program); the transports (pmixboot.c, rendezvous_diagnosis.c)
# return statuses and end nothing.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
archives="$B/libdlpar/.libs/libdlpar_core.a $B/common/.libs/libdlpar_common.a"
[ -e "$B/libdlpar/.libs/libdlpar.so" ] || skip "libdlpar is not built here (configure found no PMIx)"
# "object symbol" for every call of a way to end, sorted
calls=$(nm -A -u $archives | awk '{ sub(/:$/, "", $1); n = split($1, path, ":"); print path[n], $NF }' |
  grep -wE '_exit|_Exit|exit|quick_exit|abort|PMIx_Abort|MPI_Abort|dlpar_pmix_abort' | sort)
expect_eq "the objects that end the step or the process" "$calls" \
  "$(printf 'libdlpar_core_la-end_step.o _exit\nlibdlpar_core_la-end_step.o dlpar_pmix_abort\nlibdlpar_core_la-pmixboot.o PMIx_Abort')"
deciders=$(nm -A -u $archives | awk '{ sub(/:$/, "", $1); n = split($1, path, ":"); print path[n], $NF }' |
  grep -wE 'dlpar_end_step|dlpar_end_process' | sort)
expect_eq "the objects that decide to end the step or the process" "$deciders" \
  "$(printf '%s\n' 'libdlpar_core_la-init.o dlpar_end_step' 'libdlpar_core_la-mpi_init_guard.o dlpar_end_step' \
       'libdlpar_core_la-watchdog.o dlpar_end_process' 'libdlpar_core_la-watchdog.o dlpar_end_step')"
finish
