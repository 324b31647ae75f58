#!/usr/bin/python3
"""bench/torch_rendezvous.py: the torchrun/TCPStore path that dlpar replaces,
one rank of it, for bench/rendezvous. torch.distributed with the gloo
backend and init_method env:// (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
set by hand, as in the tutorials' sbatch scripts), then the tensor- and
data-parallel groups with new_group. Prints seconds since this process was
created: at the first line of the script, after `import torch`, after
init_process_group (the TCPStore rendezvous), and with all groups ready."""
import os
import time


def since_process_start():
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start_ticks = int(fields[19])  # field 22, starttime
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")


at_main = since_process_start()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

at_import = since_process_start()
rank = int(os.environ["SLURM_PROCID"])
size = int(os.environ["SLURM_NTASKS"])
tp = int(os.environ.get("BENCH_TP", "2"))
dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=size)
at_rendezvous = since_process_start()
groups = []
for g in range(size // tp):  # every rank creates every group, as torch requires
    groups.append(dist.new_group(list(range(g * tp, g * tp + tp))))
for t in range(tp):
    groups.append(dist.new_group(list(range(t, size, tp))))
dist.barrier()
at_ready = since_process_start()
print(f"torch_rendezvous rank {rank} size {size} main {at_main:.4f} import {at_import:.4f} "
      f"rendezvous {at_rendezvous:.4f} ready {at_ready:.4f} torch {torch.__version__}", flush=True)
dist.destroy_process_group()
