#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/torch_rendezvous.py: one rank of a PyTorch job's start, for
bench/rendezvous and bench/torch-startup. torch.distributed with the gloo
backend, then the tensor- and data-parallel groups. BENCH_MODE says how
the ranks meet:
  manual (default)  init_method env:// with MASTER_ADDR, MASTER_PORT set by
                    hand and the rank from SLURM_PROCID, as the tutorials'
                    sbatch scripts do (export_DDP_vars.sh)
  env               init_method env:// with nothing set by hand: the
                    variables srun --dl-parallel exports
  module            dlpar.torch.init_process_group(): no port, rank 0's
                    TCPStore address over PMIx; it builds the groups
Prints seconds since this process was created: at the first line of the
script, after `import torch`, after the rendezvous, and with all groups
ready."""
import os
import sys
import time



def say_line(text):
    """One line in one write: the ranks of dlpar-run share a stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()

def since_process_start():
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start_ticks = int(fields[19])  # field 22, starttime
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")


at_main = since_process_start()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

at_import = since_process_start()
mode = os.environ.get("BENCH_MODE", "manual")
tp = int(os.environ.get("BENCH_TP", "2"))
if mode == "module":
    import dlpar.torch  # noqa: E402

    grid = dlpar.torch.init_process_group()
    rank, size = grid.rank, grid.world_size
    at_rendezvous = since_process_start()  # the groups come with it
else:
    if mode == "manual":
        rank, size = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=size)
    else:
        dist.init_process_group("gloo", init_method="env://")
        rank, size = dist.get_rank(), dist.get_world_size()
    at_rendezvous = since_process_start()
    groups = []
    for g in range(size // tp):  # every rank creates every group, as torch requires
        groups.append(dist.new_group(list(range(g * tp, g * tp + tp))))
    for t in range(tp):
        groups.append(dist.new_group(list(range(t, size, tp))))
dist.barrier()
at_ready = since_process_start()
say_line(f"torch_rendezvous rank {rank} size {size} main {at_main:.4f} import {at_import:.4f} "
      f"rendezvous {at_rendezvous:.4f} ready {at_ready:.4f} torch {torch.__version__}")
dist.destroy_process_group()
