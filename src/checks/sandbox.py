"""Sandbox processes: a warm zygote that forks one worker per question, and the handle to one.

The zygote is forked from the grader before any hidden test or reference code is imported, so
nothing secret is in the memory a worker inherits. It has torch imported (forking it costs
milliseconds, importing torch costs seconds). Each worker runs in its own process group and is
killed with it; a crash or hang costs the calls of the question it serves and nothing else.
"""

from __future__ import annotations

import base64
import gc
import json
import os
import pickle
import shutil
import signal
import socket
import struct
import tempfile
import time
from dataclasses import dataclass, field

from checks import worker as worker_side
from checks.codec import MAX_PAYLOAD_BYTES
from checks.worker import recv_frame, send_frame

MAX_HEADER_BYTES = 1 << 20
_PID = struct.Struct("!i")


@dataclass(frozen=True)
class Limits:
    """Resource limits applied inside every worker (RLIMIT_AS below ~650 MiB breaks torch)."""

    memory_bytes: int = 4 * 2**30
    cpu_seconds: int = 300
    file_bytes: int = 64 * 2**20

    def as_rlimits(self) -> dict[str, int]:
        return {"RLIMIT_AS": self.memory_bytes, "RLIMIT_CPU": self.cpu_seconds,
                "RLIMIT_FSIZE": self.file_bytes, "RLIMIT_CORE": 0}


@dataclass
class WorkerConfig:
    """What one worker holds: the submission's files (course files already laid over them)."""

    files: dict[str, bytes]
    block_imports: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)

    def to_wire(self) -> dict:
        return {"files": {name: base64.b64encode(data).decode() for name, data in self.files.items()},
                "block_imports": list(self.block_imports), "limits": self.limits.as_rlimits()}


class WorkerDied(Exception):
    """The worker process ended (crash, os._exit, a signal) before it answered."""


class WorkerTimedOut(Exception):
    """The worker did not answer within the time limit and was killed."""


class Worker:
    """The grader's handle to one sandbox process."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock
        self.alive = True

    def request(self, message: dict, timeout: float) -> tuple[dict, bytes | None]:
        """Send one request; return the reply's JSON header and the codec payload, if any."""
        deadline = time.monotonic() + timeout
        try:
            self.sock.settimeout(timeout)
            send_frame(self.sock, pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            header = json.loads(recv_frame(self.sock, MAX_HEADER_BYTES))
            if type(header) is not dict:
                raise ValueError("malformed reply")
            payload = None
            if header.get("status") == "returned":
                self.sock.settimeout(max(0.01, deadline - time.monotonic()))
                payload = recv_frame(self.sock, MAX_PAYLOAD_BYTES)
            return header, payload
        except socket.timeout:
            self.kill()
            raise WorkerTimedOut() from None
        except (EOFError, ConnectionError, BrokenPipeError):
            self.kill()
            raise WorkerDied() from None
        except ValueError as error:  # an oversized or malformed reply: never trust the rest
            self.kill()
            raise WorkerDied(str(error)) from None

    def kill(self) -> None:
        """Kill the worker and everything in its process group."""
        if not self.alive:
            return
        self.alive = False
        for target in (lambda: os.killpg(self.pid, signal.SIGKILL), lambda: os.kill(self.pid, signal.SIGKILL)):
            try:
                target()
            except (ProcessLookupError, PermissionError):
                pass
        self.sock.close()


class Zygote:
    """A warm process that forks workers on request, over a private unix socket.

    Create it early, before importing anything the sandbox must not see; use it as a context
    manager so that it and its workers are gone when grading ends.
    """

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="checks-zygote-")
        self.address = os.path.join(self._dir, "spawn.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.address)
        listener.listen(64)
        parent = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:  # the zygote itself
            try:
                _zygote_loop(listener, parent)
            finally:
                os._exit(0)
        listener.close()

    def spawn(self, config: WorkerConfig) -> Worker:
        """Fork a fresh worker holding `config`'s files and limits."""
        ours, theirs = socket.socketpair()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(self.address)
            socket.send_fds(conn, [b"spawn"], [theirs.fileno()])
            (pid,) = _PID.unpack(worker_side._recv_exact(conn, _PID.size))
        theirs.close()
        send_frame(ours, pickle.dumps(config.to_wire(), protocol=pickle.HIGHEST_PROTOCOL))
        return Worker(pid, ours)

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _zygote_loop(listener: socket.socket, parent: int) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle
    gc.freeze()  # keeps forked children from touching (and copying) the warm heap
    listener.settimeout(1.0)
    while os.getppid() == parent:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        with conn:
            _, fds, _, _ = socket.recv_fds(conn, 16, 1)
            if not fds:
                continue
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                _run_worker(fds[0])
            conn.sendall(_PID.pack(pid))
            os.close(fds[0])


def _run_worker(fd: int) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        sock = socket.socket(fileno=fd)
        config = pickle.loads(recv_frame(sock, 1 << 30))  # from the grader: trusted
        worker_side.serve(sock, config)
    finally:
        os._exit(0)


def prepare_parent() -> None:
    """Call before the first torch op in any process that will fork sandboxes or graders.

    A child forked after a multi-threaded torch op deadlocks inside OpenMP.
    """
    try:
        import torch
    except ImportError:  # a course without torch still grades
        return
    torch.set_num_threads(1)
