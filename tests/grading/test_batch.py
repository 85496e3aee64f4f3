"""Batch grading into a folder, with a stand-in grader: what counts as graded, what a re-run does,
how the gradebook and the files agree, and what the TA sees. (Real grading: test_batch_real.py.)"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sqlite3
import time
import zipfile
from contextlib import closing
from pathlib import Path

import pytest
from rich.console import Console

from checks import cli
from checks.config.errors import UsageError
from checks.grading import batch
from checks.grading.batch import (CHANGED, NEW, REGRADE, RETRY, BatchListener, expand_submission_paths, fingerprint,
                          grade_to_folder, plan_batch)
from checks.course.assignment import Assignment
from checks.course.submissions import SubmissionError
from checks.reports.gradebook import DB_FILE, LOCK_FILE, FolderInUse, Graded, Gradebook, GradebookError, lock_folder
from checks.progress import GradeProgress, print_summary
from checks.suites.scoring import QuestionResult, SubmissionResult

QUESTIONS = {"q.one": 4.0, "q.two": 6.0}


def fake_grader(assignment, sources, *, jobs=None, **settings):  # isolation, device: unused
    """Reads answers.json {qid: score} from each submission; {"error": "..."} is a grader failure,
    {"interrupt": true} is a Ctrl-C while grading it."""
    for source in sources:
        submission = source.load()
        answers = json.loads(submission.files.get("answers.json", b"{}"))
        if answers.get("interrupt"):
            raise KeyboardInterrupt
        if "error" in answers:
            yield SubmissionResult(source.name, assignment.name, error=answers["error"], sandbox="fake")
            continue
        questions = [QuestionResult(qid, float(answers.get(qid, 0)), points,
                                    "All 3 checks passed." if answers.get(qid, 0) >= points
                                    else "2 of 3 checks failed.\n- f(1) returned 2; expected 1.", 1, 3)
                     for qid, points in QUESTIONS.items()]
        yield SubmissionResult(source.name, assignment.name, questions, devices=["cpu"], sandbox="fake",
                               seconds=0.5 + len(source.name) / 10)


@pytest.fixture
def assignment(tmp_path):
    return Assignment("fake", tmp_path, title="A fake assignment")


def submit(folder: Path, name: str, **answers) -> Path:
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    (path / "answers.json").write_text(json.dumps(answers))
    (path / "work.py").write_text(f"# {name}\n")
    return path


@pytest.fixture
def class_folder(tmp_path):
    subs = tmp_path / "subs"
    submit(subs, "alice", **{"q.one": 4, "q.two": 6})
    submit(subs, "bob", **{"q.one": 4, "q.two": 3})
    submit(subs, "carol", **{"q.one": 0, "q.two": 0})
    return subs


def grade(assignment, paths, out, **kwargs):
    return grade_to_folder(assignment, expand_submission_paths(paths), out, grader=fake_grader, **kwargs)


def read_csv(out: Path) -> list[dict]:
    """The submissions' rows; the line under the header holds each question's maximum."""
    rows = list(csv.DictReader((out / "gradebook.csv").open()))
    assert rows[0]["submission"] == "Points Possible" and rows[0]["status"] == "", rows[0]
    return rows[1:]


# ---------------------------------------------------------------- inputs


def test_a_folder_of_submissions_stands_for_each_of_them(tmp_path):
    subs = tmp_path / "subs"
    submit(subs, "alice")
    with zipfile.ZipFile(subs / "bob.zip", "w") as archive:
        archive.writestr("bob/work.py", "x = 1")
    (subs / "notes.txt").write_text("not a submission")
    single = submit(tmp_path, "carol")
    assert [f.path for f in expand_submission_paths([subs])] == [subs / "alice", subs / "bob.zip"]
    assert [f.path for f in expand_submission_paths([subs / "alice"])] == [subs / "alice"]  # .py files: one submission
    # given beside another path, a folder of submissions is one student's (what a student's folder
    # holds cannot name others: test_class_folders.py), and a line says it looked like several
    notes: list[str] = []
    assert [f.path for f in expand_submission_paths([subs, single], skipped=notes)] == [subs, single]
    assert len(notes) == 1 and "looks like several" in notes[0] and "give it alone" in notes[0]


def test_names_that_clash_are_graded_apart_with_a_warning_and_a_path_given_twice_is_refused(tmp_path, assignment):
    a, b = submit(tmp_path / "x", "alice", **{"q.one": 4}), submit(tmp_path / "y", "alice", **{"q.one": 1})
    report = submit(tmp_path, "report.html", **{"q.two": 6})
    summary = grade(assignment, [a, b, report], tmp_path / "out")
    names = sorted(r.name for r in summary.results)
    assert names[0].startswith("_report.html~") and names[1] == "alice" and names[2].startswith("alice~")
    scores = {r.name: r.score for r in summary.results}
    assert scores["alice"] == 4 and scores[names[2]] == 1 and scores[names[0]] == 6  # each keeps its own grade
    renamed = {r.name: r.warnings[0] for r in summary.results if r.name != "alice"}
    assert all(w.startswith("submitted as ") and "graded as" in w for w in renamed.values())
    assert (tmp_path / "out" / "report.html").is_file() and len(read_csv(tmp_path / "out")) == 3
    with pytest.raises(UsageError, match="given more than once"):
        grade(assignment, [a, a], tmp_path / "out2")
    assert not (tmp_path / "out2").exists()  # refused before anything was written


def test_fingerprints_follow_content_not_place_or_caches(tmp_path):
    a = submit(tmp_path / "x", "alice", **{"q.one": 1})
    b = submit(tmp_path / "y", "alice", **{"q.one": 1})
    assert fingerprint(a) == fingerprint(b) != ""
    (b / "__pycache__").mkdir()
    (b / "__pycache__" / "work.cpython-311.pyc").write_bytes(b"\0")
    os.mkfifo(b / "pipe")  # never opened: reading a fifo would block
    assert fingerprint(a) == fingerprint(b)
    (b / "work.py").write_text("changed")
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(tmp_path / "missing") == ""


# ---------------------------------------------------------------- the gradebook


def test_the_gradebook_round_trips_a_result_and_replaces_it_in_one_piece(tmp_path):
    book = Gradebook(tmp_path / DB_FILE, "fake")
    result = SubmissionResult("alice", "fake", [QuestionResult("q.one", 2.5, 4.0, "1 of 2 failed.\n- x", 1, 2),
                                                QuestionResult("quiz.k", 4.0, 4.0, "ok", 1, 1)],
                              devices=["cpu", "cuda"], sandbox="fake sandbox", sandbox_uid=1_000_123, seconds=1.25,
                              warnings=["a warning"])
    book.record(Graded(result, "9.9", "2030-01-01T00:00:00Z", "/subs/alice", "abc", None))
    (loaded,) = book.load()
    assert loaded.result == result and loaded.grader_version == "9.9" and loaded.fingerprint == "abc"
    failed = SubmissionResult("alice", "fake", error="the grading process was killed by signal 9")
    book.record(Graded(failed, "9.9", "2030-01-02T00:00:00Z", "/subs/alice", "abc"))
    (loaded,) = book.load()
    assert loaded.result == failed and not loaded.ok and book.index()["alice"].ok is False
    with closing(sqlite3.connect(tmp_path / DB_FILE)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT count(*) FROM questions").fetchone() == (0,)  # the old questions went with it


def test_a_gradebook_of_another_assignment_or_a_broken_one_is_refused(tmp_path):
    Gradebook(tmp_path / DB_FILE, "fake")
    with pytest.raises(GradebookError, match="holds the grades of fake, not other"):
        Gradebook(tmp_path / DB_FILE, "other")
    (tmp_path / "broken.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(GradebookError, match="move it aside"):
        Gradebook(tmp_path / "broken.sqlite", "fake")


# ---------------------------------------------------------------- grading into a folder


def test_a_batch_writes_results_feedback_gradebook_sqlite_and_report(tmp_path, assignment, class_folder):
    out = tmp_path / "out"
    summary = grade(assignment, [class_folder], out)
    assert sorted(r.name for r in summary.graded) == ["alice", "bob", "carol"] and not summary.failed
    rows = read_csv(out)
    assert [(r["submission"], r["q.one"], r["q.two"], r["total"], r["status"], r["reason"]) for r in rows] == [
        ("alice", "4.0", "6.0", "10.0", "graded", ""), ("bob", "4.0", "3.0", "7.0", "graded", ""),
        ("carol", "0.0", "0.0", "0.0", "graded", "")]
    results = json.loads((out / "bob/results.json").read_text())
    assert results["score"] == 7 and [t["name"] for t in results["tests"]] == ["q.one", "q.two"]
    assert results["extra_data"]["graded_at"] and results["extra_data"]["grader_version"]
    assert "feedback for bob" in (out / "bob/feedback.md").read_text()
    assert "<svg" in (out / "report.html").read_text()
    with closing(sqlite3.connect(out / DB_FILE)) as db:
        assert db.execute("SELECT name, score, status, source FROM submissions WHERE name = 'bob'").fetchone() == (
            "bob", 7.0, "graded", str(class_folder / "bob"))
        assert db.execute("SELECT qid, score, max_score, passed FROM questions WHERE submission = 'bob' "
                          "ORDER BY position").fetchall() == [("q.one", 4.0, 4.0, 1), ("q.two", 3.0, 6.0, 0)]
        assert db.execute("SELECT status, submissions, to_grade, graded FROM runs").fetchall() == [("finished", 3, 3, 3)]
    assert oct(os.stat(out / "gradebook.csv").st_mode & 0o777) != oct(0o600)  # shareable, as the umask says


def test_a_rerun_skips_what_is_graded_and_grades_what_changed_failed_or_is_new(tmp_path, assignment, class_folder):
    out = tmp_path / "out"
    submit(class_folder, "dave", error="the grading process was killed by signal 9")
    first = grade(assignment, [class_folder], out)
    assert [r.name for r in first.failed] == ["dave"]
    dave = read_csv(out)[-1]
    assert (dave["status"], dave["reason"], dave["total"], dave["q.one"]) == (
        "not graded", "the grading process was killed by signal 9", "", "")  # no score at all

    submit(class_folder, "bob", **{"q.one": 4, "q.two": 6})  # resubmitted
    submit(class_folder, "dave", **{"q.one": 1})  # the grader's problem is fixed
    submit(class_folder, "erin", **{"q.two": 6})
    plan = plan_batch(expand_submission_paths([class_folder]), Gradebook(out / DB_FILE, "fake").index())
    assert {p.name: p.reason for p in plan} == {"alice": None, "bob": CHANGED, "carol": None, "dave": RETRY,
                                                "erin": NEW}
    second = grade(assignment, [class_folder], out)
    assert sorted(r.name for r in second.graded) == ["bob", "dave", "erin"]
    assert second.skipped == ["alice", "carol"] and not second.failed
    assert {r["submission"]: r["total"] for r in read_csv(out)} == {
        "alice": "10.0", "bob": "10.0", "carol": "0.0", "dave": "1.0", "erin": "6.0"}

    third = grade(assignment, [class_folder], out, regrade=True)
    assert len(third.graded) == 5 and {p.reason for p in plan_batch([class_folder / "alice"], {}, regrade=True)} == {REGRADE}


def test_the_gradebook_keeps_earlier_batches(tmp_path, assignment, class_folder):
    out = tmp_path / "out"
    grade(assignment, [class_folder / "alice", class_folder / "bob"], out)
    summary = grade(assignment, [class_folder / "carol"], out)
    assert [r["submission"] for r in read_csv(out)] == ["alice", "bob", "carol"]
    assert [g.name for g in summary.records] == ["alice", "bob", "carol"] and summary.skipped == []


def test_files_are_rendered_again_from_the_gradebook_when_they_disagree(tmp_path, assignment, class_folder):
    """Killed between the commit and the files, or files edited by hand: the database wins. (A
    gradebook.csv checks did not write is refused instead: test_gradebook_versions.py.)"""
    out = tmp_path / "out"
    grade(assignment, [class_folder], out)
    expected = {path: path.read_text() for path in out.rglob("*") if path.is_file() and path.suffix in (".json", ".md", ".csv", ".html")}
    (out / "alice/results.json").unlink()  # committed, then killed before its files were written
    (out / "bob/results.json").write_text(json.dumps({"score": 100}))  # a stale or edited file
    (out / "carol/feedback.md").unlink()
    (out / "gradebook.csv").unlink()
    (out / "carol/.results.json.x1y2.tmp").write_text('{"sco')  # kill -9 inside write_atomically
    summary = grade(assignment, [class_folder], out)
    assert summary.graded == [] and len(summary.skipped) == 3
    assert {path: path.read_text() for path in expected} == expected
    assert not list(out.rglob("*.tmp"))


def test_a_results_json_without_its_gradebook_row_does_not_count_as_graded(tmp_path, assignment, class_folder):
    out = tmp_path / "out"
    grade(assignment, [class_folder / "alice"], out)
    (out / "bob").mkdir()
    (out / "bob/results.json").write_text(json.dumps({"score": 100, "tests": []}))  # never committed
    summary = grade(assignment, [class_folder], out)
    assert sorted(r.name for r in summary.graded) == ["bob", "carol"]
    assert json.loads((out / "bob/results.json").read_text())["score"] == 7


def test_an_interrupted_batch_keeps_what_is_saved_and_the_rerun_finishes_it(tmp_path, assignment, class_folder):
    out = tmp_path / "out"
    interrupted = submit(class_folder, "zed", interrupt=True)  # graded last: Ctrl-C while grading it
    with pytest.raises(KeyboardInterrupt):
        grade(assignment, [class_folder], out)
    assert [r["submission"] for r in read_csv(out)] == ["alice", "bob", "carol"]  # published on the way out
    with closing(sqlite3.connect(out / DB_FILE)) as db:
        assert db.execute("SELECT status, graded FROM runs").fetchall() == [("interrupted", 3)]
    submit(class_folder, "zed", **{"q.one": 4})
    summary = grade(assignment, [class_folder], out)
    assert [r.name for r in summary.graded] == ["zed"] and interrupted.name == "zed"
    assert [r["submission"] for r in read_csv(out)] == ["alice", "bob", "carol", "zed"]


def test_reports_that_cannot_be_written_on_the_way_out_of_an_interruption_are_said(tmp_path, assignment,
                                                                                     class_folder, monkeypatch):
    """Ctrl-C stays what the caller hears, and the failure to publish is told beside it, not swallowed."""
    submit(class_folder, "zed", interrupt=True)
    told = []

    class Listening(BatchListener):
        def problem(self, message):
            told.append(message)

    def unpublishable(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(batch, "publish", unpublishable)
    with pytest.raises(KeyboardInterrupt):
        grade(assignment, [class_folder], tmp_path / "out", listener=Listening())
    assert len(told) == 1 and "No space left on device" in told[0] and "the same command finishes" in told[0]


# ---------------------------------------------------------------- what the TA sees


def graded_by(assignment, class_folder, out):
    submit(class_folder, "dave", error="Traceback (most recent call last):\n  File x\nOSError: [Errno 28] No space left")
    return grade(assignment, [class_folder], out)


def test_plain_progress_lines_with_an_eta_when_not_on_a_terminal(tmp_path, assignment, class_folder):
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, force_terminal=False)
    grade(assignment, [class_folder / "alice"], tmp_path / "out")
    grade(assignment, [class_folder], tmp_path / "out", listener=GradeProgress(console))
    text = buffer.getvalue()
    assert "1 of 3 already graded, skipped" in text
    assert "[1/2] bob: 7/10" in text and ", eta 0:0" in text and "[2/2] carol: 0/10" in text
    assert "\x1b[" not in text  # no escape codes in a log file


def test_a_progress_bar_with_an_eta_on_a_terminal(tmp_path, assignment, class_folder):
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, force_terminal=True, color_system="standard")
    grade(assignment, [class_folder], tmp_path / "out", listener=GradeProgress(console))
    text = buffer.getvalue()
    assert "━" in text and "eta" in text and "3/3" in text and "[3/3]" in text


def test_the_summary_has_question_stats_the_slowest_and_the_grader_errors_with_reasons(tmp_path, assignment,
                                                                                       class_folder):
    summary = graded_by(assignment, class_folder, tmp_path / "out")
    buffer = io.StringIO()
    print_summary(Console(file=buffer, width=120), summary)
    text = buffer.getvalue()
    assert "pass rate" in text and "q.two" in text and "33%" in text  # q.two: alice only, of 3 graded
    assert "slowest to grade" in text and "carol" in text
    assert "the grader could not grade" in text and "OSError: [Errno 28] No space left" in text
    assert "could not grade dave" in text


def test_student_controlled_names_and_messages_are_not_markup(tmp_path, assignment):
    subs = tmp_path / "subs"
    student = submit(subs, "[bold]x[red]", error="broken [/] tag [link=http://evil]")
    summary = grade(assignment, [student], tmp_path / "out")
    buffer = io.StringIO()
    GradeProgress(Console(file=buffer, width=100)).graded(summary.graded[0], 1, 1)
    print_summary(Console(file=buffer, width=200), summary)  # a MarkupError would raise here
    assert "[bold]x[red]" in buffer.getvalue() and "broken [/] tag" in buffer.getvalue()


def test_the_grade_command_exits_1_only_when_the_grader_failed(tmp_path, monkeypatch, class_folder, capsys):
    monkeypatch.setattr(batch, "grade_sources", fake_grader)
    course = tmp_path / "course"
    (course / "autograder" / "fake").mkdir(parents=True)
    (course / "autograder" / "fake" / "assignment.toml").write_text(
        'title = "Fake"\nfiles = ["work.py", "answers.json"]\n')
    argv = ["--course", str(course), "grade", "fake", str(class_folder), "--out", str(tmp_path / "out")]
    assert cli.main(argv) == 0
    assert "graded 3, skipped 0" in capsys.readouterr().out
    submit(class_folder, "dave", error="the grading process was killed by signal 9")
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    assert "3 of 4 already graded" in out and "could not grade dave: the grading process was killed" in out
    assert out.rstrip().splitlines()[-1].endswith("; 1 could not be graded (the grader failed on it, above: not "
                                                  "scored; the same command grades again)")  # how many: README
    assert cli.main(["--course", str(course), "grade", "fake", str(class_folder / "alice"), str(class_folder / "alice"),
                     "--out", str(tmp_path / "out")]) == 2


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to list open descriptors")
def test_no_descriptor_of_the_gradebook_is_open_while_grading(tmp_path, assignment, class_folder):
    """The grader forks its sandbox while it grades: nothing of the database may be inherited."""
    seen = []

    def watching_grader(assignment, sources, *, jobs=None, **settings):
        for result in fake_grader(assignment, sources, jobs=jobs):
            seen.append([os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
                         if os.path.exists(f"/proc/self/fd/{fd}")])
            yield result

    grade_to_folder(assignment, expand_submission_paths([class_folder]), tmp_path / "out", grader=watching_grader)
    out = str(tmp_path / "out")
    # only the run's lock (DIR/gradebook.lock, not the database); the sandbox's zygote closes it
    assert len(seen) == 3 and not [target for fds in seen for target in fds
                                   if target.startswith(out) and not target.endswith(LOCK_FILE)]


class Recorder(BatchListener):
    def __init__(self):
        self.events = []

    def started(self, plan):
        self.events.append(("started", [(p.name, p.reason) for p in plan]))

    def graded(self, result, done, total):
        self.events.append(("graded", result.name, done, total))

    def stopped(self):
        self.events.append(("stopped",))


def test_a_listener_hears_the_plan_each_result_and_the_end(tmp_path, assignment, class_folder):
    recorder = Recorder()
    grade(assignment, [class_folder / "alice"], tmp_path / "out")
    grade(assignment, [class_folder], tmp_path / "out", listener=recorder)
    assert recorder.events == [("started", [("alice", None), ("bob", NEW), ("carol", NEW)]),
                               ("graded", "bob", 1, 2), ("graded", "carol", 2, 2), ("stopped",)]


# ---------------------------------------------------------------- a TA's typo, refusals, the lock


def fake_course(tmp_path: Path) -> Path:
    course = tmp_path / "course"
    (course / "autograder" / "fake").mkdir(parents=True, exist_ok=True)
    (course / "autograder" / "fake" / "assignment.toml").write_text(
        'title = "Fake"\nfiles = ["work.py", "answers.json"]\n')
    return course


def test_a_path_that_does_not_exist_is_an_error_before_anything_is_graded(tmp_path, monkeypatch, class_folder,
                                                                          capsys):
    monkeypatch.setattr(batch, "grade_sources", fake_grader)
    out = tmp_path / "out"
    typo = tmp_path / "submisions" / "bob"
    argv = ["--course", str(fake_course(tmp_path)), "grade", "fake", str(class_folder / "alice"), str(typo),
            "--out", str(out)]
    assert cli.main(argv) == 2
    text = capsys.readouterr().out
    assert "no such submission" in text and str(typo) in text.replace("\n", "")
    assert not out.exists()  # nothing graded, nothing written: no row, no feedback for "bob"
    with pytest.raises(UsageError, match="no such submission"):
        grade_to_folder(Assignment("fake", tmp_path), [class_folder / "alice", typo], out, grader=fake_grader)
    assert not out.exists()


@pytest.mark.parametrize("jobs", ["0", "-3", "two"])
def test_jobs_must_be_a_positive_whole_number(tmp_path, class_folder, capsys, jobs):
    argv = ["--course", str(fake_course(tmp_path)), "grade", "fake", str(class_folder), "--out", str(tmp_path / "out"),
            "--jobs", jobs]
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == 2 and "--jobs" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_refused_submission_is_visible_as_refused_in_the_csv_the_report_and_the_summary(tmp_path, monkeypatch,
                                                                                          class_folder, capsys):
    monkeypatch.setattr(batch, "grade_sources", fake_grader)
    (class_folder / "mallory.zip").write_bytes(b"not a zip at all")

    def refusing_grader(assignment, sources, *, jobs=None, **settings):  # a refusal as session.py records one
        for source in sources:
            try:
                source.load()
            except SubmissionError as error:
                yield SubmissionResult(source.name, assignment.name, [QuestionResult("q.one", 0.0, 4.0, "x", 0, 1)],
                                       warnings=[f"The submission could not be read: {error}"], refused=str(error))
            else:
                yield from fake_grader(assignment, [source], jobs=jobs)

    monkeypatch.setattr(batch, "grade_sources", refusing_grader)
    out = tmp_path / "out"
    assert cli.main(["--course", str(fake_course(tmp_path)), "grade", "fake", str(class_folder), "--out",
                     str(out)]) == 0  # a refusal is the student's doing: graded, 0
    text = capsys.readouterr().out
    assert "refused (scored 0)" in text and "mallory.zip is not a readable zip file" in text
    assert "1 of them refused" in text
    row = {r["submission"]: r for r in read_csv(out)}["mallory"]
    assert (row["status"], row["total"]) == ("refused", "0.0") and "not a readable zip" in row["reason"]
    report = (out / "report.html").read_text()
    assert re.search(r'<table id="refused">.*mallory.*not a readable zip.*</table>', report, re.S)


def test_a_second_run_into_a_locked_folder_stops_at_once_and_touches_nothing(tmp_path, assignment, class_folder):
    out = tmp_path / "out"
    grade(assignment, [class_folder], out)
    def files():
        return {p.relative_to(out): (p.stat().st_mtime_ns, p.read_bytes()) for p in out.rglob("*") if p.is_file()}

    with lock_folder(out):  # the lock a first run holds
        before = files()
        started = time.monotonic()
        with pytest.raises(FolderInUse, match=f"{re.escape(str(out))} is in use by another `checks grade` run "
                                              f"\\(process {os.getpid()}\\)"):
            grade(assignment, [class_folder], out, regrade=True)
        assert time.monotonic() - started < 5
        assert files() == before
    with closing(sqlite3.connect(out / DB_FILE)) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    assert grade(assignment, [class_folder], out, regrade=True).graded  # released with the first run


def test_a_folder_another_run_holds_is_refused_before_the_grading_header(tmp_path, monkeypatch, class_folder, capsys):
    """The lock is taken before the header is printed: a second run says only why it stopped."""
    monkeypatch.setattr(batch, "grade_sources", fake_grader)
    out = tmp_path / "out"
    with lock_folder(out):  # the lock a first run holds
        code = cli.main(["--course", str(fake_course(tmp_path)), "grade", "fake", str(class_folder), "--out", str(out)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 2 and lines[0].startswith(f"error: {out} is in use by another `checks grade` run"), lines
    assert not any("grading" in line for line in lines)


@pytest.mark.parametrize("out", ["subs/alice/grades", "subs/alice/work.py", "subs/bob.zip", "subs", "subs/grades",
                                 "canvas/grades"])
def test_an_output_folder_in_or_around_the_submissions_is_refused_before_anything_is_written(tmp_path, monkeypatch,
                                                                                         class_folder, capsys, out):
    monkeypatch.setattr(batch, "grade_sources", fake_grader)
    with zipfile.ZipFile(class_folder / "bob.zip", "w") as archive:
        archive.writestr("bob/work.py", "x = 1")
    (tmp_path / "canvas").mkdir()
    (tmp_path / "canvas" / "smithjane_1_2_work.py").write_text("x = 1")
    before = {p: p.read_bytes() if p.is_file() else None for p in tmp_path.rglob("*")}
    code = cli.main(["--course", str(fake_course(tmp_path)), "grade", "fake", str(class_folder), str(tmp_path / "canvas"),
                     "--out", str(tmp_path / out)])
    text = " ".join(capsys.readouterr().out.split())
    assert code == 2 and text.startswith(f"error: --out {tmp_path / out} ") and "nothing was graded" in text, text
    course = tmp_path / "course"
    assert {p: p.read_bytes() if p.is_file() else None for p in tmp_path.rglob("*") if course not in p.parents
            and p != course} == before  # nothing written, not even the folder
    with pytest.raises(UsageError, match="which is being graded"):  # the library refuses it as well
        grade(Assignment("fake", tmp_path), [class_folder], tmp_path / "subs/carol/out")
    assert not (tmp_path / "subs/carol/out").exists()


def test_the_csv_has_a_student_id_and_the_maxima_and_export_csv_writes_it_again_without_grading(
        tmp_path, monkeypatch, class_folder, capsys):
    monkeypatch.setattr(batch, "grade_sources", fake_grader)
    out = tmp_path / "out"
    assert cli.main(["--course", str(fake_course(tmp_path)), "grade", "fake", str(class_folder), "--out",
                     str(out)]) == 0
    written = (out / "gradebook.csv").read_text()
    assert written.splitlines()[:3] == ["submission,student_id,q.one,q.two,total,status,reason",
                                        "Points Possible,,4.0,6.0,10.0,,",
                                        "alice,alice,4.0,6.0,10.0,graded,"]

    def no_grading(*args, **kwargs):
        raise AssertionError("export csv graded something")

    monkeypatch.setattr(batch, "grade_sources", no_grading)
    (out / "gradebook.csv").unlink()
    capsys.readouterr()
    assert cli.main(["export", "csv", str(out)]) == 0
    assert (out / "gradebook.csv").read_text() == written
    assert f"wrote {out / 'gradebook.csv'}: 3 submission(s), 2 question(s)" in " ".join(capsys.readouterr().out.split())
    assert cli.main(["export", "csv", str(out), "--out", str(tmp_path / "for-canvas.csv")]) == 0
    assert (tmp_path / "for-canvas.csv").read_text() == written

    # a CSV an earlier checks wrote (no student_id, no maxima) is its own, rewritten; a TA's edit is never
    (out / "gradebook.csv").write_text("submission,q.one,q.two,total,status,reason\nalice,4.0,6.0,10.0,graded,\n")
    assert cli.main(["export", "csv", str(out)]) == 0 and (out / "gradebook.csv").read_text() == written
    edited = written.replace("reason\n", "reason,late days\n", 1)
    (out / "gradebook.csv").write_text(edited)
    capsys.readouterr()
    assert cli.main(["export", "csv", str(out)]) == 2
    assert "columns checks never wrote here (late days)" in " ".join(capsys.readouterr().out.split())
    assert (out / "gradebook.csv").read_text() == edited
    (tmp_path / "empty").mkdir()
    assert cli.main(["export", "csv", str(tmp_path / "empty")]) == 2
    assert "holds no gradebook.sqlite" in " ".join(capsys.readouterr().out.split())
    assert not list((tmp_path / "empty").iterdir())  # not even a lock file
