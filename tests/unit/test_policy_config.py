"""Course policy input: course.toml's defaults, each assignment.toml's [policy], the roster and the
recorded extensions. Every mistake is refused when the course is loaded, naming the file and key;
grace days are allocated in due order; extensions are recorded with who, when and why."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from checks import cli
from checks.course.assignment import CourseError
from checks.policy.config import load_course
from checks.policy.extensions import grant, history, in_force
from checks.policy.grace import Need, allocate, record_lateness, request_grace, spent

ZURICH = ZoneInfo("Europe/Zurich")
NOW = datetime(2030, 7, 1, 12, tzinfo=timezone.utc)

COURSE_TOML = """
roster = "roster.csv"
[policy]
time_zone = "Europe/Zurich"
show_hidden = "after_due"
[policy.late]
kind = "per_day"
percent = 10
cap = 50
[grace]
days = 2
"""
ROSTER = "student_id,name,email,submission\ns001,Ada Lovelace,ada@example.edu,ada\ns002,Ben Bitdiddle,ben@example.edu,ben\n"


@pytest.fixture
def course(make_course):
    def make(a1_policy: str = 'due = 2030-06-30T23:59:00\n', course_toml: str = COURSE_TOML, **files: str):
        return make_course({"course.toml": course_toml, "roster.csv": ROSTER,
                            "autograder/a1/assignment.toml": 'files = ["x.py"]\n[policy]\n' + a1_policy,
                            "autograder/a2/assignment.toml": 'files = ["x.py"]\n[policy]\ndue = 2030-07-14T23:59:00\n',
                            **files})
    return make


def test_a_course_policy_is_read_with_its_defaults_and_each_assignments_own(course):
    loaded = load_course(course('release = 2030-06-01T09:00:00\ndue = 2030-06-30T23:59:00\n[policy.late]\ncap = 30\n'))
    a1 = loaded.policy("a1")
    assert a1.due == datetime(2030, 6, 30, 23, 59, tzinfo=ZURICH) and a1.release.hour == 9
    assert (a1.late.kind, a1.late.percent, a1.late.cap, a1.show_hidden) == ("per_day", 10, 30, "after_due")
    assert loaded.policy("a2").late.cap == 50  # the course's default
    assert loaded.grace.days == 2 and set(loaded.roster.students) == {"s001", "s002"}


@pytest.mark.parametrize("a1_policy, says", [
    ("due = 2030-06-30T23:59:00\ntime_zone = \"Mars/Olympus\"\n", "[policy] time_zone = 'Mars/Olympus' is not a time zone"),
    ("due = 2030-03-31T02:30:00\n", "[policy] due = 2030-03-31T02:30:00 does not exist in Europe/Zurich"),
    ("due = 2030-10-27T02:30:00\n", "[policy] due = 2030-10-27T02:30:00 happens twice in Europe/Zurich"),
    ("release = 2030-07-01T00:00:00\ndue = 2030-06-30T23:59:00\n", "[policy] due (2030-06-30T23:59:00+02:00) is before "
                                                                   "release"),
    ("due = 2030-06-30T23:59:00\n[policy.late]\nclose = 2030-06-29T00:00:00\n", "[policy.late] close"),
    ("due = 2030-06-30T23:59:00\n[policy.late]\npercent = 150\n",
     "`percent` in [policy.late] must be a percentage from 0 to 100, not the number 150"),
    ("due = 2030-06-30T23:59:00\n[policy.late]\ncap = 101\n", "`cap` in [policy.late] must be a percentage"),
    ("dues = 2030-06-30T23:59:00\n", "unknown key `dues` in [policy] (did you mean `due`?)"),
    ("due = 2030-06-30\n", "`due` in [policy] must be a date and time"),
    ("due = \"next friday\"\n", "[policy] due = 'next friday' is not a date and time"),
    ("counts = \"first\"\n", "`counts` in [policy] must be \"last\" or \"best\" or \"last_before_due\""),
    # the old name said the opposite of what it did: refused, naming the new key (issue 44)
    ("hidden_before_due = false\n", "`hidden_before_due` in [policy] is no longer read: write show_hidden = "
                                    "\"after_due\""),
    ("hidden_before_due = true\n", "\"at_once\" (shown as soon as graded)"),
    ("show_hidden = true\n", "`show_hidden` in [policy] must be \"at_once\" or \"after_due\""),
])
def test_bad_policy_is_refused_naming_the_file_and_key(course, a1_policy, says):
    root = course(a1_policy)
    with pytest.raises(CourseError) as raised:
        load_course(root)
    assert str(root / "autograder/a1/assignment.toml") in str(raised.value) and says in str(raised.value)


def test_a_date_without_a_time_zone_is_refused_where_the_course_names_none(course):
    root = course(course_toml='roster = "roster.csv"\n')
    with pytest.raises(CourseError, match=r"assignment.toml: \[policy\] due = 2030-06-30T23:59:00 has no time zone"):
        load_course(root)
    root = course('due = 2030-06-30T23:59:00+02:00\n', course_toml='roster = "roster.csv"\n',
                  **{"autograder/a2/assignment.toml": 'files = ["x.py"]\n'})
    assert load_course(root).policy("a1").due.utcoffset().total_seconds() == 7200  # with its offset: fine


@pytest.mark.parametrize("course_toml, says", [
    ("[polcy]\n", "unknown key `polcy` (did you mean `policy`?)"),
    ("[policy.late]\npercent = -1\n", "`percent` in [policy.late] must be a percentage"),
    ("[grace]\ndays = 1.5\n", "`days` in [grace] must be a whole number of days"),
    ("[policy]\nhidden_before_due = true\n", "`hidden_before_due` in [policy] is no longer read: write show_hidden"),
    ("[grace]\nmode = \"sometimes\"\n", "`mode` in [grace] must be \"auto\" or \"request\""),
    ('roster = "missing.csv"\n', "cannot read the roster"),
])
def test_bad_course_toml_is_refused_naming_it(course, course_toml, says):
    root = course('due = 2030-06-30T23:59:00+02:00\n', course_toml=course_toml,
                  **{"autograder/a2/assignment.toml": 'files = ["x.py"]\n'})
    with pytest.raises(CourseError, match="course.toml|missing.csv") as raised:
        load_course(root)
    assert says in str(raised.value)


def test_an_extension_is_recorded_with_who_when_and_why_and_the_latest_is_in_force(course):
    root = course()
    loaded = load_course(root)
    grant(loaded, "a1", "s002", "2030-07-03T23:59", reason="illness (note seen)", by="tina", now=NOW)
    assert in_force(loaded, "a1") == {"s002": datetime(2030, 7, 3, 23, 59, tzinfo=ZURICH)}
    grant(loaded, "a1", "s002", None, reason="granted by mistake", by="ian", now=NOW)
    assert in_force(loaded, "a1") == {}
    lines = [json.loads(line) for line in (root / "records/extensions.jsonl").read_text().splitlines()]
    assert [(line["by"], line["reason"], line["until"]) for line in lines] == [
        ("tina", "illness (note seen)", "2030-07-03T23:59:00+02:00"), ("ian", "granted by mistake", None)]
    assert all(line["at"] == "2030-07-01T12:00:00+00:00" for line in lines)
    assert (root / "records/extensions.jsonl").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("call, says", [
    (dict(assignment="a1", student="s999", until="2030-07-03T23:59"), "'s999' is not on the roster"),
    (dict(assignment="a9", student="s001", until="2030-07-03T23:59"), "no assignment 'a9'"),
    (dict(assignment="a1", student="s001", until="2030-06-29T23:59"), "is not after the due date"),
    (dict(assignment="a1", student="s001", until="2030-07-03T23:59", reason=" "), "say why"),
])
def test_a_bad_extension_is_refused_and_nothing_recorded(course, call, says):
    root = course()
    with pytest.raises(CourseError, match=says):
        grant(load_course(root), **{"reason": "illness", **call}, by="tina", now=NOW)
    assert not (root / "records/extensions.jsonl").exists()


def test_an_extension_for_a_student_not_on_the_roster_is_refused_when_the_course_is_loaded(course):
    root = course(**{"records/extensions.jsonl": json.dumps(
        {"assignment": "a1", "student": "s001", "until": "2030-07-03T23:59:00+02:00", "reason": "x", "by": "tina",
         "at": "2030-07-01T12:00:00+00:00"}) + "\n" + json.dumps(
        {"assignment": "a1", "student": "s404", "until": "2030-07-03T23:59:00", "reason": "x", "by": "tina",
         "at": "2030-07-01T12:00:00+00:00"}) + "\n"})
    with pytest.raises(CourseError, match=r"extensions.jsonl, line 2: `student` 's404' is not on the roster"):
        load_course(root)


def test_grace_days_are_spent_in_due_order_and_only_as_needed():
    july, june = datetime(2030, 7, 14, tzinfo=ZURICH), datetime(2030, 6, 30, tzinfo=ZURICH)
    needs = [Need("a2", july, 2), Need("a1", june, 1), Need("a0", None, 5)]
    assert allocate(2, "auto", needs) == {"a1": 1, "a2": 1, "a0": 0}
    assert allocate(5, "auto", needs) == {"a1": 1, "a2": 2, "a0": 2}
    assert allocate(3, "request", [Need("a1", june, 2, requested=1), Need("a2", july, 2)]) == {"a1": 1, "a2": 0}


def test_grace_days_follow_the_recorded_lateness_whatever_the_grading_order(course):
    loaded = load_course(course())
    record_lateness(loaded, "a2", {"s001": 2}, now=NOW)  # a2 (due later) graded first
    assert spent(loaded, "s001") == {"a2": 2}
    record_lateness(loaded, "a1", {"s001": 1, "s002": 0}, now=NOW)
    assert spent(loaded, "s001") == {"a1": 1, "a2": 1}  # a1 is due first: it takes its day
    assert spent(loaded, "s001", this=("a1", 0)) == {"a1": 0, "a2": 2}


def test_a_grace_request_is_recorded_only_once_confirmed_and_shows_what_is_left(course):
    root = course(course_toml=COURSE_TOML.replace("days = 2", "days = 2\nmode = \"request\""))
    loaded = load_course(root)
    shown = []
    assert not request_grace(loaded, "a1", "s001", 1, by="s001", now=NOW, confirm=lambda left: shown.append(left))
    assert not (root / "records/grace-requests.jsonl").exists()
    assert request_grace(loaded, "a1", "s001", 1, by="s001", now=NOW, confirm=lambda left: shown.append(left) or True)
    assert shown == [2, 2]
    record_lateness(loaded, "a1", {"s001": 3}, now=NOW)
    assert spent(loaded, "s001") == {"a1": 1}  # asked for 1: 1, though 3 days late
    with pytest.raises(CourseError, match="has 1 grace day left, not 2"):
        request_grace(loaded, "a2", "s001", 2, by="s001", now=NOW, confirm=lambda left: True)


def test_the_cli_grants_lists_and_refuses_extensions(course, capsys):
    root = course()
    base = ["--course", str(root), "extension"]
    assert cli.main([*base, "grant", "a1", "s002", "--until", "2030-07-03T23:59", "--reason", "flu", "--by", "tina"]) == 0
    assert "extended a1 for s002 to 2030-07-03T23:59:00+02:00 (recorded by tina)" in capsys.readouterr().out
    assert cli.main([*base, "grant", "a1", "s404", "--until", "2030-07-03T23:59", "--reason", "flu"]) == 2
    assert "not on the roster" in capsys.readouterr().out
    assert cli.main([*base, "list", "a1"]) == 0
    listed = capsys.readouterr().out
    assert "s002" in listed and "tina" in listed and "flu" in listed and "s404" not in listed
    assert len(history(load_course(root))) == 1
    assert cli.main(["--course", str(root), "policy"]) == 0
    assert "grace days: 2 per student (auto); 2 students" in capsys.readouterr().out


def test_the_learners_synced_from_the_lms_are_read_with_the_course_roster_which_is_never_written(tmp_path):
    """The course's roster.csv is input only: a roster sync keeps the LMS's new learners in the
    data folder (course.toml's `data`), and the course's roster reads the two, its own rows first."""
    from checks.policy.config import load_course

    (tmp_path / "course.toml").write_text('roster = "roster.csv"\ndata = "state"\n')
    (tmp_path / "roster.csv").write_text("student_id,name,email,lms_id\ns1,Ann,a@x.edu,u-ann\n")
    assert list(load_course(tmp_path).roster.students) == ["s1"]
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "lms-roster.csv").write_text(
        "student_id,name,email,lms_id\nu-ann,Ann Again,a@x.edu,u-ann\nu-bob,Bob,b@x.edu,u-bob\n")
    course = load_course(tmp_path)
    assert course.synced_roster == (tmp_path / "state" / "lms-roster.csv").resolve()
    assert list(course.roster.students) == ["s1", "u-bob"] and course.roster.students["s1"].name == "Ann"
    assert course.roster.path == tmp_path / "roster.csv"
