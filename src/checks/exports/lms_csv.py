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

Moodle's bulk download (the submissions named `<Full Name>_<participant id>_assignsubmission_...`)
carries Moodle's participant ids, which the gradebook import cannot match: a grade folder whose
every graded submission came with an LMS id is written as the assignment's grading worksheet
instead (Assignment > View all submissions > Upload grading worksheet, with the "Offline
grading worksheet" feedback type on): `Identifier` (`Participant <id>`), `Full name`, `Email
address`, `Grade`, `Maximum Grade`, `Last modified (grade)` (the time of the export, so that
Moodle takes it over an older grade) and `Feedback comments`. Neither needs a roster: the ids
come with the download (Canvas's: its user id, the `ID` column).

Only submissions the grader graded are written (a grader failure is never a grade). Every cell
is made inert for a spreadsheet (no formula, one line), but for the cells the LMS matches
students by (ID, SIS User ID, SIS Login ID; ID number, Email address; Identifier), which both
LMSs compare as written: a student whose id would need rewriting (it starts with `=`, `+`, `-`,
`@`, or holds a control character) is left out, saying so, never sent under another id. A
Canvas column named `TITLE (DIGITS)` fills the assignment with that id; a title that itself
ends in `(digits)` is written `TITLE [DIGITS]` when no id is given, so that Canvas makes a new
assignment rather than fill another.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from checks.course import inert
from checks.course.assignment import CourseError
from checks.policy.roster import Roster, Student
from checks.reports.gradebook import DB_FILE, Gradebook, GradebookError, refuse_unless_regular
from checks.reports.render import POINTS_POSSIBLE, adjustment_line, write_atomically
from checks.suites.scoring import SubmissionResult

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_COLUMNS = ("First name", "Last name", "ID number", "Email address")
WORKSHEET_COLUMNS = ("Identifier", "Full name", "Email address", "Grade", "Maximum Grade", "Last modified (grade)",
                     "Feedback comments")
PARTICIPANT = "Participant "  # Moodle's worksheet Identifier: this, then the participant id
_ID_SUFFIX = re.compile(r"\((\d+)\)\s*$")  # what Canvas reads as an assignment id at a header's end


@dataclass
class LmsExport:
    """What was written, and who was left out (and why)."""

    path: Path
    rows: int = 0
    left_out: list[str] = field(default_factory=list)
    kind: str = ""  # canvas, moodle (the gradebook import) or moodle-worksheet


def _writer(buffer: io.StringIO):
    writer = csv.writer(buffer, lineterminator="\r\n")  # as both LMSs write their own exports
    return lambda cells: writer.writerow([inert.csv_cell(cell) for cell in cells])


def _inexact(result: SubmissionResult, ids: dict[str, str], lms: str) -> str:
    """Why this student's match keys cannot be written as they are ("" when they can)."""
    for column, value in ids.items():
        if value and inert.csv_cell(value) != value:
            return (f"{result.name}: its {column} {inert.visible(value, keep='')!r} would be changed to keep a spreadsheet "
                    f"from reading it as a formula, and {lms} matches it only as written: enter this grade by hand")
    return ""


def _matched(results: list[SubmissionResult], roster: Roster | None) -> tuple[
        list[tuple[Student | None, SubmissionResult]], list[str]]:
    chosen, left_out = [], []
    for result in sorted(results, key=lambda r: r.name):
        if result.error:
            left_out.append(f"{result.name}: not graded (the grader failed on it)")
            continue
        student = roster.match(result.name, result.student_id) if roster is not None else None
        chosen.append((student, result))
    return chosen, left_out


def canvas_column(title: str, assignment_id: str = "") -> str:
    """The assignment's column header: `TITLE (ID)` fills Canvas's assignment ID; without an id, a
    title Canvas would read an id from (`Lab (2)`) is written `Lab [2]`."""
    if assignment_id:
        if not assignment_id.isdigit() or not assignment_id.isascii():
            raise CourseError(f"a Canvas assignment id is a number (the digits in the assignment's URL), not "
                              f"{assignment_id!r}")
        return f"{title} ({assignment_id})"
    suffix = _ID_SUFFIX.search(title)
    return f"{title[:suffix.start()]}[{suffix[1]}]" if suffix else title


def canvas_csv(results: list[SubmissionResult], roster: Roster | None, title: str,
               assignment_id: str = "") -> tuple[str, list[str]]:
    """Canvas's gradebook import CSV; and who was left out (no Canvas id or SIS id to find them by,
    or one Canvas could not match as written)."""
    buffer = io.StringIO()
    row = _writer(buffer)
    row([*CANVAS_COLUMNS, canvas_column(title, assignment_id)])
    row([POINTS_POSSIBLE, "", "", "", "", max((r.max_score for r in results if not r.error), default="")])
    chosen, left_out = _matched(results, roster)
    for student, result in chosen:
        ids = {"ID": (student.lms_id if student else "") or result.student_id,
               "SIS User ID": student.sis_id if student else "", "SIS Login ID": student.login if student else ""}
        if not any(ids.values()):
            left_out.append(f"{result.name}: no Canvas id (lms_id) or SIS id (sis_id, login) in the roster")
            continue
        if why := _inexact(result, ids, "Canvas"):
            left_out.append(why)
            continue
        row([student.name if student else result.name, *ids.values(), "", result.final_score])
    return buffer.getvalue(), left_out


def moodle_csv(results: list[SubmissionResult], roster: Roster | None, title: str) -> tuple[str, list[str]]:
    """Moodle's grade import CSV; and who was left out (not on the roster: no email to find them by)."""
    buffer = io.StringIO()
    row = _writer(buffer)
    row([*MOODLE_COLUMNS, f"Assignment: {title}", f"Feedback: {title}"])
    chosen, left_out = _matched(results, roster)
    for student, result in chosen:
        if student is None or not student.email:
            left_out.append(f"{result.name}: not on the roster with an email address")
            continue
        if why := _inexact(result, {"ID number": student.sis_id, "Email address": student.email}, "Moodle"):
            left_out.append(why)
            continue
        first, _, last = student.name.rpartition(" ")
        feedback = "; ".join(adjustment_line(a) for a in result.adjustments)
        row([first or last, last if first else "", student.sis_id, student.email, result.final_score, feedback])
    return buffer.getvalue(), left_out


def moodle_worksheet(results: list[SubmissionResult], roster: Roster | None, *,
                     now: datetime | None = None) -> tuple[str, list[str]]:
    """Moodle's grading worksheet for a Moodle download's grade folder (the participant ids came
    with it); and who was left out."""
    stamp = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).isoformat(timespec="seconds")
    buffer = io.StringIO()
    row = _writer(buffer)
    row(list(WORKSHEET_COLUMNS))
    chosen, left_out = _matched(results, roster)
    for student, result in chosen:
        if not (result.student_id.isdigit() and result.student_id.isascii()):
            left_out.append(f"{result.name}: no Moodle participant id (the download names none)")
            continue
        feedback = "; ".join(adjustment_line(a) for a in result.adjustments)
        row([f"{PARTICIPANT}{result.student_id}", student.name if student else result.name,
             student.email if student else "", result.final_score, result.max_score, stamp, feedback])
    return buffer.getvalue(), left_out


def from_download(results: list[SubmissionResult]) -> bool:
    """Whether every graded submission came with the LMS's id (a bulk download's): then no roster is needed."""
    graded = [r for r in results if not r.error]
    return bool(graded) and all(r.student_id for r in graded)


def export_lms_csv(out_dir: Path, lms: str, roster: Roster | None, *, title: str | None = None,
                   dest: Path | None = None, assignment_id: str = "") -> LmsExport:
    """Write `lms` (canvas or moodle)'s CSV from out_dir's gradebook.sqlite, grading nothing: to
    `dest`, default out_dir/<lms>.csv (never through a link). A roster is needed but where every
    graded submission came with the LMS's id; CourseError when no student could be written."""
    if not out_dir.is_dir():
        raise GradebookError(f"{out_dir} is not a folder: name the --out folder of a `checks grade` run")
    book = Gradebook.existing(out_dir / DB_FILE)
    results = [record.result for record in book.load()]
    title = title or book.assignment
    download = from_download(results)
    if roster is None and not download:
        raise CourseError(f"`checks export {lms}` needs a roster: the submissions in {out_dir} came with no LMS id "
                          "(not from a Canvas or Moodle download); name the roster in course.toml "
                          "(roster = \"roster.csv\", docs/policy.md)")
    target = dest or out_dir / f"{lms}.csv"
    if target.is_dir():
        raise CourseError(f"{target} is a folder: name the CSV file to write")
    refuse_unless_regular(target)
    if lms == "canvas":
        kind, (text, left_out) = "canvas", canvas_csv(results, roster, title, assignment_id)
    elif download:
        kind, (text, left_out) = "moodle-worksheet", moodle_worksheet(results, roster)
    else:
        kind, (text, left_out) = "moodle", moodle_csv(results, roster, title)
    rows = text.count("\r\n") - (2 if lms == "canvas" else 1)
    if rows == 0 and any(not r.error for r in results):
        raise CourseError(f"no student of {out_dir} could be written for {lms.title()}, so no file was written: "
                          + "; ".join(left_out[:5]) + (" ..." if len(left_out) > 5 else ""))
    write_atomically(target, text)
    return LmsExport(target, rows, left_out, kind)
