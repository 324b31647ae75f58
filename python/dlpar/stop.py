# SPDX-License-Identifier: BSD-3-Clause
"""dlpar.stop: the stop signals of a rank and the exit contract, in pure
Python (no torch, no libdlpar), the same as dlpar-train's:

    SIGTERM (Slurm's time limit, scancel), SIGUSR1 (sbatch/srun
    --signal=USR1@SECONDS) and SIGINT become a stop request at the next
    agreed step boundary; a second one ends the process at once (killed
    by it: the launcher sees 128 + the signal). DLPAR_SIGNALS=keep leaves
    them as the program has them.

    EXIT_STOPPED (85): "stopped early at an agreed step, checkpoint
    written, more to do": what a wrapper (dlpar-restart, a batch script)
    tells from a failure (any other non-zero status) and from a finished
    run (0).

install() is what dlpar.torch.init_process_group() calls; a program may
call it earlier, before `import torch`, so that a signal during start-up
is a stop request too. The agreement across ranks is dlpar.torch.Stop;
write_atomic() and the DLPAR_CHECKPOINT / DLPAR_RESTART readers are here.
"""
import os
import signal
import sys
import time

__all__ = ["EXIT_STOPPED", "SIGNALS", "install", "requested", "write_atomic", "checkpoint", "restart"]

EXIT_STOPPED = 85
SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)


class _Requests:
    """What the handlers saw: the first stop signal's number (0: none).
    One instance, because a signal handler can only talk through one."""

    def __init__(self):
        self.signal = 0
        self.rank = None
        self.installed = False

    def on_signal(self, sig, _frame):
        """The first signal asks for a stop; the others go back to their
        default, so that a second one ends the process at once even where
        the main thread is inside a collective (Python runs this handler
        only between bytecodes)."""
        rank = self.rank if self.rank is not None else os.environ.get("DLPAR_RANK", os.environ.get("RANK", "?"))
        for s in SIGNALS:
            signal.signal(s, signal.SIG_DFL)
        if self.signal:  # a second one came before this handler ran for the first
            _say(f"dlpar: rank {rank}: second stop signal ({signal.Signals(sig).name}): exiting now")
            os.kill(os.getpid(), sig)
            return
        self.signal = sig
        _say(f"dlpar: rank {rank}: {signal.Signals(sig).name} received: stopping at the next agreed step "
             f"(a second stop signal ends this process at once)")


_requests = _Requests()


def _say(line):
    """One line in one write, safe from a signal handler that interrupted
    a print (os.write, not sys.stderr)."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError, RuntimeError):
        pass
    os.write(2, (line + "\n").encode())


def install(rank=None):
    """Turns SIGTERM, SIGUSR1 and SIGINT into a stop request (unless
    DLPAR_SIGNALS=keep; another value raises ValueError naming it). From
    the main thread; calling it again only updates the rank its line names."""
    keep = os.environ.get("DLPAR_SIGNALS", "stop")
    if keep not in ("stop", "keep"):
        raise ValueError(f"DLPAR_SIGNALS={keep}: unknown (use stop or keep, or unset it)")
    if rank is not None:
        _requests.rank = rank
    if keep == "keep" or _requests.installed:
        return
    for s in SIGNALS:
        signal.signal(s, _requests.on_signal)
    _requests.installed = True


def requested():
    """This rank's own stop request: the signal's number, 0 when none."""
    return _requests.signal


def checkpoint():
    """DLPAR_CHECKPOINT: the checkpoint dlpar-restart hands a restarted
    step (set only once that file exists), or None."""
    return os.environ.get("DLPAR_CHECKPOINT") or None


def restart():
    """DLPAR_RESTART: which restart this is (0: the first run)."""
    text = os.environ.get("DLPAR_RESTART", "0")
    if not text.isdigit():
        raise ValueError(f"DLPAR_RESTART={text}: expected a restart count (0, 1, ...: dlpar-restart sets it)")
    return int(text)


SLOW_CHECKPOINT_SECONDS = 4  # how long DLPAR_FAULT=checkpoint-slow holds the writer: time for a test to signal


def _fault():
    """Test hooks, in the middle of write_atomic with half of the data
    written. DLPAR_FAULT=checkpoint-write kills this process (SIGKILL), to
    show the previous checkpoint stays; DLPAR_FAULT=checkpoint-slow pauses
    it, so that a test can send stop signals while the temporary file is
    half written (trainer/run/checkpoint.c has the same two)."""
    fault = os.environ.get("DLPAR_FAULT")
    if fault == "checkpoint-write":
        _say(f"dlpar: DLPAR_FAULT={fault}: killing myself in the middle of a checkpoint")
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault == "checkpoint-slow":
        _say(f"dlpar: DLPAR_FAULT={fault}: pausing {SLOW_CHECKPOINT_SECONDS} s in the middle of a checkpoint")
        time.sleep(SLOW_CHECKPOINT_SECONDS)  # a handled signal resumes the sleep; a default one ends it here


def _fsync_directory(directory):
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path, write):
    """Calls write(file) on a temporary file beside path (the same
    directory: one file system), fsyncs it, renames it over path and
    fsyncs the directory: path is the old file or the whole new one,
    never half of it, whatever kills the process (a stale temporary file
    of a killed writer is replaced by the next write)."""
    path = os.path.abspath(path)
    directory, name = os.path.split(path)
    temporary = os.path.join(directory, f".{name}.tmp")
    try:
        with open(temporary, "wb") as f:
            write(_HalfwayFault(f) if os.environ.get("DLPAR_FAULT") else f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
        _fsync_directory(directory)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


class _HalfwayFault:
    """The file, for the DLPAR_FAULT hooks: they run at its second write,
    once the first one reached the disk."""

    def __init__(self, f):
        self._f = f
        self._writes = 0

    def write(self, data):
        self._writes += 1
        if self._writes == 2:
            self._f.flush()
            os.fsync(self._f.fileno())
            _fault()
        return self._f.write(data)

    def __getattr__(self, name):
        return getattr(self._f, name)
