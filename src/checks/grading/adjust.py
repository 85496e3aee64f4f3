"""The course policy applied to an output folder's gradebook, before the run publishes it: each
submission's time, its late penalty (after extension and grace days) and the manual adjustments
of answered regrade requests, kept apart from the raw score with their reasons.

Regrade requests handed in as files are checked here before staff record them
(check_regrade_requests): each names a question its assignment has.

Run at the end of every `checks grade`, also when it grades nothing (a re-run after an extension
or an answer): the adjustments are made again, from scratch, from the policy, the recorded times
and the course's records, so they are always what the policy says now. The days each student was
late are recorded in the course (grace.record_lateness): grace days are allocated over all
assignments in due order, whichever is graded first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from checks.course.assignment import CourseError, load_assignment
from checks.course.submissions import Found
from checks.policy import grace
from checks.policy.config import Course
from checks.policy.dates import decide, grace_days_needed, penalty_points
from checks.policy.extensions import in_force
from checks.policy import regrades
from checks.policy.regrades import manual_adjustments
from checks.policy.times import SubmissionTimes
from checks.reports.gradebook import Graded, Gradebook
from checks.reports.render import POLICY
from checks.suites.questions import declared_questions
from checks.suites.scoring import LATE, MANUAL, Adjustment

UTC = timezone.utc


@dataclass
class Applied:
    """What applying the policy found, for the run's summary."""

    late: list[str] = field(default_factory=list)  # submissions charged a penalty
    unknown_time: list[str] = field(default_factory=list)  # a due date, but no time for them
    unmatched: list[str] = field(default_factory=list)  # not on the roster (no extension, grace or regrade)


def check_regrade_requests(course: Course, requests: list[regrades.Request]) -> None:
    """CourseError for the first request that names a question its assignment does not have: the
    hidden suite's (read from its source) or the quiz's. An assignment without a policy in the
    course, or whose suite's ids are not all literal in its source, is not checked."""
    for request in requests:
        if request.assignment not in course.policies:
            continue
        assignment = load_assignment(course.root, request.assignment)
        known = declared_questions(assignment.autograder_dir)
        if not known:
            continue
        known += [item.qid for item in assignment.quiz]
        if request.question not in known:
            raise CourseError(f"regrade request {request.id}: {request.assignment} has no question "
                              f"{request.question!r} (known: {', '.join(known)})")


def submission_times(times: SubmissionTimes | None, found: dict[str, Found], course: Course) -> dict[str, str | None]:
    """The times `times` gives for the submissions of this run (name: UTC ISO 8601); the others,
    and those it says nothing of, keep what the gradebook holds."""
    if times is None:
        return {}
    given = {}
    for name, source in found.items():
        when = times.time_of(source, name, course.roster)
        if when is not None:
            given[name] = when.astimezone(UTC).isoformat(timespec="seconds")
    return given


def apply_policy(course: Course, assignment: str, gradebook: Gradebook, times: dict[str, str | None], *,
                 now: datetime) -> Applied:
    """Bring the gradebook's times and adjustments up to date with the policy (see the module)."""
    policy = course.policy(assignment)
    applied = Applied()
    records = gradebook.load()
    held_times = {r.name: r.result.submitted_at for r in records} | {k: v or "" for k, v in times.items()}
    extensions = in_force(course, assignment) if course.roster else {}
    manual = manual_adjustments(course, assignment) if course.roster else {}
    students = {}
    for record in records:
        matched = course.roster.match(record.name, record.result.student_id) if course.roster else None
        if course.roster and matched is None:
            applied.unmatched.append(record.name)
        students[record.name] = matched.student_id if matched else (record.result.student_id or record.name)
    lateness = {}
    for record in records:
        if record.ok and held_times[record.name]:
            when = datetime.fromisoformat(held_times[record.name])
            lateness[students[record.name]] = grace_days_needed(policy, when, extensions.get(students[record.name]))
    if course.grace.days and lateness:
        grace.record_lateness(course, assignment, lateness, now=now)
    stamp = now.astimezone(UTC).isoformat(timespec="seconds")
    adjustments: dict[str, list[Adjustment]] = {}
    for record in records:
        student, items = students[record.name], []
        if record.ok:
            text = held_times[record.name]
            when = datetime.fromisoformat(text) if text else None
            if when is None and policy.due is not None:
                applied.unknown_time.append(record.name)
            spent = (grace.spent(course, student, this=(assignment, lateness.get(student, 0))).get(assignment, 0)
                     if course.grace.days and student in lateness else 0)
            decision = decide(policy, when, extension=extensions.get(student), grace_days=spent)
            if decision.reasons:
                points = 0.0 - penalty_points(record.result.score, decision.penalty_percent)
                items.append(Adjustment(LATE, points, "; ".join(decision.reasons), POLICY, stamp))
                if points:
                    applied.late.append(record.name)
            for given in regrades.applied(manual.get(student, []), record.source,
                                          regrades.question_scores(record.result.questions)):
                items.append(Adjustment(MANUAL, given.points, given.reason, given.by, given.at))
        adjustments[record.name] = items
    gradebook.set_policy(times, _keep_stamps(adjustments, records))
    return applied


def _keep_stamps(adjustments: dict[str, list[Adjustment]], records: list[Graded]) -> dict[str, list[Adjustment]]:
    """A policy adjustment that did not change keeps the time it was first decided at: applying the
    same policy again leaves the gradebook (and every file rendered from it) as it was."""
    held = {record.name: record.result.adjustments for record in records}
    kept = {}
    for name, items in adjustments.items():
        before = {(a.kind, a.points, a.reason, a.by): a.at for a in held.get(name, [])}
        kept[name] = [Adjustment(a.kind, a.points, a.reason, a.by, before.get((a.kind, a.points, a.reason, a.by), a.at))
                      for a in items]
    return kept
