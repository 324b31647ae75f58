#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/torch_requeue.sh: contrib/pytorch/ddp_requeue.py (dlpar's
# stop agreement, gloo) in a batch job that outlives its time limit or is
# preempted, as timelimit.sh runs dlpar-train: a 2-node bed of this test's
# own with preemption (dlpar-bed --preempt: partition debug, GraceTime=30,
# preempted by partition high), a batch script whose last line is
# `exec dlpar-restart --checkpoint=PATH srun ... ddp_requeue.py`, submitted
# with --requeue, stopped by
#  (a) the time limit's warning to the batch shell, -t 2 --signal=B:USR1@110
#      (a 2-minute limit: slurmctld sends the warning at a periodic check);
#  (b) preemption by a job of partition high (Slurm's SIGTERM to the tasks);
#  (c) scancel -b -s USR1 (the batch shell only).
# In each, every rank logs the same stop step k, every task exits 85, the
# job is requeued once (by dlpar-restart, or by Slurm itself for a preempted
# job on Slurm 24.05 and later), the requeued run's tasks (DLPAR_RESTART=1,
# DLPAR_CHECKPOINT from dlpar-restart) resume at step k+1 and run to k+5,
# the job ends COMPLETED, and the losses of steps 0 to k+5 are an
# uninterrupted run's to fp32 tolerance. The tasks run with no Slurm command
# on their PATH (only python3 there, set by env as srun starts them): each task checks that itself before it
# starts the example, so nothing of the stop and the resume needs one.
# Slurm holds a requeued job back for two minutes: the test lifts the hold
# (scontrol update StartTime=now; in (b) once the high job has run) and
# gives the requeued run a 5-minute limit, so that no warning comes again.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
  skip "no PyTorch for /usr/bin/python3 (apt-get install python3-torch)"
use_bed preempt
. "$DLPAR_SRCDIR/tests/lib/requeue.sh"
restart=$DLPAR_SRCDIR/contrib/dlpar-restart
example=$DLPAR_SRCDIR/contrib/pytorch/ddp_requeue.py
export PYTHONPATH=$DLPAR_SRCDIR/python DLPAR_LIBRARY=$B/libdlpar/.libs/libdlpar.so OMP_NUM_THREADS=1 \
  DLPAR_RENDEZVOUS_TIMEOUT=60
# The tasks' PATH: python3 alone (Debian keeps Slurm's commands in /usr/bin
# beside it).
mkdir -p "$TEST_TMP/nobin"
ln -s /usr/bin/python3 "$TEST_TMP/nobin/python3"
# The task: no Slurm command found (bash's builtins only, as its PATH holds
# nothing else), then the example; a requeued run's steps end at k+5, k the
# stop step that the test writes to NAME.steps before it lets the job run
# again.
cat >"$TEST_TMP/task" <<SH
#!/bin/bash
if found=\$(command -v srun scontrol squeue sbatch scancel); then
  echo "task: rank \$SLURM_PROCID: Slurm commands on PATH=\$PATH: \${found//\$'\n'/ }"
  exit 1
fi
echo "task: rank \$SLURM_PROCID: no Slurm command on PATH=\$PATH"
steps=100000000
[ "\${DLPAR_RESTART:-0}" -ge 1 ] && steps=\$(<"$TEST_TMP/\$1.steps")
exec python3 "$example" --steps="\$steps" --checkpoint="$TEST_TMP/\$1.pt"
SH
chmod +x "$TEST_TMP/task"
declare -A stopped_k
step=(-N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2)
# The program srun runs: env setting that PATH, then the task (srun
# --export=ALL,PATH=DIR gives the tasks the other variables it names but
# srun's own PATH: Slurm 22.05's behaviour, with no plugin too).
task=(/usr/bin/env "PATH=$TEST_TMP/nobin" "$TEST_TMP/task")

losses() { sed -n 's/^ddp_requeue: step \([0-9]*\) loss \(.*\)/\1 \2/p' "$1"; }
stop_steps() { sed -n 's/^dlpar: rank \([0-9]\): stop agreed at step \([0-9]*\) .*/\1 \2/p' "$1" | sort; }

# submit NAME SBATCH-OPTIONS...: the job (job), its output in TEST_TMP/NAME.out
submit() {
  local name=$1
  shift
  cat >"$TEST_TMP/$name.sbatch" <<SH
#!/bin/bash
echo "run \${SLURM_RESTART_COUNT:-0} of job \$SLURM_JOB_ID"
exec $restart --checkpoint=$TEST_TMP/$name.pt srun ${step[*]} ${task[*]} $name
SH
  job=$(cd "$TEST_TMP" && sbatch --parsable -N2 --ntasks-per-node=2 --requeue --open-mode=append -o "$TEST_TMP/$name.out" \
        "$@" "$TEST_TMP/$name.sbatch")
}

# requeued_and_resumed NAME: once the job is requeued, the stop step k (in
# stopped_k[NAME]) read and the requeued run's steps set to end at k+5, its hold
# lifted; it ends; the stop at step k by every rank, the resume at k+1, the
# runs' PATH
requeued_and_resumed() {
  local name=$1 out k='' state states
  wait_text "$name" "run 0 of job" || return
  states=
  for _ in $(seq 2400); do
    note_state
    # (3 s after the requeue: a run started in the second of the requeue
    # has its credential revoked with the last run's, and Slurm ends it)
    # (a preempted job: once the preempting job has run, which it does
    # first, so that it does not preempt the resumed run)
    if [ "$state" = "PENDING BeginTime" ]; then
      k=$(stop_steps "$TEST_TMP/$name.out" | awk 'NR == 1 { print $2 }')
      echo $((${k:-0} + 6)) >"$TEST_TMP/$name.steps"
      [ "$name" != preempt ] || wait_text high "high ran"
      sleep 3
      scontrol update JobId="$job" StartTime=now TimeLimit=5
      break
    fi
    case $state in COMPLETED* | FAILED* | CANCELLED* | gone)
      fail "$name: ended, not requeued (the job's states: ${states#, }): $(tail -n 5 "$TEST_TMP/$name.out")"
      return ;;
    esac
    sleep 0.1
  done
  ended_after_one_requeue "$name"
  out=$(cat "$TEST_TMP/$name.out")
  stopped_k[$name]=$k
  echo "$name: stopped at step ${k:-none}"
  expect_eq "$name: every rank logged the same stop step" "$(stop_steps "$TEST_TMP/$name.out")" \
    "$(printf '%s\n' "0 ${k:-none}" "1 ${k:-none}" "2 ${k:-none}" "3 ${k:-none}")"
  expect_eq "$name: every task exited 85 (stopped early, more to do)" \
    "$(grep -o 'srun: error: n[12]: tasks [0-9-]*: Exited with exit code 85' <<<"$out" | sort | paste -sd ' ')" \
    "srun: error: n1: tasks 0-1: Exited with exit code 85 srun: error: n2: tasks 2-3: Exited with exit code 85"
  if [ "$name" = preempt ] && slurm_requeues_preempted; then
    expect_contains "$name: dlpar-restart left the requeue to Slurm $slurm_version" "$out" \
      "dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): job $job is being preempted, and Slurm requeues it itself as this script ends"
  else
    expect_contains "$name: dlpar-restart requeued the job" "$out" \
      "dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): requeued job $job,"
  fi
  expect_eq "$name: the job's runs, the requeued one once" "$(grep '^run [0-9]* of job' <<<"$out" | paste -sd ' ')" \
    "run 0 of job $job run 1 of job $job"
  expect_eq "$name: every task of both runs found no Slurm command on its PATH" \
    "$(grep -c "^task: rank [0-3]: no Slurm command on PATH=$TEST_TMP/nobin\$" <<<"$out") $(grep -c '^task: .*Slurm commands on' <<<"$out")" "8 0"
  expect_eq "$name: every rank of the requeued run resumed at k+1" \
    "$(grep -c "^ddp_requeue: rank [0-3]: resumed at step $((k + 1))\$" <<<"$out")" 4
  expect_eq "$name: the steps run, 0 to k+5, each once" "$(losses "$TEST_TMP/$name.out" | awk '{ print $1 }' | paste -sd ' ')" \
    "$(seq 0 $((k + 5)) | paste -sd ' ')"
  expect_contains "$name: the requeued run done" "$out" "ddp_requeue: done on 4 ranks"
}

# (a) the time limit's warning to the batch shell
start=$(date +%s)
submit limit -t 2 --signal=B:USR1@110
requeued_and_resumed limit
expect_contains "limit: dlpar-restart passed SIGUSR1 on" "$(cat "$TEST_TMP/limit.out")" \
  "dlpar-restart: SIGUSR1 received: passed on to the step (srun forwards it to every task)"
echo "limit: $(($(date +%s) - start)) s in all"

# (b) preemption: a job of partition high on both nodes, once the job has run 20 steps
start=$(date +%s)
submit preempt
wait_text preempt "ddp_requeue: step 20 loss"
preempt_both preempt
requeued_and_resumed preempt
echo "preempt: high job $high"
expect_eq "preempt: every rank's stop request was Slurm's SIGTERM" \
  "$(grep -c '^dlpar: rank [0-3]: SIGTERM received' "$TEST_TMP/preempt.out")" 4
echo "preempt: $(($(date +%s) - start)) s in all"

# (c) scancel -b -s USR1: the batch shell only
start=$(date +%s)
submit user
wait_text user "ddp_requeue: step 20 loss"
scancel -b -s USR1 "$job"
requeued_and_resumed user
expect_contains "user: dlpar-restart passed SIGUSR1 on" "$(cat "$TEST_TMP/user.out")" \
  "dlpar-restart: SIGUSR1 received: passed on to the step (srun forwards it to every task)"
echo "user: $(($(date +%s) - start)) s in all"

# the uninterrupted run, as far as the longest of them, and each one's
# losses against it (fp32: the same operations, the same order)
most=$(printf '%s\n' 0 "${stopped_k[@]}" | sort -n | tail -n 1)
start=$(date +%s)
timeout 600 srun "${step[@]:0:4}" /usr/bin/python3 "$example" --steps=$((most + 6)) --checkpoint="$TEST_TMP/whole.pt" \
  >"$TEST_TMP/whole.out" 2>&1
expect_rc "the uninterrupted run of $((most + 6)) steps ($(($(date +%s) - start)) s)" $? 0
for name in limit preempt user; do
  read -r rel shared <<<"$(max_rel "$(losses "$TEST_TMP/$name.out")" "$(losses "$TEST_TMP/whole.out")")"
  expect_eq "$name: steps 0 to k+5, the uninterrupted run's losses (max rel $rel)" \
    "$shared $(awk -v r="$rel" 'BEGIN { print (r < 1e-5) ? "within" : "beyond" }')" "$((${stopped_k[$name]:-0} + 6)) within"
done
finish
