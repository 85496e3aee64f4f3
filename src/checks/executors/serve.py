"""A warm grading pool as a process of its own: `python -m checks.executors.serve COURSE ASSIGNMENT`.

A Dask worker starts one per assignment and keeps it (worker.py), and so does the course server
(server/queue.py); WarmPool is their handle on one. It is the same warm parent as
the local grader's (grading.session.WarmGrader: sandbox zygote first, torch imported, one pytest
session collecting the hidden suite once), but it grades submissions as they arrive on stdin instead of a list known up front:
one JSON line in (name, files as base64, the driver's warnings or why it could not read the
submission), one JSON line out (the result as plain data, or why the grader failed). It runs in a
process of its own because a Dask worker has threads, and forking from a threaded process can
deadlock the child.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import json
import os
import stat
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Callable, Iterator

from checks.config.settings import DEVICES, Settings
from checks.sandbox import jail
from checks.course.assignment import Assignment, load_assignment
from checks.course.submissions import Submission, SubmissionError
from checks.grading.pool import ChildFailed
from checks.grading.session import Source, WarmGrader
from checks.sandbox.zygote import die_with_parent


class PoolFailed(Exception):
    """The warm pool could not start or died; str() says why."""


class WarmPool:
    """A serve.py process for one assignment, and the one request it is grading at a time."""

    def __init__(self, course: Path, assignment: str, device: str, launcher: ThreadPoolExecutor, *,
                 isolation: str | None = None, public: bool = False, cpu: int | None = None) -> None:
        """`isolation`: the level the pool's front end asked for (None: the pool's own environment's,
        as on a Dask worker); `public`: grade with the assignment's public suite (what `checks test`
        runs), which the course server shows students before the due date, instead of the hidden one;
        `cpu`: the CPU to grade on, held by the starter (None: the pool claims one of its own)."""
        self._stderr = tempfile.TemporaryFile()
        command = [sys.executable, "-m", "checks.executors.serve", str(course), assignment, "--device", device]
        command += ["--isolation", isolation] if isolation else []
        command += ["--public"] if public else []
        command += ["--cpu", str(cpu)] if cpu is not None else []
        # started from a thread that lives as long as the worker: the pool dies with that thread
        self.process = launcher.submit(subprocess.Popen, command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=self._stderr).result()
        ready = self._read()
        if not ready.get("ready"):
            raise PoolFailed(ready.get("failed", "the warm grading pool did not start"))

    def grade(self, request: dict) -> dict:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except OSError:
            raise PoolFailed(self._why_gone()) from None
        reply = self._read()
        if "failed" in reply:
            raise PoolFailed(reply["failed"])
        return reply

    def _read(self) -> dict:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise PoolFailed(self._why_gone())
        return json.loads(line)

    def _why_gone(self) -> str:
        code = self.process.wait()
        self._stderr.seek(0)
        tail = self._stderr.read().decode(errors="replace").strip()[-1000:]
        return f"the warm grading pool exited ({code})" + (f": {tail}" if tail else "")

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()  # the pool ends its session and sandbox on end of input
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._stderr.close()


def request_for(name: str, load: Callable[[], Submission]) -> dict:
    """What travels to a worker for one submission: its files as the driver read them (capped by
    read_submission), or why they could not be read, which the worker reports as grading would."""
    try:
        submission = load()
    except SubmissionError as error:
        return {"name": name, "files": {}, "warnings": [], "unreadable": str(error)}
    return {"name": name, "files": {path: base64.b64encode(data).decode() for path, data in submission.files.items()},
            "warnings": list(submission.warnings), "unreadable": None}


def source_of(request: dict) -> Source:
    """The Source a request stands for: the same load (files or SubmissionError) as on the driver."""
    def load() -> Submission:
        if request["unreadable"] is not None:
            raise SubmissionError(request["unreadable"])
        files = {path: base64.b64decode(data) for path, data in request["files"].items()}
        return Submission(request["name"], files, list(request["warnings"]))
    return Source(request["name"], load)


def claim_cpu(pin: bool = True) -> IO[bytes] | None:
    """Pin this pool to a CPU no other pool on this machine holds (a lock file per CPU, released
    when the process dies), so that two Dask workers on one machine do not grade on the same core.
    `pin=False`: only claim it (`held_cpu` names it), for the pools of a server's grading slot,
    which take turns on it (WarmPool's `cpu`)."""
    folder = _lock_folder()
    if folder is None:
        return None  # the name is taken by someone else: share the CPUs rather than trust it
    for cpu in sorted(os.sched_getaffinity(0)):
        try:
            fd = os.open(os.path.join(folder, f"cpu-{cpu}.lock"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
                         | os.O_NONBLOCK, 0o600)
        except OSError:
            continue
        handle = os.fdopen(fd, "ab")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        if pin:
            os.sched_setaffinity(0, {cpu})
        return handle
    return None  # more pools than CPUs: share them


def held_cpu(handle: IO[bytes]) -> int:
    """The CPU a claim_cpu handle holds (the name of its lock file)."""
    name = os.path.basename(os.readlink(f"/proc/self/fd/{handle.fileno()}"))
    return int(name.removeprefix("cpu-").removesuffix(".lock"))


def _lock_folder() -> str | None:
    """The folder of the CPU locks every pool of this user shares: ours (made here, 0700, never a
    link), so that no other user's process (a submission's, at the fork level) can plant a FIFO
    or a link in it; None when something else holds the name."""
    folder = os.path.join(tempfile.gettempdir(), f"checks-cpu-locks-{os.geteuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        return None
    return folder


def serve(assignment: Assignment, requests: int, reply: Callable[[dict], None], settings: Settings, *,
          public: bool = False) -> None:
    """Grade each request read from the file descriptor `requests` until it closes (`public`: with
    the public suite)."""
    isolation = settings.isolation
    with WarmGrader(assignment, isolation, device=settings.device, public=public) as warm:
        reply({"ready": True, "sandbox": isolation.description})
        try:
            for name, value, error in warm.grade(_requests(requests), jobs=1):
                reply({"name": name, "value": value, "error": error, "sandbox": isolation.description})
        except ChildFailed as failure:
            reply({"failed": f"the grading session ended: {failure}"})


def _requests(fd: int) -> Iterator[Source]:
    """The submissions as they arrive on `fd`, one JSON line each, until it closes."""
    with os.fdopen(fd, "rb") as requests:
        for line in requests:
            yield source_of(json.loads(line))


def main(argv: list[str]) -> int:
    """The pool process's front end: its settings are the options its starter gave (the driver's
    --device; `checks serve`'s --isolation), else its own environment (a Dask worker's CHECKS_ISOLATION)."""
    parser = argparse.ArgumentParser(prog="python -m checks.executors.serve")
    parser.add_argument("course", type=Path)
    parser.add_argument("assignment")
    parser.add_argument("--device", choices=DEVICES, default=None)
    parser.add_argument("--isolation", choices=jail.LEVELS, default=None)
    parser.add_argument("--public", action="store_true", help="grade with the public suite, not the hidden one")
    parser.add_argument("--cpu", type=int, default=None, help="grade on this CPU, which the starter holds for its "
                                                              "pools (else one is claimed here)")
    options = parser.parse_args(argv)
    die_with_parent(os.getppid(), status=1)  # a Dask worker killed with SIGKILL takes its pool with it
    requests = os.dup(0)  # the protocol's own descriptors; anything printed goes to stderr
    replies = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    cpu = None
    if options.cpu is None:
        cpu = claim_cpu()
    else:
        with contextlib.suppress(OSError):  # that CPU is gone: run anywhere
            os.sched_setaffinity(0, {options.cpu})

    def reply(message: dict) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    try:
        settings = Settings.from_environment(device=options.device, isolation=options.isolation)
        serve(load_assignment(options.course, options.assignment), requests, reply, settings, public=options.public)
    except BrokenPipeError:  # the worker went away
        return 0
    except Exception as error:  # noqa: BLE001 - said to the worker, which reports it as a grader failure
        with contextlib.suppress(OSError):
            reply({"failed": f"the warm grading pool could not start: {type(error).__name__}: {error}"})
        return 1
    finally:
        if cpu is not None:
            cpu.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
