"""Every date decision is a pure function of the policy, the submission time and a clock: here with
fixed clocks one second either side of each boundary, across DST changes and time zones."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from checks.policy.config import LatePolicy, Policy
from checks.policy.dates import (days_late, decide, hidden_shown, hours_late, penalty_points, released,
                                 wall_clock_days_later)

ZURICH, NEW_YORK, UTC = ZoneInfo("Europe/Zurich"), ZoneInfo("America/New_York"), timezone.utc
SECOND = timedelta(seconds=1)


def policy(due: datetime, **late) -> Policy:
    return Policy("a1", zone=due.tzinfo, due=due, late=LatePolicy(**late))


def test_the_due_instant_is_on_time_and_one_second_after_is_late():
    due = datetime(2030, 6, 30, 23, 59, tzinfo=UTC)
    rule = policy(due, kind="per_day", percent=10)
    assert decide(rule, due - SECOND).on_time and decide(rule, due).on_time
    assert (days_late(due, due, UTC), days_late(due, due + SECOND, UTC)) == (0, 1)
    late = decide(rule, due + SECOND)
    assert (late.on_time, late.days_late, late.penalty_percent) == (False, 1, 10.0)
    assert decide(rule, due + timedelta(days=1)).days_late == 1
    assert decide(rule, due + timedelta(days=1) + SECOND).days_late == 2


def test_a_day_late_ends_at_the_due_time_of_day_across_the_spring_dst_change():
    """Zurich's clocks go forward on 2030-03-31: the first day late is 23 hours long."""
    due = datetime(2030, 3, 30, 23, 59, tzinfo=ZURICH)
    end_of_day_one = datetime(2030, 3, 31, 23, 59, tzinfo=ZURICH)
    assert end_of_day_one.astimezone(UTC) - due.astimezone(UTC) == timedelta(hours=23)
    assert days_late(due, end_of_day_one, ZURICH) == 1
    assert days_late(due, end_of_day_one + SECOND, ZURICH) == 2  # 23 h 0 min 1 s: a second day, not 24 h
    assert days_late(due, end_of_day_one - SECOND, ZURICH) == 1


def test_a_day_late_ends_at_the_due_time_of_day_across_the_autumn_dst_change():
    """Zurich's clocks go back on 2030-10-27: the first day late is 25 hours long."""
    due = datetime(2030, 10, 26, 23, 59, tzinfo=ZURICH)
    # (arithmetic on a zoneinfo datetime is wall-clock arithmetic: elapsed time is counted in UTC)
    assert days_late(due, due.astimezone(UTC) + timedelta(hours=24, minutes=30), ZURICH) == 1  # still day one
    end = due.astimezone(UTC) + timedelta(hours=25)
    assert days_late(due, end, ZURICH) == 1 and days_late(due, end + SECOND, ZURICH) == 2


def test_a_due_time_the_clocks_skip_the_next_day_ends_later_not_earlier():
    due = datetime(2030, 3, 30, 2, 30, tzinfo=ZURICH)  # 2030-03-31 02:30 does not exist in Zurich
    assert wall_clock_days_later(due, 1, ZURICH).astimezone(UTC) == datetime(2030, 3, 31, 1, 30, tzinfo=UTC)
    repeated = datetime(2030, 10, 26, 2, 30, tzinfo=ZURICH)  # 2030-10-27 02:30 happens twice: the later
    assert wall_clock_days_later(repeated, 1, ZURICH).astimezone(UTC) == datetime(2030, 10, 27, 1, 30, tzinfo=UTC)


def test_the_same_instant_in_any_offset_gets_the_same_decision():
    due = datetime(2030, 6, 30, 23, 59, tzinfo=NEW_YORK)
    rule = policy(due, kind="per_hour", percent=5, cap=100)
    for zone in (UTC, ZURICH, ZoneInfo("Asia/Tokyo"), timezone(timedelta(hours=-3, minutes=-30))):
        at = (due + timedelta(hours=2, seconds=1)).astimezone(zone)
        decision = decide(rule, at)
        assert (decision.on_time, decision.penalty_percent) == (False, 15.0), zone


def test_hours_late_counts_started_hours():
    due = datetime(2030, 1, 1, tzinfo=UTC)
    assert [hours_late(due, due + s) for s in (-SECOND, timedelta(0), SECOND, timedelta(hours=1),
                                               timedelta(hours=1, seconds=1))] == [0, 0, 1, 1, 2]


def test_the_penalty_stops_at_the_cap_and_nothing_is_accepted_after_the_close():
    due = datetime(2030, 6, 30, 23, 59, tzinfo=ZURICH)
    close = due + timedelta(days=7)
    rule = policy(due, kind="per_day", percent=10, cap=30, close=close)
    assert decide(rule, due + timedelta(days=5)).penalty_percent == 30.0
    assert "(the cap)" in decide(rule, due + timedelta(days=5)).reasons[-1]
    at_close = decide(rule, close)
    assert not at_close.closed and at_close.penalty_percent == 30.0
    after = decide(rule, close + SECOND)
    assert after.closed and after.penalty_percent == 100.0 and "hard close" in after.reasons[-1]
    assert penalty_points(80.0, 30.0) == 24.0


def test_an_extension_moves_the_due_date_and_the_close():
    due = datetime(2030, 6, 30, 23, 59, tzinfo=ZURICH)
    rule = policy(due, kind="per_day", percent=10, close=due + timedelta(days=1))
    until = due + timedelta(days=3)
    assert decide(rule, until, extension=until).on_time
    late = decide(rule, until + SECOND, extension=until)
    assert (late.on_time, late.days_late, late.penalty_percent, late.closed) == (False, 1, 10.0, False)
    assert decide(rule, until + SECOND).closed  # without the extension: after the close
    shifted_close = until.astimezone(UTC) + timedelta(days=1)  # the same day's late window, after the extension
    assert not decide(rule, shifted_close, extension=until).closed and decide(rule, shifted_close + SECOND,
                                                                              extension=until).closed


def test_grace_days_move_the_due_date_a_day_each():
    due = datetime(2030, 3, 30, 23, 59, tzinfo=ZURICH)
    rule = policy(due, kind="per_day", percent=10)
    one_day = datetime(2030, 3, 31, 23, 59, tzinfo=ZURICH)  # across the DST change: 23 h
    covered = decide(rule, one_day, grace_days=1)
    assert (covered.on_time, covered.grace_days, covered.penalty_percent) == (True, 1, 0.0)
    partly = decide(rule, one_day + SECOND, grace_days=1)
    assert (partly.on_time, partly.days_late, partly.grace_days, partly.penalty_percent) == (False, 2, 1, 10.0)
    assert decide(rule, due + SECOND, grace_days=3).grace_days == 1  # never more than it is late


def test_no_time_no_due_date_or_no_late_rule_charges_nothing():
    due = datetime(2030, 6, 30, tzinfo=UTC)
    assert decide(policy(due, kind="per_day", percent=10), None).penalty_percent == 0.0
    assert decide(Policy("a1"), datetime(2040, 1, 1, tzinfo=UTC)).on_time
    unpunished = decide(policy(due), due + timedelta(days=2))
    assert (unpunished.on_time, unpunished.penalty_percent) == (False, 0.0) and "no late penalty" in unpunished.reasons[-1]


@pytest.mark.parametrize("show_hidden", ["at_once", "after_due"])
def test_release_and_hidden_results_turn_at_their_instant(show_hidden):
    release, due = datetime(2030, 6, 1, 9, tzinfo=ZURICH), datetime(2030, 6, 30, 23, 59, tzinfo=ZURICH)
    rule = Policy("a1", zone=ZURICH, release=release, due=due, show_hidden=show_hidden)
    at_once = show_hidden == "at_once"
    assert not released(rule, release - SECOND) and released(rule, release)
    assert hidden_shown(rule, due - SECOND) is at_once and hidden_shown(rule, due)
    assert hidden_shown(rule, due, due=due + timedelta(days=2)) is at_once  # an extension's due date


def test_which_submission_counts():
    from checks.policy.dates import Attempt, counted

    due = datetime(2030, 6, 30, 23, 59, tzinfo=ZURICH)
    attempts = [Attempt(due - timedelta(hours=2), 80.0), Attempt(due + SECOND, 70.0), Attempt(due - SECOND, 60.0)]
    rule = Policy("a1", zone=ZURICH, due=due)
    assert counted(rule, attempts) == 1  # last: the latest, whatever its place in the list
    assert counted(Policy("a1", zone=ZURICH, due=due, counts="best"), attempts) == 0
    before = Policy("a1", zone=ZURICH, due=due, counts="last_before_due")
    assert counted(before, attempts) == 2  # one second before the due date
    assert counted(before, attempts, extension=due + timedelta(days=1)) == 1  # on time with the extension
    assert counted(before, attempts[1:2]) == 0 and counted(rule, []) is None  # only late ones: the latest
