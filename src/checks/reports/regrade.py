"""What a regrade changed: per submission and question, the old score, the new one, and why.

When a run grades again what an earlier run graded (`--regrade`, a student's new files, a
submission the grader had failed on), the gradebook keeps the grade it replaced (the `superseded`
table). This compares the latest such run's grades with the ones they replaced, and says why each
changed from what each grade was recorded with: the student's files (a fingerprint of them), the
hidden suite (course/digest.suite_fingerprint) and the grader's version. A score that changed
while none of them did is said to be not reproducible: worth a look at the suite.

report.html shows it (a section) and regrade.csv holds it (`regrade_csv`), beside gradebook.csv.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from checks.course import inert
from checks.reports.gradebook import Graded, Run, Superseded

REGRADE_CSV = "regrade.csv"

FILES_CHANGED = "new submission (the student's files changed)"
SUITE_CHANGED = "the hidden suite changed"
SUITE_UNKNOWN = "the earlier grade has no record of its suite (graded before suites were fingerprinted)"
GRADER_FAILED = "the grader had failed on it"
FIRST_GRADED = "graded for the first time"
NOTHING_CHANGED = "same files, suite and grader"
NOT_REPRODUCIBLE = "same files, suite and grader, yet another score: not reproducible"


@dataclass(frozen=True)
class Change:
    """One question of one submission whose score a regrade changed (old or new None: the question
    was not there)."""

    submission: str
    student_id: str
    question: str
    old: float | None
    new: float | None
    max_score: float
    why: str


@dataclass(frozen=True)
class Regraded:
    """One submission the run graded again, or for the first time."""

    submission: str
    old_total: float | None
    new_total: float | None
    why: str
    changed: bool  # some question's score differs


@dataclass(frozen=True)
class RegradeReport:
    run: Run
    submissions: list[Regraded]  # by name
    changes: list[Change]  # by submission, then question in suite order

    @property
    def changed(self) -> list[Regraded]:
        return [s for s in self.submissions if s.changed]

    @property
    def unchanged(self) -> list[Regraded]:
        return [s for s in self.submissions if not s.changed]


def regrade_report(records: list[Graded], run: Run | None, superseded: list[Superseded]) -> RegradeReport | None:
    """The changes made by `run` (Gradebook.superseded()'s), or None when no run has graded anything again."""
    if run is None:
        return None
    old_by_name = {old.name: old for old in superseded}
    submissions, changes = [], []
    for record in sorted(records, key=lambda g: g.name):
        old = old_by_name.get(record.name)
        if old is None and record.run_id != run.id:
            continue  # not graded by that run
        rows = _question_changes(record, old)
        why = _why(record, old, changed=bool(rows))
        changes += [Change(record.name, record.result.student_id or record.name, qid, before, after, top, why)
                    for qid, before, after, top in rows]
        submissions.append(Regraded(record.name, None if old is None or not old.ok else old.score,
                                    record.result.score if record.ok else None, why, bool(rows)))
    return RegradeReport(run, submissions, changes)


def _question_changes(record: Graded, old: Superseded | None) -> list[tuple[str, float | None, float | None, float]]:
    """(question, old score, new score, max) for each question whose score differs."""
    before = {qid: (score, top) for qid, score, top in old.questions} if old is not None and old.ok else {}
    after = {q.qid: (q.score, q.max_score) for q in record.result.questions} if record.ok else {}
    rows = []
    for qid in [*after, *(qid for qid in before if qid not in after)]:
        was, now = before.get(qid), after.get(qid)
        if was is None or now is None or was[0] != now[0]:
            rows.append((qid, None if was is None else was[0], None if now is None else now[0], (now or was)[1]))
    return rows


def _why(record: Graded, old: Superseded | None, *, changed: bool) -> str:
    """Why the grade is what it is now, compared with the one it replaced."""
    if old is None:
        return FIRST_GRADED
    reasons = []
    if not old.ok:
        reasons.append(GRADER_FAILED)
    if old.fingerprint != record.fingerprint:
        reasons.append(FILES_CHANGED)
    if old.suite_fingerprint is None or record.suite_fingerprint is None:
        reasons.append(SUITE_UNKNOWN)
    elif old.suite_fingerprint != record.suite_fingerprint:
        reasons.append(SUITE_CHANGED)
    if old.grader_version != record.grader_version:
        reasons.append(f"the grader changed ({old.grader_version} to {record.grader_version})")
    if not reasons:
        reasons.append(NOT_REPRODUCIBLE if changed else NOTHING_CHANGED)
    return "; ".join(reasons)


def regrade_csv(report: RegradeReport) -> str:
    """regrade.csv: a row per submission and question whose score changed: old and new score (empty:
    no such question then), the maximum, and why."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")

    def row(cells: list) -> None:  # names come from students: no cell is a formula
        writer.writerow([inert.csv_cell(cell) for cell in cells])

    row(["submission", "student_id", "question", "old_score", "new_score", "max_score", "why", "run"])
    for change in report.changes:
        row([change.submission, change.student_id, change.question, "" if change.old is None else change.old,
             "" if change.new is None else change.new, change.max_score, change.why, report.run.id])
    return buffer.getvalue()
