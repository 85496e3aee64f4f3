"""`checks serve COURSE`: one process that serves the pages and the API (uvicorn) and grades
(the queue's threads and their warm pools, or Dask), on 127.0.0.1 unless told otherwise.

With SQLite the course is served by one process at a time: it holds data/server.lock, so that
on start every submission a killed server left `grading` can be queued again at once. With
PostgreSQL any number of processes serve one course (behind one reverse proxy, sharing the
course folder's data/): none holds the lock, none requeues another's work on start; a dead
process's claims come back when their leases run out (server/queue.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from pathlib import Path
from typing import IO, Callable, Iterator

import uvicorn

from checks.course.assignment import CourseError, load_assignment
from checks.sandbox.jail import Isolation
from checks.server import confinement
from checks.server.app import create_app
from checks.server.config import ServerConfig
from checks.server.database import is_sqlite
from checks.server.queue import DaskPools, GradingQueue, Grader, LocalPools
from checks.server.storage import Storage

log = logging.getLogger("checks.server")
STALE_UPLOAD_SECONDS = 3600.0  # a partial upload this old belongs to no living server process


@contextlib.contextmanager
def hold_course(config: ServerConfig) -> Iterator[IO[str] | None]:
    """data/server.lock, held while this process serves the course (SQLite: one server at a time);
    nothing to hold on PostgreSQL, whose servers share the course."""
    config.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not is_sqlite(config.storage_url):
        yield None
        return
    handle = open(config.data_dir / "server.lock", "a")  # noqa: SIM115 - held for the whole run
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise CourseError(f"another `checks serve` is serving {config.folder} (it holds "
                          f"{config.data_dir / 'server.lock'}); stop it first") from None
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield handle
    finally:
        handle.close()


def serve(config: ServerConfig, *, host: str = "127.0.0.1", port: int = 8000, jobs: int = 1,
          proxy_headers: bool = False, forwarded_allow_ips: str = "127.0.0.1",
          make_grader: Callable[[], Grader] | None = None, isolation: Isolation | None = None) -> None:
    """Serve the course until interrupted; `make_grader` defaults to local warm pools. With
    `proxy_headers`, the client's address comes from a reverse proxy's X-Forwarded-For (from
    `forwarded_allow_ips` only): login backoff per address needs it behind a proxy. `isolation`:
    the sandbox level the local pools grade at (None: they grade elsewhere, `make_grader`'s
    Dask); refused (CourseError) where a submission could read the server's state (confinement.py)."""
    if make_grader is None and isolation is None:
        raise CourseError("local grading needs its isolation level, to check that submissions cannot read data/")
    for change in confinement.secure(config, isolation):
        log.warning("%s", change)
    with hold_course(config) as alone:
        storage = Storage(config.storage_url)  # migrated to head here (one process at a time)
        for partial in config.data_dir.glob("uploads/*/.upload-*"):  # killed mid-upload: never acknowledged
            # alone, every partial upload is a dead one; beside other servers, only an old one is
            with contextlib.suppress(FileNotFoundError):  # another server may remove it meanwhile
                if alone is not None or time.time() - partial.stat().st_mtime > STALE_UPLOAD_SECONDS:
                    partial.unlink(missing_ok=True)
        if alone is not None:  # SQLite: this process is the course's only server
            requeued = storage.requeue_orphans()
            if requeued:
                log.warning("%d submission(s) left grading by a stopped server are queued again", requeued)
        assignments = {name: load_assignment(config.course_root, name) for name in config.assignments}
        queue = GradingQueue(storage, config.data_dir, assignments, jobs,
                             make_grader or LocalPools, lease_seconds=config.lease_seconds)
        app = create_app(config, storage, queue)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                               proxy_headers=proxy_headers, forwarded_allow_ips=forwarded_allow_ips,
                                               server_header=False, date_header=False, access_log=False,
                                               timeout_keep_alive=5))  # an idle connection closes
        queue.start()
        try:
            server.run()
        finally:
            queue.stop()
            storage.close()


def dask_grader(scheduler: str | None, scheduler_file: Path | None, stack: contextlib.ExitStack, *,
                worker_wait: float | None = None) -> Callable[[], Grader]:
    """Grading slots that send each submission to the Dask cluster (the `cluster` extra); `worker_wait`:
    seconds the cluster may have no worker before a submission goes back to the queue (None: the default)."""
    try:
        from checks.executors.dask_grader import ClusterProblem, DaskGrader, connect
    except ImportError as error:
        raise CourseError(f"--scheduler needs dask and distributed ({error}): "
                          "pip install -c constraints.txt -e '.[cluster]'") from None
    try:  # refused where a worker's sandbox would let student code reach the cluster
        wait = {"worker_wait": worker_wait} if worker_wait else {}
        client = stack.enter_context(connect(scheduler, scheduler_file=scheduler_file, **wait))
    except ClusterProblem as error:
        raise CourseError(str(error)) from None
    grader = DaskGrader(client, in_flight=1, **wait)
    return lambda: DaskPools(grader)
