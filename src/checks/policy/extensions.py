"""Extensions: a later due date for one student on one assignment, set by staff, audited.

Kept in COURSE/records/extensions.jsonl (records.py): each grant or revocation is a new line
saying who, when and why; the latest line for a student and assignment is the one in force. The
file is checked whenever the course is loaded (config.load_course): an entry for a student not on
the roster, an unknown assignment, or a date without a time zone is refused there, with the file
and line named, before anything is graded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from checks.course.assignment import CourseError
from checks.policy import records
from checks.policy.config import read_when

if TYPE_CHECKING:
    from checks.policy.config import Course

EXTENSIONS = "extensions"


@dataclass(frozen=True)
class Extension:
    """One grant (or, with `until` None, a revocation), as recorded."""

    assignment: str
    student: str
    until: datetime | None
    reason: str
    by: str
    at: datetime
    where: str = ""  # file and line, for messages


def history(course: Course) -> list[Extension]:
    """Every grant and revocation, in the order made, each checked (CourseError names the line)."""
    found = []
    for line in records.read_records(records.records_path(course.folder, EXTENSIONS)):
        fields = line.fields
        for key in ("assignment", "student", "reason", "by", "at"):
            if not isinstance(fields.get(key), str) or not fields[key].strip():
                raise CourseError(f"{line.where()}: `{key}` must be a non-empty string")
        if fields["assignment"] not in course.policies:
            raise CourseError(f"{line.where()}: `assignment` {fields['assignment']!r} is not an assignment of this "
                              f"course (known: {', '.join(course.policies) or 'none'})")
        roster = course.require_roster(f"{line.where()}: an extension")
        if fields["student"] not in roster:
            raise CourseError(f"{line.where()}: `student` {fields['student']!r} is not on the roster ({roster.path})")
        until = fields.get("until")
        when = None if until is None else read_when(until, None, line.where(), "`until`")
        found.append(Extension(fields["assignment"], fields["student"], when, fields["reason"], fields["by"],
                               read_when(fields["at"], None, line.where(), "`at`"), line.where()))
    return found


def check_extensions(course: Course) -> None:
    history(course)


def in_force(course: Course, assignment: str) -> dict[str, datetime]:
    """Each student's extension date on `assignment` (students without one are not there)."""
    latest: dict[str, datetime | None] = {}
    for extension in history(course):
        if extension.assignment == assignment:
            latest[extension.student] = extension.until
    return {student: until for student, until in latest.items() if until is not None}


def grant(course: Course, assignment: str, student: str, until: datetime | str | None, *, reason: str, by: str,
          now: datetime, fields: tuple[str, str] = ("--until", "--reason")) -> Extension:
    """Record an extension to `until` (None revokes the one in force): checked first, as the
    course is (roster, assignment, time zone, a reason), then appended and on disk. `fields`: what
    the person typed the date and the reason into, as a mistake names them (the command's options,
    or a form's labels)."""
    until_field, reason_field = fields
    if assignment not in course.policies:
        raise CourseError(f"no assignment {assignment!r} in {course.root / 'autograder'} "
                          f"(known: {', '.join(course.policies) or 'none'})")
    roster = course.require_roster("an extension")
    if student not in roster:
        raise CourseError(f"{student!r} is not on the roster ({roster.path}): extensions are for its students")
    if not reason.strip():
        raise CourseError(f"say why ({reason_field}): every extension is recorded with who, when and why")
    policy = course.policy(assignment)
    when = None if until is None else read_when(until, course.named_zone(assignment), until_field, "the date")
    if when is not None and policy.due is not None and when.astimezone(timezone.utc) <= policy.due.astimezone(timezone.utc):
        raise CourseError(f"{until_field} {when.isoformat()} is not after the due date ({policy.due.isoformat()}): an "
                          "extension moves it later")
    extension = Extension(assignment, student, when, reason.strip(), by, now.astimezone(timezone.utc))
    path = records.records_path(course.folder, EXTENSIONS)
    with records.locked(path) as fd:
        records.append(fd, {"assignment": assignment, "student": student,
                            "until": None if when is None else when.isoformat(), "reason": extension.reason,
                            "by": by, "at": extension.at.isoformat(timespec="seconds")})
    return extension
