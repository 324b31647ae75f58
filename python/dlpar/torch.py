# SPDX-License-Identifier: BSD-3-Clause
"""dlpar.torch: PyTorch's process groups for the grid of srun --dl-parallel
(or dlpar-run), without a port to choose and without MASTER_ADDR:

    import dlpar.torch
    grid = dlpar.torch.init_process_group()      # gloo on CPUs; on GPUs nccl for CUDA tensors, gloo for CPU ones
    dist.all_reduce(t, group=grid.tp_group)      # tensor-parallel: M consecutive ranks, one node
    dist.all_reduce(g, group=grid.dp_group)      # data-parallel: ranks M apart
    ...
    dist.barrier()                               # at the end, before teardown: torch 2.6's gloo can
    dist.destroy_process_group()                 # abort at exit when a peer has torn down first

World rank 0 opens torch's TCPStore on a port the kernel chooses (no
collision is possible); its address and port reach the other ranks through
PMIx (libdlpar's dlpar_share_from_root), then every rank joins. A rank that
never arrives is named (rank, host) within the rendezvous timeout, in one
line from the lowest rank of its node that arrived (rank 0 says when the
missing ranks are all on other nodes), and the step ends. The groups are libdlpar's: tp = M
consecutive ranks (kept inside a node by the plugin), dp = the ranks M
apart; on torch versions with a DeviceMesh, grid.mesh is the (dp, tp) mesh
over them. The CUDA device is the one the launcher bound the rank to.
It also turns the stop signals into stop requests (dlpar.stop).
On a job of several nodes, a rank 0 address that is loopback (a host name
that /etc/hosts maps to 127.0.1.1, say) is refused on every rank
(DlparError) instead of hanging the other nodes.

Stopping early, every rank at the same step (Slurm's time limit,
preemption, scancel; doc/user.md, "Stopping and resuming"):

    stop = dlpar.torch.Stop()                    # one all-reduce of one int per step, overlapped
    state = dlpar.torch.load_checkpoint()        # DLPAR_CHECKPOINT's (a restart), else None
    for step in range(state["step"] if state else 0, steps):
        ...                                      # the step
        if stop.now(step):                       # the same answer on every rank
            if grid.rank == 0:
                dlpar.torch.save_checkpoint({"step": step + 1, ...}, path)
            stop.exit()                          # barrier, teardown, exit 85 (dlpar.stop.EXIT_STOPPED)
"""
import datetime
import ipaddress
import itertools
import os
import signal
import socket
import sys
from collections import namedtuple

import torch
import torch.distributed as dist

import dlpar
import dlpar.stop

__all__ = ["Grid", "init_process_group", "Stop", "save_checkpoint", "load_checkpoint"]

Grid = namedtuple("Grid", "rank world_size tp_rank tp_size dp_rank dp_size tp_group dp_group device mesh context")

STORE_KEY = "dlpar.torch.store"  # and the call's number: every rank calls in the same order
REFUSED = "refused:"  # rank 0's text in place of its store's address
_store_calls = itertools.count(1)


def _rank0_address():
    """How the other ranks reach rank 0, and where that came from: the
    launcher's DLPAR_MASTER_ADDR (rank 0's node's address, never a name
    that may resolve to loopback; exported under --dl-env=none too), else
    MASTER_ADDR, else this host's address."""
    for name in ("DLPAR_MASTER_ADDR", "MASTER_ADDR"):
        if os.environ.get(name):
            return os.environ[name], name
    host = socket.gethostname()
    return socket.gethostbyname(host), f"the host name {host}"


def _loopback_refusal(addr, source, nnodes):
    """Why the other nodes cannot reach rank 0 at addr (it resolves to a
    loopback address, as a host name in /etc/hosts' 127.0.1.1 line does),
    or None: on one node loopback is fine."""
    if nnodes < 2:
        return None
    try:
        found = {info[4][0] for info in socket.getaddrinfo(addr, None)}
    except socket.gaierror:
        return None  # torch's store names an address that does not resolve
    loopback = sorted(a for a in found if ipaddress.ip_address(a.split("%")[0]).is_loopback)
    if not loopback:
        return None
    return (f"rank 0's address {addr} ({source}) is loopback ({', '.join(loopback)}), which the job's other nodes "
            f"cannot reach: ask the admin to give the nodes a NodeAddr in slurm.conf (srun --dl-parallel then "
            f"exports DLPAR_MASTER_ADDR), or export MASTER_ADDR as an address of rank 0's node that they reach")


def _tcp_store(*args, **kwargs):
    """torch's TCPStore; where torch was built without libuv (Debian 13's
    2.6, which still asks for it by default), its other server."""
    try:
        return dist.TCPStore(*args, **kwargs)
    except RuntimeError as error:
        if "libuv" not in str(error):
            raise
        return dist.TCPStore(*args, use_libuv=False, **kwargs)


def _open_store(ctx, size, timeout):
    """Rank 0's store and its address: (store, address). Rank 0's refusal
    reaches every rank in its place (REFUSED and the line): all raise it."""
    key = f"{STORE_KEY}.{next(_store_calls)}"
    if ctx.info.rank == 0:
        addr, source = _rank0_address()
        refusal = _loopback_refusal(addr, source, ctx.info.nnodes)
        if refusal:
            ctx.share_from_root(key, f"{REFUSED} {refusal}")
            raise dlpar.DlparError(refusal)
        store = _tcp_store(addr, 0, size, True, timeout=timeout, wait_for_workers=False)
        ctx.share_from_root(key, f"{addr} {store.port}")
        return store, addr
    shared = ctx.share_from_root(key)
    if shared.startswith(REFUSED):
        raise dlpar.DlparError(shared[len(REFUSED) + 1:])
    addr, port = shared.split()
    return _tcp_store(addr, int(port), size, False, timeout=timeout), addr


def _gloo_interface(ctx, addr):
    """gloo picks its interface from the host name, which may resolve to
    loopback (then a multi-node job hangs): unless the user chose, the
    interface towards rank 0."""
    if "GLOO_SOCKET_IFNAME" not in os.environ:
        name = ctx.route_interface(addr)
        if name:
            os.environ["GLOO_SOCKET_IFNAME"] = name


def _groups(info):
    """libdlpar's orthogonal groups; every rank creates every group, in one order."""
    tp, dp, me = info.tp_size, info.dp_size, info.rank
    tp_group = dp_group = None
    for g in range(dp):
        group = dist.new_group(list(range(g * tp, (g + 1) * tp)))
        tp_group = group if g == me // tp else tp_group
    for t in range(tp):
        group = dist.new_group(list(range(t, tp * dp, tp)))
        dp_group = group if t == me % tp else dp_group
    return tp_group, dp_group


def _mesh(info, tp_group, dp_group, device_type):
    """A (dp, tp) DeviceMesh over the same groups, where torch has one."""
    try:
        from torch.distributed.device_mesh import DeviceMesh
    except ImportError:
        return None
    if not hasattr(DeviceMesh, "from_group"):
        return None
    layout = torch.arange(info.size).reshape(info.dp_size, info.tp_size)
    return DeviceMesh.from_group([dp_group, tp_group], device_type, mesh=layout, mesh_dim_names=("dp", "tp"))


def _default_backend(on_gpu):
    """gloo without a GPU; with one, nccl for CUDA tensors and gloo for CPU
    tensors where torch maps backends by device (2.0 and later: what its
    own default is), else nccl alone."""
    if not on_gpu:
        return "gloo"
    return "cpu:gloo,cuda:nccl" if int(torch.__version__.split(".")[0]) >= 2 else "nccl"


def init_process_group(backend=None, timeout=None):
    """Joins the step's ranks into torch.distributed and returns the Grid.
    backend: None picks gloo on CPUs and, when the rank has a GPU, nccl for
    CUDA tensors and gloo for CPU tensors (torch 2.0 and later; before:
    nccl alone), as torch's own default does. timeout
    (seconds or a timedelta): the rendezvous's and torch's (default:
    libdlpar's rendezvous timeout in effect: DLPAR_RENDEZVOUS_TIMEOUT, else
    120 s + 2 ms per rank)."""
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
    dlpar.stop.install()
    ctx = dlpar.bootstrap(rendezvous_timeout=seconds)
    info = ctx.info
    dlpar.stop.install(rank=info.rank)
    on_gpu = info.device >= 0 and torch.cuda.is_available()
    if on_gpu:
        torch.cuda.set_device(info.device)
    backend = backend or _default_backend(on_gpu)
    delta = datetime.timedelta(seconds=info.rendezvous_timeout_s)
    store, addr = _open_store(ctx, info.size, delta)
    if "gloo" in backend:
        _gloo_interface(ctx, addr)
    dist.init_process_group(backend, store=store, rank=info.rank, world_size=info.size, timeout=delta)
    tp_group, dp_group = _groups(info)
    mesh = _mesh(info, tp_group, dp_group, "cuda" if on_gpu else "cpu")
    return Grid(info.rank, info.size, info.tp_rank, info.tp_size, info.dp_rank, info.dp_size, tp_group, dp_group,
                info.device if on_gpu else -1, mesh, ctx)


class Stop:
    """Every rank's same answer to "stop now?" at a step boundary. now(step)
    is called by every rank after each step; every `every` steps it posts
    this rank's stop request (a signal's number, dlpar.stop) in an
    all-reduce (MAX) of one int over the world, on a gloo group of its
    own, and returns the agreement the previous post reached: all ranks
    return True at the same step, `every` steps after the post that first
    carried a request (with overlap=False, at that post: the all-reduce is
    waited for there). The cost: one all-reduce of one int per `every`
    steps, overlapped with the next steps' work by default (bench/RESULTS.md).
    The signals are dlpar.stop's (installed here too, if not yet). Once
    agreed, .step is the step all ranks stopped at and .signal the
    largest signal number a rank posted. It needs only torch.distributed:
    a program initialised with env:// may use it too."""

    def __init__(self, every=1, overlap=True):
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"Stop(every={every!r}): expected a whole number of steps, 1 or more")
        self.every, self.overlap = every, overlap
        self.rank = dist.get_rank()
        dlpar.stop.install(rank=self.rank)
        self._group = dist.new_group(backend="gloo")  # every rank, in the same order: a CPU int on any backend
        self._posted = None  # (work, tensor) of the last post, or None
        self.step = None  # the step all ranks stopped at, once agreed
        self.signal = 0

    def _post(self):
        flag = torch.tensor([dlpar.stop.requested()], dtype=torch.int32)
        work = dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self._group, async_op=True)
        return work, flag

    def _agreed(self, posted):
        work, flag = posted
        work.wait()
        return int(flag.item())

    def now(self, step):
        """True on every rank at the same step, once a rank got a stop signal."""
        if (step + 1) % self.every != 0:
            return False
        if not self.overlap:
            agreed = self._agreed(self._post())
        else:
            agreed = self._agreed(self._posted) if self._posted else 0
            self._posted = None if agreed else self._post()
        if agreed:
            self.step, self.signal = step, agreed
            dlpar.stop._say(f"dlpar: rank {self.rank}: stop agreed at step {step} "
                            f"({signal.Signals(agreed).name} on a rank)")
        return bool(agreed)

    def exit(self, code=dlpar.stop.EXIT_STOPPED):
        """Every rank waits for the others (the checkpoint written by then),
        tears the process group down and exits with `code` (85 by default:
        stopped early, more to do)."""
        if self._posted:
            self._agreed(self._posted)
        dist.barrier(group=self._group)
        dist.destroy_process_group()
        sys.stdout.flush()
        sys.exit(code)


def save_checkpoint(obj, path):
    """torch.save(obj) to path atomically: a temporary file beside it,
    fsync, rename, fsync of the directory (dlpar.stop.write_atomic)."""
    dlpar.stop.write_atomic(path, lambda f: torch.save(obj, f))


def load_checkpoint(path=None, map_location="cpu"):
    """torch.load of path, else of DLPAR_CHECKPOINT (dlpar-restart's, set on
    a restart once the file exists); None when neither names a file."""
    path = path or dlpar.stop.checkpoint()
    if not path:
        return None
    if not os.path.isfile(path):
        raise dlpar.DlparError(f"checkpoint {path}: no such file (DLPAR_CHECKPOINT names the file dlpar-restart "
                               f"was given with --checkpoint; write it with dlpar.torch.save_checkpoint)")
    return torch.load(path, map_location=map_location)
