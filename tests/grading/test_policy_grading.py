"""The course policy on the batch path: `checks grade --submitted-at` charges late penalties after
extensions and grace days, keeps the raw score, the penalty and manual adjustments apart in the
gradebook (schema 3, upgraded from 2), and gradebook.csv, results.json, feedback.md and report.html
carry the final score with every reason. A bad policy changes nothing already graded."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import sqlite3
from datetime import datetime, timezone

from checks import cli
from checks.reports.gradebook import DB_FILE, SCHEMA_VERSION, Graded, Gradebook
from checks.suites.scoring import QuestionResult, SubmissionResult

ADD = "def add(a, b):\n    return a + b\n"
COURSE = {
    "course.toml": """
        roster = "roster.csv"
        [policy]
        time_zone = "Europe/Zurich"
        [policy.late]
        kind = "per_day"
        percent = 10
        cap = 50
        [grace]
        days = 1
    """,
    "roster.csv": "student_id,name,email,submission\ns1,Ann,ann@example.edu,ann\ns2,Bob,bob@example.edu,bob\n"
                  "s3,Cat,cat@example.edu,cat\n",
    "autograder/toy/assignment.toml": 'files = ["good.py"]\n[policy]\ndue = 2030-03-30T23:59:00\n',
    "assignments/toy/.keep": "",
    "autograder/toy/test_toy.py": """
        from checks.suite import question, expect_equal

        @question("good.add", points=10)
        def test_add(student):
            expect_equal(student.good.add(1, 2), 3)
    """,
    "subs/ann/good.py": ADD, "subs/bob/good.py": ADD, "subs/cat/good.py": ADD,
    # ann on time (the due instant); bob a day late across the DST change (23 h 59 min, not 24 h);
    # cat three days late. Times with offsets, and one wall-clock time in the course's zone.
    "times.csv": "submission,submitted_at\nann,2030-03-30T23:59:00+01:00\nbob,2030-03-31T23:58:00\n"
                 "cat,2030-04-02T21:59:00+00:00\n",
}


def grade(root, *extra: str) -> int:
    return cli.main(["--course", str(root), "grade", "toy", *(str(root / "subs" / name) for name in ("ann", "bob", "cat")),
                     "--out", str(root / "grades"), *extra])


def rows(root) -> dict[str, dict[str, str]]:
    return {row["submission"]: row for row in csv.DictReader(io.StringIO((root / "grades/gradebook.csv").read_text()))}


def test_late_penalties_grace_days_and_extensions_reach_every_output(make_course, capsys):
    root = make_course(COURSE)
    assert grade(root, "--submitted-at", str(root / "times.csv")) == 0, capsys.readouterr().out
    printed = capsys.readouterr().out
    assert "late penalty: cat" in printed
    table = rows(root)
    assert list(table["ann"])[-7:] == ["submitted_at", "raw", "penalty", "adjustment", "total", "status", "reason"]
    summary = {name: (row["raw"], row["penalty"], row["total"]) for name, row in table.items()}
    assert summary == {"Points Possible": ("10.0", "", "10.0"), "ann": ("10.0", "0.0", "10.0"),
                       "bob": ("10.0", "0.0", "10.0"), "cat": ("10.0", "2.0", "8.0")}
    assert table["bob"]["reason"] == "late policy, no points: 1 grace day spent"
    assert table["cat"]["reason"] == ("late policy, -2 points: 1 grace day spent; submitted 2 d late: 2 days at "
                                      "10 % each, 20 %")
    assert table["cat"]["submitted_at"] == "2030-04-02T21:59:00+00:00"
    results = json.loads((root / "grades/cat/results.json").read_text())
    assert results["score"] == 8.0 and results["extra_data"]["raw_score"] == 10.0
    assert [a["points"] for a in results["extra_data"]["adjustments"]] == [-2.0]
    feedback = (root / "grades/cat/feedback.md").read_text()
    assert "**Score: 8 / 10**" in feedback and "The checks gave 10; then:" in feedback and "late policy, -2 points" in feedback
    page = (root / "grades/report.html").read_text()
    assert 'id="adjustments"' in page and "20 %" in page
    lateness = [json.loads(line) for line in (root / "records/lateness.jsonl").read_text().splitlines()]
    assert {(line["student"], line["days_late"]) for line in lateness} == {("s2", 1), ("s3", 3)}

    # an extension for cat, then the same command again: nothing graded again, the penalty recomputed
    assert cli.main(["--course", str(root), "extension", "grant", "toy", "s3", "--until", "2030-04-01T23:59",
                     "--reason", "illness", "--by", "tina"]) == 0
    assert grade(root, "--submitted-at", str(root / "times.csv")) == 0
    assert "0 graded now, 3 already graded" in capsys.readouterr().out
    cat = rows(root)["cat"]
    assert (cat["penalty"], cat["total"]) == ("0.0", "10.0")  # 1 day past the extension: the grace day covers it
    assert cat["reason"] == "late policy, no points: extension to 2030-04-01T23:59+02:00; 1 grace day spent"
    # and again without --submitted-at: the recorded times stand, and the folder is unchanged
    before = {p.name: p.read_bytes() for p in (root / "grades").rglob("*") if p.is_file() and p.suffix != ".lock"}
    assert grade(root) == 0
    after = {p.name: p.read_bytes() for p in (root / "grades").rglob("*") if p.is_file() and p.suffix != ".lock"}
    assert {k for k in before if before[k] != after.get(k)} <= {DB_FILE, DB_FILE + "-wal", DB_FILE + "-shm"}


def test_without_a_submission_time_nothing_is_charged_and_the_csv_keeps_its_columns(make_course, capsys):
    root = make_course(COURSE)
    assert grade(root) == 0
    assert "no submission time for 3 submission(s): no late penalty charged" in capsys.readouterr().out
    header = (root / "grades/gradebook.csv").read_text().splitlines()[0]
    assert header == "submission,student_id,good.add,total,status,reason"
    assert not (root / "records").exists()  # nothing to record: the course folder is untouched


def test_file_times_are_used_only_when_asked(make_course, capsys):
    root = make_course(COURSE)
    for name, when in (("ann", datetime(2030, 3, 30, 12, tzinfo=timezone.utc)),
                       ("bob", datetime(2030, 4, 10, 12, tzinfo=timezone.utc))):
        os.utime(root / "subs" / name / "good.py", (when.timestamp(), when.timestamp()))
    assert grade(root, "--submitted-at", "mtime") == 0
    capsys.readouterr()
    table = rows(root)
    assert (table["ann"]["total"], table["bob"]["total"]) == ("10.0", "5.0")  # 11 days late: 1 grace, then the cap
    assert table["bob"]["submitted_at"] == "2030-04-10T12:00:00+00:00"


def test_a_bad_policy_stops_the_run_before_anything_graded_changes(make_course, capsys):
    root = make_course(COURSE)
    assert grade(root, "--submitted-at", str(root / "times.csv")) == 0
    capsys.readouterr()
    before = {p.relative_to(root): p.read_bytes() for p in (root / "grades").rglob("*") if p.is_file()}
    (root / "autograder/toy/assignment.toml").write_text('files = ["good.py"]\n[policy]\ndue = 2030-03-30T23:59:00\n'
                                                         '[policy.late]\npercent = 150\n')
    assert grade(root, "--submitted-at", str(root / "times.csv"), "--regrade") == 2
    said = " ".join(capsys.readouterr().out.split())
    assert "assignment.toml" in said and "`percent` in [policy.late] must be a percentage from 0 to 100" in said
    after = {p.relative_to(root): p.read_bytes() for p in (root / "grades").rglob("*") if p.is_file()}
    assert after == before


def test_a_schema_2_gradebook_is_upgraded_and_keeps_its_grades(tmp_path):
    path = tmp_path / DB_FILE
    book = Gradebook(path, "toy")
    book.record(Graded(SubmissionResult("bob", "toy", [QuestionResult("calc.add", 3.0, 4.0, "x", 3, 4)]), "0.1.0",
                       "2030-01-01T10:00:00Z", fingerprint="f1"))
    with contextlib.closing(sqlite3.connect(path)) as db:  # back to what schema 2 held
        db.execute("DROP TABLE adjustments")
        db.execute("ALTER TABLE submissions DROP COLUMN submitted_at")
        db.execute("PRAGMA user_version = 2")
        db.commit()
    book = Gradebook(path, "toy")
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    (old,) = book.load()
    assert (old.result.score, old.result.final_score, old.result.submitted_at, old.result.adjustments) == (3.0, 3.0, "", [])
    from checks.suites.scoring import MANUAL, Adjustment

    book.set_policy({"bob": "2030-01-01T09:00:00+00:00"},
                    {"bob": [Adjustment(MANUAL, 0.5, "regrade of calc.add: accepted", "tina", "2030-01-02T00:00:00+00:00")]})
    (new,) = book.load()
    assert (new.result.score, new.result.manual, new.result.final_score) == (3.0, 0.5, 3.5)
    # a regrade of the submission keeps its time and adjustments until the policy is applied again
    book.record(Graded(SubmissionResult("bob", "toy", [QuestionResult("calc.add", 4.0, 4.0, "ok", 4, 4)]), "0.1.0",
                       "2030-01-03T10:00:00Z", fingerprint="f2"))
    (regraded,) = book.load()
    assert (regraded.result.submitted_at, regraded.result.final_score) == ("2030-01-01T09:00:00+00:00", 4.5)
