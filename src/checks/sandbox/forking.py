"""fork(2) without CPython's at-fork hooks, for the grader's own forks of a one-thread process.

os.fork runs every hook registered with os.register_at_fork: in the parent before and after, and
in the child threading's, random's (a reseed from the OS), torch's, and logging's, which visits
every log handler (torch alone makes dozens). Where only one thread runs, no lock can be held by
another and the hooks have nothing to mend; in the child each of them still touches memory, which
a forked process then copies page by page. That was about a tenth of the CPU of a question process
(worker.py forks one for every question), and some of each grading child's. Imports nothing of
the grader: worker.py, on the sandbox side, uses it.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading


@functools.lru_cache(maxsize=1)
def _libc_fork() -> "ctypes._CFuncPtr | None":
    """The C library's fork, looked up once; None where there is none to call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).fork
    except (OSError, AttributeError):
        return None


def _one_thread() -> bool:
    """Whether this process runs one thread of the kernel's, not only of Python's `threading`: a
    thread started by `_thread` (execnet's, in a pytest-xdist worker) or by C code is not in
    threading.active_count(), and a plain fork beside it can leave the child waiting forever for
    a GIL that thread held."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Threads:"):
                    return int(line.split()[1]) == 1
    except (OSError, ValueError):
        pass
    return False  # not known: os.fork, whose hooks are safe beside any thread


def plain_fork(*, reseed_random: bool = True) -> int:
    """os.fork, less the at-fork hooks while this process runs one thread (os.fork itself where it
    runs more, or where there is no C fork to call). In the child torch, if loaded, learns it was
    forked, as from its own hook; `reseed_random`: Python's global generator is reseeded from the
    OS, as os.fork does (False where the caller seeds it itself)."""
    fork = _libc_fork()
    if fork is None or not _one_thread():
        return os.fork()
    pid = fork()  # ctypes lets the GIL go for the call: the child takes it back as it returns
    if pid < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    if pid == 0:
        if reseed_random and "random" in sys.modules:
            sys.modules["random"].seed()
        torch = sys.modules.get("torch")
        if torch is not None and hasattr(torch, "get_num_threads"):
            torch.get_num_threads()  # torch's hook: sets OpenMP up in the child (its issue 28389)
    return pid
