"""The zygote: a warm process (torch imported) that forks one sandbox worker per request.

It is either forked from the grader (`fork` isolation) or started inside the bubblewrap jail as
`python -m checks.sandbox.zygote FD [--import MODULE]... [--huge-pages]`, FD being the listening socket
it inherits. A request is one fd, the worker's end of a socketpair; the reply is the worker's
pid. The zygote never reads anything else from a client, so a worker that connects to it learns
nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import importlib
import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import tempfile
from typing import Iterable

from checks.sandbox import hugepages, worker

PID = struct.Struct("!i")
REAP_INTERVAL = 0.2  # seconds between looks for dead workers while no spawn request comes
PR_SET_CHILD_SUBREAPER = 36

# What torch imports on first use of a feature, at seconds a time in every process that forks
# from us instead of once: torch.optim's first step pulls in torch._dynamo, and
# torch.broadcast_shapes sympy through symbolic_shapes.
LAZY_TORCH_MODULES = ("torch._dynamo", "torch.fx.experimental.symbolic_shapes")


def serve_spawns(listener: socket.socket, homes: str | None = None, huge_pages: bool = False) -> None:
    """Fork a worker per connection until the process that started us is gone.

    Each worker gets a home under `homes` (default: the temp dir), removed once it has died.
    `huge_pages`: worth its second when many workers will be forked (see hugepages.py).
    """
    if homes is not None:
        tempfile.tempdir = homes
    _close_inherited_descriptors(keep=listener.fileno())
    parent = os.getppid()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel: no zombie lingers
    _adopt_orphans()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle
    gc.freeze()  # forked workers then share the warm heap instead of copying it on their first gc
    if huge_pages:
        hugepages.collapse_heap()
    listener.settimeout(REAP_INTERVAL)
    living: dict[int, str] = {}  # a pidfd of each worker -> its home
    while os.getppid() == parent:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            _remove_homes_of_the_dead(living)
            continue
        with conn:
            try:
                _, fds, _, _ = socket.recv_fds(conn, 16, 1)
            except OSError:
                continue
            if not fds:
                continue
            # the grader waits for a worker it kills to be gone: its home goes before the next comes
            _remove_homes_of_the_dead(living)
            home = tempfile.mkdtemp(prefix="checks-sandbox-")
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                for pidfd in living:  # other workers' (of other submissions, too)
                    os.close(pidfd)
                _run_worker(fds[0], home)
            _watch(pid, home, living)
            os.close(fds[0])
            try:
                conn.sendall(PID.pack(pid))
            except OSError:
                pass


def _watch(pid: int, home: str, living: dict[int, str]) -> None:
    """Learn of the worker's death through a pidfd (readable once it has exited, reaped or not)."""
    try:
        living[os.pidfd_open(pid)] = home
    except ProcessLookupError:  # dead already
        _remove_home(home)
    except (AttributeError, OSError):  # no pidfds (not Linux): its home stays until the end
        pass


def _remove_homes_of_the_dead(living: dict[int, str]) -> None:
    """A batch's worth of homes would otherwise fill the jail's /tmp."""
    if not living:
        return
    dead, _, _ = select.select(list(living), [], [], 0)
    for pidfd in dead:
        os.close(pidfd)
        _remove_home(living.pop(pidfd))


def _remove_home(home: str) -> None:
    """Remove a dead worker's home. Its files belong to the worker's uid, and root in the jail
    has no right to other users' files (no capabilities but the setuid ones), so the contents
    go as that uid, which can reach nothing but its own; the emptied folder then goes as us.
    Never raises: whatever a student left there must not end the zygote."""
    try:
        owner = os.lstat(home).st_uid
    except OSError:
        return
    switch = owner != os.geteuid()
    try:
        if switch:
            os.seteuid(owner)
        _empty(home)
    except Exception:  # noqa: BLE001
        pass
    finally:
        if switch:
            os.seteuid(0)
    with contextlib.suppress(OSError):
        os.rmdir(home)


def _empty(folder: str) -> None:
    """Unlock every folder under `folder` (a student may have made one unreadable), then remove
    all; `find` takes over from folders nested too deep for Python's recursion or paths."""
    try:
        pending = [folder]
        while pending:
            current = pending.pop()
            os.chmod(current, 0o700)
            with os.scandir(current) as entries:
                pending += [entry.path for entry in entries if entry.is_dir(follow_symlinks=False)]
        worker.remove_entries(folder)
    except Exception:  # noqa: BLE001 - RecursionError, ENAMETOOLONG
        pass
    if os.listdir(folder):
        for command in (["chmod", "-R", "u+rwx", folder], ["find", folder, "-mindepth", "1", "-delete"]):
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def _adopt_orphans() -> None:
    """Processes a worker leaves behind (a daemon's children) become ours when their parent dies,
    not init's, and so are reaped the moment they die: no zombie of a submission lingers."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)
    except (OSError, AttributeError):  # not Linux
        pass


def _close_inherited_descriptors(keep: int) -> None:
    """Forked from the grader, we hold whatever it had open: workers must inherit none of it."""
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))


def _run_worker(fd: int, home: str) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        sock = socket.socket(fileno=fd)
        reader = worker.FrameReader(sock)
        config = pickle.loads(reader.frame(1 << 30))  # written by the grader: trusted
        worker.serve(sock, reader, config, home)
    finally:
        os._exit(0)


def warm_up(imports: Iterable[str] = ()) -> None:
    """Import what every worker needs, ready to fork: torch on one thread (forking after a
    multi-threaded torch op deadlocks the child inside OpenMP), and CUDA availability asked of
    NVML (asking CUDA itself initialises a driver that forked children then cannot use).

    `imports`: more modules, each worth importing once when many processes fork from here and
    would each import it (LAZY_TORCH_MODULES, an assignment's `sandbox_imports`). One that does
    not import is left to whoever needs it.
    """
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    import numpy  # noqa: F401

    try:
        import torch
    except ImportError:
        pass
    else:
        torch.set_num_threads(1)
    for name in imports:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - ImportError, or a module that fails as it loads
            pass


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m checks.sandbox.zygote")
    parser.add_argument("fd", type=int, help="the listening socket, inherited")
    parser.add_argument("--import", dest="imports", action="append", default=[], help="a module to import up front")
    parser.add_argument("--huge-pages", action="store_true")
    options = parser.parse_args()
    warm_up(options.imports)
    listener = socket.socket(fileno=options.fd)
    try:
        serve_spawns(listener, huge_pages=options.huge_pages)
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
