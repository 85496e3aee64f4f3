"""The server's gradebook, in every format `checks grade` writes: each student's submission that
counts under the course policy, else the latest (a grader failure stays a row with no score), rendered by the same code into a
temporary output folder: gradebook.csv, report.html, gradebook.sqlite, or all of it as a zip
(results.json, feedback.md and feedback.html per student beside them); the same final scores
(`scores`) are what the staff post to the LMS.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from checks import __version__
from checks.course.assignment import Assignment
from checks.grading.adjust import apply_policy
from checks.grading.batch import publish
from checks.policy import dates
from checks.policy.config import Course
from checks.policy.dates import Attempt
from checks.policy.extensions import in_force
from checks.reports.gradebook import DB_FILE, Graded, Gradebook
from checks.reports.html import REPORT_FILE
from checks.reports.render import GRADEBOOK_FILE
from checks.server.storage import DONE, FAILED, Storage
from checks.suites.scoring import SubmissionResult

FORMATS = {"csv": GRADEBOOK_FILE, "html": REPORT_FILE, "sqlite": DB_FILE, "zip": "grades.zip"}
MEDIA = {"csv": "text/csv; charset=utf-8", "html": "text/html; charset=utf-8",
         "sqlite": "application/vnd.sqlite3", "zip": "application/zip"}


def counted(storage: Storage, assignment: str, course: Course | None = None) -> list[Graded]:
    """Each student's submission that counts, of those the grader finished (graded, or failed on),
    by student id: under the course policy's `counts` (last, best, last before the student's due
    date: policy.dates.counted, each attempt's score after its own late penalty), else the latest."""
    finished: dict[str, list] = {}
    for row in storage.submissions(assignment=assignment):  # newest first
        if row.status in (DONE, FAILED):
            finished.setdefault(row.user_id, []).append(row)
    policy = course.policy(assignment) if course is not None else None
    extensions = in_force(course, assignment) if course is not None and course.roster else {}
    chosen = {}
    for user, rows in finished.items():
        row = rows[0]
        if policy is not None and policy.counts != "last":
            graded = [candidate for candidate in rows if candidate.status == DONE and candidate.result is not None]
            attempts = [Attempt(_received(candidate), _score_after_penalty(policy, candidate, extensions.get(user)))
                        for candidate in graded]
            index = dates.counted(policy, attempts, extension=extensions.get(user))
            row = graded[index] if index is not None else row
        chosen[user] = row
    return [_graded(chosen[user], assignment) for user in sorted(chosen)]


def _received(row) -> datetime:  # noqa: ANN001 - a storage row
    return datetime.fromtimestamp(row.created, timezone.utc)


def _score_after_penalty(policy, row, extension: datetime | None) -> float:  # noqa: ANN001
    """The score an attempt would count with: its own late penalty taken off (grace days aside)."""
    score = SubmissionResult.from_dict(row.result).score
    decision = dates.decide(policy, _received(row), extension=extension)
    return score - dates.penalty_points(score, decision.penalty_percent)


def _graded(row, assignment: str) -> Graded:  # noqa: ANN001 - a storage row
    if row.result is not None:
        result = SubmissionResult.from_dict(row.result)
    else:
        result = SubmissionResult(row.user_id, assignment)
    result.name, result.student_id = row.user_id, row.user_id
    if row.status == FAILED:
        result.error = row.error or "the grader failed"
    stamp = datetime.fromtimestamp(row.finished or row.created, timezone.utc).isoformat(timespec="seconds")
    return Graded(result, __version__, stamp.replace("+00:00", "Z"), source=row.id, fingerprint=row.sha256)


def final_records(storage: Storage, assignment: str, course: Course | None, folder: Path) -> list[Graded]:
    """Each student's counted submission, as the gradebook holds it in `folder` (made there): with
    the course policy, its late penalties (from each submission's receipt time, extensions and
    grace days applied) and the manual adjustments of answered regrade requests, applied as
    `checks grade` applies them (grading.adjust.apply_policy), kept apart from the raw score with
    their reasons. What every export and the LMS's grade passback carry."""
    records = counted(storage, assignment, course)
    book = Gradebook(folder / DB_FILE, assignment)
    for record in records:
        book.record(record)
    if course is not None and records:
        times: dict[str, str | None] = {}
        for record in records:
            row = storage.submission(record.source)
            if row is not None:
                times[record.result.name] = _received(row).isoformat(timespec="seconds")
        apply_policy(course, assignment, book, times, now=datetime.now(timezone.utc))
        records = book.load()
    return records


def scores(storage: Storage, assignment: str, course: Course | None = None) -> list[Graded]:
    """final_records, without the files: for the LMS's grade passback."""
    with tempfile.TemporaryDirectory(prefix="checks-gradebook-") as temp:
        return final_records(storage, assignment, course, Path(temp) / assignment)


def gradebook_file(storage: Storage, assignment: Assignment, fmt: str, course: Course | None = None
                   ) -> tuple[bytes, str]:
    """(the file's bytes, its media type) for `fmt` in FORMATS, of final_records."""
    with tempfile.TemporaryDirectory(prefix="checks-gradebook-") as temp:
        folder = Path(temp) / assignment.name
        records = final_records(storage, assignment.name, course, folder)
        publish(folder, records, assignment=assignment)
        if fmt != "zip":
            return (folder / FORMATS[fmt]).read_bytes(), MEDIA[fmt]
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(folder.rglob("*")):
                if path.is_file() and not path.name.endswith(("-wal", "-shm")):
                    archive.write(path, f"{assignment.name}/{path.relative_to(folder).as_posix()}")
        return buffer.getvalue(), MEDIA[fmt]
