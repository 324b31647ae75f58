# SPDX-License-Identifier: BSD-3-Clause
"""tests/integration/torch/module_program.py: dlpar's Python module under
srun --dl-parallel (or dlpar-run): dlpar.torch.init_process_group() with no
env lines and no port, then the world, tensor-parallel and data-parallel
groups checked value by value (an allreduce of each rank's number equals
the sum over the members libdlpar's grid gives: tp = M consecutive ranks,
dp = the ranks M apart); where torch has DeviceMesh.from_group (2.4+), the
grid's (dp, tp) mesh: its shape, names and the same allreduces over its
groups. One line per check: "rank R: NAME ok ..." or "... FAILED ...".
DLPAR_TEST_LEAVE=R: rank R exits before it joins; the others' cleanup
(a finally block) says "rank R: cleanup ran" after the rendezvous fails.
DLPAR_TEST_THREADS=1: instead, four threads of each rank call
share_from_root at once, 0.3 s apart (the other ranks 1 s late, so rank
0's calls queue behind its first), each for its own key: every thread must
get rank 0's text for its key.
DLPAR_TEST_DUMP_AFTER=S: a rank still running S seconds after its start
prints every thread's Python stack and exits 1, so a hang names where it
waits; "rank R: done" is its last line before the interpreter's exit."""
import faulthandler
import os
import sys
import threading
import time

import torch
import torch.distributed as dist

import dlpar.torch

if os.environ.get("DLPAR_TEST_DUMP_AFTER"):
    faulthandler.dump_traceback_later(float(os.environ["DLPAR_TEST_DUMP_AFTER"]), exit=True)

def say_line(text):
    """One line in one write: the ranks of dlpar-run share a stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def threads_share():
    """share_from_root from four threads at once: one call at a time, in
    the order they came, so the keys stay apart."""
    ctx = dlpar.bootstrap()
    rank, got = ctx.info.rank, {}
    if rank != 0:
        time.sleep(1)

    def share(i):
        got[i] = ctx.share_from_root(f"test.thread.{i}", f"value {i}" if rank == 0 else None)

    threads = []
    for i in range(4):
        threads.append(threading.Thread(target=share, args=(i,)))
        threads[-1].start()
        time.sleep(0.3)
    for t in threads:
        t.join()
    ok = got == {i: f"value {i}" for i in range(4)}
    say_line(f"rank {rank}: threads {'ok' if ok else 'FAILED'} {got}")
    ctx.close()
    sys.exit(0 if ok else 1)


if os.environ.get("DLPAR_TEST_THREADS"):
    threads_share()
leave = os.environ.get("DLPAR_TEST_LEAVE")
if leave is not None and os.environ.get("DLPAR_RANK") == leave:
    sys.exit(3)
try:
    grid = dlpar.torch.init_process_group()
finally:
    if leave is not None:
        say_line(f"rank {os.environ.get('DLPAR_RANK')}: cleanup ran")
rank, m, d = grid.rank, grid.tp_size, grid.dp_size
members = {
    "world": list(range(m * d)),
    "tp": list(range(rank // m * m, rank // m * m + m)),
    "dp": list(range(rank % m, m * d, m)),
}
ok = grid.tp_rank == rank % m and grid.dp_rank == rank // m and grid.world_size == m * d
say_line(f"rank {rank}: grid {'ok' if ok else 'FAILED'} tp {grid.tp_rank}/{m} dp {grid.dp_rank}/{d}")
groups = [("world", None), ("tp", grid.tp_group), ("dp", grid.dp_group)]
if grid.mesh is not None:
    mesh = grid.mesh
    ok = tuple(mesh.shape) == (d, m) and tuple(mesh.mesh_dim_names) == ("dp", "tp")
    say_line(f"rank {rank}: mesh {'ok' if ok else 'FAILED'} shape {tuple(mesh.shape)} names {mesh.mesh_dim_names}")
    groups += [("tp", mesh.get_group("tp")), ("dp", mesh.get_group("dp"))]
for name, group in groups:
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value, group=group)
    want = float(sum(r + 1 for r in members[name]))
    say_line(f"rank {rank}: {name} allreduce {'ok' if value.item() == want else 'FAILED'} {value.item()} over "
             f"{members[name]}")
dist.barrier()  # every rank done with every group before any tears down (gloo aborts on a peer gone mid-teardown)
dist.destroy_process_group()
say_line(f"rank {rank}: done")
