#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/restart_cases.sh: contrib/dlpar-restart's decisions, without
# a bed: what it runs again, excludes, blames, requeues and says, each line
# exactly, when srun's output or Slurm's answers are odd or fail. The Slurm
# commands are STAND-INs (TEST_TMP/bin, first on PATH), as no real
# slurmctld can be made to fail on cue: srun runs no program but follows
# a plan (its step listed while it "runs", then its output and exit
# status), squeue lists the steps the plan and the test put there (or
# fails), sinfo prints the node states the test wrote, scontrol answers
# show job from a file and fails requeuehold/update/release on cue; each
# records its calls. Host lists go through the real scontrol's parser (a
# slurm.conf of this test's, no daemon). tests/integration/restart.sh runs
# the real srun on a bed.
# RESTART=PATH runs another copy of dlpar-restart (the one before a fix,
# to see these cases fail there).
. "$DLPAR_SRCDIR/tests/lib/common.sh"
restart=${RESTART:-$DLPAR_SRCDIR/contrib/dlpar-restart}
real_scontrol=$(command -v scontrol) || skip "no scontrol (Slurm's client commands are not installed)"
export SI=$TEST_TMP/si # the STAND-INs read it
mkdir -p "$SI/bin" "$TEST_TMP/cwd"
printf 'ClusterName=standin\nSlurmctldHost=localhost\nNodeName=n[1-4] CPUs=1\nPartitionName=p Nodes=n[1-4]\n' >"$SI/slurm.conf"
SLURM_CONF=$SI/slurm.conf "$real_scontrol" show hostnames 'n[1-2]' >/dev/null 2>&1 ||
  skip "scontrol show hostnames does not run with a plain slurm.conf here"

cat >"$SI/bin/srun" <<'SH'
#!/bin/bash
# STAND-IN for srun (tests/unit/restart_cases.sh): records its arguments,
# then follows the plan for this attempt ($SI/plan, sourced).
n=$(ls "$SI"/srun.* 2>/dev/null | wc -l)
printf '%s\n' "$@" >"$SI/srun.$n"
name=
for a in "$@"; do case $a in --job-name=*) name=${a#--job-name=} ;; esac; done
for ((i = 1; i <= $#; i++)); do [ "${!i}" = -J ] && { j=$((i + 1)); name=${!j}; }; done
# register NODES: this step listed by squeue, as Slurm lists a running step
register() { echo "$SLURM_JOB_ID.$((10 + n)) $1 ${name:-prog}" >>"$SI/steps"; }
# unregister: the step gone from Slurm
unregister() { grep -v "^$SLURM_JOB_ID.$((10 + n)) " "$SI/steps" >"$SI/steps.new"; mv "$SI/steps.new" "$SI/steps"; }
attempt=$DLPAR_RESTART
. "$SI/plan"
SH
cat >"$SI/bin/squeue" <<'SH'
#!/bin/bash
# STAND-IN for squeue (tests/unit/restart_cases.sh): records each call
# (seconds since the epoch), fails where the test says, else lists
# $SI/steps ("ID NODES NAME" a line) in the -o format asked.
echo "$(date +%s.%N) $*" >>"$SI/squeue.calls"
calls=$(wc -l <"$SI/squeue.calls")
[ -e "$SI/squeue.fail.$calls" ] && { echo "squeue: error: slurm_load_jobs error: Socket timed out on send/recv operation" >&2; exit 1; }
format=
while [ $# -gt 0 ]; do [ "$1" = -o ] && format=$2; shift; done
touch "$SI/steps"
while read -r id nodes name; do
  line=${format//%i/$id}; line=${line//%N/$nodes}; line=${line//%j/$name}
  echo "$line"
done <"$SI/steps"
SH
cat >"$SI/bin/sinfo" <<'SH'
#!/bin/bash
# STAND-IN for sinfo (tests/unit/restart_cases.sh): the states in
# $SI/sinfo ("NODE STATE" a line) of the nodes -n names.
echo "$*" >>"$SI/sinfo.calls"
nodes=
while [ $# -gt 0 ]; do [ "$1" = -n ] && nodes=$2; shift; done
SLURM_CONF=$SI/slurm.conf scontrol show hostnames "$nodes" | while read -r node; do
  grep "^$node " "$SI/sinfo" 2>/dev/null || echo "$node allocated"
done
SH
cat >"$SI/bin/scontrol" <<SH
#!/bin/bash
# STAND-IN for scontrol (tests/unit/restart_cases.sh): host lists through
# the real scontrol's parser; show job, config and partition from
# \$SI/job, \$SI/config and \$SI/partition; requeuehold, update
# and release recorded, each failing with the text of \$SI/VERB.fail where
# the test wrote one.
case "\$1 \${2:-}" in
  "show hostnames" | "show hostlist") SLURM_CONF=\$SI/slurm.conf exec $real_scontrol "\$@" ;;
esac
echo "\$*" >>"\$SI/scontrol.calls"
case \$1 in
  show)
    case \$2 in
      job) cat "\$SI/job" ;;
      *) cat "\$SI/\$2" 2>/dev/null || { echo "scontrol (stand-in): show \$2 not planned" >&2; exit 1; } ;;
    esac ;;
  requeuehold | update | release | requeue)
    [ -e "\$SI/\$1.fail" ] && { cat "\$SI/\$1.fail" >&2; exit 1; }
    exit 0 ;;
  *) echo "scontrol (stand-in): \$1 not planned" >&2; exit 1 ;;
esac
SH
cat >"$SI/bin/sacctmgr" <<'SH'
#!/bin/bash
# STAND-IN for sacctmgr (tests/unit/restart_cases.sh): records its call,
# prints $SI/qos (a QOS's PreemptMode, as sacctmgr -nP prints it).
echo "$*" >>"$SI/sacctmgr.calls"
cat "$SI/qos"
SH
chmod +x "$SI"/bin/*
# the scripts' own files in the working directory, for what a shell glob would take
touch "$TEST_TMP/cwd/notes.txt" "$TEST_TMP/cwd/train.py"

# fresh_case: no calls recorded, no steps, every node allocated, a batch job that may be requeued
fresh_case() {
  rm -f "$SI"/srun.* "$SI"/*.calls "$SI"/*.fail "$SI"/squeue.fail.* "$SI/steps" "$SI/sinfo" "$SI/config" "$SI/partition" "$SI/qos"
  echo "JobId=77 JobName=train BatchFlag=1 Requeue=1 Restarts=0 ExcNodeList=(null)" >"$SI/job"
}
# run NODES ARGS...: dlpar-restart ARGS in job 77 on NODES (a host list);
# out holds its output, rc its exit status
run() {
  local nodes=$1
  shift
  out=$(cd "$TEST_TMP/cwd" && PATH=$SI/bin:$PATH SLURM_JOB_ID=77 SLURM_JOB_NODELIST=$nodes \
        SLURM_JOB_NUM_NODES=$(SLURM_CONF=$SI/slurm.conf scontrol show hostnames "$nodes" | wc -l) SRUN_GRACE=2 \
        timeout 150 "$restart" "$@" 2>&1)
  rc=$?
}
# srun_args N: the arguments of srun's Nth call (0: the first), one a
# line, the step's unique name's token shown as TOKEN
srun_args() { sed -E 's/^(--job-name=.*@restart[0-9]+)\.[0-9a-f]+$/\1.TOKEN/' "$SI/srun.$1" 2>/dev/null | paste -sd ' '; }
srun_calls() { ls "$SI"/srun.* 2>/dev/null | wc -l; }

# 1. squeue fails as the attempt starts, while the job's last step (77.0,
# an earlier srun's) is still ending: the new srun, whose step is still
# being created, is never taken for that step's and never killed
fresh_case
echo "77.0 n[1-2] earlier" >"$SI/steps"
touch "$SI/squeue.fail.1"
(sleep 2; sed -i '/^77\.0 /d' "$SI/steps") &
cat >"$SI/plan" <<'SH'
sleep 9; register 'n[1-2]'; sleep 1; unregister; echo "step done"; exit 0
SH
run 'n[1-3]' srun -N 2 prog
wait
expect_rc "squeue failing as the step starts: the srun waiting for its step is not killed" $rc 0
expect_eq "squeue failing as the step starts: the step's output alone" "$out" "step done"

# 2. another step of the job (a monitoring srun) starts and ends while the
# attempt's srun waits for its step
fresh_case
(sleep 1; echo "77.5 n1 monitor" >>"$SI/steps"; sleep 2; sed -i '/^77\.5 /d' "$SI/steps") &
run 'n[1-3]' srun -N 2 prog
wait
expect_rc "a monitoring step starting and ending meanwhile: the srun is not killed" $rc 0
expect_eq "a monitoring step meanwhile: the step's output alone" "$out" "step done"

# 3. the step's own srun left waiting once Slurm ended its step (a dead
# node, Slurm marks it down): ended after SRUN_GRACE, the node named, the
# step run again; slurmctld asked at most once every 30 s once the step
# is seen (1, 3, 7, 15 s while it is not)
fresh_case
echo "n2 down*" >"$SI/sinfo"
cat >"$SI/plan" <<'SH'
if [ "$attempt" = 0 ]; then register 'n[1-2]'; sleep 5; unregister; exec sleep 120; fi
echo "attempt $attempt"; exit 0
SH
start=$(date +%s)
run 'n[1-3]' srun -N 2 prog
expect_rc "srun left waiting on a dead node: ended, the step run again" $rc 0
expect_eq "srun left waiting on a dead node: the output" "$out" \
  "dlpar-restart: excluding n2 (Slurm marks it down, not responding): restart 1 of 2 on n1,n3 (DLPAR_RESTART=1)
attempt 1"
asks=$(wc -l <"$SI/squeue.calls")
echo "squeue asked $asks times in a $(($(date +%s) - start)) s run"
expect_eq "squeue asked at most 5 times (at 1, 3 s while the step is unseen, then every 30 s)" "$([ "$asks" -le 5 ] && echo yes || echo "no: $asks")" yes
gaps=$(awk 'NR > 1 && $1 - last < 29 && seen { print $1 - last } { last = $1; seen = 1 }' "$SI/squeue.calls" | wc -l)
expect_eq "squeue calls less than 30 s apart after the first few" "$([ "$gaps" -le 3 ] && echo yes || echo "no: $gaps")" yes
expect_eq "srun left waiting on a dead node: the restart without n2" "$(srun_args 1)" \
  "--nodes=2 --job-name=prog@restart1.TOKEN --exclude=n2 prog"

# 3b. the same, srun saying "Node failure on n2" as Slurm ends the step:
# asked every 2 s from that line on, so ended within seconds, not 30
fresh_case
cat >"$SI/plan" <<'SH'
if [ "$attempt" = 0 ]; then register 'n[1-2]'; sleep 3; unregister; echo "srun: error: Node failure on n2" >&2; exec sleep 120; fi
echo "attempt $attempt"; exit 0
SH
start=$(date +%s)
run 'n[1-3]' srun -N 2 prog
took=$(($(date +%s) - start))
expect_eq "srun saying Node failure on n2: the output" "$rc: $out"   "0: srun: error: Node failure on n2
dlpar-restart: excluding n2 (node failure): restart 1 of 2 on n1,n3 (DLPAR_RESTART=1)
attempt 1"
expect_eq "srun saying Node failure on n2: ended within 15 s (took $took s)" "$([ "$took" -lt 15 ] && echo yes || echo no)" yes
asks=$(wc -l <"$SI/squeue.calls")
expect_eq "srun saying Node failure on n2: squeue asked at most 12 times ($asks)" "$([ "$asks" -le 12 ] && echo yes || echo no)" yes

# 4. "Node failure on *" in srun's output: no glob of the working directory
# blamed, no node named
fresh_case
cat >"$SI/plan" <<'SH'
[ "$attempt" = 0 ] && { echo "srun: error: Node failure on *" >&2; exit 1; }; exit 0
SH
run 'n[1-3]' srun -N 2 prog
expect_rc "Node failure on *: not restarted" $rc 1
expect_eq "Node failure on *: the output" "$out" "srun: error: Node failure on *
dlpar-restart: the step failed (exit 1) and named no node: the program's own failure, not restarted"
expect_eq "Node failure on *: srun run once" "$(srun_calls)" 1

# 5. the program's own error while a node of the step is being drained (and
# the spare outside the step is down): nothing blamed, no requeue
fresh_case
printf 'n2 draining\nn3 down\n' >"$SI/sinfo"
cat >"$SI/plan" <<'SH'
register 'n[1-2]'; sleep 3; unregister; echo "loss is NaN" >&2; exit 3
SH
run 'n[1-3]' --no-shrink srun -N 2 prog
expect_rc "a node draining: the program's own failure" $rc 3
expect_eq "a node draining: the output" "$out" "loss is NaN
dlpar-restart: the step failed (exit 3) and named no node: the program's own failure, not restarted"
expect_eq "a node draining: no requeue" "$(cat "$SI/scontrol.calls" 2>/dev/null)" ""
expect_eq "a node draining: sinfo asked about the step's nodes only" "$(grep -o -- '-n [^ ]*' "$SI/sinfo.calls")" "-n n[1-2]"

# 6. requeued, but scontrol update fails (the exclusion not set), and
# separately scontrol release fails: said as it happened, exit 75
fresh_case
cat >"$SI/plan" <<'SH'
[ "$attempt" = 0 ] && { echo "dlpar-check: rank 1 on n2: NCCL_IB_TIMEOUT is 20, rank 0's 18"; exit 1; }; exit 0
SH
echo "scontrol: error: Invalid node name specified" >"$SI/update.fail"
run 'n[1-2]' --no-shrink srun -N 2 prog
expect_rc "scontrol update failing after requeuehold: the job requeued, exit 75" $rc 75
expect_eq "scontrol update failing: the output" "$out" "dlpar-check: rank 1 on n2: NCCL_IB_TIMEOUT is 20, rank 0's 18
dlpar-restart: excluding n2 (--dl-check failed there): 1 node(s) left, the step needs 2: requeued job 77, but n2 could not be excluded from it (scontrol update: scontrol: error: Invalid node name specified): it may run there again (restart 1 of 2 once Slurm starts it again, about two minutes)"
expect_eq "scontrol update failing: the calls" "$(cat "$SI/scontrol.calls")" "show job 77
requeuehold 77
update JobId=77 ExcNodeList=n2
release 77"
fresh_case
echo "scontrol: error: Access/permission denied" >"$SI/release.fail"
run 'n[1-2]' --no-shrink srun -N 2 prog
expect_rc "scontrol release failing: the job requeued, exit 75" $rc 75
expect_eq "scontrol release failing: the output" "$(tail -n 1 <<<"$out")" \
  "dlpar-restart: excluding n2 (--dl-check failed there): 1 node(s) left, the step needs 2: requeued job 77 without n2; it stays held (scontrol release: scontrol: error: Access/permission denied): start it with scontrol release 77"
fresh_case
echo "scontrol: error: Job is no longer pending execution" >"$SI/requeuehold.fail"
run 'n[1-2]' --no-shrink srun -N 2 prog
expect_rc "scontrol requeuehold failing: not requeued, the step's exit status" $rc 1
expect_eq "scontrol requeuehold failing: the output" "$(tail -n 1 <<<"$out")" \
  "dlpar-restart: excluding n2 (--dl-check failed there): 1 node(s) left, the step needs 2: no spare to restart on, and no requeue: scontrol requeuehold 77 failed (scontrol: error: Job is no longer pending execution) (allocate spares: sbatch -N 3 --no-kill)"

# 7. srun options before -N that take a value apart (--mail-type ALL,
# --acctg-freq 30): -N read, the spare used, no requeue
for opts in "--mail-type ALL" "--acctg-freq 30"; do
  fresh_case
  # shellcheck disable=SC2086
  run 'n[1-3]' srun $opts -N 2 -n 2 prog
  expect_rc "$opts -N 2: restarted on the spare" $rc 0
  expect_eq "$opts -N 2: the output" "$out" "dlpar-check: rank 1 on n2: NCCL_IB_TIMEOUT is 20, rank 0's 18
dlpar-restart: excluding n2 (--dl-check failed there): restart 1 of 2 on n1,n3 (DLPAR_RESTART=1)"
  expect_eq "$opts -N 2: the restart's srun" "$(srun_args 1)" \
    "${opts% *}=${opts#* } --nodes=2 --ntasks=2 --job-name=prog@restart1.TOKEN --exclude=n2 prog"
done
# an option it does not know, its value apart: refused, naming it and the fix
fresh_case
run 'n[1-3]' srun --frobnicate x -N 2 prog
expect_rc "an unknown srun option: refused" $rc 2
expect_eq "an unknown srun option: one line" "$out" \
  "dlpar-restart: srun option --frobnicate is not one dlpar-restart knows, so it cannot tell whether the next argument is its value: write it --frobnicate=VALUE, or, a flag of another plugin, list it in DLPAR_RESTART_SRUN_FLAGS=frobnicate"
expect_eq "an unknown srun option: srun not run" "$(srun_calls)" 0
run 'n[1-3]' srun --exc=n3 -N 2 prog
expect_eq "an ambiguous abbreviation: refused as srun does" "$rc: $out" \
  "2: dlpar-restart: srun option --exc is ambiguous (--exclude, --exclusive): write it in full"

# 8. the user's own exclusion, abbreviated or in a cluster of short
# options: merged with the failed node, never overriding it
printf 'n3\n' >"$TEST_TMP/exclude_file"
for opts in "--exclud=n3" "-kxn3" "-kx n3" "--exclude=n4 -x n3" "-x $TEST_TMP/exclude_file"; do
  fresh_case
  # shellcheck disable=SC2086
  run 'n[1-4]' srun $opts -N 2 prog
  expect_eq "$opts: restarted on n1,n4" "$rc: $(tail -n 1 <<<"$out")" \
    "0: dlpar-restart: excluding n2 (--dl-check failed there): restart 1 of 2 on n1,n4 (DLPAR_RESTART=1)"
  expect_eq "$opts: the restart's srun excludes n2 and n3" "$(srun_args 1 | grep -o -e '--exclude=[^ ]*' -e ' -x[^ ]*' | paste -sd ' ')" "--exclude=n[2-3]"
done

# 8b. the user's --nodelist naming the failed node: the restart keeps the
# rest of it (srun refuses a node both required and excluded) and its node
# count (-N, which srun would otherwise take from the shorter list)
printf 'n1\nn2\n' >"$TEST_TMP/nodelist_file"
while IFS='|' read -r opts want; do
  fresh_case
  # shellcheck disable=SC2086
  run 'n[1-4]' srun $opts prog
  expect_eq "$opts: restarted" "$rc: $(tail -n 1 <<<"$out")" \
    "0: dlpar-restart: excluding n2 (--dl-check failed there): restart 1 of 2 on n1,n3,n4 (DLPAR_RESTART=1)"
  expect_eq "$opts: the restart's nodes" "$(srun_args 1 | grep -o -e '--nodelist=[^ ]*' -e '--nodes=[^ ]*' -e '--exclude=[^ ]*' | paste -sd ' ')" "$want"
done <<EOF2
-w n[1-2]|--exclude=n2 --nodes=2 --nodelist=n1
--nodelist=n2 -N 2|--nodes=2 --exclude=n2
-N 2 -w $TEST_TMP/nodelist_file|--nodes=2 --exclude=n2 --nodelist=n1
EOF2
run 'n[1-4]' srun -w 'n[1-' -N 2 prog
expect_eq "a --nodelist that is not a host list: refused" "$rc: $out" \
  "2: dlpar-restart: --nodelist=n[1-: not a host list that scontrol show hostnames reads"

run 'n[1-4]' srun -x "$TEST_TMP/no_such_file" -N 2 prog
expect_eq "an --exclude file that cannot be read: refused" "$rc: $out" \
  "2: dlpar-restart: --exclude=$TEST_TMP/no_such_file: cannot read that file of host names"

# 9. an empty value (--comment '') through the shrink's rewrite
fresh_case
cat >"$SI/plan" <<'SH'
[ "$attempt" = 0 ] && { echo "srun: error: n2: task 3: Killed" >&2; exit 9; }; exit 0
SH
run 'n[1-2]' srun --comment '' -N 2 -n 4 --dl-parallel=2x2 prog a ''
expect_eq "--comment '': shrunk" "$rc: $(tail -n 1 <<<"$out")" \
  "0: dlpar-restart: excluding n2 (a rank was killed (SIGKILL: the OOM killer, or kill -9)): 1 node(s) left, the step needs 2: the data-parallel size shrinks, grid 2x1 on n1 (the program keeps the global batch), restart 1 of 2 (DLPAR_RESTART=1)"
expect_eq "--comment '': the restart's srun, word by word" "$(sed -E 's/\.[0-9a-f]+$/.TOKEN/' "$SI/srun.1" | sed 's/^$/(empty)/' | paste -sd ' ')" \
  "--comment= --nodes=1 --ntasks=2 --dl-parallel=2x1 --job-name=prog@restart1.TOKEN --exclude=n2 prog a (empty)"

# 10. SLURM_RESTART_COUNT is a number, never evaluated
fresh_case
value="SLURM_JOB_ID[\$(touch $TEST_TMP/evaluated)]"
out=$(cd "$TEST_TMP/cwd" && PATH=$SI/bin:$PATH SLURM_JOB_ID=77 SLURM_JOB_NODELIST='n[1-2]' SLURM_RESTART_COUNT=$value \
      "$restart" srun -N 2 prog 2>&1)
rc=$?
expect_rc "SLURM_RESTART_COUNT not a number: refused" $rc 2
expect_eq "SLURM_RESTART_COUNT not a number: one line" "$out" \
  "dlpar-restart: SLURM_RESTART_COUNT=$(printf %q "$value"): expected Slurm's count of the job's requeues, a whole number (unset it outside a requeued job)"
expect_eq "SLURM_RESTART_COUNT not evaluated" "$([ -e "$TEST_TMP/evaluated" ] && echo evaluated || echo no)" no
# 11. every task exits 85 (stopped early at an agreed step, its checkpoint
# written: more to do): the batch job requeued as it is, no node
# excluded, exit 75; a step that exits 0 is never requeued
stopped_plan() {
  cat >"$SI/plan" <<'SH'
register 'n[1-2]'; sleep 2; unregister; echo "dlpar-train: stopped at step 7, more to do (exit 85)"; exit 85
SH
}
fresh_case
stopped_plan
run 'n[1-3]' srun -N 2 prog
expect_eq "exit 85: requeued, exit 75" "$rc: $out" "75: dlpar-train: stopped at step 7, more to do (exit 85)
dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): requeued job 77, its nodes as they were (DLPAR_RESTART=1 once Slurm starts it again, about two minutes)"
expect_eq "exit 85: scontrol's calls (no node excluded)" "$(cat "$SI/scontrol.calls")" "show job 77
requeue 77"
expect_eq "exit 85: srun run once" "$(srun_calls)" 1
fresh_case
echo "JobId=77 JobName=train BatchFlag=1 Requeue=1 Restarts=3 ExcNodeList=(null)" >"$SI/job"
stopped_plan
out=$(cd "$TEST_TMP/cwd" && PATH=$SI/bin:$PATH SLURM_JOB_ID=77 SLURM_JOB_NODELIST='n[1-3]' SLURM_RESTART_COUNT=3 \
      timeout 150 "$restart" srun -N 2 prog 2>&1)
expect_eq "exit 85 in the job's third requeue: the next DLPAR_RESTART" "$(tail -n 1 <<<"$out")" \
  "dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): requeued job 77, its nodes as they were (DLPAR_RESTART=4 once Slurm starts it again, about two minutes)"
fresh_case
echo "JobId=77 JobName=train BatchFlag=0 Requeue=1 Restarts=0 ExcNodeList=(null)" >"$SI/job"
stopped_plan
run 'n[1-3]' srun -N 2 prog
expect_eq "exit 85 in an salloc job: not requeued, exit 85" "$rc: $(tail -n 1 <<<"$out")" \
  "85: dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): not requeued: not a batch job (salloc and srun jobs cannot be requeued: submit it with sbatch); run it again to resume"
fresh_case
echo "JobId=77 JobName=train BatchFlag=1 Requeue=0 Restarts=0 ExcNodeList=(null)" >"$SI/job"
stopped_plan
run 'n[1-3]' srun -N 2 prog
expect_eq "exit 85 in an sbatch --no-requeue job: not requeued, exit 85" "$rc: $(tail -n 1 <<<"$out")" \
  "85: dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): not requeued: the job may not be requeued (submit it with sbatch --requeue); run it again to resume"
fresh_case
echo "scontrol: error: Job is no longer pending execution" >"$SI/requeue.fail"
stopped_plan
run 'n[1-3]' srun -N 2 prog
expect_eq "exit 85, scontrol requeue failing: exit 85" "$rc: $(tail -n 1 <<<"$out")" \
  "85: dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): not requeued: scontrol requeue 77 failed (scontrol: error: Job is no longer pending execution); run it again to resume"
fresh_case
cat >"$SI/plan" <<'SH'
register 'n[1-2]'; sleep 2; unregister; echo "done"; exit 0
SH
run 'n[1-3]' srun -N 2 prog
expect_eq "exit 0: done, never requeued" "$rc: $out: $(cat "$SI/scontrol.calls" 2>/dev/null)" "0: done: "

# 11b. exit 85 in a job being preempted (PreemptTime set): Slurm 24.05 and
# later requeue it themselves as the script ends where its preemption mode
# is REQUEUE (a requeue of ours as well runs the next run twice), so it is
# left to Slurm; Slurm 22.05 ends it, and a mode of CANCEL too: there the
# job is requeued here
# preempted_case VERSION TYPE CLUSTER-MODE: a fresh case of job 77 in
# partition debug, QOS normal, preempted, on slurmctld VERSION
preempted_case() {
  fresh_case
  echo "JobId=77 JobName=train BatchFlag=1 Requeue=1 Restarts=0 ExcNodeList=(null) Partition=debug QOS=normal PreemptTime=2026-12-07T01:02:03" >"$SI/job"
  printf 'Configuration data as of 2026-12-07T01:00:00\nPreemptMode             = %s\nPreemptType             = %s\nSLURM_VERSION           = %s\n' \
    "$3" "$2" "$1" >"$SI/config"
  stopped_plan
}
left_to_slurm="dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): job 77 is being preempted, and Slurm requeues it itself as this script ends"
requeued_here="dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): requeued job 77, its nodes as they were (DLPAR_RESTART=1 once Slurm starts it again, about two minutes)"
preempted_case 24.11.5 preempt/partition_prio REQUEUE
echo "PartitionName=debug" >"$SI/partition"
echo "   PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO PreemptMode=REQUEUE" >>"$SI/partition"
run 'n[1-3]' srun -N 2 prog
expect_eq "preempted on Slurm 24.11, PreemptMode=REQUEUE: left to Slurm, exit 75" "$rc: $(tail -n 1 <<<"$out")" \
  "75: $left_to_slurm (Slurm 24.11.5, PreemptMode=REQUEUE), its nodes as they were (DLPAR_RESTART=1 once Slurm starts it again, about two minutes)"
expect_eq "preempted on Slurm 24.11: no requeue of ours" "$(cat "$SI/scontrol.calls")" "show job 77
show config
show partition debug"
preempted_case 22.05.8 preempt/partition_prio REQUEUE
run 'n[1-3]' srun -N 2 prog
expect_eq "preempted on Slurm 22.05: requeued here (Slurm would end the job), exit 75" "$rc: $(tail -n 1 <<<"$out")" "75: $requeued_here"
expect_eq "preempted on Slurm 22.05: the calls" "$(cat "$SI/scontrol.calls")" "show job 77
show config
requeue 77"
preempted_case 24.11.5 preempt/partition_prio REQUEUE
echo "PartitionName=debug PreemptMode=CANCEL" >"$SI/partition"
run 'n[1-3]' srun -N 2 prog
expect_eq "preempted on Slurm 24.11, the partition's PreemptMode=CANCEL: requeued here, exit 75" "$rc: $(tail -n 1 <<<"$out")" "75: $requeued_here"
preempted_case 25.05.1 preempt/qos REQUEUE
echo "cluster" >"$SI/qos"
run 'n[1-3]' srun -N 2 prog
expect_eq "preempted on Slurm 25.05 by QOS, the QOS's mode the cluster's REQUEUE: left to Slurm" "$rc: $(tail -n 1 <<<"$out")" \
  "75: $left_to_slurm (Slurm 25.05.1, PreemptMode=REQUEUE), its nodes as they were (DLPAR_RESTART=1 once Slurm starts it again, about two minutes)"
expect_eq "preempted by QOS: the QOS asked" "$(cat "$SI/sacctmgr.calls")" "-nP show qos normal format=PreemptMode"
preempted_case 25.05.1 preempt/qos REQUEUE
echo "cancel" >"$SI/qos"
run 'n[1-3]' srun -N 2 prog
expect_eq "preempted on Slurm 25.05, the QOS's mode cancel: requeued here" "$rc: $(tail -n 1 <<<"$out")" "75: $requeued_here"
preempted_case 24.11.5 preempt/partition_prio REQUEUE
rm "$SI/config"
run 'n[1-3]' srun -N 2 prog
expect_eq "preempted, scontrol show config failing: requeued here" "$rc: $(tail -n 1 <<<"$out")" "75: $requeued_here"

# 12. SIGUSR1 to dlpar-restart (the batch shell that exec'd it:
# --signal=B:USR1@S, scancel -b -s USR1), once its step is listed: passed
# on to srun (here the STAND-IN says so and exits 85, as dlpar-train's step
# does), then the job requeued; SIGTERM: not passed on (Slurm signals the
# tasks itself), and no attempt after it, even where a node failed
# start_bg NODES ARGS...: dlpar-restart ARGS in job 77 in the background
# (bg_pid), its output in $TEST_TMP/bg.out
start_bg() {
  local nodes=$1
  shift
  (cd "$TEST_TMP/cwd" && PATH=$SI/bin:$PATH SLURM_JOB_ID=77 SLURM_JOB_NODELIST=$nodes SLURM_JOB_NUM_NODES=2 \
   SRUN_GRACE=2 exec timeout -s KILL 150 "$restart" "$@") >"$TEST_TMP/bg.out" 2>&1 &
  bg_pid=$!
  for _ in $(seq 100); do [ -s "$SI/steps" ] && break; sleep 0.1; done
  restart_pid=$(pgrep -P "$bg_pid" | head -n 1)
}
signal_plan() {
  cat >"$SI/plan" <<'SH'
trap 'echo "srun: got SIGUSR1"; unregister; echo "dlpar-train: stopped at step 3, more to do (exit 85)"; exit 85' USR1
trap 'echo "srun: got SIGTERM"; unregister; exit 143' TERM
register 'n[1-2]'
[ "$attempt" = 0 ] || { echo "attempt $attempt"; unregister; exit 0; }
for _ in $(seq 100); do sleep 0.1; done
unregister; echo "srun: error: n2: task 1: Killed" >&2; exit 9
SH
}
fresh_case
signal_plan
start_bg 'n[1-3]' srun -N 2 prog
kill -USR1 "$restart_pid"
wait "$bg_pid"
rc=$?
expect_eq "SIGUSR1 to dlpar-restart: passed on, the job requeued" "$rc: $(cat "$TEST_TMP/bg.out")" "75: dlpar-restart: SIGUSR1 received: passed on to the step (srun forwards it to every task)
srun: got SIGUSR1
dlpar-train: stopped at step 3, more to do (exit 85)
dlpar-restart: the step stopped early at a step its ranks agreed on (exit 85: more to do): requeued job 77, its nodes as they were (DLPAR_RESTART=1 once Slurm starts it again, about two minutes)"
fresh_case
signal_plan
start_bg 'n[1-3]' srun -N 2 prog
kill -TERM "$restart_pid"
wait "$bg_pid"
rc=$?
expect_eq "SIGTERM to dlpar-restart: not passed on, no attempt after it" "$rc: $(cat "$TEST_TMP/bg.out")" "9: dlpar-restart: SIGTERM received: not passed on (Slurm signals the step's tasks itself); no attempt after this one
srun: error: n2: task 1: Killed
dlpar-restart: the step failed (exit 9) on n2 (a rank was killed (SIGKILL: the OOM killer, or kill -9)) after SIGTERM: not restarted"
expect_eq "SIGTERM to dlpar-restart: srun run once" "$(srun_calls)" 1
# 13. a rank killed as Slurm 24.11 reports it: the step's cancellation
# before srun's line of the killed rank, which lists it with its
# node-mates. The plugin's line (spank/stepd.c, each node's first task
# ended by a signal), before the cancellation, names n2.
fresh_case
cat >"$SI/plan" <<'SH'
[ "$attempt" = 0 ] || exit 0
cat >&2 <<'OUT'
slurmstepd-n2: error: dlpar: rank 3 (pid 21755) on n2 was killed by SIGKILL before any other task of its node ended: the OOM killer or kill -9, unless the step's cancellation came first
slurmstepd-n1: error: *** STEP 77.0 ON n1 CANCELLED AT 2026-12-08T00:59:16 ***
srun: error: n2: tasks 2-3: Killed
srun: error: n1: task 0: Killed
srun: error: n1: task 1: Exited with exit code 14
OUT
exit 9
SH
run 'n[1-3]' srun -N 2 prog
expect_eq "Slurm 24.11's order, the plugin's line: n2 named" "$rc: $(tail -n 1 <<<"$out")" \
  "0: dlpar-restart: excluding n2 (a rank was killed (SIGKILL: the OOM killer, or kill -9)): restart 1 of 2 on n1,n3 (DLPAR_RESTART=1)"
# the step cancelled first (here as libdlpar ends a hung step): only the
# first node writes the cancellation, and n2's first task, killed by it,
# is not taken for a rank killed from outside
fresh_case
cat >"$SI/plan" <<'SH'
[ "$attempt" = 0 ] || exit 0
cat >&2 <<'OUT'
dlpar: stacks: rank 1 (n1) differs from the other 3 (not in a libdlpar collective | main stuck_in_user_code usleep): look there first
slurmstepd-n1: error: *** STEP 77.0 ON n1 CANCELLED AT 2026-12-08T01:24:52 ***
slurmstepd-n2: error: dlpar: rank 2 (pid 13593) on n2 was killed by SIGKILL before any other task of its node ended: the OOM killer or kill -9, unless the step's cancellation came first
srun: error: n1: task 0: Exited with exit code 1
srun: error: n1: task 1: Killed
srun: error: n2: tasks 2-3: Killed
OUT
exit 1
SH
run 'n[1-3]' srun -N 2 prog
expect_eq "the plugin's line after the step's cancellation: the node named by the stacks, not n2" "$rc: $(tail -n 1 <<<"$out")" \
  "0: dlpar-restart: excluding n1 (the rank whose stack differs in a hung step): restart 1 of 2 on n2,n3 (DLPAR_RESTART=1)"
fresh_case
cat >"$SI/plan" <<'SH'
cat >&2 <<'OUT'
dlpar: rank 0 on n1: --data: no such directory (give the dataset's directory)
slurmstepd-n1: error: *** STEP 77.0 ON n1 CANCELLED AT 2026-12-08T01:24:52 ***
slurmstepd-n2: error: dlpar: rank 2 (pid 13593) on n2 was killed by SIGKILL before any other task of its node ended: the OOM killer or kill -9, unless the step's cancellation came first
srun: error: n1: task 0: Exited with exit code 1
srun: error: n2: tasks 2-3: Killed
OUT
exit 1
SH
run 'n[1-3]' srun -N 2 prog
expect_eq "the program's own failure, n2's tasks killed by the cancellation: not restarted" "$rc: $(tail -n 1 <<<"$out")" \
  "1: dlpar-restart: the step failed (exit 1) and named no node: the program's own failure, not restarted"
finish
