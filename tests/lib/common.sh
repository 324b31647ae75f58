# SPDX-License-Identifier: BSD-3-Clause
# tests/lib/common.sh: sourced by the shell tests. Assertions, each a named
# case with a line of its own in the test's log ("ok: NAME", or "FAILED:
# NAME: what was seen" on stderr), counted; a failed case does not stop the
# ones after it. SKIP (exit 77) with a reason, and the shared Slurm test bed
# (started once per `make check`, stopped when it ends).
# Environment (set by tests/local.mk): DLPAR_SRCDIR, DLPAR_BUILDDIR,
# DLPAR_CHECK_OWNER (the make process that owns the bed).
set -u
: "${DLPAR_SRCDIR:?run through make check}" "${DLPAR_BUILDDIR:?run through make check}"
TEST_NAME=$(basename "$0")
TEST_FAILURES=0
TEST_CHECKS=0
TEST_TMP=$(mktemp -d "$DLPAR_BUILDDIR/tests/tmp.$TEST_NAME.XXXXXX")
# end_test SHELL: the EXIT trap. Only the test's own shell (SHELL, its pid)
# removes TEST_TMP: a subshell (`( ... ) &`) signalled right after its fork,
# before bash has reset the traps it inherited, runs this trap as it dies
# (a watchdog subshell killed at once, its run already over, removed a
# test's files under it). The check is a function's: written inline in the
# trap, `[ ... ] || rm` still removed them from such a subshell.
end_test() {
  [ "$BASHPID" = "$1" ] || return 0
  rm -rf "$TEST_TMP"
}
trap "end_test $BASHPID" EXIT

fail() { TEST_FAILURES=$((TEST_FAILURES + 1)); echo "FAILED: $*" >&2; }
pass() { echo "ok: $*"; }
skip() { echo "SKIP: $*"; exit 77; }

# expect_eq WHAT GOT WANT
expect_eq() {
  TEST_CHECKS=$((TEST_CHECKS + 1))
  [ "$2" = "$3" ] && { pass "$1"; return 0; }
  fail "$1: got '$2', expected '$3'"
  return 1
}

# expect_contains WHAT TEXT NEEDLE
expect_contains() {
  TEST_CHECKS=$((TEST_CHECKS + 1))
  case $2 in *"$3"*) pass "$1" ;; *) fail "$1: expected to contain '$3', got: $2" ;; esac
}

# expect_rc WHAT GOT-RC WANT ('nonzero' for any failure)
expect_rc() {
  TEST_CHECKS=$((TEST_CHECKS + 1))
  if [ "$3" = nonzero ]; then
    if [ "$2" != 0 ]; then pass "$1: exit $2"; else fail "$1: exit 0, expected a failure"; fi
  elif [ "$2" = "$3" ]; then pass "$1: exit $2"
  else fail "$1: exit $2, expected $3"; fi
}

finish() {
  echo "$TEST_NAME: $TEST_CHECKS checks, $TEST_FAILURES failed"
  [ "$TEST_FAILURES" = 0 ]
  exit $?
}

# The shared bed: 2 emulated nodes, the freshly built plugin (required), the
# bed's synthetic topology (2 sockets x 1 core, 2 GPUs + 1 HCA each).
# use_bed [private] [any] [plugstack=FILE] [nodes=N] [slurmd_timeout=S]:
# private: a bed of this test's own (it stops when the test ends), whose
# plugstack.conf the test may rewrite; plugstack=FILE: its PlugStackConfig
# is FILE, as the test made it; nodes=N: N nodes; slurmd_timeout=S: Slurm
# marks a node down S s after it stops answering (the last three private). On a Slurm
# without mpi/pmix (dlpar-bed has-pmix) a bed test SKIPs unless it says
# `any` (it runs no PMIx program): the plugin refuses --dl-parallel there
# (it needs PMIx; spank_options.sh checks that refusal with --mpi=none),
# and no PMIx program starts under srun.
use_bed() {
  local out rc state=$DLPAR_BUILDDIR/tests/.bed owner=${DLPAR_CHECK_OWNER:-$PPID} need_pmix=yes arg plugstack=() nodes=()
  for arg in "$@"; do
    case $arg in
      private) state=$TEST_TMP/bed owner=$$ ;;
      any) need_pmix=no ;;
      plugstack=*) state=$TEST_TMP/bed owner=$$ plugstack=(--plugstack "${arg#plugstack=}") ;;
      nodes=*) state=$TEST_TMP/bed owner=$$ nodes+=(--nodes "${arg#nodes=}") ;;
      slurmd_timeout=*) state=$TEST_TMP/bed owner=$$ nodes+=(--slurmd-timeout "${arg#slurmd_timeout=}") ;;
      preempt) state=$TEST_TMP/bed owner=$$ nodes+=(--preempt) ;;
    esac
  done
  [ $need_pmix = no ] || "$DLPAR_SRCDIR/tests/testbed/dlpar-bed" has-pmix ||
    skip "this Slurm ($(srun --version 2>/dev/null | head -n 1)) has no mpi/pmix plugin, so no PMIx program starts under srun (Debian testing's slurm-wlm 26.05 is built without it: Slurm builds mpi/pmix against PMIx majors 2 to 6, Debian testing ships PMIx 7)"
  out=$("$DLPAR_SRCDIR/tests/testbed/dlpar-bed" ensure --state "$state" --owner "$owner" \
        --plugin "$DLPAR_BUILDDIR/spank/.libs/spank_dlpar.so" \
        --plugin-args "$BED_TOPOLOGY" "${plugstack[@]}" "${nodes[@]}" \
        --share "$DLPAR_BUILDDIR" --share "$DLPAR_SRCDIR" 2>"$TEST_TMP/bed.err")
  rc=$?
  [ $rc = 77 ] && skip "$(cat "$TEST_TMP/bed.err")"
  # the reason on the FAILED line and indented below it (tests/summary
  # prints both: CI's log holds no test's own log)
  [ $rc = 0 ] || { echo "FAILED: the Slurm test bed did not start (exit $rc): $(tail -n 1 "$TEST_TMP/bed.err")" >&2
                   tail -n 20 "$TEST_TMP/bed.err" | sed 's/^/  /' >&2; exit 99; }
  eval "$out"
  export SLURM_CONF
}

# A step or job never starts while a node of the bed is still COMPLETING the
# last one (Slurm 24.11 then queues it and srun prints "job N queued and
# waiting for resources" into the output a test reads): up to 10 s for the
# nodes to leave that state, then the command.
bed_settle() {
  local i
  for i in $(seq 1 100); do
    sinfo -h -o '%t' 2>/dev/null | grep -q comp || return 0
    sleep 0.1
  done
}
srun() { bed_settle; command srun "$@"; }
salloc() { bed_settle; command salloc "$@"; }
sbatch() { bed_settle; command sbatch "$@"; }

# guide_commands FILE [KIND]: the "$ " commands of a guide's ```sh blocks,
# or of its ```sh KIND blocks (doc/admin.md: build and node, the commands an
# admin runs as root, which tests/testbed/trixie deb-check runs in its roots)
guide_commands() {
  awk -v fence="\`\`\`sh${2:+ $2}" '$0 == fence { inside = 1; next } /^```/ { inside = 0 } inside && /^\$ / { print substr($0, 3) }' "$1"
}

# guide_workdir: TEST_TMP/work, with the source's etc/, contrib/ and
# quickstart and the build tree as build/, as the guides' commands expect,
# made the current directory; on PATH the system's python3 (Debian's torch,
# where installed), dlpar's programs and the nsys STAND-IN, dlpar's Python
# module from the source and build trees.
guide_workdir() {
  local work=$TEST_TMP/work
  mkdir -p "$work" "$TEST_TMP/bin" || exit 99
  ln -s "$DLPAR_SRCDIR/etc" "$work/etc"
  ln -s "$DLPAR_SRCDIR/contrib" "$work/contrib"
  ln -s "$DLPAR_SRCDIR/quickstart" "$work/quickstart"
  ln -s "$B" "$work/build"
  ln -s /usr/bin/python3 "$TEST_TMP/bin/python3"
  export BUILD=$B OMP_NUM_THREADS=1
  export PATH=$TEST_TMP/bin:$B/trainer:$B/tools:$DLPAR_SRCDIR/contrib:$DLPAR_SRCDIR/tests/stand-ins:$PATH
  export PYTHONPATH=$DLPAR_SRCDIR/python DLPAR_LIBRARY=$B/libdlpar/.libs/libdlpar.so
  cd "$work" || exit 99
}

# run_guide_commands plain|torch: the commands of doc/admin.md and
# doc/user.md (guide_commands; their "sh build" and "sh node" blocks are
# tests/testbed/trixie deb-check's) that do not run python3 (plain) or that
# do (torch), in order, each checked: it succeeds, or fails where the guide
# says "# => fails". GUIDE_COMMANDS counts those run.
GUIDE_COMMANDS=0
run_guide_commands() {
  local guide command want out rc
  for guide in admin user; do
    while IFS= read -r command; do
      case $1$command in plain*python3*) continue ;; torch*python3*) ;; torch*) continue ;; esac
      want=0
      case $command in *"# => fails") want=nonzero ;; esac
      GUIDE_COMMANDS=$((GUIDE_COMMANDS + 1))
      out=$(bash -c "$command" 2>&1 </dev/null)
      rc=$?
      expect_rc "$guide.md: $command" $rc $want
      [ "$rc" = 0 ] || [ "$want" != 0 ] || echo "$out" | tail -n 5 >&2
    done < <(guide_commands "$DLPAR_SRCDIR/doc/$guide.md")
  done
}

# Grid membership as dlpar-hello prints it: tp_members M R, dp_members M D R
tp_members() {
  local m=$1 r=$2 first i out=
  first=$(( r / m * m ))
  for ((i = first; i < first + m; i++)); do out="$out${out:+,}$i"; done
  echo "[$out]"
}
dp_members() {
  local m=$1 d=$2 r=$3 i out=
  for ((i = 0; i < d; i++)); do out="$out${out:+,}$(( r % m + i * m ))"; done
  echo "[$out]"
}

# elapsed_since START (from `date +%s.%N`) in whole seconds, rounded up
elapsed_since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { d = e - s; printf "%d", (d == int(d)) ? d : int(d) + 1 }'; }

# merged_stop_signals PID...: SIGUSR1 and SIGTERM pending together at each
# process, as where a launcher merged two stop signals into one delivery:
# each is stopped, sent both, then continued.
merged_stop_signals() {
  local pid
  for pid in "$@"; do kill -STOP "$pid"; kill -USR1 "$pid"; kill -TERM "$pid"; kill -CONT "$pid"; done
}

# For pre-flight runs that must pass: they assert the table and the flow,
# not speed. Four ranks on a 2-core machine beside make -j check can make a
# healthy rank's GEMM more than 5x slower than the median.
CHECK_ANY_SPEED="DLPAR_CHECK_STRAGGLER=0.000001 DLPAR_CHECK_MIN_BUSBW=0.000001"

# The major version of the Open MPI libdlpar runs with (0: none found).
ompi_major() { ompi_info --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p' | cut -d. -f1 | grep . || echo 0; }

B=$DLPAR_BUILDDIR
BED_TOPOLOGY=topology_xml=$DLPAR_SRCDIR/tests/topo/bed-node.xml

# A small generated dataset for the trainer tests (in TEST_TMP/data).
make_data() {
  "$B/trainer/dlpar-gen-data" --dir="$TEST_TMP/data" --channels=4 --height=16 --width=32 --steps=24 --years=2 "$@" \
    >/dev/null || { echo "FAILED: dlpar-gen-data" >&2; exit 99; }
}

# The overrides that point a config at make_data's dataset and TEST_TMP/runs.
data_args() {
  local d=$TEST_TMP/data
  echo "--train_data_path=$d/train --valid_data_path=$d/valid --global_means_path=$d/stats/global_means.npy" \
       "--global_stds_path=$d/stats/global_stds.npy --expdir=$TEST_TMP/runs"
}

# step_losses FILE: "step loss" per line from a metrics.jsonl
step_losses() { sed -n 's/^{"step": \([0-9]*\), "loss": \([^,]*\),.*/\1 \2/p' "$1"; }

# max_rel TEXT_A TEXT_B ("key value" lines): "LARGEST COUNT", the largest
# |a - b| / |b| over the keys both have, and how many they share
max_rel() {
  join <(sort -k1,1 <<<"$1") <(sort -k1,1 <<<"$2") |
    awk '{ d = ($2 - $3) / $3; d = d < 0 ? -d : d; if (d > m) m = d; n++ } END { printf "%.3g %d\n", m, n }'
}

# max_rel_diff FILE_A FILE_B: max_rel over the steps' losses of two metrics.jsonl
max_rel_diff() { max_rel "$(step_losses "$1")" "$(step_losses "$2")"; }

# Debian 13's torch 2.6 was built without libuv yet asks TCPStore for it by
# default, so env:// fails there under any launcher (torchrun too): torch's
# own switch, USE_LIBUV=0, for the tests' unchanged env:// programs (dlpar's
# module needs none). Nothing where /usr/bin/python3's torch has libuv.
torch_env_without_libuv() {
  /usr/bin/python3 -c 'import torch.distributed as d; d.TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False)' \
    2>&1 | grep -q libuv && export USE_LIBUV=0
  return 0
}
