"""Late uploads on the course server, decided by the course policy's pure functions (checks.policy)
from the server's own receipt time: the moment an upload is stored and acknowledged is its
submission time, so that no clock a student controls (a file's time, a laptop's) enters a grade.

What it costs (days late, grace days spent, penalty, the hard close) is dates.decide's; how many
grace days a student has left is grace.py's allocation over the course's records, the same records
`checks grade`, `checks grace` and `checks extension` read and write. In `request` mode a late
upload spends grace days only once the student confirmed it (the form's checkbox, `checks submit
--use-grace-day`); the confirmation is recorded as a grace request, with how many were left.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from checks.course.assignment import CourseError
from checks.policy import dates, extensions, grace
from checks.policy.config import Course
from checks.server.config import AssignmentPolicy

USE, NONE = "use", "none"  # the answers to "spend grace days on this late upload?"


@dataclass(frozen=True)
class Terms:
    """What an upload made now would cost one student, before it is made (the page shows it)."""

    due: datetime | None  # the student's own (an extension's, where they have one)
    days_late: int  # that grace days could cover (0: on time, or after the hard close)
    closed: bool  # past the hard close: nothing is accepted
    grace_left: int  # for this assignment: the term's days less those spent on other assignments
    mode: str  # auto or request
    term_left: int = 0  # the term's days less those spent on every assignment (this one too)

    @property
    def asks(self) -> bool:
        """Whether the upload must say if it spends grace days (request mode, late, some left)."""
        return self.mode == "request" and self.days_late > 0 and self.grace_left > 0

    @property
    def would_spend(self) -> int:
        return min(self.days_late, self.grace_left)


def extension(course: Course, assignment: str, student: str) -> datetime | None:
    """The student's extension date on `assignment`, from the audited records (None: none)."""
    return extensions.in_force(course, assignment).get(student)


def terms(course: Course, policy: AssignmentPolicy, student: str, now: datetime) -> Terms:
    rules = policy.policy
    until = extension(course, policy.name, student)
    close = dates.extended_close(rules, until)
    closed = close is not None and now.astimezone(timezone.utc) > close.astimezone(timezone.utc)
    spent = grace.spent(course, student)
    others = {name: n for name, n in spent.items() if name != policy.name}
    return Terms(dates.extended_due(rules, until), dates.grace_days_needed(rules, now, until), closed,
                 grace.left_after(course.grace.days, others), course.grace.mode,
                 grace.left_after(course.grace.days, spent))


class GraceQuestion(Exception):
    """A late upload in request mode that did not say whether to spend grace days; str() asks."""


def admit(course: Course, policy: AssignmentPolicy, student: str, now: datetime, answer: str | None) -> Terms:
    """Check an upload about to be stored at `now` (nothing is written): CourseError past the hard
    close or for a wrong answer; GraceQuestion when it must say whether to spend grace days and did
    not (`answer`: USE, NONE or None)."""
    found = terms(course, policy, student, now)
    if found.closed:
        raise CourseError(f"{policy.name} closed (the hard close has passed): no upload is accepted any more")
    if answer not in (None, USE, NONE):
        raise CourseError(f"grace must be {USE!r} or {NONE!r}, not {answer!r}")
    if found.asks and answer is None:
        raise GraceQuestion(
            f"this upload is {found.days_late} day{'s' if found.days_late != 1 else ''} late and you have "
            f"{found.grace_left} grace day{'s' if found.grace_left != 1 else ''} left: it would spend "
            f"{found.would_spend}. Send it again saying so (`checks submit --use-grace-day`, or choose "
            "\"spend grace days\" on the page), or take the late penalty (`--no-grace-day`)")
    return found


def settle(course: Course, policy: AssignmentPolicy, student: str, found: Terms, answer: str | None,
           now: datetime) -> None:
    """Once the upload is stored: its lateness recorded (as a grade run records it), and in request
    mode the student's confirmed answer recorded as their grace request, with how many were left."""
    if policy.due is None:
        return
    if found.mode == "request" and found.days_late > 0 and answer is not None:
        days = found.would_spend if answer == USE else 0
        grace.request_grace(course, policy.name, student, days, by=student, now=now, confirm=lambda left: True)
    record(course, policy.name, student, found.days_late, now)


def record(course: Course, assignment: str, student: str, days_late: int, now: datetime) -> None:
    """The upload's lateness (days, before grace), as a grade run records it: the allocation of
    grace days, on the server and in `checks grade`, reads it."""
    grace.record_lateness(course, assignment, {student: days_late}, now=now)


def decision(course: Course, policy: AssignmentPolicy, student: str, submitted: datetime) -> dates.Decision:
    """What an acknowledged upload costs: the policy's decision with the student's extension and
    the grace days allocated to this assignment."""
    spent = grace.spent(course, student).get(policy.name, 0)
    return dates.decide(policy.policy, submitted, extension=extension(course, policy.name, student),
                        grace_days=spent)
