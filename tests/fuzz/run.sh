# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/run.sh TARGET: sourced by tests/fuzz/TARGET.sh in make check.
# Replays the target's corpus (tests/fuzz/corpus.sh: the checked-in seeds,
# every past finding among them, and inputs made the same way each run)
# once per input, deterministically: no random search here, so a run
# passes or fails on the code alone. Each input must neither crash nor
# hang (a per-input timeout) nor exceed the RSS limit, and every refusal
# must be one line (tests/fuzz/fuzz.h). Twice: through the libFuzzer build
# (ASan + UBSan) where configure found clang, and through the driver build
# (CC, the production compiler). Random exploration is `make fuzz`
# (tests/fuzz/explore.sh).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
. "$DLPAR_SRCDIR/tests/fuzz/corpus.sh"
target=$1
corpus=$TEST_TMP/corpus
fuzz_corpus "$target" "$corpus"
ninputs=$(find "$corpus" -type f | wc -l)
echo "fuzz $target: replaying $ninputs inputs"

fuzzer=$B/tests/fuzz/libfuzzer/fuzz_$target
if [ -x "$fuzzer" ]; then
  out=$("$fuzzer" -timeout=$FUZZ_TIMEOUT_S -rss_limit_mb=$FUZZ_RSS_MB -malloc_limit_mb=$FUZZ_MALLOC_MB \
        "$corpus"/* 2>&1)
  rc=$?
  expect_rc "$target: $ninputs inputs through libFuzzer (ASan + UBSan): no crash, hang or leak" $rc 0
  [ $rc = 0 ] || echo "$out" | grep -v '^#' | tail -40 >&2
  expect_eq "$target: inputs libFuzzer ran" "$(grep -c '^Executed ' <<<"$out")" "$ninputs"
else
  echo "no libFuzzer build (configure found no clang with -fsanitize=fuzzer): the driver build only"
fi

out=$(cd "$TEST_TMP" && "$B/tests/fuzz/fuzz_$target" --seconds=0 --timeout=$FUZZ_TIMEOUT_S \
      --rss-limit-mb=$FUZZ_RSS_MB "$corpus" 2>&1)
rc=$?
expect_rc "$target: $ninputs inputs through the CC build: $out" $rc 0
expect_contains "$target: inputs the CC build ran" "$out" "fuzz: $ninputs inputs ($ninputs seeds)"
finish
