#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/spank_profile.sh: --dl-profile through srun and
# dlpar-run. nsys cannot be installed here, so a STAND-IN nsys script
# (tests/stand-ins/nsys) on PATH records its command line and runs the
# program; the real nsys is exercised on the GPU machine. Checked: the
# profiling request each rank gets, that exactly the selected ranks are
# re-executed under `nsys profile -t cuda,nvtx,cublas -c cudaProfilerApi
# --capture-range-end=stop -o <dir>/dlpar-<job>.<step>.rank<r>`, nvtx
# mode (no wrapping), and nsys missing refused by srun at once.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed
export PATH=$DLPAR_SRCDIR/tests/stand-ins:$PATH
export DLPAR_NSYS_RECORD=$TEST_TMP/nsys.record
hello=$B/tools/dlpar-hello
cd "$TEST_TMP"

out=$(srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 --dl-profile=nsys --dl-profile-ranks=1,2 \
      --dl-profile-steps=30-40 bash -c 'echo "env $SLURM_PROCID $DLPAR_PROFILE $DLPAR_PROFILE_STEPS $DLPAR_PROFILE_RANK $DLPAR_PROFILE_OUTPUT $SLURM_JOB_ID.$SLURM_STEP_ID"' 2>&1)
expect_rc "srun --dl-profile=nsys (env)" $? 0
for r in 0 1 2 3; do
  line=$(grep "^env $r " <<<"$out")
  job=${line##* }
  selected=0; { [ $r = 1 ] || [ $r = 2 ]; } && selected=1
  expect_eq "profile env rank $r" "$line" "env $r nsys 30-40 $selected ./dlpar-$job.rank$r $job"
done

rm -f "$DLPAR_NSYS_RECORD"
out=$(srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 --dl-profile=nsys --dl-profile-ranks=1,2 "$hello" 2>&1)
expect_rc "srun dlpar-hello under the nsys stand-in" $? 0
expect_eq "collectives ok" "$(grep -c 'collectives ok' <<<"$out")" 4
expect_eq "nsys calls" "$(wc -l <"$DLPAR_NSYS_RECORD")" 2
for r in 1 2; do
  expect_contains "nsys argv rank $r" "$(cat "$DLPAR_NSYS_RECORD")" \
    "nsys profile -t cuda,nvtx,cublas -c cudaProfilerApi --capture-range-end=stop -o ./dlpar-"
  # the program nsys runs is the executable itself (/proc/self/exe; libtool's .libs in a build tree)
  expect_eq "nsys argv rank $r program" "$(grep -c "\.rank$r /[^ ]*dlpar-hello\$" "$DLPAR_NSYS_RECORD")" 1
done

# nsys missing: srun refuses before launch, in one line (srun's own error,
# and no task ran), instead of the ranks that have no nsys failing and the
# others waiting out the rendezvous (120 s: the timeout's 124 would show it)
out=$(PATH=/usr/bin:/bin timeout 100 srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 --dl-profile=nsys "$hello" 2>&1)
expect_rc "nsys missing" $? 1
expect_eq "nsys missing: one dlpar line" "$(grep -c 'dlpar:' <<<"$out")" 1
expect_contains "nsys missing" "$out" "srun: error: dlpar: --dl-profile=nsys: nsys is not on the PATH of srun"
expect_eq "nsys missing: no task ran" "$(grep -c 'dlpar-hello' <<<"$out")" 0

# nvtx: no wrapping, the request is exported
rm -f "$DLPAR_NSYS_RECORD"
out=$(srun -N1 -n2 --dl-parallel=1x2 --dl-profile=nvtx "$hello" 2>&1)
expect_rc "srun --dl-profile=nvtx" $? 0
expect_eq "nvtx: nsys not called" "$(cat "$DLPAR_NSYS_RECORD" 2>/dev/null | wc -l)" 0

# dlpar-run: the same request, the same wrapping
rm -f "$DLPAR_NSYS_RECORD"
out=$("$B/tools/dlpar-run" -n 2 --dl-profile=nsys --dl-profile-ranks=0 -- "$hello" 2>&1)
expect_rc "dlpar-run --dl-profile=nsys" $? 0
expect_eq "dlpar-run: nsys calls" "$(wc -l <"$DLPAR_NSYS_RECORD")" 1
expect_contains "dlpar-run: nsys argv" "$(cat "$DLPAR_NSYS_RECORD")" \
  "nsys profile -t cuda,nvtx,cublas -c cudaProfilerApi --capture-range-end=stop -o ./dlpar-local"
expect_eq "dlpar-run: nsys argv program" "$(grep -c "\.0\.rank0 /[^ ]*dlpar-hello\$" "$DLPAR_NSYS_RECORD")" 1
finish
