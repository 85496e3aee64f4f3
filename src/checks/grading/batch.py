"""`checks grade`: a whole class into an output folder that survives interruption.

DIR/gradebook.sqlite is the single source of truth (see reports/gradebook.py). Each finished submission
is committed there in one transaction, then its results.json and feedback.md are rendered from
that record (atomically); an interrupted run, Ctrl-C or kill -9, loses at most the submissions
in flight. A submission counts as already graded when the gradebook holds it, graded without a
grader error, from the same content (a fingerprint of its files): a re-run skips those unless
asked to regrade, grades the rest, and then renders every file of the folder (results.json,
feedback.md, gradebook.csv, report.html) again from the database wherever it is missing or
differs. So an interrupted run, re-run, ends with the same gradebook as an uninterrupted one.

One run at a time writes a folder (DIR/gradebook.lock); a write that fails (a full disk,
RLIMIT_FSIZE) stops the run with OutputFailed, which the same command, run again, repairs.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from checks import __version__
from checks.course.assignment import Assignment
from checks.reports.gradebook import DB_FILE, Entry, Graded, Gradebook, GradebookUnwritable, lock_folder, utc_now
from checks.grading.session import Source, grade_sources, named_files
from checks.reports.html import REPORT_FILE, render_report
from checks.reports.render import (GRADEBOOK_FILE, check_gradebook_csv, gradebook_csv, remove_stale_temp_files,
                                   write_if_changed, write_submission_reports)
from checks.suites.scoring import SubmissionResult
from checks.course.caps import MAX_FILE_BYTES, MAX_FINGERPRINT_BYTES
from checks.course.submissions import NOTEBOOK_SUFFIX, SubmissionError, list_folder
from checks.grading.names import batch_names

# why a submission is graded in this run (None in Planned.reason: already graded, skipped)
NEW, REGRADE, CHANGED, RETRY = ("new", "--regrade", "changed since it was graded",
                                "the grader failed on it last time")

Grader = Callable[..., Iterable[SubmissionResult]]  # grade_sources, or a stand-in in tests


class OutputFailed(Exception):
    """The output folder could not be written (a full disk, a quota, a file size limit): the run
    stopped there. What was committed before stays in the gradebook; the same command, run
    again, grades the rest. str() says so."""


@dataclass(frozen=True)
class Planned:
    path: Path
    name: str
    fingerprint: str
    reason: str | None  # why it is graded now; None when it is already graded and skipped
    note: str = ""  # why its name is not its own (grading/names.py): a warning in its feedback


@dataclass
class BatchSummary:
    out_dir: Path
    graded: list[SubmissionResult] = field(default_factory=list)  # by this run
    skipped: list[str] = field(default_factory=list)  # already graded by an earlier run
    records: list[Graded] = field(default_factory=list)  # the whole gradebook after this run, by name
    seconds: float = 0.0

    @property
    def failed(self) -> list[SubmissionResult]:
        """Submissions of this run the grader itself could not grade (never the student's doing)."""
        return [r for r in self.graded if r.error]

    @property
    def results(self) -> list[SubmissionResult]:
        return [record.result for record in self.records]


class BatchListener:
    """What a grade run reports as it goes (the CLI shows it; tests may record it)."""

    def locked(self) -> None:
        """The run holds the output folder (a second run into it stopped before this): grading begins."""

    def started(self, plan: list[Planned]) -> None:
        """Before grading: every submission asked for, and which of them will be graded."""

    def graded(self, result: SubmissionResult, done: int, total: int) -> None:
        """A submission was graded and saved (`done` of the `total` this run grades)."""

    def stopped(self) -> None:
        """Grading ended, finished or interrupted."""


def check_submission_paths(paths: list[Path]) -> None:
    """A path that does not exist is a typo, not a student: refuse the batch before grading."""
    missing = [str(path) for path in paths if not path.exists()]  # a dangling link too
    if missing:
        raise ValueError(f"no such submission: {', '.join(missing)} (nothing was graded; check the path"
                         f"{'s' if len(missing) > 1 else ''})")


def expand_submission_paths(paths: list[Path], assignment: str | None = None) -> list[Path]:
    """Folders, zips and notebooks as given; a folder that only holds submissions stands for each
    of them. A folder that holds one named for the assignment (nbgrader's submitted/<student>/<name>/,
    or <name>.ipynb) is one student's. Raises ValueError naming every path that does not exist."""
    check_submission_paths(paths)
    expanded: list[Path] = []
    for path in paths:
        children = sorted(p for p in path.iterdir() if p.is_dir() or p.suffix in (".zip", NOTEBOOK_SUFFIX)) \
            if path.is_dir() else []
        holds_submissions = (children and not any(path.glob("*.py")) and not (path / "quiz.toml").exists()
                             and not any(assignment in (child.name, child.stem) for child in children))
        expanded += children if holds_submissions else [path]
    return expanded


def fingerprint(path: Path) -> str:
    """A digest of a submission's content: a zip's bytes, or a folder's files as the reader lists them
    (course/submissions.list_folder: links, caches, names it skips left out; a folder it refuses
    counts by the reason). Content counts up to MAX_FILE_BYTES a file and MAX_FINGERPRINT_BYTES in
    all, names and sizes always. Changes when the student's files change, not when copied."""
    digest = hashlib.sha256()
    budget = [MAX_FINGERPRINT_BYTES]
    if path.is_file():
        _hash_file(digest, path, "", budget)
    elif path.is_dir():
        try:
            listing = list_folder(path)
        except SubmissionError as error:  # refused when it is graded: its reason stands for it
            digest.update(os.fsencode(f"refused: {error}"))
            return digest.hexdigest()
        for entry in listing.files:
            _hash_file(digest, path / entry.path, entry.path, budget)
    else:
        return ""
    return digest.hexdigest()


def _hash_file(digest: "hashlib._Hash", path: Path, relative: str, budget: list[int]) -> None:
    """The file's relative path and size, and its content (a folder's file only up to MAX_FILE_BYTES)
    while `budget`, the bytes left to read, lasts."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):  # links, fifos, devices: never opened here
            return
        digest.update(os.fsencode(relative) + f"\0{info.st_size}\0".encode())
        if info.st_size <= MAX_FILE_BYTES or not relative:
            with path.open("rb") as handle:
                while budget[0] > 0 and (chunk := handle.read(min(1 << 20, budget[0]))):
                    budget[0] -= len(chunk)
                    digest.update(chunk)
    except OSError as error:
        digest.update(f"unreadable: {error.strerror}\0".encode())


def plan_batch(paths: list[Path], held: dict[str, Entry], *, regrade: bool = False) -> list[Planned]:
    """Which submissions to grade, and why; the others are already graded (`held`: the gradebook's index)."""
    names = batch_names(paths, held)
    paths = [Path(os.path.abspath(path)) for path in paths]  # symlinked folders keep their own name
    plan = []
    for path, named in zip(paths, names):
        digest = fingerprint(path)
        entry = held.get(named.name)
        if regrade:
            reason: str | None = REGRADE
        elif entry is None:
            reason = NEW
        elif not entry.ok:
            reason = RETRY
        elif entry.fingerprint != digest:
            reason = CHANGED
        else:
            reason = None
        plan.append(Planned(path, named.name, digest, reason, named.note))
    return plan


def grade_to_folder(assignment: Assignment, paths: list[Path], out_dir: Path, *, jobs: int | None = None,
                    regrade: bool = False, listener: BatchListener | None = None,
                    grader: Grader | None = None) -> BatchSummary:
    """Grade what is not graded yet into out_dir (see the module's docstring); `grader` defaults to
    grading.grade_sources."""
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    check_submission_paths(paths)
    batch_names(paths)  # refuse a path given twice before anything is written
    listener = listener or BatchListener()
    with lock_folder(out_dir):
        listener.locked()
        return _grade_locked(assignment, paths, out_dir, jobs=jobs, regrade=regrade, listener=listener,
                             grader=grader or grade_sources)


def _grade_locked(assignment: Assignment, paths: list[Path], out_dir: Path, *, jobs: int | None, regrade: bool,
                  listener: BatchListener, grader: Grader) -> BatchSummary:
    """grade_to_folder, while this run holds the folder's lock."""
    started = time.monotonic()
    summary = BatchSummary(out_dir)
    with _stop_if_unwritable(out_dir):
        # refuses a gradebook.sqlite, and then a gradebook.csv, that checks did not write
        gradebook = Gradebook(out_dir / DB_FILE, assignment.name,
                              before_writing=lambda questions: check_gradebook_csv(out_dir / GRADEBOOK_FILE, questions))
        held = gradebook.index()
    plan = plan_batch(paths, held, regrade=regrade)
    todo = [p for p in plan if p.reason]
    summary.skipped = [p.name for p in plan if not p.reason]
    by_name = {p.name: p for p in todo}
    with _stop_if_unwritable(out_dir):
        run_id = gradebook.start_run(__version__, jobs=jobs, regrade=regrade, submissions=len(plan), to_grade=len(todo))
    listener.started(plan)
    try:
        if todo:
            sources = [Source.from_path(p.path, named_files(assignment), name=p.name) for p in todo]
            results = iter(grader(assignment, sources, jobs=jobs))
            try:
                for result in results:
                    planned = by_name[result.name]
                    if planned.note:
                        result.warnings.insert(0, planned.note)
                    record = Graded(result, __version__, utc_now(), str(planned.path), planned.fingerprint, run_id)
                    with _stop_if_unwritable(out_dir):
                        gradebook.record(record)  # the commit point: from here on it is graded
                        write_submission_reports(out_dir, result, grader_version=record.grader_version,
                                                 graded_at=record.graded_at)
                    summary.graded.append(result)
                    listener.graded(result, len(summary.graded), len(todo))
            finally:
                getattr(results, "close", lambda: None)()  # a generator: stop its children now
    except BaseException:  # Ctrl-C above all: leave what is saved readable, then let it through
        listener.stopped()
        with contextlib.suppress(Exception):
            gradebook.finish_run(run_id, graded=len(summary.graded), interrupted=True)
            publish(out_dir, gradebook.load(), assignment=assignment)
        raise
    listener.stopped()
    with _stop_if_unwritable(out_dir):
        gradebook.finish_run(run_id, graded=len(summary.graded))
        summary.records = gradebook.load()
        publish(out_dir, summary.records, assignment=assignment)
    summary.seconds = time.monotonic() - started
    return summary


@contextlib.contextmanager
def _stop_if_unwritable(out_dir: Path) -> Iterator[None]:
    """A write that fails (ENOSPC, EDQUOT, EFBIG under RLIMIT_FSIZE; SQLite's "disk I/O error")
    stops the run with one clear message instead of a traceback."""
    try:
        yield
    except (OSError, GradebookUnwritable) as error:
        raise OutputFailed(f"could not write to {out_dir} ({error}); is the disk full, or a file size limit "
                           f"or quota reached? The run stopped; what was graded before is saved in {DB_FILE}. "
                           "Make room and run the same command again to grade the rest.") from error


def publish(out_dir: Path, records: list[Graded], *, assignment: Assignment) -> None:
    """Render every file of the output folder from the gradebook, rewriting only what differs."""
    for record in records:
        write_submission_reports(out_dir, record.result, grader_version=record.grader_version,
                                 graded_at=record.graded_at)
    results = [record.result for record in records]
    remove_stale_temp_files(out_dir)
    write_if_changed(out_dir / GRADEBOOK_FILE, gradebook_csv(results))
    write_if_changed(out_dir / REPORT_FILE, render_report(assignment.name, records, title=assignment.title))
