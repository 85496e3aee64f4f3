"""The graders behind the server: threads that claim queued submissions from the database and
hand each to a warm pool, then write the result back.

The web process never forks: each grading slot keeps, per assignment, a warm pool in a process of
its own (executors/serve.py, started by exec), or sends the submission to a Dask cluster
(`--scheduler`). A claim holds a lease, which a thread of this queue renews while the claim is
being graded: a server process that dies stops renewing, its leases run out, and another
process's graders take those submissions (each at most MAX_ATTEMPTS times). The result is
written only under the claim that is still current (storage.complete), so that a grader that
outlived its lease cannot record a second result. A pool that dies gives the submission back to
the queue (up to MAX_ATTEMPTS tries); a failure of the grader itself is recorded for staff,
never as the student's score.

Where the student may not see the hidden results yet, a submission's public run comes first and
is recorded at once; while other submissions wait for theirs, its hidden suite goes back to the
queue behind them (Storage.defer, Storage.claim's order): under a deadline burst every student
gets their public checks' feedback first, and the hidden results (shown after the due date)
follow. Where the hidden results are shown at once, they are the feedback, and the public checks
are not run.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from checks.course.assignment import Assignment
from checks.course.submissions import Submission, read_submission
from checks.executors.serve import PoolFailed, WarmPool, claim_cpu, held_cpu, request_for
from checks.grading.session import Source, named_files
from checks.server.storage import Storage, SubmissionRow
from checks.suites.scoring import SubmissionResult

if TYPE_CHECKING:
    from checks.executors.dask_grader import DaskGrader

log = logging.getLogger("checks.server")
MAX_ATTEMPTS = 3  # tries of a submission whose pool or grader died under it, before staff are told
RENEWALS_PER_LEASE = 3  # a lease is renewed this many times within its length: a slow renewal is not fatal


class Grader(Protocol):
    """Grades one submission for one slot: (the result as plain data, or None; the grader's error or "").
    `public`: whether it can also run the assignment's public suite (grade(..., public=True))."""

    public: bool

    def grade(self, assignment: Assignment, name: str, load: Callable[[], Submission], *,
              public: bool = False) -> tuple[dict | None, str]: ...

    def warm(self, assignment: Assignment) -> None: ...

    def close(self) -> None: ...


class LocalPools:
    """One slot's warm pools (executors/serve.py): per assignment, one with the hidden suite and,
    where the assignment has public tests, one with the public suite (what students see at once);
    started on first use."""

    public = True

    def __init__(self, device: str = "auto", isolation: str | None = None) -> None:
        self.device, self.isolation = device, isolation
        self.pools: dict[tuple[str, bool], WarmPool] = {}
        # the slot's CPU, which its pools take turns on (one grades at a time): two pools of one
        # slot never share a core with another slot's, nor with a Dask worker's on this machine
        self._cpu_lock = claim_cpu(pin=False)
        self.cpu = held_cpu(self._cpu_lock) if self._cpu_lock is not None else None
        # pools are started from this thread, which lives as long as the slot: a pool dies with it
        self._launcher = ThreadPoolExecutor(1, thread_name_prefix="checks-pool-launcher")

    def warm(self, assignment: Assignment) -> None:
        for public in (False, True) if has_public_checks(assignment) else (False,):
            self._pool(assignment, public)

    def _pool(self, assignment: Assignment, public: bool) -> WarmPool:
        key = (assignment.name, public)
        if key not in self.pools:
            self.pools[key] = WarmPool(assignment.root, assignment.name, self.device, self._launcher,
                                       isolation=self.isolation, public=public, cpu=self.cpu)
        return self.pools[key]

    def grade(self, assignment: Assignment, name: str, load: Callable[[], Submission], *,
              public: bool = False) -> tuple[dict | None, str]:
        pool = self._pool(assignment, public)
        try:
            reply = pool.grade(request_for(name, load))
        except PoolFailed:
            self.pools.pop((assignment.name, public)).close()
            raise
        return reply.get("value"), (reply.get("error") or "").strip()

    def close(self) -> None:
        for pool in self.pools.values():
            pool.close()
        self.pools.clear()
        self._launcher.shutdown()
        if self._cpu_lock is not None:
            self._cpu_lock.close()


class DaskPools:
    """Every slot's submissions graded on a Dask cluster (executors/dask_grader.py), whose workers
    keep a warm pool per assignment and suite (hidden, public)."""

    public = True

    def __init__(self, grader: "DaskGrader") -> None:
        self.grader = grader

    def warm(self, assignment: Assignment) -> None:
        pass  # the workers start their pools with the first submission

    def grade(self, assignment: Assignment, name: str, load: Callable[[], Submission], *,
              public: bool = False) -> tuple[dict | None, str]:
        """PoolFailed where the cluster had no worker for the grader's worker_wait: like a pool that
        died, the submission goes back to the queue (MAX_ATTEMPTS tries), then is a grader failure."""
        from checks.executors.dask_grader import NoWorkers  # the `cluster` extra: only where Dask grades

        try:
            (result,) = list(self.grader.results(assignment, [Source(name, load)], public=public))
        except NoWorkers as error:
            raise PoolFailed(str(error)) from None
        if result.error and not result.questions:
            return None, result.error
        return result.to_dict(), ""

    def close(self) -> None:
        pass


class GradingQueue:
    """`jobs` grading threads over the database's queue, woken when a submission arrives."""

    def __init__(self, storage: Storage, data_dir: Path, assignments: dict[str, Assignment], jobs: int,
                 make_grader: Callable[[], Grader], lease_seconds: float = 60.0) -> None:
        self.storage, self.data_dir, self.assignments = storage, data_dir, assignments
        self.jobs, self.make_grader, self.lease_seconds = jobs, make_grader, lease_seconds
        self._held: dict[str, str] = {}  # submission id -> the claim token this process grades it under
        self._held_lock = threading.Lock()
        # who holds a claim, as staff and operators read it: this machine, this process, this run
        self.instance = f"{socket.gethostname()[:40]}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._stop = threading.Event()
        self._arrived = threading.Condition()
        self._generation = 0
        self._threads: list[threading.Thread] = []
        self.ready = threading.Event()  # every slot's pools are warm
        self._warm = 0
        self.finished: list[Callable[[str], None]] = []  # called with each submission's id once recorded
        # whether a submission's student sees its hidden results now (the app's visibility rule):
        # then those are the feedback, and its public checks, each a question of the hidden suite
        # (`checks verify`), are not run
        self.hidden_shown: Callable[[SubmissionRow], bool] = lambda row: False

    def start(self) -> None:
        for slot in range(self.jobs):
            thread = threading.Thread(target=self._run, args=(f"{self.instance}-{slot}",), daemon=True,
                                      name=f"checks-grader-{slot}")
            thread.start()
            self._threads.append(thread)
        renewer = threading.Thread(target=self._renew, daemon=True, name="checks-lease-renewer")
        renewer.start()
        self._threads.append(renewer)

    def notify(self) -> None:
        """A submission was queued: wake the graders (others find it within a second anyway)."""
        with self._arrived:
            self._generation += 1
            self._arrived.notify_all()

    def stop(self) -> None:
        self._stop.set()
        self.notify()
        for thread in self._threads:
            thread.join(timeout=30)

    def _run(self, worker: str) -> None:
        grader = self.make_grader()
        try:
            for assignment in self.assignments.values():
                if self._stop.is_set():
                    return
                try:
                    grader.warm(assignment)
                except PoolFailed as error:
                    log.error("the warm pool of %s did not start: %s", assignment.name, error)
            with self._arrived:
                self._warm += 1
                if self._warm == self.jobs:
                    self.ready.set()
            public = self._public_assignments(grader)
            while not self._stop.is_set():
                with self._arrived:
                    seen = self._generation
                try:
                    row = self.storage.claim(worker, list(self.assignments), self.lease_seconds, public=public)
                except Exception as error:  # noqa: BLE001 - the database is away (restarting): try again
                    log.error("could not claim a submission: %s", error)
                    self._stop.wait(1.0)
                    continue
                if row is None:
                    with self._arrived:
                        if self._generation == seen:
                            self._arrived.wait(timeout=1.0)
                    continue
                with self._held_lock:
                    self._held[row.id] = row.claim or ""
                try:
                    self._grade(grader, worker, row, public)
                finally:
                    with self._held_lock:
                        self._held.pop(row.id, None)
        finally:
            grader.close()

    def _public_assignments(self, grader: Grader) -> list[str]:
        """The assignments whose public checks this grader runs on every upload, before the hidden suite."""
        return [name for name, assignment in self.assignments.items()
                if grader.public and has_public_checks(assignment)]

    def _renew(self) -> None:
        """Every lease_seconds / 3: extend the lease of each claim this process is grading. A claim
        found lost (this process stalled past its lease, and another took the submission) is
        logged; its grader's result will be refused."""
        while not self._stop.wait(self.lease_seconds / RENEWALS_PER_LEASE):
            with self._held_lock:
                held = dict(self._held)
            for submission_id, claim in held.items():
                try:
                    if not self.storage.renew(submission_id, claim, self.lease_seconds):
                        log.warning("the lease of %s ran out before it was renewed: another grader has it; this "
                                    "grader's result will not be recorded", submission_id)
                except Exception as error:  # noqa: BLE001 - the database is away: try again next round
                    log.error("could not renew the lease of %s: %s", submission_id, error)

    def _grade(self, grader: Grader, worker: str, row: SubmissionRow, public: list[str]) -> None:
        """`public`: the assignments whose public checks this grader runs (_public_assignments)."""
        assignment = self.assignments[row.assignment]
        if row.attempts > MAX_ATTEMPTS:  # its graders died (or stalled past their lease) every time
            self._record(row, worker, result=None, error=f"claimed {row.attempts} times: every grader before this "
                         "one went away (its server process died or stalled past its lease) while grading it")
            return
        path = self.data_dir / row.path
        named = named_files(assignment)
        if (row.assignment in public and row.public_result is None and row.public_error is None
                and not self.hidden_shown(row)):
            if not self._grade_public(grader, worker, row, lambda: read_submission(path, named)):
                return
            # the student has what they wait for; the hidden suite, whose results they may not see
            # yet, waits while another student waits for their public checks
            if self.storage.public_waiting(public):
                if not self.storage.defer(row.id, worker, row.claim):
                    log.warning("%s was not given back for its hidden suite: its claim was no longer current", row.id)
                self.notify()
                return
        try:
            value, error = grader.grade(assignment, row.user_id, lambda: read_submission(path, named))
        except PoolFailed as failure:
            if not self._queued_again(row, worker, "grading pool", failure):
                self._record(row, worker, result=None, error=f"the grading pool died {row.attempts} "
                             f"times on it: {failure}")
            return
        except Exception as failure:  # noqa: BLE001 - the grader's failure, for staff, never a score
            self._record(row, worker, result=None, error=f"{type(failure).__name__}: {failure}")
            return
        if value is not None:
            value = {**value, "student_id": row.user_id}
            error = error or SubmissionResult.from_dict(value).error
        self._record(row, worker, result=value, error=error or None)

    def _grade_public(self, grader: Grader, worker: str, row: SubmissionRow, load: Callable[[], Submission]) -> bool:
        """The public checks first, recorded at once under the claim (a student reads them while the
        hidden suite runs). A failure of the public run is recorded for staff and the hidden run goes
        on; a pool that died gives the submission back (as a hidden run's does). False: stop here."""
        try:
            value, error = grader.grade(self.assignments[row.assignment], row.user_id, load, public=True)
        except PoolFailed as failure:
            if self._queued_again(row, worker, "public checks' pool", failure):
                return False
            value, error = None, f"the public checks' pool died {row.attempts} times on it: {failure}"
        except Exception as failure:  # noqa: BLE001 - the grader's failure, for staff, never a score
            value, error = None, f"{type(failure).__name__}: {failure}"
        if value is not None:
            value = {**value, "student_id": row.user_id}
            result = SubmissionResult.from_dict(value)
            if not result.questions and result.error:  # the run itself failed: staff's, not a result
                value, error = None, error or result.error
        if not self.storage.record_public(row.id, worker, row.claim, result=value, error=error or None):
            log.warning("the public result of %s was not recorded: its claim was no longer current", row.id)
            return False
        for listener in self.finished:  # long polls waiting on it look again
            listener(row.id)
        return True

    def _queued_again(self, row: SubmissionRow, worker: str, pool: str, failure: PoolFailed) -> bool:
        """A pool died under the submission: give it back to the queue while it has tries left."""
        if row.attempts >= MAX_ATTEMPTS:
            return False
        log.warning("the %s died on %s (try %d); queued again: %s", pool, row.id, row.attempts, failure)
        self.storage.release_claim(row.id, worker, row.claim)
        self.notify()
        return True

    def _record(self, row: SubmissionRow, worker: str, *, result: dict | None, error: str | None) -> None:
        if self.storage.complete(row.id, worker, result=result, error=error, claim=row.claim):
            for listener in self.finished:
                listener(row.id)
        else:
            log.warning("the result of %s was not recorded: its claim was no longer current (the lease ran out "
                        "and another grader took it)", row.id)


def has_public_checks(assignment: Assignment) -> bool:
    """Whether the assignment ships public tests (the server runs them on every upload)."""
    return assignment.public_tests_dir.is_dir()


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
