"""A real Dask cluster for the server's tests: `dask scheduler` and `dask worker` processes on
127.0.0.1 (no nanny unless asked, one thread each, no dashboard), each worker on a known port so
that a test can kill the one that is grading, or every worker and nanny at once. Everything it
started is stopped at the end, warm pools included (they die with their worker: executors/serve.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from serving import SRC, alive, descendants, free_port


@dataclass
class LocalDask:
    scheduler: str  # tcp://127.0.0.1:PORT
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)  # "scheduler" or a worker's address

    @property
    def workers(self) -> list[str]:
        return [name for name in self.processes if name != "scheduler"]

    def kill_worker(self, address: str) -> None:
        """SIGKILL, as an out-of-memory kill or a lost machine would end it."""
        process = self.processes[address]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def kill_every_worker(self) -> None:
        """SIGKILL every worker process, its nanny and what they started, at once: the cluster's
        machines lost (a nanny left alive would start its worker again)."""
        doomed = set()
        for address in self.workers:
            doomed |= {self.processes[address].pid} | descendants(self.processes[address].pid)
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for address in self.workers:
            self.processes[address].wait(timeout=30)


def _start(args: list[str], log: Path, environment: dict[str, str] | None = None) -> subprocess.Popen:
    environment = {**os.environ, **(environment or {}), "PYTHONPATH": str(SRC)}
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=out, stderr=subprocess.STDOUT,
                                env=environment, start_new_session=True)


@contextlib.contextmanager
def local_dask(folder: Path, workers: int = 2, timeout: float = 120,
               worker_environment: dict[str, str] | None = None,
               environment: dict[str, str] | None = None, nanny: bool = False) -> Iterator[LocalDask]:
    """A scheduler and `workers` single-threaded workers (0: the scheduler alone), ready (every
    worker joined) when yielded; `worker_environment`: variables the workers get on top of this
    process's (a PATH without bwrap); `environment`: variables every process gets (the cluster's
    Dask config); `nanny`: each worker under a nanny, as `dask worker` starts them by default."""
    from distributed import Client

    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    cluster = LocalDask(f"tcp://127.0.0.1:{port}")
    seen: set[int] = set()
    try:
        cluster.processes["scheduler"] = _start(["scheduler", "--host", "127.0.0.1", "--port", str(port),
                                                 "--no-dashboard"], folder / "scheduler.log", environment)
        for n in range(workers):
            worker_port = free_port()
            address = f"tcp://127.0.0.1:{worker_port}"
            cluster.processes[address] = _start(
                ["worker", cluster.scheduler, "--host", "127.0.0.1", "--worker-port", str(worker_port),
                 "--nthreads", "1", "--nanny" if nanny else "--no-nanny", "--no-dashboard", "--name", f"worker-{n}"],
                folder / f"worker-{n}.log", {**(environment or {}), **(worker_environment or {})})
        deadline = time.monotonic() + timeout
        while True:
            try:
                with Client(cluster.scheduler, timeout=5, set_as_default=False) as client:
                    if workers:
                        client.wait_for_workers(workers, timeout=max(1.0, deadline - time.monotonic()))
                break
            except (OSError, TimeoutError):
                if time.monotonic() > deadline:
                    logs = "\n".join(p.read_text() for p in sorted(folder.glob("*.log")))
                    raise AssertionError(f"the Dask cluster did not start in {timeout} s:\n{logs}") from None
                time.sleep(0.5)
        yield cluster
    finally:
        for process in cluster.processes.values():
            seen |= descendants(process.pid) | {process.pid}
        for name, process in reversed(list(cluster.processes.items())):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM if name == "scheduler" else signal.SIGKILL)
        for process in cluster.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        deadline = time.monotonic() + 20
        while any(alive(pid) for pid in seen) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in seen:
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
