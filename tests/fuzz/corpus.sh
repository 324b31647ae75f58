# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/corpus.sh: sourced by tests/fuzz/run.sh and explore.sh (after
# tests/lib/common.sh). fuzz_corpus TARGET DIR fills DIR with the target's
# corpus: its checked-in seeds (tests/fuzz/seeds/TARGET: hand-written
# inputs and every input that ever found a bug, regress-*) and inputs made
# here the same way on every run (the shipped configs, with overrides; the
# statistics dlpar-gen-data writes; float64, Fortran-order and version-2.0
# .npy files where numpy is).
fuzz_corpus() {
  local target=$1 corpus=$2 f
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
}

# Where limits are the same for replay and exploration.
FUZZ_TIMEOUT_S=10
FUZZ_RSS_MB=2048
FUZZ_MALLOC_MB=512
