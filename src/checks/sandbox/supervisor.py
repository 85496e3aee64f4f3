"""The grader's side of the sandbox: starting the zygote, and the handle to one worker.

The zygote (see zygote.py) is a fresh interpreter, inside the bubblewrap jail when there is one
(see jail.py): nothing of the grader's memory, argv or environment is in a worker. It has torch
imported: forking it costs milliseconds, importing torch seconds.
Each worker runs in its own process group (and, as root, its submission's own uid) and is
killed with it; a crash or hang costs the calls of the question it serves and nothing else. A
worker keeps a submission's questions one after another, each in a process of its own forked
from its untouched state (worker.py): handing it on to the next question costs a fork.
A zygote killed or stopped by a worker is started again by its supervisor (see zygote.py).

Each run has a folder /tmp/checks-zygote-* (the spawn socket; with fork isolation the workers'
homes too) that names the process it belongs to; a run that was killed (kill -9) leaves it
behind, and the next run removes it (remove_dead_runs) unless the zygote already did.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import marshal
import os
import pickle
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import dataclass, field
from typing import Callable, Container, NamedTuple

from checks.sandbox import jail, zygote
from checks.sandbox.codec import MAX_PAYLOAD_BYTES
from checks.sandbox.jail import Isolation
from checks.sandbox.stand_ins import StandIns
from checks.sandbox.framing import RETURNED_QUIETLY, RETURNED_QUIETLY_HEADER, FrameReader, recv_exact, send_frame
from checks.sandbox.worker import AFRESH, CHECKED_HASH_PYC

MAX_HEADER_BYTES = 1 << 20
SPAWN_TIMEOUT = 120.0  # the first spawn waits for a jailed zygote to import torch
SPAWN_ATTEMPTS = 3  # a zygote killed while it served a request is replaced: ask the new one
RUN_PREFIX, OWNER_FILE = "checks-zygote-", "owner"

AFRESH_TIMEOUT = 5.0
KILL_WAIT = 1.0  # at most, for a killed worker to be gone (milliseconds, usually)


@dataclass(frozen=True)
class Limits:
    """Resource limits applied inside every worker.

    Memory is capped with RLIMIT_DATA (private writable memory), not RLIMIT_AS: CUDA reserves
    address space by the tens of GiB without using it, which RLIMIT_AS would refuse.
    """

    memory_bytes: int = 4 * 2**30
    cpu_seconds: int = 300
    file_bytes: int = 32 * 2**20
    processes: int = 64  # per submission uid; only enforced where workers get their own uid
    # each worker's own /tmp, /var/tmp and /dev/shm (its home in /tmp): tmpfs of this size, where
    # the worker may mount them (see worker._private_temp); 0: none (files capped one by one)
    temp_bytes: int = 256 * 2**20
    # all the submission's processes together, accounted while they run (see accounting.py)
    submission_memory_bytes: int = 8 * 2**30

    def as_rlimits(self, own_uid: bool) -> dict[str, int]:
        # no POSIX message queues: one would outlive its worker, and nothing lists them to remove
        limits = {"RLIMIT_DATA": self.memory_bytes, "RLIMIT_CPU": self.cpu_seconds,
                  "RLIMIT_FSIZE": self.file_bytes, "RLIMIT_CORE": 0, "RLIMIT_MSGQUEUE": 0}
        return {**limits, "RLIMIT_NPROC": self.processes} if own_uid else limits


@dataclass
class WorkerConfig:
    """What one worker holds: the submission's files (course files already laid over them)."""

    files: dict[str, bytes]
    block_imports: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    uid: int | None = None  # the submission's own unprivileged uid, where the jail allows one
    # the CPUs it may run on: its grader's, so that the two hand over on one core (see grading/pool.py)
    cpus: frozenset[int] = field(default_factory=lambda: frozenset(_own_cpus()))
    # modules its questions call but never hold: the grader answers them (stand_ins.py)
    stand_ins: StandIns | None = None

    @property
    def withheld(self) -> frozenset[str]:
        """The packages its worker must not hold: it comes from a zygote that never imported them."""
        return frozenset(self.block_imports)

    def serves(self, other: "WorkerConfig") -> bool:
        """Whether a worker holding this config may serve a question that needs `other`: the same
        limits and uid, from the same zygote (the same packages withheld). Other files or stand-ins
        its keeper lays out before it forks that question (Worker.start_afresh)."""
        return (self.limits, self.uid, self.cpus, self.withheld) == \
            (other.limits, other.uid, other.cpus, other.withheld)

    def same_layout(self, other: "WorkerConfig") -> bool:
        """Whether `other` gives the same files and stand-ins: nothing to lay out anew."""
        return (self.files, self._stand_in_names) == (other.files, other._stand_in_names)

    def layout_to_wire(self) -> dict:
        """The files and stand-ins, as a keeper lays them out."""
        return {"files": dict(self.files), "stand_ins": self._stand_in_names}

    @property
    def _stand_in_names(self) -> dict[str, list[str]]:
        return self.stand_ins.to_wire() if self.stand_ins is not None else {}

    def to_wire(self) -> dict:
        return {**self.layout_to_wire(),
                "block_imports": list(self.block_imports), "uid": self.uid, "cpus": sorted(self.cpus),
                "limits": self.limits.as_rlimits(self.uid is not None), "temp_bytes": self.limits.temp_bytes}


class NotCompiled(NamedTuple):
    """What the grader keeps of a file that does not compile: why, in one line (its feedback says
    so), and bytecode that raises SyntaxError saying it at the line that fails. A worker imports
    that instead of compiling the file again in every question: seconds each time, for a file
    made to be slow to compile."""

    reason: str
    bytecode: bytes


def with_bytecode(files: dict[str, bytes], cache: dict[tuple[str, bytes], bytes | NotCompiled],
                  modules: Container[str] | None = None) -> dict[str, bytes]:
    """`files` plus the bytecode of each .py file, where import looks for it: the workers of a
    submission then skip compiling (milliseconds a file). `cache` holds what was compiled before:
    its bytecode, or NotCompiled, so that no file is compiled twice.
    `modules`: only the files of these top-level modules (the others, such as a student's copy of
    the public tests, are compiled by a worker that imports them, if one does).

    Compiling runs none of the code. A file that does not compile is given bytecode that fails
    its import the same way, where the student's code imports it. Bytecode in `files` (a
    __pycache__ the student sent) is dropped: a worker trusts what it is given to be the bytecode
    of the source beside it.
    """
    # bytecode is the grader's alone: a worker imports it without reading the source again
    files = {name: data for name, data in files.items() if "__pycache__" not in name.split("/")}
    compiled = {}
    for name, source in files.items():
        if not name.endswith(".py") or (modules is not None and name.split("/")[0].removesuffix(".py") not in modules):
            continue
        if (name, source) not in cache:
            try:
                code = compile(source, name, "exec", dont_inherit=True)
            except Exception as error:  # noqa: BLE001 - SyntaxError, null bytes, RecursionError, MemoryError: the file's
                code, why = _raising(name, error), why_not_compiled(error)
            else:
                why = None
            bytecode = (importlib.util.MAGIC_NUMBER + CHECKED_HASH_PYC + importlib.util.source_hash(source)
                        + marshal.dumps(code))
            cache[name, source] = bytecode if why is None else NotCompiled(why, bytecode)
        found = cache[name, source]
        compiled[importlib.util.cache_from_source(name)] = found if isinstance(found, bytes) else found.bytecode
    return {**files, **compiled}


def why_not_compiled(error: Exception) -> str:
    """Why a file does not compile, in one line (said in its feedback): where, for a syntax error;
    the error (null bytes, absurd nesting) otherwise."""
    if isinstance(error, SyntaxError):
        line = (error.text or "").strip()
        return f"{error.msg} at line {error.lineno}" + (f": `{line[:80]}`" if line else "")
    return f"{type(error).__name__}: {error}"[:200]


def _raising(name: str, error: Exception) -> types.CodeType:
    """A module's code that raises SyntaxError, saying why `name` does not compile, from the line
    where compiling it failed (the first, where no line is known)."""
    line = error.lineno if isinstance(error, SyntaxError) and isinstance(error.lineno, int) else 1
    message = f"{name} does not compile: {why_not_compiled(error)}"
    return compile(f"raise SyntaxError({message!r})\n", name, "exec", dont_inherit=True).replace(
        co_firstlineno=max(1, line))


def _own_cpus() -> set[int]:
    return os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()


class SandboxUnavailable(Exception):
    """No worker could be started at all: the grader's fault, not the student's."""


class WorkerDied(Exception):
    """The worker process ended (crash, os._exit, a signal) before it answered."""


class ReplyRefused(Exception):
    """The worker's reply broke the protocol's limits (too large, malformed); it was killed."""


class WorkerTimedOut(Exception):
    """The worker did not answer within the time limit and was killed."""


class Worker:
    """The grader's handle to one sandbox worker: the socket of the question it serves now, and
    the control socket of its keeper (see worker.py), which no student code holds."""

    def __init__(self, pid: int, sock: socket.socket, control: socket.socket,
                 stand_ins: StandIns | None = None) -> None:
        self.pid = pid
        self.stand_ins = stand_ins
        self.sock = sock
        self.control = control
        self.reader = FrameReader(sock)
        self.alive = True
        self.given: set[str] = set()  # suite driver modules its question holds: sent once
        self.held: set[str] = set()  # those its keeper holds, which every question after starts with

    @property
    def send_capacity(self) -> int:
        """Bytes a send may queue without waiting for the worker to read: half the socket's buffer."""
        return self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) // 2

    def request(self, message: dict, timeout: float) -> tuple[dict, bytes | None]:
        """Send one request; return the reply's JSON header and the codec payload, if any."""
        self.send([pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)], timeout)
        return self.reply(timeout)

    def send(self, requests: list[bytes], timeout: float) -> None:
        """Send pickled requests in one write; the worker answers each in turn (see reply)."""
        try:
            self.sock.settimeout(timeout)
            send_frame(self.sock, *requests)
        except socket.timeout:  # the worker stopped reading: it hangs on an earlier request
            self.kill()
            raise WorkerTimedOut() from None
        except (ConnectionError, BrokenPipeError):
            self.kill()
            raise WorkerDied() from None

    def reply(self, timeout: float) -> tuple[dict, bytes | None]:
        """The next reply, due within `timeout` seconds: its JSON header and codec payload, if any."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                encoded = self.reader.frame(MAX_HEADER_BYTES, deadline)
                header = dict(RETURNED_QUIETLY_HEADER) if encoded == RETURNED_QUIETLY else json.loads(encoded.decode())
                if type(header) is not dict:
                    raise ValueError("malformed reply")
                if header.get("status") != "asks":
                    break
                self._answer(header, self.reader.frame(MAX_PAYLOAD_BYTES, deadline), deadline)
                if time.monotonic() > deadline:  # the answers are the call's time too: never past its limit
                    raise socket.timeout()
            payload = None
            if header.get("status") == "returned":
                payload = self.reader.frame(MAX_PAYLOAD_BYTES, deadline)
            return header, payload
        except socket.timeout:
            self.kill()
            raise WorkerTimedOut() from None
        except (EOFError, ConnectionError, BrokenPipeError):
            self.kill()
            raise WorkerDied() from None
        except (ValueError, RecursionError) as error:  # oversized or malformed: never trust the rest
            self.kill()
            raise ReplyRefused(str(error) if isinstance(error, ValueError) else "a malformed reply") from None

    def _answer(self, header: dict, payload: bytes, deadline: float) -> None:
        """Answer a stand-in's call made while the request runs (stand_ins.py), within the reply's time."""
        if self.stand_ins is None:
            answer = {"raised": ("RuntimeError", "nothing here answers stand-ins")}
        else:
            answer = self.stand_ins.answer(header.get("module"), header.get("name"), payload)
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        send_frame(self.sock, pickle.dumps({"op": "answer", **answer}, protocol=pickle.HIGHEST_PROTOCOL))

    def start_afresh(self, drivers: dict[str, bytes] | None = None, layout: WorkerConfig | None = None) -> bool:
        """Ready the worker for another question of the same submission: its keeper kills the
        last question's processes and forks the next from its own untouched state, whose socket
        it sends back. `drivers` (name: bytecode): suite driver modules for the keeper to load
        first, so that the next question and those after it start with them. `layout`: the files
        and stand-ins to hold from now on, where they change (WorkerConfig.same_layout). True once
        that is done; else the worker is killed."""
        if not self.alive:
            return False
        drivers = drivers or {}
        message = {"drivers": drivers, "layout": None if layout is None else layout.layout_to_wire()}
        try:
            self.control.settimeout(AFRESH_TIMEOUT)
            self.control.sendall(AFRESH)
            send_frame(self.control, pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            self.kill()
            return False
        try:
            word, fds, _, _ = socket.recv_fds(self.control, len(AFRESH), 1)
            held = json.loads(FrameReader(self.control).frame(1 << 16, time.monotonic() + AFRESH_TIMEOUT))
        except (OSError, EOFError, ValueError):  # socket.timeout included
            word, fds, held = b"", [], None
        if word != AFRESH or len(fds) != 1 or type(held) is not list:
            for fd in fds:
                os.close(fd)
            self.kill()
            return False
        self.sock.close()
        self.sock = socket.socket(fileno=fds[0])
        self.reader = FrameReader(self.sock)
        # never more than was sent: a name it did not get would leave a question without its driver
        self.held = {name for name in held if type(name) is str and (name in self.held or name in drivers)}
        self.given = set(self.held)
        if layout is not None:
            self.stand_ins = layout.stand_ins
        return True

    def kill(self) -> None:
        """Kill the worker and its process group (detached daemons: see kill_uid), and wait a
        moment until it is gone: the zygote then removes its home before forking the next."""
        if not self.alive:
            return
        self.alive = False
        try:
            exited = os.pidfd_open(self.pid)  # readable once it has exited
        except (AttributeError, OSError):  # not Linux, or gone already
            exited = None
        for target in (lambda: os.killpg(self.pid, signal.SIGKILL), lambda: os.kill(self.pid, signal.SIGKILL)):
            try:
                target()
            except (ProcessLookupError, PermissionError):
                pass
        self.sock.close()
        self.control.close()
        if exited is not None:
            select.select([exited], [], [], KILL_WAIT)
            os.close(exited)


class Zygote:
    """Forks workers on request, over private unix sockets; started in the jail when there is one.

    A warm zygote serves each set of packages the questions withhold (WorkerConfig.block_imports):
    one with torch imported for the questions that withhold nothing, one that never imported torch
    for those that withhold it, and so on. A module once loaded in a process stays reachable there
    (gc, ctypes, its libraries in memory), so a worker that must not use it comes from a process
    that never had it. Each is a fresh interpreter with a clean environment and argv
    (jail.sandbox_environment), never a fork of this process. Use it as a context manager so that
    they and their workers are gone when grading ends.
    """

    def __init__(self, isolation: Isolation | None = None, *, imports: tuple[str, ...] = (),
                 huge_pages: bool = False, withhold: tuple[tuple[str, ...], ...] = jail.WARM_WITHHELD) -> None:
        """`imports`: modules every worker would otherwise import for itself (an assignment's
        `sandbox_imports`); `huge_pages`: make forking cheaper at a second's cost up front (see
        hugepages.py), which pays off over a batch; `withhold`: the sets of packages to start a
        zygote without now, () for the one that withholds nothing (others start when first asked
        for: see withhold; an assignment's, Assignment.zygote_sets)."""
        self.isolation = isolation or jail.choose(jail.FORK)
        self.imports, self.huge_pages = imports, huge_pages
        remove_dead_runs()
        self._dir = tempfile.mkdtemp(prefix=RUN_PREFIX)
        _claim(self._dir)
        if self.isolation.kind == jail.FORK and self.isolation.per_submission_uid:
            os.chmod(self._dir, 0o711)  # workers' homes are in here: their uids must reach them, not list them
        self._servers: dict[frozenset[str], _Server] = {}
        self.withhold(*withhold, owns_run=True)

    @property
    def run_dir(self) -> str:
        """This run's folder: the zygotes' sockets, and at the fork level the workers' homes."""
        return self._dir

    @property
    def started(self) -> frozenset[frozenset[str]]:
        """The packages each zygote started so far withholds (frozenset(): the one that withholds nothing)."""
        return frozenset(self._servers)

    def withhold(self, *package_sets: tuple[str, ...] | frozenset[str], owns_run: bool = False) -> None:
        """Start a zygote for each set of packages not started yet (a suite's, once collected,
        before the processes that spawn workers are forked: they then share it)."""
        for packages in package_sets:
            self._server(frozenset(packages), owns_run=owns_run)

    def _server(self, withheld: frozenset[str], *, owns_run: bool = False) -> "_Server":
        if withheld not in self._servers:
            name = "spawn.sock" if not withheld else f"spawn-{len(self._servers)}.sock"
            self._servers[withheld] = _Server(self.isolation, self._dir, name, self.imports, tuple(sorted(withheld)),
                                              self.huge_pages, owns_run)
        return self._servers[withheld]

    def spawn(self, config: WorkerConfig) -> Worker:
        """Fork a fresh worker holding `config`'s files and limits, from the zygote that never
        imported what the question withholds."""
        server = self._server(config.withheld)
        for attempt in range(SPAWN_ATTEMPTS):
            ours, theirs = socket.socketpair()
            control, keeper = socket.socketpair()
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                    conn.settimeout(SPAWN_TIMEOUT)
                    conn.connect(server.address)
                    socket.send_fds(conn, [b"spawn"], [theirs.fileno(), keeper.fileno()])
                    pid = _spawned_pid(conn, jailed=self.isolation.kind == jail.BWRAP)
                break
            except (EOFError, ConnectionResetError) as error:  # the zygote died serving us: another is starting
                ours.close()
                control.close()
                if attempt + 1 == SPAWN_ATTEMPTS:
                    raise SandboxUnavailable(server.why_unavailable(error)) from None
            except OSError as error:  # no supervisor listens: the sandbox itself is gone
                ours.close()
                control.close()
                raise SandboxUnavailable(server.why_unavailable(error)) from None
            finally:
                theirs.close()
                keeper.close()
        wire = {**config.to_wire(), "read_everything": self.isolation.reads_everything}
        send_frame(ours, pickle.dumps(wire, protocol=pickle.HIGHEST_PROTOCOL))
        return Worker(pid, ours, control, config.stand_ins)

    def close(self) -> None:
        """Stop the zygotes this process started (one forked from it leaves them to it) and remove
        the run's folder."""
        for server in self._servers.values():
            server.close()
        zygote.remove_tree(self._dir)  # with fork isolation, every worker's home too

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Server:
    """One zygote's supervisor process and the socket it serves (see zygote.py)."""

    def __init__(self, isolation: Isolation, run_dir: str, name: str, imports: tuple[str, ...],
                 without: tuple[str, ...], huge_pages: bool, owns_run: bool) -> None:
        """`owns_run`: the zygote removes the run's folder when the grader is gone (one started
        by a process forked from the grader leaves it to the grader's). The cluster's packages are
        withheld from every zygote (jail.CLUSTER_PACKAGES), whatever the questions withhold."""
        without = tuple(sorted({*without, *jail.CLUSTER_PACKAGES}))
        self.address = os.path.join(run_dir, name)
        self.starter = os.getpid()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.address)
        listener.listen(64)
        options = [flag for module in imports for flag in ("--import", module)] + ["--huge-pages"] * huge_pages
        options += [flag for package in without for flag in ("--without", package)]
        command = [sys.executable, "-m", "checks.sandbox.zygote", str(listener.fileno()), *options]
        if isolation.kind == jail.BWRAP:
            # workers' homes go to the jail's own /tmp, a tmpfs that vanishes with it
            command, env, session = jail.bwrap_command(command, hide=without), None, False
        else:
            command += ["--homes", run_dir] + ["--run-dir", run_dir] * owns_run
            # a session of its own: a worker's killpg of its group cannot reach the grader
            env, session = jail.sandbox_environment(run_dir), True
        self.process = subprocess.Popen(command, pass_fds=[listener.fileno()], env=env, start_new_session=session,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        listener.close()

    def why_unavailable(self, error: BaseException) -> str:
        if self.process.poll() is not None:
            message = self.process.stderr.read().decode(errors="replace").strip()[-500:] if self.process.stderr else ""
            return f"the sandbox's zygote exited ({self.process.returncode}): {message}"
        return f"the sandbox could not start a worker ({error})"

    def close(self) -> None:
        if os.getpid() != self.starter:
            return  # a forked copy: the process that started it stops it (or it dies with that one)
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()


def _spawned_pid(conn: socket.socket, *, jailed: bool) -> int:
    """The pid of the worker the zygote forked, as this process sees it: jailed, the zygote's own
    is its PID namespace's, so the pidfd sent with it says which ours is. Jailed, a reply without
    a pidfd we can read is refused: the namespace's pid would name another process here, and the
    grader kills by pid."""
    data, fds, _, _ = socket.recv_fds(conn, zygote.PID.size, 1)
    if len(data) < zygote.PID.size:
        data += recv_exact(conn, zygote.PID.size - len(data))
    (pid,) = zygote.PID.unpack(data)
    ours = None
    for pidfd in fds:
        try:
            with open(f"/proc/self/fdinfo/{pidfd}") as info:
                ours = next(int(line.split()[1]) for line in info if line.startswith("Pid:"))
        except (OSError, StopIteration, ValueError, IndexError):
            pass
        finally:
            os.close(pidfd)
    if ours is not None and ours > 0:
        return ours
    if jailed:
        raise OSError("the jailed zygote's reply held no pidfd to tell which process is the worker")
    return pid


def remove_dead_runs(temp_dir: str | None = None) -> list[str]:
    """Remove the run folders (/tmp/checks-zygote-*) whose process is gone, and say which: what
    a grader killed with kill -9 left behind. A live run's folder, or one we cannot tell, stays."""
    removed: list[str] = []
    if not os.path.isdir("/proc/self"):  # not Linux: no way to tell a dead run from a live one
        return removed
    temp_dir = temp_dir or tempfile.gettempdir()
    try:
        names = [name for name in os.listdir(temp_dir) if name.startswith(RUN_PREFIX)]
    except OSError:
        return removed
    for name in names:
        folder = os.path.join(temp_dir, name)
        try:
            pid_text, started = _read_owner(folder).split()
        except (OSError, ValueError):
            continue  # not a run folder of ours, or being made right now
        if _process_start(int(pid_text)) != started:
            zygote.remove_tree(folder)
            removed.append(folder)
    return removed


def _read_owner(folder: str) -> str:
    """The owner file of a run folder that we made (mkdtemp: a folder of our uid, never a link):
    anything else in the temp dir by that name (a student's, at the fork level, which shares it)
    raises OSError. Opened without following a link or waiting on a FIFO, and read only so far."""
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise OSError(f"{folder} is not a run folder of ours")
    fd = os.open(os.path.join(folder, OWNER_FILE), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        owner = os.fstat(fd)
        if not stat.S_ISREG(owner.st_mode) or owner.st_uid != os.geteuid():
            raise OSError(f"{folder}'s owner file is not ours")
        return os.read(fd, 64).decode()
    finally:
        os.close(fd)


def _claim(folder: str) -> None:
    """Write who the run folder belongs to: a pid, and its start time (pids are reused)."""
    with open(os.path.join(folder, OWNER_FILE), "w") as owner:
        owner.write(f"{os.getpid()} {_process_start(os.getpid())}\n")


def _process_start(pid: int) -> str | None:
    """When the process started (clock ticks since boot), or None when there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def kill_uid(uid: int) -> None:
    """Kill every process running as `uid`: whatever a submission started, daemons included.

    kill(-1) as that uid reaches all its processes in one pass (the kernel holds off forks while
    it walks the task list). setpriv spawns cheaply; forking this torch-sized process does not.
    """
    if not runs_as(uid):
        return  # nothing to kill, and nothing can start as it: only root makes a process of a uid
    setpriv = _setpriv()
    if setpriv:
        subprocess.run([setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "kill", "-KILL", "-1"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        return
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def runs_as(uid: int) -> bool:
    """Whether a process runs as `uid` (its real, effective or saved uid) that is not dying
    already (a zombie, or SIGKILL pending: the workers just killed): a scan of /proc costs a
    millisecond where spawning setpriv to kill nothing cost several, twice a submission. True
    where /proc cannot tell."""
    wanted = str(uid).encode()
    found = processes_where(lambda status: wanted in (status_field(status, b"Uid") or b"").split()[:3]
                            and not _dying(status))
    return found is None or bool(found)


def processes_where(matches: Callable[[bytes], bool]) -> dict[int, bytes] | None:
    """Every process whose /proc/PID/status `matches`, with that status (None where /proc cannot
    be listed): the memory watch's scan, ten times a second, and the uid sweep's."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    return {int(name): status for name in names if name.isdigit() and matches(status := read_status(name))}


def status_field(status: bytes, key: bytes) -> bytes | None:
    """The text of a /proc/PID/status field (`key`, without its colon), or None. A process's name
    cannot forge a line: the kernel escapes a newline in it."""
    start = status.find(b"\n" + key + b":")
    if start < 0:
        return None
    end = status.find(b"\n", start + 1)
    return status[start + len(key) + 2:end if end >= 0 else len(status)]


def _dying(status: bytes) -> bool:
    """A zombie, or a process with SIGKILL pending (it can run no more of its own code)."""
    if (status_field(status, b"State") or b"").strip()[:1] in (b"Z", b"X"):
        return True
    for key in (b"ShdPnd", b"SigPnd"):
        try:
            if int((status_field(status, key) or b"0").strip(), 16) & SIGKILL_BIT:
                return True
        except ValueError:
            pass
    return False


SIGKILL_BIT = 1 << (signal.SIGKILL - 1)
STATUS_READ = 16384  # a status is some 1.5 KB: one read


def read_status(pid: int | str) -> bytes:
    """/proc/PID/status (b"" once the process is gone), read without a file object: the memory
    watch reads every process's ten times a second, and open()'s buffered reader was 40% of it."""
    try:
        fd = os.open(f"/proc/{pid}/status", os.O_RDONLY)
    except OSError:
        return b""
    try:
        chunks = [os.read(fd, STATUS_READ)]
        while len(chunks[-1]) == STATUS_READ:  # never seen, but never cut
            chunks.append(os.read(fd, STATUS_READ))
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=None)
def _setpriv() -> str | None:
    """Looked up once: kill_uid runs at least once per submission."""
    return shutil.which("setpriv")


def prepare_parent(preload: bool = False, modules: tuple[str, ...] | None = None) -> None:
    """Call before the first torch op in any process that will fork sandboxes or graders;
    `preload` when it will fork many graders, which would each import `modules` (default: the
    lazy torch modules a suite's checks may reach; see zygote.warm_up)."""
    zygote.warm_up((zygote.LAZY_TORCH_MODULES if modules is None else modules) if preload else ())
