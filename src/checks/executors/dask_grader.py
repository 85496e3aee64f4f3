"""`checks grade --scheduler`: the batch graded on a Dask cluster, written locally.

`DaskGrader` has grade_sources' signature, so grading/batch.py writes the gradebook, results,
feedback and report exactly as for the local pool (resume, regrade and progress included): only
the grading moves. The driver reads each submission (capped, as read_submission does) just
before it is sent, keeping a bounded number in flight, and turns each reply into the
SubmissionResult the local pool would have yielded, believing only what it asked for
(replies.py). A worker killed mid-task is Dask's to retry elsewhere; a submission whose tasks
lose workers `distributed.scheduler.allowed-failures` times (Dask's default: 3) is graded once
more alone, with nothing else out (a neighbour may have killed them), and only a submission
whose workers die then too comes back as a grader failure with the reason; the batch goes on.
A cluster left with no worker for `worker_wait` seconds (every worker killed, its machines gone)
grades nothing more: each submission not graded yet is a grader failure naming the cause (the
results already in are kept), instead of a wait with no end.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from distributed import Client, Future, KilledWorker, wait

from checks.course.assignment import Assignment
from checks.executors.course import bundle_course
from checks.executors.posture import dashboard_problem, worker_level, worker_problem
from checks.executors.replies import Questions, believed, expected_questions
from checks.executors.serve import request_for
from checks.executors.worker import PLUGIN_NAME, GradingPlugin, grade_on_worker
from checks.grading.session import Source
from checks.sandbox import jail
from checks.suites.scoring import SubmissionResult

CONNECT_TIMEOUT = 10.0  # seconds to reach the scheduler before `checks grade` gives up
WORKER_WAIT = 120.0  # seconds the cluster may have no worker before what is not graded yet fails (--worker-wait)
LOOK_EVERY = 2.0  # seconds between looks at the cluster while nothing finishes


class ClusterProblem(Exception):
    """`checks grade --scheduler` and `checks serve --scheduler` cannot use the cluster; str() says why."""


class ClusterUnreachable(ClusterProblem):
    """The scheduler could not be reached or has no workers; str() says which and what to check."""


class NoWorkers(ClusterProblem):
    """The cluster had no worker for the time allowed (`worker_wait`): nothing more can be graded."""


class ClusterUnsafe(ClusterProblem):
    """A worker's sandbox would let student code reach the cluster (posture.py); str() says which and why."""


def connect(address: str | None = None, *, scheduler_file: Path | None = None,
            timeout: float = CONNECT_TIMEOUT, worker_wait: float = WORKER_WAIT, check: bool = True) -> Client:
    """A client of a running scheduler, by address (tls://host:port) or scheduler file, whose
    workers may grade strangers' code (`check`; ClusterUnsafe naming the first that may not).
    `timeout`: to reach the scheduler; `worker_wait`: for a cluster without workers to get one."""
    where = address or f"the scheduler in {scheduler_file}"
    if scheduler_file is not None and not Path(scheduler_file).is_file():
        raise ClusterUnreachable(f"no scheduler file {scheduler_file} (written by `dask scheduler "
                                 "--scheduler-file PATH`)")
    try:
        client = Client(address, scheduler_file=str(scheduler_file) if scheduler_file else None,
                        timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as error:
        raise ClusterUnreachable(f"cannot reach {where} within {timeout:g} s ({error}); is `dask scheduler` "
                                 "running there, and is its port open from here?") from None
    try:
        client.wait_for_workers(1, timeout=worker_wait)
    except TimeoutError:
        client.close()
        raise ClusterUnreachable(f"{where} has no workers after {worker_wait:g} s: start `dask worker` on "
                                 "the grading machines") from None
    if check:
        try:
            check_cluster(client)
        except BaseException:
            client.close()
            raise
    return client


def check_cluster(client: Client) -> None:
    """ClusterUnsafe when a worker's sandbox would let student code reach the cluster; each worker
    checks again before it grades (one that joins later)."""
    problems = client.run(worker_problem, on_error="return")
    for address, problem in sorted(problems.items()):
        if isinstance(problem, BaseException):
            problem = f"it could not say how it grades ({type(problem).__name__}: {problem})"
        if problem:
            raise ClusterUnsafe(f"the Dask worker {address} may not grade submissions: {problem}")
    levels = client.run(worker_level, on_error="return")
    if any(level != jail.BWRAP for level in levels.values()):  # student code shares the workers' network
        info = client.scheduler_info()
        servers = [("scheduler", client.scheduler.address, info.get("services", {}))]
        servers += [(f"Dask worker {address}", address, worker.get("services", {}))
                    for address, worker in sorted(info.get("workers", {}).items())]
        for who, address, services in servers:
            host = urlsplit(address).hostname or "127.0.0.1"
            for port in {port for port in services.values() if isinstance(port, int)}:
                problem = dashboard_problem(host, port)
                if problem:
                    raise ClusterUnsafe(f"the {who} may not serve a cluster that grades at the fork level: {problem}")


class DaskGrader:
    """Grades on the cluster behind `client`; a stand-in for grading.session.grade_sources."""

    def __init__(self, client: Client, *, in_flight: int | None = None, device: str = "auto",
                 worker_wait: float = WORKER_WAIT) -> None:
        """`worker_wait`: seconds the cluster may have no worker before what is not graded yet fails."""
        if not worker_wait > 0:
            raise ValueError(f"the wait for a Dask worker is a number of seconds above 0, not {worker_wait!r}")
        self.client = client
        self.device = device  # the driver's --device, for every worker's pool
        # submissions out at once (default: one per worker thread): a task waiting on a worker would
        # share the blame (Dask's `suspicious` count) when a submission running there kills it
        self.in_flight = in_flight
        self.worker_wait = worker_wait
        self._threads, self._threads_at = 1, -float("inf")  # the cluster's worker threads, and when counted

    def __call__(self, assignment: Assignment, sources: list[Source], *,
                 jobs: int | None = None, public: bool = False) -> Iterator[SubmissionResult]:
        """Yield each source's result as it finishes (any order). `jobs` is the cluster's to decide;
        `public`: grade with the assignment's public suite (the course server's public checks).
        Where the cluster has had no worker for worker_wait s, every source not graded yet comes
        back as a grader failure saying so (never a score), and the batch ends."""
        batch = _Batch(iter(sources))
        try:
            yield from self._graded(assignment, batch, public)
        except NoWorkers as error:
            for source in batch.unfinished():
                yield SubmissionResult(source.name, assignment.name, error=f"not graded: {error}")

    def results(self, assignment: Assignment, sources: list[Source], *,
                public: bool = False) -> Iterator[SubmissionResult]:
        """As calling it, but NoWorkers is raised where the cluster has had no worker for
        worker_wait s (the course server gives the submission back to its queue)."""
        yield from self._graded(assignment, _Batch(iter(sources)), public)

    def _graded(self, assignment: Assignment, batch: "_Batch", public: bool) -> Iterator[SubmissionResult]:
        self._register_plugin()
        bundle = bundle_course(assignment, self.device, public)
        questions = expected_questions(assignment, public)  # what a reply may score: from the suite's source
        # a task, not scattered data: a worker that dies with it can have it computed again
        course = self.client.submit(lambda data: data, bundle, key=f"checks-course-{bundle.digest}", pure=False)
        try:
            yield from self._fill(assignment, batch, course)
            while batch.names:
                for future in self._finished(batch):
                    _, source, alone = batch.names[future.key]
                    result = self._result(assignment, source.name, future, questions, alone=alone)
                    del batch.names[future.key]  # only now: NoWorkers above leaves it among the unfinished
                    if result is None:  # its worker was lost while others were graded beside it: once more, alone
                        batch.alone.append(source)
                    else:
                        yield result
                yield from self._fill(assignment, batch, course)
        finally:
            if batch.names:  # closed early (Ctrl-C, no workers left): nothing more is graded for this run
                self.client.cancel([future for future, _, _ in batch.names.values()])
            course.release()

    def _finished(self, batch: "_Batch") -> set[Future]:
        """The tasks out that are done, once one is; NoWorkers where the cluster has had no worker
        for worker_wait s (a task then waits on the scheduler for ever)."""
        futures = [future for future, _, _ in batch.names.values()]
        while True:
            try:
                with self.client.as_current():  # distributed.wait uses the current client
                    return wait(futures, timeout=LOOK_EVERY, return_when="FIRST_COMPLETED").done
            except TimeoutError:  # nothing finished yet: grading takes what it takes, while there are workers
                self._need_workers()

    def _fetch(self, future: Future) -> object:
        """A finished task's reply; its data lost with its worker is computed again once there is one
        (NoWorkers where there is none for worker_wait s)."""
        while True:
            try:
                return future.result(timeout=LOOK_EVERY)
            except TimeoutError:
                if future.status == "error":  # the task's own TimeoutError
                    raise
                self._need_workers()

    def _need_workers(self) -> None:
        """Return at once while the cluster has a running worker, else once one joins; NoWorkers
        after worker_wait s without one."""
        try:
            self.client.wait_for_workers(1, timeout=self.worker_wait)
        except TimeoutError:
            listed = len(self.client.nthreads())
            has = f"{listed} worker(s), none running (paused or closing)" if listed else "0 workers"
            raise NoWorkers(f"no Dask worker for {self.worker_wait:g} s; the scheduler at "
                            f"{self.client.scheduler.address} has {has} (were they killed, or their machines "
                            "lost? start `dask worker` and grade again)") from None

    def _register_plugin(self) -> None:
        """Once per cluster: workers that hold it keep their warm pools across runs."""
        # a worker lost a moment ago may still be listed: its error counts as not holding it
        held = self.client.run(lambda dask_worker: PLUGIN_NAME in dask_worker.plugins, on_error="return")
        if not held or not all(value is True for value in held.values()):
            self.client.register_plugin(GradingPlugin(), name=PLUGIN_NAME)

    def _fill(self, assignment: Assignment, batch: "_Batch", course: Future) -> Iterator[SubmissionResult]:
        """Send submissions until the window is full; it follows workers joining or leaving (every 2 s).
        A submission to be graded alone waits until nothing else is out, and holds back the rest."""
        if batch.alone:
            while batch.alone and not batch.names:  # (one that cannot be read again: the next)
                source = batch.alone.pop(0)
                yield from self._send(assignment, iter([source]), course, batch, alone=True)
            return
        if time.monotonic() - self._threads_at > 2:
            self._threads, self._threads_at = sum(self.client.nthreads().values()) or 1, time.monotonic()
        for _ in range(max(0, (self.in_flight or self._threads) - len(batch.names))):
            yield from self._send(assignment, batch.waiting, course, batch)

    def _send(self, assignment: Assignment, waiting: Iterator[Source], course: Future, batch: "_Batch", *,
              alone: bool = False) -> Iterator[SubmissionResult]:
        """Send the next submission that can be read; one the grader fails to read is a grader failure."""
        for source in waiting:
            try:
                request = request_for(source.name, source.load)
            except Exception as error:  # noqa: BLE001 - not the student's doing (those are SubmissionError)
                yield SubmissionResult(source.name, assignment.name,
                                       error=f"the grader could not read it: {type(error).__name__}: {error}")
                continue
            key = f"checks-grade-{uuid.uuid4().hex}"  # no name: the cluster's pages and logs show keys
            future = self.client.submit(grade_on_worker, course, request, key=key, pure=False)
            batch.names[key] = (future, source, alone)
            return

    def _result(self, assignment: Assignment, name: str, future: Future, questions: Questions, *,
                alone: bool) -> SubmissionResult | None:
        """The task's own submission's result: a reply is believed only where it is that
        submission's, with the assignment's questions and maxima (replies.py). None: its workers
        were lost while it was graded beside others, which may have killed them: grade it alone."""
        try:
            reply = self._fetch(future)
        except KilledWorker as error:  # Dask gave up after distributed.scheduler.allowed-failures lost workers
            if not alone:
                return None
            return SubmissionResult(name, assignment.name, error=(
                "every Dask worker that graded it died (killed, crashed or out of memory), as many times as "
                "the scheduler allows (distributed.scheduler.allowed-failures), the last of them while it was "
                f"graded alone; not tried again: {error}"))
        except NoWorkers:
            raise
        except Exception as error:  # noqa: BLE001 - a grader failure, never the student's score
            return SubmissionResult(name, assignment.name, error=f"the Dask task failed: {type(error).__name__}: {error}")
        finally:
            future.release()
        if not isinstance(reply, dict):
            return believed(name, assignment, reply, questions)  # a grader failure saying what came back
        if reply.get("error") or reply.get("value") is None:
            error, sandbox = reply.get("error") or "no result", reply.get("sandbox", "")
            return SubmissionResult(name, assignment.name, error=str(error).strip(),
                                    sandbox=sandbox if isinstance(sandbox, str) else "")
        return believed(name, assignment, reply["value"], questions)


@dataclass
class _Batch:
    """One call's submissions: those not sent yet, those out (task key -> future, source, whether
    graded alone), and those to grade again alone, once nothing else is out."""
    waiting: Iterator[Source]
    names: dict[str, tuple[Future, Source, bool]] = field(default_factory=dict)
    alone: list[Source] = field(default_factory=list)

    def unfinished(self) -> Iterator[Source]:
        """Every source with no result yet: out, to grade again alone, and not sent (not read)."""
        yield from (source for _, source, _ in self.names.values())
        yield from self.alone
        yield from self.waiting
