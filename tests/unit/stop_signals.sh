#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/stop_signals.sh: what dlpar_init does with the stop signals, in
# a plain run (no PMIx: one rank, no bed), through rank_probe --wait-stop
# (dlpar_stop_requested once per 0.1 s):
#  - by default (and with DLPAR_SIGNALS=stop) SIGTERM becomes a stop
#    request: a later dlpar_stop_requested returns 1 and the program ends on
#    its own, exit 0 (launcher_faults.sh checks the agreement across ranks
#    under srun and dlpar-run);
#  - dlpar_options.keep_signals = 1 (--keep-signals), or DLPAR_SIGNALS=keep:
#    SIGTERM keeps its default disposition, so it ends the process: killed
#    by SIGTERM, no stop request;
#  - another DLPAR_SIGNALS value fails dlpar_init with one line naming the
#    setting and its values.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
probe=$B/tests/integration/rank_probe
plain=(env -u PMIX_NAMESPACE -u DLPAR_VERSION -u DLPAR_SIGNALS)

# sigterm_probe WHAT [VAR=VALUE...] -- [PROBE ARGS...]: starts the probe,
# waits for its first stop poll, sends SIGTERM, waits up to 20 s for its end
# (then SIGKILL: a hang); sets rc (the wait status: 143 is killed by SIGTERM)
# and out (its stdout and stderr).
sigterm_probe() {
  local what=$1 vars=() pid i
  shift
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  "${plain[@]}" "${vars[@]}" "$probe" --wait-stop "$@" >"$TEST_TMP/out" 2>&1 &
  pid=$!
  for i in $(seq 200); do grep -q 'waiting for a stop signal' "$TEST_TMP/out" && break; sleep 0.1; done
  kill -TERM $pid
  for i in $(seq 200); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then
    kill -KILL $pid
    fail "$what: still running 20 s after SIGTERM: $(cat "$TEST_TMP/out")"
  fi
  wait $pid
  rc=$?
  out=$(cat "$TEST_TMP/out")
}

sigterm_probe "default" --
expect_rc "default: SIGTERM is a stop request, the program ends on its own" $rc 0
expect_contains "default: dlpar_stop_requested returned 1" "$out" "rank_probe: rank 0 stopping at iteration"
expect_contains "default: libdlpar's line" "$out" "dlpar: rank 0: Terminated received: stopping at the next step boundary"

sigterm_probe "DLPAR_SIGNALS=stop" DLPAR_SIGNALS=stop --
expect_rc "DLPAR_SIGNALS=stop: the default" $rc 0
expect_contains "DLPAR_SIGNALS=stop: dlpar_stop_requested returned 1" "$out" "rank_probe: rank 0 stopping at iteration"

sigterm_probe "keep_signals" -- --keep-signals
expect_rc "keep_signals = 1: killed by SIGTERM" $rc 143
expect_eq "keep_signals = 1: no stop request" "$(grep -c 'stopping' <<<"$out")" 0

sigterm_probe "DLPAR_SIGNALS=keep" DLPAR_SIGNALS=keep --
expect_rc "DLPAR_SIGNALS=keep: killed by SIGTERM" $rc 143
expect_eq "DLPAR_SIGNALS=keep: no stop request" "$(grep -c 'stopping' <<<"$out")" 0

out=$("${plain[@]}" DLPAR_SIGNALS=ignore "$probe" 2>&1)
expect_rc "DLPAR_SIGNALS=ignore: refused" $? 1
expect_eq "DLPAR_SIGNALS=ignore: one line naming the setting and its values" "$out" \
  "rank_probe: DLPAR_SIGNALS=ignore: unknown (use stop or keep, or unset it)"
finish
