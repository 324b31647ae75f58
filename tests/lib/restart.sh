# SPDX-License-Identifier: BSD-3-Clause
# tests/lib/restart.sh: sourced after use_bed by the tests of a step that
# dlpar-restart runs again (restart.sh, restart_killed.sh). They share the
# 2x2 training command in train, its losses by run name, the uninterrupted
# run they compare with, and a wrapper that makes one rank of n2 signal
# itself once the run's first checkpoint is written.
restart=$DLPAR_SRCDIR/contrib/dlpar-restart

# losses RUN: "step loss" lines of RUN's 2x2 metrics, one per step
losses() { step_losses "$TEST_TMP/runs/test/2x2/$1/metrics.jsonl" | sort -n | uniq; }

# train_whole: the data, the command in train, and the uninterrupted run
# named whole, on n1 and n2 of a 3-node allocation
train_whole() {
  make_data
  train=("$B/trainer/dlpar-train" --config=test "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) --num_iters=24 --checkpoint_every=4)
  out=$(timeout 400 salloc -N3 --ntasks-per-node=2 srun -N2 -n4 --ntasks-per-node=2 --dl-parallel=2x2 "${train[@]}" --run=whole 2>&1)
  expect_rc "uninterrupted run" $? 0
}

# signal_on_n2 FILE SIGNAL LOCALID: FILE runs its arguments, and the rank of
# n2 with SLURM_LOCALID LOCALID sends itself SIGNAL once the file in CKPT
# exists, in the first attempt only (DLPAR_RESTART=0)
signal_on_n2() {
  cat >"$1" <<SH
#!/bin/bash
if [ "\$SLURMD_NODENAME" = n2 ] && [ "\$SLURM_LOCALID" = $3 ] && [ "\$DLPAR_RESTART" = 0 ]; then
  (while [ ! -e "\$CKPT" ]; do sleep 0.01; done; kill -$2 \$\$) &
fi
exec "\$@"
SH
  chmod +x "$1"
}
