"""Staff analytics and regrade differences, from real grade runs of a small course: the class's
common mistakes per question (the suite's diagnoses) with counts and shares, the failures no
diagnosis explains with sample messages, the plots, the files beside report.html, and what a
regrade changed and why (a new submission, a changed suite, nothing at all)."""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3

import pytest

from checks import cli
from checks.reports.analytics import analytics_of_folder, class_analytics, first_failure, mistakes_csv
from checks.reports.gradebook import DB_FILE, Graded, Gradebook, GradebookError
from checks.suites.diagnoses import diagnoses_of, diagnosis_of, mistake_key
from checks.suites.scoring import CaseResult, QuestionResult, SubmissionResult, score_cases

SUITE = """
from checks.suite import question, cases, expect_equal

def diagnose_add(got):
    if got == -1:
        return "subtracted instead of adding."
    return None

@question("calc.add", points=4)
@cases("a, b", [(1, 2), (5, 7)])
def test_add(student, a, b):
    expect_equal(student.calc.add(a, b), a + b, diagnose=lambda got: "subtracted instead of adding."
                 if got == a - b else f"off by one ({got - (a + b)})." if abs(got - (a + b)) == 1 else None)

@question("calc.mul", points=4)
@cases("a, b", [(2, 3), (4, 5)])
def test_mul(student, a, b):
    expect_equal(student.calc.mul(a, b), a * b)
"""

STUDENTS = {
    "ann": "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return a * b\n",  # all right
    "bob": "def add(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * b\n",  # subtracts
    "cat": "def add(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a + b\n",  # subtracts; mul unexplained
    "dan": "def add(a, b):\n    return a + b + 1\n\ndef mul(a, b):\n    raise NotImplementedError('mul (still the stub')\n",
    "<b>eve": "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return '=HYPERLINK(\"x\")'\n",
}


@pytest.fixture
def course(make_course):
    files = {"autograder/toy/assignment.toml": 'files = ["calc.py"]\n', "autograder/toy/test_calc.py": SUITE,
             "assignments/toy/calc.py": "def add(a, b):\n    raise NotImplementedError\n"}
    files.update({f"subs/{name}/calc.py": source for name, source in STUDENTS.items()})
    return make_course(files)


def grade(root, *extra: str) -> int:
    return cli.main(["--course", str(root), "grade", "toy", str(root / "subs"), "--out", str(root / "grades"), *extra])


# ---------------------------------------------------------------- diagnoses, read back from messages


def test_a_diagnosis_is_read_from_the_message_without_the_count_of_alike_cases():
    message = "add(1, 2) returned -1; expected 3. Likely mistake: subtracted instead of adding. (3 more cases failed the same way)"
    assert diagnosis_of(message) == "subtracted instead of adding."
    assert diagnosis_of("add(1, 2) returned 4; expected 3.") is None
    assert mistake_key("the storage offset (3) was not added") == mistake_key("the storage offset (12) was not added")
    assert diagnoses_of(["x Likely mistake: off by one (1).", "y Likely mistake: off by one (2).",
                         "z Likely mistake: other."]) == ["off by one (1).", "other."]


def test_scoring_keeps_each_questions_diagnoses_from_every_failed_case():
    cases = [CaseResult("q.a", "t.py::t", 2.0, False, True),
             *(CaseResult("q.a", "t.py::t", 2.0, False, False,
                          f"case {k} returned {k}. Likely mistake: {'too big' if k < 4 else 'too small'}")
               for k in range(6))]
    (question,) = score_cases(cases)
    assert "too small" not in question.feedback  # past the failures the feedback shows: still counted
    assert question.diagnoses == ["too big", "too small"]


# ---------------------------------------------------------------- the class's mistakes, from a real run


def test_the_report_shows_the_class_mistakes_with_counts_shares_and_plots(course):
    assert grade(course) == 0
    out = course / "grades"
    data = analytics_of_folder(out)
    assert data["class_size"] == 5
    add, mul = data["questions"]
    assert add["qid"] == "calc.add" and add["passed"] == 2 and add["failed"] == 3
    assert [(m["text"], m["count"], m["submissions"]) for m in add["mistakes"]] == [
        ("subtracted instead of adding.", 2, ["bob", "cat"]), ("off by one (1).", 1, ["dan"])]
    assert add["mistakes"][0]["share"] == pytest.approx(0.4)
    assert add["unexplained"]["count"] == 0
    assert mul["not_started"] == 1 and mul["failed"] == 2 and mul["mistakes"] == []
    assert sorted(mul["unexplained"]["submissions"]) == ["<b>eve", "cat"]
    samples = [s["message"] for s in mul["unexplained"]["samples"]]
    assert any("mul(2, 3) returned 5; expected 6." in s for s in samples)

    page = (out / "report.html").read_text()
    mistakes = re.search(r'<table class="question-mistakes" data-question="calc.add">.*?</table>', page, re.S).group(0)
    assert re.search(r"subtracted instead of adding\.</td><td class=\"num\" data-count=\"2\">2</td>"
                     r"<td class=\"num\">40%</td>", mistakes)
    assert "No diagnosis explains these failures" in page and "mul(2, 3) returned 5" in page
    assert '<svg id="pass-rates"' in page and '<svg id="mistake-counts"' in page
    bars = re.findall(r'<rect class="hbar"[^>]*data-value="([\d.]+)"', page.split('<svg id="mistake-counts"')[1])
    assert bars[:2] == ["2", "1"]
    assert "<b>eve" not in page and "&lt;b&gt;eve" in page
    assert not re.search(r"(src|href)=\"(https?:)?//|<script|<link|<img", page)  # nothing fetched at view time

    rows = list(csv.DictReader(io.StringIO((out / "mistakes.csv").read_text())))
    assert {"question": "calc.add", "kind": "mistake", "text": "subtracted instead of adding.", "count": "2",
            "share": "0.4", "submissions": "bob cat"} in rows
    assert any(r["kind"] == "not started" and r["question"] == "calc.mul" and r["count"] == "1" for r in rows)
    assert not any(cell.startswith(("=", "+", "-", "@")) for r in rows for cell in r.values())
    assert json.loads((out / "analytics.json").read_text()) == data


def test_a_missing_file_is_one_packaging_problem_and_the_report_leads_with_the_top_mistakes(make_course):
    """A file left out fails every question that imports it: counted once, in the report's section of
    missing files and packaging, not as a mistake of the class under each question (issue 47)."""
    files = {"autograder/toy/assignment.toml": 'files = ["calc.py", "more.py"]\n', "autograder/toy/test_calc.py": SUITE
             + "\n@question('more.half', points=2)\ndef test_half(student):\n    expect_equal(student.more.half(4), 2)\n",
             "assignments/toy/calc.py": "def add(a, b):\n    raise NotImplementedError\n",
             "assignments/toy/more.py": "def half(x):\n    raise NotImplementedError\n"}
    more = "def half(x):\n    return x / 2\n"
    files.update({"subs/ann/calc.py": STUDENTS["ann"], "subs/ann/more.py": more,
                  "subs/bob/calc.py": STUDENTS["bob"], "subs/bob/more.py": more,
                  "subs/gus/more.py": more})  # gus left calc.py out
    root = make_course(files)
    assert grade(root) == 0
    data = analytics_of_folder(root / "grades")
    add = data["questions"][0]
    assert add["failed"] == 2 and add["packaging"] == ["gus"]  # lost points: bob's mistake, gus's missing file
    assert [(m["text"], m["submissions"]) for m in add["mistakes"]] == [("subtracted instead of adding.", ["bob"])]
    assert add["unexplained"]["count"] == 0  # gus's ModuleNotFoundError is not a failure of the class to explain
    assert data["packaging"] == [{"submission": "gus", "warnings": ["calc.py is missing from the submission"],
                                  "missing": ["calc.py"], "questions": ["calc.add", "calc.mul"]}]
    page = (root / "grades" / "report.html").read_text()
    order = [page.index(marker) for marker in ('id="top-mistakes"', 'id="packaging-heading"', 'id="details-heading"',
                                               'id="details-mistakes"', 'id="details-submissions"')]
    assert order == sorted(order)  # what a TA acts on first, then the details, collapsed
    top = re.search(r'<table id="top-mistakes".*?</table>', page, re.S).group(0)
    assert "subtracted instead of adding. <strong>(1)</strong>" in top and "gus" not in top
    assert re.search(r'<li><a href="gus/feedback.html">gus</a> lacks calc.py: lost points on 2 questions', page)
    assert not re.search(r"<details[^>]* open", page)
    assert 'width="640"' not in page  # the charts scale with the page
    rows = list(csv.DictReader(io.StringIO((root / "grades" / "mistakes.csv").read_text())))
    assert {"question": "calc.add", "kind": "missing file", "text": "", "count": "1", "share": "0.3333",
            "submissions": "gus"} in rows


def test_an_older_gradebook_row_without_recorded_diagnoses_is_read_from_its_feedback():
    feedback = ("2 of 2 checks failed.\n- add(1, 2) returned -1; expected 3. Likely mistake: subtracted instead of "
                "adding. (1 more case failed the same way)")
    old = QuestionResult("calc.add", 0.0, 4.0, feedback, 0, 2, diagnoses=None)
    stub = QuestionResult("calc.mul", 0.0, 4.0, "2 of 2 checks failed.\n- mul() raised NotImplementedError (still the "
                          "stub: implement it)", 0, 2, diagnoses=None)
    analytics = class_analytics("toy", [SubmissionResult("bob", "toy", [old, stub])])
    assert [m.text for m in analytics.questions[0].mistakes] == ["subtracted instead of adding."]
    assert analytics.questions[1].not_started == 1 and analytics.questions[1].unexplained.count == 0
    assert first_failure(feedback).startswith("add(1, 2) returned -1")
    assert mistakes_csv(analytics).splitlines()[1].startswith("calc.add,mistake,subtracted instead of adding.,1,1.0,bob")


def test_analytics_of_a_folder_without_a_gradebook_says_so(tmp_path):
    with pytest.raises(GradebookError, match="not a folder"):
        analytics_of_folder(tmp_path / "typo")
    with pytest.raises(GradebookError, match="holds no gradebook.sqlite"):
        analytics_of_folder(tmp_path)


# ---------------------------------------------------------------- regrade differences


def regrade_rows(out) -> list[dict]:
    return list(csv.DictReader(io.StringIO((out / "regrade.csv").read_text())))


def test_a_regrade_reports_a_new_submission_and_a_changed_suite(course):
    assert grade(course) == 0
    out = course / "grades"
    assert not (out / "regrade.csv").exists() and "What the latest regrade changed" not in (out / "report.html").read_text()

    (course / "subs/bob/calc.py").write_text(STUDENTS["ann"])  # bob fixes his add: a new submission
    assert grade(course) == 0
    rows = regrade_rows(out)
    assert [(r["submission"], r["question"], r["old_score"], r["new_score"]) for r in rows] == [
        ("bob", "calc.add", "0.0", "4.0")]
    assert rows[0]["why"] == "new submission (the student's files changed)"
    page = (out / "report.html").read_text()
    table = re.search(r'<table id="regrade">.*?</table>', page, re.S).group(0)
    assert "bob" in table and "new submission" in table and table.count("<tr>") == 2

    suite = course / "autograder/toy/test_calc.py"  # the suite now gives add 2 points, not 4
    suite.write_text(suite.read_text().replace('@question("calc.add", points=4)', '@question("calc.add", points=2)'))
    assert grade(course, "--regrade") == 0
    rows = regrade_rows(out)
    changed = {(r["submission"], r["question"]): (r["old_score"], r["new_score"], r["why"]) for r in rows}
    assert changed[("ann", "calc.add")] == ("4.0", "2.0", "the hidden suite changed")
    assert ("cat", "calc.add") not in changed  # 0 then, 0 now: unchanged
    assert all(why == "the hidden suite changed" for _, _, why in changed.values())
    page = (out / "report.html").read_text()
    assert re.search(r"5 submissions graded, \d with a score that changed", page)

    assert grade(course, "--regrade") == 0  # nothing changed at all: no score changed, and it says so
    assert regrade_rows(out) == [] and "No score changed." in (out / "report.html").read_text()


def test_an_older_gradebook_is_brought_up_to_date_and_its_grades_compared(tmp_path):
    """A schema-1 gradebook (no diagnoses, no suite fingerprints) is opened, gains the columns, and a
    regrade of it says that the earlier grade has no record of its suite."""
    path = tmp_path / DB_FILE
    book = Gradebook(path, "toy")
    first = book.start_run("0.1.0", jobs=1, regrade=False, submissions=1, to_grade=1)
    book.record(Graded(SubmissionResult("bob", "toy", [QuestionResult("calc.add", 1.0, 4.0, "x", 1, 4)]), "0.1.0",
                       "2030-01-01T10:00:00Z", fingerprint="f1", run_id=first))
    with sqlite3.connect(path) as db:  # back to what schema 1 held
        db.execute("DROP TABLE superseded")
        for table, column in (("submissions", "suite_fingerprint"), ("questions", "diagnoses"),
                              ("questions", "not_started")):
            db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        db.execute("PRAGMA user_version = 1")
    db.close()
    book = Gradebook(path, "toy")
    (old,) = book.load()
    assert old.suite_fingerprint is None and old.result.questions[0].diagnoses is None
    run = book.start_run("0.1.0", jobs=1, regrade=True, submissions=1, to_grade=1)
    book.record(Graded(SubmissionResult("bob", "toy", [QuestionResult("calc.add", 4.0, 4.0, "ok", 4, 4)]), "0.1.0",
                       "2030-01-02T10:00:00Z", fingerprint="f1", run_id=run, suite_fingerprint="s1"))
    from checks.reports.regrade import SUITE_UNKNOWN, regrade_report

    report = regrade_report(book.load(), *book.superseded())
    assert [(c.question, c.old, c.new, c.why) for c in report.changes] == [("calc.add", 1.0, 4.0, SUITE_UNKNOWN)]
