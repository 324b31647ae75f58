# SPDX-License-Identifier: BSD-3-Clause
"""bench/torch_stop.py: the cost of dlpar.torch.Stop per train step, one
rank of bench/torch-stop (under dlpar-run). DDP over the world (gloo), a
model of SIZE (tiny: contrib/pytorch/ddp_requeue.py's 16-32-4 MLP; mlp: 512
wide, 3 layers, batch 64), ROUNDS rounds of STEPS steps for each variant in
turn (interleaved, so that the machine's load hits them alike):
    none       no check (the anchor)
    sync1      Stop(every=1, overlap=False): one all-reduce of one int per step, waited for
    overlap1   Stop(every=1): the same, read one step later (the default)
    overlap10  Stop(every=10)
Rank 0 prints one line per variant: "VARIANT median_ms_per_step" (the
median over the rounds of the round's mean step time, the maximum over
ranks of each round)."""
import statistics
import sys
import time

import torch
import torch.distributed as dist

import dlpar.torch

VARIANTS = {"none": None, "sync1": dict(every=1, overlap=False), "overlap1": dict(every=1),
            "overlap10": dict(every=10)}


def model_of(size):
    if size == "tiny":
        return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)), 8, 16, 4
    width = 512
    layers = [torch.nn.Linear(width, width), torch.nn.GELU(), torch.nn.Linear(width, width), torch.nn.GELU(),
              torch.nn.Linear(width, width)]
    return torch.nn.Sequential(*layers), 64, width, width


def main(size, rounds, steps):
    torch.set_num_threads(1)
    grid = dlpar.torch.init_process_group()
    torch.manual_seed(0)
    net, batch, d_in, d_out = model_of(size)
    model = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    stops = {name: dlpar.torch.Stop(**kw) if kw else None for name, kw in VARIANTS.items()}
    g = torch.Generator().manual_seed(1 + grid.rank)
    x = torch.randn(batch, d_in, generator=g)
    y = torch.randn(batch, d_out, generator=g)
    times = {name: [] for name in VARIANTS}
    step = 0
    for r in range(rounds + 1):  # round 0: warm-up, not counted
        for name, stop in stops.items():
            dist.barrier()
            start = time.perf_counter()
            for _ in range(steps):
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if stop is not None and stop.now(step):
                    raise SystemExit("bench/torch_stop.py: a stop was agreed: no signal was sent")
                step += 1
            mean = torch.tensor([(time.perf_counter() - start) / steps])
            dist.all_reduce(mean, op=dist.ReduceOp.MAX)
            if r > 0:
                times[name].append(mean.item())
    if grid.rank == 0:
        for name in VARIANTS:
            sys.stdout.write(f"{name} {statistics.median(times[name]) * 1e3:.4f}\n")
        sys.stdout.flush()
    for stop in stops.values():
        if stop is not None and stop._posted:
            stop._agreed(stop._posted)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
