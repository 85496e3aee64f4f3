"""A gradebook written by a newer checks (a higher schema version) is refused, not rewritten:
`checks grade` into its folder stops with one line saying why, and changes nothing there. So is
any gradebook.sqlite, gradebook.csv or lock checks did not write: a link, another database, a table
with columns or triggers of someone else's, a CSV with a column a TA added."""

from __future__ import annotations

import contextlib
import os
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


# ---------------------------------------------------------------- only what it wrote

TOY = {"autograder/toy/assignment.toml": 'files = ["good.py"]\n', "autograder/toy/test_toy.py": "",
       "subs/alice/good.py": "def add(a, b):\n    return a + b\n"}


def folder_state(out) -> dict[str, bytes | str]:
    """Every file of the folder (a link as where it points), but the run's lock."""
    return {path.name: (f"-> {os.readlink(path)}" if path.is_symlink() else path.read_bytes())
            for path in out.iterdir() if path.name != "gradebook.lock"}


def foreign_database(out) -> None:
    with contextlib.closing(sqlite3.connect(out / DB_FILE)) as db:
        db.execute("CREATE TABLE grades (student TEXT, mark REAL)")
        db.execute("INSERT INTO grades VALUES ('alice', 97)")
        db.commit()


def extra_column(out) -> None:
    newer_gradebook(out)
    with contextlib.closing(sqlite3.connect(out / DB_FILE)) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("ALTER TABLE submissions ADD COLUMN late_days INTEGER")
        db.commit()


def a_trigger(out) -> None:
    newer_gradebook(out)
    with contextlib.closing(sqlite3.connect(out / DB_FILE)) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("CREATE TRIGGER keep AFTER DELETE ON questions BEGIN SELECT 1; END")
        db.commit()


def linked_database(out) -> None:
    target = out.parent / "elsewhere.sqlite"
    target.write_bytes(b"")
    (out / DB_FILE).symlink_to(target)


def linked_lock(out) -> None:
    target = out.parent / "precious.txt"
    target.write_text("keep me\n")
    (out / "gradebook.lock").symlink_to(target)


def edited_csv(out) -> None:  # a TA added a column to the CSV checks wrote
    newer_gradebook(out)
    with contextlib.closing(sqlite3.connect(out / DB_FILE)) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.commit()
    (out / "gradebook.csv").write_text("submission,good.add,total,status,reason,late days\nalice,90.0,90.0,graded,,2\n")


def csv_without_gradebook(out) -> None:
    (out / "gradebook.csv").write_text("student,grade\nalice,A\n")


def linked_csv(out) -> None:
    target = out.parent / "class-list.csv"
    target.write_text("submission,total,status,reason\n")
    (out / "gradebook.csv").symlink_to(target)


@pytest.mark.parametrize("plant, says", [
    (foreign_database, "gradebook.sqlite is not a gradebook written by checks"),
    (extra_column, "submissions.late_days"),
    (a_trigger, "trigger keep"),
    (linked_database, "gradebook.sqlite is a symbolic link"),
    (linked_lock, "gradebook.lock is a symbolic link"),
    (edited_csv, "gradebook.csv was not written by checks: it has columns checks never wrote here (late days)"),
    (csv_without_gradebook, "gradebook.csv was not written by checks"),
    (linked_csv, "gradebook.csv is a symbolic link"),
])
def test_checks_grade_stops_at_a_gradebook_it_did_not_write_and_overwrites_nothing(plant, says, make_course,
                                                                                     capsys):
    root = make_course(TOY)
    out = root / "grades"
    out.mkdir()
    plant(out)
    before, outside = folder_state(out), {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    assert cli.main(["--course", str(root), "grade", "toy", str(root / "subs/alice"), "--out", str(out)]) == 2
    printed = " ".join(capsys.readouterr().out.split())
    assert "error: " in printed and says in printed, printed
    assert folder_state(out) == before
    assert {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()} == outside  # no link was followed


def test_a_gradebook_and_csv_it_wrote_are_graded_into_again(make_course, capsys):
    root = make_course({**TOY, "assignments/toy/.keep": "", "autograder/toy/test_toy.py": """
        from checks.suite import question, expect_equal

        @question("good.add", points=1)
        def test_add(student):
            expect_equal(student.good.add(1, 2), 3)
    """})
    out = root / "grades"
    argv = ["--course", str(root), "grade", "toy", str(root / "subs/alice"), "--out", str(out)]
    assert cli.main(argv) == 0 and cli.main([*argv, "--regrade"]) == 0, capsys.readouterr().out
