"""The class list: roster.csv in the course folder, one row per student.

Columns: student_id, name, email (required, as `checks serve` reads them too), and optional ones
that tie a student to what other tools call them: `submission` (the name `checks grade` gives
their submission: their folder's or zip's name), `lms_id` (the id an LMS's bulk download and its
gradebook use: Canvas's user id, Moodle's participant id), `sis_id` and `login` (Canvas's SIS User
ID and SIS Login ID, Moodle's ID number and username), `role` (student, ta, instructor).
Extensions and regrade requests name students by student_id; a grade is matched to a student by
any of their names (match_student).

The course's roster file is input only: checks never writes it (it may be tracked in git). The
learners a roster sync from the LMS adds (`checks lti roster`, the server's staff page) are kept
in the course's data folder (SYNCED, beside the server's database) and read with it (with_synced).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from checks.course import inert
from checks.course.assignment import CourseError

REQUIRED = ("student_id", "name", "email")
OPTIONAL = ("submission", "lms_id", "sis_id", "login", "role")
SYNCED = "lms-roster.csv"  # in the course's data folder: the learners synced from the LMS
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,99}")


@dataclass(frozen=True)
class Student:
    """One row of the roster."""

    student_id: str
    name: str
    email: str
    submission: str = ""
    lms_id: str = ""
    sis_id: str = ""
    login: str = ""
    role: str = "student"


@dataclass(frozen=True)
class Roster:
    """The students of a course, by student_id, and the file they were read from (for messages)."""

    path: Path
    students: dict[str, Student]

    def __contains__(self, student_id: object) -> bool:
        return student_id in self.students

    def match(self, submission: str, lms_id: str = "") -> Student | None:
        """The student a graded submission belongs to: by the LMS's id where the batch found one,
        else by the submission's name as the roster's `submission` column or student_id gives it."""
        for student in self.students.values():
            if lms_id and lms_id in (student.lms_id, student.student_id):
                return student
        for student in self.students.values():
            if submission and submission in (student.submission, student.student_id):
                return student
        return None


def launched_by(roster: Roster, lms_user: str) -> Student | None:
    """The student an LMS launch's user (its `sub`) is: the one whose lms_id it is; only where no
    student has that lms_id, the one whose student_id it is and who has no lms_id of their own (a
    roster without LMS ids, where the LMS's are the student ids). A student with an lms_id is never
    someone else's launch, whose LMS id happens to be their student id (numbers on both sides)."""
    if not lms_user:
        return None
    found = next((student for student in roster.students.values() if student.lms_id == lms_user), None)
    if found is not None:
        return found
    student = roster.students.get(lms_user)
    return student if student is not None and not student.lms_id else None


def read_roster(path: Path) -> Roster:
    """The roster at `path`; CourseError naming the file and line of a bad row."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise CourseError(f"cannot read the roster {path}: {error}") from None
    return parse_roster(text, path)


def student_id_problem(student_id: str) -> str | None:
    """Why `student_id` cannot be a roster's student_id (None: it can)."""
    if _ID.fullmatch(student_id):
        return None
    return (f"student_id {inert.visible(student_id, keep='')!r} must be 1 to 100 letters, digits or . _ @ - "
            "(starting with a letter or digit)")


def parse_roster(text: str, path: Path) -> Roster:
    """A roster's CSV text, as read_roster reads the file at `path` (which messages name): a
    writer checks what it would write with it, before writing."""
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip() for name in reader.fieldnames or []]
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise CourseError(f"{path}: the header must name {', '.join(REQUIRED)} (missing {', '.join(missing)})")
    students: dict[str, Student] = {}
    for line, row in enumerate(reader, start=2):
        cells = {key.strip(): (value or "").strip() for key, value in row.items() if key is not None}
        student_id = cells["student_id"]
        problem = student_id_problem(student_id)
        if problem:
            raise CourseError(f"{path}, line {line}: {problem}")
        if student_id in students:
            raise CourseError(f"{path}, line {line}: student_id {student_id} is there twice")
        students[student_id] = Student(student_id, cells["name"], cells["email"],
                                       **{key: cells[key] for key in OPTIONAL if cells.get(key)})
    if not students:
        raise CourseError(f"{path} lists no students")
    return Roster(path, students)


def with_synced(course_roster: Roster, synced: Path) -> Roster:
    """The course's roster, then the learners synced from the LMS into `synced` (when there is such
    a file) that it does not list already (by student_id or lms_id); messages name the course's file."""
    if not synced.is_file():
        return course_roster
    students = dict(course_roster.students)
    known = set(students) | {student.lms_id for student in students.values() if student.lms_id}
    for student_id, student in read_roster(synced).students.items():
        if student_id not in known and not (student.lms_id and student.lms_id in known):
            students[student_id] = student
    return Roster(course_roster.path, students)
