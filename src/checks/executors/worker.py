"""On each Dask worker: a plugin that keeps a warm grading pool (serve.py) per assignment (and
one with its public suite, where the course server asks for its public checks).

A pool (serve.WarmPool) starts with the first submission of its assignment that reaches the worker and then
grades every later one (one pool per task running at once on the worker: start workers with
`--nthreads 1` and one worker per core). The course arrives from the driver as a bundle
(course.py), unpacked once per worker; a changed suite is a new bundle and new pools. A worker
whose sandbox student code could reach the cluster from (posture.py) grades nothing: each task it
is given is a grader error saying why.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from distributed import get_worker
from distributed.diagnostics.plugin import WorkerPlugin

from checks.executors.course import CourseBundle
from checks.executors.posture import worker_problem
from checks.executors.serve import PoolFailed, WarmPool
from checks.sandbox import jail

PLUGIN_NAME = "checks-grading"


class GradingPlugin(WorkerPlugin):
    """Holds this worker's warm pools, by course bundle; idle pools wait for the next task."""

    def setup(self, worker: Any) -> None:
        self._worker = worker
        self._problem: str | None = None
        self._checked = False  # the posture is read once, at the first task (it probes bubblewrap)
        # the courses (hidden suites and solutions) go in the Dask worker's own folder: a worker
        # killed before its teardown leaves them there, which the next worker started on that
        # folder purges (distributed's WorkSpace); in the system temp folder where the bwrap jail
        # would show that folder to student code (inside the virtualenv, say)
        scratch = Path(worker.local_directory)
        self._dir = Path(tempfile.mkdtemp(prefix="checks-courses-", dir=None if jail.shown_in_jail(scratch) else scratch))
        self._launcher = ThreadPoolExecutor(1, thread_name_prefix="checks-pool-launcher")
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, str, bool], list[WarmPool]] = {}  # (bundle digest, device, public) -> idle pools
        self._courses: dict[str, Path] = {}  # bundle digest -> where it is unpacked

    def teardown(self, worker: Any) -> None:
        with self._lock:
            pools = [pool for idle in self._idle.values() for pool in idle]
            self._idle.clear()
        for pool in pools:
            pool.close()
        self._launcher.shutdown()
        shutil.rmtree(self._dir, ignore_errors=True)

    def grade(self, bundle: CourseBundle, request: dict) -> dict:
        """The pool's reply for one submission; a pool that cannot start or dies is a grader failure,
        and so is every submission given to a worker student code could reach the cluster from."""
        with self._lock:
            if not self._checked:
                self._problem, self._checked = worker_problem(self._worker), True
        if self._problem is not None:
            return {"name": request["name"], "value": None,
                    "error": f"the Dask worker {self._worker.address} grades nothing: {self._problem}"}
        try:
            pool = self._take(bundle)
        except PoolFailed as error:
            return {"name": request["name"], "value": None, "error": str(error)}
        try:
            reply = pool.grade(request)
        except PoolFailed as error:
            pool.close()
            return {"name": request["name"], "value": None, "error": str(error)}
        with self._lock:
            self._idle.setdefault((bundle.digest, bundle.device, bundle.public), []).append(pool)
        return reply

    def _take(self, bundle: CourseBundle) -> WarmPool:
        with self._lock:
            if bundle.digest not in self._courses:
                self._retire(bundle.assignment)
                self._courses[bundle.digest] = bundle.unpack(self._dir / bundle.digest)
            idle = self._idle.setdefault((bundle.digest, bundle.device, bundle.public), [])
            if idle:
                return idle.pop()
            course = self._courses[bundle.digest]
        return WarmPool(course, bundle.assignment, bundle.device, self._launcher, public=bundle.public)

    def _retire(self, assignment: str) -> None:
        """A new bundle of an assignment (its suite changed): the old pools will not be used again."""
        for digest in [d for d in self._courses if d.startswith(f"{assignment}-")]:
            for key in [key for key in self._idle if key[0] == digest]:
                for pool in self._idle.pop(key):
                    pool.close()
            shutil.rmtree(self._courses.pop(digest), ignore_errors=True)


def grade_on_worker(bundle: CourseBundle, request: dict) -> dict:
    """The Dask task: one submission, graded by this worker's warm pool for its assignment."""
    plugin = get_worker().plugins[PLUGIN_NAME]
    return plugin.grade(bundle, request)
