"""`checks serve COURSE`: one process that serves the pages and the API (uvicorn) and grades
(the queue's threads and their warm pools), on 127.0.0.1 unless told otherwise.

With SQLite the course is served by one process at a time: it holds data/server.lock, so that
on start every submission a killed server left `grading` can be queued again at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from pathlib import Path
from typing import IO, Callable, Iterator

import uvicorn

from checks.course.assignment import CourseError, load_assignment
from checks.server.app import create_app
from checks.server.config import ServerConfig
from checks.server.queue import DaskPools, GradingQueue, Grader, LocalPools
from checks.server.storage import Storage

log = logging.getLogger("checks.server")


@contextlib.contextmanager
def hold_course(config: ServerConfig) -> Iterator[IO[str]]:
    """data/server.lock, held while this process serves the course (SQLite: one server at a time)."""
    config.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
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
          proxy_headers: bool = False, make_grader: Callable[[], Grader] | None = None) -> None:
    """Serve the course until interrupted; `make_grader` defaults to local warm pools. With
    `proxy_headers`, the client's address comes from a reverse proxy's X-Forwarded-For (from
    127.0.0.1 only): login backoff per address needs it behind a proxy."""
    with hold_course(config):
        storage = Storage(config.storage_url)
        for partial in config.data_dir.glob("uploads/*/.upload-*"):  # a server killed mid-upload: never acknowledged
            partial.unlink(missing_ok=True)
        requeued = storage.requeue_orphans()
        if requeued:
            log.warning("%d submission(s) left grading by a stopped server are queued again", requeued)
        assignments = {name: load_assignment(config.course_root, name) for name in config.assignments}
        queue = GradingQueue(storage, config.data_dir, assignments, jobs,
                             make_grader or LocalPools)
        app = create_app(config, storage, queue)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                               proxy_headers=proxy_headers, forwarded_allow_ips="127.0.0.1",
                                               server_header=False, date_header=False, access_log=False))
        queue.start()
        try:
            server.run()
        finally:
            queue.stop()
            storage.close()


def dask_grader(scheduler: str | None, scheduler_file: Path | None, stack: contextlib.ExitStack) -> Callable[[], Grader]:
    """Grading slots that send each submission to the Dask cluster (the `cluster` extra)."""
    try:
        from checks.executors.dask_grader import DaskGrader, connect
    except ImportError as error:
        raise CourseError(f"--scheduler needs dask and distributed ({error}): "
                          "pip install -c constraints.txt -e '.[cluster]'") from None
    client = stack.enter_context(connect(scheduler, scheduler_file=scheduler_file))
    grader = DaskGrader(client, in_flight=1)
    return lambda: DaskPools(grader)
