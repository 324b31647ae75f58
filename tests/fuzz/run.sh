# tests/fuzz/run.sh TARGET: sourced by tests/fuzz/TARGET.sh. Fuzzes one
# reader of user input for a bounded time and asserts 0 crashes, 0 hangs
# (a per-input timeout) and bounded memory (an RSS limit): with libFuzzer
# (ASan + UBSan, tests/fuzz/libfuzzer/fuzz_TARGET) where configure found
# clang, else with the seeded mutation driver; then the driver build (CC,
# the production compiler) runs every seed once, regressions included.
# DLPAR_FUZZ_SECONDS (default 15) and DLPAR_FUZZ_SEED (default 1) change the
# run; a failing input is kept as $DLPAR_BUILDDIR/tests/fuzz-TARGET-*.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
target=$1
seconds=${DLPAR_FUZZ_SECONDS:-15}
seed=${DLPAR_FUZZ_SEED:-1}
rss_mb=2048
timeout_s=10
corpus=$TEST_TMP/corpus
mkdir -p "$corpus"
cp "$DLPAR_SRCDIR/tests/fuzz/seeds/$target"/* "$corpus/"
case $target in
yaml) cp "$DLPAR_SRCDIR"/etc/*.yaml "$corpus/" ;;
config)
  for f in "$DLPAR_SRCDIR"/etc/*.yaml; do
    cp "$f" "$corpus/$(basename "$f")"
    { cat "$f"; printf '\n--8<--\n--lr=1e-3\n--img_size=[32, 64]\n--limit_nsamples=None\n--expdir=/tmp/x\n'; } \
      >"$corpus/$(basename "$f").overrides"
  done ;;
npy)
  # the statistics dlpar-gen-data writes (float32), and float64/2.0-header files where numpy is
  make_data
  cp "$TEST_TMP"/data/stats/*.npy "$corpus/"
  /usr/bin/python3 - "$corpus" 2>/dev/null <<'PY' || true
import sys, numpy as np
np.save(sys.argv[1] + "/f8.npy", np.arange(12, dtype="<f8").reshape(3, 4))
np.save(sys.argv[1] + "/fortran.npy", np.asfortranarray(np.ones((2, 3), dtype="<f4")))
np.lib.format.write_array(open(sys.argv[1] + "/v2.npy", "wb"), np.zeros((1, 2, 1, 1), "<f4"), version=(2, 0))
PY
  ;;
esac
echo "fuzz $target: $(ls "$corpus" | wc -l) seeds, ${seconds}s, seed $seed"

fuzzer=$B/tests/fuzz/libfuzzer/fuzz_$target
driver=$B/tests/fuzz/fuzz_$target
if [ -x "$fuzzer" ]; then
  out=$("$fuzzer" -max_total_time="$seconds" -timeout=$timeout_s -rss_limit_mb=$rss_mb -malloc_limit_mb=512 \
        -max_len=16384 -seed="$seed" -print_final_stats=1 -artifact_prefix="$B/tests/fuzz-$target-" \
        "$corpus" 2>&1)
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' <<<"$out")
  peak=$(sed -n 's/^stat::peak_rss_mb: *//p' <<<"$out")
  how="libFuzzer"
else
  echo "no libFuzzer build (configure found no clang with -fsanitize=fuzzer): the seeded mutation driver"
  out=$(cd "$B/tests" && "$driver" --seconds="$seconds" --seed="$seed" --timeout=$timeout_s --rss-limit-mb=$rss_mb \
        "$corpus" 2>&1)
  rc=$?
  runs=$(sed -n 's/^fuzz: \([0-9]*\) inputs.*/\1/p' <<<"$out")
  peak=$(sed -n 's/.*peak RSS \([0-9]*\) MB.*/\1/p' <<<"$out")
  how="the mutation driver"
fi
expect_rc "$target under $how (0 crashes, 0 hangs over ${timeout_s}s, RSS under ${rss_mb} MB)" $rc 0
[ $rc = 0 ] || echo "$out" | grep -v '^#' | tail -40 >&2
nseeds=$(ls "$corpus" | wc -l)
TEST_CHECKS=$((TEST_CHECKS + 1))
[ "${runs:-0}" -gt "$nseeds" ] || fail "$target: ${runs:-0} inputs ran in ${seconds}s, no more than the $nseeds seeds"
echo "fuzz $target: $runs inputs under $how, peak RSS ${peak:-?} MB"

# every seed once through the CC build
out=$(cd "$B/tests" && "$driver" --seconds=0 --timeout=$timeout_s --rss-limit-mb=$rss_mb "$DLPAR_SRCDIR/tests/fuzz/seeds/$target" 2>&1)
expect_rc "$target seeds through the CC build: $out" $? 0
finish
