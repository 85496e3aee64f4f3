"""A gradebook written by a newer checks (a higher schema version) is refused, not rewritten:
`checks grade` into its folder stops with one line saying why, and changes nothing there."""

from __future__ import annotations

import sqlite3

import pytest

from checks import cli
from checks.reports.gradebook import DB_FILE, SCHEMA_VERSION, Graded, Gradebook, GradebookError
from checks.suites.scoring import QuestionResult, SubmissionResult


def newer_gradebook(out) -> dict[str, bytes]:
    """A real gradebook holding one graded submission, then marked as a newer checks would mark
    it; returns the folder's files, to compare with afterwards."""
    book = Gradebook(out / DB_FILE, "toy")
    result = SubmissionResult("alice", "toy", [QuestionResult("good.add", 90.0, 90.0, "", 3, 3)])
    book.record(Graded(result, "9.9", "2026-11-23T12:00:00Z", source="subs/alice", fingerprint="abc"))
    with sqlite3.connect(out / DB_FILE) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    return {path.name: path.read_bytes() for path in out.iterdir()}


def test_a_newer_gradebook_is_refused_and_left_as_it_was(tmp_path):
    before = newer_gradebook(tmp_path)
    with pytest.raises(GradebookError, match=f"written by a newer version of checks \\(schema {SCHEMA_VERSION + 1}\\)"):
        Gradebook(tmp_path / DB_FILE, "toy")
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_checks_grade_into_a_newer_gradebook_stops_with_one_line(make_course, capsys):
    root = make_course({"autograder/toy/assignment.toml": 'files = ["good.py"]\n',
                        "autograder/toy/test_toy.py": "", "subs/alice/good.py": "def add(a, b):\n    return a + b\n"})
    out = root / "grades"
    out.mkdir()
    before = newer_gradebook(out)
    assert cli.main(["--course", str(root), "grade", "toy", str(root / "subs/alice"), "--out", str(out)]) == 2
    printed = capsys.readouterr().out
    assert "error: " in printed and "newer version of checks" in printed and "upgrade checks" in printed
    # nothing graded, nothing written (but the run's lock on the folder)
    assert {path.name: path.read_bytes() for path in out.iterdir() if path.name != "gradebook.lock"} == before
