#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""contrib/pytorch/ddp_requeue.py: ddp_example.py --dlpar, plus what a long
job needs to outlive its time limit and preemption (doc/user.md, "Stopping
and resuming"): on SIGTERM, SIGUSR1 or SIGINT to any rank, every rank
stops at the same step, rank 0 writes the checkpoint atomically and every
rank exits 85 ("stopped early, more to do"); a restart (dlpar-restart's
DLPAR_CHECKPOINT) resumes at the next step. In a batch script:

    #SBATCH --signal=B:USR1@120 --requeue
    exec dlpar-restart --checkpoint=$PWD/last.pt srun --dl-parallel=2x2 python3 ddp_requeue.py --checkpoint=$PWD/last.pt

(tests/integration/torch_requeue.sh runs it so, stopped by the warning, a
preemption and scancel -b -s USR1.)

The lines beyond ddp_example.py are marked "# stop". Each step's batch is
a function of the step number, so a resumed run sees the batches the
uninterrupted one would. Rank 0 prints the loss per step.
"""
import argparse
import sys

import dlpar.stop  # stop
dlpar.stop.install()  # stop: a signal while torch loads is a stop request too

import torch
import torch.distributed as dist

import dlpar.torch


def say_line(text):
    """One line in one write: the ranks of dlpar-run share a stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def save(step, model, opt, path):  # stop
    """Rank 0's checkpoint after `step`, atomically: a restart resumes at the next step."""  # stop
    dlpar.torch.save_checkpoint({"step": step + 1, "model": model.module.state_dict(),  # stop
                                 "optimizer": opt.state_dict()}, path)  # stop


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--checkpoint", default="checkpoint.pt", help="where rank 0 writes the checkpoint")
    parser.add_argument("--checkpoint-every", type=int, default=0,
                        help="rank 0 also writes it every N steps (default 0: only when stopped early)")
    args = parser.parse_args()
    grid = dlpar.torch.init_process_group()
    rank, dp_group = grid.rank, grid.dp_group
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    model = torch.nn.parallel.DistributedDataParallel(model, process_group=dp_group)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    stop = dlpar.torch.Stop()  # stop
    state = dlpar.torch.load_checkpoint()  # stop: DLPAR_CHECKPOINT on a restart, else None
    if state:  # stop
        model.module.load_state_dict(state["model"])  # stop
        opt.load_state_dict(state["optimizer"])  # stop
        say_line(f"ddp_requeue: rank {rank}: resumed at step {state['step']}")  # stop
    for step in range(state["step"] if state else 0, args.steps):  # stop: from the checkpoint's step
        g = torch.Generator().manual_seed(1 + grid.dp_rank + 1000 * step)
        x = torch.randn(8, 16, generator=g)
        loss = (model(x) - x[:, :4]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            say_line(f"ddp_requeue: step {step} loss {loss.item():.9g}")
        if stop.now(step):  # stop: the same answer on every rank
            if rank == 0:  # stop
                save(step, model, opt, args.checkpoint)  # stop
            stop.exit()  # stop: barrier, teardown, exit 85
        if rank == 0 and args.checkpoint_every and (step + 1) % args.checkpoint_every == 0:  # stop
            save(step, model, opt, args.checkpoint)  # stop
    if rank == 0:
        say_line(f"ddp_requeue: done on {dist.get_world_size()} ranks")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
