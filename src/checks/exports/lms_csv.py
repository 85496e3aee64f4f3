"""Grades for an LMS's gradebook import, from a `checks grade` output folder: Canvas's gradebook
CSV and Moodle's grade import CSV. Each carries the final score (the raw score less the late
penalty, plus manual adjustments), never the raw one.

Canvas (Grades > Import): the columns of Canvas's own gradebook export, `Student`, `ID`, `SIS
User ID`, `SIS Login ID`, `Section`, then one column per assignment, named `TITLE (ASSIGNMENT
ID)` to fill an existing assignment or `TITLE` to create one; the row below the header is
`Points Possible`, as in Canvas's export. Canvas finds each student by ID (Canvas's user id: the
roster's lms_id, or the id in Canvas's bulk download) or by SIS User ID / SIS Login ID (sis_id,
login).

Moodle (Grades > Import > CSV file): the columns of Moodle's grade export, `First name`, `Last
name`, `ID number`, `Email address`, then `Assignment: TITLE` and `Feedback: TITLE` (Moodle's
docs: import feedback with its grade, or the grade is lost). At import, map from `Email address`
to `useremail` (or `ID number` to `useridnumber`) and the assignment column to the grade item.

Only submissions the grader graded are written (a grader failure is never a grade), each matched
to a roster student; every cell is made inert for a spreadsheet (no formula, one line).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from checks.course import inert
from checks.course.assignment import CourseError
from checks.policy.roster import Roster, Student
from checks.reports.gradebook import DB_FILE, Gradebook, GradebookError, refuse_unless_regular
from checks.reports.render import POINTS_POSSIBLE, adjustment_line, write_atomically
from checks.suites.scoring import SubmissionResult

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_COLUMNS = ("First name", "Last name", "ID number", "Email address")


@dataclass
class LmsExport:
    """What was written, and who was left out (and why)."""

    path: Path
    rows: int = 0
    left_out: list[str] = field(default_factory=list)


def _writer(buffer: io.StringIO):
    writer = csv.writer(buffer, lineterminator="\r\n")  # as both LMSs write their own exports
    return lambda cells: writer.writerow([inert.csv_cell(cell) for cell in cells])


def _matched(results: list[SubmissionResult], roster: Roster) -> tuple[list[tuple[Student | None, SubmissionResult]],
                                                                     list[str]]:
    chosen, left_out = [], []
    for result in sorted(results, key=lambda r: r.name):
        if result.error:
            left_out.append(f"{result.name}: not graded (the grader failed on it)")
            continue
        student = roster.match(result.name, result.student_id)
        chosen.append((student, result))
    return chosen, left_out


def canvas_csv(results: list[SubmissionResult], roster: Roster, title: str,
               assignment_id: str = "") -> tuple[str, list[str]]:
    """Canvas's gradebook import CSV; and who was left out (no Canvas id or SIS id to find them by)."""
    column = f"{title} ({assignment_id})" if assignment_id else title
    buffer = io.StringIO()
    row = _writer(buffer)
    row([*CANVAS_COLUMNS, column])
    row([POINTS_POSSIBLE, "", "", "", "", max((r.max_score for r in results if not r.error), default="")])
    chosen, left_out = _matched(results, roster)
    for student, result in chosen:
        canvas_id = (student.lms_id if student else "") or result.student_id
        if not (canvas_id or (student and (student.sis_id or student.login))):
            left_out.append(f"{result.name}: no Canvas id (lms_id) or SIS id (sis_id, login) in the roster")
            continue
        row([student.name if student else result.name, canvas_id, student.sis_id if student else "",
             student.login if student else "", "", result.final_score])
    return buffer.getvalue(), left_out


def moodle_csv(results: list[SubmissionResult], roster: Roster, title: str) -> tuple[str, list[str]]:
    """Moodle's grade import CSV; and who was left out (not on the roster: no email to find them by)."""
    buffer = io.StringIO()
    row = _writer(buffer)
    row([*MOODLE_COLUMNS, f"Assignment: {title}", f"Feedback: {title}"])
    chosen, left_out = _matched(results, roster)
    for student, result in chosen:
        if student is None or not student.email:
            left_out.append(f"{result.name}: not on the roster with an email address")
            continue
        first, _, last = student.name.rpartition(" ")
        feedback = "; ".join(adjustment_line(a) for a in result.adjustments)
        row([first or last, last if first else "", student.sis_id, student.email, result.final_score, feedback])
    return buffer.getvalue(), left_out


def export_lms_csv(out_dir: Path, lms: str, roster: Roster, *, title: str | None = None, dest: Path | None = None,
                   assignment_id: str = "") -> LmsExport:
    """Write `lms` (canvas or moodle)'s CSV from out_dir's gradebook.sqlite, grading nothing: to
    `dest`, default out_dir/<lms>.csv (never through a link)."""
    if not out_dir.is_dir():
        raise GradebookError(f"{out_dir} is not a folder: name the --out folder of a `checks grade` run")
    book = Gradebook.existing(out_dir / DB_FILE)
    results = [record.result for record in book.load()]
    title = title or book.assignment
    target = dest or out_dir / f"{lms}.csv"
    if target.is_dir():
        raise CourseError(f"{target} is a folder: name the CSV file to write")
    refuse_unless_regular(target)
    text, left_out = (canvas_csv(results, roster, title, assignment_id) if lms == "canvas"
                      else moodle_csv(results, roster, title))
    write_atomically(target, text)
    return LmsExport(target, text.count("\r\n") - (2 if lms == "canvas" else 1), left_out)
