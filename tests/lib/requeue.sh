# SPDX-License-Identifier: BSD-3-Clause
# tests/lib/requeue.sh: sourced after use_bed (it asks the bed's slurmctld
# for its version) by the tests that follow a
# batch job of theirs through a requeue (timelimit.sh, torch_requeue.sh).
# The job's id is in job, its output in TEST_TMP/NAME.out; the states it
# went through gather in the caller's state and states.

# wait_text NAME TEXT: until NAME's output has TEXT (240 s at most)
wait_text() {
  for _ in $(seq 2400); do grep -q -- "$2" "$TEST_TMP/$1.out" 2>/dev/null && return 0; sleep 0.1; done
  fail "$1: no '$2' in its output in 240 s: $(tail -n 5 "$TEST_TMP/$1.out" 2>/dev/null)"
  return 1
}
# job_state: the job's "STATE REASON" (Slurm's record), gone once Slurm has forgotten it
job_state() {
  scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\) Reason=\([^ ]*\).*/\1 \2/p' | grep . || echo gone
}
# note_state: state read again, and added to states where it changed
note_state() {
  state=$(job_state)
  [ "$state" = "${states##*, }" ] || states+=", $state"
}
# ended_after_one_requeue NAME: once the requeued run has started, until the
# job ends (240 s at most); its states said, and its end checked: COMPLETED
# after exactly one requeue
ended_after_one_requeue() {
  wait_text "$1" "run 1 of job"
  for _ in $(seq 2400); do
    note_state
    case $state in COMPLETED* | FAILED* | CANCELLED* | gone) break ;; esac
    sleep 0.1
  done
  echo "$1: the job's states: ${states#, }"
  expect_eq "$1: the job's end, after one requeue" "$state $(scontrol show job "$job" 2>/dev/null | grep -o 'Restarts=[0-9]*')" \
    "COMPLETED None Restarts=1"
}
# slurm_requeues_preempted: true where slurmctld (slurm_version) requeues
# a preempted job itself as its batch script ends (24.05 and later; the
# bed's PreemptMode is REQUEUE)
slurm_version=$(scontrol show config | sed -n 's/^SLURM_VERSION *= *//p')
slurm_requeues_preempted() {
  [[ $slurm_version =~ ^([0-9]+)\.([0-9]+) ]] && ((10#${BASH_REMATCH[1]} * 100 + 10#${BASH_REMATCH[2]} >= 2405))
}
# preempt_both NAME: a job of partition high on both nodes, submitted now,
# preempts job NAME, whose dlpar-restart must say the step stopped within
# the 30-s grace time; high is the high job's id
preempt_both() {
  local preempted_at took
  preempted_at=$(date +%s)
  high=$(sbatch --parsable -p high --exclusive -N2 -o "$TEST_TMP/high.out" --wrap 'echo high ran')
  wait_text "$1" "dlpar-restart: the step stopped early"
  took=$(($(date +%s) - preempted_at))
  TEST_CHECKS=$((TEST_CHECKS + 1))
  if [ "$took" -lt 30 ]; then pass "$1: stopped within the grace time ($took s of 30)"
  else fail "$1: stopped after $took s, past the grace time (30 s)"; fi
}
