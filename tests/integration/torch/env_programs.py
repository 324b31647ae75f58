# SPDX-License-Identifier: BSD-3-Clause
"""tests/integration/torch/env_programs.py: PyTorch programs as their users
write them, started by srun --dl-parallel (or dlpar-run) with no env lines:
they initialise with init_method="env://" and trust RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR and MASTER_PORT. Each prints one line per rank:
"rank R: NAME ok ..." or "rank R: NAME FAILED: what".

  tutorial TP   the SC23/SC24 tutorial's train.py: env:// init, its
                utils/comm.py's tensor/data-parallel new_group pair for a
                tensor-parallel size TP, DDP over the data-parallel group;
                the weights after 3 steps equal one process's run on the
                whole batch
  lecture8      CS336 lecture 8: all_reduce, reduce_scatter and all_gather
                values checked; a hand-written data-parallel step whose
                weights match the single-process run
  env           prints the torch names of the env:// contract
"""
import os
import sys

import torch
import torch.distributed as dist

TOL = 1e-6



def say_line(text):
    """One line in one write: the ranks of dlpar-run share a stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()

def say(name, ok, detail=""):
    status = "ok" if ok else "FAILED:"
    say_line(f"rank {os.environ.get('RANK', '?')}: {name} {status} {detail}".rstrip())
    return ok


def init():
    dist.init_process_group(backend="gloo", init_method="env://")
    return dist.get_rank(), dist.get_world_size()


def full_batch(seed=0, n=8):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 4, generator=g), torch.randn(n, 2, generator=g)


def reference_weights(steps, n):
    """One process, the whole batch: what every data-parallel run must reach."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = full_batch(n=n)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def same_weights(name, model, steps, n):
    """The model's weights are one process's after the same steps on the whole batch."""
    got = torch.cat([p.detach().flatten() for p in model.parameters()])
    diff = (got - reference_weights(steps, n)).abs().max().item()
    return say(name, diff < TOL, f"max |w - w_single| = {diff:.2e}")


def comm_groups(tp):
    """The tutorial's utils/comm.py: tensor-parallel groups of tp consecutive
    ranks, data-parallel groups across them; every rank creates every group."""
    rank, world = dist.get_rank(), dist.get_world_size()
    tp_group = dp_group = None
    for g in range(world // tp):
        ranks = list(range(g * tp, (g + 1) * tp))
        group = dist.new_group(ranks)
        if rank in ranks:
            tp_group, tp_ranks = group, ranks
    for t in range(tp):
        ranks = list(range(t, world, tp))
        group = dist.new_group(ranks)
        if rank in ranks:
            dp_group, dp_ranks = group, ranks
    return tp_group, tp_ranks, dp_group, dp_ranks


def tutorial(tp):
    rank, world = init()
    tp_group, tp_ranks, dp_group, dp_ranks = comm_groups(tp)
    ok = True
    for name, group, ranks in (("tp", tp_group, tp_ranks), ("dp", dp_group, dp_ranks)):
        value = torch.tensor([float(rank)])
        dist.all_reduce(value, group=group)
        ok &= say(f"tutorial {name} allreduce", value.item() == sum(ranks), f"{value.item()} over {ranks}")
    # DDP over the data-parallel group, each data-parallel rank a shard of the batch
    dp, dp_rank, steps, n = len(dp_ranks), dp_ranks.index(rank), 3, 8
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2), process_group=dp_group)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = full_batch(n=n)
    shard = slice(dp_rank * n // dp, (dp_rank + 1) * n // dp)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x[shard]), y[shard]).backward()
        opt.step()
    ok &= same_weights("tutorial DDP", model, steps, n)
    dist.destroy_process_group()
    return ok


def lecture8():
    rank, world = init()
    ok = True
    t = torch.tensor([0.0, 1.0, 2.0, 3.0]) + rank
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    want = torch.tensor([0.0, 1.0, 2.0, 3.0]) * world + sum(range(world))
    ok &= say("all_reduce", torch.equal(t, want), str(t.tolist()))
    # reduce_scatter: rank r gets the sum over ranks of chunk r (gloo has no
    # reduce_scatter in every torch: composed from all_reduce there)
    inputs = [torch.full((2,), float(rank * 10 + j)) for j in range(world)]
    out = torch.empty(2)
    try:
        dist.reduce_scatter(out, inputs)
    except RuntimeError:
        whole = torch.stack(inputs)
        dist.all_reduce(whole)
        out = whole[rank]
    want = torch.full((2,), float(sum(r * 10 + rank for r in range(world))))
    ok &= say("reduce_scatter", torch.equal(out, want), str(out.tolist()))
    parts = [torch.empty(1) for _ in range(world)]
    dist.all_gather(parts, torch.tensor([float(rank * rank)]))
    ok &= say("all_gather", [p.item() for p in parts] == [float(r * r) for r in range(world)],
              str([p.item() for p in parts]))
    # a hand-written data-parallel step: average the gradients with all_reduce
    steps, n = 2, 8 if 8 % world == 0 else world
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = full_batch(n=n)
    shard = slice(rank * n // world, (rank + 1) * n // world)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x[shard]), y[shard]).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
    ok &= same_weights("data-parallel step", model, steps, n)
    dist.destroy_process_group()
    return ok


def env():
    names = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
             "MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME", "SLURM_JOB_ID", "SLURM_STEP_ID"]
    task = os.environ.get("SLURM_PROCID", os.environ.get("DLPAR_RANK", "?"))
    say_line(f"task {task}: env " + " ".join(f"{k}={os.environ.get(k, '-')}" for k in names))
    return True


if __name__ == "__main__":
    what = sys.argv[1]
    ok = {"tutorial": lambda: tutorial(int(sys.argv[2])), "lecture8": lecture8, "env": env}[what]()
    sys.exit(0 if ok else 1)
