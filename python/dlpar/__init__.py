# SPDX-License-Identifier: BSD-3-Clause
"""dlpar: the grid srun --dl-parallel (or dlpar-run) gave this process, and
rank 0's text handed to every rank through PMIx, from libdlpar by ctypes.

    import dlpar
    ctx = dlpar.bootstrap()            # PMIx: rank, size, grid, host, device
    ctx.info.tp_rank, ctx.info.dp_size
    addr = ctx.share_from_root("my.key", "10.0.0.1:1234" if ctx.info.rank == 0 else None)

dlpar.torch.init_process_group() builds PyTorch's process groups on it;
dlpar.stop holds the stop signals and the exit status of a run stopped
early (85), dlpar.torch.Stop the agreement on the step to stop at.
libdlpar.so is found as dlpar._find says (`python3 -m dlpar` lists the
places and the one that loads); DLPAR_LIBRARY overrides them.
Pure Python over libdlpar.so (ctypes): nothing to compile per Python
version, and the PMIx work stays in the one C implementation.

share_from_root pairs its calls across ranks by their order, not by key:
every rank makes its calls in the same order. Calls from several threads
run one at a time, in the order they arrive. A rank missing past the
rendezvous timeout raises DlparError (naming it, rank and host), so
`finally` blocks and `with` exits run; the context is then spent, and the
step ends when it is closed (close(), garbage collection, or at the
interpreter's exit): exit status 1.

A stack request (SIGURG: `scancel --signal=URG JOB.STEP`, or libdlpar's
watchdog in a C rank of the same step) makes each rank write one block
headed by rank and host: libdlpar's C stack of the main thread, then
every Python thread's stack (faulthandler). DLPAR_SIGNALS=keep leaves
SIGURG alone.
"""
import atexit
import ctypes
import os
import sys
import weakref

from . import _find

__all__ = ["Info", "Context", "DlparError", "bootstrap"]


class DlparError(RuntimeError):
    """A libdlpar call failed; the message is libdlpar's one line."""


class Info(ctypes.Structure):
    """libdlpar's dlpar_info (dlpar.h), field for field."""
    _fields_ = [("rank", ctypes.c_int), ("size", ctypes.c_int),
                ("local_rank", ctypes.c_int), ("local_size", ctypes.c_int),
                ("node", ctypes.c_int), ("nnodes", ctypes.c_int),
                ("tp_rank", ctypes.c_int), ("tp_size", ctypes.c_int),
                ("dp_rank", ctypes.c_int), ("dp_size", ctypes.c_int),
                ("device", ctypes.c_int), ("backend", ctypes.c_int),
                ("rendezvous_seconds", ctypes.c_double), ("init_seconds", ctypes.c_double),
                ("rendezvous_timeout_s", ctypes.c_double), ("collective_timeout_s", ctypes.c_double),
                ("fatal_grace_s", ctypes.c_double), ("_host", ctypes.c_char * 256)]

    @property
    def host(self):
        return self._host.decode(errors="replace")


class _Options(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_int), ("rendezvous_timeout_s", ctypes.c_double),
                ("collective_timeout_s", ctypes.c_double), ("exchange_nccl_ids", ctypes.c_int),
                ("keep_signals", ctypes.c_int), ("fatal_grace_s", ctypes.c_double)]


def _dump_python_stacks_on_request():
    """faulthandler answers SIGURG with every Python thread's stack;
    libdlpar, installed next, writes the block's header and the C stack,
    then hands the signal on to it."""
    if os.environ.get("DLPAR_SIGNALS") == "keep":
        return
    import faulthandler
    import signal
    faulthandler.register(signal.SIGURG, file=sys.stderr, all_threads=True)


def _load():
    try:
        lib, _ = _find.load()
    except OSError as e:
        raise DlparError(str(e)) from None
    lib.dlpar_init_bootstrap.argtypes = [ctypes.POINTER(_Options), ctypes.POINTER(ctypes.c_void_p)]
    lib.dlpar_share_from_root.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.c_size_t]
    lib.dlpar_get_info.argtypes = [ctypes.c_void_p]
    lib.dlpar_get_info.restype = ctypes.POINTER(Info)
    lib.dlpar_last_error.argtypes = [ctypes.c_void_p]
    lib.dlpar_last_error.restype = ctypes.c_char_p
    lib.dlpar_rank_host.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.dlpar_rank_host.restype = ctypes.c_char_p
    lib.dlpar_finalize.argtypes = [ctypes.c_void_p]
    lib.dlpar_route_interface.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    return lib


_open_contexts = weakref.WeakSet()


def _close_at_exit():
    """At the interpreter's exit, after the program's finally blocks: every
    context still open is closed. One whose rendezvous timed out ends the
    step and the process there, so Python's buffered output goes first."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and not stream.closed:
            stream.flush()
    for context in list(_open_contexts):
        context.close()


atexit.register(_close_at_exit)


class Context:
    """A bootstrap-only libdlpar context (dlpar_init_bootstrap): PMIx, no
    collectives. Finalized by close(), at garbage collection, or at exit."""

    def __init__(self, rendezvous_timeout=None):
        self._ctx = None
        self._lib = _load()
        self._ctx = ctypes.c_void_p()
        _open_contexts.add(self)
        options = _Options(rendezvous_timeout_s=float(rendezvous_timeout or 0))
        _dump_python_stacks_on_request()
        if self._lib.dlpar_init_bootstrap(ctypes.byref(options), ctypes.byref(self._ctx)) != 0:
            raise DlparError(self._error())
        self.info = Info.from_buffer_copy(self._lib.dlpar_get_info(self._ctx).contents)

    def _error(self):
        text = self._lib.dlpar_last_error(self._ctx) if self._ctx else None
        return text.decode(errors="replace") if text else "libdlpar failed without a message"

    def share_from_root(self, key, text=None, maxlen=4096):
        """Rank 0's text (rank 0 passes it; the others None) on every rank.
        Every rank makes these calls in the same order (see the module's
        help); DlparError when a rank never arrives (the context is then
        spent: the step ends when it is closed)."""
        out = ctypes.create_string_buffer(maxlen)
        raw = text.encode() if text is not None else None
        if self._lib.dlpar_share_from_root(self._ctx, key.encode(), raw, out, maxlen) != 0:
            raise DlparError(out.value.decode(errors="replace") or self._error())
        return out.value.decode()

    def route_interface(self, addr):
        """This host's interface towards addr (numeric), or None."""
        name = ctypes.create_string_buffer(64)
        return name.value.decode() if self._lib.dlpar_route_interface(addr.encode(), name, 64) == 0 else None

    def rank_host(self, rank):
        host = self._lib.dlpar_rank_host(self._ctx, rank)
        return host.decode(errors="replace") if host else "?"

    def close(self):
        if getattr(self, "_ctx", None):
            self._lib.dlpar_finalize(self._ctx)
            self._ctx = ctypes.c_void_p()

    def __del__(self):
        self.close()


def bootstrap(rendezvous_timeout=None):
    """PMIx alone: this rank's place in the grid (Context.info)."""
    return Context(rendezvous_timeout)
