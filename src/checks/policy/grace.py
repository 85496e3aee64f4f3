"""Grace days: N per student for the term ([grace] days in course.toml), spent on late work in
the order the assignments are due.

`auto`: spent as they are needed, as many as a submission is days late, while any are left.
`request`: spent only on an assignment the student asked for them on, and confirmed after seeing
how many they have left (request_grace; the course server asks before a late upload, staff record
a request made by mail with `checks grace request`). Either way, the allocation is a pure function
of the days each assignment was late (lateness, recorded by each grade run), the requests and the
policy: grading assignments in any order, or again, gives each the same grace days.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterable

from checks.course.assignment import CourseError
from checks.policy import records
from checks.policy.config import Course

LATENESS, REQUESTS = "lateness", "grace-requests"
_LAST = datetime.max.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Need:
    """One student's lateness on one assignment: what grace days could cover."""

    assignment: str
    due: datetime | None  # orders the assignments (None: after every dated one)
    days_late: int
    requested: int | None = None  # request mode: the days the student asked to spend here


def allocate(total: int, mode: str, needs: Iterable[Need]) -> dict[str, int]:
    """Grace days spent on each assignment, in due order (then by name), never more than a
    submission is late, nor than are left; in request mode only where asked for, at most as many."""
    left, spent = total, {}
    for need in sorted(needs, key=lambda n: (n.due or _LAST, n.assignment)):
        wanted = need.days_late if mode == "auto" else min(need.days_late, need.requested or 0)
        spent[need.assignment] = min(wanted, left)
        left -= spent[need.assignment]
    return spent


def left_after(total: int, spent: dict[str, int]) -> int:
    return total - sum(spent.values())


# ---------------------------------------------------------------- the records behind it

def lateness(course: Course, student: str) -> dict[str, int]:
    """The days late each assignment's latest grade run recorded for `student` (assignment: days)."""
    found: dict[str, int] = {}
    for line in records.read_records(records.records_path(course.folder, LATENESS)):
        if line.fields.get("student") == student and isinstance(line.fields.get("days_late"), int):
            found[str(line.fields.get("assignment"))] = line.fields["days_late"]
    return found


def record_lateness(course: Course, assignment: str, days: dict[str, int], *, now: datetime) -> None:
    """What a grade run found (student: days late before grace), appended where it differs from
    the latest record: the next allocation, of any assignment, reads it."""
    path = records.records_path(course.folder, LATENESS)

    def changed() -> list[tuple[str, int]]:
        latest: dict[str, int] = {}
        for line in records.read_records(path):
            if line.fields.get("assignment") == assignment:
                latest[str(line.fields.get("student"))] = line.fields.get("days_late")
        return [(student, late) for student, late in sorted(days.items()) if latest.get(student, 0) != late]

    if not changed():  # nothing new: the course folder is not touched
        return
    with records.locked(path) as fd:
        for student, late in changed():  # read again under the lock
            records.append(fd, {"assignment": assignment, "student": student, "days_late": late,
                                "at": _stamp(now), "by": "checks grade"})


def requests(course: Course, student: str) -> dict[str, int]:
    """The grace days `student` asked to spend, per assignment (the latest request wins; 0 withdraws)."""
    found: dict[str, int] = {}
    for line in records.read_records(records.records_path(course.folder, REQUESTS)):
        if line.fields.get("student") == student and isinstance(line.fields.get("days"), int):
            found[str(line.fields.get("assignment"))] = line.fields["days"]
    return found


def spent(course: Course, student: str, *, this: tuple[str, int] | None = None) -> dict[str, int]:
    """The grace days `student` spends on each assignment, from the records (and `this`: an
    assignment's days late as the run now grading it found them)."""
    late = lateness(course, student) | (dict([this]) if this else {})
    asked = requests(course, student)
    needs = [Need(name, course.policy(name).due, days, asked.get(name)) for name, days in late.items()]
    return allocate(course.grace.days, course.grace.mode, needs)


def request_grace(course: Course, assignment: str, student: str, days: int, *, by: str, now: datetime,
                  confirm: Callable[[int], bool]) -> bool:
    """Record that `student` asks to spend `days` grace days on `assignment`, once `confirm` (shown
    how many they have left) agrees; False, and nothing recorded, when it does not."""
    if course.grace.mode != "request":
        raise CourseError(f"grace days are spent automatically in this course ([grace] mode = \"{course.grace.mode}\" "
                          f"in {course.config_file}): there is nothing to request")
    if days < 0:
        raise CourseError("the days requested are 0 (to withdraw a request) or more")
    roster = course.require_roster("a grace day request")
    if student not in roster:
        raise CourseError(f"{student!r} is not on the roster ({roster.path})")
    if assignment not in course.policies:
        raise CourseError(f"no assignment {assignment!r} in {course.root / 'autograder'}")
    others = {name: n for name, n in spent(course, student).items() if name != assignment}
    left = left_after(course.grace.days, others)
    if days > left:
        raise CourseError(f"{student} has {left} grace day{'s' if left != 1 else ''} left, not {days}")
    if not confirm(left):
        return False
    path = records.records_path(course.folder, REQUESTS)
    with records.locked(path) as fd:
        records.append(fd, {"assignment": assignment, "student": student, "days": days, "by": by, "at": _stamp(now),
                            "confirmed_with_left": left})
    return True


def _stamp(now: datetime) -> str:
    return now.astimezone(timezone.utc).isoformat(timespec="seconds")
