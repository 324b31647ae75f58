#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""contrib/pytorch/ddp_example.py: a PyTorch DDP program as people write it
for torchrun, started by srun --dl-parallel with no env lines:

    srun -N2 --ntasks-per-node=2 --dl-parallel=2x2 python3 ddp_example.py [--dlpar]

It initialises with init_method="env://" (MASTER_ADDR, MASTER_PORT, RANK,
WORLD_SIZE from the plugin), or with --dlpar through dlpar's module (no port
at all), builds the tensor-parallel and data-parallel groups of the grid the
way the SC23/SC24 tutorial's utils/comm.py does, and trains a small model
with DDP over the data-parallel group for a few steps. Rank 0 prints the
loss per step and "ddp_example: done".
"""
import os
import sys

import torch
import torch.distributed as dist



def say_line(text):
    """One line in one write: the ranks of dlpar-run share a stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()

def groups_from_env():
    """The tutorial's comm.py: tp = TP consecutive ranks, dp = the ranks TP apart."""
    tp = int(os.environ.get("DLPAR_TP_SIZE", "1"))
    rank, world = dist.get_rank(), dist.get_world_size()
    tp_group = dp_group = None
    for g in range(world // tp):
        group = dist.new_group(list(range(g * tp, (g + 1) * tp)))
        tp_group = group if rank // tp == g else tp_group
    for t in range(tp):
        group = dist.new_group(list(range(t, world, tp)))
        dp_group = group if rank % tp == t else dp_group
    return tp_group, dp_group


def main():
    if "--dlpar" in sys.argv:
        import dlpar.torch
        grid = dlpar.torch.init_process_group()
        tp_group, dp_group = grid.tp_group, grid.dp_group
    else:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("DLPAR_DEVICE", os.environ["LOCAL_RANK"])))
        dist.init_process_group(backend=backend, init_method="env://")
        tp_group, dp_group = groups_from_env()
    rank = dist.get_rank()
    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).to(device)
    model = torch.nn.parallel.DistributedDataParallel(model, process_group=dp_group)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1 + dist.get_rank(dp_group))
    for step in range(5):
        x = torch.randn(8, 16, generator=g).to(device)
        loss = (model(x) - x[:, :4]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        shown = loss.detach().clone()  # the tensor-parallel ranks' mean (one batch: the same value)
        dist.all_reduce(shown, group=tp_group)
        shown /= dist.get_world_size(tp_group)
        if rank == 0:
            say_line(f"ddp_example: step {step} loss {shown.item():.4f}")
    if rank == 0:
        say_line(f"ddp_example: done on {dist.get_world_size()} ranks")
    dist.barrier()  # every rank done before any tears down: torch 2.6's gloo can abort on a peer gone mid-teardown
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
