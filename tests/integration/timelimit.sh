#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/timelimit.sh: a dlpar-train job that outlives its time
# limit or is preempted (contrib/dlpar-restart, exit 85), on a 2-node bed
# of this test's own with preemption (dlpar-bed --preempt: partition debug,
# GraceTime=30, preempted by partition high). Each job is a batch script
# whose last line is `exec dlpar-restart srun ... dlpar-train` (exec: the
# batch shell is then dlpar-restart, so the signals Slurm sends the batch
# shell reach it), submitted with --requeue:
#  (a) the time limit's warning to the batch shell, -t 2
#      --signal=B:USR1@110 (slurmctld sends it at its periodic check,
#      every 30 s or later under load, so a 2-minute limit leaves it
#      three checks or more to come within): dlpar-restart passes it on, every task exits 85
#      at the step k of the checkpoint, the job requeues itself; and the
#      plain --signal=USR1@110, to the tasks by Slurm, the same way;
#  (b) preemption by a job of partition high: Slurm's SIGTERM to the
#      tasks, every task exits 85 at step k within the grace time, and the
#      job is requeued once: by dlpar-restart on Slurm 22.05 (which ends a
#      job whose script ends in its grace time), by Slurm itself as the
#      script ends on Slurm 24.05 and later, where dlpar-restart leaves it
#      to Slurm (a requeue of its own there left Slurm's grace-time mark
#      on the job, and the resumed run was requeued again when it ended:
#      issue 48);
#  (c) scancel -b -s USR1 (the batch shell only): as (a);
#  (d) a run that ends before the warning: exit 0, not requeued.
# In (a) to (c) the requeued job's tasks (DLPAR_RESTART=1) resume from the
# checkpoint of step k, run steps k+1 to k+5, the job ends COMPLETED
# after that one requeue, and the losses are an uninterrupted run's bit for
# bit. Slurm holds a requeued job back for two minutes: the test lifts the
# hold (scontrol update StartTime=now; in (b) once the high job has run)
# and gives the requeued run a 5-minute limit, so that no warning comes
# again.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed preempt
. "$DLPAR_SRCDIR/tests/lib/requeue.sh"
restart=$DLPAR_SRCDIR/contrib/dlpar-restart
make_data
export OMP_NUM_THREADS=1 DLPAR_RENDEZVOUS_TIMEOUT=60
# dlpar-train on a schedule of 100000 steps, a requeued run's 5 steps after the checkpoint
cat >"$TEST_TMP/train" <<SH
#!/bin/bash
extra=()
[ "\${DLPAR_RESTART:-0}" -ge 1 ] && extra=(--stop_after_iters=5)
exec "$B/trainer/dlpar-train" --config=test "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) --num_iters=100000 "\$@" "\${extra[@]}"
SH
chmod +x "$TEST_TMP/train"
losses() { step_losses "$TEST_TMP/runs/test/2x2/$1/metrics.jsonl" | sort -n | uniq; }
ckpt_step() { h5dump -a step "$TEST_TMP/runs/test/2x2/$1/checkpoint.h5" 2>/dev/null | sed -n 's/^ *(0): \([0-9]*\)/\1/p'; }

# submit NAME SBATCH-OPTIONS...: the job (job), its output in TEST_TMP/NAME.out
submit() {
  local name=$1
  shift
  cat >"$TEST_TMP/$name.sbatch" <<SH
#!/bin/bash
echo "run \${SLURM_RESTART_COUNT:-0} of job \$SLURM_JOB_ID"
exec $restart srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 $TEST_TMP/train --run=$name
SH
  job=$(cd "$TEST_TMP" && sbatch --parsable -N2 --ntasks-per-node=2 --requeue --open-mode=append -o "$TEST_TMP/$name.out" \
        "$@" "$TEST_TMP/$name.sbatch")
}
# requeued_and_resumed NAME: once the job is requeued, its hold lifted; it
# ends; the stop at step k by every task, k+1 to k+5 after it, the losses
# (k in stopped_at)
requeued_and_resumed() {
  local name=$1 out k state states
  wait_text "$name" "run 0 of job" || return
  states=
  for _ in $(seq 2400); do
    note_state
    # (3 s after the requeue: a run started in the second of the requeue
    # has its credential revoked with the last run's, and Slurm ends it)
    # (a preempted job: once the preempting job has run, which it does
    # first, so that it does not preempt the resumed run)
    if [ "$state" = "PENDING BeginTime" ]; then
      [ "$name" != preempt ] || wait_text high "high ran"
      sleep 3
      scontrol update JobId="$job" StartTime=now TimeLimit=5
      break
    fi
    case $state in COMPLETED* | FAILED* | CANCELLED* | gone) break ;; esac
    sleep 0.1
  done
  ended_after_one_requeue "$name"
  out=$(cat "$TEST_TMP/$name.out")
  k=$(sed -n 's/^dlpar-train: stopped at step \([0-9]*\), more to do (exit 85)$/\1/p' <<<"$out")
  stopped_at=$k
  echo "$name: stopped at step ${k:-none}"
  expect_eq "$name: every task exited 85 (stopped early, more to do)" \
    "$(grep -o 'srun: error: n[12]: tasks [0-9-]*: Exited with exit code 85' <<<"$out" | sort | paste -sd ' ')" \
    "srun: error: n1: tasks 0-1: Exited with exit code 85 srun: error: n2: tasks 2-3: Exited with exit code 85"
  expect_eq "$name: every rank logged the stop request" \
    "$(sed -n 's/^dlpar: rank \([0-3]\): .* received: stopping at the next step boundary.*/\1/p' <<<"$out" | sort -u | paste -sd ' ')" "0 1 2 3"
  if [ "$name" = preempt ] && slurm_requeues_preempted; then
    expect_contains "$name: dlpar-restart left the requeue to Slurm $slurm_version" "$out" \
      "dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): job $job is being preempted, and Slurm requeues it itself as this script ends (Slurm $slurm_version, PreemptMode=REQUEUE), its nodes as they were (DLPAR_RESTART=1 once Slurm starts it again, about two minutes)"
  else
    expect_contains "$name: dlpar-restart requeued the job" "$out" \
      "dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): requeued job $job, its nodes as they were (DLPAR_RESTART=1 once Slurm starts it again, about two minutes)"
  fi
  expect_eq "$name: the job's runs, the requeued one once" "$(grep '^run [0-9]* of job' <<<"$out" | paste -sd ' ')" \
    "run 0 of job $job run 1 of job $job"
  expect_contains "$name: resumed from the checkpoint of step k" "$out" \
    "dlpar-train: resumed from $TEST_TMP/runs/test/2x2/$name/checkpoint.h5 at step ${k:-none} "
  expect_eq "$name: the resumed run's steps k+1 to k+5" "$(losses "$name" | awk -v k="${k:-0}" '$1 > k { print $1 }' | paste -sd ' ')" \
    "$((k + 1)) $((k + 2)) $((k + 3)) $((k + 4)) $((k + 5))"
  expect_eq "$name: the checkpoint's step at the end" "$(ckpt_step "$name")" "$((k + 5))"
}


# (a) the time limit's warning to the batch shell
start=$(date +%s)
submit limit -t 2 --signal=B:USR1@110
requeued_and_resumed limit
k_limit=$stopped_at
expect_contains "limit: dlpar-restart passed SIGUSR1 on" "$(cat "$TEST_TMP/limit.out")" \
  "dlpar-restart: SIGUSR1 received: passed on to the step (srun forwards it to every task)"
echo "limit: $(($(date +%s) - start)) s in all"

# (a') the plain form, --signal=USR1@110: Slurm signals the tasks itself,
# and dlpar-restart nothing
submit plain -t 2 --signal=USR1@110
requeued_and_resumed plain
k_plain=$stopped_at
expect_eq "plain: nothing passed on by dlpar-restart" "$(grep -c '^dlpar-restart: SIGUSR1' "$TEST_TMP/plain.out")" 0

# (b) preemption: a job of partition high on both nodes, once the job has
# run 3 steps
submit preempt
for _ in $(seq 600); do grep -q '"step": 3,' "$TEST_TMP/runs/test/2x2/preempt/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
preempt_both preempt
requeued_and_resumed preempt
k_preempt=$stopped_at
echo "preempt: high job $high"
expect_eq "preempt: every rank's stop request was Slurm's SIGTERM" \
  "$(sed -n 's/^dlpar: rank \([0-3]\): Terminated received: stopping at the next step boundary.*/\1/p' "$TEST_TMP/preempt.out" | sort -u | paste -sd ' ')" "0 1 2 3"

# (c) scancel -b -s USR1: the batch shell only
submit user
for _ in $(seq 600); do grep -q '"step": 3,' "$TEST_TMP/runs/test/2x2/user/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
scancel -b -s USR1 "$job"
requeued_and_resumed user
k_user=$stopped_at
expect_contains "user: dlpar-restart passed SIGUSR1 on" "$(cat "$TEST_TMP/user.out")" \
  "dlpar-restart: SIGUSR1 received: passed on to the step (srun forwards it to every task)"

# the uninterrupted run, as far as the longest of them, and each one's losses against it
most=$(printf '%s\n' "${k_limit:-0}" "${k_plain:-0}" "${k_preempt:-0}" "${k_user:-0}" | sort -n | tail -n 1)
out=$(timeout 600 srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "$TEST_TMP/train" --run=whole --stop_after_iters=$((most + 5)) 2>&1)
expect_rc "the uninterrupted run of $((most + 5)) steps" $? 0
for name in limit plain preempt user; do
  expect_eq "$name: the losses of steps 1 to k+5, the uninterrupted run's bit for bit" \
    "$(losses "$name")" "$(losses whole | head -n "$(losses "$name" | wc -l)")"
done

# (d) a run that ends before the warning: 8 steps, a warning 30 s before a 2-minute limit
cat >"$TEST_TMP/short.sbatch" <<SH
#!/bin/bash
echo "run \${SLURM_RESTART_COUNT:-0} of job \$SLURM_JOB_ID"
exec $restart srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 $TEST_TMP/train --run=short --stop_after_iters=8
SH
job=$(cd "$TEST_TMP" && sbatch --parsable -N2 --ntasks-per-node=2 --requeue -t 2 --signal=B:USR1@30 -o "$TEST_TMP/short.out" \
      "$TEST_TMP/short.sbatch")
last=
for _ in $(seq 1800); do
  state=$(scontrol show job "$job" 2>/dev/null | grep -o -e 'JobState=[A-Z]*' -e 'Restarts=[0-9]*' | paste -sd ' ')
  [ -n "$state" ] && last=$state
  case $state in *COMPLETED* | *FAILED* | *CANCELLED*) break ;; esac
  sleep 0.1
done
expect_eq "short: done before the warning, not requeued" "$last" "JobState=COMPLETED Restarts=0"
expect_eq "short: nothing of dlpar-restart's" "$(grep -c '^dlpar-restart: ' "$TEST_TMP/short.out")" 0
finish
