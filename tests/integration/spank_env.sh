#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/spank_env.sh: what each task gets from the plugin on the
# 2-node bed, checked exactly: the DLPAR_* contract and the torch-style
# variables for grids 2x2 and 1x4 on 2 nodes x 2 tasks, 4x1 on one node
# (on 2 x 2 it is refused: its group would span nodes), the GPU/CPU/NIC
# mapping of the bed's topology (2 sockets x 1 core, 2 GPUs + 1 HCA each)
# with real CPU binding (NCCL_IB_HCA: the node's HCAs, the same list on
# every rank; UCX_NET_DEVICES: the rank's nearest HCA), --gpus-per-task not narrowing the GPUs, the user's
# --cpu-bind respected, --dl-verbose, sbatch passing the grid to its steps,
# the node-side check when srun cannot predict the layout, the line naming
# a task ended by a signal, and no flag: no variables and no binding.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
use_bed

show='echo "$SLURM_PROCID|$DLPAR_VERSION|$DLPAR_TP_SIZE|$DLPAR_DP_SIZE|$DLPAR_TP_RANK|$DLPAR_DP_RANK|$DLPAR_RANK|$DLPAR_LOCAL_RANK|$DLPAR_LOCAL_SIZE|$DLPAR_DEVICE|$CUDA_VISIBLE_DEVICES|$CUDA_DEVICE_ORDER|$DLPAR_CPUS|$(grep Cpus_allowed_list /proc/self/status | cut -f2)|$DLPAR_NIC|$NCCL_IB_HCA|$UCX_NET_DEVICES|$RANK|$LOCAL_RANK|$WORLD_SIZE|$LOCAL_WORLD_SIZE"'

# expect_grid "SRUN ARGS" M D TASKS_PER_NODE
expect_grid() {
  local args=$1 m=$2 d=$3 per_node=$4 out r local cpus nic want
  out=$(srun $args bash -c "$show" 2>&1)
  expect_rc "srun $args" $? 0
  for ((r = 0; r < m * d; r++)); do
    local=$(( r % per_node ))
    cpus=$(( local / 2 ))       # GPUs 0,1 on socket 0 (cpu 0), 2,3 on socket 1 (cpu 1)
    nic=mlx5_$cpus
    want="$r|1|$m|$d|$(( r % m ))|$(( r / m ))|$r|$local|$per_node|$local|0,1,2,3|PCI_BUS_ID|$cpus|$cpus|$nic|=mlx5_0,mlx5_1|$nic:1|$r|$local|$(( m * d ))|$per_node"
    expect_eq "srun $args: rank $r" "$(grep "^$r|" <<<"$out")" "$want"
  done
}

expect_grid "-N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2" 2 2 2
expect_grid "-N2 -n4 --ntasks-per-node=2 --dl-parallel=1x4" 1 4 2
expect_grid "-N2 -n4 --ntasks-per-node=2 --dl-parallel=1" 1 4 2
expect_grid "-N1 -n4 --dl-parallel=4x1" 4 1 4
out=$(srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=4x1 true 2>&1)
expect_rc "4x1 on 2 nodes x 2 tasks" $? 1
expect_contains "4x1 on 2 nodes x 2 tasks" "$out" "tensor-parallel group 0 (ranks 0-3) spans node 0 and node 1"

# The step's GPUs stay visible to every task, also under --gpus-per-task.
out=$(srun -N1 -n2 --gpus-per-task=1 --dl-parallel=2x1 bash -c 'echo "$SLURM_PROCID $CUDA_VISIBLE_DEVICES $DLPAR_DEVICE"' 2>&1)
expect_eq "--gpus-per-task=1, rank 0" "$(grep '^0 ' <<<"$out")" "0 0,1 0"
expect_eq "--gpus-per-task=1, rank 1" "$(grep '^1 ' <<<"$out")" "1 0,1 1"
out=$(srun -N1 -n2 --gpus-per-node=2 --dl-parallel=1x2 bash -c 'echo "$SLURM_PROCID $CUDA_VISIBLE_DEVICES $DLPAR_DEVICE"' 2>&1)
expect_eq "--gpus-per-node=2, rank 1" "$(grep '^1 ' <<<"$out")" "1 0,1 1"

# The user's --cpu-bind wins: no binding, DLPAR_CPUS empty.
out=$(srun -N1 -n2 --cpu-bind=none --dl-parallel=2x1 bash -c 'echo "$SLURM_PROCID [$DLPAR_CPUS] $(grep Cpus_allowed_list /proc/self/status | cut -f2)"' 2>&1)
expect_contains "--cpu-bind=none" "$out" "0 [] 0-1"

# --dl-verbose: one line per task
out=$(srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 --dl-verbose true 2>&1)
for r in 0 1 2 3; do
  expect_contains "--dl-verbose rank $r" "$out" "dlpar: rank $r node n$(( r / 2 + 1 )) local $(( r % 2 ))/2 tp $(( r % 2 ))/2 dp $(( r / 2 ))/2 gpu $(( r % 2 )) device $(( r % 2 )) cpus 0 nic mlx5_0"
done

# No --dl-* flag: the plugin does nothing (srun runs without the DLPAR_*
# variables of the test's own environment: the harness's, a bed's).
read -ra unset_dlpar <<<"$(env | sed -n 's/^\(DLPAR_[A-Za-z0-9_]*\)=.*/-u \1/p' | tr '\n' ' ')"
out=$(env "${unset_dlpar[@]}" srun -N2 -n4 --ntasks-per-node=2 bash -c 'env | grep -c "^DLPAR_\|^RANK=\|^LOCAL_RANK=\|^WORLD_SIZE=" ; grep Cpus_allowed_list /proc/self/status | cut -f2' 2>&1)
expect_eq "no flag: DLPAR variables (4 tasks)" "$(grep -c '^0$' <<<"$out")" 4
expect_eq "no flag: CPU binding (4 tasks)" "$(grep -c '^0-1$' <<<"$out")" 4

# sbatch: #SBATCH --dl-parallel reaches the job's steps.
cat >"$TEST_TMP/job.sh" <<'EOF2'
#!/bin/bash
#SBATCH -N2 -n4 --ntasks-per-node=2
#SBATCH --dl-parallel=2x2
srun bash -c 'echo "grid $DLPAR_RANK $DLPAR_TP_RANK $DLPAR_DP_RANK $DLPAR_TP_SIZE x $DLPAR_DP_SIZE"'
EOF2
sbatch -W -o "$TEST_TMP/job.out" "$TEST_TMP/job.sh" >/dev/null 2>&1
expect_rc "sbatch -W" $? 0
for r in 0 1 2 3; do
  expect_contains "sbatch step rank $r" "$(cat "$TEST_TMP/job.out" 2>/dev/null)" "grid $r $(( r % 2 )) $(( r / 2 )) 2 x 2"
done

# srun cannot predict an arbitrary layout; slurmstepd refuses it per node.
# The host file gives the nodes (srun 24.11 refuses --nodes with it);
# --dl-env=none, as srun refuses -m arbitrary under --dl-env=torch
# (torch_env.sh).
printf 'n1\nn2\nn1\nn2\n' >"$TEST_TMP/hosts"
out=$(SLURM_HOSTFILE=$TEST_TMP/hosts srun -n4 -m arbitrary --dl-parallel=2x2 --dl-env=none true 2>&1)
expect_rc "arbitrary layout" $? 1
expect_contains "arbitrary layout" "$out" "slurmstepd-n1: error: dlpar: --dl-parallel=2x2: tensor-parallel group 0 (ranks 0-1) spans n1 and another node"
# A task ended by a signal (the others still running): slurmstepd's line names it
# (spank/stepd.c); a plain srun without --dl-* gets no such line.
out=$(srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 --dl-env=none bash -c \
      '[ "$SLURM_PROCID" = 3 ] && kill -SEGV $$; sleep 1' 2>&1)
expect_rc "a task ended by SIGSEGV" $? 139
expect_eq "a task ended by SIGSEGV: the plugin's line" \
  "$(grep -c '^slurmstepd-n2: error: dlpar: rank 3 (pid [0-9]*) on n2 was ended by signal 11 (Segmentation fault) before any other task of its node ended$' <<<"$out")" 1
out=$(srun -N2 -n4 --ntasks-per-node=2 bash -c '[ "$SLURM_PROCID" = 3 ] && kill -SEGV $$; sleep 1' 2>&1)
expect_eq "a task ended by SIGSEGV without --dl-*: no plugin line" "$(grep -c 'dlpar:' <<<"$out")" 0
finish
