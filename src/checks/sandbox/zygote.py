"""The zygote: a warm process (torch imported) that forks one sandbox worker per request, and
the supervisor that starts it again whenever it dies or stops.

Both are started as a fresh interpreter, `python -m checks.sandbox.zygote FD [--import MODULE]...
[--without PACKAGE]... [--huge-pages] [--homes DIR --run-dir DIR]`, FD being the listening socket
it inherits, inside the bubblewrap jail where there is one: never forked from the grader, whose
memory, argv and environment would then be every worker's. A request is two fds, the worker's ends
of two socketpairs (its first question's requests, and its keeper's control: see worker.py); the reply is the worker's pid and a pidfd of it (the grader's PID namespace is
not the jail's). The zygote never reads anything else from a client, so a worker that connects
to it learns nothing.

Where a worker shares the zygote's uid (fork isolation, or bwrap, when not root) it can kill or
stop the zygote, its parent. So the zygote is a child of a supervisor, in a process group of its
own: the supervisor holds the listening socket (requests wait in its backlog meanwhile) and forks
a new zygote from its own warm heap in milliseconds. Only the question that did it is affected.
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
import sys
import tempfile
import time
import traceback
import types
from typing import Iterable

from checks.sandbox import hugepages, worker
from checks.sandbox.forking import plain_fork
from checks.sandbox.framing import FrameReader

PID = struct.Struct("!i")
REAP_INTERVAL = 0.2  # seconds between looks for dead workers while no spawn request comes
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
RESTART_PAUSE = 0.1  # before starting again a zygote that died within its first second (doubles, up to 5 s)
CLEANUP_WAIT = 1.0  # at most, for the workers killed when the grader is gone

# What torch imports on first use of a feature, at seconds a time in every process that forks
# from us instead of once: torch.optim's first step pulls in torch._dynamo, and
# torch.broadcast_shapes sympy through symbolic_shapes.
LAZY_TORCH_MODULES = ("torch._dynamo", "torch.fx.experimental.symbolic_shapes")
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")  # the variables NumPy's BLAS libraries read


def supervise(listener: socket.socket, *, homes: str | None = None, run_dir: str | None = None,
              imports: Iterable[str] = (), without: tuple[str, ...] = (), huge_pages: bool = False) -> None:
    """Warm up, then keep one zygote serving `listener` until the process that started us dies.

    A zygote that exits or is stopped (a worker of its uid killed or stopped it) is replaced.
    `homes`, `run_dir`: see serve_spawns. `without`: top-level packages never imported here, so
    that no worker holds any of them (see warm_up). `huge_pages`: worth its second when many
    workers will be forked (see hugepages.py).
    """
    parent = os.getppid()
    die_with_parent(parent)
    _close_inherited_descriptors(keep=listener.fileno())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle
    # not a subreaper: the workers of a zygote that died must not become our children, or a
    # killpg of their new parent's group would reach us
    warm_up(imports, without)
    gc.freeze()  # forked workers then share the warm heap instead of copying it on their first gc
    if huge_pages:
        hugepages.collapse_heap()
    pause = RESTART_PAUSE
    while True:
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)  # a worker's killpg of its parent's group reaches the zygote only
                serve_spawns(listener, homes=homes, run_dir=run_dir)
            finally:
                os._exit(0)
        _wait_until_gone(pid)
        if time.monotonic() - started < 1.0:  # failing at once: do not spin
            time.sleep(pause)
            pause = min(pause * 2, 5.0)
        else:
            pause = RESTART_PAUSE


def _wait_until_gone(zygote: int) -> None:
    """Wait until the zygote has exited; a stopped zygote is killed first."""
    while True:
        try:
            _, status = os.waitpid(zygote, os.WUNTRACED)
        except ChildProcessError:
            return
        if os.WIFSTOPPED(status):
            with contextlib.suppress(ProcessLookupError):
                os.kill(zygote, signal.SIGKILL)
            continue
        return


def serve_spawns(listener: socket.socket, homes: str | None = None, run_dir: str | None = None) -> None:
    """Fork a worker per connection until the process that started us (the supervisor) is gone.

    Each worker gets a home under `homes` (default: the temp dir), removed once it has died.
    Processes a worker leaves behind become ours and are killed (see _kill_orphans). When the
    supervisor is gone (the grader ended or was killed) the workers still alive are killed, their
    homes removed, and `run_dir` (the grader's folder of this run, if given) with them.
    """
    if homes is not None:
        tempfile.tempdir = homes
    parent = os.getppid()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel: no zombie lingers
    _adopt_orphans()
    listener.settimeout(REAP_INTERVAL)
    living: dict[int, tuple[int, str]] = {}  # a pidfd of each worker -> its pid and home
    while os.getppid() == parent:
        _kill_orphans(living)
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            _remove_homes_of_the_dead(living)
            continue
        with conn:
            try:
                _, fds, _, _ = socket.recv_fds(conn, 16, 2)
            except OSError:
                continue
            if len(fds) != 2:  # the worker's socket and its keeper's control socket
                for fd in fds:
                    os.close(fd)
                continue
            # the grader waits for a worker it kills to be gone: its home goes before the next comes
            _remove_homes_of_the_dead(living)
            home = tempfile.mkdtemp(prefix="checks-sandbox-")
            pid = plain_fork(reseed_random=False)  # the worker seeds every generator itself
            if pid == 0:
                listener.close()
                conn.close()
                for pidfd in living:  # other workers' (of other submissions, too)
                    os.close(pidfd)
                _run_worker(*fds, home)
            _watch(pid, home, living)
            for fd in fds:
                os.close(fd)
            _reply(conn, pid)
    _end_run(living, run_dir)


def _reply(conn: socket.socket, pid: int) -> None:
    """The worker's pid, and a pidfd of it: jailed, that pid is the jail's PID namespace's, and the
    grader learns its own from the pidfd (supervisor._spawned_pid)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux, or dead already: the pid alone
        pidfd = None
    try:
        socket.send_fds(conn, [PID.pack(pid)], [] if pidfd is None else [pidfd])
    except OSError:
        pass
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _end_run(living: dict[int, tuple[int, str]], run_dir: str | None) -> None:
    """The grader is gone (kill -9 included): nothing of its run may stay behind."""
    for pidfd, (pid, _) in living.items():
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            os.killpg(pid, signal.SIGKILL)  # its process group too (safe: the pidfd says it was alive)
    deadline = time.monotonic() + CLEANUP_WAIT
    while living and time.monotonic() < deadline:
        select.select(list(living), [], [], max(0.0, deadline - time.monotonic()))
        _remove_homes_of_the_dead(living)
    _kill_orphans(living)
    if run_dir is not None:
        remove_tree(run_dir)


def _kill_orphans(living: dict[int, tuple[int, str]]) -> None:
    """Kill our children that are not workers: what a worker left behind (a daemon that left its
    process group) is reparented to us, the subreaper, and must not outlive its submission.
    Where workers have another uid than ours this may not be allowed: their graders kill by uid."""
    workers = {pid for pid, _ in living.values()}
    try:
        with open(f"/proc/self/task/{os.getpid()}/children", "rb") as children:
            orphans = [int(pid) for pid in children.read().split() if int(pid) not in workers]
    except OSError:  # not Linux
        return
    for pid in orphans:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _watch(pid: int, home: str, living: dict[int, tuple[int, str]]) -> None:
    """Learn of the worker's death through a pidfd (readable once it has exited, reaped or not)."""
    try:
        living[os.pidfd_open(pid)] = (pid, home)
    except ProcessLookupError:  # dead already
        _remove_home(home)
    except (AttributeError, OSError):  # no pidfds (not Linux): its home stays until the end
        pass


def _remove_homes_of_the_dead(living: dict[int, tuple[int, str]]) -> None:
    """A batch's worth of homes would otherwise fill the jail's /tmp."""
    if not living:
        return
    dead, _, _ = select.select(list(living), [], [], 0)
    for pidfd in dead:
        os.close(pidfd)
        _remove_home(living.pop(pidfd)[1])


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
        os.chmod(folder, 0o700)
        worker.remove_entries(folder)  # each entry unlocked all the way down first
    except Exception:  # noqa: BLE001 - RecursionError, ENAMETOOLONG
        pass
    if os.listdir(folder):
        for command in (["chmod", "-R", "u+rwx", folder], ["find", folder, "-mindepth", "1", "-delete"]):
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def remove_tree(folder: str) -> None:
    """Remove `folder` and all in it, however a student locked what is inside. Never raises."""
    with contextlib.suppress(OSError):
        if os.path.isdir(folder) and not os.path.islink(folder):
            _empty(folder)
            os.rmdir(folder)


def die_with_parent(parent: int, status: int = 0) -> None:
    """Be killed with `parent`, kill -9 included (a grading child, a zygote: nothing of a run goes
    on without the process that started it); exit with `status` if it is gone already."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the parent's own cleanup has to do
        return
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(status)


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


def _run_worker(fd: int, control_fd: int, home: str) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        sock, control = socket.socket(fileno=fd), socket.socket(fileno=control_fd)
        reader = FrameReader(sock)
        config = pickle.loads(reader.frame(1 << 30))  # written by the grader: trusted
        worker.serve(sock, reader, control, config, home)
    finally:
        os._exit(0)


def ask_nvml() -> None:
    """Make torch answer "is there a GPU?" from NVML: asking CUDA itself initialises a driver that
    every process forked afterwards (graders, sandboxes) then cannot use."""
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")


def cuda_available() -> bool:
    """Whether torch sees a GPU, asked of NVML (ask_nvml)."""
    ask_nvml()
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def warm_up(imports: Iterable[str] = (), without: tuple[str, ...] = ()) -> None:
    """Import what every worker needs, ready to fork: torch and NumPy's BLAS on one thread
    (forking after a multi-threaded torch op deadlocks the child inside OpenMP), and CUDA
    availability asked of NVML (asking CUDA itself initialises a driver that forked children then
    cannot use).

    `imports`: more modules, each worth importing once when many processes fork from here and
    would each import it (LAZY_TORCH_MODULES, an assignment's `sandbox_imports`). One that does
    not import is left to whoever needs it. `without`: top-level packages not to import at all
    (nor any of `imports` in them).
    """
    ask_nvml()
    worker.refuse_imports(without)  # nor through another package: torch then goes without numpy
    # NumPy's BLAS on one thread too, whatever the grader's environment says: read as it loads, and
    # no pool of threads to start again in every question process (a capped one starts none)
    os.environ.update({name: "1" for name in BLAS_THREADS})
    if "numpy" not in without:
        import numpy.random  # noqa: F401 - with its global generator, which a worker seeds for each question
    if "torch" not in without:
        try:
            import torch
        except ImportError:
            pass
        else:
            torch.set_num_threads(1)
            _exercise(torch)
    for name in imports:
        if name.split(".")[0] in without:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - ImportError, or a module that fails as it loads
            pass


def _exercise(torch: "types.ModuleType") -> None:
    """Run the tensor operations most checks use once, here, on one thread: what they set up on
    first use (dispatch caches, the allocator, NumPy's bridge) is then shared by every process
    forked from this one, not done again in each (about 2 of a small question's 5 ms). No
    backward pass: autograd's engine asks how many GPUs there are, and a CUDA driver started
    here is one no forked process could use."""
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = (x * 2 + 1 - x / 3).exp().log().sum(dim=0) @ torch.ones(3, dtype=torch.float32)
    (x.double().t().contiguous() == x.double().t()).all().item()
    y.item(), torch.zeros(2, dtype=torch.int64).tolist(), torch.tensor([[1.0, 2.0]]).expand(3, 2).clone()
    if "numpy" in sys.modules:
        torch.from_numpy(x.numpy().copy()).numpy()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m checks.sandbox.zygote")
    parser.add_argument("fd", type=int, help="the listening socket, inherited")
    parser.add_argument("--import", dest="imports", action="append", default=[], help="a module to import up front")
    parser.add_argument("--without", action="append", default=[], help="a top-level package never to import")
    parser.add_argument("--huge-pages", action="store_true")
    parser.add_argument("--homes", help="where workers' homes go (default: the temp dir)")
    parser.add_argument("--run-dir", help="the grader's folder of this run, removed when the grader is gone")
    options = parser.parse_args()
    listener = socket.socket(fileno=options.fd)
    zygote = os.getpid()
    try:
        supervise(listener, homes=options.homes, run_dir=options.run_dir, imports=options.imports,
                  without=tuple(options.without), huge_pages=options.huge_pages)
    except BaseException:
        if os.getpid() == zygote:  # the grader reads the end of this, to say why the sandbox is unavailable
            traceback.print_exc()
            os._exit(1)
    finally:  # a process forked inside supervise that gets here ends here too, quietly
        os._exit(0)


if __name__ == "__main__":
    main()
