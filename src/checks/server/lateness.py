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
from checks.reports.render import POLICY
from checks.server.config import AssignmentPolicy
from checks.suites.scoring import LATE, Adjustment

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
        """Grace days this assignment would hold in all after the upload (those it holds already too)."""
        return min(self.days_late, self.grace_left)

    @property
    def spent_here(self) -> int:
        """Grace days this assignment holds already (an earlier late upload's)."""
        return self.grace_left - self.term_left

    @property
    def spends_more(self) -> int:
        """Grace days the upload would take from the `term_left` every view shows (page, refusal,
        `checks grace show`): those this assignment holds already are not spent twice."""
        return max(0, self.would_spend - self.spent_here)


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
            f"{_days(found.term_left)} left: it would spend {found.spends_more}"
            + (f" more ({found.spent_here} already spent on {policy.name})" if found.spent_here else "")
            + ". Send it again saying so (`checks submit --use-grace-day`, or choose "
            "\"spend grace days\" on the page), or take the late penalty (`--no-grace-day`)")
    return found


def _days(n: int) -> str:
    return f"{n} grace day{'s' if n != 1 else ''}"


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


def late_adjustment(decided: dates.Decision, raw_score: float, submitted: datetime) -> Adjustment | None:
    """The late penalty of a submission as the gradebook keeps it (grading.adjust.apply_policy
    makes the same): what every view of the student's score applies, so that none shows the raw
    score where the gradebook counts less. None when the policy had nothing to say."""
    if not decided.reasons:
        return None
    points = 0.0 - dates.penalty_points(raw_score, decided.penalty_percent)
    return Adjustment(LATE, points, "; ".join(decided.reasons), POLICY,
                      submitted.astimezone(timezone.utc).isoformat(timespec="seconds"))
