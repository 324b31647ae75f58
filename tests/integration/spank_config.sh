#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/spank_config.sh: what a bad plugstack.conf line does in
# each SPANK context, on a 2-node bed of this test's own whose slurmd start
# with a typo in the line (torch_port): slurmd logs one warning naming the
# key, the file and its line, and the nodes come up; srun, sbatch and salloc
# refuse every --dl-* option with one line naming them, exit 1, and run
# steps without them; slurmstepd does the same per node where only the
# node's file is bad (srun and sbatch reading a good one: a login node whose
# plugstack.conf differs), saying that srun's reading differs, once per node,
# and the batch step too (srun's steps, which need mpi/pmix, are
# spank_config_steps.sh's; a node without dlpar's line under a good srun,
# spank_config_hello.sh's). Then the smaller rules: yes|no only, a key
# given once, and dlpar-check-config on the bed's files.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
check_config=$B/spank/dlpar-check-config
plugin=$B/spank/.libs/spank_dlpar.so
good="required $plugin $BED_TOPOLOGY"
BED_TOPOLOGY="$BED_TOPOLOGY torch_port=20000-20999" use_bed private any
dir=$(dirname "$SLURM_CONF")
plugstack=$dir/plugstack.conf
known="(known: tp_span, topology_xml, profile_dir, bind_cpus, bind_nic, torch_ports, env.VAR[@NODES])"
typo="plugstack.conf: unknown key 'torch_port' $known (line 1 of $plugstack)"

# slurmd: a warning, and the nodes run
expect_eq "slurmd with a bad line: the nodes are up" "$(sinfo -h -o %t | sort -u)" idle
for node in n1 n2; do
  expect_eq "slurmd with a bad line: $node's warning, once" "$(grep -c 'dlpar:' "$dir/log/slurmd-$node.log")" 1
  expect_contains "slurmd with a bad line: $node's warning" "$(grep 'dlpar:' "$dir/log/slurmd-$node.log")" \
    "error: dlpar: warning: $typo: slurmd runs on, and srun, sbatch, salloc and slurmstepd refuse every --dl-* option until the admin corrects it (dlpar-check-config checks the file)"
done

# srun, sbatch, salloc: --dl-* refused in one line of ours; steps without them run
want="dlpar: $typo: every --dl-* option is refused until the admin corrects it (dlpar-check-config checks the file); steps without them run"
out=$(cd "$TEST_TMP" && srun -N1 -n1 --dl-parallel=1x1 true 2>&1)
expect_rc "srun --dl-parallel under a bad line" $? 1
expect_eq "srun --dl-parallel under a bad line: one line of dlpar's" "$(grep dlpar: <<<"$out")" "srun: error: $want"
out=$(cd "$TEST_TMP" && srun -N2 -n2 true 2>&1)
expect_rc "srun without --dl-* under a bad line" $? 0
expect_eq "srun without --dl-* under a bad line: silent" "$out" ""
out=$(cd "$TEST_TMP" && sbatch --dl-parallel=1x1 --wrap true 2>&1)
expect_rc "sbatch --dl-parallel under a bad line" $? 1
expect_eq "sbatch --dl-parallel under a bad line: one line of dlpar's" "$(grep dlpar: <<<"$out")" "sbatch: error: $want"
out=$(cd "$TEST_TMP" && salloc -N1 --dl-check true 2>&1)
expect_rc "salloc --dl-check under a bad line" $? 1
expect_eq "salloc --dl-check under a bad line: one line of dlpar's" "$(grep dlpar: <<<"$out")" "salloc: error: $want"
out=$(cd "$TEST_TMP" && sbatch -N1 -o /dev/null --wrap true 2>&1)
expect_rc "sbatch without --dl-* under a bad line: $out" $? 0

# dlpar-check-config finds the line through slurm.conf, names it, and the fix
out=$("$check_config" 2>&1)
expect_rc "dlpar-check-config on the bed's bad line" $? 1
expect_eq "dlpar-check-config on the bed's bad line: one line" "$out" \
  "dlpar-check-config: $plugstack:1: plugstack.conf: unknown key 'torch_port' $known"

# slurmstepd: srun and sbatch read a good line (a login node's), the nodes their bad one
mkdir -p "$TEST_TMP/login"
sed "s|^PlugStackConfig=.*|PlugStackConfig=$TEST_TMP/login/plugstack.conf|" "$SLURM_CONF" >"$TEST_TMP/login/slurm.conf"
echo "$good" >"$TEST_TMP/login/plugstack.conf"
login() { (cd "$TEST_TMP" && SLURM_CONF=$TEST_TMP/login/slurm.conf "$@"); } # srun or sbatch, on the login node
out=$(SLURM_CONF=$TEST_TMP/login/slurm.conf "$check_config" 2>&1)
expect_eq "dlpar-check-config on the login node's good line" "$out" \
  "dlpar-check-config: $TEST_TMP/login/plugstack.conf:1: ok: $good"
out=$(login srun -N2 -n2 true 2>&1)
expect_rc "a node's bad line: a step without --dl-*" $? 0
login sbatch -N1 --wait -o "$TEST_TMP/batch.out" --dl-parallel=1x1 --wrap 'echo the script ran' >/dev/null 2>&1
expect_rc "a node's bad line: sbatch --dl-parallel, the batch step" $? 1
# (the prefix is Slurm's: "slurmstepd-n1: error: ", from 26.05 a time stamp)
expect_eq "a node's bad line: the batch step's refusal, in the job's output" \
  "$(grep -e dlpar: -e 'script ran' "$TEST_TMP/batch.out" | sed 's/^.* error: dlpar: /dlpar: /')" \
  "dlpar: plugstack.conf: unknown key 'torch_port' $known (line 1 of $plugstack on n1): n1 refuses every --dl-* step until the admin corrects it (dlpar-check-config checks the file)"

# yes|no only, each key once: refused like any bad line, naming the line
for args in "bind_cpus=true|plugstack.conf: bind_cpus=true: expected yes or no" \
            "bind_nic=1|plugstack.conf: bind_nic=1: expected yes or no" \
            "tp_span=warn tp_span=allow|plugstack.conf: tp_span given twice (tp_span=warn, then tp_span=allow): keep one"; do
  echo "$good ${args%%|*}" >"$plugstack"
  out=$(cd "$TEST_TMP" && srun -N1 -n1 --dl-parallel=1x1 true 2>&1)
  expect_rc "${args%%|*}" $? 1
  expect_contains "${args%%|*}: refused, naming the line" "$out" "dlpar: ${args#*|} (line 1 of $plugstack): every --dl-* option is refused"
  out=$("$check_config" "$plugstack" 2>&1)
  expect_eq "${args%%|*}: dlpar-check-config" "$out" "dlpar-check-config: $plugstack:1: ${args#*|}"
done
"$DLPAR_SRCDIR/tests/testbed/dlpar-bed" stop --state "$TEST_TMP/bed" >/dev/null
finish
