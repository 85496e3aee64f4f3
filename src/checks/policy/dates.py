"""Every date decision of a course, as pure functions of the policy, a submission time and a clock:
whether an assignment is open, whether hidden results show, how late a submission is, what that
costs. Nothing here reads the system clock, a file or the environment: the caller passes `now`,
and tests pin it to the second either side of a boundary, across DST changes and time zones.

Instants are compared in UTC (two datetimes with the same zoneinfo are compared by wall-clock
time, fold ignored, by Python: wrong across a DST change). A day late ends at the due time of day,
on the wall clock of the course's time zone: due Saturday 23:59, the first day late ends Sunday
23:59 even when a DST change makes that day 23 or 25 hours long. An hour late is 3600 seconds.
Submitted at the due instant is on time; one second after is late.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

from checks.policy.config import Policy

UTC = timezone.utc


def _utc(when: datetime) -> datetime:
    return when.astimezone(UTC)


def released(policy: Policy, now: datetime) -> bool:
    """Whether students may fetch and submit the assignment at `now`."""
    return policy.release is None or _utc(now) >= _utc(policy.release)


def hidden_shown(policy: Policy, now: datetime, *, due: datetime | None = None) -> bool:
    """Whether a student sees the hidden checks' results at `now` (`due`: their own due date,
    an extension's, where they have one)."""
    due = due or policy.due
    return not policy.hidden_wait or due is None or _utc(now) >= _utc(due)


def wall_clock_days_later(when: datetime, days: int, zone: tzinfo) -> datetime:
    """The same time of day `days` later on the wall clock of `zone`. Where a DST change skips that
    time, the instant it would have been had the clocks not moved; where it repeats it, the later
    of the two: both the later, kinder end of a day late."""
    local = when.astimezone(zone).replace(tzinfo=None) + timedelta(days=days)
    later = local.replace(tzinfo=zone, fold=1)
    return later if later.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == local else local.replace(tzinfo=zone, fold=0)


def days_late(due: datetime, submitted: datetime, zone: tzinfo) -> int:
    """Started days after `due` (0 when on time): the smallest n with `submitted` no later than
    n wall-clock days after `due` in `zone`."""
    if _utc(submitted) <= _utc(due):
        return 0
    guess = max(1, math.ceil((_utc(submitted) - _utc(due)) / timedelta(days=1)) - 1)
    while _utc(wall_clock_days_later(due, guess, zone)) < _utc(submitted):
        guess += 1
    while guess > 1 and _utc(wall_clock_days_later(due, guess - 1, zone)) >= _utc(submitted):
        guess -= 1
    return guess


def hours_late(due: datetime, submitted: datetime) -> int:
    """Started hours (3600 s) after `due`; 0 when on time."""
    seconds = (_utc(submitted) - _utc(due)).total_seconds()
    return 0 if seconds <= 0 else math.ceil(seconds / 3600)


def extended_due(policy: Policy, extension: datetime | None) -> datetime | None:
    """The student's due date: an extension's date where it is later than the assignment's."""
    if extension is None or policy.due is None:
        return policy.due if extension is None else extension
    return max(policy.due, extension, key=_utc)


def extended_close(policy: Policy, extension: datetime | None) -> datetime | None:
    """The student's hard close, moved as far as their due date was: an extension keeps the late
    window the course gives everyone (an extension to Friday, close a week after the due date:
    closed a week after Friday)."""
    close, due = policy.late.close, extended_due(policy, extension)
    if close is None or extension is None or policy.due is None or due is None:
        return close
    return _utc(close) + (_utc(due) - _utc(policy.due))


def grace_days_needed(policy: Policy, submitted: datetime | None, extension: datetime | None = None) -> int:
    """The days late a grace day could cover (after any extension; 0 on time, when the time is
    unknown, or after the hard close, which no grace day moves)."""
    due, close = extended_due(policy, extension), extended_close(policy, extension)
    if submitted is None or due is None or (close is not None and _utc(submitted) > _utc(close)):
        return 0
    return days_late(due, submitted, policy.zone)


@dataclass(frozen=True)
class Decision:
    """What a submission's time costs, and why, in words a student reads."""

    on_time: bool  # counting extension and grace days
    days_late: int  # started days after the student's due date (extension applied, before grace)
    grace_days: int  # spent on it
    penalty_percent: float  # of the score earned
    closed: bool  # submitted after the hard close: nothing accepted (penalty 100 %)
    due: datetime | None  # the student's due date, extension and grace days applied
    reasons: tuple[str, ...]


def decide(policy: Policy, submitted: datetime | None, *, extension: datetime | None = None,
           grace_days: int = 0) -> Decision:
    """The decision for one submission made at `submitted` (None: the time is unknown, and nothing
    is charged), given the student's extension date and the grace days spent on it (grace.py)."""
    due, close = extended_due(policy, extension), extended_close(policy, extension)
    reasons: list[str] = []
    if extension is not None and due is not None:
        reasons.append(f"extension to {_show(due, policy.zone)}")
    if submitted is None or due is None:
        return Decision(True, 0, 0, 0.0, False, due, tuple(reasons))
    late_days = days_late(due, submitted, policy.zone)
    if close is not None and _utc(submitted) > _utc(close):
        reasons.append(f"submitted {_show(submitted, policy.zone)}, after the hard close {_show(close, policy.zone)}: "
                       "not accepted")
        return Decision(False, late_days, 0, 100.0, True, due, tuple(reasons))
    grace_days = min(grace_days, late_days)
    graced = wall_clock_days_later(due, grace_days, policy.zone) if grace_days else due
    if grace_days:
        reasons.append(f"{grace_days} grace day{'s' if grace_days != 1 else ''} spent")
    if _utc(submitted) <= _utc(graced):
        return Decision(True, late_days, grace_days, 0.0, False, graced, tuple(reasons))
    late_by = _utc(submitted) - _utc(graced)
    if policy.late.kind == "per_day":
        units, word = days_late(graced, submitted, policy.zone), "day"
    elif policy.late.kind == "per_hour":
        units, word = hours_late(graced, submitted), "hour"
    else:
        reasons.append(f"submitted {_duration(late_by)} late (no late penalty)")
        return Decision(False, late_days, grace_days, 0.0, False, graced, tuple(reasons))
    percent = min(policy.late.cap, policy.late.percent * units)
    capped = " (the cap)" if percent == policy.late.cap and policy.late.percent * units > policy.late.cap else ""
    reasons.append(f"submitted {_duration(late_by)} late: {units} {word}{'s' if units != 1 else ''} at "
                   f"{policy.late.percent:g} % each, {percent:g} %{capped}")
    return Decision(False, late_days, grace_days, percent, False, graced, tuple(reasons))


def penalty_points(raw: float, percent: float) -> float:
    """Points taken from a raw score for a penalty of `percent` (of the score earned)."""
    return round(raw * percent / 100, 6)


def _show(when: datetime, zone: tzinfo) -> str:
    return when.astimezone(zone).isoformat(timespec="minutes")


def _duration(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{days} d"] * bool(days) + [f"{hours} h"] * bool(hours) + [f"{minutes} min"] * bool(minutes)
    return " ".join(parts) or f"{seconds} s"


@dataclass(frozen=True)
class Attempt:
    """One of a student's submissions to an assignment: when, and the score that would count
    (its final score, after its own late penalty)."""

    submitted: datetime
    score: float


def counted(policy: Policy, attempts: list[Attempt], *, extension: datetime | None = None) -> int | None:
    """The index of the attempt that counts under `policy.counts` (None: none does): `last`, the
    latest; `best`, the highest score (the later of equals); `last_before_due`, the latest on time
    for the student (extension applied), else the latest. Ties in time go to the later in the list."""
    if not attempts:
        return None
    order = sorted(range(len(attempts)), key=lambda i: (_utc(attempts[i].submitted), i))
    if policy.counts == "best":
        return max(order, key=lambda i: (attempts[i].score, _utc(attempts[i].submitted), i))
    if policy.counts == "last_before_due":
        due = extended_due(policy, extension)
        on_time = [i for i in order if due is None or _utc(attempts[i].submitted) <= _utc(due)]
        return (on_time or order)[-1]
    return order[-1]
