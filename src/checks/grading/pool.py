"""Run jobs in children forked from this (warm) process, a few at a time.

Each job gets a fresh fork, so pytest's module state never leaks from one submission to the
next, and a job that dies costs only itself. Children send their JSON result through a pipe.
The parent stays single-threaded: forking from a process with threads can deadlock the child.
Each child is pinned to a CPU of its own (while there are enough): a grader and the sandbox it
waits on then hand over on one core, several times faster than waking another.
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from checks.sandbox.cores import take_turns_on
from checks.sandbox.forking import plain_fork
from checks.sandbox.zygote import die_with_parent



@dataclass
class JobOutcome:
    key: str
    value: Any = None
    error: str = ""  # why the job produced no value (it raised, or its process died)


def run_forked(jobs: Iterable[tuple[str, Callable[[], Any]]], workers: int) -> Iterator[JobOutcome]:
    """Yield each job's outcome as it finishes; at most `workers` run at once."""
    pending = iter(jobs)  # drawn only when a slot is free: `jobs` may be a stream still arriving
    running: dict[int, tuple[str, int, bytearray, int]] = {}  # fd -> (key, pid, buffer, slot)
    free_slots = list(range(max(1, workers)))
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    selector = selectors.DefaultSelector()
    gc.freeze()  # children then share the warm heap instead of copying it on their first gc
    try:
        while True:
            while free_slots and (following := next(pending, None)) is not None:
                key, job = following
                slot = free_slots.pop(0)
                cpu = cpus[slot % len(cpus)] if cpus else None
                fd, pid = _fork_child(lambda emit: emit(job()), cpu)  # runs job at once, in the child
                running[fd] = (key, pid, bytearray(), slot)
                selector.register(fd, selectors.EVENT_READ)
            if not running:
                break
            for selected, _ in selector.select():
                fd = selected.fd
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    running[fd][2].extend(chunk)
                    continue
                selector.unregister(fd)
                os.close(fd)
                key, pid, buffer, slot = running.pop(fd)
                free_slots.append(slot)
                yield _finish(key, pid, bytes(buffer))
    finally:
        for fd, (_, pid, _, _) in running.items():
            _kill(pid)
            selector.unregister(fd)
            os.close(fd)
        selector.close()


class ChildFailed(Exception):
    """The streaming child raised or died; str() says how."""


def stream_forked(job: Callable[[Callable[[Any], None]], None]) -> Iterator[Any]:
    """Run `job(emit)` in a forked child and yield each value it emits, as it emits it.

    Raises ChildFailed when the child raises or dies; closing the iterator early kills it.
    """
    read_end, pid = _fork_child(job)
    finished = False
    try:
        with os.fdopen(read_end) as pipe:
            for line in pipe:
                try:
                    message = json.loads(line)
                except ValueError:
                    break  # cut short: the child died mid-line
                if "error" in message:
                    raise ChildFailed(message["error"].strip())
                yield message["value"]
        _, status = os.waitpid(pid, 0)
        finished = True
        if status:
            raise ChildFailed(f"the process {_how_it_ended(status)}")
    finally:
        if not finished:
            _kill(pid)


def _fork_child(job: Callable[[Callable[[Any], None]], None], cpu: int | None = None) -> tuple[int, int]:
    """Fork a child that runs `job(emit)`; return the pipe it writes to, and its pid.

    Each emitted value is one JSON line `{"value": ...}`; an exception ends the child with a
    line `{"error": traceback}`. The child dies with this process and runs on `cpu` if given.
    """
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = plain_fork()
    if pid == 0:
        os.close(read_end)
        die_with_parent(parent, status=1)
        if cpu is not None:
            take_turns_on({cpu})  # with its sandbox processes (WorkerConfig.cpus)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _silence_stdio()
        with os.fdopen(write_end, "w") as pipe:
            def emit(value: Any) -> None:
                pipe.write(json.dumps({"value": value}) + "\n")
                pipe.flush()
            try:
                job(emit)
            except BaseException:  # noqa: BLE001 - the parent reports it
                pipe.write(json.dumps({"error": traceback.format_exc(limit=8)}) + "\n")
        os._exit(0)
    os.close(write_end)
    return read_end, pid


def _silence_stdio() -> None:
    """pytest's own report is not wanted: results travel through the pipe."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - lives as long as the child
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115


def _finish(key: str, pid: int, payload: bytes) -> JobOutcome:
    _, status = os.waitpid(pid, 0)
    try:
        message = json.loads(payload)
    except ValueError:
        return JobOutcome(key, error=f"the grading process {_how_it_ended(status)} before reporting")
    return JobOutcome(key, value=message.get("value"), error=message.get("error", ""))


def _how_it_ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by signal {os.WTERMSIG(status)}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
