#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/explore.sh TARGET: one target's random exploration, for `make
# fuzz` (never `make check`). libFuzzer (ASan + UBSan) where configure found
# clang, else the seeded mutation driver, runs for DLPAR_FUZZ_SECONDS
# (default 300) from DLPAR_FUZZ_SEED (default: the clock, printed, so a run
# can be repeated), starting from the replay corpus plus what earlier
# explorations kept (libFuzzer's coverage corpus in
# $DLPAR_BUILDDIR/tests/fuzz/explore-TARGET). It reports inputs, inputs/s
# and peak RSS. An input that crashes, hangs or breaks a rule is minimised
# and added to the checked-in corpus as tests/fuzz/seeds/TARGET/regress-HASH,
# which make check replays from then on; the run then fails, naming it.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
. "$DLPAR_SRCDIR/tests/fuzz/corpus.sh"
target=$1
seconds=${DLPAR_FUZZ_SECONDS:-300}
seed=${DLPAR_FUZZ_SEED:-$(date +%s)}
kept=$B/tests/fuzz/explore-$target
found=$TEST_TMP/found
corpus=$TEST_TMP/corpus
mkdir -p "$kept" "$found"
fuzz_corpus "$target" "$corpus"
fuzzer=$B/tests/fuzz/libfuzzer/fuzz_$target
driver=$B/tests/fuzz/fuzz_$target
echo "fuzz $target: exploring for ${seconds}s from seed $seed ($(find "$corpus" -type f | wc -l) inputs in the corpus," \
     "$(find "$kept" -type f | wc -l) kept from earlier runs)"

if [ -x "$fuzzer" ]; then
  how="libFuzzer (ASan + UBSan)"
  out=$("$fuzzer" -max_total_time="$seconds" -seed="$seed" -timeout=$FUZZ_TIMEOUT_S -rss_limit_mb=$FUZZ_RSS_MB \
        -malloc_limit_mb=$FUZZ_MALLOC_MB -max_len=16384 -print_final_stats=1 -artifact_prefix="$found/" \
        "$kept" "$corpus" 2>&1)
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' <<<"$out")
  peak=$(sed -n 's/^stat::peak_rss_mb: *//p' <<<"$out")
  took=$(sed -n 's/^stat::average_exec_per_sec: *//p' <<<"$out")
else
  how="the seeded mutation driver (no libFuzzer: no coverage feedback)"
  out=$(cd "$found" && "$driver" --seconds="$seconds" --seed="$seed" --timeout=$FUZZ_TIMEOUT_S \
        --rss-limit-mb=$FUZZ_RSS_MB "$kept" "$corpus" 2>&1)
  rc=$?
  runs=$(sed -n 's/^fuzz: \([0-9]*\) inputs.*/\1/p' <<<"$out")
  peak=$(sed -n 's/.*peak RSS \([0-9]*\) MB.*/\1/p' <<<"$out")
  took=$(sed -n 's/.* \([0-9]*\) inputs\/s.*/\1/p' <<<"$out")
fi
echo "fuzz $target: ${runs:-?} inputs under $how, ${took:-?} inputs/s, peak RSS ${peak:-?} MB"

for input in "$found"/*; do
  [ -f "$input" ] || continue
  min=$TEST_TMP/minimised
  rm -f "$min"
  if [ -x "$fuzzer" ]; then
    "$fuzzer" -minimize_crash=1 -max_total_time=60 -timeout=$FUZZ_TIMEOUT_S -rss_limit_mb=$FUZZ_RSS_MB \
      -malloc_limit_mb=$FUZZ_MALLOC_MB -exact_artifact_path="$min" "$input" >/dev/null 2>&1
  else
    "$driver" --minimize="$input" --out="$min" --timeout=$FUZZ_TIMEOUT_S >/dev/null 2>&1
  fi
  [ -s "$min" ] || cp "$input" "$min"
  name=regress-$(sha1sum "$min" | cut -c1-12)
  cp "$min" "$DLPAR_SRCDIR/tests/fuzz/seeds/$target/$name"
  fail "$target: $(basename "$input"): minimised to $(wc -c <"$min") bytes as tests/fuzz/seeds/$target/$name" \
       "(make check replays it: fix the reader, then commit the file)"
done
[ $rc = 0 ] || { echo "$out" | grep -v '^#' | tail -30 >&2; fail "$target: $how exited $rc"; }
TEST_CHECKS=$((TEST_CHECKS + 1))
finish
